//! QC template versions and QC sets (spec 2.11, 4.10).

use prodops_tests::*;

#[tokio::test]
async fn versions_are_published_read_and_deleted_unless_referenced() {
    let server = TestServer::start().await;
    let api = server.org("qc").await;
    assert_error(
        &api.post(
            "/qc-template",
            json!({"name": "x", "qcTemplateId": uuid::Uuid::new_v4()}),
        )
        .await,
        405,
        "METHOD_NOT_ALLOWED",
    );
    let v1 = api
        .post(
            "/qc-template/versions",
            json!({"name": "Weld check", "questions": [{"text": "Bead even?"}]}),
        )
        .await;
    assert_eq!(v1.status, 201, "{v1}");
    assert_eq!(v1.body["versionNumber"], 1);
    assert_eq!(v1.body["requiresPassFail"], true);
    let template = v1.body["qcTemplateId"].clone();
    let v2 = api
        .post("/qc-template/versions", json!({"qcTemplateId": template, "name": "Weld check", "requiresPassFail": false, "isDraft": true}))
        .await;
    assert_eq!(v2.status, 201, "{v2}");
    assert_eq!(v2.body["versionNumber"], 2);
    assert_validation_names(
        &api.post(
            "/qc-template/versions",
            json!({"qcTemplateId": uuid::Uuid::new_v4(), "name": "x"}),
        )
        .await,
        "qcTemplateId",
    );
    assert_validation_names(
        &api.post("/qc-template/versions", json!({"name": " "}))
            .await,
        "name",
    );
    assert_validation_names(
        &api.post("/qc-template/versions", json!({"name": "x", "bogus": 1}))
            .await,
        "bogus",
    );
    // Reads.
    assert_eq!(api.list("qc-template", "search=weld").await.len(), 2);
    assert_eq!(api.count("qc-template", "isDraft=true").await, 1);
    let groups = api
        .post(
            "/qc-template/group-and-count",
            json!({"groupByField": "qcTemplateId"}),
        )
        .await;
    assert_eq!(
        groups.body["values"],
        json!([{"groupId": template, "count": 2}]),
        "{groups}"
    );
    let q = api
        .post(
            "/qc-template/query",
            json!({"select": ["versionNumber"], "filter": {"requiresPassFail": false}}),
        )
        .await;
    assert_eq!(q.body["values"][0]["versionNumber"], 2, "{q}");
    assert_eq!(
        api.post("/qc-template/count", json!({})).await.body["count"],
        2
    );
    // PATCH writes nothing.
    let id1 = v1.body["id"].as_str().unwrap().to_string();
    let before = api.read("qc-template", &id1).await;
    let patched = api
        .patch(&format!("/qc-template/{id1}"), json!({"name": "Renamed"}))
        .await;
    assert_eq!(patched.status, 200, "{patched}");
    assert_eq!(patched.body, before);
    assert_eq!(api.read("qc-template", &id1).await, before);
    assert_error(
        &api.patch(&format!("/qc-template/{}", uuid::Uuid::new_v4()), json!({}))
            .await,
        404,
        "NOT_FOUND",
    );
    // A QC set must name a version; a referenced version cannot be deleted.
    assert_validation_names(
        &api.post(
            "/qc-set",
            json!({"templateId": uuid::Uuid::new_v4(), "deliverableId": uuid::Uuid::new_v4()}),
        )
        .await,
        "templateId",
    );
    let set = api
        .create(
            "qc-set",
            json!({"templateId": id1, "deliverableId": uuid::Uuid::new_v4()}),
        )
        .await;
    assert_error(
        &api.delete(&format!("/qc-template/{id1}")).await,
        409,
        "CONFLICT",
    );
    assert_eq!(api.read("qc-template", &id1).await["id"], id1.as_str());
    assert_eq!(
        api.delete(&format!("/qc-set/{}", set["id"].as_str().unwrap()))
            .await
            .status,
        204
    );
    assert_eq!(api.delete(&format!("/qc-template/{id1}")).await.status, 204);
    assert_error(
        &api.get(&format!("/qc-template/{id1}")).await,
        404,
        "NOT_FOUND",
    );
    // Another organization sees none of it.
    let other = server.org("other").await;
    assert_error(
        &other
            .get(&format!("/qc-template/{}", v2.body["id"].as_str().unwrap()))
            .await,
        404,
        "NOT_FOUND",
    );
    assert_validation_names(
        &other
            .post(
                "/qc-template/versions",
                json!({"qcTemplateId": template, "name": "x"}),
            )
            .await,
        "qcTemplateId",
    );
}
