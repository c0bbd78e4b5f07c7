//! Contacts (spec 2.6): people at vendors and elsewhere; deliveries reference them as drivers
//! and receivers.

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::common::{require_nonempty, trim, trim_opt};
use crate::resource::{Archive, Record, ResourceDesc};
use crate::violation::Violation;

/// A person to reach: a supplier contact, a driver, a receiver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Contact {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// Full name; required.
    #[schema(pattern = r"\S")]
    pub name: String,
    /// Human identifier.
    #[serde(default)]
    pub identifier: String,
    /// Email address.
    #[serde(default)]
    pub email: Option<String>,
    /// Phone number.
    #[serde(default)]
    pub phone: Option<String>,
    /// Job title.
    #[serde(default)]
    pub title: Option<String>,
    /// Company the contact works for.
    #[serde(default)]
    pub company_name: Option<String>,
    /// Vendor, for supplier contacts.
    #[serde(default)]
    pub vendor_id: Option<Uuid>,
    /// Role of the contact.
    #[serde(default)]
    pub role: Option<String>,
    /// The primary contact of its vendor.
    #[serde(default)]
    pub is_primary: bool,
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

impl Record for Contact {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &[
            "name",
            "email",
            "phone",
            "title",
            "companyName",
            "identifier",
        ],
        archive: Archive::OnDelete,
        archived_at: true,
        summary: "Contacts: vendor contacts, drivers and receivers",
        ..ResourceDesc::new("contact", "contact", "Contact")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
        trim(&mut self.identifier);
        trim_opt(&mut self.email);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "name", &self.name);
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
        let out = check::<Contact>(json!({"name": "Dee", "companyName": "Acme"})).unwrap();
        assert_eq!(out["isPrimary"], false);
        assert_eq!(out["companyName"], "Acme");
        assert_eq!(out["vendorId"], Value::Null);
        assert!(check::<Contact>(json!({"name": ""})).is_err());
        assert!(check::<Contact>(json!({"name": "a", "company": "x"})).is_err());
    }
}
