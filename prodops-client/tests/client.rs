//! The client against a real server started in-process (prodops-tests harness).

use std::time::Duration;

use futures::TryStreamExt;
use prodops_client::{Client, Config, Error, ListParams, Method, Query};
use prodops_core::worker::{Worker, WorkerStatus};
use prodops_tests::*;
use serde_json::Value;

fn client(server: &TestServer, api: &Api) -> Client {
    Client::new(Config::new(server.base_url(), api.key().unwrap())).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_standard_endpoints() {
    let server = TestServer::start().await;
    let api = server.org("Client").await;
    let c = client(&server, &api);
    let workers = c.resource::<Worker>();

    let ann = workers
        .create(&json!({"name": "Ann", "customerIdentifier": "E1"}))
        .await
        .unwrap();
    assert_eq!(ann.status, WorkerStatus::Active);
    assert_eq!(workers.get(ann.id).await.unwrap(), ann);
    let ann2 = workers
        .update(ann.id, &json!({"status": "inactive"}))
        .await
        .unwrap();
    assert_eq!(ann2.status, WorkerStatus::Inactive);

    let put = workers
        .bulk_put(
            &(0..25)
                .map(|i| json!({"name": format!("W{i:02}")}))
                .collect::<Vec<_>>(),
        )
        .await
        .unwrap();
    assert_eq!(put.count, 25);
    assert_eq!(put.ids.len(), 25);

    // The stream pages by itself, in order, across many pages.
    let all: Vec<Worker> = workers
        .list(ListParams::new().page_size(4))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(all.len(), 26);
    assert_eq!(all[0].id, ann.id);
    let limited: Vec<Worker> = workers
        .list(ListParams::new().page_size(4).limit(6))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(limited.len(), 6);
    let pages: Vec<_> = workers
        .pages(ListParams::new().page_size(10).prefetch(3))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        pages.iter().map(|p| p.values.len()).collect::<Vec<_>>(),
        [10, 10, 6]
    );

    assert_eq!(
        workers
            .count(&ListParams::new().filter("status", "inactive"))
            .await
            .unwrap(),
        1
    );
    let groups = workers
        .group_and_count("status", &ListParams::new())
        .await
        .unwrap();
    assert_eq!(groups[0].group_id, json!("active"));
    assert_eq!(groups[0].count, 25);

    // Query by ids, typed and with select.
    let page = workers
        .query(&Query::new().ids(put.ids[..3].to_vec()))
        .await
        .unwrap();
    assert_eq!(page.values.len(), 3);
    let sel = workers
        .query_values(
            &Query::new()
                .ids([ann.id.to_string()])
                .select(["customerIdentifier"]),
        )
        .await
        .unwrap();
    assert_eq!(
        sel.values,
        [json!({"id": ann.id, "customerIdentifier": "E1"})]
    );

    // Bulk update by filter.
    let n = workers
        .bulk_update(&ListParams::new().search("W0"), &json!({"unionCode": "U"}))
        .await
        .unwrap();
    assert_eq!(n, 10);

    // Archive and restore: the worker's way (PATCH) and the typed action methods.
    let archived = workers.archive(ann.id).await.unwrap();
    assert!(archived.is_archived);
    assert_eq!(archived.name, "Ann - (archived 1)");
    let restored = c.restore_worker(ann.id).await.unwrap();
    assert_eq!(restored.name, "Ann");
    assert!(c.archive_worker(ann.id).await.unwrap().is_archived);
    let archived_list: Vec<Worker> = workers
        .list(ListParams::new().filter("isArchived", "true"))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(archived_list.len(), 1);

    // Archive on delete (vendors), untyped by path.
    let vendors = c.resource_at("vendor");
    let v = vendors.create(&json!({"name": "Acme"})).await.unwrap();
    let id = v["id"].as_str().unwrap().to_string();
    assert_eq!(vendors.archive(&id).await.unwrap()["isArchived"], true);
    assert_eq!(vendors.restore(&id).await.unwrap()["isArchived"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_error_type_with_status_code_details_and_request_id() {
    let server = TestServer::start().await;
    let api = server.org("Client").await;
    let c = client(&server, &api);
    let workers = c.workers();

    let err = workers.get(uuid::Uuid::new_v4()).await.unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.code(), Some("NOT_FOUND"));
    assert!(err.request_id().is_some_and(|r| !r.is_empty()));

    let err = workers
        .bulk_put(&[
            json!({"name": "ok"}),
            json!({"name": ""}),
            json!({"name": "ok2"}),
        ])
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(err.code(), Some("VALIDATION_ERROR"));
    assert_eq!(err.details()[0].index, Some(1), "{err}");

    let err = c
        .resource_at("worker")
        .delete(uuid::Uuid::new_v4())
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(403));

    let bad = Client::new(Config::new(server.base_url(), "pdk_nope")).unwrap();
    let err = bad.workers().count(&ListParams::new()).await.unwrap_err();
    assert_eq!(err.code(), Some("UNAUTHORIZED"));

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let gone = Client::new(Config::new(format!("http://{addr}"), "k").max_attempts(2)).unwrap();
    assert!(matches!(
        gone.workers().count(&ListParams::new()).await,
        Err(Error::Network(_))
    ));

    // Actions whose endpoints are not in this build answer 404 through the same error type.
    let err = c.production_status(uuid::Uuid::new_v4()).await.unwrap_err();
    assert_eq!(err.status(), Some(404));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_429_and_posts_once() {
    let server = TestServer::start_with(|c| {
        c.rate_limit = 2;
        c.rate_limit_window = Duration::from_secs(1);
    })
    .await;
    let api = server.org("Client").await;
    let c = client(&server, &api);
    for i in 0..6 {
        c.workers()
            .create(&json!({"name": format!("R{i}")}))
            .await
            .unwrap();
    }
    let n = c.workers().count(&ListParams::new()).await.unwrap();
    assert_eq!(n, 6, "every create applied exactly once");

    // With one attempt, the 429 comes back as the error. (On a server whose window cannot turn
    // between the requests: a replica on the same database whose clock stands still.)
    let still = server
        .another_with(|c| {
            c.rate_limit = 2;
            c.rate_limit_window = Duration::from_secs(3600);
            c.clock = Clock::manual();
        })
        .await;
    let impatient =
        Client::new(Config::new(still.base_url(), api.key().unwrap()).max_attempts(1)).unwrap();
    for _ in 0..2 {
        impatient.workers().count(&ListParams::new()).await.unwrap();
    }
    let e = impatient
        .workers()
        .count(&ListParams::new())
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("RATE_LIMITED"));
    assert_eq!(e.status(), Some(429));

    // The User-Agent names the crate and version; the server sees it (echoed nowhere, so check
    // the constant and that requests with it succeed).
    assert!(prodops_client::USER_AGENT.starts_with("prodops-client/"));
    let raw = c
        .send_raw(Method::GET, "/worker/count", None)
        .await
        .unwrap();
    assert!(raw.status == 200 || raw.status == 429);
    let _: Value = serde_json::from_slice(&raw.body).unwrap();
}

/// A 503 from the server's statement timeout carries no `Retry-After` and comes back at once:
/// the same request would be stopped again, and six attempts of it would keep the database busy
/// for minutes. (The write waits on a lock the test holds, so it times out on any machine.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_timeout_is_not_retried() {
    let server = TestServer::start_with(|c| c.statement_timeout = Duration::from_secs(1)).await;
    let api = server.org("Client").await;
    let workers = client(&server, &api).resource::<Worker>();
    let ann = workers.create(&json!({"name": "Ann"})).await.unwrap();

    let lock = WorkerLock::take(&server, &api, &ann.id.to_string()).await;
    let started = std::time::Instant::now();
    let e = workers
        .update(ann.id, &json!({"name": "Bob"}))
        .await
        .unwrap_err();
    let elapsed = started.elapsed();
    lock.release().await;
    assert_eq!(e.status(), Some(503), "{e}");
    assert_eq!(e.code(), Some("INTERNAL"), "{e}");
    // One attempt takes the 1 s timeout; retries would add five more and at least 15 s of
    // backoff (0.5 + 1 + 2 + 4 + 8 s).
    assert!(
        elapsed < Duration::from_secs(10),
        "answered after {elapsed:?}: retried"
    );
    assert_eq!(
        workers.get(ann.id).await.unwrap().name,
        "Ann",
        "nothing was written"
    );
}
