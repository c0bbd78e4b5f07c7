//! Reservations (spec 4.5, "allocate"): what a BOM line holds of an item at a location. This
//! module owns the `reservations` table and the `reserved` column of `stock`, whose sum it
//! keeps equal to the reservations of each item and location; BOM allocation reserves through
//! [`reserve`], and consumption uses a reservation up through [`release`].

use prodops_core::registry::ResourceId;
use std::collections::HashMap;

use prodops_core::inventory::to_micros;
use serde_json::Value;
use uuid::Uuid;

use crate::http::context::Ctx;
use crate::http::error::ApiResult;
use crate::inventory::units::Converter;
use crate::store::records;
use crate::store::{SqlValue, Tx};

/// The reservation of a BOM line: (item, location, micros).
fn reservation_of(tx: &mut dyn Tx, ctx: &Ctx, line: Uuid) -> ApiResult<Option<(Uuid, Uuid, i64)>> {
    let rows = tx.query(
        "SELECT item_id, location_id, quantity FROM reservations WHERE organization_id = ? AND bom_line_id = ?",
        &[ctx.org().into(), line.into()],
    )?;
    Ok(rows.first().and_then(|r| {
        let id = |i: usize| r.get(i)?.as_str().and_then(|s| Uuid::parse_str(s).ok());
        Some((id(0)?, id(1)?, r.get(2)?.as_i64()?))
    }))
}

/// Adds `micros` (signed) to the reserved quantity of a stock row, creating it when needed.
fn add_reserved(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    item: Uuid,
    location: Uuid,
    micros: i64,
) -> ApiResult<()> {
    if micros == 0 {
        return Ok(());
    }
    let shop = records::get(
        tx,
        ResourceId::Location.kind().desc().table,
        ctx.org(),
        location,
    )?
    .and_then(|l| uuid_field(&l, "shopId"))
    .unwrap_or_default();
    tx.execute(
        "INSERT INTO stock (organization_id, item_id, location_id, shop_id, on_hand, reserved, updated_at) \
         VALUES (?, ?, ?, ?, 0, ?, ?) \
         ON CONFLICT (organization_id, item_id, location_id) DO UPDATE \
         SET reserved = stock.reserved + excluded.reserved, updated_at = excluded.updated_at",
        &[
            ctx.org().into(),
            item.into(),
            location.into(),
            shop.into(),
            SqlValue::Int(micros),
            ctx.now_text().into(),
        ],
    )?;
    Ok(())
}

/// Sets a BOM line's reservation to `micros` at `location` (0 removes it), keeping
/// `stock.reserved` the sum of reservations.
pub fn reserve(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    line: Uuid,
    item: Uuid,
    location: Uuid,
    micros: i64,
) -> ApiResult<()> {
    if let Some((old_item, old_location, old)) = reservation_of(tx, ctx, line)? {
        add_reserved(tx, ctx, old_item, old_location, -old)?;
    }
    tx.execute(
        "DELETE FROM reservations WHERE organization_id = ? AND bom_line_id = ?",
        &[ctx.org().into(), line.into()],
    )?;
    if micros > 0 {
        tx.execute(
            "INSERT INTO reservations (organization_id, bom_line_id, item_id, location_id, quantity, updated_at) \
             VALUES (?, ?, ?, ?, ?, ?)",
            &[
                ctx.org().into(),
                line.into(),
                item.into(),
                location.into(),
                SqlValue::Int(micros),
                ctx.now_text().into(),
            ],
        )?;
        add_reserved(tx, ctx, item, location, micros)?;
    }
    Ok(())
}

/// Consuming `consumed` of a line (in the line's `unit`) uses up that much of its reservation
/// (kept in the item's base unit).
pub fn release(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    line: Uuid,
    unit: Option<Uuid>,
    consumed: f64,
) -> ApiResult<()> {
    if let Some((item, location, reserved)) = reservation_of(tx, ctx, line)? {
        let consumed = Converter::default().to_base(tx, ctx, item, unit, consumed)?;
        let left = (reserved - to_micros(consumed)).max(0);
        reserve(tx, ctx, line, item, location, left)?;
    }
    Ok(())
}

/// Where a reservation of an item goes: its default location, else the location holding most
/// of it.
pub fn reservation_location(tx: &mut dyn Tx, ctx: &Ctx, item: Uuid) -> ApiResult<Option<Uuid>> {
    if let Some(i) = records::get(tx, ResourceId::Item.kind().desc().table, ctx.org(), item)?
        && let Some(l) = uuid_field(&i, "defaultLocationId")
    {
        return Ok(Some(l));
    }
    let rows = tx.query(
        "SELECT location_id FROM stock WHERE organization_id = ? AND item_id = ? AND on_hand > 0 \
         ORDER BY on_hand DESC, location_id LIMIT 1",
        &[ctx.org().into(), item.into()],
    )?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_str)
        .and_then(|s| Uuid::parse_str(s).ok()))
}

/// What is reserved for a BOM line (micros), 0 for none.
pub fn line_reserved(tx: &mut dyn Tx, ctx: &Ctx, line: Uuid) -> ApiResult<i64> {
    Ok(reservation_of(tx, ctx, line)?.map_or(0, |(_, _, micros)| micros))
}

/// On hand and reserved (micros) of one item, summed over locations.
pub fn item_totals(tx: &mut dyn Tx, org: Uuid, item: Uuid) -> ApiResult<(i64, i64)> {
    let rows = tx.query(
        "SELECT CAST(COALESCE(SUM(on_hand), 0) AS BIGINT), CAST(COALESCE(SUM(reserved), 0) AS BIGINT) \
         FROM stock WHERE organization_id = ? AND item_id = ?",
        &[org.into(), item.into()],
    )?;
    let n = |i: usize| {
        rows.first()
            .and_then(|r| r.get(i))
            .and_then(SqlValue::as_i64)
            .unwrap_or(0)
    };
    Ok((n(0), n(1)))
}

/// On hand and reserved (micros) of every item of the organization, summed over locations.
pub fn totals_by_item(tx: &mut dyn Tx, org: Uuid) -> ApiResult<HashMap<Uuid, (i64, i64)>> {
    let rows = tx.query(
        "SELECT item_id, CAST(SUM(on_hand) AS BIGINT), CAST(SUM(reserved) AS BIGINT) FROM stock \
         WHERE organization_id = ? GROUP BY item_id",
        &[org.into()],
    )?;
    let mut totals = HashMap::with_capacity(rows.len());
    for r in rows {
        if let Some(item) = r
            .first()
            .and_then(SqlValue::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
        {
            let n = |i: usize| r.get(i).and_then(SqlValue::as_i64).unwrap_or(0);
            totals.insert(item, (n(1), n(2)));
        }
    }
    Ok(totals)
}

fn uuid_field(v: &Value, field: &str) -> Option<Uuid> {
    v.get(field)
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}
