//! The inventory ledger and stock on hand (spec 2.7, 4.6; decisions.md section 5).
//!
//! [`post`] is the one way rows enter the ledger: every workflow that moves stock (the
//! restricted `POST /inventory-transaction`, production produce and consume, delivery receiving
//! and shipping) calls it inside its own transaction. It appends the rows through the engine's
//! create pipeline (so they are checked like any record, with the shop resolved from the
//! location) and applies their net change to the `stock` table in the same transaction,
//! enforcing the negative-stock policy of [`prodops_core::inventory::next_on_hand`].

use prodops_core::api;
use prodops_core::registry::ResourceId;
use std::collections::{BTreeMap, HashMap};

use prodops_core::Violation;
use prodops_core::inventory::{
    InventoryTransaction, MAX_POSTING_QUANTITY, MAX_STOCK_MICROS, Stock, StockRefusal,
    TransactionSource, TransactionType, from_micros, net_deltas, next_on_hand, to_micros,
};
use prodops_core::stock_count::{CountRequest, CountResult, check_lines, counted_line, difference};
use serde_json::{Map, Value, json};
use uuid::Uuid;

pub mod corrections;
pub mod lots;
mod stock;
use stock::stock_conflict;
pub use stock::{on_hand, on_hand_many};
pub mod reservations;
pub mod units;

use crate::engine::hooks::Hooks;
use crate::engine::{self, ServedResource, create_records_held_indexed};
use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::http::typed::{Answered, ServedQuery, Shaped};
use crate::store::records;
use crate::store::{SqlValue, Tx};
use prodops_core::api::Page;

/// Appends ledger rows and updates stock on hand, inside the caller's transaction.
///
/// Each row is an inventory-transaction body as a client would send it (`itemId`, `type`,
/// `quantity`, `fromLocationId`/`toLocationId`, and optionally `deliverableId`, `deliveryId`,
/// `pickLineId`, `unitCost`, `unitMeasureId`, `source`, `reason`, `metadata`); any type may be
/// posted here (the restriction to adjust, transfer and return belongs to the public POST).
/// `shopId` is resolved from the posting location (a supplied one is ignored), `unitMeasureId`
/// defaults to the item's unit, quantities are rounded to six decimals.
///
/// Returns the stored rows in input order. Fails, writing nothing the caller can keep (the
/// caller's transaction must be abandoned on error), with
/// - 400 `VALIDATION_ERROR` when a row breaks a rule (details carry `index` when several rows
///   are posted);
/// - 409 `CONFLICT` when the net change of the rows would take stock of an item at a location
///   below zero (or above the stock limit); `details` name each item and location.
pub fn post(tx: &mut dyn Tx, ctx: &Ctx, rows: Vec<Map<String, Value>>) -> ApiResult<Vec<Value>> {
    let res = ctx.resource(ResourceId::InventoryTransaction);
    // Checked one by one, written together in multi-row inserts: a count of 10,000 lines or a
    // produce of 200 rows costs a few inserts, not one each (`LedgerHooks` promise that holding
    // the rows back changes nothing: they read no ledger row, and write nothing after a row).
    let stored = create_records_held_indexed(tx, &corrections::posting_batch(ctx), res, rows)?;
    let mut parsed = Vec::with_capacity(stored.len());
    for record in &stored {
        let typed: InventoryTransaction =
            serde_json::from_value(record.clone()).map_err(ApiError::internal)?;
        parsed.push(typed);
    }
    corrections::check_posting(ctx, &parsed)?;
    // The shop of each location a row posts at (a location the row names but does not post at
    // is not the row's shop's).
    let mut shops: HashMap<Uuid, Uuid> = HashMap::new();
    for row in &parsed {
        for (location, _) in row.deltas().map_err(|v| ApiError::violations(vec![v]))? {
            shops.insert(location, row.shop_id);
        }
    }
    // Lots named as their items' tracking requires, and stock per lot (inventory/lots.rs).
    lots::apply_lots(tx, ctx, &parsed, &shops)?;
    let net = net_deltas(&parsed).map_err(|v| ApiError::violations(vec![v]))?;
    apply_stock(tx, ctx, &net, &shops)?;
    Ok(stored)
}

/// [`post`] of ledger rows built as core's [`InventoryTransaction`] by the workflows that move
/// stock: each row goes in as the body a client would send (the server fields it carries,
/// `shopId`, the entered quantity and unit, are set again by [`LedgerHooks`]).
pub fn post_typed(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    rows: &[InventoryTransaction],
) -> ApiResult<Vec<Value>> {
    let bodies = rows
        .iter()
        .map(engine::record_body)
        .collect::<ApiResult<Vec<_>>>()?;
    match corrections::with_server_fields(ctx, rows) {
        Some(carrier) => post(tx, &carrier, bodies),
        None => post(tx, ctx, bodies),
    }
}

/// Applies net stock changes in key order (the lock order), refusing the whole request when any
/// of them breaks the stock policy. Each change is one atomic statement whose condition is the
/// policy, so concurrent writers cannot slip past it.
fn apply_stock(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    net: &BTreeMap<(Uuid, Uuid), i128>,
    shops: &HashMap<Uuid, Uuid>,
) -> ApiResult<()> {
    let mut refused = Vec::new();
    let now = ctx.now_text();
    for (&(item, location), &delta) in net {
        let shop = shops.get(&location).copied().unwrap_or_default();
        let refusal = if delta > MAX_STOCK_MICROS as i128 || delta < -(MAX_STOCK_MICROS as i128) {
            Some(())
        } else if delta >= 0 {
            let delta = delta as i64;
            let n = tx.execute(
                "INSERT INTO stock (organization_id, item_id, location_id, shop_id, on_hand, reserved, updated_at) \
                 VALUES (?, ?, ?, ?, ?, 0, ?) \
                 ON CONFLICT (organization_id, item_id, location_id) DO UPDATE \
                 SET on_hand = stock.on_hand + excluded.on_hand, updated_at = excluded.updated_at \
                 WHERE stock.on_hand <= ?",
                &[
                    ctx.org().into(),
                    item.into(),
                    location.into(),
                    shop.into(),
                    SqlValue::Int(delta),
                    now.clone().into(),
                    SqlValue::Int(MAX_STOCK_MICROS - delta),
                ],
            )?;
            (n == 0).then_some(())
        } else {
            let n = tx.execute(
                "UPDATE stock SET on_hand = on_hand + ?, updated_at = ? \
                 WHERE organization_id = ? AND item_id = ? AND location_id = ? AND on_hand >= ?",
                &[
                    SqlValue::Int(delta as i64),
                    now.clone().into(),
                    ctx.org().into(),
                    item.into(),
                    location.into(),
                    SqlValue::Int(-(delta as i64)),
                ],
            )?;
            (n == 0).then_some(())
        };
        if refusal.is_some() {
            let on_hand = on_hand(tx, ctx.org(), item, location)?;
            let why = next_on_hand(on_hand, delta).err().unwrap_or(
                // The statement refused what the rule allows: only possible if the row changed
                // between the two statements, which the transaction rules out; report it as the
                // policy would.
                StockRefusal::Insufficient { on_hand, delta },
            );
            refused.push(why.violation(item, location));
        }
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(stock_conflict(refused))
    }
}

fn uuid_of(map: &Map<String, Value>, field: &str) -> Option<Uuid> {
    map.get(field)
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}

/// Ledger rows: the shop comes from the posting location, the unit defaults to the item's, the
/// item and locations must exist in the organization, a transfer stays within one shop, and no
/// stock goes into an archived location.
pub struct LedgerHooks;

impl Hooks for LedgerHooks {
    /// A posting's rows wait to be written together ([`post`]): `before_create` reads the
    /// item, its units and the locations, never a ledger row, and no hook runs after a row is
    /// written.
    fn hold_hooked_creates(&self) -> bool {
        true
    }

    fn before_create(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        candidate: &mut Map<String, Value>,
    ) -> ApiResult<()> {
        corrections::restore_server_fields(ctx, candidate);
        let mut violations = Vec::new();
        if let Some(item_id) = uuid_of(candidate, "itemId") {
            match records::get(tx, ResourceId::Item.kind().desc().table, ctx.org(), item_id)? {
                None => violations.push(Violation::field(
                    "itemId",
                    format!("no item {item_id} in this organization"),
                )),
                Some(item) => {
                    if let Err(v) = to_base_unit(tx, ctx, &item, candidate)? {
                        violations.push(v);
                    }
                }
            }
        }
        let kind: Option<TransactionType> = candidate
            .get("type")
            .and_then(|t| serde_json::from_value(t.clone()).ok());
        let quantity = candidate.get("quantity").and_then(Value::as_f64);
        let from = uuid_of(candidate, "fromLocationId");
        let to = uuid_of(candidate, "toLocationId");
        // Which locations the row actually moves stock at; unused ones are still checked to exist.
        let mut deltas = match (kind, quantity) {
            (Some(kind), Some(q)) => {
                prodops_core::inventory::posting_deltas(kind, q, from, to).unwrap_or_default()
            }
            _ => Vec::new(),
        };
        if corrections::is_reversal(candidate) {
            for (_, delta) in &mut deltas {
                *delta = -*delta;
            }
        }
        let mut shop_of_posting = None;
        let mut shops = Vec::new();
        for (field, location_id) in [("fromLocationId", from), ("toLocationId", to)] {
            let Some(location_id) = location_id else {
                continue;
            };
            let Some(location) = records::get(
                tx,
                ResourceId::Location.kind().desc().table,
                ctx.org(),
                location_id,
            )?
            else {
                violations.push(Violation::field(
                    field,
                    format!("no location {location_id} in this organization"),
                ));
                continue;
            };
            let shop = location
                .get("shopId")
                .and_then(Value::as_str)
                .and_then(|s| Uuid::parse_str(s).ok())
                .unwrap_or_default();
            let used = deltas.iter().find(|(l, _)| *l == location_id);
            if let Some((_, delta)) = used {
                if shop_of_posting.is_none() {
                    shop_of_posting = Some(shop);
                }
                shops.push((field, shop));
                let archived = location
                    .get("isArchived")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                if archived && *delta > 0.0 {
                    violations.push(Violation::field(
                        field,
                        format!("location {location_id} is archived; stock cannot be put there"),
                    ));
                }
            }
        }
        if kind == Some(TransactionType::Transfer)
            && let [(_, a), (_, b)] = shops.as_slice()
            && a != b
        {
            violations.push(Violation::field(
                "toLocationId",
                "a transfer stays within one shop (department): both locations must belong to the same shop",
            ));
        }
        if !violations.is_empty() {
            return Err(ApiError::violations(violations));
        }
        // The shop is determined by the posting location; a supplied one was already dropped
        // as read-only. Until the row's type and locations make sense it stays unset (nil) and
        // the record's own rules report what is wrong.
        if let Some(shop) = shop_of_posting {
            candidate.insert("shopId".into(), json!(shop));
        }
        // Ledger rows never change: updatedAt is createdAt.
        if let Some(created) = candidate.get("createdAt").cloned() {
            candidate.insert("updatedAt".into(), created);
        }
        Ok(())
    }
}

/// Converts a posting's quantity from the unit it is entered in (`unitMeasureId`, default the
/// item's) to the item's base unit: `quantity` and `unitMeasureId` become the base unit's,
/// `enteredQuantity` and `enteredUnitMeasureId` keep what was entered. A unit without a
/// conversion is a violation naming `unitMeasureId`.
fn to_base_unit(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    item: &Value,
    candidate: &mut Map<String, Value>,
) -> ApiResult<Result<(), Violation>> {
    let (base, _) = units::Converter::item_units(item);
    let entered = uuid_of(candidate, "unitMeasureId");
    if candidate
        .get("unitMeasureId")
        .is_some_and(|u| !u.is_null() && entered.is_none())
    {
        // Not a UUID: the record's own check names it.
        return Ok(Ok(()));
    }
    let factor = match units::Converter::default().factor_for(tx, ctx, item, entered)? {
        Ok(f) => f,
        Err(why) => return Ok(Err(Violation::field("unitMeasureId", why))),
    };
    let Some(quantity) = candidate.get("quantity").and_then(Value::as_f64) else {
        return Ok(Ok(()));
    };
    let Some(converted) = factor.apply(quantity) else {
        return Ok(Err(Violation::field(
            "quantity",
            "the quantity in the item's base unit is beyond what the ledger holds",
        )));
    };
    candidate.insert("enteredQuantity".into(), json!(quantity));
    candidate.insert("enteredUnitMeasureId".into(), json!(entered.or(base)));
    candidate.insert("quantity".into(), json!(converted));
    candidate.insert("unitMeasureId".into(), json!(base));
    Ok(Ok(()))
}

// ----- endpoints -----------------------------------------------------------------------------

// The handlers of this family's declared actions (`prodops_core::api::inventory`); the router
// serves each on its declared method and path, behind its declared access.
crate::http::action::handle! {
    api::inventory::PostTransaction => post_transaction;
    api::inventory::StockList => list_stock;
    api::inventory::Count => count;
}

/// `POST /inventory-transaction`: one adjust, transfer or return row (spec 4.6). Needs
/// `Item.Update`. 201 with the stored row.
async fn post_transaction(
    call: Call,
    (): (),
    (): (),
    body: Value,
) -> ApiResult<Answered<api::inventory::PostTransaction>> {
    let Value::Object(body) = body else {
        return Err(ApiError::validation(
            "the body of POST /inventory-transaction is one JSON object",
        ));
    };
    if let Some(kind) = body.get("type").and_then(Value::as_str)
        && let Ok(kind) = serde_json::from_value::<TransactionType>(json!(kind))
        && !kind.is_manually_postable()
    {
        let posted_by = match kind {
            TransactionType::Receipt => {
                "POST /delivery/{id}/receive and the completion of a delivery with a destination"
            }
            TransactionType::Ship => "the completion of an outbound or transfer delivery",
            _ => "the production actions",
        };
        return Err(ApiError::field(
            "type",
            format!(
                "type {} is posted only by {posted_by}; POST /inventory-transaction accepts adjust, transfer and return",
                kind.as_str()
            ),
        ));
    }
    call.write(move |tx, ctx| {
        let mut stored = post(tx, ctx, vec![body.clone()])?;
        Ok(Shaped::record(stored.remove(0)))
    })
    .await
}

/// The filters and page of `GET /stock`, read from its query: SQL conditions on the stock
/// view and their arguments after the organization's.
pub struct StockFilter {
    conds: String,
    args: Vec<SqlValue>,
    /// `groupBy=lot` (or a `lotId` filter): rows per lot for tracked items.
    by_lot: bool,
    /// `lotId`: only this lot.
    lot_id: Option<Uuid>,
    page: u64,
    page_size: u64,
}

impl ServedQuery for api::inventory::StockQuery {
    type Value = StockFilter;
    fn from_query(query: Option<&str>) -> ApiResult<StockFilter> {
        stock_filter(query)
    }
}

fn stock_filter(query: Option<&str>) -> ApiResult<StockFilter> {
    let mut conds = String::new();
    let mut params: Vec<SqlValue> = Vec::new();
    let mut page = 1u64;
    let mut page_size = engine::DEFAULT_PAGE_SIZE;
    let mut by_lot = false;
    let mut lot_id = None;
    for (key, value) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        let (key, value) = (key.into_owned(), value.into_owned());
        match key.as_str() {
            "itemId" | "locationId" | "shopId" => {
                let id = Uuid::parse_str(&value)
                    .map_err(|_| ApiError::field(&key, format!("'{value}' is not a UUID")))?;
                let column = match key.as_str() {
                    "itemId" => "item_id",
                    "locationId" => "location_id",
                    _ => "shop_id",
                };
                conds.push_str(&format!(" AND {column} = ?"));
                params.push(id.into());
            }
            "lotId" => {
                let id = Uuid::parse_str(&value)
                    .map_err(|_| ApiError::field(&key, format!("'{value}' is not a UUID")))?;
                lot_id = Some(id);
                by_lot = true;
            }
            "groupBy" => {
                if value != "lot" {
                    return Err(ApiError::field(
                        "groupBy",
                        format!("'{value}': stock is grouped by lot (groupBy=lot) or not at all"),
                    ));
                }
                by_lot = true;
            }
            "page" => {
                page = value
                    .parse()
                    .ok()
                    .filter(|p| (1..=engine::MAX_PAGE).contains(p))
                    .ok_or_else(|| {
                        ApiError::field(
                            "page",
                            format!("must be a whole number from 1 to {}", engine::MAX_PAGE),
                        )
                    })?
            }
            "pageSize" => {
                page_size = value
                    .parse()
                    .ok()
                    .filter(|p| (1..=engine::MAX_PAGE_SIZE).contains(p))
                    .ok_or_else(|| {
                        ApiError::field(
                            "pageSize",
                            format!("must be a whole number from 1 to {}", engine::MAX_PAGE_SIZE),
                        )
                    })?
            }
            _ => {
                return Err(ApiError::field(
                    &key,
                    "unknown parameter for /stock (itemId, locationId, shopId, lotId, groupBy, page, pageSize)",
                ));
            }
        }
    }
    Ok(StockFilter {
        conds,
        args: params,
        by_lot,
        lot_id,
        page,
        page_size,
    })
}

/// `GET /stock?itemId=&locationId=&shopId=&page=&pageSize=`: stock on hand per item and
/// location, ordered by item then location. Needs `Item.Read`.
async fn list_stock(
    call: Call,
    (): (),
    filter: StockFilter,
    (): (),
) -> ApiResult<Answered<api::inventory::StockList>> {
    let StockFilter {
        conds,
        args,
        by_lot,
        lot_id,
        page,
        page_size,
    } = filter;
    if by_lot {
        return list_stock_by_lot(call, conds, args, lot_id, page, page_size).await;
    }
    let mut params: Vec<SqlValue> = vec![call.org().into()];
    params.extend(args);
    let body = call
        .state
        .store
        .read(move |tx| {
            let mut list_params = params.clone();
            list_params.push(SqlValue::Int(page_size as i64));
            list_params.push(SqlValue::Int(((page - 1) * page_size) as i64));
            let rows = tx.query(
                &format!(
                    "SELECT item_id, location_id, shop_id, on_hand, reserved FROM stock \
                     WHERE organization_id = ?{conds} ORDER BY item_id, location_id LIMIT ? OFFSET ?"
                ),
                &list_params,
            )?;
            let total = tx.query(
                &format!("SELECT COUNT(*) FROM stock WHERE organization_id = ?{conds}"),
                &params,
            )?;
            let values = rows
                .into_iter()
                .map(|r| stock_of(&r).map(Shaped::from))
                .collect::<ApiResult<Vec<_>>>()?;
            let total = total
                .first()
                .and_then(|r| r.first())
                .and_then(SqlValue::as_i64)
                .unwrap_or(0);
            Ok::<_, ApiError>(Page {
                values,
                total_count: total as u64,
                next_cursor: None,
            })
        })
        .await?;
    Ok(Answered::new(body.into()))
}

/// `GET /stock?groupBy=lot` (or `lotId=`): the rows of `stock_lot` (one per item, location
/// and lot of tracked items, `reserved` 0: reservations are per item and location) and, unless
/// a lot is asked for, the rows of `stock` without lots (untracked items, as without
/// `groupBy`), ordered by item, location and lot.
async fn list_stock_by_lot(
    call: Call,
    conds: String,
    args: Vec<SqlValue>,
    lot_id: Option<Uuid>,
    page: u64,
    page_size: u64,
) -> ApiResult<Answered<api::inventory::StockList>> {
    let org: SqlValue = call.org().into();
    let (lot_cond, lot_arg) = match lot_id {
        Some(lot) => (" AND lot_id = ?", vec![SqlValue::from(lot)]),
        None => ("", Vec::new()),
    };
    let mut params: Vec<SqlValue> = vec![org.clone()];
    params.extend(args.iter().cloned());
    params.extend(lot_arg);
    let mut union = format!(
        "SELECT item_id, location_id, shop_id, on_hand, 0 AS reserved, lot_id FROM stock_lot \
         WHERE organization_id = ?{conds}{lot_cond}"
    );
    if lot_id.is_none() {
        union.push_str(&format!(
            " UNION ALL SELECT item_id, location_id, shop_id, on_hand, reserved, NULL AS lot_id \
             FROM stock s WHERE organization_id = ?{conds} AND NOT EXISTS (SELECT 1 FROM stock_lot l \
             WHERE l.organization_id = s.organization_id AND l.item_id = s.item_id \
             AND l.location_id = s.location_id)"
        ));
        params.push(org);
        params.extend(args);
    }
    let body = call
        .state
        .store
        .read(move |tx| {
            let mut list_params = params.clone();
            list_params.push(SqlValue::Int(page_size as i64));
            list_params.push(SqlValue::Int(((page - 1) * page_size) as i64));
            let rows = tx.query(
                &format!(
                    "SELECT * FROM ({union}) u ORDER BY item_id, location_id, lot_id LIMIT ? OFFSET ?"
                ),
                &list_params,
            )?;
            let total = tx.query(&format!("SELECT COUNT(*) FROM ({union}) u"), &params)?;
            let values = rows
                .into_iter()
                .map(|r| {
                    let mut stock = stock_of(&r)?;
                    stock.lot_id = r
                        .get(5)
                        .and_then(SqlValue::as_str)
                        .and_then(|s| Uuid::parse_str(s).ok());
                    Ok(Shaped::from(stock))
                })
                .collect::<ApiResult<Vec<_>>>()?;
            let total = total
                .first()
                .and_then(|r| r.first())
                .and_then(SqlValue::as_i64)
                .unwrap_or(0);
            Ok::<_, ApiError>(Page {
                values,
                total_count: total as u64,
                next_cursor: None,
            })
        })
        .await?;
    Ok(Answered::new(body.into()))
}

fn stock_of(row: &[SqlValue]) -> ApiResult<Stock> {
    let id = |i: usize| {
        row.get(i)
            .and_then(SqlValue::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
            .ok_or_else(|| ApiError::internal("stock row without ids"))
    };
    let micros = |i: usize| row.get(i).and_then(SqlValue::as_i64).unwrap_or(0);
    Ok(Stock {
        item_id: id(0)?,
        location_id: id(1)?,
        shop_id: id(2)?,
        on_hand: from_micros(micros(3)),
        reserved: from_micros(micros(4)),
        lot_id: None,
    })
}

/// `POST /inventory/count`: each line's counted quantity (converted to the item's base unit)
/// compared with stock on hand as of the count, in the count's transaction, and one `adjust`
/// row (source `count`) posted per difference, all in that transaction. A dry run answers the
/// same comparison and posts nothing. Needs `Item.Update`.
async fn count(
    call: Call,
    (): (),
    (): (),
    req: CountRequest,
) -> ApiResult<Answered<api::inventory::Count>> {
    let v = check_lines(&req.lines);
    if !v.is_empty() {
        return Err(ApiError::violations(v));
    }
    call.write(move |tx, ctx| Ok(count_in(tx, ctx, &req)?.into()))
        .await
}

/// The count inside a transaction (see [`count`]).
pub fn count_in(tx: &mut dyn Tx, ctx: &Ctx, req: &CountRequest) -> ApiResult<CountResult> {
    let mut converter = units::Converter::default();
    let mut locations: HashMap<Uuid, bool> = HashMap::new();
    let mut violations = Vec::new();
    // Stock as of the count, read in this transaction.
    let keys: Vec<(Uuid, Uuid)> = req
        .lines
        .iter()
        .map(|l| (l.item_id, l.location_id))
        .collect();
    let stock_before = on_hand_many(tx, ctx.org(), &keys)?;
    // Lines of a lot compare the stock of that lot (inventory/lots.rs).
    let lot_before = lots::lot_on_hand_many(tx, ctx.org(), &count_lot_keys(req))?;
    let mut answers = Vec::with_capacity(req.lines.len());
    let mut rows = Vec::new();
    // The line each posted row belongs to.
    let mut row_lines = Vec::new();
    for (i, line) in req.lines.iter().enumerate() {
        let known = match locations.get(&line.location_id) {
            Some(known) => *known,
            None => {
                let known = records::get(
                    tx,
                    ResourceId::Location.kind().desc().table,
                    ctx.org(),
                    line.location_id,
                )?
                .is_some();
                locations.insert(line.location_id, known);
                known
            }
        };
        if !known {
            violations.push(Violation::field(
                format!("lines[{i}].locationId"),
                format!("no location {} in this organization", line.location_id),
            ));
        }
        let unit_field = format!("lines[{i}].unitMeasureId");
        let counted =
            match converter.factor(tx, ctx, line.item_id, line.unit_measure_id, &unit_field) {
                Ok(factor) => factor.apply(line.quantity),
                Err(mut e) => {
                    for d in &mut e.details {
                        if d.field.as_deref() == Some("itemId") {
                            d.field = Some(format!("lines[{i}].itemId"));
                        }
                    }
                    violations.extend(e.details);
                    continue;
                }
            };
        let Some(counted) = counted.filter(|c| c.abs() <= MAX_POSTING_QUANTITY) else {
            violations.push(Violation::field(
                format!("lines[{i}].quantity"),
                "the counted quantity in the item's base unit is beyond what the ledger holds",
            ));
            continue;
        };
        if !known {
            continue;
        }
        let before = match line.lot_id {
            Some(lot) => lot_before
                .get(&(line.item_id, line.location_id, lot))
                .copied()
                .unwrap_or(0),
            None => stock_before
                .get(&(line.item_id, line.location_id))
                .copied()
                .unwrap_or(0),
        };
        let answer = counted_line(line, counted, before);
        let delta = difference(counted, before);
        if delta != 0 && !req.dry_run {
            let count = json!({"counted": answer.counted, "onHand": answer.on_hand});
            rows.push(InventoryTransaction {
                id: Uuid::now_v7(),
                organization_id: ctx.org(),
                item_id: line.item_id,
                shop_id: Uuid::nil(),
                kind: TransactionType::Adjust,
                quantity: from_micros(delta),
                unit_measure_id: None,
                entered_quantity: None,
                entered_unit_measure_id: None,
                unit_cost: None,
                from_location_id: None,
                to_location_id: Some(line.location_id),
                deliverable_id: None,
                delivery_id: None,
                pick_line_id: None,
                source: TransactionSource::Count,
                reason: req.reason.clone(),
                app_user_id: None,
                metadata: Map::from_iter([("count".to_string(), count)]),
                created_at: ctx.now,
                updated_at: ctx.now,
                lot_id: line.lot_id,
                reverses_id: None,
            });
            row_lines.push(answers.len());
        }
        answers.push(answer);
    }
    if !violations.is_empty() {
        return Err(ApiError::violations(violations));
    }
    let differences = answers.iter().filter(|a| a.difference != 0.0).count();
    if !rows.is_empty() {
        let posted = post_typed(tx, ctx, &rows).map_err(|mut e| {
            // A row's index is its line's.
            for d in &mut e.details {
                if let Some(row) = d.index.take() {
                    d.field = Some(format!(
                        "lines[{}].{}",
                        row_lines[row],
                        d.field.as_deref().unwrap_or("quantity")
                    ));
                }
            }
            e
        })?;
        for (stored, &line) in posted.iter().zip(&row_lines) {
            answers[line].transaction_id = uuid_field_of(stored, "id");
        }
        // Stock is now what was counted, unless another request moved it between the
        // comparison and the adjustment (PostgreSQL): then the count is refused, not skewed.
        let adjusted: Vec<(Uuid, Uuid)> = row_lines
            .iter()
            .map(|&l| (answers[l].item_id, answers[l].location_id))
            .collect();
        let after = on_hand_many(tx, ctx.org(), &adjusted)?;
        let lot_after = lots::lot_on_hand_many(tx, ctx.org(), &count_lot_keys(req))?;
        for &line in &row_lines {
            let a = &answers[line];
            let now = match a.lot_id {
                Some(lot) => lot_after.get(&(a.item_id, a.location_id, lot)).copied(),
                None => after.get(&(a.item_id, a.location_id)).copied(),
            }
            .unwrap_or(0);
            if now != to_micros(a.counted) {
                return Err(ApiError::conflict(format!(
                    "stock of item {} at location {} changed while the count was posted; nothing was written, post the count again",
                    a.item_id, a.location_id
                )));
            }
        }
    }
    Ok(CountResult {
        lines: answers,
        differences,
        dry_run: req.dry_run,
    })
}

/// The (item, location, lot) of each count line naming a lot.
fn count_lot_keys(req: &CountRequest) -> Vec<(Uuid, Uuid, Uuid)> {
    req.lines
        .iter()
        .filter_map(|l| l.lot_id.map(|lot| (l.item_id, l.location_id, lot)))
        .collect()
}

fn uuid_field_of(v: &Value, field: &str) -> Option<Uuid> {
    v.get(field)
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}
