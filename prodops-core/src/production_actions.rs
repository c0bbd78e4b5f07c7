//! The production actions of spec 4.4 (produce, consume, adjust-actual, order status and
//! entries): request and response types for the server and the client, and the arithmetic of
//! what a call posts, as pure functions over the facts the server reads.

use crate::openapi::ToSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::inventory::{InventoryTransaction, round_quantity};
use crate::production::{BomLine, BomMode, BomScaling, ProductionOutput};
use crate::violation::Violation;

fn default_run() -> f64 {
    1.0
}

/// `POST /production/produce`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProduceRequest {
    /// The node produced on (the order or a node under it); stamped on every posted row.
    pub deliverable_id: Uuid,
    /// Run multiplier for declarations with `producedPerUnit`; default 1, positive.
    #[serde(default = "default_run")]
    pub quantity_produced: f64,
    /// Where output goes unless an entry or the declaration says otherwise.
    #[serde(default)]
    pub output_location_id: Option<Uuid>,
    /// Explicit outputs; omitted: every declaration posts its default. Empty: 400.
    #[serde(default)]
    pub outputs: Option<Vec<OutputEntry>>,
    /// Shorthand for `outputs: [{ itemId }]`.
    #[serde(default)]
    pub output_item_id: Option<Uuid>,
}

/// One entry of `outputs` (spec 4.4 rule 8: defined here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutputEntry {
    /// The item produced; must be a declared item when the order has declarations.
    pub item_id: Uuid,
    /// Quantity in the item's base unit; omitted: the declaration's default (or, ad hoc,
    /// `quantityProduced`).
    #[serde(default)]
    pub quantity: Option<f64>,
    /// Where this output goes; overrides `outputLocationId`.
    #[serde(default)]
    pub location_id: Option<Uuid>,
    /// For an item tracked by lot or serial: the lots of this output, as a receipt names them
    /// (`[{code, quantity, expiresAt?}]`, quantities in the output's unit adding up to its
    /// quantity; a code the item has no lot of yet creates the lot). Without them the server
    /// generates codes (docs/inventory.md). An untracked item takes none.
    #[serde(default)]
    pub lots: Option<Vec<crate::delivery::ReceivedLot>>,
}

/// `POST /production/consume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsumeRequest {
    /// The node consumed on (the order or a node under it); stamped on every posted row.
    pub deliverable_id: Uuid,
    /// Per-line quantity overrides; omitted: the full remaining recipe. Empty: 400.
    #[serde(default)]
    pub lines: Option<Vec<LineEntry>>,
    /// Where material is drawn from unless an entry says otherwise; without it each item's
    /// default location.
    #[serde(default)]
    pub from_location_id: Option<Uuid>,
}

/// One entry of `lines` (spec 4.4 rule 8: defined here): names a BOM line by id or by item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LineEntry {
    /// The BOM line; or give `itemId`.
    #[serde(default)]
    pub bom_line_id: Option<Uuid>,
    /// The item; the first of the order's lines for it.
    #[serde(default)]
    pub item_id: Option<Uuid>,
    /// Quantity to draw, in the item's base unit; nonnegative.
    pub quantity: f64,
    /// Where to draw from; overrides the request's `fromLocationId`.
    #[serde(default)]
    pub from_location_id: Option<Uuid>,
    /// For an item tracked by lot or serial: the lots to take, in this order (each all it
    /// holds up to what is still needed, or its `quantity`); without them the organization's
    /// picking order (`lotPicking`: FIFO, or FEFO) chooses. An untracked item takes none.
    #[serde(default)]
    pub lots: Option<Vec<ConsumedLot>>,
}

/// A lot a consume entry names (`lines[i].lots[j]`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsumedLot {
    /// The lot: one of the item's.
    pub lot_id: Uuid,
    /// How much of it, in the item's base unit; omitted: what it holds, up to what is still
    /// needed.
    #[serde(default)]
    pub quantity: Option<f64>,
}

/// What `adjust-actual` corrects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActualKind {
    /// A BOM line's consumed quantity.
    Consume,
    /// A declaration's produced quantity.
    Produce,
}

/// `POST /production/adjust-actual`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdjustActualRequest {
    /// The node the correction is stamped on (the order or a node under it).
    pub stamp_deliverable_id: Uuid,
    /// Whether a consumed or a produced quantity is corrected.
    pub kind: ActualKind,
    /// The item whose declaration or BOM line is corrected.
    pub item_id: Uuid,
    /// Nonzero signed change of the actual quantity.
    pub delta: f64,
    /// The lot (or serial) the correction's ledger row moves: required when the item is
    /// tracked by lot or serial (400 naming `lotId` without it), refused for an untracked item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lot_id: Option<Uuid>,
}

/// The `value` of a produce answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProduceResult {
    /// The `produce` ledger rows posted, one per output.
    pub transactions: Vec<InventoryTransaction>,
    /// The declarations credited (ad-hoc ones included), with their new `quantityActual`.
    pub outputs: Vec<ProductionOutput>,
    /// The lots the tracked outputs went into (named or generated), one per posted row of a
    /// tracked item, quantities in the item's base unit; empty when nothing produced is tracked.
    #[serde(default)]
    pub lots: Vec<crate::lot_rules::LotTaken>,
}

/// A `lines` entry consume did not use, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IgnoredEntry {
    /// Position in `lines`.
    pub index: usize,
    /// The entry's item, if it named one.
    pub item_id: Option<Uuid>,
    /// The entry's BOM line, if it named one.
    pub bom_line_id: Option<Uuid>,
    /// Why it was ignored.
    pub reason: String,
}

/// The `value` of a consume answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsumeResult {
    /// The `consume` ledger rows posted, one per drawn line.
    pub transactions: Vec<InventoryTransaction>,
    /// The BOM lines drawn, with their new `quantityActual`.
    pub lines: Vec<BomLine>,
    /// `lines` entries outside the node's BOM, ignored (spec 4.4 rule 6).
    pub ignored: Vec<IgnoredEntry>,
    /// The lots taken of tracked items, one per posted row of such an item, in the order of
    /// `transactions`; `expired` flags a lot taken after its expiry (allowed, and said).
    #[serde(default)]
    pub lots: Vec<crate::lot_rules::LotTaken>,
}

/// The `value` of an adjust-actual answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdjustActualResult {
    /// The `adjust` ledger row that carries the correction into stock.
    pub transaction: InventoryTransaction,
    /// The corrected declaration (kind produce).
    pub output: Option<ProductionOutput>,
    /// The corrected BOM line (kind consume).
    pub line: Option<BomLine>,
}

/// Planned against actual of one declaration, in `GET /production/order/{id}/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutputStatus {
    pub production_output_id: Uuid,
    pub item_id: Uuid,
    pub name: String,
    /// Planned quantity for the order: `quantity`, else `producedPerUnit` x order quantity,
    /// else null (unplanned, e.g. ad hoc).
    pub planned: Option<f64>,
    pub actual: f64,
    /// `planned - actual`, not below zero; null when unplanned.
    pub remaining: Option<f64>,
    pub unit_measure_id: Option<Uuid>,
}

/// Planned against actual of one BOM line, in `GET /production/order/{id}/status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaterialStatus {
    pub bom_line_id: Uuid,
    pub item_id: Uuid,
    pub name: String,
    /// The line's full recipe for the order (see [`planned_for_order`]).
    pub planned: f64,
    pub actual: f64,
    /// `planned - actual`, not below zero.
    pub remaining: f64,
    pub unit_measure_id: Option<Uuid>,
}

/// Where an order stands in production.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProductionState {
    /// Nothing produced or consumed yet.
    NotStarted,
    /// Something produced or consumed, some planned output still remaining.
    InProgress,
    /// Every planned output reached (and at least one is planned).
    Complete,
}

/// `GET /production/order/{id}/status` (spec 4.4 "not shown": defined here).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrderStatus {
    pub order_id: Uuid,
    /// The order's quantity (the unit count per-unit figures scale by).
    pub order_quantity: f64,
    pub state: ProductionState,
    pub outputs: Vec<OutputStatus>,
    pub materials: Vec<MaterialStatus>,
    /// Ledger rows posted for the order by production actions.
    pub entry_count: u64,
}

/// One row of the production trace, `GET /production/order/{id}/entries` (spec 4.4 "not
/// shown": defined here): a ledger row the production actions posted for the order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrderEntry {
    /// The ledger row's id.
    pub transaction_id: Uuid,
    /// `produce`, `consume` or `adjust` (an adjust-actual correction).
    #[serde(rename = "type")]
    pub kind: String,
    /// `produce` or `consume`: which actual the row counts toward.
    pub actual_kind: ActualKind,
    pub item_id: Uuid,
    /// Signed change of the actual quantity.
    pub quantity: f64,
    pub location_id: Option<Uuid>,
    /// The node the action was called on.
    pub deliverable_id: Option<Uuid>,
    pub production_output_id: Option<Uuid>,
    pub bom_line_id: Option<Uuid>,
    pub created_at: chrono::DateTime<chrono::Utc>,
}

/// The metadata keys of production postings (kept with the ledger's own types, which the
/// lot rules read too).
pub use crate::inventory::production_keys as keys;

/// Rule 2 of 4.4: what a declaration posts when `outputs` is omitted: `producedPerUnit` x
/// `quantityProduced`, else its remaining planned quantity (0 when it has neither).
pub fn default_output(decl: &ProductionOutput, quantity_produced: f64) -> f64 {
    let q = match (decl.produced_per_unit, decl.quantity) {
        (Some(per_unit), _) => per_unit * quantity_produced,
        (None, Some(planned)) => (planned - decl.quantity_actual).max(0.0),
        (None, None) => 0.0,
    };
    round_quantity(q)
}

/// A declaration's planned quantity for an order of `order_quantity` units.
pub fn planned_output(decl: &ProductionOutput, order_quantity: f64) -> Option<f64> {
    decl.quantity
        .or(decl.produced_per_unit.map(|p| p * order_quantity))
        .map(round_quantity)
}

/// A BOM line's full recipe for an order of `order_quantity` units (spec 2.3 rules 4, 5):
/// ratio lines use `outputPerUnit` per unit; total lines use `quantity`, per unit or per order.
pub fn planned_for_order(line: &BomLine, order_quantity: f64) -> f64 {
    let q = match (line.mode, line.scaling) {
        (Some(BomMode::Ratio), _) => line.output_per_unit.unwrap_or(0.0) * order_quantity,
        (_, Some(BomScaling::PerUnit)) => line.quantity.unwrap_or(0.0) * order_quantity,
        _ => line.quantity.unwrap_or(0.0),
    };
    round_quantity(q)
}

/// What is left of a plan: `planned - actual`, not below zero.
pub fn remaining(planned: f64, actual: f64) -> f64 {
    round_quantity((planned - actual).max(0.0))
}

/// Where an output goes, in order of preference: the entry, the request, the declaration.
/// (The item's default location is the server's last resort.)
pub fn output_location(
    entry: Option<&OutputEntry>,
    request: &ProduceRequest,
    decl: Option<&ProductionOutput>,
) -> Option<Uuid> {
    entry
        .and_then(|e| e.location_id)
        .or(request.output_location_id)
        .or(decl.and_then(|d| d.location_id))
}

/// Which declaration an output credits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credit {
    /// The declaration at this index of the order's declarations.
    Declared(usize),
    /// A new ad-hoc declaration for the item (spec 4.4 rule 3).
    AdHoc,
}

/// One output a produce call posts.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedOutput {
    pub credit: Credit,
    pub item_id: Uuid,
    pub quantity: f64,
    /// From the entry, the request or the declaration; `None`: the item's default location.
    pub location_id: Option<Uuid>,
    /// The `outputs` entry it comes from (`None`: a declaration's default, or `outputItemId`).
    pub entry: Option<usize>,
}

/// Decides what a produce call posts (spec 4.4 rules 2 to 5), given the order's active
/// declarations in display order. Outputs of quantity 0 are left out; a call that would post
/// nothing at all is refused.
pub fn plan_produce(
    req: &ProduceRequest,
    decls: &[ProductionOutput],
) -> Result<Vec<PlannedOutput>, Vec<Violation>> {
    let mut v = Vec::new();
    if !(req.quantity_produced.is_finite() && req.quantity_produced > 0.0) {
        v.push(Violation::field(
            "quantityProduced",
            "quantityProduced must be a positive number",
        ));
    }
    if matches!(&req.outputs, Some(o) if o.is_empty()) {
        v.push(Violation::field(
            "outputs",
            "outputs must not be empty; omit it to post every declaration's default",
        ));
    }
    if req.outputs.is_some() && req.output_item_id.is_some() {
        v.push(Violation::field(
            "outputItemId",
            "give outputs or outputItemId, not both",
        ));
    }
    if !v.is_empty() {
        return Err(v);
    }
    let entries: Option<Vec<OutputEntry>> = req.outputs.clone().or(req.output_item_id.map(|id| {
        vec![OutputEntry {
            item_id: id,
            quantity: None,
            location_id: None,
            lots: None,
        }]
    }));
    let field = |i: usize, f: &str| {
        if req.outputs.is_some() {
            format!("outputs[{i}].{f}")
        } else {
            "outputItemId".to_string()
        }
    };
    let mut planned = Vec::new();
    match entries {
        None if decls.is_empty() => {
            return Err(vec![Violation::field(
                "outputs",
                "the order has no output declarations: name the items produced through outputs or outputItemId",
            )]);
        }
        None => {
            for (i, decl) in decls.iter().enumerate() {
                planned.push(PlannedOutput {
                    credit: Credit::Declared(i),
                    item_id: decl.item_id,
                    quantity: default_output(decl, req.quantity_produced),
                    location_id: output_location(None, req, Some(decl)),
                    entry: None,
                });
            }
        }
        Some(entries) => {
            for (i, entry) in entries.iter().enumerate() {
                if let Some(q) = entry.quantity
                    && !(q.is_finite() && q >= 0.0)
                {
                    v.push(Violation::field(
                        field(i, "quantity"),
                        "an output quantity must be a nonnegative number",
                    ));
                    continue;
                }
                if decls.is_empty() {
                    planned.push(PlannedOutput {
                        credit: Credit::AdHoc,
                        item_id: entry.item_id,
                        quantity: round_quantity(entry.quantity.unwrap_or(req.quantity_produced)),
                        location_id: output_location(Some(entry), req, None),
                        entry: req.outputs.is_some().then_some(i),
                    });
                    continue;
                }
                match decls.iter().position(|d| d.item_id == entry.item_id) {
                    Some(d) => planned.push(PlannedOutput {
                        credit: Credit::Declared(d),
                        item_id: entry.item_id,
                        quantity: match entry.quantity {
                            Some(q) => round_quantity(q),
                            None => default_output(&decls[d], req.quantity_produced),
                        },
                        location_id: output_location(Some(entry), req, Some(&decls[d])),
                        entry: req.outputs.is_some().then_some(i),
                    }),
                    None => v.push(Violation::field(
                        field(i, "itemId"),
                        format!(
                            "item {} is not declared as an output of this order; outputs may name only declared items",
                            entry.item_id
                        ),
                    )),
                }
            }
        }
    }
    if !v.is_empty() {
        return Err(v);
    }
    planned.retain(|p| p.quantity > 0.0);
    if planned.is_empty() {
        return Err(vec![Violation::general(
            "nothing to produce: every output quantity is zero (the declarations' remaining planned quantities are reached); name quantities in outputs",
        )]);
    }
    Ok(planned)
}

/// One material draw of a consume call.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedDraw {
    /// Index of the BOM line among the order's lines.
    pub line: usize,
    pub item_id: Uuid,
    pub quantity: f64,
    /// From the entry or the request; `None`: the item's default location.
    pub location_id: Option<Uuid>,
    /// The `lines` entry it comes from (`None`: the full recipe).
    pub entry: Option<usize>,
}

/// Which of an order's BOM lines a consume on `node` draws (spec 2.3 rule 2, 4.4 rule 6): on
/// the order itself (`node == order`), every line, the whole recipe; on a node below it, the
/// lines placed on that node or on one of its descendants (`subtree`: the node and every node
/// below it). Unplaced lines belong to the order as a whole, so only a consume on the order
/// draws them. Indexes into `lines`, in their order.
pub fn lines_drawn_by(
    lines: &[BomLine],
    node: Uuid,
    order: Uuid,
    subtree: &std::collections::HashSet<Uuid>,
) -> Vec<usize> {
    lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            node == order
                || l.placed_on_deliverable_id
                    .is_some_and(|placed| subtree.contains(&placed))
        })
        .map(|(i, _)| i)
        .collect()
}

/// Decides what a consume call draws (spec 4.4 rules 6, 7), given the node's BOM lines (see
/// [`lines_drawn_by`]) in display order and the order's quantity. Without `lines`, each line's
/// full recipe (rule 6: a consume posts the recipe once per call, whatever was drawn before;
/// retries are kept from repeating it by their idempotency key); with `lines`, the given
/// quantities for the lines they name, entries outside the node's BOM ignored.
pub fn plan_consume(
    req: &ConsumeRequest,
    lines: &[BomLine],
    order_quantity: f64,
) -> Result<(Vec<PlannedDraw>, Vec<IgnoredEntry>), Vec<Violation>> {
    let mut draws = Vec::new();
    let mut ignored = Vec::new();
    match &req.lines {
        Some(entries) if entries.is_empty() => {
            return Err(vec![Violation::field(
                "lines",
                "lines must not be empty; omit it to draw the full recipe",
            )]);
        }
        None => {
            for (i, line) in lines.iter().enumerate() {
                draws.push(PlannedDraw {
                    line: i,
                    item_id: line.item_id,
                    quantity: planned_for_order(line, order_quantity),
                    location_id: req.from_location_id,
                    entry: None,
                });
            }
        }
        Some(entries) => {
            let mut v = Vec::new();
            for (i, entry) in entries.iter().enumerate() {
                if !(entry.quantity.is_finite() && entry.quantity >= 0.0) {
                    v.push(Violation::field(
                        format!("lines[{i}].quantity"),
                        "a line quantity must be a nonnegative number",
                    ));
                    continue;
                }
                if entry.bom_line_id.is_none() && entry.item_id.is_none() {
                    v.push(Violation::field(
                        format!("lines[{i}]"),
                        "a lines entry names a bomLineId or an itemId",
                    ));
                    continue;
                }
                let found = lines.iter().position(|l| {
                    entry.bom_line_id.is_none_or(|id| id == l.id)
                        && entry.item_id.is_none_or(|id| id == l.item_id)
                });
                match found {
                    Some(l) => draws.push(PlannedDraw {
                        line: l,
                        item_id: lines[l].item_id,
                        quantity: round_quantity(entry.quantity),
                        location_id: entry.from_location_id.or(req.from_location_id),
                        entry: Some(i),
                    }),
                    None => ignored.push(IgnoredEntry {
                        index: i,
                        item_id: entry.item_id,
                        bom_line_id: entry.bom_line_id,
                        reason: "not one of this node's BOM lines (placed on it or below it)"
                            .into(),
                    }),
                }
            }
            if !v.is_empty() {
                return Err(v);
            }
        }
    }
    draws.retain(|d| d.quantity > 0.0);
    if draws.is_empty() {
        return Err(vec![Violation::general(
            "nothing to consume: no BOM line is placed on this node or below it, or every quantity is zero (or the entries name none of its lines)",
        )]);
    }
    Ok((draws, ignored))
}

/// Checks an adjust-actual request's own fields.
pub fn check_adjust_actual(req: &AdjustActualRequest) -> Result<(), Vec<Violation>> {
    if !(req.delta.is_finite() && req.delta != 0.0 && round_quantity(req.delta) != 0.0) {
        return Err(vec![Violation::field(
            "delta",
            "delta must be a nonzero number (at least 0.000001 in size)",
        )]);
    }
    Ok(())
}

/// The stock change of an actual correction: more produced puts stock in, more consumed takes
/// it out.
pub fn actual_stock_delta(kind: ActualKind, delta: f64) -> f64 {
    match kind {
        ActualKind::Produce => round_quantity(delta),
        ActualKind::Consume => round_quantity(-delta),
    }
}

/// The production state of an order from its outputs and materials.
pub fn production_state(outputs: &[OutputStatus], materials: &[MaterialStatus]) -> ProductionState {
    let started =
        outputs.iter().any(|o| o.actual != 0.0) || materials.iter().any(|m| m.actual != 0.0);
    let planned: Vec<_> = outputs.iter().filter_map(|o| o.remaining).collect();
    if !planned.is_empty() && planned.iter().all(|r| *r <= 0.0) && started {
        ProductionState::Complete
    } else if started {
        ProductionState::InProgress
    } else {
        ProductionState::NotStarted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::parse;
    use proptest::prelude::*;
    use serde_json::json;

    const ORDER: &str = "00000000-0000-4000-8000-0000000000b1";

    fn item(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn decl(
        item_n: u128,
        per_unit: Option<f64>,
        quantity: Option<f64>,
        actual: f64,
    ) -> ProductionOutput {
        parse(
            json!({"itemId": item(item_n), "orderDeliverableId": ORDER, "producedPerUnit": per_unit,
                     "quantity": quantity, "quantityActual": actual}),
        )
    }

    fn line(item_n: u128, fields: serde_json::Value) -> BomLine {
        let mut body = json!({"itemId": item(item_n), "orderDeliverableId": ORDER});
        body.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        let mut l: BomLine = parse(body);
        crate::resource::Record::normalize(&mut l);
        l
    }

    fn produce(body: serde_json::Value) -> ProduceRequest {
        let mut b = json!({"deliverableId": ORDER});
        b.as_object_mut()
            .unwrap()
            .extend(body.as_object().unwrap().clone());
        serde_json::from_value(b).unwrap()
    }

    #[test]
    fn defaults_post_per_unit_times_run_or_the_remaining_plan() {
        let decls = [
            decl(1, Some(2.0), None, 0.0),
            decl(2, None, Some(10.0), 4.0),
            decl(3, None, None, 0.0),
        ];
        let plan = plan_produce(&produce(json!({"quantityProduced": 3})), &decls).unwrap();
        let got: Vec<_> = plan.iter().map(|p| (p.item_id, p.quantity)).collect();
        assert_eq!(
            got,
            vec![(item(1), 6.0), (item(2), 6.0)],
            "item 3 has nothing planned"
        );
        assert_eq!(plan[0].credit, Credit::Declared(0));
    }

    #[test]
    fn produce_rules() {
        let decls = [decl(1, Some(2.0), None, 0.0)];
        assert!(
            plan_produce(&produce(json!({"outputs": []})), &decls).is_err(),
            "empty outputs"
        );
        let err =
            plan_produce(&produce(json!({"outputs": [{"itemId": item(9)}]})), &decls).unwrap_err();
        assert_eq!(err[0].field.as_deref(), Some("outputs[0].itemId"));
        let err = plan_produce(&produce(json!({"outputItemId": item(9)})), &decls).unwrap_err();
        assert_eq!(err[0].field.as_deref(), Some("outputItemId"));
        let ok = plan_produce(
            &produce(json!({"outputs": [{"itemId": item(1), "quantity": 1.5}]})),
            &decls,
        )
        .unwrap();
        assert_eq!(ok[0].quantity, 1.5);
        assert!(plan_produce(&produce(json!({"quantityProduced": 0})), &decls).is_err());
        assert!(
            plan_produce(
                &produce(json!({"outputs": [{"itemId": item(1)}], "outputItemId": item(1)})),
                &decls
            )
            .is_err()
        );
        // No declarations: items must be named, and become ad hoc.
        assert!(plan_produce(&produce(json!({})), &[]).is_err());
        let adhoc = plan_produce(
            &produce(json!({"outputItemId": item(5), "quantityProduced": 4})),
            &[],
        )
        .unwrap();
        assert_eq!((adhoc[0].credit, adhoc[0].quantity), (Credit::AdHoc, 4.0));
        // Nothing left to post.
        assert!(plan_produce(&produce(json!({})), &[decl(2, None, Some(3.0), 3.0)]).is_err());
    }

    #[test]
    fn output_location_preference() {
        let loc = |n: u128| Some(Uuid::from_u128(100 + n));
        let mut d = decl(1, Some(1.0), None, 0.0);
        d.location_id = loc(1);
        let req = produce(json!({"outputLocationId": loc(2)}));
        let entry = OutputEntry {
            item_id: item(1),
            quantity: None,
            location_id: loc(3),
            lots: None,
        };
        assert_eq!(output_location(Some(&entry), &req, Some(&d)), loc(3));
        assert_eq!(output_location(None, &req, Some(&d)), loc(2));
        assert_eq!(output_location(None, &produce(json!({})), Some(&d)), loc(1));
        assert_eq!(output_location(None, &produce(json!({})), None), None);
    }

    #[test]
    fn recipe_scaling() {
        let ratio = line(
            1,
            json!({"mode": "ratio", "outputPerUnit": 2.5, "quantity": 1}),
        );
        assert_eq!(planned_for_order(&ratio, 4.0), 10.0);
        let per_unit_total = line(1, json!({"scaling": "per_unit", "quantity": 3}));
        assert_eq!(planned_for_order(&per_unit_total, 4.0), 12.0);
        let per_order = line(1, json!({"quantity": 7}));
        assert_eq!(planned_for_order(&per_order, 4.0), 7.0);
    }

    #[test]
    fn consume_rules() {
        let lines = [
            line(1, json!({"quantity": 5})),
            line(2, json!({"quantity": 2, "quantityActual": 2})),
        ];
        let req = |b: serde_json::Value| -> ConsumeRequest {
            let mut body = json!({"deliverableId": ORDER});
            body.as_object_mut()
                .unwrap()
                .extend(b.as_object().unwrap().clone());
            serde_json::from_value(body).unwrap()
        };
        let (draws, ignored) = plan_consume(&req(json!({})), &lines, 1.0).unwrap();
        let got: Vec<_> = draws.iter().map(|d| (d.item_id, d.quantity)).collect();
        assert_eq!(
            got,
            vec![(item(1), 5.0), (item(2), 2.0)],
            "the full recipe, whatever was drawn before"
        );
        assert!(ignored.is_empty());
        assert!(plan_consume(&req(json!({"lines": []})), &lines, 1.0).is_err());
        let (draws, ignored) = plan_consume(
            &req(json!({"lines": [{"itemId": item(2), "quantity": 1}, {"itemId": item(9), "quantity": 3}]})),
            &lines,
            1.0,
        )
        .unwrap();
        assert_eq!((draws[0].line, draws[0].quantity), (1, 1.0));
        assert_eq!(ignored[0].index, 1);
        assert!(
            plan_consume(
                &req(json!({"lines": [{"itemId": item(9), "quantity": 3}]})),
                &lines,
                1.0
            )
            .is_err()
        );
        assert!(
            plan_consume(
                &req(json!({"lines": [{"itemId": item(1), "quantity": -1}]})),
                &lines,
                1.0
            )
            .is_err()
        );
        assert!(plan_consume(&req(json!({"lines": [{"quantity": 1}]})), &lines, 1.0).is_err());
    }

    #[test]
    fn adjust_actual_and_state() {
        let ok = |d: f64| AdjustActualRequest {
            stamp_deliverable_id: item(1),
            kind: ActualKind::Produce,
            item_id: item(2),
            delta: d,
            lot_id: None,
        };
        assert!(check_adjust_actual(&ok(0.0)).is_err());
        assert!(check_adjust_actual(&ok(1e-9)).is_err());
        assert!(check_adjust_actual(&ok(-2.0)).is_ok());
        assert_eq!(actual_stock_delta(ActualKind::Consume, 2.0), -2.0);
        assert_eq!(actual_stock_delta(ActualKind::Produce, -2.0), -2.0);
        let out = |planned: Option<f64>, actual: f64| OutputStatus {
            production_output_id: item(1),
            item_id: item(1),
            name: String::new(),
            planned,
            actual,
            remaining: planned.map(|p| remaining(p, actual)),
            unit_measure_id: None,
        };
        assert_eq!(
            production_state(&[out(Some(2.0), 0.0)], &[]),
            ProductionState::NotStarted
        );
        assert_eq!(
            production_state(&[out(Some(2.0), 1.0)], &[]),
            ProductionState::InProgress
        );
        assert_eq!(
            production_state(&[out(Some(2.0), 2.0)], &[]),
            ProductionState::Complete
        );
        assert_eq!(
            production_state(&[out(None, 2.0)], &[]),
            ProductionState::InProgress
        );
    }

    fn placed(item_n: u128, node: Option<Uuid>) -> BomLine {
        let mut l = line(item_n, json!({"quantity": 1}));
        l.placed_on_deliverable_id = node;
        l
    }

    #[test]
    fn a_node_draws_the_lines_placed_on_it_and_below_it() {
        let order = Uuid::parse_str(ORDER).unwrap();
        let (phase, stage, step, other) = (item(50), item(51), item(52), item(53));
        let lines = [
            placed(1, None),
            placed(2, Some(phase)),
            placed(3, Some(stage)),
            placed(4, Some(step)),
            placed(5, Some(other)),
        ];
        let set = |ids: &[Uuid]| {
            ids.iter()
                .copied()
                .collect::<std::collections::HashSet<_>>()
        };
        assert_eq!(
            lines_drawn_by(
                &lines,
                order,
                order,
                &set(&[order, phase, stage, step, other])
            ),
            vec![0, 1, 2, 3, 4],
            "the order draws the whole recipe"
        );
        assert_eq!(
            lines_drawn_by(&lines, phase, order, &set(&[phase, stage, step])),
            vec![1, 2, 3]
        );
        assert_eq!(
            lines_drawn_by(&lines, stage, order, &set(&[stage, step])),
            vec![2, 3]
        );
        assert_eq!(lines_drawn_by(&lines, step, order, &set(&[step])), vec![3]);
        // A node with nothing placed on or below it draws nothing (the consume is refused).
        let none = lines_drawn_by(&lines, item(60), order, &set(&[item(60)]));
        assert!(none.is_empty());
        let drawn: Vec<BomLine> = none.iter().map(|&i| lines[i].clone()).collect();
        let req: ConsumeRequest =
            serde_json::from_value(json!({"deliverableId": item(60)})).unwrap();
        assert!(plan_consume(&req, &drawn, 1.0).is_err());
    }

    proptest! {
        /// A node draws exactly the lines placed inside its subtree; the order draws all of
        /// them; nodes that split a subtree into disjoint parts draw disjoint lines.
        #[test]
        fn drawn_lines_follow_the_placements(
            placements in proptest::collection::vec(proptest::option::of(0u128..6), 0..12),
            subtree in proptest::collection::btree_set(0u128..6, 1..6),
        ) {
            let order = Uuid::parse_str(ORDER).unwrap();
            let lines: Vec<_> = placements.iter().enumerate().map(|(i, p)| placed(i as u128 + 1, p.map(|n| item(100 + n)))).collect();
            let ids: std::collections::HashSet<Uuid> = subtree.iter().map(|n| item(100 + n)).collect();
            let node = item(100 + *subtree.iter().next().unwrap());
            let drawn = lines_drawn_by(&lines, node, order, &ids);
            for (i, l) in lines.iter().enumerate() {
                let inside = l.placed_on_deliverable_id.is_some_and(|p| ids.contains(&p));
                prop_assert_eq!(drawn.contains(&i), inside);
            }
            prop_assert_eq!(lines_drawn_by(&lines, order, order, &ids).len(), lines.len());
            let rest: std::collections::HashSet<Uuid> = (0u128..6).map(|n| item(100 + n)).filter(|id| !ids.contains(id)).collect();
            let other = lines_drawn_by(&lines, item(999), order, &rest);
            prop_assert!(other.iter().all(|i| !drawn.contains(i)));
        }

        /// Every planned output and draw is positive and finite, and a default never exceeds
        /// what is left of a planned quantity.
        #[test]
        fn plans_post_positive_quantities(
            specs in proptest::collection::vec((proptest::option::of(0.0f64..100.0), proptest::option::of(0.001f64..100.0), 0.0f64..100.0), 1..6),
            run in 0.001f64..50.0,
            order_quantity in 1.0f64..20.0,
        ) {
            let decls: Vec<_> = specs.iter().enumerate().map(|(i, (p, q, a))| decl(i as u128 + 1, p.filter(|x| *x > 0.0), *q, *a)).collect();
            if let Ok(plan) = plan_produce(&produce(json!({"quantityProduced": run})), &decls) {
                for p in &plan {
                    prop_assert!(p.quantity > 0.0 && p.quantity.is_finite());
                    if let Credit::Declared(i) = p.credit {
                        let d = &decls[i];
                        if d.produced_per_unit.is_none() {
                            prop_assert!(p.quantity <= d.quantity.unwrap() - d.quantity_actual + 1e-6);
                        }
                    }
                }
            }
            let lines: Vec<_> = specs.iter().enumerate().map(|(i, (_, q, a))| line(i as u128 + 1, json!({"quantity": q.unwrap_or(1.0), "quantityActual": a}))).collect();
            let req: ConsumeRequest = serde_json::from_value(json!({"deliverableId": ORDER})).unwrap();
            let (draws, _) = plan_consume(&req, &lines, order_quantity).unwrap();
            // Omitting `lines` draws every line's full recipe, once, whatever its actual.
            prop_assert_eq!(draws.len(), lines.len());
            for (i, d) in draws.iter().enumerate() {
                let l = &lines[d.line];
                prop_assert_eq!(d.line, i);
                prop_assert!(d.quantity > 0.0);
                prop_assert_eq!(d.quantity, planned_for_order(l, order_quantity));
            }
        }
    }
}
