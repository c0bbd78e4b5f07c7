//! Posts production output on an order (spec 4.4: `POST /production/produce`) and prints the
//! order's production status afterwards. The client sends an `Idempotency-Key`, so a retried
//! call never posts twice.
//!
//! Without explicit outputs every declaration of the order (`/production-output`) posts its
//! default (`producedPerUnit x QUANTITY`, else what remains planned) at LOCATION_ID.
//!
//! ```sh
//! PRODOPS_BASE_URL=http://127.0.0.1:8080 PRODOPS_API_KEY=... \
//!   cargo run -p prodops-client --example produce_on_order -- <ORDER_ID> <LOCATION_ID> [QUANTITY]
//! ```

use prodops_client::production_actions::ProduceRequest;
use prodops_client::{Client, Uuid};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let usage = "usage: produce_on_order <ORDER_ID> <LOCATION_ID> [QUANTITY]";
    let order: Uuid = args.next().ok_or(usage)?.parse()?;
    let location: Uuid = args.next().ok_or(usage)?.parse()?;
    let quantity: f64 = args.next().map(|q| q.parse()).transpose()?.unwrap_or(1.0);
    let client = Client::from_env()?;
    let produced = client
        .produce(&ProduceRequest {
            deliverable_id: order,
            quantity_produced: quantity,
            output_location_id: Some(location),
            outputs: None,
            output_item_id: None,
        })
        .await?;
    for row in &produced.transactions {
        println!(
            "produced {} of item {} at {}",
            row.quantity,
            row.item_id,
            row.to_location_id
                .map(|l| l.to_string())
                .unwrap_or_default()
        );
    }
    let status = client.production_status(order).await?;
    println!("{status:#?}");
    Ok(())
}
