//! Progress actions (spec 3.1, 4.2) with roll-up and kicked workers; the schedule engine with
//! dependencies, durations and roll-up; dependencies refusing cycles.

use prodops_tests::*;
use serde_json::Value;

use crate::deliverable::{D, node, stage_node, stage_resource, strs};

async fn progress(api: &Api, root: &str, id: &str, action: Value) -> Resp {
    api.post(&format!("/{D}/root/{root}/progress/{id}"), action)
        .await
}

async fn schedule(api: &Api, root: &str, id: &str, action: Value) -> Resp {
    api.post(&format!("/{D}/root/{root}/schedule/{id}"), action)
        .await
}

fn status(d: &Value) -> &str {
    d["progress"]["status"].as_str().unwrap_or("none")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_actions_and_roll_up() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let (cut, _) = stage_resource(&api, "Cut").await;
    let (weld, _) = stage_resource(&api, "Weld").await;
    let o = node(&api, "O", "order", None).await;
    let p = node(&api, "P", "phase", Some(&o)).await;
    let s1 = stage_node(&api, "S1", &p, &cut).await;
    let s2 = stage_node(&api, "S2", &p, &weld).await;
    let a = api
        .create(
            D,
            json!({"name": "a", "type": "step", "parentId": s1, "quantity": 10}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let b = node(&api, "b", "step", Some(&s1)).await;
    let q = api
        .create(
            D,
            json!({"name": "q", "type": "qcstep", "parentId": s2, "data": {"qcTemplateId": uuid::Uuid::now_v7()}}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();

    // send-ahead: partial completion.
    let r = progress(&api, &o, &a, json!({"type": "send-ahead", "quantity": 4})).await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body, json!({"kickedWorkers": []}));
    let step = api.read(D, &a).await;
    assert_eq!(status(&step), "wip");
    assert_eq!(step["progress"]["completed"], 4.0);
    assert_eq!(step["progress"]["percentage"], 40.0);
    assert!(step["progress"]["startedAt"].is_string());
    assert!(step["progress"]["updatedById"].is_string());
    // Roll-up: the stage and everything above are in progress.
    let stage = api.read(D, &s1).await;
    assert_eq!(status(&stage), "wip");
    assert_eq!(stage["progress"]["percentage"], 20.0);
    let order = api.read(D, &o).await;
    assert_eq!(status(&order), "wip");
    assert_eq!(order["computed"]["currentChildren"][0]["status"], "wip");

    // uncomplete: back to wip; more than completed is refused.
    let r = progress(&api, &o, &a, json!({"type": "uncomplete", "quantity": 5})).await;
    assert_validation_names(&r, "quantity");
    let r = progress(&api, &o, &a, json!({"type": "uncomplete", "quantity": 1})).await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(api.read(D, &a).await["progress"]["completed"], 3.0);

    // on hold and back.
    progress(&api, &o, &a, json!({"type": "put-on-hold"})).await;
    let step = api.read(D, &a).await;
    assert_eq!(status(&step), "on-hold");
    assert_eq!(step["computed"]["alertType"], "on-hold");
    assert_eq!(step["computed"]["alertTypeOrdinal"], 3);
    assert_eq!(api.read(D, &o).await["computed"]["alertType"], "on-hold");
    let r = progress(&api, &o, &a, json!({"type": "send-ahead", "quantity": 1})).await;
    assert_error_details(&r, 400, "VALIDATION_ERROR");
    progress(&api, &o, &a, json!({"type": "resume-work"})).await;
    assert_eq!(status(&api.read(D, &a).await), "wip");
    let r = progress(&api, &o, &a, json!({"type": "resume-work"})).await;
    assert_error_details(&r, 400, "VALIDATION_ERROR");

    // Complete both steps of the first stage: it rolls up to done and the frontier moves on.
    progress(&api, &o, &a, json!({"type": "complete"})).await;
    let r = progress(
        &api,
        &o,
        &b,
        json!({"type": "set-percentage", "percentage": 100}),
    )
    .await;
    assert_eq!(r.status, 200, "{r}");
    let stage = api.read(D, &s1).await;
    assert_eq!(status(&stage), "done");
    assert!(stage["progress"]["completedAt"].is_string());
    let order = api.read(D, &o).await;
    assert_eq!(strs(&order["computed"]["currentStageIds"]), [weld.as_str()]);

    // rework: the flag stays true for good.
    progress(&api, &o, &a, json!({"type": "rework"})).await;
    let step = api.read(D, &a).await;
    assert_eq!(status(&step), "rework");
    assert_eq!(step["progress"]["hasBeenReworked"], true);
    assert_eq!(step["progress"]["completedAt"], Value::Null);
    assert_ne!(status(&api.read(D, &s1).await), "done");
    progress(&api, &o, &a, json!({"type": "complete"})).await;
    assert_eq!(api.read(D, &a).await["progress"]["hasBeenReworked"], true);

    // set-percentage is not for QC steps; bad bodies are 400.
    let r = progress(
        &api,
        &o,
        &q,
        json!({"type": "set-percentage", "percentage": 50}),
    )
    .await;
    assert_error_details(&r, 400, "VALIDATION_ERROR");
    for bad in [
        json!({"type": "bogus"}),
        json!({"type": "set-percentage", "percentage": 101}),
        json!({"type": "complete", "extra": 1}),
        json!({"type": "send-ahead"}),
        json!({}),
    ] {
        let r = progress(&api, &o, &b, bad).await;
        assert_error_details(&r, 400, "VALIDATION_ERROR");
    }
    // The root must be an order; the node must be under it.
    let route = node(&api, "R", "route", None).await;
    let r = progress(&api, &route, &route, json!({"type": "complete"})).await;
    assert_validation_names(&r, "rootId");
    let o2 = node(&api, "O2", "order", None).await;
    let r = progress(&api, &o2, &a, json!({"type": "complete"})).await;
    assert_error(&r, 404, "NOT_FOUND");
    let stranger = server.org("Stranger").await;
    let r = progress(&stranger, &o, &a, json!({"type": "complete"})).await;
    assert_error(&r, 404, "NOT_FOUND");

    // Completing the order completes everything under it.
    let r = progress(&api, &o, &o, json!({"type": "complete"})).await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(status(&api.read(D, &q).await), "done");
    assert_eq!(status(&api.read(D, &s2).await), "done");
    assert_eq!(
        api.read(D, &o).await["computed"]["currentStageIds"],
        json!([])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn done_kicks_workers_and_is_idempotent() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let shop = api.create("shop", json!({"name": "Main"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let o = node(&api, "O", "order", None).await;
    let p = node(&api, "P", "phase", Some(&o)).await;
    let ann = api.create("worker", json!({"name": "Ann"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let bob = api
        .create("worker", json!({"name": "Bob", "status": "inactive"}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = api
        .post(
            "/deliverable/work-sessions/save",
            json!({"shopId": shop, "assignments": {ann.clone(): [p], bob.clone(): [p]}}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    let r = api
        .req(
            reqwest::Method::POST,
            &format!("/{D}/root/{o}/progress/{p}"),
        )
        .json(json!({"type": "complete"}))
        .idempotency_key("done-1")
        .send()
        .await;
    assert_eq!(r.status, 200, "{r}");
    let mut kicked = strs(&r.body["kickedWorkers"]);
    kicked.sort();
    let mut expected = vec![ann.clone(), bob.clone()];
    expected.sort();
    assert_eq!(kicked, expected, "the session and the plan both ended");
    assert_eq!(
        api.count("deliverable/work-sessions", "endDate=null").await,
        0
    );
    // The same request again is answered from the stored reply.
    let again = api
        .req(
            reqwest::Method::POST,
            &format!("/{D}/root/{o}/progress/{p}"),
        )
        .json(json!({"type": "complete"}))
        .idempotency_key("done-1")
        .send()
        .await;
    assert_eq!(again.body, r.body);
    // Completing again kicks nobody.
    let r = api
        .post(
            &format!("/{D}/root/{o}/progress/{p}"),
            json!({"type": "complete"}),
        )
        .await;
    assert_eq!(r.body, json!({"kickedWorkers": []}));
    // Permission: Deliverable.Update.
    let (reader, _) = server.key(&api, false, &["Deliverable.Read"]).await;
    let r = reader
        .post(
            &format!("/{D}/root/{o}/progress/{p}"),
            json!({"type": "rework"}),
        )
        .await;
    assert_error(&r, 403, "FORBIDDEN");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_engine() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let o = node(&api, "O", "order", None).await;
    let p = node(&api, "P", "phase", Some(&o)).await;
    let mk = |name: &'static str, dur: i64| {
        let api = &api;
        let p = p.clone();
        async move {
            api.create(
                D,
                json!({"name": name, "type": "component", "parentId": p, "durationSec": dur}),
            )
            .await["id"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let a = mk("a", 3600).await;
    let b = mk("b", 1800).await;
    let dep = api
        .create("dependency", json!({"predecessorId": a, "successorId": b}))
        .await;
    assert!(dep["id"].is_string());

    const T: i64 = 1_700_000_000;
    let r = schedule(&api, &o, &a, json!({"type": "schedule", "newStart": T})).await;
    assert_eq!(r.status, 204, "{r}");
    let ra = api.read(D, &a).await;
    assert_eq!(ra["schedule"]["startDate"], "2023-11-14T22:13:20Z");
    assert_eq!(ra["schedule"]["endDate"], "2023-11-14T23:13:20Z");
    assert!(ra["computed"]["date"].is_string());
    // The successor cannot start before the predecessor finishes.
    schedule(&api, &o, &b, json!({"type": "schedule", "newStart": T})).await;
    let rb = api.read(D, &b).await;
    assert_eq!(rb["schedule"]["startDate"], "2023-11-14T23:13:20Z");
    // Roll-up to the phase and the order.
    let ro = api.read(D, &o).await;
    assert_eq!(ro["schedule"]["startDate"], "2023-11-14T22:13:20Z");
    assert_eq!(ro["schedule"]["endDate"], "2023-11-14T23:43:20Z");
    // Dragging the predecessor later pushes the successor.
    schedule(&api, &o, &a, json!({"type": "drag", "newFinish": T + 7200})).await;
    let rb = api.read(D, &b).await;
    assert_eq!(rb["schedule"]["startDate"], "2023-11-15T00:13:20Z");
    // Shrink and expand set the duration.
    let r = schedule(
        &api,
        &o,
        &a,
        json!({"type": "shrink", "newDuration": 600, "newStart": T}),
    )
    .await;
    assert_eq!(r.status, 204, "{r}");
    let ra = api.read(D, &a).await;
    assert_eq!(ra["durationSec"], 600);
    assert_eq!(ra["schedule"]["endDate"], "2023-11-14T22:23:20Z");
    let r = schedule(
        &api,
        &o,
        &a,
        json!({"type": "shrink", "newDuration": 6000, "newStart": T}),
    )
    .await;
    assert_validation_names(&r, "newDuration");
    schedule(
        &api,
        &o,
        &a,
        json!({"type": "expand", "newDuration": 1200, "newFinish": T + 1200}),
    )
    .await;
    // Reschedule pulls the successor back to right after its predecessor.
    schedule(&api, &o, &b, json!({"type": "reschedule"})).await;
    let rb = api.read(D, &b).await;
    assert_eq!(rb["schedule"]["startDate"], "2023-11-14T22:33:20Z");

    // Batch: all or nothing.
    let before_batch = api.read(D, &a).await["schedule"].clone();
    let r = api
        .post(
            &format!("/{D}/schedule/batch"),
            json!([
                {"rootParentId": o, "targetId": a, "action": {"type": "schedule", "newStart": T + 86400}},
                {"rootParentId": o, "targetId": b, "action": {"type": "drag"}},
            ]),
        )
        .await;
    let details = assert_error_details(&r, 400, "VALIDATION_ERROR");
    assert_eq!(details[0]["index"], 1);
    assert_eq!(api.read(D, &a).await["schedule"], before_batch);
    let r = api
        .post(
            &format!("/{D}/schedule/batch"),
            json!([
                {"rootParentId": o, "targetId": a, "action": {"type": "schedule", "newStart": T + 86400}},
                {"rootParentId": o, "targetId": b, "action": {"type": "reschedule"}},
            ]),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(
        api.read(D, &b).await["schedule"]["startDate"],
        "2023-11-15T22:33:20Z"
    );

    // Bad actions.
    for bad in [
        json!({"type": "schedule", "newStart": "2024-01-01T00:00:00Z"}),
        json!({"type": "schedule"}),
        json!({"type": "drag", "newStart": 1, "newFinish": 2}),
        json!({"type": "teleport"}),
        json!({"type": "schedule", "newStart": -5}),
    ] {
        let r = schedule(&api, &o, &a, bad).await;
        assert_error_details(&r, 400, "VALIDATION_ERROR");
    }
    // `schedule` is read-only on PATCH.
    let before = api.read(D, &a).await;
    let r = api
        .patch(&format!("/{D}/{a}"), json!({"schedule": {"startDate": "2020-01-01T00:00:00Z", "endDate": "2020-01-02T00:00:00Z"}}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["schedule"], before["schedule"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependencies_refuse_cycles_and_strangers() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let o = node(&api, "O", "order", None).await;
    let a = node(&api, "a", "phase", Some(&o)).await;
    let b = node(&api, "b", "phase", Some(&o)).await;
    let c = node(&api, "c", "phase", Some(&o)).await;
    let other = node(&api, "O2", "order", None).await;
    let x = node(&api, "x", "phase", Some(&other)).await;
    let dep = |p: &str, s: &str| json!({"predecessorId": p, "successorId": s});
    api.create("dependency", dep(&a, &b)).await;
    api.create("dependency", dep(&b, &c)).await;
    let r = api.post("/dependency", dep(&c, &a)).await;
    assert_validation_names(&r, "successorId");
    let r = api.post("/dependency", dep(&a, &a)).await;
    assert_error_details(&r, 400, "VALIDATION_ERROR");
    let r = api.post("/dependency", dep(&a, &b)).await;
    assert_validation_names(&r, "successorId");
    let r = api.post("/dependency", dep(&a, &x)).await;
    assert_validation_names(&r, "successorId");
    let r = api
        .post("/dependency", dep(&a, &uuid::Uuid::now_v7().to_string()))
        .await;
    assert_validation_names(&r, "successorId");
    // A PATCH closing a cycle is refused too.
    let d = api.create("dependency", dep(&a, &c)).await;
    let r = api
        .patch(
            &format!("/dependency/{}", d["id"].as_str().unwrap()),
            json!({"predecessorId": c, "successorId": a}),
        )
        .await;
    assert_validation_names(&r, "successorId");
    assert_eq!(api.count("dependency", "").await, 3);
}

/// A bulk PUT of dependencies is checked as its records one by one in order (each tree's
/// graph read once and kept as the call writes): a cycle through a dependency stored before
/// the call, one closed by two records of the call, one through containers, a duplicate, a link
/// to an ancestor, one across trees, and one closed by a record the call changed are each
/// refused by index, in two trees at once, and nothing is written; the same call without them
/// writes, and its successors wait. A DELETE of a dependency is announced in the feed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_dependencies_refuse_cycles_spanning_the_trees_of_the_call() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let o1 = node(&api, "O1", "order", None).await;
    let (a1, b1, c1) = (
        node(&api, "a1", "phase", Some(&o1)).await,
        node(&api, "b1", "phase", Some(&o1)).await,
        node(&api, "c1", "phase", Some(&o1)).await,
    );
    let a1s = node(&api, "a1s", "step", Some(&a1)).await;
    let b1s = node(&api, "b1s", "step", Some(&b1)).await;
    let o2 = node(&api, "O2", "order", None).await;
    let (a2, b2, c2) = (
        node(&api, "a2", "phase", Some(&o2)).await,
        node(&api, "b2", "phase", Some(&o2)).await,
        node(&api, "c2", "phase", Some(&o2)).await,
    );
    let b2s = node(&api, "b2s", "step", Some(&b2)).await;
    let dep = |p: &str, s: &str| json!({"predecessorId": p, "successorId": s});
    let stored = api.create("dependency", dep(&a1, &b1)).await;
    let stored_id = stored["id"].as_str().unwrap().to_string();

    let good = vec![dep(&b1, &c1), dep(&a2, &b2), dep(&b2, &c2)];
    let mut call = good.clone();
    call.extend([
        dep(&c1, &a1),   // 3: with the stored a1 -> b1 and row 0
        dep(&c2, &a2),   // 4: with rows 1 and 2, in the other tree
        dep(&b1s, &a1s), // 5: a step of b1 before a step of a1, while a1 is before b1
        dep(&a1, &b1),   // 6: exists
        dep(&b2, &b2s),  // 7: a phase and its own step
        dep(&a1, &b2),   // 8: across trees
        dep(&c2, &b2s),  // 9: b2 is before c2, and this puts c2 before a step of b2
    ]);
    let r = api.put("/dependency/bulk", json!(call)).await;
    let details = assert_error_details(&r, 400, "VALIDATION_ERROR");
    let refused: Vec<(u64, &str)> = details
        .iter()
        .map(|d| (d["index"].as_u64().unwrap(), d["field"].as_str().unwrap()))
        .collect();
    assert_eq!(
        refused,
        (3..=9).map(|i| (i, "successorId")).collect::<Vec<_>>(),
        "{r}"
    );
    assert_eq!(api.count("dependency", "").await, 1);

    // The same records without the refused ones: written, in both trees, successors waiting.
    let r = api.put("/dependency/bulk", json!(good)).await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(api.count("dependency", "").await, 4);
    for waiting in [&b1, &c1, &b2, &c2] {
        assert_eq!(status(&api.read(D, waiting).await), "waiting");
    }

    // A record the call changes counts with its new ends for the records after it.
    let r = api
        .put(
            "/dependency/bulk",
            json!([
                {"id": stored_id, "predecessorId": c1, "successorId": a1},
                dep(&a1, &b1),
            ]),
        )
        .await;
    let details = assert_error_details(&r, 400, "VALIDATION_ERROR");
    assert_eq!(details.len(), 1, "{r}");
    assert_eq!(details[0]["index"], 1, "{r}");
    // Changed alone (to ends closing nothing), it is written and its old successor released.
    let r = api
        .put(
            "/dependency/bulk",
            json!([{"id": stored_id, "predecessorId": b1s, "successorId": c1}]),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(status(&api.read(D, &b1).await), "todo");

    // A deletion is announced, and releases its successor.
    let r = api.delete(&format!("/dependency/{stored_id}")).await;
    assert!(r.status == 204 || r.status == 200, "{r}");
    let feed = api
        .get("/event?resource=dependency&type=dependency.deleted")
        .await;
    assert_eq!(feed.status, 200, "{feed}");
    let events = feed.body["values"].as_array().unwrap();
    assert_eq!(events.len(), 1, "{feed}");
    assert_eq!(events[0]["recordId"], stored_id.as_str());
}

/// Readiness (docs/deliverables.md, "Readiness"): a successor waits while a predecessor has
/// released nothing, is todo once every predecessor is done or sent some quantity ahead, goes
/// back to waiting when that is undone (unless its work started); containers alike; the work
/// frontier follows; removing the dependency releases it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_follows_dependencies() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let (cut, _) = stage_resource(&api, "Cut").await;
    let (weld, _) = stage_resource(&api, "Weld").await;
    let (paint, _) = stage_resource(&api, "Paint").await;
    let o = node(&api, "O", "order", None).await;
    let p = node(&api, "P", "phase", Some(&o)).await;
    let p2 = node(&api, "P2", "phase", Some(&o)).await;
    let s1 = stage_node(&api, "S1", &p, &cut).await;
    let s2 = stage_node(&api, "S2", &p, &weld).await;
    let s3 = stage_node(&api, "S3", &p2, &paint).await;
    let a = api
        .create(
            D,
            json!({"name": "a", "type": "step", "parentId": s1, "quantity": 10}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let b = node(&api, "b", "step", Some(&s2)).await;
    // Never set, nothing holds it back: todo, on the frontier.
    assert_eq!(
        api.read(D, &o).await["computed"]["currentChildren"][0]["status"],
        "todo"
    );
    let dep = |p: &str, s: &str| json!({"predecessorId": p, "successorId": s});
    api.create("dependency", dep(&a, &b)).await;
    api.create("dependency", dep(&p, &p2)).await;
    let rb = api.read(D, &b).await;
    assert_eq!(status(&rb), "waiting");
    assert!(rb["progress"]["updatedById"].is_null());
    assert_eq!(
        api.read(D, &s2).await["computed"]["currentChildren"][0]["status"],
        "waiting"
    );
    let rp2 = api.read(D, &p2).await;
    assert_eq!(status(&rp2), "waiting");
    assert_eq!(rp2["computed"]["currentStageIds"], json!([]));
    let ro = api.read(D, &o).await;
    assert_eq!(ro["computed"]["currentStageIds"], json!([cut]));
    assert_eq!(ro["computed"]["currentPhaseNames"], json!(["P"]));
    assert_eq!(ro["computed"]["currentChildren"][1]["status"], "waiting");

    // send-ahead releases the quantity sent: the successor may start.
    let r = progress(&api, &o, &a, json!({"type": "send-ahead", "quantity": 4})).await;
    assert_eq!(r.status, 200, "{r}");
    let rb = api.read(D, &b).await;
    assert_eq!(status(&rb), "todo");
    assert!(rb["progress"]["updatedById"].is_string());
    assert_eq!(
        api.read(D, &s2).await["computed"]["currentChildren"][0]["status"],
        "todo"
    );
    // Undoing it holds the untouched successor back again.
    progress(&api, &o, &a, json!({"type": "uncomplete", "quantity": 4})).await;
    assert_eq!(status(&api.read(D, &b).await), "waiting");
    // Done: released, and the frontier moves on to the second stage.
    progress(&api, &o, &a, json!({"type": "complete"})).await;
    assert_eq!(status(&api.read(D, &b).await), "todo");
    let ro = api.read(D, &o).await;
    assert_eq!(ro["computed"]["currentStageIds"], json!([weld]));
    // Started work keeps its status when the predecessor is reworked.
    progress(
        &api,
        &o,
        &b,
        json!({"type": "set-percentage", "percentage": 50}),
    )
    .await;
    progress(&api, &o, &a, json!({"type": "rework"})).await;
    assert_eq!(status(&api.read(D, &b).await), "wip");
    // Back to 0 %, it was touched (startedAt stays): todo, not held back again.
    progress(
        &api,
        &o,
        &b,
        json!({"type": "set-percentage", "percentage": 0}),
    )
    .await;
    assert_eq!(status(&api.read(D, &b).await), "todo");

    // Completing the phase releases the phase after it and its frontier.
    let r = progress(&api, &o, &p, json!({"type": "complete"})).await;
    assert_eq!(r.status, 200, "{r}");
    let rp2 = api.read(D, &p2).await;
    assert_eq!(status(&rp2), "todo");
    assert_eq!(rp2["computed"]["currentStageIds"], json!([paint]));
    let ro = api.read(D, &o).await;
    assert_eq!(ro["computed"]["currentStageIds"], json!([paint]));
    assert_eq!(ro["computed"]["currentPhaseNames"], json!(["P2"]));

    // Removing a dependency releases its successor; PATCHing one re-evaluates both ends.
    let c = node(&api, "c", "step", Some(&s3)).await;
    let e = node(&api, "e", "step", Some(&s3)).await;
    let d = api.create("dependency", dep(&c, &e)).await;
    let did = d["id"].as_str().unwrap().to_string();
    assert_eq!(status(&api.read(D, &e).await), "waiting");
    let r = api
        .patch(
            &format!("/dependency/{did}"),
            json!({"predecessorId": e, "successorId": c}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(status(&api.read(D, &e).await), "todo");
    assert_eq!(status(&api.read(D, &c).await), "waiting");
    let r = api.delete(&format!("/dependency/{did}")).await;
    assert!(r.status == 204 || r.status == 200, "{r}");
    assert_eq!(status(&api.read(D, &c).await), "todo");
    assert_eq!(api.count("dependency", "").await, 2);
}

/// A dependency between two phases constrains everything under them, whichever node an action
/// moves; dependencies that could never hold through containers are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedule_respects_dependencies_at_every_level() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let o = node(&api, "O", "order", None).await;
    let pa = node(&api, "A", "phase", Some(&o)).await;
    let pb = node(&api, "B", "phase", Some(&o)).await;
    let mk = |name: &'static str, parent: String, dur: i64| {
        let api = &api;
        async move {
            api.create(
                D,
                json!({"name": name, "type": "component", "parentId": parent, "durationSec": dur}),
            )
            .await["id"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let a1 = mk("a1", pa.clone(), 3600).await;
    let a2 = mk("a2", pa.clone(), 600).await;
    let b1 = mk("b1", pb.clone(), 1800).await;
    let dep = |p: &str, s: &str| json!({"predecessorId": p, "successorId": s});
    api.create("dependency", dep(&pa, &pb)).await;
    // Never satisfiable: a node and its own container, or a step of B before a step of A.
    let r = api.post("/dependency", dep(&pa, &a1)).await;
    assert_validation_names(&r, "successorId");
    let r = api.post("/dependency", dep(&b1, &a2)).await;
    assert_validation_names(&r, "successorId");

    const T: i64 = 1_700_000_000;
    schedule(&api, &o, &a1, json!({"type": "schedule", "newStart": T})).await;
    // b1, under B, cannot start before everything under A ends.
    let r = schedule(&api, &o, &b1, json!({"type": "schedule", "newStart": T})).await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(
        api.read(D, &b1).await["schedule"]["startDate"],
        "2023-11-14T23:13:20Z"
    );
    assert_eq!(
        api.read(D, &pb).await["schedule"]["startDate"],
        "2023-11-14T23:13:20Z"
    );
    // Scheduling a2 past a1's end lengthens A and pushes everything under B.
    schedule(
        &api,
        &o,
        &a2,
        json!({"type": "schedule", "newStart": T + 7200}),
    )
    .await;
    let ra = api.read(D, &pa).await;
    assert_eq!(ra["schedule"]["endDate"], "2023-11-15T00:23:20Z");
    assert_eq!(
        api.read(D, &b1).await["schedule"]["startDate"],
        "2023-11-15T00:23:20Z"
    );
    let ro = api.read(D, &o).await;
    assert_eq!(ro["schedule"]["startDate"], "2023-11-14T22:13:20Z");
    assert_eq!(ro["schedule"]["endDate"], "2023-11-15T00:53:20Z");
    // Dragging B before A ends keeps it after A; reschedule of b1 starts it when A ends.
    schedule(&api, &o, &pb, json!({"type": "drag", "newStart": T})).await;
    assert_eq!(
        api.read(D, &b1).await["schedule"]["startDate"],
        "2023-11-15T00:23:20Z"
    );
    schedule(
        &api,
        &o,
        &b1,
        json!({"type": "drag", "newStart": T + 90_000}),
    )
    .await;
    let r = schedule(&api, &o, &b1, json!({"type": "reschedule"})).await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(
        api.read(D, &b1).await["schedule"]["startDate"],
        "2023-11-15T00:23:20Z"
    );
    assert_eq!(
        api.read(D, &pb).await["schedule"]["endDate"],
        "2023-11-15T00:53:20Z"
    );
}
