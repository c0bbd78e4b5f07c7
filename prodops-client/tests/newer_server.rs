//! A newer server must not break this client: every answer this client reads (the record of
//! every standard resource, the answer of every declared action) still decodes when it carries
//! fields this build does not know, at every level of nesting, and those fields are kept.
//!
//! Answers are made from the OpenAPI schema of each type (what the server documents): one value
//! with every declared property, each object nested in it given an extra field. The plain
//! value must read with the type's own strict reading (so the sample is right), and the value
//! with extras must read through the client to the same thing, the extras set aside by path.

use prodops_client::compat::{self, Lenient};
use prodops_core::api::{AnswerBody, AnswerKind, Endpoint, Schemas};
use prodops_core::resource::Record;
use serde::Serialize;
use serde_json::{Map, Value, json};

const EXTRA: &str = "zzNewerServerField";

/// A value of `schema` with every declared property. `named`: the components by name.
fn sample(schema: &Value, named: &Map<String, Value>, depth: usize) -> Value {
    assert!(depth < 40, "a schema nests too deep: {schema}");
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap();
        let target = named
            .get(name)
            .unwrap_or_else(|| panic!("no schema {name}"));
        return sample(target, named, depth + 1);
    }
    if let Some(c) = schema.get("const") {
        return c.clone();
    }
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .find(|v| !v.is_null())
            .cloned()
            .unwrap_or(Value::Null);
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(variants) = schema.get(key).and_then(Value::as_array) {
            let variant = variants
                .iter()
                .find(|v| v.get("type") != Some(&json!("null")))
                .unwrap_or(&variants[0]);
            return sample(variant, named, depth + 1);
        }
    }
    if let Some(parts) = schema.get("allOf").and_then(Value::as_array) {
        let mut out = Map::new();
        for p in parts {
            if let Value::Object(o) = sample(p, named, depth + 1) {
                out.extend(o);
            }
        }
        return Value::Object(out);
    }
    let ty = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => return json!({}),
    };
    match ty {
        "object" => {
            let mut out = Map::new();
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    out.insert(k.clone(), sample(v, named, depth + 1));
                }
            }
            Value::Object(out)
        }
        "array" => match schema.get("items") {
            Some(items) => json!([sample(items, named, depth + 1)]),
            None => json!([]),
        },
        "string" => match schema.get("format").and_then(Value::as_str) {
            Some("uuid") => json!("0191c3a8-0000-7000-8000-000000000001"),
            Some("date-time") => json!("2025-01-02T03:04:05.000Z"),
            Some("date") => json!("2025-01-02"),
            _ => json!("text"),
        },
        "integer" => json!(
            schema
                .get("minimum")
                .and_then(Value::as_i64)
                .unwrap_or(1)
                .max(1)
        ),
        "number" => json!(
            schema
                .get("minimum")
                .and_then(Value::as_f64)
                .unwrap_or(1.0)
                .max(1.0)
        ),
        "boolean" => json!(false),
        _ => Value::Null,
    }
}

/// `value` with an extra field in every object that is a declared struct (an object with
/// `properties` in its schema), at every depth; answers the JSON Pointers of the extras.
fn add_extras(
    value: &mut Value,
    schema: &Value,
    named: &Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    let schema = resolve(schema, named);
    for key in ["oneOf", "anyOf"] {
        if let Some(variants) = schema.get(key).and_then(Value::as_array) {
            let variant = variants
                .iter()
                .find(|v| v.get("type") != Some(&json!("null")))
                .unwrap_or(&variants[0]);
            return add_extras(value, variant, named, path, out);
        }
    }
    if let Some(parts) = schema.get("allOf").and_then(Value::as_array) {
        for p in parts {
            add_extras(value, p, named, path, out);
        }
        return;
    }
    match value {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, v) in map.iter_mut() {
                    if let Some(s) = props.get(k) {
                        add_extras(v, s, named, &format!("{path}/{k}"), out);
                    }
                }
                if !map.contains_key(EXTRA) {
                    map.insert(EXTRA.into(), json!({"nested": [1, {"deeper": true}]}));
                    out.push(format!("{path}/{EXTRA}"));
                }
            }
        }
        Value::Array(items) => {
            if let Some(s) = schema.get("items") {
                for (i, v) in items.iter_mut().enumerate() {
                    add_extras(v, s, named, &format!("{path}/{i}"), out);
                }
            }
        }
        _ => {}
    }
}

fn resolve<'a>(schema: &'a Value, named: &'a Map<String, Value>) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => resolve(&named[r.rsplit('/').next().unwrap()], named),
        None => schema,
    }
}

fn named(schemas: &Schemas) -> Map<String, Value> {
    schemas
        .iter()
        .map(|(n, s)| (n.clone(), serde_json::to_value(s).unwrap()))
        .collect()
}

/// Decodes `plain` strictly and `extended` through the client with `decode`; both must agree,
/// and the client must have set aside exactly `extras`.
fn agree<T: Serialize>(
    what: &str,
    plain: Result<T, serde_json::Error>,
    extended: Result<T, serde_json::Error>,
    failures: &mut Vec<String>,
) {
    let plain = match plain {
        Ok(p) => p,
        Err(e) => {
            failures.push(format!("{what}: the sample does not read strictly: {e}"));
            return;
        }
    };
    match extended {
        Ok(e) => {
            if serde_json::to_value(&e).unwrap() != serde_json::to_value(&plain).unwrap() {
                failures.push(format!("{what}: the extras changed what was read"));
            }
        }
        Err(e) => failures.push(format!("{what}: an answer with extra fields fails: {e}")),
    }
}

fn check_record<T: Record>(failures: &mut Vec<String>, checked: &mut usize) {
    let mut schemas = Schemas::new();
    let root = serde_json::to_value(prodops_core::api::schema_of::<T>(&mut schemas)).unwrap();
    let named = named(&schemas);
    let plain = sample(&root, &named, 0);
    let mut extended = plain.clone();
    let mut extras = Vec::new();
    add_extras(&mut extended, &root, &named, "", &mut extras);
    assert!(!extras.is_empty());
    let what = T::DESC.path;
    if serde_json::from_value::<T>(extended.clone()).is_ok() {
        failures.push(format!(
            "{what}: the type's own reading took the extras (the server would)"
        ));
    }
    agree(
        what,
        serde_json::from_value::<T>(plain.clone()),
        compat::from_slice::<T>(&serde_json::to_vec(&extended).unwrap()),
        failures,
    );
    // As the list answers it, in a page, kept by `Lenient`.
    let page = json!({"values": [extended], "totalCount": 1, "nextCursor": null});
    match compat::from_slice::<prodops_client::Page<Lenient<T>>>(
        &serde_json::to_vec(&page).unwrap(),
    ) {
        Ok(p) => {
            let kept: Vec<&String> = p.values[0].unknown.keys().collect();
            let mut want: Vec<&String> = extras.iter().collect();
            want.sort();
            if kept != want {
                failures.push(format!("{what}: kept {kept:?}, expected {want:?}"));
            }
        }
        Err(e) => failures.push(format!("{what} in a page: {e}")),
    }
    *checked += 1;
}

fn check_action<E: Endpoint>(failures: &mut Vec<String>, checked: &mut usize)
where
    <E::Answer as AnswerKind>::Out: Serialize,
{
    let mut schemas = Schemas::new();
    let (schema, wrap): (_, fn(Value) -> Value) = match E::DESC.answer {
        AnswerBody::Json(Some(f)) => (f(&mut schemas), |v| v),
        AnswerBody::Value(f) => (f(&mut schemas), |v| json!({"value": v})),
        AnswerBody::Page(Some(f)) => (
            f(&mut schemas),
            |v| json!({"values": [v], "totalCount": 1, EXTRA: 1}),
        ),
        // Free-form JSON, bytes, nothing: nothing to refuse.
        _ => return,
    };
    let root = serde_json::to_value(schema).unwrap();
    let named = named(&schemas);
    let plain = sample(&root, &named, 0);
    let mut extended = plain.clone();
    let mut extras = Vec::new();
    add_extras(&mut extended, &root, &named, "", &mut extras);
    let what = E::DESC.operation_id;
    let plain = serde_json::to_vec(&wrap(plain)).unwrap();
    let mut extended = wrap(extended);
    if let Some(o) = extended.as_object_mut() {
        o.insert(format!("{EXTRA}Top"), json!(1));
    }
    let extended = serde_json::to_vec(&extended).unwrap();
    agree(
        what,
        <E::Answer as AnswerKind>::decode(&plain),
        <E::Answer as AnswerKind>::decode_with::<compat::Reader>(&extended),
        failures,
    );
    *checked += 1;
}

macro_rules! check_resources {
    ($($id:ident => $record:ty,)*) => {
        fn every_resource(failures: &mut Vec<String>) -> usize {
            let mut checked = 0;
            $( check_record::<$record>(failures, &mut checked); )*
            checked
        }
    };
}
prodops_core::for_each_resource!(check_resources);

macro_rules! check_actions {
    ($($e:path),* $(,)?) => {
        fn every_action(failures: &mut Vec<String>) -> usize {
            let mut checked = 0;
            $( check_action::<$e>(failures, &mut checked); )*
            checked
        }
    };
}
prodops_core::for_each_action!(check_actions);

#[test]
fn every_record_reads_with_fields_of_a_newer_server_at_every_level() {
    let mut failures = Vec::new();
    let checked = every_resource(&mut failures);
    assert_eq!(checked, prodops_core::registry::resources().len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_action_answer_reads_with_fields_of_a_newer_server_at_every_level() {
    let mut failures = Vec::new();
    let checked = every_action(&mut failures);
    assert!(checked > 20, "only {checked} actions have typed answers");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn strict_reading_still_refuses_them() {
    // The server's side of the same types: a request naming an unknown field is refused.
    let worker = json!({
        "id": "0191c3a8-0000-7000-8000-000000000001",
        "organizationId": "0191c3a8-0000-7000-8000-000000000002",
        "name": "Ann", "createdAt": "2025-01-01T00:00:00Z", "updatedAt": "2025-01-01T00:00:00Z",
        EXTRA: 1
    });
    assert!(serde_json::from_value::<prodops_core::worker::Worker>(worker.clone()).is_err());
    let read: prodops_core::worker::Worker =
        compat::from_slice(worker.to_string().as_bytes()).unwrap();
    assert_eq!(read.name, "Ann");
}
