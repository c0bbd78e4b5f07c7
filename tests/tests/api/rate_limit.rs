//! Rate limits (decisions.md 6, spec 7/8): standing headers on every response, 429 past the
//! limit with `Retry-After` and a top-level `message`, per API key, a bulk call counts as one.
//!
//! Windows are fixed and turn on the server's clock; every server here runs on a manual clock
//! ([`Clock::manual`]), so no window turns in the middle of a test unless the test turns it.

use std::time::Duration;

use prodops_tests::*;

/// A server on a clock that stands still, with its configuration adjusted.
async fn start_with(adjust: impl FnOnce(&mut Config)) -> TestServer {
    TestServer::start_with(|c| {
        c.clock = Clock::manual();
        adjust(c);
    })
    .await
}

fn assert_rate_headers(resp: &Resp, limit: u64) {
    assert_eq!(
        resp.header_u64("ratelimit-limit"),
        Some(limit),
        "RateLimit-Limit: {resp}"
    );
    let remaining = resp.header_u64("ratelimit-remaining");
    assert!(
        remaining.is_some_and(|r| r <= limit),
        "RateLimit-Remaining: {resp}"
    );
    let reset = resp.header_u64("ratelimit-reset");
    assert!(reset.is_some(), "RateLimit-Reset (seconds): {resp}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_response_carries_rate_limit_headers() {
    let server = start_with(|_| {}).await;
    let api = server.org("Acme").await;
    let (reader, _) = server.key(&api, false, &["Worker.Read"]).await;
    let random = uuid::Uuid::new_v4();
    let responses = [
        api.get("/worker").await,
        api.post("/worker", json!({"name": "R"})).await,
        api.get(&format!("/worker/{random}")).await,
        api.post("/worker", json!({"name": 5})).await,
        api.post("/worker/query", json!({})).await,
        api.get("/worker/count").await,
        api.put("/worker/bulk", json!([{"name": "B"}])).await,
        api.get("/no-such-resource").await,
        reader.post("/worker", json!({"name": "No"})).await,
    ];
    for resp in &responses {
        assert_rate_headers(resp, 6000);
        let reset = resp.header_u64("ratelimit-reset").unwrap();
        assert!(reset <= 60, "reset within the 60 s window: {resp}");
    }
    // The remaining budget goes down with each request of the same key.
    let first = responses[0].header_u64("ratelimit-remaining").unwrap();
    let later = responses[6].header_u64("ratelimit-remaining").unwrap();
    assert!(later < first, "remaining falls: {first} then {later}");
    assert!(first <= 5999, "the first request already counts: {first}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixth_request_over_a_limit_of_five_is_429() {
    let server = start_with(|c| c.rate_limit = 5).await;
    let api = server.org("Acme").await;
    for i in 1..=5u64 {
        let resp = api.get("/worker").await;
        assert_eq!(resp.status, 200, "request {i}: {resp}");
        assert_rate_headers(&resp, 5);
        assert_eq!(
            resp.header_u64("ratelimit-remaining"),
            Some(5 - i),
            "request {i}: {resp}"
        );
    }
    let resp = api.get("/worker").await;
    assert_error(&resp, 429, "RATE_LIMITED");
    assert_rate_headers(&resp, 5);
    assert_eq!(resp.header_u64("ratelimit-remaining"), Some(0), "{resp}");
    let retry = resp
        .header_u64("retry-after")
        .unwrap_or_else(|| panic!("Retry-After in seconds: {resp}"));
    assert!(
        (1..=60).contains(&retry),
        "Retry-After within the window: {resp}"
    );
    let top = resp.body.get("message").and_then(|m| m.as_str());
    assert!(
        top.is_some_and(|m| !m.is_empty()),
        "top-level message on a 429: {resp}"
    );
    assert_eq!(
        resp.body["message"], resp.body["error"]["message"],
        "the same message: {resp}"
    );
    // Writes are refused too, and do nothing.
    let resp = api.post("/worker", json!({"name": "Late"})).await;
    assert_error(&resp, 429, "RATE_LIMITED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_is_per_api_key() {
    let server = start_with(|c| c.rate_limit = 3).await;
    let api = server.org("Acme").await;
    let (other, _) = server.key(&api, true, &[]).await;
    let other_org = server.org("Other").await;
    for _ in 0..3 {
        assert_eq!(api.get("/worker").await.status, 200);
    }
    assert_error(&api.get("/worker").await, 429, "RATE_LIMITED");
    // Another key of the same organization, and a key of another organization, have their own budget.
    let resp = other.get("/worker").await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.header_u64("ratelimit-remaining"), Some(2), "{resp}");
    assert_eq!(other_org.get("/worker").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_call_counts_as_one_request() {
    let server = start_with(|c| c.rate_limit = 5).await;
    let api = server.org("Acme").await;
    let batch: Vec<_> = (0..50)
        .map(|i| json!({"name": format!("Bulk {i}")}))
        .collect();
    let resp = api.put("/worker/bulk", json!(batch)).await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["count"], 50, "{resp}");
    assert_eq!(
        resp.header_u64("ratelimit-remaining"),
        Some(4),
        "a bulk of 50 counts once: {resp}"
    );
    let resp = api
        .patch("/worker/bulk?status=active", json!({"status": "inactive"}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["count"], 50, "{resp}");
    assert_eq!(resp.header_u64("ratelimit-remaining"), Some(3), "{resp}");
    for _ in 0..3 {
        assert_eq!(api.get("/worker/count").await.status, 200);
    }
    assert_error(&api.get("/worker/count").await, 429, "RATE_LIMITED");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_returns_after_the_window() {
    let clock = Clock::manual();
    let server = TestServer::start_with({
        let clock = clock.clone();
        |c| {
            c.rate_limit = 2;
            c.rate_limit_window = Duration::from_secs(3600);
            c.clock = clock;
        }
    })
    .await;
    let api = server.org("Acme").await;
    assert_eq!(api.get("/worker").await.status, 200);
    assert_eq!(api.get("/worker").await.status, 200);
    let resp = api.get("/worker").await;
    assert_error(&resp, 429, "RATE_LIMITED");
    // Windows are fixed: the next one starts at the next multiple of the window on the clock.
    let now = clock.now_secs() as u64;
    let until_next = 3600 - now % 3600;
    assert_eq!(resp.header_u64("retry-after"), Some(until_next), "{resp}");
    assert_eq!(
        resp.header_u64("ratelimit-reset"),
        Some(until_next),
        "{resp}"
    );
    clock.advance(Duration::from_secs(until_next - 1));
    assert_error(&api.get("/worker").await, 429, "RATE_LIMITED");
    clock.advance(Duration::from_secs(1));
    let resp = api.get("/worker").await;
    assert_eq!(resp.status, 200, "after the window: {resp}");
    assert_eq!(resp.header_u64("ratelimit-remaining"), Some(1), "{resp}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_sharing_a_database_share_one_budget() {
    // One clock for both servers: they agree on the window, and it does not turn mid-test.
    let clock = Clock::manual();
    let limit = |clock: Clock| {
        move |c: &mut prodops_server::Config| {
            c.rate_limit = 10;
            c.rate_limit_window = Duration::from_secs(3600);
            c.clock = clock;
        }
    };
    let first = TestServer::start_with(limit(clock.clone())).await;
    let second = first.another_with(limit(clock.clone())).await;
    let org = first.org("Shared budget").await;
    let (on_first, key_id) = first.key(&org, true, &[]).await;
    let on_second = on_first.on(&second);
    for _ in 0..6 {
        assert_eq!(on_first.get("/worker").await.status, 200);
    }
    // The first server adds its counts to the database every sync interval (250 ms): wait until
    // it has (a wait for an event, not a guess at how long it takes).
    let row = format!("key:{key_id}@3600s");
    loop {
        let row = row.clone();
        let counts = first
            .running()
            .store()
            .read(move |tx| {
                tx.query(
                    "SELECT count FROM rate_limit_windows WHERE bucket = ?",
                    &[row.clone().into()],
                )
            })
            .await
            .expect("rate_limit_windows readable");
        let synced: i64 = counts
            .iter()
            .filter_map(|r| r.first().and_then(|v| v.as_i64()))
            .sum();
        assert!(
            synced <= 6,
            "only the first server's six requests: {synced}"
        );
        if synced == 6 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut admitted = 0;
    for _ in 0..8 {
        let resp = on_second.get("/worker").await;
        if resp.status == 200 {
            admitted += 1;
        } else {
            assert_error(&resp, 429, "RATE_LIMITED");
        }
    }
    assert_eq!(
        admitted, 4,
        "the second server admits only what is left of the shared budget"
    );
}
