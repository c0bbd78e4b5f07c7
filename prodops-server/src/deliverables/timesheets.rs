//! Timesheets: the days a stopped, edited or deleted work session touches are rolled up again
//! from the worker's sessions (core's `timesheet`), in the transaction of the change. A day
//! with time gets its one timesheet created or updated; a day left without time loses it.

use std::collections::{BTreeMap, BTreeSet};

use chrono::NaiveDate;
use prodops_core::catalog::{CatalogEntry, PAY_TYPE};
use prodops_core::timesheet::{self, PayCodes};
use prodops_core::work_session::WorkSession;
use serde_json::Value;
use uuid::Uuid;

use crate::engine::{apply_server_change, create_server_record, delete_record};
use crate::http::context::Ctx;
use crate::http::error::ApiResult;
use crate::store::Tx;
use crate::store::records::{self, Select};
use crate::store::sql::Cond;
use prodops_core::registry::ResourceId;

/// The stored records of `resource` matching every condition (at most `limit`).
fn select(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    resource: ResourceId,
    conds: Vec<Cond>,
    limit: u64,
) -> ApiResult<Vec<Value>> {
    let select = Select {
        conds,
        limit,
        ..Default::default()
    };
    Ok(records::select_values(
        tx,
        resource.kind().desc().table,
        ctx.org(),
        &select,
    )?)
}

/// The organization's pay codes, from its `pay_type` catalog as it is now.
fn pay_codes(tx: &mut dyn Tx, ctx: &Ctx) -> ApiResult<PayCodes> {
    let rows = select(
        tx,
        ctx,
        ResourceId::CatalogEntry,
        vec![Cond::field_equals("catalog", PAY_TYPE)],
        100_000,
    )?;
    let entries: Vec<CatalogEntry> = rows
        .into_iter()
        .filter_map(|v| serde_json::from_value(v).ok())
        .collect();
    Ok(PayCodes::from_catalog(&entries))
}

/// A session as stored, when it reads as one (`None` otherwise: nothing to roll up).
pub fn parse_session(v: &Value) -> Option<WorkSession> {
    serde_json::from_value(v.clone()).ok()
}

/// Rolls up again the `(worker, day)` timesheets in `days`, from the sessions as they are now
/// in this transaction.
pub fn roll_up(tx: &mut dyn Tx, ctx: &Ctx, days: &BTreeSet<(Uuid, NaiveDate)>) -> ApiResult<()> {
    if days.is_empty() {
        return Ok(());
    }
    let mut by_worker: BTreeMap<Uuid, Vec<NaiveDate>> = BTreeMap::new();
    for (worker, day) in days {
        by_worker.entry(*worker).or_default().push(*day);
    }
    let codes = pay_codes(tx, ctx)?;
    let res = ctx.resource(ResourceId::Timesheet);
    for (worker, dates) in by_worker {
        let sessions: Vec<WorkSession> = select(
            tx,
            ctx,
            ResourceId::WorkSession,
            vec![Cond::field_equals("workerId", worker.to_string())],
            u64::MAX >> 1,
        )?
        .iter()
        .filter_map(parse_session)
        .collect();
        for date in dates {
            let sheet = timesheet::roll_up_day(worker, date, &sessions, &codes);
            let existing = select(
                tx,
                ctx,
                ResourceId::Timesheet,
                vec![
                    Cond::field_equals("workerId", worker.to_string()),
                    Cond::field_equals("date", date.to_string()),
                ],
                1,
            )?
            .into_iter()
            .next();
            match (sheet, existing) {
                (Some(sheet), Some(old)) => {
                    apply_server_change(tx, ctx, res, &old, sheet.fields())?;
                }
                (Some(sheet), None) => {
                    create_server_record(tx, ctx, res, sheet.fields())?;
                }
                (None, Some(old)) => delete_record(tx, ctx, res, &old)?,
                (None, None) => {}
            }
        }
    }
    Ok(())
}

/// Rolls up the days a session's change from `old` to `new` touches (`None` for a create or a
/// delete).
pub fn session_changed(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    old: Option<&Value>,
    new: Option<&Value>,
) -> ApiResult<()> {
    let old = old.and_then(parse_session);
    let new = new.and_then(parse_session);
    let days = timesheet::affected_days(old.as_ref(), new.as_ref());
    roll_up(tx, ctx, &days)
}
