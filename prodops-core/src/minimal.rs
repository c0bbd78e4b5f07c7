//! The resources the specification names without fields (spec 2.16, decisions.md section 5),
//! with minimal fields: items, locations, shops, stages, units of measure, teams, projects,
//! codes, dependencies, comments and notes (timesheets: `timesheet`).

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::common::{default_true, require_nonempty, trim, trim_opt};
use crate::lot::Tracking;
use crate::resource::{Archive, Record, ResourceDesc};
use crate::units::UnitConversion;
use crate::violation::Violation;

/// Defines an archivable resource identified by a required `name` (trimmed, nonempty), archived
/// by DELETE with an `archivedAt` timestamp: the wire struct with the common fields plus the
/// given ones, and its `Record` implementation.
macro_rules! named_resource {
    (
        $(#[$meta:meta])*
        $ty:ident at ($path:literal, $table:literal, $permission:literal),
        search: $search:expr,
        summary: $summary:literal,
        $(rules: $rules:path,)?
        fields: { $( $(#[$field_meta:meta])* $field:ident: $field_ty:ty, )* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
        #[serde(rename_all = "camelCase", deny_unknown_fields)]
        pub struct $ty {
            /// Record id.
            pub id: Uuid,
            /// Owning organization, from the API key.
            pub organization_id: Uuid,
            /// Display name; required.
            #[schema(pattern = r"\S")]
            pub name: String,
            $( $(#[$field_meta])* pub $field: $field_ty, )*
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

        impl Record for $ty {
            const DESC: ResourceDesc = ResourceDesc {
                search_columns: $search,
                archive: Archive::OnDelete,
                archived_at: true,
                summary: $summary,
                ..ResourceDesc::new($path, $table, $permission)
            };

            fn normalize(&mut self) {
                trim(&mut self.name);
            }

            fn validate(&self) -> Vec<Violation> {
                let mut v = Vec::new();
                require_nonempty(&mut v, "name", &self.name);
                $($rules(self, &mut v);)?
                v
            }
        }
    };
}

named_resource! {
    /// A stocked or produced item.
    Item at ("item", "item", "Item"),
    search: &["name", "sku"],
    summary: "Items: materials and products",
    rules: item_rules,
    fields: {
        /// Stock-keeping unit.
        #[serde(default)]
        sku: Option<String>,
        /// Base unit of the item's quantities.
        #[serde(default)]
        unit_measure_id: Option<Uuid>,
        /// Where the item is drawn from or stored by default.
        #[serde(default)]
        default_location_id: Option<Uuid>,
        /// Description.
        #[serde(default)]
        description: Option<String>,
        /// Per-item conversions to `unitMeasureId` (a box of this item is 12): they win over
        /// the units' own declarations (docs/inventory.md, "Units of measure").
        #[serde(default)]
        unit_conversions: Vec<UnitConversion>,
        /// How the item's stock is identified: `none` (the default), by `lot` or by `serial`
        /// (docs/inventory.md, "Lots and serials").
        #[serde(default)]
        tracking: Tracking,
    }
}

fn item_rules(item: &Item, v: &mut Vec<Violation>) {
    crate::units::check_item_conversions(item.unit_measure_id, &item.unit_conversions, v);
}

fn unit_rules(unit: &UnitMeasure, v: &mut Vec<Violation>) {
    crate::units::check_unit_declaration(unit.id, unit.base_unit_measure_id, unit.factor, v);
}

named_resource! {
    /// A stock location; it belongs to one shop.
    Location at ("location", "location", "Location"),
    search: &["name"],
    summary: "Locations: where stock is kept, each in one shop",
    fields: {
        /// The shop (department) the location belongs to.
        shop_id: Uuid,
    }
}

named_resource! {
    /// A shop, the specification's "department".
    Shop at ("shop", "shop", "Shop"),
    search: &["name"],
    summary: "Shops: departments",
    fields: {}
}

named_resource! {
    /// A department work station that stage deliverables link through `data.stageId`.
    Stage at ("stage", "stage", "Stage"),
    search: &["name"],
    summary: "Stages: department work stations",
    fields: {
        /// The shop the stage belongs to.
        #[serde(default)]
        shop_id: Option<Uuid>,
    }
}

named_resource! {
    /// A unit of measure.
    UnitMeasure at ("unit-measure", "unit_measure", "UnitMeasure"),
    search: &["name"],
    summary: "Units of measure, each optionally a multiple of a base unit",
    rules: unit_rules,
    fields: {
        /// Short symbol (`kg`, `ft`).
        #[serde(default)]
        symbol: Option<String>,
        /// The unit this one is a multiple of (`each` for a box); with `factor`.
        #[serde(default)]
        base_unit_measure_id: Option<Uuid>,
        /// How many `baseUnitMeasureId` one of this unit is (12 for a box of 12 each).
        #[serde(default)]
        #[schema(exclusive_minimum = 0, maximum = 1_000_000_000)]
        factor: Option<f64>,
    }
}

named_resource! {
    /// A team of workers.
    Team at ("team", "team", "Team"),
    search: &["name"],
    summary: "Teams of workers",
    fields: {}
}

named_resource! {
    /// A customer project that orders are produced for.
    Project at ("project", "project", "Project"),
    search: &["name", "identifier"],
    summary: "Projects: what orders are produced for",
    fields: {
        /// Human identifier.
        #[serde(default)]
        identifier: String,
    }
}

/// A code of the organization's code list (cost codes and the like).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Code {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The code; required, trimmed.
    #[schema(pattern = r"\S")]
    pub code: String,
    /// Human-readable meaning.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether the code is offered for new records.
    #[serde(default = "default_true")]
    pub is_active: bool,
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

impl Record for Code {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["code", "description"],
        archive: Archive::OnDelete,
        archived_at: true,
        summary: "Codes: the organization's code list",
        ..ResourceDesc::new("code", "code", "Code")
    };

    fn normalize(&mut self) {
        trim(&mut self.code);
        trim_opt(&mut self.description);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "code", &self.code);
        v
    }
}

/// A finish-to-start link between two deliverables under the same root (cycles are refused by
/// the server, which sees the whole graph).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Dependency {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The deliverable that finishes first.
    pub predecessor_id: Uuid,
    /// The deliverable that starts after it.
    pub successor_id: Uuid,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for Dependency {
    const DESC: ResourceDesc = ResourceDesc {
        summary: "Dependencies: finish-to-start links between deliverables",
        ..ResourceDesc::new("dependency", "dependency", "Dependency")
    };

    fn validate(&self) -> Vec<Violation> {
        if self.predecessor_id == self.successor_id {
            return vec![Violation::field(
                "successorId",
                "a deliverable cannot depend on itself",
            )];
        }
        Vec::new()
    }
}

/// A comment in a channel or on a deliverable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Comment {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The channel commented in.
    #[serde(default)]
    pub channel_id: Option<Uuid>,
    /// The deliverable commented on.
    #[serde(default)]
    pub deliverable_id: Option<Uuid>,
    /// The text; required.
    #[schema(pattern = r"\S")]
    pub body: String,
    /// The author; set by the server.
    #[serde(default)]
    pub author_app_user_id: Option<Uuid>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for Comment {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["body"],
        read_only: &["authorAppUserId"],
        summary: "Comments in channels and on deliverables",
        ..ResourceDesc::new("comment", "comment", "Comment")
    };

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "body", &self.body);
        v
    }
}

/// A note on a deliverable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Note {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The deliverable noted on.
    #[serde(default)]
    pub deliverable_id: Option<Uuid>,
    /// The text; required.
    #[schema(pattern = r"\S")]
    pub body: String,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for Note {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["body"],
        summary: "Notes on deliverables",
        ..ResourceDesc::new("note", "note", "Note")
    };

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "body", &self.body);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;
    use serde_json::{Value, json};

    #[test]
    fn named_resources_trim_and_require_a_name() {
        let out = check::<Shop>(json!({"name": " Weld "})).unwrap();
        assert_eq!(out["name"], "Weld");
        assert_eq!(out["isArchived"], false);
        assert_eq!(out["archivedAt"], Value::Null);
        assert!(check::<Team>(json!({"name": "  "})).is_err());
        assert!(
            check::<Location>(json!({"name": "Rack A"})).is_err(),
            "shopId is required"
        );
        let item = check::<Item>(json!({"name": "Bolt", "sku": "B-1"})).unwrap();
        assert_eq!(item["unitMeasureId"], Value::Null);
        assert_eq!(item["tracking"], "none");
        let serial = check::<Item>(json!({"name": "Pump", "tracking": "serial"})).unwrap();
        assert_eq!(serial["tracking"], "serial");
        assert!(check::<Item>(json!({"name": "Pump", "tracking": "batch"})).is_err());
        assert_eq!(
            check::<Project>(json!({"name": "P"})).unwrap()["identifier"],
            ""
        );
    }

    #[test]
    fn other_rules() {
        let id = "00000000-0000-4000-8000-000000000031";
        assert!(check::<Dependency>(json!({"predecessorId": id, "successorId": id})).is_err());
        assert!(check::<Comment>(json!({"body": " "})).is_err());
        assert!(check::<Note>(json!({"body": "ok"})).is_ok());
        let code = check::<Code>(json!({"code": " C1 "})).unwrap();
        assert_eq!(
            (code["code"].as_str(), code["isActive"].as_bool()),
            (Some("C1"), Some(true))
        );
    }
}
