//! Custom property definitions (spec 2.12, 3.5, 4.9): key rules, uniqueness of key and name,
//! archive and restore, immutable key, no bulk delete, scope and type-specific fields.

use prodops_tests::*;
use serde_json::Value;

const R: &str = "custom-property";

fn def(key: &str, name: &str, data_type: &str) -> Value {
    json!({"key": key, "name": name, "dataType": data_type})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_fills_defaults() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let d = api
        .create(R, def("squareFeet", "Square feet", "number"))
        .await;
    assert_eq!(d["key"], "squareFeet");
    assert_eq!(d["name"], "Square feet");
    assert_eq!(d["dataType"], "number");
    assert_eq!(d["deliverableTypes"], json!(["order"]));
    assert_eq!(d["allowsAdHocOptions"], false);
    assert_eq!(d["isArchived"], false);
    assert_eq!(d["organizationId"], json!(api.org_id.to_string()));
    assert_eq!(api.read(R, d["id"].as_str().unwrap()).await, d);
    for (i, t) in ["text", "number", "boolean", "date", "select", "multiselect"]
        .iter()
        .enumerate()
    {
        let d = api
            .create(R, def(&format!("k{i}"), &format!("Type {t}"), t))
            .await;
        assert_eq!(d["dataType"], *t);
    }
    assert_validation_names(
        &api.post(&format!("/{R}"), def("k9", "Bad type", "bogus"))
            .await,
        "dataType",
    );
    assert_validation_names(
        &api.post(&format!("/{R}"), json!({"key": "k10", "name": "No type"}))
            .await,
        "dataType",
    );
    assert_validation_names(
        &api.post(&format!("/{R}"), json!({"key": "k11", "dataType": "text"}))
            .await,
        "name",
    );
    assert_validation_names(
        &api.post(
            &format!("/{R}"),
            json!({"name": "No key", "dataType": "text"}),
        )
        .await,
        "key",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_must_start_with_a_letter_and_hold_letters_and_digits_only() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let too_long = format!("a{}", "b".repeat(64));
    for (i, bad) in [
        "1abc",
        "sq_ft",
        "sq ft",
        "sq-ft",
        "",
        "_a",
        "a.b",
        too_long.as_str(),
    ]
    .iter()
    .enumerate()
    {
        let resp = api
            .post(&format!("/{R}"), def(bad, &format!("Bad {i}"), "text"))
            .await;
        assert_validation_names(&resp, "key");
    }
    assert_eq!(api.total(R).await, 0);
    let longest = format!("a{}", "9".repeat(63));
    assert_eq!(longest.len(), 64);
    for (i, good) in ["a", "Z9", "squareFeet2", longest.as_str()]
        .iter()
        .enumerate()
    {
        api.create(R, def(good, &format!("Good {i}"), "text")).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_is_unique_case_insensitively_even_against_archived_definitions() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let d = api
        .create(R, def("squareFeet", "Square feet", "number"))
        .await;
    assert_error(
        &api.post(&format!("/{R}"), def("SQUAREFEET", "Other name", "number"))
            .await,
        409,
        "CONFLICT",
    );
    let id = d["id"].as_str().unwrap();
    assert_eq!(api.delete(&format!("/{R}/{id}")).await.status, 204);
    // Archiving never frees the key.
    assert_error(
        &api.post(&format!("/{R}"), def("squarefeet", "Third name", "number"))
            .await,
        409,
        "CONFLICT",
    );
    assert_error(
        &api.put(
            &format!("/{R}/bulk"),
            json!([def("squareFEET", "Bulk name", "text")]),
        )
        .await,
        409,
        "CONFLICT",
    );
    assert_eq!(api.total(R).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn name_is_unique_among_active_definitions_only() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let d = api.create(R, def("width", "Width", "number")).await;
    assert_error(
        &api.post(&format!("/{R}"), def("width2", "Width", "number"))
            .await,
        409,
        "CONFLICT",
    );
    // Renaming onto an active name clashes too.
    let other = api.create(R, def("height", "Height", "number")).await;
    let oid = other["id"].as_str().unwrap();
    assert_error(
        &api.patch(&format!("/{R}/{oid}"), json!({"name": "Width"}))
            .await,
        409,
        "CONFLICT",
    );
    // Once archived, its name may be reused.
    let id = d["id"].as_str().unwrap();
    assert_eq!(api.delete(&format!("/{R}/{id}")).await.status, 204);
    let reused = api.create(R, def("width2", "Width", "number")).await;
    assert_eq!(reused["name"], "Width");
    assert_eq!(api.list_total(R, "").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_archives_with_204() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let d = api.create(R, def("color", "Color", "select")).await;
    let id = d["id"].as_str().unwrap();
    let resp = api.delete(&format!("/{R}/{id}")).await;
    assert_eq!(resp.status, 204, "{resp}");
    assert!(resp.text.is_empty(), "{resp}");
    assert!(
        api.list(R, "").await.is_empty(),
        "left out of the active list"
    );
    let archived = api.list(R, "isArchived=true").await;
    assert_eq!(ids_of(&archived), vec![id.to_string()]);
    assert_eq!(archived[0]["isArchived"], true);
    assert_eq!(archived[0]["key"], "color", "the key is kept");
    let resp = api
        .patch(&format!("/{R}/{id}"), json!({"isArchived": false}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["isArchived"], false);
    assert_eq!(api.list_ids(R, "").await, vec![id.to_string()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_fails_on_a_name_clash_and_succeeds_when_renamed_in_the_same_patch() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let old = api.create(R, def("widthOld", "Width", "number")).await;
    let id = old["id"].as_str().unwrap();
    assert_eq!(api.delete(&format!("/{R}/{id}")).await.status, 204);
    api.create(R, def("widthNew", "Width", "number")).await;

    assert_error(
        &api.patch(&format!("/{R}/{id}"), json!({"isArchived": false}))
            .await,
        409,
        "CONFLICT",
    );
    let still = api.read(R, id).await;
    assert_eq!(still["isArchived"], true, "still archived");
    assert_eq!(still["name"], "Width");

    let resp = api
        .patch(
            &format!("/{R}/{id}"),
            json!({"isArchived": false, "name": "Width (old)"}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["isArchived"], false);
    assert_eq!(resp.body["name"], "Width (old)");
    assert_eq!(resp.body["key"], "widthOld");
    assert_eq!(api.list_total(R, "").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_is_immutable() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let d = api.create(R, def("depth", "Depth", "number")).await;
    let id = d["id"].as_str().unwrap();
    assert_validation_names(
        &api.patch(&format!("/{R}/{id}"), json!({"key": "depth2"}))
            .await,
        "key",
    );
    assert_validation_names(
        &api.patch(&format!("/{R}/{id}"), json!({"key": "DEPTH"}))
            .await,
        "key",
    );
    assert_eq!(api.read(R, id).await, d);
    // The same key with other changes is fine (a record written back as read).
    let resp = api
        .patch(
            &format!("/{R}/{id}"),
            json!({"key": "depth", "name": "Depth (mm)"}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["name"], "Depth (mm)");
    assert_eq!(resp.body["key"], "depth");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_delete_is_forbidden() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.bulk_put(R, vec![def("a1", "A1", "number"), def("a2", "A2", "text")])
        .await;
    assert_error(
        &api.delete(&format!("/{R}/bulk?dataType=number")).await,
        403,
        "FORBIDDEN",
    );
    assert_error(&api.delete(&format!("/{R}/bulk")).await, 403, "FORBIDDEN");
    assert_eq!(api.list_total(R, "").await, 2, "nothing archived");
    assert_eq!(api.list_total(R, "isArchived=true").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliverable_types_default_to_order_and_order_is_the_only_scope() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let d = api
        .create(R, json!({"key": "explicit", "name": "Explicit", "dataType": "text", "deliverableTypes": ["order"]}))
        .await;
    assert_eq!(d["deliverableTypes"], json!(["order"]));
    let resp = api
        .post(&format!("/{R}"), json!({"key": "onStage", "name": "On stage", "dataType": "text", "deliverableTypes": ["stage"]}))
        .await;
    assert_validation_names(&resp, "deliverableTypes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn options_only_for_select_types() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let s = api
        .create(R, json!({"key": "finish", "name": "Finish", "dataType": "select", "options": ["Matte", "Gloss"]}))
        .await;
    assert_eq!(s["options"], json!(["Matte", "Gloss"]), "ordered as given");
    let m = api
        .create(
            R,
            json!({"key": "extras", "name": "Extras", "dataType": "multiselect", "options": ["A", "B"], "allowsAdHocOptions": true}),
        )
        .await;
    assert_eq!(m["allowsAdHocOptions"], true);
    for (i, t) in ["text", "number", "boolean", "date"].iter().enumerate() {
        let resp = api
            .post(&format!("/{R}"), json!({"key": format!("opt{i}"), "name": format!("Opt {i}"), "dataType": t, "options": ["a"]}))
            .await;
        assert_validation_names(&resp, "options");
    }
    // Options are nonempty and unique case-insensitively.
    let resp = api
        .post(
            &format!("/{R}"),
            json!({"key": "dup", "name": "Dup", "dataType": "select", "options": ["Red", "red"]}),
        )
        .await;
    assert_validation_names(&resp, "options");
    let resp = api
        .post(
            &format!("/{R}"),
            json!({"key": "empty", "name": "Empty", "dataType": "select", "options": ["Red", ""]}),
        )
        .await;
    assert_validation_names(&resp, "options");
    // Giving a text property options later is refused too.
    let t = api.create(R, def("plain", "Plain", "text")).await;
    let tid = t["id"].as_str().unwrap();
    assert_validation_names(
        &api.patch(&format!("/{R}/{tid}"), json!({"options": ["x"]}))
            .await,
        "options",
    );
    assert_eq!(api.list_total(R, "").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unit_measure_only_for_number() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    // A real unit of measure where the server offers /unit-measure, else a fresh UUID.
    let resp = api
        .post(
            "/unit-measure",
            json!({"name": "Square foot", "symbol": "ft2"}),
        )
        .await;
    let unit = if resp.status == 201 {
        resp.id()
    } else {
        uuid::Uuid::new_v4().to_string()
    };
    let n = api
        .create(
            R,
            json!({"key": "area", "name": "Area", "dataType": "number", "unitMeasureId": unit}),
        )
        .await;
    assert_eq!(n["unitMeasureId"], json!(unit));
    for (i, t) in ["text", "boolean", "date", "select", "multiselect"]
        .iter()
        .enumerate()
    {
        let resp = api
            .post(&format!("/{R}"), json!({"key": format!("u{i}"), "name": format!("U {i}"), "dataType": t, "unitMeasureId": unit}))
            .await;
        assert_validation_names(&resp, "unitMeasureId");
    }
    assert_eq!(api.list_total(R, "").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_covers_name_and_key() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.create(R, def("squareFeet", "Area", "number")).await;
    api.create(R, def("color", "Paint colour", "text")).await;
    assert_eq!(
        field_of(&api.list(R, "search=SQUARE").await, "key"),
        ["squareFeet"]
    );
    assert_eq!(
        field_of(&api.list(R, "search=paint").await, "key"),
        ["color"]
    );
    assert_eq!(
        field_of(&api.list(R, "dataType=number").await, "key"),
        ["squareFeet"]
    );
}
