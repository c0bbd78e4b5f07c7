//! `prodops events tail` as a process against a real server: NDJSON lines, the cursor file a
//! cron job resumes from, type filters, and `--follow` printing an event as it commits.

mod common;
use common::{prodops_in, run};

use std::io::{BufRead, BufReader};
use std::time::Duration;

use prodops_tests::*;
use serde_json::Value;

fn lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?} is not JSON: {e}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_prints_ndjson_and_resumes_from_its_cursor_file() {
    let server = TestServer::start().await;
    let api = server.org("Cli").await;
    let dir = tempfile::tempdir().unwrap();
    let cmd = || prodops_in(&server, &api, dir.path(), Duration::from_secs(120));
    let ann = api.create("worker", json!({"name": "Ann"})).await;
    api.create("worker", json!({"name": "Bob"})).await;
    let cursor_file = dir.path().join("feed.cursor");
    let cursor_arg = cursor_file.to_str().unwrap();

    let out = run(cmd(), &["events", "tail", "--cursor-file", cursor_arg]).await;
    assert_eq!(out.code, 0, "{out}");
    let got = lines(&out.stdout);
    assert_eq!(got.len(), 2, "{out}");
    assert_eq!(got[0]["type"], "worker.created");
    assert_eq!(got[0]["recordId"], ann["id"]);
    assert_eq!(std::fs::read_to_string(&cursor_file).unwrap().trim(), "2");

    // The next run starts after the cursor in the file.
    let id = ann["id"].as_str().unwrap();
    api.patch(&format!("/worker/{id}"), json!({"isArchived": true}))
        .await;
    let out = run(cmd(), &["events", "tail", "--cursor-file", cursor_arg]).await;
    assert_eq!(out.code, 0, "{out}");
    let got = lines(&out.stdout);
    assert_eq!(got.len(), 1, "{out}");
    assert_eq!(got[0]["type"], "worker.archived");
    assert_eq!(std::fs::read_to_string(&cursor_file).unwrap().trim(), "3");
    // Nothing new: nothing printed, the cursor stays.
    let out = run(cmd(), &["events", "tail", "--cursor-file", cursor_arg]).await;
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out}");

    // Filters, and `--since` over the file.
    let out = run(
        cmd(),
        &["events", "tail", "--since", "0", "--type", "worker.created"],
    )
    .await;
    assert_eq!(lines(&out.stdout).len(), 2, "{out}");
    let out = run(cmd(), &["events", "tail", "--since", "x"]).await;
    assert_eq!(out.code, 2, "{out}");
    // `events list`: one page's events, derived from the declaration.
    let out = run(
        cmd(),
        &["events", "list", "--after", "2", "--output", "ndjson"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let got = lines(&out.stdout);
    assert_eq!(got.len(), 1, "{out}");
    assert_eq!(got[0]["type"], "worker.archived", "{out}");
    let out = run(
        cmd(),
        &[
            "events",
            "list",
            "--type",
            "worker.created",
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(out.json().as_array().map(Vec::len), Some(2), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tail_follow_prints_each_event_as_it_commits() {
    let server = TestServer::start().await;
    let api = server.org("Cli").await;
    let dir = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("prodops"))
        .args(["events", "tail", "--follow", "--type", "worker.*"])
        .env("PRODOPS_BASE_URL", server.base_url())
        .env("PRODOPS_API_KEY", api.key().unwrap())
        .env("PRODOPS_CONFIG_DIR", dir.path().join("config"))
        .env("PRODOPS_CREDENTIAL_STORE", "file")
        .env("HOME", dir.path().join("home"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // A note is not a worker event; the worker created after it is printed.
    api.create("note", json!({"body": "n"})).await;
    let w = api.create("worker", json!({"name": "Ann"})).await;
    let line = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(60)))
        .await
        .unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    let event: Value = serde_json::from_str(&line.expect("a line within a minute")).unwrap();
    assert_eq!(event["type"], "worker.created");
    assert_eq!(event["recordId"], w["id"]);
}
