//! When a request is sent again, and how long the client waits first.

use std::time::Duration;

use crate::{Headers, Method, NetworkError, NetworkErrorKind};

/// Whether an answer is worth the same request again: a 429 always (the window turns), a 503
/// only when it carries `Retry-After`, which the server sends when concurrent transactions kept
/// colliding or its database was out of reach for a moment. A 503 without it (a statement
/// stopped by the server's statement timeout) would fail the same way again, and retrying a
/// request that ran 30 s would only load the database for minutes (decisions.md section 8).
pub(crate) fn is_retryable(status: u16, headers: &Headers) -> bool {
    match status {
        429 => true,
        503 => headers.contains("retry-after"),
        _ => false,
    }
}

/// Whether a request that got no answer may be sent again: when it was not sent at all (no
/// connection), when it only reads and its connection broke, and, whatever happened, when it
/// carries an `Idempotency-Key`: the server then answers a repeat with the first answer.
/// A read that timed out is not repeated: it would most likely time out again.
pub(crate) fn is_resendable(error: &NetworkError, method: Method, keyed: bool) -> bool {
    match error.kind() {
        NetworkErrorKind::Connect => true,
        NetworkErrorKind::Interrupted => keyed || method.is_read(),
        NetworkErrorKind::Timeout => keyed && !method.is_read(),
        _ => false,
    }
}

/// The attempts a call may make after `error`: `max_attempts`, or, while no connection can be
/// made at all, `connect_attempts` (a stopped server is reported within about a second).
pub(crate) fn attempts_after(error: &NetworkError, config: &crate::Config) -> u32 {
    if error.is_connect() {
        config.connect_attempts.min(config.max_attempts)
    } else {
        config.max_attempts
    }
}

/// How long to wait before retry number `attempt` (1-based): the server's `Retry-After` or
/// `RateLimit-Reset` (seconds) when given, else exponential backoff from 250 ms; plus up to
/// 25% (at least 50 ms) random jitter, so that many clients do not return at once; capped at
/// `max`.
pub(crate) fn retry_wait(headers: &Headers, attempt: u32, max: Duration) -> Duration {
    let seconds = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s >= 0.0)
    };
    let base = match seconds("retry-after").or_else(|| seconds("ratelimit-reset")) {
        Some(s) => Duration::from_secs_f64(s.min(86_400.0)),
        None => Duration::from_millis(250u64.saturating_mul(1 << attempt.min(10))),
    };
    let spread = (base.as_millis() as u64 / 4).max(50);
    let jitter = Duration::from_millis(rand::random_range(0..=spread));
    (base + jitter).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_answers() {
        let busy = Headers::from_pairs([("Retry-After", "1")]);
        assert!(is_retryable(503, &busy));
        assert!(!is_retryable(503, &Headers::default()));
        assert!(is_retryable(429, &Headers::default()));
        assert!(!is_retryable(500, &busy));
    }

    #[test]
    fn resendable_failures() {
        let e = |k| NetworkError::new(k, "x");
        use NetworkErrorKind::*;
        assert!(is_resendable(&e(Connect), Method::PATCH, false));
        assert!(is_resendable(&e(Interrupted), Method::GET, false));
        assert!(!is_resendable(&e(Interrupted), Method::PATCH, false));
        assert!(is_resendable(&e(Interrupted), Method::POST, true));
        assert!(is_resendable(&e(Timeout), Method::POST, true));
        assert!(!is_resendable(&e(Timeout), Method::POST, false));
        assert!(!is_resendable(&e(Timeout), Method::GET, false));
        assert!(!is_resendable(&e(Other), Method::POST, true));
    }

    #[test]
    fn a_server_that_cannot_be_reached_gets_few_attempts() {
        let e = |k| NetworkError::new(k, "x");
        let config = crate::Config::new("http://h", "k");
        assert_eq!(attempts_after(&e(NetworkErrorKind::Connect), &config), 3);
        assert_eq!(
            attempts_after(&e(NetworkErrorKind::Interrupted), &config),
            6
        );
        let one = config.clone().max_attempts(1);
        assert_eq!(attempts_after(&e(NetworkErrorKind::Connect), &one), 1);
        let patient = crate::Config::new("http://h", "k").connect_attempts(10);
        assert_eq!(attempts_after(&e(NetworkErrorKind::Connect), &patient), 6);
    }

    #[test]
    fn retry_wait_honours_the_server_and_the_cap() {
        let h = Headers::from_pairs([("retry-after", "2")]);
        let w = retry_wait(&h, 1, Duration::from_secs(60));
        assert!(
            w >= Duration::from_secs(2) && w <= Duration::from_millis(2500),
            "{w:?}"
        );
        let h = Headers::from_pairs([("ratelimit-reset", "30")]);
        assert_eq!(
            retry_wait(&h, 1, Duration::from_secs(5)),
            Duration::from_secs(5)
        );
        let first = retry_wait(&Headers::default(), 1, Duration::from_secs(60));
        assert!(
            first >= Duration::from_millis(500) && first <= Duration::from_millis(625),
            "{first:?}"
        );
    }
}
