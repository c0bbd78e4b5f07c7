//! A lost database is a transient fault, not an internal one (issue 40, item 2): while the
//! server cannot reach PostgreSQL, or loses its connections to it, requests answer 503 in the
//! error shape with `Retry-After`, never 500; once the database answers again, so does the
//! server, and nothing acknowledged was lost. The server reaches PostgreSQL through a TCP
//! relay this test owns, so that cutting it touches no other test's connections.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prodops_tests::*;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Mutex;
use tokio::task::JoinHandle;

/// A TCP relay to PostgreSQL that can cut every connection it carries and refuse new ones.
struct Relay {
    port: u16,
    open: Arc<AtomicBool>,
    links: Arc<Mutex<Vec<JoinHandle<()>>>>,
    _accept: JoinHandle<()>,
}

impl Relay {
    async fn to(target: String) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let open = Arc::new(AtomicBool::new(true));
        let links: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accept = tokio::spawn({
            let (open, links) = (open.clone(), links.clone());
            async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if !open.load(Ordering::SeqCst) {
                        drop(inbound);
                        continue;
                    }
                    let target = target.clone();
                    links.lock().await.push(tokio::spawn(async move {
                        if let Ok(mut outbound) = TcpStream::connect(&target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    }));
                }
            }
        });
        Relay {
            port,
            open,
            links,
            _accept: accept,
        }
    }

    /// Closes every connection through the relay and refuses new ones.
    async fn cut(&self) {
        self.open.store(false, Ordering::SeqCst);
        for link in self.links.lock().await.drain(..) {
            link.abort();
        }
    }

    fn restore(&self) {
        self.open.store(true, Ordering::SeqCst);
    }
}

/// `method path` with a client of its own (the harness refuses 5xx answers): status,
/// `Retry-After` and body.
async fn send(
    api: &Api,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Option<String>, Value) {
    let mut req = reqwest::Client::new()
        .request(method, format!("{}{path}", api.base()))
        .header("X-API-Key", api.key().unwrap())
        .timeout(Duration::from_secs(60));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.expect("the server answers");
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = serde_json::from_str(&resp.text().await.unwrap()).unwrap_or(Value::Null);
    (status, retry_after, body)
}

use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_database_answers_503_with_retry_after_and_recovers() {
    let Some(url) = shared_database_url().filter(|u| u.starts_with("postgres")) else {
        return; // SQLite is a file in the server's own process: there is no connection to lose.
    };
    // postgres://user@host:port/db?params → the same through the relay.
    let (scheme_user, rest) = url.split_once('@').expect("a user in the URL");
    let (hostport, path) = rest.split_once('/').expect("a database in the URL");
    let target = if hostport.contains(':') {
        hostport.to_string()
    } else {
        format!("{hostport}:5432")
    };
    let relay = Relay::to(target).await;
    let relayed = format!("{scheme_user}@127.0.0.1:{}/{path}", relay.port);
    let server = TestServer::start_with(|c| c.database_url = relayed.clone()).await;
    let api = server.org("Relayed").await;
    let made = api.create("worker", json!({"name": "Before"})).await;

    relay.cut().await;
    for _ in 0..3 {
        let (status, retry_after, body) =
            send(&api, reqwest::Method::GET, "/worker/count", None).await;
        assert_eq!(status, 503, "{body}");
        assert_eq!(retry_after.as_deref(), Some("1"), "{body}");
        assert_eq!(body["error"]["code"], "INTERNAL", "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(message.contains("database"), "{body}");
        for word in FORBIDDEN_IN_ERRORS {
            assert!(!message.contains(word), "{body}");
        }
        let (status, retry_after, body) = send(
            &api,
            reqwest::Method::POST,
            "/worker",
            Some(json!({"name": "During"})),
        )
        .await;
        assert_eq!(status, 503, "{body}");
        assert_eq!(retry_after.as_deref(), Some("1"), "{body}");
    }

    relay.restore();
    let mut recovered = false;
    for _ in 0..50 {
        let (status, _, _) = send(&api, reqwest::Method::GET, "/worker/count", None).await;
        if status == 200 {
            recovered = true;
            break;
        }
        assert_eq!(status, 503);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(recovered, "the server answers again once the database does");
    let (status, _, body) = send(
        &api,
        reqwest::Method::POST,
        "/worker",
        Some(json!({"name": "After"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(
        api.read("worker", made["id"].as_str().unwrap()).await["name"],
        "Before"
    );
    assert_eq!(api.count("worker", "name=During").await, 0);
    assert_eq!(api.count("worker", "").await, 2);
}
