//! Webhooks (docs/events.md, "Webhooks"): signed deliveries to a loopback receiver, retries
//! with backoff, deduplication by event id, dead letters and redelivery, the admin-only
//! delivery log, the SSRF guard, and a server stopped mid-delivery.
//!
//! The servers of these tests deliver (test servers otherwise do not), with small attempts and
//! backoff so that they run fast. A delivering server claims the deliveries of every
//! organization of its database, so each test runs on a database of its own
//! (`TestServer::start_isolated_with`): another test's server would otherwise take its
//! deliveries and their attempts.

use std::time::Duration;

use prodops_core::webhook::AllowList;
use prodops_tests::webhook_receiver::{Mode, Receiver};
use prodops_tests::*;
use serde_json::Value;

const SECRET: &str = "a-long-enough-secret-0123";
const MAX_ATTEMPTS: u32 = 4;
const WAIT: Duration = Duration::from_secs(60);

fn delivering(c: &mut Config) {
    c.webhooks.deliver = true;
    c.webhooks.allow = AllowList::parse("127.0.0.1").unwrap();
    c.webhooks.max_attempts = MAX_ATTEMPTS;
    c.webhooks.backoff_base = Duration::from_millis(50);
    c.webhooks.backoff_cap = Duration::from_millis(200);
    c.webhooks.timeout = Duration::from_secs(5);
    c.webhooks.lease = Duration::from_secs(6);
    c.webhooks.poll = Duration::from_millis(100);
}

async fn create_hook(api: &Api, url: &str, types: Value) -> String {
    let r = api
        .post(
            "/webhook",
            json!({"url": url, "eventTypes": types, "secret": SECRET, "description": "test"}),
        )
        .await;
    assert_eq!(r.status, 201, "{r}");
    assert!(
        r.body.get("secret").is_none(),
        "the secret is never answered: {r}"
    );
    r.id()
}

async fn log(api: &Api, hook: &str, query: &str) -> Vec<Value> {
    let r = api
        .get(&format!("/webhook/{hook}/deliveries?{query}"))
        .await;
    assert_eq!(r.status, 200, "{r}");
    r.body["values"].as_array().unwrap().clone()
}

async fn wait_log(api: &Api, hook: &str, query: &str, n: usize) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let rows = log(api, hook, query).await;
        if rows.len() >= n {
            return rows;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the log never held {n} rows with {query}: {rows:#?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_arrives_signed_and_exactly_once_after_deduplication() {
    let server = TestServer::start_isolated_with(delivering).await;
    let api = server.org("Hooks").await;
    let receiver = Receiver::start(SECRET, Mode::FailFirst(2)).await;
    let hook = create_hook(&api, &receiver.url(), json!(["worker.*"])).await;

    let mut ids = Vec::new();
    for i in 0..5 {
        ids.push(api.create("worker", json!({"name": format!("W{i}")})).await["id"].clone());
    }
    let first = ids[0].as_str().unwrap();
    let r = api
        .patch(&format!("/worker/{first}"), json!({"name": "W0b"}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    // Not matched by `worker.*`.
    api.create("item", json!({"name": "Bolt"})).await;

    let feed = api.get("/event?type=worker.*").await;
    let expected: Vec<String> = feed.body["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(expected.len(), 6, "{feed}");
    let hits = receiver
        .wait_until(WAIT, |_| receiver.accepted_ids().len() >= 6)
        .await;
    let mut accepted = receiver.accepted_ids();
    accepted.sort();
    let mut want = expected.clone();
    want.sort();
    assert_eq!(accepted, want, "each event once after deduplication");
    for h in &hits {
        assert!(h.signature_ok, "every signature verifies: {h:?}");
        assert_eq!(h.body["id"].as_str(), Some(h.event_id.as_str()));
        assert!(h.delivery_id.is_some());
    }
    // Two failures then the success, attempts numbered.
    for id in &expected {
        let attempts: Vec<&str> = hits
            .iter()
            .filter(|h| &h.event_id == id)
            .map(|h| h.attempt.as_str())
            .collect();
        assert_eq!(attempts[..3], ["1", "2", "3"], "{id}: {attempts:?}");
    }
    // The body is the event as the feed answers it.
    let event = &feed.body["values"][0];
    let got = hits
        .iter()
        .find(|h| h.accepted && h.event_id == event["id"])
        .unwrap();
    assert_eq!(&got.body, event);

    let rows = wait_log(&api, &hook, "status=delivered", 6).await;
    for row in &rows {
        assert_eq!(row["attempts"], 3, "{row}");
        assert_eq!(row["lastStatusCode"], 200, "{row}");
        assert!(row["deliveredAt"].is_string());
    }
    assert!(log(&api, &hook, "status=pending").await.is_empty());

    // Webhooks and their log are for admin keys; the secret stays hidden in reads.
    let (reader, _) = server
        .key(&api, false, &["Webhook.Read", "Worker.Read"])
        .await;
    assert_eq!(reader.get("/webhook").await.status, 403);
    assert_eq!(
        reader
            .get(&format!("/webhook/{hook}/deliveries"))
            .await
            .status,
        403
    );
    assert_eq!(
        reader
            .post(&format!("/webhook/{hook}/redeliver"), json!({}))
            .await
            .status,
        403
    );
    let read = api.get(&format!("/webhook/{hook}")).await;
    assert_eq!(read.status, 200, "{read}");
    assert!(
        read.body.get("secret").is_none() && !read.text.contains(SECRET),
        "{read}"
    );
    let listed = api.get("/webhook").await;
    assert!(!listed.text.contains(SECRET), "{listed}");
    // Another organization sees none of it.
    let other = server.org("Other").await;
    assert_eq!(
        other
            .get(&format!("/webhook/{hook}/deliveries"))
            .await
            .status,
        404
    );
    assert_eq!(other.get(&format!("/webhook/{hook}")).await.status, 404);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dead_letters_after_the_attempts_then_redelivery_succeeds() {
    let server = TestServer::start_isolated_with(delivering).await;
    let api = server.org("Dead").await;
    let receiver = Receiver::start(SECRET, Mode::AlwaysFail).await;
    let hook = create_hook(&api, &receiver.url(), json!(["worker.*"])).await;
    let w = api.create("worker", json!({"name": "Ann"})).await;

    let dead = wait_log(&api, &hook, "status=dead", 1).await;
    assert_eq!(dead.len(), 1, "{dead:?}");
    let row = &dead[0];
    assert_eq!(row["attempts"], MAX_ATTEMPTS, "{row}");
    assert_eq!(row["lastStatusCode"], 500, "{row}");
    assert_eq!(row["eventType"], "worker.created");
    let event_id = row["eventId"].as_str().unwrap().to_string();
    assert_eq!(
        receiver
            .hits()
            .iter()
            .filter(|h| h.event_id == event_id)
            .count(),
        MAX_ATTEMPTS as usize
    );

    receiver.set_mode(Mode::Accept);
    let r = api
        .post(&format!("/webhook/{hook}/redeliver"), json!({}))
        .await;
    assert_eq!((r.status, &r.body["requeued"]), (200, &json!(1)), "{r}");
    wait_log(&api, &hook, "status=delivered", 1).await;
    assert_eq!(receiver.accepted_ids(), std::slice::from_ref(&event_id));

    // One event's delivery again, whatever its status; an event without one is a 404.
    let r = api
        .post(
            &format!("/webhook/{hook}/redeliver"),
            json!({"eventId": event_id}),
        )
        .await;
    assert_eq!((r.status, &r.body["requeued"]), (200, &json!(1)), "{r}");
    receiver
        .wait_until(WAIT, |h| h.iter().filter(|h| h.accepted).count() == 2)
        .await;
    let r = api
        .post(
            &format!("/webhook/{hook}/redeliver"),
            json!({"eventId": w["id"]}),
        )
        .await;
    assert_eq!(r.status, 404, "{r}");
    assert!(r.text.contains("no delivery of this event"), "{r}");
    let r = api
        .post(&format!("/webhook/{hook}/redeliver"), json!({"color": 1}))
        .await;
    assert_eq!(r.status, 400, "{r}");

    // The ping.
    let r = api
        .post(&format!("/webhook/{hook}/test"), json!(null))
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["delivered"], true, "{r}");
    let ping = receiver
        .hits()
        .into_iter()
        .find(|h| h.body["type"] == "webhook.ping")
        .expect("the ping arrived");
    assert!(ping.signature_ok);
    assert_eq!(ping.body["recordId"].as_str(), Some(hook.as_str()));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_webhooks_are_refused_by_field_and_private_addresses_are_not_reached() {
    let server = TestServer::start_isolated_with(delivering).await;
    let api = server.org("Guard").await;
    for (body, field) in [
        (
            json!({"url": "ftp://x/", "eventTypes": ["*"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "http://u:p@h/", "eventTypes": ["*"], "secret": SECRET}),
            "url",
        ),
        (
            json!({"url": "http://h/", "eventTypes": [], "secret": SECRET}),
            "eventTypes",
        ),
        (
            json!({"url": "http://h/", "eventTypes": ["a*"], "secret": SECRET}),
            "eventTypes",
        ),
        (json!({"url": "http://h/", "eventTypes": ["*"]}), "secret"),
        (
            json!({"url": "http://h/", "eventTypes": ["*"], "secret": "short"}),
            "secret",
        ),
    ] {
        let r = api.post("/webhook", body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {r}");
        assert!(r.text.contains(field), "{body}: {r}");
    }

    // 10.x is private and not allowed (only 127.0.0.1 is, in these tests).
    let hook = create_hook(
        &api,
        "http://10.255.255.1:9/hook",
        json!(["worker.created"]),
    )
    .await;
    let r = api
        .post(&format!("/webhook/{hook}/test"), json!(null))
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["delivered"], false, "{r}");
    assert!(
        r.body["error"].as_str().unwrap().contains("address guard"),
        "{r}"
    );
    api.create("worker", json!({"name": "Ann"})).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let rows = log(&api, &hook, "").await;
        if let Some(e) = rows.first().and_then(|r| r["lastError"].as_str()) {
            assert!(e.contains("address guard"), "{rows:?}");
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{rows:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Deactivated: later events are not queued.
    let r = api
        .patch(&format!("/webhook/{hook}"), json!({"isActive": false}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    // A new secret through PATCH; still never answered.
    let r = api
        .patch(
            &format!("/webhook/{hook}"),
            json!({"secret": "another-secret-0123456"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert!(r.body.get("secret").is_none(), "{r}");
    let r = api.delete(&format!("/webhook/{hook}")).await;
    assert!(r.status == 204 || r.status == 200, "{r}");
    assert_eq!(
        api.get(&format!("/webhook/{hook}/deliveries")).await.status,
        404
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_stopped_mid_delivery_leaves_it_to_the_next() {
    // The first server owns the database and does not deliver; the second one does until it
    // is stopped while the receiver holds its request; a third one takes over.
    let owner = TestServer::start_isolated_with(|_| {}).await;
    let api = owner.org("Kill").await;
    let receiver = Receiver::start(SECRET, Mode::HangFirst).await;
    let hook = create_hook(&api, &receiver.url(), json!(["worker.created"])).await;
    let doomed = owner.another_with(delivering).await;
    api.create("worker", json!({"name": "Ann"})).await;
    receiver.wait_until(WAIT, |h| !h.is_empty()).await;
    // Stopped without finishing its work: its background tasks are aborted mid-request, as
    // a killed process's would be (the lease it holds stays in the database).
    drop(doomed);
    let pending = log(&api, &hook, "status=pending").await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["attempts"], 1);

    let heir = owner.another_with(delivering).await;
    let hits = receiver
        .wait_until(WAIT, |h| h.iter().any(|h| h.accepted))
        .await;
    assert_eq!(hits.len(), 2, "{hits:?}");
    assert_eq!(hits[0].event_id, hits[1].event_id, "the same event again");
    assert_eq!(hits[1].attempt, "2");
    assert!(hits.iter().all(|h| h.signature_ok));
    let rows = wait_log(&api, &hook, "status=delivered", 1).await;
    assert_eq!(rows[0]["attempts"], 2, "{rows:?}");
    heir.shutdown().await;
    owner.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_for_one_receiver_does_not_hold_up_another_webhook() {
    let server = TestServer::start_isolated_with(|c| {
        delivering(c);
        c.webhooks.timeout = Duration::from_secs(3);
    })
    .await;
    let api = server.org("Fair").await;
    // A receiver that accepts and never answers, with 320 deliveries queued: 20 claims' worth,
    // each claim waiting out the 3 s time-out. Taken oldest first, they would stand a minute
    // in front of any later delivery.
    let stuck = Receiver::start(SECRET, Mode::HangAlways).await;
    let stuck_hook = create_hook(&api, &stuck.url(), json!(["vendor.*"])).await;
    let vendors: Vec<Value> = (0..320)
        .map(|i| json!({"name": format!("Vendor {i}")}))
        .collect();
    let r = api.put("/vendor/bulk", Value::Array(vendors)).await;
    assert!(r.status == 200 || r.status == 201, "{r}");
    stuck.wait_until(WAIT, |h| !h.is_empty()).await;

    let live = Receiver::start(SECRET, Mode::Accept).await;
    let live_hook = create_hook(&api, &live.url(), json!(["worker.created"])).await;
    api.create("worker", json!({"name": "Ann"})).await;
    // Its turn comes in the next claim, after at most one round of time-outs.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !live.hits().iter().any(|h| h.accepted) {
        if tokio::time::Instant::now() > deadline {
            panic!(
                "the live webhook got nothing in 20 s; its log: {:#?}; the stuck one got {} requests",
                log(&api, &live_hook, "").await,
                stuck.hits().len()
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let hits = live.hits();
    assert!(hits.iter().all(|h| h.signature_ok), "{hits:?}");
    let pending = log(&api, &stuck_hook, "status=pending&pageSize=1").await;
    assert!(
        !pending.is_empty(),
        "the backlog is still there: {pending:?}"
    );

    server.shutdown().await;
}
