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
        &["events", "list", "--since", "2", "--output", "ndjson"],
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
    let mut f = Follower::start(
        server.base_url(),
        &api,
        dir.path(),
        &["--follow", "--type", "worker.*"],
    )
    .await;
    // A note is not a worker event; the worker created after it is printed.
    api.create("note", json!({"body": "n"})).await;
    let w = api.create("worker", json!({"name": "Ann"})).await;
    let event = f.next_event().await;
    f.stop();
    assert_eq!(event["type"], "worker.created");
    assert_eq!(event["recordId"], w["id"]);
}

/// `prodops events tail ARGS` running in the background, its stdout and stderr read line by
/// line.
struct Follower {
    child: std::process::Child,
    out: std::sync::mpsc::Receiver<String>,
    err: std::sync::mpsc::Receiver<String>,
}

fn lines_of(r: impl std::io::Read + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(r).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

impl Follower {
    /// Starts the follower and waits until it says on stderr where it follows from.
    async fn start(base_url: &str, api: &Api, dir: &std::path::Path, args: &[&str]) -> Follower {
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("prodops"))
            .args(["events", "tail", "-o", "ndjson"])
            .args(args)
            .env("PRODOPS_BASE_URL", base_url)
            .env("PRODOPS_API_KEY", api.key().unwrap())
            .env("PRODOPS_CONFIG_DIR", dir.join("config"))
            .env("PRODOPS_CREDENTIAL_STORE", "file")
            .env("HOME", dir.join("home"))
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = lines_of(child.stdout.take().unwrap());
        let err = lines_of(child.stderr.take().unwrap());
        let mut f = Follower { child, out, err };
        let said = f.stderr_line().await;
        assert!(
            said.starts_with("following the feed after cursor"),
            "{said}"
        );
        f
    }

    async fn recv(rx: &std::sync::mpsc::Receiver<String>) -> Option<String> {
        tokio::task::block_in_place(|| rx.recv_timeout(Duration::from_secs(60)).ok())
    }

    async fn stderr_line(&mut self) -> String {
        Self::recv(&self.err)
            .await
            .expect("a stderr line within a minute")
    }

    async fn next_event(&mut self) -> Value {
        let line = Self::recv(&self.out)
            .await
            .expect("an event within a minute");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    fn stop(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

/// Issue 34, item 12: `-f` follows from now (the feed before it is not replayed), `--since
/// beginning` replays it, and `events list` takes the same `--since`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_starts_now_unless_told_otherwise() {
    let server = TestServer::start().await;
    let api = server.org("Cli").await;
    let dir = tempfile::tempdir().unwrap();
    for i in 0..5 {
        api.create("worker", json!({"name": format!("Old{i}")}))
            .await;
    }
    let mut f = Follower::start(server.base_url(), &api, dir.path(), &["-f"]).await;
    let w = api.create("worker", json!({"name": "New"})).await;
    let event = f.next_event().await;
    f.stop();
    assert_eq!(
        event["recordId"], w["id"],
        "the first event printed is the new one"
    );
    assert_eq!(event["cursor"], "6");

    let mut f = Follower::start(
        server.base_url(),
        &api,
        dir.path(),
        &["-f", "--since", "beginning"],
    )
    .await;
    let first = f.next_event().await;
    f.stop();
    assert_eq!(first["cursor"], "1");
    assert_eq!(first["data"]["name"], "Old0");

    let cmd = || prodops_in(&server, &api, dir.path(), Duration::from_secs(120));
    let out = run(cmd(), &["events", "list", "--since", "now", "-o", "json"]).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json(), json!([]));
    let out = run(
        cmd(),
        &["events", "list", "--since", "beginning", "-o", "json"],
    )
    .await;
    assert_eq!(out.json().as_array().map(Vec::len), Some(6), "{out}");
    let out = run(cmd(), &["events", "list", "--since", "4", "-o", "json"]).await;
    assert_eq!(out.json().as_array().map(Vec::len), Some(2), "{out}");
    let out = run(cmd(), &["events", "list", "--since", "soon"]).await;
    assert_eq!(out.code, 2, "{out}");
}

/// A TCP proxy in front of the server whose connections can be cut, to lose a follower's
/// connection.
struct Proxy {
    url: String,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    conns: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Proxy {
    async fn start(server: &TestServer) -> Proxy {
        use std::sync::atomic::Ordering;
        let target = server
            .base_url()
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let conns = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (up2, conns2) = (up.clone(), conns.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if !up2.load(Ordering::SeqCst) {
                    continue; // dropped: the connection is refused
                }
                let target = target.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                conns2.lock().unwrap().push(task.abort_handle());
            }
        });
        Proxy { url, up, conns }
    }

    fn cut(&self) {
        self.up.store(false, std::sync::atomic::Ordering::SeqCst);
        for c in self.conns.lock().unwrap().drain(..) {
            c.abort();
        }
    }

    fn restore(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Issue 34, item 12: a follower whose connection is lost says so on stderr, reconnects, and
/// goes on after the last event it printed (none lost, none twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_reconnects_and_says_so() {
    let server = TestServer::start().await;
    let api = server.org("Cli").await;
    let dir = tempfile::tempdir().unwrap();
    let proxy = Proxy::start(&server).await;
    let mut f = Follower::start(&proxy.url, &api, dir.path(), &["-f"]).await;
    let a = api.create("worker", json!({"name": "A"})).await;
    assert_eq!(f.next_event().await["recordId"], a["id"]);

    proxy.cut();
    let said = f.stderr_line().await;
    assert!(said.starts_with("connection lost"), "{said}");
    let b = api.create("worker", json!({"name": "B"})).await;
    proxy.restore();
    let mut said = f.stderr_line().await;
    while said.starts_with("connection lost") {
        said = f.stderr_line().await;
    }
    assert!(said.starts_with("reconnected"), "{said}");
    let event = f.next_event().await;
    f.stop();
    assert_eq!(
        event["recordId"], b["id"],
        "the event made while it was away"
    );
    assert_eq!(event["cursor"], "2");
}

/// `worker export --cursor-file F`, then `events tail --since $(cat F)`: the CSV and the
/// events after its cursor give exactly the workers as they are after later writes (nothing
/// missed, nothing twice); `events tail --cursor-file F` continues from the same file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_continues_with_events_tail_since_its_cursor() {
    let server = TestServer::start().await;
    let api = server.org("Export cursor").await;
    let dir = tempfile::tempdir().unwrap();
    let cmd = || prodops_in(&server, &api, dir.path(), Duration::from_secs(120));
    let ids = api
        .bulk_put(
            "worker",
            (0..50)
                .map(|i| json!({"name": format!("W{i:02}")}))
                .collect(),
        )
        .await;
    api.patch(&format!("/worker/{}", ids[0]), json!({"isArchived": true}))
        .await;
    let csv_path = dir.path().join("workers.csv");
    let cursor_path = dir.path().join("cursor");
    let out = run(
        cmd(),
        &[
            "worker",
            "export",
            "--out",
            csv_path.to_str().unwrap(),
            "--cursor-file",
            cursor_path.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let cursor = std::fs::read_to_string(&cursor_path).unwrap();
    let cursor = cursor.trim().to_string();
    assert_eq!(cursor, "51", "50 creations and an archive: {out}");

    // Later writes: creations, renames, an archive and a restore.
    for name in ["N1", "N2", "N3"] {
        api.create("worker", json!({"name": name})).await;
    }
    for (id, name) in [(&ids[1], "R1"), (&ids[2], "R2")] {
        api.patch(&format!("/worker/{id}"), json!({"name": name}))
            .await;
    }
    api.patch(&format!("/worker/{}", ids[3]), json!({"isArchived": true}))
        .await;
    api.patch(&format!("/worker/{}", ids[0]), json!({"isArchived": false}))
        .await;

    let out = run(
        cmd(),
        &["events", "tail", "--since", &cursor, "--resource", "worker"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let events = lines(&out.stdout);
    assert_eq!(events.len(), 7, "exactly the later writes: {out}");

    // The CSV with the events applied in order is the list now.
    let mut state: std::collections::BTreeMap<String, String> = Default::default();
    let mut reader = csv::Reader::from_path(&csv_path).unwrap();
    let headers = reader.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (id_col, name_col) = (col("id"), col("name"));
    for row in reader.records() {
        let row = row.unwrap();
        state.insert(row[id_col].to_string(), row[name_col].to_string());
    }
    assert_eq!(state.len(), 49);
    for e in &events {
        let id = e["recordId"].as_str().unwrap().to_string();
        if e["data"]["isArchived"] == true {
            state.remove(&id);
        } else {
            state.insert(id, e["data"]["name"].as_str().unwrap().to_string());
        }
    }
    let now: std::collections::BTreeMap<String, String> = api
        .list("worker", "pageSize=1000")
        .await
        .iter()
        .map(|w| {
            (
                w["id"].as_str().unwrap().to_string(),
                w["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(state, now);

    // The export's cursor file is one `events tail --cursor-file` reads and moves on.
    let out = run(
        cmd(),
        &[
            "events",
            "tail",
            "--cursor-file",
            cursor_path.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(lines(&out.stdout).len(), 7, "{out}");
    assert_eq!(std::fs::read_to_string(&cursor_path).unwrap().trim(), "58");
}

/// `deliverable export --cursor-file F` (one request, `GET /deliverable/trees`, one snapshot),
/// then `events tail --since $(cat F)`: the CSV rows with the events after its cursor applied
/// are the trees as they are after later writes, column for column; `--root` names its
/// cursor too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_export_continues_with_events_tail_since_its_cursor() {
    let server = TestServer::start().await;
    let api = server.org("Tree export cursor").await;
    let dir = tempfile::tempdir().unwrap();
    let cmd = || prodops_in(&server, &api, dir.path(), Duration::from_secs(120));
    let mut records = Vec::new();
    let mut steps = Vec::new();
    for o in 0..2 {
        let order = uuid::Uuid::new_v4().to_string();
        records.push(json!({"id": order, "name": format!("O{o}"), "type": "order"}));
        for s in 0..5 {
            let step = uuid::Uuid::new_v4().to_string();
            records.push(
                json!({"id": step, "name": format!("S{o}.{s}"), "type": "step", "parentId": order}),
            );
            steps.push((order.clone(), step));
        }
    }
    api.bulk_put("deliverable", records).await;
    let csv_path = dir.path().join("trees.csv");
    let cursor_path = dir.path().join("cursor");
    let export = |csv: &std::path::Path, cursor: &std::path::Path, root: Option<&str>| {
        let mut args = vec![
            "deliverable".to_string(),
            "export".into(),
            "--out".into(),
            csv.to_str().unwrap().into(),
            "--cursor-file".into(),
            cursor.to_str().unwrap().into(),
        ];
        if let Some(root) = root {
            args.extend(["--root".to_string(), root.to_string()]);
        }
        args
    };
    let args = export(&csv_path, &cursor_path, None);
    let out = run(cmd(), &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(out.code, 0, "{out}");
    let cursor = std::fs::read_to_string(&cursor_path)
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(cursor, "12", "12 creations: {out}");

    // Later writes: a new step, a rename, an archive.
    let (order, first) = &steps[0];
    api.create(
        "deliverable",
        json!({"name": "S0.new", "type": "step", "parentId": order}),
    )
    .await;
    api.patch(&format!("/deliverable/{first}"), json!({"name": "renamed"}))
        .await;
    api.patch(
        &format!("/deliverable/{}", steps[1].1),
        json!({"isArchived": true}),
    )
    .await;

    let out = run(
        cmd(),
        &[
            "events",
            "tail",
            "--since",
            &cursor,
            "--resource",
            "deliverable",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let events = lines(&out.stdout);
    assert_eq!(events.len(), 3, "exactly the later writes: {out}");

    // (name, isArchived) per id: the CSV with the events applied is what a new export holds.
    let rows = |path: &std::path::Path| {
        let mut reader = csv::Reader::from_path(path).unwrap();
        let headers = reader.headers().unwrap().clone();
        let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
        let (id, name, archived) = (col("id"), col("name"), col("isArchived"));
        reader
            .records()
            .map(|r| {
                let r = r.unwrap();
                (
                    r[id].to_string(),
                    (r[name].to_string(), r[archived].to_string()),
                )
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let mut state = rows(&csv_path);
    assert_eq!(state.len(), 12);
    for e in &events {
        let archived = e["data"]["isArchived"].as_bool().unwrap().to_string();
        let name = e["data"]["name"].as_str().unwrap().to_string();
        state.insert(
            e["recordId"].as_str().unwrap().to_string(),
            (name, archived),
        );
    }
    let again = dir.path().join("again.csv");
    let again_cursor = dir.path().join("again.cursor");
    let args = export(&again, &again_cursor, None);
    let out = run(cmd(), &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(state, rows(&again));
    assert_eq!(std::fs::read_to_string(&again_cursor).unwrap().trim(), "15");

    // One tree (`--root`): its rows and the same cursor.
    let one = dir.path().join("one.csv");
    let one_cursor = dir.path().join("one.cursor");
    let args = export(&one, &one_cursor, Some(order));
    let out = run(cmd(), &args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(rows(&one).len(), 7);
    assert_eq!(std::fs::read_to_string(&one_cursor).unwrap().trim(), "15");
}
