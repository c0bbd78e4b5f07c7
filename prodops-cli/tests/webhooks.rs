//! `prodops webhook create|list|test|redeliver|deliveries` as a process against a real server
//! that delivers to a loopback receiver.

mod common;
use common::{prodops_in, run};

use std::time::Duration;

use prodops_core::webhook::AllowList;
use prodops_tests::webhook_receiver::{Mode, Receiver};
use prodops_tests::*;

const SECRET: &str = "cli-secret-0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhook_verbs_create_list_test_and_redeliver() {
    let server = TestServer::start_isolated_with(|c| {
        c.webhooks.deliver = true;
        c.webhooks.allow = AllowList::parse("127.0.0.1").unwrap();
        c.webhooks.max_attempts = 2;
        c.webhooks.backoff_base = Duration::from_millis(20);
        c.webhooks.backoff_cap = Duration::from_millis(50);
        c.webhooks.poll = Duration::from_millis(100);
        // A transient failure to prepare or record an attempt leaves the row leased until the
        // lease runs out: keep that well inside the test's wait.
        c.webhooks.timeout = Duration::from_secs(5);
        c.webhooks.lease = Duration::from_secs(6);
    })
    .await;
    let api = server.org("CliHooks").await;
    let dir = tempfile::tempdir().unwrap();
    let cmd = || prodops_in(&server, &api, dir.path(), Duration::from_secs(120));
    let receiver = Receiver::start(SECRET, Mode::AlwaysFail).await;

    let data = json!({"url": receiver.url(), "eventTypes": ["worker.created"], "secret": SECRET})
        .to_string();
    let out = run(cmd(), &["webhook", "create", "--data", &data]).await;
    assert_eq!(out.code, 0, "{out}");
    let hook = out.json()["id"].as_str().unwrap().to_string();
    assert!(!out.stdout.contains(SECRET), "{out}");

    let out = run(cmd(), &["webhook", "list"]).await;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains(&hook), "{out}");

    let out = run(cmd(), &["webhook", "test", &hook]).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        out.json()["delivered"],
        false,
        "the receiver answers 500: {out}"
    );
    assert_eq!(out.json()["statusCode"], 500, "{out}");

    // A worker's event goes dead after two attempts; redeliver queues it again.
    api.create("worker", json!({"name": "Ann"})).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let out = run(cmd(), &["webhook", "deliveries", &hook, "--status", "dead"]).await;
        assert_eq!(out.code, 0, "{out}");
        // The CLI prints a page's values as a JSON array.
        if out.json().as_array().map(Vec::len) == Some(1) {
            break;
        }
        if tokio::time::Instant::now() >= deadline {
            let all = run(cmd(), &["webhook", "deliveries", &hook]).await;
            panic!(
                "no dead delivery after 60 s: {out}\nevery delivery: {all}\nthe receiver got: {:#?}",
                receiver.hits()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    receiver.set_mode(Mode::Accept);
    let out = run(cmd(), &["webhook", "redeliver", &hook]).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["requeued"], 1, "{out}");
    receiver
        .wait_until(Duration::from_secs(60), |h| {
            h.iter()
                .any(|h| h.accepted && h.body["type"] == "worker.created")
        })
        .await;
    assert!(receiver.hits().iter().all(|h| h.signature_ok));
    // Deleted with its deliveries, so that a shared PostgreSQL database does not keep them.
    let out = run(cmd(), &["webhook", "delete", &hook]).await;
    assert_eq!(out.code, 0, "{out}");
    let out = run(cmd(), &["webhook", "deliveries", &hook]).await;
    assert_ne!(out.code, 0, "a deleted webhook has no log: {out}");
    server.shutdown().await;
}
