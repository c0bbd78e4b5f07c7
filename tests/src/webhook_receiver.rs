//! A webhook receiver on loopback for the tests: it verifies every delivery's signature with
//! the SDK's verifier (`prodops_client::webhook`, as docs/events.md tells a receiver to), records what it got, and answers as the test says
//! (fail the first N attempts of each event, fail always, hang on the first request or on
//! every one).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 200 to everything.
    Accept,
    /// 500 to the first `n` attempts of each event, then 200.
    FailFirst(usize),
    /// 500 to everything.
    AlwaysFail,
    /// Holds the first request open (for a minute), then 200 to everything.
    HangFirst,
    /// Holds every request open (for a minute): a receiver that accepts and never answers.
    HangAlways,
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Hit {
    pub event_id: String,
    pub attempt: String,
    pub delivery_id: Option<String>,
    /// Whether `X-Prodops-Signature` verified (HMAC and a timestamp within 5 minutes).
    pub signature_ok: bool,
    pub body: Value,
    /// The body as it came, and its `X-Prodops-Signature`, for a verifier to check again.
    pub raw_body: Vec<u8>,
    pub signature: Option<String>,
    /// Whether it answered 2xx.
    pub accepted: bool,
}

struct Inner {
    secret: String,
    mode: Mode,
    tries: HashMap<String, usize>,
    hits: Vec<Hit>,
    requests: usize,
}

/// The receiver; dropped with the test.
#[derive(Clone)]
pub struct Receiver {
    addr: SocketAddr,
    inner: Arc<Mutex<Inner>>,
}

async fn hook(
    State(r): State<Receiver>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    let h = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let event_id = h("x-prodops-event-id").unwrap_or_default();
    let (status, hang) = {
        let mut inner = r.inner.lock().unwrap();
        inner.requests += 1;
        let first_request = inner.requests == 1;
        let tries = inner.tries.entry(event_id.clone()).or_default();
        *tries += 1;
        let tries = *tries;
        let ok = match inner.mode {
            Mode::Accept => true,
            Mode::FailFirst(n) => tries > n,
            Mode::AlwaysFail => false,
            Mode::HangFirst => !first_request,
            Mode::HangAlways => false,
        };
        let hang = match inner.mode {
            Mode::HangFirst => first_request,
            Mode::HangAlways => true,
            _ => false,
        };
        let signature = h("x-prodops-signature");
        let signature_ok = signature.as_deref().is_some_and(|s| {
            prodops_client::webhook::verify(
                &body,
                s,
                &inner.secret,
                prodops_client::webhook::DEFAULT_TOLERANCE,
            )
            .is_ok()
        });
        inner.hits.push(Hit {
            event_id,
            attempt: h("x-prodops-delivery-attempt").unwrap_or_default(),
            delivery_id: h("x-prodops-delivery-id"),
            signature_ok,
            body: serde_json::from_slice(&body).unwrap_or(Value::Null),
            raw_body: body.to_vec(),
            signature,
            accepted: ok && !hang,
        });
        (
            if ok {
                StatusCode::OK
            } else {
                StatusCode::INTERNAL_SERVER_ERROR
            },
            hang,
        )
    };
    if hang {
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
    status
}

impl Receiver {
    /// Serves on `127.0.0.1:0`, verifying with `secret`.
    pub async fn start(secret: &str, mode: Mode) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let r = Receiver {
            addr: listener.local_addr().unwrap(),
            inner: Arc::new(Mutex::new(Inner {
                secret: secret.to_string(),
                mode,
                tries: HashMap::new(),
                hits: Vec::new(),
                requests: 0,
            })),
        };
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(hook))
            .with_state(r.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        r
    }

    /// `http://127.0.0.1:PORT/hook`.
    pub fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    pub fn set_mode(&self, mode: Mode) {
        self.inner.lock().unwrap().mode = mode;
    }

    /// Every request so far, in arrival order.
    pub fn hits(&self) -> Vec<Hit> {
        self.inner.lock().unwrap().hits.clone()
    }

    /// The ids of the events accepted, deduplicated, in first-accepted order.
    pub fn accepted_ids(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for h in self.hits() {
            if h.accepted && !out.contains(&h.event_id) {
                out.push(h.event_id);
            }
        }
        out
    }

    /// Waits (up to `limit`) until `done` holds for the hits; panics with them otherwise.
    pub async fn wait_until(&self, limit: Duration, done: impl Fn(&[Hit]) -> bool) -> Vec<Hit> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let hits = self.hits();
            if done(&hits) {
                return hits;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("the receiver did not get what was awaited; it got {hits:#?}");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}
