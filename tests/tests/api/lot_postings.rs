//! Every posting names its lots (issue 37, item 2): a row of an item tracked by lot or serial
//! names a lot of that item in the organization, an untracked item's names none, a serial moves
//! 0 or 1 and is never on hand twice; stock is kept per item, location and lot (`GET
//! /stock?groupBy=lot`) beside the totals, which stay as they were for untracked items. Each
//! path: `POST /inventory-transaction`, `POST /inventory/count`, and delivery receiving.

use std::collections::BTreeMap;

use prodops_tests::*;
use serde_json::Value;

use crate::inventory_support::*;

fn id(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_string()
}

async fn tracked(floor: &Floor, name: &str, tracking: &str) -> String {
    id(&floor
        .api
        .create(
            "item",
            json!({"name": name, "tracking": tracking, "unitMeasureId": floor.unit}),
        )
        .await)
}

async fn lot(api: &Api, item: &str, code: &str) -> String {
    id(&api
        .create("lot", json!({"itemId": item, "code": code}))
        .await)
}

async fn post(api: &Api, body: Value) -> Resp {
    api.post("/inventory-transaction", body).await
}

fn micros(q: f64) -> i64 {
    (q * 1_000_000.0).round() as i64
}

/// Stock per item, location and lot as `GET /stock?groupBy=lot` answers it (rows with a lot).
async fn lot_stock(api: &Api, query: &str) -> BTreeMap<(String, String, String), f64> {
    let mut out = BTreeMap::new();
    for v in api
        .list("stock", &format!("groupBy=lot&pageSize=10000&{query}"))
        .await
    {
        if let Some(lot) = v.get("lotId").and_then(Value::as_str) {
            out.insert(
                (
                    v["itemId"].as_str().unwrap().to_string(),
                    v["locationId"].as_str().unwrap().to_string(),
                    lot.to_string(),
                ),
                v["onHand"].as_f64().unwrap(),
            );
        }
    }
    out
}

/// Stock per lot equals the ledger's rows with lots summed per item, location and lot, and the
/// totals equal the ledger as before.
async fn assert_lot_stock_is_ledger(api: &Api) {
    assert_stock_is_ledger(api).await;
    let mut sums: BTreeMap<(String, String, String), i64> = BTreeMap::new();
    for row in ledger(api).await {
        let Some(lot) = row["lotId"].as_str() else {
            continue;
        };
        let item = row["itemId"].as_str().unwrap().to_string();
        let q = micros(row["quantity"].as_f64().unwrap());
        // A reversal keeps its original's type, locations and quantity, and has the opposite
        // effect (docs/inventory.md, "Corrections").
        let q = if row["reversesId"].is_string() { -q } else { q };
        let loc = |f: &str| row[f].as_str().map(str::to_string);
        let mut add = |l: Option<String>, d: i64| {
            *sums
                .entry((item.clone(), l.expect("location"), lot.to_string()))
                .or_default() += d;
        };
        match row["type"].as_str().unwrap() {
            "adjust" => add(loc("toLocationId").or(loc("fromLocationId")), q),
            "transfer" => {
                add(loc("fromLocationId"), -q);
                add(loc("toLocationId"), q);
            }
            "receipt" | "produce" => add(loc("toLocationId"), q),
            _ => add(loc("fromLocationId"), -q),
        }
    }
    let stock: BTreeMap<_, i64> = lot_stock(api, "")
        .await
        .into_iter()
        .map(|(k, v)| (k, micros(v)))
        .collect();
    assert_eq!(stock, sums, "stock per lot is the ledger summed per lot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adjust_transfer_and_return_keep_stock_per_lot() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Lots").await).await;
    let api = &floor.api;
    let flour = tracked(&floor, "Flour", "lot").await;
    let l1 = lot(api, &flour, "L-1").await;
    let l2 = lot(api, &flour, "L-2").await;

    let resp = post(
        api,
        json!({"itemId": flour, "type": "adjust", "quantity": 5, "toLocationId": floor.a, "lotId": l1}),
    )
    .await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.body["lotId"], json!(l1));
    assert_eq!(
        api.read("inventory-transaction", &resp.id()).await["lotId"],
        json!(l1)
    );
    for body in [
        json!({"itemId": flour, "type": "adjust", "quantity": 3, "toLocationId": floor.a, "lotId": l2}),
        json!({"itemId": flour, "type": "transfer", "quantity": 2, "fromLocationId": floor.a, "toLocationId": floor.b, "lotId": l1}),
        json!({"itemId": flour, "type": "return", "quantity": 1, "fromLocationId": floor.b, "lotId": l1}),
    ] {
        let resp = post(api, body).await;
        assert_eq!(resp.status, 201, "{resp}");
    }

    // The totals per item and location are as before, without a lotId.
    assert_eq!(floor.on_hand(&flour, &floor.a).await, 6.0);
    assert_eq!(floor.on_hand(&flour, &floor.b).await, 1.0);
    let plain = api.list("stock", &format!("itemId={flour}")).await;
    assert_eq!(plain.len(), 2);
    assert!(plain.iter().all(|s| s.get("lotId").is_none()), "{plain:?}");

    // Per lot.
    let by_lot = lot_stock(api, &format!("itemId={flour}")).await;
    let expect: BTreeMap<_, _> = [
        ((flour.clone(), floor.a.clone(), l1.clone()), 3.0),
        ((flour.clone(), floor.a.clone(), l2.clone()), 3.0),
        ((flour.clone(), floor.b.clone(), l1.clone()), 1.0),
    ]
    .into_iter()
    .collect();
    assert_eq!(by_lot, expect);
    let one = api.list("stock", &format!("lotId={l2}")).await;
    assert_eq!(one.len(), 1, "{one:?}");
    assert_eq!(one[0]["onHand"], 3.0);
    assert_eq!(one[0]["reserved"], 0.0);
    assert_eq!(one[0]["lotId"], json!(l2));

    // The policy holds per lot: the location holds 6, but lot L-2 only 3.
    let resp = post(
        api,
        json!({"itemId": flour, "type": "return", "quantity": 4, "fromLocationId": floor.a, "lotId": l2}),
    )
    .await;
    assert_error(&resp, 409, "CONFLICT");
    assert!(resp.text.contains(&l2), "names the lot: {resp}");
    assert_eq!(
        floor.on_hand(&flour, &floor.a).await,
        6.0,
        "nothing written"
    );
    assert_lot_stock_is_ledger(api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untracked_items_post_and_list_as_before_and_sit_beside_lots_when_grouped() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Plain").await).await;
    let api = &floor.api;
    let bolt = floor.item("Bolt", None).await;
    floor.adjust(&bolt, &floor.a, 7.0).await;
    let plain = api.list("stock", &format!("itemId={bolt}")).await;
    assert_eq!(plain.len(), 1);
    assert_eq!(plain[0].as_object().unwrap().len(), 5, "{}", plain[0]);

    let flour = tracked(&floor, "Flour", "lot").await;
    let l1 = lot(api, &flour, "L-1").await;
    let resp = post(
        api,
        json!({"itemId": flour, "type": "adjust", "quantity": 2, "toLocationId": floor.a, "lotId": l1}),
    )
    .await;
    assert_eq!(resp.status, 201, "{resp}");
    // Grouped by lot: the untracked item's row is its row without grouping.
    let grouped = api.list("stock", "groupBy=lot").await;
    assert_eq!(grouped.len(), 2, "{grouped:?}");
    let bolt_row = grouped
        .iter()
        .find(|s| s["itemId"] == json!(bolt))
        .expect("the untracked item's row");
    assert_eq!(bolt_row, &plain[0]);
    assert!(
        grouped
            .iter()
            .any(|s| s["itemId"] == json!(flour) && s["lotId"] == json!(l1))
    );
    let resp = api.get("/stock?groupBy=location").await;
    assert_validation_names(&resp, "groupBy");
    let resp = api.get("/stock?lotId=nope").await;
    assert_validation_names(&resp, "lotId");
    assert_lot_stock_is_ledger(api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_posting_names_a_lot_of_its_item_in_the_organization() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Hostile").await).await;
    let api = &floor.api;
    let flour = tracked(&floor, "Flour", "lot").await;
    let sugar = tracked(&floor, "Sugar", "lot").await;
    let bolt = floor.item("Bolt", None).await;
    let l1 = lot(api, &flour, "L-1").await;
    let sugar_lot = lot(api, &sugar, "S-1").await;
    let other = Floor::new(server.org("Other").await).await;
    let other_flour = tracked(&other, "Flour", "lot").await;
    let other_lot = lot(&other.api, &other_flour, "L-1").await;

    let at_a = |item: &str, lot: Option<&str>| json!({"itemId": item, "type": "adjust", "quantity": 1, "toLocationId": floor.a, "lotId": lot});
    // A tracked item without a lot.
    let resp = post(api, at_a(&flour, None)).await;
    assert_validation_names(&resp, "lotId");
    assert!(resp.text.contains("tracked by lot"), "{resp}");
    // An untracked item with one.
    assert_validation_names(&post(api, at_a(&bolt, Some(&l1))).await, "lotId");
    // Another item's lot.
    let resp = post(api, at_a(&flour, Some(&sugar_lot))).await;
    assert_validation_names(&resp, "lotId");
    assert!(resp.text.contains("S-1"), "{resp}");
    // Another organization's lot, and one that does not exist.
    let resp = post(api, at_a(&flour, Some(&other_lot))).await;
    assert_validation_names(&resp, "lotId");
    assert!(!resp.text.contains("Other"), "{resp}");
    let resp = post(api, at_a(&flour, Some(&uuid::Uuid::now_v7().to_string()))).await;
    assert_validation_names(&resp, "lotId");
    // Not a UUID.
    assert_validation_names(&post(api, at_a(&flour, Some("L-1"))).await, "lotId");

    assert!(ledger(api).await.is_empty(), "nothing was written");
    assert_eq!(floor.on_hand(&flour, &floor.a).await, 0.0);
    // The other organization's stock of its lot is untouched.
    assert_eq!(other.on_hand(&other_flour, &other.a).await, 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serial_moves_one_and_is_never_on_hand_twice() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Serials").await).await;
    let api = &floor.api;
    let pump = tracked(&floor, "Pump", "serial").await;
    let sn = lot(api, &pump, "SN-1").await;

    let resp = post(
        api,
        json!({"itemId": pump, "type": "adjust", "quantity": 2, "toLocationId": floor.a, "lotId": sn}),
    )
    .await;
    assert_validation_names(&resp, "quantity");
    let resp = post(
        api,
        json!({"itemId": pump, "type": "adjust", "quantity": 0.5, "toLocationId": floor.a, "lotId": sn}),
    )
    .await;
    assert_validation_names(&resp, "quantity");

    let resp = post(
        api,
        json!({"itemId": pump, "type": "adjust", "quantity": 1, "toLocationId": floor.a, "lotId": sn}),
    )
    .await;
    assert_eq!(resp.status, 201, "{resp}");
    // On hand at A: not again at A, nor at B.
    for at in [&floor.a, &floor.b] {
        let resp = post(
            api,
            json!({"itemId": pump, "type": "adjust", "quantity": 1, "toLocationId": at, "lotId": sn}),
        )
        .await;
        let details = assert_error_details(&resp, 409, "CONFLICT");
        assert!(
            details.iter().any(|d| d["field"] == "lotId"),
            "names lotId: {resp}"
        );
    }
    // It moves.
    let resp = post(
        api,
        json!({"itemId": pump, "type": "transfer", "quantity": 1, "fromLocationId": floor.a, "toLocationId": floor.b, "lotId": sn}),
    )
    .await;
    assert_eq!(resp.status, 201, "{resp}");
    let by_lot = lot_stock(api, &format!("lotId={sn}")).await;
    assert_eq!(by_lot.values().sum::<f64>(), 1.0);
    assert_eq!(
        by_lot.get(&(pump.clone(), floor.b.clone(), sn.clone())),
        Some(&1.0)
    );
    assert_lot_stock_is_ledger(api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_postings_of_one_serial_put_it_on_hand_once() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Race").await).await;
    let api = &floor.api;
    let pump = tracked(&floor, "Pump", "serial").await;
    let sn = lot(api, &pump, "SN-1").await;
    let mut tasks = Vec::new();
    for i in 0..8 {
        let api = api.clone();
        let at = [&floor.a, &floor.b, &floor.c][i % 3].clone();
        let (pump, sn) = (pump.clone(), sn.clone());
        tasks.push(tokio::spawn(async move {
            post(
                &api,
                json!({"itemId": pump, "type": "adjust", "quantity": 1, "toLocationId": at, "lotId": sn}),
            )
            .await
            .status
        }));
    }
    let mut statuses = Vec::new();
    for t in tasks {
        statuses.push(t.await.unwrap());
    }
    statuses.sort();
    assert_eq!(
        statuses.iter().filter(|s| **s == 201).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 201 || *s == 409),
        "{statuses:?}"
    );
    assert_eq!(
        lot_stock(api, &format!("lotId={sn}"))
            .await
            .values()
            .sum::<f64>(),
        1.0
    );
    assert_lot_stock_is_ledger(api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_line_names_its_lot_and_adjusts_that_lot() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Count").await).await;
    let api = &floor.api;
    let flour = tracked(&floor, "Flour", "lot").await;
    let bolt = floor.item("Bolt", None).await;
    let l1 = lot(api, &flour, "L-1").await;
    let l2 = lot(api, &flour, "L-2").await;
    let resp = post(
        api,
        json!({"itemId": flour, "type": "adjust", "quantity": 4, "toLocationId": floor.a, "lotId": l1}),
    )
    .await;
    assert_eq!(resp.status, 201, "{resp}");

    let resp = api
        .post(
            "/inventory/count",
            json!({"lines": [
                {"itemId": flour, "locationId": floor.a, "lotId": l1, "quantity": 3},
                {"itemId": flour, "locationId": floor.a, "lotId": l2, "quantity": 2},
                {"itemId": bolt, "locationId": floor.a, "quantity": 5}
            ]}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let lines = resp.body["lines"].as_array().unwrap();
    assert_eq!(lines[0]["lotId"], json!(l1));
    assert_eq!(lines[0]["onHand"], 4.0);
    assert_eq!(lines[0]["difference"], -1.0);
    assert_eq!(lines[1]["onHand"], 0.0);
    assert_eq!(lines[1]["difference"], 2.0);
    assert!(lines[2].get("lotId").is_none(), "{}", lines[2]);
    let row = api
        .read(
            "inventory-transaction",
            lines[1]["transactionId"].as_str().unwrap(),
        )
        .await;
    assert_eq!(row["lotId"], json!(l2));
    let by_lot = lot_stock(api, &format!("itemId={flour}")).await;
    assert_eq!(by_lot[&(flour.clone(), floor.a.clone(), l1.clone())], 3.0);
    assert_eq!(by_lot[&(flour.clone(), floor.a.clone(), l2.clone())], 2.0);
    assert_eq!(floor.on_hand(&flour, &floor.a).await, 5.0);

    // A tracked item's line without a lot, an untracked one's with a lot: refused by line.
    let resp = api
        .post(
            "/inventory/count",
            json!({"lines": [
                {"itemId": bolt, "locationId": floor.a, "quantity": 1},
                {"itemId": flour, "locationId": floor.b, "quantity": 1},
                {"itemId": bolt, "locationId": floor.b, "lotId": l1, "quantity": 1}
            ]}),
        )
        .await;
    assert_error_details(&resp, 400, "VALIDATION_ERROR");
    let fields = refused_fields(&resp);
    assert!(fields.contains(&"lines[1].lotId"), "{resp}");
    assert!(fields.contains(&"lines[2].lotId"), "{resp}");
    // The same lot counted twice.
    let resp = api
        .post(
            "/inventory/count",
            json!({"lines": [
                {"itemId": flour, "locationId": floor.a, "lotId": l1, "quantity": 1},
                {"itemId": flour, "locationId": floor.a, "lotId": l1, "quantity": 2}
            ]}),
        )
        .await;
    assert_validation_names(&resp, "itemId");
    assert_lot_stock_is_ledger(api).await;
}

/// A count's refusals about lots name the line they come from (`lines[i].lotId`,
/// `lines[i].quantity`), as its other refusals do, and write nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counts_lot_refusals_name_their_line() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Count lines").await).await;
    let other = Floor::new(server.org("Count lines, other").await).await;
    let api = &floor.api;
    let flour = tracked(&floor, "Flour", "lot").await;
    let gauge = tracked(&floor, "Gauge", "serial").await;
    let theirs_item = tracked(&other, "Flour", "lot").await;
    let theirs = lot(&other.api, &theirs_item, "L-THEIRS").await;
    let sn = lot(api, &gauge, "SN-1").await;
    let mine = lot(api, &flour, "L-1").await;

    // Another organization's lot on the second line.
    let resp = api
        .post(
            "/inventory/count",
            json!({"lines": [
                {"itemId": flour, "locationId": floor.a, "lotId": mine, "quantity": 1},
                {"itemId": flour, "locationId": floor.a, "lotId": theirs, "quantity": 1}
            ]}),
        )
        .await;
    assert_refusal_names(&resp, 400, "lotId");
    assert!(refused_fields(&resp).contains(&"lines[1].lotId"), "{resp}");
    assert!(!resp.to_string().contains("L-THEIRS"), "{resp}");

    // A serial counted as 2 on the second line.
    let resp = api
        .post(
            "/inventory/count",
            json!({"lines": [
                {"itemId": flour, "locationId": floor.a, "lotId": mine, "quantity": 1},
                {"itemId": gauge, "locationId": floor.a, "lotId": sn, "quantity": 2}
            ]}),
        )
        .await;
    assert!(resp.status == 400 || resp.status == 409, "{resp}");
    assert!(
        refused_fields(&resp)
            .iter()
            .any(|f| f.starts_with("lines[1].")),
        "the refusal names the serial's line: {resp}"
    );
    assert_eq!(api.list("inventory-transaction", "").await.len(), 0);
    assert_lot_stock_is_ledger(api).await;
}

/// An inbound delivery with one manifest line per `(item, quantity)`, received at `floor.a`;
/// answers the delivery id and the line ids.
async fn inbound(floor: &Floor, lines: &[(&str, f64)]) -> (String, Vec<String>) {
    let api = &floor.api;
    let d = id(&api
        .create("delivery", json!({"name": format!("PO {}", unique())}))
        .await);
    let mut ids = Vec::new();
    for (item, quantity) in lines {
        ids.push(id(&api
            .create(
                "delivery-manifest-line",
                json!({"deliveryId": d, "itemId": item, "quantityExpected": quantity, "locationId": floor.a}),
            )
            .await));
    }
    (d, ids)
}

async fn receive(api: &Api, delivery: &str, body: Value) -> Resp {
    api.post(&format!("/delivery/{delivery}/receive"), body)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receipt_names_its_lots_and_creates_the_new_ones() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Receive").await).await;
    let api = &floor.api;
    let flour = tracked(&floor, "Flour", "lot").await;
    let bolt = floor.item("Bolt", None).await;
    let known = lot(api, &flour, "L-OLD").await;
    let (d, lines) = inbound(&floor, &[(&flour, 10.0), (&bolt, 4.0)]).await;

    // A tracked line without lots, an untracked one with lots: refused, nothing posted.
    let resp = receive(
        api,
        &d,
        json!({"lines": [
            {"manifestLineId": lines[0], "quantity": 6},
            {"manifestLineId": lines[1], "quantity": 4, "lots": [{"code": "B-1", "quantity": 4}]}
        ]}),
    )
    .await;
    assert_error_details(&resp, 400, "VALIDATION_ERROR");
    let fields = refused_fields(&resp);
    assert_eq!(fields, ["lines[0].lots", "lines[1].lots"], "{resp}");
    // Lots that do not add up to the line.
    let resp = receive(
        api,
        &d,
        json!({"lines": [{"manifestLineId": lines[0], "quantity": 6,
                          "lots": [{"code": "L-NEW", "quantity": 5}]}]}),
    )
    .await;
    assert_validation_names(&resp, "lots");
    // Without lines, a tracked line cannot be received (it names no lots).
    assert_validation_names(&receive(api, &d, json!({})).await, "lines");
    assert!(ledger(api).await.is_empty());
    assert_eq!(api.count("lot", "").await, 1, "no lot was created");

    // 6 of flour: 2 of the known lot, 4 of a new one (created, with its expiry); and the bolts.
    let resp = receive(
        api,
        &d,
        json!({"lines": [
            {"manifestLineId": lines[0], "quantity": 6, "lots": [
                {"code": "L-OLD", "quantity": 2},
                {"code": " L-NEW ", "quantity": 4, "expiresAt": "2030-01-01T00:00:00Z"}
            ]},
            {"manifestLineId": lines[1], "quantity": 4}
        ]}),
    )
    .await;
    assert_eq!(resp.status, 200, "{resp}");
    let new = api.list("lot", "code=L-NEW").await;
    assert_eq!(new.len(), 1, "{new:?}");
    assert_eq!(new[0]["itemId"], json!(flour));
    assert_eq!(new[0]["expiresAt"], "2030-01-01T00:00:00Z");
    let new = id(&new[0]);
    let rows = api
        .list("inventory-transaction", &format!("deliveryId={d}"))
        .await;
    assert_eq!(rows.len(), 3, "{rows:?}");
    let by_lot = lot_stock(api, &format!("itemId={flour}")).await;
    assert_eq!(
        by_lot[&(flour.clone(), floor.a.clone(), known.clone())],
        2.0
    );
    assert_eq!(by_lot[&(flour.clone(), floor.a.clone(), new.clone())], 4.0);
    assert_eq!(floor.on_hand(&flour, &floor.a).await, 6.0);
    assert_eq!(floor.on_hand(&bolt, &floor.a).await, 4.0);
    let line = api.read("delivery-manifest-line", &lines[0]).await;
    assert_eq!(line["quantityReceived"], 6.0);

    // The rest, into the lot received before: found by its code, not made again; an expiry
    // that is not the lot's is refused.
    let resp = receive(
        api,
        &d,
        json!({"lines": [{"manifestLineId": lines[0], "quantity": 4,
                          "lots": [{"code": "L-NEW", "quantity": 4, "expiresAt": "2031-01-01T00:00:00Z"}]}]}),
    )
    .await;
    assert_validation_names(&resp, "expiresAt");
    let resp = receive(
        api,
        &d,
        json!({"lines": [{"manifestLineId": lines[0], "quantity": 4,
                          "lots": [{"code": "L-NEW", "quantity": 4}]}]}),
    )
    .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["status"], "received");
    assert_eq!(api.count("lot", "").await, 2);
    let by_lot = lot_stock(api, &format!("lotId={new}")).await;
    assert_eq!(by_lot.values().sum::<f64>(), 8.0);
    assert_lot_stock_is_ledger(api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_serial_is_received_once() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Receive serials").await).await;
    let api = &floor.api;
    let pump = tracked(&floor, "Pump", "serial").await;
    let (d, lines) = inbound(&floor, &[(&pump, 4.0)]).await;

    // A serial of quantity 2.
    let resp = receive(
        api,
        &d,
        json!({"lines": [{"manifestLineId": lines[0], "quantity": 2,
                          "lots": [{"code": "SN-1", "quantity": 2}]}]}),
    )
    .await;
    let details = assert_error_details(&resp, 400, "VALIDATION_ERROR");
    assert!(
        details
            .iter()
            .any(|d| d["field"] == "lines[0].lots[0].quantity"),
        "{resp}"
    );
    assert_eq!(
        api.count("lot", "").await,
        0,
        "the lot made for it went too"
    );

    let resp = receive(
        api,
        &d,
        json!({"lines": [{"manifestLineId": lines[0], "quantity": 2,
                          "lots": [{"code": "SN-1", "quantity": 1}, {"code": "SN-2", "quantity": 1}]}]}),
    )
    .await;
    assert_eq!(resp.status, 200, "{resp}");
    // SN-1 again: on hand already.
    let resp = receive(
        api,
        &d,
        json!({"lines": [{"manifestLineId": lines[0], "quantity": 1,
                          "lots": [{"code": "SN-1", "quantity": 1}]}]}),
    )
    .await;
    let details = assert_error_details(&resp, 409, "CONFLICT");
    assert!(
        details
            .iter()
            .any(|d| d["field"].as_str().is_some_and(|f| f.ends_with("lotId"))),
        "{resp}"
    );
    let line = api.read("delivery-manifest-line", &lines[0]).await;
    assert_eq!(
        line["quantityReceived"], 2.0,
        "nothing of the refused receive"
    );
    assert_eq!(api.count("lot", "").await, 2);
    assert_lot_stock_is_ledger(api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completion_ships_and_receives_the_lots_of_each_line() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Ship").await).await;
    let api = &floor.api;
    let flour = tracked(&floor, "Flour", "lot").await;
    let sugar = tracked(&floor, "Sugar", "lot").await;
    let l1 = lot(api, &flour, "L-1").await;
    let l2 = lot(api, &flour, "L-2").await;
    let sugar_lot = lot(api, &sugar, "S-1").await;
    for l in [&l1, &l2] {
        let resp = post(
            api,
            json!({"itemId": flour, "type": "adjust", "quantity": 5, "toLocationId": floor.a, "lotId": l}),
        )
        .await;
        assert_eq!(resp.status, 201, "{resp}");
    }
    let transfer = |name: &str| json!({"name": name, "direction": "transfer", "sourceLocationId": floor.a, "destinationLocationId": floor.x});
    let created = api.post("/delivery/outbound", transfer("To X")).await;
    assert_eq!(created.status, 201, "{created}");
    let d = id(&created.body);
    // Lots that do not add up to the line are refused when the line is written.
    let resp = api
        .post(
            "/delivery-manifest-line",
            json!({"deliveryId": d, "itemId": flour, "quantityExpected": 6,
                   "lots": [{"lotId": l1, "quantity": 4}]}),
        )
        .await;
    assert_validation_names(&resp, "lots");
    let line = api
        .create(
            "delivery-manifest-line",
            json!({"deliveryId": d, "itemId": flour, "quantityExpected": 6,
                   "lots": [{"lotId": l1, "quantity": 4}, {"lotId": l2, "quantity": 2}]}),
        )
        .await;
    assert_eq!(line["lots"][1]["lotId"], json!(l2));
    for step in ["start", "complete"] {
        let resp = api.post(&format!("/delivery/{d}/{step}"), json!({})).await;
        assert_eq!(resp.status, 200, "{resp}");
    }
    let by_lot = lot_stock(api, &format!("itemId={flour}")).await;
    let expect: BTreeMap<_, _> = [
        ((flour.clone(), floor.a.clone(), l1.clone()), 1.0),
        ((flour.clone(), floor.a.clone(), l2.clone()), 3.0),
        ((flour.clone(), floor.x.clone(), l1.clone()), 4.0),
        ((flour.clone(), floor.x.clone(), l2.clone()), 2.0),
    ]
    .into_iter()
    .collect();
    assert_eq!(by_lot, expect);
    let rows = api
        .list("inventory-transaction", &format!("deliveryId={d}"))
        .await;
    assert_eq!(rows.len(), 4, "a ship and a receipt per lot: {rows:?}");
    assert!(rows.iter().all(|r| r["lotId"].is_string()));

    // A tracked line without lots, or with another item's lot, cannot complete.
    for lots in [json!([]), json!([{"lotId": sugar_lot, "quantity": 1}])] {
        let created = api.post("/delivery/outbound", transfer("Again")).await;
        let d = id(&created.body);
        api.create(
            "delivery-manifest-line",
            json!({"deliveryId": d, "itemId": flour, "quantityExpected": 1, "lots": lots}),
        )
        .await;
        let resp = api.post(&format!("/delivery/{d}/start"), json!({})).await;
        assert_eq!(resp.status, 200, "{resp}");
        let resp = api
            .post(&format!("/delivery/{d}/complete"), json!({}))
            .await;
        let details = assert_error_details(&resp, 400, "VALIDATION_ERROR");
        assert!(
            details.iter().any(|d| d["field"]
                .as_str()
                .is_some_and(|f| f.starts_with("manifestLines[0]") && f.ends_with("lotId"))),
            "{resp}"
        );
        assert_eq!(
            api.read("delivery", &d).await["status"],
            "in_transit",
            "nothing changed"
        );
    }
    assert_lot_stock_is_ledger(api).await;
}

/// A refusal with `status` whose details name a field ending in `field` (a whole path, or
/// its last part).
/// The fields an error's details name, in order.
fn refused_fields(resp: &Resp) -> Vec<&str> {
    resp.body["error"]["details"]
        .as_array()
        .map(|d| d.iter().filter_map(|d| d["field"].as_str()).collect())
        .unwrap_or_default()
}

fn assert_refusal_names(resp: &Resp, status: u16, field: &str) {
    assert_eq!(resp.status, status, "{resp}");
    let named = resp.body["error"]["details"].as_array().is_some_and(|d| {
        d.iter()
            .any(|d| d["field"].as_str().is_some_and(|f| f.ends_with(field)))
    });
    assert!(named, "details name {field}: {resp}");
}

/// The lots an answer names (`lots`: code and quantity), in its order.
fn lots_taken(value: &Value) -> Vec<(String, f64)> {
    value["lots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["code"].as_str().unwrap().to_string(),
                l["quantity"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// Puts `quantity` of `lot` of `item` on hand at `location`.
async fn adjust_lot(api: &Api, item: &str, location: &str, lot: &str, quantity: f64) {
    let resp = post(
        api,
        json!({"itemId": item, "type": "adjust", "quantity": quantity, "toLocationId": location, "lotId": lot}),
    )
    .await;
    assert_eq!(resp.status, 201, "{resp}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_puts_each_output_into_its_named_or_made_lots() {
    let server = TestServer::start().await;
    let plant = crate::production::Plant::new(server.org("Produce lots").await).await;
    let floor = &plant.floor;
    let api = &floor.api;
    let bread = tracked(floor, "Bread", "lot").await;
    let engine = tracked(floor, "Engine", "serial").await;
    let crumbs = floor.item("Crumbs", Some(&floor.a)).await;
    for item in [&bread, &engine, &crumbs] {
        api.create(
            "production-output",
            json!({"itemId": item, "orderDeliverableId": plant.order, "quantity": 100}),
        )
        .await;
    }
    let produce = |outputs: Value| json!({"deliverableId": plant.order, "outputs": outputs, "outputLocationId": floor.a});

    // Named lots: found or made by code, one row each.
    let value = plant
        .ok(
            "/production/produce",
            produce(json!([{"itemId": bread, "quantity": 5, "lots": [
                {"code": "B-1", "quantity": 3},
                {"code": "B-2", "quantity": 2, "expiresAt": "2030-01-01T00:00:00Z"}
            ]}])),
        )
        .await;
    let rows = value["transactions"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{value}");
    let codes: Vec<&str> = value["lots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["B-1", "B-2"]);
    for (row, lot) in rows.iter().zip(value["lots"].as_array().unwrap()) {
        assert_eq!(row["lotId"], lot["lotId"]);
        assert_eq!(row["quantity"], lot["quantity"]);
        assert_eq!(lot["expired"], false);
    }
    let b2 = api.list("lot", &format!("itemId={bread}&code=B-2")).await;
    assert_eq!(b2.len(), 1);
    assert_eq!(b2[0]["expiresAt"], "2030-01-01T00:00:00Z");

    // Nothing named: one lot for the whole output, coded after the order.
    let order = api.read("deliverable", &plant.order).await;
    let prefix = format!("{}-", order["identifier"].as_str().unwrap());
    let value = plant
        .ok(
            "/production/produce",
            produce(json!([{"itemId": bread, "quantity": 4}])),
        )
        .await;
    assert_eq!(value["lots"].as_array().unwrap().len(), 1, "{value}");
    let made = value["lots"][0]["code"].as_str().unwrap();
    assert!(made.starts_with(&prefix), "{made} starts with {prefix}");
    assert_eq!(value["transactions"][0]["quantity"], 4.0);

    // A serial item: one serial per unit, each on hand once.
    let value = plant
        .ok(
            "/production/produce",
            produce(json!([{"itemId": engine, "quantity": 3}])),
        )
        .await;
    let serials = value["lots"].as_array().unwrap();
    assert_eq!(serials.len(), 3, "{value}");
    let mut distinct: Vec<&str> = serials
        .iter()
        .map(|l| l["code"].as_str().unwrap())
        .collect();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "{distinct:?}");
    for serial in serials {
        assert_eq!(serial["quantity"], 1.0);
    }

    // Refused, writing nothing: a part of a serial, a serial of 2, lots that do not add up,
    // lots of an untracked item.
    let before = ledger(api).await.len();
    for (outputs, field) in [
        (
            json!([{"itemId": engine, "quantity": 1.5}]),
            "outputs[0].quantity",
        ),
        (
            json!([{"itemId": engine, "quantity": 2, "lots": [{"code": "SN-9", "quantity": 2}]}]),
            "quantity",
        ),
        (
            json!([{"itemId": bread, "quantity": 2, "lots": [{"code": "B-3", "quantity": 1}]}]),
            "outputs[0].lots",
        ),
        (
            json!([{"itemId": crumbs, "quantity": 1, "lots": [{"code": "C-1", "quantity": 1}]}]),
            "outputs[0].lots",
        ),
    ] {
        let resp = plant.action("/production/produce", produce(outputs)).await;
        assert_refusal_names(&resp, 400, field);
    }
    assert_eq!(ledger(api).await.len(), before, "nothing posted");
    assert!(
        api.list("lot", "code=SN-9").await.is_empty(),
        "a refused produce leaves no lot behind"
    );
    // Untracked outputs post as before: one row, no lot.
    let value = plant
        .ok(
            "/production/produce",
            produce(json!([{"itemId": crumbs, "quantity": 2}])),
        )
        .await;
    assert_eq!(value["transactions"][0]["lotId"], Value::Null);
    assert_eq!(value["lots"], json!([]));
    assert_lot_stock_is_ledger(api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_takes_the_lots_named_or_the_first_in() {
    let server = TestServer::start().await;
    let plant = crate::production::Plant::new(server.org("Consume lots").await).await;
    let floor = &plant.floor;
    let api = &floor.api;
    let flour = tracked(floor, "Flour", "lot").await;
    let salt = floor.item("Salt", Some(&floor.a)).await;
    let old = lot(api, &flour, "F-OLD").await;
    let new = lot(api, &flour, "F-NEW").await;
    let expired = id(&api
        .create(
            "lot",
            json!({"itemId": flour, "code": "F-EXP", "expiresAt": "2020-01-01T00:00:00Z"}),
        )
        .await);
    adjust_lot(api, &flour, &floor.a, &old, 4.0).await;
    adjust_lot(api, &flour, &floor.a, &new, 10.0).await;
    adjust_lot(api, &flour, &floor.a, &expired, 2.0).await;
    floor.adjust(&salt, &floor.a, 10.0).await;
    api.create(
        "bom-line",
        json!({"itemId": flour, "orderDeliverableId": plant.order, "quantity": 20}),
    )
    .await;
    api.create(
        "bom-line",
        json!({"itemId": salt, "orderDeliverableId": plant.order, "quantity": 1}),
    )
    .await;
    let consume = |lines: Value| json!({"deliverableId": plant.order, "lines": lines, "fromLocationId": floor.a});

    // Named lots, in the request's order: all of the first, the rest from the second.
    let value = plant
        .ok(
            "/production/consume",
            consume(
                json!([{"itemId": flour, "quantity": 5, "lots": [{"lotId": old}, {"lotId": new}]}]),
            ),
        )
        .await;
    let taken = lots_taken(&value);
    assert_eq!(
        taken,
        [("F-OLD".to_string(), 4.0), ("F-NEW".to_string(), 1.0)]
    );
    assert_eq!(value["transactions"].as_array().unwrap().len(), 2);
    assert_eq!(value["lines"][0]["quantityActual"], 5.0);

    // An expired lot may be taken, and the answer says so.
    let value = plant
        .ok(
            "/production/consume",
            consume(json!([{"itemId": flour, "quantity": 1, "lots": [{"lotId": expired}]}])),
        )
        .await;
    assert_eq!(value["lots"][0]["expired"], true, "{value}");

    // None named: first in, first out (F-OLD is empty; F-NEW, then F-EXP, by creation).
    let value = plant
        .ok(
            "/production/consume",
            consume(json!([{"itemId": flour, "quantity": 10}])),
        )
        .await;
    let taken = lots_taken(&value);
    assert_eq!(
        taken,
        [("F-NEW".to_string(), 9.0), ("F-EXP".to_string(), 1.0)]
    );

    // Refused, writing nothing: more than the lots hold (409), another item's lot, another
    // organization's lot, lots on an untracked item (400).
    let other = server.org("Other bakery").await;
    let other_item = id(&other
        .create("item", json!({"name": "Their flour", "tracking": "lot"}))
        .await);
    let theirs = lot(&other, &other_item, "T-1").await;
    let before = ledger(api).await.len();
    let resp = plant
        .action(
            "/production/consume",
            consume(json!([{"itemId": flour, "quantity": 1}])),
        )
        .await;
    assert_eq!(resp.status, 409, "everything is used up: {resp}");
    for (lines, field) in [
        (
            json!([{"itemId": flour, "quantity": 1, "lots": [{"lotId": theirs}]}]),
            "lines[0].lots[0].lotId",
        ),
        (
            json!([{"itemId": salt, "quantity": 1, "lots": [{"lotId": old}]}]),
            "lines[0].lots",
        ),
    ] {
        let resp = plant.action("/production/consume", consume(lines)).await;
        assert_refusal_names(&resp, 400, field);
    }
    assert_eq!(ledger(api).await.len(), before, "nothing posted");
    // An untracked line draws as before.
    let value = plant
        .ok(
            "/production/consume",
            consume(json!([{"itemId": salt, "quantity": 1}])),
        )
        .await;
    assert_eq!(value["transactions"][0]["lotId"], Value::Null);
    assert_eq!(value["lots"], json!([]));
    assert_lot_stock_is_ledger(api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consume_takes_the_first_to_expire_when_the_organization_picks_fefo() {
    let server = TestServer::start().await;
    let plant = crate::production::Plant::new(server.org("FEFO").await).await;
    let floor = &plant.floor;
    let api = &floor.api;
    let milk = tracked(floor, "Milk", "lot").await;
    let mut lots = Vec::new();
    // Made first, expiring last; then one without an expiry; then the first to expire.
    for (code, expires) in [
        ("M-LATE", json!("2031-01-01T00:00:00Z")),
        ("M-NONE", Value::Null),
        ("M-SOON", json!("2030-01-01T00:00:00Z")),
    ] {
        let lot = id(&api
            .create(
                "lot",
                json!({"itemId": milk, "code": code, "expiresAt": expires}),
            )
            .await);
        adjust_lot(api, &milk, &floor.a, &lot, 2.0).await;
        lots.push(lot);
    }
    api.create(
        "bom-line",
        json!({"itemId": milk, "orderDeliverableId": plant.order, "quantity": 5}),
    )
    .await;
    let consume = |q: f64| json!({"deliverableId": plant.order, "lines": [{"itemId": milk, "quantity": q}], "fromLocationId": floor.a});
    let codes = |value: &Value| -> Vec<String> {
        lots_taken(value)
            .into_iter()
            .map(|(code, _)| code)
            .collect()
    };
    // FIFO by default: the lot made first.
    let value = plant.ok("/production/consume", consume(1.0)).await;
    assert_eq!(codes(&value), ["M-LATE"]);
    server
        .running()
        .set_setting(api.org_id, "lotPicking=fefo")
        .await
        .expect("the setting is set");
    // FEFO: the first to expire, then the next, lots without an expiry last.
    let value = plant.ok("/production/consume", consume(4.0)).await;
    assert_eq!(codes(&value), ["M-SOON", "M-LATE", "M-NONE"]);
    assert!(
        server
            .running()
            .set_setting(api.org_id, "lotPicking=lifo")
            .await
            .is_err(),
        "an unknown picking order is refused"
    );
    assert_lot_stock_is_ledger(api).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracking_changes_only_while_the_item_has_no_stock() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Tracking change").await).await;
    let api = &floor.api;
    let bolts = floor.item("Bolts", Some(&floor.a)).await;
    floor.adjust(&bolts, &floor.a, 5.0).await;
    let resp = api
        .patch(&format!("/item/{bolts}"), json!({"tracking": "lot"}))
        .await;
    assert_refusal_names(&resp, 409, "tracking");
    assert_eq!(api.read("item", &bolts).await["tracking"], "none");
    // Once its stock is posted out, the tracking changes.
    floor.adjust(&bolts, &floor.a, -5.0).await;
    let resp = api
        .patch(&format!("/item/{bolts}"), json!({"tracking": "lot"}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["tracking"], "lot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reversal_takes_the_same_lot_back() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Lot reversal").await).await;
    let api = &floor.api;
    let resin = tracked(&floor, "Resin", "lot").await;
    let r1 = lot(api, &resin, "R-1").await;
    let resp = post(
        api,
        json!({"itemId": resin, "type": "adjust", "quantity": 5, "toLocationId": floor.a, "lotId": r1}),
    )
    .await;
    assert_eq!(resp.status, 201, "{resp}");
    let row = resp.id();
    let resp = api
        .post("/inventory/reverse", json!({"transactionIds": [row]}))
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    let reversal = &resp.body["transactions"][0];
    assert_eq!(reversal["lotId"], json!(r1), "{resp}");
    assert_eq!(reversal["reversesId"], json!(row));
    let stock = lot_stock(api, &format!("lotId={r1}")).await;
    assert!(
        stock.values().all(|q| *q == 0.0),
        "the lot is back to nothing: {stock:?}"
    );
    assert_lot_stock_is_ledger(api).await;
}

/// `POST /production/adjust-actual` names the lot its correction moves: required for a tracked
/// item (400 naming `lotId`, nothing posted), refused for an untracked one, and the lot's stock
/// and the actual move together.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn adjust_actual_names_the_lot_of_a_tracked_item() {
    let server = TestServer::start().await;
    let plant = crate::production::Plant::new(server.org("Adjust lots").await).await;
    let floor = &plant.floor;
    let api = &floor.api;
    let flour = tracked(floor, "Flour", "lot").await;
    let salt = floor.item("Salt", Some(&floor.a)).await;
    let sack = lot(api, &flour, "F-1").await;
    adjust_lot(api, &flour, &floor.a, &sack, 10.0).await;
    floor.adjust(&salt, &floor.a, 10.0).await;
    for item in [&flour, &salt] {
        api.create(
            "bom-line",
            json!({"itemId": item, "orderDeliverableId": plant.order, "quantity": 1}),
        )
        .await;
    }
    plant
        .ok(
            "/production/consume",
            json!({"deliverableId": plant.order, "fromLocationId": floor.a, "lines": [
                {"itemId": flour, "quantity": 2}, {"itemId": salt, "quantity": 2}]}),
        )
        .await;
    let before = ledger(api).await.len();
    let adjust = |item: &str, lot: Option<&str>| {
        let mut body = json!({"stampDeliverableId": plant.order, "kind": "consume", "itemId": item, "delta": 1});
        if let Some(lot) = lot {
            body["lotId"] = json!(lot);
        }
        body
    };
    let resp = plant
        .action("/production/adjust-actual", adjust(&flour, None))
        .await;
    assert_refusal_names(&resp, 400, "lotId");
    let other = server.org("Other mill").await;
    let their_item = id(&other
        .create("item", json!({"name": "Their flour", "tracking": "lot"}))
        .await);
    let theirs = lot(&other, &their_item, "T-1").await;
    for (item, lot) in [(&flour, &theirs), (&salt, &sack)] {
        let resp = plant
            .action("/production/adjust-actual", adjust(item, Some(lot)))
            .await;
        assert_refusal_names(&resp, 400, "lotId");
    }
    assert_eq!(ledger(api).await.len(), before, "nothing posted");

    let value = plant
        .ok("/production/adjust-actual", adjust(&flour, Some(&sack)))
        .await;
    assert_eq!(value["transaction"]["lotId"], sack.as_str(), "{value}");
    assert_eq!(value["line"]["quantityActual"], 3.0);
    let stock = lot_stock(api, &format!("itemId={flour}")).await;
    assert_eq!(
        stock.get(&(flour.clone(), floor.a.clone(), sack.clone())),
        Some(&7.0)
    );
    let value = plant
        .ok("/production/adjust-actual", adjust(&salt, None))
        .await;
    assert_eq!(value["transaction"]["lotId"], Value::Null);
    assert_lot_stock_is_ledger(api).await;
}
