//! Receiving an inbound delivery (spec 4.8, 3.2; issue 16): receipts accumulate.
//!
//! Each `POST /delivery/{id}/receive` posts what arrived, one `receipt` ledger row per line of
//! the request, and adds it to the manifest line's `quantityReceived`. The delivery stays
//! receivable (in `expected` or `in_transit`) until every line's outstanding quantity is in
//! ([`is_complete`]); then it becomes `received`. Until then, once something arrived, the derived
//! `partial` is true. A line never receives more than its `quantityExpected` plus the tolerance
//! ([`OVER_RECEIPT_TOLERANCE`], none): a receive that would is refused whole. The clerk ends
//! receiving early with `POST /delivery/{id}/close-short` ([`close_short`]), which records each
//! line's shortfall (`quantityShort`) and makes the delivery `received`.
//!
//! All arithmetic is in micros ([`crate::inventory::to_micros`]), the ledger's precision, so
//! "everything is in" and "the ledger equals `quantityReceived`" are exact comparisons.

use uuid::Uuid;

use crate::delivery::{
    DeliveryAction, DeliveryDirection, DeliveryStatus, ReceiveRequest, next_status,
};
use crate::inventory::{MAX_POSTING_QUANTITY, from_micros, round_quantity, to_micros};
pub use crate::line_quantities::{
    LineQuantities, OVER_RECEIPT_TOLERANCE, allowed_micros, any_received, is_complete, outstanding,
};
use crate::violation::Violation;

/// A manifest line as receiving sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ManifestState {
    /// The line's id.
    pub id: Uuid,
    /// `quantityExpected`.
    pub expected: f64,
    /// `quantityReceived` so far.
    pub received: f64,
    /// The line's own location (`locationId`).
    pub location_id: Option<Uuid>,
}

impl ManifestState {
    fn quantities(&self) -> LineQuantities {
        LineQuantities {
            expected: self.expected,
            received: self.received,
        }
    }
}

/// One `receipt` ledger row a receive posts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Receipt {
    /// Index of the manifest line in the slice given to [`plan_receive`].
    pub line: usize,
    /// Quantity (rounded to the ledger's six decimals; positive).
    pub quantity: f64,
    /// Where it arrives.
    pub location_id: Uuid,
}

/// What a receive does.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivePlan {
    /// The ledger rows, in request order (one per request line; without `lines`, one per line
    /// with something outstanding, in manifest order).
    pub receipts: Vec<Receipt>,
    /// Each manifest line's `quantityReceived` afterwards (same order as the given lines).
    pub received: Vec<f64>,
    /// Whether everything is in afterwards: the delivery becomes `received`.
    pub complete: bool,
}

/// Decides what a receive posts, or why it is refused (nothing is posted then).
///
/// With `lines`, each entry names a manifest line of this delivery (`lines[i].manifestLineId`),
/// a positive quantity (`lines[i].quantity`) and a location unless the line has one
/// (`lines[i].locationId`); entries for the same line add up, and no line may end above
/// [`allowed_micros`] (`lines[i].quantity`, naming the entry that crosses it). `lines: []` is
/// refused. Without `lines`, every line's outstanding quantity is received at its location.
pub fn plan_receive(
    req: &ReceiveRequest,
    lines: &[ManifestState],
    tolerance: f64,
) -> Result<ReceivePlan, Vec<Violation>> {
    let mut received: Vec<i64> = lines.iter().map(|l| to_micros(l.received)).collect();
    let mut receipts = Vec::new();
    let mut v = Vec::new();
    match &req.lines {
        Some(entries) if entries.is_empty() => {
            return Err(vec![Violation::field(
                "lines",
                "an empty lines array receives nothing; omit it to receive everything outstanding",
            )]);
        }
        Some(entries) => {
            for (i, entry) in entries.iter().enumerate() {
                let Some(l) = lines.iter().position(|l| l.id == entry.manifest_line_id) else {
                    v.push(Violation::field(
                        format!("lines[{i}].manifestLineId"),
                        "not a manifest line of this delivery",
                    ));
                    continue;
                };
                let quantity = round_quantity(entry.quantity);
                if !(quantity > 0.0 && quantity <= MAX_POSTING_QUANTITY) {
                    v.push(Violation::field(
                        format!("lines[{i}].quantity"),
                        "must be a positive number (at most six decimals count)",
                    ));
                    continue;
                }
                let line = &lines[l];
                let Some(location_id) = entry.location_id.or(line.location_id) else {
                    v.push(Violation::field(
                        format!("lines[{i}].locationId"),
                        "the manifest line has no location; give locationId",
                    ));
                    continue;
                };
                let after = received[l] + to_micros(quantity);
                let allowed = allowed_micros(line.expected, tolerance);
                if after > allowed {
                    v.push(Violation::field(
                        format!("lines[{i}].quantity"),
                        format!(
                            "over-receipt: manifest line {} expects {}, has received {}; receiving {} more would make {} (at most {} may be received)",
                            line.id,
                            line.expected,
                            from_micros(received[l]),
                            quantity,
                            from_micros(after),
                            from_micros(allowed),
                        ),
                    ));
                    continue;
                }
                received[l] = after;
                receipts.push(Receipt {
                    line: l,
                    quantity,
                    location_id,
                });
            }
        }
        None => {
            for (l, line) in lines.iter().enumerate() {
                let quantity = outstanding(line.expected, line.received);
                if quantity <= 0.0 {
                    continue;
                }
                let Some(location_id) = line.location_id else {
                    v.push(Violation::field(
                        "locationId",
                        format!(
                            "manifest line {} has no location; receive it with lines[].locationId",
                            line.id
                        ),
                    ));
                    continue;
                };
                received[l] += to_micros(quantity);
                receipts.push(Receipt {
                    line: l,
                    quantity,
                    location_id,
                });
            }
        }
    }
    if !v.is_empty() {
        return Err(v);
    }
    let received: Vec<f64> = received.into_iter().map(from_micros).collect();
    let after: Vec<LineQuantities> = lines
        .iter()
        .zip(&received)
        .map(|(l, r)| LineQuantities {
            expected: l.expected,
            received: *r,
        })
        .collect();
    Ok(ReceivePlan {
        receipts,
        received,
        complete: is_complete(&after),
    })
}

/// The status after a receive: `received` when `complete`, else unchanged (still receivable).
/// Only an inbound delivery in `expected` or `in_transit` can receive.
pub fn receive_status(
    direction: DeliveryDirection,
    current: DeliveryStatus,
    complete: bool,
) -> Result<DeliveryStatus, Violation> {
    let done = next_status(direction, current, DeliveryAction::Receive)?;
    Ok(if complete { done } else { current })
}

/// A whole receive: the status check first (a delivery that is not receiving refuses any
/// receive, naming `status`), then [`plan_receive`], then the status afterwards.
pub fn receive(
    direction: DeliveryDirection,
    current: DeliveryStatus,
    req: &ReceiveRequest,
    lines: &[ManifestState],
    tolerance: f64,
) -> Result<(ReceivePlan, DeliveryStatus), Vec<Violation>> {
    next_status(direction, current, DeliveryAction::Receive).map_err(|v| vec![v])?;
    let plan = plan_receive(req, lines, tolerance)?;
    let status = receive_status(direction, current, plan.complete).map_err(|v| vec![v])?;
    Ok((plan, status))
}

/// What `POST /delivery/{id}/close-short` records.
#[derive(Debug, Clone, PartialEq)]
pub struct CloseShort {
    /// Always `received`.
    pub status: DeliveryStatus,
    /// Each line's shortfall, kept as its `quantityShort` (same order as the given lines):
    /// what was outstanding when receiving was closed.
    pub shortfalls: Vec<f64>,
}

/// Closes receiving of an inbound delivery in `expected` or `in_transit`, short: the delivery
/// becomes `received` with what is in, and each line's outstanding quantity is recorded as its
/// shortfall. Nothing is posted to the ledger (what did not arrive never entered stock).
pub fn close_short(
    direction: DeliveryDirection,
    current: DeliveryStatus,
    lines: &[LineQuantities],
) -> Result<CloseShort, Violation> {
    let status = next_status(direction, current, DeliveryAction::Receive).map_err(|_| {
        Violation::field(
            "status",
            format!(
                "only an inbound delivery still receiving (expected or in_transit) can be closed short; this {} delivery is {}",
                direction.as_str(),
                current.as_str()
            ),
        )
    })?;
    Ok(CloseShort {
        status,
        shortfalls: lines
            .iter()
            .map(|l| outstanding(l.expected, l.received))
            .collect(),
    })
}

/// Cancelling an inbound delivery against which goods were received is refused: the receipts
/// stay in the ledger, so the delivery ends `received` through close-short instead.
pub fn cancel_violation(
    direction: DeliveryDirection,
    lines: &[LineQuantities],
) -> Option<Violation> {
    (direction == DeliveryDirection::Inbound && any_received(lines)).then(|| {
        Violation::field(
            "status",
            "goods were received against this delivery; end receiving with POST /delivery/{id}/close-short instead of cancelling",
        )
    })
}

/// Manifest lines as quantities.
pub fn quantities(lines: &[ManifestState]) -> Vec<LineQuantities> {
    lines.iter().map(ManifestState::quantities).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::{ReceiveLine, is_partial};
    use DeliveryDirection::*;
    use DeliveryStatus::*;
    use proptest::prelude::*;

    fn line(n: u128, expected: f64, location: bool) -> ManifestState {
        ManifestState {
            id: Uuid::from_u128(n),
            expected,
            received: 0.0,
            location_id: location.then(|| Uuid::from_u128(1000 + n)),
        }
    }

    fn req(entries: &[(u128, f64)]) -> ReceiveRequest {
        ReceiveRequest {
            lines: Some(
                entries
                    .iter()
                    .map(|(n, q)| ReceiveLine {
                        manifest_line_id: Uuid::from_u128(*n),
                        quantity: *q,
                        location_id: None,
                        lots: None,
                    })
                    .collect(),
            ),
        }
    }

    fn fields(v: &[Violation]) -> Vec<&str> {
        v.iter().filter_map(|v| v.field.as_deref()).collect()
    }

    #[test]
    fn receipts_accumulate_until_complete() {
        let mut lines = vec![line(1, 10.0, true), line(2, 4.0, true)];
        let p = plan_receive(&req(&[(1, 6.0)]), &lines, 0.0).unwrap();
        assert_eq!(p.receipts.len(), 1);
        assert_eq!(p.received, [6.0, 0.0]);
        assert!(!p.complete);
        lines[0].received = 6.0;
        let p = plan_receive(&req(&[(1, 4.0), (2, 1.5), (2, 2.5)]), &lines, 0.0).unwrap();
        assert_eq!(p.receipts.len(), 3);
        assert_eq!(p.received, [10.0, 4.0]);
        assert!(p.complete);
        // Without lines: the outstanding quantities.
        let p = plan_receive(&ReceiveRequest::default(), &lines, 0.0).unwrap();
        assert_eq!(
            p.receipts.iter().map(|r| r.quantity).collect::<Vec<_>>(),
            [4.0, 4.0]
        );
        assert!(p.complete);
    }

    #[test]
    fn refusals_name_the_entry() {
        let mut lines = vec![line(1, 10.0, true), line(2, 4.0, false)];
        lines[0].received = 8.0;
        let err = plan_receive(&req(&[(1, 3.0)]), &lines, 0.0).unwrap_err();
        assert_eq!(fields(&err), ["lines[0].quantity"]);
        assert!(
            err[0].message.contains("over-receipt"),
            "{}",
            err[0].message
        );
        // Two entries for one line add up; the second crosses.
        let err = plan_receive(&req(&[(1, 1.0), (1, 1.5)]), &lines, 0.0).unwrap_err();
        assert_eq!(fields(&err), ["lines[1].quantity"]);
        // Within a 25% tolerance: 12.5 allowed.
        assert!(plan_receive(&req(&[(1, 4.5)]), &lines, 0.25).is_ok());
        assert!(plan_receive(&req(&[(1, 4.6)]), &lines, 0.25).is_err());
        let err = plan_receive(&req(&[(9, 1.0), (1, 0.0), (2, 1.0)]), &lines, 0.0).unwrap_err();
        assert_eq!(
            fields(&err),
            [
                "lines[0].manifestLineId",
                "lines[1].quantity",
                "lines[2].locationId"
            ]
        );
        assert_eq!(
            fields(&plan_receive(&req(&[]), &lines, 0.0).unwrap_err()),
            ["lines"]
        );
        assert_eq!(
            fields(&plan_receive(&req(&[(1, 0.0000001)]), &lines, 0.0).unwrap_err()),
            ["lines[0].quantity"]
        );
        assert_eq!(
            fields(&plan_receive(&ReceiveRequest::default(), &lines, 0.0).unwrap_err()),
            ["locationId"]
        );
    }

    #[test]
    fn status_and_close_short() {
        assert_eq!(receive_status(Inbound, Expected, false).unwrap(), Expected);
        assert_eq!(
            receive_status(Inbound, InTransit, false).unwrap(),
            InTransit
        );
        assert_eq!(receive_status(Inbound, InTransit, true).unwrap(), Received);
        assert!(receive_status(Inbound, Received, false).is_err());
        assert!(receive_status(Outbound, InTransit, true).is_err());
        let l = |expected, received| LineQuantities { expected, received };
        let c = close_short(Inbound, Expected, &[l(10.0, 6.0), l(4.0, 4.0), l(2.0, 0.0)]).unwrap();
        assert_eq!(c.status, Received);
        assert_eq!(c.shortfalls, [4.0, 0.0, 2.0]);
        assert!(close_short(Inbound, Received, &[]).is_err());
        assert!(close_short(Inbound, Cancelled, &[]).is_err());
        assert!(close_short(Transfer, InTransit, &[]).is_err());
        assert!(cancel_violation(Inbound, &[l(10.0, 0.0)]).is_none());
        assert!(cancel_violation(Inbound, &[l(10.0, 0.5)]).is_some());
        assert!(cancel_violation(Outbound, &[l(10.0, 0.5)]).is_none());
    }

    /// One step of a receiving session: a receive (`None`: everything outstanding; else
    /// `(line, quantity in hundredths)` entries) or a close-short.
    #[derive(Debug, Clone)]
    enum Step {
        Receive(Option<Vec<(usize, u32)>>),
        CloseShort,
    }

    fn step(lines: usize) -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => proptest::collection::vec((0..lines, 1u32..1_500), 1..4)
                .prop_map(|e| Step::Receive(Some(e))),
            1 => Just(Step::Receive(None)),
            1 => Just(Step::CloseShort),
        ]
    }

    fn session() -> impl Strategy<Value = (Vec<u32>, Vec<Step>, bool, bool)> {
        proptest::collection::vec(1u32..2_000, 1..5).prop_flat_map(|expected| {
            let n = expected.len();
            (
                Just(expected),
                proptest::collection::vec(step(n), 0..12),
                any::<bool>(),
                any::<bool>(),
            )
        })
    }

    proptest! {
        /// Over random manifests (quantities in hundredths) and random sequences of receives
        /// and close-shorts, against the ledger the plans post.
        #[test]
        fn receiving_sessions((expected, steps, with_tolerance, in_transit) in session()) {
            let tolerance = if with_tolerance { 0.1 } else { 0.0 };
            let mut lines: Vec<ManifestState> = expected
                .iter()
                .enumerate()
                .map(|(i, e)| line(i as u128 + 1, f64::from(*e) / 100.0, true))
                .collect();
            let mut status = if in_transit { InTransit } else { Expected };
            let mut ledger = vec![0i64; lines.len()];
            let mut shortfalls: Option<Vec<f64>> = None;
            for step in steps {
                let qs = quantities(&lines);
                match step {
                    Step::Receive(entries) => {
                        let request = ReceiveRequest {
                            lines: entries.as_ref().map(|e| {
                                e.iter()
                                    .map(|(l, q)| ReceiveLine {
                                        manifest_line_id: lines[*l].id,
                                        quantity: f64::from(*q) / 100.0,
                                        location_id: None,
                                        lots: None,
                                    })
                                    .collect()
                            }),
                        };
                        // The oracle: refused exactly when some line would end above its allowance.
                        let mut would = ledger.clone();
                        match &entries {
                            Some(e) => for (l, q) in e { would[*l] += i64::from(*q) * 10_000; },
                            None => for (l, x) in lines.iter().enumerate() { would[l] = would[l].max(to_micros(x.expected)); },
                        }
                        let over = lines.iter().zip(&would).any(|(l, w)| *w > allowed_micros(l.expected, tolerance));
                        let plan = plan_receive(&request, &lines, tolerance);
                        prop_assert_eq!(plan.is_err(), over);
                        let Ok(plan) = plan else { continue };
                        match receive_status(Inbound, status, plan.complete) {
                            Err(_) => {
                                prop_assert_eq!(status, Received, "only a received delivery refuses a valid receive");
                                continue;
                            }
                            Ok(next) => status = next,
                        }
                        for r in &plan.receipts {
                            prop_assert!(r.quantity > 0.0);
                            ledger[r.line] += to_micros(r.quantity);
                        }
                        for (l, r) in lines.iter_mut().zip(&plan.received) {
                            l.received = *r;
                        }
                    }
                    Step::CloseShort => match close_short(Inbound, status, &qs) {
                        Err(_) => prop_assert_eq!(status, Received),
                        Ok(c) => {
                            status = c.status;
                            shortfalls = Some(c.shortfalls);
                        }
                    },
                }
                let qs = quantities(&lines);
                for (l, posted) in lines.iter().zip(&ledger) {
                    // Received never exceeds expected plus the tolerance, and equals the ledger.
                    prop_assert!(to_micros(l.received) <= allowed_micros(l.expected, tolerance));
                    prop_assert_eq!(to_micros(l.received), *posted);
                }
                let everything = qs.iter().all(|q| to_micros(q.received) >= to_micros(q.expected));
                let something = qs.iter().any(|q| q.received > 0.0);
                match &shortfalls {
                    // Received exactly when everything is in.
                    None => prop_assert_eq!(status == Received, everything),
                    // Closed short: received, and shortfall plus received covers each line.
                    Some(s) => {
                        prop_assert_eq!(status, Received);
                        for (q, short) in qs.iter().zip(s) {
                            prop_assert_eq!(to_micros(q.received).max(to_micros(q.expected)), to_micros(q.received) + to_micros(*short));
                        }
                    }
                }
                // Partial exactly when something but not everything is in.
                prop_assert_eq!(is_partial(Inbound, status, &qs, &[]), something && !everything);
                prop_assert_eq!(cancel_violation(Inbound, &qs).is_some(), something);
            }
        }
    }
}
