//! The fields a resource declares, read from its core type's schema (the registry's
//! `ResourceKind::schema`): the columns of its CSV and table output, the fields `--select` may
//! name, and the default columns of its table. One mechanism for every registered resource; no
//! resource names its columns here.
//!
//! Nested objects (`progress`, `schedule`, `data`) become dotted columns (`progress.status`), the
//! same on every row whether a record's object is present or null; maps with free keys
//! (`data.properties`) and arrays are one column holding JSON text.

use prodops_core::ResourceDesc;
use prodops_core::api::{ActionDesc, AnswerBody, Schemas};
use prodops_core::resource::ResourceKind;
use serde_json::{Map, Value};

use crate::actions::resolve;

/// What a leaf column holds, as far as the table's default columns care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeafKind {
    /// A closed set of values (`status`, `type`).
    Enum,
    Uuid,
    Time,
    Text,
    Number,
    Bool,
    /// An array, a map with free keys, or anything else: JSON text in a cell.
    Json,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaf {
    pub path: String,
    pub kind: LeafKind,
}

/// The declared fields of one resource.
#[derive(Debug, Clone)]
pub struct Fields {
    /// Every leaf column, `id` first, then in the schema's order.
    pub leaves: Vec<Leaf>,
    /// The columns a table shows without `--wide` or `--select`.
    pub defaults: Vec<String>,
}

/// The field that never shows in a default table.
const NEVER_DEFAULT: &[&str] = &["organizationId"];
/// At most this many identifying text columns, and this many enum columns, by default.
const DEFAULT_TEXTS: usize = 2;
const DEFAULT_ENUMS: usize = 2;

impl Fields {
    /// The fields of a registered resource.
    pub fn of(kind: &dyn ResourceKind) -> Fields {
        let types = prodops_core::field_types::FieldTypes::of(kind);
        let (root, named) = types.schemas();
        Self::from_schema(root, named, kind.desc())
    }

    /// The fields of what an action answers, as it is printed (a page's records; a
    /// `{"values": [...]}` answer's records; `value.*` of a `{"value": ...}` answer); `None`
    /// where the declaration gives no schema or the answer is not an object.
    pub fn of_answer(a: &ActionDesc) -> Option<Fields> {
        let (schema, prefix, page) = match a.answer {
            AnswerBody::Json(Some(f)) => (f, "", false),
            AnswerBody::Page(Some(f)) => (f, "", true),
            AnswerBody::Value(f) => (f, "value", true),
            _ => return None,
        };
        let mut schemas = Schemas::new();
        let root = serde_json::to_value(schema(&mut schemas)).ok()?;
        let named: Map<String, Value> = schemas
            .iter()
            .map(|(n, s)| (n.clone(), serde_json::to_value(s).unwrap_or_default()))
            .collect();
        let mut node = root;
        if !page {
            // A `{"values": [...]}` answer (and at most one other field) prints as a list.
            let s = unwrap(&node, &named);
            if let Some(props) = s["properties"].as_object()
                && props.len() <= 2
                && let Some(values) = props.get("values")
            {
                let items = unwrap(values, &named)["items"].clone();
                if !items.is_null() {
                    node = items;
                }
            }
        }
        let mut leaves = Vec::new();
        walk(&node, &named, prefix, &mut leaves, 0);
        (!leaves.is_empty()).then_some(Fields {
            leaves,
            defaults: Vec::new(),
        })
    }

    fn from_schema(root: &Value, named: &Map<String, Value>, desc: &ResourceDesc) -> Fields {
        let mut leaves = Vec::new();
        walk(root, named, "", &mut leaves, 0);
        if let Some(i) = leaves.iter().position(|l| l.path == "id") {
            let id = leaves.remove(i);
            leaves.insert(0, id);
        }
        let defaults = default_columns(&leaves, desc);
        Fields { leaves, defaults }
    }

    /// Every leaf column's path.
    pub fn columns(&self) -> Vec<String> {
        self.leaves.iter().map(|l| l.path.clone()).collect()
    }

    /// Whether `--select` may name `path`: a leaf, an object holding leaves (`progress`), or a
    /// key inside a free map (`data.properties.color`).
    pub fn knows(&self, path: &str) -> bool {
        self.leaves.iter().any(|l| {
            l.path == path
                || l.path
                    .strip_prefix(path)
                    .is_some_and(|rest| rest.starts_with('.'))
                || (l.kind == LeafKind::Json
                    && path
                        .strip_prefix(l.path.as_str())
                        .is_some_and(|rest| rest.starts_with('.')))
        })
    }

    /// Refuses (exit 2) a `--select` naming a field the resource does not have, listing the
    /// valid ones.
    pub fn check_select(&self, select: &[String]) -> crate::fail::CmdResult {
        let unknown: Vec<&str> = select
            .iter()
            .filter(|s| !self.knows(s))
            .map(String::as_str)
            .collect();
        if unknown.is_empty() {
            return Ok(());
        }
        Err(crate::fail::Fail::usage(format!(
            "--select: unknown field{} {}; the fields are: {}",
            if unknown.len() == 1 { "" } else { "s" },
            unknown.join(", "),
            self.columns().join(", ")
        )))
    }
}

/// The schema with `Option<T>`'s `oneOf [null, T]` (or `anyOf`) and one-part `allOf` unwrapped.
fn unwrap<'a>(schema: &'a Value, named: &'a Map<String, Value>) -> &'a Value {
    let mut s = resolve(schema, named);
    for _ in 0..8 {
        let next = ["oneOf", "anyOf", "allOf"].iter().find_map(|key| {
            let variants = s[*key].as_array()?;
            let real: Vec<&Value> = variants.iter().filter(|v| v["type"] != "null").collect();
            (real.len() == 1).then(|| real[0])
        });
        match next {
            Some(inner) => s = resolve(inner, named),
            None => return s,
        }
    }
    s
}

fn kind_of(s: &Value) -> LeafKind {
    if s["enum"].is_array() || s["const"].is_string() {
        return LeafKind::Enum;
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(variants) = s[key].as_array()
            && !variants.is_empty()
            && variants
                .iter()
                .all(|v| v["enum"].is_array() || v["const"].is_string() || v["type"] == "null")
        {
            return LeafKind::Enum;
        }
    }
    match s["format"].as_str() {
        Some("uuid") => return LeafKind::Uuid,
        Some("date-time") => return LeafKind::Time,
        _ => {}
    }
    let types: Vec<&str> = match &s["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    match types
        .into_iter()
        .filter(|t| *t != "null")
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["string"] => LeafKind::Text,
        ["integer"] | ["number"] => LeafKind::Number,
        ["boolean"] => LeafKind::Bool,
        _ => LeafKind::Json,
    }
}

fn walk(
    schema: &Value,
    named: &Map<String, Value>,
    prefix: &str,
    out: &mut Vec<Leaf>,
    depth: usize,
) {
    let s = unwrap(schema, named);
    let mut props: Vec<(&String, &Value)> = Vec::new();
    if depth < 6 {
        if let Some(p) = s["properties"].as_object() {
            props.extend(p.iter());
        }
        // `allOf` of several parts: their properties together.
        if let Some(parts) = s["allOf"].as_array() {
            for part in parts {
                if let Some(p) = unwrap(part, named)["properties"].as_object() {
                    props.extend(
                        p.iter()
                            .filter(|(k, _)| !props.iter().any(|(o, _)| o == k))
                            .collect::<Vec<_>>(),
                    );
                }
            }
        }
    }
    if props.is_empty() || (s["additionalProperties"].is_object() && !prefix.is_empty()) {
        if !prefix.is_empty() {
            out.push(Leaf {
                path: prefix.to_string(),
                kind: if props.is_empty() {
                    kind_of(s)
                } else {
                    LeafKind::Json
                },
            });
        }
        return;
    }
    for (k, v) in props {
        let path = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        if out.iter().any(|l| l.path == path) {
            continue;
        }
        walk(v, named, &path, out, depth + 1);
    }
}

/// The default table columns, from the description: the identifying text fields (the
/// resource's search columns), up to two enum fields (status, type; one level of nesting, so a
/// deliverable shows `progress.status`), then the id. A resource with neither shows its first
/// plain text and number fields instead, or else its references (a dependency's two ids).
/// Never `organizationId`.
fn default_columns(leaves: &[Leaf], desc: &ResourceDesc) -> Vec<String> {
    let has = |p: &str| leaves.iter().any(|l| l.path == p);
    let mut out: Vec<String> = Vec::new();
    for s in desc.search_columns {
        if out.len() >= DEFAULT_TEXTS {
            break;
        }
        if has(s) && !NEVER_DEFAULT.contains(s) {
            out.push(s.to_string());
        }
    }
    // Top-level enums first, then those one level down; none inside a server-computed object
    // (a deliverable's `computed`, listed in the description's read-only fields).
    let computed = |path: &str| {
        path.split_once('.')
            .is_some_and(|(top, _)| desc.read_only.contains(&top))
    };
    let mut enums: Vec<&Leaf> = leaves
        .iter()
        .filter(|l| l.kind == LeafKind::Enum && l.path.matches('.').count() <= 1)
        .filter(|l| !out.contains(&l.path) && !computed(&l.path))
        .collect();
    enums.sort_by_key(|l| l.path.contains('.'));
    let enums: Vec<String> = enums
        .into_iter()
        .take(DEFAULT_ENUMS)
        .map(|l| l.path.clone())
        .collect();
    out.extend(enums);
    // Nothing identifying: the first plain fields, text and numbers before references.
    for kinds in [&[LeafKind::Text, LeafKind::Number][..], &[LeafKind::Uuid]] {
        if !out.is_empty() {
            break;
        }
        out.extend(
            leaves
                .iter()
                .filter(|l| {
                    kinds.contains(&l.kind)
                        && !l.path.contains('.')
                        && l.path != "id"
                        && !NEVER_DEFAULT.contains(&l.path.as_str())
                })
                .take(3)
                .map(|l| l.path.clone()),
        );
    }
    if has("id") {
        out.push("id".into());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(path: &str) -> Fields {
        Fields::of(prodops_core::registry::by_path(path).unwrap())
    }

    #[test]
    fn nested_objects_are_dotted_columns_and_maps_one_column() {
        let d = fields("deliverable");
        let cols = d.columns();
        assert_eq!(cols[0], "id");
        for c in [
            "progress.status",
            "progress.completed",
            "schedule.startDate",
            "data",
        ] {
            assert!(cols.contains(&c.to_string()), "{c} in {cols:?}");
        }
        assert!(!cols.contains(&"progress".to_string()));
        assert!(d.knows("progress"), "an object is selectable");
        assert!(d.knows("data.stageId"), "a key of a free map is selectable");
        assert!(d.knows("data.properties.color"));
        assert!(!d.knows("nope"));
        assert!(!d.knows("progress.nope"));
    }

    #[test]
    fn every_resource_has_default_columns_without_the_organization() {
        for k in prodops_core::registry::resources() {
            let f = Fields::of(*k);
            let path = k.desc().path;
            assert!(f.defaults.len() >= 2, "{path}: {:?}", f.defaults);
            assert_eq!(f.defaults.last().map(String::as_str), Some("id"), "{path}");
            assert!(!f.defaults.iter().any(|c| c == "organizationId"), "{path}");
            for c in &f.defaults {
                assert!(f.knows(c), "{path}: {c}");
            }
        }
        assert_eq!(
            fields("deliverable").defaults,
            ["name", "identifier", "type", "progress.status", "id"]
        );
        assert_eq!(
            fields("worker").defaults,
            ["name", "customerIdentifier", "status", "id"]
        );
    }

    #[test]
    fn an_action_answer_has_its_fields() {
        let events = prodops_core::api::ACTIONS
            .iter()
            .find(|a| a.operation_id == "event_list")
            .unwrap();
        let f = Fields::of_answer(events).unwrap();
        assert!(
            f.knows("recordId") && f.knows("type") && f.knows("data.name"),
            "{:?}",
            f.columns()
        );
        assert!(!f.knows("nextCursor"), "the page prints as its events");
    }

    #[test]
    fn an_unknown_selection_lists_the_fields() {
        let w = fields("worker");
        assert!(w.check_select(&["name".into(), "status".into()]).is_ok());
        let err = w.check_select(&["nmae".into()]).unwrap_err();
        assert_eq!(err.code, crate::fail::code::USAGE);
        assert!(
            err.message.contains("nmae") && err.message.contains("customerIdentifier"),
            "{}",
            err.message
        );
    }
}
