//! The JSON type a resource's schema declares for one of its fields (`quantity` → a number,
//! `exemptFromAssignments` → a boolean), read from the same schema the OpenAPI document is
//! built from. The command line reads `--set quantity=5` as that type, so that a person does
//! not have to know which fields want JSON.

use serde_json::{Map, Value};

use crate::resource::ResourceKind;

/// What a field holds, as far as reading a text given for it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    Text,
    Integer,
    Number,
    Boolean,
    Array,
    Object,
}

/// A resource's schema read once, to answer [`FieldTypes::get`] for as many fields as asked
/// (a command with ten `--set`s builds the schema once, not ten times).
#[derive(Debug, Clone)]
pub struct FieldTypes {
    root: Value,
    named: Map<String, Value>,
}

impl FieldTypes {
    pub fn of(kind: &dyn ResourceKind) -> FieldTypes {
        let (_, root) = kind.schema();
        let mut schemas = Vec::new();
        kind.schemas(&mut schemas);
        let named: Map<String, Value> = schemas
            .into_iter()
            .map(|(n, s)| (n, serde_json::to_value(s).unwrap_or_default()))
            .collect();
        FieldTypes {
            root: serde_json::to_value(root).unwrap_or_default(),
            named,
        }
    }

    /// The resource's schema and the schemas it names (`#/components/schemas/...`), as JSON.
    pub fn schemas(&self) -> (&Value, &Map<String, Value>) {
        (&self.root, &self.named)
    }

    /// The declared type of the field at `path` (dotted for nested fields:
    /// `schedule.startDate`), or `None` when the schema does not say (an unknown field, a
    /// custom property).
    pub fn get(&self, path: &str) -> Option<FieldType> {
        let mut schema = self.root.clone();
        for segment in path.split('.') {
            schema = property(&schema, segment, &self.named, 0)?;
        }
        type_of(&schema, &self.named, 0)
    }
}

/// [`FieldTypes::get`] for one field; build [`FieldTypes`] once to ask about several.
pub fn field_type(kind: &dyn ResourceKind, path: &str) -> Option<FieldType> {
    FieldTypes::of(kind).get(path)
}

/// Follows a `$ref` to the schema it names.
fn resolved<'s>(schema: &'s Value, named: &'s Map<String, Value>) -> &'s Value {
    match schema["$ref"].as_str() {
        Some(r) => named
            .get(r.rsplit('/').next().unwrap_or_default())
            .unwrap_or(schema),
        None => schema,
    }
}

const VARIANTS: [&str; 3] = ["allOf", "oneOf", "anyOf"];

fn property(schema: &Value, name: &str, named: &Map<String, Value>, depth: usize) -> Option<Value> {
    if depth > 16 {
        return None;
    }
    let schema = resolved(schema, named);
    if let Some(p) = schema["properties"].get(name) {
        return Some(p.clone());
    }
    VARIANTS.iter().find_map(|key| {
        schema[*key]
            .as_array()?
            .iter()
            .find_map(|v| property(v, name, named, depth + 1))
    })
}

fn type_of(schema: &Value, named: &Map<String, Value>, depth: usize) -> Option<FieldType> {
    if depth > 16 {
        return None;
    }
    let schema = resolved(schema, named);
    let declared = match &schema["type"] {
        Value::String(t) => Some(t.as_str()),
        // OpenAPI 3.1 spells a nullable field `["string", "null"]`.
        Value::Array(types) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null"),
        _ => None,
    };
    match declared {
        Some("string") => Some(FieldType::Text),
        Some("integer") => Some(FieldType::Integer),
        Some("number") => Some(FieldType::Number),
        Some("boolean") => Some(FieldType::Boolean),
        Some("array") => Some(FieldType::Array),
        Some("object") => Some(FieldType::Object),
        Some(_) => None,
        None if schema.get("enum").is_some() => Some(FieldType::Text),
        None => VARIANTS.iter().find_map(|key| {
            schema[*key]
                .as_array()?
                .iter()
                .find_map(|v| type_of(v, named, depth + 1))
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::by_path;

    #[test]
    fn fields_read_their_declared_types() {
        let worker = by_path("worker").unwrap();
        assert_eq!(field_type(worker, "name"), Some(FieldType::Text));
        assert_eq!(
            field_type(worker, "exemptFromAssignments"),
            Some(FieldType::Boolean)
        );
        assert_eq!(field_type(worker, "teamId"), Some(FieldType::Text));
        assert_eq!(field_type(worker, "nothingLikeThis"), None);
        let deliverable = by_path("deliverable").unwrap();
        assert!(matches!(
            field_type(deliverable, "quantity"),
            Some(FieldType::Number | FieldType::Integer)
        ));
        assert!(matches!(
            field_type(deliverable, "durationSec"),
            Some(FieldType::Number | FieldType::Integer)
        ));
    }
}
