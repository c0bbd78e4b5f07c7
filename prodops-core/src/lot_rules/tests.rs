use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;
use serde_json::Map;
use uuid::Uuid;

use super::*;
use crate::inventory::{InventoryTransaction, TransactionSource, TransactionType};
use crate::lot::{Lot, Tracking};

const LOT_IN: Uuid = Uuid::from_u128(0x1001);
const LOT_OUT: Uuid = Uuid::from_u128(0x1002);
const SERIAL: Uuid = Uuid::from_u128(0x1003);
const PLAIN: Uuid = Uuid::from_u128(0x1004);
const ITEMS: [Uuid; 4] = [LOT_IN, LOT_OUT, SERIAL, PLAIN];

fn location(i: u8) -> Uuid {
    Uuid::from_u128(0x2000 + i as u128)
}

fn order(i: u8) -> Uuid {
    Uuid::from_u128(0x3000 + i as u128)
}

fn delivery(i: u8) -> Uuid {
    Uuid::from_u128(0x4000 + i as u128)
}

fn t0() -> DateTime<Utc> {
    crate::time::parse("2026-03-01T08:00:00Z").unwrap()
}

fn hours(h: i64) -> DateTime<Utc> {
    t0() + Duration::hours(h)
}

/// Ids in creation order, so tests read their ledgers in a known order.
#[derive(Default)]
struct Ids(u128);

impl Ids {
    fn next(&mut self) -> Uuid {
        self.0 += 1;
        Uuid::from_u128(0x9000_0000 + self.0)
    }
}

fn row(
    id: Uuid,
    kind: TransactionType,
    item: Uuid,
    quantity: f64,
    from: Option<Uuid>,
    to: Option<Uuid>,
    lot: Option<Uuid>,
) -> InventoryTransaction {
    InventoryTransaction {
        id,
        organization_id: Uuid::nil(),
        item_id: item,
        shop_id: Uuid::nil(),
        kind,
        quantity,
        unit_measure_id: None,
        entered_quantity: None,
        entered_unit_measure_id: None,
        unit_cost: None,
        from_location_id: from,
        to_location_id: to,
        deliverable_id: None,
        delivery_id: None,
        pick_line_id: None,
        lot_id: lot,
        reverses_id: None,
        source: TransactionSource::Manual,
        reason: None,
        app_user_id: None,
        metadata: Map::new(),
        created_at: t0(),
        updated_at: t0(),
    }
}

fn lot(
    id: Uuid,
    item: Uuid,
    code: &str,
    created: DateTime<Utc>,
    expires: Option<DateTime<Utc>>,
) -> Lot {
    Lot {
        id,
        organization_id: Uuid::nil(),
        item_id: item,
        code: code.to_string(),
        expires_at: expires,
        manufactured_at: None,
        vendor_lot_code: None,
        properties: Map::new(),
        is_archived: false,
        archived_at: None,
        created_at: created,
        updated_at: created,
    }
}

fn ledger(settings: StockSettings) -> LotLedger {
    let mut l = LotLedger::new(settings);
    l.tracking = [
        (LOT_IN, Tracking::Lot),
        (LOT_OUT, Tracking::Lot),
        (SERIAL, Tracking::Serial),
        (PLAIN, Tracking::None),
    ]
    .into();
    l
}

fn add_lot(
    l: &mut LotLedger,
    ids: &mut Ids,
    item: Uuid,
    at: DateTime<Utc>,
    expires: Option<DateTime<Utc>>,
) -> Uuid {
    let id = ids.next();
    l.lots
        .insert(id, lot(id, item, &format!("L-{}", ids.0), at, expires));
    id
}

fn fields(refusal: &Refusal) -> Vec<String> {
    refusal
        .violations()
        .iter()
        .map(|v| v.field.clone().unwrap_or_default())
        .collect()
}

fn key(item: Uuid, loc: u8, lot: Option<Uuid>) -> StockKey {
    StockKey {
        item_id: item,
        location_id: location(loc),
        lot_id: lot,
    }
}

#[test]
fn a_tracked_item_names_its_lot_and_an_untracked_one_none() {
    let mut ids = Ids::default();
    let mut l = ledger(StockSettings::default());
    let a = add_lot(&mut l, &mut ids, LOT_IN, t0(), None);
    let other_items = add_lot(&mut l, &mut ids, LOT_OUT, t0(), None);
    let receipt = |item, lot| {
        row(
            Uuid::from_u128(1),
            TransactionType::Receipt,
            item,
            2.0,
            None,
            Some(location(0)),
            lot,
        )
    };

    let err = l.post(vec![receipt(LOT_IN, None)], t0()).unwrap_err();
    assert!(matches!(err, Refusal::Invalid(_)));
    assert_eq!(fields(&err), ["lotId"]);
    assert!(err.violations()[0].message.contains("tracked by lot"));

    let err = l.post(vec![receipt(PLAIN, Some(a))], t0()).unwrap_err();
    assert_eq!(fields(&err), ["lotId"]);

    let err = l
        .post(vec![receipt(LOT_IN, Some(other_items))], t0())
        .unwrap_err();
    assert!(err.violations()[0].message.contains("lot of item"));

    // Another organization's lot is not in `lots`: the same as a missing one.
    let err = l
        .post(vec![receipt(LOT_IN, Some(Uuid::from_u128(77)))], t0())
        .unwrap_err();
    assert!(err.violations()[0].message.contains("no lot"));

    // Several rows: each violation carries its row's index.
    let err = l
        .post(vec![receipt(LOT_IN, Some(a)), receipt(LOT_IN, None)], t0())
        .unwrap_err();
    assert_eq!(err.violations()[0].index, Some(1));

    l.post(vec![receipt(LOT_IN, Some(a)), receipt(PLAIN, None)], t0())
        .unwrap();
    assert_eq!(l.stock()[&key(LOT_IN, 0, Some(a))], 2_000_000);
    assert_eq!(l.stock()[&key(PLAIN, 0, None)], 2_000_000);
    assert!(l.rows.is_empty() || l.stock().clone() == l.replay().unwrap());
}

#[test]
fn a_serial_moves_by_one_and_is_never_on_hand_twice() {
    let mut ids = Ids::default();
    let mut l = ledger(StockSettings::default());
    let s = add_lot(&mut l, &mut ids, SERIAL, t0(), None);
    let receive = |q: f64, loc: u8| {
        row(
            Uuid::from_u128(5),
            TransactionType::Receipt,
            SERIAL,
            q,
            None,
            Some(location(loc)),
            Some(s),
        )
    };

    let err = l.post(vec![receive(2.0, 0)], hours(1)).unwrap_err();
    assert!(matches!(err, Refusal::Invalid(_)));
    assert_eq!(fields(&err), ["quantity"]);
    let err = l.post(vec![receive(0.5, 0)], hours(1)).unwrap_err();
    assert_eq!(fields(&err), ["quantity"]);

    l.post(vec![receive(1.0, 0)], hours(1)).unwrap();
    // The same serial again, at another location or the same one: on hand twice.
    for loc in [0, 1] {
        let err = l.post(vec![receive(1.0, loc)], hours(2)).unwrap_err();
        assert!(matches!(err, Refusal::Conflict(_)), "{err:?}");
        assert_eq!(fields(&err), ["lotId"]);
    }
    // Moving it is fine: it is on hand once, elsewhere.
    let mv = row(
        Uuid::from_u128(6),
        TransactionType::Transfer,
        SERIAL,
        1.0,
        Some(location(0)),
        Some(location(1)),
        Some(s),
    );
    l.post(vec![mv], hours(3)).unwrap();
    assert_eq!(l.serial_total(s), SERIAL_UNIT);
    // Shipped, it may come back (a return from the customer).
    let ship = row(
        Uuid::from_u128(7),
        TransactionType::Ship,
        SERIAL,
        1.0,
        Some(location(1)),
        None,
        Some(s),
    );
    l.post(vec![ship], hours(4)).unwrap();
    l.post(vec![receive(1.0, 2)], hours(5)).unwrap();
    assert_eq!(l.serial_total(s), SERIAL_UNIT);
}

#[test]
fn fefo_takes_the_first_to_expire_and_fifo_the_first_made() {
    let now = hours(100);
    let soon = lot(Uuid::from_u128(1), LOT_IN, "B", hours(3), Some(hours(150)));
    let later = lot(Uuid::from_u128(2), LOT_IN, "A", hours(1), Some(hours(300)));
    let never = lot(Uuid::from_u128(3), LOT_IN, "C", hours(0), None);
    let tie = lot(Uuid::from_u128(4), LOT_IN, "A", hours(5), Some(hours(150)));
    let expired = lot(Uuid::from_u128(5), LOT_IN, "Z", hours(9), Some(hours(50)));
    let lots = [soon, later, never, tie, expired];
    let available: Vec<LotStock<'_>> = lots
        .iter()
        .map(|lot| LotStock {
            lot,
            on_hand: 3_000_000,
        })
        .collect();
    let codes = |picks: &[LotTaken]| picks.iter().map(|p| p.lot_id.as_u128()).collect::<Vec<_>>();

    let fefo = pick_lots(15_000_000, &available, &[], LotPicking::Fefo, now).unwrap();
    // Expired first (it expires first), then by expiry, ties by code, no expiry last.
    assert_eq!(codes(&fefo), [5, 4, 1, 2, 3]);
    assert!(fefo[0].expired && !fefo[1].expired);
    let fifo = pick_lots(7_000_000, &available, &[], LotPicking::Fifo, now).unwrap();
    assert_eq!(codes(&fifo), [3, 2, 1]);
    assert_eq!(fifo[2].quantity, 1.0);

    let err = pick_lots(16_000_000, &available, &[], LotPicking::Fefo, now).unwrap_err();
    assert!(matches!(err, Refusal::Conflict(_)));

    // Named lots are taken in the request's order, whatever the setting.
    let asked = [
        LotRequest {
            lot_id: Uuid::from_u128(3),
            quantity: Some(1_000_000),
        },
        LotRequest {
            lot_id: Uuid::from_u128(1),
            quantity: None,
        },
    ];
    let picks = pick_lots(2_500_000, &available, &asked, LotPicking::Fefo, now).unwrap();
    assert_eq!(codes(&picks), [3, 1]);
    assert_eq!(picks[1].quantity, 1.5);

    let bad = |asked: &[LotRequest], need: i64| {
        pick_lots(need, &available, asked, LotPicking::Fifo, now).unwrap_err()
    };
    let other = LotRequest {
        lot_id: Uuid::from_u128(99),
        quantity: None,
    };
    let err = bad(&[other], 1);
    assert!(matches!(err, Refusal::Invalid(_)));
    assert_eq!(fields(&err), ["lots[0].lotId"]);
    let twice = LotRequest {
        lot_id: Uuid::from_u128(1),
        quantity: Some(1),
    };
    assert_eq!(fields(&bad(&[twice, twice], 5)), ["lots[1].lotId"]);
    let zero = LotRequest {
        lot_id: Uuid::from_u128(1),
        quantity: Some(0),
    };
    assert_eq!(fields(&bad(&[zero], 5)), ["lots[0].quantity"]);
    // More than the lot holds, or less than the need: a conflict with stock.
    let much = LotRequest {
        lot_id: Uuid::from_u128(1),
        quantity: Some(4_000_000),
    };
    let err = bad(&[much], 4_000_000);
    assert!(matches!(err, Refusal::Conflict(_)));
    assert_eq!(fields(&err), ["lots[0].quantity"]);
    let one = LotRequest {
        lot_id: Uuid::from_u128(1),
        quantity: None,
    };
    assert_eq!(fields(&bad(&[one], 4_000_000)), ["lots"]);
    // Naming more than the need is a mistake in the request.
    let two = LotRequest {
        lot_id: Uuid::from_u128(2),
        quantity: Some(2_000_000),
    };
    let err = bad(&[two], 1_000_000);
    assert!(matches!(err, Refusal::Invalid(_)));
    assert_eq!(fields(&err), ["lots"]);
}

#[test]
fn a_reversal_undoes_a_posting_once_and_is_linked_to_it() {
    let mut ids = Ids::default();
    let mut l = ledger(StockSettings::default());
    let a = add_lot(&mut l, &mut ids, LOT_IN, t0(), None);
    let receipt = row(
        Uuid::from_u128(1),
        TransactionType::Receipt,
        LOT_IN,
        5.0,
        None,
        Some(location(0)),
        Some(a),
    );
    l.post(vec![receipt], hours(1)).unwrap();
    let transfer = row(
        Uuid::from_u128(2),
        TransactionType::Transfer,
        LOT_IN,
        2.0,
        Some(location(0)),
        Some(location(1)),
        Some(a),
    );
    l.post(vec![transfer], hours(2)).unwrap();

    let mut n = 100u128;
    let mut new_id = || {
        n += 1;
        Uuid::from_u128(n)
    };
    l.reverse(&[Uuid::from_u128(2)], &mut new_id, hours(3))
        .unwrap();
    let reversal_row = l.rows.last().unwrap().clone();
    assert_eq!(reversal_row.reverses_id, Some(Uuid::from_u128(2)));
    assert_eq!(reversal_row.kind, TransactionType::Transfer);
    assert_eq!(l.stock()[&key(LOT_IN, 0, Some(a))], 5_000_000);
    assert_eq!(l.stock()[&key(LOT_IN, 1, Some(a))], 0);
    assert_eq!(l.stock().clone(), l.replay().unwrap());

    let err = l
        .reverse(&[Uuid::from_u128(2)], &mut new_id, hours(4))
        .unwrap_err();
    assert!(matches!(err, Refusal::Conflict(_)));
    assert!(err.violations()[0].message.contains("reversed already"));
    let err = l
        .reverse(&[reversal_row.id], &mut new_id, hours(4))
        .unwrap_err();
    assert!(err.violations()[0].message.contains("is a reversal"));

    // A receipt whose goods were used since cannot be reversed: stock would go below zero.
    let consume = row(
        Uuid::from_u128(3),
        TransactionType::Consume,
        LOT_IN,
        4.0,
        Some(location(0)),
        None,
        Some(a),
    );
    l.post(vec![consume], hours(5)).unwrap();
    let err = l
        .reverse(&[Uuid::from_u128(1)], &mut new_id, hours(6))
        .unwrap_err();
    assert!(matches!(err, Refusal::Conflict(_)));
    assert_eq!(fields(&err), ["quantity"]);
}

#[test]
fn nothing_is_posted_on_or_before_the_freeze_date() {
    let mut l = ledger(StockSettings {
        stock_frozen_until: Some(t0().date_naive() + Duration::days(1)),
        lot_picking: LotPicking::Fifo,
    });
    let adjust = |id| {
        row(
            Uuid::from_u128(id),
            TransactionType::Adjust,
            PLAIN,
            1.0,
            None,
            Some(location(0)),
            None,
        )
    };
    let err = l.post(vec![adjust(1)], hours(30)).unwrap_err();
    assert!(matches!(err, Refusal::Conflict(_)));
    assert!(
        err.violations()[0].message.contains("2026-03-02"),
        "{err:?}"
    );
    assert!(
        l.post(vec![adjust(1)], hours(16)).is_err(),
        "the day itself is frozen"
    );
    l.post(vec![adjust(1)], hours(40)).unwrap();

    // A posting made before the freeze is reversed by a posting dated after it.
    let mut l = ledger(StockSettings::default());
    l.post(vec![adjust(1)], hours(1)).unwrap();
    l.settings.stock_frozen_until = Some(t0().date_naive());
    l.reverse(&[Uuid::from_u128(1)], || Uuid::from_u128(2), hours(30))
        .unwrap();
    assert_eq!(l.stock()[&key(PLAIN, 0, None)], 0);
}

#[test]
fn a_backdated_posting_may_not_leave_a_later_balance_negative() {
    let mut l = ledger(StockSettings::default());
    let receipt = row(
        Uuid::from_u128(1),
        TransactionType::Adjust,
        PLAIN,
        10.0,
        None,
        Some(location(0)),
        None,
    );
    l.post(vec![receipt], hours(10)).unwrap();
    let consume = |id, q| {
        row(
            Uuid::from_u128(id),
            TransactionType::Consume,
            PLAIN,
            q,
            Some(location(0)),
            None,
            None,
        )
    };
    l.post(vec![consume(2, 8.0)], hours(30)).unwrap();

    // Dated between the two: 10 then -5 is fine then, but the later -8 would find 5.
    let err = l.post(vec![consume(3, 5.0)], hours(20)).unwrap_err();
    assert!(matches!(err, Refusal::Conflict(_)));
    assert!(
        err.violations()[0].message.contains("at any later moment"),
        "{err:?}"
    );
    // Before the receipt, even 1 is refused.
    assert!(l.post(vec![consume(4, 1.0)], hours(5)).is_err());
    l.post(vec![consume(5, 2.0)], hours(20)).unwrap();
    assert_eq!(l.stock()[&key(PLAIN, 0, None)], 0);
    // A backdated receipt is always fine (up to the limit).
    let late = row(
        Uuid::from_u128(6),
        TransactionType::Receipt,
        PLAIN,
        3.0,
        None,
        Some(location(0)),
        None,
    );
    l.post(vec![late], hours(1)).unwrap();
    assert_eq!(l.stock()[&key(PLAIN, 0, None)], 3_000_000);
}

#[test]
fn a_backdated_serial_is_not_on_hand_twice_later() {
    let mut ids = Ids::default();
    let mut l = ledger(StockSettings::default());
    let s = add_lot(&mut l, &mut ids, SERIAL, t0(), None);
    let receive = |id, loc| {
        row(
            Uuid::from_u128(id),
            TransactionType::Receipt,
            SERIAL,
            1.0,
            None,
            Some(location(loc)),
            Some(s),
        )
    };
    l.post(vec![receive(1, 0)], hours(10)).unwrap();
    let ship = row(
        Uuid::from_u128(2),
        TransactionType::Ship,
        SERIAL,
        1.0,
        Some(location(0)),
        None,
        Some(s),
    );
    l.post(vec![ship], hours(20)).unwrap();
    // Now it is on hand nowhere, but a receipt dated at 15 would have it twice between 15 and 20.
    let err = l.post(vec![receive(3, 1)], hours(15)).unwrap_err();
    assert_eq!(fields(&err), ["lotId"]);
    l.post(vec![receive(4, 1)], hours(25)).unwrap();
}

/// A small genealogy: lots A1 and A2 received, consumed by order 1, which made B1; B1
/// consumed by order 2, which made serial S1, shipped by delivery 2.
fn genealogy() -> (Vec<InventoryTransaction>, [Uuid; 4]) {
    let [a1, a2, b1, s1] = [11, 12, 13, 14].map(Uuid::from_u128);
    let mut n = 0;
    let mut r = |kind: TransactionType,
                 item: Uuid,
                 q: f64,
                 lot: Uuid,
                 order_: Option<u8>,
                 delivery_: Option<u8>,
                 at: i64| {
        n += 1;
        let (from, to) = match kind {
            TransactionType::Receipt | TransactionType::Produce => (None, Some(location(0))),
            _ => (Some(location(0)), None),
        };
        let mut row = row(Uuid::from_u128(n), kind, item, q, from, to, Some(lot));
        row.deliverable_id = order_.map(order);
        row.delivery_id = delivery_.map(delivery);
        row.created_at = hours(at);
        row
    };
    use TransactionType::*;
    let rows = vec![
        r(Receipt, LOT_IN, 5.0, a1, None, Some(1), 1),
        r(Receipt, LOT_IN, 5.0, a2, None, Some(1), 1),
        r(Consume, LOT_IN, 3.0, a1, Some(1), None, 2),
        r(Consume, LOT_IN, 1.0, a1, Some(1), None, 3),
        r(Consume, LOT_IN, 2.0, a2, Some(1), None, 3),
        r(Produce, LOT_OUT, 4.0, b1, Some(1), None, 4),
        r(Consume, LOT_OUT, 4.0, b1, Some(2), None, 5),
        r(Produce, SERIAL, 1.0, s1, Some(2), None, 6),
        r(Ship, SERIAL, 1.0, s1, None, Some(2), 7),
    ];
    (rows, [a1, a2, b1, s1])
}

#[test]
fn a_trace_down_follows_consumption_to_shipments() {
    let (rows, [a1, a2, b1, s1]) = genealogy();
    let index = TraceIndex::new(&rows);
    let down = index.trace(a1, TraceDirection::Down, 5);
    let ids: Vec<Uuid> = down.nodes.iter().map(|n| n.id).collect();
    assert_eq!(ids, [a1, order(1), b1, order(2), s1, delivery(2)]);
    assert!(!ids.contains(&a2), "a sibling input is not downstream");
    let a1_to_order = &down.edges[0];
    assert_eq!(
        (a1_to_order.from, a1_to_order.to, a1_to_order.quantity),
        (a1, order(1), 4.0)
    );
    assert_eq!(
        (a1_to_order.first_at, a1_to_order.last_at),
        (hours(2), hours(3))
    );
    assert_eq!(down.nodes.iter().find(|n| n.id == s1).unwrap().depth, 2);
    assert!(!down.truncated);

    let shallow = index.trace(a1, TraceDirection::Down, 1);
    assert!(shallow.truncated);
    assert!(!shallow.nodes.iter().any(|n| n.id == s1));

    let up = index.trace(s1, TraceDirection::Up, 5);
    let ids: HashSet<Uuid> = up.nodes.iter().map(|n| n.id).collect();
    assert_eq!(
        ids,
        HashSet::from([s1, order(2), b1, order(1), a1, a2, delivery(1)])
    );
    assert!(
        up.edges
            .iter()
            .any(|e| e.from == delivery(1) && e.to == a2 && e.kind == TransactionType::Receipt)
    );
}

#[test]
fn a_reversed_consumption_leaves_the_trace() {
    let (mut rows, [a1, _, b1, _]) = genealogy();
    let mut undo = rows[2].clone();
    undo.id = Uuid::from_u128(50);
    undo.reverses_id = Some(rows[2].id);
    let mut undo2 = rows[3].clone();
    undo2.id = Uuid::from_u128(51);
    undo2.reverses_id = Some(rows[3].id);
    rows.extend([undo, undo2]);
    let down = TraceIndex::new(&rows).trace(a1, TraceDirection::Down, 5);
    assert_eq!(down.nodes.len(), 1, "{down:?}");
    assert!(down.edges.is_empty());
    let up = TraceIndex::new(&rows).trace(b1, TraceDirection::Up, 5);
    assert!(!up.nodes.iter().any(|n| n.id == a1));
}

#[test]
fn trace_depth_is_bounded() {
    assert!(check_depth(0).is_err());
    assert_eq!(check_depth(5), Ok(5));
    assert_eq!(
        check_depth(MAX_TRACE_DEPTH + 1)
            .unwrap_err()
            .field
            .as_deref(),
        Some("depth")
    );
}

// The property test: random sequences of postings against the rules.

#[derive(Debug, Clone)]
enum Op {
    Receive {
        item: u8,
        loc: u8,
        lot: Option<u8>,
        halves: u8,
        delivery: u8,
        expires: Option<u8>,
    },
    Produce {
        order: u8,
        item: u8,
        loc: u8,
        units: u8,
    },
    Consume {
        order: u8,
        item: u8,
        loc: u8,
        halves: u8,
        given: Vec<u8>,
        fefo: bool,
    },
    Transfer {
        item: u8,
        lot: u8,
        from: u8,
        to: u8,
        halves: u8,
    },
    Count {
        item: u8,
        lot: u8,
        loc: u8,
        halves: u8,
    },
    Ship {
        item: u8,
        lot: u8,
        loc: u8,
        halves: u8,
        delivery: u8,
    },
    Reverse {
        nth: u8,
    },
    Backdated {
        item: u8,
        lot: u8,
        loc: u8,
        halves: i8,
        back: u8,
    },
    Freeze {
        back: u8,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let item = 0u8..4;
    let loc = 0u8..3;
    prop_oneof![
        4 => (item.clone(), loc.clone(), proptest::option::of(any::<u8>()), 1u8..20, 0u8..3, proptest::option::of(0u8..60))
            .prop_map(|(item, loc, lot, halves, delivery, expires)| Op::Receive { item, loc, lot, halves, delivery, expires }),
        3 => (0u8..3, 1u8..3, loc.clone(), 1u8..4).prop_map(|(order, item, loc, units)| Op::Produce { order, item, loc, units }),
        4 => (0u8..3, item.clone(), loc.clone(), 1u8..12, proptest::collection::vec(any::<u8>(), 0..3), any::<bool>())
            .prop_map(|(order, item, loc, halves, given, fefo)| Op::Consume { order, item, loc, halves, given, fefo }),
        2 => (item.clone(), any::<u8>(), loc.clone(), loc.clone(), 1u8..8)
            .prop_map(|(item, lot, from, to, halves)| Op::Transfer { item, lot, from, to, halves }),
        1 => (item.clone(), any::<u8>(), loc.clone(), 0u8..10).prop_map(|(item, lot, loc, halves)| Op::Count { item, lot, loc, halves }),
        2 => (item.clone(), any::<u8>(), loc.clone(), 1u8..6, 0u8..3)
            .prop_map(|(item, lot, loc, halves, delivery)| Op::Ship { item, lot, loc, halves, delivery }),
        2 => any::<u8>().prop_map(|nth| Op::Reverse { nth }),
        2 => (item.clone(), any::<u8>(), loc.clone(), -6i8..6, 1u8..30)
            .prop_map(|(item, lot, loc, halves, back)| Op::Backdated { item, lot, loc, halves, back }),
        1 => (10u8..60).prop_map(|back| Op::Freeze { back }),
    ]
}

struct World {
    ledger: LotLedger,
    ids: Ids,
    postings: Vec<Vec<Uuid>>,
}

impl World {
    /// The `nth` lot of `item` (in creation order), if it has any.
    fn lot_of(&self, item: Uuid, nth: u8) -> Option<Uuid> {
        let mut lots: Vec<&Lot> = self
            .ledger
            .lots
            .values()
            .filter(|l| l.item_id == item)
            .collect();
        lots.sort_by_key(|l| l.id);
        (!lots.is_empty()).then(|| lots[nth as usize % lots.len()].id)
    }

    fn tracked_lot(&self, item: Uuid, nth: u8) -> Option<Option<Uuid>> {
        if self.ledger.tracking[&item].is_tracked() {
            self.lot_of(item, nth).map(Some)
        } else {
            Some(None)
        }
    }

    fn post(&mut self, rows: Vec<InventoryTransaction>, at: DateTime<Utc>) -> Result<(), Refusal> {
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        self.ledger.post(rows, at)?;
        self.postings.push(ids);
        Ok(())
    }

    fn apply(&mut self, op: &Op, now: DateTime<Utc>) -> Result<(), Refusal> {
        let q = |halves: u8| halves as f64 / 2.0;
        let new = |w: &mut World, kind, item, quantity, from: Option<u8>, to: Option<u8>, lot| {
            row(
                w.ids.next(),
                kind,
                item,
                quantity,
                from.map(location),
                to.map(location),
                lot,
            )
        };
        use TransactionType::*;
        match *op {
            Op::Receive {
                item,
                loc,
                lot,
                halves,
                delivery: d,
                expires,
            } => {
                let item = ITEMS[item as usize];
                let tracking = self.ledger.tracking[&item];
                let lot = match (tracking.is_tracked(), lot) {
                    (false, _) => None,
                    (true, Some(nth)) if nth % 3 == 0 => self.lot_of(item, nth),
                    (true, _) => None,
                }
                .or_else(|| {
                    tracking.is_tracked().then(|| {
                        let expires = expires.map(|h| now + Duration::hours(h as i64 - 20));
                        add_lot(&mut self.ledger, &mut self.ids, item, now, expires)
                    })
                });
                let quantity = if tracking == Tracking::Serial {
                    1.0
                } else {
                    q(halves)
                };
                let mut r = new(self, Receipt, item, quantity, None, Some(loc), lot);
                r.delivery_id = Some(delivery(d));
                self.post(vec![r], now)
            }
            Op::Produce {
                order: o,
                item,
                loc,
                units,
            } => {
                let item = ITEMS[item as usize];
                let rows = if self.ledger.tracking[&item] == Tracking::Serial {
                    (0..units)
                        .map(|_| {
                            let lot = add_lot(&mut self.ledger, &mut self.ids, item, now, None);
                            let mut r = new(self, Produce, item, 1.0, None, Some(loc), Some(lot));
                            r.deliverable_id = Some(order(o));
                            r
                        })
                        .collect()
                } else {
                    let lot = add_lot(&mut self.ledger, &mut self.ids, item, now, None);
                    let mut r = new(
                        self,
                        Produce,
                        item,
                        units as f64,
                        None,
                        Some(loc),
                        Some(lot),
                    );
                    r.deliverable_id = Some(order(o));
                    vec![r]
                };
                self.post(rows, now)
            }
            Op::Consume {
                order: o,
                item,
                loc,
                halves,
                ref given,
                fefo,
            } => {
                let item = ITEMS[item as usize];
                let tracking = self.ledger.tracking[&item];
                let need = if tracking == Tracking::Serial {
                    (halves as i64 / 4).max(1) * SERIAL_UNIT
                } else {
                    halves as i64 * 500_000
                };
                let picks: Vec<(Option<Uuid>, f64)> = if tracking.is_tracked() {
                    let available = self.ledger.lots_at(item, location(loc));
                    let mut ids: Vec<Uuid> = available.iter().map(|s| s.lot.id).collect();
                    ids.sort();
                    let requested: Vec<LotRequest> = if ids.is_empty() {
                        Vec::new()
                    } else {
                        let mut seen = HashSet::new();
                        given
                            .iter()
                            .map(|g| ids[*g as usize % ids.len()])
                            .filter(|id| seen.insert(*id))
                            .map(|lot_id| LotRequest {
                                lot_id,
                                quantity: None,
                            })
                            .collect()
                    };
                    let picking = if fefo {
                        LotPicking::Fefo
                    } else {
                        LotPicking::Fifo
                    };
                    let taken = pick_lots(need, &available, &requested, picking, now)?;
                    let total: i64 = taken.iter().map(|t| to_micros(t.quantity)).sum();
                    assert_eq!(total, need, "the lots taken cover the need exactly");
                    if !requested.is_empty() {
                        // In the request's order.
                        let order: Vec<Uuid> = requested
                            .iter()
                            .map(|r| r.lot_id)
                            .filter(|id| taken.iter().any(|t| t.lot_id == *id))
                            .collect();
                        assert_eq!(order, taken.iter().map(|t| t.lot_id).collect::<Vec<_>>());
                    }
                    let mut rows = Vec::new();
                    for t in taken {
                        assert!(t.quantity > 0.0);
                        if tracking == Tracking::Serial {
                            assert_eq!(t.quantity, 1.0);
                        }
                        rows.push((Some(t.lot_id), t.quantity));
                    }
                    rows
                } else {
                    vec![(None, from_micros(need))]
                };
                let rows = picks
                    .into_iter()
                    .map(|(lot, quantity)| {
                        let mut r = new(self, Consume, item, quantity, Some(loc), None, lot);
                        r.deliverable_id = Some(order(o));
                        r
                    })
                    .collect();
                self.post(rows, now)
            }
            Op::Transfer {
                item,
                lot,
                from,
                to,
                halves,
            } => {
                let item = ITEMS[item as usize];
                let Some(lot) = self.tracked_lot(item, lot) else {
                    return Ok(());
                };
                let quantity = if self.ledger.tracking[&item] == Tracking::Serial {
                    1.0
                } else {
                    q(halves)
                };
                if from == to {
                    return Ok(());
                }
                let r = new(self, Transfer, item, quantity, Some(from), Some(to), lot);
                self.post(vec![r], now)
            }
            Op::Count {
                item,
                lot,
                loc,
                halves,
            } => {
                let item = ITEMS[item as usize];
                let Some(lot) = self.tracked_lot(item, lot) else {
                    return Ok(());
                };
                let counted = if self.ledger.tracking[&item] == Tracking::Serial {
                    (halves % 2) as i64 * SERIAL_UNIT
                } else {
                    halves as i64 * 500_000
                };
                let on_hand = self
                    .ledger
                    .stock()
                    .get(&StockKey {
                        item_id: item,
                        location_id: location(loc),
                        lot_id: lot,
                    })
                    .copied()
                    .unwrap_or(0);
                let difference = counted - on_hand;
                if difference == 0 {
                    return Ok(());
                }
                let r = new(
                    self,
                    Adjust,
                    item,
                    from_micros(difference),
                    None,
                    Some(loc),
                    lot,
                );
                self.post(vec![r], now)
            }
            Op::Ship {
                item,
                lot,
                loc,
                halves,
                delivery: d,
            } => {
                let item = ITEMS[item as usize];
                let Some(lot) = self.tracked_lot(item, lot) else {
                    return Ok(());
                };
                let quantity = if self.ledger.tracking[&item] == Tracking::Serial {
                    1.0
                } else {
                    q(halves)
                };
                let mut r = new(self, Ship, item, quantity, Some(loc), None, lot);
                r.delivery_id = Some(delivery(d));
                self.post(vec![r], now)
            }
            Op::Reverse { nth } => {
                if self.postings.is_empty() {
                    return Ok(());
                }
                let ids = self.postings[nth as usize % self.postings.len()].clone();
                let mut ids_gen = std::mem::take(&mut self.ids);
                let before = self.ledger.rows.len();
                let result = self.ledger.reverse(&ids, || ids_gen.next(), now);
                self.ids = ids_gen;
                if result.is_ok() {
                    // A reversal is a posting too: reversing it again must be refused.
                    self.postings
                        .push(self.ledger.rows[before..].iter().map(|r| r.id).collect());
                }
                result
            }
            Op::Backdated {
                item,
                lot,
                loc,
                halves,
                back,
            } => {
                let item = ITEMS[item as usize];
                let Some(lot) = self.tracked_lot(item, lot) else {
                    return Ok(());
                };
                let quantity = if self.ledger.tracking[&item] == Tracking::Serial {
                    halves.signum() as f64
                } else {
                    halves as f64 / 2.0
                };
                let at = now - Duration::hours(back as i64 * 6) + Duration::minutes(1);
                let r = new(self, Adjust, item, quantity, None, Some(loc), lot);
                self.post(vec![r], at)
            }
            Op::Freeze { back } => {
                let day = (now - Duration::hours(back as i64 * 6)).date_naive();
                if self
                    .ledger
                    .settings
                    .stock_frozen_until
                    .is_none_or(|d| d < day)
                {
                    self.ledger.settings.stock_frozen_until = Some(day);
                }
                Ok(())
            }
        }
    }

    /// Every invariant the rules keep, checked after each step.
    fn check(&self) {
        let kept = self.ledger.stock();
        assert_eq!(
            kept,
            &self.ledger.replay().unwrap(),
            "stock equals the replayed ledger"
        );
        assert!(
            kept.values().all(|v| *v >= 0),
            "no negative stock: {kept:?}"
        );
        // At every moment, not only now: postings in date order never go below zero, and no
        // serial is on hand twice.
        let mut moves: Vec<(DateTime<Utc>, usize, StockKey, i128)> = Vec::new();
        for (i, r) in self.ledger.rows.iter().enumerate() {
            for (location_id, delta) in r.deltas().unwrap() {
                moves.push((
                    r.created_at,
                    i,
                    StockKey {
                        item_id: r.item_id,
                        location_id,
                        lot_id: r.lot_id,
                    },
                    to_micros(delta) as i128,
                ));
            }
        }
        moves.sort_by_key(|m| (m.0, m.1));
        // Checked per instant: the two ends of a transfer (or of its reversal) count together.
        let mut balance: BTreeMap<StockKey, i128> = BTreeMap::new();
        let mut serial: BTreeMap<Uuid, i128> = BTreeMap::new();
        let mut i = 0;
        while i < moves.len() {
            let at = moves[i].0;
            let mut touched = Vec::new();
            while i < moves.len() && moves[i].0 == at {
                let (_, _, key, delta) = moves[i];
                *balance.entry(key).or_default() += delta;
                if let Some(lot) = key.lot_id.filter(|l| self.ledger.lots[l].item_id == SERIAL) {
                    *serial.entry(lot).or_default() += delta;
                }
                touched.push(key);
                i += 1;
            }
            for key in touched {
                assert!(balance[&key] >= 0, "{key:?} below zero at {at}");
                if let Some(lot) = key.lot_id.filter(|l| serial.contains_key(l)) {
                    assert!(
                        serial[&lot] <= SERIAL_UNIT as i128,
                        "serial {lot} on hand twice at {at}"
                    );
                }
            }
        }
        for (lot, l) in &self.ledger.lots {
            if l.item_id == SERIAL {
                assert!(self.ledger.serial_total(*lot) <= SERIAL_UNIT);
            }
        }
        // Each posting reversed at most once.
        let mut reversed = HashSet::new();
        for r in &self.ledger.rows {
            if let Some(original) = r.reverses_id {
                assert!(reversed.insert(original), "{original} reversed twice");
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn stock_per_lot_equals_the_replayed_ledger_and_traces_return(ops in proptest::collection::vec(op(), 1..60)) {
        let mut world = World { ledger: ledger(StockSettings::default()), ids: Ids::default(), postings: Vec::new() };
        for (step, op) in ops.iter().enumerate() {
            let now = hours(step as i64 * 6);
            let before_rows = world.ledger.rows.len();
            let before_stock = world.ledger.stock().clone();
            if world.apply(op, now).is_err() {
                prop_assert_eq!(world.ledger.rows.len(), before_rows, "a refused posting writes nothing");
                prop_assert_eq!(world.ledger.stock(), &before_stock);
            }
            world.check();
        }
        // A down-trace followed by an up-trace returns to the starting lot.
        let index = TraceIndex::new(&world.ledger.rows);
        for start in world.ledger.lots.keys() {
            let down = index.trace(*start, TraceDirection::Down, 4);
            for node in down.nodes.iter().filter(|n| n.kind == TraceNodeKind::Lot && n.id != *start) {
                let up = index.trace(node.id, TraceDirection::Up, node.depth);
                prop_assert!(
                    up.nodes.iter().any(|n| n.id == *start),
                    "lot {} is downstream of {} but its up-trace does not reach it", node.id, start
                );
            }
            // Every edge's quantity is what its rows moved, net of reversals.
            for edge in &down.edges {
                prop_assert!(edge.quantity > 0.0);
                prop_assert!(edge.first_at <= edge.last_at);
            }
        }
    }
}
