//! Vendors and contacts (spec 2.5, 2.6, 3.5): DELETE archives, PATCH `{isArchived:false}`
//! restores, enum validation.

use prodops_tests::*;
use serde_json::Value;

async fn delete_archives_and_patch_restores(r: &str, body: Value) {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let record = api.create(r, body).await;
    let other = api.create(r, json!({"name": "Other"})).await;
    let id = record["id"].as_str().unwrap();
    assert_eq!(record["isArchived"], false);
    assert_eq!(record["archivedAt"], Value::Null);

    let resp = api.delete(&format!("/{r}/{id}")).await;
    assert_eq!(resp.status, 204, "{resp}");
    assert!(resp.text.is_empty(), "204 has no body: {resp}");

    // Hidden from the list, visible with isArchived=true, with archivedAt set; still readable by id.
    assert_eq!(
        api.list_ids(r, "").await,
        vec![other["id"].as_str().unwrap().to_string()]
    );
    let archived = api.list(r, "isArchived=true").await;
    assert_eq!(ids_of(&archived), vec![id.to_string()]);
    assert_eq!(archived[0]["isArchived"], true);
    assert!(
        archived[0]["archivedAt"].is_string(),
        "archivedAt set: {}",
        archived[0]
    );
    let read = api.read(r, id).await;
    assert_eq!(read["isArchived"], true);
    assert_eq!(read["archivedAt"], archived[0]["archivedAt"]);
    assert_eq!(read["name"], record["name"], "archiving keeps the fields");

    // Restore.
    let resp = api
        .patch(&format!("/{r}/{id}"), json!({"isArchived": false}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["isArchived"], false);
    assert_eq!(resp.body["archivedAt"], Value::Null);
    assert_eq!(
        without_timestamps(&resp.body),
        without_timestamps(&record),
        "restored as it was"
    );
    assert_eq!(api.list_total(r, "").await, 2);
    assert_eq!(api.list_total(r, "isArchived=true").await, 0);

    // Archiving through PATCH works the same way.
    let resp = api
        .patch(&format!("/{r}/{id}"), json!({"isArchived": true}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["isArchived"], true);
    assert!(resp.body["archivedAt"].is_string(), "{resp}");
    assert_eq!(api.list_total(r, "").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vendor_delete_archives_and_patch_restores() {
    delete_archives_and_patch_restores(
        "vendor",
        json!({"name": "Steel Co", "code": "SC", "type": "supplier"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contact_delete_archives_and_patch_restores() {
    delete_archives_and_patch_restores(
        "contact",
        json!({"name": "Pat", "email": "pat@example.com"}),
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vendor_enums_are_validated() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    assert_validation_names(
        &api.post("/vendor", json!({"name": "V", "type": "bogus"}))
            .await,
        "type",
    );
    assert_validation_names(
        &api.post("/vendor", json!({"name": "V", "status": "bogus"}))
            .await,
        "status",
    );
    assert_validation_names(
        &api.post("/vendor", json!({"name": "V", "country": "FR"}))
            .await,
        "country",
    );
    assert_validation_names(
        &api.post("/vendor", json!({"name": "V", "type": "Supplier"}))
            .await,
        "type",
    );
    assert_eq!(api.total("vendor").await, 0);

    for t in ["supplier", "manufacturer", "subcontractor"] {
        let v = api.create("vendor", json!({"name": t, "type": t})).await;
        assert_eq!(v["type"], t);
    }
    for s in ["active", "inactive"] {
        assert_eq!(
            api.create("vendor", json!({"name": s, "status": s})).await["status"],
            s
        );
    }
    for c in ["US", "CA"] {
        assert_eq!(
            api.create("vendor", json!({"name": c, "country": c})).await["country"],
            c
        );
    }
    let v = api
        .create("vendor", json!({"name": "Patchable", "type": "supplier"}))
        .await;
    let id = v["id"].as_str().unwrap();
    assert_validation_names(
        &api.patch(&format!("/vendor/{id}"), json!({"type": "bogus"}))
            .await,
        "type",
    );
    assert_eq!(
        api.read("vendor", id).await,
        v,
        "the refused PATCH changed nothing"
    );
    let resp = api
        .patch(
            &format!("/vendor/{id}"),
            json!({"type": "subcontractor", "country": null}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["type"], "subcontractor");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contact_fields_round_trip() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let v = api.create("vendor", json!({"name": "Owner"})).await;
    let body = json!({
        "name": "Full Contact", "identifier": "CT-1", "email": "f@example.com", "phone": "555",
        "title": "Driver", "companyName": "Haul Inc", "vendorId": v["id"], "role": "driver",
        "isPrimary": true, "notes": "n", "metadata": {"k": "v"}
    });
    let c = api.create("contact", body.clone()).await;
    for (k, val) in body.as_object().unwrap() {
        assert_eq!(&c[k], val, "{k}");
    }
    assert_validation_names(
        &api.post("/contact", json!({"name": "x", "vendorId": "nope"}))
            .await,
        "vendorId",
    );
    assert_validation_names(
        &api.post("/contact", json!({"name": "x", "isPrimary": "yes"}))
            .await,
        "isPrimary",
    );
}
