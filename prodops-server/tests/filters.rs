//! The equality filter of every list, query, count and bulk call, checked against a reference
//! model on a real database (`PRODOPS_TEST_DATABASE_URL` for PostgreSQL, else SQLite): random
//! records, random filter values, the same answer on both dialects.
//!
//! The semantics (docs/api.md): a value compares by the stored JSON type. A string equals the
//! text; a number equals a numeric text (`5` and `5.0` alike); a boolean equals `true`/`false` in
//! any letter case; null or a missing field equals `null`; an array contains an element whose
//! text form (strings as they are, numbers as written, booleans as `true`/`false`) is the text.

mod common;
use common::database_url;

use std::collections::BTreeSet;

use prodops_server::store::records::{self, Select};
use prodops_server::store::sql::{Cond, FieldPath};
use prodops_server::store::{Store, StoreError};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Map, Value, json};
use uuid::Uuid;

const RAW: &[&str] = &[
    "5", "5.0", "2.5", "-1", "1e1", "10", "abc", "ABC", "true", "TRUE", "false", "null", "", " 5",
    LONG_200, LONG_199,
];

/// Texts at the length the property value index keeps of a string (200 characters) and around
/// it: a stored string of 205 shares its first 200 with `LONG_200`, which only the record tells
/// apart.
const LONG_199: &str = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
const LONG_200: &str = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
const LONG_205: &str = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
const FIELDS: &[&str] = &["s", "n", "b", "arr"];

fn scalar_text() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        "5", "abc", "ABC", "true", "null", "", " 5", "2.5", LONG_199, LONG_200, LONG_205,
    ])
    .prop_map(|s| json!(s))
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![5i64, -1, 10, 0]).prop_map(|n| json!(n)),
        prop::sample::select(vec![2.5f64, 5.0, -1.0]).prop_map(|f| json!(f)),
    ]
}

fn element() -> impl Strategy<Value = Value> {
    prop_oneof![
        scalar_text(),
        number(),
        any::<bool>().prop_map(Value::Bool),
        Just(Value::Null)
    ]
}

/// A record: each field missing, null or of its kind.
fn record() -> impl Strategy<Value = Map<String, Value>> {
    let maybe = |s: BoxedStrategy<Value>| {
        prop_oneof![Just(None), Just(Some(Value::Null)), s.prop_map(Some)]
    };
    (
        maybe(scalar_text().boxed()),
        maybe(number().boxed()),
        maybe(any::<bool>().prop_map(Value::Bool).boxed()),
        maybe(
            prop::collection::vec(element(), 0..4)
                .prop_map(Value::Array)
                .boxed(),
        ),
    )
        .prop_map(|(s, n, b, arr)| {
            let mut m = Map::new();
            for (k, v) in [("s", s), ("n", n), ("b", b), ("arr", arr)] {
                if let Some(v) = v {
                    m.insert(k.into(), v);
                }
            }
            m
        })
}

fn numeric(raw: &str) -> Option<f64> {
    let looks_numeric = raw
        .bytes()
        .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
        && raw.bytes().any(|b| b.is_ascii_digit());
    looks_numeric
        .then(|| raw.parse::<f64>().ok())
        .flatten()
        .filter(|f| f.is_finite())
}

fn element_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The reference: does a stored value match one raw filter text?
fn matches(value: Option<&Value>, raw: &str) -> bool {
    match value {
        None | Some(Value::Null) => raw == "null",
        Some(Value::String(s)) => s == raw,
        Some(Value::Number(n)) => numeric(raw) == n.as_f64(),
        Some(Value::Bool(b)) => raw.eq_ignore_ascii_case(&b.to_string()),
        Some(Value::Array(items)) => items
            .iter()
            .any(|e| element_text(e).as_deref() == Some(raw)),
        Some(Value::Object(_)) => false,
    }
}

/// The ids of the records of `table` a page of up to 1,000 under `conds` holds, and what a
/// count under them answers.
fn found_and_counted(
    runtime: &tokio::runtime::Runtime,
    store: &Store,
    table: &'static str,
    org: Uuid,
    conds: Vec<Cond>,
) -> (BTreeSet<String>, u64) {
    let (found, counted) = runtime
        .block_on(store.read(move |tx| {
            let select = Select {
                conds: conds.clone(),
                limit: 1000,
                ..Default::default()
            };
            let found = records::select_values(tx, table, org, &select)?;
            let counted = records::count(tx, table, org, &conds)?;
            Ok::<_, StoreError>((found, counted))
        }))
        .unwrap();
    let found = found
        .iter()
        .map(|d| d["id"].as_str().unwrap().to_string())
        .collect();
    (found, counted)
}

#[test]
fn equality_filters_follow_the_reference_semantics_on_the_real_database() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store: Store = runtime.block_on(Store::open(&database_url(&dir))).unwrap();
    let filter = (
        prop::sample::select(FIELDS.to_vec()),
        // Up to many values: one value is bound as such, several as one array.
        prop::collection::vec(prop::sample::select(RAW.to_vec()), 0..12),
    );
    let case = (
        prop::collection::vec(record(), 1..12),
        prop::collection::vec(filter, 1..6),
    );
    let mut runner = TestRunner::new(Config {
        cases: 48,
        ..Config::default()
    });
    runner
        .run(&case, |(rows, filters)| {
            let org = Uuid::now_v7();
            let mut stored = Vec::new();
            for fields in rows {
                let id = Uuid::now_v7().to_string();
                let mut doc = Map::new();
                doc.insert("id".into(), json!(id));
                doc.insert("createdAt".into(), json!("2026-11-21T00:00:00.000Z"));
                doc.extend(fields);
                stored.push((id, Value::Object(doc)));
            }
            let docs: Vec<Value> = stored.iter().map(|(_, d)| d.clone()).collect();
            runtime
                .block_on(store.write(move |tx| {
                    docs.iter()
                        .try_for_each(|d| records::insert(tx, "note", org, d))
                }))
                .unwrap();
            for (field, raws) in filters {
                let expected: BTreeSet<String> = stored
                    .iter()
                    .filter(|(_, d)| raws.iter().any(|r| matches(d.get(field), r)))
                    .map(|(id, _)| id.clone())
                    .collect();
                let path = FieldPath::parse(field).unwrap();
                let values: Vec<String> = raws.iter().map(|r| r.to_string()).collect();
                let mut conds = vec![Cond::Field {
                    path: path.clone(),
                    values: values.clone(),
                }];
                // `s` holds a string or null: `Cond::Text` must give the same answer.
                let text_conds = (field == "s").then(|| vec![Cond::Text { path, values }]);
                for conds in [Some(std::mem::take(&mut conds)), text_conds]
                    .into_iter()
                    .flatten()
                {
                    let (found, counted) = found_and_counted(&runtime, &store, "note", org, conds);
                    prop_assert_eq!(
                        &found,
                        &expected,
                        "filter {}={:?} over {:?}",
                        field,
                        raws,
                        stored
                    );
                    prop_assert_eq!(counted, expected.len() as u64);
                }
            }
            Ok(())
        })
        .unwrap();
}

/// Thousands of values on an array field, a number field and a string field, over thousands of
/// records: exact answers, each statement within the statement timeout whether PostgreSQL
/// plans it for the values at hand or generically (the first runs and the later ones).
#[test]
fn filters_of_ten_thousand_values_match_arrays_numbers_and_strings() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store: Store = runtime
        .block_on(Store::open_with(
            &database_url(&dir),
            std::time::Duration::from_secs(20),
        ))
        .unwrap();
    let org = Uuid::now_v7();
    let n = 6_000;
    let docs: Vec<Value> = (0..n)
        .map(|i| {
            json!({
                "id": Uuid::now_v7().to_string(),
                "createdAt": "2026-11-21T00:00:00.000Z",
                "arr": [format!("t{i}"), i],
                "n": i,
                "s": format!("s{i}"),
            })
        })
        .collect();
    let rows: Vec<records::NewRow> = docs
        .iter()
        .map(|d| records::NewRow::of_text(d.to_string()).unwrap())
        .collect();
    runtime
        .block_on(store.write(move |tx| records::insert_rows(tx, "note", org, &rows)))
        .unwrap();
    // Every third record's values, and as many that match nothing: 4,000 values.
    let values = |prefix: &str| -> Vec<String> {
        (0..n)
            .step_by(3)
            .map(|i| format!("{prefix}{i}"))
            .chain((0..2_000).map(|i| format!("{prefix}x{i}")))
            .collect()
    };
    let cases = [
        ("arr", values("t")),
        ("arr", values("")),
        ("n", values("")),
        ("s", values("s")),
    ];
    for run in 0..7 {
        for (field, values) in &cases {
            let conds = vec![Cond::Field {
                path: FieldPath::parse(field).unwrap(),
                values: values.clone(),
            }];
            let counted = runtime
                .block_on(store.read(move |tx| records::count(tx, "note", org, &conds)))
                .unwrap();
            assert_eq!(counted, 2_000, "run {run}: {field}");
        }
    }
}

/// The same semantics on the custom properties of deliverables (`data.properties.<key>`),
/// answered through the property value index (`Cond::Property`), which triggers keep: after
/// inserts, after updates that change, drop or keep the properties, and after deletes.
#[test]
fn property_filters_through_the_value_index_follow_the_reference_semantics() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store: Store = runtime.block_on(Store::open(&database_url(&dir))).unwrap();
    let filter = (
        prop::sample::select(FIELDS.to_vec()),
        prop::collection::vec(prop::sample::select(RAW.to_vec()), 0..12),
    );
    let case = (
        prop::collection::vec(record(), 2..12),
        prop::collection::vec(filter, 1..5),
        // How far each record's properties move in the update round (0: unchanged).
        0..4usize,
    );
    let mut runner = TestRunner::new(Config {
        cases: 32,
        ..Config::default()
    });
    let deliverable = |id: &str, props: &Map<String, Value>| {
        json!({
            "id": id,
            "createdAt": "2026-11-21T00:00:00.000Z",
            "name": "n",
            "data": {"properties": props},
        })
    };
    // How many checks found at least one record, so the test cannot pass on empty answers.
    let nonempty = std::cell::Cell::new(0u32);
    runner
        .run(&case, |(rows, filters, shift)| {
            let org = Uuid::now_v7();
            let ids: Vec<String> = rows.iter().map(|_| Uuid::now_v7().to_string()).collect();
            let docs: Vec<Value> = ids
                .iter()
                .zip(&rows)
                .map(|(id, p)| deliverable(id, p))
                .collect();
            runtime
                .block_on(store.write(move |tx| {
                    docs.iter()
                        .try_for_each(|d| records::insert(tx, "deliverable", org, d))
                }))
                .unwrap();
            let check = |stored: &[(String, Map<String, Value>)]| -> Result<(), TestCaseError> {
                for (field, raws) in &filters {
                    let expected: BTreeSet<String> = stored
                        .iter()
                        .filter(|(_, p)| raws.iter().any(|r| matches(p.get(*field), r)))
                        .map(|(id, _)| id.clone())
                        .collect();
                    let conds = vec![Cond::Property {
                        key: field.to_string(),
                        values: raws.iter().map(|r| r.to_string()).collect(),
                    }];
                    let (found, counted) =
                        found_and_counted(&runtime, &store, "deliverable", org, conds);
                    prop_assert_eq!(&found, &expected, "{}={:?} over {:?}", field, raws, stored);
                    nonempty.set(nonempty.get() + u32::from(!found.is_empty()));
                    prop_assert_eq!(counted, expected.len() as u64);
                }
                Ok(())
            };
            let mut stored: Vec<(String, Map<String, Value>)> =
                ids.iter().cloned().zip(rows.iter().cloned()).collect();
            check(&stored)?;
            // Each record takes the properties of the one `shift` places on; the last is
            // deleted.
            let n = stored.len();
            let moved: Vec<(String, Map<String, Value>)> = (0..n)
                .map(|i| (stored[i].0.clone(), stored[(i + shift) % n].1.clone()))
                .collect();
            let gone = moved[n - 1].0.clone();
            let updates: Vec<Value> = moved[..n - 1]
                .iter()
                .map(|(id, p)| deliverable(id, p))
                .collect();
            let gone_id = Uuid::parse_str(&gone).unwrap();
            runtime
                .block_on(store.write(move |tx| {
                    for d in &updates {
                        records::update(tx, "deliverable", org, d)?;
                    }
                    records::delete(tx, "deliverable", org, gone_id).map(|_| ())
                }))
                .unwrap();
            stored = moved[..n - 1].to_vec();
            check(&stored)
        })
        .unwrap();
    assert!(
        nonempty.get() >= 10,
        "{} checks matched records",
        nonempty.get()
    );
}
