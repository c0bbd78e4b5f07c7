//! Resource-specific rules that need the database, plugged into the engine's write pipeline.
//! The rules themselves live in `prodops-core`; a hook reads the facts they need and applies
//! the decision.

use std::sync::Arc;

use prodops_core::registry::ResourceId;
use prodops_core::worker;
use serde_json::{Map, Value, json};

use crate::app::AppState;
use crate::context::{Action, Auth, Ctx};
use crate::engine::ServedResource;
use crate::error::ApiResult;
use crate::store::Tx;
use crate::store::records::{self, Select};
use crate::store::sql::Cond;

/// Points in the engine's pipeline where a resource adds its own rules. Every method defaults
/// to doing nothing.
#[allow(unused_variables)]
pub trait Hooks: Send + Sync {
    /// Before a new record is checked: fill server-generated fields.
    fn before_create(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// Before a changed record is checked: state transitions that rewrite other fields.
    fn before_update(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        old: &Value,
        patch: &Map<String, Value>,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// After the record passed its own rules and before it is written: rules needing other records.
    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// After the record was written, in the same transaction.
    fn after_write(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        Ok(())
    }

    /// After every record of a bulk PUT, PATCH or DELETE was written, in the same transaction:
    /// work the hooks put off while the call ran (`ctx.deferred`), done once for the batch.
    fn end_bulk(&self, tx: &mut dyn Tx, ctx: &Ctx, res: &ServedResource) -> ApiResult<()> {
        Ok(())
    }

    /// Before a DELETE archives or removes the record. `Handled` means the hook did what DELETE
    /// means for this record itself (deactivating a catalog entry that history references, ...).
    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        Ok(DeleteAction::Proceed)
    }

    /// Whether a bulk PUT may work per batch on this resource: look the batch's ids up at
    /// once, and check and store its plain creates (see [`Hooks::plain_create`]) together in
    /// multi-row inserts. Answering true promises that no hook of the resource writes a record
    /// of its own table other than the one being written, so ids looked up at the start of
    /// the batch stay true for every row the batch does not write itself.
    fn batch_creates(&self) -> bool {
        false
    }

    /// Whether creating this candidate (built, not yet checked; `field` reads its top-level
    /// fields) needs none of `before_create`, `check_facts` and `after_write`: then a bulk PUT
    /// only checks it with the resource's rules and stores it. Only asked when
    /// [`Hooks::batch_creates`] is true.
    fn plain_create(&self, field: &dyn Fn(&str) -> Option<Value>) -> bool {
        let _ = field;
        false
    }

    /// Whether `before_update` fills fields of the record from other records (a name or unit
    /// taken from the item when left empty, ...): then a PATCH body's fields cannot be judged
    /// by the record's rules before a record is read (`engine::pipeline::check_patch_body`).
    fn fills_on_update(&self) -> bool {
        false
    }

    /// The permission check of a standard call; by default the resource's
    /// `<Permission>.<Action>` (decisions.md section 2).
    fn authorize(&self, auth: &Auth, res: &ServedResource, action: Action) -> ApiResult<()> {
        auth.require(res.desc().permission, action)
    }

    /// Whether answers rewrite stored records (generated links, derived fields).
    fn presents(&self) -> bool {
        false
    }

    /// Rewrites a stored record for an answer (read or write); only called when `presents`.
    fn present(
        &self,
        state: &AppState,
        tx: &mut dyn Tx,
        auth: &Auth,
        record: &mut Value,
    ) -> ApiResult<()> {
        Ok(())
    }
}

/// Rewrites stored JSON texts for an answer through `present`.
pub fn present_raw(
    res: &ServedResource,
    state: &AppState,
    tx: &mut dyn Tx,
    auth: &Auth,
    values: &mut [String],
) -> ApiResult<()> {
    if !res.hooks.presents() {
        return Ok(());
    }
    for text in values.iter_mut() {
        let mut record: Value =
            serde_json::from_str(text).map_err(crate::error::ApiError::internal)?;
        res.hooks.present(state, tx, auth, &mut record)?;
        *text = record.to_string();
    }
    Ok(())
}

/// What a DELETE goes on to do after `before_delete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteAction {
    /// Archive or remove the record, as the resource's description says.
    Proceed,
    /// The hook has done it.
    Handled,
}

struct NoHooks;
impl Hooks for NoHooks {
    fn batch_creates(&self) -> bool {
        true
    }

    fn plain_create(&self, _field: &dyn Fn(&str) -> Option<Value>) -> bool {
        true
    }
}

/// The hooks of the resource `id`.
pub fn for_resource(id: ResourceId) -> Arc<dyn Hooks> {
    bound(id).0
}

/// The hooks of the resource `id`, with the name of their type (which the test of this
/// binding reads). No wildcard arm: a new resource does not compile until it is given its
/// hooks here, `NoHooks` included.
fn bound(id: ResourceId) -> (Arc<dyn Hooks>, &'static str) {
    use crate::{deliverables, deliveries, documents, inventory, members, notifications};
    use crate::{production, qc};
    match id {
        ResourceId::Worker => bind(WorkerHooks),
        ResourceId::CatalogEntry => bind(CatalogHooks),
        ResourceId::Deliverable => bind(deliverables::hooks::DeliverableHooks { concept: false }),
        ResourceId::Dependency => bind(deliverables::hooks::DependencyHooks),
        ResourceId::WorkSession => bind(deliverables::hooks::WorkSessionHooks),
        ResourceId::Document => bind(documents::DocumentHooks),
        ResourceId::DocumentVersion => bind(documents::VersionHooks),
        ResourceId::QcTemplate => bind(qc::QcTemplateHooks),
        ResourceId::QcSet => bind(qc::QcSetHooks),
        ResourceId::OrganizationMember => bind(members::MemberHooks),
        ResourceId::Comment => bind(notifications::CommentHooks),
        ResourceId::Delivery => bind(deliveries::DeliveryHooks),
        ResourceId::DeliveryManifestLine => bind(deliveries::ManifestHooks),
        ResourceId::InventoryTransaction => bind(inventory::LedgerHooks),
        ResourceId::ProductionOutput | ResourceId::BomLine => bind(production::PlanHooks),
        ResourceId::Vendor
        | ResourceId::Contact
        | ResourceId::CustomProperty
        | ResourceId::DeliveryStop
        | ResourceId::DeliveryLeg
        | ResourceId::DeliveryCargoSpan
        | ResourceId::Role
        | ResourceId::Notification
        | ResourceId::Item
        | ResourceId::Location
        | ResourceId::Shop
        | ResourceId::Stage
        | ResourceId::UnitMeasure
        | ResourceId::Team
        | ResourceId::Project
        | ResourceId::Code
        | ResourceId::Note
        | ResourceId::Timesheet => bind(NoHooks),
    }
}

fn bind<H: Hooks + 'static>(hooks: H) -> (Arc<dyn Hooks>, &'static str) {
    (Arc::new(hooks), std::any::type_name::<H>())
}

fn str_field<'a>(v: &'a Map<String, Value>, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Whether a record of `table` other than `except` has `field == value`, among active records
/// only when `active_only`.
fn taken(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    table: &str,
    field: &str,
    value: &str,
    except: &str,
    active_only: bool,
) -> ApiResult<bool> {
    let mut conds = vec![Cond::field_equals(field, value)];
    if active_only {
        conds.push(Cond::Archived(false));
    }
    let select = Select {
        conds,
        limit: 2,
        ..Default::default()
    };
    let found = records::select_values(tx, table, ctx.org(), &select)?;
    Ok(found
        .iter()
        .any(|r| r.get("id").and_then(Value::as_str) != Some(except)))
}

/// Workers (spec 3.3): archive suffixes, restore naming, the end of open work on archive.
struct WorkerHooks;

impl Hooks for WorkerHooks {
    // The hooks write the worker itself and work sessions (ending open work on archive).
    fn batch_creates(&self) -> bool {
        true
    }

    /// A worker created archived ends its open work (`after_write`); any other create is plain.
    fn plain_create(&self, field: &dyn Fn(&str) -> Option<Value>) -> bool {
        field("isArchived") != Some(Value::Bool(true))
    }

    fn before_update(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        old: &Value,
        patch: &Map<String, Value>,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        let was_archived = old
            .get("isArchived")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let archived = candidate
            .get("isArchived")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let id = str_field(candidate, "id").to_string();
        let table = res.table();
        if was_archived != archived {
            // Choosing a free name reads, then writes: two archives or restores at once on
            // PostgreSQL (READ COMMITTED) could otherwise both choose the same name.
            crate::store::lock_scope(tx, &format!("worker-names:{}", ctx.org()))?;
        }
        if !was_archived && archived {
            let name = str_field(candidate, "name").trim().to_string();
            let (archived_name, n) = worker::archived_name(&name, |candidate_name| {
                taken(tx, ctx, table, "name", candidate_name, &id, false)
            })?;
            candidate.insert("name".into(), json!(archived_name));
            let identifier = str_field(candidate, "customerIdentifier")
                .trim()
                .to_string();
            if !identifier.is_empty() {
                candidate.insert(
                    "customerIdentifier".into(),
                    json!(format!("{identifier}{}", worker::archive_suffix(n))),
                );
            }
            candidate.insert("teamId".into(), Value::Null);
        } else if was_archived && !archived {
            let old_name = old.get("name").and_then(Value::as_str).unwrap_or("");
            // A restore may rename in the same call; otherwise the suffix comes off.
            let base = match patch.get("name").and_then(Value::as_str) {
                Some(new_name) if new_name != old_name => new_name.trim().to_string(),
                _ => worker::strip_archive_suffix(old_name).to_string(),
            };
            let restored = worker::restored_name(&base, |candidate_name| {
                taken(tx, ctx, table, "name", candidate_name, &id, true)
            })?;
            candidate.insert("name".into(), json!(restored));
            let identifier = str_field(candidate, "customerIdentifier").to_string();
            candidate.insert(
                "customerIdentifier".into(),
                json!(worker::strip_archive_suffix(&identifier)),
            );
        }
        Ok(())
    }

    fn after_write(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let was_archived = old
            .and_then(|o| o.get("isArchived"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let archived = new
            .get("isArchived")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if !was_archived && archived {
            let id = new.get("id").and_then(Value::as_str).unwrap_or("");
            end_open_work(tx, ctx, id)?;
        }
        Ok(())
    }
}

/// Ends a worker's open work sessions and removes their open plans (spec 3.3).
fn end_open_work(tx: &mut dyn Tx, ctx: &Ctx, worker_id: &str) -> ApiResult<()> {
    let Some(kind) = prodops_core::registry::by_path("deliverable/work-sessions") else {
        return Ok(());
    };
    let table = kind.desc().table;
    let select = Select {
        conds: vec![
            Cond::field_equals("workerId", worker_id),
            Cond::field_equals("endDate", "null"),
        ],
        limit: 100_000,
        ..Default::default()
    };
    let mut deliverables = Vec::new();
    for mut session in records::select_values(tx, table, ctx.org(), &select)? {
        session["endDate"] = json!(ctx.now_text());
        session["updatedAt"] = json!(ctx.now_text());
        records::update(tx, table, ctx.org(), &session)?;
        if let Some(d) = session
            .get("deliverableId")
            .and_then(Value::as_str)
            .and_then(|s| uuid::Uuid::parse_str(s).ok())
        {
            deliverables.push(d);
        }
    }
    // The deliverables' computed workers follow.
    crate::deliverables::hooks::sessions_changed(tx, ctx, &deliverables)
}

/// Catalog entries (spec 2.8): a code rename queues the durable job that rewrites references;
/// an entry that history references is deactivated rather than deleted.
struct CatalogHooks;

impl Hooks for CatalogHooks {
    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        let catalog = record.get("catalog").and_then(Value::as_str).unwrap_or("");
        let code = record.get("code").and_then(Value::as_str).unwrap_or("");
        let referenced = crate::jobs::code_references(tx, ctx.org(), catalog, code, 1)?
            .is_some_and(|(_, found)| !found.is_empty());
        if !referenced {
            return Ok(DeleteAction::Proceed);
        }
        let mut patch = Map::new();
        patch.insert("isActive".into(), Value::Bool(false));
        crate::engine::update_record(tx, ctx, res, record, patch)?;
        Ok(DeleteAction::Handled)
    }

    fn after_write(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let Some(old) = old else { return Ok(()) };
        let old_code = old.get("code").and_then(Value::as_str).unwrap_or("");
        let new_code = new.get("code").and_then(Value::as_str).unwrap_or("");
        if old_code != new_code {
            let payload = crate::jobs::CodeRename {
                catalog: new
                    .get("catalog")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                old_code: old_code.to_string(),
                new_code: new_code.to_string(),
            };
            crate::jobs::enqueue(tx, ctx, crate::jobs::CATALOG_CODE_RENAME, &json!(payload))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::any::type_name;
    use std::collections::BTreeMap;

    use prodops_core::registry;

    use super::*;
    use crate::{deliverables, deliveries, documents, inventory, members, notifications};
    use crate::{production, qc};

    /// Every registered resource gets the hooks it is served with, by path: the resources with
    /// hooks of their own are exactly these, every other one has `NoHooks`.
    #[test]
    fn every_resource_gets_its_hooks() {
        let expected: BTreeMap<&str, &str> = [
            ("worker", type_name::<WorkerHooks>()),
            ("catalog-entry", type_name::<CatalogHooks>()),
            (
                "deliverable",
                type_name::<deliverables::hooks::DeliverableHooks>(),
            ),
            (
                "dependency",
                type_name::<deliverables::hooks::DependencyHooks>(),
            ),
            (
                "deliverable/work-sessions",
                type_name::<deliverables::hooks::WorkSessionHooks>(),
            ),
            ("document", type_name::<documents::DocumentHooks>()),
            ("document-version", type_name::<documents::VersionHooks>()),
            ("qc-template", type_name::<qc::QcTemplateHooks>()),
            ("qc-set", type_name::<qc::QcSetHooks>()),
            ("organization-member", type_name::<members::MemberHooks>()),
            ("comment", type_name::<notifications::CommentHooks>()),
            ("delivery", type_name::<deliveries::DeliveryHooks>()),
            (
                "delivery-manifest-line",
                type_name::<deliveries::ManifestHooks>(),
            ),
            (
                "inventory-transaction",
                type_name::<inventory::LedgerHooks>(),
            ),
            ("production-output", type_name::<production::PlanHooks>()),
            ("bom-line", type_name::<production::PlanHooks>()),
        ]
        .into();

        let mut with_hooks = BTreeMap::new();
        for kind in registry::resources() {
            let path = kind.desc().path;
            let id = ResourceId::of(*kind).unwrap_or_else(|| panic!("/{path} has no id"));
            let (_, hooks) = bound(id);
            if hooks != type_name::<NoHooks>() {
                with_hooks.insert(path, hooks);
            }
        }
        assert_eq!(with_hooks, expected);
    }
}
