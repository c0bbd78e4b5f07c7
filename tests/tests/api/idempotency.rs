//! Idempotent retries (decisions.md 9): a repeat with the same `Idempotency-Key` gets the first
//! response without the work being done again; the same key on a different request is 409.

use prodops_tests::*;
use reqwest::Method;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_post_returns_the_first_response_and_creates_once() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let key = format!("idem-{}", unique());
    let body = json!({"name": "Once", "customerIdentifier": "ONCE-1"});
    let first = api
        .req(Method::POST, "/worker")
        .json(body.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(first.status, 201, "{first}");
    let second = api
        .req(Method::POST, "/worker")
        .json(body.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(second.status, first.status, "{second}");
    assert_eq!(second.body, first.body, "the same body, the same record");
    assert_eq!(api.list_total("worker", "").await, 1, "one worker created");

    // The same key with a different body: 409, nothing created.
    let resp = api
        .req(Method::POST, "/worker")
        .json(json!({"name": "Different"}))
        .idempotency_key(&key)
        .send()
        .await;
    assert_error(&resp, 409, "CONFLICT");
    // The same key on a different path: 409.
    let resp = api
        .req(Method::POST, "/vendor")
        .json(json!({"name": "Once"}))
        .idempotency_key(&key)
        .send()
        .await;
    assert_error(&resp, 409, "CONFLICT");
    assert_eq!(api.list_total("worker", "").await, 1);
    assert_eq!(api.list_total("vendor", "").await, 0);

    // Without a key every POST creates.
    assert_eq!(api.post("/worker", body.clone()).await.status, 201);
    assert_eq!(api.post("/worker", body.clone()).await.status, 201);
    assert_eq!(api.list_total("worker", "").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotency_keys_are_per_organization() {
    let server = TestServer::start().await;
    let a = server.org("A").await;
    let b = server.org("B").await;
    let key = format!("shared-{}", unique());
    let body = json!({"name": "Same"});
    let ra = a
        .req(Method::POST, "/worker")
        .json(body.clone())
        .idempotency_key(&key)
        .send()
        .await;
    let rb = b
        .req(Method::POST, "/worker")
        .json(body.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(ra.status, 201, "{ra}");
    assert_eq!(
        rb.status, 201,
        "B's request is its own, not A's stored response: {rb}"
    );
    assert_ne!(ra.body["id"], rb.body["id"]);
    assert_eq!(rb.body["organizationId"], json!(b.org_id.to_string()));
    assert_eq!(b.list_total("worker", "").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_bulk_put_returns_the_first_response_and_writes_once() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let key = format!("bulk-{}", unique());
    let batch = json!([{"name": "One"}, {"name": "Two"}]);
    let first = api
        .req(Method::PUT, "/worker/bulk")
        .json(batch.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(first.status, 200, "{first}");
    assert_eq!(first.body["count"], 2, "{first}");
    let second = api
        .req(Method::PUT, "/worker/bulk")
        .json(batch.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(second.status, 200, "{second}");
    assert_eq!(second.body, first.body, "same ids, no new records");
    assert_eq!(api.list_total("worker", "").await, 2);

    let resp = api
        .req(Method::PUT, "/worker/bulk")
        .json(json!([{"name": "One"}, {"name": "Two"}, {"name": "Three"}]))
        .idempotency_key(&key)
        .send()
        .await;
    assert_error(&resp, 409, "CONFLICT");
    assert_eq!(api.list_total("worker", "").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_bulk_patch_is_not_done_again() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.create("worker", json!({"name": "First"})).await;
    let key = format!("patch-{}", unique());
    let send = || {
        api.req(Method::PATCH, "/worker/bulk?status=active")
            .json(json!({"status": "inactive"}))
            .idempotency_key(&key)
            .send()
    };
    let first = send().await;
    assert_eq!(first.status, 200, "{first}");
    assert_eq!(first.body["count"], 1, "{first}");
    // A worker created after the first call: the repeat must not touch it.
    let late = api.create("worker", json!({"name": "Late"})).await;
    let second = send().await;
    assert_eq!(second.status, 200, "{second}");
    assert_eq!(second.body, first.body, "{second}");
    let late_now = api.read("worker", late["id"].as_str().unwrap()).await;
    assert_eq!(
        late_now["status"], "active",
        "the repeat did the work again: {late_now}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overlong_idempotency_key_is_400() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let too_long = "k".repeat(256);
    let resp = api
        .req(Method::POST, "/worker")
        .json(json!({"name": "Nope"}))
        .idempotency_key(&too_long)
        .send()
        .await;
    assert_error(&resp, 400, "VALIDATION_ERROR");
    assert_eq!(api.list_total("worker", "").await, 0);
    let longest = "k".repeat(255);
    let resp = api
        .req(Method::POST, "/worker")
        .json(json!({"name": "Yes"}))
        .idempotency_key(&longest)
        .send()
        .await;
    assert_eq!(resp.status, 201, "{resp}");
}
