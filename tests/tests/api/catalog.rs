//! Catalog entries (spec 2.8): trimmed codes unique per catalog case-insensitively (409),
//! immutable catalog, bulk delete refused, listing across catalogs.

use prodops_tests::*;
use serde_json::Value;

const R: &str = "catalog-entry";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_trims_the_code_and_fills_defaults() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let e = api
        .create(
            R,
            json!({"catalog": "pay_type", "code": "  REG  ", "description": "Regular"}),
        )
        .await;
    assert_eq!(e["code"], "REG");
    assert_eq!(e["catalog"], "pay_type");
    assert_eq!(e["description"], "Regular");
    assert_eq!(e["isActive"], true);
    assert_eq!(e["sortOrder"], 0);
    assert_eq!(e["organizationId"], json!(api.org_id.to_string()));
    let id = e["id"].as_str().unwrap();
    assert_eq!(api.read(R, id).await, e);
    let plain = api
        .create(R, json!({"catalog": "pay_type", "code": "OT"}))
        .await;
    assert_eq!(plain["description"], Value::Null);
    // A PATCH trims too.
    let resp = api
        .patch(&format!("/{R}/{id}"), json!({"code": " REG2\t"}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["code"], "REG2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_is_required_on_create() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    assert_validation_names(
        &api.post(&format!("/{R}"), json!({"code": "X"})).await,
        "catalog",
    );
    assert_eq!(api.list_total(R, "").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_code_in_the_same_catalog_is_409_case_insensitively() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.create(R, json!({"catalog": "pay_type", "code": "REG"}))
        .await;
    for dup in ["REG", "reg", "Reg", "  rEg "] {
        let resp = api
            .post(
                &format!("/{R}"),
                json!({"catalog": "pay_type", "code": dup}),
            )
            .await;
        assert_error(&resp, 409, "CONFLICT");
    }
    assert_eq!(api.list_total(R, "").await, 1);
    // Another catalog: unrelated.
    let other = api
        .create(R, json!({"catalog": "shift_type", "code": "reg"}))
        .await;
    assert_eq!(other["code"], "reg");
    assert_eq!(api.list_total(R, "").await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rename_onto_another_code_is_409() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.create(R, json!({"catalog": "pay_type", "code": "REG"}))
        .await;
    let ot = api
        .create(R, json!({"catalog": "pay_type", "code": "OT"}))
        .await;
    let id = ot["id"].as_str().unwrap();
    assert_error(
        &api.patch(&format!("/{R}/{id}"), json!({"code": "reg"}))
            .await,
        409,
        "CONFLICT",
    );
    assert_eq!(api.read(R, id).await, ot, "unchanged");
    // Changing the case of its own code is no clash.
    let resp = api
        .patch(&format!("/{R}/{id}"), json!({"code": "ot"}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["code"], "ot");
    // A bulk PATCH that would give two entries the same code is refused too.
    let resp = api
        .patch(
            &format!("/{R}/bulk?catalog=pay_type"),
            json!({"code": "SAME"}),
        )
        .await;
    assert_error(&resp, 409, "CONFLICT");
    let mut codes = field_of(&api.list(R, "").await, "code");
    codes.sort();
    assert_eq!(codes, ["REG", "ot"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_put_with_a_duplicate_code_is_409_and_writes_nothing() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.create(R, json!({"catalog": "pay_type", "code": "REG"}))
        .await;
    // Clash with a stored code.
    let resp = api
        .put(
            &format!("/{R}/bulk"),
            json!([{"catalog": "pay_type", "code": "VAC"}, {"catalog": "pay_type", "code": " reg "}]),
        )
        .await;
    assert_error(&resp, 409, "CONFLICT");
    assert_eq!(api.list_total(R, "").await, 1, "all or nothing");
    // Clash inside the batch.
    let resp = api
        .put(
            &format!("/{R}/bulk"),
            json!([{"catalog": "pay_type", "code": "SICK"}, {"catalog": "pay_type", "code": "sick"}]),
        )
        .await;
    assert_error(&resp, 409, "CONFLICT");
    assert_eq!(api.list_total(R, "").await, 1);
    // The same codes in different catalogs are fine.
    let ids = api
        .bulk_put(
            R,
            vec![
                json!({"catalog": "pay_type", "code": "SICK"}),
                json!({"catalog": "shift_type", "code": "sick"}),
            ],
        )
        .await;
    assert_eq!(ids.len(), 2);
    assert_eq!(api.list_total(R, "").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_delete_is_refused() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.bulk_put(
        R,
        vec![
            json!({"catalog": "pay_type", "code": "A"}),
            json!({"catalog": "pay_type", "code": "B"}),
        ],
    )
    .await;
    assert_error(
        &api.delete(&format!("/{R}/bulk?catalog=pay_type")).await,
        403,
        "FORBIDDEN",
    );
    assert_error(
        &api.delete(&format!("/{R}/bulk?code=A")).await,
        403,
        "FORBIDDEN",
    );
    assert_eq!(api.list_total(R, "").await, 2, "nothing deleted");
    // Deactivating instead works, through bulk PATCH.
    let resp = api
        .patch(&format!("/{R}/bulk?code=A"), json!({"isActive": false}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body, json!({"count": 1}));
    assert_eq!(api.list_total(R, "isActive=false").await, 1);
    assert_eq!(
        api.list_total(R, "").await,
        2,
        "inactive entries are still listed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_without_a_catalog_filter_returns_every_catalog() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.bulk_put(
        R,
        vec![
            json!({"catalog": "pay_type", "code": "REG"}),
            json!({"catalog": "shift_type", "code": "NIGHT"}),
            json!({"catalog": "pay_type", "code": "OT"}),
        ],
    )
    .await;
    let all = api.list(R, "").await;
    let mut catalogs = field_of(&all, "catalog");
    catalogs.sort();
    assert_eq!(catalogs, ["pay_type", "pay_type", "shift_type"]);
    let pay = api.list(R, "catalog=pay_type").await;
    assert_eq!(pay.len(), 2);
    assert!(pay.iter().all(|e| e["catalog"] == "pay_type"));
    assert_eq!(
        field_of(&api.list(R, "catalog=shift_type").await, "code"),
        ["NIGHT"]
    );
    assert_eq!(api.count(R, "catalog=pay_type").await, 2);
    let resp = api
        .post(
            &format!("/{R}/group-and-count"),
            json!({"groupByField": "catalog"}),
        )
        .await;
    assert_eq!(
        resp.body,
        json!({"values": [{"groupId": "pay_type", "count": 2}, {"groupId": "shift_type", "count": 1}]}),
        "{resp}"
    );
    // Search columns: code and description.
    api.create(
        R,
        json!({"catalog": "pay_type", "code": "HOL", "description": "Holiday pay"}),
    )
    .await;
    assert_eq!(
        field_of(&api.list(R, "search=holiday").await, "code"),
        ["HOL"]
    );
    assert_eq!(
        field_of(&api.list(R, "search=nig").await, "code"),
        ["NIGHT"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_order_is_sort_order_then_code() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.bulk_put(
        R,
        vec![
            json!({"catalog": "pay_type", "code": "A", "sortOrder": 2}),
            json!({"catalog": "pay_type", "code": "Z", "sortOrder": 1}),
            json!({"catalog": "pay_type", "code": "B", "sortOrder": 1}),
        ],
    )
    .await;
    assert_eq!(
        field_of(&api.list(R, "sort=sortOrder,code").await, "code"),
        ["B", "Z", "A"]
    );
    assert_eq!(
        field_of(&api.list(R, "catalog=pay_type").await, "code"),
        ["B", "Z", "A"],
        "spec 2.8: sortOrder is the display order, ties break on code"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_cannot_be_changed_by_patch() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let e = api
        .create(R, json!({"catalog": "pay_type", "code": "REG"}))
        .await;
    let id = e["id"].as_str().unwrap();
    assert_validation_names(
        &api.patch(&format!("/{R}/{id}"), json!({"catalog": "shift_type"}))
            .await,
        "catalog",
    );
    assert_eq!(api.read(R, id).await, e);
    // Sending the same catalog back (a record written back as read) is fine.
    let resp = api
        .patch(
            &format!("/{R}/{id}"),
            json!({"catalog": "pay_type", "description": "Regular"}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["catalog"], "pay_type");
    let resp = api
        .patch(
            &format!("/{R}/bulk?code=REG"),
            json!({"catalog": "shift_type"}),
        )
        .await;
    assert_error(&resp, 400, "VALIDATION_ERROR");
    assert_eq!(api.read(R, id).await["catalog"], "pay_type");
}
