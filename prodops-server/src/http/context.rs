//! Who is asking, and the facts every handler needs: the key's organization and permissions,
//! the clock reading of the request, its id and its idempotency key.

use std::any::{Any, TypeId};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, SubsecRound, Utc};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::http::error::{ApiError, ApiResult};
use crate::store::events::{NewEvent, Origin};

/// The action part of a permission name (`Worker.Read`): core's, which the action
/// declarations name too.
pub use prodops_core::api::Perm as Action;

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

/// The resource table the request is served with: the engine's `Resources`, built once at start
/// (`families::resources`) and shared by every request. This layer sits below the engine and
/// cannot name its type; the engine reads it back (`Ctx::resource`, `engine/resources.rs`).
pub type ResourceTable = Arc<dyn Any + Send + Sync>;

/// Everything a transaction body needs to know about its request.
#[derive(Clone)]
pub struct Ctx {
    pub auth: Auth,
    /// The resource table (see [`ResourceTable`]).
    pub resources: ResourceTable,
    /// One clock reading per request, in milliseconds, so every timestamp it writes agrees.
    pub now: DateTime<Utc>,
    pub idempotency: Option<Idempotency>,
    /// `now` as the API writes it, formatted once (a bulk write stamps every record with it).
    now_text: String,
    /// Set while a bulk write runs ([`Ctx::deferring`]): where hooks keep work they put off
    /// until every record of the call is written (`Hooks::end_bulk`).
    pub deferred: Option<Arc<Deferred>>,
    /// The `X-Request-Id` of the request, for the events it writes.
    pub request_id: Option<Arc<str>>,
    /// The events of the writes made so far in this transaction, appended to the feed when
    /// the transaction's work is done (`http::app::write_reply`; docs/events.md).
    pub events: Arc<Mutex<Vec<NewEvent>>>,
    /// The request asked for a dry run ([`DryRun`]): its write transaction is rolled back
    /// and answered as what it would have written (`http::app::write_reply`).
    pub dry_run: bool,
}

/// The mark the gateway puts on a write asked with `?dryRun=true` (the parameter itself is
/// taken off the query string; docs/api.md, "Dry runs").
#[derive(Debug, Clone, Copy)]
pub struct DryRun;

impl Ctx {
    pub fn new(resources: ResourceTable, auth: Auth, idempotency: Option<Idempotency>) -> Self {
        let now = Utc::now().trunc_subsecs(3);
        Ctx {
            auth,
            resources,
            now,
            idempotency,
            now_text: format_time(now),
            deferred: None,
            request_id: crate::store::REQUEST_ID.try_with(Arc::clone).ok(),
            events: Arc::default(),
            dry_run: false,
        }
    }

    /// The same request, run as a dry run when `dry_run`.
    pub fn dry_running(mut self, dry_run: bool) -> Self {
        self.dry_run = dry_run;
        self
    }

    /// The same request, for the records of one bulk write: hooks may defer work to its end.
    pub fn deferring(&self) -> Ctx {
        Ctx {
            deferred: Some(Arc::new(Deferred::default())),
            ..self.clone()
        }
    }

    /// Keeps an event of this transaction's writes, to append with them.
    pub fn record_event(&self, event: NewEvent) {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
    }

    /// Takes the events kept so far (the transaction appends them, or a retry starts anew).
    pub fn take_events(&self) -> Vec<NewEvent> {
        std::mem::take(&mut *self.events.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// What the events of this request share.
    pub fn event_origin(&self) -> Origin {
        Origin {
            org: self.org(),
            key_id: Some(self.auth.key_id),
            request_id: self.request_id.as_deref().map(str::to_string),
            occurred_at: self.now_text(),
            occurred_ms: self.now.timestamp_millis(),
        }
    }

    pub fn org(&self) -> Uuid {
        self.auth.org
    }

    /// The request time as the API writes it.
    /// The same request at another moment (tests of what depends on the time's text).
    #[cfg(test)]
    pub fn at(mut self, now: DateTime<Utc>) -> Self {
        self.now = now;
        self.now_text = format_time(now);
        self
    }

    pub fn now_text(&self) -> String {
        debug_assert_eq!(self.now_text, format_time(self.now));
        self.now_text.clone()
    }
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ctx")
            .field("auth", &self.auth)
            .field("now", &self.now)
            .field("idempotency", &self.idempotency)
            .field("deferred", &self.deferred)
            .field("request_id", &self.request_id)
            .field("events", &self.events)
            .field("dry_run", &self.dry_run)
            .finish_non_exhaustive()
    }
}

/// Work hooks put off until the end of a bulk write, in the same transaction: at most one value
/// of each type (each hook keeps its own).
#[derive(Debug, Default)]
pub struct Deferred(Mutex<HashMap<TypeId, Box<dyn Any + Send>>>);

impl Deferred {
    /// Runs `f` on the deferred value of type `T`, made empty on first use.
    pub fn with<T: Default + Send + 'static, R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let value = map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()));
        f(value
            .downcast_mut::<T>()
            .expect("stored under its own type"))
    }

    /// Takes the deferred value of type `T`, if any.
    pub fn take<T: Send + 'static>(&self) -> Option<T> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        map.remove(&TypeId::of::<T>())
            .and_then(|b| b.downcast::<T>().ok())
            .map(|b| *b)
    }
}

pub fn format_time(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
