//! Archives a worker by id, or by `customerIdentifier` resolved with one `POST /worker/query`.
//!
//! ```sh
//! PRODOPS_BASE_URL=http://127.0.0.1:8080 PRODOPS_API_KEY=... \
//!   cargo run -p prodops-client --example archive_worker -- <ID or customerIdentifier>
//! ```

use prodops_client::{Client, Query, Uuid, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let who = std::env::args()
        .nth(1)
        .ok_or("usage: archive_worker <id or customerIdentifier>")?;
    let client = Client::from_env()?;
    let id = match Uuid::parse_str(&who) {
        Ok(id) => id,
        Err(_) => {
            let page = client
                .workers()
                .query(&Query::new().filter("customerIdentifier", json!(who)))
                .await?;
            match page.values.as_slice() {
                [one] => one.id,
                [] => return Err(format!("no active worker has customerIdentifier {who:?}").into()),
                many => {
                    return Err(
                        format!("{} workers have customerIdentifier {who:?}", many.len()).into(),
                    );
                }
            }
        }
    };
    let worker = client.archive_worker(id).await?;
    println!("archived {} as {:?}", worker.id, worker.name);
    Ok(())
}
