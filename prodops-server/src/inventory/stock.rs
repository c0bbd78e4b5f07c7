//! Stock on hand as the `stock` table keeps it (totals per item and location), and the 409 of
//! a posting the stock policy refuses: what the ledger (`super::post`) and the stock per lot
//! (`super::lots`) both use.

use std::collections::HashMap;

use prodops_core::Violation;
use uuid::Uuid;

use crate::http::error::{ApiError, ApiResult};
use crate::store::{SqlValue, Tx};

/// 409 for postings the stock policy refuses, with every refused item and location in `details`.
pub(super) fn stock_conflict(details: Vec<Violation>) -> ApiError {
    let first = details
        .first()
        .map(|d| d.message.clone())
        .unwrap_or_default();
    let mut err = ApiError::conflict(format!(
        "the posting was refused and nothing was written: {first}"
    ));
    err.details = details;
    err
}

/// Stock on hand (micros) of many items at locations, read in chunks (a key without a stock
/// row is left out: 0).
pub fn on_hand_many(
    tx: &mut dyn Tx,
    org: Uuid,
    keys: &[(Uuid, Uuid)],
) -> ApiResult<HashMap<(Uuid, Uuid), i64>> {
    let mut out = HashMap::with_capacity(keys.len());
    for chunk in keys.chunks(400) {
        let pairs = vec!["(?, ?)"; chunk.len()].join(", ");
        let mut params: Vec<SqlValue> = Vec::with_capacity(1 + 2 * chunk.len());
        params.push(org.into());
        for (item, location) in chunk {
            params.push((*item).into());
            params.push((*location).into());
        }
        let rows = tx.query(
            &format!(
                "SELECT item_id, location_id, on_hand FROM stock \
                 WHERE organization_id = ? AND (item_id, location_id) IN ({pairs})"
            ),
            &params,
        )?;
        for r in rows {
            let id = |i: usize| {
                r.get(i)
                    .and_then(SqlValue::as_str)
                    .and_then(|s| Uuid::parse_str(s).ok())
            };
            if let (Some(item), Some(location)) = (id(0), id(1)) {
                let micros = r.get(2).and_then(SqlValue::as_i64).unwrap_or(0);
                out.insert((item, location), micros);
            }
        }
    }
    Ok(out)
}

/// Stock on hand (micros) of an item at a location; 0 when it never had any.
pub fn on_hand(tx: &mut dyn Tx, org: Uuid, item: Uuid, location: Uuid) -> ApiResult<i64> {
    let rows = tx.query(
        "SELECT on_hand FROM stock WHERE organization_id = ? AND item_id = ? AND location_id = ?",
        &[org.into(), item.into(), location.into()],
    )?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64)
        .unwrap_or(0))
}

/// Whether the item has stock (other than zero) at any location.
pub(super) fn has_stock(tx: &mut dyn Tx, org: Uuid, item: Uuid) -> ApiResult<bool> {
    let rows = tx.query(
        "SELECT 1 FROM stock WHERE organization_id = ? AND item_id = ? AND on_hand <> 0 LIMIT 1",
        &[org.into(), item.into()],
    )?;
    Ok(!rows.is_empty())
}
