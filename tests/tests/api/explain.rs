//! `GET /deliverable/{id}/explain` (issue 38, item 4): why a deliverable waits, is late or at
//! risk, cannot be completed, or is short of materials, each reason as data and a sentence,
//! from what the server stores, as of its clock.

use std::time::Duration;

use prodops_core::alerts::AsOf;
use prodops_tests::*;
use serde_json::Value;

use crate::production::Plant;

const D: &str = "deliverable";

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// `secs` as the API writes an instant of the alerts (whole seconds, UTC).
fn time(secs: i64) -> String {
    format!("{}Z", AsOf::from_secs(secs).as_str())
}

async fn node(api: &Api, name: &str, kind: &str, parent: Option<&str>, data: Value) -> String {
    id(&api
        .create(
            D,
            json!({"name": name, "type": kind, "parentId": parent, "data": data}),
        )
        .await)
}

async fn explain(api: &Api, id: &str) -> Value {
    let r = api.get(&format!("/{D}/{id}/explain")).await;
    assert_eq!(r.status, 200, "{r}");
    r.body
}

fn kinds(e: &Value) -> Vec<String> {
    e["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap().to_string())
        .collect()
}

fn reason<'a>(e: &'a Value, kind: &str) -> &'a Value {
    e["reasons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} reason in {e:#}"))
}

#[tokio::test]
async fn a_waiting_node_names_its_predecessor_until_it_releases() {
    let server = TestServer::start().await;
    let api = server.org("why-waiting").await;
    let order = node(&api, "Order", "order", None, json!({})).await;
    let cut = node(&api, "Cut", "phase", Some(&order), json!({})).await;
    let weld = node(&api, "Weld", "phase", Some(&order), json!({})).await;
    let dep = api
        .create(
            "dependency",
            json!({"predecessorId": cut, "successorId": weld}),
        )
        .await;

    let e = explain(&api, &weld).await;
    assert_eq!(e["deliverable"]["status"], "waiting", "{e:#}");
    assert_eq!(kinds(&e), ["waiting"]);
    let w = &reason(&e, "waiting")["waiting"];
    assert_eq!(w["predecessors"][0]["deliverable"]["id"], cut.as_str());
    assert_eq!(w["predecessors"][0]["dependencyId"], dep["id"]);
    assert_eq!(w["predecessors"][0]["holdsBack"], true);
    let sentence = reason(&e, "waiting")["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("is waiting for its predecessor: “Cut”"),
        "{sentence}"
    );
    assert!(
        sentence.contains("todo and has completed nothing"),
        "{sentence}"
    );

    // Once the predecessor is done, nothing holds the successor back.
    let r = api
        .post(
            &format!("/{D}/root/{order}/progress/{cut}"),
            json!({"type": "complete"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let e = explain(&api, &weld).await;
    assert_eq!(e["deliverable"]["status"], "todo");
    assert!(kinds(&e).is_empty(), "{e:#}");
    assert!(
        e["summary"]
            .as_str()
            .unwrap()
            .ends_with("nothing holds it back."),
        "{e:#}"
    );
}

#[tokio::test]
async fn lateness_and_risk_follow_the_clock_along_the_path_that_causes_them() {
    let clock = Clock::manual();
    let server = {
        let clock = clock.clone();
        TestServer::start_with(move |c| c.clock = clock).await
    };
    let api = server.org("why-late").await;
    let start = clock.now_secs();
    let order = node(
        &api,
        "Order",
        "order",
        None,
        json!({"dueDate": time(start + 10 * 86_400)}),
    )
    .await;
    // A schedule action starts a node at `newStart` for its `durationSec`.
    let mut phases = Vec::new();
    for (name, length) in [("Quick", 3_600), ("Long", 5 * 86_400)] {
        phases.push(id(&api
            .create(
                D,
                json!({"name": name, "type": "phase", "parentId": order, "durationSec": length}),
            )
            .await));
    }
    let (quick, long) = (phases[0].clone(), phases[1].clone());
    for target in [&quick, &long] {
        let r = api
            .post(
                &format!("/{D}/root/{order}/schedule/{target}"),
                json!({"type": "schedule", "newStart": start}),
            )
            .await;
        assert_eq!(r.status, 204, "{r}");
    }
    let e = explain(&api, &order).await;
    assert!(kinds(&e).is_empty(), "on time: {e:#}");
    assert_eq!(e["alertType"], "no-risk");

    // Two hours later, with nothing written: late since the quick phase's schedule ended.
    clock.advance(Duration::from_secs(2 * 3_600));
    let e = explain(&api, &order).await;
    assert_eq!(kinds(&e), ["late"], "{e:#}");
    assert_eq!(e["alertType"], "late");
    assert_eq!(e["asOf"], time(start + 2 * 3_600).as_str());
    let late = &reason(&e, "late")["late"];
    assert_eq!(late["lateSince"], time(start + 3_600).as_str());
    assert_eq!(late["cause"], "schedule-end");
    let path: Vec<&str> = late["path"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(path, [order.as_str(), quick.as_str()]);
    assert_eq!(late["dates"]["scheduleEnd"], time(start + 3_600).as_str());
    assert_eq!(late["dates"]["dueDateIsInherited"], true);
    let sentence = reason(&e, "late")["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("along “Order” › “Quick”") && sentence.contains("its schedule ended at"),
        "{sentence}"
    );
    // The phase itself is late for its own dates.
    let e = explain(&api, &quick).await;
    assert_eq!(
        reason(&e, "late")["late"]["path"].as_array().unwrap().len(),
        1
    );

    // A due date before the long phase ends puts the order at risk until it passes.
    let due = start + 2 * 86_400;
    let r = api
        .patch(
            &format!("/{D}/{order}"),
            json!({"data": {"dueDate": time(due)}}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let e = explain(&api, &long).await;
    assert_eq!(kinds(&e), ["at-risk"], "{e:#}");
    let risk = &reason(&e, "at-risk")["atRisk"];
    assert_eq!(risk["atRiskUntil"], time(due).as_str());
    assert_eq!(risk["dates"]["dueAt"], time(due).as_str());
    assert_eq!(
        risk["dates"]["scheduleEnd"],
        time(start + 5 * 86_400).as_str()
    );
    // Past the due date it is late for it.
    clock.advance(Duration::from_secs(3 * 86_400));
    let e = explain(&api, &long).await;
    assert_eq!(kinds(&e), ["late"], "{e:#}");
    assert_eq!(reason(&e, "late")["late"]["cause"], "due-date");
}

#[tokio::test]
async fn a_shut_qc_gate_names_its_latest_verdict() {
    let server = TestServer::start().await;
    let api = server.org("why-qc").await;
    let v1 = api
        .post("/qc-template/versions", json!({"name": "Weld check"}))
        .await;
    assert_eq!(v1.status, 201, "{v1}");
    let template = v1.body["qcTemplateId"].clone();
    let version = id(&v1.body);
    let order = node(&api, "Order", "order", None, json!({})).await;
    let stage = node(&api, "Weld", "stage", Some(&order), json!({})).await;
    let q = node(
        &api,
        "Inspect",
        "qcstep",
        Some(&stage),
        json!({"qcTemplateId": template}),
    )
    .await;

    let e = explain(&api, &q).await;
    assert_eq!(kinds(&e), ["qc-gate"], "{e:#}");
    let gate = &reason(&e, "qc-gate")["qcGate"];
    assert_eq!(gate["qcTemplateId"], template);
    assert_eq!(gate["versionInForce"], 1);
    assert!(gate["latest"].is_null());
    assert!(
        reason(&e, "qc-gate")["sentence"]
            .as_str()
            .unwrap()
            .contains("no QC set for it records a verdict yet")
    );

    let failed = api
        .post(
            "/qc-set",
            json!({"templateId": version, "deliverableId": q, "verdict": "fail"}),
        )
        .await;
    assert_eq!(failed.status, 201, "{failed}");
    // The stage's completion passes its qcstep's gate: it is explained there too.
    for target in [&q, &stage] {
        let e = explain(&api, target).await;
        let gate = &reason(&e, "qc-gate")["qcGate"];
        assert_eq!(gate["qcstep"]["id"], q.as_str());
        assert_eq!(gate["latest"]["verdict"], "fail");
        assert_eq!(gate["latest"]["qcSetId"], failed.body["id"]);
        assert!(
            reason(&e, "qc-gate")["sentence"]
                .as_str()
                .unwrap()
                .contains("is fail"),
            "{e:#}"
        );
    }
    let passed = api
        .post(
            "/qc-set",
            json!({"templateId": version, "deliverableId": q, "verdict": "pass"}),
        )
        .await;
    assert_eq!(passed.status, 201, "{passed}");
    assert!(!kinds(&explain(&api, &q).await).contains(&"qc-gate".to_string()));
}

#[tokio::test]
async fn short_materials_name_the_lines_with_stock_reserved_and_on_order() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("why-bom").await).await;
    let api = plant.api();
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let paint = f.item("Paint", Some(&f.b)).await;
    f.adjust(&steel, &f.a, 6.0).await;
    f.adjust(&paint, &f.b, 50.0).await;
    // Steel for the whole order (10, on a purchase order); paint placed on its phase (8,
    // covered).
    let steel_line = api
        .create(
            "bom-line",
            json!({"itemId": steel, "orderDeliverableId": plant.order, "quantity": 10, "poNumber": "PO-7"}),
        )
        .await;
    api.create(
        "bom-line",
        json!({"itemId": paint, "orderDeliverableId": plant.order, "placedOnDeliverableId": plant.phase,
               "quantity": 8}),
    )
    .await;

    let e = explain(api, &plant.order).await;
    assert_eq!(kinds(&e), ["materials-short"], "{e:#}");
    let short = &reason(&e, "materials-short")["materialsShort"];
    assert_eq!(short["bomLineId"], steel_line["id"]);
    assert_eq!(short["itemId"], steel.as_str());
    assert_eq!(
        [
            &short["needed"],
            &short["onHand"],
            &short["reserved"],
            &short["onOrder"],
            &short["available"],
            &short["shortBy"]
        ],
        [
            &json!(10.0),
            &json!(6.0),
            &json!(0.0),
            &json!(10.0),
            &json!(6.0),
            &json!(4.0)
        ]
    );
    let sentence = reason(&e, "materials-short")["sentence"].as_str().unwrap();
    assert!(
        sentence.contains("is short by 4") && sentence.contains("10 on order would cover it"),
        "{sentence}"
    );
    // The phase draws only the paint placed on it, which its stock covers.
    assert!(kinds(&explain(api, &plant.phase).await).is_empty());

    // Reserving more paint than is on hand for the phase's line makes no stock: short.
    f.adjust(&paint, &f.b, -45.0).await;
    let r = api
        .post(
            &format!("/bom-line/order/{}/allocate", plant.order),
            json!({"itemIds": [paint]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let e = explain(api, &plant.phase).await;
    let short = &reason(&e, "materials-short")["materialsShort"];
    assert_eq!(
        [
            &short["needed"],
            &short["onHand"],
            &short["reservedForLine"],
            &short["available"],
            &short["shortBy"]
        ],
        [
            &json!(8.0),
            &json!(5.0),
            &json!(8.0),
            &json!(5.0),
            &json!(3.0)
        ]
    );
}

#[tokio::test]
async fn another_organizations_deliverable_is_not_found() {
    let server = TestServer::start().await;
    let api = server.org("why-mine").await;
    let other = server.org("why-theirs").await;
    let order = node(&api, "Order", "order", None, json!({})).await;
    assert_eq!(
        explain(&api, &order).await["deliverable"]["id"],
        order.as_str()
    );
    assert_error(
        &other.get(&format!("/{D}/{order}/explain")).await,
        404,
        "NOT_FOUND",
    );
    assert_error(
        &api.get(&format!("/{D}/{}/explain", uuid::Uuid::new_v4()))
            .await,
        404,
        "NOT_FOUND",
    );
    let r = api.get(&format!("/{D}/not-a-uuid/explain")).await;
    assert_eq!(r.status, 400, "{r}");
}
