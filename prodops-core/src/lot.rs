//! Lots and serial numbers (issue 37): how an item is tracked, and the `/lot` resource.
//!
//! A lot is a batch of one item that is traced as one: received under a supplier's lot code,
//! produced by one order, shipped to one customer. A serial is a lot of which at most one unit
//! exists ([`Tracking::Serial`]). The rules of postings that name lots (which lots a consume
//! takes, a serial never on hand twice, reversals, the freeze date, the trace) are in
//! [`crate::lot_rules`].

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::common::{require_nonempty, trim, trim_opt};
use crate::resource::{Archive, Record, ResourceDesc, UniqueKey};
use crate::violation::Violation;

/// How an item's stock is identified: not at all, by lot, or by serial number.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Tracking {
    /// Stock is one quantity per item and location (every item before issue 37).
    #[default]
    None,
    /// Every posting names the lots it moves; stock is kept per lot.
    Lot,
    /// Every posting names serials; a serial's quantity is 0 or 1, and one serial is on hand
    /// at one location at most.
    Serial,
}

impl Tracking {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Tracking::None => "none",
            Tracking::Lot => "lot",
            Tracking::Serial => "serial",
        }
    }

    /// Whether postings of the item must name lots (lot or serial).
    pub fn is_tracked(self) -> bool {
        self != Tracking::None
    }
}

/// The scope custom property definitions name (`deliverableTypes: ["lot"]`) to apply to lots.
pub const PROPERTY_SCOPE: &str = "lot";

/// A lot (or serial) of one item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Lot {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The item this is a lot of (tracked by lot or serial); cannot change once created.
    pub item_id: Uuid,
    /// The lot code or serial number; trimmed, nonempty, unique per item (archived lots
    /// included: a code names one lot for good, as a trace needs).
    #[schema(pattern = r"\S")]
    pub code: String,
    /// When the lot expires; consume takes the first to expire first under FEFO, and flags an
    /// expired lot it takes.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub expires_at: Option<DateTime<Utc>>,
    /// When the lot was made.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub manufactured_at: Option<DateTime<Utc>>,
    /// The supplier's own code for the lot (what a recall notice names).
    #[serde(default)]
    pub vendor_lot_code: Option<String>,
    /// Custom property values, keyed by the keys of definitions scoped to lots
    /// (`deliverableTypes: ["lot"]`); checked like an order's `data.properties`.
    #[serde(default)]
    pub properties: Map<String, Value>,
    /// Archived by DELETE, restored by PATCH `{ "isArchived": false }`; postings keep naming it.
    #[serde(default)]
    pub is_archived: bool,
    /// When the record was archived; kept by the engine.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub archived_at: Option<DateTime<Utc>>,
    /// Creation time (FIFO takes the lot created first).
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Lot {
    /// Whether the lot has expired at `now` (an expiry at exactly `now` has).
    pub fn is_expired(&self, now: DateTime<Utc>) -> bool {
        self.expires_at.is_some_and(|at| at <= now)
    }
}

impl Record for Lot {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["code", "vendorLotCode"],
        archive: Archive::OnDelete,
        archived_at: true,
        unique: &[UniqueKey {
            name: "item_code",
            fields: &["itemId", "code"],
            case_insensitive: false,
            active_only: false,
            message: "this item already has a lot with this code (codes are never reused, archived lots included)",
        }],
        immutable: &["itemId"],
        summary: "Lots and serial numbers of tracked items",
        ..ResourceDesc::new("lot", "lot", "Lot")
    };

    /// A write's `properties` may be null: it clears every value, as `{}` does
    /// (`crate::properties::apply_scoped_properties`).
    #[cfg(feature = "openapi")]
    fn refine_form(_: crate::openapi::Form, schema: &mut Value) {
        if let Some(props) = schema.get_mut("properties")
            && let Some(values) = props.get_mut("properties")
        {
            let object = values.take();
            *values = serde_json::json!({
                "anyOf": [object, { "type": "null" }],
                "description": "custom property values keyed by the key of a definition scoped to lots (`deliverableTypes: [\"lot\"]`); a key no such definition has is refused with 400 naming it; null or {} clears every value, a key set to null clears that value"
            });
        }
    }

    fn normalize(&mut self) {
        trim(&mut self.code);
        trim_opt(&mut self.vendor_lot_code);
        if self.vendor_lot_code.as_deref() == Some("") {
            self.vendor_lot_code = None;
        }
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "code", &self.code);
        if let (Some(made), Some(expires)) = (self.manufactured_at, self.expires_at)
            && expires < made
        {
            v.push(Violation::field(
                "expiresAt",
                "expiresAt must not be before manufacturedAt",
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

    const ITEM: &str = "00000000-0000-4000-8000-000000000001";

    #[test]
    fn tracking_defaults_to_none_and_reads_its_spellings() {
        assert_eq!(Tracking::default(), Tracking::None);
        for t in [Tracking::None, Tracking::Lot, Tracking::Serial] {
            let text = serde_json::to_value(t).unwrap();
            assert_eq!(text, json!(t.as_str()));
            assert_eq!(serde_json::from_value::<Tracking>(text).unwrap(), t);
        }
        assert!(serde_json::from_value::<Tracking>(json!("batch")).is_err());
        assert!(!Tracking::None.is_tracked() && Tracking::Lot.is_tracked());
    }

    #[test]
    fn a_lot_trims_its_code_and_needs_one() {
        let out = check::<Lot>(json!({"itemId": ITEM, "code": " L-4471 ", "vendorLotCode": " "}))
            .unwrap();
        assert_eq!(out["code"], "L-4471");
        assert_eq!(out["vendorLotCode"], Value::Null);
        assert_eq!(out["properties"], json!({}));
        assert_eq!(out["expiresAt"], Value::Null);
        assert_eq!(out["isArchived"], false);
        let err = check::<Lot>(json!({"itemId": ITEM, "code": "  "})).unwrap_err();
        assert_eq!(err[0].field.as_deref(), Some("code"));
        assert!(
            check::<Lot>(json!({"code": "L"})).is_err(),
            "itemId is required"
        );
    }

    #[test]
    fn a_lot_does_not_expire_before_it_is_made() {
        let err = check::<Lot>(json!({
            "itemId": ITEM, "code": "L",
            "manufacturedAt": "2026-05-02T00:00:00Z", "expiresAt": "2026-05-01T00:00:00Z"
        }))
        .unwrap_err();
        assert_eq!(err[0].field.as_deref(), Some("expiresAt"));
        let ok = check::<Lot>(json!({
            "itemId": ITEM, "code": "L",
            "manufacturedAt": "2026-05-01T00:00:00Z", "expiresAt": "2026-05-01T00:00:00Z"
        }));
        assert!(ok.is_ok());
    }

    #[test]
    fn expiry_is_inclusive() {
        let lot: Lot = crate::common::testing::parse(
            json!({"itemId": ITEM, "code": "L", "expiresAt": "2026-05-01T00:00:00Z"}),
        );
        let at = |s: &str| crate::time::parse(s).unwrap();
        assert!(!lot.is_expired(at("2026-04-30T23:59:59Z")));
        assert!(lot.is_expired(at("2026-05-01T00:00:00Z")));
    }
}
