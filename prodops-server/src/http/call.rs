//! What every action handler starts from, extracted once: the shared state, the caller's key and
//! the request's idempotency key ([`Call`]), or only the state for an action without a key
//! ([`Open`]). The rest of what a handler takes (path, query, body) and what it answers come
//! from its declaration (`http::typed`); it names only the work it does in one transaction.
//!
//! ```ignore
//! async fn produce(call: Call, (): (), (): (), req: ProduceRequest)
//!     -> ApiResult<Answered<api::production::Produce>> {
//!     call.write(move |tx, ctx| Ok(produce_in(tx, ctx, &req)?.into())).await
//! }
//! ```

use std::sync::Arc;

use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::response::Response;
use uuid::Uuid;

use crate::http::app::{AppState, Reply, write_reply};
use crate::http::context::{Action, Auth, Ctx, DryRun, Idempotency};
use crate::http::error::{ApiError, ApiResult};
use crate::http::parts::{self, PartWriter};

use crate::http::typed::{AnswerOf, Answered, Served, parse_id, write_answer};
use crate::store::Tx;

/// The state, the authenticated key and the idempotency key of one request.
pub struct Call {
    pub state: Arc<AppState>,
    pub auth: Auth,
    pub idempotency: Option<Idempotency>,
    /// The request asked for a dry run (`?dryRun=true`): its writes are rolled back.
    pub dry_run: bool,
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
            dry_run: parts.extensions.get::<DryRun>().is_some(),
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

    /// The context of the request's transaction: its key, idempotency key and dry run.
    pub fn ctx(&self) -> Ctx {
        Ctx::new(
            self.state.resources.clone(),
            self.auth.clone(),
            self.idempotency.clone(),
        )
        .dry_running(self.dry_run)
    }

    /// The organization of the key.
    pub fn org(&self) -> Uuid {
        self.auth.org
    }

    /// Runs `f` in one write transaction under the request's idempotency key
    /// ([`write_reply`]): its answer, of `E`'s answer type, is sent with `E`'s status and kept
    /// for a repeated request, which is answered from the stored reply.
    pub async fn write<E, F>(self, f: F) -> ApiResult<Answered<E>>
    where
        E: Served,
        F: FnMut(&mut dyn Tx, &Ctx) -> ApiResult<AnswerOf<E>> + Send + 'static,
    {
        let ctx = self.ctx();
        write_answer(&self.state, ctx, f).await
    }

    /// Runs `f` in one write transaction under the request's idempotency key
    /// ([`write_reply`]), for the resources' standard endpoints, whose replies the engine
    /// makes: a repeated request is answered from the stored reply.
    pub async fn write_reply<F>(self, f: F) -> ApiResult<Response>
    where
        F: FnMut(&mut dyn Tx, &Ctx) -> ApiResult<Reply> + Send + 'static,
    {
        let ctx = self.ctx();
        write_reply(&self.state, ctx, f).await
    }

    /// Runs `f` in one read-only transaction with the request's context.
    pub async fn read<T, F>(self, mut f: F) -> ApiResult<T>
    where
        T: Send + 'static,
        F: FnMut(&mut dyn Tx, &Ctx) -> ApiResult<T> + Send + 'static,
    {
        let ctx = Ctx::new(self.state.resources.clone(), self.auth, None);
        self.state.store.read(move |tx| f(tx, &ctx)).await
    }
}

impl Call {
    /// Runs `f` in one read-only transaction with the request's context, `f` writing the
    /// `200 application/json` answer's body as it reads; the body goes out in parts while the
    /// read goes on ([`parts`](crate::http::parts)). An error `f` answers before any part
    /// went out is the answer; after, it cuts the body short. A client that leaves closes the
    /// channel: [`PartWriter::send_if_full`] answers false and `f` should stop.
    pub async fn read_streamed<F>(self, what: &'static str, mut f: F) -> ApiResult<Response>
    where
        F: FnMut(&mut dyn Tx, &Ctx, &mut PartWriter<'_>) -> ApiResult<()> + Send + 'static,
    {
        let ctx = Ctx::new(self.state.resources.clone(), self.auth, None);
        let (sender, receiver) = parts::channel();
        let store = self.state.store.clone();
        tokio::spawn(async move {
            let parts = sender.clone();
            let read = store
                .read(move |tx| {
                    let mut out = PartWriter::new(&parts);
                    match f(tx, &ctx, &mut out) {
                        // Part of the answer is out: the read cannot be run again.
                        Err(e) if out.sent() => Err(ApiError::internal(format!(
                            "a {what} read failed while sending: {}",
                            e.message
                        ))),
                        Err(e) => Err(e),
                        Ok(()) => {
                            out.finish();
                            Ok(())
                        }
                    }
                })
                .await;
            if let Err(e) = read {
                let _ = sender.send(Err(e)).await;
            }
        });
        parts::answer(receiver, what).await
    }
}

/// What an action without a key starts from: the shared state (the request carries its own
/// credential, which the handler checks).
pub struct Open {
    pub state: Arc<AppState>,
}

impl FromRequestParts<Arc<AppState>> for Open {
    type Rejection = ApiError;

    async fn from_request_parts(_: &mut Parts, state: &Arc<AppState>) -> Result<Self, ApiError> {
        Ok(Open {
            state: state.clone(),
        })
    }
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
