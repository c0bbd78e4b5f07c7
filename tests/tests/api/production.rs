//! Production outputs and BOM lines (spec 2.2, 2.3) and the production actions (spec 4.4).

use prodops_tests::*;
use reqwest::Method;
use serde_json::Value;

use crate::inventory_support::*;

/// A floor plus a root order (quantity 4) with a phase, and a root route.
pub struct Plant {
    pub floor: Floor,
    pub order: String,
    pub phase: String,
    pub route: String,
}

impl Plant {
    pub async fn new(api: Api) -> Plant {
        let floor = Floor::new(api).await;
        let api = &floor.api;
        let order = api
            .create(
                "deliverable",
                json!({"name": "Order 1", "type": "order", "quantity": 4}),
            )
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let phase = api
            .create(
                "deliverable",
                json!({"name": "Frame", "type": "phase", "parentId": order}),
            )
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        let route = api
            .create("deliverable", json!({"name": "Route A", "type": "route"}))
            .await["id"]
            .as_str()
            .unwrap()
            .to_string();
        Plant {
            floor,
            order,
            phase,
            route,
        }
    }

    pub fn api(&self) -> &Api {
        &self.floor.api
    }

    pub async fn action(&self, path: &str, body: Value) -> Resp {
        self.api().post(path, body).await
    }

    /// POST an action and expect 200 `{value}`; returns the value.
    pub async fn ok(&self, path: &str, body: Value) -> Value {
        let resp = self.action(path, body).await;
        assert_eq!(resp.status, 200, "{resp}");
        resp.body["value"].clone()
    }
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn production_output_rules() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Prod").await).await;
    let api = plant.api();
    let item = plant.floor.item("Widget", None).await;
    let post = |body: Value| async move { api.post("/production-output", body).await };

    // Rule 1: itemId and exactly one owner.
    assert_validation_names(
        &post(json!({"orderDeliverableId": plant.order})).await,
        "itemId",
    );
    assert_error_details(
        &post(json!({"itemId": item})).await,
        400,
        "VALIDATION_ERROR",
    );
    assert_error_details(&post(json!({"itemId": item, "orderDeliverableId": plant.order, "routeDeliverableId": plant.route, "producedPerUnit": 1})).await, 400, "VALIDATION_ERROR");
    // Rule 2: the root route or order itself.
    assert_validation_names(
        &post(json!({"itemId": item, "orderDeliverableId": plant.phase})).await,
        "orderDeliverableId",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "orderDeliverableId": plant.route})).await,
        "orderDeliverableId",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "routeDeliverableId": plant.order, "producedPerUnit": 1}))
            .await,
        "routeDeliverableId",
    );
    let nested_route = api
        .create(
            "deliverable",
            json!({"name": "Sub", "type": "route", "parentId": plant.route}),
        )
        .await;
    assert_validation_names(
        &post(
            json!({"itemId": item, "routeDeliverableId": id(&nested_route), "producedPerUnit": 1}),
        )
        .await,
        "routeDeliverableId",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "orderDeliverableId": uuid::Uuid::new_v4()})).await,
        "orderDeliverableId",
    );
    // Rule 3: a route declaration needs a positive producedPerUnit.
    assert_validation_names(
        &post(json!({"itemId": item, "routeDeliverableId": plant.route, "quantity": 5})).await,
        "producedPerUnit",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "routeDeliverableId": plant.route, "producedPerUnit": 0}))
            .await,
        "producedPerUnit",
    );
    // Rule 4: an order declaration may omit quantity; an explicit one is positive.
    assert_validation_names(
        &post(json!({"itemId": item, "orderDeliverableId": plant.order, "quantity": -1})).await,
        "quantity",
    );
    let decl = api
        .create(
            "production-output",
            json!({"itemId": item, "orderDeliverableId": plant.order}),
        )
        .await;
    // Names and units default from the item; quantityActual is server-kept.
    assert_eq!(decl["name"], "Widget");
    assert_eq!(decl["unitMeasureId"], plant.floor.unit.as_str());
    assert_eq!(decl["quantityActual"], 0.0);
    assert_eq!(decl["source"], "manual");
    let route_decl = api.create("production-output", json!({"itemId": item, "routeDeliverableId": plant.route, "producedPerUnit": 2, "name": "Own name", "quantityActual": 9})).await;
    assert_eq!(route_decl["name"], "Own name");
    assert_eq!(
        route_decl["quantityActual"], 0.0,
        "quantityActual is read-only"
    );
    assert_validation_names(&post(json!({"itemId": item, "orderDeliverableId": plant.order, "locationId": uuid::Uuid::new_v4()})).await, "locationId");
    // Rule 5: no stock posted.
    assert_eq!(api.list_total("inventory-transaction", "").await, 0);
    assert_eq!(api.list("stock", "").await.len(), 0);
    // Another organization's item or order is unknown.
    let other = server.org("Other").await;
    let theirs = other.create("item", json!({"name": "Theirs"})).await;
    assert_validation_names(
        &post(json!({"itemId": id(&theirs), "orderDeliverableId": plant.order})).await,
        "itemId",
    );
    assert_validation_names(
        &other
            .post(
                "/production-output",
                json!({"itemId": id(&theirs), "orderDeliverableId": plant.order}),
            )
            .await,
        "orderDeliverableId",
    );
    // PATCH keeps the rules and quantityActual; DELETE archives, PATCH restores.
    let path = format!("/production-output/{}", id(&decl));
    assert_validation_names(
        &api.patch(&path, json!({"orderDeliverableId": plant.phase}))
            .await,
        "orderDeliverableId",
    );
    let patched = api
        .patch(&path, json!({"quantity": 3, "quantityActual": 7}))
        .await;
    assert_eq!(patched.status, 200, "{patched}");
    assert_eq!(
        (
            patched.body["quantity"].as_f64(),
            patched.body["quantityActual"].as_f64()
        ),
        (Some(3.0), Some(0.0))
    );
    assert_eq!(api.delete(&path).await.status, 204);
    assert_eq!(
        api.read("production-output", &id(&decl)).await["isArchived"],
        true
    );
    assert_eq!(
        api.patch(&path, json!({"isArchived": false})).await.status,
        200
    );
}

#[tokio::test]
async fn bom_line_rules() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Bom").await).await;
    let api = plant.api();
    let item = plant.floor.item("Bolt", None).await;
    let project = id(&api.create("project", json!({"name": "Tower"})).await);
    let post = |body: Value| async move { api.post("/bom-line", body).await };

    // Rule 1.
    assert_error_details(
        &post(json!({"itemId": item, "quantity": 1})).await,
        400,
        "VALIDATION_ERROR",
    );
    assert_error_details(&post(json!({"itemId": item, "projectId": project, "orderDeliverableId": plant.order, "quantity": 1})).await, 400, "VALIDATION_ERROR");
    assert_validation_names(
        &post(json!({"orderDeliverableId": plant.order, "quantity": 1})).await,
        "itemId",
    );
    // Rule 2: root owners only; placements are not owners.
    assert_validation_names(
        &post(json!({"itemId": item, "orderDeliverableId": plant.phase, "quantity": 1})).await,
        "orderDeliverableId",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "routeDeliverableId": plant.order, "quantity": 1})).await,
        "routeDeliverableId",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "projectId": uuid::Uuid::new_v4(), "quantity": 1})).await,
        "projectId",
    );
    // Rule 3: route lines need outputPerUnit or quantity; order and project lines a positive quantity.
    assert_error_details(
        &post(json!({"itemId": item, "routeDeliverableId": plant.route})).await,
        400,
        "VALIDATION_ERROR",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "orderDeliverableId": plant.order})).await,
        "quantity",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "projectId": project, "quantity": 0})).await,
        "quantity",
    );
    // Rules 4-6: modes and defaults.
    let route_ratio = api
        .create(
            "bom-line",
            json!({"itemId": item, "routeDeliverableId": plant.route, "outputPerUnit": 2}),
        )
        .await;
    assert_eq!(
        (
            route_ratio["mode"].as_str(),
            route_ratio["scaling"].as_str()
        ),
        (Some("ratio"), Some("per_unit"))
    );
    let route_total = api
        .create(
            "bom-line",
            json!({"itemId": item, "routeDeliverableId": plant.route, "quantity": 3}),
        )
        .await;
    assert_eq!(
        (
            route_total["mode"].as_str(),
            route_total["scaling"].as_str()
        ),
        (Some("total"), Some("per_unit"))
    );
    let order_line = api
        .create(
            "bom-line",
            json!({"itemId": item, "orderDeliverableId": plant.order, "quantity": 5}),
        )
        .await;
    assert_eq!(
        (order_line["mode"].as_str(), order_line["scaling"].as_str()),
        (Some("total"), Some("per_order"))
    );
    assert_eq!(order_line["name"], "Bolt");
    assert_eq!(order_line["unitMeasureId"], plant.floor.unit.as_str());
    let project_line = api
        .create(
            "bom-line",
            json!({"itemId": item, "projectId": project, "quantity": 5, "poNumber": "PO-7"}),
        )
        .await;
    assert_eq!(project_line["scaling"], "per_order");
    assert_validation_names(&post(json!({"itemId": item, "routeDeliverableId": plant.route, "mode": "ratio", "quantity": 3})).await, "outputPerUnit");
    // Rule 7.
    assert_validation_names(&post(json!({"itemId": item, "routeDeliverableId": plant.route, "mode": "ratio", "scaling": "per_order", "outputPerUnit": 1})).await, "scaling");
    assert_validation_names(
        &post(json!({"itemId": item, "projectId": project, "scaling": "per_unit", "quantity": 1}))
            .await,
        "scaling",
    );
    // Search columns.
    assert_eq!(api.list("bom-line", "search=po-7").await.len(), 1);
    assert_eq!(api.list_total("inventory-transaction", "").await, 0);
}

#[tokio::test]
async fn produce_rules() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Produce").await).await;
    let api = plant.api();
    let f = &plant.floor;
    let widget = f.item("Widget", None).await;
    let gadget = f.item("Gadget", Some(&f.c)).await;
    let steel = f.item("Steel", Some(&f.a)).await;
    f.adjust(&steel, &f.a, 100.0).await;
    api.create(
        "bom-line",
        json!({"itemId": steel, "orderDeliverableId": plant.order, "quantity": 10}),
    )
    .await;

    // No declarations: items must be named (rule 3), then ad-hoc declarations appear.
    let resp = plant
        .action(
            "/production/produce",
            json!({"deliverableId": plant.order, "outputLocationId": f.b}),
        )
        .await;
    assert_validation_names(&resp, "outputs");
    // Empty outputs (rule 5).
    let resp = plant
        .action(
            "/production/produce",
            json!({"deliverableId": plant.order, "outputs": [], "outputLocationId": f.b}),
        )
        .await;
    assert_validation_names(&resp, "outputs");
    let value = plant.ok("/production/produce", json!({"deliverableId": plant.phase, "outputItemId": widget, "quantityProduced": 3, "outputLocationId": f.b})).await;
    assert_eq!(value["transactions"].as_array().unwrap().len(), 1);
    let tx = &value["transactions"][0];
    assert_eq!(
        (tx["type"].as_str(), tx["quantity"].as_f64()),
        (Some("produce"), Some(3.0))
    );
    assert_eq!(
        tx["deliverableId"],
        plant.phase.as_str(),
        "stamped with the node"
    );
    assert_eq!(tx["toLocationId"], f.b.as_str());
    let adhoc = &value["outputs"][0];
    assert_eq!(
        (adhoc["source"].as_str(), adhoc["quantityActual"].as_f64()),
        (Some("adhoc"), Some(3.0))
    );
    assert_eq!(adhoc["orderDeliverableId"], plant.order.as_str());
    assert_eq!(f.on_hand(&widget, &f.b).await, 3.0);

    // Now the order has declarations: outputs may name only declared items (rule 4).
    let resp = plant.action("/production/produce", json!({"deliverableId": plant.order, "outputs": [{"itemId": gadget}], "outputLocationId": f.b})).await;
    assert_validation_names(&resp, "itemId");
    api.create(
        "production-output",
        json!({"itemId": gadget, "orderDeliverableId": plant.order, "producedPerUnit": 2}),
    )
    .await;
    let planned = api.create("production-output", json!({"itemId": steel, "orderDeliverableId": plant.order, "quantity": 5, "locationId": f.a})).await;
    // Rule 2: defaults: producedPerUnit x run, remaining plan; the ad-hoc one has none. Gadget has
    // no location in the request or declaration: its item default (c) is used.
    let value = plant
        .ok(
            "/production/produce",
            json!({"deliverableId": plant.order, "quantityProduced": 2}),
        )
        .await;
    let posted: Vec<(String, f64, String)> = value["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["itemId"].as_str().unwrap().to_string(),
                t["quantity"].as_f64().unwrap(),
                t["toLocationId"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        posted,
        vec![
            (gadget.clone(), 4.0, f.c.clone()),
            (steel.clone(), 5.0, f.a.clone())
        ]
    );
    // Rule 1: producing does not consume: the BOM line and material stock are untouched.
    assert_eq!(api.list("bom-line", "").await[0]["quantityActual"], 0.0);
    assert_eq!(f.on_hand(&steel, &f.a).await, 105.0);
    // The remaining plan is reached: a second default run posts only the per-unit output.
    let value = plant
        .ok("/production/produce", json!({"deliverableId": plant.order}))
        .await;
    assert_eq!(value["transactions"].as_array().unwrap().len(), 1);
    assert_eq!(
        api.read("production-output", &id(&planned)).await["quantityActual"],
        5.0
    );
    // An explicit output with a quantity and its own location.
    let value = plant.ok("/production/produce", json!({"deliverableId": plant.order, "outputs": [{"itemId": steel, "quantity": 1.5, "locationId": f.b}]})).await;
    assert_eq!(value["outputs"][0]["quantityActual"], 6.5);
    // No location anywhere: 400 naming outputLocationId.
    let resp = plant
        .action(
            "/production/produce",
            json!({"deliverableId": plant.order, "outputs": [{"itemId": widget, "quantity": 1}]}),
        )
        .await;
    assert_validation_names(&resp, "outputLocationId");
    // Not under an order, unknown node, bad fields.
    assert_validation_names(
        &plant
            .action(
                "/production/produce",
                json!({"deliverableId": plant.route, "outputItemId": widget}),
            )
            .await,
        "deliverableId",
    );
    assert_validation_names(
        &plant
            .action(
                "/production/produce",
                json!({"deliverableId": uuid::Uuid::new_v4(), "outputItemId": widget}),
            )
            .await,
        "deliverableId",
    );
    assert_validation_names(
        &plant
            .action(
                "/production/produce",
                json!({"deliverableId": plant.order, "quantityProduced": 0}),
            )
            .await,
        "quantityProduced",
    );
    assert_validation_names(
        &plant
            .action(
                "/production/produce",
                json!({"deliverableId": plant.order, "bogus": 1}),
            )
            .await,
        "bogus",
    );
    assert_quantity_actual_is_ledger(&plant).await;
    assert_stock_is_ledger(api).await;
}

/// Every declaration's and line's quantityActual equals the sum of its entries.
pub async fn assert_quantity_actual_is_ledger(plant: &Plant) {
    let api = plant.api();
    let resp = api
        .get(&format!(
            "/production/order/{}/entries?pageSize=10000",
            plant.order
        ))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let entries = resp.body["values"].as_array().unwrap().clone();
    assert_eq!(resp.body["totalCount"].as_u64(), Some(entries.len() as u64));
    for (resource, key) in [
        ("production-output", "productionOutputId"),
        ("bom-line", "bomLineId"),
    ] {
        for record in api
            .list(
                resource,
                &format!("orderDeliverableId={}&pageSize=10000", plant.order),
            )
            .await
        {
            let sum: f64 = entries
                .iter()
                .filter(|e| e[key] == record["id"])
                .map(|e| e["quantity"].as_f64().unwrap())
                .sum();
            let actual = record["quantityActual"].as_f64().unwrap();
            assert!(
                (sum - actual).abs() < 1e-6,
                "{resource} {}: actual {actual}, entries {sum}",
                record["id"]
            );
        }
    }
}

#[tokio::test]
async fn consume_rules() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Consume").await).await;
    let api = plant.api();
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let paint = f.item("Paint", None).await;
    let stray = f.item("Stray", Some(&f.a)).await;
    f.adjust(&steel, &f.a, 100.0).await;
    f.adjust(&paint, &f.b, 10.0).await;
    // Steel: 2.5 per unit of an order of 4 = 10; paint: 3 per order.
    let steel_line = api.create("bom-line", json!({"itemId": steel, "orderDeliverableId": plant.order, "mode": "ratio", "outputPerUnit": 2.5, "quantity": 10})).await;
    let paint_line = api
        .create(
            "bom-line",
            json!({"itemId": paint, "orderDeliverableId": plant.order, "quantity": 3}),
        )
        .await;
    api.create(
        "production-output",
        json!({"itemId": stray, "orderDeliverableId": plant.order, "quantity": 1}),
    )
    .await;

    // Rule 7: paint has no default location and no fromLocationId is given.
    let resp = plant
        .action("/production/consume", json!({"deliverableId": plant.order}))
        .await;
    assert_validation_names(&resp, "fromLocationId");
    assert_eq!(f.on_hand(&steel, &f.a).await, 100.0, "nothing written");
    // Rule 6: empty lines refused.
    assert_validation_names(
        &plant
            .action(
                "/production/consume",
                json!({"deliverableId": plant.order, "lines": []}),
            )
            .await,
        "lines",
    );
    // Overrides: the named line only; items outside the BOM ignored; location per entry.
    let value = plant
        .ok(
            "/production/consume",
            json!({"deliverableId": plant.order, "lines": [
                {"itemId": paint, "quantity": 1, "fromLocationId": f.b},
                {"itemId": stray, "quantity": 4}
            ]}),
        )
        .await;
    assert_eq!(value["transactions"].as_array().unwrap().len(), 1);
    assert_eq!(value["transactions"][0]["type"], "consume");
    assert_eq!(value["transactions"][0]["fromLocationId"], f.b.as_str());
    assert_eq!(value["ignored"][0]["index"], 1);
    assert_eq!(value["lines"][0]["quantityActual"], 1.0);
    assert_eq!(f.on_hand(&paint, &f.b).await, 9.0);
    assert_eq!(f.on_hand(&stray, &f.a).await, 0.0);
    // Full recipe with fromLocationId for the paint: the whole recipe again (steel 10, paint 3).
    let resp = plant
        .action(
            "/production/consume",
            json!({"deliverableId": plant.order, "fromLocationId": f.b}),
        )
        .await;
    assert_error(&resp, 409, "CONFLICT"); // steel is at a, not b: the policy refuses, nothing written
    assert_eq!(
        api.read("bom-line", &id(&paint_line)).await["quantityActual"],
        1.0
    );
    let value = plant.ok("/production/consume", json!({"deliverableId": plant.order, "lines": [
        {"bomLineId": id(&steel_line), "quantity": 10}, {"bomLineId": id(&paint_line), "quantity": 2, "fromLocationId": f.b}
    ]})).await;
    assert_eq!(value["transactions"].as_array().unwrap().len(), 2);
    assert_eq!(f.on_hand(&steel, &f.a).await, 90.0);
    // No line is placed on the phase: a consume there draws nothing and is refused.
    assert_error_details(
        &plant
            .action("/production/consume", json!({"deliverableId": plant.phase}))
            .await,
        400,
        "VALIDATION_ERROR",
    );
    // Rule 1: consuming did not produce.
    assert_eq!(
        api.list("production-output", "").await[0]["quantityActual"],
        0.0
    );
    // Insufficient stock: 409, nothing written.
    let resp = plant
        .action(
            "/production/consume",
            json!({"deliverableId": plant.order, "lines": [{"itemId": steel, "quantity": 1000}]}),
        )
        .await;
    assert_error(&resp, 409, "CONFLICT");
    assert_eq!(
        api.read("bom-line", &id(&steel_line)).await["quantityActual"],
        10.0
    );

    // Adjust-actual: corrections post adjust rows and move quantityActual.
    assert_validation_names(&plant.action("/production/adjust-actual", json!({"stampDeliverableId": plant.order, "kind": "consume", "itemId": steel, "delta": 0})).await, "delta");
    let value = plant.ok("/production/adjust-actual", json!({"stampDeliverableId": plant.phase, "kind": "consume", "itemId": steel, "delta": 1.5})).await;
    assert_eq!(value["line"]["quantityActual"], 11.5);
    assert_eq!(
        (
            value["transaction"]["type"].as_str(),
            value["transaction"]["quantity"].as_f64()
        ),
        (Some("adjust"), Some(-1.5))
    );
    assert_eq!(f.on_hand(&steel, &f.a).await, 88.5);
    let value = plant.ok("/production/adjust-actual", json!({"stampDeliverableId": plant.order, "kind": "consume", "itemId": steel, "delta": -0.5})).await;
    assert_eq!(value["line"]["quantityActual"], 11.0);
    assert_validation_names(&plant.action("/production/adjust-actual", json!({"stampDeliverableId": plant.order, "kind": "consume", "itemId": steel, "delta": -20})).await, "delta");
    assert_validation_names(&plant.action("/production/adjust-actual", json!({"stampDeliverableId": plant.order, "kind": "consume", "itemId": stray, "delta": 1})).await, "itemId");
    assert_validation_names(&plant.action("/production/adjust-actual", json!({"stampDeliverableId": plant.order, "kind": "scrap", "itemId": steel, "delta": 1})).await, "kind");
    // Produce corrections on a declaration never produced: the item's default location.
    let value = plant.ok("/production/adjust-actual", json!({"stampDeliverableId": plant.order, "kind": "produce", "itemId": stray, "delta": 2})).await;
    assert_eq!(value["output"]["quantityActual"], 2.0);
    assert_eq!(f.on_hand(&stray, &f.a).await, 2.0);

    // Status and entries.
    let status = api
        .get(&format!("/production/order/{}/status", plant.order))
        .await;
    assert_eq!(status.status, 200, "{status}");
    let s = &status.body;
    assert_eq!(s["orderId"], plant.order.as_str());
    assert_eq!(s["orderQuantity"], 4.0);
    assert_eq!(s["state"], "complete");
    assert_eq!(s["materials"][0]["planned"], 10.0);
    assert_eq!(s["materials"][0]["actual"], 11.0);
    assert_eq!(s["materials"][0]["remaining"], 0.0);
    assert_eq!(s["outputs"][0]["planned"], 1.0);
    assert_eq!(s["entryCount"], 6);
    assert_quantity_actual_is_ledger(&plant).await;
    assert_stock_is_ledger(api).await;
    assert_error(
        &api.get(&format!("/production/order/{}/status", plant.phase))
            .await,
        404,
        "NOT_FOUND",
    );
    assert_error(
        &api.get(&format!(
            "/production/order/{}/entries",
            uuid::Uuid::new_v4()
        ))
        .await,
        404,
        "NOT_FOUND",
    );
    let page = api
        .get(&format!(
            "/production/order/{}/entries?pageSize=2&page=2",
            plant.order
        ))
        .await;
    assert_eq!(page.body["values"].as_array().unwrap().len(), 2);
    assert_eq!(page.body["totalCount"], 6);
    // Another organization sees nothing of it.
    let other = server.org("Other").await;
    assert_error(
        &other
            .get(&format!("/production/order/{}/status", plant.order))
            .await,
        404,
        "NOT_FOUND",
    );
    assert_validation_names(
        &other
            .post("/production/consume", json!({"deliverableId": plant.order}))
            .await,
        "deliverableId",
    );
    // Item update permission.
    let (reader, _) = server.key(api, false, &["Item.Read", "BomLine.Read"]).await;
    assert_error(
        &reader
            .post("/production/consume", json!({"deliverableId": plant.order}))
            .await,
        403,
        "FORBIDDEN",
    );
    assert_error(
        &reader
            .get(&format!("/production/order/{}/status", plant.order))
            .await,
        403,
        "FORBIDDEN",
    );
}

#[tokio::test]
async fn produce_and_consume_retries_post_once() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Retry").await).await;
    let api = plant.api();
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let widget = f.item("Widget", Some(&f.b)).await;
    f.adjust(&steel, &f.a, 50.0).await;
    api.create(
        "bom-line",
        json!({"itemId": steel, "orderDeliverableId": plant.order, "quantity": 10}),
    )
    .await;
    api.create(
        "production-output",
        json!({"itemId": widget, "orderDeliverableId": plant.order, "producedPerUnit": 1}),
    )
    .await;
    for (path, body) in [
        (
            "/production/produce",
            json!({"deliverableId": plant.order, "quantityProduced": 2}),
        ),
        (
            "/production/consume",
            json!({"deliverableId": plant.order, "lines": [{"itemId": steel, "quantity": 3}]}),
        ),
    ] {
        let key = unique();
        let first = api
            .req(Method::POST, path)
            .json(body.clone())
            .idempotency_key(&key)
            .send()
            .await;
        assert_eq!(first.status, 200, "{first}");
        let again = api
            .req(Method::POST, path)
            .json(body.clone())
            .idempotency_key(&key)
            .send()
            .await;
        assert_eq!(again.status, 200, "{again}");
        assert_eq!(again.body, first.body, "the first answer, replayed");
        assert_eq!(again.header("idempotent-replayed"), Some("true"));
        let mut other = body.clone();
        other["deliverableId"] = json!(plant.phase);
        let conflict = api
            .req(Method::POST, path)
            .json(other)
            .idempotency_key(&key)
            .send()
            .await;
        assert_error(&conflict, 409, "CONFLICT");
    }
    assert_eq!(f.on_hand(&widget, &f.b).await, 2.0, "produced once");
    assert_eq!(f.on_hand(&steel, &f.a).await, 47.0, "consumed once");
    assert_eq!(assert_stock_is_ledger(api).await, 3);
    assert_quantity_actual_is_ledger(&plant).await;
}

#[tokio::test]
async fn openapi_lists_the_inventory_and_production_endpoints() {
    let server = TestServer::start().await;
    let doc = server.anonymous().get("/openapi.json").await.body;
    for (path, method) in [
        ("/api/v2/inventory-transaction", "post"),
        ("/api/v2/inventory-transaction", "get"),
        ("/api/v2/stock", "get"),
        ("/api/v2/production/produce", "post"),
        ("/api/v2/production/consume", "post"),
        ("/api/v2/production/adjust-actual", "post"),
        ("/api/v2/production/order/{id}/status", "get"),
        ("/api/v2/production/order/{id}/entries", "get"),
        ("/api/v2/bom-line/order/{id}/prepopulate", "post"),
        ("/api/v2/bom-line/order/{id}/allocate", "post"),
        ("/api/v2/bom-line/project/{id}/allocate", "post"),
        ("/api/v2/bom-line/demand-rollup", "get"),
        ("/api/v2/bom-line/project/{id}/materials-rollup", "get"),
    ] {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} in the OpenAPI document"
        );
    }
    for schema in [
        "ProduceRequest",
        "OutputEntry",
        "LineEntry",
        "OrderStatus",
        "DemandRow",
        "Stock",
    ] {
        assert!(
            doc["components"]["schemas"][schema].is_object(),
            "schema {schema}"
        );
    }
    // No 405 for an endpoint the document lists.
    assert!(doc["paths"]["/api/v2/inventory-transaction/{id}"]["patch"].is_null());
}

/// Concurrent produce, consume, adjust-actual and PATCH calls on one order (through two servers
/// on PostgreSQL): afterwards every quantityActual equals its entries and stock equals the ledger.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_actions_keep_actuals_true() {
    let server = TestServer::start_with(|c| c.rate_limit = 1_000_000).await;
    let replica = if on_postgres() {
        Some(server.another_with(|c| c.rate_limit = 1_000_000).await)
    } else {
        None
    };
    let plant = Plant::new(server.org("Busy").await).await;
    let api = plant.api().clone();
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let widget = f.item("Widget", Some(&f.b)).await;
    f.adjust(&steel, &f.a, 60.0).await;
    let line = api
        .create(
            "bom-line",
            json!({"itemId": steel, "orderDeliverableId": plant.order, "quantity": 1000, "placedOnDeliverableId": plant.phase}),
        )
        .await;
    let decl = api
        .create(
            "production-output",
            json!({"itemId": widget, "orderDeliverableId": plant.order, "producedPerUnit": 1}),
        )
        .await;
    let mut tasks = Vec::new();
    for client in 0..8usize {
        let api = match &replica {
            Some(r) if client % 2 == 1 => api.on(r),
            _ => api.clone(),
        };
        let (order, phase, steel) = (plant.order.clone(), plant.phase.clone(), steel.clone());
        let (line_id, decl_id) = (id(&line), id(&decl));
        tasks.push(tokio::spawn(async move {
            for i in 0..15usize {
                let resp = match (client + i) % 4 {
                    0 => api.post("/production/produce", json!({"deliverableId": order})).await,
                    1 => api.post("/production/consume", json!({"deliverableId": phase, "lines": [{"itemId": steel, "quantity": 1}]})).await,
                    2 => api.post("/production/adjust-actual", json!({"stampDeliverableId": order, "kind": "produce", "itemId": api_item(&api, &decl_id).await, "delta": 0.5})).await,
                    _ => api.patch(&format!("/bom-line/{line_id}"), json!({"notes": format!("note {client} {i}")})).await,
                };
                // Consumption may run out of steel (409); everything else succeeds.
                assert!(resp.status == 200 || resp.status == 409, "{resp}");
            }
        }));
    }
    for t in tasks {
        t.await.expect("client");
    }
    assert_quantity_actual_is_ledger(&plant).await;
    assert_stock_is_ledger(&api).await;
    let status = api
        .get(&format!("/production/order/{}/status", plant.order))
        .await;
    assert!(
        status.body["outputs"][0]["actual"].as_f64().unwrap() > 0.0,
        "{status}"
    );
}

/// The item of a declaration (read through the API, as a client would).
async fn api_item(api: &Api, decl: &str) -> String {
    api.read("production-output", decl).await["itemId"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Creates a deliverable and returns its id.
async fn node(api: &Api, body: Value) -> String {
    id(&api.create("deliverable", body).await)
}

#[tokio::test]
async fn consume_draws_where_the_material_is_placed() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Placed").await).await;
    let api = plant.api();
    let f = &plant.floor;
    let stage = node(
        api,
        json!({"name": "Weld", "type": "stage", "parentId": plant.phase}),
    )
    .await;
    let step = node(
        api,
        json!({"name": "Tack", "type": "step", "parentId": stage}),
    )
    .await;
    let steel = f.item("Steel", Some(&f.a)).await;
    let bolts = f.item("Bolts", Some(&f.a)).await;
    let glue = f.item("Glue", Some(&f.a)).await;
    for item in [&steel, &bolts, &glue] {
        f.adjust(item, &f.a, 100.0).await;
    }
    let line = |item: &str, quantity: f64, placed: Option<&str>| json!({"itemId": item, "orderDeliverableId": plant.order, "quantity": quantity, "placedOnDeliverableId": placed});
    let post = |body: Value| async move { api.post("/bom-line", body).await };

    // Placements: a phase, stage or step inside the line's own order.
    assert_validation_names(
        &post(line(&steel, 4.0, Some(&plant.order))).await,
        "placedOnDeliverableId",
    );
    let other_order = node(api, json!({"name": "Other", "type": "order"})).await;
    let other_phase = node(
        api,
        json!({"name": "P", "type": "phase", "parentId": other_order}),
    )
    .await;
    assert_validation_names(
        &post(line(&steel, 4.0, Some(&other_phase))).await,
        "placedOnDeliverableId",
    );
    assert_validation_names(
        &post(line(&steel, 4.0, Some(&uuid::Uuid::new_v4().to_string()))).await,
        "placedOnDeliverableId",
    );
    let project = api.create("project", json!({"name": "P1"})).await;
    assert_validation_names(
        &post(json!({"itemId": steel, "projectId": id(&project), "quantity": 1, "placedOnDeliverableId": plant.phase})).await,
        "placedOnDeliverableId",
    );
    let steel_line = api
        .create("bom-line", line(&steel, 4.0, Some(&plant.phase)))
        .await;
    let bolts_line = api
        .create("bom-line", line(&bolts, 2.0, Some(&stage)))
        .await;
    let glue_line = api.create("bom-line", line(&glue, 1.0, None)).await;
    // A placement moves by PATCH, checked the same way.
    assert_validation_names(
        &api.patch(
            &format!("/bom-line/{}", id(&bolts_line)),
            json!({"placedOnDeliverableId": other_phase}),
        )
        .await,
        "placedOnDeliverableId",
    );
    let moved = api
        .patch(
            &format!("/bom-line/{}", id(&bolts_line)),
            json!({"placedOnDeliverableId": step}),
        )
        .await;
    assert_eq!(moved.status, 200, "{moved}");
    assert_eq!(
        api.list_ids("bom-line", &format!("placedOnDeliverableId={step}"))
            .await,
        vec![id(&bolts_line)]
    );

    let drawn = |value: &Value| -> Vec<(String, f64)> {
        let mut rows: Vec<(String, f64)> = value["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["metadata"]["bomLineId"].as_str().unwrap().to_string(),
                    t["quantity"].as_f64().unwrap(),
                )
            })
            .collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        rows
    };
    let sorted = |mut v: Vec<(String, f64)>| {
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    };
    // The step draws its own line; every call posts the full recipe once.
    for _ in 0..2 {
        let value = plant
            .ok("/production/consume", json!({"deliverableId": step}))
            .await;
        assert_eq!(drawn(&value), vec![(id(&bolts_line), 2.0)]);
        assert_eq!(value["transactions"][0]["deliverableId"], step.as_str());
    }
    assert_eq!(
        api.read("bom-line", &id(&bolts_line)).await["quantityActual"],
        4.0
    );
    // The phase draws what is placed on it and below it; not the order's unplaced glue.
    let value = plant
        .ok("/production/consume", json!({"deliverableId": plant.phase}))
        .await;
    assert_eq!(
        drawn(&value),
        sorted(vec![(id(&steel_line), 4.0), (id(&bolts_line), 2.0)])
    );
    // Overrides on a node: only that node's lines; the glue is outside its BOM, ignored.
    let value = plant
        .ok(
            "/production/consume",
            json!({"deliverableId": stage, "lines": [{"itemId": glue, "quantity": 1}, {"itemId": bolts, "quantity": 0.5}]}),
        )
        .await;
    assert_eq!(drawn(&value), vec![(id(&bolts_line), 0.5)]);
    assert_eq!(value["ignored"][0]["index"], 0);
    // The order draws the whole recipe.
    let value = plant
        .ok("/production/consume", json!({"deliverableId": plant.order}))
        .await;
    assert_eq!(
        drawn(&value),
        sorted(vec![
            (id(&steel_line), 4.0),
            (id(&bolts_line), 2.0),
            (id(&glue_line), 1.0)
        ])
    );
    // A node with nothing placed on or below it has nothing to consume.
    let empty = node(
        api,
        json!({"name": "Paint", "type": "phase", "parentId": plant.order}),
    )
    .await;
    assert_error_details(
        &plant
            .action("/production/consume", json!({"deliverableId": empty}))
            .await,
        400,
        "VALIDATION_ERROR",
    );
    assert_eq!(
        api.read("bom-line", &id(&bolts_line)).await["quantityActual"],
        8.5
    );
    assert_eq!(f.on_hand(&steel, &f.a).await, 92.0);
    assert_quantity_actual_is_ledger(&plant).await;
    assert_stock_is_ledger(api).await;
}

/// A route with two phases (the first holding a stage with two steps, linked by a dependency),
/// an archived phase, a placed and an unplaced line, and an output declaration.
struct Route {
    id: String,
    phase1: String,
    stage: String,
    step1: String,
    step2: String,
    phase2: String,
}

async fn route_template(plant: &Plant, steel: &str, paint: &str, widget: &str) -> Route {
    let api = plant.api();
    let r = plant.route.clone();
    let phase1 = node(
        api,
        json!({"name": "Cut", "type": "phase", "parentId": r, "durationSec": 60}),
    )
    .await;
    let stage = node(
        api,
        json!({"name": "Saw", "type": "stage", "parentId": phase1, "data": {"note": "blade 3"}}),
    )
    .await;
    let step1 = node(
        api,
        json!({"name": "Measure", "type": "step", "parentId": stage}),
    )
    .await;
    let step2 = node(
        api,
        json!({"name": "Saw", "type": "step", "parentId": stage, "cycleTimeSec": 30}),
    )
    .await;
    let phase2 = node(
        api,
        json!({"name": "Finish", "type": "phase", "parentId": r, "quantity": 2}),
    )
    .await;
    let gone = node(api, json!({"name": "Old", "type": "phase", "parentId": r})).await;
    node(
        api,
        json!({"name": "Old step", "type": "step", "parentId": gone}),
    )
    .await;
    assert_eq!(
        api.delete(&format!("/deliverable/{gone}")).await.status,
        204
    );
    for (p, s) in [(&step1, &step2), (&phase1, &phase2)] {
        api.create("dependency", json!({"predecessorId": p, "successorId": s}))
            .await;
    }
    api.create(
        "bom-line",
        json!({"itemId": steel, "routeDeliverableId": r, "outputPerUnit": 2, "placedOnDeliverableId": stage}),
    )
    .await;
    api.create(
        "bom-line",
        json!({"itemId": paint, "routeDeliverableId": r, "quantity": 3, "scaling": "per_order"}),
    )
    .await;
    api.create(
        "production-output",
        json!({"itemId": widget, "routeDeliverableId": r, "producedPerUnit": 1}),
    )
    .await;
    Route {
        id: r,
        phase1,
        stage,
        step1,
        step2,
        phase2,
    }
}

#[tokio::test]
async fn applying_a_route_copies_its_tree_lines_and_outputs() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Apply").await).await;
    let api = plant.api();
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let paint = f.item("Paint", Some(&f.a)).await;
    let widget = f.item("Widget", Some(&f.a)).await;
    let route = route_template(&plant, &steel, &paint, &widget).await;
    // A component of 3 units under the order (of 4).
    let component = node(
        api,
        json!({"name": "Frame", "type": "component", "parentId": plant.order, "quantity": 3}),
    )
    .await;
    let path = format!("/deliverable/{component}/apply-template");
    let value = plant.ok(&path, json!({"templateId": route.id})).await;
    assert_eq!(value["targetId"], component.as_str());
    assert_eq!(value["orderId"], plant.order.as_str());
    assert_eq!(value["targetQuantity"], 3.0);
    let nodes = value["nodes"].as_array().unwrap();
    let sources: Vec<&str> = nodes
        .iter()
        .map(|n| n["templateNodeId"].as_str().unwrap())
        .collect();
    assert_eq!(
        sources,
        vec![
            route.phase1.as_str(),
            route.stage.as_str(),
            route.step1.as_str(),
            route.step2.as_str(),
            route.phase2.as_str()
        ],
        "parents first, siblings in order, the archived phase left out"
    );
    let copy = |source: &str| -> String {
        nodes
            .iter()
            .find(|n| n["templateNodeId"] == source)
            .unwrap()["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let mut identifiers = Vec::new();
    for n in nodes {
        let stored = api.read("deliverable", n["id"].as_str().unwrap()).await;
        let source = api
            .read("deliverable", n["templateNodeId"].as_str().unwrap())
            .await;
        assert_eq!(stored["originTemplateId"], route.id.as_str());
        assert_eq!(stored["rootParentId"], plant.order.as_str());
        assert_eq!(stored["parentId"], n["parentId"]);
        for field in [
            "name",
            "type",
            "quantity",
            "durationSec",
            "cycleTimeSec",
            "data",
        ] {
            assert_eq!(stored[field], source[field], "{field}");
        }
        assert_eq!(stored["identifier"], n["identifier"]);
        assert_ne!(stored["identifier"], source["identifier"]);
        identifiers.push(stored["identifier"].as_str().unwrap().to_string());
    }
    identifiers.sort();
    identifiers.dedup();
    assert_eq!(identifiers.len(), 5, "every copy has its own identifier");
    assert_eq!(nodes[0]["parentId"], component.as_str());
    assert_eq!(nodes[1]["parentId"], copy(&route.phase1).as_str());
    // The tree index and computed fields know the copies (one refresh at the end).
    let hierarchy = api
        .get(&format!("/deliverable/{component}/hierarchy"))
        .await;
    assert_eq!(hierarchy.status, 200, "{hierarchy}");
    assert_eq!(hierarchy.body["values"].as_array().unwrap().len(), 6);
    let stage_copy = api.read("deliverable", &copy(&route.stage)).await;
    assert_eq!(
        stage_copy["computed"]["fullName"],
        json!(["Order 1", "Frame", "Cut", "Saw"])
    );
    let component_now = api.read("deliverable", &component).await;
    assert_eq!(component_now["computed"]["isLeaf"], false);
    // Dependencies between copies, remapped.
    let deps = value["dependencies"].as_array().unwrap();
    let pairs: Vec<(String, String)> = deps
        .iter()
        .map(|d| {
            (
                d["predecessorId"].as_str().unwrap().to_string(),
                d["successorId"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(pairs.len(), 2);
    assert!(pairs.contains(&(copy(&route.step1), copy(&route.step2))));
    assert!(pairs.contains(&(copy(&route.phase1), copy(&route.phase2))));
    // Lines onto the order, scaled to the component's 3 units and placed.
    let lines = value["bomLines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    for l in lines {
        assert_eq!(l["orderDeliverableId"], plant.order.as_str());
        assert_eq!(
            (l["mode"].as_str(), l["scaling"].as_str()),
            (Some("total"), Some("per_order"))
        );
        assert_eq!(l["source"], "route_template");
    }
    let steel_line = lines
        .iter()
        .find(|l| l["itemId"] == steel.as_str())
        .unwrap();
    assert_eq!(steel_line["quantity"], 6.0, "2 per unit x 3");
    assert_eq!(
        steel_line["placedOnDeliverableId"],
        copy(&route.stage).as_str()
    );
    let paint_line = lines
        .iter()
        .find(|l| l["itemId"] == paint.as_str())
        .unwrap();
    assert_eq!(paint_line["quantity"], 3.0, "per order: once");
    assert_eq!(paint_line["placedOnDeliverableId"], component.as_str());
    let outputs = value["outputs"].as_array().unwrap();
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0]["quantity"], 3.0);
    assert_eq!(outputs[0]["orderDeliverableId"], plant.order.as_str());
    // The component now consumes its material: steel at the copied stage, paint on it.
    f.adjust(&steel, &f.a, 50.0).await;
    f.adjust(&paint, &f.a, 50.0).await;
    let consumed = plant
        .ok("/production/consume", json!({"deliverableId": component}))
        .await;
    assert_eq!(consumed["transactions"].as_array().unwrap().len(), 2);
    // The steel is placed on the stage, above the step: the step has nothing to consume.
    assert_error_details(
        &plant
            .action(
                "/production/consume",
                json!({"deliverableId": copy(&route.step2)}),
            )
            .await,
        400,
        "VALIDATION_ERROR",
    );
    assert_quantity_actual_is_ledger(&plant).await;
}

#[tokio::test]
async fn apply_template_rules() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("ApplyRules").await).await;
    let api = plant.api();
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let paint = f.item("Paint", Some(&f.a)).await;
    let widget = f.item("Widget", Some(&f.a)).await;
    let route = route_template(&plant, &steel, &paint, &widget).await;
    let apply = |target: String, body: Value| async move {
        api.post(&format!("/deliverable/{target}/apply-template"), body)
            .await
    };
    let template_phase = node(
        api,
        json!({"name": "Paint header", "type": "template-phase"}),
    )
    .await;
    let tp_stage = node(
        api,
        json!({"name": "Spray", "type": "stage", "parentId": template_phase}),
    )
    .await;
    node(
        api,
        json!({"name": "Coat", "type": "step", "parentId": tp_stage}),
    )
    .await;
    let component = node(
        api,
        json!({"name": "C", "type": "component", "parentId": plant.order}),
    )
    .await;
    // What applies where.
    assert_validation_names(
        &apply(component.clone(), json!({"templateId": template_phase})).await,
        "id",
    );
    assert_validation_names(
        &apply(plant.phase.clone(), json!({"templateId": plant.order})).await,
        "templateId",
    );
    assert_validation_names(
        &apply(plant.phase.clone(), json!({"templateId": route.phase1})).await,
        "templateId",
    );
    assert_validation_names(
        &apply(route.phase2.clone(), json!({"templateId": route.id})).await,
        "id",
    );
    assert_validation_names(
        &apply(
            plant.phase.clone(),
            json!({"templateId": uuid::Uuid::new_v4()}),
        )
        .await,
        "templateId",
    );
    assert_validation_names(&apply(plant.phase.clone(), json!({})).await, "templateId");
    assert_error(
        &apply(
            uuid::Uuid::new_v4().to_string(),
            json!({"templateId": route.id}),
        )
        .await,
        404,
        "NOT_FOUND",
    );
    let other = server.org("Elsewhere").await;
    assert_error(
        &other
            .post(
                &format!("/deliverable/{}/apply-template", plant.phase),
                json!({"templateId": route.id}),
            )
            .await,
        404,
        "NOT_FOUND",
    );
    assert_eq!(
        api.count("deliverable", &format!("originTemplateId={}", route.id))
            .await,
        0,
        "nothing written by a refused call"
    );
    // A template-phase onto a phase: its nodes, no lines (it owns none).
    let resp = apply(plant.phase.clone(), json!({"templateId": template_phase})).await;
    assert_eq!(resp.status, 200, "{resp}");
    let value = &resp.body["value"];
    assert_eq!(value["nodes"].as_array().unwrap().len(), 2);
    assert_eq!(value["bomLines"], json!([]));
    // A route onto the order itself: lines unplaced unless placed in the route, scaled by 4.
    let key = unique();
    let send = || {
        api.req(
            Method::POST,
            &format!("/deliverable/{}/apply-template", plant.order),
        )
        .json(json!({"templateId": route.id}))
        .idempotency_key(&key)
        .send()
    };
    let first = send().await;
    assert_eq!(first.status, 200, "{first}");
    let lines = first.body["value"]["bomLines"].as_array().unwrap().clone();
    let paint_line = lines
        .iter()
        .find(|l| l["itemId"] == paint.as_str())
        .unwrap();
    assert_eq!(paint_line["placedOnDeliverableId"], Value::Null);
    let steel_line = lines
        .iter()
        .find(|l| l["itemId"] == steel.as_str())
        .unwrap();
    assert_eq!(steel_line["quantity"], 8.0);
    assert_eq!(first.body["value"]["outputs"][0]["quantity"], 4.0);
    // A retry with the same key applies once; each new call applies again.
    let again = send().await;
    assert_eq!(again.body, first.body);
    assert_eq!(
        api.count("deliverable", &format!("originTemplateId={}", route.id))
            .await,
        5
    );
    // Permissions: creating deliverables, dependencies, lines and declarations.
    let (reader, _) = server
        .key(
            api,
            false,
            &[
                "Deliverable.Read",
                "BomLine.Create",
                "ProductionOutput.Create",
            ],
        )
        .await;
    assert_error(
        &reader
            .post(
                &format!("/deliverable/{}/apply-template", plant.phase),
                json!({"templateId": route.id}),
            )
            .await,
        403,
        "FORBIDDEN",
    );
}

#[tokio::test]
async fn applying_a_large_route_is_one_batch() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("ApplyLarge").await).await;
    let api = plant.api();
    // A route of 40 phases x (1 stage + 24 steps) = 1,000 nodes below the route.
    let mut records = Vec::new();
    let mut expected = 0;
    for p in 0..40 {
        let phase = uuid::Uuid::now_v7().to_string();
        records.push(
            json!({"id": phase, "name": format!("P{p}"), "type": "phase", "parentId": plant.route}),
        );
        let stage = uuid::Uuid::now_v7().to_string();
        records.push(json!({"id": stage, "name": "S", "type": "stage", "parentId": phase}));
        for s in 0..23 {
            records.push(json!({"name": format!("step {s}"), "type": "step", "parentId": stage}));
        }
        expected += 25;
    }
    for chunk in records.chunks(500) {
        api.bulk_put("deliverable", chunk.to_vec()).await;
    }
    let value = plant
        .ok(
            &format!("/deliverable/{}/apply-template", plant.phase),
            json!({"templateId": plant.route}),
        )
        .await;
    assert_eq!(value["nodes"].as_array().unwrap().len(), expected);
    let hierarchy = api
        .get(&format!("/deliverable/{}/hierarchy", plant.phase))
        .await;
    assert_eq!(
        hierarchy.body["values"].as_array().unwrap().len(),
        expected + 1
    );
    let last = value["nodes"].as_array().unwrap().last().unwrap();
    let stored = api.read("deliverable", last["id"].as_str().unwrap()).await;
    assert_eq!(stored["computed"]["rootType"], "order");
    assert_eq!(stored["computed"]["phase"], "P39");
}
