//! Issue 35 items 1 and 2: a completed transfer delivery posts its shipment and its arrival
//! together (stock equals the ledger at both ends, across shops), and a manifest line that
//! ledger rows name, or one of a delivery whose manifest is closed, cannot be rewritten.

use prodops_tests::*;
use serde_json::Value;

/// On hand of `item` at `location`, 0 when it never had a posting.
async fn stock(api: &Api, item: &str, location: &str) -> f64 {
    let resp = api
        .get(&format!("/stock?itemId={item}&locationId={location}"))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    resp.body["values"]
        .get(0)
        .and_then(|v| v["onHand"].as_f64())
        .unwrap_or(0.0)
}

/// The sum of the ledger rows of `item` at `location` (in less out).
async fn ledger(api: &Api, item: &str, location: &str) -> f64 {
    api.list(
        "inventory-transaction",
        &format!("itemId={item}&pageSize=1000"),
    )
    .await
    .iter()
    .map(|row| {
        let q = row["quantity"].as_f64().unwrap();
        let to = row["toLocationId"].as_str() == Some(location);
        let from = row["fromLocationId"].as_str() == Some(location);
        match (row["type"].as_str().unwrap(), to, from) {
            ("adjust", true, _) => q,
            ("adjust", false, true) if row["toLocationId"].is_null() => q,
            ("adjust", _, _) => 0.0,
            (_, true, false) => q,
            (_, false, true) => -q,
            _ => 0.0,
        }
    })
    .sum()
}

fn id(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_string()
}

/// Two shops, a location in each, and an item with 20 on hand at the first.
async fn two_shops(api: &Api) -> (String, String, String) {
    let weld = api.create("shop", json!({"name": "Weld"})).await;
    let paint = api.create("shop", json!({"name": "Paint"})).await;
    let yard = id(&api
        .create("location", json!({"name": "Yard", "shopId": weld["id"]}))
        .await);
    let booth = id(&api
        .create("location", json!({"name": "Booth", "shopId": paint["id"]}))
        .await);
    let beam = id(&api.create("item", json!({"name": "Beam"})).await);
    let r = api
        .post(
            "/inventory-transaction",
            json!({"itemId": beam, "type": "adjust", "quantity": 20, "toLocationId": yard}),
        )
        .await;
    assert_eq!(r.status, 201, "{r}");
    (yard, booth, beam)
}

#[tokio::test]
async fn a_completed_transfer_arrives_at_its_destination_across_shops() {
    let server = TestServer::start().await;
    let api = server.org("transfers").await;
    let (yard, booth, beam) = two_shops(&api).await;
    // A transfer row between the shops is refused: the delivery is the way.
    let r = api
        .post(
            "/inventory-transaction",
            json!({"itemId": beam, "type": "transfer", "quantity": 1, "fromLocationId": yard, "toLocationId": booth}),
        )
        .await;
    assert_validation_names(&r, "toLocationId");
    let created = api
        .post(
            "/delivery/outbound",
            json!({"name": "To paint", "direction": "transfer", "sourceLocationId": yard, "destinationLocationId": booth}),
        )
        .await;
    assert_eq!(created.status, 201, "{created}");
    let d = id(&created.body);
    let line = id(&api
        .create(
            "delivery-manifest-line",
            json!({"deliveryId": d, "itemId": beam, "quantityExpected": 7}),
        )
        .await);
    assert_eq!(
        api.post(&format!("/delivery/{d}/start"), json!({}))
            .await
            .status,
        200
    );
    // In transit the goods are still counted where they were loaded.
    assert_eq!(stock(&api, &beam, &yard).await, 20.0);
    assert_eq!(stock(&api, &beam, &booth).await, 0.0);
    let done = api
        .post(&format!("/delivery/{d}/complete"), json!({}))
        .await;
    assert_eq!(done.status, 200, "{done}");
    assert_eq!(done.body["status"], "delivered");
    assert_eq!(stock(&api, &beam, &yard).await, 13.0);
    assert_eq!(stock(&api, &beam, &booth).await, 7.0);
    for loc in [&yard, &booth] {
        assert_eq!(
            stock(&api, &beam, loc).await,
            ledger(&api, &beam, loc).await,
            "stock equals the ledger at {loc}"
        );
    }
    let rows = api
        .list("inventory-transaction", &format!("deliveryId={d}"))
        .await;
    let mut kinds = field_of(&rows, "type");
    kinds.sort();
    assert_eq!(kinds, ["receipt", "ship"]);
    for row in &rows {
        assert_eq!(row["metadata"]["manifestLineId"], line.as_str());
        assert_eq!(row["quantity"], 7.0);
    }
    let receipt = rows.iter().find(|r| r["type"] == "receipt").unwrap();
    assert_eq!(receipt["toLocationId"], booth.as_str());
    let ship = rows.iter().find(|r| r["type"] == "ship").unwrap();
    assert_eq!(ship["fromLocationId"], yard.as_str());
    assert_ne!(receipt["shopId"], ship["shopId"], "the pair crosses shops");
}

#[tokio::test]
async fn a_refused_arrival_refuses_the_shipment_too() {
    let server = TestServer::start().await;
    let api = server.org("transfers").await;
    let (yard, booth, beam) = two_shops(&api).await;
    // More than is on hand: the completion is refused whole (409), nothing moves.
    let d = id(&api
        .post(
            "/delivery/outbound",
            json!({"name": "Too much", "direction": "transfer", "sourceLocationId": yard, "destinationLocationId": booth}),
        )
        .await
        .body);
    api.create(
        "delivery-manifest-line",
        json!({"deliveryId": d, "itemId": beam, "quantityExpected": 25}),
    )
    .await;
    api.post(&format!("/delivery/{d}/start"), json!({})).await;
    let r = api
        .post(&format!("/delivery/{d}/complete"), json!({}))
        .await;
    assert_error(&r, 409, "CONFLICT");
    assert_eq!(api.read("delivery", &d).await["status"], "in_transit");
    assert_eq!(stock(&api, &beam, &yard).await, 20.0);
    assert_eq!(stock(&api, &beam, &booth).await, 0.0);
    // An archived destination takes no stock: 400, nothing moves either.
    let d2 = id(&api
        .post(
            "/delivery/outbound",
            json!({"name": "Closed booth", "direction": "transfer", "sourceLocationId": yard, "destinationLocationId": booth}),
        )
        .await
        .body);
    api.create(
        "delivery-manifest-line",
        json!({"deliveryId": d2, "itemId": beam, "quantityExpected": 2}),
    )
    .await;
    api.post(&format!("/delivery/{d2}/start"), json!({})).await;
    assert_eq!(
        api.patch(&format!("/location/{booth}"), json!({"isArchived": true}))
            .await
            .status,
        200
    );
    let r = api
        .post(&format!("/delivery/{d2}/complete"), json!({}))
        .await;
    assert_validation_names(&r, "toLocationId");
    assert_eq!(stock(&api, &beam, &yard).await, 20.0);
    // An outbound delivery without a destination ships out of the organization.
    let out = id(&api
        .post(
            "/delivery/outbound",
            json!({"name": "Customer", "sourceLocationId": yard}),
        )
        .await
        .body);
    api.create(
        "delivery-manifest-line",
        json!({"deliveryId": out, "itemId": beam, "quantityExpected": 5}),
    )
    .await;
    api.post(&format!("/delivery/{out}/start"), json!({})).await;
    let r = api
        .post(&format!("/delivery/{out}/complete"), json!({}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(stock(&api, &beam, &yard).await, 15.0);
    assert_eq!(
        field_of(
            &api.list("inventory-transaction", &format!("deliveryId={out}"))
                .await,
            "type"
        ),
        ["ship"]
    );
    assert_eq!(ledger(&api, &beam, &yard).await, 15.0);
}

/// A 409 in the error shape whose details name `field` and whose message names `line`.
fn assert_conflict_names(resp: &Resp, field: &str, line: &str) {
    let details = assert_error_details(resp, 409, "CONFLICT");
    assert!(
        details.iter().any(|d| d["field"] == field),
        "{field} named: {resp}"
    );
    assert!(
        resp.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(line),
        "the line named: {resp}"
    );
}

#[tokio::test]
async fn received_lines_keep_their_item_location_and_unit() {
    let server = TestServer::start().await;
    let api = server.org("manifest").await;
    let shop = api.create("shop", json!({"name": "Main"})).await;
    let dock = id(&api
        .create("location", json!({"name": "Dock", "shopId": shop["id"]}))
        .await);
    let rack = id(&api
        .create("location", json!({"name": "Rack", "shopId": shop["id"]}))
        .await);
    let bolt = id(&api.create("item", json!({"name": "Bolt"})).await);
    let nut = id(&api.create("item", json!({"name": "Nut"})).await);
    let kg = id(&api
        .create("unit-measure", json!({"name": "Kilogram", "symbol": "kg"}))
        .await);
    let d = id(&api.create("delivery", json!({"name": "Steel"})).await);
    let line = id(&api
        .create(
            "delivery-manifest-line",
            json!({"deliveryId": d, "itemId": bolt, "quantityExpected": 10, "locationId": dock}),
        )
        .await);
    let spare = id(&api
        .create(
            "delivery-manifest-line",
            json!({"deliveryId": d, "itemId": nut, "quantityExpected": 4, "locationId": dock}),
        )
        .await);
    // Before anything arrives a line changes freely.
    let r = api
        .patch(
            &format!("/delivery-manifest-line/{spare}"),
            json!({"locationId": rack}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let r = api
        .post(
            &format!("/delivery/{d}/receive"),
            json!({"lines": [{"manifestLineId": line, "quantity": 4}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let path = format!("/delivery-manifest-line/{line}");
    for (field, value) in [
        ("itemId", &nut),
        ("locationId", &rack),
        ("unitMeasureId", &kg),
    ] {
        assert_conflict_names(
            &api.patch(&path, json!({ field: value })).await,
            field,
            &line,
        );
    }
    // Through bulk PUT and bulk PATCH too.
    let mut whole = api.read("delivery-manifest-line", &line).await;
    whole["itemId"] = json!(nut);
    let r = api
        .put("/delivery-manifest-line/bulk", json!([whole]))
        .await;
    assert_eq!(r.status, 409, "{r}");
    let r = api
        .patch(
            &format!("/delivery-manifest-line/bulk?deliveryId={d}"),
            json!({"locationId": rack}),
        )
        .await;
    assert_eq!(r.status, 409, "{r}");
    // The rest of the line stays editable while receiving: notes, and more expected.
    let r = api
        .patch(
            &path,
            json!({"notes": "short pallet", "quantityExpected": 12}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    // DELETE of a line with receipts is refused (one by one and in bulk); nothing is orphaned.
    assert_conflict_names(&api.delete(&path).await, "id", &line);
    let r = api
        .delete(&format!("/delivery-manifest-line/bulk?deliveryId={d}"))
        .await;
    assert_eq!(r.status, 409, "{r}");
    let stored = api.read("delivery-manifest-line", &line).await;
    assert_eq!(stored["itemId"], bolt.as_str());
    assert_eq!(stored["locationId"], dock.as_str());
    assert_eq!(stored["quantityReceived"], 4.0);
    let receipts = api
        .list("inventory-transaction", &format!("deliveryId={d}"))
        .await;
    let summed: f64 = receipts
        .iter()
        .filter(|r| r["metadata"]["manifestLineId"] == line.as_str())
        .map(|r| r["quantity"].as_f64().unwrap())
        .sum();
    assert_eq!(
        summed, 4.0,
        "quantityReceived is the sum of the line's receipts"
    );
    // A line with nothing received may still go.
    assert_eq!(
        api.delete(&format!("/delivery-manifest-line/{spare}"))
            .await
            .status,
        204
    );
    // Receive the rest: the delivery is received, and its manifest is closed.
    let r = api.post(&format!("/delivery/{d}/receive"), json!({})).await;
    assert_eq!(r.body["status"], "received", "{r}");
    assert_eq!(r.body["partial"], false);
    let r = api
        .post(
            "/delivery-manifest-line",
            json!({"deliveryId": d, "itemId": nut, "quantityExpected": 1, "locationId": dock}),
        )
        .await;
    assert_conflict_names(&r, "deliveryId", &d);
    assert_conflict_names(
        &api.patch(&path, json!({"quantityExpected": 20})).await,
        "quantityExpected",
        &line,
    );
    assert_eq!(
        api.patch(&path, json!({"notes": "all in"})).await.status,
        200
    );
    let after = api.read("delivery", &d).await;
    assert_eq!(after["partial"], false, "still not partial");
    assert_eq!(
        api.list("delivery-manifest-line", &format!("deliveryId={d}"))
            .await
            .len(),
        1
    );
}

#[tokio::test]
async fn closed_and_cancelled_deliveries_take_no_new_lines() {
    let server = TestServer::start().await;
    let api = server.org("manifest").await;
    let shop = api.create("shop", json!({"name": "Main"})).await;
    let dock = id(&api
        .create("location", json!({"name": "Dock", "shopId": shop["id"]}))
        .await);
    let bolt = id(&api.create("item", json!({"name": "Bolt"})).await);
    let new_line = |d: &str| json!({"deliveryId": d, "itemId": bolt, "quantityExpected": 1, "locationId": dock});
    // Closed short with nothing received.
    let short = id(&api.create("delivery", json!({"name": "Short"})).await);
    let kept = id(&api.create("delivery-manifest-line", new_line(&short)).await);
    assert_eq!(
        api.post(&format!("/delivery/{short}/close-short"), json!({}))
            .await
            .status,
        200
    );
    assert_conflict_names(
        &api.post("/delivery-manifest-line", new_line(&short)).await,
        "deliveryId",
        &short,
    );
    assert_conflict_names(
        &api.delete(&format!("/delivery-manifest-line/{kept}")).await,
        "id",
        &kept,
    );
    // Cancelled.
    let cancelled = id(&api.create("delivery", json!({"name": "Off"})).await);
    api.post(&format!("/delivery/{cancelled}/cancel"), json!({}))
        .await;
    let r = api
        .put(
            "/delivery-manifest-line/bulk",
            json!([new_line(&cancelled)]),
        )
        .await;
    assert_eq!(r.status, 409, "{r}");
    assert_eq!(
        api.list_total("delivery-manifest-line", &format!("deliveryId={cancelled}"))
            .await,
        0
    );
    // Delivered: the lines were shipped, so they are fixed as well.
    let out = id(&api
        .post(
            "/delivery/outbound",
            json!({"name": "Out", "sourceLocationId": dock}),
        )
        .await
        .body);
    api.post(
        "/inventory-transaction",
        json!({"itemId": bolt, "type": "adjust", "quantity": 3, "toLocationId": dock}),
    )
    .await;
    let shipped = id(&api.create("delivery-manifest-line", new_line(&out)).await);
    api.post(&format!("/delivery/{out}/start"), json!({})).await;
    assert_eq!(
        api.post(&format!("/delivery/{out}/complete"), json!({}))
            .await
            .status,
        200
    );
    assert_conflict_names(
        &api.patch(
            &format!("/delivery-manifest-line/{shipped}"),
            json!({"quantityExpected": 2}),
        )
        .await,
        "quantityExpected",
        &shipped,
    );
    assert_conflict_names(
        &api.delete(&format!("/delivery-manifest-line/{shipped}"))
            .await,
        "id",
        &shipped,
    );
    assert_conflict_names(
        &api.post("/delivery-manifest-line", new_line(&out)).await,
        "deliveryId",
        &out,
    );
    // DELETE of the delivery itself still removes its manifest (spec 4.8).
    api.post(&format!("/delivery/{out}/archive"), json!({}))
        .await;
    assert_eq!(api.delete(&format!("/delivery/{out}")).await.status, 204);
    assert_eq!(
        api.list_total("delivery-manifest-line", &format!("deliveryId={out}"))
            .await,
        0
    );
}
