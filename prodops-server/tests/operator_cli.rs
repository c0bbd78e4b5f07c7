//! The operator commands of the `prodops-server` binary (decisions.md 1), run as processes:
//! `org create`, `key create`, `key revoke`, `org set-flag`, `org set`, and `serve` with its one stdout
//! line, first-start bootstrap key, and clean stop on SIGTERM.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "common/server_process.rs"]
mod server_process;
use server_process::cmd;

fn run(args: &[&str]) -> Output {
    cmd(args).output().expect("run prodops-server")
}

fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn describe(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Parses the single JSON line an admin command prints.
fn one_json_line(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "command failed: {}", describe(out));
    let text = stdout_of(out);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(
        lines.len(),
        1,
        "exactly one line on stdout: {}",
        describe(out)
    );
    serde_json::from_str(lines[0])
        .unwrap_or_else(|e| panic!("stdout is JSON ({e}): {}", describe(out)))
}

struct Db {
    _dir: tempfile::TempDir,
    url: String,
}

fn fresh_db() -> Db {
    let dir = tempfile::tempdir().expect("tempdir");
    let url = format!("sqlite://{}", dir.path().join("prodops.db").display());
    Db { _dir: dir, url }
}

fn create_org(db: &Db, name: &str) -> (String, String) {
    let v = one_json_line(&run(&[
        "org",
        "create",
        "--name",
        name,
        "--database",
        &db.url,
    ]));
    let org = v["organizationId"]
        .as_str()
        .expect("organizationId")
        .to_string();
    let key = v["apiKey"].as_str().expect("apiKey").to_string();
    assert_eq!(org.len(), 36, "organizationId is a UUID: {v}");
    assert!(!key.is_empty());
    (org, key)
}

/// A plain HTTP/1.1 request (no client crate); returns the status code and the body.
fn http(
    method: &str,
    base: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    let hostport = base.strip_prefix("http://").expect("http base url");
    let mut stream = TcpStream::connect(hostport).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\n");
    if let Some(key) = key {
        req.push_str(&format!("X-API-Key: {key}\r\n"));
    }
    let body = body.unwrap_or("");
    if !body.is_empty() || method != "GET" {
        req.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    req.push_str("\r\n");
    req.push_str(body);
    stream.write_all(req.as_bytes()).expect("write request");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).expect("read response");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status: u16 = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("HTTP status line: {text}"));
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// A running `serve` process; killed on drop if the test did not stop it.
struct Serve {
    child: Option<Child>,
    base_url: String,
    stdout_lines: Arc<Mutex<Vec<String>>>,
    stderr_lines: Arc<Mutex<Vec<String>>>,
    readers: Vec<std::thread::JoinHandle<()>>,
}

fn collect(
    reader: impl Read + Send + 'static,
    sink: Arc<Mutex<Vec<String>>>,
    first: Option<mpsc::Sender<String>>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut first = first;
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if let Some(tx) = first.take() {
                let _ = tx.send(line.clone());
            }
            sink.lock().unwrap().push(line);
        }
    })
}

impl Serve {
    fn start(db: &Db) -> Serve {
        Self::start_with_env(db, &[])
    }

    fn start_with_env(db: &Db, env: &[(&str, &str)]) -> Serve {
        let mut command = cmd(&["serve", "--bind", "127.0.0.1:0", "--database", &db.url]);
        // Not the job that announces what time changes: it reaches every organization of the
        // database, which other tests may share (docs/operations.md).
        command.env("PRODOPS_ALERT_EVENTS_POLL_MS", "0");
        for (name, value) in env {
            command.env(name, value);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn serve");
        let stdout_lines = Arc::new(Mutex::new(Vec::new()));
        let stderr_lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        let readers = vec![
            collect(child.stdout.take().unwrap(), stdout_lines.clone(), Some(tx)),
            collect(child.stderr.take().unwrap(), stderr_lines.clone(), None),
        ];
        let first = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => line,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "serve printed no line within 60 s; stderr: {:?}",
                    stderr_lines.lock().unwrap()
                );
            }
        };
        let base_url = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| {
                panic!("first stdout line is `listening on http://HOST:PORT`, got {first:?}")
            })
            .trim()
            .to_string();
        assert!(base_url.starts_with("http://127.0.0.1:"), "{first:?}");
        let port: u16 = base_url.rsplit(':').next().unwrap().parse().expect("port");
        assert_ne!(port, 0, "the real port, not 0");
        Serve {
            child: Some(child),
            base_url,
            stdout_lines,
            stderr_lines,
            readers,
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Waits until stderr holds lines containing each of `needles`; returns the stderr lines.
    fn wait_stderr(&self, needles: &[&str], timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let lines = self.stderr_lines.lock().unwrap().clone();
            if needles.iter().all(|n| lines.iter().any(|l| l.contains(n))) {
                return lines;
            }
            if Instant::now() > deadline {
                panic!("stderr never showed {needles:?}; stderr: {lines:#?}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends SIGTERM, waits for the exit (at most 30 s), and returns the status with the full
    /// stdout and stderr.
    fn terminate(mut self) -> (std::process::ExitStatus, Vec<String>, Vec<String>) {
        let pid = self.pid().to_string();
        let kill = Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("run kill");
        assert!(kill.success(), "kill -TERM {pid}");
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("serve did not stop within 30 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        for r in self.readers.drain(..) {
            let _ = r.join();
        }
        let out = self.stdout_lines.lock().unwrap().clone();
        let err = self.stderr_lines.lock().unwrap().clone();
        (status, out, err)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The value of `export NAME=value` in the stderr lines (quotes removed).
fn exported(lines: &[String], name: &str) -> String {
    let needle = format!("export {name}=");
    let line = lines
        .iter()
        .find(|l| l.contains(&needle))
        .unwrap_or_else(|| panic!("no {needle} line"));
    let value = line.split_once(&needle).unwrap().1.trim();
    value.trim_matches(|c| c == '"' || c == '\'').to_string()
}

#[test]
fn org_create_prints_one_json_line() {
    let db = fresh_db();
    let (org, key) = create_org(&db, "Acme");
    let (org2, key2) = create_org(&db, "Other");
    assert_ne!(org, org2);
    assert_ne!(key, key2);
    // With flags.
    let out = run(&[
        "org",
        "create",
        "--name",
        "Flagged",
        "--flag",
        "documentsHubEnabled",
        "--database",
        &db.url,
    ]);
    let v = one_json_line(&out);
    assert!(
        v["organizationId"].is_string() && v["apiKey"].is_string(),
        "{v}"
    );
}

#[test]
fn key_create_revoke_and_set_flag() {
    let db = fresh_db();
    let (org, _) = create_org(&db, "Acme");
    let v = one_json_line(&run(&[
        "key",
        "create",
        "--org",
        &org,
        "--permission",
        "Worker.Read",
        "--database",
        &db.url,
    ]));
    let key_id = v["apiKeyId"].as_str().expect("apiKeyId").to_string();
    assert_eq!(key_id.len(), 36, "apiKeyId is a UUID: {v}");
    assert!(v["apiKey"].as_str().is_some_and(|k| !k.is_empty()), "{v}");
    let v = one_json_line(&run(&[
        "key",
        "create",
        "--org",
        &org,
        "--permission",
        "Worker.Read",
        "--permission",
        "Worker.Create",
        "--database",
        &db.url,
    ]));
    assert!(v["apiKeyId"].is_string(), "{v}");
    let v = one_json_line(&run(&[
        "key",
        "create",
        "--org",
        &org,
        "--admin",
        "--database",
        &db.url,
    ]));
    assert!(v["apiKeyId"].is_string(), "{v}");

    let out = run(&["key", "revoke", "--key-id", &key_id, "--database", &db.url]);
    assert!(out.status.success(), "{}", describe(&out));
    let out = run(&[
        "org",
        "set-flag",
        "--org",
        &org,
        "documentsHubEnabled=true",
        "--database",
        &db.url,
    ]);
    assert!(out.status.success(), "{}", describe(&out));
    let out = run(&[
        "org",
        "set-flag",
        "--org",
        &org,
        "deliveryComponentCargoEnabled=false",
        "--database",
        &db.url,
    ]);
    assert!(out.status.success(), "{}", describe(&out));

    // Refused inputs fail with a nonzero status.
    let out = run(&[
        "org",
        "set-flag",
        "--org",
        &org,
        "noSuchFlag=true",
        "--database",
        &db.url,
    ]);
    assert!(
        !out.status.success(),
        "unknown flag accepted: {}",
        describe(&out)
    );
    let out = run(&[
        "org",
        "set-flag",
        "--org",
        &org,
        "documentsHubEnabled=maybe",
        "--database",
        &db.url,
    ]);
    assert!(
        !out.status.success(),
        "bad flag value accepted: {}",
        describe(&out)
    );
}

#[test]
fn serve_prints_one_line_bootstraps_once_and_stops_on_sigterm() {
    let db = fresh_db();
    let serve = Serve::start(&db);
    let base = serve.base_url.clone();
    let lines = serve.wait_stderr(
        &["export PRODOPS_BASE_URL=", "export PRODOPS_API_KEY="],
        Duration::from_secs(30),
    );
    let printed_base = exported(&lines, "PRODOPS_BASE_URL");
    let key = exported(&lines, "PRODOPS_API_KEY");
    assert_eq!(
        printed_base.trim_end_matches('/'),
        base,
        "the exported base URL is the served one"
    );
    assert!(!key.is_empty());

    // The printed key works; no key is 401; healthz is open.
    let (status, body) = http("GET", &base, "/api/v2/worker", Some(&key), None);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("values") && body.contains("totalCount"),
        "{body}"
    );
    let (status, _) = http("GET", &base, "/api/v2/worker", None, None);
    assert_eq!(status, 401);
    let (status, _) = http("GET", &base, "/healthz", None, None);
    assert_eq!(status, 200);
    let (status, body) = http(
        "POST",
        &base,
        "/api/v2/worker",
        Some(&key),
        Some(r#"{"name":"Kept"}"#),
    );
    assert_eq!(status, 201, "{body}");

    let (status, out, err) = serve.terminate();
    assert!(
        status.success(),
        "SIGTERM stops serve cleanly: {status:?}; stderr: {err:#?}"
    );
    assert_eq!(out.len(), 1, "exactly one stdout line: {out:?}");
    assert!(!err.iter().any(|l| l.contains("panicked")), "{err:#?}");

    // A second start on the same database prints no bootstrap key, and the data is still there.
    let serve = Serve::start(&db);
    let base = serve.base_url.clone();
    let (status, body) = http("GET", &base, "/api/v2/worker", Some(&key), None);
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("Kept"), "data survives a restart: {body}");
    let (status, out, err) = serve.terminate();
    assert!(status.success(), "{status:?}");
    assert_eq!(out.len(), 1, "{out:?}");
    assert!(
        !err.iter().any(|l| l.contains("export PRODOPS_API_KEY=")),
        "no bootstrap key on a second start: {err:#?}"
    );
}

/// `org set --org ORG stockFrozenUntil=DAY`: set while serving, the next posting is refused
/// (409 naming the day); `=null` opens the books again; a malformed day or an unknown setting
/// is refused and changes nothing.
#[test]
fn org_set_freezes_stock_while_serve_runs() {
    let db = fresh_db();
    let (org, key) = create_org(&db, "Acme");
    let serve = Serve::start(&db);
    let base = serve.base_url.clone();
    let id_of = |body: &str| -> String {
        let v: serde_json::Value = serde_json::from_str(body).expect("JSON");
        v["id"].as_str().expect("id").to_string()
    };
    let (status, body) = http(
        "POST",
        &base,
        "/api/v2/shop",
        Some(&key),
        Some(r#"{"name":"Weld"}"#),
    );
    assert_eq!(status, 201, "{body}");
    let shop = id_of(&body);
    let (status, body) = http(
        "POST",
        &base,
        "/api/v2/location",
        Some(&key),
        Some(&format!(r#"{{"name":"Rack","shopId":"{shop}"}}"#)),
    );
    assert_eq!(status, 201, "{body}");
    let location = id_of(&body);
    let (status, body) = http(
        "POST",
        &base,
        "/api/v2/item",
        Some(&key),
        Some(r#"{"name":"Bolt"}"#),
    );
    assert_eq!(status, 201, "{body}");
    let item = id_of(&body);
    let adjust = format!(
        r#"{{"itemId":"{item}","type":"adjust","quantity":5,"toLocationId":"{location}"}}"#
    );
    let set = |value: &str| {
        run(&[
            "org",
            "set",
            "--org",
            &org,
            &format!("stockFrozenUntil={value}"),
            "--database",
            &db.url,
        ])
    };
    let tomorrow = (chrono::Utc::now().date_naive() + chrono::Days::new(1))
        .format("%Y-%m-%d")
        .to_string();
    let out = set(&tomorrow);
    assert!(out.status.success(), "{}", describe(&out));
    let (status, body) = http(
        "POST",
        &base,
        "/api/v2/inventory-transaction",
        Some(&key),
        Some(&adjust),
    );
    assert_eq!(status, 409, "{body}");
    assert!(
        body.contains(&tomorrow) && body.contains("createdAt"),
        "{body}"
    );
    for bad in ["2026-13-01", "soon"] {
        let out = set(bad);
        assert!(!out.status.success(), "{bad} accepted: {}", describe(&out));
    }
    let out = run(&[
        "org",
        "set",
        "--org",
        &org,
        "noSuchSetting=1",
        "--database",
        &db.url,
    ]);
    assert!(
        !out.status.success(),
        "unknown setting accepted: {}",
        describe(&out)
    );
    // Still frozen: the refused changes changed nothing.
    let (status, body) = http(
        "POST",
        &base,
        "/api/v2/inventory-transaction",
        Some(&key),
        Some(&adjust),
    );
    assert_eq!(status, 409, "{body}");
    let out = set("null");
    assert!(out.status.success(), "{}", describe(&out));
    let (status, body) = http(
        "POST",
        &base,
        "/api/v2/inventory-transaction",
        Some(&key),
        Some(&adjust),
    );
    assert_eq!(status, 201, "{body}");
    let (status, _, _) = serve.terminate();
    assert!(status.success(), "{status:?}");
}

#[test]
fn admin_commands_work_while_serve_runs() {
    let db = fresh_db();
    let (org, _) = create_org(&db, "Acme");
    let serve = Serve::start(&db);
    let base = serve.base_url.clone();

    // Created while serving: works at once, with exactly its permission.
    let v = one_json_line(&run(&[
        "key",
        "create",
        "--org",
        &org,
        "--permission",
        "Worker.Read",
        "--database",
        &db.url,
    ]));
    let key = v["apiKey"].as_str().unwrap().to_string();
    let key_id = v["apiKeyId"].as_str().unwrap().to_string();
    let (status, body) = http("GET", &base, "/api/v2/worker", Some(&key), None);
    assert_eq!(status, 200, "{body}");
    let (status, body) = http(
        "POST",
        &base,
        "/api/v2/worker",
        Some(&key),
        Some(r#"{"name":"No"}"#),
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("FORBIDDEN"), "{body}");

    // Revoked while serving: stops working at once.
    let out = run(&["key", "revoke", "--key-id", &key_id, "--database", &db.url]);
    assert!(out.status.success(), "{}", describe(&out));
    let (status, body) = http("GET", &base, "/api/v2/worker", Some(&key), None);
    assert_eq!(status, 401, "{body}");
    assert!(body.contains("UNAUTHORIZED"), "{body}");

    // A database that already holds an organization gets no bootstrap key.
    let (status, _, err) = serve.terminate();
    assert!(status.success(), "{status:?}");
    assert!(
        !err.iter().any(|l| l.contains("export PRODOPS_API_KEY=")),
        "{err:#?}"
    );
}

#[test]
fn logs_never_carry_an_api_key() {
    let db = fresh_db();
    let (_, key) = create_org(&db, "Acme");
    // Every request logged, failures included.
    let serve = Serve::start_with_env(&db, &[("PRODOPS_LOG", "debug")]);
    let base = serve.base_url.clone();
    let wrong = format!("pdk_{}", "0".repeat(64));
    assert_eq!(
        http("GET", &base, "/api/v2/worker", Some(&key), None).0,
        200
    );
    assert_eq!(
        http("POST", &base, "/api/v2/worker", Some(&key), Some("{oops")).0,
        400
    );
    assert_eq!(
        http("GET", &base, "/api/v2/nowhere", Some(&key), None).0,
        404
    );
    assert_eq!(
        http("GET", &base, "/api/v2/worker", Some(&wrong), None).0,
        401
    );
    let (status, _, err) = serve.terminate();
    assert!(status.success(), "{status:?}");
    assert!(
        err.iter().any(|l| l.contains("/api/v2/worker")),
        "requests were logged: {err:?}"
    );
    for line in &err {
        assert!(
            !line.contains(&key),
            "a log line carries the API key: {line}"
        );
        assert!(
            !line.contains(&wrong),
            "a log line carries a presented key: {line}"
        );
    }
}
