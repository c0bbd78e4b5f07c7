//! What a script, a CSV file or a person at a terminal does must never double, drop or destroy
//! data, or show a secret (issue 34, items 1 and 3 to 6). The real `prodops` binary against a
//! real server (SQLite by default, PostgreSQL with PRODOPS_TEST_DATABASE_URL); the terminal
//! items under a pseudo-terminal.

mod common;
use common::pty::Terminal;
use common::{Out, run};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use portable_pty::CommandBuilder;
use prodops_tests::*;

fn cmd(server: &TestServer, api: &Api, dir: &Path) -> Command {
    common::prodops_in(server, api, dir, Duration::from_secs(900))
}

fn write(path: std::path::PathBuf, text: &str) -> String {
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The workers carrying `key` as their customerIdentifier, archived ones included.
async fn workers_with_key(api: &Api, key: &str) -> usize {
    let mut n = 0;
    for archived in [false, true] {
        n += api
            .list(
                "worker",
                &format!("customerIdentifier={key}&isArchived={archived}"),
            )
            .await
            .len();
    }
    n
}

/// The stderr lines that report file line `line`.
fn reports_line(out: &Out, line: u64) -> bool {
    out.stderr
        .lines()
        .any(|l| l.starts_with(&format!("line {line}: ")))
}

// ---- item 1: a key given twice in a file ---------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_given_twice_is_refused_on_both_lines_whatever_the_batch_size() {
    let server = TestServer::start().await;
    let api = server.org("Keys").await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path().join("f.csv"),
        "name,customerIdentifier\nAnn,K-1\nBob,K-2\nCid,K-3\nDee,K-1\n",
    );
    for (i, batch) in ["2", "1", "5000"].into_iter().enumerate() {
        // The dry run first: the same refusal, and nothing written.
        let dry = run(
            cmd(&server, &api, dir.path()),
            &[
                "worker",
                "import",
                &file,
                "--key",
                "customerIdentifier",
                "--batch-size",
                batch,
                "--dry-run",
            ],
        )
        .await;
        assert_eq!(dry.code, 5, "{dry}");
        assert!(reports_line(&dry, 2) && reports_line(&dry, 5), "{dry}");
        assert!(
            dry.stderr.contains("\"K-1\" appears on lines 2 and 5"),
            "{dry}"
        );
        assert_eq!(api.count("worker", "").await, if i == 0 { 0 } else { 2 });

        let out = run(
            cmd(&server, &api, dir.path()),
            &[
                "worker",
                "import",
                &file,
                "--key",
                "customerIdentifier",
                "--batch-size",
                batch,
            ],
        )
        .await;
        assert_eq!(out.code, 5, "batch size {batch}: {out}");
        assert!(reports_line(&out, 2) && reports_line(&out, 5), "{out}");
        assert!(!reports_line(&out, 3) && !reports_line(&out, 4), "{out}");
        assert_eq!(out.json()["rejected"], 2, "{out}");
        // Nothing for K-1; K-2 and K-3 once each, whichever run wrote them.
        assert_eq!(workers_with_key(&api, "K-1").await, 0, "{out}");
        assert_eq!(workers_with_key(&api, "K-2").await, 1, "{out}");
        assert_eq!(workers_with_key(&api, "K-3").await, 1, "{out}");
        assert_eq!(api.count("worker", "").await, 2);
    }

    // From stdin too (the file is read twice, so stdin is spooled to disk first).
    let mut import = cmd(&server, &api, dir.path());
    import.write_stdin("name,customerIdentifier\nEve,K-9\nFay,K-9\nGus,K-8\n");
    let out = run(
        import,
        &["worker", "import", "-", "--key", "customerIdentifier"],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert!(reports_line(&out, 2) && reports_line(&out, 3), "{out}");
    assert_eq!(workers_with_key(&api, "K-9").await, 0, "{out}");
    assert_eq!(workers_with_key(&api, "K-8").await, 1, "{out}");

    // A key matched in one row and given with an id in another is not a repeat: the row with
    // an id is matched by its id.
    let ann = api.list("worker", "customerIdentifier=K-2").await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let mixed = write(
        dir.path().join("mixed.csv"),
        &format!("id,name,customerIdentifier\n{ann},Bob B,K-2\n,Cid C,K-3\n"),
    );
    let out = run(
        cmd(&server, &api, dir.path()),
        &["worker", "import", &mixed, "--key", "customerIdentifier"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(api.read("worker", &ann).await["name"], "Bob B");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deliverable_identifier_given_twice_is_refused_on_both_lines() {
    let server = TestServer::start().await;
    let api = server.org("Identifiers").await;
    let dir = tempfile::tempdir().unwrap();
    let file = write(
        dir.path().join("d.csv"),
        "identifier,name,type,quantity\nO-1,Order one,order,1\nO-2,Order two,order,1\nO-1,Order again,order,2\n",
    );
    for batch in ["1", "5000"] {
        let out = run(
            cmd(&server, &api, dir.path()),
            &[
                "deliverable",
                "import",
                &file,
                "--key",
                "identifier",
                "--batch-size",
                batch,
            ],
        )
        .await;
        assert_eq!(out.code, 5, "{out}");
        assert!(reports_line(&out, 2) && reports_line(&out, 4), "{out}");
        assert!(
            out.stderr.contains("\"O-1\" appears on lines 2 and 4"),
            "{out}"
        );
        assert_eq!(api.count("deliverable", "identifier=O-1").await, 0);
        assert_eq!(api.count("deliverable", "identifier=O-2").await, 1);
    }
}

/// 100,000 rows at the default batch size, the repeated key on the first and the last line:
/// the first batch went out long before the last row was read, and still nothing is written
/// for that key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_repeated_in_the_last_batch_of_100000_rows_writes_nothing_for_it() {
    const ROWS: usize = 100_000;
    let server = TestServer::start().await;
    let api = server.org("Big roster").await;
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("name,customerIdentifier\n");
    for i in 0..ROWS - 1 {
        writeln!(text, "Person {i},E-{i:06}").unwrap();
    }
    writeln!(text, "Last person,E-000000").unwrap();
    let file = write(dir.path().join("big.csv"), &text);
    let out = run(
        cmd(&server, &api, dir.path()),
        &["worker", "import", &file, "--key", "customerIdentifier"],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    let last_line = ROWS as u64 + 1;
    assert!(
        reports_line(&out, 2) && reports_line(&out, last_line),
        "{out}"
    );
    assert_eq!(out.json()["rejected"], 2, "{out}");
    assert_eq!(out.json()["accepted"], ROWS as u64 - 2, "{out}");
    assert_eq!(workers_with_key(&api, "E-000000").await, 0);
    assert_eq!(api.count("worker", "").await, ROWS as u64 - 2);
}

// ---- item 3: an empty search or filter value is no filter ---------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_search_or_filter_does_not_pass_the_bulk_guard() {
    let server = TestServer::start().await;
    let api = server.org("Guard").await;
    let dir = tempfile::tempdir().unwrap();
    for name in ["Order A", "Order B"] {
        let r = api
            .post(
                "/deliverable",
                json!({"name": name, "type": "order", "quantity": 1}),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text);
    }
    for args in [
        vec!["--search", ""],
        vec!["--search", "  "],
        vec!["--filter", "name="],
    ] {
        let mut all = vec!["deliverable", "bulk-update"];
        all.extend(args.iter().copied());
        all.extend(["--set", "costCode=OOPS", "--yes"]);
        let out = run(cmd(&server, &api, dir.path()), &all).await;
        assert_eq!(out.code, 2, "{args:?}: {out}");
        assert!(out.stderr.contains("nothing was changed"), "{out}");
        let mut all = vec!["deliverable", "bulk-delete"];
        all.extend(args.iter().copied());
        all.push("--yes");
        let out = run(cmd(&server, &api, dir.path()), &all).await;
        assert_eq!(out.code, 2, "{args:?}: {out}");
    }
    assert_eq!(api.count("deliverable", "costCode=OOPS").await, 0);
    assert_eq!(api.count("deliverable", "").await, 2);

    // The server holds the same rule for any client.
    for query in ["search=", "search=%20", "name=", "search=&name="] {
        let r = api
            .patch(
                &format!("/deliverable/bulk?{query}"),
                json!({"costCode": "OOPS"}),
            )
            .await;
        assert_eq!(r.status, 400, "{query}: {}", r.text);
        assert_eq!(r.body["error"]["code"], "VALIDATION_ERROR");
        let fields: Vec<&str> = r.body["error"]["details"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|d| d["field"].as_str())
            .collect();
        assert_eq!(fields, ["filter", "search"], "{}", r.text);
        let r = api.delete(&format!("/deliverable/bulk?{query}")).await;
        assert_eq!(r.status, 400, "{query}: {}", r.text);
    }
    assert_eq!(api.count("deliverable", "costCode=OOPS").await, 0);
    assert_eq!(api.count("deliverable", "").await, 2);
    // A search of spaces only is still held to the search's length limit.
    let long_blank = "%0C".repeat(1001);
    let r = api
        .get(&format!("/deliverable/count?search={long_blank}"))
        .await;
    assert_eq!(r.status, 400, "{}", r.text);
    // In a read, an empty value filters nothing.
    assert_eq!(api.list_total("deliverable", "search=").await, 2);
    assert_eq!(api.list_total("deliverable", "name=").await, 2);
    let r = api
        .post(
            "/deliverable/query",
            json!({"search": "", "filter": {"name": ""}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["totalCount"], 2, "{}", r.text);
    // A real filter still works.
    let r = api
        .patch(
            "/deliverable/bulk?name=Order%20A",
            json!({"costCode": "A-1"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text);
    assert_eq!(r.body["count"], 1);
}

// ---- item 4: a failed export leaves the file as it was ------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_export_leaves_the_previous_file_and_a_good_one_replaces_it() {
    let server = TestServer::start().await;
    let api = server.org("Exports").await;
    let dir = tempfile::tempdir().unwrap();
    for name in ["Ann", "Bob"] {
        api.create("worker", json!({"name": name})).await;
    }
    let target = dir.path().join("out").join("keep.csv");
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    let before = "id,name\nold,row\n".repeat(1000);
    std::fs::write(&target, &before).unwrap();
    let target_text = target.display().to_string();
    let files = || {
        let mut names: Vec<String> = std::fs::read_dir(target.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    for args in [
        vec![
            "worker",
            "export",
            "--filter",
            "bogus=1",
            "--out",
            &target_text,
        ],
        vec![
            "deliverable",
            "export",
            "--filter",
            "bogus=1",
            "--out",
            &target_text,
        ],
    ] {
        let out = run(cmd(&server, &api, dir.path()), &args).await;
        assert_eq!(out.code, 5, "{out}");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), before);
        assert_eq!(files(), ["keep.csv"], "no temporary file is left");
    }
    let out = run(
        cmd(&server, &api, dir.path()),
        &["worker", "export", "--out", &target_text],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let after = std::fs::read_to_string(&target).unwrap();
    assert_eq!(after.lines().count(), 3, "{after}");
    assert!(after.contains("Ann") && after.contains("Bob"));
    assert_eq!(files(), ["keep.csv"]);
}

// ---- items 5 and 6 at a terminal ----------------------------------------------------------

/// `prodops ARGS` on a pseudo-terminal, its configuration and home kept in `dir`, pointed at
/// an instance and key when `at` gives them (else nothing of the environment names one).
fn on_terminal(dir: &Path, at: Option<(&str, &str)>, args: &[&str]) -> Terminal {
    let mut command = CommandBuilder::new(assert_cmd::cargo::cargo_bin("prodops"));
    command.args(args);
    command.env("PRODOPS_CONFIG_DIR", dir.join("config"));
    command.env("PRODOPS_CREDENTIAL_STORE", "file");
    command.env("HOME", dir.join("home"));
    command.env_remove("PRODOPS_BASE_URL");
    command.env_remove("PRODOPS_API_KEY");
    // portable-pty starts in $HOME unless told otherwise, and the test's home is not made.
    std::fs::create_dir_all(dir).unwrap();
    command.cwd(dir);
    if let Some((base, key)) = at {
        command.env("PRODOPS_BASE_URL", base);
        command.env("PRODOPS_API_KEY", key);
    }
    Terminal::spawn(command, 80)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_on_a_terminal_asks_for_the_url_and_never_shows_the_key() {
    let server = TestServer::start().await;
    let api = server.org("Login").await;
    let dir = tempfile::tempdir().unwrap();
    let key = api.key().unwrap().to_string();
    let base = server.base_url().to_string();
    let home = dir.path().to_path_buf();
    let (shown, code) = tokio::task::spawn_blocking({
        let server_dir = home.clone();
        let key = key.clone();
        let base = base.clone();
        move || {
            let mut p = on_terminal(&server_dir, None, &["auth", "login"]);
            p.expect("Base URL");
            p.send_line(&base);
            let before_key = p.expect("API key") + &p.expect(": ");
            p.send_line(&key);
            let (rest, code) = p.finish();
            (format!("{before_key}{rest}"), code)
        }
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("logged in to"), "{shown}");
    assert!(!shown.contains(&key), "the key was shown: {shown}");

    // The stored login works from a pipe, and `auth status` masks the key.
    let mut status = Command::cargo_bin("prodops").unwrap();
    status
        .env("PRODOPS_CONFIG_DIR", home.join("config"))
        .env("PRODOPS_CREDENTIAL_STORE", "file")
        .env("HOME", home.join("home"))
        .env_remove("PRODOPS_BASE_URL")
        .env_remove("PRODOPS_API_KEY");
    let out = run(status, &["auth", "status", "--output", "json"]).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["valid"], true, "{out}");
    assert!(!out.stdout.contains(&key), "{out}");

    // With --base-url, only the key is asked for, still without echo.
    let (shown, code) = tokio::task::spawn_blocking({
        let dir = home.clone();
        let key = key.clone();
        move || {
            let mut p = on_terminal(&dir, None, &["auth", "login", "--base-url", &base]);
            let before_key = p.expect("API key") + &p.expect(": ");
            p.send_line(&key);
            let (rest, code) = p.finish();
            (format!("{before_key}{rest}"), code)
        }
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{shown}");
    assert!(!shown.contains("Base URL"), "{shown}");
    assert!(!shown.contains(&key), "the key was shown: {shown}");

    // Ctrl-C at the key prompt, part of a key typed: declined (exit 8), nothing shown or stored.
    let (shown, code) = tokio::task::spawn_blocking({
        let dir = dir.path().join("interrupted");
        move || {
            let mut p = on_terminal(&dir, None, &["auth", "login", "--base-url", "http://x"]);
            p.expect("API key");
            p.send("pdk_partial\x03");
            p.finish()
        }
    })
    .await
    .unwrap();
    assert_eq!(code, 8, "{shown}");
    assert!(shown.contains("nothing was stored"), "{shown}");
    assert!(!shown.contains("pdk_partial"), "{shown}");
    assert!(!dir.path().join("interrupted/config").exists(), "{shown}");
}

async fn statuses(api: &Api) -> Vec<String> {
    let mut all: Vec<String> = api
        .list("worker", "")
        .await
        .iter()
        .map(|w| w["status"].as_str().unwrap().to_string())
        .collect();
    all.sort();
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bulk_change_shows_its_count_and_asks_on_a_terminal_only() {
    let server = TestServer::start().await;
    let api = server.org("Brake").await;
    let dir = tempfile::tempdir().unwrap();
    for (name, status) in [("A", "inactive"), ("B", "inactive"), ("C", "active")] {
        api.create("worker", json!({"name": name, "status": status}))
            .await;
    }
    let key = api.key().unwrap().to_string();
    let update = [
        "worker",
        "bulk-update",
        "--filter",
        "status=inactive",
        "--set",
        "status=terminated",
    ];

    // Declined at the prompt: exit 8, nothing changed.
    let (shown, code) = tokio::task::spawn_blocking({
        let (server_dir, key) = (dir.path().to_path_buf(), key.clone());
        let server = server.base_url().to_string();
        move || {
            let mut p = on_terminal(&server_dir, Some((&server, &key)), &update);
            let before = p.expect("[y/N] ");
            p.send_line("n");
            let (rest, code) = p.finish();
            (format!("{before}{rest}"), code)
        }
    })
    .await
    .unwrap();
    assert_eq!(code, 8, "{shown}");
    assert!(shown.contains("2 worker record(s) match"), "{shown}");
    assert!(shown.contains("declined; nothing was changed"), "{shown}");
    assert_eq!(statuses(&api).await, ["active", "inactive", "inactive"]);

    // --dry-run: the server's dry run, no question, no change.
    let out = run(
        cmd(&server, &api, dir.path()),
        &[&update[..], &["--dry-run"]].concat(),
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["answer"]["count"], 2, "{out}");
    assert_eq!(out.json()["dryRun"], true, "{out}");
    assert_eq!(out.json()["events"].as_array().unwrap().len(), 2, "{out}");
    assert_eq!(statuses(&api).await, ["active", "inactive", "inactive"]);

    // Confirmed at the prompt.
    let (shown, code) = tokio::task::spawn_blocking({
        let (server_dir, key) = (dir.path().to_path_buf(), key.clone());
        let server = server.base_url().to_string();
        move || {
            let mut p = on_terminal(&server_dir, Some((&server, &key)), &update);
            p.expect("[y/N] ");
            p.send_line("y");
            p.finish()
        }
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{shown}");
    assert_eq!(statuses(&api).await, ["active", "terminated", "terminated"]);

    // --yes on a terminal: no question.
    let (shown, code) = tokio::task::spawn_blocking({
        let (server_dir, key) = (dir.path().to_path_buf(), key.clone());
        let server = server.base_url().to_string();
        move || {
            let args = [
                "worker",
                "bulk-update",
                "--filter",
                "status=terminated",
                "--set",
                "status=inactive",
                "--yes",
            ];
            on_terminal(&server_dir, Some((&server, &key)), &args).finish()
        }
    })
    .await
    .unwrap();
    assert_eq!(code, 0, "{shown}");
    assert!(!shown.contains("[y/N]"), "{shown}");
    assert_eq!(statuses(&api).await, ["active", "inactive", "inactive"]);

    // In a pipe: never asked, the count on stderr, the change made.
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "worker",
            "bulk-update",
            "--filter",
            "status=inactive",
            "--set",
            "status=terminated",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stderr.contains("2 worker record(s) match"), "{out}");
    assert_eq!(out.json()["count"], 2, "{out}");
    assert_eq!(statuses(&api).await, ["active", "terminated", "terminated"]);
}

// ---- item 16: CSV from real spreadsheets ---------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spreadsheet_files_semicolons_windows_1252_and_headers_in_any_case() {
    let server = TestServer::start().await;
    let api = server.org("Spreadsheets").await;
    let dir = tempfile::tempdir().unwrap();
    let import = |file: String, extra: &'static [&'static str]| {
        let mut args = vec!["worker".to_string(), "import".into(), file];
        args.extend(extra.iter().map(|s| s.to_string()));
        let c = cmd(&server, &api, dir.path());
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run(c, &args).await
        }
    };

    // A `;`-separated file: a hint, then read with --delimiter.
    let semi = write(
        dir.path().join("semi.csv"),
        "name;customerIdentifier\nAnn;S-1\nBob;S-2\n",
    );
    let out = import(semi.clone(), &[]).await;
    assert_eq!(out.code, 5, "{out}");
    assert!(
        out.stderr
            .contains("looks `;`-separated; use --delimiter ';'"),
        "{out}"
    );
    assert_eq!(api.count("worker", "").await, 0);
    let out = import(semi, &["--delimiter", ";"]).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(api.count("worker", "customerIdentifier=S-2").await, 1);

    // Windows-1252: refused with a hint as UTF-8, read right with --encoding.
    let path = dir.path().join("cp1252.csv");
    let mut bytes = b"NAME,CustomerIdentifier\nM".to_vec();
    bytes.push(0xFC); // u with diaeresis in Windows-1252 and Latin-1
    bytes.extend_from_slice(b"ller \x80,W-1\n");
    std::fs::write(&path, &bytes).unwrap();
    let file = path.display().to_string();
    let out = import(file.clone(), &[]).await;
    assert_eq!(out.code, 5, "{out}");
    assert!(out.stderr.contains("--encoding windows-1252"), "{out}");
    assert_eq!(api.count("worker", "customerIdentifier=W-1").await, 0);
    let out = import(file.clone(), &["--encoding", "windows-1252"]).await;
    assert_eq!(out.code, 0, "{out}");
    let written = api.list("worker", "customerIdentifier=W-1").await;
    assert_eq!(written[0]["name"], "M\u{fc}ller \u{20ac}");
    let out = import(
        file,
        &["--encoding", "latin1", "--key", "customerIdentifier"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(api.count("worker", "customerIdentifier=W-1").await, 1);

    // An unknown header gets the nearest column's name.
    let typo = write(
        dir.path().join("typo.csv"),
        "name,customerIdentifer\nZed,T-1\n",
    );
    let out = import(typo, &[]).await;
    assert_eq!(out.code, 5, "{out}");
    assert!(
        out.stderr
            .contains("customerIdentifer (did you mean customerIdentifier?)"),
        "{out}"
    );
    let out = import(
        write(dir.path().join("d.csv"), "name\nX\n"),
        &["--delimiter", "ab"],
    )
    .await;
    assert_eq!(out.code, 2, "{out}");
}

// ---- item 16: a dry run says what a real run would do --------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_counts_creates_updates_unchanged_and_refused_rows_and_writes_nothing() {
    let server = TestServer::start().await;
    let api = server.org("Dry").await;
    let dir = tempfile::tempdir().unwrap();
    let same = api
        .create(
            "worker",
            json!({"name": "Same", "customerIdentifier": "D-1", "status": "active"}),
        )
        .await;
    api.create(
        "worker",
        json!({"name": "Old", "customerIdentifier": "D-2", "status": "active"}),
    )
    .await;
    let before = api.list("worker", "").await;
    let file = write(
        dir.path().join("dry.csv"),
        &format!(
            "id,name,customerIdentifier,status\n{},Same,D-1,active\n,Old,D-2,inactive\n,New,D-3,active\n,,D-4,bogus\n",
            same["id"].as_str().unwrap()
        ),
    );
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "worker",
            "import",
            &file,
            "--key",
            "customerIdentifier",
            "--dry-run",
        ],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    let summary = out.json();
    assert_eq!(summary["created"], 1, "{out}");
    assert_eq!(summary["updated"], 1, "{out}");
    assert_eq!(summary["unchanged"], 1, "{out}");
    assert_eq!(summary["rejected"], 1, "{out}");
    assert_eq!(summary["accepted"], 3, "{out}");
    assert_eq!(summary["dryRun"], true, "{out}");
    assert!(reports_line(&out, 5), "{out}");
    assert_eq!(
        api.list("worker", "").await,
        before,
        "a dry run writes nothing"
    );

    // The real run then does what the dry run said.
    let out = run(
        cmd(&server, &api, dir.path()),
        &["worker", "import", &file, "--key", "customerIdentifier"],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert_eq!(out.json()["accepted"], 3, "{out}");
    assert_eq!(api.count("worker", "").await, 3);
    assert_eq!(api.count("worker", "status=inactive").await, 1);
}
