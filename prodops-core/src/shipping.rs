//! Completing an outbound or transfer delivery (spec 4.8, 2.7; issue 35): what it posts to the
//! inventory ledger.
//!
//! When the delivery completes, each manifest line's `quantityExpected` leaves its location (the
//! line's `locationId`, else the delivery's `sourceLocationId`) as a `ship` row. When the
//! delivery names a `destinationLocationId`, the same quantity arrives there as a `receipt` row,
//! posted with the shipment in one transaction: the goods leave one place and arrive at the
//! other together, so stock equals the ledger at both ends and nothing is ever "between" them in
//! the ledger. A delivery without a destination (goods leaving the organization) posts only the
//! `ship` rows.
//!
//! Between `start` and `complete` the goods are counted where they were loaded: the ledger moves
//! them at completion, not at departure. `ship` and `receipt` rows are posted by workflows only,
//! so unlike a `transfer` row the pair may cross shops: moving goods between shops is a transfer
//! delivery.

use uuid::Uuid;

use crate::inventory::TransactionType;

/// A manifest line as completion sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShipLine {
    /// The line's id (kept as `metadata.manifestLineId` on the rows).
    pub id: Uuid,
    /// The item.
    pub item_id: Uuid,
    /// `quantityExpected`: what ships.
    pub quantity: f64,
    /// The line's own location, where it ships from.
    pub location_id: Option<Uuid>,
}

/// One ledger row completion posts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Posting {
    /// Index of the manifest line in the slice given to [`completion_postings`].
    pub line: usize,
    /// `ship` or `receipt`.
    pub kind: TransactionType,
    /// The item.
    pub item_id: Uuid,
    /// Quantity (nonnegative).
    pub quantity: f64,
    /// Where the goods leave (a `ship` row).
    pub from_location_id: Option<Uuid>,
    /// Where the goods arrive (a `receipt` row).
    pub to_location_id: Option<Uuid>,
}

/// The rows completing a delivery posts, in manifest order: for each line its `ship` row (from
/// the line's location, else `source`; a line with neither is left to the ledger to refuse,
/// naming `fromLocationId`), followed, when the delivery has a `destination`, by the `receipt`
/// row of the same quantity there.
pub fn completion_postings(
    source: Option<Uuid>,
    destination: Option<Uuid>,
    lines: &[ShipLine],
) -> Vec<Posting> {
    let mut rows = Vec::with_capacity(lines.len() * 2);
    for (i, line) in lines.iter().enumerate() {
        rows.push(Posting {
            line: i,
            kind: TransactionType::Ship,
            item_id: line.item_id,
            quantity: line.quantity,
            from_location_id: line.location_id.or(source),
            to_location_id: None,
        });
        if let Some(to) = destination {
            rows.push(Posting {
                line: i,
                kind: TransactionType::Receipt,
                item_id: line.item_id,
                quantity: line.quantity,
                from_location_id: None,
                to_location_id: Some(to),
            });
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::{DeliveryDirection, DeliveryStatus, ReceiveLine, ReceiveRequest};
    use crate::inventory::{StockRefusal, next_on_hand, posting_deltas, to_micros};
    use crate::receiving::{self, ManifestState};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn a_transfer_ships_and_arrives_together() {
        let lines = [
            ShipLine {
                id: id(10),
                item_id: id(1),
                quantity: 7.0,
                location_id: None,
            },
            ShipLine {
                id: id(11),
                item_id: id(2),
                quantity: 2.5,
                location_id: Some(id(30)),
            },
        ];
        let rows = completion_postings(Some(id(20)), Some(id(40)), &lines);
        assert_eq!(rows.len(), 4);
        assert_eq!(rows[0].kind, TransactionType::Ship);
        assert_eq!(rows[0].from_location_id, Some(id(20)));
        assert_eq!(rows[1].kind, TransactionType::Receipt);
        assert_eq!(rows[1].to_location_id, Some(id(40)));
        assert_eq!(rows[1].quantity, 7.0);
        assert_eq!(
            rows[2].from_location_id,
            Some(id(30)),
            "the line's own location"
        );
        assert_eq!((rows[3].line, rows[3].item_id), (1, id(2)));
        // Without a destination the goods leave the organization: only the shipment.
        let out = completion_postings(Some(id(20)), None, &lines);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|r| r.kind == TransactionType::Ship));
    }

    /// A ledger row in the model: item, type, quantity, from, to.
    type Row = (Uuid, TransactionType, f64, Option<Uuid>, Option<Uuid>);

    /// What the ledger and stock hold in the model: every accepted row, and stock per item and
    /// location, changed by requests under the negative-stock policy, as the server does.
    #[derive(Default)]
    struct Books {
        stock: BTreeMap<(Uuid, Uuid), i64>,
        ledger: Vec<Row>,
    }

    impl Books {
        /// Posts one request's rows all or nothing; whether they were accepted.
        fn post(&mut self, rows: &[Row]) -> bool {
            let mut net: BTreeMap<(Uuid, Uuid), i128> = BTreeMap::new();
            for (item, kind, q, from, to) in rows {
                for (loc, d) in posting_deltas(*kind, *q, *from, *to).expect("valid row") {
                    *net.entry((*item, loc)).or_default() += to_micros(d) as i128;
                }
            }
            let mut next = self.stock.clone();
            for (key, delta) in net {
                match next_on_hand(self.stock.get(&key).copied().unwrap_or(0), delta) {
                    Ok(n) => {
                        next.insert(key, n);
                    }
                    Err(StockRefusal::Insufficient { .. } | StockRefusal::TooLarge { .. }) => {
                        return false;
                    }
                }
            }
            self.stock = next;
            self.ledger.extend_from_slice(rows);
            true
        }

        /// Stock equals the sum of the ledger at every item and location, both ways.
        fn balanced(&self) -> Result<(), TestCaseError> {
            let mut summed: BTreeMap<(Uuid, Uuid), i128> = BTreeMap::new();
            for (item, kind, q, from, to) in &self.ledger {
                for (loc, d) in posting_deltas(*kind, *q, *from, *to).unwrap() {
                    *summed.entry((*item, loc)).or_default() += to_micros(d) as i128;
                }
            }
            for (key, on_hand) in &self.stock {
                prop_assert!(*on_hand >= 0);
                prop_assert_eq!(*on_hand as i128, summed.get(key).copied().unwrap_or(0));
            }
            for (key, total) in &summed {
                prop_assert_eq!(*total, self.stock.get(key).copied().unwrap_or(0) as i128);
            }
            Ok(())
        }

        fn total(&self, item: Uuid) -> i64 {
            self.stock
                .iter()
                .filter(|((i, _), _)| *i == item)
                .map(|(_, v)| *v)
                .sum()
        }
    }

    /// One step of a random session.
    #[derive(Debug, Clone)]
    enum Step {
        /// An inbound delivery of `(item, quantity)` lines at `location`, received in `parts`
        /// receives of equal shares.
        Receive {
            lines: Vec<(u128, u32)>,
            location: u128,
            parts: u32,
        },
        /// A transfer delivery of `(item, quantity)` lines from `from` to `to` (or out of the
        /// organization without `to`), completed.
        Transfer {
            lines: Vec<(u128, u32)>,
            from: u128,
            to: Option<u128>,
        },
    }

    fn step() -> impl Strategy<Value = Step> {
        let lines = proptest::collection::vec((0u128..3, 1u32..20), 1..4);
        prop_oneof![
            (lines.clone(), 0u128..4, 1u32..4).prop_map(|(lines, location, parts)| {
                Step::Receive {
                    lines,
                    location,
                    parts,
                }
            }),
            (lines, 0u128..4, proptest::option::of(0u128..4))
                .prop_map(|(lines, from, to)| Step::Transfer { lines, from, to }),
        ]
    }

    proptest! {
        /// For any sequence of receives and transfer completions, planned by the rules the
        /// server runs (`receiving::receive`, [`completion_postings`]) and posted under the
        /// negative-stock policy, stock equals the ledger at every location after every step, a
        /// completed transfer with a destination keeps each item's total stock, and one without
        /// takes out exactly what it shipped.
        #[test]
        fn stock_equals_the_ledger_through_receives_and_transfers(
            steps in proptest::collection::vec(step(), 1..30)
        ) {
            let mut books = Books::default();
            let mut next_line = 1000u128;
            for s in steps {
                match s {
                    Step::Receive { lines, location, parts } => {
                        let mut states: Vec<ManifestState> = lines
                            .iter()
                            .map(|(_, q)| {
                                next_line += 1;
                                ManifestState {
                                    id: id(next_line),
                                    expected: f64::from(*q),
                                    received: 0.0,
                                    location_id: Some(id(100 + location)),
                                }
                            })
                            .collect();
                        let mut status = DeliveryStatus::Expected;
                        for part in 0..parts {
                            if status == DeliveryStatus::Received {
                                break;
                            }
                            let req = if part + 1 == parts {
                                ReceiveRequest { lines: None }
                            } else {
                                ReceiveRequest {
                                    lines: Some(
                                        states
                                            .iter()
                                            .map(|l| ReceiveLine {
                                                manifest_line_id: l.id,
                                                quantity: (l.expected / f64::from(parts)).floor().max(1.0).min(l.expected - l.received),
                                                location_id: None,
                                                lots: None,
                                            })
                                            .filter(|l| l.quantity > 0.0)
                                            .collect(),
                                    ),
                                }
                            };
                            if req.lines.as_ref().is_some_and(Vec::is_empty) {
                                continue;
                            }
                            let (plan, next) = receiving::receive(
                                DeliveryDirection::Inbound,
                                status,
                                &req,
                                &states,
                                receiving::OVER_RECEIPT_TOLERANCE,
                            )
                            .expect("a receive within the manifest");
                            let rows: Vec<_> = plan
                                .receipts
                                .iter()
                                .map(|r| (id(lines[r.line].0), TransactionType::Receipt, r.quantity, None, Some(r.location_id)))
                                .collect();
                            prop_assert!(books.post(&rows), "receipts only add stock");
                            for (state, after) in states.iter_mut().zip(&plan.received) {
                                state.received = *after;
                            }
                            status = next;
                            books.balanced()?;
                        }
                        prop_assert_eq!(status, DeliveryStatus::Received);
                    }
                    Step::Transfer { lines, from, to } => {
                        let ship: Vec<ShipLine> = lines
                            .iter()
                            .map(|(item, q)| {
                                next_line += 1;
                                ShipLine { id: id(next_line), item_id: id(*item), quantity: f64::from(*q), location_id: None }
                            })
                            .collect();
                        let postings = completion_postings(Some(id(100 + from)), to.map(|t| id(100 + t)), &ship);
                        let rows: Vec<_> = postings
                            .iter()
                            .map(|p| (p.item_id, p.kind, p.quantity, p.from_location_id, p.to_location_id))
                            .collect();
                        let totals: BTreeMap<Uuid, i64> = (0..3).map(|i| (id(i), books.total(id(i)))).collect();
                        let accepted = books.post(&rows);
                        books.balanced()?;
                        for i in 0..3 {
                            let item = id(i);
                            let shipped: i64 = ship
                                .iter()
                                .filter(|l| l.item_id == item)
                                .map(|l| to_micros(l.quantity))
                                .sum();
                            let expected = match (accepted, to) {
                                (false, _) | (true, Some(_)) => totals[&item],
                                (true, None) => totals[&item] - shipped,
                            };
                            prop_assert_eq!(books.total(item), expected);
                        }
                    }
                }
            }
        }
    }
}
