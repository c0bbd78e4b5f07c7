//! Equality filters of any size (issue 13, item 2): a filter's values are bound as one array,
//! so thousands of them work on list, query, count, group-and-count and bulk PATCH, with the
//! same answers as one value at a time, on SQLite and on PostgreSQL.

use std::collections::{BTreeMap, BTreeSet};

use prodops_tests::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;
use uuid::Uuid;

/// The longest URI (path and query) the HTTP layer reads (hyper's limit); past it: 414.
const MAX_URI_BYTES: usize = 65_534;

/// Workers `0..n`: `name` `n{i}`, `customerIdentifier` `C{i:05}`, status by `i % 3`.
fn workers(n: usize) -> Vec<Value> {
    const STATUS: [&str; 3] = ["active", "inactive", "terminated"];
    (0..n)
        .map(|i| json!({"name": format!("n{i}"), "customerIdentifier": format!("C{i:05}"), "status": STATUS[i % 3]}))
        .collect()
}

/// Seeds `records` with bulk PUTs of at most 20,000 each; the ids in order.
async fn seed(api: &Api, resource: &str, records: Vec<Value>) -> Vec<String> {
    let mut ids = Vec::with_capacity(records.len());
    for chunk in records.chunks(20_000) {
        ids.extend(api.bulk_put(resource, chunk.to_vec()).await);
    }
    ids
}

fn id_set(values: &Value) -> BTreeSet<String> {
    values
        .as_array()
        .unwrap_or_else(|| panic!("an array: {values}"))
        .iter()
        .map(|v| v["id"].as_str().expect("id").to_string())
        .collect()
}

/// `field=v1&field=v2...` (the values here are letters and digits: nothing to encode).
fn query_string(field: &str, values: &[String]) -> String {
    assert!(
        values
            .iter()
            .all(|v| v.bytes().all(|b| b.is_ascii_alphanumeric()))
    );
    values
        .iter()
        .map(|v| format!("{field}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// The status line and headers of a GET sent as raw bytes (for URIs no HTTP client builds).
async fn raw_get(server: &TestServer, api: &Api, target: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = server.base_url().trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let request = format!(
        "GET {target} HTTP/1.1\r\nHost: {addr}\r\nX-API-Key: {}\r\nConnection: close\r\n\r\n",
        api.key().unwrap()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.unwrap();
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_values_on_query_count_group_and_count_and_the_longest_urls() {
    let server = TestServer::start().await;
    let api = server.org("Scale").await;
    let n = 12_000;
    let ids = seed(&api, "worker", workers(n)).await;

    // 10,000 identifiers: every even worker's (6,000 present) and 4,000 that match nothing.
    let present: Vec<usize> = (0..n).step_by(2).collect();
    let mut wanted: Vec<String> = present.iter().map(|i| format!("C{i:05}")).collect();
    wanted.extend((0..4_000).map(|i| format!("X{i:05}")));
    assert_eq!(wanted.len(), 10_000);
    let expected: BTreeSet<String> = present.iter().map(|&i| ids[i].clone()).collect();

    // Query: the filter, and 10,000 ids (half of them unknown) with it.
    let resp = api
        .post(
            "/worker/query",
            json!({"filter": {"customerIdentifier": wanted}, "select": ["id"], "pageSize": 10000}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["totalCount"], 6_000, "{resp}");
    assert_eq!(id_set(&resp.body["values"]), expected);
    let mut by_id: Vec<String> = ids.iter().step_by(3).take(5_000).cloned().collect();
    by_id.extend((0..5_000).map(|_| Uuid::new_v4().to_string()));
    let resp = api
        .post(
            "/worker/query",
            json!({"id": by_id, "filter": {"customerIdentifier": wanted}, "select": ["id"], "pageSize": 10000}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let both: BTreeSet<String> = ids
        .iter()
        .enumerate()
        .step_by(3)
        .take(5_000)
        .filter(|(i, _)| i % 2 == 0)
        .map(|(_, id)| id.clone())
        .collect();
    assert_eq!(id_set(&resp.body["values"]), both);
    assert_eq!(resp.body["totalCount"], both.len() as u64);

    // A field that is not a plain string (an enum: the general, typed comparison), with
    // 10,000 values of which two are present.
    let mut statuses: Vec<String> = (0..9_998).map(|i| format!("s{i}")).collect();
    statuses.extend(["inactive".to_string(), "terminated".to_string()]);
    let resp = api
        .post("/worker/count", json!({"filter": {"status": statuses}}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["count"], 8_000, "{resp}");

    // Count and group-and-count with the 10,000 identifiers.
    let resp = api
        .post(
            "/worker/count",
            json!({"filter": {"customerIdentifier": wanted}}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["count"], 6_000, "{resp}");
    let resp = api
        .post(
            "/worker/group-and-count",
            json!({"groupByField": "status", "filter": {"customerIdentifier": wanted}}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    // Even workers: i % 3 cycles through all three statuses, 2,000 each.
    assert_eq!(
        resp.body,
        json!({"values": [
            {"groupId": "active", "count": 2000},
            {"groupId": "inactive", "count": 2000},
            {"groupId": "terminated", "count": 2000}
        ]}),
        "{resp}"
    );

    // GET: 10,000 identifiers make a URI longer than the HTTP layer reads (and than HTTP
    // clients build): a plain 414, sent here byte for byte.
    let long = query_string("customerIdentifier", &wanted);
    assert!(long.len() > MAX_URI_BYTES);
    for path in ["/api/v2/worker", "/api/v2/worker/count"] {
        let head = raw_get(&server, &api, &format!("{path}?{long}")).await;
        assert!(head.starts_with("HTTP/1.1 414"), "{head}");
    }

    // The most values a URI holds: list, count and bulk PATCH answer exactly.
    // (Clients count the whole URL, scheme and host included.)
    let fits = |field: &str, values: &[String]| {
        let mut len = format!("{}/worker/count?&pageSize=10000", api.base()).len();
        values
            .iter()
            .take_while(|v| {
                len += field.len() + v.len() + 2;
                len <= MAX_URI_BYTES
            })
            .cloned()
            .collect::<Vec<_>>()
    };
    let by_name: Vec<String> = (0..n)
        .filter(|i| i % 4 != 1)
        .map(|i| format!("n{i}"))
        .chain((0..2_000).map(|i| format!("z{i}")))
        .collect();
    let names = fits("name", &by_name);
    assert!(names.len() > 4_000, "{} values fit", names.len());
    let named: BTreeSet<String> = (0..n)
        .filter(|i| names.contains(&format!("n{i}")))
        .map(|i| ids[i].clone())
        .collect();
    let q = query_string("name", &names);
    let resp = api.get(&format!("/worker?{q}&pageSize=10000")).await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(id_set(&resp.body["values"]), named);
    assert_eq!(resp.body["totalCount"], named.len() as u64);
    assert_eq!(api.count("worker", &q).await, named.len() as u64);

    let resp = api
        .patch(&format!("/worker/bulk?{q}"), json!({"unionCode": "U-7"}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["count"], named.len() as u64, "{resp}");
    let resp = api
        .post(
            "/worker/query",
            json!({"filter": {"unionCode": "U-7"}, "select": ["id"], "pageSize": 10000}),
        )
        .await;
    assert_eq!(id_set(&resp.body["values"]), named, "exactly those changed");
}

// ---------------------------------------------------------------- the property

/// A value of a random filter.
#[derive(Debug, Clone)]
enum Pick {
    /// The field's value of the seeded record at this index (an id may be sent upper-case).
    Present(usize, bool),
    /// A value no record holds.
    Absent(u32),
    /// A number (matches a numeric field holding it).
    Number(i64),
}

/// The fields the property filters on: a plain string, an enum, a number, the id column and
/// the query body's `id` list.
const FIELDS: &[(&str, &str)] = &[
    ("worker", "customerIdentifier"),
    ("worker", "status"),
    ("worker", "id"),
    ("worker", "ids"),
    ("catalog-entry", "sortOrder"),
    ("catalog-entry", "code"),
];

/// The seeded records of one resource: id and the field values the property uses.
struct Seeded {
    ids: Vec<String>,
    records: Vec<Value>,
}

fn text_of(pick: &Pick, field: &str, seeded: &Seeded) -> Value {
    match pick {
        Pick::Present(i, upper) => {
            let i = i % seeded.ids.len();
            match field {
                "id" | "ids" if *upper => json!(seeded.ids[i].to_uppercase()),
                "id" | "ids" => json!(seeded.ids[i]),
                _ => seeded.records[i][field].clone(),
            }
        }
        Pick::Absent(k) if field == "id" || field == "ids" => {
            json!(Uuid::from_u128(0xabcd_0000 + u128::from(*k)).to_string())
        }
        // The body's `id` list holds UUIDs only.
        Pick::Number(n) if field == "ids" => {
            json!(Uuid::from_u128(0xef00_0000 + u128::from(n.unsigned_abs())).to_string())
        }
        Pick::Absent(k) => json!(format!("absent-{k}")),
        Pick::Number(n) => json!(n),
    }
}

/// The reference: the records whose field equals one of the values (a string by its text,
/// UUIDs case-insensitively; a number by its numeric value).
fn reference(seeded: &Seeded, field: &str, values: &[Value]) -> BTreeSet<String> {
    let texts: BTreeSet<String> = values
        .iter()
        .map(|v| match v {
            Value::String(s) if s.len() == 36 && Uuid::parse_str(s).is_ok() => s.to_lowercase(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect();
    let numbers: Vec<f64> = values.iter().filter_map(Value::as_f64).collect();
    seeded
        .ids
        .iter()
        .zip(&seeded.records)
        .filter(|(id, r)| match field {
            "id" | "ids" => texts.contains(*id),
            _ => match &r[field] {
                Value::String(s) => texts.contains(s),
                Value::Number(n) => numbers.contains(&n.as_f64().unwrap()),
                _ => false,
            },
        })
        .map(|(id, _)| id.clone())
        .collect()
}

#[test]
fn random_filters_of_up_to_20000_values_match_the_reference() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (server, api, seeded) = runtime.block_on(async {
        let server = TestServer::start().await;
        let api = server.org("Property").await;
        let workers = workers(4_000);
        let worker_ids = seed(&api, "worker", workers.clone()).await;
        // Sort orders repeat (i % 700), so a number matches several entries.
        let entries: Vec<Value> = (0..2_000)
            .map(|i| json!({"catalog": "pay_type", "code": format!("K{i}"), "sortOrder": i % 700}))
            .collect();
        let entry_ids = seed(&api, "catalog-entry", entries.clone()).await;
        let mut seeded = BTreeMap::new();
        seeded.insert(
            "worker",
            Seeded {
                ids: worker_ids,
                records: workers,
            },
        );
        seeded.insert(
            "catalog-entry",
            Seeded {
                ids: entry_ids,
                records: entries,
            },
        );
        (server, api, seeded)
    });

    let pick = prop_oneof![
        4 => (0usize..100_000, any::<bool>()).prop_map(|(i, u)| Pick::Present(i, u)),
        3 => (0u32..1_000_000).prop_map(Pick::Absent),
        1 => (-50i64..1_000).prop_map(Pick::Number),
    ];
    let case = (
        prop::sample::select(FIELDS.to_vec()),
        // Mostly large: 0 to 20,000 values.
        prop_oneof![0usize..20, 20usize..=20_000],
    )
        .prop_flat_map(move |(field, n)| (Just(field), prop::collection::vec(pick.clone(), n..=n)));
    let mut runner = TestRunner::new(Config {
        cases: 10,
        ..Config::default()
    });
    runner
        .run(&case, |((resource, field), picks)| {
            let seeded = &seeded[resource];
            let values: Vec<Value> = picks.iter().map(|p| text_of(p, field, seeded)).collect();
            let expected = reference(seeded, field, &values);
            let body = if field == "ids" {
                json!({"id": values, "select": ["id"], "pageSize": 10000})
            } else {
                json!({"filter": {field: values}, "select": ["id"], "pageSize": 10000})
            };
            let (found, counted) = runtime.block_on(async {
                let resp = api.post(&format!("/{resource}/query"), body.clone()).await;
                assert_eq!(resp.status, 200, "{resp}");
                let counted = if field == "ids" {
                    resp.body["totalCount"].as_u64().unwrap()
                } else {
                    let c = api
                        .post(
                            &format!("/{resource}/count"),
                            json!({"filter": body["filter"]}),
                        )
                        .await;
                    assert_eq!(c.status, 200, "{c}");
                    c.body["count"].as_u64().unwrap()
                };
                (id_set(&resp.body["values"]), counted)
            });
            prop_assert_eq!(
                &found,
                &expected,
                "{}.{} with {} values",
                resource,
                field,
                values.len()
            );
            prop_assert_eq!(counted, expected.len() as u64);
            Ok(())
        })
        .unwrap();
    runtime.block_on(server.shutdown());
}
