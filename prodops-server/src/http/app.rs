//! The application: shared state, the router around the routes the composition root assembles,
//! and the gateway every request passes through (request id → API key → rate limit →
//! idempotency fingerprint → route → error shape).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, FromRequest, OptionalFromRequest, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures::FutureExt;
use http_body_util::BodyExt;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::http::context::{Auth, Ctx, Idempotency};
use crate::http::error::{ApiError, ApiResult, REQUEST_ID, code_for};
use crate::http::ratelimit::RateLimiter;
pub use crate::http::reply::Reply;
use crate::store::records::KeysetPage;
use crate::store::{PageRead, PointRead, Store, Tx};

/// Request bodies larger than this are refused with 413 (decisions.md section 4).
pub const BODY_LIMIT: usize = 32 * 1024 * 1024;

pub struct AppState {
    pub store: Store,
    /// The engine's resource table, built once at start (`families::resources`); each request's
    /// context carries it (`Ctx::resources`).
    pub resources: crate::http::context::ResourceTable,
    /// Services of the layers above this one that handlers reach through the state, by type
    /// (document files and their signed links: `blob::Files::of`).
    pub services: axum::http::Extensions,
    pub limiter: RateLimiter,
    /// The clock reads evaluate time-dependent fields at (alerts, a delivery's `isLate`).
    pub clock: crate::http::clock::Clock,
    /// The OpenAPI document, rendered once at start.
    pub openapi: Bytes,
    /// Wakes the background job runner when a job is queued.
    pub jobs: Arc<tokio::sync::Notify>,
    /// Wakes the readers of the change feed waiting for an event (`GET /event?wait=`) when a
    /// write of this process committed some.
    pub events: Arc<tokio::sync::Notify>,
    /// The tables of the resources whose read by id the key lookup can do along
    /// (the engine's `point_reads`), by the path they are served at.
    pub point_reads: HashMap<String, &'static str>,
    /// The resources whose list page the key lookup can read along (the engine's
    /// `page_reads`): for each collection path, what a query string asks for, when it asks
    /// for a plain page in the default order.
    pub page_reads: HashMap<String, PagePlanner>,
    /// Paths under `/api/v2` that need no key beyond the OpenAPI document: those starting with
    /// one of `open_prefixes` (download links, whose signature is the credential) and those
    /// equal to one of `open_paths` (accepting an invitation, whose token is the credential).
    pub open_prefixes: Vec<String>,
    pub open_paths: Vec<String>,
}

/// The record of a `GET /api/v2/<resource>/<id>` that the key lookup reads in its own
/// statement; the route's handler answers from it (the engine's `get_one`).
#[derive(Debug, Clone)]
pub struct Prefetched {
    pub read: PointRead,
    pub record: Option<String>,
}

/// The page a list's query string asks for, if the key lookup can read it along: `None` for
/// anything else (another order, a query to refuse), which the handler then reads or refuses.
pub type PagePlanner =
    Arc<dyn Fn(Option<&str>, &prodops_core::alerts::AsOf) -> Option<PageRead> + Send + Sync>;

/// The list page of a `GET /api/v2/<resource>` read with the key (http/app.rs `page_read`);
/// the engine's `list` answers from it when its table and query string are the handler's.
#[derive(Clone)]
pub struct PrefetchedPage {
    pub table: &'static str,
    pub query: Option<String>,
    page: Arc<std::sync::Mutex<Option<(KeysetPage, u64)>>>,
}

impl PrefetchedPage {
    /// The page and its total, once (the request's extension is cloned, not the page).
    pub fn take(&self) -> Option<(KeysetPage, u64)> {
        self.page.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// Runs a write in one transaction. With an `Idempotency-Key`, a repeat of the same request is
/// answered from the stored reply without running `f`, and the first reply is stored in the same
/// transaction as the work it describes, so a retried call can never apply twice.
///
/// A dry run ([`Ctx::dry_run`]) runs the same work and rolls it back: see [`dry_run_reply`].
pub async fn write_reply<F>(state: &AppState, ctx: Ctx, mut f: F) -> ApiResult<Response>
where
    F: FnMut(&mut dyn Tx, &Ctx) -> ApiResult<Reply> + Send + 'static,
{
    if ctx.dry_run {
        return dry_run_reply(state, ctx, f).await;
    }
    let (reply, events) = state
        .store
        .write(move |tx| {
            // A transaction run again (a serialization failure) starts without the events of
            // the attempt that was rolled back.
            ctx.take_events();
            let reply = match &ctx.idempotency {
                Some(idem) => {
                    if let Some(stored) = crate::http::idempotency::replay(tx, &ctx, idem)? {
                        return Ok::<_, ApiError>((stored, 0));
                    }
                    let reply = f(tx, &ctx)?;
                    crate::http::idempotency::remember(tx, &ctx, idem, &reply)?;
                    reply
                }
                None => f(tx, &ctx)?,
            };
            // The events of the writes, last, in the same transaction (docs/events.md).
            let events = ctx.take_events();
            let n = crate::store::events::append(tx, &ctx.event_origin(), &events)?;
            Ok((reply, n))
        })
        .await?;
    if events > 0 {
        state.events.notify_waiters();
    }
    Ok(reply.into_response())
}

/// The answer header of a dry run, parsed once.
pub const DRY_RUN_HEADER: HeaderName = HeaderName::from_static("prodops-dry-run");

/// A dry run of a write (docs/api.md, "Dry runs"): `f` runs in a write transaction as it
/// would for the write, hooks and rules included, and the events it would append are taken
/// from it; then the transaction is rolled back, so nothing of it stays on the database: no
/// record, ledger row, event (so no webhook delivery), or idempotency key, which is neither
/// looked up nor stored. The answer is a `DryRun` envelope (`prodops_core::dry_run`) of the
/// reply `f` made, its status (200 for a write answered with 204), the ledger rows and the
/// events, with the header `Prodops-Dry-Run: true`. A refusal is answered as the write's.
async fn dry_run_reply<F>(state: &AppState, ctx: Ctx, mut f: F) -> ApiResult<Response>
where
    F: FnMut(&mut dyn Tx, &Ctx) -> ApiResult<Reply> + Send + 'static,
{
    type Kept = (Reply, Vec<prodops_core::dry_run::PendingEvent>);
    let kept: Arc<std::sync::Mutex<Option<Kept>>> = Arc::default();
    let slot = kept.clone();
    let rolled_back = state
        .store
        .write(move |tx| {
            ctx.take_events();
            let reply = f(tx, &ctx)?;
            let origin = ctx.event_origin();
            let events = ctx
                .take_events()
                .iter()
                .map(|e| pending_event(&origin, e))
                .collect::<ApiResult<Vec<_>>>()?;
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some((reply, events));
            // An error rolls the transaction back; the answer was kept above.
            Err::<(), _>(ApiError::internal("a dry run is rolled back"))
        })
        .await;
    let taken = kept.lock().unwrap_or_else(|p| p.into_inner()).take();
    let Some((reply, events)) = taken else {
        return Err(match rolled_back {
            Err(e) => e,
            Ok(()) => ApiError::internal("a dry run was not rolled back"),
        });
    };
    let answer: Value = match &reply.body {
        Some(body) => serde_json::from_str(body).map_err(ApiError::internal)?,
        None => Value::Null,
    };
    let status = match reply.status {
        StatusCode::NO_CONTENT => StatusCode::OK,
        status => status,
    };
    let envelope = prodops_core::dry_run::DryRun::new(answer, events);
    let mut response = Reply::json(status, &envelope).into_response();
    response
        .headers_mut()
        .insert(DRY_RUN_HEADER, HeaderValue::from_static("true"));
    Ok(response)
}

/// An event a dry run would have appended, as its envelope lists it.
fn pending_event(
    origin: &crate::store::events::Origin,
    e: &crate::store::events::NewEvent,
) -> ApiResult<prodops_core::dry_run::PendingEvent> {
    Ok(prodops_core::dry_run::PendingEvent {
        event_type: e.event_type.clone(),
        resource: e.resource.to_string(),
        record_id: uuid::Uuid::parse_str(&e.record_id).map_err(ApiError::internal)?,
        key_id: origin.key_id,
        request_id: origin.request_id.clone(),
        occurred_at: origin.occurred_at.clone(),
        data: serde_json::from_str(&e.data).map_err(ApiError::internal)?,
        changed: e
            .changed
            .as_deref()
            .map(serde_json::from_str::<Vec<String>>)
            .transpose()
            .map_err(ApiError::internal)?,
    })
}

/// Takes `dryRun` off a write's query string (each other parameter kept as it was sent):
/// `Some(true)` for `dryRun=true`, `Some(false)` for `dryRun=false`, `None` without it; 400
/// naming `dryRun` for another value or a repeated one.
fn take_dry_run(uri: &axum::http::Uri) -> ApiResult<Option<(bool, axum::http::Uri)>> {
    let Some(query) = uri.query() else {
        return Ok(None);
    };
    // Most writes have no query, or one without the name written either way: nothing to read.
    if !query.contains(prodops_core::dry_run::PARAM) && !query.contains('%') {
        return Ok(None);
    }
    let mut flag = None;
    let mut kept: Vec<&str> = Vec::new();
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key: String = form_urlencoded::parse(key.as_bytes())
            .map(|(k, _)| k.into_owned())
            .next()
            .unwrap_or_default();
        if key != prodops_core::dry_run::PARAM {
            kept.push(pair);
            continue;
        }
        let value: String = form_urlencoded::parse(format!("v={value}").as_bytes())
            .map(|(_, v)| v.into_owned())
            .next()
            .unwrap_or_default();
        if flag.is_some() {
            return Err(ApiError::field(
                prodops_core::dry_run::PARAM,
                "is given more than once",
            ));
        }
        flag = Some(
            prodops_core::dry_run::parse_flag(&value).map_err(|v| ApiError::violations(vec![v]))?,
        );
    }
    let Some(flag) = flag else {
        return Ok(None);
    };
    let path_and_query = if kept.is_empty() {
        uri.path().to_string()
    } else {
        format!("{}?{}", uri.path(), kept.join("&"))
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(
        path_and_query
            .parse()
            .map_err(|_| ApiError::validation("the query string could not be read"))?,
    );
    let uri = axum::http::Uri::from_parts(parts)
        .map_err(|_| ApiError::validation("the query string could not be read"))?;
    Ok(Some((flag, uri)))
}

/// Reads a whole body, refusing more than [`BODY_LIMIT`] bytes with 413.
pub async fn read_body(body: Body) -> ApiResult<Bytes> {
    match http_body_util::Limited::new(body, BODY_LIMIT)
        .collect()
        .await
    {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(ApiError::too_large(BODY_LIMIT))
        }
        Err(_) => Err(ApiError::validation("the request body could not be read")),
    }
}

/// A JSON request body (any JSON value), parsed with a size limit and a clear error.
pub struct JsonBody(pub Value);

fn malformed(e: serde_json::Error) -> ApiError {
    ApiError::validation(format!("malformed JSON in the request body: {e}"))
}

/// The body's bytes (size-limited), or `None` when it is empty or only whitespace. Text with
/// U+0000 or a lone surrogate is refused here, for every JSON body (`text::check_json`).
async fn nonblank_body(body: Body) -> ApiResult<Option<Bytes>> {
    let bytes = read_body(body).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    crate::http::text::check_json(&bytes)?;
    Ok(Some(bytes))
}

/// The body's bytes; an empty body is refused.
async fn required_body(body: Body) -> ApiResult<Bytes> {
    nonblank_body(body)
        .await?
        .ok_or_else(|| ApiError::validation("the request body is empty; send a JSON document"))
}

/// A required JSON body as a value ([`JsonBody`]).
pub async fn read_json(body: Body) -> ApiResult<Value> {
    let bytes = required_body(body).await?;
    serde_json::from_slice(&bytes).map_err(malformed)
}

/// A JSON body that may be left out, as a value: `None` when it is empty or only whitespace.
pub async fn read_optional_json(body: Body) -> ApiResult<Option<Value>> {
    match nonblank_body(body).await? {
        Some(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(malformed),
        None => Ok(None),
    }
}

impl<S: Send + Sync> FromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        read_json(req.into_body()).await.map(JsonBody)
    }
}

impl<S: Send + Sync> OptionalFromRequest<S> for JsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Option<Self>, ApiError> {
        Ok(read_optional_json(req.into_body()).await?.map(JsonBody))
    }
}

/// A JSON request body kept as its bytes (same limit as [`JsonBody`]), for handlers that
/// read it piece by piece (bulk PUT), off the async workers: [`RawJsonBody::parse`] reads it
/// and answers malformed JSON as [`JsonBody`] does. It is parsed once, where it is used.
pub struct RawJsonBody(pub Bytes);

impl RawJsonBody {
    /// The body read as `T` (borrowing from it, as `&RawValue`s do).
    pub fn parse<'a, T: serde::Deserialize<'a>>(&'a self) -> ApiResult<T> {
        serde_json::from_slice(&self.0).map_err(malformed)
    }
}

impl<S: Send + Sync> FromRequest<S> for RawJsonBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, _state: &S) -> Result<Self, ApiError> {
        Ok(RawJsonBody(required_body(req.into_body()).await?))
    }
}

pub fn hash_key(key: &str) -> String {
    // Into a buffer: `hex::encode` collects chars one by one, a few thousand instructions on
    // every request.
    let mut hex = [0u8; 64];
    hex::encode_to_slice(Sha256::digest(key.as_bytes()), &mut hex)
        .expect("a SHA-256 digest is 32 bytes, 64 hex digits");
    String::from_utf8_lossy(&hex).into_owned()
}

/// Names of the headers the gateway reads and sets, parsed once at compile time (a `&str`
/// name is parsed and checked on every use).
const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");
const X_API_KEY: HeaderName = HeaderName::from_static("x-api-key");
const RATELIMIT_LIMIT: HeaderName = HeaderName::from_static("ratelimit-limit");
const RATELIMIT_REMAINING: HeaderName = HeaderName::from_static("ratelimit-remaining");
const RATELIMIT_RESET: HeaderName = HeaderName::from_static("ratelimit-reset");

fn request_id(headers: &HeaderMap) -> Arc<str> {
    headers
        .get(X_REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty() && v.len() <= 200 && v.bytes().all(|b| b.is_ascii_graphic()))
        .map(Arc::from)
        .unwrap_or_else(|| {
            let mut buf = uuid::Uuid::encode_buffer();
            Arc::from(&*uuid::Uuid::now_v7().hyphenated().encode_lower(&mut buf))
        })
}

/// Paths under `/api/v2` that need no key.
fn is_open(state: &AppState, path: &str) -> bool {
    path == "/api/v2/openapi.json"
        || !path.starts_with("/api/v2")
        // The signature of a download link and the token of an invitation are the credentials.
        || state.open_prefixes.iter().any(|p| path.starts_with(p.as_str()))
        || state.open_paths.iter().any(|p| p == path)
}

/// The record a request reads by id, when the key lookup can read it along: a `GET` of
/// `/api/v2/<resource>/<uuid>` whose resource answers reads by id with the stored record.
fn point_read(state: &AppState, method: &Method, path: &str) -> Option<PointRead> {
    if *method != Method::GET {
        return None;
    }
    let (base, id) = path.rsplit_once('/')?;
    let table = *state.point_reads.get(base)?;
    let id = uuid::Uuid::parse_str(id).ok()?;
    Some(PointRead { table, id })
}

/// The list page a request asks for, when the key lookup can read it along: a `GET` of a
/// collection path `/api/v2/<resource>` whose resource has a [`PagePlanner`].
fn page_read(state: &AppState, method: &Method, uri: &axum::http::Uri) -> Option<PrefetchedPlan> {
    if *method != Method::GET || !state.store.reads_pages_with_key() {
        return None;
    }
    let planner = state.page_reads.get(uri.path())?;
    // Text the database must never see (U+0000, ...) is refused after the key lookup, by
    // `admit`; such a query is not planned.
    crate::http::text::check_uri(uri).ok()?;
    let page = planner(uri.query(), &state.clock.as_of())?;
    Some(PrefetchedPlan {
        page,
        query: uri.query().map(str::to_string),
    })
}

/// A page to read with the key, and the query string it was planned from.
struct PrefetchedPlan {
    page: PageRead,
    query: Option<String>,
}

/// What the key lookup read along: a record by id, or a list page.
#[derive(Default)]
struct ReadAlong {
    record: Option<Prefetched>,
    page: Option<PrefetchedPage>,
}

/// The key's standing, and the record a read by id asked for ([`point_read`]) or the page a
/// list asked for ([`page_read`]).
async fn authenticate(
    state: &AppState,
    headers: &HeaderMap,
    read: Option<PointRead>,
    plan: Option<PrefetchedPlan>,
) -> ApiResult<(Auth, ReadAlong)> {
    let key = headers
        .get(X_API_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .ok_or_else(|| ApiError::unauthorized("missing X-API-Key header"))?;
    let key_hash = hash_key(key);
    let found = match &plan {
        Some(plan) => state.store.find_key_and_page(&key_hash, &plan.page).await?,
        None => state.store.find_key(&key_hash, read).await?,
    }
    .ok_or_else(|| ApiError::unauthorized("unknown or revoked API key"))?;
    let row = found.key;
    let auth = Auth {
        key_id: row.key_id,
        org: row.organization_id,
        admin: row.is_admin,
        permissions: Arc::new(row.permissions.into_iter().collect()),
        flags: Arc::new(row.flags),
    };
    let record = read.map(|read| Prefetched {
        read,
        record: found.record,
    });
    let page = match (plan, found.page) {
        (Some(plan), Some(page)) => Some(PrefetchedPage {
            table: plan.page.table,
            query: plan.query,
            page: Arc::new(std::sync::Mutex::new(Some(page))),
        }),
        _ => None,
    };
    Ok((auth, ReadAlong { record, page }))
}

fn idempotency_of(
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult<Idempotency> {
    let key = headers
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .filter(|k| !k.is_empty() && k.len() <= 255)
        .ok_or_else(|| ApiError::field("Idempotency-Key", "must be 1 to 255 visible characters"))?;
    let mut hasher = Sha256::new();
    hasher.update(method.as_str().as_bytes());
    hasher.update(b" ");
    hasher.update(
        uri.path_and_query()
            .map_or(uri.path(), |pq| pq.as_str())
            .as_bytes(),
    );
    hasher.update(b"\n");
    hasher.update(body);
    Ok(Idempotency {
        key: key.to_string(),
        fingerprint: hex::encode(hasher.finalize()),
    })
}

/// Authentication, rate limiting and the idempotency fingerprint; then the route.
async fn admit(
    state: &AppState,
    mut req: Request,
    next: Next,
    peer: Option<SocketAddr>,
) -> (Response, Option<crate::http::ratelimit::Standing>) {
    let path = req.uri().path().to_string();
    let auth = if is_open(state, &path) {
        None
    } else {
        let read = point_read(state, req.method(), &path);
        let plan = match read {
            Some(_) => None,
            None => page_read(state, req.method(), req.uri()),
        };
        Some(authenticate(state, req.headers(), read, plan).await)
    };
    let bucket = match &auth {
        Some(Ok((a, _))) => format!("key:{}", a.key_id),
        _ => format!(
            "ip:{}",
            peer.map(|p| p.ip().to_string()).unwrap_or_default()
        ),
    };
    let standing = state.limiter.admit(&state.store, &bucket).await;
    if !standing.allowed {
        return (
            ApiError::rate_limited(standing.reset_secs.max(1)).into_response(),
            Some(standing),
        );
    }
    match auth {
        Some(Err(e)) => return (e.into_response(), Some(standing)),
        Some(Ok((a, along))) => {
            req.extensions_mut().insert(a);
            if let Some(p) = along.record {
                req.extensions_mut().insert(p);
            }
            if let Some(p) = along.page {
                req.extensions_mut().insert(p);
            }
        }
        None => {}
    }
    // Path and query text: no U+0000, UTF-8 only, for every endpoint (http/text.rs).
    if let Err(e) = crate::http::text::check_uri(req.uri()) {
        return (e.into_response(), Some(standing));
    }
    // `?dryRun=` on a write: taken off the query, marked on the request (docs/api.md).
    let mut dry_run = false;
    if matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        match take_dry_run(req.uri()) {
            Ok(None) => {}
            Ok(Some((flag, uri))) => {
                *req.uri_mut() = uri;
                if flag {
                    dry_run = true;
                    req.extensions_mut().insert(crate::http::context::DryRun);
                }
            }
            Err(e) => return (e.into_response(), Some(standing)),
        }
    }
    if matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) && req.headers().contains_key("idempotency-key")
    {
        let (parts, body) = req.into_parts();
        let bytes = match read_body(body).await {
            Ok(b) => b,
            Err(e) => return (e.into_response(), Some(standing)),
        };
        match idempotency_of(&parts.method, &parts.uri, &parts.headers, &bytes) {
            Ok(idem) => {
                req = Request::from_parts(parts, Body::from(bytes));
                req.extensions_mut().insert(idem);
            }
            Err(e) => return (e.into_response(), Some(standing)),
        }
    }
    let response = next.run(req).await;
    if dry_run {
        return (dry_run_answered(response), Some(standing));
    }
    (response, Some(standing))
}

/// The answer to a request asked as a dry run. A write answered it through [`dry_run_reply`]
/// (the header is set). A refusal carries the header too. A success without it came from an
/// endpoint that writes nothing (a query sent by POST): `dryRun` is refused there, as the
/// document declares it on writes only; what such an endpoint did was only a read.
fn dry_run_answered(mut response: Response) -> Response {
    if response.headers().contains_key(DRY_RUN_HEADER) {
        return response;
    }
    if response.status().is_success() {
        return ApiError::field(
            prodops_core::dry_run::PARAM,
            "this endpoint writes nothing; only writes take dryRun",
        )
        .into_response();
    }
    response
        .headers_mut()
        .insert(DRY_RUN_HEADER, HeaderValue::from_static("true"));
    response
}

/// Turns a bodyless error (axum's own 404 and 405) into the error shape.
fn normalize_error(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if !status.is_client_error() && !status.is_server_error() || is_json {
        return response;
    }
    let message = match status {
        StatusCode::NOT_FOUND => "no such endpoint".to_string(),
        StatusCode::METHOD_NOT_ALLOWED => "this method is not allowed on this endpoint".to_string(),
        StatusCode::PAYLOAD_TOO_LARGE => format!(
            "request body is larger than {} MiB",
            BODY_LIMIT / (1024 * 1024)
        ),
        _ => status.canonical_reason().unwrap_or("error").to_string(),
    };
    let mut fresh = ApiError::new(status, code_for(status), message).into_response();
    if let Some(allow) = response.headers().get(header::ALLOW) {
        fresh.headers_mut().insert(header::ALLOW, allow.clone());
    }
    fresh
}

async fn gateway(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let id = request_id(req.headers());
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let peer = req
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0);
    let scoped = REQUEST_ID.scope(id.clone(), async {
        let outcome = AssertUnwindSafe(admit(&state, req, next, peer))
            .catch_unwind()
            .await;
        let (response, standing) = match outcome {
            Ok(r) => r,
            Err(_) => (
                ApiError::internal("a handler panicked").into_response(),
                None,
            ),
        };
        (normalize_error(response), standing)
    });
    let (mut response, standing) = scoped.await;
    let headers = response.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&id) {
        headers.insert(X_REQUEST_ID, v);
    }
    if let Some(s) = standing {
        headers.insert(RATELIMIT_LIMIT, HeaderValue::from(s.limit));
        headers.insert(RATELIMIT_REMAINING, HeaderValue::from(s.remaining));
        headers.insert(RATELIMIT_RESET, HeaderValue::from(s.reset_secs));
    }
    let status = response.status();
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    if status.is_server_error() {
        tracing::error!(request_id = %id, %method, %path, status = status.as_u16(), elapsed_ms, "request failed");
    } else if status.is_client_error() {
        tracing::info!(request_id = %id, %method, %path, status = status.as_u16(), elapsed_ms, "request refused");
    } else {
        tracing::debug!(request_id = %id, %method, %path, status = status.as_u16(), elapsed_ms, "request served");
    }
    response
}

async fn healthz(State(state): State<Arc<AppState>>) -> Response {
    if state.store.ping().await {
        (
            StatusCode::OK,
            axum::Json(serde_json::json!({ "status": "ok" })),
        )
            .into_response()
    } else {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "INTERNAL",
            "the database does not answer",
        )
        .into_response()
    }
}

async fn openapi(State(state): State<Arc<AppState>>) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        state.openapi.clone(),
    )
        .into_response()
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "NOT_FOUND", "no such endpoint")
}

/// The service: the health check, the OpenAPI document and `routes` (every endpoint, as the
/// composition root assembles them) behind the gateway.
pub fn router(state: Arc<AppState>, routes: Router<Arc<AppState>>) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/api/v2/openapi.json", get(openapi))
        .merge(routes)
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), gateway))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::Uri;

    fn taken(uri: &str) -> ApiResult<Option<(bool, String)>> {
        let uri: Uri = uri.parse().expect("a URI");
        take_dry_run(&uri).map(|t| t.map(|(flag, rest)| (flag, rest.to_string())))
    }

    #[test]
    fn dry_run_is_taken_off_the_query_and_the_rest_kept_as_sent() {
        assert_eq!(
            taken("/api/v2/worker/bulk?name=a%20b&dryRun=true&x=1").unwrap(),
            Some((true, "/api/v2/worker/bulk?name=a%20b&x=1".to_string()))
        );
        assert_eq!(
            taken("/api/v2/worker?dryRun=true").unwrap(),
            Some((true, "/api/v2/worker".to_string()))
        );
        // Percent-encoded, it is still the parameter.
        assert_eq!(
            taken("/api/v2/worker?dry%52un=false&a=1").unwrap(),
            Some((false, "/api/v2/worker?a=1".to_string()))
        );
        assert_eq!(taken("/api/v2/worker?name=x").unwrap(), None);
        assert_eq!(taken("/api/v2/worker").unwrap(), None);
        assert_eq!(taken("/api/v2/worker?dryRunx=true").unwrap(), None);
        for bad in [
            "/api/v2/worker?dryRun=maybe",
            "/api/v2/worker?dryRun",
            "/api/v2/worker?dryRun=true&dryRun=false",
        ] {
            let e = taken(bad).unwrap_err();
            assert_eq!(e.status, StatusCode::BAD_REQUEST, "{bad}");
            assert_eq!(e.details[0].field.as_deref(), Some("dryRun"), "{bad}");
        }
    }
}
