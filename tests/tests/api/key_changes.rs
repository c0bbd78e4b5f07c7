//! Decisions §1: a revoked key stops working at once, and a flag set by an operator applies at
//! once, on every server process sharing the database (issue 13, item 1). The operator's
//! change goes through the real operator path: the admin functions the `prodops-server key
//! revoke` and `org set-flag` subcommands call, on a database connection of their own, as
//! another process would hold it.

use prodops_server::store::Store;
use prodops_tests::*;

/// The database as an operator command opens it (its own connections, migrations run).
async fn operator(server: &TestServer) -> Store {
    Store::open(server.database_url())
        .await
        .expect("the operator opens the database")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_key_is_refused_at_once_by_every_server() {
    let a = TestServer::start().await;
    let b = a.another().await;
    let admin = a.org("Revocation").await;
    let (reader, key_id) = a.key(&admin, false, &["Worker.Read"]).await;
    let on_a = reader.clone();
    let on_b = reader.on(&b);
    let ann = admin.create("worker", json!({"name": "Ann"})).await;
    let ann_path = format!("/worker/{}", ann["id"].as_str().unwrap());
    // Both servers have served the key, for lists and for reads by id (whose key lookup reads
    // the record in the same statement), so any per-process cache would hold it.
    for _ in 0..3 {
        assert_eq!(on_a.get("/worker").await.status, 200);
        assert_eq!(on_b.get("/worker").await.status, 200);
        assert_eq!(on_a.get(&ann_path).await.body["name"], "Ann");
        assert_eq!(on_b.get(&ann_path).await.body["name"], "Ann");
    }
    let ops = operator(&a).await;
    prodops_server::admin::revoke_key(&ops, key_id)
        .await
        .expect("key revoke");
    // The very next request on each server.
    assert_error(&on_b.get(&ann_path).await, 401, "UNAUTHORIZED");
    assert_error(&on_a.get(&ann_path).await, 401, "UNAUTHORIZED");
    assert_error(&on_b.get("/worker").await, 401, "UNAUTHORIZED");
    assert_error(&on_a.get("/worker").await, 401, "UNAUTHORIZED");
    assert_error(
        &on_b.post("/worker/query", json!({})).await,
        401,
        "UNAUTHORIZED",
    );
    // The organization's other keys keep working on both.
    assert_eq!(admin.get("/worker").await.status, 200);
    assert_eq!(admin.on(&b).get("/worker").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flag_set_by_the_operator_applies_at_once_on_every_server() {
    let a = TestServer::start().await;
    let b = a.another().await;
    let api = a.org("Flags").await;
    let servers = [api.clone(), api.on(&b)];
    // Without documentsHubEnabled an upload is 403; with it, an empty upload is a 400 (the
    // flag is checked first, and nothing is written either way).
    for api in &servers {
        for _ in 0..2 {
            let resp = api.post_raw("/document/upload", Vec::new()).await;
            assert_error(&resp, 403, "FORBIDDEN");
        }
    }
    let ops = operator(&a).await;
    prodops_server::admin::set_flag(&ops, api.org_id, "documentsHubEnabled", true)
        .await
        .expect("org set-flag");
    for api in &servers {
        let resp = api.post_raw("/document/upload", Vec::new()).await;
        assert_error(&resp, 400, "VALIDATION_ERROR");
    }
    prodops_server::admin::set_flag(&ops, api.org_id, "documentsHubEnabled", false)
        .await
        .expect("org set-flag");
    for api in servers.iter().rev() {
        let resp = api.post_raw("/document/upload", Vec::new()).await;
        assert_error(&resp, 403, "FORBIDDEN");
    }
}
