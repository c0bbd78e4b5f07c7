//! The BOM actions of spec 4.5: prepopulate an order's BOM, allocate (reserve) materials, and
//! the demand and materials rollups. Request and response types for the server and the client,
//! and the arithmetic of the rollups.

use std::collections::BTreeMap;

use crate::openapi::ToSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::inventory::round_quantity;
use crate::production::{BomLine, ProductionOutput};

/// `POST /bom-line/order/{id}/prepopulate`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrepopulateRequest {
    /// The route whose inputs seed the order when its project has no BOM, and whose output
    /// declarations are copied onto the order.
    #[serde(default)]
    pub route_deliverable_id: Option<Uuid>,
}

/// Where prepopulate took the BOM lines from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BomSeed {
    /// The order's project BOM.
    Project,
    /// The route's inputs.
    Route,
}

/// The `value` of a prepopulate answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrepopulateResult {
    pub seeded_from: BomSeed,
    /// Lines created by this call (none on a re-run).
    pub created_bom_lines: Vec<BomLine>,
    /// Output declarations copied from the route by this call (none on a re-run).
    pub created_outputs: Vec<ProductionOutput>,
    /// Source lines and declarations already copied earlier, left alone.
    pub already_present: usize,
}

/// `POST /bom-line/order/{id}/allocate`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AllocateRequest {
    /// Only lines of these items; omitted: every line.
    #[serde(default)]
    pub item_ids: Option<Vec<Uuid>>,
}

/// A reservation of material for one BOM line at one location.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reservation {
    pub bom_line_id: Uuid,
    pub item_id: Uuid,
    pub location_id: Uuid,
    /// Reserved quantity, in the item's base unit.
    pub quantity: f64,
}

/// A line allocate could not reserve for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SkippedLine {
    pub bom_line_id: Uuid,
    pub item_id: Uuid,
    pub reason: String,
}

/// The `value` of an allocate answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AllocateResult {
    /// The reservations of the allocated lines after the call (quantity 0: released).
    pub reservations: Vec<Reservation>,
    pub skipped: Vec<SkippedLine>,
}

/// One BOM line's contribution to an item's demand.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DemandSource {
    /// `order` or `project`.
    pub kind: String,
    /// The order or project.
    pub owner_id: Uuid,
    /// The BOM line (for a project: its first line of the item).
    pub bom_line_id: Uuid,
    pub quantity: f64,
}

/// One item of `GET /bom-line/demand-rollup`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DemandRow {
    pub item_id: Uuid,
    pub item_name: String,
    /// `fromOrders + fromProjects`.
    pub demand: f64,
    /// Remaining recipe of open orders' BOM lines.
    pub from_orders: f64,
    /// Project estimates not yet planned on the project's orders.
    pub from_projects: f64,
    /// Stock on hand, all locations.
    pub on_hand: f64,
    /// Reserved, all locations.
    pub reserved: f64,
    /// `demand - onHand`, not below zero.
    pub shortage: f64,
    pub sources: Vec<DemandSource>,
}

/// Totals of one item in a project's materials rollup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaterialTotals {
    /// The project BOM (project lines' quantities).
    pub estimate: f64,
    /// The full recipes of the project's orders' BOM lines.
    pub planned: f64,
    /// Remaining quantities of order lines that carry a `poNumber`.
    pub on_order: f64,
    /// Consumed so far (order lines' `quantityActual`).
    pub used: f64,
    /// `used - estimate` (positive: over the estimate).
    pub variance: f64,
}

/// One item of a project's materials rollup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaterialRow {
    pub item_id: Uuid,
    pub item_name: String,
    #[serde(flatten)]
    pub totals: MaterialTotals,
}

/// `GET /bom-line/project/{projectId}/materials-rollup`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaterialsRollup {
    pub project_id: Uuid,
    /// The project's orders.
    pub order_ids: Vec<Uuid>,
    pub items: Vec<MaterialRow>,
    pub totals: MaterialTotals,
}

/// Accumulates a materials rollup: `add_*` per line, then [`MaterialsAcc::finish`].
#[derive(Debug, Default)]
pub struct MaterialsAcc {
    items: BTreeMap<Uuid, MaterialTotals>,
}

impl MaterialsAcc {
    /// A project line: its quantity is the estimate.
    pub fn add_estimate(&mut self, line: &BomLine) {
        self.items.entry(line.item_id).or_default().estimate += line.quantity.unwrap_or(0.0);
    }

    /// An order line with its full recipe for the order.
    pub fn add_order_line(&mut self, line: &BomLine, planned: f64) {
        let t = self.items.entry(line.item_id).or_default();
        t.planned += planned;
        t.used += line.quantity_actual;
        t.on_order += on_order(line, planned);
    }

    /// Rows per item (named by `name`) and the totals, every figure rounded to six decimals.
    pub fn finish(self, name: impl Fn(Uuid) -> String) -> (Vec<MaterialRow>, MaterialTotals) {
        let mut total = MaterialTotals::default();
        let mut rows = Vec::new();
        for (item_id, mut t) in self.items {
            t.variance = t.used - t.estimate;
            total.estimate += t.estimate;
            total.planned += t.planned;
            total.on_order += t.on_order;
            total.used += t.used;
            rows.push(MaterialRow {
                item_id,
                item_name: name(item_id),
                totals: rounded(t),
            });
        }
        total.variance = total.used - total.estimate;
        (rows, rounded(total))
    }
}

fn rounded(t: MaterialTotals) -> MaterialTotals {
    MaterialTotals {
        estimate: round_quantity(t.estimate),
        planned: round_quantity(t.planned),
        on_order: round_quantity(t.on_order),
        used: round_quantity(t.used),
        variance: round_quantity(t.variance),
    }
}

/// What an order line whose full recipe is `planned` has on order (in the line's unit): what
/// it still needs when it carries a `poNumber`, else nothing.
pub fn on_order(line: &BomLine, planned: f64) -> f64 {
    if line
        .po_number
        .as_deref()
        .is_some_and(|p| !p.trim().is_empty())
    {
        (planned - line.quantity_actual).max(0.0)
    } else {
        0.0
    }
}

/// A project's demand for an item not yet planned on its orders: estimate minus planned, not
/// below zero.
pub fn unreleased_estimate(estimate: f64, planned_on_orders: f64) -> f64 {
    round_quantity((estimate - planned_on_orders).max(0.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::parse;
    use proptest::prelude::*;
    use serde_json::json;

    fn line(item: u128, fields: serde_json::Value) -> BomLine {
        let mut body =
            json!({"itemId": Uuid::from_u128(item), "orderDeliverableId": Uuid::from_u128(50)});
        body.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        parse(body)
    }

    #[test]
    fn materials_rollup_totals() {
        let mut acc = MaterialsAcc::default();
        acc.add_estimate(&line(1, json!({"quantity": 10})));
        acc.add_order_line(
            &line(
                1,
                json!({"quantity": 8, "quantityActual": 3, "poNumber": "PO-1"}),
            ),
            8.0,
        );
        acc.add_order_line(&line(2, json!({"quantity": 2, "quantityActual": 2})), 2.0);
        let (rows, total) = acc.finish(|_| "x".into());
        assert_eq!(rows.len(), 2);
        let a = &rows[0].totals;
        assert_eq!(
            (a.estimate, a.planned, a.on_order, a.used, a.variance),
            (10.0, 8.0, 5.0, 3.0, -7.0)
        );
        assert_eq!(
            (total.estimate, total.planned, total.used, total.variance),
            (10.0, 10.0, 5.0, -5.0)
        );
        let json = serde_json::to_value(&rows[0]).unwrap();
        assert_eq!(json["onOrder"], 5.0, "totals are flattened: {json}");
    }

    #[test]
    fn unreleased_estimates() {
        assert_eq!(unreleased_estimate(10.0, 4.0), 6.0);
        assert_eq!(unreleased_estimate(3.0, 4.0), 0.0);
    }

    proptest! {
        #[test]
        fn totals_are_the_sum_of_rows(lines in proptest::collection::vec((1u128..4, 0.0f64..100.0, 0.0f64..100.0, any::<bool>(), any::<bool>()), 0..20)) {
            let mut acc = MaterialsAcc::default();
            for (item, q, actual, project, po) in &lines {
                let mut fields = json!({"quantity": q, "quantityActual": actual});
                if *po { fields["poNumber"] = json!("PO"); }
                let l = line(*item, fields);
                if *project { acc.add_estimate(&l) } else { acc.add_order_line(&l, *q) }
            }
            let (rows, total) = acc.finish(|_| String::new());
            let sum: f64 = rows.iter().map(|r| r.totals.used).sum();
            prop_assert!((sum - total.used).abs() < 1e-3);
            for r in &rows {
                prop_assert!(r.totals.on_order >= 0.0);
                prop_assert!((r.totals.variance - (r.totals.used - r.totals.estimate)).abs() < 1e-5);
            }
        }
    }
}
