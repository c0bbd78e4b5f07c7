//! Issue 35 item 5: readiness (docs/deliverables.md, "Readiness") follows every record write
//! that changes progress or archival, not only the progress actions: a raw PATCH, a bulk PUT
//! (what a CSV import sends), a bulk PATCH, archive and restore.

use prodops_tests::*;
use serde_json::Value;

use crate::deliverable::{D, node};

fn status(d: &Value) -> &str {
    d["progress"]["status"].as_str().unwrap_or("none")
}

async fn status_of(api: &Api, id: &str) -> String {
    status(&api.read(D, id).await).to_string()
}

async fn ok(resp: Resp) -> Resp {
    assert_eq!(resp.status, 200, "{resp}");
    resp
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_raw_bulk_and_archival_writes() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let o = node(&api, "O", "order", None).await;
    let a = node(&api, "a", "step", Some(&o)).await;
    let b = node(&api, "b", "step", Some(&o)).await;
    api.create("dependency", json!({"predecessorId": a, "successorId": b}))
        .await;
    assert_eq!(status_of(&api, &b).await, "waiting");

    // Archive and restore of the predecessor, by PATCH.
    ok(api
        .patch(&format!("/{D}/{a}"), json!({"isArchived": true}))
        .await)
    .await;
    assert_eq!(
        status_of(&api, &b).await,
        "todo",
        "an archived predecessor holds nothing back"
    );
    ok(api
        .patch(&format!("/{D}/{a}"), json!({"isArchived": false}))
        .await)
    .await;
    assert_eq!(
        status_of(&api, &b).await,
        "waiting",
        "restored, it holds back again"
    );

    // A raw PATCH of the predecessor's progress.
    ok(api
        .patch(
            &format!("/{D}/{a}"),
            json!({"progress": {"status": "done"}}),
        )
        .await)
    .await;
    assert_eq!(status_of(&api, &b).await, "todo");
    ok(api
        .patch(
            &format!("/{D}/{a}"),
            json!({"progress": {"status": "todo"}}),
        )
        .await)
    .await;
    assert_eq!(status_of(&api, &b).await, "waiting");

    // A bulk PUT (what `prodops deliverable import` sends) setting it done.
    let mut rec = api.read(D, &a).await;
    rec["progress"] = json!({"status": "done"});
    api.bulk_put(D, vec![rec]).await;
    assert_eq!(status_of(&api, &b).await, "todo");

    // A bulk PATCH taking it back.
    let r = ok(api
        .patch(
            &format!("/{D}/bulk?id={a}"),
            json!({"progress": {"status": "todo"}}),
        )
        .await)
    .await;
    assert_eq!(r.body["count"], 1, "{r}");
    assert_eq!(status_of(&api, &b).await, "waiting");

    // The successor's own write of unstarted progress keeps readiness.
    ok(api
        .patch(
            &format!("/{D}/{b}"),
            json!({"progress": {"status": "todo"}}),
        )
        .await)
    .await;
    assert_eq!(status_of(&api, &b).await, "waiting");

    // Archival through DELETE, and a bulk restore.
    let r = api.delete(&format!("/{D}/{a}")).await;
    assert!(r.status == 204 || r.status == 200, "{r}");
    assert_eq!(status_of(&api, &b).await, "todo");
    ok(api
        .patch(
            &format!("/{D}/bulk?id={a}&isArchived=true"),
            json!({"isArchived": false}),
        )
        .await)
    .await;
    assert_eq!(status_of(&api, &b).await, "waiting");

    // Started work is left as it is.
    ok(api
        .patch(&format!("/{D}/{b}"), json!({"progress": {"status": "wip"}}))
        .await)
    .await;
    ok(api
        .patch(&format!("/{D}/{a}"), json!({"isArchived": true}))
        .await)
    .await;
    ok(api
        .patch(&format!("/{D}/{a}"), json!({"isArchived": false}))
        .await)
    .await;
    assert_eq!(status_of(&api, &b).await, "wip");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_applied_template_brings_its_dependencies_and_their_readiness() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let route = node(&api, "R", "route", None).await;
    let s1 = node(&api, "s1", "step", Some(&route)).await;
    let s2 = node(&api, "s2", "step", Some(&route)).await;
    api.create(
        "dependency",
        json!({"predecessorId": s1, "successorId": s2}),
    )
    .await;
    let o = node(&api, "O", "order", None).await;
    let r = api
        .post(
            &format!("/{D}/{o}/apply-template"),
            json!({"templateId": route}),
        )
        .await;
    assert!(r.status == 200 || r.status == 201, "{r}");
    let copy = |source: &str| -> String {
        r.body["value"]["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["templateNodeId"] == source)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (c1, c2) = (copy(&s1), copy(&s2));
    assert_eq!(
        status_of(&api, &c2).await,
        "waiting",
        "the copied successor waits"
    );
    assert_ne!(status_of(&api, &c1).await, "waiting");
    // And follows its copied predecessor from then on, through a bulk PUT.
    let mut rec = api.read(D, &c1).await;
    rec["progress"] = json!({"status": "done"});
    api.bulk_put(D, vec![rec]).await;
    assert_eq!(status_of(&api, &c2).await, "todo");
}
