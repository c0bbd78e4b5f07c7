//! The inventory ledger and stock (spec 2.7, 4.6; decisions.md section 5): the restricted POST,
//! quantity semantics, shop resolution, the negative-stock policy, and stock == sum of ledger
//! under concurrent writers.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use prodops_tests::*;
use reqwest::Method;
use serde_json::Value;

use crate::inventory_support::*;

#[tokio::test]
async fn adjust_transfer_return_move_stock() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Inv").await).await;
    let api = &floor.api;
    let item = floor.item("Steel", None).await;

    // Adjust: a signed delta at the destination; the shop comes from the location, a supplied
    // one is ignored; the unit defaults to the item's; rows never change (updatedAt = createdAt).
    let resp = api
        .post(
            "/inventory-transaction",
            json!({"itemId": item, "type": "adjust", "quantity": 10.1234567, "toLocationId": floor.a,
                   "shopId": floor.other_shop, "reason": "count", "source": "count"}),
        )
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    let row = resp.body.clone();
    assert_eq!(row["shopId"], floor.shop.as_str());
    assert_eq!(row["unitMeasureId"], floor.unit.as_str());
    assert_eq!(row["quantity"], 10.123457, "rounded to six decimals");
    assert_eq!(row["createdAt"], row["updatedAt"]);
    assert_eq!(row["source"], "count");
    assert_eq!(api.read("inventory-transaction", &resp.id()).await, row);

    // Adjust at the source when no destination is given, and negative.
    floor.adjust(&item, &floor.a, -0.123457).await;
    let resp = api
        .post(
            "/inventory-transaction",
            json!({"itemId": item, "type": "adjust", "quantity": -2, "fromLocationId": floor.a}),
        )
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(floor.on_hand(&item, &floor.a).await, 8.0);

    // Transfer within the shop.
    let resp = api
        .post(
            "/inventory-transaction",
            json!({"itemId": item, "type": "transfer", "quantity": 3, "fromLocationId": floor.a, "toLocationId": floor.b}),
        )
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.body["shopId"], floor.shop.as_str());
    assert_eq!(floor.on_hand(&item, &floor.a).await, 5.0);
    assert_eq!(floor.on_hand(&item, &floor.b).await, 3.0);

    // Return removes from the source.
    let resp = api
        .post(
            "/inventory-transaction",
            json!({"itemId": item, "type": "return", "quantity": 1.5, "fromLocationId": floor.b}),
        )
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(floor.on_hand(&item, &floor.b).await, 1.5);

    let stock = api.list("stock", &format!("itemId={item}")).await;
    assert_eq!(stock.len(), 2);
    assert_eq!(stock[0].as_object().unwrap().len(), 5, "{}", stock[0]);
    for s in &stock {
        assert_eq!(s["shopId"], floor.shop.as_str());
        assert_eq!(s["reserved"], 0.0);
    }
    assert_eq!(
        api.list("stock", &format!("locationId={}", floor.b))
            .await
            .len(),
        1
    );
    assert_eq!(
        api.list("stock", &format!("shopId={}", floor.other_shop))
            .await
            .len(),
        0
    );
    assert_eq!(assert_stock_is_ledger(api).await, 5);
    // The ledger's standard reads.
    assert_eq!(api.count("inventory-transaction", "type=adjust").await, 3);
    assert_eq!(
        api.list("inventory-transaction", "search=count")
            .await
            .len(),
        1
    );
}

#[tokio::test]
async fn postings_are_validated() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Inv").await).await;
    let api = &floor.api;
    let item = floor.item("Steel", None).await;
    floor.adjust(&item, &floor.a, 5.0).await;
    let post = |body: Value| async move { api.post("/inventory-transaction", body).await };

    // Only adjust, transfer and return are posted here.
    for t in ["receipt", "consume", "produce", "ship"] {
        let resp = post(json!({"itemId": item, "type": t, "quantity": 1, "toLocationId": floor.a, "fromLocationId": floor.a})).await;
        assert_validation_names(&resp, "type");
    }
    let resp =
        post(json!({"itemId": item, "type": "teleport", "quantity": 1, "toLocationId": floor.a}))
            .await;
    assert_validation_names(&resp, "type");
    // Required fields.
    assert_validation_names(
        &post(json!({"type": "adjust", "quantity": 1, "toLocationId": floor.a})).await,
        "itemId",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "type": "adjust", "toLocationId": floor.a})).await,
        "quantity",
    );
    assert_error_details(
        &post(json!({"itemId": item, "type": "adjust", "quantity": 1})).await,
        400,
        "VALIDATION_ERROR",
    );
    // Transfer: nonnegative, two different locations, one shop.
    let t = |q: Value, from: &str, to: &str| json!({"itemId": item, "type": "transfer", "quantity": q, "fromLocationId": from, "toLocationId": to});
    assert_validation_names(&post(t(json!(-1), &floor.a, &floor.b)).await, "quantity");
    assert_validation_names(&post(t(json!(1), &floor.a, &floor.a)).await, "toLocationId");
    let resp = post(t(json!(1), &floor.a, &floor.x)).await;
    assert_validation_names(&resp, "toLocationId");
    assert!(resp.text.contains("shop"), "{resp}");
    assert_validation_names(
        &post(
            json!({"itemId": item, "type": "transfer", "quantity": 1, "fromLocationId": floor.a}),
        )
        .await,
        "toLocationId",
    );
    // Return: nonnegative, needs the source.
    assert_validation_names(
        &post(json!({"itemId": item, "type": "return", "quantity": -1, "fromLocationId": floor.a}))
            .await,
        "quantity",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "type": "return", "quantity": 1, "toLocationId": floor.a}))
            .await,
        "fromLocationId",
    );
    // Unknown item and location, or another organization's.
    let other = Floor::new(server.org("Other").await).await;
    let other_item = other.item("Theirs", None).await;
    assert_validation_names(
        &post(
            json!({"itemId": other_item, "type": "adjust", "quantity": 1, "toLocationId": floor.a}),
        )
        .await,
        "itemId",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "type": "adjust", "quantity": 1, "toLocationId": other.a}))
            .await,
        "toLocationId",
    );
    // Unknown fields and malformed values.
    assert_validation_names(&post(json!({"itemId": item, "type": "adjust", "quantity": 1, "toLocationId": floor.a, "bogus": 1})).await, "bogus");
    assert_validation_names(
        &post(json!({"itemId": "nope", "type": "adjust", "quantity": 1, "toLocationId": floor.a}))
            .await,
        "itemId",
    );
    assert_validation_names(
        &post(json!({"itemId": item, "type": "adjust", "quantity": 2e9, "toLocationId": floor.a}))
            .await,
        "quantity",
    );
    assert_error_details(
        &post(json!([{"itemId": item}])).await,
        400,
        "VALIDATION_ERROR",
    );
    // An archived location takes no stock but can give it away.
    api.delete(&format!("/location/{}", floor.c)).await;
    let resp =
        post(json!({"itemId": item, "type": "adjust", "quantity": 1, "toLocationId": floor.c}))
            .await;
    assert_validation_names(&resp, "toLocationId");

    // Nothing of the refused postings was written.
    assert_eq!(assert_stock_is_ledger(api).await, 1);
    assert_eq!(floor.on_hand(&item, &floor.a).await, 5.0);

    // Patch, upsert and delete are not available.
    let id = api.list_ids("inventory-transaction", "").await[0].clone();
    for (method, path) in [
        (Method::PATCH, format!("/inventory-transaction/{id}")),
        (Method::DELETE, format!("/inventory-transaction/{id}")),
        (Method::PUT, "/inventory-transaction/bulk".to_string()),
        (
            Method::PATCH,
            "/inventory-transaction/bulk?type=adjust".to_string(),
        ),
        (
            Method::DELETE,
            "/inventory-transaction/bulk?type=adjust".to_string(),
        ),
    ] {
        let resp = api
            .req(method, &path)
            .json(json!({"quantity": 100}))
            .send()
            .await;
        assert_error(&resp, 405, "METHOD_NOT_ALLOWED");
    }
    assert_eq!(floor.on_hand(&item, &floor.a).await, 5.0);
}

#[tokio::test]
async fn stock_never_goes_negative() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Inv").await).await;
    let api = &floor.api;
    let item = floor.item("Steel", None).await;
    floor.adjust(&item, &floor.a, 2.0).await;

    let over = [
        json!({"itemId": item, "type": "transfer", "quantity": 2.000001, "fromLocationId": floor.a, "toLocationId": floor.b}),
        json!({"itemId": item, "type": "return", "quantity": 3, "fromLocationId": floor.a}),
        json!({"itemId": item, "type": "adjust", "quantity": -2.5, "toLocationId": floor.a}),
        json!({"itemId": item, "type": "adjust", "quantity": -1, "toLocationId": floor.b}),
    ];
    for body in over {
        let resp = api.post("/inventory-transaction", body).await;
        let details = assert_error_details(&resp, 409, "CONFLICT");
        assert!(
            details[0]["message"]
                .as_str()
                .unwrap()
                .contains("insufficient stock"),
            "{resp}"
        );
    }
    assert_eq!(assert_stock_is_ledger(api).await, 1);
    assert_eq!(floor.on_hand(&item, &floor.a).await, 2.0);
    // Exactly to zero is fine.
    let resp = api
        .post(
            "/inventory-transaction",
            json!({"itemId": item, "type": "transfer", "quantity": 2, "fromLocationId": floor.a, "toLocationId": floor.b}),
        )
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(floor.on_hand(&item, &floor.a).await, 0.0);
    assert_eq!(floor.on_hand(&item, &floor.b).await, 2.0);
    assert_stock_is_ledger(api).await;
}

#[tokio::test]
async fn permissions_and_idempotency() {
    let server = TestServer::start().await;
    let floor = Floor::new(server.org("Inv").await).await;
    let item = floor.item("Steel", None).await;
    let body = json!({"itemId": item, "type": "adjust", "quantity": 4, "toLocationId": floor.a});

    let (creator, _) = server
        .key(
            &floor.api,
            false,
            &["InventoryTransaction.Create", "InventoryTransaction.Read"],
        )
        .await;
    assert_error(
        &creator.post("/inventory-transaction", body.clone()).await,
        403,
        "FORBIDDEN",
    );
    assert_error(&creator.get("/stock").await, 403, "FORBIDDEN");
    let (poster, _) = server
        .key(&floor.api, false, &["Item.Update", "Item.Read"])
        .await;
    assert_eq!(
        poster
            .post("/inventory-transaction", body.clone())
            .await
            .status,
        201
    );
    assert_eq!(poster.list("stock", "").await.len(), 1);

    // A retry with the same key posts once; the same key with another body is 409.
    let key = unique();
    let first = floor
        .api
        .req(Method::POST, "/inventory-transaction")
        .json(body.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(first.status, 201, "{first}");
    let again = floor
        .api
        .req(Method::POST, "/inventory-transaction")
        .json(body.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(again.status, 201, "{again}");
    assert_eq!(again.body, first.body);
    let mut other = body.clone();
    other["quantity"] = json!(5);
    let conflict = floor
        .api
        .req(Method::POST, "/inventory-transaction")
        .json(other)
        .idempotency_key(&key)
        .send()
        .await;
    assert_error(&conflict, 409, "CONFLICT");
    assert_eq!(floor.on_hand(&item, &floor.a).await, 8.0);
    assert_eq!(assert_stock_is_ledger(&floor.api).await, 2);

    // Stock is per organization.
    let stranger = server.org("Stranger").await;
    assert_eq!(stranger.list("stock", "").await.len(), 0);
    assert_validation_names(&floor.api.get("/stock?itemId=nope").await, "itemId");
    assert_validation_names(&floor.api.get("/stock?bogus=1").await, "bogus");
    assert_validation_names(&floor.api.get("/stock?pageSize=0").await, "pageSize");
}

/// 8 clients posting `per_client` transfers and adjustments each against the same items and
/// locations at once, through `servers` (one or two processes on one database).
async fn hammer(servers: &[&TestServer], per_client: usize) {
    let floor = Floor::new(servers[0].org("Hammer").await).await;
    let items = [floor.item("I1", None).await, floor.item("I2", None).await];
    for item in &items {
        floor.adjust(item, &floor.a, 50.0).await;
    }
    let locations = [floor.a.clone(), floor.b.clone(), floor.c.clone()];
    let accepted = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let mut tasks = Vec::new();
    for client in 0..8usize {
        let api = floor.api.on(servers[client % servers.len()]);
        let (items, locations) = (items.clone(), locations.clone());
        let (accepted, refused) = (accepted.clone(), refused.clone());
        tasks.push(tokio::spawn(async move {
            let mut seed = client as u64 * 7919 + 1;
            let mut next = move |n: u64| {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (seed >> 33) % n
            };
            for _ in 0..per_client {
                let item = &items[next(2) as usize];
                let from = next(3) as usize;
                let to = (from + 1 + next(2) as usize) % 3;
                let q = (1 + next(8)) as f64 / 2.0;
                let body = if next(3) == 0 {
                    let sign = if next(2) == 0 { -1.0 } else { 1.0 };
                    json!({"itemId": item, "type": "adjust", "quantity": sign * q, "toLocationId": locations[to]})
                } else {
                    json!({"itemId": item, "type": "transfer", "quantity": q, "fromLocationId": locations[from], "toLocationId": locations[to]})
                };
                let resp = api.post("/inventory-transaction", body).await;
                match resp.status {
                    201 => accepted.fetch_add(1, Ordering::Relaxed),
                    409 => {
                        assert!(resp.text.contains("insufficient stock"), "{resp}");
                        refused.fetch_add(1, Ordering::Relaxed)
                    }
                    _ => panic!("unexpected answer: {resp}"),
                };
            }
        }));
    }
    for t in tasks {
        t.await.expect("client task");
    }
    let accepted = accepted.load(Ordering::Relaxed);
    let refused = refused.load(Ordering::Relaxed);
    assert_eq!(accepted + refused, 8 * per_client);
    assert!(refused > 0, "the load exercises the policy");
    // No posting lost or doubled: one row per accepted posting (plus the two seeds); stock is
    // the sum of the ledger and never negative.
    let rows = assert_stock_is_ledger(&floor.api).await;
    assert_eq!(rows, accepted + 2, "accepted {accepted}, refused {refused}");
    if !on_postgres() {
        // SQLite commits in id order (one writer, ids generated inside the write): replaying the
        // ledger in that order never dips below zero, so no refused posting got through.
        let mut ledger = ledger(&floor.api).await;
        ledger.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        let mut running = std::collections::BTreeMap::new();
        for (i, row) in ledger.iter().enumerate() {
            for (key, d) in ledger_sums(std::slice::from_ref(row)) {
                let v = running.entry(key.clone()).or_insert(0i64);
                *v += d;
                assert!(*v >= 0, "after row {i}, {key:?} was negative");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_postings_keep_stock_equal_to_the_ledger() {
    let server = TestServer::start_with(|c| c.rate_limit = 1_000_000).await;
    hammer(&[&server], 1000).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_share_the_policy() {
    if !on_postgres() {
        return; // Two processes sharing one database is the PostgreSQL deployment.
    }
    let server = TestServer::start_with(|c| c.rate_limit = 1_000_000).await;
    let replica = server.another_with(|c| c.rate_limit = 1_000_000).await;
    hammer(&[&server, &replica], 1000).await;
}
