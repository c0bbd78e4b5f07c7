//! A webhook receiver on axum: verifies each delivery's signature with
//! `prodops_client::webhook::verify`, drops events it has seen (delivery is at least once), and
//! answers 2xx quickly so the server does not retry.
//!
//! ```sh
//! PRODOPS_WEBHOOK_SECRET=... PRODOPS_WEBHOOK_BIND=127.0.0.1:9000 \
//!   cargo run -p prodops-client --example webhook_receiver
//! # then: prodops webhook create --set url=http://127.0.0.1:9000/hook --set secret=... ...
//! ```

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use prodops_client::Uuid;
use prodops_client::webhook::{self, WebhookError};

/// The receiver's state: the webhook's secret and the events seen so far.
#[derive(Clone)]
pub struct Receiver {
    secret: Arc<str>,
    /// The ids of the events accepted, in order, each once.
    pub seen: Arc<Mutex<Vec<Uuid>>>,
}

/// The receiver's routes: `POST /hook`.
pub fn app(secret: &str) -> (axum::Router, Receiver) {
    let receiver = Receiver {
        secret: secret.into(),
        seen: Arc::default(),
    };
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(receiver.clone());
    (app, receiver)
}

async fn hook(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let signature = headers
        .get(webhook::SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match webhook::verify(&body, signature, &r.secret, webhook::DEFAULT_TOLERANCE) {
        Ok(event) => {
            let mut seen = r.seen.lock().expect("lock");
            if !seen.contains(&event.id) {
                seen.push(event.id);
                println!(
                    "{} {} {} (cursor {})",
                    event.event_type, event.resource, event.record_id, event.cursor
                );
            }
            StatusCode::NO_CONTENT
        }
        Err(e @ (WebhookError::BadSignature | WebhookError::TooOld { .. })) => {
            eprintln!("refused: {e}");
            StatusCode::UNAUTHORIZED
        }
        Err(e) => {
            eprintln!("refused: {e}");
            StatusCode::BAD_REQUEST
        }
    }
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secret = std::env::var("PRODOPS_WEBHOOK_SECRET")
        .map_err(|_| "set PRODOPS_WEBHOOK_SECRET to the webhook's secret")?;
    let bind = std::env::var("PRODOPS_WEBHOOK_BIND").unwrap_or_else(|_| "127.0.0.1:9000".into());
    let (app, _) = app(&secret);
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    eprintln!("listening on http://{bind}/hook");
    axum::serve(listener, app).await?;
    Ok(())
}
