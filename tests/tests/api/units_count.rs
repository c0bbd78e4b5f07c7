//! Units of measure (issue 35 item 4) and stock counts (item 7): every posting converts to its
//! item's base unit and keeps what was entered; a unit without a conversion is a 400 naming the
//! field; `POST /inventory/count` posts one adjust row per difference, in one transaction.

use std::time::Instant;

use prodops_tests::*;
use reqwest::Method;
use serde_json::Value;

use crate::inventory_support::*;

async fn id(resp: Value) -> String {
    resp["id"].as_str().unwrap().to_string()
}

/// `each`, `box` (12 each), `pallet` (40 box) and `kg` (unrelated).
struct Units {
    each: String,
    boxed: String,
    pallet: String,
    kg: String,
}

async fn units(api: &Api) -> Units {
    let each = id(api
        .create("unit-measure", json!({"name": "Each", "symbol": "ea"}))
        .await)
    .await;
    let boxed = id(api
        .create(
            "unit-measure",
            json!({"name": "Box", "baseUnitMeasureId": each, "factor": 12}),
        )
        .await)
    .await;
    let pallet = id(api
        .create(
            "unit-measure",
            json!({"name": "Pallet", "baseUnitMeasureId": boxed, "factor": 40}),
        )
        .await)
    .await;
    let kg = id(api
        .create("unit-measure", json!({"name": "Kilogram", "symbol": "kg"}))
        .await)
    .await;
    Units {
        each,
        boxed,
        pallet,
        kg,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_posting_converts_to_the_base_unit() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Units").await).await;
    let api = &floor.api;
    let u = units(api).await;
    let bolt = id(api
        .create(
            "item",
            json!({"name": "Bolt", "unitMeasureId": u.each, "defaultLocationId": floor.a}),
        )
        .await)
    .await;
    // Screws come 100 to the box: the item's own conversion wins over the unit's.
    let screw = id(api
        .create(
            "item",
            json!({"name": "Screw", "unitMeasureId": u.each, "defaultLocationId": floor.a,
                   "unitConversions": [{"unitMeasureId": u.boxed, "factor": 100}]}),
        )
        .await)
    .await;

    // A manual adjust in boxes: 24 each on hand, 2 box kept as entered.
    let resp = api
        .post(
            "/inventory-transaction",
            json!({"itemId": bolt, "type": "adjust", "quantity": 2, "unitMeasureId": u.boxed, "toLocationId": floor.a}),
        )
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.body["quantity"], 24.0);
    assert_eq!(resp.body["unitMeasureId"], u.each.as_str());
    assert_eq!(resp.body["enteredQuantity"], 2.0);
    assert_eq!(resp.body["enteredUnitMeasureId"], u.boxed.as_str());
    assert_eq!(floor.on_hand(&bolt, &floor.a).await, 24.0);
    // A pallet, through the chain pallet -> box -> each: 480.
    let resp = api
        .post(
            "/inventory-transaction",
            json!({"itemId": bolt, "type": "transfer", "quantity": 0.05, "unitMeasureId": u.pallet,
                   "fromLocationId": floor.a, "toLocationId": floor.b}),
        )
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.body["quantity"], 24.0, "0.05 pallet = 2 box = 24 each");
    let resp = api
        .post(
            "/inventory-transaction",
            json!({"itemId": screw, "type": "adjust", "quantity": 1.5, "unitMeasureId": u.boxed, "toLocationId": floor.a}),
        )
        .await;
    assert_eq!(resp.body["quantity"], 150.0, "{resp}");
    // Without a unit: the base unit, entered as is.
    let row = floor.adjust(&bolt, &floor.a, 15.0).await;
    assert_eq!(row["enteredQuantity"], 15.0);
    assert_eq!(row["enteredUnitMeasureId"], u.each.as_str());

    // A unit with no conversion to the item's base unit: 400 naming unitMeasureId, nothing posted.
    let before = ledger(api).await.len();
    let resp = api
        .post(
            "/inventory-transaction",
            json!({"itemId": bolt, "type": "adjust", "quantity": 1, "unitMeasureId": u.kg, "toLocationId": floor.a}),
        )
        .await;
    assert_validation_names(&resp, "unitMeasureId");
    // Another organization's unit is no unit here.
    let other = server.org("Other").await;
    let foreign = id(other
        .create(
            "unit-measure",
            json!({"name": "Box", "baseUnitMeasureId": null}),
        )
        .await)
    .await;
    let resp = api
        .post(
            "/inventory-transaction",
            json!({"itemId": bolt, "type": "adjust", "quantity": 1, "unitMeasureId": foreign, "toLocationId": floor.a}),
        )
        .await;
    assert_validation_names(&resp, "unitMeasureId");
    assert_eq!(ledger(api).await.len(), before);

    // Lines refuse a unit that does not convert: manifest lines, BOM lines, declarations.
    let delivery = id(api.create("delivery", json!({"name": "Inbound"})).await).await;
    let resp = api
        .post(
            "/delivery-manifest-line",
            json!({"deliveryId": delivery, "itemId": bolt, "quantityExpected": 2, "locationId": floor.a, "unitMeasureId": u.kg}),
        )
        .await;
    assert_validation_names(&resp, "unitMeasureId");
    // Receiving a manifest line in boxes puts each on hand, and quantityReceived counts boxes.
    let line = id(api
        .create(
            "delivery-manifest-line",
            json!({"deliveryId": delivery, "itemId": bolt, "quantityExpected": 3, "locationId": floor.c, "unitMeasureId": u.boxed}),
        )
        .await)
    .await;
    let resp = api
        .post(
            &format!("/delivery/{delivery}/receive"),
            json!({"lines": [{"manifestLineId": line, "quantity": 2}]}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(floor.on_hand(&bolt, &floor.c).await, 24.0);
    let stored = api.read("delivery-manifest-line", &line).await;
    assert_eq!(stored["quantityReceived"], 2.0);
    let receipt = ledger(api)
        .await
        .into_iter()
        .find(|r| r["type"] == "receipt")
        .unwrap();
    assert_eq!(receipt["quantity"], 24.0);
    assert_eq!(receipt["enteredQuantity"], 2.0);
    assert_eq!(receipt["enteredUnitMeasureId"], u.boxed.as_str());

    // Production: an order consuming a BOM line in boxes and producing a declaration in boxes.
    let order = id(api
        .create(
            "deliverable",
            json!({"type": "order", "name": "O-1", "quantity": 1}),
        )
        .await)
    .await;
    let resp = api
        .post(
            "/bom-line",
            json!({"orderDeliverableId": order, "itemId": bolt, "quantity": 1, "unitMeasureId": u.kg}),
        )
        .await;
    assert_validation_names(&resp, "unitMeasureId");
    let bom = id(api
        .create(
            "bom-line",
            json!({"orderDeliverableId": order, "itemId": bolt, "quantity": 1, "unitMeasureId": u.boxed}),
        )
        .await)
    .await;
    let resp = api
        .post(
            "/production-output",
            json!({"orderDeliverableId": order, "itemId": screw, "quantity": 2, "unitMeasureId": u.kg}),
        )
        .await;
    assert_validation_names(&resp, "unitMeasureId");
    api.create(
        "production-output",
        json!({"orderDeliverableId": order, "itemId": screw, "quantity": 2, "unitMeasureId": u.boxed}),
    )
    .await;
    let resp = api
        .post(
            "/production/consume",
            json!({"deliverableId": order, "fromLocationId": floor.a}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let rows = resp.body["value"]["transactions"].as_array().unwrap();
    assert_eq!(rows[0]["quantity"], 12.0, "1 box of bolts: {resp}");
    assert_eq!(rows[0]["enteredQuantity"], 1.0);
    assert_eq!(api.read("bom-line", &bom).await["quantityActual"], 1.0);
    let resp = api
        .post(
            "/production/produce",
            json!({"deliverableId": order, "outputLocationId": floor.b}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let rows = resp.body["value"]["transactions"].as_array().unwrap();
    assert_eq!(rows[0]["quantity"], 200.0, "2 boxes of screws: {resp}");
    assert_stock_is_ledger(api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conversions_are_declared_with_their_rules() {
    let server = TestServer::start().await;
    let api = server.org("Decl").await;
    let u = units(&api).await;
    // A factor needs its base and the base its factor; a factor is above 0.
    for (body, field) in [
        (json!({"name": "Crate", "factor": 6}), "baseUnitMeasureId"),
        (
            json!({"name": "Crate", "baseUnitMeasureId": u.each}),
            "factor",
        ),
        (
            json!({"name": "Crate", "baseUnitMeasureId": u.each, "factor": 0}),
            "factor",
        ),
        (
            json!({"name": "Crate", "baseUnitMeasureId": uuid::Uuid::new_v4().to_string(), "factor": 2}),
            "baseUnitMeasureId",
        ),
    ] {
        assert_validation_names(&api.post("/unit-measure", body).await, field);
    }
    // No cycle: each cannot become a multiple of pallet.
    let resp = api
        .patch(
            &format!("/unit-measure/{}", u.each),
            json!({"baseUnitMeasureId": u.pallet, "factor": 0.001}),
        )
        .await;
    assert_validation_names(&resp, "baseUnitMeasureId");
    // Per-item conversions: one per unit, not the base unit, units of this organization.
    for (conversions, field) in [
        (
            json!([{"unitMeasureId": u.each, "factor": 2}]),
            "unitMeasureId",
        ),
        (
            json!([{"unitMeasureId": u.boxed, "factor": 2}, {"unitMeasureId": u.boxed, "factor": 3}]),
            "unitMeasureId",
        ),
        (json!([{"unitMeasureId": u.kg, "factor": -1}]), "factor"),
        (
            json!([{"unitMeasureId": uuid::Uuid::new_v4().to_string(), "factor": 2}]),
            "unitMeasureId",
        ),
    ] {
        let resp = api
            .post(
                "/item",
                json!({"name": "Nut", "unitMeasureId": u.each, "unitConversions": conversions}),
            )
            .await;
        assert_validation_names(&resp, field);
    }
    let resp = api
        .post(
            "/item",
            json!({"name": "Nut", "unitMeasureId": u.each, "unitConversions": [{"unitMeasureId": u.kg, "factor": 250}]}),
        )
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.body["unitConversions"][0]["factor"], 250.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_adjusts_each_difference_once() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Count").await).await;
    let api = &floor.api;
    let u = units(api).await;
    let bolt = id(api
        .create("item", json!({"name": "Bolt", "unitMeasureId": u.each}))
        .await)
    .await;
    let nut = floor.item("Nut", None).await;
    floor.adjust(&bolt, &floor.a, 30.0).await;
    floor.adjust(&nut, &floor.b, 4.0).await;
    let before = ledger(api).await.len();

    let body = json!({"reason": "cycle count", "lines": [
        {"itemId": bolt, "locationId": floor.a, "quantity": 2, "unitMeasureId": u.boxed},
        {"itemId": nut, "locationId": floor.b, "quantity": 4},
        {"itemId": nut, "locationId": floor.c, "quantity": 1.25},
    ]});
    // A dry run answers the differences and posts nothing.
    let mut dry = body.clone();
    dry["dryRun"] = json!(true);
    let resp = api.post("/inventory/count", dry).await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["differences"], 2);
    assert_eq!(resp.body["dryRun"], true);
    assert_eq!(resp.body["lines"][0]["difference"], -6.0);
    assert_eq!(resp.body["lines"][0]["transactionId"], Value::Null);
    assert_eq!(ledger(api).await.len(), before);

    let key = format!("count-{}", unique());
    let first = api
        .req(Method::POST, "/inventory/count")
        .json(body.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(first.status, 200, "{first}");
    let lines = first.body["lines"].as_array().unwrap();
    assert_eq!(lines[0]["counted"], 24.0);
    assert_eq!(lines[0]["onHand"], 30.0);
    assert_eq!(lines[0]["difference"], -6.0);
    assert_eq!(lines[1]["difference"], 0.0);
    assert_eq!(lines[1]["transactionId"], Value::Null);
    assert_eq!(lines[2]["difference"], 1.25);
    assert_eq!(floor.on_hand(&bolt, &floor.a).await, 24.0);
    assert_eq!(floor.on_hand(&nut, &floor.c).await, 1.25);
    let rows = ledger(api).await;
    assert_eq!(rows.len(), before + 2, "one adjust row per difference");
    let adjust = rows
        .iter()
        .find(|r| Some(r["id"].as_str().unwrap()) == lines[0]["transactionId"].as_str())
        .unwrap();
    assert_eq!(adjust["type"], "adjust");
    assert_eq!(adjust["source"], "count");
    assert_eq!(adjust["reason"], "cycle count");
    assert_eq!(adjust["quantity"], -6.0);
    // The same key again: the first answer, nothing posted twice.
    let again = api
        .req(Method::POST, "/inventory/count")
        .json(body.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(again.body, first.body);
    assert_eq!(ledger(api).await.len(), before + 2);
    // Counted again without a key: no differences left, nothing posted.
    let resp = api.post("/inventory/count", body.clone()).await;
    assert_eq!(resp.body["differences"], 0, "{resp}");
    assert_eq!(ledger(api).await.len(), before + 2);
    assert_stock_is_ledger(api).await;

    // Bad lines: 400 naming the line and field, nothing posted.
    let other = server.org("Elsewhere").await;
    let foreign_item = id(other.create("item", json!({"name": "Theirs"})).await).await;
    let foreign_shop = id(other.create("shop", json!({"name": "S"})).await).await;
    let foreign_loc = id(other
        .create("location", json!({"name": "L", "shopId": foreign_shop}))
        .await)
    .await;
    for (lines, field) in [
        (
            json!([{"itemId": foreign_item, "locationId": floor.a, "quantity": 1}]),
            "lines[0].itemId",
        ),
        (
            json!([{"itemId": nut, "locationId": floor.a, "quantity": 1}, {"itemId": nut, "locationId": foreign_loc, "quantity": 1}]),
            "lines[1].locationId",
        ),
        (
            json!([{"itemId": bolt, "locationId": floor.a, "quantity": 1, "unitMeasureId": u.kg}]),
            "lines[0].unitMeasureId",
        ),
        (
            json!([{"itemId": nut, "locationId": floor.a, "quantity": 1}, {"itemId": nut, "locationId": floor.a, "quantity": 2}]),
            "lines[1].itemId",
        ),
        (
            json!([{"itemId": nut, "locationId": floor.a, "quantity": -1}]),
            "quantity",
        ),
        (json!([]), "lines"),
    ] {
        let resp = api.post("/inventory/count", json!({"lines": lines})).await;
        let details = assert_error_details(&resp, 400, "VALIDATION_ERROR");
        assert!(
            details
                .iter()
                .any(|d| d["field"].as_str().is_some_and(|f| f.contains(field))),
            "{field}: {resp}"
        );
    }
    assert_eq!(ledger(api).await.len(), before + 2);
    // Another organization cannot count here.
    let resp = other
        .post(
            "/inventory/count",
            json!({"lines": [{"itemId": nut, "locationId": floor.a, "quantity": 0}]}),
        )
        .await;
    assert_eq!(resp.status, 400, "{resp}");
    assert_eq!(floor.on_hand(&nut, &floor.b).await, 4.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_of_ten_thousand_lines() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Big count").await).await;
    let api = &floor.api;
    // 1,000 items at 10 locations.
    let mut locations = vec![floor.a.clone(), floor.b.clone(), floor.c.clone()];
    for i in 0..7 {
        locations.push(
            id(api
                .create(
                    "location",
                    json!({"name": format!("L{i}"), "shopId": floor.shop}),
                )
                .await)
            .await,
        );
    }
    let items: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("Item {i}"), "unitMeasureId": floor.unit}))
        .collect();
    let resp = api.put("/item/bulk", json!(items)).await;
    assert_eq!(resp.status, 200, "{resp}");
    let items: Vec<String> = resp.body["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    // Some stock first: the first 100 items at location A.
    let first = json!({"lines": items.iter().take(100).map(|i| json!({"itemId": i, "locationId": floor.a, "quantity": 5})).collect::<Vec<_>>()});
    assert_eq!(api.post("/inventory/count", first).await.status, 200);
    let mut lines = Vec::with_capacity(10_000);
    for (n, item) in items.iter().enumerate() {
        for (m, location) in locations.iter().enumerate() {
            lines.push(
                json!({"itemId": item, "locationId": location, "quantity": ((n + m) % 7) as f64}),
            );
        }
    }
    assert_eq!(lines.len(), 10_000);
    let started = Instant::now();
    let resp = api.post("/inventory/count", json!({"lines": lines})).await;
    let took = started.elapsed();
    assert_eq!(resp.status, 200, "{}", resp.status);
    let differences = resp.body["differences"].as_u64().unwrap();
    eprintln!("a count of 10,000 lines with {differences} differences took {took:?}");
    assert_eq!(resp.body["lines"].as_array().unwrap().len(), 10_000);
    let expected = lines
        .iter()
        .enumerate()
        .filter(|(k, l)| {
            let before = if k % 10 == 0 && *k < 1000 { 5.0 } else { 0.0 };
            l["quantity"].as_f64().unwrap() != before
        })
        .count() as u64;
    assert_eq!(differences, expected);
    let rows = assert_stock_is_ledger(api).await;
    assert_eq!(rows as u64, 100 + differences);
    for (k, line) in resp.body["lines"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .step_by(997)
    {
        assert_eq!(line["counted"], lines[k]["quantity"]);
    }
}

/// The backends that wait, directly or behind another waiter, for a lock `holder` holds.
/// `client` is the holder's own connection, inside its transaction: its view of
/// `pg_stat_activity` is made current first (`clear_activity_snapshot`), or a backend the
/// server's pool opened later (the count's, at times) would never be seen waiting.
async fn waiting_behind(client: &tokio_postgres::Client, holder: i32) -> i64 {
    clear_activity_snapshot(client).await;
    client
        .query_one(
            "WITH RECURSIVE w(pid) AS ( \
               SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) \
               UNION SELECT a.pid FROM pg_stat_activity a JOIN w ON w.pid = ANY(pg_blocking_pids(a.pid))) \
             SELECT count(*) FROM w",
            &[&holder],
        )
        .await
        .unwrap()
        .get(0)
}

async fn wait_until_waiting(client: &tokio_postgres::Client, holder: i32, n: i64) {
    let started = Instant::now();
    while waiting_behind(client, holder).await < n {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{n} request(s) never came to wait for the stock row"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// docs/inventory.md, "Stock counts": a posting that moves stock of a counted item and
/// location between the count's comparison and its adjustment makes the count a 409 that
/// writes nothing. Made to happen on PostgreSQL (where writers run side by side; SQLite's one
/// writer cannot interleave them): the stock row is held by a connection of the test's own, a
/// posting of +5 queues for it, then the count compares (it sees 10 on hand: the posting has
/// not committed) and queues behind the posting; once the row is let go the posting commits
/// and the count finds 15 - 3 on hand instead of the 7 counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_raced_by_a_posting_is_refused_and_writes_nothing() {
    if !on_postgres() {
        eprintln!("skipped: only PostgreSQL runs two writers side by side");
        return;
    }
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Raced count").await).await;
    let api = &floor.api;
    let bolt = floor.item("Bolt", None).await;
    floor.adjust(&bolt, &floor.a, 10.0).await;
    let rows_before = ledger(api).await.len();

    let (client, connection) =
        tokio_postgres::connect(server.database_url(), tokio_postgres::NoTls)
            .await
            .expect("connect to PostgreSQL");
    tokio::spawn(connection);
    let holder: i32 = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    client.batch_execute("BEGIN").await.unwrap();
    let locked = client
        .query(
            "SELECT on_hand FROM stock WHERE organization_id = $1 AND item_id = $2 AND location_id = $3 FOR UPDATE",
            &[&api.org_id.to_string(), &bolt, &floor.a],
        )
        .await
        .unwrap();
    assert_eq!(locked.len(), 1, "the stock row is held");

    let posting = tokio::spawn({
        let api = api.clone();
        let (bolt, a) = (bolt.clone(), floor.a.clone());
        async move {
            api.post(
                "/inventory-transaction",
                json!({"itemId": bolt, "type": "adjust", "quantity": 5, "toLocationId": a}),
            )
            .await
        }
    });
    wait_until_waiting(&client, holder, 1).await;
    let count = tokio::spawn({
        let api = api.clone();
        let (bolt, a) = (bolt.clone(), floor.a.clone());
        async move {
            api.post(
                "/inventory/count",
                json!({"lines": [{"itemId": bolt, "locationId": a, "quantity": 7}]}),
            )
            .await
        }
    });
    // The count must queue behind the posting; if it answers instead, say what it answered
    // rather than time out (seen once in a full PostgreSQL run, not reproduced alone).
    let started = Instant::now();
    while waiting_behind(&client, holder).await < 2 {
        if count.is_finished() {
            client.batch_execute("ROLLBACK").await.unwrap();
            let answered = count.await.unwrap();
            panic!("the count answered before it queued for the stock row: {answered}");
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "the count never came to wait for the stock row (still in flight after 30 s)"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    client.batch_execute("ROLLBACK").await.unwrap();

    let posting = posting.await.unwrap();
    assert_eq!(posting.status, 201, "{posting}");
    let count = count.await.unwrap();
    assert_error(&count, 409, "CONFLICT");
    assert!(
        count.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("changed while the count was posted"),
        "{count}"
    );
    // Only the posting went in: no adjustment of the count, stock as the ledger says.
    let rows = ledger(api).await;
    assert_eq!(rows.len(), rows_before + 1);
    assert!(rows.iter().all(|r| r["source"] != "count"), "{rows:?}");
    assert_eq!(floor.on_hand(&bolt, &floor.a).await, 15.0);
    assert_stock_is_ledger(api).await;
}
