//! Custom property definitions (spec 2.12, 4.9): typed fields that orders carry under
//! `data.properties` (and lots under `properties`, for definitions scoped to lots), keyed by
//! the definition's `key`.

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::common::{eq_ignore_case, require_nonempty, trim, trim_opt};
use crate::resource::{Allow, Archive, Ops, Record, ResourceDesc, UniqueKey};
use crate::violation::Violation;

/// The longest allowed `key` (spec 8).
pub const MAX_KEY_LEN: usize = 64;

/// The type of a custom property's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum DataType {
    /// Free text.
    Text,
    /// A number, optionally with a unit.
    Number,
    /// True or false.
    Boolean,
    /// A date.
    Date,
    /// One option of `options`.
    Select,
    /// Several options of `options`.
    Multiselect,
}

impl DataType {
    /// Whether values are chosen from `options` (select and multiselect).
    pub fn is_select(self) -> bool {
        matches!(self, DataType::Select | DataType::Multiselect)
    }
}

/// What a definition may apply to, one per definition: orders, or lots (issue 37).
pub const SCOPES: [&str; 2] = ["order", crate::lot::PROPERTY_SCOPE];

/// The default `deliverableTypes`: orders.
fn default_deliverable_types() -> Vec<String> {
    vec!["order".to_string()]
}

/// The definition of one custom property.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CustomPropertyDefinition {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// Key of the values under `data.properties`; letters and digits, starting with a letter,
    /// at most 64 characters; immutable; unique case-insensitively, archived definitions included.
    #[schema(pattern = r"^\s*[A-Za-z][A-Za-z0-9]{0,63}\s*$")]
    pub key: String,
    /// Display name; unique case-insensitively among active definitions.
    #[schema(pattern = r"\S")]
    pub name: String,
    /// Human identifier.
    #[serde(default)]
    pub identifier: String,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Type of the values.
    pub data_type: DataType,
    /// What carries the property: `["order"]` (orders, the default) or `["lot"]` (lots).
    #[serde(default = "default_deliverable_types")]
    pub deliverable_types: Vec<String>,
    /// Unit of a number property.
    #[serde(default)]
    pub unit_measure_id: Option<Uuid>,
    /// Options of a select property, in display order; unique case-insensitively.
    #[serde(default)]
    pub options: Vec<String>,
    /// Whether an unknown option is appended to `options` instead of rejected (select only).
    #[serde(default)]
    pub allows_ad_hoc_options: bool,
    /// Display order.
    #[serde(default)]
    #[serde(deserialize_with = "crate::number::whole")]
    pub sort_order: i64,
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

impl Record for CustomPropertyDefinition {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["name", "key", "identifier"],
        archive: Archive::OnDelete,
        archived_at: true,
        ops: Ops {
            bulk_delete: Allow::Forbidden,
            ..Ops::ALL
        },
        unique: &[
            UniqueKey {
                name: "key",
                fields: &["key"],
                case_insensitive: true,
                active_only: false,
                message: "a custom property with this key already exists (keys are never freed)",
            },
            UniqueKey {
                name: "name",
                fields: &["name"],
                case_insensitive: true,
                active_only: true,
                message: "an active custom property with this name already exists",
            },
        ],
        immutable: &["key"],
        summary: "Custom property definitions: typed fields stored on orders",
        ..ResourceDesc::new("custom-property", "custom_property", "CustomProperty")
    };

    fn normalize(&mut self) {
        trim(&mut self.key);
        trim(&mut self.name);
        trim(&mut self.identifier);
        trim_opt(&mut self.description);
        self.options.iter_mut().for_each(trim);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        if let Err(message) = validate_key(&self.key) {
            v.push(Violation::field("key", message));
        }
        require_nonempty(&mut v, "name", &self.name);
        if !SCOPES
            .iter()
            .any(|scope| self.deliverable_types == [*scope])
        {
            v.push(Violation::field(
                "deliverableTypes",
                "deliverableTypes must be [\"order\"] (orders) or [\"lot\"] (lots)",
            ));
        }
        if self.unit_measure_id.is_some() && self.data_type != DataType::Number {
            v.push(Violation::field(
                "unitMeasureId",
                "unitMeasureId is allowed only for number properties",
            ));
        }
        if self.data_type.is_select() {
            for (i, option) in self.options.iter().enumerate() {
                if option.is_empty() {
                    v.push(Violation::field(
                        format!("options[{i}]"),
                        "an option must not be empty",
                    ));
                } else if self.options[..i]
                    .iter()
                    .any(|earlier| eq_ignore_case(earlier, option))
                {
                    v.push(Violation::field(
                        format!("options[{i}]"),
                        format!("option {option:?} is repeated"),
                    ));
                }
            }
        } else {
            if !self.options.is_empty() {
                v.push(Violation::field(
                    "options",
                    "options are allowed only for select and multiselect properties",
                ));
            }
            if self.allows_ad_hoc_options {
                v.push(Violation::field(
                    "allowsAdHocOptions",
                    "allowsAdHocOptions applies only to select and multiselect properties",
                ));
            }
        }
        v
    }

    /// Custom properties are scoped to orders or to lots, one scope per definition.
    #[cfg(feature = "openapi")]
    fn refine_form(_: crate::openapi::Form, schema: &mut serde_json::Value) {
        if let Some(props) = schema.get_mut("properties") {
            props["deliverableTypes"] = serde_json::json!({
                "type": "array",
                "items": { "enum": SCOPES },
                "minItems": 1,
                "maxItems": 1,
                "description": "[\"order\"] (orders, the default) or [\"lot\"] (lots)"
            });
        }
    }
}

impl CustomPropertyDefinition {
    /// Whether the definition's values belong on records of `scope` (`order`, `lot`).
    pub fn applies_to(&self, scope: &str) -> bool {
        self.deliverable_types.iter().any(|t| t == scope)
    }

    /// The option matching `value` case-insensitively, in the definition's own spelling
    /// (spec 4.9 rule 3).
    pub fn matching_option(&self, value: &str) -> Option<&str> {
        let value = value.trim();
        self.options
            .iter()
            .find(|option| eq_ignore_case(option, value))
            .map(String::as_str)
    }
}

/// The rule of a custom property `key`: 1 to 64 characters, ASCII letters and digits only,
/// starting with a letter. Returns the reason when the key breaks it.
pub fn validate_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("key must not be empty".into());
    }
    if !key.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Err("key must start with a letter".into());
    }
    if !key.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err("key may contain only letters and digits".into());
    }
    if key.len() > MAX_KEY_LEN {
        return Err(format!("key must be at most {MAX_KEY_LEN} characters"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::{check, parse};
    use proptest::prelude::*;
    use serde_json::{Value, json};

    #[test]
    fn defaults() {
        let out = check::<CustomPropertyDefinition>(
            json!({"key": "squareFeet", "name": "Square feet", "dataType": "number"}),
        )
        .unwrap();
        assert_eq!(out["deliverableTypes"], json!(["order"]));
        assert_eq!(out["options"], json!([]));
        assert_eq!(out["allowsAdHocOptions"], false);
        assert_eq!(out["identifier"], "");
        assert_eq!(out["description"], Value::Null);
    }

    #[test]
    fn key_rule() {
        assert!(validate_key("a").is_ok());
        assert!(validate_key("squareFeet2").is_ok());
        assert!(validate_key(&"k".repeat(64)).is_ok());
        assert!(validate_key(&"k".repeat(65)).is_err());
        assert!(validate_key("").is_err());
        assert!(validate_key("2fast").is_err());
        assert!(validate_key("square_feet").is_err());
        assert!(validate_key("squäre").is_err());
    }

    #[test]
    fn type_specific_fields() {
        let base = |extra: Value| {
            let mut fields = json!({"key": "k", "name": "K"});
            fields
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            check::<CustomPropertyDefinition>(fields)
        };
        assert!(
            base(
                json!({"dataType": "text", "unitMeasureId": "00000000-0000-4000-8000-000000000001"})
            )
            .is_err()
        );
        assert!(base(json!({"dataType": "text", "options": ["a"]})).is_err());
        assert!(base(json!({"dataType": "date", "allowsAdHocOptions": true})).is_err());
        assert!(base(json!({"dataType": "select", "options": ["a", " "]})).is_err());
        assert!(base(json!({"dataType": "multiselect", "options": ["Red", "red"]})).is_err());
        assert!(
            base(json!({"dataType": "select", "deliverableTypes": ["order", "phase"]})).is_err()
        );
        assert!(base(json!({"dataType": "text", "deliverableTypes": ["order", "lot"]})).is_err());
        assert!(base(json!({"dataType": "text", "deliverableTypes": ["lot"]})).is_ok());
        let ok = base(
            json!({"dataType": "select", "options": [" Red ", "Blue"], "allowsAdHocOptions": true}),
        )
        .unwrap();
        assert_eq!(ok["options"], json!(["Red", "Blue"]));
    }

    #[test]
    fn option_matching_keeps_catalog_spelling() {
        let def: CustomPropertyDefinition = parse(
            json!({"key": "color", "name": "Color", "dataType": "select", "options": ["Red", "Blue"]}),
        );
        assert_eq!(def.matching_option("RED"), Some("Red"));
        assert_eq!(def.matching_option("green"), None);
    }

    proptest! {
        #[test]
        fn well_formed_keys_pass(key in "[a-zA-Z][a-zA-Z0-9]{0,63}") {
            prop_assert!(validate_key(&key).is_ok());
        }

        #[test]
        fn keys_starting_with_a_non_letter_fail(key in "[^a-zA-Z][a-zA-Z0-9]{0,20}") {
            prop_assert!(validate_key(&key).is_err());
        }

        #[test]
        fn keys_with_other_characters_fail(a in "[a-zA-Z][a-zA-Z0-9]{0,10}", bad in "[^a-zA-Z0-9]", b in "[a-zA-Z0-9]{0,10}") {
            let key = format!("{a}{bad}{b}");
            prop_assert!(validate_key(&key).is_err());
        }

        #[test]
        fn long_keys_fail(key in "[a-zA-Z][a-zA-Z0-9]{64,100}") {
            prop_assert!(validate_key(&key).is_err());
        }
    }
}
