//! Who is asking, and the facts every handler needs: the key's organization and permissions,
//! the clock reading of the request, its id and its idempotency key.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::error::{ApiError, ApiResult};

/// The action part of a permission name (`Worker.Read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Read,
    Create,
    Update,
    Delete,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Read => "Read",
            Action::Create => "Create",
            Action::Update => "Update",
            Action::Delete => "Delete",
        }
    }
}

/// An authenticated API key.
#[derive(Debug, Clone)]
pub struct Auth {
    pub key_id: Uuid,
    pub org: Uuid,
    pub admin: bool,
    pub permissions: Arc<HashSet<String>>,
    /// The organization's feature flags.
    pub flags: Arc<Map<String, Value>>,
}

impl Auth {
    /// 403 unless the key holds `<resource>.<action>` (an admin key holds every permission).
    pub fn require(&self, resource: &str, action: Action) -> ApiResult<()> {
        if self.admin
            || self
                .permissions
                .contains(&format!("{resource}.{}", action.as_str()))
        {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!(
                "this API key lacks the permission {resource}.{}",
                action.as_str()
            )))
        }
    }

    pub fn flag(&self, name: &str) -> bool {
        self.flags
            .get(name)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }
}

/// The `Idempotency-Key` of a write request and the fingerprint of what was asked.
#[derive(Debug, Clone)]
pub struct Idempotency {
    pub key: String,
    /// SHA-256 of method, path with query, and body.
    pub fingerprint: String,
}

/// Everything a transaction body needs to know about its request.
#[derive(Debug, Clone)]
pub struct Ctx {
    pub auth: Auth,
    /// One clock reading per request, in milliseconds, so every timestamp it writes agrees.
    pub now: DateTime<Utc>,
    pub idempotency: Option<Idempotency>,
    /// `now` as the API writes it, formatted once (a bulk write stamps every record with it).
    now_text: String,
}

impl Ctx {
    pub fn new(auth: Auth, idempotency: Option<Idempotency>) -> Self {
        let now = Utc::now().trunc_subsecs(3);
        Ctx {
            auth,
            now,
            idempotency,
            now_text: format_time(now),
        }
    }

    pub fn org(&self) -> Uuid {
        self.auth.org
    }

    /// The request time as the API writes it.
    pub fn now_text(&self) -> String {
        debug_assert_eq!(self.now_text, format_time(self.now));
        self.now_text.clone()
    }
}

pub fn format_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
