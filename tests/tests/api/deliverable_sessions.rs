//! Work sessions (spec 4.3, 3.3): save diffs against open sessions, absent workers get plans,
//! stop needs ids or workers, worker archive ends sessions and plans; crew time.

use prodops_tests::*;
use serde_json::Value;

use crate::deliverable::{D, node};

const WS: &str = "deliverable/work-sessions";

async fn worker(api: &Api, name: &str, status: &str) -> String {
    api.create("worker", json!({"name": name, "status": status}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn open_for(api: &Api, worker: &str) -> Vec<Value> {
    api.list(WS, &format!("workerId={worker}&endDate=null"))
        .await
}

fn deliverables(sessions: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = sessions
        .iter()
        .map(|s| s["deliverableId"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn save_and_stop() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let shop = api.create("shop", json!({"name": "Main"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let o = node(&api, "O", "order", None).await;
    let a = node(&api, "a", "phase", Some(&o)).await;
    let b = node(&api, "b", "phase", Some(&o)).await;
    let c = node(&api, "c", "phase", Some(&o)).await;
    let ann = worker(&api, "Ann", "active").await;
    let bob = worker(&api, "Bob", "inactive").await;
    let cid = worker(&api, "Cid", "active").await;

    let save = |body: Value| {
        let api = &api;
        async move { api.post(&format!("/{WS}/save"), body).await }
    };
    let r = save(
        json!({"shopId": shop, "assignments": {ann.clone(): [a, b], cid.clone(): [c]},
                        "startDate": "2024-03-01T08:00:00Z"}),
    )
    .await;
    assert_eq!(r.status, 204, "{r}");
    let mut ab = vec![a.clone(), b.clone()];
    ab.sort();
    assert_eq!(deliverables(&open_for(&api, &ann).await), ab);
    let s = &open_for(&api, &ann).await[0];
    assert_eq!(s["kind"], "session");
    assert_eq!(s["shopId"], json!(shop));
    assert_eq!(s["startDate"], "2024-03-01T08:00:00Z");

    // Save diffs: b stays, a stops, c starts.
    let r = save(json!({"shopId": shop, "assignments": {ann.clone(): [b, c]},
                        "startDate": "2024-03-01T10:00:00Z"}))
    .await;
    assert_eq!(r.status, 204, "{r}");
    let mut bc = vec![b.clone(), c.clone()];
    bc.sort();
    assert_eq!(deliverables(&open_for(&api, &ann).await), bc);
    let ended = api
        .list(WS, &format!("workerId={ann}&deliverableId={a}"))
        .await;
    assert_eq!(ended[0]["endDate"], "2024-03-01T10:00:00Z");
    assert_eq!(
        api.count(WS, &format!("workerId={ann}")).await,
        3,
        "unchanged b kept its session"
    );
    // Cid was not named: untouched.
    assert_eq!(open_for(&api, &cid).await.len(), 1);

    // An absent worker gets a saved plan.
    let r = save(json!({"shopId": shop, "assignments": {bob.clone(): [a]}})).await;
    assert_eq!(r.status, 204, "{r}");
    let plans = open_for(&api, &bob).await;
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0]["kind"], "plan");

    // The whole crew of the shop: workers not named stop.
    let r = save(json!({"shopId": shop, "assignments": {ann.clone(): [b, c]}, "shouldStopEntireBatch": true})).await;
    assert_eq!(r.status, 204, "{r}");
    assert!(open_for(&api, &cid).await.is_empty());
    assert!(open_for(&api, &bob).await.is_empty());
    assert_eq!(open_for(&api, &ann).await.len(), 2);

    // Bad saves.
    for bad in [
        json!({"assignments": {ann.clone(): [a]}}),
        json!({"shopId": shop, "assignments": {ann.clone(): []}}),
        json!({"shopId": shop, "assignments": {ann.clone(): [uuid::Uuid::now_v7()]}}),
        json!({"shopId": shop, "assignments": {uuid::Uuid::now_v7().to_string(): [a]}}),
        json!({"shopId": uuid::Uuid::now_v7(), "assignments": {ann.clone(): [a]}}),
        json!({"shopId": shop, "assignments": {"not-a-uuid": [a]}}),
        json!({"shopId": shop, "assignments": {}, "bogus": true}),
    ] {
        let r = save(bad).await;
        assert_error_details(&r, 400, "VALIDATION_ERROR");
    }

    // Stop needs ids or workers.
    for bad in [json!({}), json!({"deliverableIds": [], "workerIds": []})] {
        let r = api.post(&format!("/{WS}/stop"), bad).await;
        assert_validation_names(&r, "deliverableIds");
    }
    let r = api
        .post(
            &format!("/{WS}/stop"),
            json!({"deliverableIds": [b], "workerIds": [cid]}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(open_for(&api, &ann).await.len(), 2, "both lists must match");
    let r = api
        .post(&format!("/{WS}/stop"), json!({"deliverableIds": [b]}))
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(deliverables(&open_for(&api, &ann).await), [c.as_str()]);
    let r = api
        .post(
            &format!("/{WS}/stop"),
            json!({"workerIds": [ann], "endDate": "2030-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert!(open_for(&api, &ann).await.is_empty());

    // Permissions.
    let (reader, _) = server.key(&api, false, &["WorkSession.Read"]).await;
    let r = reader
        .post(&format!("/{WS}/stop"), json!({"workerIds": [ann]}))
        .await;
    assert_error(&r, 403, "FORBIDDEN");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_ends_work_and_crew_time_adds_up() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let shop = api.create("shop", json!({"name": "Main"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let o = node(&api, "O", "order", None).await;
    let p = node(&api, "P", "phase", Some(&o)).await;
    let ann = worker(&api, "Ann", "active").await;
    let bob = worker(&api, "Bob", "inactive").await;
    for (w, d, start, end) in [
        (
            &ann,
            &p,
            "2024-03-01T08:00:00Z",
            Some("2024-03-01T09:00:00Z"),
        ),
        (
            &ann,
            &o,
            "2024-03-01T10:00:00Z",
            Some("2024-03-01T10:30:00Z"),
        ),
        (
            &bob,
            &p,
            "2024-03-01T08:00:00Z",
            Some("2024-03-01T08:15:00Z"),
        ),
    ] {
        api.create(
            WS,
            json!({"workerId": w, "deliverableId": d, "shopId": shop, "startDate": start, "endDate": end}),
        )
        .await;
    }
    let r = api.get(&format!("/{D}/crew-time?deliverableId={o}")).await;
    assert_eq!(r.status, 200, "{r}");
    let t = &r.body[o.as_str()];
    assert_eq!(t["totalSeconds"], 3600 + 1800 + 900);
    let workers = t["workers"].as_array().unwrap();
    let ann_row = workers
        .iter()
        .find(|w| w["workerId"] == json!(ann))
        .unwrap();
    assert_eq!(ann_row["seconds"], 5400);
    assert_eq!(ann_row["sessions"], 2);
    let r = api.get(&format!("/{D}/crew-time?deliverableId={p}")).await;
    assert_eq!(r.body[p.as_str()]["totalSeconds"], 4500);
    for bad in ["", "?deliverableId=nope", "?other=1"] {
        let r = api.get(&format!("/{D}/crew-time{bad}")).await;
        assert_error_details(&r, 400, "VALIDATION_ERROR");
    }
    let r = api
        .get(&format!(
            "/{D}/crew-time?deliverableId={}",
            uuid::Uuid::now_v7()
        ))
        .await;
    assert_error(&r, 404, "NOT_FOUND");

    // Archiving a worker ends their open sessions and plans.
    let r = api
        .post(
            &format!("/{WS}/save"),
            json!({"shopId": shop, "assignments": {ann.clone(): [p], bob.clone(): [p]}}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(open_for(&api, &bob).await[0]["kind"], "plan");
    for w in [&ann, &bob] {
        let r = api
            .patch(&format!("/worker/{w}"), json!({"isArchived": true}))
            .await;
        assert_eq!(r.status, 200, "{r}");
        assert!(open_for(&api, w).await.is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assignments_show_in_computed_workers() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let shop = api.create("shop", json!({"name": "Main"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let o = node(&api, "O", "order", None).await;
    let p = node(&api, "P", "phase", Some(&o)).await;
    let c = node(&api, "C", "component", Some(&p)).await;
    let ann = worker(&api, "Ann", "active").await;
    let bob = worker(&api, "Bob", "inactive").await;
    let workers = |d: &Value, f: &str| -> Vec<String> {
        d["computed"][f]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_string())
            .collect()
    };
    let mut both = vec![ann.clone(), bob.clone()];
    both.sort();

    // A save (a session for Ann, a plan for Bob) assigns them.
    let r = api
        .post(
            &format!("/{WS}/save"),
            json!({"shopId": shop, "assignments": {ann.clone(): [c], bob.clone(): [c]}}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(workers(&api.read(D, &c).await, "workerIds"), both);
    assert_eq!(workers(&api.read(D, &o).await, "combinedWorkerIds"), both);
    assert!(workers(&api.read(D, &o).await, "workerIds").is_empty());

    // Stopping Ann's session unassigns her, up the tree.
    let r = api
        .post(&format!("/{WS}/stop"), json!({"workerIds": [ann]}))
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert_eq!(
        workers(&api.read(D, &o).await, "combinedWorkerIds"),
        [bob.as_str()]
    );
    // A session created through the standard endpoint counts too, and its DELETE undoes it.
    let s = api
        .create(WS, json!({"workerId": ann, "deliverableId": p, "shopId": shop, "startDate": "2024-03-01T08:00:00Z"}))
        .await;
    assert_eq!(workers(&api.read(D, &p).await, "workerIds"), [ann.as_str()]);
    let r = api
        .delete(&format!("/{WS}/{}", s["id"].as_str().unwrap()))
        .await;
    assert_eq!(r.status, 204, "{r}");
    assert!(workers(&api.read(D, &p).await, "workerIds").is_empty());
    // Archiving Bob ends his plan and unassigns him.
    api.patch(&format!("/worker/{bob}"), json!({"isArchived": true}))
        .await;
    assert!(workers(&api.read(D, &o).await, "combinedWorkerIds").is_empty());
    // Completing a node kicks its workers and unassigns them.
    api.post(
        &format!("/{WS}/save"),
        json!({"shopId": shop, "assignments": {ann.clone(): [c]}}),
    )
    .await;
    assert_eq!(workers(&api.read(D, &c).await, "workerIds"), [ann.as_str()]);
    let r = api
        .post(
            &format!("/{D}/root/{o}/progress/{c}"),
            json!({"type": "complete"}),
        )
        .await;
    assert_eq!(r.body["kickedWorkers"], json!([ann]));
    assert!(workers(&api.read(D, &c).await, "workerIds").is_empty());
    assert!(workers(&api.read(D, &o).await, "combinedWorkerIds").is_empty());
}
