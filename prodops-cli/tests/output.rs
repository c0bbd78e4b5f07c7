//! What `prodops` prints (docs/cli.md, "Output formats"), run as a process against a real
//! server: CSV and table columns from the resource's declared fields, values that begin with
//! `-`, `-o` as the format, yaml, `--jq`, `--template` and `--select`.

mod common;
use common::{Out, prodops_in, run};
use std::time::Duration;

use assert_cmd::Command;
use prodops_tests::*;

struct Env {
    server: TestServer,
    api: Api,
    dir: tempfile::TempDir,
}

impl Env {
    async fn start() -> Env {
        let server = TestServer::start().await;
        let api = server.org("Output").await;
        Env {
            server,
            api,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn cmd(&self) -> Command {
        prodops_in(
            &self.server,
            &self.api,
            self.dir.path(),
            Duration::from_secs(120),
        )
    }

    async fn run(&self, args: &[&str]) -> Out {
        run(self.cmd(), args).await
    }
}

fn ok(out: &Out) {
    assert_eq!(out.code, 0, "{out}");
}

fn csv_rows(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().unwrap().iter().map(String::from).collect();
    let rows = r
        .records()
        .map(|row| row.unwrap().iter().map(String::from).collect())
        .collect();
    (header, rows)
}

/// Issue 34, item 2: the CSV columns are the resource's declared fields, not the first
/// record's: a phase whose `progress` is null comes first, and the completed phase after it
/// still gets its `progress.status` cell.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn csv_columns_come_from_the_declared_fields() {
    let env = Env::start().await;
    let order = env
        .api
        .create("deliverable", json!({"name": "Order", "type": "order"}))
        .await;
    let order = order["id"].as_str().unwrap().to_string();
    let first = env
        .api
        .create(
            "deliverable",
            json!({"name": "Cut", "type": "phase", "parentId": order}),
        )
        .await;
    let done = env
        .api
        .create(
            "deliverable",
            json!({"name": "Weld", "type": "phase", "parentId": order}),
        )
        .await;
    let done = done["id"].as_str().unwrap().to_string();
    let resp = env
        .api
        .post(
            &format!("/deliverable/root/{order}/progress/{done}"),
            json!({"type": "complete"}),
        )
        .await;
    assert!(resp.status < 300, "progress: {} {}", resp.status, resp.body);
    assert!(first["progress"].is_null(), "{first}");

    let out = env
        .run(&[
            "deliverable",
            "list",
            "--filter",
            "type=phase",
            "--output",
            "csv",
        ])
        .await;
    ok(&out);
    let (header, rows) = csv_rows(&out.stdout);
    assert_eq!(header[0], "id");
    for c in [
        "progress.status",
        "progress.completed",
        "schedule.startDate",
        "data",
    ] {
        assert!(header.iter().any(|h| h == c), "{c} in {header:?}");
    }
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0][at("name")], "Cut");
    assert_eq!(rows[0][at("progress.status")], "");
    assert_eq!(rows[1][at("name")], "Weld");
    assert_eq!(rows[1][at("progress.status")], "done");

    let out = env
        .run(&["deliverable", "get", &done, "--output", "json"])
        .await;
    ok(&out);
    assert_eq!(out.json()["progress"]["status"], "done");

    // The same columns whichever record comes first, and for one record.
    let out = env
        .run(&["deliverable", "get", &done, "--output", "csv"])
        .await;
    ok(&out);
    let (one, rows) = csv_rows(&out.stdout);
    assert_eq!(one, header);
    assert_eq!(rows[0][at("progress.status")], "done");
    let out = env
        .run(&[
            "deliverable",
            "list",
            "--filter",
            "type=phase",
            "--sort",
            "name",
            "--output",
            "csv",
        ])
        .await;
    ok(&out);
    assert_eq!(csv_rows(&out.stdout).0, header);
}

/// Issue 34, item 7: `--sort -createdAt,name`, the help's own example, is a value, not a flag;
/// so is any other value that begins with `-`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_may_begin_with_a_hyphen() {
    let env = Env::start().await;
    for name in ["Ann", "Bob", "Cy-dash"] {
        env.api.create("worker", json!({"name": name})).await;
    }
    let names = |out: &Out| -> Vec<String> {
        out.json()
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].as_str().unwrap().to_string())
            .collect()
    };
    let out = env
        .run(&[
            "worker",
            "list",
            "--sort",
            "-createdAt,name",
            "--output",
            "json",
        ])
        .await;
    ok(&out);
    let mut listed = names(&out);
    listed.sort();
    assert_eq!(listed, ["Ann", "Bob", "Cy-dash"]);
    let out = env
        .run(&["worker", "list", "--sort", "-name", "--output", "json"])
        .await;
    ok(&out);
    assert_eq!(names(&out), ["Cy-dash", "Bob", "Ann"]);
    let out = env
        .run(&["worker", "list", "--search", "-da", "--output", "json"])
        .await;
    ok(&out);
    assert_eq!(names(&out), ["Cy-dash"]);
    let out = env
        .run(&[
            "worker",
            "create",
            "--set",
            "name=x",
            "--set",
            "customerIdentifier=-7",
            "--output",
            "json",
        ])
        .await;
    ok(&out);
    assert_eq!(out.json()["customerIdentifier"], "-7");
}

/// Issue 34, item 8: `-o` is the output format everywhere (as kubectl's); an export's file is
/// `--out FILE`, and an export asked for another format than CSV is a usage error that says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dash_o_is_the_format_and_yaml_is_one() {
    let env = Env::start().await;
    env.api
        .create("worker", json!({"name": "Ann", "customerIdentifier": "E1"}))
        .await;
    let out = env.run(&["worker", "list", "-o", "json"]).await;
    ok(&out);
    assert_eq!(out.json()[0]["name"], "Ann");
    let out = env
        .run(&["worker", "list", "-o", "yaml", "--select", "name,status"])
        .await;
    ok(&out);
    assert_eq!(out.stdout, "- name: Ann\n  status: active\n");
    let out = env
        .run(&["worker", "list", "-o", "yaml", "--filter", "name=nobody"])
        .await;
    ok(&out);
    assert_eq!(out.stdout, "[]\n");
    let out = env.run(&["worker", "count", "-o", "yaml"]).await;
    ok(&out);
    assert_eq!(out.stdout, "count: 1\n");

    let out = env.run(&["worker", "export", "-o", "json"]).await;
    assert_eq!(out.code, 2, "{out}");
    assert!(out.stderr.contains("--out FILE"), "{out}");
    assert!(!env.dir.path().join("json").exists() && !std::path::Path::new("json").exists());
    let file = env.dir.path().join("w.csv");
    let out = env
        .run(&[
            "worker",
            "export",
            "-o",
            "csv",
            "--out",
            file.to_str().unwrap(),
        ])
        .await;
    ok(&out);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("id,name,customerIdentifier"), "{text}");
    assert!(text.contains(",Ann,E1,"), "{text}");
}

/// Issue 34, item 9: `--jq` (strings raw, a list as one array), `--template`, and `--select`
/// on create, update and restore; a `--select` naming an unknown field is exit 2 listing the
/// fields, before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jq_template_and_select_shape_what_is_printed() {
    let env = Env::start().await;
    let out = env
        .run(&["worker", "create", "--set", "name=X", "--jq", ".id"])
        .await;
    ok(&out);
    let id = out.stdout.trim_end_matches('\n').to_string();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "a bare id: {out}");
    assert_eq!(out.stdout, format!("{id}\n"));
    assert_eq!(env.api.read("worker", &id).await["name"], "X");

    let out = env
        .run(&[
            "worker",
            "update",
            &id,
            "--set",
            "unionCode=U1",
            "--select",
            "name,unionCode",
            "-o",
            "json",
        ])
        .await;
    ok(&out);
    assert_eq!(out.json(), json!({"name": "X", "unionCode": "U1"}));
    let out = env
        .run(&[
            "worker",
            "archive",
            &id,
            "--select",
            "isArchived",
            "-o",
            "json",
        ])
        .await;
    ok(&out);
    assert_eq!(out.json(), json!({"isArchived": true}));
    let out = env
        .run(&[
            "worker",
            "restore",
            &id,
            "--select",
            "name,isArchived",
            "-o",
            "csv",
        ])
        .await;
    ok(&out);
    assert_eq!(out.stdout, "name,isArchived\nX,false\n");

    env.api
        .create("worker", json!({"name": "Y", "status": "inactive"}))
        .await;
    let out = env
        .run(&[
            "worker",
            "list",
            "--sort",
            "name",
            "--jq",
            ".[] | select(.status == \"inactive\") | .name",
        ])
        .await;
    ok(&out);
    assert_eq!(out.stdout, "Y\n");
    let out = env.run(&["worker", "list", "--jq", "length"]).await;
    ok(&out);
    assert_eq!(out.stdout, "2\n");
    let out = env.run(&["worker", "count", "--jq", ".count"]).await;
    ok(&out);
    assert_eq!(out.stdout, "2\n");
    let out = env
        .run(&[
            "worker",
            "list",
            "--sort",
            "name",
            "--template",
            "{{ name }}: {{ status | upper }}",
        ])
        .await;
    ok(&out);
    assert_eq!(out.stdout, "X: ACTIVE\nY: INACTIVE\n");
    let out = env
        .run(&["api", "GET", &format!("/worker/{id}"), "--jq", ".name"])
        .await;
    ok(&out);
    assert_eq!(out.stdout, "X\n");

    // Refused before anything is sent: exit 2, nothing created.
    let out = env
        .run(&[
            "worker",
            "create",
            "--set",
            "name=Z",
            "--select",
            "name,nmae",
        ])
        .await;
    assert_eq!(out.code, 2, "{out}");
    assert!(
        out.stderr.contains("nmae") && out.stderr.contains("customerIdentifier"),
        "{out}"
    );
    let out = env
        .run(&["worker", "create", "--set", "name=Z", "--jq", ".["])
        .await;
    assert_eq!(out.code, 2, "{out}");
    let out = env
        .run(&["worker", "list", "--select", "bogus", "-o", "csv"])
        .await;
    assert_eq!(out.code, 2, "{out}");
    assert!(out.stdout.is_empty(), "{out}");
    assert_eq!(env.api.count("worker", "").await, 2, "no Z was created");
    // An action's declared answer says which fields it has.
    let out = env
        .run(&["events", "list", "--select", "recordId,typo"])
        .await;
    assert_eq!(out.code, 2, "{out}");
    assert!(
        out.stderr.contains("typo") && out.stderr.contains("occurredAt"),
        "{out}"
    );
    let out = env
        .run(&["events", "list", "--select", "type,data.name", "-o", "csv"])
        .await;
    ok(&out);
    assert!(
        out.stdout.starts_with("type,data.name\nworker.created,X\n"),
        "{out}"
    );
}

/// Issue 34, item 9: `--jq` and `--template` on the commands whose JSON is a summary rather
/// than records: a bulk change, an import, `auth status`, and `events tail` (run per event).
/// A bad program is refused before anything is sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jq_shapes_summaries_the_feed_and_auth_status() {
    let env = Env::start().await;
    let csv = env.dir.path().join("w.csv");
    std::fs::write(&csv, "name,customerIdentifier\nAnn,J-1\nBo,J-2\n").unwrap();
    let out = env
        .run(&[
            "worker",
            "import",
            csv.to_str().unwrap(),
            "--jq",
            ".accepted",
        ])
        .await;
    ok(&out);
    assert_eq!(out.stdout, "2\n");
    let out = env
        .run(&[
            "worker",
            "import",
            csv.to_str().unwrap(),
            "--key",
            "customerIdentifier",
            "--dry-run",
            "--template",
            "{{ unchanged }} unchanged",
        ])
        .await;
    ok(&out);
    assert_eq!(out.stdout, "2 unchanged\n");

    let out = env
        .run(&[
            "worker",
            "bulk-update",
            "--filter",
            "customerIdentifier=J-1",
            "--set",
            "status=inactive",
            "--jq",
            ".count",
        ])
        .await;
    ok(&out);
    assert_eq!(out.stdout, "1\n");
    let out = env
        .run(&[
            "worker",
            "bulk-update",
            "--search",
            "J-",
            "--set",
            "status=active",
            "--dry-run",
            "--jq",
            ".answer.count",
        ])
        .await;
    ok(&out);
    assert_eq!(out.stdout, "2\n");

    let out = env
        .run(&[
            "events",
            "tail",
            "--resource",
            "worker",
            "--jq",
            "select(.type == \"worker.updated\") | .data.name",
        ])
        .await;
    ok(&out);
    assert_eq!(out.stdout, "Ann\n");

    let out = env.run(&["auth", "status", "--jq", ".valid"]).await;
    ok(&out);
    assert_eq!(out.stdout, "true\n");

    // Refused before anything is sent: the import writes nothing, the bulk change changes
    // nothing.
    std::fs::write(&csv, "name\nCy\n").unwrap();
    let out = env
        .run(&["worker", "import", csv.to_str().unwrap(), "--jq", ".["])
        .await;
    assert_eq!(out.code, 2, "{out}");
    let out = env
        .run(&[
            "worker",
            "bulk-update",
            "--search",
            "J-",
            "--set",
            "name=Gone",
            "--yes",
            "--jq",
            ".[",
        ])
        .await;
    assert_eq!(out.code, 2, "{out}");
    let out = env.run(&["events", "tail", "--jq", ".["]).await;
    assert_eq!(out.code, 2, "{out}");
    assert_eq!(
        env.api.count("worker", "").await,
        2,
        "nothing more, nothing less"
    );
    assert_eq!(
        env.api.count("worker", "name=Gone").await,
        0,
        "nothing renamed"
    );
}

/// Snapshots of what a person and a script see: a table (40 columns, from `$COLUMNS` since
/// stdout is no terminal here), the CSV, the TSV, and `--jq`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_of_a_table_a_csv_and_jq() {
    let env = Env::start().await;
    for (name, status, ident) in [
        ("Ann Abernathy-Castellanos de la Vega", "active", "E-1"),
        ("Bob", "inactive", "E-2"),
        ("Cy\nNewline", "terminated", ""),
    ] {
        env.api
            .create(
                "worker",
                json!({"name": name, "status": status, "customerIdentifier": ident, "unionCode": null}),
            )
            .await;
    }
    let select = "name,status,customerIdentifier,unionCode";
    let mut cmd = env.cmd();
    cmd.env("COLUMNS", "40");
    let out = run(
        cmd,
        &[
            "worker", "list", "--sort", "name", "--select", select, "-o", "table",
        ],
    )
    .await;
    ok(&out);
    insta::assert_snapshot!("table", out.stdout);
    let out = env
        .run(&[
            "worker", "list", "--sort", "name", "--select", select, "-o", "csv",
        ])
        .await;
    ok(&out);
    insta::assert_snapshot!("csv", out.stdout);
    let out = env
        .run(&[
            "worker", "list", "--sort", "name", "--select", select, "-o", "tsv",
        ])
        .await;
    ok(&out);
    insta::assert_snapshot!("tsv", out.stdout);
    let out = env
        .run(&[
            "worker",
            "list",
            "--sort",
            "name",
            "--jq",
            "map({name, status}) | .[1:]",
        ])
        .await;
    ok(&out);
    insta::assert_snapshot!("jq", out.stdout);
}
