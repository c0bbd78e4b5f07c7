//! A CSV row read into the JSON sent for it and checked with core's rules: [`row_json`] writes
//! the row's JSON object into the reader's [`RowBuffers`] and gives the [`Checked`] row (its
//! line, and what it is matched and ordered by).

use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::csvio::cells::{Cell, needs_escape, push_json_string, read_cell, set_path};
use crate::csvio::spec::{Column, Spec};

/// Turns a CSV row into the JSON sent for it, checked with core's rules for the resource.
#[cfg(test)]
pub fn row_record(
    spec: &Spec,
    cols: &[Option<&Column>],
    record: &csv::StringRecord,
    key_mode: bool,
) -> Result<Map<String, Value>, Vec<String>> {
    let mut buffers = RowBuffers::default();
    row_json(spec, cols, record, 0, key_mode, &mut buffers)
        .map(|_| serde_json::from_str(&buffers.json).expect("the row's JSON reads back"))
}

/// The texts [`row_json`] writes, kept from row to row (no allocation per row).
#[derive(Default)]
pub(super) struct RowBuffers {
    /// The row's JSON object, as sent.
    pub(super) json: String,
    /// The record as the server would complete it, for core's check.
    candidate: String,
}

/// A checked row, not placed yet: its line, and what it is matched and ordered by. Its JSON is
/// in the reader's [`RowBuffers`] until it goes into a batch's body.
pub(super) struct Checked {
    pub(super) line: u64,
    pub(super) id: Option<Uuid>,
    /// Its `parentId`, for a tree's rows.
    pub(super) parent: Option<Uuid>,
    /// The `--key` field's value (trimmed, not empty), in key mode, for a row without an id.
    pub(super) key: Option<String>,
}

/// The top-level fields a row gives, as the check needs them.
#[derive(Default)]
struct Given<'a> {
    names: Vec<&'a str>,
    id: Option<Uuid>,
    parent: Option<Uuid>,
    /// The `--key` field's text, when it is a string.
    key: Option<&'a str>,
    /// The key's scope field (`Spec::key_scope`), when it is a UUID.
    scope: Option<Uuid>,
}

impl Given<'_> {
    fn has(&self, name: &str) -> bool {
        self.names.contains(&name)
    }
}

/// [`row_record`] for line `line`: the row's JSON in `buffers.json`, and what it is matched and
/// ordered by. A file of top-level fields only (workers) is written straight to JSON; one with
/// dotted (nested) columns is gathered into a map first.
pub(super) fn row_json(
    spec: &Spec,
    cols: &[Option<&Column>],
    record: &csv::StringRecord,
    line: u64,
    key_mode: bool,
    buffers: &mut RowBuffers,
) -> Result<Checked, Vec<String>> {
    let mut errors = Vec::new();
    let text = &mut buffers.json;
    text.clear();
    let mut map = Map::new();
    let given = if cols.iter().flatten().any(|c| c.name.contains('.')) {
        gather_by_map(spec, cols, record, &mut map, &mut errors, text)
    } else {
        gather_flat(spec, cols, record, &mut errors, text)
    };
    if spec.tree
        && let (Some(id), Some(parent)) = (given.id, given.parent)
        && id == parent
    {
        errors.push(format!(
            "parentId: a {} cannot be its own parent",
            spec.noun
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Core's rules, on the record as the server would complete it: the row's JSON with the
    // server's fields (and the placeholders of an update) added, read straight into the
    // resource's type. Only a row that does not read as the resource is checked again as a
    // `Value`, for the messages that name the field.
    let key = match spec.key {
        Some(_) if key_mode => given.key.map(str::trim).filter(|k| !k.is_empty()),
        _ => None,
    };
    // A scoped key (a lot's code, per item) names a record only with its scope.
    let key = match (key, spec.key_scope) {
        (Some(k), None) => Some(Spec::key_text(None, k)),
        (Some(k), Some(_)) => given.scope.map(|s| Spec::key_text(Some(s), k)),
        (None, _) => None,
    };
    let update = given.has("id") || key.is_some();
    let kind = prodops_core::registry::by_path(spec.path).expect("a registered resource");
    let server_fields = ["organizationId", "createdAt", "updatedAt"];
    let checked = if server_fields.iter().any(|f| given.has(f)) {
        None
    } else {
        candidate_text(spec, &given, text, update, &mut buffers.candidate);
        kind.validate_new_json(&buffers.candidate)
    };
    let checked = checked.unwrap_or_else(|| {
        let out: Map<String, Value> =
            serde_json::from_str(text).expect("the row's JSON reads back");
        kind.check(Value::Object(candidate_map(spec, &out, update)), None)
            .map(|_| ())
    });
    match checked {
        Ok(()) => Ok(Checked {
            line,
            id: given.id,
            parent: if spec.tree { given.parent } else { None },
            key: if given.id.is_none() { key } else { None },
        }),
        Err(violations) => Err(violations
            .into_iter()
            .map(|v| match v.field {
                Some(f) => format!("{f}: {}", v.message),
                None => v.message,
            })
            .collect()),
    }
}

/// Gathers a row's fields in a map (dotted columns nest), then writes its JSON to `text`.
fn gather_by_map<'m>(
    spec: &Spec,
    cols: &[Option<&Column>],
    record: &csv::StringRecord,
    map: &'m mut Map<String, Value>,
    errors: &mut Vec<String>,
    text: &mut String,
) -> Given<'m> {
    for (col, raw) in cols.iter().zip(record.iter()) {
        let Some(col) = col else { continue };
        match read_cell(col.kind, &col.name, raw) {
            Ok(cell) => {
                if let Some(v) = cell.into_value() {
                    set_path(map, &col.name, v)
                }
            }
            Err(e) => errors.push(e),
        }
    }
    // A nested field whose cells are all empty (`progress.*` of a node without progress) is
    // left out rather than written as an object of nulls; `data` and a lot's `properties` keep
    // their nulls (they clear custom property values).
    map.retain(|k, v| {
        k == "data"
            || k == "properties"
            || !v
                .as_object()
                .is_some_and(|o| o.values().all(Value::is_null))
    });
    text.push_str(&serde_json::to_string(&*map).expect("a map of JSON values serializes"));
    let map: &'m Map<String, Value> = map;
    let uuid = |name: &str| {
        map.get(name)
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
    };
    Given {
        names: map.keys().map(String::as_str).collect(),
        id: uuid("id"),
        parent: uuid("parentId"),
        key: spec.key.and_then(|k| map.get(k)).and_then(Value::as_str),
        scope: spec.key_scope.and_then(uuid),
    }
}

/// Writes a row of top-level fields only straight to JSON in `text`, in column order (the
/// order [`gather_by_map`] gives them).
fn gather_flat<'a>(
    spec: &Spec,
    cols: &[Option<&'a Column>],
    record: &'a csv::StringRecord,
    errors: &mut Vec<String>,
    text: &mut String,
) -> Given<'a> {
    let mut given = Given::default();
    text.push('{');
    for (col, raw) in cols.iter().zip(record.iter()) {
        let Some(col) = col else { continue };
        let cell = match read_cell(col.kind, &col.name, raw) {
            Ok(Cell::Skip) => continue,
            Ok(cell) => cell,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if text.len() > 1 {
            text.push(',');
        }
        // Column names are the spec's field names: nothing in them to escape.
        debug_assert!(!needs_escape(col.name.as_bytes()));
        text.push('"');
        text.push_str(&col.name);
        text.push_str("\":");
        cell.write_json(text);
        let name = col.name.as_str();
        given.names.push(name);
        match (&cell, name) {
            (Cell::Uuid(id), "id") => given.id = Some(*id),
            (Cell::Uuid(id), "parentId") => given.parent = Some(*id),
            (Cell::Str(s), _) if Some(name) == spec.key => given.key = Some(s),
            (Cell::Uuid(id), _) if Some(name) == spec.key_scope => given.scope = Some(*id),
            _ => {}
        }
    }
    text.push('}');
    given
}

const EPOCH: &str = "1970-01-01T00:00:00Z";

/// The record as the server would complete it, for core's check (the reference form).
fn candidate_map(spec: &Spec, out: &Map<String, Value>, update: bool) -> Map<String, Value> {
    let mut candidate = out.clone();
    candidate
        .entry("id")
        .or_insert_with(|| json!(Uuid::nil().to_string()));
    candidate.insert("organizationId".into(), json!(Uuid::nil().to_string()));
    candidate.insert("createdAt".into(), json!(EPOCH));
    candidate.insert("updatedAt".into(), json!(EPOCH));
    if update {
        for (field, placeholder) in spec.update_placeholders {
            candidate
                .entry(*field)
                .or_insert_with(|| json!(placeholder));
        }
    }
    candidate
}

/// [`candidate_map`] as JSON text in `text`, from the row's JSON (which holds none of the
/// server's fields): the added fields go after the row's own.
fn candidate_text(spec: &Spec, given: &Given<'_>, json: &str, update: bool, text: &mut String) {
    text.clear();
    text.push_str(&json[..json.len() - 1]);
    let mut add = |key: &str, value: &str| {
        if text.len() > 1 {
            text.push(',');
        }
        text.push('"');
        text.push_str(key);
        text.push_str("\":");
        push_json_string(text, value);
    };
    const NIL: &str = "00000000-0000-0000-0000-000000000000";
    if !given.has("id") {
        add("id", NIL);
    }
    add("organizationId", NIL);
    add("createdAt", EPOCH);
    add("updatedAt", EPOCH);
    if update {
        for (field, placeholder) in spec.update_placeholders {
            if !given.has(field) {
                add(field, placeholder);
            }
        }
    }
    text.push('}');
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Cells as files hold them: valid and invalid UUIDs, booleans, text with quotes,
    /// backslashes, control characters and non-ASCII letters, blanks.
    fn cell() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("  ".to_string()),
            Just("true".to_string()),
            Just(" No ".to_string()),
            Just("maybe".to_string()),
            Just("active".to_string()),
            Just("0190b6a4-4a57-7c3e-8a4e-1f6f1f2b2c3d".to_string()),
            Just(" 0190B6A4-4A57-7C3E-8A4E-1F6F1F2B2C3D ".to_string()),
            Just("not-a-uuid".to_string()),
            "[ -~]{0,12}",
            "[a-zé\"\\\\\n\t\u{1}ß😀 ]{0,8}",
        ]
    }

    proptest! {
        /// A file of top-level columns is written straight to JSON with exactly the text and
        /// fields the map path gives.
        #[test]
        fn flat_rows_read_as_the_map_path_reads_them(
            picks in proptest::sample::subsequence((0..crate::csvio::worker_spec::SPEC.columns.len()).collect::<Vec<_>>(), 0..=11),
            cells in proptest::collection::vec(cell(), 11),
        ) {
            let spec = &*crate::csvio::worker_spec::SPEC;
            let cols: Vec<Option<&Column>> = picks.iter().map(|&i| Some(&spec.columns[i])).collect();
            let record = csv::StringRecord::from(cells[..cols.len()].to_vec());
            let (mut flat_text, mut map_text) = (String::new(), String::new());
            let (mut flat_errors, mut map_errors) = (Vec::new(), Vec::new());
            let mut map = Map::new();
            let flat = gather_flat(spec, &cols, &record, &mut flat_errors, &mut flat_text);
            let by_map = gather_by_map(spec, &cols, &record, &mut map, &mut map_errors, &mut map_text);
            prop_assert_eq!(&flat_errors, &map_errors);
            if flat_errors.is_empty() {
                prop_assert_eq!(&flat_text, &map_text);
                prop_assert_eq!(&flat.names, &by_map.names);
                prop_assert_eq!(flat.id, by_map.id);
                prop_assert_eq!(flat.parent, by_map.parent);
                prop_assert_eq!(flat.key, by_map.key);
            }
        }
    }
}
