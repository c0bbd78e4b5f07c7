//! The lots of a receive (issue 37): a received line of an item tracked by lot or serial names
//! its lots (`lines[i].lots: [{code, quantity, expiresAt?}]`, core's `check_received_lots`),
//! a code the item has no lot of yet creates the lot, in the receive's transaction, and each
//! lot is one `receipt` row naming it. The ledger (`inventory::post`) then applies the rules of
//! every posting: stock per lot, a serial received once (409).

use std::collections::{BTreeSet, HashMap};

use prodops_core::delivery::{ManifestLine, ReceiveRequest, check_received_lots};
use prodops_core::inventory::{InventoryTransaction, TransactionType};
use prodops_core::lot::Lot;
use prodops_core::receiving::ReceivePlan;
use prodops_core::registry::ResourceId;
use prodops_core::violation::Violation;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::engine;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::inventory::lots::trackings;
use crate::store::records;
use crate::store::sql::FieldPath;
use crate::store::{SqlValue, Tx};

/// The `receipt` rows of a receive plan, one per received lot of a tracked item's line (one per
/// line otherwise), and for each row the request path it comes from (`lines[i]` or
/// `lines[i].lots[j]`), for naming a refusal.
pub fn receipt_rows(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    delivery: Uuid,
    req: &ReceiveRequest,
    lines: &[(Value, ManifestLine)],
    plan: &ReceivePlan,
) -> ApiResult<(Vec<InventoryTransaction>, Vec<String>)> {
    let items: Vec<Uuid> = plan
        .receipts
        .iter()
        .map(|r| lines[r.line].1.item_id)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let tracking = trackings(tx, ctx.org(), &items)?;
    let mut rows = Vec::with_capacity(plan.receipts.len());
    let mut origins = Vec::with_capacity(plan.receipts.len());
    let mut violations = Vec::new();
    for (k, receipt) in plan.receipts.iter().enumerate() {
        let line = &lines[receipt.line].1;
        // With `lines`, receipt k is request line k; without, the receive names no lots.
        let asked = req.lines.as_ref().and_then(|l| l.get(k));
        let field = if asked.is_some() {
            format!("lines[{k}]")
        } else {
            "lines".to_string()
        };
        let tracked = tracking.get(&line.item_id).copied().unwrap_or_default();
        let lots = asked.and_then(|a| a.lots.as_deref());
        let receipt_row = |quantity: f64| {
            super::posting(
                ctx,
                delivery,
                line,
                TransactionType::Receipt,
                quantity,
                (None, Some(receipt.location_id)),
            )
        };
        match (tracked.is_tracked(), lots) {
            (false, None) => {
                rows.push(receipt_row(receipt.quantity)?);
                origins.push(field);
            }
            (false, Some(_)) => violations.push(Violation::field(
                format!("{field}.lots"),
                format!(
                    "item {} is not tracked by lot or serial: its receipts name no lots",
                    line.item_id
                ),
            )),
            (true, None) => violations.push(Violation::field(
                format!("{field}.lots"),
                format!(
                    "item {} is tracked by {}: a receipt of it names its lots (lines[i].lots: [{{code, quantity, expiresAt?}}])",
                    line.item_id,
                    tracked.as_str()
                ),
            )),
            (true, Some(lots)) => {
                let quantity = asked.map_or(receipt.quantity, |a| a.quantity);
                let found = check_received_lots(&field, quantity, lots);
                if !found.is_empty() {
                    violations.extend(found);
                    continue;
                }
                for (j, received) in lots.iter().enumerate() {
                    let at = format!("{field}.lots[{j}]");
                    let lot = match lot_of_code(tx, ctx, line.item_id, received.code.trim())? {
                        Some(lot) => {
                            if received.expires_at.is_some() && received.expires_at != lot.expires_at
                            {
                                violations.push(Violation::field(
                                    format!("{at}.expiresAt"),
                                    format!(
                                        "lot {:?} exists and expires at {}; a receipt does not change it (PATCH the lot)",
                                        lot.code,
                                        lot.expires_at
                                            .map_or("no date".to_string(), |d| d.to_rfc3339())
                                    ),
                                ));
                                continue;
                            }
                            lot
                        }
                        None => new_lot(tx, ctx, line.item_id, received, &at)?,
                    };
                    let mut row = receipt_row(received.quantity)?;
                    row.lot_id = Some(lot.id);
                    rows.push(row);
                    origins.push(at);
                }
            }
        }
    }
    if !violations.is_empty() {
        return Err(ApiError::violations(violations));
    }
    Ok((rows, origins))
}

/// The item's lot of this code, if it has one.
fn lot_of_code(tx: &mut dyn Tx, ctx: &Ctx, item: Uuid, code: &str) -> ApiResult<Option<Lot>> {
    let table = ResourceId::Lot.kind().desc().table;
    let path = FieldPath::parse("code").ok_or_else(|| ApiError::internal("lot code path"))?;
    for text in records::texts_where(tx, table, ctx.org(), &path, SqlValue::from(code))? {
        let lot: Lot = serde_json::from_str(&text).map_err(ApiError::internal)?;
        if lot.item_id == item {
            return Ok(Some(lot));
        }
    }
    Ok(None)
}

/// Creates the lot a receipt names, through the lot's own pipeline (its rules, events).
fn new_lot(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    item: Uuid,
    received: &prodops_core::delivery::ReceivedLot,
    at: &str,
) -> ApiResult<Lot> {
    let mut body = Map::new();
    body.insert("itemId".into(), json!(item));
    body.insert("code".into(), json!(received.code.trim()));
    if received.expires_at.is_some() {
        let written = serde_json::to_value(received).map_err(ApiError::internal)?;
        body.insert("expiresAt".into(), written["expiresAt"].clone());
    }
    let created = engine::create_record(tx, ctx, ctx.resource(ResourceId::Lot), body)
        .map_err(|e| prefixed(e, |_| Some(at.to_string())))?;
    serde_json::from_value(created).map_err(ApiError::internal)
}

/// An error whose details get `prefix(index)` before their field (a detail with an `index`
/// names that row; the index is dropped once named).
pub fn prefixed(mut e: ApiError, prefix: impl Fn(Option<usize>) -> Option<String>) -> ApiError {
    for d in &mut e.details {
        if let Some(p) = prefix(d.index) {
            d.index = None;
            d.field = Some(match d.field.as_deref() {
                Some(f) => format!("{p}.{f}"),
                None => p,
            });
        }
    }
    e
}

/// Posts a receive's or a completion's rows, a refused row named by the path it comes from.
pub fn post_named(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    rows: &[InventoryTransaction],
    origins: &[String],
) -> ApiResult<()> {
    let by_row: HashMap<usize, &String> = origins.iter().enumerate().collect();
    super::post(tx, ctx, rows).map_err(|e| {
        prefixed(e, |index| match (index, rows.len()) {
            (Some(i), _) => by_row.get(&i).map(|s| s.to_string()),
            (None, 1) => origins.first().cloned(),
            _ => None,
        })
    })
}
