//! Small helpers the resource modules share: serde defaults, trimming and common field rules.

use crate::violation::Violation;

/// Serde default for flags that default to `true` (`isActive`, `deliverableDocument`, ...).
pub(crate) fn default_true() -> bool {
    true
}

/// Serde default for counts that default to 1 (`quantity`, `peopleNum`, `versionNumber`).
pub(crate) fn default_one() -> i64 {
    1
}

/// Trims surrounding whitespace in place.
pub(crate) fn trim(value: &mut String) {
    let trimmed = value.trim();
    if trimmed.len() != value.len() {
        *value = trimmed.to_string();
    }
}

/// Trims surrounding whitespace of an optional string in place.
pub(crate) fn trim_opt(value: &mut Option<String>) {
    if let Some(value) = value {
        trim(value);
    }
}

/// Pushes a violation when a required text field is empty (or only whitespace).
pub(crate) fn require_nonempty(violations: &mut Vec<Violation>, field: &str, value: &str) {
    if value.trim().is_empty() {
        violations.push(Violation::field(
            field,
            format!("{field} must not be empty"),
        ));
    }
}

/// Whether two strings are equal ignoring case (Unicode lowercase comparison).
pub(crate) fn eq_ignore_case(a: &str, b: &str) -> bool {
    a == b || a.to_lowercase() == b.to_lowercase()
}

/// Whether an optional number is present and strictly positive.
pub(crate) fn is_positive(value: Option<f64>) -> bool {
    value.is_some_and(|x| x > 0.0)
}

/// Test helpers: build records from the fields a test cares about.
#[cfg(test)]
pub(crate) mod testing {
    use serde_json::{Value, json};

    use crate::resource::{Kind, Record, ResourceKind};
    use crate::violation::Violation;

    /// `fields` plus the common fields every record carries (`id`, `organizationId`,
    /// `createdAt`, `updatedAt`), unless `fields` already sets them.
    pub(crate) fn with_common(fields: Value) -> Value {
        let mut record = json!({
            "id": "00000000-0000-4000-8000-000000000001",
            "organizationId": "00000000-0000-4000-8000-000000000002",
            "createdAt": "2024-01-01T00:00:00Z",
            "updatedAt": "2024-01-01T00:00:00Z",
        });
        let map = record.as_object_mut().expect("object");
        for (key, value) in fields.as_object().expect("fields must be an object") {
            map.insert(key.clone(), value.clone());
        }
        record
    }

    /// Runs the full create check (parse, normalize, validate) of `T` on `fields`.
    pub(crate) fn check<T: Record>(fields: Value) -> Result<Value, Vec<Violation>> {
        Kind::<T>::new().check(with_common(fields), None)
    }

    /// Parses `fields` (plus the common fields) as a `T`, panicking on a parse error.
    pub(crate) fn parse<T: Record>(fields: Value) -> T {
        serde_json::from_value(with_common(fields)).expect("record parses")
    }
}
