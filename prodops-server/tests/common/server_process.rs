//! What the tests that run the `prodops-server` binary share (included with `#[path]`).
// Each including test uses part of it.
#![allow(dead_code)]

use std::process::{Command, Stdio};

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
