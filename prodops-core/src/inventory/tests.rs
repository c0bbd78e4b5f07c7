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
        check::<InventoryTransaction>(json!({"itemId": item, "type": "transfer", "quantity": 1}))
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
    let mut fields = json!({"itemId": Uuid::from_u128(item), "type": kind.as_str(), "quantity": q});
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
