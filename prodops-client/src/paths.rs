//! Paths and query strings under `/api/v2`, for a caller that sends its own requests
//! ([`Client::send_raw`](crate::Client::send_raw)).

use prodops_core::api::ActionDesc;

/// An action's path under `/api/v2`: its template filled with `segments` (each
/// percent-encoded), then the query pairs (percent-encoded), if any.
///
/// ```
/// use prodops_core::api::{Endpoint, member::Outbox};
/// let path = prodops_client::paths::action_path(&Outbox::DESC, &[], &[("recipient".into(), "a b".into())]);
/// assert_eq!(path, "/outbox?recipient=a%20b");
/// ```
pub fn action_path(desc: &ActionDesc, segments: &[String], query: &[(String, String)]) -> String {
    let mut path = desc.fill(segments);
    for (i, (name, value)) in query.iter().enumerate() {
        path.push(if i == 0 { '?' } else { '&' });
        path.push_str(&encode(name));
        path.push('=');
        path.push_str(&encode(value));
    }
    path
}

/// Percent-encodes one query-string component.
///
/// ```
/// assert_eq!(prodops_client::paths::encode("a b&c"), "a%20b%26c");
/// ```
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
