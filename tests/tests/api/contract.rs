//! The OpenAPI document against the router (docs/contract.md): every documented path and
//! method is served and answers one of its documented statuses; every other method on a
//! documented path is 405 `METHOD_NOT_ALLOWED` with an `Allow` header naming exactly the
//! documented methods. A cheap drift check beside `scripts/fuzz.sh`, which holds the schemas
//! to what the server does with schemathesis.

use std::collections::BTreeSet;

use prodops_tests::*;
use reqwest::Method;

const METHODS: [&str; 6] = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// A concrete path for a template: a fresh UUID for every parameter (`{key}` of the download
/// link is not a UUID; any text will do).
fn concrete(template: &str) -> String {
    template
        .split('/')
        .map(|segment| match segment {
            "{key}" => "k".to_string(),
            s if s.starts_with('{') => uuid::Uuid::new_v4().to_string(),
            s => s.to_string(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn allow_set(resp: &Resp) -> BTreeSet<String> {
    resp.header("allow")
        .unwrap_or_else(|| panic!("405 without an Allow header: {resp}"))
        .split(',')
        .map(|m| m.trim().to_ascii_uppercase())
        .filter(|m| !m.is_empty() && m != "HEAD")
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_documented_method_is_served_and_every_other_is_405() {
    let server = TestServer::start_with(|c| c.rate_limit = 1_000_000).await;
    let api = server
        .org_with_flags(
            "Contract",
            &["documentsHubEnabled", "deliveryComponentCargoEnabled"],
        )
        .await;
    let doc = server.anonymous().get("/openapi.json").await.body;
    let paths = doc["paths"].as_object().expect("paths");
    assert!(paths.len() > 100, "the document lists every path");
    let mut checked = 0;
    for (template, item) in paths {
        let Some(relative) = template.strip_prefix("/api/v2") else {
            continue;
        };
        let documented: BTreeSet<String> = item
            .as_object()
            .expect("a path item")
            .keys()
            .map(|m| m.to_ascii_uppercase())
            .filter(|m| METHODS.contains(&m.as_str()))
            .collect();
        assert!(!documented.is_empty(), "{template} documents no method");
        let path = concrete(relative);
        for method in METHODS {
            let resp = api
                .req(Method::from_bytes(method.as_bytes()).unwrap(), &path)
                .send()
                .await;
            checked += 1;
            if documented.contains(method) {
                let statuses = &item[method.to_ascii_lowercase()]["responses"];
                assert!(
                    statuses.get(resp.status.to_string()).is_some(),
                    "{method} {template}: {} is not a documented status ({statuses}): {resp}",
                    resp.status
                );
                assert_ne!(
                    resp.status, 405,
                    "{method} {template} is documented: {resp}"
                );
                assert!(
                    !(resp.status == 404 && resp.text.contains("no such endpoint")),
                    "{method} {template} is documented but not routed: {resp}"
                );
            } else {
                assert_error(&resp, 405, "METHOD_NOT_ALLOWED");
                assert_eq!(
                    allow_set(&resp),
                    documented,
                    "{method} {template}: Allow must name the documented methods: {resp}"
                );
            }
        }
    }
    assert!(checked > 1000, "{checked} requests");
}

/// Operations refused for every key (worker DELETE, bulk DELETE of catalog entries, ...) are
/// documented as answering 403 only; their neighbours answer normally.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forbidden_operations_are_documented_as_403() {
    let server = TestServer::start().await;
    let api = server.org("Contract").await;
    let doc = server.anonymous().get("/openapi.json").await.body;
    let delete = &doc["paths"]["/api/v2/worker/{id}"]["delete"];
    assert!(delete["responses"]["403"].is_object(), "{delete}");
    assert!(delete["responses"]["204"].is_null(), "{delete}");
    let worker = api.create("worker", json!({"name": "Ann"})).await;
    let id = worker["id"].as_str().unwrap();
    assert_error(
        &api.delete(&format!("/worker/{id}")).await,
        403,
        "FORBIDDEN",
    );
    // An undeclared method next to it is 405 with the documented methods.
    let resp = api
        .req(Method::PUT, &format!("/worker/{id}"))
        .json(json!({}))
        .send()
        .await;
    assert_error(&resp, 405, "METHOD_NOT_ALLOWED");
    assert_eq!(
        allow_set(&resp),
        ["DELETE", "GET", "PATCH"].map(String::from).into()
    );
}

/// The request forms say what the server enforces: a blank name is refused by the schema and
/// by the server alike; paging has its bounds; query bodies refuse unknown fields.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schemas_carry_the_rules_the_server_enforces() {
    let server = TestServer::start().await;
    let api = server.org("Contract").await;
    let doc = server.anonymous().get("/openapi.json").await.body;
    let schemas = &doc["components"]["schemas"];
    let input = &schemas["WorkerInput"];
    assert_eq!(input["additionalProperties"], false, "{input}");
    assert_eq!(input["required"], json!(["name"]), "{input}");
    let pattern = input["properties"]["name"]["pattern"].as_str().unwrap();
    assert!(pattern.starts_with("[^"), "{pattern}");
    assert_validation_names(
        &api.post("/worker", json!({"name": " \u{3000}\t"})).await,
        "name",
    );
    // Whole numbers may be written with a zero fraction.
    assert_eq!(
        api.post("/worker/query", json!({"page": 1.0, "pageSize": 2.0}))
            .await
            .status,
        200
    );
    let list = &doc["paths"]["/api/v2/worker"]["get"]["parameters"];
    let page_size = list
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "pageSize")
        .unwrap();
    assert_eq!(page_size["schema"]["minimum"], 1);
    assert_eq!(page_size["schema"]["maximum"], 10_000);
    assert_validation_names(&api.get("/worker?pageSize=10001").await, "pageSize");
    let group = &doc["paths"]["/api/v2/worker/group-and-count"]["post"]["requestBody"];
    assert_eq!(group["required"], true);
    let group = &group["content"]["application/json"]["schema"];
    assert_eq!(group["required"], json!(["groupByField"]), "{group}");
    assert_eq!(group["additionalProperties"], false, "{group}");
    assert_error(
        &api.post("/worker/group-and-count", json!({})).await,
        400,
        "VALIDATION_ERROR",
    );
    // An integer field holds what every JSON reader reads exactly.
    let max = schemas["VendorInput"]["properties"]["defaultLeadTimeDays"]["maximum"].clone();
    assert_eq!(max, json!(9_007_199_254_740_991_i64));
    assert_validation_names(
        &api.post(
            "/vendor",
            json!({"name": "v", "defaultLeadTimeDays": 9_007_199_254_740_992_i64}),
        )
        .await,
        "defaultLeadTimeDays",
    );
    assert_eq!(
        api.post("/vendor", json!({"name": "v", "defaultLeadTimeDays": 3.0}))
            .await
            .status,
        201
    );
}

/// Each filter is a query parameter of its own (docs/contract.md), named once per operation,
/// and the server takes every one the document lists: a list filtered by any documented
/// parameter answers 200.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filter_parameters_are_unique_and_each_is_taken() {
    let server = TestServer::start().await;
    let api = server.org("Contract").await;
    let doc = server.anonymous().get("/openapi.json").await.body;
    for (template, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let mut seen = BTreeSet::new();
            for p in op["parameters"].as_array().into_iter().flatten() {
                let key = (p["name"].to_string(), p["in"].to_string());
                assert!(seen.insert(key), "{method} {template} names {p} twice");
            }
        }
    }
    let list = doc["paths"]["/api/v2/worker"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let filters: Vec<&str> = list
        .iter()
        .filter(|p| p["in"] == "query" && p["schema"]["type"] == "string")
        .filter_map(|p| p["name"].as_str())
        .filter(|n| !["sort", "search"].contains(n))
        .collect();
    assert!(filters.contains(&"customerIdentifier"), "{filters:?}");
    assert!(filters.contains(&"isArchived"), "{filters:?}");
    for name in filters {
        let value = if name == "isArchived" { "true" } else { "x" };
        let resp = api.get(&format!("/worker?{name}={value}")).await;
        assert_eq!(resp.status, 200, "?{name}=: {resp}");
        assert_eq!(resp.body["totalCount"], 0, "?{name}=: {resp}");
    }
}
