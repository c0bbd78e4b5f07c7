//! Organization isolation (spec 1, 5; decisions.md 2): another organization's record is 404,
//! exactly as if it did not exist, and no read or write of one organization reaches another's.

use prodops_tests::*;
use serde_json::Value;

struct Case {
    resource: &'static str,
    /// Body creating A's record.
    create: Value,
    /// A harmless PATCH body.
    patch: Value,
    /// `field=value` query selecting A's record by a field.
    filter: String,
    /// A field to group by.
    group_by: &'static str,
    /// Whether DELETE /r/bulk is offered (refused resources answer 403 regardless).
    bulk_delete_offered: bool,
}

async fn check_isolation(case: Case) {
    let server = TestServer::start().await;
    let a = server.org("A").await;
    let b = server.org("B").await;
    let r = case.resource;
    let record = a.create(r, case.create.clone()).await;
    let id = record["id"].as_str().unwrap().to_string();
    let random = uuid::Uuid::new_v4().to_string();

    // By id: 404 for B on GET, PATCH, DELETE, exactly as for an id that does not exist.
    assert_error(&b.get(&format!("/{r}/{id}")).await, 404, "NOT_FOUND");
    assert_error(
        &b.patch(&format!("/{r}/{id}"), case.patch.clone()).await,
        404,
        "NOT_FOUND",
    );
    let del = b.delete(&format!("/{r}/{id}")).await;
    let del_random = b.delete(&format!("/{r}/{random}")).await;
    assert_eq!(
        del.status, del_random.status,
        "DELETE of A's id answers B as for a missing id: {del} vs {del_random}"
    );
    assert_eq!(del.code(), del_random.code(), "{del} vs {del_random}");
    assert!(del.status == 404 || del.status == 403, "{del}");

    // Lists, query, count, group-and-count: B sees nothing of A's.
    let listed = b.list(r, "").await;
    assert!(
        !ids_of(&listed).contains(&id),
        "B's list holds A's record: {listed:?}"
    );
    assert_eq!(b.list_total(r, "").await, 0);
    assert!(b.list(r, &case.filter).await.is_empty());
    let resp = b.post(&format!("/{r}/query"), json!({"id": [id]})).await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        resp.body["values"],
        json!([]),
        "query by A's id from B: {resp}"
    );
    assert_eq!(resp.body["totalCount"], 0, "{resp}");
    let resp = b.post(&format!("/{r}/query"), json!({})).await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["values"], json!([]), "{resp}");
    assert_eq!(b.count(r, "").await, 0);
    assert_eq!(b.count(r, &case.filter).await, 0);
    let resp = b.post(&format!("/{r}/count"), json!({})).await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["count"], 0, "{resp}");
    let resp = b
        .post(
            &format!("/{r}/group-and-count"),
            json!({"groupByField": case.group_by}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        resp.body["values"],
        json!([]),
        "group-and-count from B: {resp}"
    );

    // Bulk PATCH and DELETE from B with a filter matching A's record: nothing touched.
    let resp = b
        .patch(&format!("/{r}/bulk?{}", case.filter), case.patch.clone())
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        resp.body["count"], 0,
        "bulk PATCH from B matched A's record: {resp}"
    );
    let resp = b.delete(&format!("/{r}/bulk?{}", case.filter)).await;
    if case.bulk_delete_offered {
        assert_eq!(resp.status, 200, "{resp}");
        assert_eq!(
            resp.body["count"], 0,
            "bulk DELETE from B matched A's record: {resp}"
        );
    } else {
        assert_error(&resp, 403, "FORBIDDEN");
    }

    // Bulk PUT from B naming A's id: refused, or creates nothing A can see; A's record unchanged.
    let mut hijack = case.create.clone();
    hijack["id"] = json!(id);
    for (k, v) in case.patch.as_object().unwrap() {
        hijack[k] = v.clone();
    }
    let resp = b.put(&format!("/{r}/bulk"), json!([hijack])).await;
    assert!(
        resp.status == 200 || resp.status == 400 || resp.status == 404 || resp.status == 409,
        "bulk PUT of A's id from B: {resp}"
    );
    if resp.status != 200 {
        assert!(resp.code().is_some(), "error shape: {resp}");
    }

    // A's record is exactly as it was, and A still has exactly one record.
    let after = a.read(r, &id).await;
    assert_eq!(after, record, "A's record changed through B");
    assert_eq!(a.list_total(r, "").await, 1);
    assert_eq!(a.count(r, "").await, 1);
    let resp = a.post(&format!("/{r}/query"), json!({"id": [id]})).await;
    assert_eq!(
        resp.body["values"].as_array().map(Vec::len),
        Some(1),
        "{resp}"
    );
    assert_eq!(resp.body["values"][0], record, "{resp}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_is_isolated_between_organizations() {
    check_isolation(Case {
        resource: "worker",
        create: json!({"name": "Alice Isolated", "customerIdentifier": "ISO-1"}),
        patch: json!({"unionCode": "HACKED"}),
        filter: "customerIdentifier=ISO-1".into(),
        group_by: "status",
        bulk_delete_offered: false,
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vendor_is_isolated_between_organizations() {
    check_isolation(Case {
        resource: "vendor",
        create: json!({"name": "Steel Isolated", "code": "ISO-V", "type": "supplier", "status": "active"}),
        patch: json!({"website": "https://hacked.example"}),
        filter: "code=ISO-V".into(),
        group_by: "type",
        bulk_delete_offered: true,
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_entry_is_isolated_between_organizations() {
    check_isolation(Case {
        resource: "catalog-entry",
        create: json!({"catalog": "pay_type", "code": "ISO", "description": "Isolated"}),
        patch: json!({"description": "HACKED"}),
        filter: "code=ISO".into(),
        group_by: "catalog",
        bulk_delete_offered: false,
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn catalog_codes_are_unique_per_organization_only() {
    let server = TestServer::start().await;
    let a = server.org("A").await;
    let b = server.org("B").await;
    a.create(
        "catalog-entry",
        json!({"catalog": "pay_type", "code": "REG"}),
    )
    .await;
    // The same code in another organization is no clash.
    b.create(
        "catalog-entry",
        json!({"catalog": "pay_type", "code": "REG"}),
    )
    .await;
    assert_eq!(a.list_total("catalog-entry", "").await, 1);
    assert_eq!(b.list_total("catalog-entry", "").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn organization_id_always_comes_from_the_key() {
    let server = TestServer::start().await;
    let a = server.org("A").await;
    let b = server.org("B").await;
    // B claims A's organization in the body: ignored, the record is B's.
    let created = b
        .create(
            "worker",
            json!({"name": "Claimer", "organizationId": a.org_id.to_string()}),
        )
        .await;
    assert_eq!(
        created["organizationId"],
        json!(b.org_id.to_string()),
        "{created}"
    );
    assert_eq!(a.list_total("worker", "").await, 0);
    let id = created["id"].as_str().unwrap();
    let resp = b
        .patch(
            &format!("/worker/{id}"),
            json!({"organizationId": a.org_id.to_string(), "status": "inactive"}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        resp.body["organizationId"],
        json!(b.org_id.to_string()),
        "{resp}"
    );
    assert_error(&a.get(&format!("/worker/{id}")).await, 404, "NOT_FOUND");
}
