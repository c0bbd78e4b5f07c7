//! `prodops events tail` and `events list` as processes against a real server whose feed was
//! pruned past the cursor they resume from (issue 35, item 8): they say which events were
//! missed and from where the feed goes on, exit 9 (docs/cli.md, "Exit codes"), and leave the
//! cursor file as it was; `--since now` and `--since beginning` still work.
//!
//! Its own test binary: the server here keeps events for no time at all, and the prune job it
//! runs removes every organization's events on the database (see `prune_events_now`).

mod common;
use common::{prodops_in, run};

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
async fn tail_from_a_pruned_cursor_reports_the_gap_and_exits_9() {
    let server = TestServer::start_with(|c| c.event_retention = Duration::ZERO).await;
    let api = server.org("Cli").await;
    let dir = tempfile::tempdir().unwrap();
    let cmd = || prodops_in(&server, &api, dir.path(), Duration::from_secs(120));
    let cursor_file = dir.path().join("feed.cursor");
    let cursor_arg = cursor_file.to_str().unwrap();
    api.create("worker", json!({"name": "Ann"})).await;
    let out = run(cmd(), &["events", "tail", "--cursor-file", cursor_arg]).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(std::fs::read_to_string(&cursor_file).unwrap().trim(), "1");

    // Two more events, then everything is pruned: the events after cursor 1 are gone.
    api.create("worker", json!({"name": "Bob"})).await;
    api.create("worker", json!({"name": "Cy"})).await;
    prune_events_now(&server).await;
    let out = run(cmd(), &["events", "tail", "--cursor-file", cursor_arg]).await;
    assert_eq!(out.code, 9, "{out}");
    assert_eq!(out.stdout, "", "{out}");
    for said in [
        "after cursor 1",
        "events were missed",
        "oldest kept has cursor 4",
        "--since beginning",
    ] {
        assert!(out.stderr.contains(said), "{said:?}: {out}");
    }
    assert_eq!(std::fs::read_to_string(&cursor_file).unwrap().trim(), "1");
    // Following does not wait it out either.
    let out = run(cmd(), &["events", "tail", "-f", "--since", "1"]).await;
    assert_eq!(out.code, 9, "{out}");
    // A script reads the error as JSON, the oldest cursor with it.
    let out = run(
        cmd(),
        &["events", "list", "--since", "2", "--output", "json"],
    )
    .await;
    assert_eq!(out.code, 9, "{out}");
    let err: Value =
        serde_json::from_str(out.stderr.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(err["error"]["code"], "GONE", "{out}");
    assert_eq!(err["error"]["details"][0]["oldestCursor"], "4", "{out}");
    assert_eq!(err["exitCode"], 9, "{out}");

    // From the beginning: what is kept (the next event), and the file moves on.
    api.create("worker", json!({"name": "Dee"})).await;
    let out = run(
        cmd(),
        &[
            "events",
            "tail",
            "--since",
            "beginning",
            "--cursor-file",
            cursor_arg,
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let got = lines(&out.stdout);
    assert_eq!(got.len(), 1, "{out}");
    assert_eq!(got[0]["cursor"], "4", "{out}");
    assert_eq!(std::fs::read_to_string(&cursor_file).unwrap().trim(), "4");
    // `now` is found past the pruned cursors.
    let out = run(cmd(), &["events", "tail", "--since", "now"]).await;
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out}");
    server.shutdown().await;
}
