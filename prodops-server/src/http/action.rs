//! Serving a declared action (`prodops_core::api`): a family binds its handler to the
//! endpoint type with [`handle!`], and the composition root (`router.rs`) routes every
//! declared endpoint through [`Handled`]: the method and path come from the declaration, and
//! so does the permission check, which runs before the handler reads the request. An endpoint
//! type without a handler does not compile.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::middleware::{self, Next};
use axum::response::IntoResponse;
use axum::routing::{MethodFilter, MethodRouter, on};
use prodops_core::api::{Access, ActionDesc, Endpoint, HttpMethod};

use crate::http::app::AppState;
use crate::http::context::Auth;
use crate::http::error::{ApiError, ApiResult};
use crate::http::typed::{ActionHandler, Served, serve};

/// An endpoint type with its handler.
pub trait Handled: Endpoint {
    /// The handler, on the declared method, behind the declared access check.
    fn method_router() -> MethodRouter<Arc<AppState>>;
}

/// Binds endpoint types to their handlers: `handle! { api::production::Produce => produce; }`.
/// Each handler has the form its declaration gives (see [`declared`]); one that disagrees with
/// it does not compile. `E => f, path refused: g;` answers a path that does not read with
/// `g(error)` (a signed link refuses every malformed link alike).
macro_rules! handle {
    ($($endpoint:ty => $handler:expr $(, path refused: $refuse:expr)?;)*) => {
        $(
            impl $crate::http::action::Handled for $endpoint {
                fn method_router() -> ::axum::routing::MethodRouter<
                    ::std::sync::Arc<$crate::http::app::AppState>,
                > {
                    #[allow(unused_mut, unused_assignments)]
                    let mut refuse: fn(
                        $crate::http::error::ApiError,
                    ) -> $crate::http::error::ApiError = |e| e;
                    $(refuse = $refuse;)?
                    $crate::http::action::declared::<$endpoint, _, _>($handler, refuse)
                }
            }
        )*
    };
}
pub(crate) use handle;

/// `handler` on `E`'s method, behind `E`'s access check. The handler is
/// `async fn(start, E::Path, query, body) -> ApiResult<Answered<E>>`, where `start` is
/// [`Call`](crate::http::call::Call) (or [`Open`](crate::http::call::Open) for an action
/// without a key), the query and body are what `E`'s query and body types read to
/// ([`ServedQuery`](crate::http::typed::ServedQuery),
/// [`ServedBody`](crate::http::typed::ServedBody)), and the answer is made from a value of `E`'s
/// answer type ([`ServedAnswer`](crate::http::typed::ServedAnswer)), with `E`'s status.
///
/// A handler that fits its declaration:
///
/// ```
/// use prodops_core::api;
/// use prodops_core::production_actions::{ProduceRequest, ProduceResult};
/// use prodops_server::http::{action::declared, call::Call, typed::Answered};
/// use prodops_server::http::error::{ApiError, ApiResult};
///
/// async fn produce(
///     _: Call, _: (), _: (), _: ProduceRequest,
/// ) -> ApiResult<Answered<api::production::Produce>> {
///     Err(ApiError::internal("only its type is checked here"))
/// }
/// declared::<api::production::Produce, _, _>(produce, |e| e);
/// ```
///
/// One whose body disagrees with it does not compile:
///
/// ```compile_fail
/// use prodops_core::api;
/// use prodops_core::production_actions::ConsumeRequest;
/// use prodops_server::http::{action::declared, call::Call, typed::Answered};
/// use prodops_server::http::error::{ApiError, ApiResult};
///
/// async fn produce(
///     _: Call, _: (), _: (), _: ConsumeRequest,
/// ) -> ApiResult<Answered<api::production::Produce>> {
///     Err(ApiError::internal("only its type is checked here"))
/// }
/// declared::<api::production::Produce, _, _>(produce, |e| e);
/// ```
///
/// Nor does one that answers for another endpoint (another answer type, another status):
///
/// ```compile_fail
/// use prodops_core::api;
/// use prodops_core::production_actions::ProduceRequest;
/// use prodops_server::http::{action::declared, call::Call, typed::Answered};
/// use prodops_server::http::error::{ApiError, ApiResult};
///
/// async fn produce(
///     _: Call, _: (), _: (), _: ProduceRequest,
/// ) -> ApiResult<Answered<api::production::Consume>> {
///     Err(ApiError::internal("only its type is checked here"))
/// }
/// declared::<api::production::Produce, _, _>(produce, |e| e);
/// ```
pub fn declared<E, C, H>(
    handler: H,
    refuse_path: fn(ApiError) -> ApiError,
) -> MethodRouter<Arc<AppState>>
where
    E: Served,
    C: FromRequestParts<Arc<AppState>, Rejection = ApiError> + Send + 'static,
    H: ActionHandler<E, C>,
{
    let filter = match E::DESC.method {
        HttpMethod::Get => MethodFilter::GET,
        HttpMethod::Post => MethodFilter::POST,
        HttpMethod::Patch => MethodFilter::PATCH,
        HttpMethod::Delete => MethodFilter::DELETE,
    };
    let router = on(
        filter,
        move |State(state): State<Arc<AppState>>, req: Request| {
            serve::<E, C, H>(handler, state, req, refuse_path)
        },
    );
    match E::DESC.access {
        Access::Open | Access::KeyChecked => router,
        Access::Key(_) | Access::Admin => {
            router.route_layer(middleware::from_fn(|req: Request, next: Next| async move {
                match admit(&E::DESC, &req) {
                    Ok(()) => next.run(req).await,
                    Err(e) => e.into_response(),
                }
            }))
        }
    }
}

/// 403 unless the request's key has what the declaration needs.
fn admit(desc: &ActionDesc, req: &Request) -> ApiResult<()> {
    // The gateway puts the key on every request to a route that is not open; its absence is a
    // routing mistake of ours, not the caller's.
    let auth = req
        .extensions()
        .get::<Auth>()
        .ok_or_else(|| ApiError::internal("an authenticated route was reached without a key"))?;
    require(auth, desc.access)
}

/// 403 unless `auth` has what `access` needs.
pub fn require(auth: &Auth, access: Access) -> ApiResult<()> {
    match access {
        Access::Key(needs) => needs
            .iter()
            .try_for_each(|(resource, action)| auth.require(resource, *action)),
        Access::Admin if !auth.admin => {
            Err(ApiError::forbidden("this operation needs an admin key"))
        }
        Access::Admin | Access::KeyChecked | Access::Open => Ok(()),
    }
}

/// The full path a declaration is served on.
pub fn served_path(desc: &ActionDesc) -> String {
    format!("/api/v2{}", desc.path)
}

/// Paths that need no key, from the declarations of open actions: an exact path, or the part
/// before the first parameter for a path that has one (`/api/v2/document/file/`).
pub fn open_paths() -> (Vec<String>, Vec<String>) {
    let mut prefixes = Vec::new();
    let mut exact = Vec::new();
    for desc in prodops_core::api::ACTIONS {
        if desc.access != Access::Open {
            continue;
        }
        let path = served_path(desc);
        match path.find('{') {
            Some(i) => prefixes.push(path[..i].to_string()),
            None => exact.push(path),
        }
    }
    (prefixes, exact)
}
