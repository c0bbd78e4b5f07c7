//! A webhook receiver on axum: verifies each delivery's signature with
//! `prodops_client::webhook::verify`, drops events it has seen (delivery is at least once), and
//! answers 2xx quickly so the server does not retry.
//!
//! ```sh
//! PRODOPS_WEBHOOK_SECRET=... PRODOPS_WEBHOOK_BIND=127.0.0.1:9000 \
//!   cargo run -p prodops-client --example webhook_receiver
//! # then: prodops webhook create --set url=http://127.0.0.1:9000/hook --set secret=... ...
//! ```

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use prodops_client::webhook::{self, WebhookError};

#[derive(Clone)]
struct Receiver {
    secret: Arc<str>,
    seen: Arc<Mutex<HashSet<uuid::Uuid>>>,
}

async fn hook(State(r): State<Receiver>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let signature = headers
        .get(webhook::SIGNATURE_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match webhook::verify(&body, signature, &r.secret, webhook::DEFAULT_TOLERANCE) {
        Ok(event) => {
            if r.seen.lock().expect("lock").insert(event.id) {
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

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secret = std::env::var("PRODOPS_WEBHOOK_SECRET")
        .map_err(|_| "set PRODOPS_WEBHOOK_SECRET to the webhook's secret")?;
    let bind = std::env::var("PRODOPS_WEBHOOK_BIND").unwrap_or_else(|_| "127.0.0.1:9000".into());
    let receiver = Receiver {
        secret: secret.into(),
        seen: Arc::default(),
    };
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(hook))
        .with_state(receiver);
    let listener = tokio::net::TcpListener::bind(&bind).await?;
    eprintln!("listening on http://{bind}/hook");
    axum::serve(listener, app).await?;
    Ok(())
}
