//! A ledger corrected, never edited (issue 37, item 4): the organization's freeze date on every
//! posting path, and `POST /inventory/reverse`.

use chrono::{Days, Utc};
use prodops_tests::*;
use serde_json::Value;

use crate::inventory_support::*;
use crate::production::Plant;

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// A day relative to today (UTC), as the setting takes it.
fn day(offset: i64) -> String {
    let today = Utc::now().date_naive();
    let d = if offset >= 0 {
        today.checked_add_days(Days::new(offset as u64))
    } else {
        today.checked_sub_days(Days::new((-offset) as u64))
    };
    d.unwrap().format("%Y-%m-%d").to_string()
}

async fn freeze(server: &TestServer, api: &Api, until: &str) {
    server
        .running()
        .set_setting(api.org_id, &format!("stockFrozenUntil={until}"))
        .await
        .expect("the setting is set");
}

/// A 409 whose message and details name the freeze date, under `createdAt` (the row's, or a
/// request line's where a path names the line its rows come from: `lines[0].createdAt`).
fn assert_frozen(resp: &Resp, until: &str) {
    let details = assert_error_details(resp, 409, "CONFLICT");
    assert!(
        resp.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(until),
        "the message names the date: {resp}"
    );
    assert!(
        details.iter().any(|d| d["field"]
            .as_str()
            .is_some_and(|f| f == "createdAt" || f.ends_with(".createdAt"))
            && d["message"].as_str().unwrap().contains(until)),
        "details name createdAt and the date: {resp}"
    );
}

async fn reverse(api: &Api, ids: &[&str]) -> Resp {
    api.post("/inventory/reverse", json!({ "transactionIds": ids }))
        .await
}

#[tokio::test]
async fn the_freeze_date_refuses_every_posting_path() {
    let server = TestServer::start().await;
    let api = server.org("Frozen").await;
    let plant = Plant::new(api.clone()).await;
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let widget = f.item("Widget", Some(&f.b)).await;
    f.adjust(&steel, &f.a, 100.0).await;
    api.create(
        "bom-line",
        json!({"itemId": steel, "orderDeliverableId": plant.order, "quantity": 10}),
    )
    .await;
    api.create(
        "production-output",
        json!({"itemId": widget, "orderDeliverableId": plant.order, "quantity": 4}),
    )
    .await;
    let delivery = id(&api.create("delivery", json!({"name": "Steel in"})).await);
    let line = id(&api
        .create(
            "delivery-manifest-line",
            json!({"deliveryId": delivery, "itemId": steel, "quantityExpected": 10, "locationId": f.a}),
        )
        .await);
    let rows_before = ledger(&api).await.len();

    // Frozen until tomorrow: today is inside the closed period, whatever the path.
    let until = day(1);
    freeze(&server, &api, &until).await;
    let adjust = api
        .post(
            "/inventory-transaction",
            json!({"itemId": steel, "type": "adjust", "quantity": 5, "toLocationId": f.a}),
        )
        .await;
    assert_frozen(&adjust, &until);
    let transfer = api
        .post(
            "/inventory-transaction",
            json!({"itemId": steel, "type": "transfer", "quantity": 5, "fromLocationId": f.a, "toLocationId": f.b}),
        )
        .await;
    assert_frozen(&transfer, &until);
    let count = api
        .post(
            "/inventory/count",
            json!({"lines": [{"itemId": steel, "locationId": f.a, "quantity": 90}]}),
        )
        .await;
    assert_frozen(&count, &until);
    // A dry run posts nothing, so nothing is dated: it still answers.
    let dry = api
        .post(
            "/inventory/count",
            json!({"lines": [{"itemId": steel, "locationId": f.a, "quantity": 90}], "dryRun": true}),
        )
        .await;
    assert_eq!(dry.status, 200, "{dry}");
    let produce = plant
        .action("/production/produce", json!({"deliverableId": plant.order}))
        .await;
    assert_frozen(&produce, &until);
    let consume = plant
        .action("/production/consume", json!({"deliverableId": plant.order}))
        .await;
    assert_frozen(&consume, &until);
    let adjusted = plant
        .action(
            "/production/adjust-actual",
            json!({"stampDeliverableId": plant.order, "kind": "produce", "itemId": widget, "delta": 1}),
        )
        .await;
    assert_frozen(&adjusted, &until);
    let receive = api
        .post(
            &format!("/delivery/{delivery}/receive"),
            json!({"lines": [{"manifestLineId": line, "quantity": 4}]}),
        )
        .await;
    assert_frozen(&receive, &until);
    // Nothing of the refused postings was written, and what the workflows keep did not move.
    assert_eq!(ledger(&api).await.len(), rows_before);
    assert_eq!(f.on_hand(&steel, &f.a).await, 100.0);
    assert_eq!(f.on_hand(&widget, &f.b).await, 0.0);
    let manifest = api.read("delivery-manifest-line", &line).await;
    assert_eq!(manifest["quantityReceived"].as_f64().unwrap_or(0.0), 0.0);

    // Frozen until today: still closed (on or before the day).
    let until = day(0);
    freeze(&server, &api, &until).await;
    assert_frozen(
        &api.post(
            "/inventory-transaction",
            json!({"itemId": steel, "type": "adjust", "quantity": 5, "toLocationId": f.a}),
        )
        .await,
        &until,
    );

    // Frozen until yesterday: today is open again, on every path. No path backdates a row: a
    // body's createdAt in the closed period is ignored, and the row is dated now.
    freeze(&server, &api, &day(-1)).await;
    let dated = api
        .post(
            "/inventory-transaction",
            json!({"itemId": steel, "type": "adjust", "quantity": 5, "toLocationId": f.a, "createdAt": "2020-01-01T00:00:00.000Z"}),
        )
        .await;
    assert_eq!(dated.status, 201, "{dated}");
    let created = dated.body["createdAt"].as_str().unwrap();
    assert!(
        created > day(-1).as_str(),
        "dated now, after the frozen day, not in 2020: {dated}"
    );
    let produced = plant
        .action("/production/produce", json!({"deliverableId": plant.order}))
        .await;
    assert_eq!(produced.status, 200, "{produced}");
    let consumed = plant
        .action("/production/consume", json!({"deliverableId": plant.order}))
        .await;
    assert_eq!(consumed.status, 200, "{consumed}");
    let received = api
        .post(
            &format!("/delivery/{delivery}/receive"),
            json!({"lines": [{"manifestLineId": line, "quantity": 4}]}),
        )
        .await;
    assert_eq!(received.status, 200, "{received}");
    // Cleared: nothing is frozen.
    freeze(&server, &api, "null").await;
    let count = api
        .post(
            "/inventory/count",
            json!({"lines": [{"itemId": steel, "locationId": f.a, "quantity": 50}]}),
        )
        .await;
    assert_eq!(count.status, 200, "{count}");
    assert_eq!(f.on_hand(&steel, &f.a).await, 50.0);
    assert_stock_is_ledger(&api).await;

    // The setting takes a day or null, nothing else; another organization is untouched.
    for bad in [
        "stockFrozenUntil=tomorrow",
        "stockFrozenUntil=2026-02-30",
        "stockFrozen=2026-01-01",
        "stockFrozenUntil",
    ] {
        assert!(
            server.running().set_setting(api.org_id, bad).await.is_err(),
            "{bad} is refused"
        );
    }
    let other = server.org("Open").await;
    freeze(&server, &api, &day(1)).await;
    let floor = Floor::new(other).await;
    let bolt = floor.item("Bolt", None).await;
    floor.adjust(&bolt, &floor.a, 1.0).await;
}

#[tokio::test]
async fn a_reversal_posts_the_opposite_rows_once() {
    let server = TestServer::start().await;
    let api = server.org("Reverse").await;
    let f = Floor::new(api.clone()).await;
    let steel = f.item("Steel", None).await;
    let received = f.adjust(&steel, &f.a, 10.0).await;
    let moved = api
        .post(
            "/inventory-transaction",
            json!({"itemId": steel, "type": "transfer", "quantity": 4, "fromLocationId": f.a, "toLocationId": f.b, "reason": "to the rack"}),
        )
        .await;
    assert_eq!(moved.status, 201, "{moved}");
    let moved = moved.body;
    assert_eq!(f.on_hand(&steel, &f.b).await, 4.0);

    // The transfer reversed: the goods go back; the row links to the original and keeps its
    // type, item, locations and quantity.
    let resp = api
        .post(
            "/inventory/reverse",
            json!({"transactionIds": [id(&moved)], "reason": "moved by mistake"}),
        )
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    let rows = resp.body["transactions"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 1);
    let rev = &rows[0];
    assert_eq!(rev["reversesId"], moved["id"]);
    assert_ne!(rev["id"], moved["id"]);
    for field in [
        "type",
        "itemId",
        "quantity",
        "fromLocationId",
        "toLocationId",
        "shopId",
    ] {
        assert_eq!(rev[field], moved[field], "{field} is the original's");
    }
    assert_eq!(rev["reason"], "moved by mistake");
    assert_eq!(f.on_hand(&steel, &f.a).await, 10.0);
    assert_eq!(f.on_hand(&steel, &f.b).await, 0.0);
    // Stored as answered, and the original is unchanged (a ledger row never changes).
    let stored = api.read("inventory-transaction", &id(rev)).await;
    for field in [
        "id",
        "reversesId",
        "type",
        "quantity",
        "reason",
        "createdAt",
    ] {
        assert_eq!(stored[field], rev[field], "{field} stored as answered");
    }
    let original = api.read("inventory-transaction", &id(&moved)).await;
    assert_eq!(original, moved);
    assert!(original["reversesId"].is_null());

    // Once: a second reversal names the first.
    let again = reverse(&api, &[&id(&moved)]).await;
    assert_error_details(&again, 409, "CONFLICT");
    assert!(
        again.text.contains(&id(rev)),
        "names the first reversal: {again}"
    );
    // A reversal is not reversed (post the original again instead).
    let twice = reverse(&api, &[&id(rev)]).await;
    assert_error_details(&twice, 409, "CONFLICT");
    assert!(twice.text.contains("is a reversal"), "{twice}");

    // A reversal that would take stock below zero is refused: the goods received were used.
    let used = api
        .post(
            "/inventory-transaction",
            json!({"itemId": steel, "type": "adjust", "quantity": -6, "toLocationId": f.a}),
        )
        .await;
    assert_eq!(used.status, 201, "{used}");
    let short = reverse(&api, &[&id(&received)]).await;
    let details = assert_error_details(&short, 409, "CONFLICT");
    assert_eq!(details[0]["field"], "quantity", "{short}");
    assert_eq!(f.on_hand(&steel, &f.a).await, 4.0, "nothing written");

    // Several rows reversed together, judged together: the use of 6 and the receipt of 10
    // leave nothing behind. A count's row reverses like any other.
    let counted = api
        .post(
            "/inventory/count",
            json!({"lines": [{"itemId": steel, "locationId": f.a, "quantity": 7}]}),
        )
        .await;
    assert_eq!(counted.status, 200, "{counted}");
    let count_row = counted.body["lines"][0]["transactionId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(f.on_hand(&steel, &f.a).await, 7.0);
    let resp = reverse(&api, &[&count_row]).await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.body["transactions"][0]["source"], "count");
    assert_eq!(f.on_hand(&steel, &f.a).await, 4.0);
    let resp = reverse(&api, &[&id(&used.body), &id(&received)]).await;
    assert_eq!(resp.status, 201, "{resp}");
    let rows = resp.body["transactions"].as_array().unwrap();
    assert_eq!(
        rows[0]["reversesId"], used.body["id"],
        "in the request's order"
    );
    assert_eq!(rows[1]["reversesId"], received["id"]);
    assert_eq!(f.on_hand(&steel, &f.a).await, 0.0);

    // The freeze date applies to a reversal's own date.
    let fresh = f.adjust(&steel, &f.a, 3.0).await;
    let until = day(0);
    freeze(&server, &api, &until).await;
    assert_frozen(&reverse(&api, &[&id(&fresh)]).await, &until);
    freeze(&server, &api, "null").await;
    assert_eq!(reverse(&api, &[&id(&fresh)]).await.status, 201);

    // The ledger holds each reversal as a row of its own; stock is its sum.
    let ledger_rows = ledger(&api).await;
    let reversals = ledger_rows
        .iter()
        .filter(|r| r["reversesId"].is_string())
        .count();
    assert_eq!(reversals, 5);
    assert_stock_is_ledger(&api).await;
    // Filterable: the reversal of a row is found by its id.
    let found = api
        .list(
            "inventory-transaction",
            &format!("reversesId={}", id(&moved)),
        )
        .await;
    assert_eq!(ids_of(&found), vec![id(rev)]);
}

#[tokio::test]
async fn a_reversal_refuses_hostile_input() {
    let server = TestServer::start().await;
    let api = server.org("Hostile").await;
    let plant = Plant::new(api.clone()).await;
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let row = f.adjust(&steel, &f.a, 10.0).await;

    // Another organization's row is a missing one.
    let other = Floor::new(server.org("Other").await).await;
    let theirs = other
        .adjust(&other.item("Bolt", None).await, &other.a, 5.0)
        .await;
    let resp = reverse(&api, &[&id(&theirs)]).await;
    assert_validation_names(&resp, "transactionIds");
    assert_eq!(
        resp.body["error"]["details"][0]["field"],
        "transactionIds[0]"
    );
    assert_eq!(
        other.on_hand(&id_of(&theirs, "itemId"), &other.a).await,
        5.0
    );
    // Unknown, empty, named twice, not a UUID, an unknown field, no body.
    let unknown = uuid::Uuid::new_v4().to_string();
    let resp = reverse(&api, &[&id(&row), &unknown]).await;
    assert_eq!(
        resp.body["error"]["details"][0]["field"], "transactionIds[1]",
        "{resp}"
    );
    assert_validation_names(&reverse(&api, &[]).await, "transactionIds");
    let resp = reverse(&api, &[&id(&row), &id(&row)]).await;
    assert_eq!(
        resp.body["error"]["details"][0]["field"], "transactionIds[1]",
        "{resp}"
    );
    assert_validation_names(&resp, "transactionIds");
    for body in [
        json!({"transactionIds": ["not-a-uuid"]}),
        json!({"transactionIds": id(&row)}),
        json!({"transactionIds": [id(&row)], "reversesId": id(&row)}),
        json!({}),
        json!([]),
    ] {
        let resp = api.post("/inventory/reverse", body.clone()).await;
        assert_error(&resp, 400, "VALIDATION_ERROR");
    }
    let many: Vec<String> = (0..1001)
        .map(|_| uuid::Uuid::new_v4().to_string())
        .collect();
    let resp = api
        .post("/inventory/reverse", json!({ "transactionIds": many }))
        .await;
    assert_validation_names(&resp, "transactionIds");
    // A client cannot link rows itself: reversesId in a posting's body is ignored.
    let posted = api
        .post(
            "/inventory-transaction",
            json!({"itemId": steel, "type": "adjust", "quantity": -1, "toLocationId": f.a, "reversesId": id(&row)}),
        )
        .await;
    assert_eq!(posted.status, 201, "{posted}");
    assert!(posted.body["reversesId"].is_null());
    // Without Item.Update: 403.
    let (reader, _) = server.key(&api, false, &["Item.Read"]).await;
    assert_error(&reverse(&reader, &[&id(&row)]).await, 403, "FORBIDDEN");
    // A delivery's row is not reversed here: its manifest line sums it.
    let delivery = id(&api.create("delivery", json!({"name": "In"})).await);
    let line = id(&api
        .create(
            "delivery-manifest-line",
            json!({"deliveryId": delivery, "itemId": steel, "quantityExpected": 5, "locationId": f.a}),
        )
        .await);
    let received = api
        .post(
            &format!("/delivery/{delivery}/receive"),
            json!({"lines": [{"manifestLineId": line, "quantity": 2}]}),
        )
        .await;
    assert_eq!(received.status, 200, "{received}");
    let receipt = api
        .list("inventory-transaction", &format!("deliveryId={delivery}"))
        .await;
    assert_eq!(receipt.len(), 1);
    let resp = reverse(&api, &[&id(&receipt[0])]).await;
    assert_error_details(&resp, 409, "CONFLICT");
    assert!(resp.text.contains(&delivery), "names the delivery: {resp}");
    let consume = api
        .post(
            "/inventory-transaction",
            json!({"itemId": steel, "type": "adjust", "quantity": -4, "toLocationId": f.a}),
        )
        .await;
    assert_eq!(consume.status, 201, "{consume}");
    // Nothing of the refusals was written: the row is still reversible once.
    assert_eq!(f.on_hand(&steel, &f.a).await, 7.0);
    assert_eq!(reverse(&api, &[&id(&posted.body)]).await.status, 201);
    assert_eq!(
        reverse(&api, &[&id(&row)]).await.status,
        409,
        "stock 8 - 10 < 0"
    );
    assert_stock_is_ledger(&api).await;
}

fn id_of(v: &Value, field: &str) -> String {
    v[field].as_str().unwrap().to_string()
}

#[tokio::test]
async fn concurrent_reversals_of_one_row_post_one() {
    let server = TestServer::start().await;
    let api = server.org("Race").await;
    let f = Floor::new(api.clone()).await;
    let steel = f.item("Steel", None).await;
    f.adjust(&steel, &f.a, 100.0).await;
    let row = f.adjust(&steel, &f.a, 5.0).await;
    let row_id = id(&row);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let api = api.clone();
        let row_id = row_id.clone();
        tasks.push(tokio::spawn(async move { reverse(&api, &[&row_id]).await }));
    }
    let mut created = 0;
    for task in tasks {
        let resp = task.await.unwrap();
        match resp.status {
            201 => created += 1,
            409 => {
                // Refused by the check, or by the unique index when two raced past it.
                assert_error(&resp, 409, "CONFLICT");
                assert!(resp.text.contains("reversed already"), "{resp}");
            }
            other => panic!("a raced reversal answers 201 or 409, not {other}: {resp}"),
        }
    }
    assert_eq!(created, 1, "exactly one reversal");
    let reversals = api
        .list("inventory-transaction", &format!("reversesId={row_id}"))
        .await;
    assert_eq!(reversals.len(), 1);
    assert_eq!(f.on_hand(&steel, &f.a).await, 100.0);
    assert_stock_is_ledger(&api).await;
}

#[tokio::test]
async fn a_production_reversal_takes_back_the_actual() {
    let server = TestServer::start().await;
    let api = server.org("ProdReverse").await;
    let plant = Plant::new(api.clone()).await;
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let widget = f.item("Widget", Some(&f.b)).await;
    f.adjust(&steel, &f.a, 100.0).await;
    let line = id(&api
        .create(
            "bom-line",
            json!({"itemId": steel, "orderDeliverableId": plant.order, "quantity": 10}),
        )
        .await);
    let decl = id(&api
        .create(
            "production-output",
            json!({"itemId": widget, "orderDeliverableId": plant.order, "quantity": 4}),
        )
        .await);
    let produced = plant
        .ok("/production/produce", json!({"deliverableId": plant.order}))
        .await;
    let produce_row = id(&produced["transactions"][0]);
    let consumed = plant
        .ok("/production/consume", json!({"deliverableId": plant.order}))
        .await;
    let consume_row = id(&consumed["transactions"][0]);
    assert_eq!(f.on_hand(&widget, &f.b).await, 4.0);
    assert_eq!(f.on_hand(&steel, &f.a).await, 90.0);

    // The produce reversed: the output leaves stock and the declaration's actual goes back.
    let resp = reverse(&api, &[&produce_row]).await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.body["transactions"][0]["type"], "produce");
    assert_eq!(f.on_hand(&widget, &f.b).await, 0.0);
    let output = api.read("production-output", &decl).await;
    assert_eq!(output["quantityActual"], 0.0);
    // The consume reversed: the material is back, the line's actual too.
    let resp = reverse(&api, &[&consume_row]).await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(f.on_hand(&steel, &f.a).await, 100.0);
    assert_eq!(api.read("bom-line", &line).await["quantityActual"], 0.0);
    // The order's entries count a reversal negative: the actuals are still their sums.
    let entries = api
        .get(&format!("/production/order/{}/entries", plant.order))
        .await;
    assert_eq!(entries.status, 200, "{entries}");
    let values = entries.body["values"].as_array().unwrap();
    assert_eq!(values.len(), 4);
    for record in [&decl, &line] {
        let sum: f64 = values
            .iter()
            .filter(|e| {
                e["productionOutputId"] == record.as_str() || e["bomLineId"] == record.as_str()
            })
            .map(|e| e["quantity"].as_f64().unwrap())
            .sum();
        assert_eq!(sum, 0.0, "entries of {record} sum to its actual: {entries}");
    }
    let status = api
        .get(&format!("/production/order/{}/status", plant.order))
        .await;
    assert_eq!(status.body["state"], "not_started", "{status}");

    // Produced again, then the output used: reversing that produce would take stock below
    // zero, and the actual does not move either.
    let produced = plant
        .ok("/production/produce", json!({"deliverableId": plant.order}))
        .await;
    let again = id(&produced["transactions"][0]);
    let used = api
        .post(
            "/inventory-transaction",
            json!({"itemId": widget, "type": "return", "quantity": 3, "fromLocationId": f.b}),
        )
        .await;
    assert_eq!(used.status, 201, "{used}");
    let short = reverse(&api, &[&again]).await;
    assert_error_details(&short, 409, "CONFLICT");
    assert_eq!(
        api.read("production-output", &decl).await["quantityActual"],
        4.0
    );
    assert_eq!(f.on_hand(&widget, &f.b).await, 1.0);
    // Once only, as every row.
    assert_eq!(reverse(&api, &[&produce_row]).await.status, 409);
    assert_eq!(
        api.read("production-output", &decl).await["quantityActual"],
        4.0
    );
    assert_stock_is_ledger(&api).await;
}

/// A tracked item's consumption is posted one row per lot in the item's base unit, while its
/// BOM line counts in its own unit: reversing those rows takes the line's actual back by each
/// row's share in the line's unit (5 and 7 each of a box of 12), not by the base quantity.
#[tokio::test]
async fn a_tracked_consumption_in_another_unit_is_taken_back_in_the_line_s_unit() {
    let server = TestServer::start().await;
    let api = server.org("ProdReverseUnits").await;
    let plant = Plant::new(api.clone()).await;
    let f = &plant.floor;
    let boxed = id(&api
        .create(
            "unit-measure",
            json!({"name": "Box", "baseUnitMeasureId": f.unit, "factor": 12}),
        )
        .await);
    let steel = id(&api
        .create(
            "item",
            json!({"name": "Steel", "tracking": "lot", "unitMeasureId": f.unit, "defaultLocationId": f.a}),
        )
        .await);
    let mut lots = Vec::new();
    for (code, quantity) in [("S-1", 5.0), ("S-2", 20.0)] {
        let lot = id(&api
            .create("lot", json!({"itemId": steel, "code": code}))
            .await);
        let resp = api
            .post(
                "/inventory-transaction",
                json!({"itemId": steel, "type": "adjust", "quantity": quantity, "toLocationId": f.a, "lotId": lot}),
            )
            .await;
        assert_eq!(resp.status, 201, "{resp}");
        lots.push(lot);
    }
    let line = id(&api
        .create(
            "bom-line",
            json!({"itemId": steel, "orderDeliverableId": plant.order, "quantity": 1, "unitMeasureId": boxed}),
        )
        .await);
    let consumed = plant
        .ok(
            "/production/consume",
            json!({"deliverableId": plant.order, "fromLocationId": f.a, "lines": [
                {"itemId": steel, "quantity": 1, "lots": [{"lotId": lots[0]}, {"lotId": lots[1]}]}]}),
        )
        .await;
    let rows = consumed["transactions"].as_array().unwrap();
    let quantities: Vec<f64> = rows
        .iter()
        .map(|r| r["quantity"].as_f64().unwrap())
        .collect();
    assert_eq!(
        quantities,
        [5.0, 7.0],
        "one row per lot, in each: {consumed}"
    );
    assert_eq!(api.read("bom-line", &line).await["quantityActual"], 1.0);
    // The order's entries count in the line's unit: their sum is the line's actual.
    let entries = api
        .get(&format!("/production/order/{}/entries", plant.order))
        .await;
    let shares: Vec<f64> = entries.body["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["quantity"].as_f64().unwrap())
        .collect();
    assert_eq!(shares, [0.416667, 0.583333], "{entries}");

    let resp = reverse(&api, &[&id(&rows[0])]).await;
    assert_eq!(resp.status, 201, "{resp}");
    // 5 each of a box of 12: 0.416667 box back, rounded once.
    assert_eq!(
        api.read("bom-line", &line).await["quantityActual"],
        0.583333
    );
    let resp = reverse(&api, &[&id(&rows[1])]).await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(api.read("bom-line", &line).await["quantityActual"], 0.0);
    assert_eq!(f.on_hand(&steel, &f.a).await, 25.0);
    assert_stock_is_ledger(&api).await;
}

/// A reversal puts stock where its original took it from: an archived location takes no stock,
/// so the reversal of what left it is refused (400 naming the location); the reversal of what
/// arrived there takes stock away, which an archived location allows.
#[tokio::test]
async fn a_reversal_into_an_archived_location_is_refused() {
    let server = TestServer::start().await;
    let api = server.org("Archived").await;
    let f = Floor::new(api.clone()).await;
    let steel = f.item("Steel", None).await;
    f.adjust(&steel, &f.c, 5.0).await;
    let arrived = f.adjust(&steel, &f.c, 1.0).await;
    let left = api
        .post(
            "/inventory-transaction",
            json!({"itemId": steel, "type": "transfer", "quantity": 2, "fromLocationId": f.c, "toLocationId": f.a}),
        )
        .await;
    assert_eq!(left.status, 201, "{left}");
    let deleted = api.delete(&format!("/location/{}", f.c)).await;
    assert!(deleted.status < 300, "{deleted}");
    let resp = reverse(&api, &[&id(&left.body)]).await;
    assert_validation_names(&resp, "fromLocationId");
    assert_eq!(f.on_hand(&steel, &f.a).await, 2.0, "nothing written");
    let resp = reverse(&api, &[&id(&arrived)]).await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(f.on_hand(&steel, &f.c).await, 3.0);
    assert_stock_is_ledger(&api).await;
}

/// The unique index behind "reversed once" holds whatever writes the row: a second row that
/// claims to reverse a reversed row is refused by the database, with the message a raced
/// reversal answers.
#[tokio::test]
async fn the_database_keeps_one_reversal_per_row() {
    use prodops_server::store::{Dialect, SqlValue, StoreError, Tx, migrate};
    let server = TestServer::start().await;
    let api = server.org("Index").await;
    let f = Floor::new(api.clone()).await;
    let steel = f.item("Steel", None).await;
    let first = f.adjust(&steel, &f.a, 5.0).await;
    let other = f.adjust(&steel, &f.a, 1.0).await;
    assert_eq!(reverse(&api, &[&id(&first)]).await.status, 201);
    let (first_id, other_id) = (id(&first), id(&other));
    let result = server
        .running()
        .store()
        .clone()
        .write(move |tx: &mut dyn Tx| {
            // The record's text and its filter column (PostgreSQL's trigger sets the column
            // from the text; SQLite's writes set both).
            let sql = match tx.dialect() {
                Dialect::Postgres => {
                    "UPDATE inventory_transaction SET data = CAST(jsonb_set(CAST(data AS jsonb), '{reversesId}', to_jsonb(CAST(? AS text))) AS json), f_reversesid = ? WHERE id = ?"
                }
                Dialect::Sqlite => {
                    "UPDATE inventory_transaction SET data = json_set(data, '$.reversesId', ?), f_reversesid = ? WHERE id = ?"
                }
            };
            tx.execute(
                sql,
                &[
                    SqlValue::from(first_id.clone()),
                    SqlValue::from(first_id.clone()),
                    SqlValue::from(other_id.clone()),
                ],
            )
        })
        .await;
    match result {
        Err(StoreError::Conflict(name)) => assert!(
            migrate::conflict_message(&name).contains("reversed already"),
            "{name}"
        ),
        other => panic!("the unique index refuses a second reversal: {other:?}"),
    }
}
