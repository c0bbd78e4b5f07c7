//! A write a program can safely run again. The program names the write with an
//! `Idempotency-Key` made of what it means ("onboard this person, in this run"); the client
//! sends the write again by itself when the answer was lost (a timeout, a broken connection),
//! and the server answers every repeat under that key with its first answer and changes
//! nothing. Running the program again after a crash is just as safe.
//!
//! ```sh
//! PRODOPS_BASE_URL=http://127.0.0.1:8080 PRODOPS_API_KEY=... \
//!   cargo run -p prodops-client --example idempotent_retry -- <RUN_ID>
//! ```

use prodops_client::{Client, Error, Worker, json};

/// Creates the worker of `run_id` once, however many times it is called.
pub async fn run(client: &Client, run_id: &str) -> Result<Worker, Error> {
    let once = client.with_idempotency_key(format!("onboard-ann-{run_id}"));
    let body = json!({"name": "Ann", "customerIdentifier": format!("onboard-{run_id}")});
    let ann = once.workers().create(&body).await?;
    println!("created {} ({})", ann.id, ann.name);
    // The program did not see the answer (it crashed, say) and does it again: the same record.
    let again = once.workers().create(&body).await?;
    assert_eq!(again.id, ann.id);
    println!("again: the same {}", again.id);
    Ok(ann)
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let run_id = std::env::args()
        .nth(1)
        .ok_or("usage: idempotent_retry <RUN_ID>")?;
    run(&Client::from_env()?, &run_id).await?;
    Ok(())
}
