//! A ledger corrected, never edited (issue 37): the organization's freeze date, which every
//! posting passes ([`check_posting`], called by [`super::post`]), and the server fields a
//! reversal's rows carry through the posting (`POST /inventory/reverse` itself is served by
//! `production::reversal`, since it takes production's actuals back with the rows). The rules are core's
//! (`prodops_core::lot_rules`: `check_not_frozen`, `reversal`); this module reads the facts
//! they need and answers their refusals in the error shape.

use std::collections::HashMap;

use chrono::NaiveDate;
use prodops_core::inventory::InventoryTransaction;
use prodops_core::lot_rules::{Refusal, StockSettings, check_not_frozen};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::http::context::{Auth, Ctx};
use crate::http::error::{ApiError, ApiResult};

/// The organization's stock settings, read from its flags and settings (`admin::SETTINGS`),
/// which every request reads with its key.
pub fn stock_settings(auth: &Auth) -> StockSettings {
    StockSettings {
        stock_frozen_until: auth
            .flags
            .get("stockFrozenUntil")
            .and_then(Value::as_str)
            .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok()),
        lot_picking: auth
            .flags
            .get("lotPicking")
            .cloned()
            .and_then(|p| serde_json::from_value(p).ok())
            .unwrap_or_default(),
    }
}

/// A refusal of core's rules in the error shape: 400 or 409, with every violation in `details`
/// and the first one's message in the error's.
pub fn refused(refusal: Refusal) -> ApiError {
    match refusal {
        Refusal::Invalid(details) => ApiError::violations(details),
        Refusal::Conflict(details) => {
            let first = details
                .first()
                .map(|d| d.message.clone())
                .unwrap_or_default();
            let mut err = ApiError::conflict(first);
            err.details = details;
            err
        }
    }
}

/// What every posting passes before its stock changes, whatever the path: no row is dated on or
/// before the organization's freeze date (409 naming the date, under `createdAt`).
pub fn check_posting(ctx: &Ctx, rows: &[InventoryTransaction]) -> ApiResult<()> {
    let settings = stock_settings(&ctx.auth);
    if settings.stock_frozen_until.is_none() {
        return Ok(());
    }
    for row in rows {
        check_not_frozen(settings.stock_frozen_until, row.created_at, "createdAt")
            .map_err(refused)?;
    }
    Ok(())
}

/// The server fields of rows the server builds (`reversesId`), kept for [`super::LedgerHooks`]
/// by row id while [`super::post_typed`] posts them: a client's body never sets them (they are
/// read-only), so they travel beside the bodies, in the posting's own deferred work.
#[derive(Debug, Default)]
pub struct ServerFields(pub HashMap<Uuid, Map<String, Value>>);

/// The server fields of `row` that its body loses as read-only ones: its `reversesId`.
pub fn server_fields(row: &InventoryTransaction) -> Option<Map<String, Value>> {
    let original = row.reverses_id?;
    Some(Map::from_iter([(
        "reversesId".to_string(),
        Value::String(original.to_string()),
    )]))
}

/// The context [`super::post`] writes its rows in: a fresh batch (deferred work of its own),
/// carrying the [`ServerFields`] that [`super::post_typed`] handed over in `ctx`, if any.
pub fn posting_batch(ctx: &Ctx) -> Ctx {
    let batch = ctx.deferring();
    let handed = ctx.deferred.as_ref().and_then(|d| d.take::<ServerFields>());
    if let (Some(fields), Some(deferred)) = (handed, &batch.deferred) {
        deferred.with(|kept: &mut ServerFields| *kept = fields);
    }
    batch
}

/// `ctx` carrying the server fields of `rows` to [`posting_batch`] (unchanged when no row has
/// any).
pub fn with_server_fields(ctx: &Ctx, rows: &[InventoryTransaction]) -> Option<Ctx> {
    let fields: HashMap<Uuid, Map<String, Value>> = rows
        .iter()
        .filter_map(|row| server_fields(row).map(|f| (row.id, f)))
        .collect();
    if fields.is_empty() {
        return None;
    }
    let carrier = ctx.deferring();
    if let Some(deferred) = &carrier.deferred {
        deferred.with(|kept: &mut ServerFields| kept.0 = fields);
    }
    Some(carrier)
}

/// Puts back the server fields of the row being created (by its id), for
/// [`super::LedgerHooks::before_create`].
pub fn restore_server_fields(ctx: &Ctx, candidate: &mut Map<String, Value>) {
    let Some(deferred) = &ctx.deferred else {
        return;
    };
    let Some(id) = candidate
        .get("id")
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
    else {
        return;
    };
    if let Some(fields) = deferred.with(|kept: &mut ServerFields| kept.0.remove(&id)) {
        candidate.extend(fields);
    }
}

/// Whether the row being created is a reversal (its stock effect is the opposite of its type's).
pub fn is_reversal(candidate: &Map<String, Value>) -> bool {
    candidate.get("reversesId").is_some_and(|v| !v.is_null())
}
