//! The QC gate of a qcstep (docs/documents.md, "QC gates"): which of a deliverable's QC sets
//! count, and whether their latest verdict lets the step become done. Completing a step is a
//! deliverable write, so the gate lives here; the QC family (`crate::qc`) uses the same reading
//! of sets when a verdict sends a deliverable to rework.

use prodops_core::registry::ResourceId;
use std::collections::HashSet;

use prodops_core::deliverable::{Deliverable, DeliverableType};
use prodops_core::qc::{SetVerdict, Verdict, may_complete, version_in_force};
use serde_json::Value;
use uuid::Uuid;

use crate::engine;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::records::{self, Select};
use crate::store::sql::Cond;
use crate::store::{Tx, lock_scope};

/// Which of a deliverable's QC sets count for its gate and its rework: for a qcstep with a
/// `data.qcTemplateId`, the sets of that template's versions (and the gate of its version in
/// force); for any other deliverable, all its sets (and no gate).
pub(crate) struct Counting {
    versions: Option<HashSet<Uuid>>,
    /// The version in force and whether it requires pass/fail (`qc::version_in_force`).
    in_force: Option<(i64, bool)>,
}

/// Every stored version of the QC template `template` (a template's versions share its
/// `qcTemplateId`).
pub(crate) fn versions_of(tx: &mut dyn Tx, org: Uuid, template: Uuid) -> ApiResult<Vec<Value>> {
    Ok(records::select_values(
        tx,
        ResourceId::QcTemplate.kind().desc().table,
        org,
        &Select {
            conds: vec![Cond::field_equals("qcTemplateId", template.to_string())],
            limit: engine::MAX_BULK_RECORDS,
            ..Default::default()
        },
    )?)
}

impl Counting {
    pub(crate) fn of(tx: &mut dyn Tx, ctx: &Ctx, d: &Deliverable) -> ApiResult<Counting> {
        let template = (d.kind == DeliverableType::Qcstep)
            .then(|| prodops_core::tree::data_uuid(d, "qcTemplateId"))
            .flatten();
        let Some(template) = template else {
            return Ok(Counting {
                versions: None,
                in_force: None,
            });
        };
        let versions = versions_of(tx, ctx.org(), template)?;
        // Read field by field, not as `QcTemplateVersion`: a version stored before questions
        // had their shape still gates (and its sets still count).
        let facts: Vec<(i64, bool, bool)> = versions
            .iter()
            .map(|v| {
                (
                    v.get("versionNumber").and_then(Value::as_i64).unwrap_or(1),
                    v.get("isDraft").and_then(Value::as_bool) == Some(true),
                    v.get("requiresPassFail").and_then(Value::as_bool) != Some(false),
                )
            })
            .collect();
        Ok(Counting {
            versions: Some(versions.iter().filter_map(|v| uuid_of(v, "id")).collect()),
            in_force: version_in_force(&facts),
        })
    }

    /// The template's version in force and whether it requires pass/fail; `None` for a
    /// deliverable without a template, or a template without a finalized version.
    pub(crate) fn in_force(&self) -> Option<(i64, bool)> {
        self.in_force
    }

    pub(crate) fn counts(&self, d: Uuid, set: &SetFacts) -> bool {
        set.deliverable_id == Some(d)
            && self
                .versions
                .as_ref()
                .is_none_or(|v| set.template_id.is_some_and(|t| v.contains(&t)))
    }
}

pub(crate) fn uuid_of(v: &Value, field: &str) -> Option<Uuid> {
    v.get(field)
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}

/// What the gate reads of a stored QC set, field by field (a set stored before answers had
/// their shape still counts).
#[derive(Debug, Clone)]
pub(crate) struct SetFacts {
    pub(crate) id: Uuid,
    pub(crate) template_id: Option<Uuid>,
    pub(crate) deliverable_id: Option<Uuid>,
    pub(crate) verdict: Option<Verdict>,
    pub(crate) verdict_at: Option<chrono::DateTime<chrono::Utc>>,
}

impl SetFacts {
    pub(crate) fn of(v: &Value) -> ApiResult<SetFacts> {
        Ok(SetFacts {
            id: uuid_of(v, "id").ok_or_else(|| ApiError::internal("a QC set without an id"))?,
            template_id: uuid_of(v, "templateId"),
            deliverable_id: uuid_of(v, "deliverableId"),
            verdict: verdict_of(v),
            verdict_at: v
                .get("verdictAt")
                .and_then(Value::as_str)
                .and_then(|t| prodops_core::time::parse(t).ok()),
        })
    }
}

pub(crate) fn verdict(set: &SetFacts) -> SetVerdict {
    SetVerdict {
        qc_set_id: set.id,
        verdict: set.verdict,
        verdict_at: set.verdict_at,
    }
}

/// The QC sets of deliverable `d` as stored now that count for it.
pub(crate) fn counted_sets(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    d: Uuid,
    counting: &Counting,
) -> ApiResult<Vec<SetFacts>> {
    let rows = records::select_values(
        tx,
        ResourceId::QcSet.kind().desc().table,
        ctx.org(),
        &Select {
            conds: vec![Cond::field_equals("deliverableId", d.to_string())],
            limit: engine::MAX_BULK_RECORDS,
            ..Default::default()
        },
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for v in rows {
        let set = SetFacts::of(&v)?;
        if counting.counts(d, &set) {
            out.push(set);
        }
    }
    Ok(out)
}

/// The scope that serializes a step's gate check with the QC set writes that may rework it.
pub(crate) fn gate_scope(ctx: &Ctx, step: Uuid) -> String {
    format!("qc-gate:{}:{step}", ctx.org())
}

/// The QC gate of `step` about to become done (docs/documents.md, "QC gates"): a qcstep whose
/// template (`data.qcTemplateId`) has a finalized version in force requiring pass/fail needs the
/// latest verdict of its QC sets of that template to be `pass`; 400 naming `qcSetId` otherwise.
/// Other deliverables, and qcsteps of templates without a finalized version, pass.
pub fn check_gate(tx: &mut dyn Tx, ctx: &Ctx, step: &Deliverable) -> ApiResult<()> {
    if step.kind != DeliverableType::Qcstep {
        return Ok(());
    }
    let counting = Counting::of(tx, ctx, step)?;
    let gated = counting.in_force.map(|(_, gated)| gated);
    if gated != Some(true) {
        return Ok(());
    }
    // The gate reads the sets and the write makes the step done; a concurrent QC set write
    // (`settle`) reads the step and may rework it: the two take turns per step.
    lock_scope(tx, &gate_scope(ctx, step.id))?;
    let sets: Vec<SetVerdict> = counted_sets(tx, ctx, step.id, &counting)?
        .iter()
        .map(verdict)
        .collect();
    may_complete(step.id, gated, &sets).map_err(|v| ApiError::violations(vec![v]))
}

pub(crate) fn verdict_of(v: &Value) -> Option<Verdict> {
    v.get("verdict")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
}
