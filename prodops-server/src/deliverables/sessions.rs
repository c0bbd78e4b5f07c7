//! Work sessions (spec 4.3): save diffs against open sessions, absent workers get plans that
//! become sessions when they clock in, stop needs ids or workers; a transition to done ends the
//! open sessions and plans on the node. Every ended session's days roll up into timesheets
//! through the work-session hooks.

use std::collections::{BTreeSet, HashSet};

use chrono::{DateTime, SubsecRound, Utc};

use prodops_core::work_session::{self, SaveRequest, StopRequest, WorkSession, WorkSessionKind};
use serde_json::Value;
use uuid::Uuid;

use crate::engine::{apply_typed_change, create_server_typed};
use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::http::typed::Answered;
use crate::store::Tx;
use crate::store::records;
use crate::store::sql::FieldPath;
use prodops_core::api;
use prodops_core::registry::ResourceId;

/// A time as the API writes it, to the millisecond (`format_time`): a request's start or end
/// may carry finer digits, which a session's times do not keep.
fn as_written(t: DateTime<Utc>) -> DateTime<Utc> {
    t.trunc_subsecs(3)
}

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
fn end_session(tx: &mut dyn Tx, ctx: &Ctx, s: &WorkSession, end: DateTime<Utc>) -> ApiResult<()> {
    let res = ctx.resource(ResourceId::WorkSession);
    let old = records::get(tx, res.table(), ctx.org(), s.id)?.ok_or_else(ApiError::not_found)?;
    let ended = WorkSession {
        end_date: Some(as_written(s.clamp_end(end))),
        ..s.clone()
    };
    apply_typed_change(tx, ctx, res, &old, s, &ended)?;
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
    start: DateTime<Utc>,
) -> ApiResult<()> {
    let res = ctx.resource(ResourceId::WorkSession);
    let old = records::get(tx, res.table(), ctx.org(), plan.id)?.ok_or_else(ApiError::not_found)?;
    let session = WorkSession {
        kind: WorkSessionKind::Session,
        start_date: as_written(start.max(plan.start_date)),
        ..plan.clone()
    };
    apply_typed_change(tx, ctx, res, &old, plan, &session)?;
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
            let session = WorkSession {
                id: Uuid::now_v7(),
                organization_id: ctx.org(),
                worker_id: worker,
                deliverable_id: deliverable,
                shop_id: req.shop_id,
                kind,
                start_date: as_written(start),
                end_date: None,
                created_at: ctx.now,
                updated_at: ctx.now,
            };
            create_server_typed(tx, ctx, res, &session)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::context::format_time;

    /// A time a session writes is the one the API's text of it (`format_time`) gives back:
    /// to the millisecond, whatever digits the request gave, so the stored record is the one
    /// a body with that text stores.
    #[test]
    fn times_are_written_to_the_millisecond() {
        for text in [
            "2026-03-01T08:00:00Z",
            "2026-03-01T08:00:00.5Z",
            "2026-03-01T08:00:00.123456Z",
            "2026-03-01T08:00:00.999999999Z",
        ] {
            let t: DateTime<Utc> = text.parse().unwrap();
            let written: DateTime<Utc> = format_time(t).parse().unwrap();
            assert_eq!(as_written(t), written, "{text}");
        }
    }
}
