//! `GET /lot/{id}/trace` (issue 37, docs/inventory.md "Lots and serials"): the ledger rows a
//! lot's genealogy needs, read level by level, handed to core's `TraceIndex`, whose graph is
//! the answer. The rules of the trace are core's (`prodops_core::lot_rules`); this module only
//! reads.
//!
//! What it reads, per lot generation: the rows of the lots reached (by `lotId`, its filter
//! column and index), then the rows of the orders those rows reach (by `deliverableId`, its
//! filter column and index, for every node of each order's subtree, as production is posted
//! on the order or a node under it), whose other side names the next generation's lots. Down from a
//! lot: its consume rows, their orders, the orders' produce rows (the lots made), and the ship
//! rows of those lots. Up: its produce rows, their order, the order's consume rows (the lots
//! used), and the receipt rows of those lots. Never the whole ledger.
//!
//! A production row names the node it was posted on (`deliverableId`) and its order
//! (`metadata.orderDeliverableId`); the trace's order node is the order, so a row's
//! `deliverableId` is taken as its order before core reads it.

use std::collections::{HashMap, HashSet};

use prodops_core::api;
use prodops_core::inventory::{InventoryTransaction, TransactionType};
use prodops_core::lot_rules::{MAX_TRACE_DEPTH, TraceDirection, TraceIndex, check_depth};
use prodops_core::production_actions::keys;
use prodops_core::registry::ResourceId;
use serde_json::Value;
use uuid::Uuid;

use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::http::typed::{Answered, ServedQuery};
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
        .read(move |tx, ctx| {
            // Scoped by the key's organization: another organization's lot is a 404.
            let lots = ResourceId::Lot.kind().desc().table;
            if records::get(tx, lots, ctx.org(), id)?.is_none() {
                return Err(ApiError::not_found());
            }
            let rows = rows_of_trace(tx, ctx, id, args.direction, args.depth)?;
            Ok(TraceIndex::new(&rows).trace(id, args.direction, args.depth))
        })
        .await?;
    Ok(Answered::new(answer.into()))
}

/// The ledger rows the trace of `start` reads, level by level, each row once, with a
/// production row's `deliverableId` taken as its order.
fn rows_of_trace(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    start: Uuid,
    direction: TraceDirection,
    depth: u32,
) -> ApiResult<Vec<InventoryTransaction>> {
    let (to_order, from_order) = match direction {
        TraceDirection::Down => (TransactionType::Consume, TransactionType::Produce),
        TraceDirection::Up => (TransactionType::Produce, TransactionType::Consume),
    };
    let mut rows: HashMap<Uuid, InventoryTransaction> = HashMap::new();
    let mut lots_read: HashSet<Uuid> = HashSet::from([start]);
    let mut orders_read: HashSet<Uuid> = HashSet::new();
    let mut frontier = vec![start];
    // Core follows lots up to `depth` generations and looks one further to say `truncated`:
    // the lots of levels 0 to `depth` and their orders' rows.
    for _ in 0..=depth {
        if frontier.is_empty() {
            break;
        }
        let lot_rows = read_by(tx, ctx, "lotId", &frontier)?;
        let mut orders = Vec::new();
        for row in lot_rows.iter().filter(|r| r.kind == to_order) {
            for order in [row.deliverable_id, order_of(row)].into_iter().flatten() {
                if orders_read.insert(order) {
                    orders.push(order);
                }
            }
        }
        let nodes = nodes_of(tx, ctx, &orders)?;
        let order_rows = read_by(tx, ctx, "deliverableId", &nodes)?;
        frontier = Vec::new();
        for row in order_rows.iter().filter(|r| r.kind == from_order) {
            if let Some(lot) = row.lot_id
                && lots_read.insert(lot)
            {
                frontier.push(lot);
            }
        }
        for row in lot_rows.into_iter().chain(order_rows) {
            rows.entry(row.id).or_insert(row);
        }
    }
    let mut rows: Vec<InventoryTransaction> = rows
        .into_values()
        .map(|mut row| {
            if let Some(order) = order_of(&row) {
                row.deliverable_id = Some(order);
            }
            row
        })
        .collect();
    // Oldest first, as the ledger reads, so that the graph's order does not depend on the
    // order rows came back in.
    rows.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
    Ok(rows)
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

/// The order of a production row (`metadata.orderDeliverableId`).
fn order_of(row: &InventoryTransaction) -> Option<Uuid> {
    if !matches!(
        row.kind,
        TransactionType::Consume | TransactionType::Produce
    ) {
        return None;
    }
    row.metadata
        .get(keys::ORDER)
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
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
