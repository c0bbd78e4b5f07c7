//! Progress and schedule actions and reorder (spec 4.2).

use prodops_core::registry::ResourceId;
use std::collections::{BTreeSet, HashMap, HashSet};

use prodops_core::deliverable::{Deliverable, DeliverableType, ProgressStatus};
use prodops_core::progress::{self, ProgressAction, ProgressResult};
use prodops_core::schedule::{self, Plan, ScheduleAction, ScheduleBatchItem, Span};
use prodops_core::tree::{self, Change, TreeStore};
use serde_json::Value;
use uuid::Uuid;

use super::readiness::Progressor;
use super::sessions;
use super::tree::{TxTree, parse_deliverable, tree_row};
use crate::engine::load;
use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::http::typed::Answered;
use crate::store::Tx;
use prodops_core::api::{self, deliverable::ReorderRequest};

/// Loads the order `root_id` and the node `id` under it (or the order itself).
fn order_and_node(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    root_id: Uuid,
    id: Uuid,
) -> ApiResult<(Deliverable, Value)> {
    let res = ctx.resource(ResourceId::Deliverable);
    let root = parse_deliverable(&load(tx, res, ctx.org(), root_id)?)?;
    if root.kind != DeliverableType::Order || root.parent_id.is_some() {
        return Err(ApiError::field(
            "rootId",
            "progress and schedule belong to orders: the root must be an order",
        ));
    }
    let node = load(tx, res, ctx.org(), id)?;
    let d = parse_deliverable(&node)?;
    if d.id != root.id && d.root_parent_id != Some(root.id) {
        return Err(ApiError::not_found());
    }
    Ok((root, node))
}

/// Applies a progress action to `node` and its effects, in one pass over one cached view of
/// the tree: a qcstep becoming done passes its QC gate first, a complete also completes the
/// node's subtree, progress rolls up to the ancestors
/// (stopping at the first one it leaves unchanged), the successors of every node whose
/// holding back changed are re-evaluated (`readiness`), every changed record is checked and written
/// once, the computed fields are refreshed once for all of them, and the open sessions and plans
/// on every node that became done end. Returns the kicked workers.
///
/// `progress` is a server-managed effect here, so the records are written through
/// [`TxTree::write`] (the resource's rules, no client-data hooks) rather than the PATCH pipeline:
/// the pipeline would recompute the same ancestors once per written record.
pub fn apply_progress(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    node_value: &Value,
    action: &ProgressAction,
) -> ApiResult<Vec<Uuid>> {
    let node = parse_deliverable(node_value)?;
    let by = ctx.auth.key_id;
    let mut w = Progressor::new(tx, ctx);
    let next = progress::apply(
        node.progress.as_ref(),
        node.kind,
        node.quantity,
        action,
        by,
        ctx.now,
    )
    .map_err(|v| ApiError::violations(vec![v]))?;
    if matches!(action, ProgressAction::Complete {}) {
        // Children before parents, so that each write sees its subtree done.
        let descendants = w.store.descendants(node.id)?;
        for d in descendants.iter().rev() {
            if tree::status(d) == ProgressStatus::Done || d.is_archived {
                continue;
            }
            let p = progress::apply(d.progress.as_ref(), d.kind, d.quantity, action, by, ctx.now)
                .map_err(|v| ApiError::violations(vec![v]))?;
            w.set(d, p)?;
        }
    }
    let current = w.store.node(node.id)?;
    // An action that leaves the node unstarted leaves it as ready as its predecessors say.
    let next = w.ready(&current, next)?;
    w.set(&current, next)?;
    w.roll_up_from(node.parent_id)?;
    let done = w.finish()?;
    sessions::end_open_on(tx, ctx, &done)
}

/// `POST /deliverable/root/{rootId}/progress/{id}`.
pub async fn progress(
    call: Call,
    (root_id, id): (Uuid, Uuid),
    (): (),
    action: ProgressAction,
) -> ApiResult<Answered<api::deliverable::Progress>> {
    call.write(move |tx, ctx| {
        let (_, node) = order_and_node(tx, ctx, root_id, id)?;
        let kicked_workers = apply_progress(tx, ctx, &node, &action)?;
        Ok(ProgressResult { kicked_workers }.into())
    })
    .await
}

/// The schedules, durations and dependencies of one order's tree.
struct Loaded {
    plan: Plan,
    records: HashMap<Uuid, Value>,
}

fn load_plan(tx: &mut dyn Tx, ctx: &Ctx, root: &Deliverable) -> ApiResult<Loaded> {
    let org = ctx.org();
    let row = tree_row(tx, org, root.id)?.ok_or_else(ApiError::not_found)?;
    let mut plan = Plan::default();
    let mut records = HashMap::new();
    for (id, parent, _, _, text) in super::tree::raw_records(tx, org, &row)? {
        let v: Value = serde_json::from_str(&text).map_err(ApiError::internal)?;
        let d = parse_deliverable(&v)?;
        if d.is_archived {
            continue;
        }
        plan.parent
            .insert(id, if id == root.id { None } else { parent });
        plan.durations.insert(id, d.duration_sec);
        if let Some(s) = &d.schedule {
            plan.spans.insert(id, Span::of(s));
        }
        records.insert(id, v);
    }
    // Archived nodes drop out; their children hang on the nearest live ancestor.
    let ids: HashSet<Uuid> = plan.parent.keys().copied().collect();
    for p in plan.parent.values_mut() {
        if p.is_some_and(|x| !ids.contains(&x)) {
            *p = Some(root.id);
        }
    }
    plan.deps = order_edges(tx, org, &row)?
        .into_iter()
        .filter(|(a, b)| ids.contains(a) && ids.contains(b))
        .collect();
    Ok(Loaded { plan, records })
}

/// The dependencies whose predecessor is in the tree of `root` (both ends of a dependency are
/// under one root), as `(predecessor, successor)`: the tree's index range, each node's
/// dependencies through the `(organization_id, predecessorId)` index, not the organization's.
fn order_edges(
    tx: &mut dyn Tx,
    org: Uuid,
    root: &super::tree::TreeRow,
) -> ApiResult<Vec<(Uuid, Uuid)>> {
    let table = ResourceId::Dependency.kind().desc().table;
    let expr =
        tx.text_expr(&crate::store::sql::FieldPath::parse("predecessorId").expect("static path"));
    let rows = tx.query(
        &super::tree::subtree_records_sql(table, &expr, &tx.plain_column("t.id")),
        &[
            org.into(),
            root.path.clone().into(),
            super::tree::path_upper(&root.path).into(),
        ],
    )?;
    let mut edges = Vec::with_capacity(rows.len());
    for mut r in rows {
        let Some(text) = r.pop().and_then(crate::store::SqlValue::into_string) else {
            continue;
        };
        if let Ok(d) = serde_json::from_str::<prodops_core::minimal::Dependency>(&text) {
            edges.push((d.predecessor_id, d.successor_id));
        }
    }
    Ok(edges)
}

/// Writes the schedules (and durations) an action changed, checked against the resource's
/// rules, with the computed fields they move (`date`, alerts) refreshed; each record once.
fn write_schedules(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    loaded: &mut Loaded,
    changed: &BTreeSet<Uuid>,
    new_duration: Option<(Uuid, i64)>,
) -> ApiResult<()> {
    let mut touched: BTreeSet<Uuid> = changed.clone();
    touched.extend(new_duration.map(|(id, _)| id));
    let mut store = TxTree::deferred(tx, ctx);
    let mut changes = Vec::new();
    for id in touched {
        let old = parse_deliverable(loaded.records.get(&id).ok_or_else(ApiError::not_found)?)?;
        let mut new = old.clone();
        if let Some(span) = loaded.plan.spans.get(&id) {
            new.schedule = Some(span.to_schedule().ok_or_else(|| {
                ApiError::field(
                    "type",
                    "the resulting schedule leaves the representable range",
                )
            })?);
        }
        if let Some((nid, d)) = new_duration
            && nid == id
        {
            new.duration_sec = d;
        }
        if new == old {
            continue;
        }
        store.write(&old, &new)?;
        changes.push(Change { id, old: Some(old) });
    }
    let now = store.now();
    tree::refresh(&mut store, &changes, now)?;
    store.flush()?;
    // Later actions of a batch start from what is stored now.
    let ids: Vec<Uuid> = loaded.records.keys().copied().collect();
    for id in ids {
        if let Some(n) = store.cached(id) {
            loaded
                .records
                .insert(id, serde_json::to_value(n).map_err(ApiError::internal)?);
        }
    }
    Ok(())
}

fn run_schedule(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    cache: &mut HashMap<Uuid, Loaded>,
    root_id: Uuid,
    id: Uuid,
    action: &ScheduleAction,
) -> ApiResult<()> {
    let (root, _) = order_and_node(tx, ctx, root_id, id)?;
    let loaded = match cache.entry(root_id) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => e.insert(load_plan(tx, ctx, &root)?),
    };
    let outcome =
        schedule::apply(&mut loaded.plan, id, action).map_err(|v| ApiError::violations(vec![v]))?;
    write_schedules(tx, ctx, loaded, &outcome.changed, outcome.new_duration)
}

/// `POST /deliverable/root/{rootId}/schedule/{id}`.
pub async fn schedule(
    call: Call,
    (root_id, id): (Uuid, Uuid),
    (): (),
    action: ScheduleAction,
) -> ApiResult<Answered<api::deliverable::Schedule>> {
    call.write(move |tx, ctx| {
        let mut cache = HashMap::new();
        run_schedule(tx, ctx, &mut cache, root_id, id, &action)
    })
    .await
}

/// `POST /deliverable/schedule/batch`: every action in order, all or nothing.
pub async fn schedule_batch(
    call: Call,
    (): (),
    (): (),
    items: Vec<ScheduleBatchItem>,
) -> ApiResult<Answered<api::deliverable::ScheduleBatch>> {
    call.write(move |tx, ctx| {
        let mut cache = HashMap::new();
        for (i, item) in items.iter().enumerate() {
            run_schedule(
                tx,
                ctx,
                &mut cache,
                item.root_parent_id,
                item.target_id,
                &item.action,
            )
            .map_err(|e| e.with_index(i))?;
        }
        Ok(())
    })
    .await
}

/// `POST /deliverable/reorder`: the listed nodes take the listed order among their siblings
/// (nodes of several parents may be listed); siblings not listed follow them in their old order.
pub async fn reorder(
    call: Call,
    (): (),
    (): (),
    req: ReorderRequest,
) -> ApiResult<Answered<api::deliverable::Reorder>> {
    call.write(move |tx, ctx| {
        let org = ctx.org();
        load(
            tx,
            ctx.resource(ResourceId::Deliverable),
            org,
            req.root_parent_id,
        )?;
        let mut seen = HashSet::new();
        let mut by_parent: Vec<(Uuid, Vec<Uuid>)> = Vec::new();
        for (i, id) in req.ordered_deliverable_ids.iter().enumerate() {
            let field = format!("orderedDeliverableIds[{i}]");
            if !seen.insert(*id) {
                return Err(ApiError::field(&field, format!("{id} is listed twice")));
            }
            let row = tree_row(tx, org, *id)?;
            let Some(row) = row.filter(|r| r.root_id == req.root_parent_id && r.id != r.root_id)
            else {
                return Err(ApiError::field(
                    &field,
                    format!(
                        "{id} is not a deliverable under the root {}",
                        req.root_parent_id
                    ),
                ));
            };
            let parent = row.parent_id.expect("a non-root node has a parent");
            match by_parent.iter_mut().find(|(p, _)| *p == parent) {
                Some((_, list)) => list.push(*id),
                None => by_parent.push((parent, vec![*id])),
            }
        }
        let mut changes = Vec::new();
        for (parent, listed) in &by_parent {
            let siblings = super::tree::child_rows(tx, org, *parent)?;
            let rest = siblings
                .iter()
                .map(|r| r.id)
                .filter(|id| !listed.contains(id));
            for (k, id) in listed.iter().copied().chain(rest).enumerate() {
                super::tree::set_sort_key(tx, org, id, k as i64)?;
            }
            let old = parse_deliverable(&load(
                tx,
                ctx.resource(ResourceId::Deliverable),
                org,
                *parent,
            )?)?;
            changes.push(Change {
                id: *parent,
                old: Some(old),
            });
        }
        let mut store = TxTree::new(tx, ctx);
        let now = store.now();
        tree::refresh(&mut store, &changes, now)?;
        Ok(())
    })
    .await
}
