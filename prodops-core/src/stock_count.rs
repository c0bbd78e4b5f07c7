//! Stock counts (`POST /inventory/count`): counted quantities per item and location, each
//! compared with the ledger as of the count, and one `adjust` row (source `count`) per
//! difference, so that stock on hand becomes what was counted.
//!
//! The request and answer types, and the rules that need no database: the shape of the lines
//! ([`check_lines`]) and what a counted line posts ([`difference`]).

use crate::openapi::ToSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use std::collections::HashMap;

use crate::inventory::{MAX_POSTING_QUANTITY, from_micros, to_micros};
use crate::violation::Violation;

/// The most lines one count takes (one transaction).
pub const MAX_COUNT_LINES: usize = 20_000;

/// The body of `POST /inventory/count`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CountRequest {
    /// What was counted: one line per item and location (1 to 20,000).
    #[schema(min_items = 1, max_items = 20_000)]
    pub lines: Vec<CountLine>,
    /// Why (kept on every adjustment row).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Compare only: answer the differences and post nothing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dry_run: bool,
}

/// One counted item at one location.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CountLine {
    /// The item counted.
    pub item_id: Uuid,
    /// Where it was counted.
    pub location_id: Uuid,
    /// How much is there, in `unitMeasureId`.
    #[schema(minimum = 0, maximum = 1_000_000_000)]
    pub quantity: f64,
    /// The unit of `quantity` (default the item's base unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit_measure_id: Option<Uuid>,
    /// The lot (or serial) counted: required for an item tracked by lot or serial, whose
    /// count compares the stock of that lot at the location; refused for an untracked item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lot_id: Option<Uuid>,
}

/// What a count found at one item and location.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CountedLine {
    /// The item.
    pub item_id: Uuid,
    /// The location.
    pub location_id: Uuid,
    /// What was counted, in the item's base unit.
    pub counted: f64,
    /// What the ledger said as of the count, in the item's base unit.
    pub on_hand: f64,
    /// `counted - onHand`: the adjustment posted (0: none).
    pub difference: f64,
    /// The `adjust` row posted for the difference (null when none was, or on a dry run).
    pub transaction_id: Option<Uuid>,
    /// The lot counted (lines of items tracked by lot or serial); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lot_id: Option<Uuid>,
}

/// The answer of `POST /inventory/count`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CountResult {
    /// Every line, in the order of the request.
    pub lines: Vec<CountedLine>,
    /// How many lines differ from the ledger (and were adjusted, unless a dry run).
    pub differences: usize,
    /// Whether this was a dry run (nothing posted).
    pub dry_run: bool,
}

/// The rules of a count's lines that need no database: 1 to [`MAX_COUNT_LINES`] lines,
/// quantities finite and from 0 to the posting limit, each item and location counted once.
/// Violations name `lines[i].field`.
pub fn check_lines(lines: &[CountLine]) -> Vec<Violation> {
    let mut v = Vec::new();
    if lines.is_empty() || lines.len() > MAX_COUNT_LINES {
        v.push(Violation::field(
            "lines",
            format!("a count has 1 to {MAX_COUNT_LINES} lines"),
        ));
        return v;
    }
    let mut seen: HashMap<(Uuid, Uuid, Option<Uuid>), usize> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        let q = line.quantity;
        if !(q.is_finite() && (0.0..=MAX_POSTING_QUANTITY).contains(&q)) {
            v.push(Violation::field(
                format!("lines[{i}].quantity"),
                format!("a counted quantity is from 0 to {MAX_POSTING_QUANTITY}"),
            ));
        }
        if let Some(first) = seen.insert((line.item_id, line.location_id, line.lot_id), i) {
            let lot = line
                .lot_id
                .map(|l| format!(" (lot {l})"))
                .unwrap_or_default();
            v.push(Violation::field(
                format!("lines[{i}].itemId"),
                format!(
                    "item {} at location {}{lot} is counted twice (lines[{first}] too); count each once",
                    line.item_id, line.location_id
                ),
            ));
        }
    }
    v
}

/// The difference a counted quantity makes, in micros: counted (in the base unit, rounded to
/// the ledger's six decimals) minus on hand. The adjustment posted is exactly this, so stock
/// on hand afterwards is exactly the counted quantity.
pub fn difference(counted_base: f64, on_hand_micros: i64) -> i64 {
    to_micros(counted_base) - on_hand_micros
}

/// A counted line's answer.
pub fn counted_line(line: &CountLine, counted_base: f64, on_hand_micros: i64) -> CountedLine {
    CountedLine {
        item_id: line.item_id,
        location_id: line.location_id,
        counted: from_micros(to_micros(counted_base)),
        on_hand: from_micros(on_hand_micros),
        difference: from_micros(difference(counted_base, on_hand_micros)),
        transaction_id: None,
        lot_id: line.lot_id,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(item: u128, location: u128, quantity: f64) -> CountLine {
        CountLine {
            item_id: Uuid::from_u128(item),
            location_id: Uuid::from_u128(location),
            quantity,
            unit_measure_id: None,
            lot_id: None,
        }
    }

    #[test]
    fn lines_are_checked() {
        assert_eq!(check_lines(&[]).len(), 1);
        assert!(check_lines(&[line(1, 1, 3.0), line(1, 2, 0.0)]).is_empty());
        let v = check_lines(&[line(1, 1, 3.0), line(1, 1, 2.0), line(2, 1, -1.0)]);
        let fields: Vec<_> = v.iter().map(|v| v.field.clone().unwrap()).collect();
        assert_eq!(fields, ["lines[1].itemId", "lines[2].quantity"]);
    }

    #[test]
    fn the_difference_makes_stock_the_count() {
        assert_eq!(difference(7.5, 10_000_000), -2_500_000);
        assert_eq!(difference(0.0, 0), 0);
        let answer = counted_line(&line(1, 1, 12.0), 12.0, 2_000_000);
        assert_eq!(answer.difference, 10.0);
        assert_eq!(answer.on_hand, 2.0);
    }
}
