//! Bad input never breaks the server: random JSON bodies and random query strings against the
//! engine's endpoints are answered with a 2xx or a 4xx in the error shape, never a 5xx (the
//! harness checks every answer), and the organization's data stays readable afterwards.

use prodops_tests::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use reqwest::Method;
use serde_json::{Map, Value, json};

/// Field names: real ones of the resources under test, read-only ones, and nonsense.
const NAMES: &[&str] = &[
    "name",
    "status",
    "isArchived",
    "customerIdentifier",
    "teamId",
    "id",
    "organizationId",
    "createdAt",
    "code",
    "catalog",
    "key",
    "dataType",
    "options",
    "type",
    "filter",
    "select",
    "groupByField",
    "page",
    "pageSize",
    "sort",
    "search",
    "data.properties.x",
    "bogus",
    "",
    "a.b.c.d.e.f.g.h.i",
    "n'ame",
    "name;DROP",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        "[a-zA-Z0-9 _%'\"-]{0,12}".prop_map(Value::String),
        Just(json!("00000000-0000-0000-0000-000000000000")),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(NAMES.to_vec()), inner), 0..5).prop_map(
                |fields| Value::Object(
                    fields
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect::<Map<_, _>>()
                )
            ),
        ]
    })
}

fn query_string() -> impl Strategy<Value = String> {
    prop::collection::vec(
        (prop::sample::select(NAMES.to_vec()), "[a-zA-Z0-9 %,-]{0,8}"),
        0..4,
    )
    .prop_map(|pairs| {
        pairs
            .iter()
            .map(|(k, v)| format!("{}={}", k.replace(' ', "%20"), v.replace(' ', "%20")))
            .collect::<Vec<_>>()
            .join("&")
    })
}

#[test]
fn random_bodies_and_queries_never_get_a_server_error() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (server, api, worker_id) = runtime.block_on(async {
        let server = TestServer::start().await;
        let api = server.org("Garbage").await;
        let worker = api
            .create("worker", json!({ "name": "Stays Readable" }))
            .await;
        let id = worker["id"].as_str().unwrap().to_string();
        (server, api, id)
    });
    let endpoints: Vec<(Method, String)> = vec![
        (Method::POST, "/worker".into()),
        (Method::POST, "/vendor".into()),
        (Method::POST, "/catalog-entry".into()),
        (Method::POST, "/custom-property".into()),
        (Method::PATCH, format!("/worker/{worker_id}")),
        (Method::PUT, "/worker/bulk".into()),
        (Method::PUT, "/contact/bulk".into()),
        (Method::POST, "/worker/query".into()),
        (Method::POST, "/vendor/count".into()),
        (Method::POST, "/worker/group-and-count".into()),
        (Method::PATCH, "/vendor/bulk?name=nobody".into()),
    ];
    let accepted = std::sync::atomic::AtomicUsize::new(0);
    let refused = std::sync::atomic::AtomicUsize::new(0);
    let tally = |status: u16| {
        let counter = if status < 400 { &accepted } else { &refused };
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    };
    let mut runner = TestRunner::new(Config {
        cases: 48,
        ..Config::default()
    });
    runner
        .run(&(json_value(), query_string()), |(body, query)| {
            runtime.block_on(async {
                for (method, path) in &endpoints {
                    // The harness fails the test on any 5xx; the status itself is free.
                    let resp = api
                        .req(method.clone(), path)
                        .json(body.clone())
                        .send()
                        .await;
                    tally(resp.status);
                    if resp.status >= 400 {
                        assert_error(&resp, resp.status, resp.code().unwrap_or("?"));
                    }
                }
                for resource in ["worker", "vendor", "catalog-entry"] {
                    let resp = api.get(&format!("/{resource}?{query}")).await;
                    tally(resp.status);
                    if resp.status >= 400 {
                        assert_error(&resp, resp.status, resp.code().unwrap_or("?"));
                    }
                    let resp = api.get(&format!("/{resource}/count?{query}")).await;
                    assert!(resp.status < 500);
                }
            });
            Ok(())
        })
        .unwrap();
    let (accepted, refused) = (accepted.into_inner(), refused.into_inner());
    assert!(
        accepted > 0 && refused > 0,
        "both paths exercised: {accepted} accepted, {refused} refused"
    );
    eprintln!("{accepted} requests accepted, {refused} refused");
    runtime.block_on(async {
        let worker = api.read("worker", &worker_id).await;
        assert!(
            worker["id"].is_string(),
            "the organization's data is still readable"
        );
        server.shutdown().await;
    });
}
