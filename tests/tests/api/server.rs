//! The server as a whole (decisions.md 1, design.md storage): in-memory SQLite, several servers
//! on one database, concurrent writers, uniqueness under races.

use prodops_tests::*;
use tokio::task::JoinSet;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_memory_sqlite_works() {
    let server = TestServer::start_with(|c| c.database_url = "sqlite::memory:".into()).await;
    let api = server.org("Acme").await;
    let w = api.create("worker", json!({"name": "In memory"})).await;
    let id = w["id"].as_str().unwrap();
    // Many requests, so that more than one pooled connection would be used.
    for _ in 0..20 {
        assert_eq!(api.read("worker", id).await, w);
    }
    let mut set = JoinSet::new();
    for i in 0..10 {
        let api = api.clone();
        set.spawn(async move { api.post("/worker", json!({"name": format!("M{i}")})).await });
    }
    while let Some(resp) = set.join_next().await {
        let resp = resp.unwrap();
        assert_eq!(resp.status, 201, "{resp}");
    }
    assert_eq!(api.list_total("worker", "").await, 11);
    assert_eq!(server.get_root("/healthz").await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servers_on_one_database_share_everything() {
    let first = TestServer::start().await;
    let api = first.org("Acme").await;
    let w = api.create("worker", json!({"name": "Shared"})).await;
    let id = w["id"].as_str().unwrap();
    // A second server on the same database: migrations run again without harm.
    let second = first.another().await;
    let api2 = api.on(&second);
    assert_eq!(api2.read("worker", id).await, w);
    api2.create("worker", json!({"name": "Via second"})).await;
    assert_eq!(api.list_total("worker", "").await, 2);

    // A key revoked through one server stops working on the other at once.
    let (reader, key_id) = first.key(&api, false, &["Worker.Read"]).await;
    assert_eq!(reader.on(&second).get("/worker").await.status, 200);
    second.running().revoke_key(key_id).await.expect("revoke");
    assert_error(&reader.get("/worker").await, 401, "UNAUTHORIZED");
    assert_error(
        &reader.on(&second).get("/worker").await,
        401,
        "UNAUTHORIZED",
    );

    // Idempotency keys are kept in the database: a repeat through the other server is a replay.
    let key = format!("replica-{}", unique());
    let r1 = api
        .req(reqwest::Method::POST, "/worker")
        .json(json!({"name": "Once"}))
        .idempotency_key(&key)
        .send()
        .await;
    let r2 = api2
        .req(reqwest::Method::POST, "/worker")
        .json(json!({"name": "Once"}))
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(r1.status, 201, "{r1}");
    assert_eq!(r2.status, 201, "{r2}");
    assert_eq!(r1.body, r2.body);
    assert_eq!(api.list_total("worker", "").await, 3);

    // Stopping one leaves the other serving.
    first.shutdown().await;
    assert_eq!(api2.list_total("worker", "").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_all_succeed() {
    let first = TestServer::start().await;
    let second = first.another().await;
    let api = first.org("Acme").await;
    let api2 = api.on(&second);
    let mut set = JoinSet::new();
    for i in 0..40 {
        let api = if i % 2 == 0 {
            api.clone()
        } else {
            api2.clone()
        };
        set.spawn(async move { api.post("/worker", json!({"name": format!("C{i}")})).await });
    }
    for i in 0..4 {
        let api = if i % 2 == 0 {
            api.clone()
        } else {
            api2.clone()
        };
        set.spawn(async move {
            let batch: Vec<_> = (0..100)
                .map(|j| json!({"name": format!("B{i}-{j}")}))
                .collect();
            api.put("/worker/bulk", json!(batch)).await
        });
    }
    for i in 0..10 {
        let api = api.clone();
        set.spawn(async move {
            api.patch(
                &format!("/worker/bulk?name=C{}", i * 2),
                json!({"status": "inactive"}),
            )
            .await
        });
    }
    while let Some(resp) = set.join_next().await {
        let resp = resp.unwrap();
        assert!(
            resp.status == 200 || resp.status == 201,
            "concurrent write refused: {resp}"
        );
    }
    assert_eq!(api.list_total("worker", "").await, 440);
    assert_eq!(api.count("worker", "search=C").await, 40);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_duplicate_codes_let_exactly_one_win() {
    let first = TestServer::start().await;
    let second = first.another().await;
    let api = first.org("Acme").await;
    let api2 = api.on(&second);
    let mut set = JoinSet::new();
    for i in 0..12 {
        let api = if i % 2 == 0 {
            api.clone()
        } else {
            api2.clone()
        };
        let code = if i % 3 == 0 {
            "RACE"
        } else if i % 3 == 1 {
            "race"
        } else {
            " Race "
        };
        set.spawn(async move {
            api.post(
                "/catalog-entry",
                json!({"catalog": "pay_type", "code": code}),
            )
            .await
        });
    }
    let mut created = 0;
    while let Some(resp) = set.join_next().await {
        let resp = resp.unwrap();
        if resp.status == 201 {
            created += 1;
        } else {
            assert_error(&resp, 409, "CONFLICT");
        }
    }
    assert_eq!(
        created, 1,
        "exactly one of the racing duplicates is created"
    );
    assert_eq!(api.list_total("catalog-entry", "").await, 1);

    // The same for custom property keys.
    let mut set = JoinSet::new();
    for i in 0..8 {
        let api = if i % 2 == 0 {
            api.clone()
        } else {
            api2.clone()
        };
        set.spawn(async move {
            api.post(
                "/custom-property",
                json!({"key": if i % 2 == 0 { "raceKey" } else { "RACEKEY" },
                       "name": format!("Race {i}"), "dataType": "text"}),
            )
            .await
        });
    }
    let mut created = 0;
    while let Some(resp) = set.join_next().await {
        let resp = resp.unwrap();
        if resp.status == 201 {
            created += 1;
        } else {
            assert_error(&resp, 409, "CONFLICT");
        }
    }
    assert_eq!(created, 1);
}
