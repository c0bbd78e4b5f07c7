//! The lots of produce and consume (issue 37). An output of an item tracked by lot or serial
//! goes into the lots its entry names (`outputs[i].lots`, found or made by code, as a receipt's
//! are) or into lots made for it: one lot of the whole output, or one serial per unit, coded
//! `{order identifier}-{n}` ([`crate::lots::make_lots`]). A draw of a tracked item takes
//! the lots its entry names (`lines[i].lots`, in that order) or, without them, those the
//! organization's picking order (`lotPicking`: FIFO or FEFO) chooses among the lots on hand
//! where it draws from (core's `pick_lots`). Either way each lot is one ledger row, and the
//! ledger (`inventory::post`) applies the rules every posting keeps: stock per lot, a serial
//! on hand once.

use std::collections::HashMap;

use prodops_core::delivery::check_received_lots;
use prodops_core::inventory::{InventoryTransaction, from_micros, to_micros};
use prodops_core::lot::{Lot, Tracking};
use prodops_core::lot_rules::{LotPicking, LotRequest, LotStock, LotTaken, pick_lots};
use prodops_core::production_actions::{
    ConsumeRequest, PlannedDraw, PlannedOutput, ProduceRequest,
};
use prodops_core::violation::Violation;
use uuid::Uuid;

use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::inventory::lots::{lots_by_id, refusal_error};
use crate::inventory::units::Converter;
use crate::store::{SqlValue, Tx};

/// The most serials one produce makes for an output that names none: a larger run names its
/// serials, or is produced in parts.
pub const MAX_GENERATED_SERIALS: u64 = 10_000;

/// The request path of a planned output's entry, for naming a refusal.
fn output_path(req: &ProduceRequest, p: &PlannedOutput) -> String {
    match p.entry {
        Some(i) => format!("outputs[{i}]"),
        None if req.output_item_id.is_some() => "outputItemId".to_string(),
        None => "outputs".to_string(),
    }
}

/// The lots a produced row went into, as the answer lists them.
fn produced(lot: &Lot, row: &InventoryTransaction, ctx: &Ctx) -> LotTaken {
    LotTaken {
        lot_id: lot.id,
        code: lot.code.clone(),
        quantity: row.quantity,
        expired: lot.is_expired(ctx.now),
    }
}

/// The rows of one planned output, given its row as an untracked item's would be (`row`):
/// that row for an untracked item; for a tracked one, a row per lot, each naming it. The lots
/// go to `lots` (in row order). A refusal of the request is a `Violation` list (400).
#[allow(clippy::too_many_arguments)]
pub(super) fn output_rows(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    req: &ProduceRequest,
    p: &PlannedOutput,
    tracking: Tracking,
    row: InventoryTransaction,
    order_identifier: &str,
    units: &mut Converter,
    lots: &mut Vec<LotTaken>,
) -> ApiResult<Result<Vec<InventoryTransaction>, Vec<Violation>>> {
    let path = output_path(req, p);
    let named = p
        .entry
        .and_then(|i| req.outputs.as_ref().and_then(|o| o.get(i)))
        .and_then(|e| e.lots.as_deref());
    if !tracking.is_tracked() {
        return Ok(match named {
            None => Ok(vec![row]),
            Some(_) => Err(vec![Violation::field(
                format!("{path}.lots"),
                format!(
                    "item {} is not tracked by lot or serial: its output names no lots",
                    p.item_id
                ),
            )]),
        });
    }
    if let Some(named) = named {
        let found = check_received_lots(&path, p.quantity, named);
        if !found.is_empty() {
            return Ok(Err(found));
        }
        let mut rows = Vec::with_capacity(named.len());
        let mut violations = Vec::new();
        for (j, entry) in named.iter().enumerate() {
            let at = format!("{path}.lots[{j}]");
            match crate::lots::lot_named(tx, ctx, p.item_id, entry, &at)? {
                Ok(lot) => {
                    let mut r = row.clone();
                    r.id = Uuid::now_v7();
                    r.quantity = entry.quantity;
                    r.lot_id = Some(lot.id);
                    lots.push(produced(&lot, &r, ctx));
                    rows.push(r);
                }
                Err(v) => violations.push(v),
            }
        }
        return Ok(if violations.is_empty() {
            Ok(rows)
        } else {
            Err(violations)
        });
    }
    // Nothing named: lots made for the output.
    let prefix = if order_identifier.trim().is_empty() {
        "LOT"
    } else {
        order_identifier.trim()
    };
    if tracking == Tracking::Lot {
        let lot = crate::lots::make_lots(tx, ctx, p.item_id, prefix, 1, &path)?.remove(0);
        let mut r = row;
        r.lot_id = Some(lot.id);
        lots.push(produced(&lot, &r, ctx));
        return Ok(Ok(vec![r]));
    }
    // Serials: one per unit of the item's base unit.
    let base = units.to_base(tx, ctx, p.item_id, row.unit_measure_id, p.quantity)?;
    let micros = to_micros(base);
    let quantity_field = match p.entry {
        Some(_) => format!("{path}.quantity"),
        None => "quantityProduced".to_string(),
    };
    if micros % 1_000_000 != 0 {
        return Ok(Err(vec![Violation::field(
            quantity_field,
            format!(
                "item {} is tracked by serial: a produce of it makes whole units ({base} in its base unit)",
                p.item_id
            ),
        )]));
    }
    let count = (micros / 1_000_000) as u64;
    if count > MAX_GENERATED_SERIALS {
        return Ok(Err(vec![Violation::field(
            format!("{path}.lots"),
            format!(
                "{count} serials: a produce makes at most {MAX_GENERATED_SERIALS} serials it is not given; name them in {path}.lots, or produce in parts"
            ),
        )]));
    }
    let serials = crate::lots::make_lots(tx, ctx, p.item_id, prefix, count as usize, &path)?;
    let mut rows = Vec::with_capacity(serials.len());
    for lot in serials {
        let mut r = row.clone();
        r.id = Uuid::now_v7();
        r.quantity = 1.0;
        // One of the item's base unit: the serial's whole quantity.
        r.unit_measure_id = None;
        r.lot_id = Some(lot.id);
        lots.push(produced(&lot, &r, ctx));
        rows.push(r);
    }
    Ok(Ok(rows))
}

/// The lots of `item` with stock at `location` (micros), as `stock_lot` keeps them.
fn lots_on_hand_at(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    item: Uuid,
    location: Uuid,
) -> ApiResult<HashMap<Uuid, i64>> {
    let rows = tx.query(
        "SELECT lot_id, on_hand FROM stock_lot \
         WHERE organization_id = ? AND item_id = ? AND location_id = ? AND on_hand > 0",
        &[ctx.org().into(), item.into(), location.into()],
    )?;
    let mut out = HashMap::with_capacity(rows.len());
    for r in rows {
        let lot = r
            .first()
            .and_then(SqlValue::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
            .ok_or_else(|| ApiError::internal("stock_lot.lot_id is a UUID"))?;
        let on_hand = r.get(1).and_then(SqlValue::as_i64).unwrap_or(0);
        out.insert(lot, on_hand);
    }
    Ok(out)
}

/// The rows of one draw at `location`, given its row as an untracked item's would be (`row`,
/// in the BOM line's unit): that row for an untracked item; for a tracked one, a row per lot
/// taken, in the item's base unit. The lots taken go to `taken` (in row order).
#[allow(clippy::too_many_arguments)]
pub(super) fn draw_rows(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    req: &ConsumeRequest,
    d: &PlannedDraw,
    tracking: Tracking,
    location: Uuid,
    row: InventoryTransaction,
    picking: LotPicking,
    units: &mut Converter,
    taken: &mut Vec<LotTaken>,
) -> ApiResult<Result<Vec<InventoryTransaction>, ApiError>> {
    let path = match d.entry {
        Some(i) => format!("lines[{i}]"),
        None => "lines".to_string(),
    };
    let named = d
        .entry
        .and_then(|i| req.lines.as_ref().and_then(|l| l.get(i)))
        .and_then(|e| e.lots.as_deref());
    if !tracking.is_tracked() {
        return Ok(match named {
            None => Ok(vec![row]),
            Some(_) => Err(ApiError::field(
                &format!("{path}.lots"),
                format!(
                    "item {} is not tracked by lot or serial: its draw names no lots",
                    d.item_id
                ),
            )),
        });
    }
    if d.quantity == 0.0 {
        return Ok(Ok(Vec::new()));
    }
    let need = to_micros(units.to_base(tx, ctx, d.item_id, row.unit_measure_id, d.quantity)?);
    let mut requested = Vec::new();
    for (j, lot) in named.unwrap_or_default().iter().enumerate() {
        let quantity = match lot.quantity {
            Some(q) if !q.is_finite() => {
                return Ok(Err(ApiError::field(
                    &format!("{path}.lots[{j}].quantity"),
                    "a lot's quantity is a number above zero",
                )));
            }
            Some(q) => Some(to_micros(q)),
            None => None,
        };
        requested.push(LotRequest {
            lot_id: lot.lot_id,
            quantity,
        });
    }
    let on_hand = lots_on_hand_at(tx, ctx, d.item_id, location)?;
    let mut ids: Vec<Uuid> = on_hand.keys().copied().collect();
    ids.extend(requested.iter().map(|r| r.lot_id));
    ids.sort_unstable();
    ids.dedup();
    // Another organization's lot is absent here, and so "not a lot of this item".
    let lots = lots_by_id(tx, ctx.org(), &ids)?;
    let available: Vec<LotStock<'_>> = lots
        .values()
        .filter(|l| l.item_id == d.item_id)
        .map(|l| LotStock {
            lot: l,
            on_hand: on_hand.get(&l.id).copied().unwrap_or(0),
        })
        .collect();
    let picked = match pick_lots(need, &available, &requested, picking, ctx.now) {
        Ok(picked) => picked,
        // Named under the entry's path when the request has one (`lines[i].lots[j]...`).
        Err(refusal) => {
            let err = refusal_error(refusal);
            return Ok(Err(match d.entry {
                Some(_) => err.prefixed(|_| Some(path.clone())),
                None => err,
            }));
        }
    };
    let mut rows = Vec::with_capacity(picked.len());
    for lot in picked {
        let mut r = row.clone();
        r.id = Uuid::now_v7();
        r.quantity = from_micros(to_micros(lot.quantity));
        // In the item's base unit: what the lot's stock is kept in.
        r.unit_measure_id = None;
        r.lot_id = Some(lot.lot_id);
        taken.push(lot);
        rows.push(r);
    }
    Ok(Ok(rows))
}
