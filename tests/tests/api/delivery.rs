//! Deliveries (spec 2.10, 3.2, 4.8).

use prodops_tests::*;
use serde_json::Value;

/// The sum of the ledger for an item at a location (what arrives there less what leaves).
async fn ledger(api: &Api, item: &Value, location: &Value) -> f64 {
    let loc = location["id"].as_str().unwrap();
    api.list(
        "inventory-transaction",
        &format!("itemId={}", item["id"].as_str().unwrap()),
    )
    .await
    .iter()
    .map(|row| {
        let q = row["quantity"].as_f64().unwrap();
        match (
            row["toLocationId"].as_str() == Some(loc),
            row["fromLocationId"].as_str() == Some(loc),
        ) {
            (true, false) => q,
            (false, true) => -q,
            _ => 0.0,
        }
    })
    .sum()
}

/// Stock equals the sum of the ledger for each of these items at each of these locations.
async fn assert_stock_is_ledger(api: &Api, items: &[&Value], locations: &[&Value]) {
    for item in items {
        for location in locations {
            assert_eq!(
                stock(api, item, location).await,
                ledger(api, item, location).await,
                "stock of {} at {}",
                item["name"],
                location["name"]
            );
        }
    }
}

async fn receive(api: &Api, id: &str, body: Value) -> Resp {
    api.post(&format!("/delivery/{id}/receive"), body).await
}

async fn receipts(api: &Api, id: &str) -> Vec<Value> {
    api.list("inventory-transaction", &format!("deliveryId={id}"))
        .await
}

async fn received(api: &Api, line: &Value) -> f64 {
    api.read("delivery-manifest-line", line["id"].as_str().unwrap())
        .await["quantityReceived"]
        .as_f64()
        .unwrap()
}

async fn stock(api: &Api, item: &Value, location: &Value) -> f64 {
    let resp = api
        .get(&format!(
            "/stock?itemId={}&locationId={}",
            item["id"].as_str().unwrap(),
            location["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    resp.body["values"]
        .get(0)
        .and_then(|v| v["onHand"].as_f64())
        .unwrap_or(0.0)
}

/// A shop and its `Dock` location, where the receiving tests' goods arrive.
async fn shop_and_dock(api: &Api) -> (Value, Value) {
    let shop = api.create("shop", json!({"name": "Main"})).await;
    let dock = api
        .create("location", json!({"name": "Dock", "shopId": shop["id"]}))
        .await;
    (shop, dock)
}

/// A manifest line of delivery `id`: `expected` of `item`, to arrive at `location`.
async fn manifest_line(
    api: &Api,
    id: &str,
    item: &Value,
    expected: Value,
    location: &Value,
) -> Value {
    api.create(
        "delivery-manifest-line",
        json!({"deliveryId": id, "itemId": item["id"], "quantityExpected": expected, "locationId": location["id"]}),
    )
    .await
}

#[tokio::test]
async fn inbound_receiving_posts_receipts() {
    let server = TestServer::start().await;
    let api = server.org("deliveries").await;
    let shop = api.create("shop", json!({"name": "Main"})).await;
    let dock = api
        .create("location", json!({"name": "Dock", "shopId": shop["id"]}))
        .await;
    let bolt = api.create("item", json!({"name": "Bolt"})).await;
    let nut = api.create("item", json!({"name": "Nut"})).await;
    let d = api
        .create(
            "delivery",
            json!({"name": "Steel", "poNumber": "PO-1", "status": "received"}),
        )
        .await;
    assert_eq!(d["status"], "expected");
    assert_eq!(d["direction"], "inbound");
    assert_eq!(d["partial"], false);
    let id = d["id"].as_str().unwrap().to_string();
    assert_validation_names(
        &api.post("/delivery", json!({"name": "x", "direction": "outbound"}))
            .await,
        "status",
    );
    // Generic PATCH refuses the archive fields; status is not written by PATCH.
    assert_validation_names(
        &api.patch(&format!("/delivery/{id}"), json!({"isArchived": true}))
            .await,
        "isArchived",
    );
    assert_validation_names(
        &api.patch(&format!("/delivery/{id}"), json!({"archivedAt": null}))
            .await,
        "archivedAt",
    );
    assert_validation_names(
        &api.patch(&format!("/delivery/{id}"), json!({"direction": "outbound"}))
            .await,
        "direction",
    );
    assert_eq!(
        api.patch(
            &format!("/delivery/{id}"),
            json!({"status": "received", "name": "Steel 2"})
        )
        .await
        .body["status"],
        "expected"
    );
    // Manifest lines.
    let l1 = api.create("delivery-manifest-line", json!({"deliveryId": id, "itemId": bolt["id"], "quantityExpected": 10, "locationId": dock["id"]})).await;
    api.create("delivery-manifest-line", json!({"deliveryId": id, "itemId": nut["id"], "quantityExpected": 4, "locationId": dock["id"]})).await;
    assert_validation_names(&api.post("/delivery-manifest-line", json!({"deliveryId": uuid::Uuid::new_v4(), "itemId": bolt["id"], "quantityExpected": 1})).await, "deliveryId");
    // Archive only from a final status; outbound actions do not apply.
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/archive"), json!({}))
            .await,
        "status",
    );
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/complete"), json!({}))
            .await,
        "status",
    );
    // Receive needs Item.Update.
    let (no_item, _) = server
        .key(&api, false, &["Delivery.Update", "Delivery.Read"])
        .await;
    assert_error(
        &no_item
            .post(&format!("/delivery/{id}/receive"), json!({}))
            .await,
        403,
        "FORBIDDEN",
    );
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/receive"), json!({"lines": []}))
            .await,
        "lines",
    );
    // Partial receipt: stock and manifest move together; the delivery keeps receiving.
    let r = api
        .post(
            &format!("/delivery/{id}/receive"),
            json!({"lines": [{"manifestLineId": l1["id"], "quantity": 6}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["status"], "expected");
    assert_eq!(r.body["partial"], true);
    assert_eq!(stock(&api, &bolt, &dock).await, 6.0);
    assert_eq!(stock(&api, &nut, &dock).await, 0.0);
    assert_eq!(
        api.read("delivery-manifest-line", l1["id"].as_str().unwrap())
            .await["quantityReceived"],
        6.0
    );
    let receipts = api
        .list("inventory-transaction", &format!("deliveryId={id}"))
        .await;
    assert_eq!(receipts.len(), 1);
    assert_eq!(receipts[0]["type"], "receipt");
    // Without lines, the rest: 4 bolts and 4 nuts; then it is received, and receives no more.
    let r = api
        .post(&format!("/delivery/{id}/receive"), json!({}))
        .await;
    assert_eq!(r.body["status"], "received", "{r}");
    assert_eq!(r.body["partial"], false);
    assert_eq!(stock(&api, &bolt, &dock).await, 10.0);
    assert_eq!(stock(&api, &nut, &dock).await, 4.0);
    assert_eq!(
        api.list_total("inventory-transaction", &format!("deliveryId={id}"))
            .await,
        3
    );
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/receive"), json!({}))
            .await,
        "status",
    );
    // Archive and restore.
    let a = api
        .post(&format!("/delivery/{id}/archive"), json!({}))
        .await;
    assert_eq!(a.status, 200, "{a}");
    assert_eq!(a.body["isArchived"], true);
    assert!(a.body["archivedAt"].is_string());
    assert!(api.list_ids("delivery", "").await.is_empty());
    let (no_delete, _) = server
        .key(&api, false, &["Delivery.Update", "Delivery.Read"])
        .await;
    assert_error(
        &no_delete
            .post(&format!("/delivery/{id}/restore"), json!({}))
            .await,
        403,
        "FORBIDDEN",
    );
    let r = api
        .post(&format!("/delivery/{id}/restore"), json!({}))
        .await;
    assert_eq!(r.body["isArchived"], false, "{r}");
    // DELETE removes the manifest lines too.
    assert_eq!(api.delete(&format!("/delivery/{id}")).await.status, 204);
    assert_eq!(api.list_total("delivery-manifest-line", "").await, 0);
    assert_error(&api.get(&format!("/delivery/{id}")).await, 404, "NOT_FOUND");
}

#[tokio::test]
async fn outbound_lifecycle_group_itinerary_and_cascade() {
    let server = TestServer::start().await;
    let api = server.org("deliveries").await;
    let shop = api.create("shop", json!({"name": "Main"})).await;
    let yard = api
        .create("location", json!({"name": "Yard", "shopId": shop["id"]}))
        .await;
    let beam = api.create("item", json!({"name": "Beam"})).await;
    let o1 = api
        .create(
            "deliverable",
            json!({"name": "O1", "type": "order", "quantity": 3}),
        )
        .await;
    let o2 = api
        .create("deliverable", json!({"name": "O2", "type": "order"}))
        .await;
    let comp = api
        .create("deliverable", json!({"name": "C", "type": "component"}))
        .await;
    let step = api
        .create("deliverable", json!({"name": "S", "type": "step"}))
        .await;
    // Cargo eligibility; component cargo needs the flag.
    assert_validation_names(
        &api.post(
            "/delivery/outbound",
            json!({"name": "x", "itemIds": [comp["id"]]}),
        )
        .await,
        "itemIds",
    );
    assert_validation_names(
        &api.post(
            "/delivery/outbound",
            json!({"name": "x", "itemIds": [step["id"]]}),
        )
        .await,
        "itemIds",
    );
    assert_validation_names(
        &api.post(
            "/delivery/outbound",
            json!({"name": "x", "direction": "inbound"}),
        )
        .await,
        "direction",
    );
    assert_validation_names(
        &api.post("/delivery/outbound", json!({"name": "x", "plannedStartAt": "2030-01-02T00:00:00Z", "plannedEndAt": "2030-01-01T00:00:00Z"})).await,
        "plannedEndAt",
    );
    let created = api
        .post(
            "/delivery/outbound",
            json!({"name": "To site", "direction": "transfer", "itemIds": [o1["id"], o2["id"]], "truckName": "T1",
                   "sourceLocationId": yard["id"], "destinationAddress": "1 Site Rd",
                   "plannedStartAt": "2030-01-01T08:00:00Z", "plannedEndAt": "2030-01-01T12:00:00Z"}),
        )
        .await;
    assert_eq!(created.status, 201, "{created}");
    let d = &created.body;
    let id = d["id"].as_str().unwrap().to_string();
    assert_eq!(d["status"], "scheduled");
    assert_eq!(d["direction"], "transfer");
    assert_eq!(d["cargoCount"], 2);
    assert!(d["publicToken"].as_str().unwrap().starts_with("pub_"));
    let group_id = d["deliverableGroupId"].as_str().unwrap().to_string();
    let group = api.read("deliverable", &group_id).await;
    assert_eq!(group["data"]["deliveryId"], id.as_str());
    assert_eq!(group["schedule"]["startDate"], "2030-01-01T08:00:00Z");
    // The same cargo cannot ride on two open deliveries.
    assert_validation_names(
        &api.post(
            "/delivery/outbound",
            json!({"name": "y", "itemIds": [o1["id"]]}),
        )
        .await,
        "itemIds",
    );
    // Itinerary and cargo plan.
    let it = api.get(&format!("/delivery/{id}/itinerary")).await;
    assert_eq!(it.status, 200, "{it}");
    assert_eq!(
        field_of(it.body["stops"].as_array().unwrap(), "kind"),
        vec!["pickup", "dropoff"]
    );
    assert_eq!(it.body["legs"].as_array().unwrap().len(), 1);
    let plan = api.get(&format!("/delivery/{id}/cargo-plan")).await;
    assert_eq!(plan.body["cargoCount"], 2);
    assert_eq!(plan.body["spans"][0]["quantity"], 3);
    // Planned times only through PATCH /outbound, end after start; generic PATCH ignores them.
    let ignored = api
        .patch(
            &format!("/delivery/{id}"),
            json!({"plannedStartAt": "2031-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(
        ignored.body["plannedStartAt"], "2030-01-01T08:00:00Z",
        "{ignored}"
    );
    assert_validation_names(
        &api.patch(
            &format!("/delivery/{id}/outbound"),
            json!({"plannedEndAt": "2030-01-01T07:00:00Z"}),
        )
        .await,
        "plannedEndAt",
    );
    let moved = api
        .patch(
            &format!("/delivery/{id}/outbound"),
            json!({"plannedEndAt": "2030-01-01T18:00:00Z"}),
        )
        .await;
    assert_eq!(moved.status, 200, "{moved}");
    assert_eq!(
        api.read("deliverable", &group_id).await["schedule"]["endDate"],
        "2030-01-01T18:00:00Z"
    );
    assert_validation_names(
        &api.patch(
            &format!("/delivery/{id}/outbound"),
            json!({"status": "delivered"}),
        )
        .await,
        "status",
    );
    // An outbound manifest line ships on completion.
    api.post(
        "/inventory-transaction",
        json!({"itemId": beam["id"], "type": "adjust", "quantity": 5, "toLocationId": yard["id"]}),
    )
    .await;
    api.create("delivery-manifest-line", json!({"deliveryId": id, "itemId": beam["id"], "quantityExpected": 2, "locationId": yard["id"]})).await;
    // Lifecycle: scheduled -> in_transit -> delivered.
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/complete"), json!({}))
            .await,
        "status",
    );
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/receive"), json!({}))
            .await,
        "status",
    );
    let started = api
        .post(
            &format!("/delivery/{id}/start"),
            json!({"reason": "loaded"}),
        )
        .await;
    assert_eq!(started.body["status"], "in_transit", "{started}");
    assert_eq!(started.body["lastReason"], "loaded");
    let plan = api.get(&format!("/delivery/{id}/cargo-plan")).await;
    assert_eq!(plan.body["spans"][0]["status"], "loaded");
    let done = api
        .req(reqwest::Method::POST, &format!("/delivery/{id}/complete"))
        .send()
        .await;
    assert_eq!(done.status, 200, "{done}");
    assert_eq!(done.body["status"], "delivered");
    let ships = api
        .list(
            "inventory-transaction",
            &format!("deliveryId={id}&type=ship"),
        )
        .await;
    assert_eq!(ships.len(), 1);
    let resp = api
        .get(&format!(
            "/stock?itemId={}&locationId={}",
            beam["id"].as_str().unwrap(),
            yard["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        resp.body["values"][0]["onHand"].as_f64(),
        Some(3.0),
        "{resp}"
    );
    assert_eq!(
        api.read("deliverable", &group_id).await["data"]["deliveryStatus"],
        "delivered"
    );
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/cancel"), json!({})).await,
        "status",
    );
    // Archive from delivered; DELETE cascades to itinerary and cargo but keeps the group.
    assert_eq!(
        api.post(&format!("/delivery/{id}/archive"), json!({}))
            .await
            .status,
        200
    );
    assert_eq!(api.delete(&format!("/delivery/{id}")).await.status, 204);
    for r in [
        "delivery-stop",
        "delivery-leg",
        "delivery-cargo-span",
        "delivery-manifest-line",
    ] {
        assert_eq!(api.list_total(r, "").await, 0, "{r}");
    }
    assert_eq!(
        api.read("deliverable", &group_id).await["id"],
        group_id.as_str()
    );
    // Stops and spans are read-only through the standard endpoints.
    assert_error(
        &api.post("/delivery-stop", json!({})).await,
        405,
        "METHOD_NOT_ALLOWED",
    );
}

#[tokio::test]
async fn component_cargo_with_the_flag_and_cancel() {
    let server = TestServer::start().await;
    let api = server
        .org_with_flags("deliveries", &["deliveryComponentCargoEnabled"])
        .await;
    let comp = api
        .create("deliverable", json!({"name": "C", "type": "component"}))
        .await;
    let created = api
        .post(
            "/delivery/outbound",
            json!({"name": "x", "itemIds": [comp["id"]]}),
        )
        .await;
    assert_eq!(created.status, 201, "{created}");
    assert_eq!(created.body["direction"], "outbound");
    let id = created.id();
    let cancelled = api.post(&format!("/delivery/{id}/cancel"), json!({})).await;
    assert_eq!(cancelled.body["status"], "cancelled");
    // Once cancelled, the cargo is free for another delivery.
    assert_eq!(
        api.post(
            "/delivery/outbound",
            json!({"name": "y", "itemIds": [comp["id"]]})
        )
        .await
        .status,
        201
    );
    let other = server.org("other").await;
    assert_error(
        &other.get(&format!("/delivery/{id}/itinerary")).await,
        404,
        "NOT_FOUND",
    );
    assert_error(
        &other
            .post(&format!("/delivery/{id}/start"), json!({}))
            .await,
        404,
        "NOT_FOUND",
    );
}

#[tokio::test]
async fn partial_receipts_accumulate_and_over_receipt_is_refused() {
    let server = TestServer::start().await;
    let api = server.org("receiving").await;
    let (shop, dock) = shop_and_dock(&api).await;
    let bay = api
        .create("location", json!({"name": "Bay", "shopId": shop["id"]}))
        .await;
    let bolt = api.create("item", json!({"name": "Bolt"})).await;
    let nut = api.create("item", json!({"name": "Nut"})).await;
    let (items, locations) = ([&bolt, &nut], [&dock, &bay]);
    let d = api.create("delivery", json!({"name": "Steel"})).await;
    let id = d["id"].as_str().unwrap().to_string();
    let l_bolt = manifest_line(&api, &id, &bolt, json!(10), &dock).await;
    let l_nut = manifest_line(&api, &id, &nut, json!(4.5), &dock).await;
    let receive = |body: Value| receive(&api, &id, body);
    let receipts = || receipts(&api, &id);

    // First partial receive: 3 bolts.
    let r = receive(json!({"lines": [{"manifestLineId": l_bolt["id"], "quantity": 3}]})).await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["status"], "expected");
    assert_eq!(r.body["partial"], true);
    assert_eq!(stock(&api, &bolt, &dock).await, 3.0);
    assert_stock_is_ledger(&api, &items, &locations).await;

    // Over-receipt is refused whole, naming the entry; nothing is posted.
    let over = receive(json!({"lines": [
        {"manifestLineId": l_nut["id"], "quantity": 1},
        {"manifestLineId": l_bolt["id"], "quantity": 8}
    ]}))
    .await;
    let details = assert_error_details(&over, 400, "VALIDATION_ERROR");
    assert_eq!(details[0]["field"], "lines[1].quantity", "{over}");
    assert!(
        details[0]["message"]
            .as_str()
            .unwrap()
            .contains("over-receipt")
    );
    // Two entries of one line add up: the second crosses.
    let over = receive(json!({"lines": [
        {"manifestLineId": l_bolt["id"], "quantity": 4},
        {"manifestLineId": l_bolt["id"], "quantity": 4}
    ]}))
    .await;
    let details = assert_error_details(&over, 400, "VALIDATION_ERROR");
    assert_eq!(details[0]["field"], "lines[1].quantity", "{over}");
    assert_eq!(receipts().await.len(), 1);
    assert_eq!(stock(&api, &nut, &dock).await, 0.0);
    assert_eq!(received(&api, &l_bolt).await, 3.0);
    assert_eq!(received(&api, &l_nut).await, 0.0);
    // A line of another delivery, a zero quantity.
    let other_delivery = api.create("delivery", json!({"name": "Other"})).await;
    let foreign = api.create("delivery-manifest-line", json!({"deliveryId": other_delivery["id"], "itemId": bolt["id"], "quantityExpected": 1, "locationId": dock["id"]})).await;
    let bad = receive(json!({"lines": [
        {"manifestLineId": foreign["id"], "quantity": 1},
        {"manifestLineId": l_bolt["id"], "quantity": 0}
    ]}))
    .await;
    let details = assert_error_details(&bad, 400, "VALIDATION_ERROR");
    assert_eq!(
        field_of(&details, "field"),
        ["lines[0].manifestLineId", "lines[1].quantity"]
    );
    assert_eq!(receipts().await.len(), 1);

    // Second partial receive, with an idempotency key: 4 bolts to the bay, all the nuts. A retry
    // answers the same without posting again.
    let second = json!({"lines": [
        {"manifestLineId": l_bolt["id"], "quantity": 4, "locationId": bay["id"]},
        {"manifestLineId": l_nut["id"], "quantity": 4.5}
    ]});
    let mut answers = Vec::new();
    for _ in 0..2 {
        answers.push(
            api.req(reqwest::Method::POST, &format!("/delivery/{id}/receive"))
                .idempotency_key("receive-2")
                .json(second.clone())
                .send()
                .await,
        );
    }
    assert_eq!(answers[0].status, 200, "{}", answers[0]);
    assert_eq!(answers[0].body, answers[1].body);
    assert_eq!(answers[0].body["status"], "expected");
    assert_eq!(answers[0].body["partial"], true);
    assert_eq!(receipts().await.len(), 3);
    assert_eq!(stock(&api, &bolt, &bay).await, 4.0);
    assert_eq!(stock(&api, &nut, &dock).await, 4.5);
    assert_eq!(received(&api, &l_bolt).await, 7.0);
    assert_eq!(received(&api, &l_nut).await, 4.5);
    assert_stock_is_ledger(&api, &items, &locations).await;
    // The nuts are all in: one more is over-receipt.
    assert_validation_names(
        &receive(json!({"lines": [{"manifestLineId": l_nut["id"], "quantity": 0.5}]})).await,
        "quantity",
    );
    // While receiving, the manifest cannot expect less than is in; cancel is refused.
    assert_validation_names(
        &api.patch(
            &format!("/delivery-manifest-line/{}", l_bolt["id"].as_str().unwrap()),
            json!({"quantityExpected": 6}),
        )
        .await,
        "quantityExpected",
    );
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/cancel"), json!({})).await,
        "status",
    );
    // Start still works on a partly received delivery.
    let started = api.post(&format!("/delivery/{id}/start"), json!({})).await;
    assert_eq!(started.body["status"], "in_transit", "{started}");
    assert_eq!(started.body["partial"], true);

    // The rest: the last 3 bolts complete the manifest.
    let r = receive(json!({"lines": [{"manifestLineId": l_bolt["id"], "quantity": 3}]})).await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["status"], "received");
    assert_eq!(r.body["partial"], false);
    assert_eq!(stock(&api, &bolt, &dock).await, 6.0);
    assert_stock_is_ledger(&api, &items, &locations).await;
    // One receipt row per receive line, each naming its manifest line; per line they sum to
    // quantityReceived.
    let rows = receipts().await;
    assert_eq!(rows.len(), 4);
    for (line, want) in [(&l_bolt, 10.0), (&l_nut, 4.5)] {
        let sum: f64 = rows
            .iter()
            .filter(|r| r["metadata"]["manifestLineId"] == line["id"])
            .inspect(|r| assert_eq!(r["type"], "receipt"))
            .map(|r| r["quantity"].as_f64().unwrap())
            .sum();
        assert_eq!(sum, want);
        assert_eq!(received(&api, line).await, want);
    }
    // Received: no more receiving, nor closing short.
    assert_validation_names(
        &receive(json!({"lines": [{"manifestLineId": l_bolt["id"], "quantity": 1}]})).await,
        "status",
    );
    assert_validation_names(&receive(json!({})).await, "status");
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/close-short"), json!({}))
            .await,
        "status",
    );
    assert_eq!(receipts().await.len(), 4);
    assert_stock_is_ledger(&api, &items, &locations).await;

    // Another organization sees nothing of it and cannot receive it.
    let other = server.org("other").await;
    assert_error(
        &other
            .post(&format!("/delivery/{id}/receive"), json!({}))
            .await,
        404,
        "NOT_FOUND",
    );
    assert_error(
        &other
            .post(&format!("/delivery/{id}/close-short"), json!({}))
            .await,
        404,
        "NOT_FOUND",
    );
    assert_eq!(other.list_total("inventory-transaction", "").await, 0);
    assert_eq!(other.list_total("delivery-manifest-line", "").await, 0);
}

#[tokio::test]
async fn close_short_records_the_shortfall() {
    let server = TestServer::start().await;
    let api = server.org("receiving").await;
    let (_, dock) = shop_and_dock(&api).await;
    let bolt = api.create("item", json!({"name": "Bolt"})).await;
    let nut = api.create("item", json!({"name": "Nut"})).await;
    let d = api.create("delivery", json!({"name": "Steel"})).await;
    let id = d["id"].as_str().unwrap().to_string();
    let l_bolt = manifest_line(&api, &id, &bolt, json!(5), &dock).await;
    let l_nut = manifest_line(&api, &id, &nut, json!(2), &dock).await;
    assert_eq!(l_bolt["quantityShort"], 0.0);
    let r = api
        .post(
            &format!("/delivery/{id}/receive"),
            json!({"lines": [{"manifestLineId": l_bolt["id"], "quantity": 2}]}),
        )
        .await;
    assert_eq!(r.body["status"], "expected", "{r}");
    // quantityShort is the server's: ignored on writes.
    let patched = api
        .patch(
            &format!("/delivery-manifest-line/{}", l_bolt["id"].as_str().unwrap()),
            json!({"quantityShort": 1, "quantityReceived": 5}),
        )
        .await;
    assert_eq!(patched.body["quantityShort"], 0.0, "{patched}");
    assert_eq!(patched.body["quantityReceived"], 2.0, "{patched}");
    // Closing short needs Item.Update, like receiving.
    let (no_item, _) = server
        .key(&api, false, &["Delivery.Update", "Delivery.Read"])
        .await;
    assert_error(
        &no_item
            .post(&format!("/delivery/{id}/close-short"), json!({}))
            .await,
        403,
        "FORBIDDEN",
    );
    let closed = api
        .post(
            &format!("/delivery/{id}/close-short"),
            json!({"reason": "supplier cannot send the rest"}),
        )
        .await;
    assert_eq!(closed.status, 200, "{closed}");
    assert_eq!(closed.body["status"], "received");
    assert_eq!(closed.body["lastReason"], "supplier cannot send the rest");
    // Something but not everything arrived: still partial.
    assert_eq!(closed.body["partial"], true);
    let bolt_line = api
        .read("delivery-manifest-line", l_bolt["id"].as_str().unwrap())
        .await;
    assert_eq!(bolt_line["quantityReceived"], 2.0);
    assert_eq!(bolt_line["quantityShort"], 3.0);
    let nut_line = api
        .read("delivery-manifest-line", l_nut["id"].as_str().unwrap())
        .await;
    assert_eq!(nut_line["quantityReceived"], 0.0);
    assert_eq!(nut_line["quantityShort"], 2.0);
    // Nothing posted for what did not come; stock equals the ledger.
    assert_eq!(
        api.list_total("inventory-transaction", &format!("deliveryId={id}"))
            .await,
        1
    );
    assert_eq!(stock(&api, &bolt, &dock).await, 2.0);
    assert_stock_is_ledger(&api, &[&bolt, &nut], &[&dock]).await;
    // Closed: no more receiving, nor closing again; archivable.
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/receive"), json!({}))
            .await,
        "status",
    );
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/close-short"), json!({}))
            .await,
        "status",
    );
    assert_eq!(
        api.post(&format!("/delivery/{id}/archive"), json!({}))
            .await
            .status,
        200
    );
    assert_validation_names(
        &api.post(&format!("/delivery/{id}/close-short"), json!({}))
            .await,
        "status",
    );
    // Outbound deliveries are not closed short; nothing received yet means cancel still works.
    let out = api
        .post("/delivery/outbound", json!({"name": "Ship"}))
        .await;
    assert_validation_names(
        &api.post(&format!("/delivery/{}/close-short", out.id()), json!({}))
            .await,
        "status",
    );
    let fresh = api.create("delivery", json!({"name": "Later"})).await;
    let fresh_id = fresh["id"].as_str().unwrap();
    assert_eq!(
        api.post(&format!("/delivery/{fresh_id}/cancel"), json!({}))
            .await
            .body["status"],
        "cancelled"
    );
    // Another organization: 404, as if it did not exist.
    let other = server.org("other").await;
    assert_error(
        &other
            .post(&format!("/delivery/{id}/close-short"), json!({}))
            .await,
        404,
        "NOT_FOUND",
    );
}

#[tokio::test]
async fn concurrent_receives_never_pass_the_expected_quantity() {
    let server = TestServer::start().await;
    let api = server.org("receiving").await;
    let (_, dock) = shop_and_dock(&api).await;
    let bolt = api.create("item", json!({"name": "Bolt"})).await;
    let d = api.create("delivery", json!({"name": "Steel"})).await;
    let id = d["id"].as_str().unwrap().to_string();
    let line = manifest_line(&api, &id, &bolt, json!(10), &dock).await;
    // Eight clerks each receive 2 of 10 at once: exactly five succeed.
    let body = json!({"lines": [{"manifestLineId": line["id"], "quantity": 2}]});
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (api, id, body) = (api.clone(), id.clone(), body.clone());
            tokio::spawn(async move { receive(&api, &id, body).await })
        })
        .collect();
    let mut answers = Vec::new();
    for t in tasks {
        answers.push(t.await.unwrap());
    }
    let ok = answers.iter().filter(|r| r.status == 200).count();
    assert_eq!(
        ok,
        5,
        "{}",
        answers
            .iter()
            .map(|r| r.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    for r in answers.iter().filter(|r| r.status != 200) {
        assert_validation_names(r, "status");
    }
    assert_eq!(received(&api, &line).await, 10.0);
    assert_eq!(receipts(&api, &id).await.len(), 5);
    assert_eq!(stock(&api, &bolt, &dock).await, 10.0);
    assert_stock_is_ledger(&api, &[&bolt], &[&dock]).await;
    assert_eq!(api.read("delivery", &id).await["status"], "received");
}
