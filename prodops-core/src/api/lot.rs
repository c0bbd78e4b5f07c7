//! Lots (issue 37): the trace of a lot, down (where it went) or up (where it came from).

use super::endpoint::{
    Access, Cli, NoBody, ParamKind, ParamValues, Perm, QueryArgs, QueryParam, StreamedJson, action,
    push,
};
use crate::lot_rules::Trace as LotTrace;

/// The query of `GET /lot/{id}/trace`.
///
/// ```
/// use prodops_core::api::QueryArgs;
/// let q = prodops_core::api::lot::TraceQuery { direction: Some("up".into()), depth: Some(3) };
/// assert_eq!(q.pairs(), [("direction".to_string(), "up".to_string()), ("depth".to_string(), "3".to_string())]);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TraceQuery {
    /// `down` (the default: where the lot went) or `up` (where it came from).
    pub direction: Option<String>,
    /// How many lot generations to follow, 1 to 32 (default 32).
    pub depth: Option<u32>,
}

impl QueryArgs for TraceQuery {
    const PARAMS: &'static [QueryParam] = &[
        QueryParam {
            name: "direction",
            kind: ParamKind::Text,
            required: false,
            description: "down (default): the orders that consumed the lot, the lots they produced, the deliveries that shipped them; up: the order that produced the lot, the lots it consumed, the deliveries that received them",
            values: ParamValues::OneOf(&["down", "up"]),
        },
        QueryParam {
            name: "depth",
            kind: ParamKind::Integer,
            required: false,
            description: "How many lot generations to follow, 1 to 32 (default 32)",
            values: ParamValues::Range {
                min: 1,
                max: crate::lot_rules::MAX_TRACE_DEPTH as u64,
            },
        },
    ];
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        push(&mut out, "direction", self.direction.clone());
        push(&mut out, "depth", self.depth);
        out
    }
}

action! {
    /// `GET /lot/{id}/trace`: the lot's genealogy, down or up.
    Trace: Get "/lot/{id}/trace" {
        operation: "lot_trace",
        tag: "lot",
        // The graph names orders and deliveries beside lots, and the quantities of ledger rows.
        access: Access::Key(&[("Lot", Perm::Read), ("Item", Perm::Read)]),
        path: uuid::Uuid,
        query: TraceQuery,
        body: NoBody,
        answer: StreamedJson<LotTrace>,
        status: 200,
        outcome: "The trace: nodes (lots, orders, deliveries) and edges with quantities and times",
        summary: "Where a lot went (down) or came from (up), through orders, the lots they made or used, and deliveries",
        description: "Down: the orders that consumed the lot, the lots those orders produced and the deliveries \
             that shipped them, repeated from each lot produced. Up: the order that produced the lot, \
             the lots it consumed and the deliveries that received them, repeated. Edges run the way \
             goods moved, with the net quantity (reversed rows subtracted) in the item's base unit. \
             `truncated` says whether lots at the depth limit had further edges. 404 for a lot not \
             in the organization.",
        cli: Cli {
            command: "lot",
            verb: "trace",
            about: "Where a lot went (--direction down) or came from (--direction up); --format dot for Graphviz",
            example: "prodops lot trace 0191c3a8-... --direction up --format dot | dot -Tsvg > recall.svg",
            flags: &[],
        },
    }
}
