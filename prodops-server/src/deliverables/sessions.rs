//! Work sessions (spec 4.3): save diffs against open sessions, absent workers get plans that
//! become sessions when they clock in, stop needs ids or workers; a transition to done ends the
//! open sessions and plans on the node. Every ended session's days roll up into timesheets
//! through the work-session hooks.

use std::collections::{BTreeSet, HashSet};

use prodops_core::work_session::{self, SaveRequest, StopRequest, WorkSession, WorkSessionKind};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::engine::{apply_server_change, create_record, update_record};
use crate::http::call::Call;
use crate::http::context::{Ctx, format_time};
use crate::http::error::{ApiError, ApiResult};
use crate::http::typed::Answered;
use crate::store::Tx;
use crate::store::records;
use crate::store::sql::FieldPath;
use prodops_core::api;
use prodops_core::registry::ResourceId;

/// Open sessions and plans whose `field` (`workerId` or `deliverableId`) is `id`, through the
/// expression index on that field.
fn open_by(tx: &mut dyn Tx, ctx: &Ctx, field: &str, id: Uuid) -> ApiResult<Vec<WorkSession>> {
    let table = ResourceId::WorkSession.kind().desc().table;
    let path = FieldPath::parse(field).expect("static path");
    let texts = records::texts_where(tx, table, ctx.org(), &path, id.into())?;
    let mut out = Vec::new();
    for text in texts {
        let s: WorkSession = serde_json::from_str(&text).map_err(ApiError::internal)?;
        if s.is_open() {
            out.push(s);
        }
    }
    Ok(out)
}

/// Ends one open session or plan at `end` (never before its start, never more than a year
/// after it: `WorkSession::clamp_end`).
fn end_session(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    s: &WorkSession,
    end: chrono::DateTime<chrono::Utc>,
) -> ApiResult<()> {
    let res = ctx.resource(ResourceId::WorkSession);
    let old = records::get(tx, res.table(), ctx.org(), s.id)?.ok_or_else(ApiError::not_found)?;
    let mut patch = Map::new();
    patch.insert("endDate".into(), json!(format_time(s.clamp_end(end))));
    update_record(tx, ctx, res, &old, patch)?;
    Ok(())
}

/// Ends the open sessions and plans on the given deliverables; returns their workers.
pub fn end_open_on(tx: &mut dyn Tx, ctx: &Ctx, deliverables: &[Uuid]) -> ApiResult<Vec<Uuid>> {
    let mut workers = BTreeSet::new();
    for d in deliverables {
        for s in open_by(tx, ctx, "deliverableId", *d)? {
            end_session(tx, ctx, &s, ctx.now)?;
            workers.insert(s.worker_id);
        }
    }
    Ok(workers.into_iter().collect())
}

/// Turns an open plan into a session starting at `start` (never before the plan's start):
/// the worker clocked in.
fn plan_to_session(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    plan: &WorkSession,
    start: chrono::DateTime<chrono::Utc>,
) -> ApiResult<()> {
    let res = ctx.resource(ResourceId::WorkSession);
    let old = records::get(tx, res.table(), ctx.org(), plan.id)?.ok_or_else(ApiError::not_found)?;
    let mut changes = Map::new();
    changes.insert("kind".into(), json!(WorkSessionKind::Session));
    changes.insert(
        "startDate".into(),
        json!(format_time(start.max(plan.start_date))),
    );
    apply_server_change(tx, ctx, res, &old, changes)?;
    Ok(())
}

/// A worker clocks in (their `status` becomes `active`): each of their open plans becomes a
/// running session starting now (spec 4.3 rule 2).
pub fn clock_in(tx: &mut dyn Tx, ctx: &Ctx, worker: Uuid) -> ApiResult<()> {
    for s in open_by(tx, ctx, "workerId", worker)? {
        if s.kind == WorkSessionKind::Plan {
            plan_to_session(tx, ctx, &s, ctx.now)?;
        }
    }
    Ok(())
}

fn require_record(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    resource: ResourceId,
    id: Uuid,
    field: &str,
) -> ApiResult<Value> {
    let desc = resource.kind().desc();
    records::get(tx, desc.table, ctx.org(), id)?.ok_or_else(|| {
        let path = desc.path;
        ApiError::field(field, format!("no {path} {id} in this organization"))
    })
}

/// `POST /deliverable/work-sessions/save`.
pub async fn save(
    call: Call,
    (): (),
    (): (),
    req: SaveRequest,
) -> ApiResult<Answered<api::deliverable::SaveWorkSessions>> {
    let violations = req.violations();
    if !violations.is_empty() {
        return Err(ApiError::violations(violations));
    }
    call.write(move |tx, ctx| {
        require_record(tx, ctx, ResourceId::Shop, req.shop_id, "shopId")?;
        let start = req.start_date.unwrap_or(ctx.now);
        let mut absent = HashSet::new();
        let mut open = Vec::new();
        for (worker_id, deliverables) in &req.assignments {
            let field = format!("assignments.{worker_id}");
            let worker = require_record(tx, ctx, ResourceId::Worker, *worker_id, &field)?;
            if worker.get("isArchived").and_then(Value::as_bool) == Some(true) {
                return Err(ApiError::field(
                    &field,
                    "an archived worker cannot be assigned",
                ));
            }
            if worker.get("status").and_then(Value::as_str) != Some("active") {
                absent.insert(*worker_id);
            }
            for d in deliverables {
                require_record(tx, ctx, ResourceId::Deliverable, *d, &field)?;
            }
            open.extend(open_by(tx, ctx, "workerId", *worker_id)?);
        }
        if req.should_stop_entire_batch {
            let table = ResourceId::WorkSession.kind().desc().table;
            let path = FieldPath::parse("shopId").expect("static path");
            for text in records::texts_where(tx, table, ctx.org(), &path, req.shop_id.into())? {
                let s: WorkSession = serde_json::from_str(&text).map_err(ApiError::internal)?;
                if s.is_open() && !open.iter().any(|o| o.id == s.id) {
                    open.push(s);
                }
            }
        }
        let diff = work_session::plan_save(&open, &req, &absent);
        for id in &diff.stop {
            if let Some(s) = open.iter().find(|s| s.id == *id) {
                end_session(tx, ctx, s, start)?;
            }
        }
        for id in &diff.to_session {
            if let Some(s) = open.iter().find(|s| s.id == *id) {
                plan_to_session(tx, ctx, s, start)?;
            }
        }
        let res = ctx.resource(ResourceId::WorkSession);
        for (worker, deliverable, kind) in diff.start {
            let body = json!({
                "workerId": worker,
                "deliverableId": deliverable,
                "shopId": req.shop_id,
                "kind": kind,
                "startDate": format_time(start),
            });
            let Value::Object(body) = body else {
                unreachable!("an object literal")
            };
            create_record(tx, ctx, res, body)?;
        }
        Ok(())
    })
    .await
}

/// `POST /deliverable/work-sessions/stop`.
pub async fn stop(
    call: Call,
    (): (),
    (): (),
    req: StopRequest,
) -> ApiResult<Answered<api::deliverable::StopWorkSessions>> {
    let violations = req.violations();
    if !violations.is_empty() {
        return Err(ApiError::violations(violations));
    }
    call.write(move |tx, ctx| {
        let end = req.end_date.unwrap_or(ctx.now);
        let (field, ids) = if req.worker_ids.is_empty() {
            ("deliverableId", &req.deliverable_ids)
        } else {
            ("workerId", &req.worker_ids)
        };
        let mut done = HashSet::new();
        for id in ids {
            for s in open_by(tx, ctx, field, *id)? {
                if req.matches(&s) && done.insert(s.id) {
                    end_session(tx, ctx, &s, end)?;
                }
            }
        }
        Ok(())
    })
    .await
}
