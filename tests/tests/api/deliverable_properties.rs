//! Custom property values on orders (spec 4.9, every numbered rule) and group-and-count on them.

use prodops_tests::*;
use serde_json::Value;

use crate::deliverable::D;

async fn setup(api: &Api) {
    for def in [
        json!({"key": "squareFeet", "name": "Square feet", "dataType": "number"}),
        json!({"key": "color", "name": "Color", "dataType": "select", "options": ["Red", "Blue"]}),
        json!({"key": "finish", "name": "Finish", "dataType": "select", "options": ["Matte"], "allowsAdHocOptions": true}),
        json!({"key": "labels", "name": "Labels", "dataType": "multiselect", "options": ["A", "B"]}),
        json!({"key": "rush", "name": "Rush", "dataType": "boolean"}),
        json!({"key": "note", "name": "Note", "dataType": "text"}),
    ] {
        api.create("custom-property", def).await;
    }
}

async fn order(api: &Api, properties: Value) -> String {
    api.create(
        D,
        json!({"name": "O", "type": "order", "data": {"properties": properties, "ref": "x"}}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn props(d: &Value) -> Value {
    d["data"].get("properties").cloned().unwrap_or(json!({}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_rules() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    setup(&api).await;
    // Rule 3: case-insensitive option matching keeps the catalog's spelling.
    let o = order(
        &api,
        json!({"squareFeet": 120, "color": "rED", "labels": ["b", "A"]}),
    )
    .await;
    let d = api.read(D, &o).await;
    assert_eq!(
        props(&d),
        json!({"squareFeet": 120, "color": "Red", "labels": ["B", "A"]})
    );
    assert_eq!(d["data"]["ref"], "x");

    // Rule 2: a nonempty object merges; omitted keys are kept.
    let r = api
        .patch(
            &format!("/{D}/{o}"),
            json!({"data": {"properties": {"rush": true}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(
        props(&r.body),
        json!({"squareFeet": 120, "color": "Red", "labels": ["B", "A"], "rush": true})
    );
    assert_eq!(r.body["data"]["ref"], "x", "other data keys are kept");
    // Rule 7: omitting data.properties leaves every value untouched.
    let r = api
        .patch(
            &format!("/{D}/{o}"),
            json!({"name": "O2", "data": {"ref": "y"}}),
        )
        .await;
    assert_eq!(props(&r.body)["rush"], true);
    assert_eq!(r.body["data"]["ref"], "y");
    // Rule 8: null, "" and [] clear one key.
    let r = api
        .patch(
            &format!("/{D}/{o}"),
            json!({"data": {"properties": {"rush": null, "color": "", "labels": []}}}),
        )
        .await;
    assert_eq!(props(&r.body), json!({"squareFeet": 120}));
    // Rule 9: {} and null clear everything.
    let r = api
        .patch(&format!("/{D}/{o}"), json!({"data": {"properties": {}}}))
        .await;
    assert_eq!(props(&r.body), json!({}));
    api.patch(
        &format!("/{D}/{o}"),
        json!({"data": {"properties": {"note": "n"}}}),
    )
    .await;
    let r = api
        .patch(&format!("/{D}/{o}"), json!({"data": {"properties": null}}))
        .await;
    assert_eq!(props(&r.body), json!({}));

    // Rule 1 and 6: unknown keys (display names, ids) and invalid values are 400.
    let def_id = api.list("custom-property", "key=color").await[0]["id"].clone();
    for (bad, field) in [
        (json!({"Square feet": 1}), "properties"),
        (json!({def_id.as_str().unwrap(): "Red"}), "properties"),
        (json!({"squareFeet": "many"}), "squareFeet"),
        (json!({"rush": "yes"}), "rush"),
        (json!({"color": "Green"}), "color"),
        (json!({"labels": ["A", "Z"]}), "labels"),
        (json!({"labels": "A"}), "labels"),
    ] {
        let r = api
            .patch(&format!("/{D}/{o}"), json!({"data": {"properties": bad}}))
            .await;
        assert_validation_names(&r, field);
    }
    let r = api
        .patch(&format!("/{D}/{o}"), json!({"data": {"properties": [1]}}))
        .await;
    assert_error_details(&r, 400, "VALIDATION_ERROR");
    // Rule 6: nonempty values on other deliverable types; clearing is fine.
    let r = api
        .post(
            &format!("/{D}"),
            json!({"name": "P", "type": "phase", "data": {"properties": {"squareFeet": 1}}}),
        )
        .await;
    assert_validation_names(&r, "squareFeet");
    let r = api
        .post(
            &format!("/{D}"),
            json!({"name": "P", "type": "phase", "data": {"properties": {"squareFeet": null}}}),
        )
        .await;
    assert_eq!(r.status, 201, "{r}");

    // Rule 4: ad-hoc options are appended to the definition in the same transaction.
    let r = api
        .patch(
            &format!("/{D}/{o}"),
            json!({"data": {"properties": {"finish": "Gloss"}}}),
        )
        .await;
    assert_eq!(props(&r.body)["finish"], "Gloss");
    let def = &api.list("custom-property", "key=finish").await[0];
    assert_eq!(def["options"], json!(["Matte", "Gloss"]));
    let r = api
        .patch(
            &format!("/{D}/{o}"),
            json!({"data": {"properties": {"finish": "GLOSS"}}}),
        )
        .await;
    assert_eq!(props(&r.body)["finish"], "Gloss");
    assert_eq!(
        api.list("custom-property", "key=finish").await[0]["options"],
        json!(["Matte", "Gloss"])
    );
    // A rejected write appends nothing.
    let r = api
        .patch(
            &format!("/{D}/{o}"),
            json!({"data": {"properties": {"finish": "Satin", "rush": 5}}}),
        )
        .await;
    assert_error_details(&r, 400, "VALIDATION_ERROR");
    assert_eq!(
        api.list("custom-property", "key=finish").await[0]["options"],
        json!(["Matte", "Gloss"])
    );

    // Rule 5: removing an option from the definition keeps stored values.
    let color = api.list("custom-property", "key=color").await[0].clone();
    api.patch(
        &format!("/{D}/{o}"),
        json!({"data": {"properties": {"color": "blue"}}}),
    )
    .await;
    let r = api
        .patch(
            &format!("/custom-property/{}", color["id"].as_str().unwrap()),
            json!({"options": ["Red"]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(props(&api.read(D, &o).await)["color"], "Blue");
    // Archived definitions keep validating existing data.
    let r = api
        .delete(&format!(
            "/custom-property/{}",
            color["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(r.status, 204, "{r}");
    let r = api
        .patch(
            &format!("/{D}/{o}"),
            json!({"data": {"properties": {"color": "Purple"}}}),
        )
        .await;
    assert_validation_names(&r, "color");
    assert_eq!(props(&api.read(D, &o).await)["color"], "Blue");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_writes_and_group_and_count() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    setup(&api).await;
    let ids = api
        .bulk_put(
            D,
            vec![
                json!({"name": "a", "type": "order", "data": {"properties": {"color": "red", "finish": "Brushed"}}}),
                json!({"name": "b", "type": "order", "data": {"properties": {"color": "RED", "finish": "brushed"}}}),
                json!({"name": "c", "type": "order", "data": {"properties": {"color": "Blue"}}}),
            ],
        )
        .await;
    assert_eq!(
        api.list("custom-property", "key=finish").await[0]["options"],
        json!(["Matte", "Brushed"]),
        "an ad-hoc option appended once, in the first spelling"
    );
    assert_eq!(props(&api.read(D, &ids[1]).await)["finish"], "Brushed");
    let r = api
        .post(
            &format!("/{D}/group-and-count"),
            json!({"groupByField": "data.properties.color"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(
        r.body["values"],
        json!([{"groupId": "Red", "count": 2}, {"groupId": "Blue", "count": 1}])
    );
    // A selected property comes back flattened.
    let r = api
        .post(
            &format!("/{D}/query"),
            json!({"id": [ids[2]], "select": ["data.properties.color"]}),
        )
        .await;
    assert_eq!(r.body["values"][0]["dataPropertiesColor"], "Blue");
    // Bulk PATCH merges properties into each order; one bad value rejects everything.
    let r = api
        .patch(
            &format!("/{D}/bulk?type=order"),
            json!({"data": {"properties": {"squareFeet": 5}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(props(&api.read(D, &ids[0]).await)["color"], "Red");
    assert_eq!(props(&api.read(D, &ids[0]).await)["squareFeet"], 5);
    let r = api
        .patch(
            &format!("/{D}/bulk?type=order"),
            json!({"data": {"properties": {"squareFeet": "x"}}}),
        )
        .await;
    assert_error_details(&r, 400, "VALIDATION_ERROR");
    let r = api
        .put(
            &format!("/{D}/bulk"),
            json!([{"name": "d", "type": "order", "data": {"properties": {"finish": "Satin"}}},
                   {"name": "e", "type": "order", "data": {"properties": {"bogus": 1}}}]),
        )
        .await;
    assert_error_details(&r, 400, "VALIDATION_ERROR");
    assert_eq!(
        api.list("custom-property", "key=finish").await[0]["options"],
        json!(["Matte", "Brushed"]),
        "a rejected batch appends no option"
    );
}
