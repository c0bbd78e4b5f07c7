//! Uses only `prodops_client::*`: construction, a typed list, a write, the event stream, errors,
//! a caller's idempotency key, webhook verification and the records of several resources.

use prodops_client::*;

#[tokio::main]
async fn main() -> Result<()> {
    let client = Client::from_env()?;

    let active: Vec<Worker> = client
        .resource::<Worker>()
        .list(ListParams::new().filter("status", "active"))
        .try_collect()
        .await?;
    println!("{} active workers", active.len());

    let once = client.with_idempotency_key("sdk-only-create-ann");
    let ann = once.workers().create(&json!({"name": "Ann"})).await?;
    let kept: Vec<compat::Lenient<Item>> = client
        .resource::<Item>()
        .keeping_unknown()
        .list(ListParams::new().limit(10))
        .try_collect()
        .await?;
    println!("{} {} items", ann.id, kept.len());

    match client.resource::<Location>().get(Uuid::nil()).await {
        Err(e) if e.is_not_found() => println!("no location ({:?})", e.request_id()),
        Err(Error::Network(e)) if e.kind() == NetworkErrorKind::Timeout => println!("slow: {e}"),
        Err(e) => return Err(e),
        Ok(location) => println!("{}", location.name),
    }

    let mut feed = client.event_stream(EventQuery::default(), false);
    while let Some(event) = feed.try_next().await? {
        println!("{} {}", event.cursor, event.event_type);
    }

    let shops: Page<Shop> = client.resource::<Shop>().list_page(&ListParams::new()).await?;
    let produced = client
        .with_idempotency_key("sdk-only-produce-1")
        .produce(&production_actions::ProduceRequest {
            deliverable_id: Uuid::nil(),
            quantity_produced: 1.0,
            output_location_id: None,
            outputs: None,
            output_item_id: None,
        })
        .await;
    println!("{} shops, produce: {}", shops.total_count, produced.is_ok());

    let raw = client.send_raw(Method::GET, "/worker/count", None).await?;
    println!("{:?}", raw.headers.get("x-request-id"));

    match webhook::verify(b"{}", "t=1,v1=00", "secret", webhook::DEFAULT_TOLERANCE) {
        Ok(event) => println!("{}", event.event_type),
        Err(e) => println!("refused: {e}"),
    }
    Ok(())
}
