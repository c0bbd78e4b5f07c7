//! Lists the active workers of an organization, paging by itself.
//!
//! ```sh
//! PRODOPS_BASE_URL=http://127.0.0.1:8080 PRODOPS_API_KEY=... \
//!   cargo run -p prodops-client --example list_active_workers
//! ```

use prodops_client::{Client, ListParams, TryStreamExt, Worker};

#[tokio::main]
async fn main() -> Result<(), prodops_client::Error> {
    let client = Client::from_env()?;
    let mut workers = client
        .resource::<Worker>()
        .list(ListParams::new().filter("status", "active"));
    let mut n = 0;
    while let Some(worker) = workers.try_next().await? {
        println!(
            "{}\t{}\t{}",
            worker.id, worker.name, worker.customer_identifier
        );
        n += 1;
    }
    eprintln!("{n} active worker(s)");
    Ok(())
}
