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
    /// The stock deltas of this row (see [`posting_deltas`]).
    pub fn deltas(&self) -> Result<Vec<(Uuid, f64)>, Violation> {
        posting_deltas(
            self.kind,
            self.quantity,
            self.from_location_id,
            self.to_location_id,
        )
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
    /// Quantity reserved by allocations (does not change `onHand`).
    pub reserved: f64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;
    use TransactionType::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn loc(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn adjust_is_signed_at_destination_else_source() {
        assert_eq!(
            posting_deltas(Adjust, -3.0, Some(loc(1)), Some(loc(2))).unwrap(),
            vec![(loc(2), -3.0)]
        );
        assert_eq!(
            posting_deltas(Adjust, 4.0, Some(loc(1)), None).unwrap(),
            vec![(loc(1), 4.0)]
        );
        assert!(posting_deltas(Adjust, 4.0, None, None).is_err());
    }

    #[test]
    fn transfer_rules() {
        assert_eq!(
            posting_deltas(Transfer, 5.0, Some(loc(1)), Some(loc(2))).unwrap(),
            vec![(loc(1), -5.0), (loc(2), 5.0)]
        );
        assert!(posting_deltas(Transfer, -1.0, Some(loc(1)), Some(loc(2))).is_err());
        assert!(posting_deltas(Transfer, 1.0, Some(loc(1)), Some(loc(1))).is_err());
        let missing = posting_deltas(Transfer, 1.0, Some(loc(1)), None).unwrap_err();
        assert_eq!(missing.field.as_deref(), Some("toLocationId"));
        assert_eq!(missing.message, "a transfer transaction needs toLocationId");
    }

    #[test]
    fn one_sided_types() {
        assert_eq!(
            posting_deltas(Return, 2.0, Some(loc(1)), None).unwrap(),
            vec![(loc(1), -2.0)]
        );
        assert!(posting_deltas(Return, 2.0, None, Some(loc(1))).is_err());
        assert!(posting_deltas(Return, -2.0, Some(loc(1)), None).is_err());
        assert_eq!(
            posting_deltas(Receipt, 2.0, None, Some(loc(3))).unwrap(),
            vec![(loc(3), 2.0)]
        );
        assert_eq!(
            posting_deltas(Produce, 2.0, None, Some(loc(3))).unwrap(),
            vec![(loc(3), 2.0)]
        );
        assert_eq!(
            posting_deltas(Consume, 2.0, Some(loc(4)), None).unwrap(),
            vec![(loc(4), -2.0)]
        );
        assert_eq!(
            posting_deltas(Ship, 2.0, Some(loc(4)), None).unwrap(),
            vec![(loc(4), -2.0)]
        );
        assert!(posting_deltas(Ship, 2.0, None, Some(loc(4))).is_err());
        assert!(posting_deltas(Receipt, f64::NAN, None, Some(loc(3))).is_err());
    }

    #[test]
    fn manual_posting_types() {
        let manual: Vec<_> = [Receipt, Consume, Transfer, Adjust, Produce, Ship, Return]
            .into_iter()
            .filter(|t| t.is_manually_postable())
            .collect();
        assert_eq!(manual, [Transfer, Adjust, Return]);
    }

    #[test]
    fn record_checks_the_locations() {
        let item = "00000000-0000-4000-8000-0000000000a1";
        let ok = check::<InventoryTransaction>(json!({
            "itemId": item, "type": "adjust", "quantity": -1.5,
            "toLocationId": "00000000-0000-4000-8000-0000000000c1"
        }))
        .unwrap();
        assert_eq!(ok["source"], "manual");
        assert_eq!(ok["shopId"], "00000000-0000-0000-0000-000000000000");
        assert!(
            check::<InventoryTransaction>(
                json!({"itemId": item, "type": "transfer", "quantity": 1})
            )
            .is_err()
        );
    }

    fn row(
        kind: TransactionType,
        item: u128,
        q: f64,
        from: Option<u128>,
        to: Option<u128>,
    ) -> InventoryTransaction {
        let mut fields =
            json!({"itemId": Uuid::from_u128(item), "type": kind.as_str(), "quantity": q});
        if let Some(f) = from {
            fields["fromLocationId"] = json!(loc(f));
        }
        if let Some(t) = to {
            fields["toLocationId"] = json!(loc(t));
        }
        serde_json::from_value(check::<InventoryTransaction>(fields).expect("valid row")).unwrap()
    }

    #[test]
    fn quantities_round_to_micros() {
        assert_eq!(round_quantity(0.1234567), 0.123457);
        assert_eq!(round_quantity(-0.0000001), 0.0);
        assert_eq!(to_micros(round_quantity(0.1)), 100_000);
        let big = check::<InventoryTransaction>(json!({
            "itemId": Uuid::from_u128(1), "type": "adjust", "quantity": 2e9, "toLocationId": loc(1)
        }));
        assert!(big.is_err());
    }

    #[test]
    fn policy_refuses_negative_and_huge_stock() {
        assert_eq!(next_on_hand(5, -5), Ok(0));
        assert_eq!(
            next_on_hand(5, -6),
            Err(StockRefusal::Insufficient {
                on_hand: 5,
                delta: -6
            })
        );
        assert!(matches!(
            next_on_hand(MAX_STOCK_MICROS, 1),
            Err(StockRefusal::TooLarge { .. })
        ));
        let v = StockRefusal::Insufficient {
            on_hand: 1_500_000,
            delta: -2_000_000,
        }
        .violation(Uuid::from_u128(1), loc(2));
        assert!(
            v.message.contains("1.5 on hand, 2 requested"),
            "{}",
            v.message
        );
    }

    #[test]
    fn net_deltas_sum_per_item_and_location() {
        let rows = [
            row(Transfer, 1, 2.0, Some(1), Some(2)),
            row(Transfer, 1, 1.5, Some(2), Some(3)),
            row(Adjust, 2, -1.0, None, Some(1)),
        ];
        let net = net_deltas(&rows).unwrap();
        let item = Uuid::from_u128;
        assert_eq!(net[&(item(1), loc(1))], -2_000_000);
        assert_eq!(net[&(item(1), loc(2))], 500_000);
        assert_eq!(net[&(item(1), loc(3))], 1_500_000);
        assert_eq!(net[&(item(2), loc(1))], -1_000_000);
    }

    proptest! {
        #[test]
        fn transfer_conserves_stock(q in 0.0f64..1e9, a in any::<u128>(), b in any::<u128>()) {
            prop_assume!(a != b);
            let deltas = posting_deltas(Transfer, q, Some(loc(a)), Some(loc(b))).unwrap();
            prop_assert_eq!(deltas.iter().map(|(_, d)| d).sum::<f64>(), 0.0);
        }

        #[test]
        fn nonnegative_quantities_move_in_the_type_direction(q in 0.0f64..1e9, i in 0usize..7) {
            let t = [Receipt, Consume, Transfer, Adjust, Produce, Ship, Return][i];
            let deltas = posting_deltas(t, q, Some(loc(1)), Some(loc(2))).unwrap();
            let total: f64 = deltas.iter().map(|(_, d)| d).sum();
            match t {
                Receipt | Produce | Adjust => prop_assert_eq!(total, q),
                Consume | Ship | Return => prop_assert_eq!(total, -q),
                Transfer => prop_assert_eq!(total, 0.0),
            }
        }

        /// For any sequence of postings applied under the policy, stock equals the sum of the
        /// accepted rows, never goes below zero, and a refused request changes nothing.
        /// For any sequence of receives (in any unit), transfers (within a shop, and between
        /// shops as a delivery's ship and receipt pair), counts, produce and consume, applied
        /// under the policy: stock equals the sum of the accepted ledger at every location,
        /// never goes below zero, a refused request changes nothing, and a count leaves stock at
        /// what was counted.
        #[test]
        fn stock_is_the_sum_of_the_accepted_ledger(
            requests in proptest::collection::vec(
                proptest::collection::vec((0usize..9, 0u128..2, 0u128..3, 0u128..3, -50i64..50), 1..4),
                1..40,
            )
        ) {
            use crate::units::{UnitDef, factor_to_base};
            // Unit 10 is the items' base; unit 11 is 12 of it; unit 12 is 0.25 of unit 11.
            let units: BTreeMap<Uuid, UnitDef> = BTreeMap::from([
                (loc(10), UnitDef { base: None, factor: None }),
                (loc(11), UnitDef { base: Some(loc(10)), factor: Some(12.0) }),
                (loc(12), UnitDef { base: Some(loc(11)), factor: Some(0.25) }),
            ]);
            let to_base = |unit: u128, q: f64| {
                factor_to_base(Some(loc(unit)), Some(loc(10)), &[], &|u| units.get(&u).copied())
                    .unwrap()
                    .apply(q)
                    .unwrap()
            };
            let mut stock: BTreeMap<(Uuid, Uuid), i64> = BTreeMap::new();
            let mut ledger: Vec<InventoryTransaction> = Vec::new();
            for request in requests {
                // A count is a request of its own: it adjusts to what was counted.
                let mut counted = Vec::new();
                let rows: Vec<InventoryTransaction> = request
                    .into_iter()
                    .flat_map(|(k, item, a, b, q)| {
                        let quantity = q as f64 / 4.0;
                        let one = |kind, from, to, q| vec![row(kind, item, q, from, to)];
                        match k {
                            0 => one(Adjust, None, Some(a), quantity),
                            1 if a != b => one(Transfer, Some(a), Some(b), quantity.abs()),
                            2 => one(Return, Some(a), None, quantity.abs()),
                            3 => one(Receipt, None, Some(b), quantity.abs()),
                            4 => one(Receipt, None, Some(b), to_base(11 + (a % 2), quantity.abs())),
                            5 => one(Produce, None, Some(a), to_base(12, quantity.abs())),
                            6 => one(Consume, Some(a), None, quantity.abs()),
                            // A transfer delivery's completion: ship at the source, receipt at
                            // the destination (another shop, location 9), one request.
                            7 => vec![
                                row(Ship, item, quantity.abs(), Some(a), None),
                                row(Receipt, item, quantity.abs(), None, Some(9)),
                            ],
                            8 if counted.is_empty() => {
                                let key = (Uuid::from_u128(item), loc(a));
                                let counted_q = quantity.abs();
                                let d = crate::stock_count::difference(
                                    counted_q,
                                    stock.get(&key).copied().unwrap_or(0),
                                );
                                counted.push((key, to_micros(counted_q), d));
                                if d == 0 {
                                    vec![]
                                } else {
                                    one(Adjust, None, Some(a), from_micros(d))
                                }
                            }
                            _ => vec![],
                        }
                    })
                    .collect();
                let net = net_deltas(&rows).unwrap();
                let mut next = stock.clone();
                let mut refused = false;
                for (key, delta) in &net {
                    let current = stock.get(key).copied().unwrap_or(0);
                    match next_on_hand(current, *delta) {
                        Ok(n) => { next.insert(*key, n); }
                        Err(StockRefusal::Insufficient { .. }) => refused = true,
                        Err(StockRefusal::TooLarge { .. }) => prop_assert!(false, "tiny quantities"),
                    }
                }
                if !refused {
                    stock = next;
                    ledger.extend(rows);
                    // The count leaves stock at what was counted, plus what the request's other
                    // rows moved there.
                    for (key, micros, d) in &counted {
                        let others = net.get(key).copied().unwrap_or(0) - *d as i128;
                        prop_assert_eq!(
                            stock.get(key).copied().unwrap_or(0) as i128,
                            *micros as i128 + others
                        );
                    }
                }
                prop_assert!(stock.values().all(|v| *v >= 0));
                let summed = net_deltas(&ledger).unwrap();
                for (key, on_hand) in &stock {
                    prop_assert_eq!(*on_hand as i128, summed.get(key).copied().unwrap_or(0));
                }
                for (key, total) in &summed {
                    prop_assert_eq!(*total, stock.get(key).copied().unwrap_or(0) as i128);
                }
            }
        }
    }
}
