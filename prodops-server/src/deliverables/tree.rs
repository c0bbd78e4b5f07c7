//! The tree index of deliverables and the [`TreeStore`] of core's refresh over one transaction.
//!
//! `deliverable_tree` holds one row per deliverable: its parent, its root, its materialized path
//! (the ids from the root down to the node, each followed by `/`) and its sort key among its
//! siblings. "Every descendant of X" is a range of the `(organization_id, path)` index
//! (`path > X.path AND path < X.path with its last '/' replaced by '0'`), "the children of X" a
//! range of `(organization_id, parent_id, sort_key)`: no read scans the organization.

use prodops_core::registry::ResourceId;
use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use prodops_core::deliverable::Deliverable;
use prodops_core::tree::TreeStore;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::deliverables::{
    EachRecord, children_with_records, longest_path, next_sort_key, open_session_workers,
    read_records, record_text,
};
pub use crate::store::deliverables::{
    IndexNode, RawNode, TABLE, TREE, TreeRow, child_rows, path_upper, raw_records, set_sort_key,
    subtree_index, subtree_records_sql, subtree_rows, tree_row, tree_rows,
};
use crate::store::{Tx, records};

/// How deep a deliverable may be: a root is at level 1, its children at level 2, ... The
/// materialized path grows by 37 bytes a level, and PostgreSQL refuses an index row past about
/// 2,700 bytes (the path index failed at level 68), so the limit keeps a margin below that and
/// holds on SQLite alike (docs/limits.md).
pub const MAX_DEPTH: usize = 64;

/// The bytes one level adds to a path: an id and its `/`.
const SEGMENT: usize = 37;

/// The level of the node whose path is `path` (a root's is 1).
pub fn depth_of(path: &str) -> usize {
    path.len() / SEGMENT
}

/// The 400 of a write that would put a deliverable at `level` below [`MAX_DEPTH`].
fn too_deep(level: usize) -> ApiError {
    ApiError::field(
        "parentId",
        format!(
            "a deliverable may be at most {MAX_DEPTH} levels deep (a root is level 1); \
             this write would put one at level {level}"
        ),
    )
}

/// The organization's tree lock, taken before a write's first read of the tree (a new node's
/// parent and sort key, a move, [`TxTree`]'s reads): on PostgreSQL two writers under one
/// parent would otherwise each take the next sort key and recompute the parent's computed
/// fields from what they saw before the other committed (a parent of 1,000 children left
/// listing the 80 of the last batch, and siblings sharing sort keys). Re-entrant within the
/// transaction, released at its end (docs/deliverables.md, "Concurrent writers").
fn lock_trees(tx: &mut dyn Tx, org: Uuid) -> ApiResult<()> {
    Ok(crate::store::deliverables::lock_trees(tx, org)?)
}

/// Adds a new node to the index, last among its siblings. Within a bulk call (`ctx.deferred`)
/// the row waits in [`NewRows`] and is written with the call's other new rows.
pub fn insert(tx: &mut dyn Tx, ctx: &Ctx, id: Uuid, parent: Option<Uuid>) -> ApiResult<()> {
    let org = ctx.org();
    let Some(deferred) = &ctx.deferred else {
        return insert_now(tx, org, id, parent);
    };
    let row = new_row(
        tx,
        id,
        parent,
        |tx, p| {
            if let Some(known) = deferred.with(|n: &mut NewRows| n.known.get(&p).cloned()) {
                return Ok(Some(known));
            }
            lock_trees(tx, org)?;
            let row = tree_row(tx, org, p)?;
            if let Some(row) = &row {
                deferred.with(|n: &mut NewRows| n.known.insert(p, row.clone()));
            }
            Ok(row)
        },
        |tx, p| match deferred.with(|n: &mut NewRows| n.next_sort.get(&p).copied()) {
            Some(next) => Ok(next),
            None => {
                lock_trees(tx, org)?;
                Ok(next_sort_key(tx, org, p)?)
            }
        },
    )?;
    deferred.with(|n: &mut NewRows| {
        if let Some(p) = row.parent_id {
            n.next_sort.insert(p, row.sort_key + 1);
            // Sort keys under a new node count up from 0: this order is the sibling order.
            if let Some(siblings) = n.kids.get_mut(&p) {
                siblings.push(id);
            }
        }
        // A new node has no children yet: its first child needs no query either.
        n.next_sort.insert(id, 0);
        n.kids.insert(id, Vec::new());
        n.known.insert(id, row.clone());
        n.rows.push(row);
    });
    Ok(())
}

/// The tree rows of a bulk call's new nodes, not written yet, and what their inserts read:
/// the rows of their parents and the next sort key under each parent. A 100,000-node import
/// on PostgreSQL spent most of its time on the three statements each node's row took (its
/// parent's row, its siblings' greatest sort key, the insert), a round trip each.
///
/// Only creates add to it. Everything else that reads or changes the tree within the call
/// writes the waiting rows first ([`flush_new_rows`]), which also forgets what was read, as a
/// move may change a parent's path or its children's sort keys: the deliverable hooks of an
/// update and [`TxTree`]'s reads of the tree. The end of the call writes them too
/// ([`finish_new_rows`]).
#[derive(Default)]
struct NewRows {
    rows: Vec<TreeRow>,
    known: HashMap<Uuid, TreeRow>,
    next_sort: HashMap<Uuid, i64>,
    /// The children of each node the call created, in sibling order, while creates are all
    /// the call did to the tree: a new node's children can then only be nodes the call
    /// created under it. The refresh at the end of the call takes them from here instead of
    /// reading the children of every new node.
    kids: HashMap<Uuid, Vec<Uuid>>,
    /// Set by anything but a create (a move may bring an older node under a new one).
    kids_unknown: bool,
}

/// Adds a new node's row to the index at once.
fn insert_now(tx: &mut dyn Tx, org: Uuid, id: Uuid, parent: Option<Uuid>) -> ApiResult<()> {
    lock_trees(tx, org)?;
    let row = new_row(
        tx,
        id,
        parent,
        |tx, p| Ok(tree_row(tx, org, p)?),
        |tx, p| Ok(next_sort_key(tx, org, p)?),
    )?;
    crate::store::deliverables::insert_tree_rows(tx, org, &[row])?;
    Ok(())
}

/// Writes the tree rows a bulk call holds back ([`NewRows`]) before something other than a
/// create reads or changes the tree; nothing outside a bulk call.
pub fn flush_new_rows(tx: &mut dyn Tx, ctx: &Ctx) -> ApiResult<()> {
    let Some(deferred) = &ctx.deferred else {
        return Ok(());
    };
    let rows = deferred.with(|n: &mut NewRows| {
        n.known.clear();
        n.next_sort.clear();
        n.kids.clear();
        n.kids_unknown = true;
        std::mem::take(&mut n.rows)
    });
    crate::store::deliverables::insert_tree_rows(tx, ctx.org(), &rows)?;
    Ok(())
}

/// Writes the tree rows a bulk call holds back, at its end; answers the children of each node
/// it created when creates were all it did to the tree ([`NewRows::kids`]).
pub fn finish_new_rows(tx: &mut dyn Tx, ctx: &Ctx) -> ApiResult<Option<HashMap<Uuid, Vec<Uuid>>>> {
    let Some(new) = ctx.deferred.as_ref().and_then(|d| d.take::<NewRows>()) else {
        return Ok(None);
    };
    crate::store::deliverables::insert_tree_rows(tx, ctx.org(), &new.rows)?;
    Ok((!new.kids_unknown).then_some(new.kids))
}

/// The row of a new node under `parent`: `parent_row` and `next_sort` read what is needed.
fn new_row(
    tx: &mut dyn Tx,
    id: Uuid,
    parent: Option<Uuid>,
    parent_row: impl FnOnce(&mut dyn Tx, Uuid) -> ApiResult<Option<TreeRow>>,
    next_sort: impl FnOnce(&mut dyn Tx, Uuid) -> ApiResult<i64>,
) -> ApiResult<TreeRow> {
    let Some(p) = parent else {
        return Ok(TreeRow {
            id,
            parent_id: None,
            root_id: id,
            path: format!("{id}/"),
            sort_key: 0,
        });
    };
    let parent_row =
        parent_row(tx, p)?.ok_or_else(|| ApiError::field("parentId", "no such deliverable"))?;
    if depth_of(&parent_row.path) + 1 > MAX_DEPTH {
        return Err(too_deep(depth_of(&parent_row.path) + 1));
    }
    Ok(TreeRow {
        id,
        parent_id: Some(p),
        root_id: parent_row.root_id,
        path: format!("{}{id}/", parent_row.path),
        sort_key: next_sort(tx, p)?,
    })
}

/// The number of levels of a node's subtree, the node included (1 for a leaf): one read of
/// the path index range.
fn subtree_height(tx: &mut dyn Tx, org: Uuid, top: &TreeRow) -> ApiResult<usize> {
    let longest = longest_path(tx, org, top)?.unwrap_or(top.path.len());
    Ok(longest.saturating_sub(top.path.len()) / SEGMENT + 1)
}

/// Moves a node (and its subtree) under `new_parent`, last among its new siblings.
pub fn move_node(tx: &mut dyn Tx, org: Uuid, id: Uuid, new_parent: Option<Uuid>) -> ApiResult<()> {
    lock_trees(tx, org)?;
    let Some(row) = tree_row(tx, org, id)? else {
        return insert_now(tx, org, id, new_parent);
    };
    let (new_path, new_root, sort_key) = match new_parent {
        Some(p) => {
            let parent_row = tree_row(tx, org, p)?
                .ok_or_else(|| ApiError::field("parentId", "no such deliverable"))?;
            // The deepest node of the moved subtree lands this many levels below the parent.
            let below = subtree_height(tx, org, &row)?;
            if depth_of(&parent_row.path) + below > MAX_DEPTH {
                return Err(too_deep(depth_of(&parent_row.path) + below));
            }
            let next = next_sort_key(tx, org, p)?;
            (
                format!("{}{id}/", parent_row.path),
                parent_row.root_id,
                next,
            )
        }
        None => (format!("{id}/"), id, 0),
    };
    crate::store::deliverables::move_subtree(
        tx, org, &row, new_path, new_root, new_parent, sort_key,
    )?;
    Ok(())
}

/// Reads the stored records of `nodes` with one query per call, handing each record's JSON text
/// to `each` with the node's position in `nodes`, in any order (a node whose record is missing
/// is left out); the rowids the index holds are hints (`store::deliverables::read_records`).
pub fn records_of(
    tx: &mut dyn Tx,
    org: Uuid,
    nodes: &[IndexNode],
    each: &mut EachRecord<'_>,
) -> ApiResult<()> {
    Ok(read_records(tx, org, nodes, |n| (n.id, n.rid), each)?)
}

/// Ids per statement when [`TxTree`] reads the session workers of many nodes at once.
pub(crate) const PREFETCH_CHUNK: usize = 500;

/// The record a stored or checked JSON value holds, read from the value in place (a copy of
/// the value first cost as many allocations as the record itself).
pub fn parse_deliverable(v: &Value) -> ApiResult<Deliverable> {
    use serde::Deserialize;
    Deliverable::deserialize(v).map_err(ApiError::internal)
}

fn parse_text(text: &str) -> ApiResult<Deliverable> {
    serde_json::from_str(text).map_err(ApiError::internal)
}

/// The JSON text a record saved by the tree is stored as: `stored` (whose `updatedAt` is the
/// request's moment) serialized once, not through a `Value`. Its `updatedAt` is the request's
/// time as the API writes it (`Ctx::now_text`, always with milliseconds); the record's own
/// serializer leaves out a zero fraction, so at a whole second it goes through a `Value`.
fn stored_text(ctx: &Ctx, stored: &Deliverable) -> ApiResult<String> {
    use chrono::Timelike;
    if stored.updated_at == ctx.now && ctx.now.nanosecond() != 0 {
        return serde_json::to_string(stored).map_err(ApiError::internal);
    }
    let mut v = serde_json::to_value(stored).map_err(ApiError::internal)?;
    v["updatedAt"] = json!(ctx.now_text());
    Ok(v.to_string())
}

/// The top-level fields whose values differ between two deliverables, sorted, without
/// `updatedAt`: what core's `event::changed_fields` finds on their JSON (every field is always
/// serialized, and two fields serialize alike exactly when they are equal), without building
/// it. Naming every field, it stops compiling when one is added.
pub fn changed_fields(old: &Deliverable, new: &Deliverable) -> Vec<String> {
    let Deliverable {
        id,
        organization_id,
        identifier,
        name,
        kind,
        quantity,
        parent_id,
        root_parent_id,
        origin_template_id,
        cycle_time_sec,
        duration_sec,
        people_num,
        data,
        cost_code,
        schedule,
        progress,
        computed,
        is_archived,
        created_at,
        updated_at: _,
    } = old;
    let mut out: Vec<&str> = Vec::new();
    let mut differ = |changed: bool, field: &'static str| {
        if changed {
            out.push(field);
        }
    };
    differ(*id != new.id, "id");
    differ(*organization_id != new.organization_id, "organizationId");
    differ(*identifier != new.identifier, "identifier");
    differ(*name != new.name, "name");
    differ(*kind != new.kind, "type");
    differ(*quantity != new.quantity, "quantity");
    differ(*parent_id != new.parent_id, "parentId");
    differ(*root_parent_id != new.root_parent_id, "rootParentId");
    differ(
        *origin_template_id != new.origin_template_id,
        "originTemplateId",
    );
    differ(*cycle_time_sec != new.cycle_time_sec, "cycleTimeSec");
    differ(*duration_sec != new.duration_sec, "durationSec");
    differ(*people_num != new.people_num, "peopleNum");
    differ(*data != new.data, "data");
    differ(*cost_code != new.cost_code, "costCode");
    differ(*schedule != new.schedule, "schedule");
    differ(*progress != new.progress, "progress");
    differ(*computed != new.computed, "computed");
    differ(*is_archived != new.is_archived, "isArchived");
    differ(*created_at != new.created_at, "createdAt");
    out.sort_unstable();
    out.into_iter().map(str::to_string).collect()
}

/// The event of a deliverable written from `old` to `new` (docs/events.md): the type core's
/// `event::event_type` gives (from the two fields it reads), the record as one JSON text
/// serialized once, and the changed fields, without building either record's `Value`.
fn record_update_event(ctx: &Ctx, old: &Deliverable, new: &Deliverable) -> ApiResult<()> {
    let basis = |d: &Deliverable| {
        json!({
            "isArchived": d.is_archived,
            "progress": d.progress.as_ref().map(|p| json!({"status": p.status})),
        })
    };
    let res = ctx.resource(ResourceId::Deliverable);
    let event_type = prodops_core::event::event_type(
        res.desc().path,
        prodops_core::event::Change::Updated {
            old: &basis(old),
            new: &basis(new),
        },
    );
    let data = serde_json::to_string(new).map_err(ApiError::internal)?;
    let changed = Value::from(changed_fields(old, new)).to_string();
    // Only waiting and todo matter to the announcements.
    let status = |d: &Deliverable| {
        d.progress.as_ref().map(|p| match p.status {
            prodops_core::deliverable::ProgressStatus::Waiting => "waiting",
            prodops_core::deliverable::ProgressStatus::Todo => "todo",
            _ => "other",
        })
    };
    let transitions = crate::engine::events::Transitions {
        old_status: status(old),
        new_status: status(new),
        old_at_risk_until: old.computed.at_risk_until.as_deref(),
        new_at_risk_until: new.computed.at_risk_until.as_deref(),
    };
    crate::engine::events::updated_text(
        ctx,
        res,
        event_type,
        new.id.to_string(),
        data,
        changed,
        Some(transitions),
    );
    Ok(())
}

/// What a bulk PUT reads ahead for the deliverables it will write
/// ([`Hooks::read_ahead`](crate::engine::hooks::Hooks::read_ahead)): for those it updates, their
/// child lists with the children's records, their session workers and their parents' records;
/// for those and the ones it creates, their stages' shops; as they were when the call began, a
/// few queries per [`PREFETCH_CHUNK`] records. Each write's hooks read these per record
/// otherwise (a re-import of an unchanged tree of 100,000 nodes made 200,000 round trips for
/// them).
///
/// Only what the call cannot have changed is taken from here: a record the call wrote is
/// taken from what the call keeps of it (`written` in [`TxTree::seed`]), and a child list
/// under which the call created or moved a node is forgotten ([`ReadAhead::forget_children`]).
#[derive(Default)]
pub struct ReadAhead {
    kids: HashMap<Uuid, Vec<Uuid>>,
    nodes: HashMap<Uuid, Arc<Deliverable>>,
    workers: HashMap<Uuid, Vec<Uuid>>,
    shops: HashMap<Uuid, Option<Uuid>>,
}

impl ReadAhead {
    /// Reads ahead for the records `ids` (stored), whose parents are `parents` and whose
    /// stage nodes name the stages `stages`.
    pub fn read(
        tx: &mut dyn Tx,
        ctx: &Ctx,
        ids: &[Uuid],
        parents: &[Uuid],
        stages: &[Uuid],
    ) -> ApiResult<ReadAhead> {
        let mut store = TxTree::new(tx, ctx);
        store.prefetch_nodes(ids)?;
        store.read_nodes(parents)?;
        store.prefetch_shops(stages)?;
        Ok(ReadAhead {
            kids: store.kids,
            nodes: store.nodes,
            workers: store.workers,
            shops: store.shops,
        })
    }

    /// The record `id` as the call found it, if it was read ahead.
    pub fn node(&self, id: Uuid) -> Option<&Arc<Deliverable>> {
        self.nodes.get(&id)
    }

    /// Forgets the child list of `parent`: the call created a node under it or moved one in
    /// or out.
    pub fn forget_children(&mut self, parent: Uuid) {
        self.kids.remove(&parent);
    }
}

/// Core's [`TreeStore`] over one transaction. It caches the nodes and child lists it read:
/// its users change no parent or sibling order while it lives, only records' fields, and every
/// change goes through [`TreeStore::save`] or [`TxTree::write`], which keep the cache true.
pub struct TxTree<'a> {
    pub tx: &'a mut dyn Tx,
    pub ctx: &'a Ctx,
    shops: HashMap<Uuid, Option<Uuid>>,
    workers: HashMap<Uuid, Vec<Uuid>>,
    nodes: HashMap<Uuid, Arc<Deliverable>>,
    kids: HashMap<Uuid, Vec<Uuid>>,
    /// Records held only because a child list was read ([`TxTree::read_children`]) and not
    /// written since: dropped when core's refresh releases that list
    /// ([`TreeStore::release_children`]), so that a refresh reading the children of many large
    /// parents holds one parent's at a time.
    transient: std::collections::HashSet<Uuid>,
    pub saved: Vec<Uuid>,
    /// With deferred writes, `save` and `write` only update the cache; `flush` writes every
    /// changed record once.
    deferred: Option<std::collections::BTreeSet<Uuid>>,
    /// Whether this store took the organization's tree lock ([`lock_trees`]) before its first
    /// read of the tree.
    locked: bool,
}

impl<'a> TxTree<'a> {
    pub fn new(tx: &'a mut dyn Tx, ctx: &'a Ctx) -> Self {
        TxTree {
            tx,
            ctx,
            shops: HashMap::new(),
            workers: HashMap::new(),
            nodes: HashMap::new(),
            kids: HashMap::new(),
            transient: Default::default(),
            saved: Vec::new(),
            deferred: None,
            locked: false,
        }
    }

    /// Takes the organization's tree lock ([`lock_trees`]) once per store, before its first
    /// read of the tree: what it reads, it may write back.
    fn lock(&mut self) -> ApiResult<()> {
        if !self.locked {
            lock_trees(self.tx, self.ctx.org())?;
            self.locked = true;
        }
        Ok(())
    }

    /// A store whose writes wait for [`TxTree::flush`], so that a record changed several
    /// times by one action (its progress, then its computed fields) is written once.
    pub fn deferred(tx: &'a mut dyn Tx, ctx: &'a Ctx) -> Self {
        TxTree {
            deferred: Some(Default::default()),
            ..Self::new(tx, ctx)
        }
    }

    /// Takes the child lists of nodes a bulk call created ([`finish_new_rows`]) and the
    /// records it wrote (`written`, as it wrote them), so that the refresh reads neither.
    pub fn know_new_nodes(
        &mut self,
        kids: HashMap<Uuid, Vec<Uuid>>,
        written: &HashMap<Uuid, Arc<Deliverable>>,
    ) {
        for (id, children) in kids {
            let all_known = children
                .iter()
                .chain([&id])
                .all(|k| written.contains_key(k));
            if !all_known {
                continue;
            }
            for k in children.iter().chain([&id]) {
                self.nodes.entry(*k).or_insert_with(|| written[k].clone());
            }
            self.kids.insert(id, children);
        }
    }

    /// Takes what `ahead` read for `node` (a stored record a bulk call updates): its
    /// children, its session workers, its stage's shop. A child the call wrote is taken as
    /// the call wrote it (`written`).
    pub fn seed(
        &mut self,
        ahead: &ReadAhead,
        node: &Deliverable,
        written: &HashMap<Uuid, Arc<Deliverable>>,
    ) {
        let id = node.id;
        if let Some(kids) = ahead.kids.get(&id) {
            let known: Option<Vec<Arc<Deliverable>>> = kids
                .iter()
                .map(|k| written.get(k).or_else(|| ahead.nodes.get(k)).cloned())
                .collect();
            if let Some(known) = known {
                for kid in known {
                    self.nodes.insert(kid.id, kid);
                }
                self.kids.insert(id, kids.clone());
            }
        }
        if let Some(workers) = ahead.workers.get(&id) {
            self.workers.insert(id, workers.clone());
        }
        if let Some(stage) = prodops_core::tree::data_uuid(node, "stageId")
            && let Some(shop) = ahead.shops.get(&stage)
        {
            self.shops.insert(stage, *shop);
        }
    }

    /// Reads the records of those of `ids` this store does not hold, [`PREFETCH_CHUNK`] per
    /// query.
    pub fn read_nodes(&mut self, ids: &[Uuid]) -> ApiResult<()> {
        let org = self.ctx.org();
        for chunk in not_held(ids, &self.nodes).chunks(PREFETCH_CHUNK) {
            for (id, text) in records::get_many_raw(self.tx, TABLE, org, chunk)? {
                self.nodes.insert(id, Arc::new(parse_text(&text)?));
            }
        }
        Ok(())
    }

    /// The shops of the stage resources `stages` ([`TreeStore::stage_shop`]), [`PREFETCH_CHUNK`]
    /// stages per query.
    fn prefetch_shops(&mut self, stages: &[Uuid]) -> ApiResult<()> {
        let org = self.ctx.org();
        for chunk in not_held(stages, &self.shops).chunks(PREFETCH_CHUNK) {
            let texts = records::get_many_raw(self.tx, "stage", org, chunk)?;
            for id in chunk {
                let shop = texts
                    .get(id)
                    .and_then(|t| serde_json::from_str::<Value>(t).ok())
                    .as_ref()
                    .and_then(shop_of);
                self.shops.insert(*id, shop);
            }
        }
        Ok(())
    }

    /// Takes every stage's shop `ahead` read (stages are not written by a deliverable bulk
    /// call, so they hold for all of it).
    pub fn seed_shops(&mut self, ahead: &ReadAhead) {
        self.shops.extend(ahead.shops.iter().map(|(k, v)| (*k, *v)));
    }

    /// Takes `id` for a record being created, not stored yet: no children and no session
    /// workers, without asking the database.
    pub fn assume_new(&mut self, id: Uuid) {
        self.kids.insert(id, Vec::new());
        self.workers.insert(id, Vec::new());
    }

    /// Reads the child lists of `parents` (each in sibling order, with the children's
    /// records), [`PREFETCH_CHUNK`] parents per query. A child this store already holds is
    /// not parsed again (its copy, written through the store, is the newer).
    fn read_children(&mut self, parents: &[Uuid]) -> ApiResult<()> {
        flush_new_rows(self.tx, self.ctx)?;
        let org = self.ctx.org();
        for chunk in parents.chunks(PREFETCH_CHUNK) {
            let rows = children_with_records(self.tx, org, chunk)?;
            let mut found: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
            for (parent, kid, text) in rows {
                if !self.nodes.contains_key(&kid) {
                    // The rowid join missed a record whose rowid is stale: read it by id.
                    let text = match text {
                        Some(t) => Some(t),
                        None => record_text(self.tx, org, kid)?,
                    };
                    let Some(text) = text else {
                        continue;
                    };
                    self.nodes.insert(kid, Arc::new(parse_text(&text)?));
                    self.transient.insert(kid);
                }
                found.entry(parent).or_default().push(kid);
            }
            for id in chunk {
                self.kids.insert(*id, found.remove(id).unwrap_or_default());
            }
        }
        Ok(())
    }

    /// The node as this store last saw or wrote it, if it did.
    pub fn cached(&self, id: Uuid) -> Option<&Deliverable> {
        self.nodes.get(&id).map(|n| &**n)
    }

    /// Writes every record changed since the store was made, each checked against the
    /// resource's rules.
    pub fn flush(&mut self) -> ApiResult<()> {
        let Some(dirty) = self.deferred.take() else {
            return Ok(());
        };
        let kind = ResourceId::Deliverable.kind();
        let mut rows = Vec::with_capacity(dirty.len());
        for id in dirty {
            let node = self
                .nodes
                .get(&id)
                .cloned()
                .ok_or_else(ApiError::not_found)?;
            let mut v = serde_json::to_value(&*node).map_err(ApiError::internal)?;
            v["updatedAt"] = json!(self.ctx.now_text());
            let checked = kind.check(v, None).map_err(ApiError::violations)?;
            rows.push(records::RowUpdate::of_record(&checked)?);
        }
        // Written together: one statement per 500 records on PostgreSQL.
        records::update_records(self.tx, TABLE, self.ctx.org(), rows)?;
        self.deferred = Some(Default::default());
        Ok(())
    }

    /// The moment of the request, which the stored alerts are computed as of.
    pub fn now(&self) -> DateTime<Utc> {
        self.ctx.now
    }

    /// Writes a changed record (server-managed fields such as `progress` or `schedule`) after
    /// checking it against the resource's rules, like the engine's pipeline does.
    pub fn write(&mut self, old: &Deliverable, new: &Deliverable) -> ApiResult<Deliverable> {
        if let Some(dirty) = &mut self.deferred {
            dirty.insert(new.id);
            let mut stored = new.clone();
            stored.updated_at = self.ctx.now;
            // Announced as written by the action; the deferred refresh of computed fields at
            // the end of the bulk call is not an event of its own (docs/events.md).
            record_update_event(self.ctx, old, &stored)?;
            self.transient.remove(&new.id);
            self.nodes.insert(new.id, Arc::new(stored.clone()));
            return Ok(stored);
        }
        let kind = ResourceId::Deliverable.kind();
        let old_v = serde_json::to_value(old).map_err(ApiError::internal)?;
        let mut new_v = serde_json::to_value(new).map_err(ApiError::internal)?;
        new_v["updatedAt"] = json!(self.ctx.now_text());
        let checked = kind
            .check(new_v, Some(&old_v))
            .map_err(ApiError::violations)?;
        records::update(self.tx, TABLE, self.ctx.org(), &checked)?;
        crate::engine::events::updated(
            self.ctx,
            self.ctx.resource(ResourceId::Deliverable),
            &old_v,
            &checked,
        );
        let node = parse_deliverable(&checked)?;
        self.transient.remove(&node.id);
        self.nodes.insert(node.id, Arc::new(node.clone()));
        Ok(node)
    }
}

/// `deliverable.became-at-risk` (docs/events.md, "Events for what time changes") when a
/// non-archived deliverable the store held as `before` (not at risk as of the request's moment)
/// is saved as `after`, at risk: the record as saved, `changed: ["computed"]`.
fn announce_at_risk(ctx: &Ctx, before: Option<&Deliverable>, after: &Deliverable) -> ApiResult<()> {
    let Some(before) = before else {
        return Ok(());
    };
    let now = prodops_core::alerts::AsOf::at(ctx.now);
    let at_risk = |d: &Deliverable| {
        !d.is_archived && prodops_core::alerts::ahead(d.computed.at_risk_until.as_deref(), &now)
    };
    if at_risk(before) || !at_risk(after) {
        return Ok(());
    }
    let mut stored = after.clone();
    stored.updated_at = ctx.now;
    ctx.record_event(crate::store::events::NewEvent {
        event_type: prodops_core::event::BECAME_AT_RISK.to_string(),
        resource: ctx.resource(ResourceId::Deliverable).desc().path,
        record_id: after.id.to_string(),
        data: serde_json::to_string(&stored).map_err(ApiError::internal)?,
        changed: Some(json!(["computed"]).to_string()),
        by_reference: false,
        record_rowid: None,
    });
    Ok(())
}

/// The shop a stage resource names, if it names one.
fn shop_of(stage: &Value) -> Option<Uuid> {
    stage
        .get("shopId")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}

/// The ids among `ids` that `held` has no entry for.
fn not_held<V>(ids: &[Uuid], held: &HashMap<Uuid, V>) -> Vec<Uuid> {
    ids.iter()
        .copied()
        .filter(|id| !held.contains_key(id))
        .collect()
}

impl TreeStore for TxTree<'_> {
    type Error = ApiError;

    fn node(&mut self, id: Uuid) -> ApiResult<Deliverable> {
        self.node_shared(id).map(Arc::unwrap_or_clone)
    }

    /// The node as this store last saw or wrote it, shared with the cache.
    fn node_shared(&mut self, id: Uuid) -> ApiResult<Arc<Deliverable>> {
        self.lock()?;
        if let Some(n) = self.nodes.get(&id) {
            return Ok(n.clone());
        }
        // Straight from the stored text (not through a `Value` and a copy of it).
        let text = record_text(self.tx, self.ctx.org(), id)?.ok_or_else(ApiError::not_found)?;
        let n = Arc::new(parse_text(&text)?);
        self.nodes.insert(id, n.clone());
        Ok(n)
    }

    fn children(&mut self, id: Uuid) -> ApiResult<Vec<Arc<Deliverable>>> {
        self.lock()?;
        if !self.kids.contains_key(&id) {
            self.read_children(&[id])?;
        }
        let ids = self.kids.get(&id).cloned().unwrap_or_default();
        ids.into_iter().map(|k| self.node_shared(k)).collect()
    }

    fn descendants(&mut self, id: Uuid) -> ApiResult<Vec<Deliverable>> {
        self.lock()?;
        flush_new_rows(self.tx, self.ctx)?;
        let org = self.ctx.org();
        let Some(top) = tree_row(self.tx, org, id)? else {
            return Ok(Vec::new());
        };
        let mut rows = raw_records(self.tx, org, &top)?;
        rows.retain(|r| r.0 != id);
        // Parents before children: a path grows with depth.
        rows.sort_by_key(|r| (r.3, r.2, r.0));
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            let n = parse_text(&r.4)?;
            let n = (**self.nodes.entry(n.id).or_insert_with(|| Arc::new(n))).clone();
            out.push(n);
        }
        Ok(out)
    }

    fn stage_shop(&mut self, stage_id: Uuid) -> ApiResult<Option<Uuid>> {
        if let Some(s) = self.shops.get(&stage_id) {
            return Ok(*s);
        }
        let shop = records::get(self.tx, "stage", self.ctx.org(), stage_id)?
            .as_ref()
            .and_then(shop_of);
        self.shops.insert(stage_id, shop);
        Ok(shop)
    }

    fn session_workers(&mut self, id: Uuid) -> ApiResult<Vec<Uuid>> {
        if let Some(w) = self.workers.get(&id) {
            return Ok(w.clone());
        }
        let table = ResourceId::WorkSession.kind().desc().table;
        let mut workers: Vec<Uuid> = open_session_workers(self.tx, self.ctx.org(), table, &[id])?
            .into_iter()
            .map(|(_, w)| w)
            .collect();
        workers.sort();
        workers.dedup();
        self.workers.insert(id, workers.clone());
        Ok(workers)
    }

    fn prefetch_session_workers(&mut self, ids: &[Uuid]) -> ApiResult<()> {
        let ids = not_held(ids, &self.workers);
        if ids.is_empty() {
            return Ok(());
        }
        let table = ResourceId::WorkSession.kind().desc().table;
        let mut found: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        // The same rows `session_workers` reads one node at a time, for many nodes per query.
        for chunk in ids.chunks(PREFETCH_CHUNK) {
            for (d, w) in open_session_workers(self.tx, self.ctx.org(), table, chunk)? {
                found.entry(d).or_default().push(w);
            }
        }
        for id in ids {
            let mut workers = found.remove(&id).unwrap_or_default();
            workers.sort();
            workers.dedup();
            self.workers.insert(id, workers);
        }
        Ok(())
    }

    /// The records of `ids`, their child lists (with the children's records) and their
    /// session workers, a few queries per [`PREFETCH_CHUNK`] ids instead of three per node: a
    /// bulk PUT of 5,000 deliverables refreshed each written record with its own round trips.
    /// What this store already holds is kept (its copy is the newer).
    fn prefetch_nodes(&mut self, ids: &[Uuid]) -> ApiResult<()> {
        self.lock()?;
        self.prefetch_session_workers(ids)?;
        self.read_nodes(ids)?;
        self.read_children(&not_held(ids, &self.kids))
    }

    /// Drops the child list of `id` and the children's records held only for it (neither
    /// written since nor read otherwise): read again if asked for again.
    fn release_children(&mut self, id: Uuid) -> ApiResult<()> {
        if let Some(kids) = self.kids.remove(&id) {
            for k in kids {
                if self.transient.remove(&k) {
                    self.nodes.remove(&k);
                }
            }
        }
        Ok(())
    }

    fn save(&mut self, node: &Deliverable) -> ApiResult<()> {
        self.lock()?;
        // The refresh of computed fields (an action's node and its ancestors' roll-up) is
        // where a deliverable turns at risk: announced here (docs/events.md).
        let before = self.nodes.get(&node.id).cloned();
        announce_at_risk(self.ctx, before.as_deref(), node)?;
        self.transient.remove(&node.id);
        if let Some(dirty) = &mut self.deferred {
            dirty.insert(node.id);
            let mut stored = node.clone();
            stored.updated_at = self.ctx.now;
            self.nodes.insert(node.id, Arc::new(stored));
            self.saved.push(node.id);
            return Ok(());
        }
        let mut stored = node.clone();
        stored.updated_at = self.ctx.now;
        let text = stored_text(self.ctx, &stored)?;
        records::update_text(
            self.tx,
            TABLE,
            self.ctx.org(),
            node.id,
            node.is_archived,
            &self.ctx.now_text(),
            text,
        )?;
        self.nodes.insert(node.id, Arc::new(stored));
        self.saved.push(node.id);
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn record(org: Uuid, id: Uuid, parent: Option<Uuid>) -> Value {
        json!({"id": id, "organizationId": org, "name": format!("node {id}"), "type": "phase", "parentId": parent,
               "isArchived": false, "createdAt": "2026-01-01T00:00:00Z",
               "updatedAt": "2026-01-01T00:00:00Z"})
    }

    fn rids(tx: &mut dyn Tx) -> Vec<(Option<i64>, Option<i64>)> {
        tx.query(
            &format!(
                "SELECT t.rid, (SELECT d.rowid FROM {TABLE} d WHERE d.organization_id = t.organization_id \
                 AND d.id = t.id) FROM {TREE} t ORDER BY t.path"
            ),
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| (r[0].as_i64(), r[1].as_i64()))
        .collect()
    }

    /// Within a bulk call the new nodes' rows wait, then go in together, each with its
    /// place (path, sibling number) and, on SQLite, its record's rowid; the call knows the
    /// children of the nodes it created until something other than a create touches the tree.
    #[tokio::test]
    async fn a_bulk_calls_new_tree_rows_wait_and_go_in_together() {
        let store = crate::store::Store::open("sqlite::memory:").await.unwrap();
        let org = Uuid::new_v4();
        let (a, b, c, d, e) = (
            Uuid::new_v4(),
            Uuid::new_v4(),
            Uuid::new_v4(),
            Uuid::new_v4(),
            Uuid::new_v4(),
        );
        store
            .write(move |tx| {
                let ctx = test_ctx(org).deferring();
                for (id, parent) in [(a, None), (b, Some(a)), (c, Some(a)), (d, Some(b))] {
                    records::insert(tx, TABLE, org, &record(org, id, parent))?;
                    insert(tx, &ctx, id, parent)?;
                }
                assert!(tree_row(tx, org, a)?.is_none(), "held back until the end");
                let kids = finish_new_rows(tx, &ctx)?.expect("creates only");
                assert_eq!(kids[&a], [b, c]);
                assert_eq!(kids[&b], [d]);
                assert!(kids[&c].is_empty() && kids[&d].is_empty());
                let row = |tx: &mut dyn Tx, id| tree_row(tx, org, id).map(Option::unwrap);
                assert_eq!((row(tx, b)?.sort_key, row(tx, c)?.sort_key), (0, 1));
                assert_eq!(row(tx, d)?.path, format!("{a}/{b}/{d}/"));
                assert_eq!(row(tx, d)?.root_id, a);
                assert!(
                    rids(tx)
                        .iter()
                        .all(|(rid, real)| rid.is_some() && rid == real)
                );

                // A second call: a child of a stored node comes after its stored children; a
                // move (anything but a create) writes what waits and forgets the children.
                let ctx = test_ctx(org).deferring();
                records::insert(tx, TABLE, org, &record(org, e, Some(a)))?;
                insert(tx, &ctx, e, Some(a))?;
                flush_new_rows(tx, &ctx)?;
                assert_eq!(row(tx, e)?.sort_key, 2);
                move_node(tx, org, d, Some(e))?;
                assert_eq!(finish_new_rows(tx, &ctx)?, None);
                assert_eq!(row(tx, d)?.path, format!("{a}/{e}/{d}/"));
                Ok::<_, ApiError>(())
            })
            .await
            .unwrap();
    }

    #[tokio::test]
    async fn tree_reads_survive_a_stale_record_rowid_and_start_up_repairs_it() {
        let store = crate::store::Store::open("sqlite::memory:").await.unwrap();
        let org = Uuid::new_v4();
        let (a, b, c) = (Uuid::new_v4(), Uuid::new_v4(), Uuid::new_v4());
        store
            .write(move |tx| {
                for (id, parent) in [(a, None), (b, Some(a)), (c, Some(b))] {
                    records::insert(tx, TABLE, org, &record(org, id, parent))?;
                    insert_now(tx, org, id, parent)?;
                }
                // Each index row holds its record's rowid.
                assert!(
                    rids(tx)
                        .iter()
                        .all(|(rid, real)| rid.is_some() && rid == real)
                );
                let top = tree_row(tx, org, a)?.unwrap();
                let read = |tx: &mut dyn Tx| -> ApiResult<Vec<(Uuid, Value)>> {
                    let nodes = subtree_index(tx, org, &top)?;
                    let mut got = Vec::new();
                    records_of(tx, org, &nodes, &mut |slot, data, _| {
                        got.push((nodes[slot].id, serde_json::from_slice(data).unwrap()));
                    })?;
                    got.sort_by_key(|g| g.0);
                    Ok(got)
                };
                let fresh = read(tx)?;
                // Stale (as after a VACUUM) and missing rowids.
                tx.execute(
                    &format!("UPDATE {TREE} SET rid = rid + 1000 WHERE id = ?"),
                    &[b.into()],
                )?;
                tx.execute(
                    &format!("UPDATE {TREE} SET rid = NULL WHERE id = ?"),
                    &[c.into()],
                )?;
                // A stale rowid naming another node's record.
                let rid_of_c: i64 = tx.query(
                    &format!("SELECT rowid FROM {TABLE} WHERE id = ?"),
                    &[c.into()],
                )?[0][0]
                    .as_i64()
                    .unwrap();
                tx.execute(
                    &format!("UPDATE {TREE} SET rid = ? WHERE id = ?"),
                    &[rid_of_c.into(), a.into()],
                )?;
                let stale = read(tx)?;
                for got in [&fresh, &stale] {
                    let mut want = vec![(a, None), (b, Some(a)), (c, Some(b))];
                    want.sort_by_key(|w| w.0);
                    assert_eq!(got.len(), 3);
                    for ((id, v), (wid, parent)) in got.iter().zip(&want) {
                        assert_eq!(id, wid);
                        assert_eq!(v["id"], json!(wid));
                        assert_eq!(v["parentId"], json!(parent));
                    }
                }
                let ctx = test_ctx(org);
                let mut store = TxTree::new(tx, &ctx);
                let kids = store.children(a)?;
                assert_eq!(kids.iter().map(|k| k.id).collect::<Vec<_>>(), vec![b]);
                drop(store);
                crate::store::deliverables::backfill_tree(tx)?;
                assert!(
                    rids(tx)
                        .iter()
                        .all(|(rid, real)| rid.is_some() && rid == real)
                );
                Ok::<_, ApiError>(())
            })
            .await
            .unwrap();
    }

    fn sample(org: Uuid) -> Deliverable {
        let mut v = record(org, Uuid::new_v4(), Some(Uuid::new_v4()));
        v["data"] = json!({"dueDate": "2026-03-01", "tags": ["a"]});
        v["progress"] = json!({"status": "wip", "percentage": 40.0, "completed": 4.0});
        let mut d: Deliverable = serde_json::from_value(v).unwrap();
        d.computed.full_name = vec!["root".into(), d.name.clone()];
        d.computed.late_at = Some("2026-03-02T00:00:00.000Z".into());
        d
    }

    /// Each of the fields [`changed_fields`] names, changed on its own.
    fn mutate(d: &mut Deliverable, which: usize, salt: u32) {
        use prodops_core::deliverable::{DeliverableType, ProgressStatus, Schedule};
        let at = chrono::DateTime::from_timestamp(1_700_000_000 + i64::from(salt), 0).unwrap();
        match which {
            0 => d.id = Uuid::new_v4(),
            1 => d.organization_id = Uuid::new_v4(),
            2 => d.identifier = format!("X-{salt}"),
            3 => d.name = format!("renamed {salt}"),
            4 => d.kind = DeliverableType::Stage,
            5 => d.quantity += 1 + i64::from(salt),
            6 => d.parent_id = None,
            7 => d.root_parent_id = Some(Uuid::new_v4()),
            8 => d.origin_template_id = Some(Uuid::new_v4()),
            9 => d.cycle_time_sec += 1,
            10 => d.duration_sec += 60,
            11 => d.people_num += 2,
            12 => {
                d.data.insert("k".into(), json!(salt));
            }
            13 => d.cost_code = Some(format!("C{salt}")),
            14 => {
                d.schedule = Some(Schedule {
                    start_date: at,
                    end_date: at,
                })
            }
            15 => {
                let p = d.progress.get_or_insert_with(Default::default);
                p.status = [
                    ProgressStatus::Done,
                    ProgressStatus::OnHold,
                    ProgressStatus::Todo,
                ][salt as usize % 3];
                p.percentage = f64::from(salt % 100);
            }
            16 => d.computed.is_leaf = !d.computed.is_leaf,
            17 => d.is_archived = !d.is_archived,
            18 => d.created_at = at,
            _ => d.updated_at = at,
        }
    }

    /// The event of a tree write, made from the typed records, is the one the engine's
    /// `events::updated` makes from their JSON: type, changed fields and text. Run by the
    /// composition root's tests (`families.rs`) with the resource table the server is built
    /// with (`families::resources`), whose hooks only that layer may name.
    pub(crate) fn tree_update_event_matches_the_json_one(
        resources: crate::http::context::ResourceTable,
        mask: u32,
        salt: u32,
    ) -> Result<(), proptest::test_runner::TestCaseError> {
        let org = Uuid::new_v4();
        let old = sample(org);
        let mut new = old.clone();
        for which in 0..20 {
            if mask & (1 << which) != 0 {
                mutate(&mut new, which, salt);
            }
        }
        let (old_v, new_v) = (
            serde_json::to_value(&old).unwrap(),
            serde_json::to_value(&new).unwrap(),
        );
        proptest::prop_assert_eq!(
            changed_fields(&old, &new),
            prodops_core::event::changed_fields(&old_v, &new_v)
        );
        proptest::prop_assert_eq!(serde_json::to_string(&new).unwrap(), new_v.to_string());
        let ctx = test_ctx_with(resources, org);
        record_update_event(&ctx, &old, &new).unwrap();
        let res = ctx.resource(ResourceId::Deliverable);
        crate::engine::events::updated(&ctx, res, &old_v, &new_v);
        let mut events = ctx.take_events();
        proptest::prop_assert_eq!(events.len(), 2);
        let b = events.pop().unwrap();
        let a = events.pop().unwrap();
        proptest::prop_assert_eq!(a, b);
        Ok(())
    }

    fn test_ctx(org: Uuid) -> Ctx {
        let resources = std::sync::Arc::new(crate::engine::Resources::without_hooks());
        test_ctx_with(resources, org)
    }

    fn test_ctx_with(resources: crate::http::context::ResourceTable, org: Uuid) -> Ctx {
        Ctx::new(
            resources,
            crate::http::context::Auth {
                key_id: Uuid::new_v4(),
                org,
                admin: true,
                permissions: Default::default(),
                flags: Default::default(),
            },
            None,
        )
    }

    #[test]
    fn stored_text_is_the_json_with_the_request_time() {
        let org = Uuid::new_v4();
        for now in [
            "2026-11-25T05:00:00.123Z",
            "2026-11-25T05:00:00Z",
            "2026-11-25T05:00:00.100Z",
        ] {
            let ctx = test_ctx(org).at(chrono::DateTime::parse_from_rfc3339(now).unwrap().to_utc());
            let mut d = sample(org);
            d.updated_at = ctx.now;
            let mut v = serde_json::to_value(&d).unwrap();
            v["updatedAt"] = json!(ctx.now_text());
            assert_eq!(stored_text(&ctx, &d).unwrap(), v.to_string(), "{now}");
        }
    }

    #[test]
    fn subtree_range_covers_exactly_the_descendants() {
        let top = "aaaa/bbbb/";
        let upper = path_upper(top);
        assert_eq!(upper, "aaaa/bbbb0");
        for inside in ["aaaa/bbbb/", "aaaa/bbbb/cccc/", "aaaa/bbbb/ffff/0000/"] {
            assert!(inside >= top && inside < upper.as_str(), "{inside}");
        }
        for outside in [
            "aaaa/",
            "aaaa/bbba/",
            "aaaa/bbbc/",
            "aaaa/bbbbb/",
            "aaaa/bbbb0/",
        ] {
            assert!(!(outside >= top && outside < upper.as_str()), "{outside}");
        }
    }
}
