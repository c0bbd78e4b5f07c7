//! The inventory ledger (spec 2.7, 4.6) and stock on hand (decisions.md section 5).
//!
//! A transaction is immutable once posted. [`posting_deltas`] says what a transaction does to
//! stock: stock on hand at a location is the sum of the deltas of every transaction.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::resource::{Allow, Ops, Record, ResourceDesc};
use crate::violation::Violation;

/// The kind of a ledger row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TransactionType {
    /// Goods received at `toLocationId` (delivery receiving).
    Receipt,
    /// Material consumed from `fromLocationId` (production consume).
    Consume,
    /// Stock moved from `fromLocationId` to `toLocationId` in the same shop.
    Transfer,
    /// A signed correction at the destination, or at the source without a destination.
    Adjust,
    /// Output produced into `toLocationId` (production produce).
    Produce,
    /// Goods shipped from `fromLocationId` (outbound delivery completion).
    Ship,
    /// Goods returned out of `fromLocationId`.
    Return,
}

impl TransactionType {
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
    /// Quantity in the item's base unit; signed only for `adjust`.
    pub quantity: f64,
    /// Unit the quantity was entered in.
    #[serde(default)]
    pub unit_measure_id: Option<Uuid>,
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
    pub created_at: DateTime<Utc>,
    /// Equal to `createdAt`: rows never change.
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
        read_only: &["shopId", "appUserId"],
        summary: "Inventory transactions: the immutable stock ledger",
        ..ResourceDesc::new(
            "inventory-transaction",
            "inventory_transaction",
            "InventoryTransaction",
        )
    };

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        if let Err(violation) = self.deltas() {
            v.push(violation);
        }
        if self.unit_cost.is_some_and(|c| c < 0.0) {
            v.push(Violation::field(
                "unitCost",
                "unitCost must not be negative",
            ));
        }
        v
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
    }
}
