//! Deliverables (spec 2.1, 3.1): the work tree of orders, routes, phases, stages and steps.
//!
//! The raw `/deliverable` endpoints do not enforce the concept rules (nesting, stage linkage,
//! required data); [`allowed_parent`] and [`Deliverable::concept_violations`] hold those rules
//! for the concept-aware endpoints (decisions.md section 5).

use std::fmt;

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::common::{default_one, require_nonempty, trim};
use crate::resource::{Archive, Record, ResourceDesc};
use crate::violation::Violation;

/// The nine concepts one deliverable model implements, by its `type` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeliverableType {
    /// Root: production ticket for a project; the only type with `schedule` and `progress`.
    Order,
    /// Root: reusable process blueprint applied onto orders, phases or components.
    Route,
    /// Root: indirect-labour leaf; time is tracked through work sessions.
    Overhead,
    /// Root: reusable phase header, applied to a phase.
    TemplatePhase,
    /// Container: groups work under an order, route, phase or component.
    Phase,
    /// Container: quantity-bearing sub-assembly; nests like a phase.
    Component,
    /// Work node: a department work station; links a stage resource via `data.stageId`.
    Stage,
    /// Leaf: unit of work under a stage.
    Step,
    /// Leaf: QC gate under a stage; needs `data.qcTemplateId`.
    Qcstep,
}

impl DeliverableType {
    /// Every type, in the order of the specification's table.
    pub const ALL: [DeliverableType; 9] = [
        DeliverableType::Order,
        DeliverableType::Route,
        DeliverableType::Overhead,
        DeliverableType::TemplatePhase,
        DeliverableType::Phase,
        DeliverableType::Component,
        DeliverableType::Stage,
        DeliverableType::Step,
        DeliverableType::Qcstep,
    ];

    /// The wire spelling (`template-phase`, `qcstep`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            DeliverableType::Order => "order",
            DeliverableType::Route => "route",
            DeliverableType::Overhead => "overhead",
            DeliverableType::TemplatePhase => "template-phase",
            DeliverableType::Phase => "phase",
            DeliverableType::Component => "component",
            DeliverableType::Stage => "stage",
            DeliverableType::Step => "step",
            DeliverableType::Qcstep => "qcstep",
        }
    }

    /// Roots have no parent: order, route, overhead, template-phase.
    pub fn is_root(self) -> bool {
        matches!(
            self,
            DeliverableType::Order
                | DeliverableType::Route
                | DeliverableType::Overhead
                | DeliverableType::TemplatePhase
        )
    }

    /// Containers in the sense of the specification's role column: phase and component.
    pub fn is_container(self) -> bool {
        matches!(self, DeliverableType::Phase | DeliverableType::Component)
    }

    /// Leaves under a stage: step and qcstep.
    pub fn is_leaf(self) -> bool {
        matches!(self, DeliverableType::Step | DeliverableType::Qcstep)
    }
}

impl fmt::Display for DeliverableType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The nesting rules of spec 2.1: whether a `child` may sit under `parent` (`None`: at the top).
///
/// Roots (order, route, overhead, template-phase) have no parent. Phase and component nest under
/// order, route, phase, component and template-phase. Stage nests under order, phase, component,
/// route and template-phase. Step and qcstep nest only under a stage.
pub fn allowed_parent(child: DeliverableType, parent: Option<DeliverableType>) -> bool {
    use DeliverableType::*;
    match (child, parent) {
        (child, None) => child.is_root(),
        (Order | Route | Overhead | TemplatePhase, Some(_)) => false,
        (Phase | Component | Stage, Some(parent)) => {
            matches!(parent, Order | Route | Phase | Component | TemplatePhase)
        }
        (Step | Qcstep, Some(parent)) => parent == Stage,
    }
}

/// Progress status of an order (spec 3.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProgressStatus {
    /// Not yet ready to start.
    #[default]
    Waiting,
    /// Ready to start.
    Todo,
    /// Work in progress.
    Wip,
    /// Being reworked; sets `hasBeenReworked`.
    Rework,
    /// Put on hold.
    OnHold,
    /// Completed; sets `completedAt`.
    Done,
}

/// The alert of a deliverable, highest priority first: on-hold, late, at-risk, no-risk.
///
/// The derived order follows the priority, so the `max` of several alerts is the one shown.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    ToSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum AlertType {
    /// Nothing to report.
    #[default]
    NoRisk,
    /// At risk of being late.
    AtRisk,
    /// Late.
    Late,
    /// On hold.
    OnHold,
}

impl AlertType {
    /// `computed.alertTypeOrdinal`: 0 no-risk, 1 at-risk, 2 late, 3 on-hold.
    pub fn ordinal(self) -> i64 {
        match self {
            AlertType::NoRisk => 0,
            AlertType::AtRisk => 1,
            AlertType::Late => 2,
            AlertType::OnHold => 3,
        }
    }
}

/// The schedule of an order; written only as an effect of the schedule actions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Schedule {
    /// Scheduled start.
    #[serde(with = "crate::time::iso")]
    pub start_date: DateTime<Utc>,
    /// Scheduled end.
    #[serde(with = "crate::time::iso")]
    pub end_date: DateTime<Utc>,
}

/// The progress of an order (spec 2.1 `progress`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Progress {
    /// Progress status.
    pub status: ProgressStatus,
    /// Completed quantity.
    pub completed: f64,
    /// Work-in-progress quantity.
    pub wip: f64,
    /// 0 to 100.
    #[schema(minimum = 0, maximum = 100)]
    pub percentage: f64,
    /// When work first started.
    #[serde(default, with = "crate::time::iso_opt")]
    pub started_at: Option<DateTime<Utc>>,
    /// When it reached done.
    #[serde(default, with = "crate::time::iso_opt")]
    pub completed_at: Option<DateTime<Utc>>,
    /// Server-managed; becomes true on entering rework and stays true.
    pub has_been_reworked: bool,
    /// Server-managed; user who last updated progress; null for waiting transitions.
    pub updated_by_id: Option<Uuid>,
    /// Server-managed; null for waiting transitions.
    #[serde(default, with = "crate::time::iso_opt")]
    pub updated_at: Option<DateTime<Utc>>,
}

/// Server-computed facts about a deliverable (spec 2.1 `computed`, read-only).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Computed {
    /// Type of the root.
    pub root_type: Option<DeliverableType>,
    /// Name breadcrumb from the root.
    pub full_name: Vec<String>,
    /// ID breadcrumb from the root.
    pub full_path: Vec<String>,
    /// Resolved shop.
    pub shop_id: Option<Uuid>,
    /// Phase names in the ancestry.
    pub phases_path: Vec<String>,
    /// Nearest phase name.
    pub phase: Option<String>,
    /// Summary of the direct children, in sibling order.
    pub current_children: Vec<ChildSummary>,
    /// All stage IDs under the node.
    pub contained_stage_ids: Vec<Uuid>,
    /// All phase names under the node.
    pub contained_phase_names: Vec<String>,
    /// Stage IDs on the current work frontier.
    pub current_stage_ids: Vec<Uuid>,
    /// Phase names on the current work frontier.
    pub current_phase_names: Vec<String>,
    /// All workers assigned under the node.
    pub combined_worker_ids: Vec<Uuid>,
    /// All tag IDs under the node.
    pub combined_tag_ids: Vec<String>,
    /// True if the node has no children.
    pub is_leaf: bool,
    /// Workers directly assigned.
    pub worker_ids: Vec<Uuid>,
    /// Tags on this deliverable.
    pub tags: Vec<String>,
    /// Project of the deliverable.
    pub project_id: Option<Uuid>,
    /// Effective date.
    pub date: Option<String>,
    /// At risk of being late.
    pub is_at_risk: bool,
    /// Late.
    pub is_late: bool,
    /// Effective due date.
    pub effective_due_date: Option<String>,
    /// The effective due date comes from an ancestor.
    pub effective_due_date_is_inherited: bool,
    /// The effective due date has passed.
    pub effective_due_date_is_late: bool,
    /// Highest-priority alert.
    pub alert_type: AlertType,
    /// Ordinal of `alertType` (see [`AlertType::ordinal`]).
    pub alert_type_ordinal: i64,
    /// When the effective due date passes (a date alone: the end of that day in UTC), as
    /// `YYYY-MM-DDTHH:MM:SSZ`; inherited with it. `effectiveDueDateIsLate` is derived from it
    /// at every read (`crate::alerts`).
    pub effective_due_at: Option<String>,
    /// From when the node or a node below it is late; null if nothing can become late.
    /// `isLate` and `alertType` are derived from it at every read.
    pub late_at: Option<String>,
    /// Until when the node or a node below it is at risk; null if none is. `isAtRisk` and
    /// `alertType` are derived from it at every read.
    pub at_risk_until: Option<String>,
}

/// One entry of `computed.currentChildren`: a direct child of the node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ChildSummary {
    /// The child's id.
    pub id: Uuid,
    /// Its name.
    pub name: String,
    /// Its type.
    #[serde(rename = "type")]
    pub kind: DeliverableType,
    /// Its progress status (`todo` without progress).
    pub status: ProgressStatus,
    /// Its progress percentage (0 without progress).
    pub percentage: f64,
}

/// A node of the work tree; its `type` says which concept it implements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deliverable {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// Human identifier; the server generates one when empty.
    #[serde(default)]
    pub identifier: String,
    /// Display name; required.
    #[schema(pattern = r"\S")]
    pub name: String,
    /// The concept this node implements.
    #[serde(rename = "type")]
    pub kind: DeliverableType,
    /// Default 1.
    #[serde(default = "default_one")]
    #[serde(deserialize_with = "crate::number::whole")]
    #[schema(minimum = 0)]
    pub quantity: i64,
    /// Parent deliverable.
    #[serde(default)]
    pub parent_id: Option<Uuid>,
    /// Root of the hierarchy; server-managed.
    #[serde(default)]
    pub root_parent_id: Option<Uuid>,
    /// Template it was created from.
    #[serde(default)]
    pub origin_template_id: Option<Uuid>,
    /// Cycle time in seconds.
    #[serde(default)]
    #[serde(deserialize_with = "crate::number::whole")]
    #[schema(minimum = 0)]
    pub cycle_time_sec: i64,
    /// Duration in seconds.
    #[serde(default)]
    #[serde(deserialize_with = "crate::number::whole")]
    #[schema(minimum = 0)]
    pub duration_sec: i64,
    /// Crew size; default 1.
    #[serde(default = "default_one")]
    #[serde(deserialize_with = "crate::number::whole")]
    #[schema(minimum = 0)]
    pub people_num: i64,
    /// Extensible key-value store: `stageId`, `qcTemplateId`, `properties`.
    #[serde(default)]
    pub data: Map<String, Value>,
    /// Cost code.
    #[serde(default)]
    pub cost_code: Option<String>,
    /// Only on orders; written by the schedule actions.
    #[serde(default)]
    pub schedule: Option<Schedule>,
    /// Only on orders.
    #[serde(default)]
    pub progress: Option<Progress>,
    /// Server-computed facts.
    #[serde(default)]
    pub computed: Computed,
    /// Archived by DELETE, restored by PATCH `{ "isArchived": false }`.
    #[serde(default)]
    pub is_archived: bool,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for Deliverable {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["name", "identifier"],
        archive: Archive::OnDelete,
        read_only: &["rootParentId", "schedule", "computed"],
        summary: "Deliverables: the work tree of orders, routes, phases, stages and steps",
        ..ResourceDesc::new("deliverable", "deliverable", "Deliverable")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
        trim(&mut self.identifier);
    }

    /// Field sanity only; the concept rules are not enforced by the raw endpoints.
    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "name", &self.name);
        for (field, value) in [
            ("quantity", self.quantity),
            ("cycleTimeSec", self.cycle_time_sec),
            ("durationSec", self.duration_sec),
            ("peopleNum", self.people_num),
        ] {
            if value < 0 {
                v.push(Violation::field(
                    field,
                    format!("{field} must not be negative"),
                ));
            }
        }
        if let Some(progress) = &self.progress
            && !(0.0..=100.0).contains(&progress.percentage)
        {
            v.push(Violation::field(
                "progress.percentage",
                "percentage must be between 0 and 100",
            ));
        }
        v
    }

    /// A deliverable's identifier is generated when a create leaves it blank (omitted, null or
    /// only whitespace), and kept when an update does; a PATCH of `data: null` leaves the data
    /// as it is (its keys merge).
    #[cfg(feature = "openapi")]
    fn refine_form(form: crate::openapi::Form, schema: &mut Value) {
        let Some(props) = schema.get_mut("properties") else {
            return;
        };
        if form == crate::openapi::Form::Patch && props.get("data").is_some() {
            let data = props["data"].take();
            props["data"] = serde_json::json!({ "anyOf": [data, { "type": "null" }] });
        }
        if let Some(identifier) = props.get_mut("identifier") {
            // The length the form already carries: what the database indexes.
            let max = identifier["maxLength"].take();
            *identifier = serde_json::json!({
                "type": ["string", "null"],
                "maxLength": max,
                "description": "readable and unique in the organization; generated (docs/deliverables.md) when a create leaves it blank, kept when an update does"
            });
        }
    }
}

impl Deliverable {
    /// The concept rules of spec 2.1 that the concept-aware endpoints enforce, given the type of
    /// the parent (`None` when `parentId` is null): valid nesting, `data.stageId` on stages,
    /// `data.qcTemplateId` on qcsteps, and `schedule`/`progress` only on orders.
    pub fn concept_violations(&self, parent: Option<DeliverableType>) -> Vec<Violation> {
        let mut v = Vec::new();
        if !allowed_parent(self.kind, parent) {
            let message = match parent {
                None => format!("a {} must have a parent", self.kind),
                Some(parent) if self.kind.is_root() => {
                    format!(
                        "a {} is a root and cannot be placed under a {parent}",
                        self.kind
                    )
                }
                Some(parent) => format!("a {} cannot be placed under a {parent}", self.kind),
            };
            v.push(Violation::field("parentId", message));
        }
        let required_data = match self.kind {
            DeliverableType::Stage => Some("stageId"),
            DeliverableType::Qcstep => Some("qcTemplateId"),
            _ => None,
        };
        if let Some(key) = required_data {
            let linked = self
                .data
                .get(key)
                .and_then(Value::as_str)
                .is_some_and(|s| Uuid::parse_str(s).is_ok());
            if !linked {
                v.push(Violation::field(
                    format!("data.{key}"),
                    format!("a {} needs data.{key} (a UUID)", self.kind),
                ));
            }
        }
        if self.kind != DeliverableType::Order {
            if self.schedule.is_some() {
                v.push(Violation::field("schedule", "only an order has a schedule"));
            }
            if self.progress.is_some() {
                v.push(Violation::field("progress", "only an order has progress"));
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::{check, parse};
    use DeliverableType::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn type_spellings_round_trip() {
        for t in DeliverableType::ALL {
            let wire = serde_json::to_value(t).unwrap();
            assert_eq!(wire, json!(t.as_str()));
            assert_eq!(serde_json::from_value::<DeliverableType>(wire).unwrap(), t);
        }
        assert_eq!(
            serde_json::to_value(ProgressStatus::OnHold).unwrap(),
            json!("on-hold")
        );
        assert_eq!(
            serde_json::to_value(AlertType::AtRisk).unwrap(),
            json!("at-risk")
        );
    }

    #[test]
    fn roles() {
        let roots: Vec<_> = DeliverableType::ALL
            .into_iter()
            .filter(|t| t.is_root())
            .collect();
        assert_eq!(roots, [Order, Route, Overhead, TemplatePhase]);
        let containers: Vec<_> = DeliverableType::ALL
            .into_iter()
            .filter(|t| t.is_container())
            .collect();
        assert_eq!(containers, [Phase, Component]);
    }

    #[test]
    fn nesting_rules() {
        for root in [Order, Route, Overhead, TemplatePhase] {
            assert!(allowed_parent(root, None));
            assert!(!allowed_parent(root, Some(Order)));
        }
        for child in [Phase, Component] {
            for parent in [Order, Route, Phase, Component, TemplatePhase] {
                assert!(
                    allowed_parent(child, Some(parent)),
                    "{child} under {parent}"
                );
            }
            for parent in [Overhead, Stage, Step, Qcstep] {
                assert!(
                    !allowed_parent(child, Some(parent)),
                    "{child} under {parent}"
                );
            }
            assert!(!allowed_parent(child, None));
        }
        assert!(allowed_parent(Stage, Some(Component)));
        assert!(!allowed_parent(Stage, Some(Stage)));
        assert!(!allowed_parent(Stage, Some(Overhead)));
        for leaf in [Step, Qcstep] {
            assert!(allowed_parent(leaf, Some(Stage)));
            assert!(!allowed_parent(leaf, Some(Phase)));
            assert!(!allowed_parent(leaf, Some(Step)));
            assert!(!allowed_parent(leaf, None));
        }
    }

    #[test]
    fn alert_ordinals_follow_priority() {
        let alerts = [
            AlertType::NoRisk,
            AlertType::AtRisk,
            AlertType::Late,
            AlertType::OnHold,
        ];
        for (i, a) in alerts.iter().enumerate() {
            assert_eq!(a.ordinal(), i as i64);
        }
        assert_eq!(alerts.iter().max(), Some(&AlertType::OnHold));
    }

    #[test]
    fn defaults_fill_in() {
        let out = check::<Deliverable>(json!({"name": " Order 1 ", "type": "order"})).unwrap();
        assert_eq!(out["name"], "Order 1");
        assert_eq!(out["quantity"], 1);
        assert_eq!(out["peopleNum"], 1);
        assert_eq!(out["identifier"], "");
        assert_eq!(out["data"], json!({}));
        assert_eq!(out["schedule"], Value::Null);
        assert_eq!(out["computed"]["alertType"], "no-risk");
        assert_eq!(out["computed"]["fullName"], json!([]));
    }

    #[test]
    fn raw_validation() {
        assert!(check::<Deliverable>(json!({"name": "  ", "type": "step"})).is_err());
        assert!(
            check::<Deliverable>(json!({"name": "a", "type": "step", "quantity": -1})).is_err()
        );
        assert!(check::<Deliverable>(json!({"name": "a", "type": "bogus"})).is_err());
        let bad_progress =
            json!({"name": "a", "type": "order", "progress": {"status": "wip", "percentage": 101}});
        assert!(check::<Deliverable>(bad_progress).is_err());
        // The raw endpoints do not enforce nesting or stage linkage.
        assert!(check::<Deliverable>(json!({"name": "a", "type": "stage"})).is_ok());
    }

    #[test]
    fn concept_rules() {
        let stage: Deliverable = parse(json!({"name": "s", "type": "stage"}));
        assert_eq!(stage.concept_violations(Some(Order)).len(), 1);
        let stage: Deliverable = parse(
            json!({"name": "s", "type": "stage", "data": {"stageId": "00000000-0000-4000-8000-000000000009"}}),
        );
        assert!(stage.concept_violations(Some(Phase)).is_empty());
        assert_eq!(stage.concept_violations(Some(Step)).len(), 1);
        let step: Deliverable = parse(json!({"name": "s", "type": "step", "progress": {}}));
        assert_eq!(step.concept_violations(Some(Stage)).len(), 1);
        let order: Deliverable =
            parse(json!({"name": "o", "type": "order", "progress": {"status": "on-hold"}}));
        assert!(order.concept_violations(None).is_empty());
    }

    proptest! {
        #[test]
        fn only_roots_live_at_the_top(i in 0usize..9) {
            let t = DeliverableType::ALL[i];
            prop_assert_eq!(allowed_parent(t, None), t.is_root());
        }

        #[test]
        fn leaves_and_overhead_hold_nothing(i in 0usize..9, j in 0usize..9) {
            let (child, parent) = (DeliverableType::ALL[i], DeliverableType::ALL[j]);
            if parent.is_leaf() || parent == Overhead {
                prop_assert!(!allowed_parent(child, Some(parent)));
            }
            if child.is_root() {
                prop_assert!(!allowed_parent(child, Some(parent)));
            }
        }
    }
}
