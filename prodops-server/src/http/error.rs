//! The one error shape of every failure (decisions.md section 3).

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prodops_core::Violation;
use serde_json::json;

use crate::store::{StoreError, TxError};

/// The id of the request being served, for error bodies; set by the request-id middleware.
pub use crate::store::REQUEST_ID;

pub fn current_request_id() -> String {
    REQUEST_ID.try_with(|id| id.to_string()).unwrap_or_default()
}

/// A stored record (or part of one) read into core's type. A failure is the server's fault,
/// not the caller's: everything stored was checked on the way in.
pub fn read_stored<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> ApiResult<T> {
    serde_json::from_value(v.clone()).map_err(ApiError::internal)
}

/// An error answer: status, code, message and optional details.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    pub details: Vec<Violation>,
    /// Seconds, for 429 and 503 answers.
    pub retry_after: Option<u64>,
    /// A storage conflict worth retrying the transaction for.
    retry: bool,
    /// What went wrong inside, for the log only; logged when the answer is rendered, which
    /// happens on the request's own task, where its id is known.
    cause: Option<String>,
    /// Members added to the first detail beside `field`, `index` and `message` (a 410's
    /// `oldestCursor`).
    detail_extra: Option<Box<serde_json::Map<String, serde_json::Value>>>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            code,
            message: message.into(),
            details: Vec::new(),
            retry_after: None,
            retry: false,
            cause: None,
            detail_extra: None,
        }
    }

    /// 410 `GONE` for a change feed cursor whose following events are no longer kept
    /// (docs/events.md, "Retention"): the detail names `after` and carries `oldestCursor`, the
    /// cursor of the oldest event kept (the next event's, when the feed keeps none).
    pub fn events_gone(after: i64, oldest: i64) -> Self {
        let message = format!(
            "the events after cursor {after} are no longer kept (older than the feed's \
             retention): events were missed; the oldest kept has cursor {oldest} (ask with \
             after=0 to read from it)"
        );
        let mut extra = serde_json::Map::new();
        extra.insert("oldestCursor".into(), json!(oldest.to_string()));
        ApiError {
            details: vec![Violation::field("after", message.clone())],
            detail_extra: Some(Box::new(extra)),
            ..Self::new(StatusCode::GONE, "GONE", message)
        }
    }

    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", message)
    }

    /// A 400 listing every violation; the message names the first.
    pub fn violations(details: Vec<Violation>) -> Self {
        let message = match details.first() {
            Some(Violation {
                field: Some(f),
                message,
                ..
            }) => format!("{f}: {message}"),
            Some(v) => v.message.clone(),
            None => "invalid request".into(),
        };
        let message = if details.len() > 1 {
            format!("{message} (and {} more)", details.len() - 1)
        } else {
            message
        };
        ApiError {
            details,
            ..Self::validation(message)
        }
    }

    /// A 409 (a state conflict) listing every violation; the message names the first, as
    /// [`ApiError::violations`] does.
    pub fn conflicts(details: Vec<Violation>) -> Self {
        let error = Self::violations(details);
        ApiError {
            status: StatusCode::CONFLICT,
            code: "CONFLICT",
            ..error
        }
    }

    pub fn field(field: &str, message: impl Into<String>) -> Self {
        Self::violations(vec![Violation::field(field, message)])
    }

    pub fn not_found() -> Self {
        Self::new(StatusCode::NOT_FOUND, "NOT_FOUND", "not found")
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "FORBIDDEN", message)
    }

    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "METHOD_NOT_ALLOWED",
            message,
        )
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, "CONFLICT", message)
    }

    pub fn too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            format!("request body is larger than {} MiB", limit / (1024 * 1024)),
        )
    }

    pub fn rate_limited(retry_after: u64) -> Self {
        ApiError {
            retry_after: Some(retry_after),
            ..Self::new(
                StatusCode::TOO_MANY_REQUESTS,
                "RATE_LIMITED",
                "rate limit exceeded; retry after the reset time",
            )
        }
    }

    /// A 500 whose cause goes to the log only.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        ApiError {
            cause: Some(cause.to_string()),
            ..Self::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "INTERNAL",
                "internal error; the request id identifies it in the server log",
            )
        }
    }

    pub fn with_index(mut self, index: usize) -> Self {
        for d in &mut self.details {
            d.index = Some(index);
        }
        if self.details.is_empty() {
            self.details.push(Violation {
                field: None,
                index: Some(index),
                message: self.message.clone(),
            });
        }
        self
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Conflict(name) => {
                let message = crate::store::migrate::conflict_message(&name);
                ApiError::conflict(message)
            }
            StoreError::Retry => ApiError {
                retry: true,
                retry_after: Some(1),
                ..ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "INTERNAL",
                    "the database is busy; retry",
                )
            },
            // Decisions §3: 503 `INTERNAL`, without SQL; the client may retry later.
            StoreError::Timeout => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "INTERNAL",
                "the request took longer than the server's statement timeout and was stopped; \
                 narrow it (filters, page size) or retry later",
            ),
            // Nobody reads this answer: the client is gone.
            StoreError::Cancelled => ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "INTERNAL",
                "the request was abandoned",
            ),
            // Decisions §3 keeps `INTERNAL` for every 5xx; the status and `Retry-After` tell a
            // client that the same request may work a moment later (docs/operations.md,
            // "Transient faults").
            StoreError::Unavailable(cause) => ApiError {
                retry_after: Some(1),
                cause: Some(format!("database unavailable: {cause}")),
                ..ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "INTERNAL",
                    "the database could not be reached or its connection was lost; retry (with the same Idempotency-Key, a write that was applied is not applied again)",
                )
            },
            StoreError::StorageFull(cause) => ApiError {
                cause: Some(format!("database storage full: {cause}")),
                ..ApiError::new(
                    StatusCode::INSUFFICIENT_STORAGE,
                    "INTERNAL",
                    "the database's disk is full: nothing of this request was written; retry once space is freed",
                )
            },
            StoreError::Other(cause) => ApiError::internal(cause),
        }
    }
}

impl TxError for ApiError {
    fn is_retry(&self) -> bool {
        self.retry
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let Some(cause) = &self.cause {
            tracing::error!(request_id = %current_request_id(), "internal error: {cause}");
        }
        let mut error = json!({ "code": self.code, "message": self.message, "requestId": current_request_id() });
        if !self.details.is_empty() {
            error["details"] = json!(self.details);
            if let (Some(extra), Some(first)) = (
                self.detail_extra,
                error["details"].get_mut(0).and_then(|d| d.as_object_mut()),
            ) {
                first.extend(*extra);
            }
        } else if self.status == StatusCode::BAD_REQUEST {
            // Every 400 lists what was wrong, even when it is about the request as a whole.
            error["details"] = json!([Violation::general(self.message.clone())]);
        }
        let mut body = json!({ "error": error });
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            body["message"] = json!(self.message);
        }
        let mut response = (self.status, axum::Json(body)).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// The error code of a status, for errors that did not come from an `ApiError`.
pub fn code_for(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "VALIDATION_ERROR",
        401 => "UNAUTHORIZED",
        403 => "FORBIDDEN",
        404 => "NOT_FOUND",
        405 => "METHOD_NOT_ALLOWED",
        409 => "CONFLICT",
        410 => "GONE",
        413 => "PAYLOAD_TOO_LARGE",
        429 => "RATE_LIMITED",
        _ if status.is_server_error() => "INTERNAL",
        _ => "VALIDATION_ERROR",
    }
}

impl ApiError {
    /// The error with `prefix(index)` put before each detail's field (a detail with an
    /// `index` names that row of a multi-row request; the index is dropped once named): how a
    /// path that posts rows built from its request names the request's own field
    /// (`lines[2].lots[0]`).
    pub fn prefixed(mut self, prefix: impl Fn(Option<usize>) -> Option<String>) -> ApiError {
        for d in &mut self.details {
            if let Some(p) = prefix(d.index) {
                d.index = None;
                d.field = Some(match d.field.as_deref() {
                    Some(f) => format!("{p}.{f}"),
                    None => p,
                });
            }
        }
        self
    }
}

#[cfg(test)]
mod transient_tests {
    use super::*;

    /// A lost database is 503 with `Retry-After`, a full disk 507; both `INTERNAL`, neither
    /// with the database's own words.
    #[test]
    fn transient_store_faults_are_503_and_507() {
        let lost = ApiError::from(StoreError::Unavailable("08006: connection failure".into()));
        assert_eq!(lost.status.as_u16(), 503);
        assert_eq!(lost.retry_after, Some(1));
        assert_eq!(lost.code, "INTERNAL");
        assert!(!lost.message.contains("08006"), "{}", lost.message);
        let full = ApiError::from(StoreError::StorageFull("database or disk is full".into()));
        assert_eq!(full.status.as_u16(), 507);
        assert_eq!(full.code, "INTERNAL");
        assert!(full.message.contains("disk is full"), "{}", full.message);
        assert!(
            !full.message.to_lowercase().contains("sqlite"),
            "{}",
            full.message
        );
    }
}
