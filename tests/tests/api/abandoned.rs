//! No query outlives its request (issue 13, item 3): every statement runs under the statement
//! timeout (503 in the error shape past it), and a request whose client goes away stops its
//! queries. The server's statement is made to wait, deterministically, on a lock this test
//! holds with its own connection ([`WorkerLock`]).

use std::time::Duration;

use prodops_tests::*;
use serde_json::Value;
use uuid::Uuid;

/// `PATCH /worker/{id}` sent with a client of its own (the harness refuses 5xx answers):
/// status, `X-Request-Id` header and body.
async fn patch_worker(
    client: &reqwest::Client,
    api: &Api,
    id: &str,
    request_id: &str,
    body: Value,
) -> (u16, String, Value) {
    let resp = client
        .patch(format!("{}/worker/{id}", api.base()))
        .header("X-API-Key", api.key().unwrap())
        .header("X-Request-Id", request_id)
        .json(&body)
        .send()
        .await
        .expect("the server answers");
    let status = resp.status().as_u16();
    let header = resp
        .headers()
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let text = resp.text().await.unwrap();
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    (status, header, body)
}

/// Waits (polling, up to a generous bound that no machine is slow enough to need) until
/// `done` holds.
async fn eventually<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn in_flight(request_id: &str) -> bool {
    prodops_server::store::requests_in_flight()
        .iter()
        .any(|r| r == request_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_past_the_statement_timeout_answers_503_in_the_error_shape() {
    let server = TestServer::start_with(|c| c.statement_timeout = Duration::from_secs(1)).await;
    let api = server.org("Timeout").await;
    let id = api.create("worker", json!({"name": "Ann"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let client = reqwest::Client::new();

    let lock = WorkerLock::take(&server, &api, &id).await;
    let request_id = format!("timeout-{}", Uuid::new_v4());
    let (status, header, body) =
        patch_worker(&client, &api, &id, &request_id, json!({"name": "Bob"})).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "INTERNAL", "{body}");
    assert_eq!(body["error"]["requestId"], request_id.as_str(), "{body}");
    assert_eq!(header, request_id);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("statement timeout"), "{body}");
    for word in FORBIDDEN_IN_ERRORS {
        assert!(!body.to_string().contains(word), "{word} in {body}");
    }
    assert!(!in_flight(&request_id), "the request's work has ended");
    lock.release().await;

    // Nothing was written, and the server goes on serving.
    assert_eq!(api.read("worker", &id).await["name"], "Ann");
    let (status, _, body) = patch_worker(&client, &api, &id, "after", json!({"name": "Bob"})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(api.read("worker", &id).await["name"], "Bob");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_request_stops_its_queries_while_the_lock_is_still_held() {
    // Only the client going away can end the blocked statement here.
    let server = TestServer::start_with(|c| c.statement_timeout = Duration::from_secs(3600)).await;
    let api = server.org("Abandoned").await;
    let id = api.create("worker", json!({"name": "Ann"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();

    let lock = WorkerLock::take(&server, &api, &id).await;
    let request_id = format!("abandoned-{}", Uuid::new_v4());
    let request = {
        let (api, id, request_id) = (api.clone(), id.clone(), request_id.clone());
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            patch_worker(&client, &api, &id, &request_id, json!({"name": "Bob"})).await
        })
    };
    // The request's transaction runs and waits for the lock (on PostgreSQL: its statement
    // is one of the backends blocked by this test's connection).
    let on_postgres = lock.on_postgres();
    eventually("the request's statement waits for the lock", || async {
        in_flight(&request_id) && (!on_postgres || lock.waiting().await > 0)
    })
    .await;

    // The client goes away: its connection closes, hyper drops the handler, the statement
    // is stopped.
    request.abort();
    assert!(request.await.unwrap_err().is_cancelled());
    eventually("no statement of the request runs any more", || async {
        !in_flight(&request_id) && lock.waiting().await == 0
    })
    .await;
    lock.release().await;

    // The abandoned change was rolled back; the server goes on serving.
    assert_eq!(api.read("worker", &id).await["name"], "Ann");
    let client = reqwest::Client::new();
    let (status, _, body) = patch_worker(&client, &api, &id, "after", json!({"name": "Bob"})).await;
    assert_eq!(status, 200, "{body}");
}
