//! Hostile text on every text parameter (issue 13 item 4, docs/limits.md): U+0000 and lone
//! surrogates are refused with 400 `VALIDATION_ERROR` naming the parameter or field, wherever
//! text enters (query strings, path segments, JSON bodies, the bulk PUT's raw records); 100 KB
//! strings and SQL and LIKE metacharacters never cause a 5xx; indexed text fields hold at most
//! 256 characters on both databases; accepted text round-trips exactly, and search treats
//! `%`, `_` and `\` as themselves.
//!
//! The sweep over every operation is driven by the server's own OpenAPI document, so a new
//! endpoint or parameter is covered without a change here.

use prodops_tests::*;
use serde_json::{Map, Value};

/// SQL and LIKE metacharacters, quotes, a comment, and non-ASCII text.
const META: &str = "%_\\'\";--%' OR '1'='1 [x]* ?é😀";

/// `{key: value}`.
fn obj(key: &str, value: Value) -> Value {
    let mut m = Map::new();
    m.insert(key.to_string(), value);
    Value::Object(m)
}

fn big() -> String {
    "x".repeat(100_000)
}

/// The longest value a URL can carry here: the HTTP library's URIs hold at most 65,534 bytes
/// (docs/limits.md), so 100 KB travels in bodies only.
fn url_big() -> String {
    "x".repeat(60_000)
}

async fn server() -> TestServer {
    TestServer::start_with(|c| c.rate_limit = 10_000_000).await
}

/// A 4xx in the error shape, or a success; never a 5xx (the harness checks that on every
/// answer).
fn answered(resp: &Resp) {
    if resp.status >= 400 {
        let code = resp.code().unwrap_or("").to_string();
        assert_error(resp, resp.status, &code);
    }
}

/// One operation of the OpenAPI document.
struct Op {
    method: reqwest::Method,
    /// The path under `/api/v2` with `{name}` placeholders.
    path: String,
    path_params: Vec<String>,
    query_params: Vec<String>,
    /// The top-level properties of a JSON request body (`None`: no JSON body); `array` for a
    /// body that is an array of such records.
    body: Option<(Vec<String>, bool)>,
}

fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let mut at = doc;
            for seg in r.trim_start_matches("#/").split('/') {
                at = &at[seg];
            }
            at
        }
        None => v,
    }
}

fn properties(doc: &Value, schema: &Value) -> Vec<String> {
    let schema = resolve(doc, schema);
    let mut names: Vec<String> = schema["properties"]
        .as_object()
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    for part in ["allOf", "oneOf", "anyOf"] {
        for s in schema[part].as_array().into_iter().flatten() {
            names.extend(properties(doc, s));
        }
    }
    names.sort();
    names.dedup();
    names
}

async fn operations(api: &Api) -> Vec<Op> {
    let resp = api.get("/openapi.json").await;
    assert_eq!(resp.status, 200);
    let doc = resp.body;
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        let path = path.strip_prefix("/api/v2").unwrap_or(path).to_string();
        for (method, op) in item.as_object().unwrap() {
            let method = match method.as_str() {
                "get" => reqwest::Method::GET,
                "post" => reqwest::Method::POST,
                "put" => reqwest::Method::PUT,
                "patch" => reqwest::Method::PATCH,
                "delete" => reqwest::Method::DELETE,
                _ => continue,
            };
            let mut path_params = Vec::new();
            let mut query_params = Vec::new();
            for p in op["parameters"].as_array().into_iter().flatten() {
                let p = resolve(&doc, p);
                let name = p["name"].as_str().unwrap_or_default().to_string();
                match p["in"].as_str() {
                    Some("path") => path_params.push(name),
                    Some("query") => {
                        let fields = properties(&doc, &p["schema"]);
                        if fields.is_empty() {
                            query_params.push(name);
                        } else {
                            // A form-exploded object: one query parameter per property.
                            query_params.extend(fields);
                        }
                    }
                    _ => {}
                }
            }
            let body = op["requestBody"]["content"]["application/json"]["schema"]
                .as_object()
                .map(|_| {
                    let schema = resolve(
                        &doc,
                        &op["requestBody"]["content"]["application/json"]["schema"],
                    );
                    if schema["type"] == "array" {
                        (properties(&doc, &schema["items"]), true)
                    } else {
                        (properties(&doc, schema), false)
                    }
                });
            ops.push(Op {
                method,
                path: path.clone(),
                path_params,
                query_params,
                body,
            });
        }
    }
    assert!(ops.len() > 100, "the document lists the operations");
    ops
}

impl Op {
    /// The path with every placeholder replaced by `value` (already percent-encoded).
    fn path_with(&self, value: &str) -> String {
        let mut path = self.path.clone();
        for p in &self.path_params {
            path = path.replace(&format!("{{{p}}}"), value);
        }
        path
    }

    /// A path whose placeholders hold well-formed ids (of nothing).
    fn plain_path(&self) -> String {
        self.path_with("00000000-0000-7000-8000-000000000000")
    }

    async fn send(&self, api: &Api, path: &str, body: Option<Body>) -> Resp {
        let mut req = api.req(self.method.clone(), path);
        req = match body {
            Some(Body::Json(v)) => req.json(v),
            Some(Body::Raw(b)) => req.raw(b),
            _ if self.body.is_some() => req.json(json!({})),
            _ => req,
        };
        req.send().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_parameter_and_path_segment_refuses_nul_and_non_utf8() {
    let server = server().await;
    let api = server.org("Hostile URLs").await;
    let big = url_big();
    for op in operations(&api).await {
        let base = op.plain_path();
        for name in &op.query_params {
            for (value, refused) in [("a%00b", true), ("%ED%A0%80", true), ("%C3%28", true)] {
                let resp = op
                    .send(&api, &format!("{base}?{}={value}", enc(name)), None)
                    .await;
                if refused {
                    assert_validation_names(&resp, name);
                }
            }
            for value in [enc(META), enc(&big), String::new()] {
                let resp = op
                    .send(&api, &format!("{base}?{}={value}", enc(name)), None)
                    .await;
                answered(&resp);
            }
        }
        // A parameter the operation does not know, with hostile names and values.
        let resp = op
            .send(&api, &format!("{base}?{}=1", enc(META)), None)
            .await;
        answered(&resp);
        let resp = op.send(&api, &format!("{base}?x%00y=1"), None).await;
        assert_validation_names(&resp, "query");
        if !op.path_params.is_empty() {
            let resp = op.send(&api, &op.path_with("a%00b"), None).await;
            assert_validation_names(&resp, "path");
            let resp = op.send(&api, &op.path_with("%ED%A0%80"), None).await;
            assert_validation_names(&resp, "path");
            // Two segments of 20,000 characters stay inside the URI limit.
            for value in [enc(META), "y".repeat(20_000), enc("' OR 1=1;--")] {
                answered(&op.send(&api, &op.path_with(&value), None).await);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_json_body_refuses_nul_and_lone_surrogates_and_survives_big_and_odd_text() {
    let server = server().await;
    let api = server.org("Hostile bodies").await;
    let big = big();
    for op in operations(&api).await {
        let Some((fields, array)) = &op.body else {
            continue;
        };
        let path = op.plain_path();
        let wrap = |record: Value| {
            if *array {
                json!([{"name": "fine"}, record])
            } else {
                record
            }
        };
        let mut fields = fields.clone();
        if fields.is_empty() {
            fields.push("name".into());
        }
        for field in &fields {
            // U+0000 as an escape, in a value and in a nested key.
            let resp = op
                .send(
                    &api,
                    &path,
                    Some(Body::Json(wrap(obj(field, json!("a\u{0}b"))))),
                )
                .await;
            assert_validation_names(&resp, field);
            if *array {
                assert!(
                    resp.body["error"]["details"]
                        .as_array()
                        .is_some_and(|d| d.iter().any(|d| d["index"] == 1)),
                    "the record's index is named: {resp}"
                );
            }
            let resp = op
                .send(
                    &api,
                    &path,
                    Some(Body::Json(wrap(obj(field, json!({"k\u{0}": 1}))))),
                )
                .await;
            assert_validation_names(&resp, field);
            // A lone surrogate, which only raw JSON text can carry.
            let record = format!("{{{}: \"x\\ud800\"}}", Value::String(field.clone()));
            let raw = if *array {
                format!("[{{\"name\": \"fine\"}}, {record}]")
            } else {
                record
            };
            let resp = op
                .send(&api, &path, Some(Body::Raw(raw.into_bytes())))
                .await;
            assert_validation_names(&resp, field);
            // Big and odd text: answered, never a 5xx.
            for value in [
                json!(META),
                json!(big),
                json!([META]),
                obj(META, json!(META)),
            ] {
                let resp = op
                    .send(&api, &path, Some(Body::Json(wrap(obj(field, value)))))
                    .await;
                answered(&resp);
            }
        }
        // Escaped pairs (a real emoji) and an escaped backslash before `u0000` are text.
        let raw = if *array {
            "[{\"name\": \"\\ud83d\\ude00 \\\\u0000\"}]"
        } else {
            "{\"name\": \"\\ud83d\\ude00 \\\\u0000\"}"
        };
        answered(
            &op.send(&api, &path, Some(Body::Raw(raw.as_bytes().to_vec())))
                .await,
        );
    }
}

fn text_of(v: &Value, field: &str) -> String {
    v[field].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_text_round_trips_and_search_takes_metacharacters_literally() {
    let server = server().await;
    let api = server.org("Round trips").await;
    let big = big();
    let names = [
        "100%".to_string(),
        "1000".to_string(),
        "a_b".to_string(),
        "aXb".to_string(),
        "back\\slash".to_string(),
        "O'Brien; DROP TABLE worker;--".to_string(),
        "say \"hi\"".to_string(),
        "Ünïcødé 😀 \u{7f} \t tab".to_string(),
        big.clone(),
    ];
    // Through POST, then the bulk PUT's fast path.
    let mut ids = Vec::new();
    for name in &names {
        let w = api
            .create("worker", json!({"name": name, "unionCode": name}))
            .await;
        assert_eq!(text_of(&w, "name"), *name);
        ids.push(w["id"].as_str().unwrap().to_string());
    }
    let bulk_ids = api
        .bulk_put(
            "worker",
            names
                .iter()
                .map(|n| json!({"name": format!("bulk {n}"), "qbBadgeLink": n}))
                .collect(),
        )
        .await;
    for (i, id) in ids.iter().enumerate() {
        let w = api.read("worker", id).await;
        assert_eq!(text_of(&w, "name"), names[i], "read back exactly");
        assert_eq!(text_of(&w, "unionCode"), names[i]);
        let b = api.read("worker", &bulk_ids[i]).await;
        assert_eq!(text_of(&b, "qbBadgeLink"), names[i]);
        // An equality filter finds exactly that record (in the query string where it fits a
        // URL, and in a query body).
        if names[i].len() < 60_000 {
            let found = api
                .list_ids("worker", &format!("name={}", enc(&names[i])))
                .await;
            assert_eq!(
                found,
                std::slice::from_ref(id),
                "filter by {:?}",
                &names[i][..names[i].len().min(40)]
            );
        }
        let resp = api
            .post("/worker/query", json!({"filter": {"name": names[i]}}))
            .await;
        assert_eq!(resp.status, 200);
        assert_eq!(
            ids_of(resp.body["values"].as_array().unwrap()),
            std::slice::from_ref(id)
        );
    }
    // Search: `%`, `_` and `\` are themselves, not patterns.
    let search = |text: &str| format!("search={}&pageSize=100", enc(text));
    let found = |values: Vec<Value>| {
        let mut v: Vec<String> = values
            .iter()
            .map(|w| text_of(w, "name"))
            .filter(|n| !n.starts_with("bulk "))
            .collect();
        v.sort();
        v
    };
    assert_eq!(found(api.list("worker", &search("%")).await), ["100%"]);
    assert_eq!(found(api.list("worker", &search("a_b")).await), ["a_b"]);
    assert_eq!(
        found(api.list("worker", &search("\\")).await),
        ["back\\slash"]
    );
    assert_eq!(
        found(api.list("worker", &search("'brien; drop")).await),
        ["O'Brien; DROP TABLE worker;--"]
    );
    assert_eq!(
        found(api.list("worker", &search("\"hi\"")).await),
        ["say \"hi\""]
    );
    assert!(found(api.list("worker", &search("%%")).await).is_empty());
    let resp = api
        .post(
            "/worker/query",
            json!({"search": "%", "filter": {"name": ["100%", "a_b", META]}}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["totalCount"], 1, "{resp}");
    // A search longer than 1,000 characters is refused, on both databases alike.
    let resp = api.get(&format!("/worker?{}", search(&url_big()))).await;
    assert_validation_names(&resp, "search");
    let resp = api.post("/worker/query", json!({"search": big})).await;
    assert_validation_names(&resp, "search");
    assert_eq!(
        api.list("worker", &search(&"y".repeat(1000))).await.len(),
        0
    );

    // Deliverable data: hostile keys and values come back as written, also in a hierarchy.
    let data =
        json!({"notes": META, "big": big, "nested": obj(META, json!([META, "\\u0000 as text"]))});
    let order = api
        .create(
            "deliverable",
            json!({"name": META, "type": "order", "data": data}),
        )
        .await;
    let id = order["id"].as_str().unwrap();
    assert_eq!(api.read("deliverable", id).await["data"], data);
    let resp = api.get(&format!("/deliverable/{id}/hierarchy")).await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["values"][0]["data"], data);
    assert_eq!(resp.body["values"][0]["name"], json!(META));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn indexed_text_fields_hold_256_characters_on_both_databases() {
    let server = server().await;
    let api = server.org("Indexed").await;
    let big = big();
    // 256 four-byte characters: the most an indexed field holds, stored and found.
    let widest: String = "😀".repeat(256);
    let over: String = "é".repeat(257);
    let w = api
        .create(
            "worker",
            json!({"name": "Wide", "customerIdentifier": widest}),
        )
        .await;
    assert_eq!(text_of(&w, "customerIdentifier"), widest);
    assert_eq!(
        api.list_ids("worker", &format!("customerIdentifier={}", enc(&widest)))
            .await,
        [w["id"].as_str().unwrap().to_string()]
    );
    let cases: Vec<(&str, Map<String, Value>, &str)> = vec![
        (
            "worker",
            json!({"name": "W", "customerIdentifier": big})
                .as_object()
                .unwrap()
                .clone(),
            "customerIdentifier",
        ),
        (
            "catalog-entry",
            json!({"catalog": "pay_type", "code": big})
                .as_object()
                .unwrap()
                .clone(),
            "code",
        ),
        (
            "catalog-entry",
            json!({"catalog": "a".repeat(257), "code": "REG"})
                .as_object()
                .unwrap()
                .clone(),
            "catalog",
        ),
        (
            "custom-property",
            json!({"key": "size", "name": big, "dataType": "text"})
                .as_object()
                .unwrap()
                .clone(),
            "name",
        ),
        (
            "deliverable",
            json!({"name": "D", "type": "order", "identifier": big})
                .as_object()
                .unwrap()
                .clone(),
            "identifier",
        ),
    ];
    for (resource, body, field) in &cases {
        let before = api.count(resource, "").await;
        // POST, and a bulk PUT (the fast path where the resource has one).
        let resp = api
            .post(&format!("/{resource}"), Value::Object(body.clone()))
            .await;
        assert_validation_names(&resp, field);
        let resp = api
            .put(
                &format!("/{resource}/bulk"),
                json!([Value::Object(body.clone())]),
            )
            .await;
        assert_validation_names(&resp, field);
        assert_eq!(api.count(resource, "").await, before, "nothing written");
    }
    // The same limit on a change.
    let resp = api
        .patch(
            &format!("/worker/{}", w["id"].as_str().unwrap()),
            json!({"customerIdentifier": over}),
        )
        .await;
    assert_validation_names(&resp, "customerIdentifier");
    let entry = api
        .create(
            "catalog-entry",
            json!({"catalog": "a".repeat(256), "code": widest.clone()}),
        )
        .await;
    assert_eq!(text_of(&entry, "code"), widest);
    let resp = api
        .patch(
            &format!("/catalog-entry/{}", entry["id"].as_str().unwrap()),
            json!({"code": big}),
        )
        .await;
    assert_validation_names(&resp, "code");
    let resp = api
        .patch("/worker/bulk?name=Wide", json!({"customerIdentifier": big}))
        .await;
    assert_validation_names(&resp, "customerIdentifier");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_keys_with_metacharacters_replay_and_long_ones_are_refused() {
    let server = server().await;
    let api = server.org("Idempotency text").await;
    let key = "'; DROP TABLE idempotency_keys;-- %_\\\"";
    let first = api
        .req(reqwest::Method::POST, "/worker")
        .json(json!({"name": "Once"}))
        .idempotency_key(key)
        .send()
        .await;
    assert_eq!(first.status, 201, "{first}");
    let again = api
        .req(reqwest::Method::POST, "/worker")
        .json(json!({"name": "Once"}))
        .idempotency_key(key)
        .send()
        .await;
    assert_eq!(again.status, 201, "{again}");
    assert_eq!(again.body["id"], first.body["id"], "replayed");
    let resp = api
        .req(reqwest::Method::POST, "/worker")
        .json(json!({"name": "Twice"}))
        .idempotency_key(&"k".repeat(256))
        .send()
        .await;
    assert_validation_names(&resp, "Idempotency");
    assert_eq!(api.count("worker", "").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_url_past_the_uri_limit_is_a_414_never_a_5xx() {
    let server = server().await;
    let api = server.org("Long URL").await;
    let addr = server.base_url().trim_start_matches("http://").to_string();
    let key = api.key().unwrap().to_string();
    // Sent by hand: an HTTP client refuses to build such a URL at all.
    let head = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        let _ = write!(
            s,
            "GET /api/v2/worker?name={} HTTP/1.1\r\nHost: x\r\nX-API-Key: {key}\r\nConnection: close\r\n\r\n",
            "x".repeat(70_000)
        );
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            out.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&out).lines().next().unwrap_or("").to_string()
    })
    .await
    .unwrap();
    assert!(head.starts_with("HTTP/1.1 414"), "{head}");
}

/// A body the document says is an object is refused when it comes as an array, on every
/// operation: serde alone would fill a struct's fields from an array in order (schemathesis
/// found `PATCH /delivery/{id}/outbound` taking `[null, null]`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_body_sent_as_an_array_is_refused_everywhere() {
    let server = server().await;
    let api = server.org("Array bodies").await;
    let mut checked = 0;
    for op in operations(&api).await {
        let Some((fields, false)) = &op.body else {
            continue;
        };
        if fields.is_empty() {
            continue;
        }
        for body in [json!([null, null]), json!([]), json!([{}])] {
            let resp = op
                .send(&api, &op.plain_path(), Some(Body::Json(body.clone())))
                .await;
            assert!(
                (400..500).contains(&resp.status),
                "{} {} with {body}: {resp}",
                op.method,
                op.path
            );
        }
        checked += 1;
    }
    assert!(checked > 50, "{checked} operations with object bodies");
    // The finding itself, on a stored record (the sweep above names records that do not exist).
    let delivery = api
        .post("/delivery/outbound", json!({"name": "To site"}))
        .await;
    assert_eq!(delivery.status, 201, "{delivery}");
    let id = delivery.body["id"].as_str().unwrap();
    for body in [json!([null, null]), json!([])] {
        let resp = api.patch(&format!("/delivery/{id}/outbound"), body).await;
        assert_error(&resp, 400, "VALIDATION_ERROR");
    }
}
