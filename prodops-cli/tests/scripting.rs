//! What a script reads from `prodops` (issue 34, items 14 and 15): errors as the API's error
//! object on stderr, and writes a retry cannot double. The real binary against a real server.

mod common;
use common::run;
use std::time::Duration;

use assert_cmd::Command;
use prodops_tests::*;
use serde_json::Value;

fn cmd(server: &TestServer, api: &Api, dir: &std::path::Path) -> Command {
    common::prodops_in(server, api, dir, Duration::from_secs(300))
}

/// stderr read as one JSON value.
fn error_json(stderr: &str) -> Value {
    serde_json::from_str(stderr.trim()).unwrap_or_else(|e| panic!("stderr is JSON ({e}): {stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_the_apis_error_object_when_a_script_asks() {
    let server = TestServer::start().await;
    let api = server.org("Errors").await;
    let dir = tempfile::tempdir().unwrap();
    let missing = uuid::Uuid::now_v7().to_string();

    // --output json: a 404 as the server's error object, its request id kept.
    let out = run(
        cmd(&server, &api, dir.path()),
        &["worker", "get", &missing, "--output", "json"],
    )
    .await;
    assert_eq!(out.code, 4, "{out}");
    let e = error_json(&out.stderr);
    assert_eq!(e["error"]["code"], "NOT_FOUND", "{out}");
    assert!(
        e["error"]["requestId"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{out}"
    );
    assert_eq!(e["exitCode"], 4);

    // PRODOPS_ERROR_FORMAT=json with stderr not a terminal: a 400 with its details.
    let mut c = cmd(&server, &api, dir.path());
    c.env("PRODOPS_ERROR_FORMAT", "json");
    let out = run(c, &["worker", "create", "--set", "name="]).await;
    assert_eq!(out.code, 5, "{out}");
    let e = error_json(&out.stderr);
    assert_eq!(e["error"]["code"], "VALIDATION_ERROR", "{out}");
    assert_eq!(e["error"]["details"][0]["field"], "name", "{out}");

    // A local refusal carries a code of its own.
    let mut c = cmd(&server, &api, dir.path());
    c.env("PRODOPS_ERROR_FORMAT", "json");
    let out = run(c, &["worker", "list", "--filter", "status"]).await;
    assert_eq!(out.code, 2, "{out}");
    let e = error_json(&out.stderr);
    assert_eq!(e["error"]["code"], "CLI_USAGE", "{out}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("FIELD=VALUE"),
        "{out}"
    );

    // So does a usage error found while the arguments are read.
    let mut c = cmd(&server, &api, dir.path());
    c.env("PRODOPS_ERROR_FORMAT", "json");
    let out = run(c, &["worker", "frobnicate"]).await;
    assert_eq!(out.code, 2, "{out}");
    let e = error_json(&out.stderr);
    assert_eq!(e["error"]["code"], "CLI_USAGE", "{out}");
    assert!(
        e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("frobnicate"),
        "{out}"
    );

    // The shape a script parses, held by a snapshot (the request id differs per run).
    let mut c = cmd(&server, &api, dir.path());
    c.env("PRODOPS_ERROR_FORMAT", "json");
    let out = run(
        c,
        &[
            "worker",
            "create",
            "--set",
            "name=",
            "--set",
            "status=retired",
        ],
    )
    .await;
    let mut e = error_json(&out.stderr);
    e["error"]["requestId"] = Value::from("[request id]");
    insta::assert_snapshot!("error_json", serde_json::to_string_pretty(&e).unwrap());

    // Without either, errors stay text for people.
    let out = run(cmd(&server, &api, dir.path()), &["worker", "get", &missing]).await;
    assert_eq!(out.code, 4, "{out}");
    assert!(out.stderr.starts_with("error: 404 NOT_FOUND"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn set_takes_the_declared_type_and_a_key_makes_a_write_once() {
    let server = TestServer::start().await;
    let api = server.org("Typed").await;
    let dir = tempfile::tempdir().unwrap();

    // --set reads numbers, booleans and arrays as the fields declare them.
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "deliverable",
            "create",
            "--set",
            "name=Order 007",
            "--set",
            "type=order",
            "--set",
            "quantity=5",
            "--set",
            "costCode=007",
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let order = out.json();
    assert_eq!(order["quantity"], 5, "{out}");
    assert_eq!(order["costCode"], "007", "text stays text: {out}");
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "worker",
            "create",
            "--set",
            "name=Ann",
            "--set",
            "exemptFromAssignments=yes",
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["exemptFromAssignments"], true, "{out}");
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "deliverable",
            "create",
            "--set",
            "name=X",
            "--set",
            "type=order",
            "--set",
            "quantity=many",
        ],
    )
    .await;
    assert_eq!(out.code, 2, "{out}");
    assert!(out.stderr.contains("quantity takes a"), "{out}");

    // The same write with the same key, run twice: one worker, the same answer.
    let create = [
        "worker",
        "create",
        "--set",
        "name=Once",
        "--idempotency-key",
        "create-once-1",
        "--output",
        "json",
    ];
    let first = run(cmd(&server, &api, dir.path()), &create).await;
    assert_eq!(first.code, 0, "{first}");
    let second = run(cmd(&server, &api, dir.path()), &create).await;
    assert_eq!(second.code, 0, "{second}");
    assert_eq!(first.json()["id"], second.json()["id"]);
    assert_eq!(api.count("worker", "name=Once").await, 1);
    // The same key with another body is refused, and writes nothing.
    let other = run(
        cmd(&server, &api, dir.path()),
        &[
            "worker",
            "create",
            "--set",
            "name=Twice",
            "--idempotency-key",
            "create-once-1",
        ],
    )
    .await;
    assert_eq!(other.code, 5, "{other}");
    assert_eq!(api.count("worker", "name=Twice").await, 0);
    // An import sends a write per batch: one key cannot name them.
    let file = dir.path().join("w.csv");
    std::fs::write(&file, "name\nZed\n").unwrap();
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "worker",
            "import",
            file.to_str().unwrap(),
            "--idempotency-key",
            "k",
        ],
    )
    .await;
    assert_eq!(out.code, 2, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_works_like_gh_api() {
    let server = TestServer::start().await;
    let api = server.org("Api").await;
    let dir = tempfile::tempdir().unwrap();

    // Fields make a POST; -F types its values.
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "api",
            "/worker",
            "-f",
            "name=Ann",
            "-F",
            "exemptFromAssignments=true",
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let ann = out.json();
    assert_eq!(ann["name"], "Ann");
    assert_eq!(ann["exemptFromAssignments"], true);
    let id = ann["id"].as_str().unwrap().to_string();

    // -X sets the method; the body from stdin with --input -.
    let mut patch = cmd(&server, &api, dir.path());
    patch.write_stdin(r#"{"name": "Ann Lee"}"#);
    let out = run(
        patch,
        &[
            "api",
            "-X",
            "PATCH",
            &format!("/worker/{id}"),
            "--input",
            "-",
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(api.read("worker", &id).await["name"], "Ann Lee");

    // A GET with fields puts them in the query string; the earlier `METHOD PATH` form works.
    for n in 0..4 {
        api.create(
            "worker",
            json!({"name": format!("W{n}"), "status": "inactive"}),
        )
        .await;
    }
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "api",
            "-X",
            "GET",
            "/worker/count",
            "-f",
            "status=inactive",
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["count"], 4, "{out}");
    let out = run(
        cmd(&server, &api, dir.path()),
        &["api", "GET", "/worker/count", "--output", "json"],
    )
    .await;
    assert_eq!(out.json()["count"], 5, "{out}");

    // -H adds a header; -i shows the status line and the headers.
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "api",
            "/worker/count",
            "-H",
            "X-Request-Id: script-run-42",
            "-i",
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.starts_with("HTTP/1.1 200 OK\n"), "{out}");
    assert!(
        out.stdout
            .to_ascii_lowercase()
            .contains("x-request-id: script-run-42"),
        "{out}"
    );

    // --paginate: every page, one array.
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "api",
            "/worker?pageSize=2",
            "--paginate",
            "--output",
            "json",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json().as_array().unwrap().len(), 5, "{out}");

    // An error: its exit code, its message on stderr.
    let missing = uuid::Uuid::now_v7();
    let out = run(
        cmd(&server, &api, dir.path()),
        &["api", &format!("/worker/{missing}")],
    )
    .await;
    assert_eq!(out.code, 4, "{out}");
    assert!(out.stderr.contains("NOT_FOUND"), "{out}");
    let out = run(cmd(&server, &api, dir.path()), &["api", "FETCH", "/worker"]).await;
    assert_eq!(out.code, 2, "{out}");
}

/// `prodops` with nothing of an instance in its environment.
fn bare() -> Command {
    let mut c = Command::cargo_bin("prodops").unwrap();
    c.env_remove("PRODOPS_BASE_URL")
        .env_remove("PRODOPS_API_KEY")
        .env_remove("COMPLETE")
        .env(
            "PRODOPS_CONFIG_DIR",
            std::env::temp_dir().join("prodops-no-config"),
        )
        .env("PRODOPS_CREDENTIAL_STORE", "file");
    c
}

#[tokio::test]
async fn help_groups_commands_and_keeps_global_options_apart() {
    let out = run(bare(), &["--help"]).await;
    assert_eq!(out.code, 0, "{out}");
    for (group, member) in [
        ("Resources", "  worker "),
        ("Actions", "  production "),
        ("Events", "  events "),
        ("Scripting", "  api "),
        ("Authentication", "  auth "),
    ] {
        let at = out
            .stdout
            .find(&format!("\n{group}"))
            .unwrap_or_else(|| panic!("{group}: {out}"));
        assert!(out.stdout[at..].contains(member), "{group}: {out}");
    }
    assert!(out.stdout.contains("Global options:"), "{out}");

    // A command's own flags first, the global ones apart.
    let out = run(bare(), &["worker", "list", "--help"]).await;
    let own = out.stdout.find("Options:").unwrap();
    let global = out.stdout.find("Global options:").unwrap();
    assert!(own < global, "{out}");
    assert!(out.stdout[own..global].contains("--filter"), "{out}");
    assert!(!out.stdout[own..global].contains("--base-url"), "{out}");
    assert!(out.stdout[global..].contains("--base-url"), "{out}");

    // What a person reads, held by snapshots (wrapped at a fixed width).
    for (name, args) in [
        ("help", &["--help"][..]),
        ("help_worker_list", &["worker", "list", "--help"][..]),
        (
            "help_production_produce",
            &["production", "produce", "--help"][..],
        ),
    ] {
        let mut c = bare();
        c.env("COLUMNS", "100");
        let out = run(c, args).await;
        assert_eq!(out.code, 0, "{out}");
        insta::assert_snapshot!(name, out.stdout);
    }

    // A missing argument of an action is named before any missing instance.
    let out = run(bare(), &["production", "produce"]).await;
    assert_eq!(out.code, 2, "{out}");
    assert!(out.stderr.contains("--deliverable-id is required"), "{out}");
    assert!(!out.stderr.contains("base-url"), "{out}");
}

#[tokio::test]
async fn completions_are_small_and_answered_by_the_binary_and_man_pages_are_generated() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(bare(), &["completions", shell]).await;
        assert_eq!(out.code, 0, "{out}");
        assert!(out.stdout.contains("COMPLETE"), "{shell}: {out}");
        assert!(
            out.stdout.len() < 8_000,
            "{shell}: {} bytes",
            out.stdout.len()
        );
    }
    // What the registered function asks: the candidates for the word being typed.
    let complete = |index: &str, words: &[&str]| {
        let mut c = bare();
        c.env("COMPLETE", "bash").env("_CLAP_COMPLETE_INDEX", index);
        let mut args = vec!["--", "prodops"];
        args.extend_from_slice(words);
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run(c, &args).await
        }
    };
    let out = complete("1", &["wor"]).await;
    assert_eq!(out.code, 0, "{out}");
    let words: Vec<&str> = out.stdout.split_whitespace().collect();
    assert!(
        words.contains(&"worker") && words.contains(&"work-session"),
        "{out}"
    );
    let out = complete("2", &["worker", "imp"]).await;
    assert_eq!(
        out.stdout.split_whitespace().collect::<Vec<_>>(),
        ["import"],
        "{out}"
    );
    let out = complete("3", &["production", "produce", "--deliverable"]).await;
    assert!(out.stdout.contains("--deliverable-id"), "{out}");

    let out = run(bare(), &["man"]).await;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains(".TH prodops 1"), "{out}");
    let dir = tempfile::tempdir().unwrap();
    let out = run(bare(), &["man", "--dir", dir.path().to_str().unwrap()]).await;
    assert_eq!(out.code, 0, "{out}");
    let page = std::fs::read_to_string(dir.path().join("prodops-worker-list.1")).unwrap();
    assert!(page.contains("\\-\\-filter"), "{page}");
    assert!(dir.path().join("prodops-production-produce.1").exists());
}
