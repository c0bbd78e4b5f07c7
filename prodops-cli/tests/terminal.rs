//! `prodops` on a terminal, run as a process under a pseudo-terminal (portable-pty) of a chosen
//! size against a real server: the table fits 80 and 40 columns (and a terminal reporting 0
//! columns is taken as 80), a list stops at its first page with a footer on stderr, and in a
//! pipe every page streams.

mod common;
use common::{Out, prodops_in, run};
use std::io::Read;
use std::time::Duration;

use common::pty::Terminal;
use portable_pty::CommandBuilder;
use prodops_tests::*;
use serde_json::Value;
use unicode_width::UnicodeWidthStr;

struct Env {
    server: TestServer,
    api: Api,
    dir: tempfile::TempDir,
}

impl Env {
    async fn start() -> Env {
        let server = TestServer::start().await;
        let api = server.org("Terminal").await;
        Env {
            server,
            api,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Runs `prodops ARGS` on a terminal `cols` wide; answers what the terminal showed (line
    /// ends as `\n`) and the exit code.
    async fn on_terminal(&self, cols: u16, args: &[&str]) -> (String, u32) {
        let mut cmd = CommandBuilder::new(assert_cmd::cargo::cargo_bin("prodops"));
        cmd.args(args);
        cmd.env("PRODOPS_BASE_URL", self.server.base_url());
        cmd.env("PRODOPS_API_KEY", self.api.key().unwrap());
        cmd.env("PRODOPS_CONFIG_DIR", self.dir.path().join("config"));
        cmd.env("PRODOPS_CREDENTIAL_STORE", "file");
        cmd.env("HOME", self.dir.path().join("home"));
        cmd.env_remove("COLUMNS");
        // portable-pty starts in $HOME unless told otherwise, and the test's home is not made.
        cmd.cwd(self.dir.path());
        tokio::task::spawn_blocking(move || Terminal::spawn(cmd, cols).finish())
            .await
            .unwrap()
    }

    async fn piped(&self, args: &[&str]) -> Out {
        let cmd = prodops_in(
            &self.server,
            &self.api,
            self.dir.path(),
            Duration::from_secs(120),
        );
        run(cmd, args).await
    }
}

fn short(id: &str) -> &str {
    &id[28..]
}

/// Issue 34, item 10: one line per record, within 80 and 40 columns; names cut with an
/// ellipsis, ids whole; never `organizationId`; `--wide` shows whole ids.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_table_fits_the_terminal() {
    let env = Env::start().await;
    let long = "Maximilian Alexander Fitzgerald-Worthington the Third of Westminster";
    let a = env
        .api
        .create(
            "worker",
            json!({"name": long, "customerIdentifier": "EMP-000001"}),
        )
        .await;
    let b = env
        .api
        .create("worker", json!({"name": "Bo", "status": "inactive"}))
        .await;
    env.api.create("worker", json!({"name": "Cy"})).await;
    let (a, b) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());

    for cols in [80u16, 40] {
        let (text, code) = env
            .on_terminal(cols, &["worker", "list", "--limit", "2"])
            .await;
        assert_eq!(code, 0, "{text}");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines.len(),
            4,
            "a header, one line per record, the count: {text}"
        );
        for line in &lines {
            assert!(line.width() <= cols as usize, "{cols}: {line:?}\n{text}");
        }
        assert!(lines[0].starts_with("name"), "{text}");
        assert!(!text.contains("organizationId"), "{text}");
        assert!(lines[1].contains('…'), "the long name is cut: {text}");
        assert!(lines[1].ends_with(short(a)), "{text}");
        assert!(lines[2].ends_with(short(b)), "{text}");
        assert!(
            lines[2].contains("Bo") && lines[2].contains("inactive"),
            "{text}"
        );
        assert_eq!(lines[3], "2 record(s)");
    }
    // A terminal that reports no width is 80 columns.
    let (text, code) = env
        .on_terminal(0, &["worker", "list", "--limit", "1"])
        .await;
    assert_eq!(code, 0, "{text}");
    let first = text.lines().nth(1).unwrap();
    assert!(first.width() <= 80 && first.width() > 40, "{text}");
    assert!(first.contains('…') && first.ends_with(short(a)), "{text}");

    // --wide: every field, ids whole; --select: those columns.
    let (text, _) = env
        .on_terminal(80, &["worker", "list", "--limit", "1", "--wide"])
        .await;
    assert!(
        text.contains(a) && text.contains(long) && text.contains("createdAt"),
        "{text}"
    );
    let (text, _) = env
        .on_terminal(
            80,
            &["worker", "list", "--limit", "1", "--select", "id,name"],
        )
        .await;
    assert!(
        text.lines().nth(1).unwrap().starts_with(a),
        "whole ids with --select: {text}"
    );
    // One record: field/value lines within the width.
    let (text, code) = env.on_terminal(40, &["worker", "get", a]).await;
    assert_eq!(code, 0, "{text}");
    for line in text.lines() {
        assert!(line.width() <= 40, "{line:?}\n{text}");
    }
    assert!(
        text.lines()
            .any(|l| l.starts_with("status") && l.ends_with("active")),
        "{text}"
    );
}

/// Issue 34, item 11: on a terminal a list shows its first 30 records and says on stderr how
/// many there are; `--limit` and `--all` show more; in a pipe every page streams.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_on_a_terminal_stops_at_its_first_page() {
    let env = Env::start().await;
    let records: Vec<Value> = (0..45)
        .map(|i| json!({"name": format!("W{i:03}")}))
        .collect();
    env.api.bulk_put("worker", records).await;

    let (text, code) = env.on_terminal(80, &["worker", "list"]).await;
    assert_eq!(code, 0, "{text}");
    let rows = text.lines().filter(|l| l.starts_with('W')).count();
    assert_eq!(rows, 30, "{text}");
    assert!(text.contains("30 record(s)"), "{text}");
    assert!(text.contains("30 of 45; --limit N or --all"), "{text}");

    let (text, _) = env.on_terminal(80, &["worker", "list", "--all"]).await;
    assert_eq!(
        text.lines().filter(|l| l.starts_with('W')).count(),
        45,
        "{text}"
    );
    assert!(!text.contains(" of 45"), "{text}");
    let (text, _) = env
        .on_terminal(80, &["worker", "list", "--limit", "40"])
        .await;
    assert_eq!(
        text.lines().filter(|l| l.starts_with('W')).count(),
        40,
        "{text}"
    );

    // A pipe: every page (pages of 7 here), no footer.
    let out = env
        .piped(&["worker", "list", "--page-size", "7", "-o", "json"])
        .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json().as_array().unwrap().len(), 45, "{out}");
    assert!(out.stderr.is_empty(), "{out}");
}

/// Issue 34, item 12: on a terminal `events tail` prints a readable line per event (time, type,
/// record, cursor), not JSON; `-o ndjson` still prints JSON there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_on_a_terminal_are_readable_lines() {
    let env = Env::start().await;
    let w = env.api.create("worker", json!({"name": "Ann"})).await;
    let id = w["id"].as_str().unwrap();
    env.api
        .patch(&format!("/worker/{id}"), json!({"status": "inactive"}))
        .await;
    let (text, code) = env.on_terminal(120, &["events", "tail"]).await;
    assert_eq!(code, 0, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].contains("worker.created") && lines[0].contains(id) && lines[0].ends_with("#1"),
        "{text}"
    );
    assert!(
        lines[1].contains("worker.updated") && lines[1].contains("changed status"),
        "{text}"
    );
    assert!(!text.contains('{'), "{text}");
    let (text, _) = env
        .on_terminal(120, &["events", "tail", "-o", "ndjson"])
        .await;
    let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first["recordId"], w["id"]);
}

/// Issue 34, item 11: memory stays flat whatever the count: 20,000 workers printed whole, as
/// the table (`--all`: the first 200 rows decide the layout, the rest stream through it) and as
/// JSON, each run peaking under 64 MiB. Measured in a pipe, from the process's own `VmHWM`
/// (`getrusage`/`wait4` would count the test process's pages, which a spawned child shares
/// until its exec).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_stays_flat_whatever_the_count() {
    let env = Env::start().await;
    const N: usize = 20_000;
    for chunk in (0..N).collect::<Vec<_>>().chunks(5_000) {
        let records: Vec<Value> = chunk
            .iter()
            .map(|i| json!({"name": format!("Worker {i:05} with a name of some length"), "customerIdentifier": format!("E{i}")}))
            .collect();
        env.api.bulk_put("worker", records).await;
    }
    for (args, lines) in [
        (vec!["worker", "list", "--all", "-o", "table"], N + 2),
        (vec!["worker", "list", "-o", "json"], N + 2),
    ] {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin("prodops"));
        cmd.args(&args)
            .env("PRODOPS_BASE_URL", env.server.base_url())
            .env("PRODOPS_API_KEY", env.api.key().unwrap())
            .env("PRODOPS_CONFIG_DIR", env.dir.path().join("config"))
            .env("PRODOPS_CREDENTIAL_STORE", "file")
            .env("COLUMNS", "100")
            .stdout(std::process::Stdio::piped());
        let (text, code, peak_kib) = tokio::task::spawn_blocking(move || {
            let mut child = cmd.spawn().unwrap();
            let mut stdout = child.stdout.take().unwrap();
            let reader = std::thread::spawn(move || {
                let mut text = String::new();
                stdout.read_to_string(&mut text).unwrap();
                text
            });
            // The process's own high-water mark (VmHWM, reset by its exec), read while it
            // runs: it only grows, so the last reading before the end is its peak.
            let status_file = format!("/proc/{}/status", child.id());
            let mut peak_kib = 0u64;
            let code = loop {
                if let Ok(status) = std::fs::read_to_string(&status_file)
                    && let Some(line) = status.lines().find(|l| l.starts_with("VmHWM:"))
                {
                    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
                    peak_kib = peak_kib.max(kib);
                }
                if let Some(status) = child.try_wait().unwrap() {
                    break status.code().unwrap();
                }
                std::thread::sleep(Duration::from_millis(2));
            };
            (reader.join().unwrap(), code, peak_kib)
        })
        .await
        .unwrap();
        assert_eq!(code, 0, "{args:?}");
        assert_eq!(text.lines().count(), lines, "{args:?}");
        if args.contains(&"table") {
            assert!(text.lines().all(|l| l.width() <= 100), "{args:?}");
        }
        eprintln!("{args:?}: peak resident set {peak_kib} KiB");
        assert!(
            peak_kib > 0 && peak_kib < 64 * 1024,
            "{args:?}: peak resident set {peak_kib} KiB"
        );
    }
}
