//! Deliveries (spec 2.10, 3.2, 4.8).

use prodops_tests::*;
use serde_json::Value;

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
    // Partial receipt: stock and manifest move together with the status.
    let r = api
        .post(
            &format!("/delivery/{id}/receive"),
            json!({"lines": [{"manifestLineId": l1["id"], "quantity": 6}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["status"], "received");
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
