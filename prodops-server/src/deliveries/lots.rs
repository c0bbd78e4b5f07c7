//! The lots of a receive (issue 37): a received line of an item tracked by lot or serial names
//! its lots (`lines[i].lots: [{code, quantity, expiresAt?}]`, core's `check_received_lots`),
//! a code the item has no lot of yet creates the lot, in the receive's transaction, and each
//! lot is one `receipt` row naming it. The ledger (`inventory::post`) then applies the rules of
//! every posting: stock per lot, a serial received once (409).

use std::collections::{BTreeSet, HashMap};

use prodops_core::delivery::{ManifestLine, PostingMetadata, ReceiveRequest, check_received_lots};
use prodops_core::inventory::{InventoryTransaction, TransactionSource, TransactionType};
use prodops_core::receiving::ReceivePlan;
use prodops_core::violation::Violation;
use serde_json::Value;
use uuid::Uuid;

use crate::engine::record_body;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::inventory::lots::trackings;
use crate::store::Tx;

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
            posting(
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
                    let lot = match crate::lots::lot_named(tx, ctx, line.item_id, received, &at)? {
                        Ok(lot) => lot,
                        Err(violation) => {
                            violations.push(violation);
                            continue;
                        }
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

/// Posts a receive's or a completion's rows, a refused row named by the path it comes from.
pub fn post_named(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    rows: &[InventoryTransaction],
    origins: &[String],
) -> ApiResult<()> {
    let by_row: HashMap<usize, &String> = origins.iter().enumerate().collect();
    post(tx, ctx, rows).map_err(|e| {
        e.prefixed(|index| match (index, rows.len()) {
            (Some(i), _) => by_row.get(&i).map(|s| s.to_string()),
            (None, 1) => origins.first().cloned(),
            _ => None,
        })
    })
}

/// A ledger row a delivery posts for one of its manifest lines: `quantity` in the line's unit
/// (the ledger converts it to the item's base unit), between `(from, to)`, with the line named in
/// `metadata`. The server fields are the ledger's to set (`shopId`, the entered quantity).
pub(super) fn posting(
    ctx: &Ctx,
    delivery: Uuid,
    line: &ManifestLine,
    kind: TransactionType,
    quantity: f64,
    (from, to): (Option<Uuid>, Option<Uuid>),
) -> ApiResult<InventoryTransaction> {
    Ok(InventoryTransaction {
        id: Uuid::now_v7(),
        organization_id: ctx.org(),
        item_id: line.item_id,
        shop_id: Uuid::nil(),
        kind,
        quantity,
        unit_measure_id: line.unit_measure_id,
        entered_quantity: None,
        entered_unit_measure_id: None,
        unit_cost: None,
        from_location_id: from,
        to_location_id: to,
        deliverable_id: None,
        delivery_id: Some(delivery),
        pick_line_id: None,
        source: TransactionSource::default(),
        reason: None,
        app_user_id: None,
        metadata: record_body(&PostingMetadata {
            manifest_line_id: line.id,
        })?,
        created_at: ctx.now,
        updated_at: ctx.now,
        // Set by the caller for a lot (deliveries/lots.rs, `post_completion`).
        lot_id: None,
        reverses_id: None,
    })
}

/// Posts a delivery's ledger rows in one call (the ledger checks stock once for all of them).
pub(super) fn post(tx: &mut dyn Tx, ctx: &Ctx, rows: &[InventoryTransaction]) -> ApiResult<()> {
    if !rows.is_empty() {
        let bodies = rows.iter().map(record_body).collect::<ApiResult<_>>()?;
        crate::inventory::post(tx, ctx, bodies)?;
    }
    Ok(())
}
