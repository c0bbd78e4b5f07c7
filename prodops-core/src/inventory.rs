//! The inventory ledger (spec 2.7, 4.6) and stock on hand (decisions.md section 5).
//!
//! A transaction is immutable once posted. [`posting_deltas`] says what a transaction does to
//! stock: stock on hand at a location is the sum of the deltas of every transaction.

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use std::collections::BTreeMap;

use crate::resource::{Allow, Ops, Record, ResourceDesc};
use crate::violation::Violation;

/// Quantities are kept exactly in millionths of the item's base unit ("micros"): ledger
/// quantities are rounded to six decimals when posted, and stock on hand is the integer sum of
/// the rows' micros, so it equals the sum of the ledger whatever order rows are added in.
pub const MICROS_PER_UNIT: f64 = 1_000_000.0;

/// The largest magnitude of one ledger row's quantity (units). With six decimals this stays
/// within the integers an `f64` holds exactly, so a quantity survives the round trip to micros.
pub const MAX_POSTING_QUANTITY: f64 = 1_000_000_000.0;

/// The largest stock on hand of one item at one location, in micros (just under 2^53, so
/// `onHand` is exact as a JSON number): about nine billion units.
pub const MAX_STOCK_MICROS: i64 = 9_000_000_000_000_000;

/// A quantity in micros (rounded to the nearest millionth).
pub fn to_micros(quantity: f64) -> i64 {
    (quantity * MICROS_PER_UNIT).round() as i64
}

/// A quantity in micros as units.
pub fn from_micros(micros: i64) -> f64 {
    micros as f64 / MICROS_PER_UNIT
}

/// `quantity` rounded to six decimals (the precision of the ledger).
pub fn round_quantity(quantity: f64) -> f64 {
    if quantity.is_finite() && quantity.abs() <= MAX_POSTING_QUANTITY {
        let rounded = from_micros(to_micros(quantity));
        // No negative zero in the ledger.
        if rounded == 0.0 { 0.0 } else { rounded }
    } else {
        quantity
    }
}

/// The kind of a ledger row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransactionType {
    /// Goods received at `toLocationId` (delivery receiving, and the arrival of a completed
    /// delivery with a destination).
    Receipt,
    /// Material consumed from `fromLocationId` (production consume).
    Consume,
    /// Stock moved from `fromLocationId` to `toLocationId` in the same shop.
    Transfer,
    /// A signed correction at the destination, or at the source without a destination.
    Adjust,
    /// Output produced into `toLocationId` (production produce).
    Produce,
    /// Goods shipped from `fromLocationId` (outbound or transfer delivery completion).
    Ship,
    /// Goods returned out of `fromLocationId`.
    Return,
}

impl TransactionType {
    /// Every type.
    pub const ALL: [TransactionType; 7] = [
        TransactionType::Adjust,
        TransactionType::Transfer,
        TransactionType::Return,
        TransactionType::Receipt,
        TransactionType::Consume,
        TransactionType::Produce,
        TransactionType::Ship,
    ];

    /// The wire spelling (`receipt`, `transfer`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            TransactionType::Receipt => "receipt",
            TransactionType::Consume => "consume",
            TransactionType::Transfer => "transfer",
            TransactionType::Adjust => "adjust",
            TransactionType::Produce => "produce",
            TransactionType::Ship => "ship",
            TransactionType::Return => "return",
        }
    }

    /// Whether `POST /inventory-transaction` accepts this type (adjust, transfer, return); the
    /// others are posted only by their workflows (spec 4.6).
    pub fn is_manually_postable(self) -> bool {
        matches!(
            self,
            TransactionType::Adjust | TransactionType::Transfer | TransactionType::Return
        )
    }
}

/// How a ledger row was captured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransactionSource {
    /// Entered by a user.
    #[default]
    Manual,
    /// Imported.
    Import,
    /// Scanned.
    Scan,
    /// From a stock count.
    Count,
    /// From an external integration.
    Integration,
}

/// One row of the inventory ledger (spec 2.7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InventoryTransaction {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The item whose stock changes.
    pub item_id: Uuid,
    /// The shop of the posting location; set by the server (nil until then).
    #[serde(default)]
    pub shop_id: Uuid,
    /// The kind of movement.
    #[serde(rename = "type")]
    pub kind: TransactionType,
    /// Quantity in the item's base unit; signed only for `adjust`. When posted in another
    /// unit (`unitMeasureId` in the body), the server converts it and keeps what was entered in
    /// `enteredQuantity` and `enteredUnitMeasureId`.
    pub quantity: f64,
    /// The unit of `quantity`: the item's base unit once stored (null for an item without one).
    /// In a posting's body, the unit the quantity is entered in (default: the item's).
    #[serde(default)]
    pub unit_measure_id: Option<Uuid>,
    /// The quantity as entered, in `enteredUnitMeasureId`; set by the server.
    #[serde(default)]
    pub entered_quantity: Option<f64>,
    /// The unit the quantity was entered in; set by the server.
    #[serde(default)]
    pub entered_unit_measure_id: Option<Uuid>,
    /// Cost per unit.
    #[serde(default)]
    pub unit_cost: Option<f64>,
    /// Source location.
    #[serde(default)]
    pub from_location_id: Option<Uuid>,
    /// Destination location.
    #[serde(default)]
    pub to_location_id: Option<Uuid>,
    /// Deliverable the movement belongs to.
    #[serde(default)]
    pub deliverable_id: Option<Uuid>,
    /// Delivery the movement belongs to.
    #[serde(default)]
    pub delivery_id: Option<Uuid>,
    /// Pick line the movement belongs to.
    #[serde(default)]
    pub pick_line_id: Option<Uuid>,
    /// The lot (or serial) the row moves: required for an item tracked by lot or serial (a
    /// lot of that item), refused for an untracked one (`prodops_core::lot_rules`).
    #[serde(default)]
    pub lot_id: Option<Uuid>,
    /// The row this row reverses: a reversal holds the original's type, locations, lot and
    /// quantity, and does the opposite to stock. Set by the server (`POST /inventory/reverse`);
    /// at most one row reverses a row (a unique index of the server's).
    #[serde(default)]
    pub reverses_id: Option<Uuid>,
    /// How the row was captured.
    #[serde(default)]
    pub source: TransactionSource,
    /// Why the movement happened.
    #[serde(default)]
    pub reason: Option<String>,
    /// The user who posted it; set by the server.
    #[serde(default)]
    pub app_user_id: Option<Uuid>,
    /// Free-form key-value data.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Posting time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Equal to `createdAt`: rows never change.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl InventoryTransaction {
    /// The stock deltas of this row (see [`posting_deltas`]); a reversal's are the opposite of
    /// the row it reverses.
    pub fn deltas(&self) -> Result<Vec<(Uuid, f64)>, Violation> {
        let mut deltas = posting_deltas(
            self.kind,
            self.quantity,
            self.from_location_id,
            self.to_location_id,
        )?;
        if self.reverses_id.is_some() {
            for (_, delta) in &mut deltas {
                *delta = -*delta;
            }
        }
        Ok(deltas)
    }
}

impl Record for InventoryTransaction {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["reason"],
        ops: Ops {
            create: Allow::Custom,
            ..Ops::READ_ONLY
        },
        read_only: &[
            "shopId",
            "appUserId",
            "enteredQuantity",
            "enteredUnitMeasureId",
            // Until reversals are posted by their own action (issue 37), a body cannot name
            // the row it reverses. `lotId` is checked by every posting (the server's
            // `inventory::post`).
            "reversesId",
        ],
        summary: "Inventory transactions: the immutable stock ledger",
        ..ResourceDesc::new(
            "inventory-transaction",
            "inventory_transaction",
            "InventoryTransaction",
        )
    };

    /// Rounds the quantity to the ledger's precision (six decimals).
    fn normalize(&mut self) {
        self.quantity = round_quantity(self.quantity);
        self.entered_quantity = self.entered_quantity.map(round_quantity);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        if let Err(violation) = self.deltas() {
            v.push(violation);
        } else if self.quantity.abs() > MAX_POSTING_QUANTITY {
            v.push(Violation::field(
                "quantity",
                format!("a posting moves at most {MAX_POSTING_QUANTITY} units"),
            ));
        }
        if self.unit_cost.is_some_and(|c| c < 0.0) {
            v.push(Violation::field(
                "unitCost",
                "unitCost must not be negative",
            ));
        }
        v
    }

    /// `POST /inventory-transaction` posts adjustments, transfers and returns; the other types
    /// are posted by the workflows that move stock.
    #[cfg(feature = "openapi")]
    fn refine_form(form: crate::openapi::Form, schema: &mut Value) {
        if form == crate::openapi::Form::Create {
            let postable: Vec<&str> = TransactionType::ALL
                .into_iter()
                .filter(|t| t.is_manually_postable())
                .map(TransactionType::as_str)
                .collect();
            schema["properties"]["type"] = serde_json::json!({ "enum": postable });
        }
    }
}

/// What posting a transaction does to stock on hand: `(locationId, delta)` pairs.
///
/// - `adjust`: `quantity` is a signed delta at `to`, or at `from` when `to` is absent; one of
///   them is required.
/// - `transfer`: a nonnegative `quantity` leaves `from` and arrives at `to`; both required and
///   different (that they are in the same shop is checked by the server).
/// - `return`: a nonnegative `quantity` leaves `from` (required).
/// - `receipt`, `produce`: a nonnegative `quantity` arrives at `to` (required).
/// - `consume`, `ship`: a nonnegative `quantity` leaves `from` (required).
///
/// Locations a type does not use are ignored.
pub fn posting_deltas(
    tx_type: TransactionType,
    quantity: f64,
    from: Option<Uuid>,
    to: Option<Uuid>,
) -> Result<Vec<(Uuid, f64)>, Violation> {
    use TransactionType::*;
    if !quantity.is_finite() {
        return Err(Violation::field(
            "quantity",
            "quantity must be a finite number",
        ));
    }
    if tx_type != Adjust && quantity < 0.0 {
        return Err(Violation::field(
            "quantity",
            "quantity must not be negative; only adjust takes a signed delta",
        ));
    }
    let require = |location: Option<Uuid>, field: &'static str| {
        location.ok_or_else(|| {
            Violation::field(
                field,
                format!("a {} transaction needs {field}", tx_type.as_str()),
            )
        })
    };
    Ok(match tx_type {
        Adjust => match to.or(from) {
            Some(location) => vec![(location, quantity)],
            None => {
                return Err(Violation::general(
                    "an adjust transaction needs toLocationId or fromLocationId",
                ));
            }
        },
        Transfer => {
            let from = require(from, "fromLocationId")?;
            let to = require(to, "toLocationId")?;
            if from == to {
                return Err(Violation::field(
                    "toLocationId",
                    "a transfer needs two different locations",
                ));
            }
            vec![(from, -quantity), (to, quantity)]
        }
        Receipt | Produce => vec![(require(to, "toLocationId")?, quantity)],
        Consume | Ship | Return => vec![(require(from, "fromLocationId")?, -quantity)],
    })
}

/// Why a posting was refused by the stock policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StockRefusal {
    /// The posting would take stock on hand below zero (the negative-stock policy).
    Insufficient {
        /// On hand before the posting, in micros.
        on_hand: i64,
        /// The net change the request asked for, in micros (negative).
        delta: i128,
    },
    /// The posting would take stock on hand above [`MAX_STOCK_MICROS`].
    TooLarge {
        /// On hand before the posting, in micros.
        on_hand: i64,
        /// The net change the request asked for, in micros.
        delta: i128,
    },
}

impl StockRefusal {
    /// A violation naming the item and location, for an error's `details`.
    pub fn violation(self, item: Uuid, location: Uuid) -> Violation {
        let message = match self {
            StockRefusal::Insufficient { on_hand, delta } => format!(
                "insufficient stock of item {item} at location {location}: {} on hand, {} requested; stock on hand never goes below zero",
                from_micros(on_hand),
                (-delta) as f64 / MICROS_PER_UNIT
            ),
            StockRefusal::TooLarge { on_hand, delta } => format!(
                "stock of item {item} at location {location} would exceed {} units ({} on hand, {} added)",
                from_micros(MAX_STOCK_MICROS),
                from_micros(on_hand),
                delta as f64 / MICROS_PER_UNIT
            ),
        };
        Violation::field("quantity", message)
    }
}

/// The negative-stock policy: stock on hand of an item at a location is never below zero and
/// never above [`MAX_STOCK_MICROS`]. Given the stock before a request and the request's net
/// change there (both in micros), the stock after it, or why the request is refused.
///
/// The rule applies to the net change of a whole request per item and location, so a request
/// that moves stock in and out of one place is judged by where it leaves it.
pub fn next_on_hand(on_hand: i64, delta: i128) -> Result<i64, StockRefusal> {
    let next = on_hand as i128 + delta;
    if next < 0 {
        Err(StockRefusal::Insufficient { on_hand, delta })
    } else if next > MAX_STOCK_MICROS as i128 {
        Err(StockRefusal::TooLarge { on_hand, delta })
    } else {
        Ok(next as i64)
    }
}

/// The net stock change of a set of ledger rows per `(itemId, locationId)`, in micros, in the
/// key order (which is also the order the server locks stock rows in, so concurrent requests
/// never wait on each other in a cycle).
pub fn net_deltas(
    rows: &[InventoryTransaction],
) -> Result<BTreeMap<(Uuid, Uuid), i128>, Violation> {
    let mut net: BTreeMap<(Uuid, Uuid), i128> = BTreeMap::new();
    for row in rows {
        for (location, delta) in row.deltas()? {
            *net.entry((row.item_id, location)).or_default() += to_micros(delta) as i128;
        }
    }
    Ok(net)
}

/// Stock of one item at one location (`GET /stock`, decisions.md section 5); not a stored
/// record: it always equals the sum of the ledger.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Stock {
    /// The item.
    pub item_id: Uuid,
    /// The location.
    pub location_id: Uuid,
    /// The shop the location belongs to.
    pub shop_id: Uuid,
    /// Quantity on hand, in the item's base unit.
    pub on_hand: f64,
    /// Quantity reserved by allocations (does not change `onHand`). Reservations are per item
    /// and location: a lot's row (`groupBy=lot`) answers 0.
    pub reserved: f64,
    /// The lot (or serial), in rows grouped by lot (`GET /stock?groupBy=lot`) of items tracked
    /// by lot or serial; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lot_id: Option<Uuid>,
}

/// The metadata keys production postings carry, linking a ledger row to its order and record.
pub mod production_keys {
    pub const ORDER: &str = "orderDeliverableId";
    pub const OUTPUT: &str = "productionOutputId";
    pub const LINE: &str = "bomLineId";
    pub const ACTUAL_KIND: &str = "actualKind";
}

#[cfg(test)]
mod tests;
