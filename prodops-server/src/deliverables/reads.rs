//! Reads of the work tree: hierarchy, groups, crew time.

use prodops_core::registry::ResourceId;
use std::collections::BTreeMap;
use std::sync::Arc;

use axum::response::Response;

use prodops_core::tree::hierarchy_order_of_paths;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::buffers;
use super::tree::{IndexNode, TreeRow, path_upper, records_of, subtree_index, tree_row};
use crate::engine::rawjson::{Projection, Selected};
use crate::engine::{Resources, ServedResource, filter_conds, flattened_name, parse_list_params};
use crate::http::call::Call;
use crate::http::error::{ApiError, ApiResult};
use crate::http::parts::{self, PART_BYTES, Part, PartSender};
use crate::http::typed::{Answered, ServedQuery, Shaped, Streamed};
use crate::store::SqlValue;
use crate::store::Tx;
use crate::store::sql::FieldPath;
use prodops_core::alerts::{AsOf, Window};
use prodops_core::api::{
    self,
    deliverable::{CrewTimeQuery, GroupsRequest},
};

/// Nodes whose records one query of a hierarchy read fetches.
const FETCH_NODES: usize = 512;

/// The query string of a hierarchy read, read by the handler ([`hierarchy_select`]), which
/// checks the selected fields against the deliverable resource of its table.
impl ServedQuery for api::deliverable::HierarchyQuery {
    type Value = Option<String>;
    fn from_query(query: Option<&str>) -> ApiResult<Option<String>> {
        Ok(query.map(str::to_string))
    }
}

/// The `select` of a hierarchy read: `?select=a,b.c` (repeatable), fields as `POST /r/query`
/// selects them. `None` without one.
fn hierarchy_select(res: &ServedResource, query: Option<&str>) -> ApiResult<Option<Projection>> {
    let mut fields: Option<Vec<Selected>> = None;
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match k.as_ref() {
            "select" => {
                let list = fields.get_or_insert_with(Vec::new);
                for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    res.field_path(part)?;
                    list.push(Selected::new(flattened_name(part), part));
                }
            }
            other => {
                return Err(ApiError::field(other, "unknown parameter; use select"));
            }
        }
    }
    match fields {
        Some(f) if f.is_empty() => Err(ApiError::field(
            "select",
            "select names no field; give field names separated by commas",
        )),
        f => Ok(f.map(Projection::new)),
    }
}

/// `GET /deliverable/{id}/hierarchy[?select=...]`: the node and its whole subtree (archived
/// nodes included), parents before children, siblings in their order; with `select`, each
/// record as `id` and the selected fields. The order comes from the tree index alone; the
/// records are then read in that order a few hundred at a time and the body is sent in parts
/// as they are read (a large subtree is never held whole; the socket is written while the
/// database is read). The stored records are sent as they are, or projected without parsing.
/// All of it is one snapshot, whose feed cursor the answer names.
pub async fn hierarchy(
    call: Call,
    id: Uuid,
    query: Option<String>,
    (): (),
) -> ApiResult<Answered<api::deliverable::Hierarchy>> {
    let deliverables = Resources::of(&call.state.resources).get(ResourceId::Deliverable);
    let projection = hierarchy_select(deliverables, query.as_deref())?;
    let response = stream_trees(&call, "hierarchy", move |tx, org, out| {
        let row = tree_row(tx, org, id)?.ok_or_else(ApiError::not_found)?;
        out.subtree(tx, org, &row, projection.as_ref())
    })
    .await?;
    Ok(Answered::new(Streamed(response)))
}

/// `GET /deliverable/trees?<roots' filters>&sort=&select=`: every tree whose root the roots
/// list would answer (its filters and search, roots not archived unless `isArchived` is
/// given), in the roots' order, each root followed by its subtree as [`hierarchy`] writes it;
/// one snapshot for all of it, whose feed cursor the answer names. What
/// `prodops deliverable export --cursor-file` reads: the export and the events after its
/// cursor are then exactly the trees' state, also while others write.
pub async fn trees(
    call: Call,
    (): (),
    ListQuery(query): ListQuery,
    (): (),
) -> ApiResult<Answered<api::deliverable::Trees>> {
    let res = Resources::of(&call.state.resources)
        .get(ResourceId::Deliverable)
        .clone();
    let (select, rest) = split_trees_query(query.as_deref())?;
    let projection = hierarchy_select(&res, (!select.is_empty()).then_some(select.as_str()))?;
    let now = call.state.clock.as_of();
    let params = parse_list_params(&res, Some(rest.as_str()), true, &now)?;
    let response = stream_trees(&call, "trees", move |tx, org, out| {
        let roots = crate::store::deliverables::root_ids(tx, org, &params.conds, &params.sort)?;
        for chunk in roots.chunks(FETCH_NODES) {
            let rows = crate::store::deliverables::tree_rows(tx, org, chunk)?;
            for id in chunk {
                // Every root read is in the snapshot's tree index.
                let Some(row) = rows.get(id) else { continue };
                out.subtree(tx, org, row, projection.as_ref())?;
                if out.closed {
                    return Ok(());
                }
            }
        }
        Ok(())
    })
    .await?;
    Ok(Answered::new(Streamed(response)))
}

/// A trees query as its two readers take it: the `select` pairs (the hierarchy's) and the
/// rest (the roots list's, whose paging a read of whole trees refuses).
fn split_trees_query(query: Option<&str>) -> ApiResult<(String, String)> {
    let mut select = form_urlencoded::Serializer::new(String::new());
    let mut rest = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match k.as_ref() {
            "select" => {
                select.append_pair("select", &v);
            }
            "page" | "pageSize" | "cursor" => {
                return Err(ApiError::field(
                    k.as_ref(),
                    "whole trees are not paged: the answer holds every node of the matching trees",
                ));
            }
            _ => {
                rest.append_pair(&k, &v);
            }
        }
    }
    Ok((select.finish(), rest.finish()))
}

/// Runs `write` in one read snapshot on a blocking thread and answers what it writes into its
/// [`Parts`] as a `{"values": [...], "totalCount": N}` page sent in parts as it is written,
/// with the snapshot's feed cursor (read by the first statement) in `Prodops-Feed-Cursor`.
/// `what` names the read in its errors.
async fn stream_trees<F>(call: &Call, what: &'static str, mut write: F) -> ApiResult<Response>
where
    F: FnMut(&mut dyn Tx, Uuid, &mut Parts<'_>) -> ApiResult<()> + Send + 'static,
{
    let now = call.state.clock.as_of();
    let org = call.auth.org;
    let (sender, receiver) = parts::channel();
    // Set by every attempt of the transaction (a retried one reads a new snapshot): the
    // attempt that sends parts is the last one, so the value is that snapshot's cursor.
    let cursor = Arc::new(std::sync::atomic::AtomicI64::new(parts::NO_CURSOR));
    let store = call.state.store.clone();
    let feed = cursor.clone();
    tokio::spawn(async move {
        let parts = sender.clone();
        let read = store
            .read_snapshot(move |tx| {
                // The first statement takes the snapshot; the cursor is read in it.
                let at = crate::store::events::feed_cursor(tx, org)?;
                feed.store(at, std::sync::atomic::Ordering::Release);
                let mut out = Parts::new(&parts, &now);
                out.body.extend_from_slice(b"{\"values\":[");
                match write(tx, org, &mut out) {
                    // Part of the answer is out: the read cannot be run again.
                    Err(e) if out.sent => Err(ApiError::internal(format!(
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
    parts::answer_at_cursor(receiver, &cursor, what).await
}

/// The body of a read of trees as it is written, sent in parts of [`PART_BYTES`].
struct Parts<'a> {
    body: Vec<u8>,
    count: usize,
    parts: &'a PartSender,
    /// The time the alerts are given as of.
    now: &'a AsOf,
    /// Whether a part went out.
    sent: bool,
    /// Whether the client left (the channel is closed): the read stops.
    closed: bool,
}

impl<'a> Parts<'a> {
    fn new(parts: &'a PartSender, now: &'a AsOf) -> Self {
        Parts {
            body: buffers::take(PART_BYTES + (64 << 10)),
            count: 0,
            parts,
            now,
            sent: false,
            closed: false,
        }
    }

    /// Before a record: the comma after the previous one.
    fn comma(&mut self) {
        if self.count > 0 {
            self.body.push(b',');
        }
    }

    /// After a record: counted, and the body sent as a part once it is large enough.
    fn done(&mut self) {
        self.count += 1;
        if self.body.len() >= PART_BYTES && !self.closed {
            let full = std::mem::replace(&mut self.body, buffers::take(PART_BYTES + (64 << 10)));
            if self
                .parts
                .blocking_send(Ok(Part::More(buffers::bytes(full))))
                .is_err()
            {
                self.closed = true;
            } else {
                self.sent = true;
            }
        }
    }

    /// The end of the page: `totalCount` (the records written), sent as the last part.
    fn finish(self) {
        let Parts {
            mut body,
            count,
            parts,
            closed,
            ..
        } = self;
        if closed {
            return;
        }
        body.extend_from_slice(b"],\"totalCount\":");
        body.extend_from_slice(count.to_string().as_bytes());
        body.push(b'}');
        let _ = parts.blocking_send(Ok(Part::Last(buffers::bytes(body))));
    }

    /// Writes the subtree of `top` (itself first), parents before children, siblings in their
    /// order. A closed channel (the client left) stops it early, with `closed` set.
    fn subtree(
        &mut self,
        tx: &mut dyn Tx,
        org: Uuid,
        top: &TreeRow,
        projection: Option<&Projection>,
    ) -> ApiResult<()> {
        let nodes = subtree_index(tx, org, top)?;
        let entries: Vec<(usize, i64)> = nodes.iter().map(|n| (n.depth, n.sort_key)).collect();
        let order = hierarchy_order_of_paths(&entries);
        let now = self.now;
        // One batch of nodes in hierarchy order. Records arrive in rowid order: each one that
        // is the next in hierarchy order goes straight into the body (with any kept ones it
        // frees); others are kept, with where their text is, until their turn.
        let mut batch: Vec<IndexNode> = Vec::with_capacity(FETCH_NODES.min(order.len()));
        let mut kept: Vec<u8> = Vec::new();
        let mut spans: Vec<Option<std::ops::Range<usize>>> = Vec::new();
        let write = |data: &[u8], window: Option<Window>, into: &mut Vec<u8>| {
            // The alerts as of the read: a record whose stored ones are still right (nearly
            // all: the read is inside the window the row keeps) is copied as it is without a
            // look at its text; another is patched.
            let patched = match window {
                Some(w) if w.contains(now) => None,
                _ => prodops_core::alerts::patch_deliverable_bytes(data, now),
            };
            let data = patched.as_deref().unwrap_or(data);
            match projection {
                // What a projection reads must be text; the stored records always are.
                Some(p) => p.write(std::str::from_utf8(data).unwrap_or("{}"), into),
                None => into.extend_from_slice(data),
            }
        };
        for group in order.chunks(FETCH_NODES) {
            batch.clear();
            batch.extend(group.iter().map(|&i| nodes[i]));
            kept.clear();
            spans.clear();
            spans.resize(batch.len(), None);
            let mut next = 0usize;
            records_of(tx, org, &batch, &mut |slot, data, window| {
                if self.closed {
                    return;
                }
                if slot != next {
                    let start = kept.len();
                    write(data, window, &mut kept);
                    spans[slot] = Some(start..kept.len());
                    return;
                }
                self.comma();
                write(data, window, &mut self.body);
                self.done();
                next += 1;
                while let Some(Some(span)) = spans.get(next) {
                    self.comma();
                    self.body.extend_from_slice(&kept[span.clone()]);
                    self.done();
                    next += 1;
                }
            })?;
            // Records that never came (missing) leave the rest kept: in order, without them.
            for span in spans[next.min(spans.len())..].iter().flatten() {
                self.comma();
                self.body.extend_from_slice(&kept[span.clone()]);
                self.done();
            }
            if self.closed {
                return Ok(());
            }
        }
        Ok(())
    }
}

/// `GET /deliverable/roots?<list parameters>`: the deliverables without a parent (the tops of
/// the trees), with the standard list's filters, `search`, `sort`, `page` and `pageSize`, as
/// `{values, totalCount}`. The roots come from the tree index, so the read costs the number of
/// trees, not of nodes (a `parentId=null` filter on the list reads every deliverable).
pub async fn roots(
    call: Call,
    (): (),
    ListQuery(query): ListQuery,
    (): (),
) -> ApiResult<Answered<api::deliverable::Roots>> {
    let state = call.state;
    let auth = call.auth;
    let res = Resources::of(&state.resources)
        .get(ResourceId::Deliverable)
        .clone();
    let now = state.clock.as_of();
    let params = parse_list_params(&res, query.as_deref(), true, &now)?;
    if params.cursor.is_some() {
        return Err(ApiError::field(
            "cursor",
            "the roots are paged with page and pageSize",
        ));
    }
    let org = auth.org;
    let body = state
        .store
        .read(move |tx| {
            let select = params.select();
            let (mut values, total) = crate::store::deliverables::roots_page(tx, org, &select)?;
            crate::engine::hooks::as_of_now(&res, &now, &mut values);
            let mut body =
                String::with_capacity(values.iter().map(String::len).sum::<usize>() + 64);
            body.push_str("{\"values\":[");
            body.push_str(&values.join(","));
            body.push_str("],\"totalCount\":");
            body.push_str(&total.to_string());
            body.push('}');
            Ok::<_, ApiError>(body)
        })
        .await?;
    Ok(Answered::new(Shaped::text(body)))
}

/// The query string of a read the standard list's reading takes (`parse_list_params`, which
/// needs the state's clock): handed over as it is.
pub struct ListQuery(Option<String>);

impl ServedQuery for api::deliverable::TreesQuery {
    type Value = ListQuery;
    fn from_query(query: Option<&str>) -> ApiResult<ListQuery> {
        Ok(ListQuery(query.map(str::to_string)))
    }
}

impl ServedQuery for api::deliverable::RootsQuery {
    type Value = ListQuery;
    fn from_query(query: Option<&str>) -> ApiResult<ListQuery> {
        Ok(ListQuery(query.map(str::to_string)))
    }
}

/// The field each grouping reads (arrays put a record in every group they list).
fn group_field(group_by: &str) -> Option<&'static str> {
    match group_by {
        "project" => Some("computed.projectId"),
        "stage" => Some("computed.currentStageIds"),
        "people" => Some("computed.workerIds"),
        "root" => Some("rootParentId"),
        "tags" => Some("computed.tags"),
        _ => None,
    }
}

/// `POST /deliverable/groups` `{groupBy, filter?}`: `{"groupBy", "values": [{"groupId",
/// "count", "deliverableIds"}]}`, largest group first; records with nothing to group by fall in
/// the `null` group. For `root`, a root is in its own group.
pub async fn groups(
    call: Call,
    (): (),
    (): (),
    req: GroupsRequest,
) -> ApiResult<Answered<api::deliverable::Groups>> {
    let state = call.state;
    let auth = call.auth;
    let Some(field) = group_field(&req.group_by) else {
        return Err(ApiError::field(
            "groupBy",
            "must be one of project, stage, people, root, tags",
        ));
    };
    let res = Resources::of(&state.resources).get(ResourceId::Deliverable);
    let conds = filter_conds(res, req.filter.as_ref(), true, &state.clock.as_of())?;
    let org = auth.org;
    let group_by = req.group_by.clone();
    let values = state
        .store
        .read(move |tx| {
            let path = FieldPath::parse(field).expect("static path");
            let rows = crate::store::deliverables::field_values(tx, org, &conds, &path)?;
            let mut groups: BTreeMap<String, (Value, Vec<String>)> = BTreeMap::new();
            for (id, text) in rows {
                let value: Value = text
                    .and_then(|t| serde_json::from_str(&t).ok())
                    .unwrap_or(Value::Null);
                let keys: Vec<Value> = match value {
                    Value::Array(a) if !a.is_empty() => a,
                    Value::Array(_) | Value::Null if field == "rootParentId" => vec![json!(id)],
                    Value::Array(_) => vec![Value::Null],
                    v => vec![v],
                };
                for k in keys {
                    groups
                        .entry(k.to_string())
                        .or_insert_with(|| (k.clone(), Vec::new()))
                        .1
                        .push(id.clone());
                }
            }
            let mut values: Vec<(Value, Vec<String>)> = groups.into_values().collect();
            values.sort_by_key(|v| std::cmp::Reverse(v.1.len()));
            Ok::<_, ApiError>(
                values
                    .into_iter()
                    .map(
                        |(g, ids)| json!({"groupId": g, "count": ids.len(), "deliverableIds": ids}),
                    )
                    .collect::<Vec<_>>(),
            )
        })
        .await?;
    Ok(Answered::new(
        json!({"groupBy": group_by, "values": values}),
    ))
}

impl ServedQuery for CrewTimeQuery {
    type Value = CrewTimeQuery;
    fn from_query(query: Option<&str>) -> ApiResult<CrewTimeQuery> {
        let mut ids = Vec::new();
        for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
            match k.as_ref() {
                "deliverableId" => {
                    for part in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                        ids.push(Uuid::parse_str(part).map_err(|_| {
                            ApiError::field("deliverableId", format!("'{part}' is not a UUID"))
                        })?);
                    }
                }
                other => {
                    return Err(ApiError::field(
                        other,
                        "unknown parameter; use deliverableId",
                    ));
                }
            }
        }
        if ids.is_empty() {
            return Err(ApiError::field(
                "deliverableId",
                "deliverableId is required",
            ));
        }
        Ok(CrewTimeQuery {
            deliverable_id: ids,
        })
    }
}

/// `GET /deliverable/crew-time?deliverableId=<uuid>` (repeatable): for each deliverable, the
/// work-session time on it and its subtree: `{"<id>": {"totalSeconds", "openSessions",
/// "workers": [{"workerId", "seconds", "sessions", "open"}]}}`. Open sessions count up to now;
/// plans are not time worked and are left out.
pub async fn crew_time(
    call: Call,
    (): (),
    query: CrewTimeQuery,
    (): (),
) -> ApiResult<Answered<api::deliverable::CrewTime>> {
    let (state, auth) = (call.state, call.auth);
    let ids = query.deliverable_id;
    let org = auth.org;
    let now = chrono::Utc::now();
    let out = state
        .store
        .read(move |tx| {
            let sessions_table = ResourceId::WorkSession.kind().desc().table;
            let expr = tx.text_expr(&FieldPath::parse("deliverableId").expect("static path"));
            let mut out = Map::new();
            for id in &ids {
                let row = tree_row(tx, org, *id)?.ok_or_else(ApiError::not_found)?;
                // The sessions of the whole subtree in one query: the subtree's index range,
                // each node's sessions through the `(organization_id, deliverableId)` index
                // (`tree::subtree_records_sql`).
                let rows = tx.query(
                    &super::tree::subtree_records_sql(
                        sessions_table,
                        &expr,
                        &tx.plain_column("t.id"),
                    ),
                    &[
                        org.into(),
                        row.path.clone().into(),
                        path_upper(&row.path).into(),
                    ],
                )?;
                let mut per_worker: BTreeMap<Uuid, (i64, u64, bool)> = BTreeMap::new();
                let mut total = 0i64;
                let mut open = 0u64;
                for mut r in rows {
                    let Some(text) = r.pop().and_then(SqlValue::into_string) else {
                        continue;
                    };
                    let s: prodops_core::work_session::WorkSession =
                        serde_json::from_str(&text).map_err(ApiError::internal)?;
                    if s.kind != prodops_core::work_session::WorkSessionKind::Session {
                        continue;
                    }
                    let end = s.end_date.unwrap_or(now);
                    let secs = (end - s.start_date).num_seconds().max(0);
                    let e = per_worker.entry(s.worker_id).or_insert((0, 0, false));
                    e.0 += secs;
                    e.1 += 1;
                    e.2 |= s.is_open();
                    total += secs;
                    open += u64::from(s.is_open());
                }
                let workers: Vec<Value> = per_worker
                    .into_iter()
                    .map(|(w, (secs, n, o))| {
                        json!({"workerId": w, "seconds": secs, "sessions": n, "open": o})
                    })
                    .collect();
                out.insert(
                    id.to_string(),
                    json!({"totalSeconds": total, "openSessions": open, "workers": workers}),
                );
            }
            Ok::<_, ApiError>(Value::Object(out))
        })
        .await?;
    Ok(Answered::new(out))
}
