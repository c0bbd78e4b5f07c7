//! Posts production output on an order (spec 4.4: `POST /production/produce`). The client sends
//! an `Idempotency-Key`, so a retried call never posts twice.
//!
//! ```sh
//! PRODOPS_BASE_URL=http://127.0.0.1:8080 PRODOPS_API_KEY=... \
//!   cargo run -p prodops-client --example produce_on_order -- <ORDER_ID> <LOCATION_ID> [QUANTITY]
//! ```

use prodops_client::Client;
use prodops_client::actions::Produce;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: produce_on_order <ORDER_ID> <LOCATION_ID> [QUANTITY]";
    let order: uuid::Uuid = args.next().ok_or(usage)?.parse()?;
    let location: uuid::Uuid = args.next().ok_or(usage)?.parse()?;
    let quantity: f64 = args.next().map(|q| q.parse()).transpose()?.unwrap_or(1.0);
    let client = Client::from_env()?;
    let answer = client
        .produce(&Produce {
            deliverable_id: order,
            quantity_produced: Some(quantity),
            output_location_id: Some(location),
            ..Default::default()
        })
        .await?;
    println!("{}", serde_json::to_string_pretty(&answer.value)?);
    Ok(())
}
