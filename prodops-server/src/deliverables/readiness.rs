//! Progress writes with their effects on the rest of the tree: the roll-up to the ancestors and
//! readiness (docs/deliverables.md, "Readiness"): a node a finish-to-start predecessor still
//! holds back (core's `progress::holds_back`) is `waiting`, else `todo`, while its work has not
//! started. After the writes of a request, the successors of every node whose holding back
//! changed are re-evaluated (each through the `(organization_id, predecessorId)` and
//! `(organization_id, successorId)` indexes of dependencies), in the same transaction, and only
//! those: the cost follows the dependencies touched, not the size of the tree.

use std::collections::{HashMap, HashSet};

use prodops_core::deliverable::{Deliverable, Progress, ProgressStatus};
use prodops_core::minimal::Dependency;
use prodops_core::progress;
use prodops_core::tree::{self, Change, TreeStore};
use uuid::Uuid;

use super::resource;
use super::tree::TxTree;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::Tx;
use crate::store::sql::FieldPath;

/// The dependencies whose `field` (`predecessorId` or `successorId`) is `id`, through its index.
fn dependencies_by(
    tx: &mut dyn Tx,
    org: Uuid,
    field: &str,
    id: Uuid,
) -> ApiResult<Vec<Dependency>> {
    let table = resource("dependency").table();
    let expr = tx.text_expr(&FieldPath::parse(field).expect("static path"));
    let rows = tx.query(
        &format!("SELECT data FROM {table} WHERE organization_id = ? AND {expr} = ?"),
        &[org.into(), id.to_string().into()],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for mut r in rows {
        let Some(text) = r.pop().and_then(crate::store::SqlValue::into_string) else {
            continue;
        };
        out.push(serde_json::from_str::<Dependency>(&text).map_err(ApiError::internal)?);
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
            crate::qc::check_gate(&mut *self.store.tx, ctx, old)?;
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
        let org = self.ctx().org();
        let deps = dependencies_by(self.store.tx, org, "successorId", id)?;
        let mut preds = Vec::with_capacity(deps.len());
        for d in deps {
            let n = self.store.node(d.predecessor_id)?;
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

    /// Re-evaluates the readiness of `id` (a successor whose predecessors changed) and rolls the
    /// change up.
    pub fn evaluate(&mut self, id: Uuid) -> ApiResult<()> {
        let node = self.store.node(id)?;
        if node.is_archived {
            return Ok(());
        }
        let blocked = self.blocked(id)?.unwrap_or(false);
        if let Some(p) =
            progress::readiness(node.progress.as_ref(), blocked, self.by, self.ctx().now)
        {
            self.set(&node, p)?;
            self.roll_up_from(node.parent_id)?;
        }
        Ok(())
    }

    /// Re-evaluates the successors of every node whose holding back changed with this
    /// request's writes (until none changes: readiness itself moves only `waiting` and `todo`,
    /// which hold nothing back differently, so this ends after the nodes written).
    fn release(&mut self) -> ApiResult<()> {
        let org = self.ctx().org();
        let mut i = 0;
        let mut evaluated: HashSet<Uuid> = HashSet::new();
        while i < self.first.len() {
            let (id, before) = self.first[i].clone();
            i += 1;
            let now = self.store.node(id)?;
            if progress::holds_back(before.as_ref()) == progress::holds_back(now.progress.as_ref())
            {
                continue;
            }
            for d in dependencies_by(self.store.tx, org, "predecessorId", id)? {
                if evaluated.insert(d.successor_id) {
                    self.evaluate(d.successor_id)?;
                }
            }
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
    let mut p = Progressor::new(tx, ctx);
    let mut seen = HashMap::new();
    for id in ids {
        if seen.insert(*id, ()).is_none()
            && crate::store::records::get(p.store.tx, super::tree::TABLE, ctx.org(), *id)?.is_some()
        {
            p.evaluate(*id)?;
        }
    }
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
    let org = ctx.org();
    let mut affected = Vec::new();
    for id in ids {
        for d in dependencies_by(tx, org, "predecessorId", *id)? {
            affected.push(d.successor_id);
        }
        if !dependencies_by(tx, org, "successorId", *id)?.is_empty() {
            affected.push(*id);
        }
    }
    if affected.is_empty() {
        return Ok(());
    }
    dependencies_changed(tx, ctx, &affected)
}
