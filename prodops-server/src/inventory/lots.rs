//! Stock per item, location and lot (issue 37): what [`super::post`] does for rows of items
//! tracked by lot or serial, in the same transaction as the rows and the `stock` totals.
//!
//! The rules are core's ([`prodops_core::lot_rules`]): every row of a tracked item names a lot
//! of that item in the organization, a row of an untracked item names none, a serial moves 0
//! or 1 ([`check_row_lots`], 400 naming `lotId` or `quantity`); the negative-stock policy
//! holds per item, location and lot (409), and a serial is never on hand twice, over every
//! location ([`check_serials_once`], 409). The `stock_lot` table keeps the stock per lot; the
//! `stock` table keeps the totals per item and location as before, so answers about untracked
//! items do not change.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use prodops_core::inventory::{InventoryTransaction, MAX_STOCK_MICROS};
use prodops_core::lot::{Lot, Tracking};
use prodops_core::lot_rules::{
    Refusal, StockKey, apply_net, check_row_lots, check_serials_once, lot_net_deltas,
};
use prodops_core::registry::ResourceId;
use serde_json::Value;
use uuid::Uuid;

use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::records;
use crate::store::{SqlValue, Tx};

/// The tracking of each item among `items` that exists in the organization (absent: none).
pub fn trackings(tx: &mut dyn Tx, org: Uuid, items: &[Uuid]) -> ApiResult<HashMap<Uuid, Tracking>> {
    let table = ResourceId::Item.kind().desc().table;
    let mut out = HashMap::with_capacity(items.len());
    for (id, text) in records::get_many_raw(tx, table, org, items)? {
        let item: Value = serde_json::from_str(&text).map_err(ApiError::internal)?;
        let tracking = item
            .get("tracking")
            .cloned()
            .map(serde_json::from_value::<Tracking>)
            .transpose()
            .map_err(ApiError::internal)?
            .unwrap_or_default();
        out.insert(id, tracking);
    }
    Ok(out)
}

/// The lots among `ids` that exist in the organization (another organization's are absent).
pub fn lots_by_id(tx: &mut dyn Tx, org: Uuid, ids: &[Uuid]) -> ApiResult<HashMap<Uuid, Lot>> {
    let table = ResourceId::Lot.kind().desc().table;
    let mut out = HashMap::with_capacity(ids.len());
    for (id, text) in records::get_many_raw(tx, table, org, ids)? {
        let lot: Lot = serde_json::from_str(&text).map_err(ApiError::internal)?;
        out.insert(id, lot);
    }
    Ok(out)
}

/// A core refusal as the API answers it: 400 for a wrong request, 409 for what the ledger does
/// not allow (nothing was written either way: the caller abandons its transaction).
pub fn refusal_error(refusal: Refusal) -> ApiError {
    match refusal {
        Refusal::Invalid(v) => ApiError::violations(v),
        Refusal::Conflict(v) => super::stock::stock_conflict(v),
    }
}

/// Checks the lots of a posting's rows and applies their net change per item, location and
/// lot to `stock_lot` (see the module). `shops` is the shop of each location posted at. A
/// posting of untracked items only costs one read of their items.
pub fn apply_lots(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    rows: &[InventoryTransaction],
    shops: &HashMap<Uuid, Uuid>,
) -> ApiResult<()> {
    let items: Vec<Uuid> = rows
        .iter()
        .map(|r| r.item_id)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let tracking = trackings(tx, ctx.org(), &items)?;
    let any_lot = rows.iter().any(|r| r.lot_id.is_some());
    if !any_lot && !tracking.values().any(|t| t.is_tracked()) {
        return Ok(());
    }
    let lot_ids: Vec<Uuid> = rows
        .iter()
        .filter_map(|r| r.lot_id)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let lots = lots_by_id(tx, ctx.org(), &lot_ids)?;
    let tracking_of = |item: Uuid| tracking.get(&item).copied().unwrap_or_default();
    check_row_lots(rows, tracking_of, |lot| lots.get(&lot)).map_err(refusal_error)?;
    let net: BTreeMap<StockKey, i128> = lot_net_deltas(rows)
        .map_err(|v| ApiError::violations(vec![v]))?
        .into_iter()
        .filter(|(k, _)| k.lot_id.is_some())
        .collect();
    if net.is_empty() {
        return Ok(());
    }
    let is_serial = |lot: Uuid| {
        lots.get(&lot)
            .is_some_and(|l| tracking_of(l.item_id) == Tracking::Serial)
    };
    let serials: Vec<Uuid> = net
        .iter()
        .filter(|(_, d)| **d > 0)
        .filter_map(|(k, _)| k.lot_id)
        .filter(|l| is_serial(*l))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !serials.is_empty() {
        let totals = serial_totals(tx, ctx.org(), &serials)?;
        check_serials_once(&net, is_serial, |lot| {
            totals.get(&lot).copied().unwrap_or(0)
        })
        .map_err(refusal_error)?;
    }
    apply_lot_stock(tx, ctx, &net, shops)
}

/// Each serial's stock over every location (micros). On PostgreSQL the serials' lot records
/// are locked first, in id order, so two postings of one serial at once are judged one after
/// the other (read committed: the second reads what the first wrote); SQLite has one writer.
fn serial_totals(tx: &mut dyn Tx, org: Uuid, serials: &[Uuid]) -> ApiResult<HashMap<Uuid, i64>> {
    let table = ResourceId::Lot.kind().desc().table;
    let mut out = HashMap::with_capacity(serials.len());
    for chunk in serials.chunks(400) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let mut params: Vec<SqlValue> = Vec::with_capacity(1 + chunk.len());
        params.push(org.into());
        params.extend(chunk.iter().map(|id| SqlValue::from(*id)));
        records::lock_rows(tx, table, org, chunk)?;
        let rows = tx.query(
            &format!(
                "SELECT lot_id, CAST(SUM(on_hand) AS BIGINT) FROM stock_lot \
                 WHERE organization_id = ? AND lot_id IN ({marks}) GROUP BY lot_id"
            ),
            &params,
        )?;
        for r in rows {
            let lot = r
                .first()
                .and_then(SqlValue::as_str)
                .and_then(|s| Uuid::parse_str(s).ok());
            if let Some(lot) = lot {
                out.insert(lot, r.get(1).and_then(SqlValue::as_i64).unwrap_or(0));
            }
        }
    }
    Ok(out)
}

/// Applies net changes per item, location and lot in key order, each as one atomic statement
/// whose condition is the stock policy (as `stock` is kept); a refused key is named in a 409.
fn apply_lot_stock(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    net: &BTreeMap<StockKey, i128>,
    shops: &HashMap<Uuid, Uuid>,
) -> ApiResult<()> {
    let now = ctx.now_text();
    let org = ctx.org();
    let mut refused = BTreeMap::new();
    for (key, &delta) in net {
        let Some(lot) = key.lot_id else { continue };
        let shop = shops.get(&key.location_id).copied().unwrap_or_default();
        let applied = if delta > MAX_STOCK_MICROS as i128 || delta < -(MAX_STOCK_MICROS as i128) {
            false
        } else if delta >= 0 {
            let delta = delta as i64;
            tx.execute(
                "INSERT INTO stock_lot (organization_id, item_id, location_id, lot_id, shop_id, on_hand, updated_at) \
                 VALUES (?, ?, ?, ?, ?, ?, ?) \
                 ON CONFLICT (organization_id, item_id, location_id, lot_id) DO UPDATE \
                 SET on_hand = stock_lot.on_hand + excluded.on_hand, updated_at = excluded.updated_at \
                 WHERE stock_lot.on_hand <= ?",
                &[
                    org.into(),
                    key.item_id.into(),
                    key.location_id.into(),
                    lot.into(),
                    shop.into(),
                    SqlValue::Int(delta),
                    now.clone().into(),
                    SqlValue::Int(MAX_STOCK_MICROS - delta),
                ],
            )? == 1
        } else {
            tx.execute(
                "UPDATE stock_lot SET on_hand = on_hand + ?, updated_at = ? \
                 WHERE organization_id = ? AND item_id = ? AND location_id = ? AND lot_id = ? \
                 AND on_hand >= ?",
                &[
                    SqlValue::Int(delta as i64),
                    now.clone().into(),
                    org.into(),
                    key.item_id.into(),
                    key.location_id.into(),
                    lot.into(),
                    SqlValue::Int(-(delta as i64)),
                ],
            )? == 1
        };
        if !applied {
            refused.insert(*key, delta);
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    let mut before = HashMap::new();
    for key in refused.keys() {
        before.insert(*key, lot_on_hand(tx, org, key)?);
    }
    match apply_net(|k| before.get(k).copied().unwrap_or(0), &refused) {
        Err(refusal) => Err(refusal_error(refusal)),
        // The statement refused what the rule allows: only if the row changed between the two
        // statements, which the transaction rules out; refused all the same.
        Ok(_) => Err(super::stock::stock_conflict(
            refused
                .keys()
                .map(|k| {
                    prodops_core::inventory::StockRefusal::Insufficient {
                        on_hand: before.get(k).copied().unwrap_or(0),
                        delta: refused[k],
                    }
                    .violation(k.item_id, k.location_id)
                })
                .collect(),
        )),
    }
}

/// Stock on hand (micros) of one item, location and lot; 0 when it never had any.
pub fn lot_on_hand(tx: &mut dyn Tx, org: Uuid, key: &StockKey) -> ApiResult<i64> {
    let Some(lot) = key.lot_id else {
        return super::stock::on_hand(tx, org, key.item_id, key.location_id);
    };
    let rows = tx.query(
        "SELECT on_hand FROM stock_lot \
         WHERE organization_id = ? AND item_id = ? AND location_id = ? AND lot_id = ?",
        &[
            org.into(),
            key.item_id.into(),
            key.location_id.into(),
            lot.into(),
        ],
    )?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64)
        .unwrap_or(0))
}

/// Stock on hand (micros) of each (item, location, lot) among `keys` that has a row.
pub fn lot_on_hand_many(
    tx: &mut dyn Tx,
    org: Uuid,
    keys: &[(Uuid, Uuid, Uuid)],
) -> ApiResult<HashMap<(Uuid, Uuid, Uuid), i64>> {
    let mut out = HashMap::with_capacity(keys.len());
    for &(item, location, lot) in keys {
        let key = StockKey {
            item_id: item,
            location_id: location,
            lot_id: Some(lot),
        };
        out.insert((item, location, lot), lot_on_hand(tx, org, &key)?);
    }
    Ok(out)
}
