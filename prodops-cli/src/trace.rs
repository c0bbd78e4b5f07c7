//! `prodops lot trace ID` for a person: the answer of `GET /lot/{id}/trace` as a tree on a
//! terminal (the default table form), or as a Graphviz `dot` graph (`--format dot`), because a
//! recall is read as a picture. With `-o json` (or any other format) and no `--format`, the
//! command prints the answer itself, as every action command does; `run.rs` sends only the
//! tree and dot forms here.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::io::Write;

use clap::{Arg, ArgMatches};
use prodops_client::api::lot::{Trace as TraceEndpoint, TraceQuery};
use prodops_client::lot_rules::{Trace, TraceEdge, TraceNodeKind};
use uuid::Uuid;

use crate::context::CommandContext;
use crate::fail::{CmdResult, Fail};

/// The argument that picks the drawing.
pub const FORMAT_ARG: &str = "format";

/// `--format tree|dot`, added to the declared `lot trace`.
pub fn format_arg() -> Arg {
    Arg::new(FORMAT_ARG)
        .long("format")
        .value_name("FORMAT")
        .value_parser(["tree", "dot"])
        .help("tree (the default on a terminal) or dot (a Graphviz graph: one node per lot, order and delivery, edges with quantities); -o json prints the answer")
}

/// Whether the command is drawn here: `--format` given, or table output without it.
pub fn drawn(args: &ArgMatches, table: bool) -> bool {
    args.get_one::<String>(FORMAT_ARG).is_some() || table
}

pub async fn trace(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let raw = args
        .get_one::<String>("id")
        .ok_or_else(|| Fail::usage("the lot id is required"))?;
    let id = Uuid::parse_str(raw.trim()).map_err(|_| Fail::usage(format!("{raw}: not a UUID")))?;
    let depth = match args.get_one::<String>("depth") {
        Some(d) => Some(
            d.trim()
                .parse::<u32>()
                .map_err(|_| Fail::usage(format!("--depth {d}: a whole number from 1 to 32")))?,
        ),
        None => None,
    };
    let query = TraceQuery {
        direction: args.get_one::<String>("direction").cloned(),
        depth,
    };
    let up = query.direction.as_deref() == Some("up");
    let answer = ctx.client.call::<TraceEndpoint>(id, &query, &()).await?;
    let text = match args.get_one::<String>(FORMAT_ARG).map(String::as_str) {
        Some("dot") => dot(&answer),
        _ => tree(&answer, id, up),
    };
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Fail::io("writing the trace", e))
}

fn kind_name(kind: TraceNodeKind) -> &'static str {
    match kind {
        TraceNodeKind::Lot => "lot",
        TraceNodeKind::Order => "order",
        TraceNodeKind::Delivery => "delivery",
    }
}

/// A quantity without trailing zeros.
fn quantity(q: f64) -> String {
    let s = format!("{q:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// The trace as an indented tree from the start: down, each node's edges out of it; up, each
/// node's edges into it. A node reached twice is printed again, marked, without its branches.
pub fn tree(trace: &Trace, start: Uuid, up: bool) -> String {
    let kinds: HashMap<Uuid, TraceNodeKind> = trace.nodes.iter().map(|n| (n.id, n.kind)).collect();
    let mut next: HashMap<Uuid, Vec<&TraceEdge>> = HashMap::new();
    for e in &trace.edges {
        let key = if up { e.to } else { e.from };
        next.entry(key).or_default().push(e);
    }
    let name = |id: Uuid| {
        format!(
            "{} {id}",
            kinds.get(&id).map(|k| kind_name(*k)).unwrap_or("node")
        )
    };
    let mut out = format!("{}\n", name(start));
    let mut seen = HashSet::from([start]);
    branches(start, "", &next, up, &name, &mut seen, &mut out);
    if trace.truncated {
        out.push_str("(truncated: lots at the depth limit go further; raise --depth)\n");
    }
    out
}

fn branches(
    node: Uuid,
    prefix: &str,
    next: &HashMap<Uuid, Vec<&TraceEdge>>,
    up: bool,
    name: &dyn Fn(Uuid) -> String,
    seen: &mut HashSet<Uuid>,
    out: &mut String,
) {
    let Some(edges) = next.get(&node) else {
        return;
    };
    for (i, e) in edges.iter().enumerate() {
        let last = i + 1 == edges.len();
        let other = if up { e.from } else { e.to };
        let arrow = if up { "<-" } else { "->" };
        let again = !seen.insert(other);
        let _ = writeln!(
            out,
            "{prefix}{} {} {} {arrow} {}{}",
            if last { "└─" } else { "├─" },
            e.kind.as_str(),
            quantity(e.quantity),
            name(other),
            if again { " (above)" } else { "" }
        );
        if !again {
            let deeper = format!("{prefix}{}", if last { "   " } else { "│  " });
            branches(other, &deeper, next, up, name, seen, out);
        }
    }
}

/// The trace as a Graphviz graph: one node per lot (box), order (ellipse) and delivery
/// (folder), and one edge per movement, labelled with its type and quantity.
pub fn dot(trace: &Trace) -> String {
    let mut out = String::from("digraph trace {\n  rankdir=LR;\n");
    for n in &trace.nodes {
        let shape = match n.kind {
            TraceNodeKind::Lot => "box",
            TraceNodeKind::Order => "ellipse",
            TraceNodeKind::Delivery => "folder",
        };
        let _ = writeln!(
            out,
            "  \"{}\" [label=\"{}\\n{}\", shape={shape}];",
            n.id,
            kind_name(n.kind),
            n.id
        );
    }
    for e in &trace.edges {
        let _ = writeln!(
            out,
            "  \"{}\" -> \"{}\" [label=\"{} {}\"];",
            e.from,
            e.to,
            e.kind.as_str(),
            quantity(e.quantity)
        );
    }
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};
    use prodops_client::inventory::TransactionType;
    use prodops_client::lot_rules::TraceNode;

    fn sample() -> (Trace, Uuid, Uuid, Uuid) {
        let (lot, order, made) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let at = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap();
        let node = |kind, id, depth| TraceNode { kind, id, depth };
        let edge = |from, to, kind, quantity| TraceEdge {
            from,
            to,
            kind,
            quantity,
            first_at: at,
            last_at: at,
        };
        let trace = Trace {
            nodes: vec![
                node(TraceNodeKind::Lot, lot, 0),
                node(TraceNodeKind::Order, order, 0),
                node(TraceNodeKind::Lot, made, 1),
            ],
            edges: vec![
                edge(lot, order, TransactionType::Consume, 6.0),
                edge(order, made, TransactionType::Produce, 2.5),
            ],
            truncated: false,
        };
        (trace, lot, order, made)
    }

    #[test]
    fn the_tree_follows_the_edges_from_the_start() {
        let (trace, lot, order, made) = sample();
        assert_eq!(
            tree(&trace, lot, false),
            format!("lot {lot}\n└─ consume 6 -> order {order}\n   └─ produce 2.5 -> lot {made}\n")
        );
        assert_eq!(
            tree(&trace, made, true),
            format!("lot {made}\n└─ produce 2.5 <- order {order}\n   └─ consume 6 <- lot {lot}\n")
        );
    }

    #[test]
    fn dot_has_a_node_per_lot_order_and_delivery_and_labelled_edges() {
        let (trace, lot, order, _) = sample();
        let text = dot(&trace);
        assert!(text.starts_with("digraph trace {"));
        assert_eq!(text.matches("shape=").count(), 3);
        assert!(text.contains(&format!("\"{lot}\" -> \"{order}\" [label=\"consume 6\"];")));
        assert!(text.trim_end().ends_with('}'));
    }
}
