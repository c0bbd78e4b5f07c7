//! Alerts as of the moment of the read (issue 16, item 2): a deliverable's `isLate`,
//! `isAtRisk`, `effectiveDueDateIsLate`, `alertType`, `alertTypeOrdinal` and a delivery's
//! `isLate` move with the clock alone, and reads, filters, sorts, group-and-count, the
//! hierarchy and roots agree. The server runs on a manual clock the tests move; nothing is
//! written between the reads before and after the clock moves.

use std::collections::BTreeSet;
use std::time::Duration;

use prodops_core::alerts::AsOf;
use prodops_tests::*;
use serde_json::{Value, json};

const D: &str = "deliverable";

/// `secs` as an RFC 3339 date-time (whole seconds, UTC).
fn time(secs: i64) -> String {
    format!("{}Z", AsOf::from_secs(secs).as_str())
}

/// The UTC date of `secs`.
fn date(secs: i64) -> String {
    AsOf::from_secs(secs).as_str()[..10].to_string()
}

async fn server(clock: &Clock) -> TestServer {
    let clock = clock.clone();
    TestServer::start_with(move |c| c.clock = clock).await
}

fn ids(values: &[Value]) -> BTreeSet<String> {
    values
        .iter()
        .map(|v| v["id"].as_str().unwrap().to_string())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

async fn query(api: &Api, body: Value) -> Vec<Value> {
    let r = api.post("/deliverable/query", body).await;
    assert_eq!(r.status, 200, "{r}");
    r.body["values"].as_array().unwrap().clone()
}

async fn groups(api: &Api, field: &str) -> Vec<(Value, u64)> {
    let r = api
        .post(
            "/deliverable/group-and-count",
            json!({"groupByField": field}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let mut out: Vec<(Value, u64)> = r.body["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["groupId"].clone(), g["count"].as_u64().unwrap()))
        .collect();
    out.sort_by_key(|(g, _)| g.to_string());
    out
}

#[tokio::test]
async fn an_order_becomes_late_by_the_passage_of_time_alone() {
    let clock = Clock::manual();
    let server = server(&clock).await;
    let api = server.org("alerts").await;
    let start = clock.now_secs();
    // Due in an hour (a date-time): late from that instant; its phase inherits the due date.
    let soon = api
        .create(
            D,
            json!({"name": "Soon", "type": "order", "data": {"dueDate": time(start + 3600)}}),
        )
        .await;
    let soon_id = soon["id"].as_str().unwrap().to_string();
    let phase = api
        .create(
            D,
            json!({"name": "P", "type": "phase", "parentId": soon_id}),
        )
        .await;
    let phase_id = phase["id"].as_str().unwrap().to_string();
    // Due in ten days: stays on time.
    let later = api
        .create(D, json!({"name": "Later", "type": "order", "data": {"dueDate": date(start + 10 * 86_400)}}))
        .await;
    let later_id = later["id"].as_str().unwrap().to_string();
    // No due date at all.
    let none = api
        .create(D, json!({"name": "None", "type": "order"}))
        .await;
    let none_id = none["id"].as_str().unwrap().to_string();

    let before = api.read(D, &soon_id).await;
    assert_eq!(before["computed"]["isLate"], false);
    assert_eq!(before["computed"]["effectiveDueDateIsLate"], false);
    assert_eq!(before["computed"]["alertType"], "no-risk");
    assert_eq!(before["computed"]["lateAt"], time(start + 3600).as_str());
    assert_eq!(api.count(D, "computed.isLate=true").await, 0);

    // Two hours pass; nothing is written.
    clock.advance(Duration::from_secs(2 * 3600));

    // Read by id (the stored record answered as of now).
    for id in [&soon_id, &phase_id] {
        let c = &api.read(D, id).await["computed"];
        assert_eq!(c["isLate"], true, "{id}: {c}");
        assert_eq!(c["effectiveDueDateIsLate"], true, "{id}");
        assert_eq!(c["alertType"], "late", "{id}");
        assert_eq!(c["alertTypeOrdinal"], 2, "{id}");
    }
    let c = &api.read(D, &later_id).await["computed"];
    assert_eq!(
        (c["isLate"].clone(), c["alertType"].clone()),
        (json!(false), json!("no-risk"))
    );

    // Lists, filters and counts.
    let late = set(&[&soon_id, &phase_id]);
    assert_eq!(ids(&api.list(D, "computed.isLate=true").await), late);
    assert_eq!(
        ids(&api.list(D, "computed.isLate=false").await),
        set(&[&later_id, &none_id])
    );
    assert_eq!(ids(&api.list(D, "computed.alertType=late").await), late);
    assert_eq!(ids(&api.list(D, "computed.alertTypeOrdinal=2").await), late);
    assert_eq!(
        ids(&api.list(D, "computed.effectiveDueDateIsLate=true").await),
        late
    );
    assert_eq!(api.count(D, "computed.isLate=true").await, 2);
    let counted = api
        .post(
            "/deliverable/count",
            json!({"filter": {"computed.alertType": "late"}}),
        )
        .await;
    assert_eq!(counted.body["count"], 2, "{counted}");
    // The whole page agrees with the filter: every listed record reads as of now.
    for v in api.list(D, "").await {
        let expected = late.contains(v["id"].as_str().unwrap());
        assert_eq!(v["computed"]["isLate"], expected, "{v}");
    }

    // Query: filter, select and sort by the alert.
    let selected = query(
        &api,
        json!({"filter": {"computed.isLate": true}, "select": ["computed.isLate", "computed.alertType"]}),
    )
    .await;
    assert_eq!(ids(&selected), late);
    for v in &selected {
        assert_eq!(v["computedIsLate"], true);
        assert_eq!(v["computedAlertType"], "late");
    }
    for sort in [
        "-computed.alertTypeOrdinal",
        "-computed.isLate",
        "computed.alertType",
    ] {
        let sorted = query(&api, json!({"sort": sort})).await;
        let first: BTreeSet<String> = ids(&sorted[..2]);
        assert_eq!(first, late, "sort {sort}");
    }

    // Group-and-count.
    assert_eq!(
        groups(&api, "computed.alertType").await,
        vec![(json!("late"), 2), (json!("no-risk"), 2)]
    );
    assert_eq!(
        groups(&api, "computed.isLate").await,
        vec![(json!(false), 2), (json!(true), 2)]
    );

    // The hierarchy (whole records and a selection) and the roots.
    let h = api.get(&format!("/deliverable/{soon_id}/hierarchy")).await;
    assert_eq!(h.status, 200, "{h}");
    for v in h.body["values"].as_array().unwrap() {
        assert_eq!(v["computed"]["isLate"], true, "{v}");
    }
    let h = api
        .get(&format!(
            "/deliverable/{soon_id}/hierarchy?select=computed.alertType"
        ))
        .await;
    for v in h.body["values"].as_array().unwrap() {
        assert_eq!(v["computedAlertType"], "late", "{v}");
    }
    let roots = api.get("/deliverable/roots?computed.isLate=true").await;
    assert_eq!(roots.status, 200, "{roots}");
    assert_eq!(
        ids(roots.body["values"].as_array().unwrap()),
        set(&[&soon_id])
    );

    // A write: the phase gets a due date of its own, far away, and is no longer late; the
    // order still is, by its own due date (its record was rewritten as of the write's time).
    let done = api
        .patch(
            &format!("/deliverable/{phase_id}"),
            json!({"data": {"dueDate": date(start + 20 * 86_400)}}),
        )
        .await;
    assert_eq!(done.status, 200, "{done}");
    assert_eq!(done.body["computed"]["isLate"], false, "{done}");
    assert_eq!(api.read(D, &soon_id).await["computed"]["isLate"], true);
    server.shutdown().await;
}

/// The alert fields of every node of a hierarchy read, by id.
async fn hierarchy_alerts(api: &Api, id: &str) -> Vec<(String, Value)> {
    let h = api.get(&format!("/deliverable/{id}/hierarchy")).await;
    assert_eq!(h.status, 200, "{h}");
    let fields = [
        "isLate",
        "isAtRisk",
        "effectiveDueDateIsLate",
        "alertType",
        "alertTypeOrdinal",
    ];
    h.body["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            let c = &v["computed"];
            let alerts: Vec<Value> = fields.iter().map(|f| c[*f].clone()).collect();
            (v["id"].as_str().unwrap().to_string(), json!(alerts))
        })
        .collect()
}

/// The hierarchy sends a stored record as it is while the read is inside the window of
/// moments its row keeps (the one its stored alerts hold in), and patches it outside: with
/// records written one by one, in bulk (enough for the batched insert paths), and refreshed
/// by the tree, and a clock that moves forward past each instant and back before the writes,
/// the hierarchy answers what each record read alone answers, and what the rule says.
#[tokio::test]
async fn the_hierarchy_answers_as_of_a_clock_that_moves_both_ways() {
    let clock = Clock::manual();
    let server = server(&clock).await;
    let api = server.org("alerts-window").await;
    let start = clock.now_secs();
    let order = api
        .create(
            D,
            json!({"name": "Order", "type": "order", "data": {"dueDate": time(start + 3600)}}),
        )
        .await;
    let order_id = order["id"].as_str().unwrap().to_string();
    // 80 children in one bulk PUT: every fourth due in 30 minutes, one done (never late by
    // its own due date), the others inheriting the order's.
    let child = |n: u32| format!("0191c3a8-0000-7000-8000-{n:012x}");
    let children: Vec<Value> = (0..80u32)
        .map(|n| {
            let mut c = json!({"id": child(n), "name": format!("C{n}"), "type": "component", "parentId": order_id});
            if n % 4 == 0 {
                c["data"] = json!({"dueDate": time(start + 1800)});
            }
            if n == 4 {
                c["progress"] = json!({"status": "done", "completed": 1, "percentage": 100});
            }
            c
        })
        .collect();
    let r = api.put(&format!("/{D}/bulk"), Value::Array(children)).await;
    assert_eq!(r.status, 200, "{r}");
    // One child written alone afterwards (its parent's record refreshed by the tree).
    let r = api
        .patch(
            &format!("/{D}/{}", child(1)),
            json!({"data": {"dueDate": time(start + 600)}}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");

    let late_at = |n: u32| match n {
        1 => start + 600,
        n if n % 4 == 0 => start + 1800,
        _ => start + 3600,
    };
    for at in [
        start,
        start + 599,
        start + 600,
        start + 1799,
        start + 1800,
        start + 3599,
        start + 3600,
        start - 3600,
        start + 601,
        start + 7200,
        start - 1,
    ] {
        clock.set_secs(at);
        let got = hierarchy_alerts(&api, &order_id).await;
        assert_eq!(got.len(), 81);
        for (id, alerts) in &got {
            let alone = &api.read(D, id).await["computed"];
            assert_eq!(
                alerts,
                &json!([
                    alone["isLate"],
                    alone["isAtRisk"],
                    alone["effectiveDueDateIsLate"],
                    alone["alertType"],
                    alone["alertTypeOrdinal"]
                ]),
                "{id} at {}",
                at - start
            );
        }
        let by_id: std::collections::HashMap<&str, &Value> =
            got.iter().map(|(id, a)| (id.as_str(), a)).collect();
        for n in 0..80u32 {
            // A done node is never late.
            let late = at >= late_at(n) && n != 4;
            let a = by_id[child(n).as_str()];
            assert_eq!(a[0], json!(late), "child {n} at {}", at - start);
            assert_eq!(a[2], json!(late), "child {n} at {}", at - start);
        }
        // The order is late as soon as its first child is.
        assert_eq!(
            by_id[order_id.as_str()][0],
            json!(at >= start + 600),
            "at {}",
            at - start
        );
    }
    server.shutdown().await;
}

#[tokio::test]
async fn a_due_date_alone_is_late_from_the_end_of_that_day_in_utc() {
    let clock = Clock::manual();
    let server = server(&clock).await;
    let api = server.org("alerts-day").await;
    let start = clock.now_secs();
    let order = api
        .create(
            D,
            json!({"name": "Today", "type": "order", "data": {"dueDate": date(start)}}),
        )
        .await;
    let id = order["id"].as_str().unwrap().to_string();
    let midnight = (start / 86_400 + 1) * 86_400;
    assert_eq!(order["computed"]["effectiveDueAt"], time(midnight).as_str());
    clock.advance(Duration::from_secs((midnight - 1 - start) as u64));
    assert_eq!(api.read(D, &id).await["computed"]["isLate"], false);
    assert_eq!(api.count(D, "computed.isLate=true").await, 0);
    clock.advance(Duration::from_secs(1));
    assert_eq!(api.read(D, &id).await["computed"]["isLate"], true);
    assert_eq!(api.count(D, "computed.isLate=true").await, 1);
    server.shutdown().await;
}

#[tokio::test]
async fn at_risk_until_due_then_late() {
    let clock = Clock::manual();
    let server = server(&clock).await;
    let api = server.org("alerts-risk").await;
    let start = clock.now_secs();
    // A node scheduled to end after its due date is at risk until the due date passes.
    let order = api
        .create(
            D,
            json!({"name": "Risky", "type": "order", "data": {"dueDate": time(start + 3600)}}),
        )
        .await;
    let id = order["id"].as_str().unwrap().to_string();
    let part = api
        .create(
            D,
            json!({"name": "Part", "type": "component", "parentId": id, "durationSec": 7200}),
        )
        .await;
    let part_id = part["id"].as_str().unwrap().to_string();
    let scheduled = api
        .post(
            &format!("/deliverable/root/{id}/schedule/{part_id}"),
            json!({"type": "schedule", "newStart": start}),
        )
        .await;
    assert_eq!(scheduled.status, 204, "{scheduled}");
    let c = &api.read(D, &part_id).await["computed"];
    assert_eq!(c["atRiskUntil"], time(start + 3600).as_str(), "{c}");
    let c = &api.read(D, &id).await["computed"];
    assert_eq!(
        (c["isAtRisk"].clone(), c["alertType"].clone()),
        (json!(true), json!("at-risk"))
    );
    assert_eq!(api.count(D, "computed.isAtRisk=true").await, 2);
    assert_eq!(
        ids(&api.list(D, "computed.alertType=at-risk").await),
        set(&[&id, &part_id])
    );
    clock.advance(Duration::from_secs(3600));
    let c = &api.read(D, &id).await["computed"];
    assert_eq!(c["isAtRisk"], false);
    assert_eq!(c["isLate"], true);
    assert_eq!(c["alertType"], "late");
    assert_eq!(api.count(D, "computed.isAtRisk=true").await, 0);
    server.shutdown().await;
}

#[tokio::test]
async fn a_delivery_is_late_once_its_planned_end_passes_until_it_is_over() {
    let clock = Clock::manual();
    let server = server(&clock).await;
    let api = server.org("alerts-delivery").await;
    let start = clock.now_secs();
    let created = api
        .post(
            "/delivery/outbound",
            json!({"name": "Run", "plannedStartAt": time(start + 60), "plannedEndAt": time(start + 3600)}),
        )
        .await;
    assert_eq!(created.status, 201, "{created}");
    assert_eq!(created.body["isLate"], false);
    let id = created.body["id"].as_str().unwrap().to_string();
    let other = api
        .post("/delivery/outbound", json!({"name": "Unplanned"}))
        .await;
    assert_eq!(other.status, 201, "{other}");
    assert_eq!(api.count("delivery", "isLate=true").await, 0);

    clock.advance(Duration::from_secs(2 * 3600));
    assert_eq!(api.read("delivery", &id).await["isLate"], true);
    assert_eq!(ids(&api.list("delivery", "isLate=true").await), set(&[&id]));
    assert_eq!(api.count("delivery", "isLate=false").await, 1);
    let g = api
        .post(
            "/delivery/group-and-count",
            json!({"groupByField": "isLate"}),
        )
        .await;
    assert_eq!(g.status, 200, "{g}");
    let mut counted: Vec<String> = g.body["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| format!("{}={}", v["groupId"], v["count"]))
        .collect();
    counted.sort();
    assert_eq!(counted, ["false=1", "true=1"]);

    // Over, it is no longer late.
    let cancelled = api
        .post(
            &format!("/delivery/{id}/cancel"),
            json!({"reason": "postponed"}),
        )
        .await;
    assert_eq!(cancelled.status, 200, "{cancelled}");
    assert_eq!(cancelled.body["isLate"], false);
    assert_eq!(api.count("delivery", "isLate=true").await, 0);
    server.shutdown().await;
}
