//! A `prodops-server serve` process killed with SIGKILL while a webhook receiver holds its
//! delivery request leaves the delivery to the next process (docs/events.md, "How delivery
//! works"): the row stays pending and leased, and when the lease runs out the restarted process
//! delivers the same event again, signed afresh, as attempt 2. Nothing is lost, and after
//! deduplication by `X-Prodops-Event-Id` the receiver has the event exactly once.
//!
//! The same scenario as `a_server_stopped_mid_delivery_leaves_it_to_the_next` in
//! `tests/tests/api/webhooks.rs`, with a real process and a real kill instead of an in-process
//! abort. Runs on a database of its own (`prodops_tests::database_of_its_own`: a SQLite file in
//! a temporary directory, or a new database next to `PRODOPS_TEST_DATABASE_URL`), since a
//! delivering server claims the deliveries of every organization of its database: another
//! test's server would take this one's, and this one's theirs.

use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdout, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use hmac::{Hmac, Mac};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::Sha256;

#[path = "common/server_process.rs"]
mod server_process;
use server_process::serve_command;
const SECRET: &str = "kill-webhook-secret-0123456789";
/// Every wait of the test ends by this bound (a failure, not a hang).
const WAIT: Duration = Duration::from_secs(60);
/// The receiver's time to answer. Long enough that server A is killed (right after the
/// receiver sees its request) before it gives up on the attempt itself.
const TIMEOUT_MS: u64 = 5000;
/// The lease of a claimed delivery: above the time-out, so the server keeps it as given (a
/// lease not above the time-out is raised to the time-out plus 5 s, `WebhookConfig::from_env`).
const LEASE_MS: u64 = 6000;

// ---- The receiver -------------------------------------------------------------------------

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Hit {
    event_id: String,
    attempt: String,
    delivery_id: Option<String>,
    webhook_id: Option<String>,
    /// Whether `X-Prodops-Signature` verified as docs/events.md tells a receiver to verify.
    signature_ok: bool,
    body: Value,
    /// Whether it was answered (2xx); the first request is held and never answered.
    answered: bool,
}

/// A webhook receiver on loopback: holds the first request open without answering, answers
/// 200 to every later one, and records every request.
#[derive(Clone, Default)]
struct Receiver {
    hits: Arc<Mutex<Vec<Hit>>>,
}

/// `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, compared in constant
/// time, with `t` within 5 minutes of now (docs/events.md, "Verifying"). Computed here from the
/// documentation, not with the server's own `webhooks::signature`.
fn verify(secret: &str, header: &str, body: &[u8]) -> bool {
    let (mut t, mut v1) = (None, None);
    for part in header.split(',') {
        match part.split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => v1 = hex::decode(v).ok(),
            _ => {}
        }
    }
    let (Some(t), Some(v1)) = (t, v1) else {
        return false;
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    if (now - t).abs() > 300 {
        return false;
    }
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    mac.verify_slice(&v1).is_ok()
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let first = {
        let mut hits = r.hits.lock().unwrap();
        let first = hits.is_empty();
        hits.push(Hit {
            event_id: header("x-prodops-event-id").unwrap_or_default(),
            attempt: header("x-prodops-delivery-attempt").unwrap_or_default(),
            delivery_id: header("x-prodops-delivery-id"),
            webhook_id: header("x-prodops-webhook-id"),
            signature_ok: header("x-prodops-signature").is_some_and(|s| verify(SECRET, &s, &body)),
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            answered: !first,
        });
        first
    };
    if first {
        // Held open, never answered: the server delivering it is killed meanwhile.
        std::future::pending::<()>().await;
    }
    StatusCode::OK
}

impl Receiver {
    /// Serves on `127.0.0.1:0`; answers its `/hook` URL.
    async fn start() -> (Receiver, String) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let r = Receiver::default();
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(r.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (r, format!("http://{addr}/hook"))
    }

    fn hits(&self) -> Vec<Hit> {
        self.hits.lock().unwrap().clone()
    }

    /// Polls until `done` holds for the hits, up to [`WAIT`].
    async fn wait_until(&self, what: &str, done: impl Fn(&[Hit]) -> bool) -> Vec<Hit> {
        let deadline = Instant::now() + WAIT;
        loop {
            let hits = self.hits();
            if done(&hits) {
                return hits;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not within {WAIT:?}; the receiver got {hits:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

// ---- The server processes -----------------------------------------------------------------

/// A running `serve` process, killed (SIGKILL) and reaped when dropped, also on a panic.
struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT/api/v2`.
    base: String,
    /// Kept open: the process's stdout stays a pipe with a reader.
    _stdout: Option<BufReader<ChildStdout>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `serve` on the database, delivering webhooks or not, and waits (up to [`WAIT`]) for
/// its `listening on ...` line.
fn try_serve(url: &str, deliver: bool) -> Result<Server, String> {
    let child = serve_command(url)
        .env(
            "PRODOPS_WEBHOOK_DELIVER",
            if deliver { "true" } else { "false" },
        )
        .env("PRODOPS_WEBHOOK_ALLOW_HOSTS", "127.0.0.1")
        .env("PRODOPS_WEBHOOK_MAX_ATTEMPTS", "4")
        .env("PRODOPS_WEBHOOK_BACKOFF_BASE_MS", "50")
        .env("PRODOPS_WEBHOOK_BACKOFF_CAP_MS", "200")
        .env("PRODOPS_WEBHOOK_TIMEOUT_MS", TIMEOUT_MS.to_string())
        .env("PRODOPS_WEBHOOK_LEASE_MS", LEASE_MS.to_string())
        .env("PRODOPS_WEBHOOK_POLL_MS", "100")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn serve: {e}"))?;
    let mut server = Server {
        child,
        base: String::new(),
        _stdout: None,
    };
    let mut stdout = BufReader::new(server.child.stdout.take().unwrap());
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = stdout.read_line(&mut line);
        let _ = tx.send((read.map(|_| line), stdout));
    });
    // On a time-out `server` is dropped: the kill closes the pipe and ends the reading thread.
    let (line, stdout) = rx
        .recv_timeout(WAIT)
        .map_err(|_| format!("no `listening on` line within {WAIT:?}"))?;
    let line = line.map_err(|e| format!("reading stdout: {e}"))?;
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("unexpected first line {line:?}"))?;
    server.base = format!("{base}/api/v2");
    server._stdout = Some(stdout);
    Ok(server)
}

fn serve(url: &str, deliver: bool) -> Server {
    tokio::task::block_in_place(|| try_serve(url, deliver)).unwrap_or_else(|e| panic!("{e}"))
}

struct Api {
    client: reqwest::Client,
    base: String,
    key: String,
}

impl Api {
    fn new(server: &Server, key: &str) -> Api {
        Api {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap(),
            base: server.base.clone(),
            key: key.to_string(),
        }
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> reqwest::Result<(u16, Value)> {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("X-API-Key", &self.key);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        Ok((status, resp.json::<Value>().await.unwrap_or(Value::Null)))
    }

    async fn expect(&self, method: Method, path: &str, body: Option<Value>, want: u16) -> Value {
        let (status, body) = self
            .send(method.clone(), path, body)
            .await
            .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
        assert_eq!(status, want, "{method} {path}: {body}");
        body
    }

    /// The webhook's delivery log (`GET /webhook/{id}/deliveries`), newest event first.
    async fn log(&self, hook: &str, query: &str) -> Vec<Value> {
        self.expect(
            Method::GET,
            &format!("/webhook/{hook}/deliveries?{query}"),
            None,
            200,
        )
        .await["values"]
            .as_array()
            .expect("values")
            .clone()
    }
}

// ---- The scenario ---------------------------------------------------------------------------

async fn killed_mid_delivery(url: &str, key: &str) {
    let (receiver, receiver_url) = Receiver::start().await;

    // Server A: creates the webhook and the worker, and claims the delivery.
    let mut a = serve(url, true);
    let api = Api::new(&a, key);
    let hook = api
        .expect(
            Method::POST,
            "/webhook",
            Some(json!({
                "url": receiver_url,
                "eventTypes": ["worker.created"],
                "secret": SECRET,
                "description": "kill_webhook test",
            })),
            201,
        )
        .await;
    assert!(hook.get("secret").is_none(), "the secret is never answered");
    let hook = hook["id"].as_str().expect("webhook id").to_string();
    let worker = api
        .expect(Method::POST, "/worker", Some(json!({"name": "Ann"})), 201)
        .await["id"]
        .as_str()
        .expect("worker id")
        .to_string();

    // Killed while the receiver holds its request.
    let held = receiver
        .wait_until("server A's first attempt reaches the receiver", |h| {
            !h.is_empty()
        })
        .await;
    let status = tokio::task::block_in_place(|| {
        a.child.kill().expect("SIGKILL");
        a.child.wait().expect("reap server A")
    });
    let killed_at = Instant::now();
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(9),
            "server A died of SIGKILL: {status:?}"
        );
    }
    #[cfg(not(unix))]
    assert!(!status.success(), "server A was killed: {status:?}");
    drop(a);
    assert_eq!(held.len(), 1, "one request before the kill: {held:#?}");
    assert_eq!(held[0].attempt, "1", "{held:#?}");

    // A restarted process that does not deliver reads what server A left: the feed's event,
    // and its delivery pending after one attempt, with no outcome recorded.
    let reader = serve(url, false);
    let api = Api::new(&reader, key);
    let feed = api
        .expect(
            Method::GET,
            &format!("/event?type=worker.created&recordId={worker}"),
            None,
            200,
        )
        .await["values"]
        .as_array()
        .expect("values")
        .clone();
    assert_eq!(feed.len(), 1, "one creation event of the worker: {feed:#?}");
    let event_id = feed[0]["id"].as_str().expect("event id").to_string();
    assert_eq!(held[0].event_id, event_id, "server A was delivering it");
    let pending = api.log(&hook, "status=pending").await;
    assert_eq!(pending.len(), 1, "left pending by the kill: {pending:#?}");
    assert_eq!(pending[0]["eventId"], event_id.as_str(), "{pending:#?}");
    assert_eq!(pending[0]["eventType"], "worker.created", "{pending:#?}");
    assert_eq!(
        pending[0]["attempts"], 1,
        "the cut-off attempt counts: {pending:#?}"
    );
    assert!(
        pending[0]["lastStatusCode"].is_null() && pending[0]["lastError"].is_null(),
        "server A recorded no outcome: {pending:#?}"
    );
    assert_eq!(api.log(&hook, "").await.len(), 1, "no other delivery");
    drop(reader);

    // Server B takes it over once the lease runs out; the receiver answers 200 from now on.
    let b = serve(url, true);
    let api = Api::new(&b, key);
    receiver
        .wait_until("server B redelivers after the lease runs out", |h| {
            h.iter().any(|h| h.answered)
        })
        .await;
    let redelivered_after = killed_at.elapsed();
    let deadline = Instant::now() + WAIT;
    let delivered = loop {
        let rows = api.log(&hook, "status=delivered").await;
        if !rows.is_empty() {
            break rows;
        }
        assert!(
            Instant::now() < deadline,
            "the delivery is logged delivered within {WAIT:?}; the log: {:#?}",
            api.log(&hook, "").await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!("{url}: redelivered {redelivered_after:?} after the kill (lease {LEASE_MS} ms)");

    let hits = receiver.hits();
    assert_eq!(hits.len(), 2, "exactly two requests: {hits:#?}");
    for (i, h) in hits.iter().enumerate() {
        assert_eq!(
            h.event_id, event_id,
            "request {i}: the same event: {hits:#?}"
        );
        assert!(h.signature_ok, "request {i}: a valid signature: {hits:#?}");
        assert_eq!(h.webhook_id.as_deref(), Some(hook.as_str()), "request {i}");
        assert_eq!(
            h.body["id"],
            event_id.as_str(),
            "request {i}: the body is the event"
        );
        assert_eq!(h.body["type"], "worker.created", "request {i}");
        assert_eq!(h.body["recordId"], worker.as_str(), "request {i}");
    }
    assert_eq!(hits[0].attempt, "1");
    assert_eq!(
        hits[1].attempt, "2",
        "the restarted process's attempt: {hits:#?}"
    );
    assert_eq!(
        hits[0].body, hits[1].body,
        "the same event, as the feed keeps it"
    );
    assert!(
        hits[0].delivery_id.is_some() && hits[0].delivery_id == hits[1].delivery_id,
        "one delivery, the same X-Prodops-Delivery-Id on both attempts: {hits:#?}"
    );

    assert_eq!(delivered.len(), 1, "{delivered:#?}");
    let row = &delivered[0];
    assert_eq!(row["eventId"], event_id.as_str(), "{row:#}");
    assert_eq!(row["status"], "delivered", "{row:#}");
    assert_eq!(row["attempts"], 2, "{row:#}");
    assert_eq!(row["lastStatusCode"], 200, "{row:#}");
    assert!(!row["deliveredAt"].is_null(), "{row:#}");
    assert_eq!(
        row["id"].as_str(),
        hits[1].delivery_id.as_deref(),
        "the log's delivery is the one received"
    );
    assert_eq!(api.log(&hook, "").await.len(), 1, "no other delivery");

    // Deduplicated by event id, the receiver accepted the worker's event exactly once.
    let accepted: std::collections::BTreeSet<&str> = hits
        .iter()
        .filter(|h| h.answered)
        .map(|h| h.event_id.as_str())
        .collect();
    assert_eq!(
        accepted.into_iter().collect::<Vec<_>>(),
        [event_id.as_str()],
        "{hits:#?}"
    );

    api.expect(Method::DELETE, &format!("/webhook/{hook}"), None, 204)
        .await;
    api.expect(Method::GET, &format!("/webhook/{hook}"), None, 404)
        .await;
    drop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_during_delivery_redelivers_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let (url, _own_database) = prodops_tests::database_of_its_own(dir.path()).await;
    let key = tokio::task::block_in_place(|| server_process::create_org(&url, "Kill webhook"));
    killed_mid_delivery(&url, &key).await;
}
