//! The rules of postings that name lots (issue 37): which rows must name a lot, serials, which
//! lots a consume takes, reversals, the freeze date, backdated postings and the trace. Plain
//! functions over ledger rows and the facts a caller reads; [`LotLedger`] is the ledger they
//! keep, in memory, against which they are property-tested.
//!
//! Stock of a tracked item is kept per item, location and lot ([`StockKey`]); the negative-stock
//! policy ([`crate::inventory::next_on_hand`]) applies to each such key, and to each key at
//! every later moment when a posting is backdated.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::inventory::{
    InventoryTransaction, MAX_STOCK_MICROS, StockRefusal, TransactionType, from_micros,
    next_on_hand, to_micros,
};
use crate::lot::{Lot, Tracking};
use crate::openapi::ToSchema;
use crate::violation::Violation;

/// One unit, in micros: the most of a serial that exists.
pub const SERIAL_UNIT: i64 = 1_000_000;

/// The deepest trace: lots this many generations away from the start.
pub const MAX_TRACE_DEPTH: u32 = 32;

/// Why a rule refused a posting: the status a server answers follows the variant.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// The request itself is wrong (400 `VALIDATION_ERROR`): a tracked item without a lot, a
    /// lot of another item, a serial's quantity other than 0 or 1.
    Invalid(Vec<Violation>),
    /// The request is right but the ledger does not allow it (409 `CONFLICT`): too little
    /// stock, a serial on hand twice, a frozen date, a posting reversed already.
    Conflict(Vec<Violation>),
}

impl Refusal {
    /// The violations, whatever the status.
    pub fn violations(&self) -> &[Violation] {
        match self {
            Refusal::Invalid(v) | Refusal::Conflict(v) => v,
        }
    }
}

/// Which lots a consume takes when the request names none: an organization setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum LotPicking {
    /// First in, first out: the lot created (received or produced) first.
    #[default]
    Fifo,
    /// First expired, first out: the lot that expires first; lots without an expiry last,
    /// ties by code, then by creation.
    Fefo,
}

/// An organization's settings of the stock rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StockSettings {
    /// No posting is dated on or before this day (UTC): the books up to it are closed.
    #[serde(default)]
    pub stock_frozen_until: Option<NaiveDate>,
    /// Which lots a consume takes when it names none.
    #[serde(default)]
    pub lot_picking: LotPicking,
}

/// Where stock of one item is kept: at a location, of a lot (`None` for an untracked item).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StockKey {
    pub item_id: Uuid,
    pub location_id: Uuid,
    pub lot_id: Option<Uuid>,
}

/// The net stock change of rows per [`StockKey`], in micros, in key order (the lock order).
pub fn lot_net_deltas(
    rows: &[InventoryTransaction],
) -> Result<BTreeMap<StockKey, i128>, Violation> {
    let mut net: BTreeMap<StockKey, i128> = BTreeMap::new();
    for row in rows {
        for (location_id, delta) in row.deltas()? {
            let key = StockKey {
                item_id: row.item_id,
                location_id,
                lot_id: row.lot_id,
            };
            *net.entry(key).or_default() += to_micros(delta) as i128;
        }
    }
    Ok(net)
}

/// The checks of each row's lot against its item (400 when broken, naming the field; indexed
/// by row when there are several):
///
/// - a row of an item tracked by lot or serial names its `lotId`; a row of an untracked item
///   names none;
/// - the lot exists in the organization (`lot_of` answers `None` for another organization's)
///   and is a lot of the row's item;
/// - a row of a serial moves 0 or 1 of it (a signed adjust: -1, 0 or 1).
///
/// `tracking_of` answers the item's tracking, `lot_of` the lot.
pub fn check_row_lots<'a>(
    rows: &[InventoryTransaction],
    tracking_of: impl Fn(Uuid) -> Tracking,
    lot_of: impl Fn(Uuid) -> Option<&'a Lot>,
) -> Result<(), Refusal> {
    let many = rows.len() > 1;
    let mut violations = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let tracking = tracking_of(row.item_id);
        let mut push = |field: &str, message: String| {
            let v = Violation::field(field, message);
            violations.push(if many { v.at_index(i) } else { v });
        };
        match (tracking.is_tracked(), row.lot_id) {
            (true, None) => push(
                "lotId",
                format!(
                    "item {} is tracked by {}: every posting of it names its lotId",
                    row.item_id,
                    tracking.as_str()
                ),
            ),
            (false, Some(_)) => push(
                "lotId",
                format!(
                    "item {} is not tracked by lot or serial: its postings name no lotId",
                    row.item_id
                ),
            ),
            (true, Some(lot_id)) => match lot_of(lot_id) {
                None => push("lotId", format!("no lot {lot_id} in this organization")),
                Some(lot) if lot.item_id != row.item_id => push(
                    "lotId",
                    format!(
                        "lot {:?} is a lot of item {}, not of item {}",
                        lot.code, lot.item_id, row.item_id
                    ),
                ),
                Some(_) => {}
            },
            (false, None) => {}
        }
        if tracking == Tracking::Serial {
            let micros = to_micros(row.quantity).abs();
            if micros != 0 && micros != SERIAL_UNIT {
                push(
                    "quantity",
                    format!(
                        "item {} is tracked by serial: a posting moves 0 or 1 of a serial, not {}",
                        row.item_id, row.quantity
                    ),
                );
            }
        }
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(Refusal::Invalid(violations))
    }
}

/// The negative-stock policy per item, location and lot: the stock after `net` (micros) is
/// applied to `on_hand`, or a 409 naming each key that would go below zero (or past the limit).
pub fn apply_net(
    on_hand: impl Fn(&StockKey) -> i64,
    net: &BTreeMap<StockKey, i128>,
) -> Result<BTreeMap<StockKey, i64>, Refusal> {
    let mut after = BTreeMap::new();
    let mut violations = Vec::new();
    for (key, &delta) in net {
        let before = on_hand(key);
        match next_on_hand(before, delta) {
            Ok(next) => {
                after.insert(*key, next);
            }
            Err(refusal) => violations.push(key_violation(refusal, key)),
        }
    }
    if violations.is_empty() {
        Ok(after)
    } else {
        Err(Refusal::Conflict(violations))
    }
}

fn key_violation(refusal: StockRefusal, key: &StockKey) -> Violation {
    let mut v = refusal.violation(key.item_id, key.location_id);
    if let Some(lot) = key.lot_id {
        v.message = format!("{} (lot {lot})", v.message);
    }
    v
}

/// A serial is never on hand twice: after the posting, the stock of each serial the posting
/// moves, summed over every location, is at most one unit. `total_of` answers a serial's stock
/// over every location before the posting (micros); `is_serial` whether a lot is one.
pub fn check_serials_once(
    net: &BTreeMap<StockKey, i128>,
    is_serial: impl Fn(Uuid) -> bool,
    total_of: impl Fn(Uuid) -> i64,
) -> Result<(), Refusal> {
    let mut moved: BTreeMap<Uuid, i128> = BTreeMap::new();
    for (key, delta) in net {
        if let Some(lot) = key.lot_id.filter(|lot| is_serial(*lot)) {
            *moved.entry(lot).or_default() += delta;
        }
    }
    let violations: Vec<Violation> = moved
        .into_iter()
        .filter_map(|(lot, delta)| {
            let after = total_of(lot) as i128 + delta;
            (after > SERIAL_UNIT as i128).then(|| {
                Violation::field(
                    "lotId",
                    format!(
                        "serial {lot} would be on hand {} times: a serial is on hand at one location at most, once",
                        after as f64 / SERIAL_UNIT as f64
                    ),
                )
            })
        })
        .collect();
    if violations.is_empty() {
        Ok(())
    } else {
        Err(Refusal::Conflict(violations))
    }
}

/// The freeze date: nothing is posted on or before `frozen_until` (a UTC day). A refusal is
/// 409 naming the date, under `field` (the posting's date field). A reversal of a frozen
/// posting is dated when it is made, so a closed period is corrected after it, never in it.
pub fn check_not_frozen(
    frozen_until: Option<NaiveDate>,
    at: DateTime<Utc>,
    field: &str,
) -> Result<(), Refusal> {
    match frozen_until {
        Some(until) if at.date_naive() <= until => Err(Refusal::Conflict(vec![Violation::field(
            field,
            format!(
                "stock is frozen until {until} (stockFrozenUntil): no posting is dated on or before that day; this one is dated {}",
                at.date_naive()
            ),
        )])),
        _ => Ok(()),
    }
}

/// A stock movement already in the ledger: when it happened, where, and how much (micros).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Movement {
    pub at: DateTime<Utc>,
    pub key: StockKey,
    pub delta: i128,
}

/// A posting dated `at`, judged against every moment after it: given the movements of the
/// keys it changes (in the order they were recorded; those dated at `at` or before count as
/// earlier), the running stock of each key stays within the policy from `at` on, and a serial
/// is never on hand twice from `at` on. A posting dated after every movement is judged by where
/// it leaves stock, as [`apply_net`] does; a backdated one also by each later balance (a
/// backdated consume that would have left a later consume without stock is refused, 409).
pub fn check_later_balances(
    history: &[Movement],
    at: DateTime<Utc>,
    net: &BTreeMap<StockKey, i128>,
    is_serial: impl Fn(Uuid) -> bool,
) -> Result<(), Refusal> {
    let mut violations = Vec::new();
    let timeline = |keep: &dyn Fn(&StockKey) -> bool| {
        let mut moves: Vec<(DateTime<Utc>, usize, i128)> = history
            .iter()
            .enumerate()
            .filter(|(_, m)| keep(&m.key))
            .map(|(i, m)| (m.at, i, m.delta))
            .collect();
        moves.sort();
        // Judged per instant: the rows of one moment (a transfer's two ends, a reversal's
        // opposite ends) count together, never half applied.
        let mut merged: Vec<(DateTime<Utc>, usize, i128)> = Vec::with_capacity(moves.len());
        for m in moves {
            match merged.last_mut() {
                Some(last) if last.0 == m.0 => last.2 += m.2,
                _ => merged.push(m),
            }
        }
        merged
    };
    // The posting's own delta goes in after every movement dated at `at` or before.
    let replay =
        |moves: &[(DateTime<Utc>, usize, i128)], delta: i128, within: &dyn Fn(i128) -> bool| {
            let mut balance: i128 = 0;
            let mut posted = false;
            for &(when, _, d) in moves {
                if !posted && when > at {
                    balance += delta;
                    posted = true;
                    if !within(balance) {
                        return Some((at, balance));
                    }
                }
                balance += d;
                if posted && !within(balance) {
                    return Some((when, balance));
                }
            }
            if !posted {
                balance += delta;
                if !within(balance) {
                    return Some((at, balance));
                }
            }
            None
        };
    let in_policy = |b: i128| (0..=MAX_STOCK_MICROS as i128).contains(&b);
    for (key, &delta) in net {
        let moves = timeline(&|k| k == key);
        if let Some((when, balance)) = replay(&moves, delta, &in_policy) {
            let what = match key.lot_id {
                Some(lot) => format!(" (lot {lot})"),
                None => String::new(),
            };
            violations.push(Violation::field(
                "quantity",
                format!(
                    "a posting dated {at} would leave {} of item {} at location {}{what} at {when}; stock on hand never goes below zero (or past the limit), at any later moment either",
                    balance as f64 / SERIAL_UNIT as f64,
                    key.item_id,
                    key.location_id
                ),
            ));
        }
    }
    let mut serials: BTreeMap<Uuid, i128> = BTreeMap::new();
    for (key, delta) in net {
        if let Some(lot) = key.lot_id.filter(|lot| is_serial(*lot)) {
            *serials.entry(lot).or_default() += delta;
        }
    }
    for (lot, delta) in serials {
        let moves = timeline(&|k| k.lot_id == Some(lot));
        if let Some((when, _)) = replay(&moves, delta, &|b| b <= SERIAL_UNIT as i128) {
            violations.push(Violation::field(
                "lotId",
                format!(
                    "a posting dated {at} would have serial {lot} on hand twice at {when}: a serial is on hand once at most"
                ),
            ));
        }
    }
    if violations.is_empty() {
        Ok(())
    } else {
        Err(Refusal::Conflict(violations))
    }
}

/// A lot of the item being consumed, with its stock where the consume takes from (micros).
#[derive(Debug, Clone, Copy)]
pub struct LotStock<'a> {
    pub lot: &'a Lot,
    pub on_hand: i64,
}

/// One lot a consume request names, in the order to take them; `quantity` (micros) takes
/// exactly that much of it, without one it takes what the lot holds, up to what is still needed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LotRequest {
    pub lot_id: Uuid,
    pub quantity: Option<i64>,
}

/// A lot a consume took.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LotTaken {
    /// The lot.
    pub lot_id: Uuid,
    /// Its code.
    pub code: String,
    /// How much of it, in the item's base unit.
    pub quantity: f64,
    /// Whether it had expired when it was taken: allowed, and said so.
    pub expired: bool,
}

/// The order a consume takes lots in when the request names none.
pub fn picking_order(lots: &mut [LotStock<'_>], picking: LotPicking) {
    match picking {
        // `createdAt` is kept to the millisecond; within one, the id (a UUIDv7, ordered by
        // creation within a server process) tells which lot came first.
        LotPicking::Fifo => lots.sort_by_key(|s| (s.lot.created_at, s.lot.id)),
        LotPicking::Fefo => lots.sort_by(|a, b| {
            let key = |l: &Lot| {
                (
                    l.expires_at.is_none(),
                    l.expires_at,
                    l.code.clone(),
                    l.created_at,
                    l.id,
                )
            };
            key(a.lot).cmp(&key(b.lot))
        }),
    }
}

/// Which lots a consume of `need` micros takes from `available` (the item's lots with their
/// stock at the location):
///
/// - with `requested` lots, those, in the request's order: each must be a lot of the item
///   (400 naming `lots[i].lotId`, or `lots[i].quantity` for a quantity that is not positive),
///   named once; what they hold must cover the need (409), and they may not name more than it
///   (400 naming `lots`);
/// - without, the lots in the organization's [`LotPicking`] order, until the need is covered
///   (409 when all of them hold too little).
///
/// An expired lot is taken like any other, and flagged in the answer.
pub fn pick_lots(
    need: i64,
    available: &[LotStock<'_>],
    requested: &[LotRequest],
    picking: LotPicking,
    now: DateTime<Utc>,
) -> Result<Vec<LotTaken>, Refusal> {
    let taken = |stock: &LotStock<'_>, micros: i64| LotTaken {
        lot_id: stock.lot.id,
        code: stock.lot.code.clone(),
        quantity: from_micros(micros),
        expired: stock.lot.is_expired(now),
    };
    let mut out = Vec::new();
    let mut remaining = need;
    if requested.is_empty() {
        let mut order: Vec<LotStock<'_>> = available.to_vec();
        picking_order(&mut order, picking);
        for stock in order.iter().filter(|s| s.on_hand > 0) {
            if remaining == 0 {
                break;
            }
            let take = stock.on_hand.min(remaining);
            out.push(taken(stock, take));
            remaining -= take;
        }
        if remaining > 0 {
            let held: i64 = available.iter().map(|s| s.on_hand.max(0)).sum();
            return Err(Refusal::Conflict(vec![Violation::field(
                "quantity",
                format!(
                    "insufficient stock: the item's lots hold {} here, {} requested",
                    from_micros(held),
                    from_micros(need)
                ),
            )]));
        }
        return Ok(out);
    }
    let mut invalid = Vec::new();
    let mut short = Vec::new();
    let mut seen = HashSet::new();
    for (i, request) in requested.iter().enumerate() {
        let Some(stock) = available.iter().find(|s| s.lot.id == request.lot_id) else {
            invalid.push(Violation::field(
                format!("lots[{i}].lotId"),
                format!("{} is not a lot of this item", request.lot_id),
            ));
            continue;
        };
        if !seen.insert(request.lot_id) {
            invalid.push(Violation::field(
                format!("lots[{i}].lotId"),
                format!("lot {:?} is named twice", stock.lot.code),
            ));
            continue;
        }
        let take = match request.quantity {
            Some(q) if q <= 0 => {
                invalid.push(Violation::field(
                    format!("lots[{i}].quantity"),
                    "a lot's quantity is above zero",
                ));
                continue;
            }
            Some(q) => q,
            None => stock.on_hand.max(0).min(remaining.max(0)),
        };
        if take > stock.on_hand {
            short.push(Violation::field(
                format!("lots[{i}].quantity"),
                format!(
                    "lot {:?} holds {} here, {} requested",
                    stock.lot.code,
                    from_micros(stock.on_hand),
                    from_micros(take)
                ),
            ));
            continue;
        }
        if take > 0 {
            out.push(taken(stock, take));
        }
        remaining -= take;
    }
    if remaining < 0 {
        invalid.push(Violation::field(
            "lots",
            format!(
                "the lots name {} more than the {} to consume",
                from_micros(-remaining),
                from_micros(need)
            ),
        ));
    }
    if !invalid.is_empty() {
        return Err(Refusal::Invalid(invalid));
    }
    if remaining > 0 && short.is_empty() {
        short.push(Violation::field(
            "lots",
            format!(
                "the lots named hold {} less than the {} to consume",
                from_micros(remaining),
                from_micros(need)
            ),
        ));
    }
    if !short.is_empty() {
        return Err(Refusal::Conflict(short));
    }
    Ok(out)
}

/// The reversal of a posting: the opposite of each of its rows, linked to it (`reversesId`),
/// dated `now`, with new ids from `new_id`. A posting is reversed once: a row `reversed`
/// already holds is refused (409), so is a reversal itself (409: post the original again).
/// The rows it answers are then posted like any others, so a reversal that would take stock
/// below zero (the goods received were used since) is refused by the stock policy.
pub fn reversal(
    posting: &[InventoryTransaction],
    reversed: &HashSet<Uuid>,
    mut new_id: impl FnMut() -> Uuid,
    now: DateTime<Utc>,
) -> Result<Vec<InventoryTransaction>, Refusal> {
    if posting.is_empty() {
        return Err(Refusal::Invalid(vec![Violation::general(
            "a reversal names the rows of one posting",
        )]));
    }
    let mut violations = Vec::new();
    for row in posting {
        if row.reverses_id.is_some() {
            violations.push(Violation::field(
                "transactionIds",
                format!(
                    "row {} is a reversal; a reversal is not reversed (post the original again)",
                    row.id
                ),
            ));
        } else if reversed.contains(&row.id) {
            violations.push(Violation::field(
                "transactionIds",
                format!(
                    "row {} was reversed already; a posting is reversed once",
                    row.id
                ),
            ));
        }
    }
    if !violations.is_empty() {
        return Err(Refusal::Conflict(violations));
    }
    Ok(posting
        .iter()
        .map(|row| InventoryTransaction {
            id: new_id(),
            reverses_id: Some(row.id),
            app_user_id: None,
            reason: Some(format!("reversal of {}", row.id)),
            created_at: now,
            updated_at: now,
            ..row.clone()
        })
        .collect())
}

/// What a trace node is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceNodeKind {
    /// A lot or serial.
    Lot,
    /// An order (deliverable) that consumed or produced lots.
    Order,
    /// A delivery that received or shipped lots.
    Delivery,
}

/// Which way a trace goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceDirection {
    /// Where the lot went: the orders that consumed it, the lots they produced, the
    /// deliveries that shipped them.
    Down,
    /// Where the lot came from: the order that produced it, the lots it consumed, the
    /// deliveries that received them.
    Up,
}

/// A node of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TraceNode {
    pub kind: TraceNodeKind,
    pub id: Uuid,
    /// Lot generations from the start (0 for the start and what touches it directly).
    pub depth: u32,
}

/// An edge of a trace, in the direction goods moved: lot to order (consumed), order to lot
/// (produced), lot to delivery (shipped), delivery to lot (received).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TraceEdge {
    pub from: Uuid,
    pub to: Uuid,
    /// The movement (`consume`, `produce`, `ship`, `receipt`).
    #[serde(rename = "type")]
    pub kind: TransactionType,
    /// The net quantity, in the item's base unit (reversed rows subtracted).
    pub quantity: f64,
    /// The first and last rows' times.
    #[serde(with = "crate::time::iso")]
    pub first_at: DateTime<Utc>,
    #[serde(with = "crate::time::iso")]
    pub last_at: DateTime<Utc>,
}

/// A lot's trace: a graph of nodes and edges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Trace {
    pub nodes: Vec<TraceNode>,
    pub edges: Vec<TraceEdge>,
    /// Whether lots at the depth limit had further edges that were not followed.
    pub truncated: bool,
}

/// The depth of a trace, checked (400 naming `depth` past [`MAX_TRACE_DEPTH`]).
pub fn check_depth(depth: u32) -> Result<u32, Violation> {
    if depth == 0 || depth > MAX_TRACE_DEPTH {
        Err(Violation::field(
            "depth",
            format!("depth is 1 to {MAX_TRACE_DEPTH}"),
        ))
    } else {
        Ok(depth)
    }
}

/// The ledger rows a trace reads, indexed by lot and by order: the whole trace at once, over
/// rows held in memory (the ledger [`LotLedger`] keeps). The server reads a trace a generation
/// at a time instead, through [`TraceWalk`], which this drives the same way.
pub struct TraceIndex<'a> {
    by_lot: HashMap<Uuid, Vec<&'a InventoryTransaction>>,
    by_order: HashMap<Uuid, Vec<&'a InventoryTransaction>>,
}

impl<'a> TraceIndex<'a> {
    /// Indexes the rows that make a genealogy: consume, produce, ship and receipt rows of lots.
    pub fn new(rows: &'a [InventoryTransaction]) -> Self {
        let mut by_lot: HashMap<Uuid, Vec<&InventoryTransaction>> = HashMap::new();
        let mut by_order: HashMap<Uuid, Vec<&InventoryTransaction>> = HashMap::new();
        for row in rows {
            let Some(lot) = row.lot_id else { continue };
            use TransactionType::*;
            if !matches!(row.kind, Consume | Produce | Ship | Receipt) {
                continue;
            }
            by_lot.entry(lot).or_default().push(row);
            if let Some(order) = trace_order(row) {
                by_order.entry(order).or_default().push(row);
            }
        }
        TraceIndex { by_lot, by_order }
    }

    /// The trace of `start` in `direction`, following lots up to `depth` generations away.
    pub fn trace(&self, start: Uuid, direction: TraceDirection, depth: u32) -> Trace {
        let mut walk = TraceWalk::new(start, direction, depth);
        let mut edges = Vec::new();
        let no_rows = Vec::new();
        while !walk.is_done() {
            let lot_rows: Vec<&InventoryTransaction> = walk
                .lots()
                .iter()
                .flat_map(|lot| self.by_lot.get(lot).unwrap_or(&no_rows))
                .copied()
                .collect();
            edges.extend(walk.lot_rows(lot_rows));
            let order_rows: Vec<&InventoryTransaction> = walk
                .orders()
                .iter()
                .flat_map(|order| self.by_order.get(order).unwrap_or(&no_rows))
                .copied()
                .collect();
            edges.extend(walk.order_rows(order_rows));
        }
        let (nodes, truncated) = walk.finish();
        Trace {
            nodes,
            edges,
            truncated,
        }
    }
}

/// The order a trace takes a production row to belong to: the order it names
/// (`metadata.orderDeliverableId`, as production posts it on the order or a node under it),
/// else the node it was posted on. `None` for rows of other types.
pub fn trace_order(row: &InventoryTransaction) -> Option<Uuid> {
    if !matches!(
        row.kind,
        TransactionType::Consume | TransactionType::Produce
    ) {
        return None;
    }
    row.metadata
        .get(crate::inventory::production_keys::ORDER)
        .and_then(serde_json::Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
        .or(row.deliverable_id)
}

/// A trace walked one lot generation at a time, so that a reader holds the rows of one
/// generation, not of the whole trace, and can send each generation's edges as they are
/// found. Each step is in two halves:
///
/// 1. [`TraceWalk::lots`] names the lots of the generation; [`TraceWalk::lot_rows`] takes
///    their ledger rows (any rows: the others are ignored) and answers the generation's edges
///    between those lots and deliveries and orders;
/// 2. [`TraceWalk::orders`] names the orders those edges reach, not walked before;
///    [`TraceWalk::order_rows`] takes their production rows (a row belongs to the order
///    [`trace_order`] says) and answers the edges from the orders to the next generation's
///    lots, which become [`TraceWalk::lots`].
///
/// Until [`TraceWalk::is_done`]; then [`TraceWalk::finish`] gives the nodes. Every edge is
/// answered whole, once: its rows are all among the rows of one half step. An edge whose rows
/// cancel out (reversals) is left out, and so is a node that only such edges reached.
pub struct TraceWalk {
    direction: TraceDirection,
    depth: u32,
    level: u32,
    lots: Vec<Uuid>,
    orders: Vec<Uuid>,
    nodes: Vec<TraceNode>,
    /// Each node's place in `nodes`, and whether a kept edge touches it.
    node_index: HashMap<Uuid, (usize, bool)>,
    orders_done: HashSet<Uuid>,
    truncated: bool,
}

impl TraceWalk {
    /// A walk from `start`, following lots up to `depth` generations away.
    pub fn new(start: Uuid, direction: TraceDirection, depth: u32) -> Self {
        let mut walk = TraceWalk {
            direction,
            depth,
            level: 0,
            lots: vec![start],
            orders: Vec::new(),
            nodes: Vec::new(),
            node_index: HashMap::new(),
            orders_done: HashSet::new(),
            truncated: false,
        };
        walk.node(TraceNodeKind::Lot, start, 0);
        walk
    }

    /// Whether the walk is over (no lots left to read).
    pub fn is_done(&self) -> bool {
        self.lots.is_empty()
    }

    /// The lots of the generation being walked, whose rows [`TraceWalk::lot_rows`] takes.
    pub fn lots(&self) -> &[Uuid] {
        &self.lots
    }

    /// The orders whose production rows [`TraceWalk::order_rows`] takes.
    pub fn orders(&self) -> &[Uuid] {
        &self.orders
    }

    /// `(to the order, from the order, to or from outside)`: the movement types the walk
    /// follows from a lot to its orders, from an order to the next lots, and to deliveries.
    fn kinds(&self) -> (TransactionType, TransactionType, TransactionType) {
        match self.direction {
            TraceDirection::Down => (
                TransactionType::Consume,
                TransactionType::Produce,
                TransactionType::Ship,
            ),
            TraceDirection::Up => (
                TransactionType::Produce,
                TransactionType::Consume,
                TransactionType::Receipt,
            ),
        }
    }

    /// The first half of a step: the rows of [`TraceWalk::lots`]; answers the edges between
    /// those lots and their deliveries and orders, and sets [`TraceWalk::orders`].
    pub fn lot_rows<'r>(
        &mut self,
        rows: impl IntoIterator<Item = &'r InventoryTransaction>,
    ) -> Vec<TraceEdge> {
        let (to_order, _, outside) = self.kinds();
        let wanted: HashSet<Uuid> = self.lots.iter().copied().collect();
        let mut by_lot: HashMap<Uuid, Vec<&InventoryTransaction>> = HashMap::new();
        for row in rows {
            if let Some(lot) = row.lot_id
                && (row.kind == to_order || row.kind == outside)
                && wanted.contains(&lot)
            {
                by_lot.entry(lot).or_default().push(row);
            }
        }
        let level = self.level;
        let mut edges = Edges::default();
        for lot in std::mem::take(&mut self.lots) {
            let Some(rows) = by_lot.get_mut(&lot) else {
                continue;
            };
            rows.sort_by(|a, b| ledger_order(a, b));
            // The lot's deliveries (shipped down, received up).
            for row in rows.iter().filter(|r| r.kind == outside) {
                if let Some(delivery) = row.delivery_id {
                    self.node(TraceNodeKind::Delivery, delivery, level);
                    let (from, to) = orient(self.direction, lot, delivery);
                    edges.add(from, to, row);
                }
            }
            // The orders on the lot's side.
            for row in rows.iter().filter(|r| r.kind == to_order) {
                let Some(order) = trace_order(row) else {
                    continue;
                };
                self.node(TraceNodeKind::Order, order, level);
                let (from, to) = orient(self.direction, lot, order);
                edges.add(from, to, row);
            }
        }
        // The orders reached with a net quantity (a fully reversed consumption reaches none),
        // each walked once.
        for e in edges.list.iter().filter(|e| e.2 == to_order && e.3 > 0) {
            let order = match self.direction {
                TraceDirection::Down => e.1,
                TraceDirection::Up => e.0,
            };
            if self.orders_done.insert(order) {
                self.orders.push(order);
            }
        }
        self.kept(edges)
    }

    /// The second half of a step: the production rows of [`TraceWalk::orders`]; answers the
    /// edges from those orders to the next generation's lots, which become
    /// [`TraceWalk::lots`] (none past the depth: then `truncated` says whether there were).
    pub fn order_rows<'r>(
        &mut self,
        rows: impl IntoIterator<Item = &'r InventoryTransaction>,
    ) -> Vec<TraceEdge> {
        let (_, from_order, _) = self.kinds();
        let wanted: HashSet<Uuid> = self.orders.iter().copied().collect();
        let mut by_order: HashMap<Uuid, Vec<&InventoryTransaction>> = HashMap::new();
        for row in rows {
            if row.kind == from_order
                && row.lot_id.is_some()
                && let Some(order) = trace_order(row)
                && wanted.contains(&order)
            {
                by_order.entry(order).or_default().push(row);
            }
        }
        let level = self.level;
        let mut edges = Edges::default();
        let mut next = Vec::new();
        for order in std::mem::take(&mut self.orders) {
            let Some(rows) = by_order.get_mut(&order) else {
                continue;
            };
            rows.sort_by(|a, b| ledger_order(a, b));
            let mut net: HashMap<Uuid, i128> = HashMap::new();
            for row in rows.iter() {
                if let Some(lot) = row.lot_id {
                    *net.entry(lot).or_default() += signed(row);
                }
            }
            for row in rows.iter() {
                let Some(lot) = row.lot_id else { continue };
                if net.get(&lot).is_none_or(|n| *n <= 0) {
                    continue;
                }
                if level >= self.depth {
                    self.truncated |= !self.node_index.contains_key(&lot);
                    continue;
                }
                let (from, to) = orient(self.direction, order, lot);
                edges.add(from, to, row);
                if self.node(TraceNodeKind::Lot, lot, level + 1) {
                    next.push(lot);
                }
            }
        }
        self.lots = next;
        self.level += 1;
        self.kept(edges)
    }

    /// The nodes (the start, and those a kept edge touches, in the order they were found)
    /// and whether lots at the depth limit had further edges.
    pub fn finish(self) -> (Vec<TraceNode>, bool) {
        let index = &self.node_index;
        let nodes = self
            .nodes
            .into_iter()
            .enumerate()
            .filter(|(i, n)| *i == 0 || index.get(&n.id).is_some_and(|(_, linked)| *linked))
            .map(|(_, n)| n)
            .collect();
        (nodes, self.truncated)
    }

    /// Adds a node; true when it is new.
    fn node(&mut self, kind: TraceNodeKind, id: Uuid, depth: u32) -> bool {
        if self.node_index.contains_key(&id) {
            return false;
        }
        self.node_index.insert(id, (self.nodes.len(), false));
        self.nodes.push(TraceNode { kind, id, depth });
        true
    }

    /// The edges whose rows do not cancel out, their nodes marked as linked.
    fn kept(&mut self, edges: Edges) -> Vec<TraceEdge> {
        let kept: Vec<TraceEdge> = edges
            .list
            .into_iter()
            .filter(|e| e.3 > 0)
            .map(|(from, to, kind, micros, first_at, last_at)| TraceEdge {
                from,
                to,
                kind,
                quantity: micros as f64 / SERIAL_UNIT as f64,
                first_at,
                last_at,
            })
            .collect();
        for e in &kept {
            for id in [e.from, e.to] {
                if let Some(entry) = self.node_index.get_mut(&id) {
                    entry.1 = true;
                }
            }
        }
        kept
    }
}

/// Rows as the ledger reads: oldest first, then by id, so that a trace does not depend on the
/// order rows were read in.
fn ledger_order(a: &InventoryTransaction, b: &InventoryTransaction) -> std::cmp::Ordering {
    a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id))
}

/// `(from, to)` of an edge between the traced side `near` and the other side `far`, in the
/// direction goods moved.
fn orient(direction: TraceDirection, near: Uuid, far: Uuid) -> (Uuid, Uuid) {
    match direction {
        TraceDirection::Down => (near, far),
        TraceDirection::Up => (far, near),
    }
}

/// A row's quantity in micros, negative for a reversal.
fn signed(row: &InventoryTransaction) -> i128 {
    let micros = to_micros(row.quantity) as i128;
    if row.reverses_id.is_some() {
        -micros
    } else {
        micros
    }
}

/// An edge being gathered: from, to, the posting's type, its net signed quantity (micro-units),
/// and the first and last time a row added to it.
type PendingEdge = (
    Uuid,
    Uuid,
    TransactionType,
    i128,
    DateTime<Utc>,
    DateTime<Utc>,
);

/// The edges of one half step, as their rows add to them.
#[derive(Default)]
struct Edges {
    list: Vec<PendingEdge>,
    index: HashMap<(Uuid, Uuid, &'static str), usize>,
}

impl Edges {
    fn add(&mut self, from: Uuid, to: Uuid, row: &InventoryTransaction) {
        let key = (from, to, row.kind.as_str());
        let at = row.created_at;
        match self.index.get(&key) {
            Some(&i) => {
                let e = &mut self.list[i];
                e.3 += signed(row);
                e.4 = e.4.min(at);
                e.5 = e.5.max(at);
            }
            None => {
                self.index.insert(key, self.list.len());
                self.list.push((from, to, row.kind, signed(row), at, at));
            }
        }
    }
}

/// The ledger of one organization with lots, kept in memory: what the rules above decide,
/// applied. Stock is kept per [`StockKey`] as each posting is accepted, as the server keeps
/// its `stock` table; [`LotLedger::replay`] recomputes it from the rows.
#[derive(Debug, Clone, Default)]
pub struct LotLedger {
    pub settings: StockSettings,
    pub tracking: HashMap<Uuid, Tracking>,
    pub lots: HashMap<Uuid, Lot>,
    pub rows: Vec<InventoryTransaction>,
    stock: BTreeMap<StockKey, i64>,
    reversed: HashSet<Uuid>,
}

impl LotLedger {
    /// An empty ledger with these settings.
    pub fn new(settings: StockSettings) -> Self {
        LotLedger {
            settings,
            ..Default::default()
        }
    }

    /// Stock on hand per item, location and lot, as kept.
    pub fn stock(&self) -> &BTreeMap<StockKey, i64> {
        &self.stock
    }

    /// Stock on hand per item, location and lot, summed from the rows (keys left at zero
    /// included, as the kept stock keeps them).
    pub fn replay(&self) -> Result<BTreeMap<StockKey, i64>, Violation> {
        let mut out: BTreeMap<StockKey, i64> = BTreeMap::new();
        for (key, delta) in lot_net_deltas(&self.rows)? {
            out.insert(key, delta as i64);
        }
        Ok(out)
    }

    fn is_serial(&self, lot: Uuid) -> bool {
        self.lots
            .get(&lot)
            .and_then(|l| self.tracking.get(&l.item_id))
            == Some(&Tracking::Serial)
    }

    /// A serial's stock over every location.
    pub fn serial_total(&self, lot: Uuid) -> i64 {
        self.stock
            .iter()
            .filter(|(k, _)| k.lot_id == Some(lot))
            .map(|(_, v)| *v)
            .sum()
    }

    fn movements(&self) -> Result<Vec<Movement>, Violation> {
        let mut out = Vec::new();
        for row in &self.rows {
            for (location_id, delta) in row.deltas()? {
                out.push(Movement {
                    at: row.created_at,
                    key: StockKey {
                        item_id: row.item_id,
                        location_id,
                        lot_id: row.lot_id,
                    },
                    delta: to_micros(delta) as i128,
                });
            }
        }
        Ok(out)
    }

    /// Posts rows dated `at` (their `createdAt`) as one posting, after every rule: lots named,
    /// the freeze date, the stock policy per key now and at every later moment, serials once.
    /// Nothing changes when it is refused.
    pub fn post(
        &mut self,
        mut rows: Vec<InventoryTransaction>,
        at: DateTime<Utc>,
    ) -> Result<(), Refusal> {
        for row in &mut rows {
            row.created_at = at;
            row.updated_at = at;
        }
        check_row_lots(
            &rows,
            |item| self.tracking.get(&item).copied().unwrap_or_default(),
            |lot| self.lots.get(&lot),
        )?;
        check_not_frozen(self.settings.stock_frozen_until, at, "createdAt")?;
        let net = lot_net_deltas(&rows).map_err(|v| Refusal::Invalid(vec![v]))?;
        let history = self.movements().map_err(|v| Refusal::Invalid(vec![v]))?;
        check_later_balances(&history, at, &net, |lot| self.is_serial(lot))?;
        let after = apply_net(|k| self.stock.get(k).copied().unwrap_or(0), &net)?;
        check_serials_once(
            &net,
            |lot| self.is_serial(lot),
            |lot| self.serial_total(lot),
        )?;
        self.stock.extend(after);
        for row in &rows {
            if let Some(original) = row.reverses_id {
                self.reversed.insert(original);
            }
        }
        self.rows.extend(rows);
        Ok(())
    }

    /// Reverses the rows `ids` (one posting) with a posting dated `at`.
    pub fn reverse(
        &mut self,
        ids: &[Uuid],
        new_id: impl FnMut() -> Uuid,
        at: DateTime<Utc>,
    ) -> Result<(), Refusal> {
        let posting: Vec<InventoryTransaction> = ids
            .iter()
            .filter_map(|id| self.rows.iter().find(|r| r.id == *id).cloned())
            .collect();
        if posting.len() != ids.len() {
            return Err(Refusal::Invalid(vec![Violation::field(
                "transactionIds",
                "no such ledger row",
            )]));
        }
        let rows = reversal(&posting, &self.reversed, new_id, at)?;
        self.post(rows, at)
    }

    /// The item's lots with their stock at `location`.
    pub fn lots_at(&self, item: Uuid, location: Uuid) -> Vec<LotStock<'_>> {
        self.lots
            .values()
            .filter(|l| l.item_id == item)
            .map(|lot| LotStock {
                lot,
                on_hand: self
                    .stock
                    .get(&StockKey {
                        item_id: item,
                        location_id: location,
                        lot_id: Some(lot.id),
                    })
                    .copied()
                    .unwrap_or(0),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;
