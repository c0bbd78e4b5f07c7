//! `GET /lot/{id}/trace` (issue 37, docs/inventory.md "Lots and serials"): the ledger rows a
//! lot's genealogy needs, read a lot generation at a time and handed to core's `TraceWalk`,
//! whose edges are written into the answer's body as each generation is walked; the body goes
//! out in parts while the next generation is read (`http::parts`). The rules of the trace are
//! core's (`prodops_core::lot_rules`); this module only reads and writes.
//!
//! What it reads, per lot generation: the rows of the generation's lots (by `lotId`, its filter
//! column and index, one statement), then the rows of the orders those rows reach (by
//! `deliverableId`, its filter column and index, one statement for the nodes of every order's
//! subtree, as production is posted on the order or a node under it), whose other side names
//! the next generation's lots. Down from a lot: its consume rows, their orders, the orders'
//! produce rows (the lots made), and the ship rows of those lots. Up: its produce rows, their
//! order, the order's consume rows (the lots used), and the receipt rows of those lots. Never
//! the whole ledger, and never more than one generation's rows at a time.
//!
//! The body is `{"edges":[...],"nodes":[...],"truncated":...}`: the edges as each generation
//! gives them, then the nodes, known whole only at the end (a node that only cancelled edges
//! reached is left out), which the walk keeps anyway to visit each lot once. What is held is
//! one generation's rows and the nodes, never the edges of the whole trace. Errors found
//! before the first part goes out (a lot not in the organization: 404) are answered as
//! errors; a failure after it cuts the body short.

use std::collections::HashSet;

use prodops_core::api;
use prodops_core::inventory::InventoryTransaction;
use prodops_core::lot_rules::{MAX_TRACE_DEPTH, TraceDirection, TraceWalk, check_depth};
use prodops_core::registry::ResourceId;
use uuid::Uuid;

use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::http::parts::PartWriter;
use crate::http::typed::{Answered, ServedQuery, Streamed};
use crate::store::Tx;
use crate::store::{deliverables, records};

crate::http::action::handle! {
    api::lot::Trace => trace;
}

/// The parsed query of `GET /lot/{id}/trace`.
#[derive(Debug, Clone, Copy)]
pub struct TraceArgs {
    direction: TraceDirection,
    depth: u32,
}

impl ServedQuery for api::lot::TraceQuery {
    type Value = TraceArgs;
    fn from_query(query: Option<&str>) -> ApiResult<TraceArgs> {
        parse_query(query)
    }
}

fn parse_query(query: Option<&str>) -> ApiResult<TraceArgs> {
    let mut args = TraceArgs {
        direction: TraceDirection::Down,
        depth: MAX_TRACE_DEPTH,
    };
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match key.as_ref() {
            "direction" => {
                args.direction = match value.as_ref() {
                    "down" => TraceDirection::Down,
                    "up" => TraceDirection::Up,
                    other => {
                        return Err(ApiError::field(
                            "direction",
                            format!("'{other}': a trace goes down or up"),
                        ));
                    }
                }
            }
            "depth" => {
                let depth = value.parse::<u32>().map_err(|_| {
                    ApiError::field(
                        "depth",
                        format!("'{value}': depth is a whole number from 1 to {MAX_TRACE_DEPTH}"),
                    )
                })?;
                args.depth = check_depth(depth).map_err(|v| ApiError::violations(vec![v]))?;
            }
            other => {
                return Err(ApiError::field(
                    other,
                    "unknown parameter for /lot/{id}/trace (direction, depth)",
                ));
            }
        }
    }
    Ok(args)
}

async fn trace(
    call: Call,
    id: Uuid,
    args: TraceArgs,
    (): (),
) -> ApiResult<Answered<api::lot::Trace>> {
    let answer = call
        .read_streamed("lot trace", move |tx, ctx, out| {
            write_trace(tx, ctx, id, args, out)
        })
        .await?;
    Ok(Answered::new(Streamed(answer)))
}

/// Walks the trace of `start` a generation at a time, writing each generation's edges into
/// `out` as it goes, then the nodes and `truncated`.
fn write_trace(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    start: Uuid,
    args: TraceArgs,
    out: &mut PartWriter<'_>,
) -> ApiResult<()> {
    // Scoped by the key's organization: another organization's lot is a 404.
    let lots = ResourceId::Lot.kind().desc().table;
    if records::get(tx, lots, ctx.org(), start)?.is_none() {
        return Err(ApiError::not_found());
    }
    let mut walk = TraceWalk::new(start, args.direction, args.depth);
    out.body.extend_from_slice(b"{\"edges\":[");
    let mut first = true;
    let mut write = |edges: Vec<prodops_core::lot_rules::TraceEdge>, out: &mut PartWriter<'_>| {
        for edge in edges {
            if !std::mem::take(&mut first) {
                out.body.push(b',');
            }
            serde_json::to_writer(&mut out.body, &edge).map_err(ApiError::internal)?;
            if !out.send_if_full() {
                // The client left.
                return Ok(false);
            }
        }
        Ok::<bool, ApiError>(true)
    };
    while !walk.is_done() {
        let rows = read_by(tx, ctx, "lotId", walk.lots())?;
        if !write(walk.lot_rows(&rows), out)? {
            return Ok(());
        }
        drop(rows);
        let nodes = nodes_of(tx, ctx, walk.orders())?;
        let rows = read_by(tx, ctx, "deliverableId", &nodes)?;
        if !write(walk.order_rows(&rows), out)? {
            return Ok(());
        }
    }
    let (nodes, truncated) = walk.finish();
    out.body.extend_from_slice(b"],\"nodes\":[");
    for (i, node) in nodes.iter().enumerate() {
        if i > 0 {
            out.body.push(b',');
        }
        serde_json::to_writer(&mut out.body, node).map_err(ApiError::internal)?;
        if !out.send_if_full() {
            return Ok(());
        }
    }
    out.body.push(b']');
    out.body
        .extend_from_slice(format!(",\"truncated\":{truncated}}}").as_bytes());
    Ok(())
}

/// The nodes the production rows of `orders` are posted on: each order's subtree (an order
/// is the root of its tree; production is posted on the order or a node under it). An id
/// that is not in the tree stands for itself.
fn nodes_of(tx: &mut dyn Tx, ctx: &Ctx, orders: &[Uuid]) -> ApiResult<Vec<Uuid>> {
    let mut nodes = Vec::new();
    let mut seen = HashSet::new();
    let tops = deliverables::tree_rows(tx, ctx.org(), orders)?;
    for order in orders {
        let ids = match tops.get(order) {
            Some(top) => deliverables::subtree_rows(tx, ctx.org(), top)?
                .into_iter()
                .map(|row| row.id)
                .collect(),
            None => vec![*order],
        };
        nodes.extend(ids.into_iter().filter(|id| seen.insert(*id)));
    }
    Ok(nodes)
}

/// The organization's ledger rows whose `field` (a filter-indexed field of
/// `inventory_transaction`) is one of `ids`, through the field's filter column and index.
fn read_by(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    field: &str,
    ids: &[Uuid],
) -> ApiResult<Vec<InventoryTransaction>> {
    let table = ResourceId::InventoryTransaction.kind().desc().table;
    let values: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    records::texts_where_indexed_in(tx, table, ctx.org(), field, &values)?
        .iter()
        .map(|text| serde_json::from_str(text).map_err(ApiError::internal))
        .collect()
}
