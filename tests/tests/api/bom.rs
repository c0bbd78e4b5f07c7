//! The BOM actions (spec 4.5): prepopulate, allocate (reservations), the demand and materials
//! rollups.

use prodops_tests::*;
use serde_json::Value;

use crate::inventory_support::*;
use crate::production::Plant;

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn prepopulate_from_project_then_route() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Prepop").await).await;
    let api = plant.api();
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let bolt = f.item("Bolt", None).await;
    let widget = f.item("Widget", None).await;
    let path = format!("/bom-line/order/{}/prepopulate", plant.order);

    // Without a project BOM and without a route: 400.
    assert_validation_names(&api.post(&path, json!({})).await, "routeDeliverableId");
    // From the route: inputs and output declarations; ratios become the order's totals.
    api.create(
        "bom-line",
        json!({"itemId": steel, "routeDeliverableId": plant.route, "outputPerUnit": 2.5}),
    )
    .await;
    api.create(
        "bom-line",
        json!({"itemId": bolt, "routeDeliverableId": plant.route, "quantity": 3}),
    )
    .await;
    api.create("production-output", json!({"itemId": widget, "routeDeliverableId": plant.route, "producedPerUnit": 2, "locationId": f.b})).await;
    let resp = api
        .post(&path, json!({"routeDeliverableId": plant.route}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let v = &resp.body["value"];
    assert_eq!(v["seededFrom"], "route");
    let lines = v["createdBomLines"].as_array().unwrap();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        (lines[0]["mode"].as_str(), lines[0]["quantity"].as_f64()),
        (Some("ratio"), Some(10.0))
    );
    assert_eq!(
        (lines[1]["scaling"].as_str(), lines[1]["quantity"].as_f64()),
        (Some("per_unit"), Some(3.0))
    );
    assert_eq!(lines[0]["source"], "route_template");
    assert_eq!(lines[0]["orderDeliverableId"], plant.order.as_str());
    let outputs = v["createdOutputs"].as_array().unwrap();
    assert_eq!(
        (
            outputs[0]["quantity"].as_f64(),
            outputs[0]["locationId"].as_str()
        ),
        (Some(8.0), Some(f.b.as_str()))
    );
    // Idempotent on re-run.
    let again = api
        .post(&path, json!({"routeDeliverableId": plant.route}))
        .await;
    assert_eq!(again.status, 200, "{again}");
    assert_eq!(
        again.body["value"]["createdBomLines"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert_eq!(again.body["value"]["alreadyPresent"], 3);
    assert_eq!(
        api.list_total("bom-line", &format!("orderDeliverableId={}", plant.order))
            .await,
        2
    );
    // The status reads the order's recipe: steel 2.5 x 4, bolt 3 x 4.
    let status = api
        .get(&format!("/production/order/{}/status", plant.order))
        .await;
    let planned: Vec<f64> = status.body["materials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["planned"].as_f64().unwrap())
        .collect();
    assert_eq!(planned, vec![10.0, 12.0]);

    // A second order of a project with a BOM: the project BOM comes first.
    let project = id(&api.create("project", json!({"name": "Tower"})).await);
    api.create(
        "bom-line",
        json!({"itemId": bolt, "projectId": project, "quantity": 40, "poNumber": "PO-1"}),
    )
    .await;
    let order2 = id(&api.create("deliverable", json!({"name": "Order 2", "type": "order", "quantity": 2, "data": {"projectId": project}})).await);
    let path2 = format!("/bom-line/order/{order2}/prepopulate");
    let resp = api.post(&path2, json!({})).await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["value"]["seededFrom"], "project");
    let line = &resp.body["value"]["createdBomLines"][0];
    assert_eq!(
        (
            line["quantity"].as_f64(),
            line["scaling"].as_str(),
            line["poNumber"].as_str()
        ),
        (Some(40.0), Some("per_order"), Some("PO-1"))
    );
    assert_eq!(
        api.post(&path2, json!({})).await.body["value"]["alreadyPresent"],
        1
    );
    // Not an order, another organization's order.
    assert_error(
        &api.post(
            &format!("/bom-line/order/{}/prepopulate", plant.phase),
            json!({}),
        )
        .await,
        404,
        "NOT_FOUND",
    );
    let other = server.org("Other").await;
    assert_error(&other.post(&path2, json!({})).await, 404, "NOT_FOUND");
    assert_validation_names(
        &api.post(&path, json!({"routeDeliverableId": plant.order}))
            .await,
        "routeDeliverableId",
    );
    assert_eq!(
        api.list_total("inventory-transaction", "").await,
        0,
        "no stock posted"
    );
}

#[tokio::test]
async fn allocation_reserves_without_moving_stock() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Alloc").await).await;
    let api = plant.api();
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let paint = f.item("Paint", None).await;
    let glue = f.item("Glue", None).await;
    f.adjust(&steel, &f.a, 100.0).await;
    f.adjust(&paint, &f.b, 1.0).await;
    let steel_line = api.create("bom-line", json!({"itemId": steel, "orderDeliverableId": plant.order, "mode": "ratio", "outputPerUnit": 2.5, "quantity": 1})).await;
    api.create(
        "bom-line",
        json!({"itemId": paint, "orderDeliverableId": plant.order, "quantity": 3}),
    )
    .await;
    api.create(
        "bom-line",
        json!({"itemId": glue, "orderDeliverableId": plant.order, "quantity": 1}),
    )
    .await;
    let path = format!("/bom-line/order/{}/allocate", plant.order);

    let resp = api.post(&path, json!({"itemIds": [steel]})).await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        resp.body["value"]["reservations"].as_array().unwrap().len(),
        1
    );
    let stock = api.list("stock", &format!("itemId={steel}")).await;
    assert_eq!(
        (stock[0]["onHand"].as_f64(), stock[0]["reserved"].as_f64()),
        (Some(100.0), Some(10.0))
    );
    // Every line: paint goes where its stock is (b), more than on hand (a shortage); glue has
    // neither a default location nor stock.
    let resp = api.post(&path, json!({})).await;
    let value = &resp.body["value"];
    assert_eq!(value["reservations"].as_array().unwrap().len(), 2, "{resp}");
    assert_eq!(value["skipped"][0]["itemId"], glue.as_str());
    let paint_stock = api.list("stock", &format!("itemId={paint}")).await;
    assert_eq!(
        (
            paint_stock[0]["onHand"].as_f64(),
            paint_stock[0]["reserved"].as_f64()
        ),
        (Some(1.0), Some(3.0))
    );
    // Re-running replaces, never adds.
    api.post(&path, json!({})).await;
    assert_eq!(f.on_hand(&steel, &f.a).await, 100.0);
    assert_eq!(
        api.list("stock", &format!("itemId={steel}")).await[0]["reserved"],
        10.0
    );
    // Consuming uses up the reservation.
    let resp = api.post("/production/consume", json!({"deliverableId": plant.order, "lines": [{"bomLineId": id(&steel_line), "quantity": 4}]})).await;
    assert_eq!(resp.status, 200, "{resp}");
    let stock = api.list("stock", &format!("itemId={steel}")).await;
    assert_eq!(
        (stock[0]["onHand"].as_f64(), stock[0]["reserved"].as_f64()),
        (Some(96.0), Some(6.0))
    );
    api.post(&path, json!({})).await;
    assert_eq!(
        api.list("stock", &format!("itemId={steel}")).await[0]["reserved"],
        6.0
    );
    assert_stock_is_ledger(api).await;

    // Project allocation reserves the project lines.
    let project = id(&api.create("project", json!({"name": "Tower"})).await);
    api.create(
        "bom-line",
        json!({"itemId": steel, "projectId": project, "quantity": 20}),
    )
    .await;
    let resp = api
        .post(&format!("/bom-line/project/{project}/allocate"), json!({}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        api.list("stock", &format!("itemId={steel}")).await[0]["reserved"],
        26.0
    );
    let empty = api
        .req(
            reqwest::Method::POST,
            &format!("/bom-line/project/{project}/allocate"),
        )
        .send()
        .await;
    assert_eq!(empty.status, 200, "no body at all: {empty}");
    assert_error_details(
        &api.post(
            &format!("/bom-line/project/{project}/allocate"),
            json!({"x": 1}),
        )
        .await,
        400,
        "VALIDATION_ERROR",
    );
    assert_error(
        &api.post(
            &format!("/bom-line/project/{}/allocate", uuid::Uuid::new_v4()),
            json!({}),
        )
        .await,
        404,
        "NOT_FOUND",
    );
    assert_validation_names(&api.post(&path, json!({"itemIds": "x"})).await, "itemIds");
    let (reader, _) = server.key(api, false, &["BomLine.Read"]).await;
    assert_error(&reader.post(&path, json!({})).await, 403, "FORBIDDEN");
}

#[tokio::test]
async fn demand_and_materials_rollups() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Rollup").await).await;
    let api = plant.api();
    let f = &plant.floor;
    let steel = f.item("Steel", Some(&f.a)).await;
    let bolt = f.item("Bolt", Some(&f.a)).await;
    f.adjust(&steel, &f.a, 6.0).await;
    let project = id(&api.create("project", json!({"name": "Tower"})).await);
    api.patch(
        &format!("/deliverable/{}", plant.order),
        json!({"data": {"projectId": project}}),
    )
    .await;
    // Project estimate: steel 30, bolt 5. The order (quantity 4) plans steel 2.5/unit = 10 (PO),
    // and has drawn 4 of it.
    api.create(
        "bom-line",
        json!({"itemId": steel, "projectId": project, "quantity": 30}),
    )
    .await;
    api.create(
        "bom-line",
        json!({"itemId": bolt, "projectId": project, "quantity": 5}),
    )
    .await;
    let line = api.create("bom-line", json!({"itemId": steel, "orderDeliverableId": plant.order, "mode": "ratio", "outputPerUnit": 2.5, "quantity": 10, "poNumber": "PO-9"})).await;
    let resp = api.post("/production/consume", json!({"deliverableId": plant.order, "lines": [{"bomLineId": id(&line), "quantity": 4}]})).await;
    assert_eq!(resp.status, 200, "{resp}");

    let resp = api.get("/bom-line/demand-rollup").await;
    assert_eq!(resp.status, 200, "{resp}");
    let rows = resp.body["value"].as_array().unwrap().clone();
    let steel_row = rows.iter().find(|r| r["itemId"] == steel.as_str()).unwrap();
    // Orders: 10 - 4 = 6 remaining; project: 30 estimated - 10 planned on its orders = 20.
    assert_eq!(steel_row["fromOrders"], 6.0);
    assert_eq!(steel_row["fromProjects"], 20.0);
    assert_eq!(steel_row["demand"], 26.0);
    assert_eq!(steel_row["onHand"], 2.0);
    assert_eq!(steel_row["shortage"], 24.0);
    assert_eq!(steel_row["itemName"], "Steel");
    assert_eq!(steel_row["sources"].as_array().unwrap().len(), 2);
    let bolt_row = rows.iter().find(|r| r["itemId"] == bolt.as_str()).unwrap();
    assert_eq!(bolt_row["demand"], 5.0);
    assert_eq!(rows[0]["itemId"], steel.as_str(), "largest shortage first");

    let resp = api
        .get(&format!("/bom-line/project/{project}/materials-rollup"))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let v = &resp.body["value"];
    assert_eq!(v["orderIds"], json!([plant.order]));
    let steel_m = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["itemId"] == steel.as_str())
        .unwrap();
    assert_eq!(
        (
            steel_m["estimate"].as_f64(),
            steel_m["planned"].as_f64(),
            steel_m["onOrder"].as_f64(),
            steel_m["used"].as_f64(),
            steel_m["variance"].as_f64()
        ),
        (Some(30.0), Some(10.0), Some(6.0), Some(4.0), Some(-26.0))
    );
    assert_eq!(v["totals"]["estimate"], 35.0);
    assert_eq!(v["totals"]["used"], 4.0);
    assert_error(
        &api.get(&format!(
            "/bom-line/project/{}/materials-rollup",
            uuid::Uuid::new_v4()
        ))
        .await,
        404,
        "NOT_FOUND",
    );
    // Another organization's demand is its own.
    let other = server.org("Other").await;
    assert_eq!(
        other.get("/bom-line/demand-rollup").await.body["value"],
        json!([])
    );
    assert_error(
        &other
            .get(&format!("/bom-line/project/{project}/materials-rollup"))
            .await,
        404,
        "NOT_FOUND",
    );
    // The standard bom-line routes still work beside the actions.
    assert_eq!(
        api.read("bom-line", &id(&line)).await["quantityActual"],
        4.0
    );
}
