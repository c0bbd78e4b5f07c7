//! The programs in examples/ run against a real server (in CI, on SQLite and PostgreSQL): each
//! example's `run` is called here as its `main` would call it, and what it did is checked.

use std::time::Duration;

use prodops_client::{Client, Config, ListParams};
use prodops_tests::*;

#[allow(dead_code)]
#[path = "../../examples/errors.rs"]
mod errors;
#[allow(dead_code)]
#[path = "../../examples/event_stream.rs"]
mod event_stream;
#[allow(dead_code)]
#[path = "../../examples/idempotent_retry.rs"]
mod idempotent_retry;
#[allow(dead_code)]
#[path = "../../examples/webhook_receiver.rs"]
mod webhook_receiver;

fn client(server: &TestServer, api: &Api) -> Client {
    Client::new(Config::new(server.base_url(), api.key().unwrap())).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_errors_example_tells_its_failures_apart() {
    let server = TestServer::start().await;
    let api = server.org("Errors example").await;
    let lines = errors::run(&client(&server, &api)).await.unwrap();
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert!(
        lines[0].starts_with("not found: NOT_FOUND (request "),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with("VALIDATION_ERROR: name: "),
        "{lines:?}"
    );
    assert!(
        lines[2].starts_with("unreachable: could not connect"),
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_idempotent_retry_example_writes_once() {
    let server = TestServer::start().await;
    let api = server.org("Retry example").await;
    let c = client(&server, &api);
    let ann = idempotent_retry::run(&c, "run-1").await.unwrap();
    let again = idempotent_retry::run(&c, "run-1").await.unwrap();
    assert_eq!(ann.id, again.id);
    let filter = ListParams::new().filter("customerIdentifier", "onboard-run-1");
    assert_eq!(c.workers().count(&filter).await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_stream_example_follows_the_feed() {
    let server = TestServer::start().await;
    let api = server.org("Feed example").await;
    let c = client(&server, &api);
    let first = api.create("worker", json!({"name": "First"})).await;
    // Two events: the one already in the feed, and one written while the example waits.
    let reader = tokio::spawn({
        let c = c.clone();
        async move { event_stream::run(&c, None, 2).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let second = api.create("worker", json!({"name": "Second"})).await;
    let events = tokio::time::timeout(Duration::from_secs(60), reader)
        .await
        .expect("the example returns")
        .unwrap()
        .unwrap();
    let ids: Vec<String> = events.iter().map(|e| e.record_id.to_string()).collect();
    assert_eq!(
        ids,
        [
            first["id"].as_str().unwrap(),
            second["id"].as_str().unwrap()
        ]
    );
    // Resuming after the first event's cursor reads the second.
    let resumed = event_stream::run(&c, Some(events[0].cursor.clone()), 1)
        .await
        .unwrap();
    assert_eq!(resumed[0].id, events[1].id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_receiver_example_accepts_real_deliveries() {
    const SECRET: &str = "whsec_example_0123456789";
    let server = TestServer::start_isolated_with(|c| {
        c.webhooks.deliver = true;
        c.webhooks.allow = prodops_core::webhook::AllowList::parse("127.0.0.1").unwrap();
        c.webhooks.poll = Duration::from_millis(100);
        c.webhooks.timeout = Duration::from_secs(5);
    })
    .await;
    let api = server.org("Receiver example").await;
    let (app, receiver) = webhook_receiver::app(SECRET);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let r = api
        .post(
            "/webhook",
            json!({"url": format!("http://{addr}/hook"), "eventTypes": ["worker.*"], "secret": SECRET}),
        )
        .await;
    assert_eq!(r.status, 201, "{r}");
    let worker = api.create("worker", json!({"name": "Hooked"})).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if !receiver.seen.lock().unwrap().is_empty() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no delivery accepted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The delivery was accepted (signature verified) and names the event of the worker.
    let events: Vec<_> = client(&server, &api)
        .events(&prodops_client::EventQuery {
            record_id: Some(worker["id"].as_str().unwrap().parse().unwrap()),
            ..Default::default()
        })
        .await
        .unwrap()
        .values;
    assert_eq!(receiver.seen.lock().unwrap()[0], events[0].id);
}
