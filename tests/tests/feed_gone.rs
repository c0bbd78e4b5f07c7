//! The change feed never skips silently (issue 35, item 8; docs/events.md, "Retention"): a
//! follower whose `after` cursor is older than the oldest event kept gets 410 `GONE` with the
//! oldest kept cursor in the error's detail, through HTTP and through the client's typed error.
//!
//! Its own test binary: the server here keeps events for no time at all, and the prune job it
//! runs removes every organization's events on the database, which on a shared PostgreSQL
//! database would take the events other tests of a binary running beside it read.

use std::time::Duration;

use prodops_tests::*;

/// A server that keeps no event once the prune job runs.
async fn server() -> TestServer {
    TestServer::start_with(|c| c.event_retention = Duration::ZERO).await
}

fn gone_cursor(r: &Resp) -> String {
    let details = assert_error_details(r, 410, "GONE");
    assert_eq!(details.len(), 1, "{r}");
    assert_eq!(details[0]["field"], "after", "{r}");
    details[0]["oldestCursor"]
        .as_str()
        .unwrap_or_else(|| panic!("oldestCursor is a string: {r}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_older_than_the_oldest_event_kept_is_410_with_the_oldest_cursor() {
    let server = server().await;
    let api = server.org("Feed").await;
    for name in ["Ann", "Bob", "Cy"] {
        api.create("worker", json!({"name": name})).await;
    }
    // Nothing pruned yet: every cursor reads on.
    let r = api.get("/event?after=1").await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["values"].as_array().unwrap().len(), 2, "{r}");

    prune_events_now(&server).await;
    // From the beginning: nothing kept, nothing missed.
    let r = api.get("/event").await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["values"], json!([]), "{r}");
    // Events 2 and 3 are gone: 410, and the oldest kept is the next event's cursor.
    let r = api.get("/event?after=1").await;
    assert_eq!(gone_cursor(&r), "4");
    assert!(
        r.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no longer kept"),
        "{r}"
    );
    // A follower that had read everything missed nothing.
    let r = api.get("/event?after=3").await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["values"], json!([]), "{r}");
    assert_eq!(r.body["nextCursor"], "3", "{r}");

    // A new event: kept; the followers behind it still learn what they missed.
    api.create("worker", json!({"name": "Dee"})).await;
    for (after, gone) in [("1", true), ("2", true), ("3", false)] {
        let r = api.get(&format!("/event?after={after}")).await;
        if gone {
            assert_eq!(gone_cursor(&r), "4", "after={after}");
        } else {
            assert_eq!(r.status, 200, "{r}");
            assert_eq!(r.body["values"][0]["cursor"], "4", "{r}");
        }
    }
    // Whatever the filters and however long the follower would wait: at once.
    for query in [
        "after=2&type=worker.archived",
        "after=2&resource=worker",
        "after=2&wait=30",
        "after=2&limit=1&recordId=0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b",
    ] {
        let r = api.get(&format!("/event?{query}")).await;
        assert_eq!(gone_cursor(&r), "4", "{query}");
    }

    // The client's typed error.
    let client = prodops_client::Client::new(prodops_client::Config::new(
        server.base_url(),
        api.key().unwrap(),
    ))
    .unwrap();
    let query = prodops_core::api::event::EventQuery {
        after: Some("1".into()),
        ..Default::default()
    };
    let err = client.events(&query).await.unwrap_err();
    let gone = err.events_gone().expect("a 410 is the feed's gone error");
    assert_eq!(gone.oldest_cursor, "4");
    assert_eq!(err.status(), Some(410));
    let query = prodops_core::api::event::EventQuery {
        after: Some("3".into()),
        ..Default::default()
    };
    let page = client.events(&query).await.unwrap();
    assert_eq!(page.values.len(), 1);

    // Another organization: its own cursors, nothing of this one's feed.
    let other = server.org("Other").await;
    other.create("worker", json!({"name": "Eve"})).await;
    other.create("worker", json!({"name": "Flo"})).await;
    let r = other.get("/event?after=1").await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["values"][0]["cursor"], "2", "{r}");
    let r = other.get("/event?after=3").await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["values"], json!([]), "{r}");
    server.shutdown().await;
}
