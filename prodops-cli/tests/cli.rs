//! The real `prodops` binary against a real server started in-process (prodops-tests harness):
//! output formats, exit codes, auth precedence, worker CSV import and export, rate limits.
//! Every test uses its own config directory and the file credential store, never the user's.

mod common;
use common::{Out, run};
use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use prodops_tests::*;
use serde_json::Value;

const STATUSES: [&str; 3] = ["active", "inactive", "terminated"];

struct Env {
    server: TestServer,
    api: Api,
    dir: tempfile::TempDir,
}

impl Env {
    async fn start() -> Env {
        Self::with(TestServer::start().await).await
    }

    async fn with(server: TestServer) -> Env {
        let api = server.org("Cli").await;
        Env {
            server,
            api,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The command with no credentials at all (isolated config directory, file store).
    fn bare(&self) -> Command {
        let mut cmd = Command::cargo_bin("prodops").unwrap();
        cmd.env_remove("PRODOPS_BASE_URL")
            .env_remove("PRODOPS_API_KEY")
            .env("PRODOPS_CONFIG_DIR", self.path("config"))
            .env("PRODOPS_CREDENTIAL_STORE", "file")
            .env("HOME", self.path("home"))
            .timeout(Duration::from_secs(300));
        cmd
    }

    /// The command with this organization's instance and key in the environment.
    fn cmd(&self) -> Command {
        let mut cmd = self.bare();
        cmd.env("PRODOPS_BASE_URL", self.server.base_url())
            .env("PRODOPS_API_KEY", self.api.key().unwrap());
        cmd
    }

    fn cmd_for(&self, api: &Api) -> Command {
        let mut cmd = self.bare();
        cmd.env("PRODOPS_BASE_URL", self.server.base_url())
            .env("PRODOPS_API_KEY", api.key().unwrap());
        cmd
    }
}

fn ok(out: &Out) {
    assert_eq!(out.code, 0, "{out}");
}

fn write(path: &Path, text: &str) -> String {
    std::fs::write(path, text).unwrap();
    path.display().to_string()
}

/// Every worker of the organization, archived ones included, by name.
async fn all_workers(api: &Api) -> Vec<Value> {
    let mut all = api.list("worker", "isArchived=false&pageSize=10000").await;
    all.extend(api.list("worker", "isArchived=true&pageSize=10000").await);
    all.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_output_format() {
    let env = Env::start().await;
    let a = env
        .api
        .create("worker", json!({"name": "Ann", "customerIdentifier": "E1"}))
        .await;
    env.api
        .create("worker", json!({"name": "Bob", "teamId": null}))
        .await;

    let out = run(env.cmd(), &["worker", "list", "--output", "json"]).await;
    ok(&out);
    let list = out.json();
    assert_eq!(field_of(list.as_array().unwrap(), "name"), ["Ann", "Bob"]);

    // Not a terminal: json is the default.
    let out = run(env.cmd(), &["worker", "list"]).await;
    ok(&out);
    assert_eq!(out.json().as_array().unwrap().len(), 2);

    let out = run(
        env.cmd(),
        &[
            "worker",
            "list",
            "--output",
            "ndjson",
            "--select",
            "name,status",
        ],
    )
    .await;
    ok(&out);
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        lines,
        [
            json!({"name": "Ann", "status": "active"}),
            json!({"name": "Bob", "status": "active"})
        ]
    );

    let out = run(
        env.cmd(),
        &[
            "worker",
            "list",
            "--output",
            "csv",
            "--select",
            "name,customerIdentifier,teamId",
        ],
    )
    .await;
    ok(&out);
    assert_eq!(
        out.stdout,
        "name,customerIdentifier,teamId\nAnn,E1,\nBob,,\n"
    );

    let out = run(
        env.cmd(),
        &["worker", "list", "--output", "table", "--search", "ann"],
    )
    .await;
    ok(&out);
    assert!(
        out.stdout.contains("Ann") && !out.stdout.contains("Bob"),
        "{out}"
    );
    assert!(out.stdout.contains("1 record(s)"), "{out}");

    let id = a["id"].as_str().unwrap();
    let out = run(env.cmd(), &["worker", "get", id, "--output", "json"]).await;
    ok(&out);
    assert_eq!(out.json()["customerIdentifier"], "E1");
    let out = run(env.cmd(), &["worker", "get", id, "--output", "ndjson"]).await;
    ok(&out);
    assert_eq!(out.stdout.lines().count(), 1, "{out}");
    let out = run(
        env.cmd(),
        &[
            "worker", "get", id, "--output", "csv", "--select", "id,name",
        ],
    )
    .await;
    ok(&out);
    assert_eq!(out.stdout, format!("id,name\n{id},Ann\n"));
    let out = run(env.cmd(), &["worker", "get", id, "--output", "table"]).await;
    ok(&out);
    assert!(
        out.stdout.contains("customerIdentifier") && out.stdout.contains("E1"),
        "{out}"
    );

    let out = run(env.cmd(), &["worker", "count", "--output", "json"]).await;
    ok(&out);
    assert_eq!(out.json(), json!({"count": 2}));
    let out = run(
        env.cmd(),
        &["worker", "group-count", "status", "--output", "csv"],
    )
    .await;
    ok(&out);
    assert_eq!(out.stdout, "groupId,count\nactive,2\n");

    // An empty list is still valid output.
    let out = run(
        env.cmd(),
        &[
            "worker",
            "list",
            "--filter",
            "status=terminated",
            "--output",
            "json",
        ],
    )
    .await;
    ok(&out);
    assert_eq!(out.json(), json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_verbs_and_the_api_command() {
    let env = Env::start().await;
    let out = run(
        env.cmd(),
        &[
            "worker",
            "create",
            "--set",
            "name=Cy",
            "--set",
            "customerIdentifier=007",
            "--output",
            "json",
        ],
    )
    .await;
    ok(&out);
    let created = out.json();
    assert_eq!(
        created["customerIdentifier"], "007",
        "--set keeps text as text"
    );
    let id = created["id"].as_str().unwrap().to_string();

    let out = run(
        env.cmd(),
        &[
            "worker",
            "update",
            &id,
            "--set",
            "status=inactive",
            "--set-json",
            "exemptFromAssignments=true",
        ],
    )
    .await;
    ok(&out);
    assert_eq!(out.json()["status"], "inactive");

    let out = run(env.cmd(), &["worker", "archive", &id]).await;
    ok(&out);
    assert_eq!(out.json()["name"], "Cy - (archived 1)");
    let out = run(env.cmd(), &["worker", "restore", &id]).await;
    ok(&out);
    assert_eq!(out.json()["name"], "Cy");

    let out = run(
        env.cmd(),
        &[
            "worker",
            "bulk-put",
            "--data",
            r#"[{"name":"D1"},{"name":"D2"}]"#,
        ],
    )
    .await;
    ok(&out);
    assert_eq!(out.json()["count"], 2);
    let out = run(
        env.cmd(),
        &[
            "worker",
            "bulk-update",
            "--filter",
            "name=D1",
            "--set",
            "unionCode=U9",
        ],
    )
    .await;
    ok(&out);
    assert_eq!(out.json()["count"], 1);
    let out = run(
        env.cmd(),
        &["worker", "bulk-update", "--set", "unionCode=U9"],
    )
    .await;
    assert_eq!(
        out.code, 2,
        "a bulk change without a filter is refused before sending: {out}"
    );

    let out = run(
        env.cmd(),
        &["worker", "query", "--id", &id, "--select", "name"],
    )
    .await;
    ok(&out);
    assert_eq!(out.json(), json!([{"id": id, "name": "Cy"}]));

    // Archivable on delete: vendor delete archives, restore brings it back.
    let vendor = env.api.create("vendor", json!({"name": "Acme"})).await;
    let vid = vendor["id"].as_str().unwrap();
    let out = run(env.cmd(), &["vendor", "archive", vid]).await;
    ok(&out);
    assert_eq!(out.json()["isArchived"], true);
    let out = run(env.cmd(), &["vendor", "restore", vid]).await;
    ok(&out);
    assert_eq!(out.json()["isArchived"], false);

    // prodops api, with and without --paginate.
    let out = run(env.cmd(), &["api", "GET", "/worker/count"]).await;
    ok(&out);
    assert_eq!(out.json()["count"], 3);
    let out = run(
        env.cmd(),
        &["api", "post", "worker", "--data", r#"{"name":"E"}"#],
    )
    .await;
    ok(&out);
    assert_eq!(out.json()["name"], "E");
    let out = run(
        env.cmd(),
        &[
            "api",
            "GET",
            "/worker?pageSize=1",
            "--paginate",
            "--output",
            "ndjson",
        ],
    )
    .await;
    ok(&out);
    assert_eq!(out.stdout.lines().count(), 4, "{out}");

    // Completions and help.
    for shell in ["bash", "zsh", "fish"] {
        let out = run(env.bare(), &["completions", shell]).await;
        ok(&out);
        assert!(out.stdout.contains("prodops"), "{shell}");
    }
    let out = run(env.bare(), &["production", "produce", "--help"]).await;
    ok(&out);
    assert!(
        out.stdout.contains("Example") && out.stdout.contains("--deliverable-id"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_exit_code() {
    let server = TestServer::start_with(|c| {
        c.rate_limit = 2;
        c.rate_limit_window = Duration::from_secs(60);
    })
    .await;
    let env = Env::with(server).await;
    // 0 then 5 (rejected: the server's 400) — two requests of the budget of two.
    ok(&run(env.cmd(), &["worker", "count"]).await);
    let out = run(
        env.cmd(),
        &[
            "worker",
            "create",
            "--set-json",
            "status=\"retired\"",
            "--set",
            "name=X",
        ],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert!(
        out.stderr.contains("VALIDATION_ERROR") && out.stderr.contains("request id"),
        "{out}"
    );
    // 6: rate-limited after retries (one attempt allowed, the window is long).
    let out = run(env.cmd(), &["worker", "count", "--max-attempts", "1"]).await;
    assert_eq!(out.code, 6, "{out}");
    assert!(out.stderr.contains("RATE_LIMITED"), "{out}");

    // The rest on a server with the default limit.
    let env = Env::start().await;
    // 2: usage errors.
    assert_eq!(run(env.cmd(), &["worker", "list", "--bogus"]).await.code, 2);
    assert_eq!(
        run(env.cmd(), &["worker", "list", "--filter", "noequals"])
            .await
            .code,
        2
    );
    assert_eq!(
        run(env.cmd(), &["production", "status", "not-a-uuid"])
            .await
            .code,
        2
    );
    let out = run(env.bare(), &["worker", "list"]).await;
    assert_eq!(out.code, 2, "no instance configured: {out}");
    // 3: authentication and permission.
    let out = run(
        e(env.cmd(), "PRODOPS_API_KEY", "pdk_wrong"),
        &["worker", "list"],
    )
    .await;
    assert_eq!(out.code, 3, "{out}");
    let (reader, _) = env.server.key(&env.api, false, &["Worker.Read"]).await;
    let out = run(
        env.cmd_for(&reader),
        &["worker", "create", "--set", "name=No"],
    )
    .await;
    assert_eq!(out.code, 3, "403: {out}");
    // 4: not found.
    let out = run(
        env.cmd(),
        &["worker", "get", &uuid::Uuid::new_v4().to_string()],
    )
    .await;
    assert_eq!(out.code, 4, "{out}");
    // 5: 403-free rejections: worker delete is not offered; a 400 from the server.
    let out = run(
        env.cmd(),
        &[
            "api",
            "DELETE",
            &format!("/worker/{}", uuid::Uuid::new_v4()),
        ],
    )
    .await;
    assert_eq!(out.code, 3, "DELETE /worker is 403: {out}");
    let out = run(
        env.cmd(),
        &["api", "PATCH", "/document/bulk", "--data", "{}"],
    )
    .await;
    assert!(out.code == 5, "{out}");
    // 7: network error.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let out = run(
        e(env.cmd(), "PRODOPS_BASE_URL", format!("http://{addr}")),
        &["worker", "list"],
    )
    .await;
    assert_eq!(out.code, 7, "{out}");
    assert!(out.stderr.contains("network"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_precedence_flag_over_env_over_stored() {
    let env = Env::start().await;
    let good = env.api.key().unwrap().to_string();
    let url = env.server.base_url().to_string();

    // Nothing stored, nothing given.
    let out = run(e(env.bare(), "PRODOPS_BASE_URL", &url), &["worker", "list"]).await;
    assert_eq!(out.code, 3, "no key: {out}");
    let out = run(env.bare(), &["auth", "status", "--output", "json"]).await;
    assert_eq!(out.code, 3, "{out}");

    // A bad key is not stored.
    let out = run(
        env.bare(),
        &["auth", "login", "--base-url", &url, "--api-key", "pdk_bad"],
    )
    .await;
    assert_eq!(out.code, 3, "{out}");
    assert!(!env.path("config/credentials.json").exists());

    // Login from stdin stores the key in a private file (no keyring in tests).
    let mut login = env.bare();
    login.write_stdin(format!("{good}\n"));
    let out = run(
        login,
        &["auth", "login", "--base-url", &url, "--with-token"],
    )
    .await;
    ok(&out);
    let creds = env.path("config/credentials.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&creds).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "credentials readable only by the user");
    }
    assert!(
        !std::fs::read_to_string(env.path("config/config.json"))
            .unwrap()
            .contains(&good)
    );

    // Stored credentials alone work.
    ok(&run(env.bare(), &["worker", "list"]).await);
    let out = run(env.bare(), &["auth", "status", "--output", "json"]).await;
    ok(&out);
    let status = out.json();
    assert_eq!(status["apiKeySource"], "file");
    assert_eq!(status["valid"], true);
    assert!(!out.stdout.contains(&good), "the key is masked: {out}");

    // The environment beats the stored key...
    let out = run(
        e(env.bare(), "PRODOPS_API_KEY", "pdk_env_bad"),
        &["worker", "list"],
    )
    .await;
    assert_eq!(out.code, 3, "env wins over stored: {out}");
    let out = run(
        e(env.bare(), "PRODOPS_API_KEY", "pdk_env_bad"),
        &["auth", "status", "--output", "json"],
    )
    .await;
    assert_eq!(out.json()["apiKeySource"], "environment");
    // ...and the flag beats the environment.
    let out = run(
        e(env.bare(), "PRODOPS_API_KEY", "pdk_env_bad"),
        &["worker", "list", "--api-key", &good],
    )
    .await;
    ok(&out);
    let out = run(
        e(env.bare(), "PRODOPS_API_KEY", &good),
        &["worker", "list", "--api-key", "pdk_flag_bad"],
    )
    .await;
    assert_eq!(out.code, 3, "flag wins over env: {out}");

    // Logout forgets it.
    ok(&run(env.bare(), &["auth", "logout"]).await);
    assert!(!creds.exists());
    let out = run(e(env.bare(), "PRODOPS_BASE_URL", &url), &["worker", "list"]).await;
    assert_eq!(out.code, 3, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_reports_bad_rows_and_writes_the_good_ones() {
    let env = Env::start().await;
    // An archived worker is read-only: the server rejects a changing row for it (a rule only
    // the server can check), inside a batch of good rows.
    let locked = env
        .api
        .create("worker", json!({"name": "Locked", "isArchived": false}))
        .await;
    let locked_id = locked["id"].as_str().unwrap();
    let resp = env
        .api
        .patch(&format!("/worker/{locked_id}"), json!({"isArchived": true}))
        .await;
    assert_eq!(resp.status, 200);
    let file = write(
        &env.path("people.csv"),
        &format!(
            "name,customerIdentifier,status,exemptFromAssignments,id\n\
             Good One,G1,active,false,\n\
             ,G2,active,false,\n\
             Good Three,G3,inactive,true,\n\
             Bad Status,G4,retired,false,\n\
             Renamed,G5,active,false,{locked_id}\n\
             Good Six,G6,terminated,no,\n\
             Bad Bool,G7,active,perhaps,\n"
        ),
    );
    let out = run(env.cmd(), &["worker", "import", &file, "--output", "json"]).await;
    assert_eq!(out.code, 5, "{out}");
    for line in ["line 3:", "line 5:", "line 6:", "line 8:"] {
        assert!(out.stderr.contains(line), "{line} reported: {out}");
    }
    for line in ["line 2:", "line 4:", "line 7:"] {
        assert!(!out.stderr.contains(line), "{line} is fine: {out}");
    }
    assert!(out.stderr.contains("line 5: status"), "{out}");
    assert_eq!(
        out.json(),
        json!({"rows": 7, "accepted": 3, "rejected": 4, "dryRun": false})
    );
    let names = field_of(&env.api.list("worker", "").await, "name");
    assert_eq!(names, ["Good One", "Good Three", "Good Six"]);
    assert_eq!(
        env.api.read("worker", locked_id).await["name"],
        "Locked - (archived 1)"
    );

    // --dry-run checks, counts what a real run would do, and writes nothing.
    let dry = write(&env.path("dry.csv"), "name,status\nZed,active\nBad,nope\n");
    let out = run(
        env.cmd(),
        &["worker", "import", &dry, "--dry-run", "--output", "json"],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert!(out.stderr.contains("line 3:"), "{out}");
    assert_eq!(out.json()["accepted"], 1, "{out}");
    assert_eq!(out.json()["created"], 1, "{out}");
    assert_eq!(out.json()["rejected"], 1, "{out}");
    assert_eq!(env.api.count("worker", "name=Zed").await, 0);

    // A file the importer cannot read as workers is refused before anything is sent.
    let odd = write(&env.path("odd.csv"), "name,shoeSize\nA,9\n");
    let out = run(env.cmd(), &["worker", "import", &odd]).await;
    assert_eq!(out.code, 5, "{out}");
    assert!(out.stderr.contains("shoeSize"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reimport_changes_nothing() {
    let env = Env::start().await;
    let rows: String = (0..250)
        .map(|i| {
            format!(
                "Person {i},K{i},{},{}\n",
                if i % 3 == 0 { "inactive" } else { "active" },
                i % 2 == 0
            )
        })
        .collect();
    let file = write(
        &env.path("keyed.csv"),
        &format!("name,customerIdentifier,status,exemptFromAssignments\n{rows}"),
    );
    let args = [
        "worker",
        "import",
        file.as_str(),
        "--key",
        "customerIdentifier",
        "--batch-size",
        "100",
        "--output",
        "json",
    ];
    let out = run(env.cmd(), &args).await;
    ok(&out);
    assert_eq!(out.json()["accepted"], 250);
    let before = all_workers(&env.api).await;
    assert_eq!(before.len(), 250);
    let out = run(env.cmd(), &args).await;
    ok(&out);
    assert_eq!(
        all_workers(&env.api).await,
        before,
        "second run with --key changes nothing"
    );

    // With ids (an export), the same holds.
    let exported = env.path("export.csv");
    ok(&run(
        env.cmd(),
        &["worker", "export", "--out", exported.to_str().unwrap()],
    )
    .await);
    let out = run(
        env.cmd(),
        &[
            "worker",
            "import",
            exported.to_str().unwrap(),
            "--output",
            "json",
        ],
    )
    .await;
    ok(&out);
    assert_eq!(out.json()["rejected"], 0);
    assert_eq!(
        all_workers(&env.api).await,
        before,
        "re-importing an export changes nothing"
    );

    // A changed row updates that worker only.
    let changed = write(
        &env.path("one.csv"),
        "customerIdentifier,status\nK7,terminated\n",
    );
    ok(&run(
        env.cmd(),
        &["worker", "import", &changed, "--key", "customerIdentifier"],
    )
    .await);
    let after = all_workers(&env.api).await;
    let differing: Vec<_> = after.iter().zip(&before).filter(|(a, b)| a != b).collect();
    assert_eq!(differing.len(), 1);
    assert_eq!(differing[0].0["customerIdentifier"], "K7");
    assert_eq!(differing[0].0["status"], "terminated");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_archived_and_round_trip_into_an_empty_org() {
    let env = Env::start().await;
    let team = env.api.post("/team", json!({"name": "Night"})).await;
    let team_id = if team.status == 201 {
        team.id()
    } else {
        uuid::Uuid::new_v4().to_string()
    };
    let mut records = Vec::new();
    for i in 0..30 {
        records.push(json!({
            "name": format!("W{i:02}, \"quoted\""),
            "customerIdentifier": format!("C{i}"),
            "status": STATUSES[i % 3],
            "exemptFromAssignments": i % 4 == 0,
            "unionCode": if i % 5 == 0 { json!("U1") } else { json!(null) },
            "qbBadgeLink": if i % 7 == 0 { json!("qb://x") } else { json!(null) },
            "teamId": if i % 2 == 0 { json!(team_id) } else { json!(null) },
        }));
    }
    let ids = env.api.bulk_put("worker", records).await;
    for id in &ids[..5] {
        let resp = env
            .api
            .patch(&format!("/worker/{id}"), json!({"isArchived": true}))
            .await;
        assert_eq!(resp.status, 200);
    }

    let archived = env.path("archived.csv");
    let out = run(
        env.cmd(),
        &[
            "worker",
            "export",
            "--filter",
            "isArchived=true",
            "--out",
            archived.to_str().unwrap(),
        ],
    )
    .await;
    ok(&out);
    let text = std::fs::read_to_string(&archived).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 5, "{text}");
    assert!(
        rows.iter()
            .all(|r| &r[5] == "true" && r[1].contains("(archived 1)")),
        "{text}"
    );

    // Export to stdout, everything (archived and not), with a small page size to cross pages.
    let all_csv = env.path("all.csv");
    let out = run(env.cmd(), &["worker", "export", "--page-size", "7"]).await;
    ok(&out);
    let active_count = out.stdout.lines().count() - 1;
    assert_eq!(active_count, 25, "default export leaves archived ones out");
    let mut combined = out.stdout.clone();
    combined.extend(text.lines().skip(1).map(|l| format!("{l}\n")));
    std::fs::write(&all_csv, combined).unwrap();

    let empty = env.server.org("Empty").await;
    let out = run(
        env.cmd_for(&empty),
        &[
            "worker",
            "import",
            all_csv.to_str().unwrap(),
            "--output",
            "json",
        ],
    )
    .await;
    ok(&out);
    assert_eq!(out.json()["accepted"], 30);
    let strip = |v: &Vec<Value>| -> Vec<Value> {
        v.iter()
            .map(|w| {
                json!([
                    w["id"],
                    w["name"],
                    w["customerIdentifier"],
                    w["status"],
                    w["isArchived"],
                    w["exemptFromAssignments"],
                    w["unionCode"],
                    w["qbBadgeLink"],
                    w["teamId"]
                ])
            })
            .collect()
    };
    assert_eq!(
        strip(&all_workers(&empty).await),
        strip(&all_workers(&env.api).await)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_rides_out_429() {
    let server = TestServer::start_with(|c| {
        c.rate_limit = 3;
        c.rate_limit_window = Duration::from_secs(1);
    })
    .await;
    let env = Env::with(server).await;
    let rows: String = (0..12).map(|i| format!("R{i}\n")).collect();
    let file = write(&env.path("slow.csv"), &format!("name\n{rows}"));
    let out = run(
        env.cmd(),
        &[
            "worker",
            "import",
            &file,
            "--batch-size",
            "1",
            "--concurrency",
            "1",
            "--output",
            "json",
        ],
    )
    .await;
    ok(&out);
    assert_eq!(out.json()["accepted"], 12);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        env.api.count("worker", "").await,
        12,
        "each row written once despite retries"
    );
    let out = run(
        env.cmd(),
        &["worker", "list", "--page-size", "1", "--output", "ndjson"],
    )
    .await;
    ok(&out);
    assert_eq!(out.stdout.lines().count(), 12);
}

/// The command with one more environment variable.
fn e(mut cmd: Command, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Command {
    cmd.env(key, value);
    cmd
}
