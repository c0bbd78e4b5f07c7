//! Follows the change feed: every event after a cursor, then each new one as it happens (the
//! server holds each request up to 30 s for one). Keep the last cursor to resume from it.
//!
//! ```sh
//! PRODOPS_BASE_URL=http://127.0.0.1:8080 PRODOPS_API_KEY=... \
//!   cargo run -p prodops-client --example event_stream -- [AFTER_CURSOR] [MAX_EVENTS]
//! ```

use prodops_client::{Client, Error, Event, EventQuery, TryStreamExt};

/// Reads up to `max` events after `after` (all of them from the oldest kept when `None`),
/// waiting for new ones; answers them.
pub async fn run(client: &Client, after: Option<String>, max: usize) -> Result<Vec<Event>, Error> {
    let query = EventQuery {
        after,
        ..Default::default()
    };
    let mut feed = client.event_stream(query, true);
    let mut events = Vec::new();
    while events.len() < max {
        let Some(event) = feed.try_next().await? else {
            break;
        };
        println!(
            "{}\t{}\t{}\t{}",
            event.cursor, event.event_type, event.resource, event.record_id
        );
        events.push(event);
    }
    Ok(events)
}

#[allow(dead_code)]
#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let after = args.next();
    let max = args
        .next()
        .map(|m| m.parse())
        .transpose()?
        .unwrap_or(usize::MAX);
    run(&Client::from_env()?, after, max).await?;
    Ok(())
}
