//! The reply of a write: produced inside its transaction, so that it can be stored with the
//! request's idempotency key (`http::idempotency`) before the transaction commits, and sent
//! (or replayed) as the response.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

/// A reply produced inside a write transaction, so that it can be remembered for idempotent
/// replays before the transaction commits.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub body: Option<String>,
    pub replayed: bool,
}

impl Reply {
    pub fn json(status: StatusCode, body: &impl Serialize) -> Reply {
        Reply {
            status,
            body: Some(serde_json::to_string(body).unwrap_or_else(|_| "null".into())),
            replayed: false,
        }
    }
    /// `200 {"value": ...}`: the answer of the actions that compute one value (rollups,
    /// demand, production entries).
    pub fn value(value: &impl Serialize) -> Reply {
        Reply::json(StatusCode::OK, &serde_json::json!({ "value": value }))
    }
    pub fn empty(status: StatusCode) -> Reply {
        Reply {
            status,
            body: None,
            replayed: false,
        }
    }
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let mut response = match self.body {
            Some(body) => (
                self.status,
                [(header::CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response(),
            None => self.status.into_response(),
        };
        if self.replayed {
            response
                .headers_mut()
                .insert("idempotent-replayed", HeaderValue::from_static("true"));
        }
        response
    }
}
