//! Production outputs and BOM lines (spec 2.2, 2.3): planned outputs and material inputs of
//! routes, orders and projects.
//!
//! Each record belongs to exactly one owner ([`Owner`]). Whether a deliverable owner is the root
//! route or root order needs the owner's stored facts, so the server looks them up and asks
//! [`check_owner`].

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::common::{is_positive, trim};
use crate::deliverable::DeliverableType;
use crate::resource::{Archive, Record, ResourceDesc};
use crate::violation::Violation;

/// The owner of a production output or BOM line, by the field that names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// `routeDeliverableId`: a root route.
    Route(Uuid),
    /// `orderDeliverableId`: a root order.
    Order(Uuid),
    /// `projectId`: a project (BOM lines only).
    Project(Uuid),
}

impl Owner {
    /// The field that names the owner.
    pub fn field(self) -> &'static str {
        match self {
            Owner::Route(_) => "routeDeliverableId",
            Owner::Order(_) => "orderDeliverableId",
            Owner::Project(_) => "projectId",
        }
    }

    /// The owner's id.
    pub fn id(self) -> Uuid {
        match self {
            Owner::Route(id) | Owner::Order(id) | Owner::Project(id) => id,
        }
    }

    /// The deliverable type the owner must have; `None` for a project owner.
    pub fn deliverable_type(self) -> Option<DeliverableType> {
        match self {
            Owner::Route(_) => Some(DeliverableType::Route),
            Owner::Order(_) => Some(DeliverableType::Order),
            Owner::Project(_) => None,
        }
    }
}

/// The single owner among the candidates, or a violation naming `fields` when none or several
/// are supplied (rule 1 of spec 2.2 and 2.3).
fn single_owner(candidates: &[Option<Owner>], fields: &str) -> Result<Owner, Violation> {
    let mut present = candidates.iter().flatten();
    match (present.next(), present.next()) {
        (Some(owner), None) => Ok(*owner),
        _ => Err(Violation::general(format!(
            "supply exactly one of {fields}"
        ))),
    }
}

/// Rule 2 of spec 2.2 and 2.3: a deliverable owner must be the root route (for
/// `routeDeliverableId`) or root order (for `orderDeliverableId`) itself, not a phase, stage or
/// step. `owner_type` and `owner_has_parent` are the stored facts of the referenced deliverable.
/// A project owner is not a deliverable, so it is always accepted here.
pub fn check_owner(
    owner: Owner,
    owner_type: DeliverableType,
    owner_has_parent: bool,
) -> Result<(), Violation> {
    let Some(expected) = owner.deliverable_type() else {
        return Ok(());
    };
    if owner_type != expected || owner_has_parent {
        let found = if owner_has_parent {
            format!("a nested {owner_type}")
        } else {
            format!("a {owner_type}")
        };
        return Err(Violation::field(
            owner.field(),
            format!(
                "{} must name a root {expected}, not {found}; placements target phases, stages or steps",
                owner.field()
            ),
        ));
    }
    Ok(())
}

/// The deliverable types a BOM line may be placed on (rule 2 of spec 2.3: phases, stages or
/// steps; a component nests like a phase, a qcstep is a step).
pub const PLACEMENT_TYPES: [DeliverableType; 5] = [
    DeliverableType::Phase,
    DeliverableType::Component,
    DeliverableType::Stage,
    DeliverableType::Step,
    DeliverableType::Qcstep,
];

/// Rule 2 of spec 2.3, placements: the node a line is placed on must be a phase, component,
/// stage or step inside the line's owner (`node_root` is the root of the node's hierarchy,
/// `None` when the node is itself a root). `owner` is the line's route or order.
pub fn check_placement(
    owner: Owner,
    node_type: DeliverableType,
    node_root: Option<Uuid>,
) -> Result<(), Violation> {
    let field = "placedOnDeliverableId";
    if owner.deliverable_type().is_none() {
        return Err(Violation::field(
            field,
            "project lines are not placed: placements target phases, stages or steps of a route or order",
        ));
    }
    if !PLACEMENT_TYPES.contains(&node_type) {
        return Err(Violation::field(
            field,
            format!(
                "a line is placed on a phase, component, stage or step, not on a {node_type}{}",
                if node_root.is_none() {
                    " (leave placedOnDeliverableId null for the owner as a whole)"
                } else {
                    ""
                }
            ),
        ));
    }
    if node_root != Some(owner.id()) {
        return Err(Violation::field(
            field,
            format!(
                "the placed node must be inside the line's {} {}",
                owner.deliverable_type().map_or("owner", |t| t.as_str()),
                owner.id()
            ),
        ));
    }
    Ok(())
}

/// Where a production output declaration came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputSource {
    /// Entered by a user.
    #[default]
    Manual,
    /// Copied from a route's declarations.
    RouteTemplate,
    /// Created on the fly by a produce action.
    Adhoc,
}

/// A declaration of planned manufactured output of a route or order (spec 2.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProductionOutput {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// Display name.
    #[serde(default)]
    pub name: String,
    /// Human identifier.
    #[serde(default)]
    pub identifier: String,
    /// The item produced.
    pub item_id: Uuid,
    /// Owner when the declaration belongs to a root route.
    #[serde(default)]
    pub route_deliverable_id: Option<Uuid>,
    /// Owner when the declaration belongs to a root order.
    #[serde(default)]
    pub order_deliverable_id: Option<Uuid>,
    /// Output per run unit; required and positive for a route declaration.
    #[serde(default)]
    pub produced_per_unit: Option<f64>,
    /// Planned quantity; positive when given.
    #[serde(default)]
    pub quantity: Option<f64>,
    /// Quantity produced so far; server-maintained.
    #[serde(default)]
    pub quantity_actual: f64,
    /// Default output location.
    #[serde(default)]
    pub location_id: Option<Uuid>,
    /// Unit of the quantities.
    #[serde(default)]
    pub unit_measure_id: Option<Uuid>,
    /// Where the declaration came from.
    #[serde(default)]
    pub source: OutputSource,
    /// Display order.
    #[serde(default)]
    pub sort_order: f64,
    /// Free-text notes.
    #[serde(default)]
    pub notes: Option<String>,
    /// Free-form key-value data.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Archived by DELETE, restored by PATCH `{ "isArchived": false }`.
    #[serde(default)]
    pub is_archived: bool,
    /// When the record was archived; kept by the engine.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub archived_at: Option<DateTime<Utc>>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl ProductionOutput {
    /// The owner, or the rule-1 violation when not exactly one owner field is set.
    pub fn owner(&self) -> Result<Owner, Violation> {
        single_owner(
            &[
                self.route_deliverable_id.map(Owner::Route),
                self.order_deliverable_id.map(Owner::Order),
            ],
            "routeDeliverableId or orderDeliverableId",
        )
    }
}

impl Record for ProductionOutput {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["identifier"],
        archive: Archive::OnDelete,
        archived_at: true,
        read_only: &["quantityActual"],
        summary: "Production outputs: planned manufactured output of routes and orders",
        ..ResourceDesc::new("production-output", "production_output", "ProductionOutput")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
        trim(&mut self.identifier);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        let owner = self.owner();
        if let Err(violation) = &owner {
            v.push(violation.clone());
        }
        if matches!(owner, Ok(Owner::Route(_))) && !is_positive(self.produced_per_unit) {
            v.push(Violation::field(
                "producedPerUnit",
                "a route declaration needs a positive producedPerUnit; quantity does not substitute",
            ));
        } else if self.produced_per_unit.is_some_and(|x| x <= 0.0) {
            v.push(Violation::field(
                "producedPerUnit",
                "producedPerUnit must be positive",
            ));
        }
        if self.quantity.is_some_and(|q| q <= 0.0) {
            v.push(Violation::field(
                "quantity",
                "an explicit quantity must be positive",
            ));
        }
        v
    }
}

/// How a BOM line's figure is expressed (rule 4 of spec 2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BomMode {
    /// The line uses `outputPerUnit`.
    Ratio,
    /// The line uses `quantity`.
    Total,
}

/// Whether a BOM line's figure is per unit produced or per order (rule 5 of spec 2.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BomScaling {
    /// Per unit produced.
    PerUnit,
    /// Per order.
    PerOrder,
}

/// Where a BOM line came from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum BomSource {
    /// Entered by a user.
    #[default]
    Manual,
    /// Imported.
    Import,
    /// Copied from a route's inputs.
    RouteTemplate,
    /// Created on the fly by a consume action.
    Adhoc,
}

/// A planned material input of a route, order or project (spec 2.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BomLine {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// Display name; the server defaults it from the item.
    #[serde(default)]
    pub name: String,
    /// Human identifier.
    #[serde(default)]
    pub identifier: String,
    /// The material.
    pub item_id: Uuid,
    /// Owner when the line belongs to a root route.
    #[serde(default)]
    pub route_deliverable_id: Option<Uuid>,
    /// Owner when the line belongs to a root order.
    #[serde(default)]
    pub order_deliverable_id: Option<Uuid>,
    /// Owner when the line belongs to a project.
    #[serde(default)]
    pub project_id: Option<Uuid>,
    /// Where the material is used (rule 2): a phase, component, stage or step inside the owning
    /// route or order. Null: the line belongs to the owner as a whole. A consume on a node draws
    /// the lines placed on it and below it ([`crate::production_actions::lines_drawn_by`]).
    #[serde(default)]
    pub placed_on_deliverable_id: Option<Uuid>,
    /// `ratio` or `total`; defaulted by `normalize` from the owner (rule 6).
    #[serde(default)]
    pub mode: Option<BomMode>,
    /// `per_unit` or `per_order`; defaulted by `normalize` from the owner (rule 6).
    #[serde(default)]
    pub scaling: Option<BomScaling>,
    /// Material per unit produced (mode ratio).
    #[serde(default)]
    pub output_per_unit: Option<f64>,
    /// Total material (mode total).
    #[serde(default)]
    pub quantity: Option<f64>,
    /// Quantity consumed so far; server-maintained.
    #[serde(default)]
    pub quantity_actual: f64,
    /// Unit of the quantities; the server defaults it from the item.
    #[serde(default)]
    pub unit_measure_id: Option<Uuid>,
    /// Purchase order number.
    #[serde(default)]
    pub po_number: Option<String>,
    /// Sub-order reference.
    #[serde(default)]
    pub sub_order_ref: Option<String>,
    /// Where the line came from.
    #[serde(default)]
    pub source: BomSource,
    /// Display order.
    #[serde(default)]
    pub sort_order: f64,
    /// Free-text notes.
    #[serde(default)]
    pub notes: Option<String>,
    /// Free-form key-value data.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// Archived by DELETE, restored by PATCH `{ "isArchived": false }`.
    #[serde(default)]
    pub is_archived: bool,
    /// When the record was archived; kept by the engine.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub archived_at: Option<DateTime<Utc>>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl BomLine {
    /// The owner, or the rule-1 violation when not exactly one owner field is set.
    pub fn owner(&self) -> Result<Owner, Violation> {
        single_owner(
            &[
                self.route_deliverable_id.map(Owner::Route),
                self.order_deliverable_id.map(Owner::Order),
                self.project_id.map(Owner::Project),
            ],
            "routeDeliverableId, orderDeliverableId or projectId",
        )
    }
}

impl Record for BomLine {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["identifier", "poNumber", "notes"],
        archive: Archive::OnDelete,
        archived_at: true,
        read_only: &["quantityActual"],
        summary: "BOM lines: planned material inputs of routes, orders and projects",
        ..ResourceDesc::new("bom-line", "bom_line", "BomLine")
    };

    /// Fills `mode` and `scaling` when absent (rule 6): route lines default to per-unit ratios,
    /// order and project lines to per-order totals. A supplied value steers the other one: an
    /// absent mode is `total` when scaling is `per_order` (or, on a route line, when only
    /// `quantity` is given); an absent scaling is `per_unit` when mode is `ratio`. With no single
    /// owner nothing is filled (validation reports the owner).
    fn normalize(&mut self) {
        trim(&mut self.name);
        trim(&mut self.identifier);
        let Ok(owner) = self.owner() else { return };
        let is_route = matches!(owner, Owner::Route(_));
        let mode = self.mode.unwrap_or(match self.scaling {
            Some(BomScaling::PerOrder) => BomMode::Total,
            _ if is_route && self.output_per_unit.is_none() && self.quantity.is_some() => {
                BomMode::Total
            }
            _ if is_route => BomMode::Ratio,
            _ => BomMode::Total,
        });
        let scaling = self
            .scaling
            .unwrap_or(if mode == BomMode::Ratio || is_route {
                BomScaling::PerUnit
            } else {
                BomScaling::PerOrder
            });
        self.mode = Some(mode);
        self.scaling = Some(scaling);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        let owner = match self.owner() {
            Ok(owner) => Some(owner),
            Err(violation) => {
                v.push(violation);
                None
            }
        };
        // Rules 3 and 4: the governing figure must be positive; the other one, if given, not negative.
        let quantity_needed = matches!(self.mode, Some(BomMode::Total))
            || matches!(owner, Some(Owner::Order(_) | Owner::Project(_)));
        let per_unit_needed = matches!(self.mode, Some(BomMode::Ratio));
        if per_unit_needed && !is_positive(self.output_per_unit) {
            v.push(Violation::field(
                "outputPerUnit",
                "mode ratio needs a positive outputPerUnit",
            ));
        } else if self.output_per_unit.is_some_and(|x| x < 0.0) {
            v.push(Violation::field(
                "outputPerUnit",
                "outputPerUnit must not be negative",
            ));
        }
        if quantity_needed && !is_positive(self.quantity) {
            let message = match owner {
                Some(Owner::Order(_) | Owner::Project(_)) => {
                    "order and project lines need a positive quantity"
                }
                _ => "mode total needs a positive quantity",
            };
            v.push(Violation::field("quantity", message));
        } else if self.quantity.is_some_and(|x| x < 0.0) {
            v.push(Violation::field(
                "quantity",
                "quantity must not be negative",
            ));
        }
        if matches!(owner, Some(Owner::Project(_))) && self.placed_on_deliverable_id.is_some() {
            v.push(Violation::field(
                "placedOnDeliverableId",
                "project lines are not placed: placements target phases, stages or steps of a route or order",
            ));
        }
        // Rule 7.
        if self.mode == Some(BomMode::Ratio) && self.scaling == Some(BomScaling::PerOrder) {
            v.push(Violation::field(
                "scaling",
                "mode ratio with scaling per_order is invalid",
            ));
        }
        if matches!(owner, Some(Owner::Project(_))) && self.scaling != Some(BomScaling::PerOrder) {
            v.push(Violation::field(
                "scaling",
                "project lines must use scaling per_order",
            ));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;
    use proptest::prelude::*;
    use serde_json::json;

    const ITEM: &str = "00000000-0000-4000-8000-0000000000a1";
    const OWNER: &str = "00000000-0000-4000-8000-0000000000b1";

    fn output(extra: Value) -> Result<Value, Vec<Violation>> {
        let mut fields = json!({"itemId": ITEM});
        fields
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        check::<ProductionOutput>(fields)
    }

    fn bom(extra: Value) -> Result<Value, Vec<Violation>> {
        let mut fields = json!({"itemId": ITEM});
        fields
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        check::<BomLine>(fields)
    }

    #[test]
    fn output_needs_exactly_one_owner() {
        assert!(output(json!({})).is_err());
        assert!(output(json!({"routeDeliverableId": OWNER, "orderDeliverableId": OWNER, "producedPerUnit": 1})).is_err());
        let ok = output(json!({"orderDeliverableId": OWNER})).unwrap();
        assert_eq!(ok["source"], "manual");
        assert_eq!(ok["quantityActual"], 0.0);
        assert_eq!(ok["quantity"], Value::Null);
    }

    #[test]
    fn route_output_needs_positive_produced_per_unit() {
        assert!(output(json!({"routeDeliverableId": OWNER, "quantity": 5})).is_err());
        assert!(output(json!({"routeDeliverableId": OWNER, "producedPerUnit": 0})).is_err());
        assert!(output(json!({"routeDeliverableId": OWNER, "producedPerUnit": 2.5})).is_ok());
    }

    #[test]
    fn explicit_output_quantity_must_be_positive() {
        assert!(output(json!({"orderDeliverableId": OWNER, "quantity": 0})).is_err());
        assert!(output(json!({"orderDeliverableId": OWNER, "quantity": 3})).is_ok());
        assert!(output(json!({"orderDeliverableId": OWNER, "source": "route_template"})).is_ok());
        assert!(output(json!({"orderDeliverableId": OWNER, "source": "routeTemplate"})).is_err());
    }

    #[test]
    fn owner_must_be_root_of_expected_type() {
        let route = Owner::Route(Uuid::nil());
        assert!(check_owner(route, DeliverableType::Route, false).is_ok());
        assert!(check_owner(route, DeliverableType::Route, true).is_err());
        assert!(check_owner(route, DeliverableType::Order, false).is_err());
        let order = Owner::Order(Uuid::nil());
        assert!(check_owner(order, DeliverableType::Order, false).is_ok());
        let err = check_owner(order, DeliverableType::Phase, true).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("orderDeliverableId"));
        assert!(check_owner(Owner::Project(Uuid::nil()), DeliverableType::Step, true).is_ok());
    }

    #[test]
    fn bom_defaults_follow_the_owner() {
        let route = bom(json!({"routeDeliverableId": OWNER, "outputPerUnit": 2})).unwrap();
        assert_eq!(
            (route["mode"].as_str(), route["scaling"].as_str()),
            (Some("ratio"), Some("per_unit"))
        );
        let route_total = bom(json!({"routeDeliverableId": OWNER, "quantity": 2})).unwrap();
        assert_eq!(route_total["mode"], "total");
        let order = bom(json!({"orderDeliverableId": OWNER, "quantity": 4})).unwrap();
        assert_eq!(
            (order["mode"].as_str(), order["scaling"].as_str()),
            (Some("total"), Some("per_order"))
        );
        let project = bom(json!({"projectId": OWNER, "quantity": 4})).unwrap();
        assert_eq!(project["scaling"], "per_order");
        assert_eq!(project["source"], "manual");
    }

    #[test]
    fn bom_rules() {
        assert!(bom(json!({"quantity": 1})).is_err(), "no owner");
        assert!(
            bom(json!({"projectId": OWNER, "orderDeliverableId": OWNER, "quantity": 1})).is_err()
        );
        assert!(
            bom(json!({"routeDeliverableId": OWNER})).is_err(),
            "route needs a figure"
        );
        assert!(
            bom(json!({"orderDeliverableId": OWNER})).is_err(),
            "order needs quantity"
        );
        assert!(bom(json!({"orderDeliverableId": OWNER, "quantity": 0})).is_err());
        assert!(bom(json!({"routeDeliverableId": OWNER, "mode": "ratio", "quantity": 3})).is_err());
        assert!(
            bom(json!({"routeDeliverableId": OWNER, "mode": "total", "outputPerUnit": 3})).is_err()
        );
        assert!(
            bom(json!({"routeDeliverableId": OWNER, "mode": "ratio", "scaling": "per_order", "outputPerUnit": 1}))
                .is_err()
        );
        assert!(bom(json!({"projectId": OWNER, "scaling": "per_unit", "quantity": 1})).is_err());
        assert!(
            bom(json!({"orderDeliverableId": OWNER, "scaling": "per_unit", "quantity": 1})).is_ok()
        );
        let ratio_order = bom(
            json!({"orderDeliverableId": OWNER, "mode": "ratio", "outputPerUnit": 1, "quantity": 2}),
        );
        assert_eq!(ratio_order.unwrap()["scaling"], "per_unit");
    }

    #[test]
    fn placements_are_phases_stages_or_steps_inside_the_owner() {
        let order_id = Uuid::from_u128(7);
        let order = Owner::Order(order_id);
        for t in PLACEMENT_TYPES {
            assert!(check_placement(order, t, Some(order_id)).is_ok(), "{t}");
        }
        let err = check_placement(order, DeliverableType::Order, None).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("placedOnDeliverableId"));
        assert!(check_placement(order, DeliverableType::Phase, Some(Uuid::from_u128(8))).is_err());
        assert!(check_placement(order, DeliverableType::Overhead, Some(order_id)).is_err());
        let route = Owner::Route(order_id);
        assert!(check_placement(route, DeliverableType::Stage, Some(order_id)).is_ok());
        assert!(
            check_placement(
                Owner::Project(order_id),
                DeliverableType::Phase,
                Some(order_id)
            )
            .is_err()
        );
        let project_line =
            bom(json!({"projectId": OWNER, "quantity": 1, "placedOnDeliverableId": OWNER}));
        assert_eq!(
            project_line.unwrap_err()[0].field.as_deref(),
            Some("placedOnDeliverableId")
        );
        assert!(
            bom(
                json!({"orderDeliverableId": OWNER, "quantity": 1, "placedOnDeliverableId": OWNER})
            )
            .is_ok()
        );
    }

    proptest! {
        /// A placement is accepted exactly for a placement type inside the owner.
        #[test]
        fn placement_needs_type_and_owner(t in 0usize..9, inside in any::<bool>(), route in any::<bool>()) {
            let kind = DeliverableType::ALL[t];
            let owner_id = Uuid::from_u128(1);
            let owner = if route { Owner::Route(owner_id) } else { Owner::Order(owner_id) };
            let root = if inside { Some(owner_id) } else { Some(Uuid::from_u128(2)) };
            let ok = check_placement(owner, kind, root).is_ok();
            prop_assert_eq!(ok, inside && PLACEMENT_TYPES.contains(&kind));
        }

        #[test]
        fn normalized_route_lines_with_a_positive_figure_are_valid(
            per_unit in proptest::option::of(0.001f64..1e6),
            quantity in proptest::option::of(0.001f64..1e6),
        ) {
            prop_assume!(per_unit.is_some() || quantity.is_some());
            let result = bom(json!({"routeDeliverableId": OWNER, "outputPerUnit": per_unit, "quantity": quantity}));
            prop_assert!(result.is_ok(), "{:?}", result);
        }

        #[test]
        fn defaults_complete_any_consistent_choice(owner in 0usize..3, mode in 0usize..3, scaling in 0usize..3) {
            let owner_field = ["routeDeliverableId", "orderDeliverableId", "projectId"][owner];
            let mut fields = json!({owner_field: OWNER, "outputPerUnit": 1, "quantity": 1});
            if let Some(m) = [None, Some("ratio"), Some("total")][mode] { fields["mode"] = json!(m); }
            if let Some(s) = [None, Some("per_unit"), Some("per_order")][scaling] { fields["scaling"] = json!(s); }
            // A combination the caller did not fully choose is always made valid by the defaults.
            let contradictory = owner == 2 && (mode == 1 || scaling == 1);
            if (mode == 0 || scaling == 0) && !contradictory {
                let out = bom(fields);
                prop_assert!(out.is_ok(), "{:?}", out);
            }
        }
    }
}
