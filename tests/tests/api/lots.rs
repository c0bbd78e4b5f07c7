//! Lots and serial numbers (issue 37, first part): an item's `tracking`, the `/lot` resource
//! (its code unique per item and organization, its item an item of the organization tracked
//! by lot or serial, custom properties scoped to lots), and the ledger's `lotId` (the postings
//! that name lots are tested in lot_postings.rs).

use prodops_tests::*;
use serde_json::Value;

const R: &str = "lot";

fn id(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_string()
}

async fn item(api: &Api, name: &str, tracking: &str) -> String {
    id(&api
        .create("item", json!({"name": name, "tracking": tracking}))
        .await)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_items_tracking_defaults_to_none_and_is_read_and_written_through_item() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let bolt = api.create("item", json!({"name": "Bolt"})).await;
    assert_eq!(bolt["tracking"], "none");
    let flour = api
        .create("item", json!({"name": "Flour", "tracking": "lot"}))
        .await;
    assert_eq!(flour["tracking"], "lot");
    let resp = api
        .patch(
            &format!("/item/{}", id(&bolt)),
            json!({"tracking": "serial"}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["tracking"], "serial");
    assert_eq!(api.read("item", &id(&bolt)).await["tracking"], "serial");
    assert_validation_names(
        &api.post("/item", json!({"name": "Nut", "tracking": "batch"}))
            .await,
        "tracking",
    );
    assert_eq!(api.list_ids("item", "tracking=lot").await, [id(&flour)]);
    assert_eq!(api.count("item", "tracking=serial").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lot_is_created_read_listed_changed_and_archived() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let flour = item(&api, "Flour", "lot").await;
    let pump = item(&api, "Pump", "serial").await;
    let lot = api
        .create(
            R,
            json!({"itemId": flour, "code": " L-4471 ", "vendorLotCode": "SUP-9",
                   "manufacturedAt": "2026-05-01T00:00:00Z", "expiresAt": "2026-11-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(lot["code"], "L-4471");
    assert_eq!(lot["itemId"], json!(flour));
    assert_eq!(lot["vendorLotCode"], "SUP-9");
    assert_eq!(lot["expiresAt"], "2026-11-01T00:00:00Z");
    assert_eq!(lot["properties"], json!({}));
    assert_eq!(lot["isArchived"], false);
    assert_eq!(api.read(R, &id(&lot)).await, lot);
    let serial = api
        .create(R, json!({"itemId": pump, "code": "SN-0001"}))
        .await;
    assert_eq!(serial["expiresAt"], Value::Null);

    assert_eq!(
        api.list_ids(R, &format!("itemId={flour}")).await,
        [id(&lot)]
    );
    assert_eq!(api.list_ids(R, "code=SN-0001").await, [id(&serial)]);
    assert_eq!(api.list_ids(R, "search=sup-9").await, [id(&lot)]);
    assert_eq!(api.count(R, "").await, 2);

    let resp = api
        .patch(
            &format!("/{R}/{}", id(&lot)),
            json!({"expiresAt": "2026-12-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["expiresAt"], "2026-12-01T00:00:00Z");
    // The item of a lot never changes.
    let resp = api
        .patch(&format!("/{R}/{}", id(&lot)), json!({"itemId": pump}))
        .await;
    assert_validation_names(&resp, "itemId");

    let resp = api.delete(&format!("/{R}/{}", id(&serial))).await;
    assert!(resp.status == 204 || resp.status == 200, "{resp}");
    assert_eq!(api.read(R, &id(&serial)).await["isArchived"], true);
    assert_eq!(api.list_ids(R, "").await, [id(&lot)]);
    assert_eq!(api.list_ids(R, "isArchived=true").await, [id(&serial)]);

    // Bulk PUT creates and updates like the other resources.
    let ids = api
        .bulk_put(
            R,
            vec![
                json!({"itemId": flour, "code": "L-1"}),
                json!({"itemId": flour, "code": "L-2", "expiresAt": "2027-01-01T00:00:00Z"}),
                json!({"id": id(&lot), "itemId": flour, "code": "L-4471", "vendorLotCode": "SUP-10"}),
            ],
        )
        .await;
    assert_eq!(ids.len(), 3);
    assert_eq!(api.read(R, &id(&lot)).await["vendorLotCode"], "SUP-10");
    assert_eq!(api.count(R, &format!("itemId={flour}")).await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_is_unique_per_item_and_organization() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let other = server.org("Other").await;
    let flour = item(&api, "Flour", "lot").await;
    let sugar = item(&api, "Sugar", "lot").await;
    let theirs = item(&other, "Flour", "lot").await;
    let first = api.create(R, json!({"itemId": flour, "code": "L-1"})).await;

    let resp = api
        .post(&format!("/{R}"), json!({"itemId": flour, "code": " L-1 "}))
        .await;
    assert_error(&resp, 409, "CONFLICT");
    // Another item, another organization, another case: other codes.
    api.create(R, json!({"itemId": sugar, "code": "L-1"})).await;
    other
        .create(R, json!({"itemId": theirs, "code": "L-1"}))
        .await;
    api.create(R, json!({"itemId": flour, "code": "l-1"})).await;
    // An archived lot keeps its code: a code names one lot for good.
    api.delete(&format!("/{R}/{}", id(&first))).await;
    let resp = api
        .post(&format!("/{R}"), json!({"itemId": flour, "code": "L-1"}))
        .await;
    assert_error(&resp, 409, "CONFLICT");
    // Renaming onto a taken code, and a bulk PUT clashing inside itself, are refused whole.
    let second = api.create(R, json!({"itemId": flour, "code": "L-2"})).await;
    let resp = api
        .patch(&format!("/{R}/{}", id(&second)), json!({"code": "l-1"}))
        .await;
    assert_error(&resp, 409, "CONFLICT");
    let before = api.count(R, "").await;
    let resp = api
        .put(
            &format!("/{R}/bulk"),
            json!([{"itemId": flour, "code": "L-3"}, {"itemId": flour, "code": "L-3"}]),
        )
        .await;
    assert_error(&resp, 409, "CONFLICT");
    assert_eq!(api.count(R, "").await, before, "all or nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_lots_are_refused_with_400_or_404() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let other = server.org("Other").await;
    let flour = item(&api, "Flour", "lot").await;
    let bolt = item(&api, "Bolt", "none").await;
    let theirs = item(&other, "Flour", "lot").await;
    let post = |body: Value| api.post("/lot", body);

    // Another organization's item is a missing one.
    let resp = post(json!({"itemId": theirs, "code": "L-1"})).await;
    assert_validation_names(&resp, "itemId");
    assert!(resp.text.contains("no item"), "{resp}");
    let resp = post(json!({"itemId": "00000000-0000-4000-8000-000000000001", "code": "L-1"})).await;
    assert_validation_names(&resp, "itemId");
    // An untracked item has no lots.
    let resp = post(json!({"itemId": bolt, "code": "L-1"})).await;
    assert_validation_names(&resp, "itemId");
    assert!(resp.text.contains("not tracked"), "{resp}");
    assert_validation_names(&post(json!({"itemId": "x", "code": "L-1"})).await, "itemId");
    assert_validation_names(&post(json!({"code": "L-1"})).await, "itemId");
    // The code: blank, 100 KB (an indexed field holds 256 characters), NUL.
    assert_validation_names(&post(json!({"itemId": flour, "code": "  "})).await, "code");
    let long = "L".repeat(100 * 1024);
    assert_validation_names(&post(json!({"itemId": flour, "code": long})).await, "code");
    assert_validation_names(
        &post(json!({"itemId": flour, "code": "L\u{0}1"})).await,
        "code",
    );
    let resp = api
        .post_raw(
            "/lot",
            format!(r#"{{"itemId": "{flour}", "code": "L\u0000"}}"#),
        )
        .await;
    assert_error(&resp, 400, "VALIDATION_ERROR");
    let longest = "L".repeat(256);
    api.create(R, json!({"itemId": flour, "code": longest}))
        .await;
    // Dates out of order, unknown fields.
    let resp = post(json!({"itemId": flour, "code": "L-2",
                           "manufacturedAt": "2026-05-02T00:00:00Z", "expiresAt": "2026-05-01T00:00:00Z"}))
    .await;
    assert_validation_names(&resp, "expiresAt");
    assert_validation_names(
        &post(json!({"itemId": flour, "code": "L-3", "quantity": 5})).await,
        "quantity",
    );
    assert_eq!(
        api.total(R).await,
        1,
        "only the 256-character code was written"
    );

    // Another organization's lot is not found, for reads and writes alike.
    let mine = api.create(R, json!({"itemId": flour, "code": "L-4"})).await;
    let path = format!("/{R}/{}", id(&mine));
    assert_error(&other.get(&path).await, 404, "NOT_FOUND");
    assert_error(
        &other.patch(&path, json!({"code": "X"})).await,
        404,
        "NOT_FOUND",
    );
    assert_error(&other.delete(&path).await, 404, "NOT_FOUND");
    assert_eq!(api.read(R, &id(&mine)).await["code"], "L-4");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lots_need_the_lot_permission() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let flour = item(&api, "Flour", "lot").await;
    let (items_only, _) = server.key(&api, false, &["Item.Read", "Item.Update"]).await;
    assert_error(
        &items_only
            .post("/lot", json!({"itemId": flour, "code": "L-1"}))
            .await,
        403,
        "FORBIDDEN",
    );
    let (lots, _) = server.key(&api, false, &["Lot.Create", "Lot.Read"]).await;
    let lot = lots
        .create(R, json!({"itemId": flour, "code": "L-1"}))
        .await;
    assert_eq!(lots.read(R, &id(&lot)).await["code"], "L-1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_properties_scoped_to_lots_work_on_lots_as_on_orders() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let flour = item(&api, "Flour", "lot").await;
    let origin = api
        .create(
            "custom-property",
            json!({"key": "origin", "name": "Origin", "dataType": "select",
                   "options": ["Chile", "Peru"], "allowsAdHocOptions": true, "deliverableTypes": ["lot"]}),
        )
        .await;
    assert_eq!(origin["deliverableTypes"], json!(["lot"]));
    api.create(
        "custom-property",
        json!({"key": "moisture", "name": "Moisture", "dataType": "number", "deliverableTypes": ["lot"]}),
    )
    .await;
    api.create(
        "custom-property",
        json!({"key": "width", "name": "Width", "dataType": "number"}),
    )
    .await;
    assert_validation_names(
        &api.post(
            "/custom-property",
            json!({"key": "both", "name": "Both", "dataType": "text", "deliverableTypes": ["order", "lot"]}),
        )
        .await,
        "deliverableTypes",
    );

    // Values take the definition's spelling; unknown keys, wrong types and order-scoped keys
    // are refused naming the property.
    let lot = api
        .create(
            R,
            json!({"itemId": flour, "code": "L-1", "properties": {"ORIGIN": "chile", "moisture": 12.5}}),
        )
        .await;
    assert_eq!(
        lot["properties"],
        json!({"origin": "Chile", "moisture": 12.5})
    );
    let post = |props: Value| {
        api.post(
            "/lot",
            json!({"itemId": flour, "code": "L-2", "properties": props}),
        )
    };
    assert_validation_names(&post(json!({"bogus": 1})).await, "bogus");
    assert_validation_names(&post(json!({"moisture": "wet"})).await, "moisture");
    assert_validation_names(&post(json!({"width": 3})).await, "width");
    // A lot-scoped key has no place on an order.
    let resp = api
        .post(
            "/deliverable",
            json!({"name": "Order 1", "type": "order", "data": {"properties": {"origin": "Chile"}}}),
        )
        .await;
    assert_validation_names(&resp, "origin");

    // A PATCH merges the keys it names; a cleared key goes; an ad-hoc option joins its
    // definition.
    let path = format!("/{R}/{}", id(&lot));
    let resp = api
        .patch(
            &path,
            json!({"properties": {"origin": "Bolivia", "moisture": null}}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["properties"], json!({"origin": "Bolivia"}));
    let def = api.read("custom-property", &id(&origin)).await;
    assert_eq!(def["options"], json!(["Chile", "Peru", "Bolivia"]));
    let resp = api.patch(&path, json!({"vendorLotCode": "V-1"})).await;
    assert_eq!(
        resp.body["properties"],
        json!({"origin": "Bolivia"}),
        "untouched"
    );
    let resp = api.patch(&path, json!({"properties": {}})).await;
    assert_eq!(
        resp.body["properties"],
        json!({}),
        "an empty object clears them all"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledger_keeps_a_postings_lot_id_and_ignores_reverses_id_in_a_body() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let shop = id(&api.create("shop", json!({"name": "Main"})).await);
    let rack = id(&api
        .create("location", json!({"name": "Rack", "shopId": shop}))
        .await);
    let flour = item(&api, "Flour", "lot").await;
    let lot = api.create(R, json!({"itemId": flour, "code": "L-1"})).await;
    let resp = api
        .post(
            "/inventory-transaction",
            json!({"itemId": flour, "type": "adjust", "quantity": 5, "toLocationId": rack,
                   "lotId": id(&lot), "reversesId": id(&lot)}),
        )
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.body["lotId"], json!(id(&lot)));
    assert_eq!(resp.body["reversesId"], Value::Null);
}
