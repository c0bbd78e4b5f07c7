//! Progress writes with their effects on the rest of the tree: the roll-up to the ancestors and
//! readiness (docs/deliverables.md, "Readiness"): a node a finish-to-start predecessor still
//! holds back (core's `progress::holds_back`) is `waiting`, else `todo`, while its work has not
//! started. After the writes of a request, the successors of every node whose holding back
//! changed are re-evaluated (each through the `(organization_id, predecessorId)` and
//! `(organization_id, successorId)` indexes of dependencies), in the same transaction, and only
//! those: the cost follows the dependencies touched, not the size of the tree.

use prodops_core::registry::ResourceId;
use std::collections::{HashMap, HashSet};

use prodops_core::deliverable::{Deliverable, Progress, ProgressStatus};
use prodops_core::minimal::Dependency;
use prodops_core::progress;
use prodops_core::tree::{self, Change, TreeStore};
use uuid::Uuid;

use super::tree::PREFETCH_CHUNK;
use super::tree::TxTree;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::sql::FieldPath;
use crate::store::{SqlValue, Tx};

/// The dependencies whose `field` (`predecessorId` or `successorId`) is one of `ids`, through
/// its index, [`PREFETCH_CHUNK`] ids per query (a bulk call's thousands of nodes cost a few
/// round trips, not one each).
pub(crate) fn dependencies_by(
    tx: &mut dyn Tx,
    org: Uuid,
    field: &str,
    ids: &[Uuid],
) -> ApiResult<Vec<Dependency>> {
    let table = ResourceId::Dependency.kind().desc().table;
    let path = FieldPath::parse(field).expect("static path");
    let mut out = Vec::new();
    for chunk in ids.chunks(PREFETCH_CHUNK) {
        let values: Vec<SqlValue> = chunk
            .iter()
            .map(|id| SqlValue::from(id.to_string()))
            .collect();
        for text in crate::store::records::texts_where_in(tx, table, org, &path, &values)? {
            out.push(serde_json::from_str::<Dependency>(&text).map_err(ApiError::internal)?);
        }
    }
    Ok(out)
}

/// Writes progress changes of one request over a deferred [`TxTree`], each record once, with
/// the roll-up and readiness they cause; [`Progressor::finish`] refreshes the computed fields.
pub struct Progressor<'a> {
    pub store: TxTree<'a>,
    changes: Vec<Change>,
    /// Each written node's progress before the request, in the order first written.
    first: Vec<(Uuid, Option<Progress>)>,
    seen: HashSet<Uuid>,
    /// Nodes that became done.
    pub done: Vec<Uuid>,
    by: Uuid,
    /// The predecessors of nodes whose dependencies were read in a batch
    /// ([`Progressor::evaluate_many`]); dependencies do not change while a progressor lives.
    predecessors: HashMap<Uuid, Vec<Uuid>>,
}

impl<'a> Progressor<'a> {
    pub fn new(tx: &'a mut dyn Tx, ctx: &'a Ctx) -> Self {
        Progressor {
            store: TxTree::deferred(tx, ctx),
            changes: Vec::new(),
            first: Vec::new(),
            seen: HashSet::new(),
            done: Vec::new(),
            by: ctx.auth.key_id,
            predecessors: HashMap::new(),
        }
    }

    fn ctx(&self) -> &'a Ctx {
        self.store.ctx
    }

    /// Sets the progress of `old` (as currently stored) to `p`.
    pub fn set(&mut self, old: &Deliverable, p: Progress) -> ApiResult<()> {
        if old.progress.as_ref() == Some(&p) {
            return Ok(());
        }
        if p.status == ProgressStatus::Done && tree::status(old) != ProgressStatus::Done {
            // A qcstep's QC gate (docs/documents.md, "QC gates"): also when a complete of an
            // ancestor cascades to it.
            let ctx = self.ctx();
            super::qc_gate::check_gate(&mut *self.store.tx, ctx, old)?;
            self.done.push(old.id);
        }
        if self.seen.insert(old.id) {
            self.first.push((old.id, old.progress.clone()));
        }
        let mut new = old.clone();
        new.progress = Some(p);
        self.store.write(old, &new)?;
        self.changes.push(Change {
            id: old.id,
            old: Some(old.clone()),
        });
        Ok(())
    }

    /// Whether `id` is held back by a predecessor; `None` when it has no (live) predecessor.
    fn blocked(&mut self, id: Uuid) -> ApiResult<Option<bool>> {
        let pred_ids = match self.predecessors.get(&id) {
            Some(known) => known.clone(),
            None => {
                let org = self.ctx().org();
                dependencies_by(self.store.tx, org, "successorId", &[id])?
                    .into_iter()
                    .map(|d| d.predecessor_id)
                    .collect()
            }
        };
        let mut preds = Vec::with_capacity(pred_ids.len());
        for pred in pred_ids {
            let n = self.store.node(pred)?;
            if !n.is_archived {
                preds.push(n.progress);
            }
        }
        if preds.is_empty() {
            return Ok(None);
        }
        let refs: Vec<Option<&Progress>> = preds.iter().map(Option::as_ref).collect();
        Ok(Some(progress::blocked(&refs)))
    }

    /// `p` (the progress `node` is about to get) with readiness applied: unstarted progress of a
    /// node with predecessors is `waiting` while one holds it back, else `todo`.
    pub fn ready(&mut self, node: &Deliverable, p: Progress) -> ApiResult<Progress> {
        if !progress::unstarted(Some(&p)) {
            return Ok(p);
        }
        Ok(match self.blocked(node.id)? {
            Some(b) => progress::readiness(Some(&p), b, self.by, self.ctx().now).unwrap_or(p),
            None => p,
        })
    }

    /// Rolls progress up from the children of `parent_id` to the ancestors, stopping at the
    /// first ancestor it leaves unchanged.
    pub fn roll_up_from(&mut self, mut parent_id: Option<Uuid>) -> ApiResult<()> {
        while let Some(pid) = parent_id {
            let parent = self.store.node(pid)?;
            let children: Vec<std::sync::Arc<Deliverable>> = self
                .store
                .children(pid)?
                .into_iter()
                .filter(|c| !c.is_archived)
                .collect();
            let kids: Vec<Option<&Progress>> =
                children.iter().map(|c| c.progress.as_ref()).collect();
            let rolled = progress::roll_up(
                parent.progress.as_ref(),
                parent.quantity,
                &kids,
                self.by,
                self.ctx().now,
            );
            let rolled = match rolled {
                Some(p) => Some(self.ready(&parent, p)?),
                None => None,
            };
            match rolled {
                Some(p) if Some(&p) != parent.progress.as_ref() => self.set(&parent, p)?,
                _ => break,
            }
            parent_id = parent.parent_id;
        }
        Ok(())
    }

    /// Re-evaluates the readiness of each of `ids` that exists and is not archived (successors
    /// whose predecessors changed) and rolls the changes up, with what they need read in
    /// batches (their records, their dependencies, their predecessors' records), and each
    /// parent rolled up once after all of them: a call that makes 10,000 steps of one order
    /// wait reads the order's children once, not once per step.
    pub fn evaluate_many(&mut self, ids: &[Uuid]) -> ApiResult<()> {
        let mut ids = ids.to_vec();
        ids.sort_unstable();
        ids.dedup();
        self.store.read_nodes(&ids)?;
        ids.retain(|id| self.store.cached(*id).is_some_and(|n| !n.is_archived));
        let org = self.ctx().org();
        let deps = dependencies_by(self.store.tx, org, "successorId", &ids)?;
        for id in &ids {
            self.predecessors.entry(*id).or_default();
        }
        let mut preds = Vec::with_capacity(deps.len());
        for d in deps {
            preds.push(d.predecessor_id);
            self.predecessors
                .entry(d.successor_id)
                .or_default()
                .push(d.predecessor_id);
        }
        self.store.read_nodes(&preds)?;
        let mut parents = Vec::new();
        let mut rolled = HashSet::new();
        for id in ids {
            let node = self.store.node(id)?;
            let blocked = self.blocked(id)?.unwrap_or(false);
            if let Some(p) =
                progress::readiness(node.progress.as_ref(), blocked, self.by, self.ctx().now)
            {
                self.set(&node, p)?;
                if let Some(parent) = node.parent_id
                    && rolled.insert(parent)
                {
                    parents.push(parent);
                }
            }
        }
        for parent in parents {
            self.roll_up_from(Some(parent))?;
        }
        Ok(())
    }

    /// Re-evaluates the successors of every node whose holding back changed with this
    /// request's writes (until none changes: readiness itself moves only `waiting` and `todo`,
    /// which hold nothing back differently, so this ends after the nodes written). Round by
    /// round: the dependencies of every node that changed in a round are read together, and
    /// their successors evaluated together ([`Progressor::evaluate_many`]), so a bulk write
    /// that completes 10,000 predecessors costs a few queries, not one per node.
    fn release(&mut self) -> ApiResult<()> {
        let org = self.ctx().org();
        let mut i = 0;
        let mut evaluated: HashSet<Uuid> = HashSet::new();
        while i < self.first.len() {
            let round: Vec<(Uuid, Option<Progress>)> = self.first[i..].to_vec();
            i = self.first.len();
            let mut changed = Vec::new();
            for (id, before) in round {
                let now = self.store.node(id)?;
                if progress::holds_back(before.as_ref())
                    != progress::holds_back(now.progress.as_ref())
                {
                    changed.push(id);
                }
            }
            if changed.is_empty() {
                continue;
            }
            let successors: Vec<Uuid> =
                dependencies_by(self.store.tx, org, "predecessorId", &changed)?
                    .into_iter()
                    .map(|d| d.successor_id)
                    .filter(|s| evaluated.insert(*s))
                    .collect();
            self.evaluate_many(&successors)?;
        }
        Ok(())
    }

    /// Releases the successors the writes affect, refreshes the computed fields of everything
    /// written, and writes each changed record once. Returns the nodes that became done.
    pub fn finish(mut self) -> ApiResult<Vec<Uuid>> {
        self.release()?;
        let now = self.store.now();
        tree::refresh(&mut self.store, &self.changes, now)?;
        self.store.flush()?;
        Ok(self.done)
    }
}

/// Re-evaluates the readiness of the deliverables `ids` (the successors of dependencies just
/// created, changed or removed), in the caller's transaction.
pub fn dependencies_changed(tx: &mut dyn Tx, ctx: &Ctx, ids: &[Uuid]) -> ApiResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut p = Progressor::new(tx, ctx);
    p.evaluate_many(ids)?;
    let done = p.finish()?;
    debug_assert!(done.is_empty(), "readiness never completes a node");
    Ok(())
}

/// Whether a write from `old` to `new` can change what the node's successors (or the node
/// itself) wait for: its archival, or whether its progress holds a successor back.
pub fn readiness_moved(old: &Deliverable, new: &Deliverable) -> bool {
    old.is_archived != new.is_archived
        || progress::holds_back(old.progress.as_ref())
            != progress::holds_back(new.progress.as_ref())
        || (progress::unstarted(new.progress.as_ref()) && old.progress != new.progress)
}

/// After record writes (a PATCH, a bulk PUT or PATCH, an archive or restore) that moved the
/// readiness of `ids` ([`readiness_moved`]): re-evaluates the successors of each (through the
/// `predecessorId` index of dependencies) and each that has predecessors itself, in the
/// caller's transaction. Nodes without dependencies cost one or two index lookups.
pub fn writes_changed(tx: &mut dyn Tx, ctx: &Ctx, ids: &[Uuid]) -> ApiResult<()> {
    if ids.is_empty() {
        return Ok(());
    }
    let org = ctx.org();
    let mut affected: Vec<Uuid> = dependencies_by(tx, org, "predecessorId", ids)?
        .into_iter()
        .map(|d| d.successor_id)
        .collect();
    affected.extend(
        dependencies_by(tx, org, "successorId", ids)?
            .into_iter()
            .map(|d| d.successor_id),
    );
    if affected.is_empty() {
        return Ok(());
    }
    dependencies_changed(tx, ctx, &affected)
}
