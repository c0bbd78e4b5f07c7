//! The limits of docs/limits.md at their exact sizes, on SQLite and PostgreSQL alike (issue 13):
//! a bulk PUT of exactly `MAX_BULK_RECORDS` records is written whole and one more is refused
//! with nothing written; a bulk PATCH matching exactly the limit is applied and one more match
//! is refused with nothing changed; `pageSize` 10,000 is served and 10,001 refused; a body of
//! exactly the body limit is read and one byte more is 413. Nothing here is timed.

use std::time::Duration;

use prodops_server::app::BODY_LIMIT;
use prodops_server::engine::{MAX_BULK_RECORDS, MAX_PAGE_SIZE};
use prodops_tests::*;
use serde_json::Value;

/// A request whose answer may take long at these sizes (the harness's client gives up after
/// 120 s). The bound only turns a hung call into a failure; it asserts no speed.
async fn big(api: &Api, method: reqwest::Method, path: &str, body: &Value) -> (u16, Value) {
    let resp = reqwest::Client::builder()
        .timeout(Duration::from_secs(1800))
        .build()
        .unwrap()
        .request(method, format!("{}{path}", api.base()))
        .header("X-API-Key", api.key().unwrap())
        .json(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let body = resp.json().await.unwrap_or(Value::Null);
    (status, body)
}

/// A body for a failure message: the start of it (a 100,000-id answer is 4 MB).
fn short(body: &Value) -> String {
    body.to_string().chars().take(600).collect()
}

fn workers(n: u64, prefix: &str, status: &str) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"name": format!("{prefix}{i}"), "status": status}))
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_put_of_max_bulk_records_is_written_and_one_more_is_refused() {
    assert_eq!(MAX_BULK_RECORDS, 100_000, "docs/limits.md names this limit");
    let server = TestServer::start().await;
    let api = server.org("Bulk limits").await;

    // One record past the limit: 400, nothing written.
    let (status, body) = big(
        &api,
        reqwest::Method::PUT,
        "/worker/bulk",
        &workers(MAX_BULK_RECORDS + 1, "W", "active"),
    )
    .await;
    assert_eq!(status, 400, "{}", short(&body));
    assert_eq!(
        body["error"]["code"],
        "VALIDATION_ERROR",
        "{}",
        short(&body)
    );
    assert_eq!(api.total("worker").await, 0, "nothing written");

    // Exactly the limit: written whole, one id per record in input order.
    let (status, body) = big(
        &api,
        reqwest::Method::PUT,
        "/worker/bulk",
        &workers(MAX_BULK_RECORDS, "W", "active"),
    )
    .await;
    assert_eq!(status, 200, "{}", short(&body));
    assert_eq!(body["count"], MAX_BULK_RECORDS, "{}", short(&body));
    let ids = body["ids"].as_array().unwrap();
    assert_eq!(ids.len() as u64, MAX_BULK_RECORDS);
    assert_eq!(api.count("worker", "").await, MAX_BULK_RECORDS);
    let last = api.read("worker", ids[99_999].as_str().unwrap()).await;
    assert_eq!(last["name"], "W99999");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_patch_and_page_size_at_their_limits() {
    let server = TestServer::start().await;
    let api = server.org("Patch limits").await;
    // Seeded in two calls below the bulk PUT limit.
    for half in 0..2 {
        let (status, body) = big(
            &api,
            reqwest::Method::PUT,
            "/worker/bulk",
            &workers(MAX_BULK_RECORDS / 2, &format!("H{half}"), "active"),
        )
        .await;
        assert_eq!(status, 200, "{}", short(&body));
    }
    assert_eq!(api.count("worker", "").await, MAX_BULK_RECORDS);

    // A bulk PATCH matching exactly the limit is applied to every match.
    let (status, body) = big(
        &api,
        reqwest::Method::PATCH,
        "/worker/bulk?status=active",
        &json!({"status": "inactive"}),
    )
    .await;
    assert_eq!(status, 200, "{}", short(&body));
    assert_eq!(body["count"], MAX_BULK_RECORDS, "{}", short(&body));
    assert_eq!(
        api.count("worker", "status=inactive").await,
        MAX_BULK_RECORDS
    );

    // One match more: 400, nothing changed.
    api.create("worker", json!({"name": "One more", "status": "inactive"}))
        .await;
    let (status, body) = big(
        &api,
        reqwest::Method::PATCH,
        "/worker/bulk?status=inactive",
        &json!({"status": "terminated"}),
    )
    .await;
    assert_eq!(status, 400, "{}", short(&body));
    assert_eq!(
        body["error"]["code"],
        "VALIDATION_ERROR",
        "{}",
        short(&body)
    );
    assert_eq!(api.count("worker", "status=terminated").await, 0);
    assert_eq!(
        api.count("worker", "status=inactive").await,
        MAX_BULK_RECORDS + 1
    );

    // pageSize at its limit serves a full page; one more is refused naming it.
    assert_eq!(MAX_PAGE_SIZE, 10_000, "docs/limits.md names this limit");
    let page = api.get("/worker?pageSize=10000&page=3").await;
    assert_eq!(page.status, 200, "{}", short(&page.body));
    assert_eq!(page.body["values"].as_array().unwrap().len(), 10_000);
    assert_eq!(page.body["totalCount"], MAX_BULK_RECORDS + 1);
    assert_validation_names(&api.get("/worker?pageSize=10001").await, "pageSize");
    let query = api
        .post("/worker/query", json!({"pageSize": 10_000, "page": 11}))
        .await;
    assert_eq!(query.status, 200, "{}", short(&query.body));
    assert_eq!(query.body["values"].as_array().unwrap().len(), 1);
    assert_validation_names(
        &api.post("/worker/query", json!({"pageSize": 10_001})).await,
        "pageSize",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_of_exactly_the_limit_is_read_and_one_byte_more_is_413() {
    assert_eq!(
        BODY_LIMIT,
        32 * 1024 * 1024,
        "docs/limits.md names this limit"
    );
    let server = TestServer::start().await;
    let api = server.org("Body limit").await;
    api.create("worker", json!({"name": "Only"})).await;
    // A query body padded with insignificant whitespace to the exact size.
    let body = |size: usize| {
        let mut text = br#"{"filter": {"name": "Only"}}"#.to_vec();
        text.resize(size, b' ');
        text
    };
    let resp = api.post_raw("/worker/query", body(BODY_LIMIT)).await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["totalCount"], 1, "{resp}");
    let resp = api.post_raw("/worker/query", body(BODY_LIMIT + 1)).await;
    assert_error(&resp, 413, "PAYLOAD_TOO_LARGE");
}

/// Issue 35, item 6, at its sizes (not timed; `bench/dependencies.sh` times them): one bulk PUT
/// of 10,000 dependencies (chains of 100 in 100 orders), then a route of 1,000 nodes with
/// 1,000 dependencies applied in one call, in the same organization: every dependency is
/// written and copied, and the copies' successors wait for their predecessors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_dependencies_in_one_bulk_and_a_route_of_a_thousand_applied() {
    let server = TestServer::start().await;
    let api = server.org("Deps").await;
    let id = || uuid::Uuid::now_v7().to_string();
    let mut nodes = Vec::new();
    let mut deps = Vec::new();
    for o in 0..100 {
        let order = id();
        nodes.push(json!({"id": order, "name": format!("O{o}"), "type": "order"}));
        let steps: Vec<String> = (0..101).map(|_| id()).collect();
        for (i, s) in steps.iter().enumerate() {
            nodes
                .push(json!({"id": s, "name": format!("s{i}"), "type": "step", "parentId": order}));
        }
        for w in steps.windows(2) {
            deps.push(json!({"predecessorId": w[0], "successorId": w[1]}));
        }
    }
    for chunk in nodes.chunks(5_000) {
        let (status, body) = big(
            &api,
            reqwest::Method::PUT,
            "/deliverable/bulk",
            &json!(chunk),
        )
        .await;
        assert_eq!(status, 200, "{}", short(&body));
    }
    let (status, body) = big(&api, reqwest::Method::PUT, "/dependency/bulk", &json!(deps)).await;
    assert_eq!(status, 200, "{}", short(&body));
    assert_eq!(body["count"], 10_000);
    assert_eq!(api.count("dependency", "").await, 10_000);
    // The last step of an order waits; the first does not (it has no predecessor).
    let last = deps[99]["successorId"].as_str().unwrap();
    assert_eq!(
        api.read("deliverable", last).await["progress"]["status"],
        "waiting"
    );

    // A route of 10 phases of 99 steps (1,000 nodes below it) with 1,000 dependencies.
    let route = id();
    let mut nodes = vec![json!({"id": route, "name": "Route", "type": "route"})];
    let mut deps = Vec::new();
    let mut phases = Vec::new();
    let mut steps: Vec<Vec<String>> = Vec::new();
    for p in 0..10 {
        let phase = id();
        nodes.push(
            json!({"id": phase, "name": format!("P{p}"), "type": "phase", "parentId": route}),
        );
        let ss: Vec<String> = (0..99).map(|_| id()).collect();
        for (i, s) in ss.iter().enumerate() {
            nodes
                .push(json!({"id": s, "name": format!("s{i}"), "type": "step", "parentId": phase}));
        }
        for w in ss.windows(2) {
            deps.push(json!({"predecessorId": w[0], "successorId": w[1]}));
        }
        phases.push(phase);
        steps.push(ss);
    }
    for w in phases.windows(2) {
        deps.push(json!({"predecessorId": w[0], "successorId": w[1]}));
    }
    for p in 0..9 {
        deps.push(json!({"predecessorId": steps[p][98], "successorId": steps[p + 1][0]}));
    }
    deps.push(json!({"predecessorId": steps[0][0], "successorId": steps[9][0]}));
    deps.push(json!({"predecessorId": steps[0][1], "successorId": steps[9][1]}));
    assert_eq!((nodes.len(), deps.len()), (1_001, 1_000));
    let (status, body) = big(
        &api,
        reqwest::Method::PUT,
        "/deliverable/bulk",
        &json!(nodes),
    )
    .await;
    assert_eq!(status, 200, "{}", short(&body));
    let (status, body) = big(&api, reqwest::Method::PUT, "/dependency/bulk", &json!(deps)).await;
    assert_eq!(status, 200, "{}", short(&body));
    let target = api
        .create("deliverable", json!({"name": "Target", "type": "order"}))
        .await;
    let target = target["id"].as_str().unwrap();
    let (status, body) = big(
        &api,
        reqwest::Method::POST,
        &format!("/deliverable/{target}/apply-template"),
        &json!({"templateId": route}),
    )
    .await;
    assert_eq!(status, 200, "{}", short(&body));
    let value = &body["value"];
    assert_eq!(value["nodes"].as_array().unwrap().len(), 1_000);
    let copied = value["dependencies"].as_array().unwrap();
    assert_eq!(copied.len(), 1_000);
    assert_eq!(api.count("dependency", "").await, 12_000);
    // Each copied successor waits for its copied predecessor.
    let successor = copied[500]["successorId"].as_str().unwrap();
    assert_eq!(
        api.read("deliverable", successor).await["progress"]["status"],
        "waiting"
    );
}
