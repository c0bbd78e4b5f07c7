//! A ledger corrected, never edited (issue 37): the organization's freeze date, which every
//! posting passes ([`check_posting`], called by [`super::post`]), and `POST /inventory/reverse`,
//! which posts the opposite of ledger rows, linked to them, once. The rules are core's
//! (`prodops_core::lot_rules`: `check_not_frozen`, `reversal`); this module reads the facts
//! they need and answers their refusals in the error shape.

use std::collections::{HashMap, HashSet};

use chrono::NaiveDate;
use prodops_core::Violation;
use prodops_core::api::inventory::{MAX_REVERSED_ROWS, ReverseRequest, ReverseResult};
use prodops_core::inventory::InventoryTransaction;
use prodops_core::lot_rules::{Refusal, StockSettings, check_not_frozen, reversal};
use prodops_core::registry::ResourceId;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::http::context::{Auth, Ctx};
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::store::{SqlValue, Tx};

/// The organization's stock settings, read from its flags and settings (`admin::SETTINGS`),
/// which every request reads with its key.
pub fn stock_settings(auth: &Auth) -> StockSettings {
    StockSettings {
        stock_frozen_until: auth
            .flags
            .get("stockFrozenUntil")
            .and_then(Value::as_str)
            .and_then(|d| NaiveDate::parse_from_str(d, "%Y-%m-%d").ok()),
        ..StockSettings::default()
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

/// Which of the posting's rows a workflow keeps a total of that a reversal does not keep, and
/// what to do instead: delivery rows (a manifest line's `quantityReceived`, a delivery's
/// completion), and a row naming a deliverable without being a production row. Production rows
/// are reversed, with their declaration's or line's actual.
fn kept_by_workflow(row: &InventoryTransaction) -> Option<String> {
    let production_row = row
        .metadata
        .get(prodops_core::production_actions::keys::ORDER)
        .is_some_and(Value::is_string);
    if production_row {
        // Reversed with the actual it changed (`production::reverse_actuals`).
        return None;
    }
    if let Some(order) = row.deliverable_id {
        return Some(format!(
            "row {} was posted by production on deliverable {order}, whose quantityActual sums it; correct it with POST /production/adjust-actual",
            row.id
        ));
    }
    if let Some(delivery) = row.delivery_id.or(row.pick_line_id) {
        return Some(format!(
            "row {} was posted by delivery {delivery}, whose manifest sums it; a delivery's rows are not reversed here",
            row.id
        ));
    }
    None
}

/// The reversal of each of `ids` already posted: original id to its reversal's id.
fn reversals_of(tx: &mut dyn Tx, org: Uuid, ids: &[Uuid]) -> ApiResult<HashMap<Uuid, Uuid>> {
    let table = ResourceId::InventoryTransaction.kind().desc().table;
    // The column of the unique index on `reversesId`, so the lookup reads that index.
    let expr = crate::store::sql::filter_column("reversesId");
    let mut out = HashMap::new();
    for chunk in ids.chunks(400) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let mut params: Vec<SqlValue> = vec![org.into()];
        params.extend(chunk.iter().map(|id| SqlValue::from(id.to_string())));
        let rows = tx.query(
            &format!(
                "SELECT {expr}, id FROM {table} WHERE organization_id = ? AND {expr} IN ({marks})"
            ),
            &params,
        )?;
        for r in rows {
            let id = |i: usize| {
                r.get(i)
                    .and_then(SqlValue::as_str)
                    .and_then(|s| Uuid::parse_str(s).ok())
            };
            if let (Some(original), Some(reversal)) = (id(0), id(1)) {
                out.insert(original, reversal);
            }
        }
    }
    Ok(out)
}

/// The request's own checks (400 naming `transactionIds`): 1 to [`MAX_REVERSED_ROWS`] ids,
/// each once.
pub fn check_request(req: &ReverseRequest) -> Result<(), Vec<Violation>> {
    let mut v = Vec::new();
    if req.transaction_ids.is_empty() || req.transaction_ids.len() > MAX_REVERSED_ROWS {
        v.push(Violation::field(
            "transactionIds",
            format!("a reversal names 1 to {MAX_REVERSED_ROWS} ledger rows"),
        ));
    }
    let mut seen = HashSet::new();
    for (i, id) in req.transaction_ids.iter().enumerate() {
        if !seen.insert(*id) {
            v.push(Violation::field(
                format!("transactionIds[{i}]"),
                format!("row {id} is named twice"),
            ));
        }
    }
    if v.is_empty() { Ok(()) } else { Err(v) }
}

/// `POST /inventory/reverse` inside its transaction: the rows read (400 naming
/// `transactionIds[i]` for one not in the organization), refused when one was reversed already
/// (409 naming the reversal) or is a reversal (409), or is kept by a workflow (409 naming the
/// action that corrects it); then core's reversal rows are posted like any posting, dated now:
/// the freeze date and the stock policy apply to them (409), and the unique index on
/// `reversesId` keeps a raced second reversal out.
pub fn reverse_in(tx: &mut dyn Tx, ctx: &Ctx, req: &ReverseRequest) -> ApiResult<ReverseResult> {
    check_request(req).map_err(ApiError::violations)?;
    let table = ResourceId::InventoryTransaction.kind().desc().table;
    let mut posting = Vec::with_capacity(req.transaction_ids.len());
    let mut missing = Vec::new();
    for (i, id) in req.transaction_ids.iter().enumerate() {
        match crate::store::records::get(tx, table, ctx.org(), *id)? {
            Some(stored) => posting.push(read_stored::<InventoryTransaction>(&stored)?),
            None => missing.push(Violation::field(
                format!("transactionIds[{i}]"),
                format!("no ledger row {id} in this organization"),
            )),
        }
    }
    if !missing.is_empty() {
        return Err(ApiError::violations(missing));
    }
    let kept: Vec<Violation> = posting
        .iter()
        .filter_map(kept_by_workflow)
        .map(|m| Violation::field("transactionIds", m))
        .collect();
    if !kept.is_empty() {
        return Err(refused(Refusal::Conflict(kept)));
    }
    let already = reversals_of(tx, ctx.org(), &req.transaction_ids)?;
    if !already.is_empty() {
        let details = req
            .transaction_ids
            .iter()
            .filter_map(|id| already.get(id).map(|r| (id, r)))
            .map(|(id, r)| {
                Violation::field(
                    "transactionIds",
                    format!(
                        "row {id} was reversed already, by row {r}; a posting is reversed once"
                    ),
                )
            })
            .collect();
        return Err(refused(Refusal::Conflict(details)));
    }
    let reversed: HashSet<Uuid> = already.into_keys().collect();
    let mut rows = reversal(&posting, &reversed, Uuid::now_v7, ctx.now).map_err(refused)?;
    if let Some(reason) = &req.reason {
        for row in &mut rows {
            row.reason = Some(reason.clone());
        }
    }
    // The actuals of production rows first, under their orders' locks (taken before the stock
    // rows', as the production actions take them).
    crate::production::reverse_actuals(tx, ctx, &rows)?;
    let stored = super::post_typed(tx, ctx, &rows)?;
    let transactions = stored
        .iter()
        .map(read_stored)
        .collect::<ApiResult<Vec<InventoryTransaction>>>()?;
    Ok(ReverseResult { transactions })
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
