//! Catalog entries (spec 2.8): company-configured code lists such as `pay_type`.
//!
//! Records reference an entry by its `code`. Renaming a code queues a background job that
//! rewrites every stored reference with [`rewrite_code`].

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::common::{default_true, eq_ignore_case, trim, trim_opt};
use crate::resource::{Allow, Ops, Record, ResourceDesc, UniqueKey};
use crate::violation::Violation;

/// The pay-type catalog, referenced by `payTypes` of timesheet records.
pub const PAY_TYPE: &str = "pay_type";

/// One code of one catalog.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CatalogEntry {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// Which list the entry belongs to (lowercase snake_case, `pay_type`); cannot change.
    #[schema(pattern = r"^\s*[a-z][a-z0-9_]*\s*$")]
    pub catalog: String,
    /// The value records store; unique within the catalog, case-insensitively; trimmed.
    #[schema(pattern = r"\S")]
    pub code: String,
    /// Human-readable name.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether the entry is offered for new records.
    #[serde(default = "default_true")]
    pub is_active: bool,
    /// Display order; ties break on `code`.
    #[serde(default)]
    #[serde(deserialize_with = "crate::number::whole")]
    pub sort_order: i64,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for CatalogEntry {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["code", "description"],
        // Display order; ties break on code (spec 2.8).
        default_sort: &["sortOrder", "code"],
        ops: Ops {
            bulk_delete: Allow::Forbidden,
            ..Ops::ALL
        },
        unique: &[UniqueKey {
            name: "catalog_code",
            fields: &["catalog", "code"],
            case_insensitive: true,
            active_only: false,
            message: "a code that differs only in case already exists in this catalog",
        }],
        immutable: &["catalog"],
        summary: "Catalog entries: company-configured code lists such as pay types",
        ..ResourceDesc::new("catalog-entry", "catalog_entry", "CatalogEntry")
    };

    fn normalize(&mut self) {
        trim(&mut self.catalog);
        trim(&mut self.code);
        trim_opt(&mut self.description);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        if self.code.is_empty() {
            v.push(Violation::field("code", "code must not be empty"));
        }
        if !is_catalog_name(&self.catalog) {
            v.push(Violation::field(
                "catalog",
                "catalog must be a lowercase snake_case name such as pay_type",
            ));
        }
        v
    }
}

/// Whether `name` is a catalog name: `[a-z][a-z0-9_]*`.
pub fn is_catalog_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Rewrites references to a renamed code: every value equal to `old` ignoring case becomes
/// `new`. A value that would then repeat an earlier one (ignoring case) is dropped, so a list
/// stays free of duplicates. Returns whether `values` changed.
pub fn rewrite_code(values: &mut Vec<String>, old: &str, new: &str) -> bool {
    let mut changed = false;
    for value in values.iter_mut() {
        if eq_ignore_case(value, old) && value != new {
            *value = new.to_string();
            changed = true;
        }
    }
    if changed {
        let mut seen: Vec<String> = Vec::with_capacity(values.len());
        values.retain(|value| {
            let key = value.to_lowercase();
            let fresh = !seen.contains(&key);
            if fresh {
                seen.push(key);
            }
            fresh
        });
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::{check, with_common};
    use crate::resource::{Kind, ResourceKind};
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn entry_rules() {
        let out =
            check::<CatalogEntry>(json!({"catalog": " pay_type ", "code": "  OT  "})).unwrap();
        assert_eq!(out["catalog"], "pay_type");
        assert_eq!(out["code"], "OT");
        assert_eq!(out["isActive"], true);
        assert_eq!(out["sortOrder"], 0);
        assert!(check::<CatalogEntry>(json!({"catalog": "pay_type", "code": "   "})).is_err());
        assert!(check::<CatalogEntry>(json!({"catalog": "PayType", "code": "x"})).is_err());
        assert!(check::<CatalogEntry>(json!({"catalog": "1pay", "code": "x"})).is_err());
        assert!(check::<CatalogEntry>(json!({"catalog": "", "code": "x"})).is_err());
        assert!(check::<CatalogEntry>(json!({"code": "x"})).is_err());
    }

    #[test]
    fn catalog_cannot_change() {
        let kind = Kind::<CatalogEntry>::new();
        let old = with_common(json!({"catalog": "pay_type", "code": "OT"}));
        let mut new = old.clone();
        new["catalog"] = json!("other");
        assert!(kind.check(new, Some(&old)).is_err());
        let mut renamed = old.clone();
        renamed["code"] = json!("OT2");
        assert!(kind.check(renamed, Some(&old)).is_ok());
    }

    #[test]
    fn rewrite_is_case_insensitive() {
        let mut values = vec!["reg".to_string(), "ot".to_string(), "DT".to_string()];
        assert!(rewrite_code(&mut values, "OT", "Overtime"));
        assert_eq!(values, ["reg", "Overtime", "DT"]);
        assert!(!rewrite_code(&mut values, "missing", "x"));
        assert!(
            !rewrite_code(&mut values, "overtime", "Overtime"),
            "already the new spelling"
        );
        assert!(
            rewrite_code(&mut values, "overtime", "OVERTIME"),
            "a change of case is a change"
        );
        assert_eq!(values, ["reg", "OVERTIME", "DT"]);
    }

    #[test]
    fn rewrite_drops_duplicates_it_creates() {
        let mut values = vec!["A".to_string(), "b".to_string(), "B".to_string()];
        assert!(rewrite_code(&mut values, "a", "B"));
        assert_eq!(values, ["B"]);
    }

    proptest! {
        #[test]
        fn rewrite_leaves_no_old_code(
            mut values in proptest::collection::vec("[a-cA-C]{1,2}", 0..8),
            old in "[a-cA-C]{1,2}",
            new in "[d-f]{1,2}",
        ) {
            let before = values.clone();
            let changed = rewrite_code(&mut values, &old, &new);
            prop_assert!(values.iter().all(|v| !eq_ignore_case(v, &old)));
            prop_assert_eq!(changed, before.iter().any(|v| eq_ignore_case(v, &old)));
            prop_assert_eq!(changed, values != before);
            // Values other than the old code are kept, in order.
            let others: Vec<_> = before.iter().filter(|v| !eq_ignore_case(v, &old)).collect();
            let kept: Vec<_> = values.iter().filter(|v| **v != new).collect();
            if changed {
                prop_assert_eq!(kept.len(), values.len() - 1);
            }
            prop_assert!(others.iter().all(|v| values.iter().any(|k| eq_ignore_case(k, v))));
        }

        #[test]
        fn rewrite_is_idempotent(
            mut values in proptest::collection::vec("[a-cA-C]{1,2}", 0..8),
            old in "[a-cA-C]{1,2}",
            new in "[a-f]{1,2}",
        ) {
            rewrite_code(&mut values, &old, &new);
            let once = values.clone();
            prop_assert!(!rewrite_code(&mut values, &old, &new));
            prop_assert_eq!(values, once);
        }
    }
}
