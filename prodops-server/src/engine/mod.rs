//! The one engine behind the standard endpoints of every resource (decisions.md section 4):
//! list, read, create, update, delete, query, count, group-and-count and the bulk forms,
//! driven by the resource's description from `prodops-core` and its server hooks.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Extension, Path, RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use prodops_core::resource::{Allow, ResourceKind};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::http::app::{
    AppState, JsonBody, Prefetched, PrefetchedPage, RawJsonBody, Reply, write_reply,
};
use crate::http::call::Call;
use crate::http::context::{Action, Auth, Ctx};
use crate::http::error::{ApiError, ApiResult};
use crate::store::events as events_store;
use crate::store::records::{self, Select};
use crate::store::sql::{Cond, FieldPath};
use crate::store::{PageRead, Tx};
use hooks::Hooks;

pub(crate) mod bulk;
pub mod events;
pub mod hooks;
pub mod openapi;
pub(crate) mod params;
mod pipeline;
pub mod rawjson;
mod resources;

pub use params::{
    ListParams, filter_conds, flattened_name, parse_body, parse_id, parse_list_params,
};
use params::{QueryBody, body_object, lookup_path, search_cond, sort_or_default};
pub use pipeline::load;
pub use pipeline::{
    apply_server_change, apply_typed_change, create_record, create_records_held,
    create_records_held_indexed, create_server_record, create_server_typed, delete_record,
    record_body, update_record, upsert_record,
};
pub use resources::Resources;

/// The largest `pageSize` a list or query accepts.
pub const MAX_PAGE_SIZE: u64 = 10_000;
pub const DEFAULT_PAGE_SIZE: u64 = 100;
/// The largest `page`; with the largest page size the offset stays far inside every database's range.
pub const MAX_PAGE: u64 = u32::MAX as u64;
/// Bulk PATCH and DELETE act on at most this many records per call.
pub const MAX_BULK_RECORDS: u64 = 100_000;

/// A resource as the engine serves it: its kind, the fields a filter may name, its hooks.
pub struct ServedResource {
    pub kind: &'static dyn ResourceKind,
    pub fields: HashSet<String>,
    pub hooks: Arc<dyn Hooks>,
    /// Path segment(s) under `/api/v2` the resource is served at (its description's path, or
    /// a sub-view such as `concept/order`).
    pub base: String,
    /// Top-level string fields the path implies (`type` = `order` under `/concept/order`):
    /// reads see only matching records, creates get them, changes to them are refused.
    pub implied: Vec<(&'static str, &'static str)>,
}

impl ServedResource {
    /// The resource of `kind`, one of `registry::resources()`, served with `hooks`.
    pub fn new(kind: &'static dyn ResourceKind, hooks: Arc<dyn Hooks>) -> Self {
        let fields = schema_fields(kind);
        ServedResource {
            kind,
            fields,
            hooks,
            base: kind.desc().path.to_string(),
            implied: Vec::new(),
        }
    }

    /// The conditions of the implied fields.
    pub fn implied_conds(&self) -> Vec<Cond> {
        self.implied
            .iter()
            .map(|(field, value)| Cond::Field {
                path: FieldPath::parse(field).expect("implied fields are valid paths"),
                values: vec![value.to_string()],
            })
            .collect()
    }

    /// Whether a stored record belongs to this view (always, without implied fields).
    pub fn matches_implied(&self, record: &Value) -> bool {
        self.implied
            .iter()
            .all(|(field, value)| record.get(*field).and_then(Value::as_str) == Some(*value))
    }

    pub fn desc(&self) -> &'static prodops_core::ResourceDesc {
        self.kind.desc()
    }

    pub fn table(&self) -> &'static str {
        self.desc().table
    }

    /// Whether a read by id answers the stored record as it is: no default filters, no
    /// sub-view, nothing added when presenting it.
    pub fn reads_stored_record_by_id(&self) -> bool {
        self.desc().default_filters.is_empty() && self.implied.is_empty() && !self.hooks.presents()
    }

    pub fn allow(&self, allow: Allow, what: &str) -> ApiResult<()> {
        match allow {
            Allow::Yes | Allow::Custom => Ok(()),
            Allow::Forbidden => Err(ApiError::forbidden(format!(
                "{what} is not allowed on /{}",
                self.desc().path
            ))),
            Allow::NotAllowed => Err(ApiError::method_not_allowed(format!(
                "{what} is not available on /{}",
                self.desc().path
            ))),
        }
    }

    /// A field path a `select` may name: its first segment is a field of the record.
    pub fn field_path(&self, name: &str) -> ApiResult<FieldPath> {
        match FieldPath::parse(name) {
            Some(p) if self.fields.contains(p.first()) => Ok(p),
            _ => Err(ApiError::field(
                name,
                format!("unknown field for /{}", self.desc().path),
            )),
        }
    }

    /// A field path a filter, sort or group-and-count may name: a [`field_path`] outside the
    /// fields computed only for answers (`ResourceDesc::answered`), which no stored record
    /// holds, so that no filter on one answers a wrong page (400 naming it instead).
    ///
    /// [`field_path`]: ServedResource::field_path
    pub fn stored_path(&self, name: &str) -> ApiResult<FieldPath> {
        let path = self.field_path(name)?;
        if self.desc().answered.contains(&path.first()) {
            return Err(ApiError::field(
                name,
                format!(
                    "{} of /{} is computed for each answer and not stored: it cannot be filtered, sorted or grouped by",
                    path.first(),
                    self.desc().path
                ),
            ));
        }
        Ok(path)
    }

    /// The fields a filter, sort or group-and-count may name (every field but the answered ones).
    pub fn stored_fields(&self) -> HashSet<String> {
        self.fields
            .iter()
            .filter(|f| !self.desc().answered.contains(&f.as_str()))
            .cloned()
            .collect()
    }
}

/// The top-level property names of a resource's schema.
fn schema_fields(kind: &dyn ResourceKind) -> HashSet<String> {
    use utoipa::openapi::{RefOr, schema::Schema};
    match kind.schema().1 {
        RefOr::T(Schema::Object(obj)) => obj.properties.keys().cloned().collect(),
        _ => HashSet::new(),
    }
}

/// The routes of every standard resource; methods a resource serves itself (`Allow::Custom`)
/// are left for its own module to add.
pub fn routes(resources: &Resources) -> Router<Arc<AppState>> {
    let mut router = Router::new();
    for res in resources.iter() {
        router = router.merge(resource_routes(res.clone()));
    }
    router
}

/// The resources whose read by id the key lookup can do along (http/app.rs `point_read`): the
/// table of each, by the path of its records (`/api/v2/<path>`).
pub fn point_reads(resources: &Resources) -> HashMap<String, &'static str> {
    resources
        .iter()
        .filter(|res| res.reads_stored_record_by_id())
        .map(|res| (format!("/api/v2/{}", res.base), res.table()))
        .collect()
}

/// The resources whose list page the key lookup can read along (http/app.rs `page_read`): for
/// each collection path, the page a query string asks for when it is a plain page in the
/// default order of a resource that presents its records as stored.
pub fn page_reads(resources: &Resources) -> HashMap<String, crate::http::app::PagePlanner> {
    resources
        .iter()
        .filter(|res| !res.hooks.presents())
        .map(|res| {
            let res = res.clone();
            let path = format!("/api/v2/{}", res.base);
            let planner: crate::http::app::PagePlanner = Arc::new(
                move |query: Option<&str>, now: &prodops_core::alerts::AsOf| {
                    let params = parse_list_params(&res, query, true, now).ok()?;
                    params.sort.is_empty().then(|| page_of(&res, &params))
                },
            );
            (path, planner)
        })
        .collect()
}

/// The keyset page a list in the default order reads.
fn page_of(res: &ServedResource, params: &params::ListParams) -> PageRead {
    let select = params.select();
    PageRead {
        table: res.table(),
        conds: select.conds,
        after: params.cursor.clone(),
        limit: select.limit,
        offset: select.offset,
    }
}

/// Whether the engine routes an operation: offered (`Yes`) or refused with 403 (`Forbidden`).
/// An operation the resource does not offer (`NotAllowed`) is not routed, so the router
/// answers 405 with an `Allow` header naming exactly the methods the path serves (and the
/// OpenAPI document lists); one the resource serves itself (`Custom`) is routed by its module.
pub fn routed(allow: Allow) -> bool {
    matches!(allow, Allow::Yes | Allow::Forbidden)
}

/// The standard routes of one resource at `/api/v2/<res.base>`.
pub fn resource_routes(res: Arc<ServedResource>) -> Router<Arc<AppState>> {
    let ops = res.desc().ops;
    let base = format!("/api/v2/{}", res.base);
    let mut collection: MethodRouter<Arc<AppState>> = get(list);
    if routed(ops.create) {
        collection = collection.post(create);
    }
    let mut bulk: MethodRouter<Arc<AppState>> = MethodRouter::new();
    if routed(ops.bulk_put) {
        bulk = bulk.put(bulk_put);
    }
    if routed(ops.bulk_patch) {
        bulk = bulk.patch(bulk_patch);
    }
    if routed(ops.bulk_delete) {
        bulk = bulk.delete(bulk_delete);
    }
    let mut item: MethodRouter<Arc<AppState>> = get(get_one);
    if routed(ops.update) {
        item = item.patch(update);
    }
    if routed(ops.delete) {
        item = item.delete(delete_one);
    }
    let mut router = Router::new()
        .route(&base, collection)
        .route(&format!("{base}/query"), post(query))
        .route(&format!("{base}/export"), get(export))
        .route(&format!("{base}/count"), get(count_get).post(count_post))
        .route(&format!("{base}/group-and-count"), post(group_and_count))
        .route(&format!("{base}/{{id}}"), item);
    if [ops.bulk_put, ops.bulk_patch, ops.bulk_delete]
        .into_iter()
        .any(routed)
    {
        router = router.route(&format!("{base}/bulk"), bulk);
    }
    router.layer(Extension(res))
}

/// `{"values":[...],"totalCount":N}` from records' stored JSON text; a keyset page
/// (`next_cursor` given) also ends with `"nextCursor"`. The body is sized once for everything
/// it will hold: growing a page of 100 records by its last few bytes used to copy the whole
/// page again (about 8% of a list request's instructions).
fn page_json(values: Vec<String>, total: u64, next_cursor: Option<Option<&str>>) -> String {
    let tail = 64 + next_cursor.flatten().map_or(0, str::len);
    let mut body = String::with_capacity(values.iter().map(|v| v.len() + 1).sum::<usize>() + tail);
    body.push_str("{\"values\":[");
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(v);
    }
    body.push_str("],\"totalCount\":");
    body.push_str(&total.to_string());
    match next_cursor {
        None => {}
        Some(Some(cursor)) => {
            body.push_str(",\"nextCursor\":\"");
            body.push_str(cursor);
            body.push('"');
        }
        Some(None) => body.push_str(",\"nextCursor\":null"),
    }
    body.push('}');
    body
}

fn json_response(status: StatusCode, body: String) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// A read's answer with the feed cursor it is consistent with, in the
/// [`FEED_CURSOR_HEADER`](prodops_core::event::FEED_CURSOR_HEADER) header (docs/events.md,
/// "Reads that name their cursor").
fn json_response_at(body: String, feed: i64) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json".to_string()),
            (
                header::HeaderName::from_static(FEED_CURSOR),
                feed.to_string(),
            ),
        ],
        body,
    )
        .into_response()
}

/// The feed cursor header's name.
const FEED_CURSOR: &str = prodops_core::event::FEED_CURSOR_HEADER;

// ----- reads -----------------------------------------------------------------------------------

async fn list(
    State(state): State<Arc<AppState>>,
    Extension(res): Extension<Arc<ServedResource>>,
    Extension(auth): Extension<Auth>,
    prefetched: Option<Extension<PrefetchedPage>>,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    res.hooks.authorize(&auth, &res, Action::Read)?;
    let params = parse_list_params(&res, query.as_deref(), true, &state.clock.as_of())?;
    let org = auth.org;
    if params.sort.is_empty() && !res.hooks.presents() {
        // The default order pages by keyset: `nextCursor` names the last row, and a `cursor`
        // call starts after it without skipping rows. Nothing to present needs a transaction:
        // the page was read with the key (http/app.rs `page_read`), or is read as one
        // statement where the store can (records::read_keyset_and_count).
        let page = page_of(&res, &params);
        let limit = page.limit;
        let along = prefetched
            .filter(|Extension(p)| p.table == res.table() && p.query == query)
            .and_then(|Extension(p)| p.take());
        let read = match along {
            Some(read) => read,
            None => records::read_keyset_and_count(&state.store, org, page.clone()).await?,
        };
        // The page's statement names the feed cursor of its snapshot where it can (SQLite
        // always; PostgreSQL when the page has a row to carry it); otherwise the page is read
        // again with the cursor in one snapshot.
        let (
            records::KeysetPage {
                mut values,
                last,
                feed,
            },
            total,
        ) = match read.0.feed {
            Some(_) => read,
            None => {
                state
                    .store
                    .read_snapshot(move |tx| {
                        let feed = events_store::feed_cursor(tx, org)?;
                        let (mut rows, total) = records::select_keyset_and_count(tx, org, &page)?;
                        rows.feed = Some(feed);
                        Ok::<_, ApiError>((rows, total))
                    })
                    .await?
            }
        };
        let next = (values.len() as u64 == limit)
            .then(|| last.map(|(c, id)| params::encode_cursor(&c, &id)))
            .flatten();
        hooks::as_of_now(&res, &state.clock.as_of(), &mut values);
        let body = page_json(values, total, Some(next.as_deref()));
        return Ok(json_response_at(body, feed.unwrap_or(0)));
    }
    let st = state.clone();
    let (body, feed) = state
        .store
        .read_snapshot(move |tx| {
            // First: on both databases the snapshot is taken by the first statement.
            let feed = events_store::feed_cursor(tx, org)?;
            if !params.sort.is_empty() {
                let mut values = records::select_raw(tx, res.table(), org, &params.select())?;
                hooks::present_raw(&res, &st, tx, &auth, &mut values)?;
                let total = records::count(tx, res.table(), org, &params.conds)?;
                return Ok::<_, ApiError>((page_json(values, total, None), feed));
            }
            // The default order (creation order) pages by keyset: `nextCursor` names the last
            // row, and a `cursor` call starts after it without skipping rows.
            let page = page_of(&res, &params);
            let (
                records::KeysetPage {
                    mut values, last, ..
                },
                total,
            ) = records::select_keyset_and_count(tx, org, &page)?;
            let next = (values.len() as u64 == page.limit)
                .then(|| last.map(|(c, id)| params::encode_cursor(&c, &id)))
                .flatten();
            hooks::present_raw(&res, &st, tx, &auth, &mut values)?;
            let body = page_json(values, total, Some(next.as_deref()));
            Ok::<_, ApiError>((body, feed))
        })
        .await?;
    Ok(json_response_at(body, feed))
}

/// Records one statement of an export reads.
const EXPORT_BATCH: u64 = 1_000;
/// An export's body is sent in parts of about this size as it is read.
const EXPORT_PART_BYTES: usize = 256 << 10;

/// What the read of an export hands to its response: first the feed cursor, then the body.
enum ExportPart {
    Cursor(i64),
    More(bytes::Bytes),
    Last(bytes::Bytes),
}

/// `GET /r/export?<filters>`: every record the list's filters, `search` and `isArchived` match,
/// in the default order, as one `{"values": [...], "totalCount": N}` answer read in one
/// snapshot, with the feed cursor of that snapshot in the `Prodops-Feed-Cursor` header. The
/// records are read a thousand at a time in one read transaction (`Store::read_snapshot`: on
/// PostgreSQL `REPEATABLE READ`, on SQLite a read transaction), and the body is sent in parts
/// as they are read: memory does not grow with the export, and writers are not held back
/// (neither database makes a writer wait for a reader). The events after the cursor are
/// exactly the changes the export does not contain (docs/events.md, "Exports").
async fn export(
    State(state): State<Arc<AppState>>,
    Extension(res): Extension<Arc<ServedResource>>,
    Extension(auth): Extension<Auth>,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    res.hooks.authorize(&auth, &res, Action::Read)?;
    let params = parse_list_params(&res, query.as_deref(), false, &state.clock.as_of())?;
    let (sender, mut receiver) = tokio::sync::mpsc::channel::<ApiResult<ExportPart>>(4);
    let st = state.clone();
    tokio::spawn(async move {
        let parts = sender.clone();
        let store = st.store.clone();
        let read = store
            .read_snapshot(move |tx| {
                let mut sent = false;
                match write_export(tx, &st, &res, &auth, &params.conds, &parts, &mut sent) {
                    // Part of the answer is out: the read cannot be run again.
                    Err(e) if sent => Err(ApiError::internal(format!(
                        "an export failed while sending: {}",
                        e.message
                    ))),
                    r => r,
                }
            })
            .await;
        if let Err(e) = read {
            let _ = sender.send(Err(e)).await;
        }
    });
    let ended = || ApiError::internal("the export ended without an answer");
    let feed = match receiver.recv().await {
        Some(Ok(ExportPart::Cursor(feed))) => feed,
        Some(Err(e)) => return Err(e),
        _ => return Err(ended()),
    };
    // The first part too before the answer starts, so that a failure of the first read is an
    // error answer rather than a body cut short.
    let first = match receiver.recv().await {
        Some(Ok(ExportPart::More(b) | ExportPart::Last(b))) => b,
        Some(Err(e)) => return Err(e),
        _ => return Err(ended()),
    };
    let rest = futures::stream::unfold(receiver, |mut r| async move {
        let item = match r.recv().await? {
            Ok(ExportPart::More(b) | ExportPart::Last(b)) => Ok(b),
            Ok(ExportPart::Cursor(_)) => Err(std::io::Error::other("a second cursor")),
            // A failure now can only cut the body short (the client sees it unfinished).
            Err(e) => Err(std::io::Error::other(e.message)),
        };
        Some((item, r))
    });
    let body = futures::StreamExt::chain(
        futures::stream::once(async move { Ok::<_, std::io::Error>(first) }),
        rest,
    );
    let mut response = json_response_at(String::new(), feed);
    response.headers_mut().remove(header::CONTENT_LENGTH);
    *response.body_mut() = axum::body::Body::from_stream(body);
    Ok(response)
}

/// Reads an export in the transaction `tx` and hands its cursor, then its body, to `parts` (see
/// [`export`]); `sent` tells whether any of the body went out. A closed channel (the client
/// left) ends the read.
fn write_export(
    tx: &mut dyn Tx,
    state: &AppState,
    res: &ServedResource,
    auth: &Auth,
    conds: &[Cond],
    parts: &tokio::sync::mpsc::Sender<ApiResult<ExportPart>>,
    sent: &mut bool,
) -> ApiResult<()> {
    let org = auth.org;
    // The first statement takes the snapshot; the cursor is read in it.
    let feed = events_store::feed_cursor(tx, org)?;
    if parts.blocking_send(Ok(ExportPart::Cursor(feed))).is_err() {
        return Ok(());
    }
    let mut body: Vec<u8> = Vec::with_capacity(EXPORT_PART_BYTES + (64 << 10));
    body.extend_from_slice(b"{\"values\":[");
    let mut count: u64 = 0;
    let mut after = None;
    loop {
        let page = PageRead {
            table: res.table(),
            conds: conds.to_vec(),
            after,
            limit: EXPORT_BATCH,
            offset: 0,
        };
        let records::KeysetPage {
            mut values, last, ..
        } = records::select_keyset(tx, org, &page)?;
        hooks::present_raw(res, state, tx, auth, &mut values)?;
        for value in &values {
            if count > 0 {
                body.push(b',');
            }
            body.extend_from_slice(value.as_bytes());
            count += 1;
        }
        if (values.len() as u64) < EXPORT_BATCH {
            break;
        }
        after = last;
        if body.len() >= EXPORT_PART_BYTES {
            let full = std::mem::replace(
                &mut body,
                Vec::with_capacity(EXPORT_PART_BYTES + (64 << 10)),
            );
            if parts
                .blocking_send(Ok(ExportPart::More(bytes::Bytes::from(full))))
                .is_err()
            {
                return Ok(());
            }
            *sent = true;
        }
    }
    body.extend_from_slice(b"],\"totalCount\":");
    body.extend_from_slice(count.to_string().as_bytes());
    body.push(b'}');
    let _ = parts.blocking_send(Ok(ExportPart::Last(bytes::Bytes::from(body))));
    Ok(())
}

async fn get_one(
    State(state): State<Arc<AppState>>,
    Extension(res): Extension<Arc<ServedResource>>,
    Extension(auth): Extension<Auth>,
    prefetched: Option<Extension<Prefetched>>,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    res.hooks.authorize(&auth, &res, Action::Read)?;
    let id = parse_id(&id)?;
    if res.reads_stored_record_by_id() {
        let raw = match prefetched {
            // Read along with the key, in the same statement (http/app.rs `point_read`).
            Some(Extension(p)) if p.read.table == res.table() && p.read.id == id => p.record,
            _ => state.store.get_raw(res.table(), auth.org, id).await?,
        };
        let mut raw = raw.ok_or_else(ApiError::not_found)?;
        hooks::as_of_now(&res, &state.clock.as_of(), std::slice::from_mut(&mut raw));
        return Ok(json_response(StatusCode::OK, raw));
    }
    // A read by id honours the resource's default filters (a Hub-only document is a 404
    // unless the call names `deliverableDocument`, spec 4.7).
    // A concept view (`/concept/order`) sees only records of its type.
    let mut conds = params::default_filter_conds(&res, query.as_deref(), &state.clock.as_of())?;
    conds.extend(res.implied_conds());
    conds.push(Cond::Ids(vec![id]));
    let org = auth.org;
    let st = state.clone();
    let body = state
        .store
        .read(move |tx| {
            let select = Select {
                conds: conds.clone(),
                limit: 1,
                ..Default::default()
            };
            let mut values = records::select_raw(tx, res.table(), org, &select)?;
            hooks::present_raw(&res, &st, tx, &auth, &mut values)?;
            values.pop().ok_or_else(ApiError::not_found)
        })
        .await?;
    Ok(json_response(StatusCode::OK, body))
}

async fn query(
    State(state): State<Arc<AppState>>,
    Extension(res): Extension<Arc<ServedResource>>,
    Extension(auth): Extension<Auth>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    res.hooks.authorize(&auth, &res, Action::Read)?;
    let body: QueryBody = parse_body(body)?;
    let now = state.clock.as_of();
    let mut conds = filter_conds(&res, body.filter.as_ref(), body.id.is_none(), &now)?;
    if let Some(ids) = &body.id {
        conds.push(Cond::Ids(ids.clone()));
    }
    if let Some(text) = &body.search
        && text.trim().is_empty()
    {
        crate::http::text::check_search(text)?;
    } else if let Some(text) = &body.search {
        conds.push(search_cond(&res, text)?);
    }
    let sort = sort_or_default(&res, body.sort.as_deref(), &now)?;
    let page = body.page.unwrap_or(1);
    if !(1..=MAX_PAGE).contains(&page) {
        return Err(ApiError::field(
            "page",
            format!("must be a whole number from 1 to {MAX_PAGE}"),
        ));
    }
    let default_size = body.id.as_ref().map_or(DEFAULT_PAGE_SIZE, |ids| {
        (ids.len() as u64).clamp(1, MAX_PAGE_SIZE)
    });
    let page_size = body.page_size.unwrap_or(default_size);
    if !(1..=MAX_PAGE_SIZE).contains(&page_size) {
        return Err(ApiError::field(
            "pageSize",
            format!("must be a whole number from 1 to {MAX_PAGE_SIZE}"),
        ));
    }
    let selected: Option<Vec<(String, FieldPath)>> = body
        .select
        .as_ref()
        .map(|fields| {
            fields
                .iter()
                .map(|f| Ok((flattened_name(f), res.field_path(f)?)))
                .collect::<ApiResult<_>>()
        })
        .transpose()?;
    let org = auth.org;
    let select = Select {
        conds,
        sort,
        limit: page_size,
        offset: (page - 1).saturating_mul(page_size),
    };
    let st = state.clone();
    let (body, feed) = state
        .store
        .read_snapshot(move |tx| {
            // First: on both databases the snapshot is taken by the first statement.
            let feed = events_store::feed_cursor(tx, org)?;
            let mut raw = records::select_raw(tx, res.table(), org, &select)?;
            hooks::present_raw(&res, &st, tx, &auth, &mut raw)?;
            let total = records::count(tx, res.table(), org, &select.conds)?;
            let values = match &selected {
                None => raw,
                Some(fields) => raw
                    .iter()
                    .map(|text| {
                        let record: Value =
                            serde_json::from_str(text).map_err(ApiError::internal)?;
                        let mut out = Map::new();
                        out.insert(
                            "id".into(),
                            record.get("id").cloned().unwrap_or(Value::Null),
                        );
                        for (name, path) in fields {
                            out.insert(
                                name.clone(),
                                lookup_path(&record, path).cloned().unwrap_or(Value::Null),
                            );
                        }
                        Ok(Value::Object(out).to_string())
                    })
                    .collect::<ApiResult<Vec<_>>>()?,
            };
            Ok::<_, ApiError>((page_json(values, total, None), feed))
        })
        .await?;
    Ok(json_response_at(body, feed))
}

async fn count_conds(
    state: &AppState,
    res: Arc<ServedResource>,
    auth: Auth,
    conds: Vec<Cond>,
) -> ApiResult<Response> {
    let org = auth.org;
    let n = state
        .store
        .read(move |tx| Ok::<_, ApiError>(records::count(tx, res.table(), org, &conds)?))
        .await?;
    Ok(axum::Json(json!({ "count": n })).into_response())
}

async fn count_get(
    State(state): State<Arc<AppState>>,
    Extension(res): Extension<Arc<ServedResource>>,
    Extension(auth): Extension<Auth>,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    res.hooks.authorize(&auth, &res, Action::Read)?;
    let params = parse_list_params(&res, query.as_deref(), false, &state.clock.as_of())?;
    count_conds(&state, res, auth, params.conds).await
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CountBody {
    filter: Option<Map<String, Value>>,
}

async fn count_post(
    State(state): State<Arc<AppState>>,
    Extension(res): Extension<Arc<ServedResource>>,
    Extension(auth): Extension<Auth>,
    body: Option<JsonBody>,
) -> ApiResult<Response> {
    res.hooks.authorize(&auth, &res, Action::Read)?;
    let body: CountBody = match body {
        Some(JsonBody(v)) if !v.is_null() => parse_body(v)?,
        _ => CountBody { filter: None },
    };
    let conds = filter_conds(&res, body.filter.as_ref(), true, &state.clock.as_of())?;
    count_conds(&state, res, auth, conds).await
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct GroupBody {
    group_by_field: String,
    filter: Option<Map<String, Value>>,
}

async fn group_and_count(
    State(state): State<Arc<AppState>>,
    Extension(res): Extension<Arc<ServedResource>>,
    Extension(auth): Extension<Auth>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    res.hooks.authorize(&auth, &res, Action::Read)?;
    let body: GroupBody = parse_body(body)?;
    let path = res.stored_path(&body.group_by_field)?;
    let now = state.clock.as_of();
    let as_of = params::as_of_field(&res, &path, &now);
    let conds = filter_conds(&res, body.filter.as_ref(), true, &now)?;
    let org = auth.org;
    let groups = state
        .store
        .read(move |tx| {
            Ok::<_, ApiError>(records::group_count(
                tx,
                res.table(),
                org,
                &path,
                as_of.as_ref(),
                &conds,
                MAX_PAGE_SIZE,
            )?)
        })
        .await?;
    let values: Vec<Value> = groups
        .into_iter()
        .map(|(g, n)| json!({ "groupId": g, "count": n }))
        .collect();
    Ok(axum::Json(json!({ "values": values })).into_response())
}

// ----- write handlers --------------------------------------------------------------------------

async fn create(
    call: Call,
    Extension(res): Extension<Arc<ServedResource>>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    res.allow(res.desc().ops.create, "POST")?;
    res.hooks.authorize(&call.auth, &res, Action::Create)?;
    let body = body_object(body)?;
    let st = call.state.clone();
    call.write_reply(move |tx, ctx| {
        let mut record = create_record(tx, ctx, &res, body.clone())?;
        if res.hooks.presents() {
            res.hooks.present(&st, tx, &ctx.auth, &mut record)?;
        }
        Ok(Reply::json(StatusCode::CREATED, &record))
    })
    .await
}

async fn update(
    call: Call,
    Extension(res): Extension<Arc<ServedResource>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    res.allow(res.desc().ops.update, "PATCH")?;
    res.hooks.authorize(&call.auth, &res, Action::Update)?;
    let id = parse_id(&id)?;
    let patch = body_object(body)?;
    let st = call.state.clone();
    call.write_reply(move |tx, ctx| {
        let old = load(tx, &res, ctx.org(), id)?;
        let mut record = update_record(tx, ctx, &res, &old, patch.clone())?;
        if res.hooks.presents() {
            res.hooks.present(&st, tx, &ctx.auth, &mut record)?;
        }
        Ok(Reply::json(StatusCode::OK, &record))
    })
    .await
}

async fn delete_one(
    call: Call,
    Extension(res): Extension<Arc<ServedResource>>,
    Path(id): Path<String>,
) -> ApiResult<Response> {
    res.allow(res.desc().ops.delete, "DELETE")?;
    res.hooks.authorize(&call.auth, &res, Action::Delete)?;
    let id = parse_id(&id)?;
    call.write_reply(move |tx, ctx| {
        let old = load(tx, &res, ctx.org(), id)?;
        delete_record(tx, ctx, &res, &old)?;
        Ok(Reply::empty(StatusCode::NO_CONTENT))
    })
    .await
}

/// The records a bulk PATCH or DELETE acts on. A filter matching more than
/// [`MAX_BULK_RECORDS`] is refused rather than applied in part.
fn bulk_targets(
    tx: &mut dyn Tx,
    res: &ServedResource,
    org: Uuid,
    params: &ListParams,
) -> ApiResult<Vec<Value>> {
    let select = Select {
        conds: params.conds.clone(),
        sort: Vec::new(),
        limit: MAX_BULK_RECORDS + 1,
        offset: 0,
    };
    let targets = records::select_values(tx, res.table(), org, &select)?;
    if targets.len() as u64 > MAX_BULK_RECORDS {
        return Err(ApiError::validation(format!(
            "the filter matches more than {MAX_BULK_RECORDS} records; narrow it and repeat; nothing was changed"
        )));
    }
    Ok(targets)
}

/// Bulk PATCH and DELETE: `apply` runs on every record the filter matches, in one transaction,
/// so one refused record leaves every record as it was. A call without any filter is refused.
/// `if_none` runs when the filter matches nothing, in place of `apply` (a bulk PATCH checks its
/// body against the record's rules there, as it would have for a matching record).
async fn bulk_apply<F, N>(
    call: Call,
    res: Arc<ServedResource>,
    query: Option<String>,
    (allow, what, action): (Allow, &str, Action),
    apply: F,
    if_none: N,
) -> ApiResult<Response>
where
    F: Fn(&mut dyn Tx, &Ctx, &ServedResource, &Value) -> ApiResult<()> + Send + 'static,
    N: Fn(&ServedResource) -> ApiResult<()> + Send + 'static,
{
    res.allow(allow, what)?;
    res.hooks.authorize(&call.auth, &res, action)?;
    let params = parse_list_params(&res, query.as_deref(), false, &call.state.clock.as_of())?;
    if !params.filtered {
        return Err(ApiError::violations(
            ["filter", "search"]
                .into_iter()
                .map(|field| {
                    prodops_core::Violation::field(
                        field,
                        format!(
                            "a {what} needs at least one filter (a field=value parameter, isArchived or search; an empty value is no filter); nothing was changed"
                        ),
                    )
                })
                .collect(),
        ));
    }
    call.write_reply(move |tx, ctx| {
        let ctx = &ctx.deferring();
        let targets = bulk_targets(tx, &res, ctx.org(), &params)?;
        if targets.is_empty() {
            if_none(&res)?;
        }
        // One count update for the call, not one per record (store/value_counts.rs).
        crate::store::value_counts::counting_later(tx, res.table(), |tx| {
            for (i, old) in targets.iter().enumerate() {
                apply(tx, ctx, &res, old).map_err(|e| e.with_index(i))?;
            }
            res.hooks.end_bulk(tx, ctx, &res)
        })?;
        Ok(Reply::json(
            StatusCode::OK,
            &json!({ "count": targets.len() }),
        ))
    })
    .await
}

async fn bulk_patch(
    call: Call,
    Extension(res): Extension<Arc<ServedResource>>,
    RawQuery(query): RawQuery,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    let patch = body_object(body)?;
    let op = (res.desc().ops.bulk_patch, "bulk PATCH", Action::Update);
    // The body is checked before any record is looked for (spec 4.7): what no record could
    // take is refused whether or not the filter matches anything.
    res.allow(op.0, op.1)?;
    res.hooks.authorize(&call.auth, &res, op.2)?;
    pipeline::check_patch_body(&res, &patch, false)?;
    let checked = patch.clone();
    bulk_apply(
        call,
        res,
        query,
        op,
        move |tx, ctx, res, old| update_record(tx, ctx, res, old, patch.clone()).map(|_| ()),
        move |res| pipeline::check_patch_body(res, &checked, true),
    )
    .await
}

async fn bulk_delete(
    call: Call,
    Extension(res): Extension<Arc<ServedResource>>,
    RawQuery(query): RawQuery,
) -> ApiResult<Response> {
    let op = (res.desc().ops.bulk_delete, "bulk DELETE", Action::Delete);
    bulk_apply(call, res, query, op, delete_record, |_| Ok(())).await
}

/// Bulk PUT: creates or updates each record, in order (see `bulk.rs`): with an `id` that
/// exists, a merge like PATCH; otherwise a create (keeping the given `id`).
async fn bulk_put(
    call: Call,
    Extension(res): Extension<Arc<ServedResource>>,
    body: RawJsonBody,
) -> ApiResult<Response> {
    res.allow(res.desc().ops.bulk_put, "bulk PUT")?;
    res.hooks.authorize(&call.auth, &res, Action::Create)?;
    res.hooks.authorize(&call.auth, &res, Action::Update)?;
    if body.0.trim_ascii_start().first() != Some(&b'[') {
        return Err(ApiError::validation(
            "the body of a bulk PUT is a JSON array of records",
        ));
    }
    // One context for both steps: the records are stamped with its time when prepared.
    let ctx = call.ctx();
    // Outside the write transaction, so that requests prepare while another one writes.
    let prepared = {
        let filled = call.state.store.filter_fields_written(res.table());
        let (res, ctx) = (res.clone(), ctx.clone());
        tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let prepared = bulk::Prepared::new(&res, &ctx, filled, body);
            crate::store::memory::release_after_long_job(started);
            prepared
        })
        .await
        .map_err(ApiError::internal)??
    };
    let (rows, table, org, dry_run) = (prepared.len(), res.table(), ctx.org(), ctx.dry_run);
    let reply = write_reply(&call.state, ctx, move |tx, ctx| {
        let ctx = &ctx.deferring();
        // One count update for the call, not one per updated record (store/value_counts.rs).
        let ids = crate::store::value_counts::counting_later(tx, res.table(), |tx| {
            let ids = bulk::bulk_put(tx, ctx, &res, &prepared)?;
            res.hooks.end_bulk(tx, ctx, &res)?;
            Ok::<_, ApiError>(ids)
        })?;
        Ok(Reply::json(
            StatusCode::OK,
            &json!({ "count": ids.len(), "ids": ids }),
        ))
    })
    .await?;
    // A dry run wrote nothing: the table's statistics are as they were.
    if !dry_run {
        call.state.store.after_bulk_write(table, org, rows);
    }
    Ok(reply)
}
