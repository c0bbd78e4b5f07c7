//! What a failed call says, and how a program tells failures apart: a missing record
//! (`is_not_found`), a broken rule (`VALIDATION_ERROR` with the field in `details`), a server out
//! of reach (`Error::Network`, with its kind). Every API error carries the request id the server
//! logged the call under.
//!
//! ```sh
//! PRODOPS_BASE_URL=http://127.0.0.1:8080 PRODOPS_API_KEY=... \
//!   cargo run -p prodops-client --example errors
//! ```

use prodops_client::{Client, Config, Error, NetworkErrorKind, Uuid, json};

/// Makes three calls that fail, and answers one line per failure as the program reads it.
pub async fn run(client: &Client) -> Result<Vec<String>, Error> {
    let mut lines = Vec::new();

    // A record that does not exist (or belongs to another organization): 404.
    match client.workers().get(Uuid::nil()).await {
        Err(e) if e.is_not_found() => lines.push(format!(
            "not found: {} (request {})",
            e.code().unwrap_or_default(),
            e.request_id().unwrap_or("-")
        )),
        Err(e) => return Err(e),
        Ok(worker) => lines.push(format!("found {}", worker.name)),
    }

    // A rule of the record broken: 400 with one detail per field.
    match client.workers().create(&json!({"name": "   "})).await {
        Err(Error::Api {
            status: 400,
            code,
            details,
            ..
        }) => {
            for d in &details {
                lines.push(format!(
                    "{code}: {}: {}",
                    d.field.as_deref().unwrap_or("-"),
                    d.message
                ));
            }
        }
        Err(e) => return Err(e),
        Ok(worker) => lines.push(format!("created {}", worker.id)),
    }

    // Nobody listening: no answer at all. (Nothing was sent, so the client tried again first,
    // up to `max_attempts`.)
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .map_err(|e| Error::Config(format!("no local port: {e}")))?;
    let nobody = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let offline = Client::new(Config::new(nobody, "key").max_attempts(1))?;
    match offline.workers().get(Uuid::nil()).await {
        Err(Error::Network(e)) if e.kind() == NetworkErrorKind::Connect => {
            lines.push(format!("unreachable: {e}"))
        }
        Err(e) => return Err(e),
        Ok(_) => lines.push("reached a server that should not be there".into()),
    }

    for line in &lines {
        println!("{line}");
    }
    Ok(lines)
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Error> {
    run(&Client::from_env()?).await.map(drop)
}
