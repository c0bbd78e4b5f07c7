//! The write hooks of deliverables (raw and concept endpoints) and dependencies.
//!
//! Every write of a deliverable, whatever the endpoint (POST, PATCH, bulk PUT and PATCH,
//! DELETE's archive, the actions), passes here: `data` merges, custom property values are
//! checked and canonicalized (spec 4.9), the parent is checked, the record's computed fields
//! and `rootParentId` are derived before it is written, and afterwards the tree index and the
//! computed fields of the rest of the tree are brought up to date (core's `tree::refresh`).

use prodops_core::registry::ResourceId;
use std::collections::HashMap;
use std::sync::Arc;

use prodops_core::custom_property::CustomPropertyDefinition;
use prodops_core::deliverable::{Deliverable, DeliverableType};
use prodops_core::tree::{self, Change, TreeStore};
use prodops_core::{Record, properties};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::tree::{ReadAhead, TABLE, TxTree, parse_deliverable};
use crate::engine::ServedResource;
use crate::engine::hooks::Hooks;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::store::Tx;
use crate::store::records::{self, Select};

/// Every custom property definition of the organization, archived ones included (they keep
/// validating existing values, spec 3.5).
fn custom_property_defs(tx: &mut dyn Tx, ctx: &Ctx) -> ApiResult<Vec<CustomPropertyDefinition>> {
    let select = Select {
        limit: 100_000,
        ..Default::default()
    };
    records::select_values(
        tx,
        ResourceId::CustomProperty.kind().desc().table,
        ctx.org(),
        &select,
    )?
    .into_iter()
    .map(|v| serde_json::from_value(v).map_err(ApiError::internal))
    .collect()
}

/// Deliverable hooks; `concept` enforces the concept rules (the `/concept/{type}` endpoints).
pub struct DeliverableHooks {
    pub concept: bool,
}

/// What a bulk write of deliverables keeps until its end (`ctx.deferred`): the writes whose
/// tree refresh waits for the end, and what its rows keep reading (their parents, the custom
/// property definitions), each read once per call.
#[derive(Default)]
struct BulkState {
    batch: tree::Batch,
    /// Deliverables read as parents, as this call last wrote or read them.
    records: HashMap<Uuid, Arc<Deliverable>>,
    /// The organization's custom property definitions (dropped when a write changes one).
    defs: Option<Arc<Vec<CustomPropertyDefinition>>>,
    /// What the call read ahead for the records it writes (`read_ahead`).
    ahead: ReadAhead,
    /// Updated nodes whose readiness the call may have moved (`readiness::readiness_moved`):
    /// their successors (and they themselves) are re-evaluated at its end.
    moved: Vec<Uuid>,
}

/// The organization's custom property definitions, read once per bulk call.
fn definitions(tx: &mut dyn Tx, ctx: &Ctx) -> ApiResult<Arc<Vec<CustomPropertyDefinition>>> {
    let Some(deferred) = &ctx.deferred else {
        return Ok(Arc::new(custom_property_defs(tx, ctx)?));
    };
    if let Some(defs) = deferred.with(|s: &mut BulkState| s.defs.clone()) {
        return Ok(defs);
    }
    let defs = Arc::new(custom_property_defs(tx, ctx)?);
    deferred.with(|s: &mut BulkState| s.defs = Some(defs.clone()));
    Ok(defs)
}

fn kind_of(candidate: &Map<String, Value>) -> Option<DeliverableType> {
    candidate
        .get("type")
        .and_then(|t| serde_json::from_value(t.clone()).ok())
}

fn uuid_field(candidate: &Map<String, Value>, key: &str) -> Option<Uuid> {
    candidate
        .get(key)
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}

/// Checks and canonicalizes the `properties` a write supplies; appends ad-hoc options.
fn write_properties(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    kind: DeliverableType,
    old: Option<&Map<String, Value>>,
    supplied: Option<&Value>,
    data: &mut Map<String, Value>,
) -> ApiResult<()> {
    if supplied.is_none() {
        return Ok(());
    }
    let defs = definitions(tx, ctx)?;
    let out =
        properties::apply_properties(kind, old, supplied, &defs).map_err(ApiError::violations)?;
    if !out.new_options.is_empty()
        && let Some(deferred) = &ctx.deferred
    {
        deferred.with(|s: &mut BulkState| s.defs = None);
    }
    if out.values.is_empty() {
        data.remove("properties");
    } else {
        data.insert("properties".into(), Value::Object(out.values));
    }
    // Ad-hoc options join their definitions in this transaction.
    let cp = ctx.resource(ResourceId::CustomProperty);
    for (i, option) in out.new_options {
        let def = &defs[i];
        let stored =
            records::get(tx, cp.table(), ctx.org(), def.id)?.ok_or_else(ApiError::not_found)?;
        let before: CustomPropertyDefinition = read_stored(&stored)?;
        let known = before
            .options
            .iter()
            .any(|o| o.to_lowercase() == option.to_lowercase());
        if !known {
            let mut after = before.clone();
            after.options.push(option);
            crate::engine::apply_typed_change(tx, ctx, cp, &stored, &before, &after)?;
        }
    }
    Ok(())
}

/// Derives the computed fields and `rootParentId` of a candidate record in place. A candidate
/// that does not parse is left for the rules to report.
fn prepare_candidate(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    candidate: &mut Map<String, Value>,
    parent: Option<&Deliverable>,
    existing: bool,
) -> ApiResult<()> {
    let Ok(mut node) = serde_json::from_value::<Deliverable>(Value::Object(candidate.clone()))
    else {
        return Ok(());
    };
    node.normalize();
    let mut store = TxTree::new(tx, ctx);
    if let Some(deferred) = &ctx.deferred {
        deferred.with(|s: &mut BulkState| store.seed(&s.ahead, &node, &s.records));
    }
    let children = if existing {
        store.children(node.id)?
    } else {
        // Not stored yet: no children, and its session workers are read by the refresh that
        // follows its write (`after_write`, or `end_bulk` for a bulk call), which recomputes
        // it. Reading them here too cost a bulk create a round trip per record.
        store.assume_new(node.id);
        Vec::new()
    };
    let refs: Vec<&Deliverable> = children.iter().map(|c| &**c).collect();
    let now = store.now();
    tree::prepare(&mut store, &mut node, parent, &refs, now)?;
    candidate.insert(
        "computed".into(),
        serde_json::to_value(&node.computed).map_err(ApiError::internal)?,
    );
    candidate.insert("rootParentId".into(), json!(node.root_parent_id));
    Ok(())
}

/// The parent a write names (400 when it does not exist); within a bulk call, each parent is
/// read once (and kept as the call writes it).
fn load_parent(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    id: Option<Uuid>,
) -> ApiResult<Option<Arc<Deliverable>>> {
    let Some(id) = id else {
        return Ok(None);
    };
    if let Some(deferred) = &ctx.deferred
        && let Some(known) = deferred.with(|s: &mut BulkState| s.records.get(&id).cloned())
    {
        return Ok(Some(known));
    }
    let parent = match records::get(tx, TABLE, ctx.org(), id)? {
        Some(v) => Arc::new(parse_deliverable(&v)?),
        None => {
            return Err(ApiError::field(
                "parentId",
                format!("no deliverable {id} in this organization"),
            ));
        }
    };
    if let Some(deferred) = &ctx.deferred {
        deferred.with(|s: &mut BulkState| s.records.insert(id, parent.clone()));
    }
    Ok(Some(parent))
}

/// The `parentId` of a candidate: `Ok(None)` for null or absent; malformed values are left for
/// the rules to report.
fn parent_id(candidate: &Map<String, Value>) -> Option<Uuid> {
    uuid_field(candidate, "parentId")
}

impl Hooks for DeliverableHooks {
    /// A bulk PUT looks its ids up per batch. No hook writes another deliverable before the
    /// call's end: the tree refresh of a bulk write waits for `end_bulk`.
    fn batch_creates(&self) -> bool {
        true
    }

    /// Within a bulk call, a create's hooks read the deliverables the call created through
    /// `BulkState` (parents) and `tree::NewRows` (tree rows), and `after_write` only adds the
    /// node's tree row to those held back and notes the write for the refresh at the end.
    fn hold_hooked_creates(&self) -> bool {
        true
    }

    /// Reads ahead, for every stored record the call updates, what `before_update` reads for
    /// it (its children, session workers, parent and stage's shop), and the shops of the
    /// stages the call's new stage nodes name; keeps the parents as the call found them.
    fn read_ahead(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        stored: &[&str],
        created: &[&str],
    ) -> ApiResult<()> {
        let Some(deferred) = &ctx.deferred else {
            return Ok(());
        };
        /// The fields of a record the read-ahead needs.
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Refs {
            id: Option<Uuid>,
            parent_id: Option<Uuid>,
            #[serde(rename = "type")]
            kind: Option<DeliverableType>,
            data: Option<Map<String, Value>>,
        }
        impl Refs {
            fn stage(&self) -> Option<Uuid> {
                if self.kind != Some(DeliverableType::Stage) {
                    return None;
                }
                self.data
                    .as_ref()?
                    .get("stageId")?
                    .as_str()
                    .and_then(|s| Uuid::parse_str(s).ok())
            }
        }
        let mut seen = std::collections::HashSet::new();
        let (mut ids, mut parents, mut stages) = (Vec::new(), Vec::new(), Vec::new());
        // A record that does not read so is left to its write, which reports it.
        let read = |text: &&str| serde_json::from_str::<Refs>(text).ok();
        for refs in stored.iter().filter_map(read) {
            let Some(id) = refs.id.filter(|id| seen.insert(*id)) else {
                continue;
            };
            ids.push(id);
            parents.extend(refs.parent_id);
            stages.extend(refs.stage());
        }
        stages.extend(created.iter().filter_map(read).filter_map(|r| r.stage()));
        parents.sort();
        parents.dedup();
        stages.sort();
        stages.dedup();
        let ahead = ReadAhead::read(tx, ctx, &ids, &parents, &stages)?;
        deferred.with(|s: &mut BulkState| {
            for parent in &parents {
                if let Some(node) = ahead.node(*parent) {
                    s.records.entry(*parent).or_insert_with(|| node.clone());
                }
            }
            s.ahead = ahead;
        });
        Ok(())
    }

    fn before_create(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        super::identifiers::on_create(tx, ctx, candidate)?;
        if let (Some(kind), Some(Value::Object(data))) = (kind_of(candidate), candidate.get("data"))
        {
            let mut data = data.clone();
            let supplied = data.get("properties").cloned();
            write_properties(tx, ctx, kind, None, supplied.as_ref(), &mut data)?;
            candidate.insert("data".into(), Value::Object(data));
        }
        let parent = load_parent(tx, ctx, parent_id(candidate))?;
        prepare_candidate(tx, ctx, candidate, parent.as_deref(), false)
    }

    fn before_update(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: &Value,
        patch: &Map<String, Value>,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        // What follows may read the tree (a move, the record's children).
        super::tree::flush_new_rows(tx, ctx)?;
        let old_data = old
            .get("data")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        match patch.get("data") {
            // `data` merges key by key; a key set to null is removed; `properties` follows 4.9.
            Some(Value::Object(given)) => {
                let mut data = old_data.clone();
                for (k, v) in given {
                    if k == "properties" {
                        continue;
                    }
                    if v.is_null() {
                        data.remove(k);
                    } else {
                        data.insert(k.clone(), v.clone());
                    }
                }
                if let Some(kind) = kind_of(candidate) {
                    let old_props = old_data.get("properties").and_then(Value::as_object);
                    write_properties(tx, ctx, kind, old_props, given.get("properties"), &mut data)?;
                } else if let Some(p) = given.get("properties") {
                    data.insert("properties".into(), p.clone());
                }
                candidate.insert("data".into(), Value::Object(data));
            }
            Some(Value::Null) => {
                candidate.insert("data".into(), Value::Object(old_data));
            }
            _ => {}
        }
        super::identifiers::on_update(tx, ctx, old, candidate)?;
        let id = uuid_field(candidate, "id");
        let new_parent = parent_id(candidate);
        let old_parent = old
            .get("parentId")
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok());
        let parent = load_parent(tx, ctx, new_parent)?;
        // The tree index, not the parent's breadcrumbs: within a bulk write those may wait for
        // the batch's end, the index never does.
        if new_parent != old_parent
            && let (Some(p), Some(id)) = (new_parent, id)
            && (p == id || under(tx, ctx, p, id)?)
        {
            return Err(ApiError::field(
                "parentId",
                "a deliverable cannot be moved under itself or one of its descendants",
            ));
        }
        prepare_candidate(tx, ctx, candidate, parent.as_deref(), true)
    }

    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        // A write that makes a qcstep done (a raw PATCH or bulk write of `progress`) passes its
        // QC gate, as the progress actions do.
        let done =
            |v: &Value| v.pointer("/progress/status").and_then(Value::as_str) == Some("done");
        if new.get("type").and_then(Value::as_str) == Some("qcstep")
            && done(new)
            && !old.is_some_and(|o| done(o) && o.get("type") == new.get("type"))
        {
            // The gate reads QC templates and sets, not the tree: a bulk call's waiting tree
            // rows (and records) stay where they are.
            super::qc_gate::check_gate(tx, ctx, &parse_deliverable(new)?)?;
        }
        if !self.concept {
            return Ok(());
        }
        let mut node = parse_deliverable(new)?;
        if let Some(old) = old {
            // Progress and schedule written by the actions are kept on a resave.
            let old = parse_deliverable(old)?;
            if node.progress == old.progress {
                node.progress = None;
            }
            if node.schedule == old.schedule {
                node.schedule = None;
            }
        }
        let parent = load_parent(tx, ctx, node.parent_id)?;
        let mut violations = node.concept_violations(parent.as_ref().map(|p| p.kind));
        if node.kind == DeliverableType::Stage
            && let Some(stage) = tree::data_uuid(&node, "stageId")
            && records::get(tx, "stage", ctx.org(), stage)?.is_none()
        {
            violations.push(prodops_core::Violation::field(
                "data.stageId",
                format!("no stage {stage} in this organization"),
            ));
        }
        if violations.is_empty() {
            Ok(())
        } else {
            Err(ApiError::violations(violations))
        }
    }

    fn after_write(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let node = parse_deliverable(new)?;
        let old = old.map(parse_deliverable).transpose()?;
        let moved = old
            .as_ref()
            .is_some_and(|o| super::readiness::readiness_moved(o, &node));
        match &old {
            None => super::tree::insert(tx, ctx, node.id, node.parent_id)?,
            Some(o) if o.parent_id != node.parent_id => {
                super::tree::flush_new_rows(tx, ctx)?;
                super::tree::move_node(tx, ctx.org(), node.id, node.parent_id)?
            }
            Some(_) => {}
        }
        if let Some(deferred) = &ctx.deferred {
            // A bulk write: the rest of the tree is refreshed once at its end (`end_bulk`).
            deferred.with(|s: &mut BulkState| {
                // A child list read ahead no longer holds once a node joins or leaves it.
                let joined = old.as_ref().is_none_or(|o| o.parent_id != node.parent_id);
                if joined {
                    for parent in [old.as_ref().and_then(|o| o.parent_id), node.parent_id]
                        .into_iter()
                        .flatten()
                    {
                        s.ahead.forget_children(parent);
                    }
                }
                s.batch.note(old.as_ref(), &node);
                if moved {
                    s.moved.push(node.id);
                }
                s.records.insert(node.id, Arc::new(node));
            });
            return Ok(());
        }
        let id = node.id;
        let mut store = TxTree::new(tx, ctx);
        let now = store.now();
        tree::refresh(&mut store, &[Change { id, old }], now)?;
        if moved {
            super::readiness::writes_changed(tx, ctx, &[id])?;
        }
        Ok(())
    }

    fn end_bulk(&self, tx: &mut dyn Tx, ctx: &Ctx, _res: &ServedResource) -> ApiResult<()> {
        let new_kids = super::tree::finish_new_rows(tx, ctx)?;
        super::identifiers::end_bulk(tx, ctx)?;
        let Some(state) = ctx.deferred.as_ref().and_then(|d| d.take::<BulkState>()) else {
            return Ok(());
        };
        if state.batch.is_empty() {
            return Ok(());
        }
        // Each record changed by the refresh is written once, at the end.
        let mut store = TxTree::deferred(tx, ctx);
        store.seed_shops(&state.ahead);
        if let Some(kids) = new_kids {
            store.know_new_nodes(kids, &state.records);
        }
        let now = store.now();
        tree::refresh_batch(&mut store, &state.batch, now)?;
        store.flush()?;
        super::readiness::writes_changed(tx, ctx, &state.moved)
    }
}

/// Whether `node` is `ancestor` or one of its descendants, by the tree index.
fn under(tx: &mut dyn Tx, ctx: &Ctx, node: Uuid, ancestor: Uuid) -> ApiResult<bool> {
    let ancestor = ancestor.to_string();
    Ok(super::tree::tree_row(tx, ctx.org(), node)?
        .is_some_and(|row| row.path.split('/').any(|seg| seg == ancestor)))
}

/// Recomputes the deliverables whose work sessions or plans changed (their `workerIds`, and the
/// combined workers above them).
pub fn sessions_changed(tx: &mut dyn Tx, ctx: &Ctx, deliverables: &[Uuid]) -> ApiResult<()> {
    let mut ids: Vec<Uuid> = deliverables.to_vec();
    ids.sort();
    ids.dedup();
    let mut store = TxTree::new(tx, ctx);
    let mut changes = Vec::new();
    for id in ids {
        // A session may name a deliverable that does not exist (the resource does not check).
        if records::get(store.tx, TABLE, ctx.org(), id)?.is_some() {
            let old = store.node(id)?;
            changes.push(Change { id, old: Some(old) });
        }
    }
    let now = store.now();
    tree::refresh(&mut store, &changes, now)?;
    Ok(())
}

/// Work sessions: a session or plan that starts, ends, moves or disappears changes its
/// deliverable's `computed.workerIds`; a stopped session's days are rolled up into timesheets
/// again (`timesheets`).
pub struct WorkSessionHooks;

fn session_deliverable(v: &Value) -> Option<Uuid> {
    v.get("deliverableId")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}

impl Hooks for WorkSessionHooks {
    fn after_write(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let ids: Vec<Uuid> = old
            .and_then(session_deliverable)
            .into_iter()
            .chain(session_deliverable(new))
            .collect();
        sessions_changed(tx, ctx, &ids)?;
        super::timesheets::session_changed(tx, ctx, old, Some(new))
    }

    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        record: &Value,
    ) -> ApiResult<crate::engine::hooks::DeleteAction> {
        if let Some(id) = record
            .get("id")
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
            && records::delete(tx, res.table(), ctx.org(), id)?
        {
            crate::engine::events::deleted(ctx, res, record);
        }
        let ids: Vec<Uuid> = session_deliverable(record).into_iter().collect();
        sessions_changed(tx, ctx, &ids)?;
        super::timesheets::session_changed(tx, ctx, Some(record), None)?;
        Ok(crate::engine::hooks::DeleteAction::Handled)
    }
}
