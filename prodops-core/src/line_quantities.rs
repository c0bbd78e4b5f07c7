//! The expected and received quantities of an inbound delivery's manifest lines and the rules
//! over them that a delivery's derived fields and validation (`delivery.rs`) and receiving
//! (`receiving.rs`, which re-exports them) share: how much a line may receive, what is still
//! to come, whether everything or anything is in. Apart from both so that neither needs the
//! other for them.
//!
//! All arithmetic is in micros ([`crate::inventory::to_micros`]), the ledger's precision.

use crate::inventory::{from_micros, to_micros};

/// Expected and received quantity of one manifest line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineQuantities {
    /// `quantityExpected`.
    pub expected: f64,
    /// `quantityReceived`.
    pub received: f64,
}

/// How much a manifest line may receive beyond its `quantityExpected`, as a fraction of it.
/// None: the specification names no tolerance setting, and an over-receipt is a counting or
/// ordering mistake the clerk must resolve (receive the extra with an `adjust`, or correct the
/// manifest line's `quantityExpected` first).
pub const OVER_RECEIPT_TOLERANCE: f64 = 0.0;

/// The most a line expecting `expected` may receive in total, in micros.
pub fn allowed_micros(expected: f64, tolerance: f64) -> i64 {
    to_micros(expected) + to_micros(expected * tolerance.max(0.0))
}

/// What is still to come on a line: expected less received, never negative.
pub fn outstanding(expected: f64, received: f64) -> f64 {
    from_micros((to_micros(expected) - to_micros(received)).max(0))
}

/// Whether every line's expected quantity is in (a manifest without lines is complete).
pub fn is_complete(lines: &[LineQuantities]) -> bool {
    lines
        .iter()
        .all(|l| to_micros(l.received) >= to_micros(l.expected))
}

/// Whether anything at all was received.
pub fn any_received(lines: &[LineQuantities]) -> bool {
    lines.iter().any(|l| to_micros(l.received) > 0)
}
