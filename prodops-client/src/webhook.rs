//! Verifying a webhook delivery (docs/events.md, "A delivery"): the `X-Prodops-Signature`
//! header is `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`. [`verify`]
//! checks it against the raw body as received (before any parsing), in constant time, refuses
//! a signature made more than `tolerance` from now (a recorded delivery cannot be replayed
//! later), and reads the body as the [`Event`] it carries.
//!
//! ```
//! use std::time::Duration;
//! use prodops_client::webhook::{self, WebhookError};
//! let body = br#"{"id":"0192f6c0-0000-7000-8000-000000000001"}"#;
//! let header = "t=1,v1=00";
//! let err = webhook::verify(body, header, "whsec", webhook::DEFAULT_TOLERANCE).unwrap_err();
//! assert!(matches!(err, WebhookError::TooOld { .. } | WebhookError::BadSignature));
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub use prodops_core::event::Event;
/// The webhook records and the answers of their actions (`Webhook`, `WebhookDelivery`, ...).
pub use prodops_core::webhook::{
    RedeliverRequest, RedeliverResult, Webhook, WebhookDelivery, WebhookDeliveryStatus,
    WebhookTestResult,
};

/// The header that carries the signature.
pub const SIGNATURE_HEADER: &str = "X-Prodops-Signature";

/// How far a signature's time may be from the receiver's clock: 5 minutes, as docs/events.md
/// advises.
pub const DEFAULT_TOLERANCE: Duration = Duration::from_secs(300);

/// Why a delivery was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// The header is not `t=<seconds>,v1=<hex>` (a part missing, not a number, not hex), or
    /// the body, though signed, is not an event.
    #[error("malformed webhook delivery: {0}")]
    Malformed(String),
    /// No `v1` signature of the header matches the body with this secret: the body was
    /// changed, or signed with another secret.
    #[error("the webhook signature does not match the body")]
    BadSignature,
    /// The signature is valid but was made at `signed_at` (unix seconds), further than the
    /// tolerance from the receiver's clock: a replay, or a clock far off.
    #[error("the webhook delivery was signed at {signed_at}, further than {tolerance:?} from now")]
    TooOld { signed_at: i64, tolerance: Duration },
}

/// Verifies a delivery's `body` against its `X-Prodops-Signature` `header` with the webhook's
/// `secret`, as of now, and reads the event it carries.
///
/// An axum receiver: `examples/webhook_receiver.rs`.
pub fn verify(
    body: &[u8],
    header: &str,
    secret: &str,
    tolerance: Duration,
) -> Result<Event, WebhookError> {
    verify_at(body, header, secret, tolerance, SystemTime::now())
}

/// [`verify`] as of `now` (for tests, and for a receiver that checks against another clock).
pub fn verify_at(
    body: &[u8],
    header: &str,
    secret: &str,
    tolerance: Duration,
    now: SystemTime,
) -> Result<Event, WebhookError> {
    let mut signed_at = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => {
                signed_at = Some(v.trim().parse::<i64>().map_err(|_| {
                    WebhookError::Malformed(format!("t={v} is not a number of seconds"))
                })?)
            }
            Some(("v1", v)) => signatures.push(
                hex::decode(v.trim())
                    .map_err(|_| WebhookError::Malformed("v1 is not hexadecimal".into()))?,
            ),
            // Other schemes a later server may add are read past.
            _ => {}
        }
    }
    let signed_at =
        signed_at.ok_or_else(|| WebhookError::Malformed("the header has no t=".into()))?;
    if signatures.is_empty() {
        return Err(WebhookError::Malformed("the header has no v1=".into()));
    }
    let matches = signatures.iter().any(|signature| {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes())
            .expect("HMAC takes a key of any length");
        mac.update(format!("{signed_at}.").as_bytes());
        mac.update(body);
        mac.verify_slice(signature).is_ok()
    });
    if !matches {
        return Err(WebhookError::BadSignature);
    }
    let now = match now.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    };
    if now.abs_diff(signed_at) > tolerance.as_secs() {
        return Err(WebhookError::TooOld {
            signed_at,
            tolerance,
        });
    }
    crate::compat::from_slice(body)
        .map_err(|e| WebhookError::Malformed(format!("the body is not an event: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sign(secret: &str, t: i64, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{t}.").as_bytes());
        mac.update(body);
        format!("t={t},v1={}", hex::encode(mac.finalize().into_bytes()))
    }

    const BODY: &[u8] = br#"{"id":"0192f6c0-0000-7000-8000-000000000001","cursor":"7","type":"worker.created","resource":"worker","recordId":"0192f6c0-0000-7000-8000-000000000002","keyId":null,"requestId":null,"occurredAt":"2026-11-28T10:00:00.000000Z","data":{},"changed":null,"newServerField":1}"#;

    fn at(secs: i64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs as u64)
    }

    #[test]
    fn a_signed_event_reads_and_anything_else_is_named() {
        let header = sign("s3cret", 1_000_000, BODY);
        let event = verify_at(BODY, &header, "s3cret", DEFAULT_TOLERANCE, at(1_000_100)).unwrap();
        assert_eq!(event.event_type, "worker.created");
        assert_eq!(
            verify_at(BODY, &header, "other", DEFAULT_TOLERANCE, at(1_000_100)),
            Err(WebhookError::BadSignature)
        );
        let mut changed = BODY.to_vec();
        changed[10] ^= 1;
        assert_eq!(
            verify_at(
                &changed,
                &header,
                "s3cret",
                DEFAULT_TOLERANCE,
                at(1_000_100)
            ),
            Err(WebhookError::BadSignature)
        );
        assert!(matches!(
            verify_at(BODY, &header, "s3cret", DEFAULT_TOLERANCE, at(1_000_301)),
            Err(WebhookError::TooOld {
                signed_at: 1_000_000,
                ..
            })
        ));
        // A receiver's clock behind the sender's counts the same.
        assert!(verify_at(BODY, &header, "s3cret", DEFAULT_TOLERANCE, at(999_800)).is_ok());
        for bad in ["", "v1=00", "t=1", "t=x,v1=00", "t=1,v1=zz"] {
            assert!(
                matches!(
                    verify_at(BODY, bad, "s3cret", DEFAULT_TOLERANCE, at(1)),
                    Err(WebhookError::Malformed(_))
                ),
                "{bad}"
            );
        }
        let not_an_event = b"[1,2]";
        let header = sign("s3cret", 5, not_an_event);
        assert!(matches!(
            verify_at(not_an_event, &header, "s3cret", DEFAULT_TOLERANCE, at(5)),
            Err(WebhookError::Malformed(_))
        ));
    }
}
