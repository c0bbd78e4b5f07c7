//! What the tests that run the `prodops-server` binary share (included with `#[path]`).
// Each including test uses part of it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_prodops-server");

/// A command of the binary, with no standard input and every `PRODOPS_*` variable of the
/// test's environment cleared: only what the test sets reaches the process.
pub fn cmd(args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("PRODOPS_") {
            c.env_remove(name);
        }
    }
    c.stdin(Stdio::null());
    c
}

/// A new organization on the database at `url`, named `name` and a random suffix (a shared
/// PostgreSQL database keeps the organizations of earlier runs); answers its admin API key.
pub fn create_org(url: &str, name: &str) -> String {
    let out = cmd(&[
        "org",
        "create",
        "--name",
        &format!("{name} {}", uuid::Uuid::new_v4()),
        "--database",
        url,
    ])
    .output()
    .expect("org create");
    assert!(out.status.success(), "org create: {out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON line");
    v["apiKey"].as_str().unwrap().to_string()
}

/// Starts `serve` and returns the child and its `/api/v2` base.
pub fn serve(url: &str) -> (Child, String) {
    serve_with(url, &[])
}

/// The `serve` command on the database at `url`, on a free port of 127.0.0.1, without the job
/// that announces what time changes: it reaches every organization of the database, which
/// other tests share (docs/operations.md). The caller adds its settings and spawns it.
pub fn serve_command(url: &str) -> Command {
    let mut c = cmd(&[
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--database",
        url,
        "--rate-limit",
        "1000000",
    ]);
    c.env("PRODOPS_ALERT_EVENTS_POLL_MS", "0");
    c
}

/// [`serve`] with `env` set for the process besides.
pub fn serve_with(url: &str, env: &[(&str, &str)]) -> (Child, String) {
    let mut child = serve_command(url)
        // No webhook deliveries: on a shared PostgreSQL database this process would claim the
        // deliveries of other tests' webhooks, whose receivers on 127.0.0.1 its address guard
        // refuses (a delivery then failed its attempt in the webhook tests running beside it).
        .env("PRODOPS_WEBHOOK_DELIVER", "false")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("listening line");
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, format!("{base}/api/v2"))
}
