//! What every action handler starts from, extracted once: the shared state, the caller's key and
//! the request's idempotency key ([`Call`]), and a `{id}` path segment parsed as a UUID
//! ([`PathId`]). A handler then names only what is its own: the permission it needs, its body
//! type, and the work it does in one transaction.
//!
//! ```ignore
//! async fn produce(call: Call, JsonBody(body): JsonBody) -> ApiResult<Response> {
//!     call.require("Item", Action::Update)?;
//!     let req: ProduceRequest = parse_body(body)?;
//!     call.write(move |tx, ctx| Ok(value_reply(&produce_in(tx, ctx, &req)?))).await
//! }
//! ```

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::response::Response;
use uuid::Uuid;

use crate::http::app::{AppState, Reply, write_reply};
use crate::http::context::{Action, Auth, Ctx, Idempotency};
use crate::http::error::{ApiError, ApiResult};
use crate::store::Tx;

/// The state, the authenticated key and the idempotency key of one request.
pub struct Call {
    pub state: Arc<AppState>,
    pub auth: Auth,
    pub idempotency: Option<Idempotency>,
}

impl FromRequestParts<Arc<AppState>> for Call {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &Arc<AppState>,
    ) -> Result<Self, ApiError> {
        // The gateway puts the key on every request it lets through to an authenticated route;
        // its absence is a routing mistake of ours, not the caller's.
        let auth = parts.extensions.get::<Auth>().cloned().ok_or_else(|| {
            ApiError::internal("an authenticated route was reached without a key")
        })?;
        Ok(Call {
            state: state.clone(),
            auth,
            idempotency: parts.extensions.get::<Idempotency>().cloned(),
        })
    }
}

impl Call {
    /// 403 unless the key holds `<resource>.<action>`.
    pub fn require(&self, resource: &str, action: Action) -> ApiResult<()> {
        self.auth.require(resource, action)
    }

    /// Whether the organization has a feature flag on.
    pub fn flag(&self, name: &str) -> bool {
        self.auth.flag(name)
    }

    /// The organization of the key.
    pub fn org(&self) -> Uuid {
        self.auth.org
    }

    /// Runs `f` in one write transaction under the request's idempotency key
    /// ([`write_reply`]): a repeated request is answered from the stored reply.
    pub async fn write<F>(self, f: F) -> ApiResult<Response>
    where
        F: FnMut(&mut dyn Tx, &Ctx) -> ApiResult<Reply> + Send + 'static,
    {
        let ctx = Ctx::new(self.auth, self.idempotency);
        write_reply(&self.state, ctx, f).await
    }

    /// Runs `f` in one read-only transaction with the request's context.
    pub async fn read<T, F>(self, mut f: F) -> ApiResult<T>
    where
        T: Send + 'static,
        F: FnMut(&mut dyn Tx, &Ctx) -> ApiResult<T> + Send + 'static,
    {
        let ctx = Ctx::new(self.auth, None);
        self.state.store.read(move |tx| f(tx, &ctx)).await
    }
}

/// An id given in a path or body, parsed as a UUID (400 naming `id` when it is not one).
pub fn parse_id(raw: &str) -> ApiResult<Uuid> {
    Uuid::parse_str(raw).map_err(|_| ApiError::field("id", format!("'{raw}' is not a UUID")))
}

/// The `{id}` segment of a route, parsed as a UUID (400 naming `id` when it is not one).
pub struct PathId(pub Uuid);

impl<S: Send + Sync> FromRequestParts<S> for PathId {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Path(raw) = Path::<String>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::field("id", "the path must end in an id"))?;
        parse_id(&raw).map(PathId)
    }
}
