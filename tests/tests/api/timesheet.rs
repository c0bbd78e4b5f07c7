//! Timesheets (issue 16 item 7): stopped work sessions roll up into one read-only timesheet per
//! worker and UTC day, with the pay types of the organization's `pay_type` catalog; edits and
//! deletes of sessions roll the affected days up again; plans of absent workers become sessions
//! when the worker clocks in (spec 4.3 rule 2).

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use prodops_tests::*;
use serde_json::Value;

use crate::deliverable::node;

const WS: &str = "deliverable/work-sessions";

async fn id_of(api: &Api, resource: &str, body: Value) -> String {
    api.create(resource, body).await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The worker's timesheets by date.
async fn sheets(api: &Api, worker: &str) -> Vec<Value> {
    let mut out = api.list("timesheet", &format!("workerId={worker}")).await;
    out.sort_by(|a, b| a["date"].as_str().cmp(&b["date"].as_str()));
    out
}

fn day(sheets: &[Value], date: &str) -> Value {
    sheets
        .iter()
        .find(|s| s["date"] == date)
        .cloned()
        .unwrap_or_else(|| panic!("no timesheet on {date}: {sheets:?}"))
}

fn hours_of(sheet: &Value, deliverable: &str) -> f64 {
    sheet["deliverables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["deliverableId"] == deliverable)
        .and_then(|d| d["hours"].as_f64())
        .unwrap_or(0.0)
}

fn time(v: &Value) -> DateTime<Utc> {
    v.as_str().unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_sessions_roll_up_into_timesheets() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let shop = id_of(&api, "shop", json!({"name": "Main"})).await;
    let o = node(&api, "O", "order", None).await;
    let a = node(&api, "a", "phase", Some(&o)).await;
    let b = node(&api, "b", "phase", Some(&o)).await;
    let ann = id_of(&api, "worker", json!({"name": "Ann"})).await;
    let reg = id_of(
        &api,
        "catalog-entry",
        json!({"catalog": "pay_type", "code": "REG", "sortOrder": 1}),
    )
    .await;
    id_of(
        &api,
        "catalog-entry",
        json!({"catalog": "pay_type", "code": "OT", "sortOrder": 2}),
    )
    .await;
    let save = |body: Value| {
        let api = &api;
        async move {
            let r = api.post(&format!("/{WS}/save"), body).await;
            assert_eq!(r.status, 204, "{r}");
        }
    };
    let stop = |body: Value| {
        let api = &api;
        async move {
            let r = api.post(&format!("/{WS}/stop"), body).await;
            assert_eq!(r.status, 204, "{r}");
        }
    };

    // Two deliverables at once, across midnight UTC: 20:00 to 06:00.
    save(json!({"shopId": shop, "assignments": {ann.clone(): [a, b]},
                "startDate": "2024-03-01T20:00:00Z"}))
    .await;
    assert!(
        sheets(&api, &ann).await.is_empty(),
        "open sessions are not time worked yet"
    );
    stop(json!({"workerIds": [ann], "endDate": "2024-03-02T06:00:00Z"})).await;
    let all = sheets(&api, &ann).await;
    assert_eq!(all.len(), 2, "{all:?}");
    let first = day(&all, "2024-03-01");
    assert_eq!(first["hours"], 4.0, "concurrent sessions count once");
    assert_eq!(first["regularHours"], 4.0);
    assert_eq!(first["overtimeHours"], 0.0);
    assert_eq!(first["payTypes"], json!(["REG"]));
    assert_eq!((hours_of(&first, &a), hours_of(&first, &b)), (4.0, 4.0));
    let mut ab = vec![a.clone(), b.clone()];
    ab.sort();
    assert_eq!(first["deliverableIds"], json!(ab));
    assert_eq!(day(&all, "2024-03-02")["hours"], 6.0);

    // Past 8 hours in a day is overtime, under the second pay type.
    save(json!({"shopId": shop, "assignments": {ann.clone(): [a]},
                "startDate": "2024-03-03T08:00:00Z"}))
    .await;
    stop(json!({"deliverableIds": [a], "endDate": "2024-03-03T19:30:00Z"})).await;
    let third = day(&sheets(&api, &ann).await, "2024-03-03");
    assert_eq!(
        (
            &third["hours"],
            &third["regularHours"],
            &third["overtimeHours"]
        ),
        (&json!(11.5), &json!(8.0), &json!(3.5))
    );
    assert_eq!(third["payTypes"], json!(["REG", "OT"]));
    assert_eq!(third["deliverableIds"], json!([a]));

    // Editing a stopped session rolls its day up again, in the same request.
    let session = api
        .list(
            WS,
            &format!("workerId={ann}&startDate=2024-03-03T08:00:00Z"),
        )
        .await;
    let session_id = session[0]["id"].as_str().unwrap().to_string();
    let r = api
        .patch(
            &format!("/{WS}/{session_id}"),
            json!({"endDate": "2024-03-03T10:00:00Z"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let third = day(&sheets(&api, &ann).await, "2024-03-03");
    assert_eq!(
        (&third["hours"], &third["payTypes"]),
        (&json!(2.0), &json!(["REG"]))
    );

    // Moving it to another day: the old day loses its timesheet, the new day gets one.
    let r = api
        .patch(
            &format!("/{WS}/{session_id}"),
            json!({"startDate": "2024-03-05T09:00:00Z", "endDate": "2024-03-05T10:15:00Z"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let all = sheets(&api, &ann).await;
    let dates: Vec<&str> = all.iter().map(|s| s["date"].as_str().unwrap()).collect();
    assert_eq!(dates, ["2024-03-01", "2024-03-02", "2024-03-05"]);
    assert_eq!(day(&all, "2024-03-05")["hours"], 1.25);

    // A session longer than a year is refused (its days would all be rolled up).
    let r = api
        .patch(
            &format!("/{WS}/{session_id}"),
            json!({"endDate": "2026-03-05T10:15:00Z"}),
        )
        .await;
    assert_validation_names(&r, "endDate");

    // Deleting it removes the day's timesheet; a session created stopped adds one.
    let r = api.delete(&format!("/{WS}/{session_id}")).await;
    assert!(r.status == 204 || r.status == 200, "{r}");
    assert_eq!(sheets(&api, &ann).await.len(), 2);
    api.create(
        WS,
        json!({"workerId": ann, "deliverableId": b, "shopId": shop,
               "startDate": "2024-03-02T07:00:00Z", "endDate": "2024-03-02T08:00:00Z"}),
    )
    .await;
    let second = day(&sheets(&api, &ann).await, "2024-03-02");
    assert_eq!(second["hours"], 7.0);
    assert_eq!((hours_of(&second, &a), hours_of(&second, &b)), (6.0, 7.0));
    assert_eq!(
        api.count("timesheet", &format!("workerId={ann}&deliverableIds={b}"))
            .await,
        2,
        "timesheets filter by a deliverable worked"
    );

    // Timesheets are read-only to users.
    let sheet_id = second["id"].as_str().unwrap();
    let r = api
        .post("/timesheet", json!({"workerId": ann, "date": "2024-04-01"}))
        .await;
    assert_eq!(r.status, 405, "{r}");
    let r = api
        .patch(&format!("/timesheet/{sheet_id}"), json!({"hours": 1}))
        .await;
    assert_eq!(r.status, 405, "{r}");

    // The pay-type catalog has real references now: deleting REG deactivates it, and renaming
    // it rewrites the timesheets (a background job).
    let r = api.delete(&format!("/catalog-entry/{reg}")).await;
    assert!(r.status < 300, "{r}");
    assert_eq!(api.read("catalog-entry", &reg).await["isActive"], false);
    let r = api
        .patch(&format!("/catalog-entry/{reg}"), json!({"code": "REGULAR"}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    // A bound on a background job, only so that a job that never runs fails instead of hanging.
    let deadline = Instant::now() + Duration::from_secs(300);
    while sheets(&api, &ann)
        .await
        .iter()
        .any(|s| s["payTypes"] != json!(["REGULAR"]))
    {
        assert!(Instant::now() < deadline, "the rename job did not run");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A deactivated entry is no longer used: the next roll-up takes OT as the regular code.
    api.create(
        WS,
        json!({"workerId": ann, "deliverableId": b, "shopId": shop,
               "startDate": "2024-03-07T07:00:00Z", "endDate": "2024-03-07T08:00:00Z"}),
    )
    .await;
    assert_eq!(
        day(&sheets(&api, &ann).await, "2024-03-07")["payTypes"],
        json!(["OT"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_become_sessions_when_the_worker_clocks_in() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let shop = id_of(&api, "shop", json!({"name": "Main"})).await;
    let o = node(&api, "O", "order", None).await;
    let a = node(&api, "a", "phase", Some(&o)).await;
    let bob = id_of(&api, "worker", json!({"name": "Bob", "status": "inactive"})).await;

    // Bob is absent: the save leaves him a plan, which is not time worked.
    let planned_at = Utc::now() - chrono::Duration::hours(2);
    let r = api
        .post(
            &format!("/{WS}/save"),
            json!({"shopId": shop, "assignments": {bob.clone(): [a]},
                   "startDate": planned_at.to_rfc3339()}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    let open = api.list(WS, &format!("workerId={bob}&endDate=null")).await;
    assert_eq!(open.len(), 1);
    assert_eq!(open[0]["kind"], "plan");
    let plan_id = open[0]["id"].clone();

    // Clocking in (his status becomes active): the plan becomes a session starting now.
    let before = Utc::now() - chrono::Duration::seconds(1);
    let r = api
        .patch(&format!("/worker/{bob}"), json!({"status": "active"}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let open = api.list(WS, &format!("workerId={bob}&endDate=null")).await;
    assert_eq!(open.len(), 1, "{open:?}");
    assert_eq!(
        open[0]["id"], plan_id,
        "the plan record itself becomes the session"
    );
    assert_eq!(open[0]["kind"], "session");
    let started = time(&open[0]["startDate"]);
    assert!(
        started >= before,
        "{started} starts at the clock-in, not at the plan"
    );
    assert!(sheets(&api, &bob).await.is_empty());

    // Its time counts once stopped.
    let end = started + chrono::Duration::minutes(90);
    let r = api
        .post(
            &format!("/{WS}/stop"),
            json!({"workerIds": [bob], "endDate": end.to_rfc3339()}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    let total: f64 = sheets(&api, &bob)
        .await
        .iter()
        .map(|s| s["hours"].as_f64().unwrap())
        .sum();
    assert!((total - 1.5).abs() < 1e-9, "{total}");

    // A plan of a present worker (written through the standard endpoint) becomes the session
    // when a save names the worker on that deliverable.
    let t0 = Utc::now() - chrono::Duration::hours(2);
    let t0: DateTime<Utc> = t0
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        .parse()
        .unwrap();
    let plan = id_of(
        &api,
        WS,
        json!({"workerId": bob, "deliverableId": a, "shopId": shop, "kind": "plan",
               "startDate": (t0 - chrono::Duration::hours(1)).to_rfc3339()}),
    )
    .await;
    let r = api
        .post(
            &format!("/{WS}/save"),
            json!({"shopId": shop, "assignments": {bob.clone(): [a]},
                   "startDate": t0.to_rfc3339()}),
        )
        .await;
    assert_eq!(r.status, 204, "{r}");
    let session = api.read(WS, &plan).await;
    assert_eq!(
        (
            &session["kind"],
            time(&session["startDate"]),
            &session["endDate"]
        ),
        (&json!("session"), t0, &Value::Null)
    );
    assert_eq!(
        api.count(WS, &format!("workerId={bob}&endDate=null")).await,
        1
    );

    // Archiving the worker ends the session at now: its time is rolled up too.
    let r = api
        .patch(&format!("/worker/{bob}"), json!({"isArchived": true}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let all = sheets(&api, &bob).await;
    let total: f64 = all.iter().map(|s| s["hours"].as_f64().unwrap()).sum();
    assert!(
        (3.49..3.6).contains(&total),
        "1.5 hours, then 2 hours until the archive: {total}"
    );
    assert!(
        all.iter().all(|s| s["payTypes"] == json!([])),
        "no pay_type catalog: no codes"
    );
}
