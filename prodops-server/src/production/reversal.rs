//! `POST /inventory/reverse` (issue 37): the opposite of ledger rows, linked to them
//! (`reversesId`), once. Served by production because a production row's reversal takes its
//! declaration's or BOM line's actual back too (`super::reverse_actuals`, handed in by the
//! handler so that this file needs nothing of its parent). The rules are core's
//! (`prodops_core::lot_rules::reversal`); the freeze date and the server fields the rows carry
//! through the posting are `inventory::corrections`'.

use std::collections::{HashMap, HashSet};

use prodops_core::Violation;
use prodops_core::api::inventory::{MAX_REVERSED_ROWS, ReverseRequest, ReverseResult};
use prodops_core::inventory::InventoryTransaction;
use prodops_core::lot_rules::{Refusal, reversal};
use prodops_core::registry::ResourceId;
use serde_json::Value;
use uuid::Uuid;

use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::inventory::corrections::refused;
use crate::store::{SqlValue, Tx};

/// What takes back the actuals of a reversal's production rows, under their orders' locks.
pub type TakeBackActuals = fn(&mut dyn Tx, &Ctx, &[InventoryTransaction]) -> ApiResult<()>;

/// Which of the posting's rows a workflow keeps a total of that a reversal does not keep, and
/// what to do instead: delivery rows (a manifest line's `quantityReceived`, a delivery's
/// completion), and a row naming a deliverable without being a production row. Production rows
/// are reversed, with their declaration's or line's actual.
fn kept_by_workflow(row: &InventoryTransaction) -> Option<String> {
    let production_row = row
        .metadata
        .get(prodops_core::production_actions::keys::ORDER)
        .is_some_and(Value::is_string);
    if production_row {
        // Reversed with the actual it changed (`production::reverse_actuals`).
        return None;
    }
    if let Some(order) = row.deliverable_id {
        return Some(format!(
            "row {} was posted by production on deliverable {order}, whose quantityActual sums it; correct it with POST /production/adjust-actual",
            row.id
        ));
    }
    if let Some(delivery) = row.delivery_id.or(row.pick_line_id) {
        return Some(format!(
            "row {} was posted by delivery {delivery}, whose manifest sums it; a delivery's rows are not reversed here",
            row.id
        ));
    }
    None
}

/// The reversal of each of `ids` already posted: original id to its reversal's id.
fn reversals_of(tx: &mut dyn Tx, org: Uuid, ids: &[Uuid]) -> ApiResult<HashMap<Uuid, Uuid>> {
    let table = ResourceId::InventoryTransaction.kind().desc().table;
    // The column of the unique index on `reversesId`, so the lookup reads that index.
    let expr = crate::store::sql::filter_column("reversesId");
    let mut out = HashMap::new();
    for chunk in ids.chunks(400) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let mut params: Vec<SqlValue> = vec![org.into()];
        params.extend(chunk.iter().map(|id| SqlValue::from(id.to_string())));
        let rows = tx.query(
            &format!(
                "SELECT {expr}, id FROM {table} WHERE organization_id = ? AND {expr} IN ({marks})"
            ),
            &params,
        )?;
        for r in rows {
            let id = |i: usize| {
                r.get(i)
                    .and_then(SqlValue::as_str)
                    .and_then(|s| Uuid::parse_str(s).ok())
            };
            if let (Some(original), Some(reversal)) = (id(0), id(1)) {
                out.insert(original, reversal);
            }
        }
    }
    Ok(out)
}

/// The request's own checks (400 naming `transactionIds`): 1 to [`MAX_REVERSED_ROWS`] ids,
/// each once.
pub fn check_request(req: &ReverseRequest) -> Result<(), Vec<Violation>> {
    let mut v = Vec::new();
    if req.transaction_ids.is_empty() || req.transaction_ids.len() > MAX_REVERSED_ROWS {
        v.push(Violation::field(
            "transactionIds",
            format!("a reversal names 1 to {MAX_REVERSED_ROWS} ledger rows"),
        ));
    }
    let mut seen = HashSet::new();
    for (i, id) in req.transaction_ids.iter().enumerate() {
        if !seen.insert(*id) {
            v.push(Violation::field(
                format!("transactionIds[{i}]"),
                format!("row {id} is named twice"),
            ));
        }
    }
    if v.is_empty() { Ok(()) } else { Err(v) }
}

/// `POST /inventory/reverse` inside its transaction: the rows read (400 naming
/// `transactionIds[i]` for one not in the organization), refused when one was reversed already
/// (409 naming the reversal) or is a reversal (409), or is kept by a workflow (409 naming the
/// action that corrects it); then core's reversal rows are posted like any posting, dated now:
/// the freeze date and the stock policy apply to them (409), and the unique index on
/// `reversesId` keeps a raced second reversal out.
pub fn reverse_in(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    req: &ReverseRequest,
    take_back_actuals: TakeBackActuals,
) -> ApiResult<ReverseResult> {
    check_request(req).map_err(ApiError::violations)?;
    let table = ResourceId::InventoryTransaction.kind().desc().table;
    let mut posting = Vec::with_capacity(req.transaction_ids.len());
    let mut missing = Vec::new();
    for (i, id) in req.transaction_ids.iter().enumerate() {
        match crate::store::records::get(tx, table, ctx.org(), *id)? {
            Some(stored) => posting.push(read_stored::<InventoryTransaction>(&stored)?),
            None => missing.push(Violation::field(
                format!("transactionIds[{i}]"),
                format!("no ledger row {id} in this organization"),
            )),
        }
    }
    if !missing.is_empty() {
        return Err(ApiError::violations(missing));
    }
    let kept: Vec<Violation> = posting
        .iter()
        .filter_map(kept_by_workflow)
        .map(|m| Violation::field("transactionIds", m))
        .collect();
    if !kept.is_empty() {
        return Err(refused(Refusal::Conflict(kept)));
    }
    let already = reversals_of(tx, ctx.org(), &req.transaction_ids)?;
    if !already.is_empty() {
        let details = req
            .transaction_ids
            .iter()
            .filter_map(|id| already.get(id).map(|r| (id, r)))
            .map(|(id, r)| {
                Violation::field(
                    "transactionIds",
                    format!(
                        "row {id} was reversed already, by row {r}; a posting is reversed once"
                    ),
                )
            })
            .collect();
        return Err(refused(Refusal::Conflict(details)));
    }
    let reversed: HashSet<Uuid> = already.into_keys().collect();
    let mut rows = reversal(&posting, &reversed, Uuid::now_v7, ctx.now).map_err(refused)?;
    if let Some(reason) = &req.reason {
        for row in &mut rows {
            row.reason = Some(reason.clone());
        }
    }
    // The actuals of production rows first, under their orders' locks (taken before the stock
    // rows', as the production actions take them).
    take_back_actuals(tx, ctx, &rows)?;
    let stored = crate::inventory::post_typed(tx, ctx, &rows)?;
    let transactions = stored
        .iter()
        .map(read_stored)
        .collect::<ApiResult<Vec<InventoryTransaction>>>()?;
    Ok(ReverseResult { transactions })
}
