//! QC template versions and QC sets (spec 2.11, 4.10).
//!
//! - `POST /qc-template` is refused (405); versions are published with
//!   `POST /qc-template/versions` (a new template when `qcTemplateId` is omitted, else the next
//!   version number of that template).
//! - `PATCH /qc-template/{id}` is accepted (a JSON object, `QcTemplate.Update`) and writes
//!   nothing: it answers the stored version.
//! - `DELETE /qc-template/{id}` removes the version for good, 409 while a QC set references it.
//! - Publishing while a template's highest version is a draft edits that draft in place;
//!   `isDraft: false` finalizes it.
//! - A QC set must reference an existing, finalized version and an existing deliverable (of the
//!   qcstep's template when the deliverable is a qcstep); its answers and verdict are checked
//!   against the version (`prodops_core::qc::check_set_against`); `verdictAt`/`verdictById`
//!   are stamped when the verdict changes; a newly failing verdict sends the deliverable (and a
//!   qcstep's stage) to rework in the same transaction.
//! - The QC gate a qcstep passes before it becomes done is `deliverables::qc_gate`.

use prodops_core::api;
use prodops_core::registry::ResourceId;

use prodops_core::deliverable::{Deliverable, DeliverableType};
use prodops_core::progress::ProgressAction;
use prodops_core::qc::{
    Publish, QcSet, QcTemplateVersion, QcTemplateVersionCreate, SetVerdict, check_set_against,
    newly_failed, plan_publish, rework_needed, rework_targets, stamp_verdict,
};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::deliverables::qc_gate::{
    Counting, SetFacts, counted_sets, gate_scope, verdict, verdict_of, versions_of,
};
use crate::engine::hooks::{DeleteAction, Hooks};
use crate::engine::{ServedResource, apply_server_change, create_server_typed, record_body};
use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::http::typed::{Answered, Shaped};
use crate::store::records;
use crate::store::sql::Cond;
use crate::store::{Tx, lock_scope};

// The handlers of this family's declared actions (`prodops_core::api::qc`); the router
// serves each on its declared method and path, behind its declared access.
crate::http::action::handle! {
    api::qc::PublishVersion => publish;
    api::qc::UpdateTemplate => patch_nothing;
}

async fn publish(
    call: Call,
    (): (),
    (): (),
    req: QcTemplateVersionCreate,
) -> ApiResult<Answered<api::qc::PublishVersion>> {
    call.write(move |tx, ctx| {
        let res = ctx.resource(ResourceId::QcTemplate);
        let template = req.qc_template_id.unwrap_or_else(Uuid::now_v7);
        // Numbering reads, then writes: concurrent publishes of one template take turns (the
        // unique index on (qcTemplateId, versionNumber) backs this up).
        lock_scope(tx, &format!("qc-template:{}:{template}", ctx.org()))?;
        let existing = versions_of(tx, ctx.org(), template)?;
        if req.qc_template_id.is_some() && existing.is_empty() {
            return Err(ApiError::field(
                "qcTemplateId",
                "no such QC template; omit qcTemplateId to start a new template",
            ));
        }
        let numbers: Vec<(i64, bool)> = existing
            .iter()
            .filter_map(|v| {
                let n = v.get("versionNumber").and_then(Value::as_i64)?;
                Some((n, v.get("isDraft").and_then(Value::as_bool) == Some(true)))
            })
            .collect();
        // The version as the request writes it, numbered `n`.
        let version = |id: Uuid, n: i64| QcTemplateVersion {
            id,
            organization_id: ctx.org(),
            qc_template_id: template,
            version_number: n,
            name: req.name.clone(),
            description: req.description.clone(),
            questions: req.questions.clone(),
            requires_pass_fail: req.requires_pass_fail,
            is_draft: req.is_draft,
            created_at: ctx.now,
            updated_at: ctx.now,
        };
        let record = match plan_publish(&numbers) {
            // The open draft is edited in place (finalized with `isDraft: false`); every field
            // of the version comes from the body, as a new version's would: the draft is
            // rewritten whole (the pipeline keeps its stored id and times).
            Publish::EditDraft(n) => {
                let old = existing
                    .iter()
                    .find(|v| v.get("versionNumber").and_then(Value::as_i64) == Some(n))
                    .ok_or_else(|| ApiError::internal("the draft vanished"))?;
                let id = old
                    .get("id")
                    .and_then(Value::as_str)
                    .and_then(|id| Uuid::parse_str(id).ok())
                    .ok_or_else(|| ApiError::internal("a stored version without its id"))?;
                apply_server_change(tx, ctx, res, old, record_body(&version(id, n))?)?
            }
            Publish::New(n) => create_server_typed(tx, ctx, res, &version(Uuid::now_v7(), n))?,
        };
        Ok(Shaped::record(record))
    })
    .await
}

/// PATCH is accepted and writes nothing (spec 4.10): the body must still be a JSON object.
async fn patch_nothing(
    call: Call,
    id: Uuid,
    (): (),
    body: Value,
) -> ApiResult<Answered<api::qc::UpdateTemplate>> {
    if !body.is_object() {
        return Err(ApiError::validation(
            "the request body must be a JSON object",
        ));
    }
    let table = ResourceId::QcTemplate.kind().desc().table;
    let raw = call
        .state
        .store
        .get_raw(table, call.org(), id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok(Answered::new(Shaped::text(raw)))
}

/// QC template versions: DELETE is refused with 409 while a QC set references the version.
pub struct QcTemplateHooks;

impl Hooks for QcTemplateHooks {
    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        let id = record.get("id").and_then(Value::as_str).unwrap_or("");
        let sets = ctx.resource(ResourceId::QcSet);
        let n = records::count(
            tx,
            sets.table(),
            ctx.org(),
            &[Cond::field_equals("templateId", id.to_string())],
        )?;
        if n > 0 {
            return Err(ApiError::conflict(format!(
                "{n} QC set(s) still reference this QC template version; delete them first"
            )));
        }
        Ok(DeleteAction::Proceed)
    }
}

/// After the QC set `changed` of deliverable `d` was written (`was`: how it counted for `d`
/// before, if it did) or is being deleted (`deleting`): sends `d` (and a qcstep's stage) to
/// rework when core's [`rework_needed`] says so.
fn settle(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    d: Uuid,
    changed: Uuid,
    was: Option<&SetFacts>,
    newly_failed: bool,
    deleting: bool,
) -> ApiResult<()> {
    lock_scope(tx, &gate_scope(ctx, d))?;
    let deliverables = ctx.resource(ResourceId::Deliverable);
    let Some(value) = records::get(tx, deliverables.table(), ctx.org(), d)? else {
        return Ok(());
    };
    let node: Deliverable = serde_json::from_value(value).map_err(ApiError::internal)?;
    let counting = Counting::of(tx, ctx, &node)?;
    let now = counted_sets(tx, ctx, d, &counting)?;
    let after: Vec<SetVerdict> = now
        .iter()
        .filter(|s| !(deleting && s.id == changed))
        .map(verdict)
        .collect();
    let before: Vec<SetVerdict> = now
        .iter()
        .filter(|s| s.id != changed)
        .chain(was.filter(|w| counting.counts(d, w)))
        .map(verdict)
        .collect();
    if !rework_needed(&before, &after, newly_failed) {
        return Ok(());
    }
    let parent = match node.parent_id {
        Some(p) => records::get(tx, deliverables.table(), ctx.org(), p)?
            .map(serde_json::from_value::<Deliverable>)
            .transpose()
            .map_err(ApiError::internal)?
            .map(|p| (p.id, p.kind)),
        None => None,
    };
    for target in rework_targets((node.id, node.kind), parent) {
        crate::deliverables::progress_effect(tx, ctx, target, &ProgressAction::Rework {})?;
    }
    Ok(())
}

/// Sets `verdictAt` and `verdictById` of a candidate from its verdict and the stored record's
/// (`prodops_core::qc::stamp_verdict`): kept as stored while the verdict stays.
fn stamp(ctx: &Ctx, old: Option<&Value>, candidate: &mut Map<String, Value>) {
    let old_facts = old.map(|o| {
        (
            verdict_of(o),
            o.get(QcSet::FIELD_VERDICT_AT)
                .and_then(Value::as_str)
                .and_then(|t| prodops_core::time::parse(t).ok()),
            o.get(QcSet::FIELD_VERDICT_BY_ID)
                .and_then(Value::as_str)
                .and_then(|t| Uuid::parse_str(t).ok()),
        )
    });
    let verdict = candidate
        .get("verdict")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let (at, by) = stamp_verdict(old_facts, verdict, ctx.auth.key_id, ctx.now);
    if let (Some(old), Some((_, old_at, old_by))) = (old, old_facts)
        && at.is_some()
        && (at, by) == (old_at, old_by)
    {
        for field in [QcSet::FIELD_VERDICT_AT, QcSet::FIELD_VERDICT_BY_ID] {
            candidate.insert(field.into(), old.get(field).cloned().unwrap_or(Value::Null));
        }
        return;
    }
    // This hook runs per record on bulk writes of QC sets and does not parse the candidate:
    // it writes the two stamps by their names in core.
    candidate.insert(
        QcSet::FIELD_VERDICT_AT.into(),
        at.map_or(Value::Null, |_| json!(ctx.now_text())),
    );
    candidate.insert(QcSet::FIELD_VERDICT_BY_ID.into(), json!(by));
}

/// QC sets: `templateId` must name a finalized version of the organization and `deliverableId`
/// a deliverable of it; answers and verdict follow the version; a write or delete that leaves a
/// failure as the deliverable's latest verdict ([`rework_needed`]) sends it (and a qcstep's
/// stage) to rework in the same transaction.
pub struct QcSetHooks;

impl Hooks for QcSetHooks {
    fn before_create(
        &self,
        _tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        stamp(ctx, None, candidate);
        Ok(())
    }

    fn before_update(
        &self,
        _tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: &Value,
        _patch: &Map<String, Value>,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        stamp(ctx, Some(old), candidate);
        Ok(())
    }

    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let set: QcSet = serde_json::from_value(new.clone()).map_err(ApiError::internal)?;
        let versions = ctx.resource(ResourceId::QcTemplate);
        let Some(version) = records::get(tx, versions.table(), ctx.org(), set.template_id)? else {
            return Err(ApiError::field("templateId", "no such QC template version"));
        };
        let version: QcTemplateVersion = serde_json::from_value(version).map_err(|_| {
            ApiError::field(
                "templateId",
                "this version was stored before questions had their shape; publish a new version",
            )
        })?;
        let moved = old.is_none_or(|o| o.get("deliverableId") != new.get("deliverableId"));
        let retemplated = old.is_none_or(|o| o.get("templateId") != new.get("templateId"));
        let mut violations = check_set_against(&set, &version);
        if moved || retemplated {
            let deliverables = ctx.resource(ResourceId::Deliverable);
            match records::get(tx, deliverables.table(), ctx.org(), set.deliverable_id)? {
                None => violations.push(prodops_core::Violation::field(
                    "deliverableId",
                    "no such deliverable in this organization",
                )),
                Some(d) => {
                    let d: Deliverable = serde_json::from_value(d).map_err(ApiError::internal)?;
                    if d.kind == DeliverableType::Qcstep
                        && let Some(t) = prodops_core::tree::data_uuid(&d, "qcTemplateId")
                        && t != version.qc_template_id
                    {
                        violations.push(prodops_core::Violation::field(
                            "templateId",
                            format!(
                                "the qcstep's QC template is {t}; this version belongs to {}",
                                version.qc_template_id
                            ),
                        ));
                    }
                }
            }
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
        let new = SetFacts::of(new)?;
        let old = old.map(SetFacts::of).transpose()?;
        let same = old
            .as_ref()
            .filter(|o| o.deliverable_id == new.deliverable_id);
        let failed = newly_failed(same.map(|o| o.verdict), new.verdict);
        if let Some(d) = new.deliverable_id {
            settle(tx, ctx, d, new.id, same, failed, false)?;
        }
        if let Some(o) = old
            .as_ref()
            .filter(|o| o.deliverable_id != new.deliverable_id)
            && let Some(d) = o.deliverable_id
        {
            // Moved to another deliverable: the one it left may be left with a failure.
            settle(tx, ctx, d, o.id, Some(o), false, false)?;
        }
        Ok(())
    }

    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        let set = SetFacts::of(record)?;
        if let Some(d) = set.deliverable_id {
            settle(tx, ctx, d, set.id, Some(&set), false, true)?;
        }
        Ok(DeleteAction::Proceed)
    }
}
