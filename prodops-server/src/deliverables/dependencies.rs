//! Dependencies (`/dependency`, decisions.md section 5): finish-to-start between deliverables
//! under the same root; a dependency that exists already, closes a cycle, links a node and its
//! own ancestor or descendant, or closes a chain through containers is refused
//! (docs/deliverables.md, "Schedule engine"). The rules are core's
//! ([`DependencyGraph`]); this module reads what they need.
//!
//! What a check reads: the tree rows of the two ends (their root and path), and the
//! dependencies of their one tree, never those of other trees (a cycle cannot leave its tree).
//! A bulk call (`ctx.deferred`) reads the tree rows of every end it names at once
//! ([`Hooks::read_ahead`]), each tree's dependencies once, and keeps each tree's graph up to
//! date as it writes, so a call of N dependencies costs N in-memory checks; its rows are
//! written in multi-row inserts, and the readiness of the successors is evaluated once, at its
//! end.

use prodops_core::registry::ResourceId;
use std::collections::HashMap;

use prodops_core::dependency_graph::{DependencyGraph, Refusal};
use serde_json::Value;
use uuid::Uuid;

use super::tree::{TreeRow, path_upper, tree_row, tree_rows};
use crate::engine::ServedResource;
use crate::engine::hooks::{DeleteAction, Hooks};
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
pub use crate::store::deliverables::tree_dependencies_sql;
use crate::store::sql::FieldPath;
use crate::store::{Tx, lock_scope, records};

/// The hooks of `/dependency`.
pub struct DependencyHooks;

/// What a bulk call keeps (`ctx.deferred`).
#[derive(Default)]
struct Bulk {
    /// The organization's dependency lock is held.
    locked: bool,
    /// Tree rows of the deliverables the call named (`None`: no such deliverable).
    nodes: HashMap<Uuid, Option<TreeRow>>,
    /// Each tree's dependencies as the call has left them, by root.
    graphs: HashMap<Uuid, DependencyGraph>,
    /// Successors whose readiness the call may have moved.
    successors: Vec<Uuid>,
}

fn uuid_field(v: &Value, field: &str) -> Option<Uuid> {
    v.get(field)
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}

fn path_ids(path: &str) -> Vec<Uuid> {
    path.split('/')
        .filter_map(|seg| Uuid::parse_str(seg).ok())
        .collect()
}

/// The dependencies of the tree under `root` as `(id, predecessor, successor)`, with the tree
/// paths of their ends: one range of the tree index, each node's dependencies through the
/// `(organization_id, predecessorId)` index. `CROSS JOIN` keeps that order on SQLite, which
/// runs without statistics: as a plain join it started from the organization's dependencies,
/// so a POST cost grew with every tree's dependencies (bench/README.md, "dependencies"). On
/// SQLite the node's id is compared as `+t.id` ([`Tx::plain_column`]): a column's TEXT affinity applied to the other
/// side kept the expression index out of use, and each tree node scanned every dependency of
/// the organization (`tree_dependencies_plan` in `prodops-server/tests/lookup_plans.rs`).
pub fn tree_dependencies(
    tx: &mut dyn Tx,
    org: Uuid,
    root: &TreeRow,
) -> ApiResult<Vec<TreeDependency>> {
    let table = ResourceId::Dependency.kind().desc().table;
    let pred = tx.text_expr(&FieldPath::parse("predecessorId").expect("static path"));
    let succ = tx.text_expr(&FieldPath::parse("successorId").expect("static path"));
    let rows = tx.query(
        &tree_dependencies_sql(table, &pred, &succ, &tx.plain_column("t.id")),
        &[
            org.into(),
            root.path.clone().into(),
            path_upper(&root.path).into(),
        ],
    )?;
    let id = |v: Option<&crate::store::SqlValue>| v.and_then(|v| v.as_str()?.parse::<Uuid>().ok());
    let text = |v: Option<&crate::store::SqlValue>| v.and_then(|v| v.as_str()).map(str::to_string);
    Ok(rows
        .iter()
        .filter_map(|r| {
            Some((
                id(r.first())?,
                id(r.get(1))?,
                text(r.get(2))?,
                id(r.get(3))?,
                text(r.get(4))?,
            ))
        })
        .collect())
}

/// A dependency of a tree: its id, its predecessor and that node's tree path, its successor and
/// that node's tree path.
pub type TreeDependency = (Uuid, Uuid, String, Uuid, String);

/// The graph of the tree under `root`.
fn load_graph(tx: &mut dyn Tx, org: Uuid, root: Uuid) -> ApiResult<DependencyGraph> {
    let mut graph = DependencyGraph::new();
    let Some(row) = tree_row(tx, org, root)? else {
        return Ok(graph);
    };
    for (id, pred, pred_path, succ, succ_path) in tree_dependencies(tx, org, &row)? {
        if !graph.knows(pred) {
            graph.know(pred, path_ids(&pred_path));
        }
        if !graph.knows(succ) {
            graph.know(succ, path_ids(&succ_path));
        }
        graph.insert(id, pred, succ);
    }
    Ok(graph)
}

/// The tree row of the deliverable `id`, from what the call read, else from the index.
fn node(tx: &mut dyn Tx, org: Uuid, bulk: &mut Bulk, id: Uuid) -> ApiResult<Option<TreeRow>> {
    if let Some(known) = bulk.nodes.get(&id) {
        return Ok(known.clone());
    }
    let row = tree_row(tx, org, id)?;
    bulk.nodes.insert(id, row.clone());
    Ok(row)
}

/// The checks of the dependency `id`: `pred → succ`, over `bulk`'s graphs (loading the tree's
/// when the call has not read it yet).
fn check(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    bulk: &mut Bulk,
    id: Uuid,
    pred: Uuid,
    succ: Uuid,
) -> ApiResult<()> {
    let org = ctx.org();
    // Checks read, then write: serialize them per organization.
    if !bulk.locked {
        lock_scope(tx, &format!("dependencies:{org}"))?;
        bulk.locked = true;
    }
    let mut ends = Vec::with_capacity(2);
    for (field, end) in [("predecessorId", pred), ("successorId", succ)] {
        match node(tx, org, bulk, end)? {
            Some(row) => ends.push(row),
            None => {
                return Err(ApiError::field(
                    field,
                    format!("no deliverable {end} in this organization"),
                ));
            }
        }
    }
    let root = ends[0].root_id;
    if root != ends[1].root_id {
        return Err(ApiError::field(
            "successorId",
            "a dependency links deliverables under the same root",
        ));
    }
    let graph = match bulk.graphs.entry(root) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => e.insert(load_graph(tx, org, root)?),
    };
    for row in &ends {
        if !graph.knows(row.id) {
            graph.know(row.id, path_ids(&row.path));
        }
    }
    graph
        .check(Some(id), pred, succ)
        .map_err(|r: Refusal| ApiError::field("successorId", r.message()))
}

/// Runs `f` over the call's kept state (put back whatever `f` answers), or over a state of its
/// own outside a bulk call.
fn with_bulk<R>(ctx: &Ctx, f: impl FnOnce(&mut Bulk) -> R) -> R {
    match &ctx.deferred {
        Some(deferred) => {
            let mut bulk = deferred.take::<Bulk>().unwrap_or_default();
            let out = f(&mut bulk);
            deferred.with(|kept: &mut Bulk| *kept = bulk);
            out
        }
        None => f(&mut Bulk::default()),
    }
}

impl Hooks for DependencyHooks {
    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        _old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let (Some(id), Some(pred), Some(succ)) = (
            uuid_field(new, "id"),
            uuid_field(new, "predecessorId"),
            uuid_field(new, "successorId"),
        ) else {
            return Err(ApiError::internal("a dependency without its ids"));
        };
        with_bulk(ctx, |bulk| check(tx, ctx, bulk, id, pred, succ))
    }

    /// A new or changed dependency re-evaluates the readiness of its successor (and of the
    /// successor it no longer names), in the same transaction; a bulk call does it once, at
    /// its end, and keeps its graphs up to date.
    fn after_write(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let ids: Vec<Uuid> = old
            .and_then(|o| uuid_field(o, "successorId"))
            .into_iter()
            .chain(uuid_field(new, "successorId"))
            .collect();
        let Some(deferred) = &ctx.deferred else {
            return super::readiness::dependencies_changed(tx, ctx, &ids);
        };
        deferred.with(|bulk: &mut Bulk| {
            if let Some(id) = uuid_field(new, "id") {
                // A changed dependency leaves the graph it was in; a new one is in none (a
                // walk of every tree's graph per create cost a bulk call of 10,000 in 100
                // trees a million removals).
                if old.is_some() {
                    for graph in bulk.graphs.values_mut() {
                        graph.remove(id);
                    }
                }
                let (pred, succ) = (
                    uuid_field(new, "predecessorId"),
                    uuid_field(new, "successorId"),
                );
                let root = pred
                    .and_then(|p| bulk.nodes.get(&p).cloned().flatten())
                    .map(|row| row.root_id);
                if let (Some(pred), Some(succ), Some(root)) = (pred, succ, root)
                    && let Some(graph) = bulk.graphs.get_mut(&root)
                {
                    graph.insert(id, pred, succ);
                }
            }
            bulk.successors.extend(ids);
        });
        Ok(())
    }

    /// A removed dependency re-evaluates the readiness of its successor once it is gone.
    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        let Some(id) = uuid_field(record, "id") else {
            return Ok(DeleteAction::Proceed);
        };
        if records::delete(tx, res.table(), ctx.org(), id)? {
            crate::engine::events::deleted(ctx, res, record);
        }
        let ids: Vec<Uuid> = uuid_field(record, "successorId").into_iter().collect();
        match &ctx.deferred {
            Some(deferred) => deferred.with(|bulk: &mut Bulk| {
                for graph in bulk.graphs.values_mut() {
                    graph.remove(id);
                }
                bulk.successors.extend(ids);
            }),
            None => super::readiness::dependencies_changed(tx, ctx, &ids)?,
        }
        Ok(DeleteAction::Handled)
    }

    fn end_bulk(&self, tx: &mut dyn Tx, ctx: &Ctx, _res: &ServedResource) -> ApiResult<()> {
        let Some(bulk) = ctx.deferred.as_ref().and_then(|d| d.take::<Bulk>()) else {
            return Ok(());
        };
        super::readiness::dependencies_changed(tx, ctx, &bulk.successors)
    }

    /// No hook writes a dependency other than the one being written.
    fn batch_creates(&self) -> bool {
        true
    }

    /// Within a bulk call, the checks read dependencies only through the graphs the call keeps
    /// (a tree's graph is read before any create of the call into that tree), and
    /// `after_write` only updates them.
    fn hold_hooked_creates(&self) -> bool {
        true
    }

    /// The tree rows of every end the call's creates name, in one read per chunk.
    fn read_ahead(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        _stored: &[&str],
        created: &[&str],
    ) -> ApiResult<()> {
        let mut ids = Vec::with_capacity(created.len() * 2);
        for text in created {
            let Ok(v) = serde_json::from_str::<Value>(text) else {
                continue;
            };
            ids.extend(uuid_field(&v, "predecessorId"));
            ids.extend(uuid_field(&v, "successorId"));
        }
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(());
        }
        let found = tree_rows(tx, ctx.org(), &ids)?;
        with_bulk(ctx, |bulk| {
            for id in ids {
                bulk.nodes.insert(id, found.get(&id).cloned());
            }
        });
        Ok(())
    }
}
