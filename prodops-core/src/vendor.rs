//! Vendors (spec 2.5, 3.4): suppliers, manufacturers and subcontractors.

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::common::{require_nonempty, trim, trim_opt};
use crate::resource::{Archive, Record, ResourceDesc};
use crate::violation::Violation;

/// What a vendor does for the organization.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum VendorType {
    /// Sells materials.
    #[default]
    Supplier,
    /// Makes parts.
    Manufacturer,
    /// Does work on the organization's behalf.
    Subcontractor,
}

/// Whether a vendor is in use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum VendorStatus {
    /// In use.
    #[default]
    Active,
    /// Not in use.
    Inactive,
}

/// Country of a vendor's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum Country {
    /// `US`: United States.
    Us,
    /// `CA`: Canada.
    Ca,
}

/// A supplier, manufacturer or subcontractor; its contacts link to it by `vendorId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Vendor {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// Display name; required.
    #[schema(pattern = r"\S")]
    pub name: String,
    /// Human identifier.
    #[serde(default)]
    pub identifier: String,
    /// Short code.
    #[serde(default)]
    pub code: Option<String>,
    /// What the vendor does.
    #[serde(rename = "type", default)]
    pub kind: VendorType,
    /// Whether the vendor is in use.
    #[serde(default)]
    pub status: VendorStatus,
    /// Web site.
    #[serde(default)]
    pub website: Option<String>,
    /// Address, first line.
    #[serde(default)]
    pub address_line1: Option<String>,
    /// Address, second line.
    #[serde(default)]
    pub address_line2: Option<String>,
    /// City.
    #[serde(default)]
    pub city: Option<String>,
    /// State or province.
    #[serde(default)]
    pub state_or_province: Option<String>,
    /// Postal code.
    #[serde(default)]
    pub postal_code: Option<String>,
    /// `US` or `CA`.
    #[serde(default)]
    pub country: Option<Country>,
    /// Usual lead time in days; not negative.
    #[serde(default)]
    #[serde(deserialize_with = "crate::number::whole_opt")]
    #[schema(minimum = 0)]
    pub default_lead_time_days: Option<i64>,
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

impl Record for Vendor {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["name", "code", "identifier"],
        archive: Archive::OnDelete,
        archived_at: true,
        summary: "Vendors: suppliers, manufacturers and subcontractors",
        ..ResourceDesc::new("vendor", "vendor", "Vendor")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
        trim(&mut self.identifier);
        trim_opt(&mut self.code);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "name", &self.name);
        if self.default_lead_time_days.is_some_and(|d| d < 0) {
            v.push(Violation::field(
                "defaultLeadTimeDays",
                "defaultLeadTimeDays must not be negative",
            ));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;
    use serde_json::json;

    #[test]
    fn defaults_and_rules() {
        let out = check::<Vendor>(
            json!({"name": " Acme ", "addressLine1": "1 Main St", "country": "CA"}),
        )
        .unwrap();
        assert_eq!(out["name"], "Acme");
        assert_eq!(out["type"], "supplier");
        assert_eq!(out["status"], "active");
        assert_eq!(out["addressLine1"], "1 Main St");
        assert_eq!(out["defaultLeadTimeDays"], Value::Null);
        assert!(check::<Vendor>(json!({"name": " "})).is_err());
        assert!(check::<Vendor>(json!({"name": "a", "country": "MX"})).is_err());
        assert!(check::<Vendor>(json!({"name": "a", "defaultLeadTimeDays": -1})).is_err());
        assert!(check::<Vendor>(json!({"name": "a", "defaultLeadTimeDays": 0})).is_ok());
        assert!(
            check::<Vendor>(json!({"name": "a", "type": "subcontractor", "status": "inactive"}))
                .is_ok()
        );
    }
}
