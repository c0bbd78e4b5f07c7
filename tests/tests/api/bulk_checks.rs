//! A bulk PATCH checks its body before it looks for the records its filter matches (spec 4.7,
//! issue 13 item 7): a body that would be refused for a matching record is refused with 400
//! when nothing matches, too, on every resource; a body any record could take answers
//! `{"count": 0}`.

use prodops_tests::*;
use serde_json::Value;

/// `PATCH path` with `body` twice: with a filter that matches nothing, and (when given) with
/// one that matches records; both refused the same way, naming `field`, and nothing changed.
async fn refused_with_and_without_matches(
    api: &Api,
    resource: &str,
    none: &str,
    some: Option<&str>,
    body: Value,
    field: &str,
) {
    let before = api.list(resource, "pageSize=1000").await;
    for filter in std::iter::once(none).chain(some) {
        let resp = api
            .patch(&format!("/{resource}/bulk?{filter}"), body.clone())
            .await;
        assert_validation_names(&resp, field);
    }
    assert_eq!(
        api.list(resource, "pageSize=1000").await,
        before,
        "nothing changed"
    );
}

async fn count_of(api: &Api, path: &str, body: Value) -> u64 {
    let resp = api.patch(path, body).await;
    assert_eq!(resp.status, 200, "{resp}");
    resp.body["count"].as_u64().expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn document_bulk_patch_takes_only_is_archived_even_when_nothing_matches() {
    let server = TestServer::start().await;
    let api = server.org("Docs").await;
    refused_with_and_without_matches(
        &api,
        "document",
        "isArchived=false",
        None,
        json!({"copyMode": "copy"}),
        "copyMode",
    )
    .await;
    refused_with_and_without_matches(
        &api,
        "document",
        "isArchived=true",
        None,
        json!({"isArchived": "yes"}),
        "isArchived",
    )
    .await;
    assert_eq!(
        count_of(
            &api,
            "/document/bulk?isArchived=false",
            json!({"isArchived": true})
        )
        .await,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_bulk_patch_refuses_a_bad_status_or_name_whether_or_not_anything_matches() {
    let server = TestServer::start().await;
    let api = server.org("Workers").await;
    api.create("worker", json!({"name": "Ada", "status": "active"}))
        .await;
    for (body, field) in [
        (json!({"status": "bogus"}), "status"),
        (json!({"status": 3}), "status"),
        (json!({"name": "   "}), "name"),
        (
            json!({"exemptFromAssignments": "no"}),
            "exemptFromAssignments",
        ),
        (json!({"teamId": "not-a-uuid"}), "teamId"),
        (json!({"nickname": "x"}), "nickname"),
    ] {
        refused_with_and_without_matches(
            &api,
            "worker",
            "status=terminated",
            Some("status=active"),
            body,
            field,
        )
        .await;
    }
    // Bodies a worker can take: nothing matches, nothing changes.
    for body in [
        json!({"status": "inactive"}),
        json!({"name": " Bea "}),
        json!({"unionCode": null, "id": "ignored", "createdAt": "ignored"}),
        json!({}),
    ] {
        assert_eq!(
            count_of(&api, "/worker/bulk?status=terminated", body).await,
            0
        );
    }
    assert_eq!(
        count_of(
            &api,
            "/worker/bulk?status=active",
            json!({"status": "inactive"})
        )
        .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliverable_bulk_patch_checks_its_body_when_nothing_matches() {
    let server = TestServer::start().await;
    let api = server.org("Tree").await;
    api.create("deliverable", json!({"name": "Order", "type": "order"}))
        .await;
    for (body, field) in [
        (json!({"quantity": "many"}), "quantity"),
        (json!({"quantity": -1}), "quantity"),
        (json!({"type": "bogus"}), "type"),
        (json!({"name": ""}), "name"),
        (json!({"data": [1]}), "data"),
        (json!({"parentId": 7}), "parentId"),
    ] {
        refused_with_and_without_matches(
            &api,
            "deliverable",
            "type=step",
            Some("type=order"),
            body,
            field,
        )
        .await;
    }
    assert_eq!(
        count_of(
            &api,
            "/deliverable/bulk?type=step",
            json!({"quantity": 3, "data": {"x": null}, "computed": {"ignored": true}})
        )
        .await,
        0
    );
    // A concept view: its implied type cannot change, matches or not.
    refused_with_and_without_matches(
        &api,
        "concept/order",
        "name=nothing",
        Some("name=Order"),
        json!({"type": "phase"}),
        "type",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_bulk_patch_checks_its_body_when_nothing_matches() {
    let server = TestServer::start().await;
    let api = server.org("Catalog").await;
    api.create(
        "catalog-entry",
        json!({"catalog": "pay_type", "code": "REG", "description": "Regular"}),
    )
    .await;
    for (body, field) in [
        (json!({"code": "  "}), "code"),
        (json!({"sortOrder": "first"}), "sortOrder"),
        (json!({"colour": "red"}), "colour"),
    ] {
        refused_with_and_without_matches(
            &api,
            "catalog-entry",
            "catalog=none",
            Some("catalog=pay_type"),
            body,
            field,
        )
        .await;
    }
    assert_eq!(
        count_of(
            &api,
            "/catalog-entry/bulk?catalog=none",
            json!({"description": "x"})
        )
        .await,
        0
    );
}
