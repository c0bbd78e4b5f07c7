//! The one error type of the client.

use serde::{Deserialize, Serialize};

/// One entry of an error's `details`: which field (and which record of a batch) broke which rule.
///
/// ```
/// let d: prodops_client::ErrorDetail =
///     serde_json::from_str(r#"{"field":"name","index":3,"message":"name must not be empty"}"#).unwrap();
/// assert_eq!(d.index, Some(3));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorDetail {
    /// The field path the rule is about (`name`, `[2].name`), if any.
    #[serde(default)]
    pub field: Option<String>,
    /// The position of the failing record in a bulk request, if any.
    #[serde(default)]
    pub index: Option<u64>,
    /// What is wrong.
    #[serde(default)]
    pub message: String,
    /// The cursor of the oldest event the change feed keeps, in the detail of a 410 `GONE`
    /// answer to `GET /event` (see [`Error::events_gone`]).
    #[serde(
        default,
        rename = "oldestCursor",
        skip_serializing_if = "Option::is_none"
    )]
    pub oldest_cursor: Option<String>,
}

/// Everything that can go wrong in a call.
///
/// ```
/// use prodops_client::Error;
/// let e = Error::Api {
///     status: 404,
///     code: "NOT_FOUND".into(),
///     message: "not found".into(),
///     details: vec![],
///     request_id: Some("r1".into()),
/// };
/// assert_eq!(e.status(), Some(404));
/// assert_eq!(e.code(), Some("NOT_FOUND"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The server answered with an error status (after retries, for 429 and a 503 with `Retry-After`).
    #[error("{status} {code}: {message}{}", request_suffix(.request_id))]
    Api {
        /// HTTP status.
        status: u16,
        /// `error.code` of the body (`VALIDATION_ERROR`, `NOT_FOUND`, ...).
        code: String,
        /// `error.message` of the body.
        message: String,
        /// `error.details`, empty when the server sent none.
        details: Vec<ErrorDetail>,
        /// `error.requestId` (or the `X-Request-Id` header).
        request_id: Option<String>,
    },
    /// The server could not be reached, or the connection broke, or the call timed out.
    #[error("network error: {0}")]
    Network(#[source] crate::NetworkError),
    /// The server answered 2xx with a body this client could not read.
    #[error("unexpected response from the server: {0}")]
    Decode(String),
    /// The client is not configured (no base URL, malformed URL or key, ...).
    #[error("configuration error: {0}")]
    Config(String),
}

fn request_suffix(id: &Option<String>) -> String {
    match id {
        Some(id) => format!(" (request id {id})"),
        None => String::new(),
    }
}

impl Error {
    /// The HTTP status of an API error.
    ///
    /// ```
    /// assert_eq!(prodops_client::Error::Config("x".into()).status(), None);
    /// ```
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The API `error.code` of an API error.
    ///
    /// ```
    /// assert_eq!(prodops_client::Error::Decode("x".into()).code(), None);
    /// ```
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Api { code, .. } => Some(code),
            _ => None,
        }
    }

    /// The `details` of an API error (empty otherwise).
    ///
    /// ```
    /// assert!(prodops_client::Error::Decode("x".into()).details().is_empty());
    /// ```
    pub fn details(&self) -> &[ErrorDetail] {
        match self {
            Error::Api { details, .. } => details,
            _ => &[],
        }
    }

    /// The request id the server logged this call under, if known.
    ///
    /// ```
    /// assert_eq!(prodops_client::Error::Decode("x".into()).request_id(), None);
    /// ```
    pub fn request_id(&self) -> Option<&str> {
        match self {
            Error::Api { request_id, .. } => request_id.as_deref(),
            _ => None,
        }
    }

    /// Whether the record asked for does not exist (404).
    ///
    /// ```
    /// assert!(!prodops_client::Error::Decode("x".into()).is_not_found());
    /// ```
    pub fn is_not_found(&self) -> bool {
        self.status() == Some(404)
    }

    /// Builds an API error from a status, the response's `X-Request-Id` and its body text.
    pub(crate) fn from_response(status: u16, request_id: Option<String>, body: &[u8]) -> Error {
        #[derive(Deserialize)]
        struct Body {
            error: Inner,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Inner {
            #[serde(default)]
            code: String,
            #[serde(default)]
            message: String,
            #[serde(default)]
            request_id: Option<String>,
            #[serde(default)]
            details: Vec<ErrorDetail>,
        }
        match serde_json::from_slice::<Body>(body) {
            Ok(Body { error }) => Error::Api {
                status,
                code: error.code,
                message: error.message,
                details: error.details,
                request_id: error.request_id.or(request_id),
            },
            Err(_) => {
                let text = String::from_utf8_lossy(body);
                let text: String = text.trim().chars().take(500).collect();
                Error::Api {
                    status,
                    code: default_code(status).to_string(),
                    message: if text.is_empty() {
                        format!("HTTP {status}")
                    } else {
                        text
                    },
                    details: Vec::new(),
                    request_id,
                }
            }
        }
    }
}

/// The code decisions.md section 3 gives a status, for error bodies that are not in the API's shape
/// (a proxy's page, for instance).
fn default_code(status: u16) -> &'static str {
    match status {
        400 => "VALIDATION_ERROR",
        401 => "UNAUTHORIZED",
        403 => "FORBIDDEN",
        404 => "NOT_FOUND",
        405 => "METHOD_NOT_ALLOWED",
        409 => "CONFLICT",
        413 => "PAYLOAD_TOO_LARGE",
        429 => "RATE_LIMITED",
        _ => "INTERNAL",
    }
}

/// The result of every client call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_error_shape() {
        let body = br#"{"error":{"code":"VALIDATION_ERROR","message":"bad","requestId":"abc","details":[{"field":"name","index":2,"message":"empty"}]}}"#;
        let e = Error::from_response(400, Some("hdr".into()), body);
        assert_eq!(e.code(), Some("VALIDATION_ERROR"));
        assert_eq!(e.request_id(), Some("abc"));
        assert_eq!(e.details()[0].index, Some(2));
        assert!(e.to_string().contains("request id abc"));
    }

    #[test]
    fn a_feed_410_reads_as_events_gone() {
        let body = br#"{"error":{"code":"GONE","message":"gone","requestId":"r",
            "details":[{"field":"after","message":"gone","oldestCursor":"42"}]}}"#;
        let e = Error::from_response(410, None, body);
        let gone = e.events_gone().unwrap();
        assert_eq!(
            (gone.oldest_cursor.as_str(), gone.message.as_str()),
            ("42", "gone")
        );
        let other = Error::from_response(400, None, br#"{"error":{"code":"X","message":"m"}}"#);
        assert!(other.events_gone().is_none());
    }

    #[test]
    fn a_foreign_body_still_gives_an_error() {
        let e = Error::from_response(502, Some("hdr".into()), b"<html>bad gateway</html>");
        assert_eq!(e.code(), Some("INTERNAL"));
        assert_eq!(e.request_id(), Some("hdr"));
        assert!(e.to_string().contains("bad gateway"));
    }
}

/// The change feed no longer keeps the events after the cursor a read asked from: they were
/// pruned (older than the server's retention), so a follower resuming there would miss some.
/// Read from the oldest kept (`after` absent or `0`), knowing that events were missed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsGone {
    /// The cursor of the oldest event kept (the next event's, when the feed keeps none).
    pub oldest_cursor: String,
    /// The server's message.
    pub message: String,
}

impl Error {
    /// The feed's 410 `GONE` (`GET /event` with an `after` older than the oldest event kept),
    /// typed; `None` for any other error.
    ///
    /// ```
    /// # async fn run(c: prodops_client::Client) -> prodops_client::Result<()> {
    /// use prodops_core::api::event::EventQuery;
    /// let query = EventQuery { after: Some("1042".into()), ..Default::default() };
    /// match c.events(&query).await {
    ///     Err(e) if e.events_gone().is_some() => {
    ///         let gone = e.events_gone().unwrap();
    ///         eprintln!("missed events; the oldest kept is {}", gone.oldest_cursor);
    ///     }
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// assert!(prodops_client::Error::Config("x".into()).events_gone().is_none());
    /// ```
    pub fn events_gone(&self) -> Option<EventsGone> {
        match self {
            Error::Api {
                status: 410,
                message,
                details,
                ..
            } => Some(EventsGone {
                oldest_cursor: details.iter().find_map(|d| d.oldest_cursor.clone())?,
                message: message.clone(),
            }),
            _ => None,
        }
    }
}
