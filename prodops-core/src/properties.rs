//! Custom property values on orders (spec 4.9), and on lots: what a write of `data.properties` does to the
//! stored values, given the definitions.

use serde_json::{Map, Value};

use crate::custom_property::{CustomPropertyDefinition, DataType};
use crate::deliverable::DeliverableType;
use crate::violation::Violation;

/// The result of a properties write: the values to store, and the options to append to
/// definitions that allow ad-hoc options (`(definition index, new option)`), in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PropertiesWrite {
    pub values: Map<String, Value>,
    pub new_options: Vec<(usize, String)>,
}

/// Whether a value clears its key (rule 8): null, an empty (or blank) string, an empty array.
fn clears(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

/// Applies a write of `data.properties` to the stored values `old`:
///
/// - `supplied` is `None` when the request did not mention `data.properties` (rule 7: nothing
///   changes); `Some(null)` or `Some({})` clears every value (rule 9); a nonempty object merges
///   its keys into the stored values (rule 2), a key set to null, `""` or `[]` clearing it (8).
/// - keys are definition keys (rule 1), matched exactly or case-insensitively and stored in the
///   definition's spelling; unknown keys are refused (rule 6). Archived definitions still
///   validate their keys (spec 3.5).
/// - select values match options case-insensitively and keep the definition's spelling (rule 3);
///   an unknown option is refused unless the definition allows ad-hoc options, in which case it
///   is appended (rule 4).
/// - nonempty values on a deliverable type other than the definition's scope are refused (6).
pub fn apply_properties(
    kind: DeliverableType,
    old: Option<&Map<String, Value>>,
    supplied: Option<&Value>,
    defs: &[CustomPropertyDefinition],
) -> Result<PropertiesWrite, Vec<Violation>> {
    apply_scoped_properties(kind.as_str(), "data.properties", old, supplied, defs)
}

/// [`apply_properties`] for the records of any scope a definition can name in its
/// `deliverableTypes` (a deliverable type, or `lot` for lots: `crate::lot::PROPERTY_SCOPE`),
/// whose values are at `values_at` (`data.properties` on a deliverable, `properties` on a lot).
pub fn apply_scoped_properties(
    scope: &str,
    values_at: &str,
    old: Option<&Map<String, Value>>,
    supplied: Option<&Value>,
    defs: &[CustomPropertyDefinition],
) -> Result<PropertiesWrite, Vec<Violation>> {
    let mut out = PropertiesWrite {
        values: old.cloned().unwrap_or_default(),
        ..Default::default()
    };
    let supplied = match supplied {
        None => return Ok(out),
        Some(Value::Null) => {
            out.values.clear();
            return Ok(out);
        }
        Some(Value::Object(m)) if m.is_empty() => {
            out.values.clear();
            return Ok(out);
        }
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(vec![Violation::field(
                values_at,
                "properties must be an object keyed by custom property key, or null",
            )]);
        }
    };
    let mut violations = Vec::new();
    // Options appended during this write count as known for the rest of it.
    let mut appended: Vec<Vec<String>> = vec![Vec::new(); defs.len()];
    for (key, value) in supplied {
        let field = format!("{values_at}.{key}");
        let found = defs
            .iter()
            .position(|d| d.key == *key)
            .or_else(|| defs.iter().position(|d| d.key.eq_ignore_ascii_case(key)));
        let Some(di) = found else {
            violations.push(Violation::field(
                &field,
                format!("no custom property has the key {key:?}"),
            ));
            continue;
        };
        let def = &defs[di];
        if clears(value) {
            out.values.remove(&def.key);
            continue;
        }
        if !def.deliverable_types.iter().any(|t| t == scope) {
            violations.push(Violation::field(
                &field,
                format!(
                    "custom property values are allowed only on {}, not on a {scope}",
                    def.deliverable_types.join(", ")
                ),
            ));
            continue;
        }
        let mut match_option = |text: &str| -> Result<String, Violation> {
            let text = text.trim();
            if let Some(o) = def.matching_option(text) {
                return Ok(o.to_string());
            }
            if let Some(o) = appended[di]
                .iter()
                .find(|o| o.to_lowercase() == text.to_lowercase())
            {
                return Ok(o.clone());
            }
            if def.allows_ad_hoc_options {
                appended[di].push(text.to_string());
                out.new_options.push((di, text.to_string()));
                return Ok(text.to_string());
            }
            Err(Violation::field(
                &field,
                format!(
                    "{text:?} is not an option of {:?} (options: {})",
                    def.key,
                    def.options.join(", ")
                ),
            ))
        };
        let stored = match (def.data_type, value) {
            (DataType::Text, Value::String(s)) => Ok(Value::String(s.clone())),
            (DataType::Number, Value::Number(n)) => Ok(Value::Number(n.clone())),
            (DataType::Boolean, Value::Bool(b)) => Ok(Value::Bool(*b)),
            (DataType::Date, Value::String(s)) => {
                let t = s.trim();
                let ok = chrono::NaiveDate::parse_from_str(t, "%Y-%m-%d").is_ok()
                    || chrono::DateTime::parse_from_rfc3339(t).is_ok();
                if ok {
                    Ok(Value::String(t.to_string()))
                } else {
                    Err(Violation::field(
                        &field,
                        "a date is YYYY-MM-DD or an RFC 3339 date-time",
                    ))
                }
            }
            (DataType::Select, Value::String(s)) => match_option(s).map(Value::String),
            (DataType::Multiselect, Value::Array(items)) => {
                let mut chosen: Vec<String> = Vec::new();
                let mut err = None;
                for item in items {
                    match item.as_str() {
                        Some(s) if !s.trim().is_empty() => match match_option(s) {
                            Ok(o) => {
                                if !chosen.contains(&o) {
                                    chosen.push(o);
                                }
                            }
                            Err(e) => err = Some(e),
                        },
                        _ => {
                            err = Some(Violation::field(
                                &field,
                                "every choice must be a nonempty string",
                            ))
                        }
                    }
                }
                match err {
                    Some(e) => Err(e),
                    None => Ok(Value::Array(
                        chosen.into_iter().map(Value::String).collect(),
                    )),
                }
            }
            (dt, _) => Err(Violation::field(
                &field,
                format!("expected {} for a {} property", expected(dt), type_name(dt)),
            )),
        };
        match stored {
            Ok(v) => {
                out.values.insert(def.key.clone(), v);
            }
            Err(v) => violations.push(v),
        }
    }
    if violations.is_empty() {
        Ok(out)
    } else {
        Err(violations)
    }
}

fn type_name(dt: DataType) -> &'static str {
    match dt {
        DataType::Text => "text",
        DataType::Number => "number",
        DataType::Boolean => "boolean",
        DataType::Date => "date",
        DataType::Select => "select",
        DataType::Multiselect => "multiselect",
    }
}

fn expected(dt: DataType) -> &'static str {
    match dt {
        DataType::Text | DataType::Date | DataType::Select => "a string",
        DataType::Number => "a number",
        DataType::Boolean => "true or false",
        DataType::Multiselect => "an array of strings",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::parse;
    use proptest::prelude::*;
    use serde_json::json;

    fn defs() -> Vec<CustomPropertyDefinition> {
        vec![
            parse(json!({"key": "squareFeet", "name": "Square feet", "dataType": "number"})),
            parse(
                json!({"key": "color", "name": "Color", "dataType": "select", "options": ["Red", "Blue"]}),
            ),
            parse(
                json!({"key": "finish", "name": "Finish", "dataType": "select", "options": ["Matte"], "allowsAdHocOptions": true}),
            ),
            parse(
                json!({"key": "labels", "name": "Labels", "dataType": "multiselect", "options": ["A", "B"]}),
            ),
            parse(json!({"key": "rush", "name": "Rush", "dataType": "boolean"})),
            parse(json!({"key": "due", "name": "Due", "dataType": "date"})),
            parse(json!({"key": "note", "name": "Note", "dataType": "text"})),
        ]
    }

    fn run(old: Value, supplied: Option<Value>) -> Result<PropertiesWrite, Vec<Violation>> {
        apply_properties(
            DeliverableType::Order,
            old.as_object(),
            supplied.as_ref(),
            &defs(),
        )
    }

    #[test]
    fn merge_clear_and_untouched() {
        let old = json!({"squareFeet": 10, "note": "x"});
        assert_eq!(
            run(old.clone(), None).unwrap().values,
            *old.as_object().unwrap()
        );
        let w = run(old.clone(), Some(json!({"color": "red"}))).unwrap();
        assert_eq!(
            Value::Object(w.values),
            json!({"squareFeet": 10, "note": "x", "color": "Red"})
        );
        let w = run(old.clone(), Some(json!({"note": "", "squareFeet": null}))).unwrap();
        assert!(w.values.is_empty());
        assert!(run(old.clone(), Some(json!({}))).unwrap().values.is_empty());
        assert!(
            run(old.clone(), Some(Value::Null))
                .unwrap()
                .values
                .is_empty()
        );
        let w = run(json!({}), Some(json!({"labels": []}))).unwrap();
        assert!(w.values.is_empty());
    }

    #[test]
    fn types_and_options() {
        assert!(run(json!({}), Some(json!({"squareFeet": "ten"}))).is_err());
        assert!(run(json!({}), Some(json!({"rush": "yes"}))).is_err());
        assert!(run(json!({}), Some(json!({"due": "tomorrow"}))).is_err());
        assert!(run(json!({}), Some(json!({"due": "2024-02-03"}))).is_ok());
        assert!(run(json!({}), Some(json!({"color": "green"}))).is_err());
        let w = run(
            json!({}),
            Some(json!({"finish": "Gloss", "labels": ["b", "A", "a"]})),
        )
        .unwrap();
        assert_eq!(w.values["finish"], "Gloss");
        assert_eq!(w.values["labels"], json!(["B", "A"]));
        assert_eq!(w.new_options, vec![(2, "Gloss".to_string())]);
        let w = run(json!({}), Some(json!({"finish": "matte"}))).unwrap();
        assert_eq!(w.values["finish"], "Matte");
        assert!(w.new_options.is_empty());
        let err = run(json!({}), Some(json!({"bogus": 1, "Square feet": 2}))).unwrap_err();
        assert_eq!(err.len(), 2);
        let w = run(json!({}), Some(json!({"SQUAREFEET": 3}))).unwrap();
        assert_eq!(w.values["squareFeet"], 3);
    }

    #[test]
    fn scope() {
        let d = defs();
        let s = json!({"squareFeet": 3});
        assert!(apply_properties(DeliverableType::Phase, None, Some(&s), &d).is_err());
        let c = json!({"squareFeet": null});
        assert!(apply_properties(DeliverableType::Phase, None, Some(&c), &d).is_ok());
        assert!(apply_properties(DeliverableType::Phase, None, Some(&json!({})), &d).is_ok());
        // A definition scoped to lots takes values on lots only, and names the lot's field.
        let lot_def: CustomPropertyDefinition = parse(
            json!({"key": "origin", "name": "Origin", "dataType": "text", "deliverableTypes": ["lot"]}),
        );
        let defs = [lot_def];
        let v = json!({"origin": "Chile"});
        assert!(apply_properties(DeliverableType::Order, None, Some(&v), &defs).is_err());
        let w = apply_scoped_properties("lot", "properties", None, Some(&v), &defs).unwrap();
        assert_eq!(w.values["origin"], "Chile");
        let err = apply_scoped_properties("lot", "properties", None, Some(&json!({"x": 1})), &defs)
            .unwrap_err();
        assert_eq!(err[0].field.as_deref(), Some("properties.x"));
        let err =
            apply_scoped_properties("lot", "properties", None, Some(&json!(3)), &defs).unwrap_err();
        assert_eq!(err[0].field.as_deref(), Some("properties"));
    }

    proptest! {
        #[test]
        fn select_matching_keeps_catalog_spelling(upper in proptest::collection::vec(any::<bool>(), 3)) {
            let text: String = "red".chars().zip(upper).map(|(c, u)| if u { c.to_ascii_uppercase() } else { c }).collect();
            let w = run(json!({}), Some(json!({"color": text}))).unwrap();
            prop_assert_eq!(&w.values["color"], "Red");
        }

        #[test]
        fn omitted_keys_are_kept(n in 0i64..1000) {
            let w = run(json!({"note": "keep"}), Some(json!({"squareFeet": n}))).unwrap();
            prop_assert_eq!(&w.values["note"], "keep");
            prop_assert_eq!(&w.values["squareFeet"], &json!(n));
        }
    }
}
