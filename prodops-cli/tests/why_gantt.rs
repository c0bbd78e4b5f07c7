//! `prodops deliverable why ID` and `prodops deliverable gantt ORDER` as processes, against a
//! real in-process server (prodops-tests harness; `PRODOPS_TEST_DATABASE_URL` for PostgreSQL):
//! the sentences and the data of an explanation, the schedule drawn into 80 columns, on a
//! pseudo-terminal of its own width, and as an SVG file an XML parser reads.

mod common;
use common::Out;
use common::pty::Terminal;
use std::path::Path;
use std::time::Duration;

use portable_pty::CommandBuilder;
use prodops_tests::*;
use quick_xml::Reader;
use quick_xml::events::Event;
use serde_json::Value;
use unicode_width::UnicodeWidthStr;

const D: &str = "deliverable";

async fn run(server: &TestServer, api: &Api, dir: &Path, args: &[&str]) -> Out {
    let cmd = common::prodops_in(server, api, dir, Duration::from_secs(120));
    common::run(cmd, args).await
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// An order with three phases: Cut (done), Weld after it (late: its schedule ended yesterday),
/// Paint after Weld (ahead), and a dependency Cut → Weld → Paint. Returns (order, weld, paint).
async fn order(api: &Api) -> (String, String, String) {
    let now = chrono::Utc::now().timestamp();
    let day = 86_400;
    let o = id(&api
        .create(D, json!({"name": "Order 1001", "type": "order"}))
        .await);
    // A schedule action starts a node at `newStart` for its `durationSec`.
    let spans = [
        ("Cut", now - 4 * day, day),
        ("Weld", now - 3 * day, 2 * day),
        ("Paint", now + day, 2 * day),
    ];
    let mut ids = Vec::new();
    for (name, start, length) in spans {
        let node = id(&api
            .create(
                D,
                json!({"name": name, "type": "phase", "parentId": o, "durationSec": length}),
            )
            .await);
        let r = api
            .post(
                &format!("/{D}/root/{o}/schedule/{node}"),
                json!({"type": "schedule", "newStart": start}),
            )
            .await;
        ids.push(node);
        assert_eq!(r.status, 204, "{r}");
    }
    let r = api
        .post(
            &format!("/{D}/root/{o}/progress/{}", ids[0]),
            json!({"type": "complete"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    for pair in [[&ids[0], &ids[1]], [&ids[1], &ids[2]]] {
        api.create(
            "dependency",
            json!({"predecessorId": pair[0], "successorId": pair[1]}),
        )
        .await;
    }
    (o, ids[1].clone(), ids[2].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn why_prints_sentences_for_a_person_and_data_with_output_json() {
    let server = TestServer::start().await;
    let api = server.org("CliWhy").await;
    let dir = tempfile::tempdir().unwrap();
    let (_, weld, paint) = order(&api).await;

    let out = run(&server, &api, dir.path(), &[D, "why", &weld, "-o", "table"]).await;
    assert_eq!(out.code, 0, "{out}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].starts_with("“Weld”") && lines[0].contains("1 reason follows."),
        "{out}"
    );
    assert!(
        lines[1].starts_with("  - “Weld”") && lines[1].contains("is late since"),
        "{out}"
    );
    assert!(lines[1].contains("its schedule ended at"), "{out}");

    // Paint waits for Weld, which completed nothing.
    let out = run(&server, &api, dir.path(), &[D, "why", &paint, "-o", "json"]).await;
    assert_eq!(out.code, 0, "{out}");
    let e = out.json();
    assert_eq!(e["deliverable"]["status"], "waiting", "{out}");
    assert_eq!(e["reasons"][0]["kind"], "waiting");
    assert_eq!(
        e["reasons"][0]["waiting"]["predecessors"][0]["deliverable"]["id"],
        weld.as_str()
    );

    // Another organization's deliverable: not found (exit 4), on stderr.
    let other = server.org("CliWhyOther").await;
    let out = run(
        &server,
        &other,
        dir.path(),
        &[D, "why", &weld, "-o", "table"],
    )
    .await;
    assert_eq!(out.code, 4, "{out}");
    assert!(out.stdout.is_empty(), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gantt_fits_80_columns_and_marks_the_late_node() {
    let server = TestServer::start().await;
    let api = server.org("CliGantt").await;
    let dir = tempfile::tempdir().unwrap();
    let (o, _, _) = order(&api).await;

    // Not a terminal: 80 columns.
    let out = run(&server, &api, dir.path(), &[D, "gantt", &o]).await;
    assert_eq!(out.code, 0, "{out}");
    for line in out.stdout.lines() {
        assert!(
            line.width() <= 80,
            "{} columns: {line:?}\n{out}",
            line.width()
        );
    }
    let row = |name: &str| {
        out.stdout
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("no row of {name}: {out}"))
            .to_string()
    };
    assert!(
        row("Order 1001").starts_with("1 !"),
        "the order is late too: {out}"
    );
    assert!(row("Cut").contains('░'), "done: {out}");
    let weld = row("Weld");
    assert!(weld.starts_with("3 !") && weld.contains('▓'), "{out}");
    assert!(weld.ends_with("←2"), "after Cut: {out}");
    assert!(row("Paint").ends_with("←3"), "after Weld: {out}");

    // --width says otherwise.
    let out = run(
        &server,
        &api,
        dir.path(),
        &[D, "gantt", &o, "--width", "40"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.lines().all(|l| l.width() <= 40), "{out}");
    let out = run(&server, &api, dir.path(), &[D, "gantt", &o, "--width", "5"]).await;
    assert_eq!(out.code, 2, "too narrow: {out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gantt_fits_the_terminal_it_draws_on() {
    let server = TestServer::start().await;
    let api = server.org("CliGanttPty").await;
    let dir = tempfile::tempdir().unwrap();
    let (o, _, _) = order(&api).await;
    // A planner's wide terminal, the classic 80 columns, and a narrow split pane.
    for columns in [120u16, 80, 40] {
        let home = dir.path().to_path_buf();
        let (base, key) = (
            server.base_url().to_string(),
            api.key().unwrap().to_string(),
        );
        let o = o.clone();
        let (shown, code) = tokio::task::spawn_blocking(move || {
            let mut command = CommandBuilder::new(assert_cmd::cargo::cargo_bin("prodops"));
            command.args([D, "gantt", &o]);
            command.env("PRODOPS_CONFIG_DIR", home.join("config"));
            command.env("PRODOPS_CREDENTIAL_STORE", "file");
            command.env("HOME", home.join("home"));
            command.env("PRODOPS_BASE_URL", base);
            command.env("PRODOPS_API_KEY", key);
            command.env_remove("COLUMNS");
            command.cwd(&home);
            // Everything the terminal showed until the command ended (the legend's end is
            // cut on narrow terminals, so no text of it is waited for).
            Terminal::spawn(command, columns).finish()
        })
        .await
        .unwrap();
        assert_eq!(code, 0, "{columns} columns: {shown}");
        let widest = shown.lines().map(UnicodeWidthStr::width).max().unwrap();
        assert!(
            widest <= usize::from(columns),
            "{widest} columns on a terminal of {columns}: {shown}"
        );
        if columns == 120 {
            assert!(widest > 80, "the terminal's 120 columns are used: {shown}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gantt_writes_an_svg_a_parser_reads() {
    let server = TestServer::start().await;
    let api = server.org("CliGanttSvg").await;
    let dir = tempfile::tempdir().unwrap();
    let (o, weld, paint) = order(&api).await;
    let file = dir.path().join("order.svg");
    let out = run(
        &server,
        &api,
        dir.path(),
        &[
            D,
            "gantt",
            &o,
            "--format",
            "svg",
            "--out",
            file.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.is_empty(), "{out}");
    let doc = std::fs::read_to_string(&file).unwrap();
    let mut reader = Reader::from_str(&doc);
    let mut bars = Vec::new();
    let mut deps = Vec::new();
    let mut root = None;
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) | Event::Empty(e) => {
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                let attrs: Vec<(String, String)> = e
                    .attributes()
                    .map(|a| {
                        let a = a.unwrap();
                        (
                            String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                            String::from_utf8(a.value.to_vec()).unwrap(),
                        )
                    })
                    .collect();
                let get = |k: &str| attrs.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
                root.get_or_insert((name.clone(), get("xmlns")));
                if name == "rect" && get("data-id").is_some() {
                    bars.push((get("data-id").unwrap(), get("class").unwrap()));
                }
                if name == "path" && get("class").as_deref() == Some("dependency") {
                    deps.push((get("data-from").unwrap(), get("data-to").unwrap()));
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    assert_eq!(
        root,
        Some((
            "svg".to_string(),
            Some("http://www.w3.org/2000/svg".to_string())
        ))
    );
    assert_eq!(bars.len(), 4, "the order and its three phases: {bars:?}");
    let class = |id: &str| bars.iter().find(|(b, _)| b == id).unwrap().1.clone();
    assert_eq!(class(&weld), "bar late");
    assert_eq!(class(&paint), "bar");
    assert_eq!(deps.len(), 2);
    assert!(deps.contains(&(weld.clone(), paint.clone())));

    // Without --out, the document goes to stdout.
    let out = run(
        &server,
        &api,
        dir.path(),
        &[D, "gantt", &o, "--format", "svg"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.starts_with("<?xml"), "{out}");
}
