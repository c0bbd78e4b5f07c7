//! `totalCount` of a plain list comes from counts the database keeps with triggers; after any mix
//! of creates, archives, restores, deletes and rejected batches it must equal the rows, which a
//! filtered count (a scan) and the list itself show.

use prodops_tests::*;
use serde_json::json;

/// The three views of one list that must agree: the kept total, the rows, and a scanning count.
async fn assert_counts_agree(api: &Api, resource: &str, archived: Option<bool>) {
    let query = archived
        .map(|a| format!("isArchived={a}"))
        .unwrap_or_default();
    let kept = api.list_total(resource, &query).await;
    let paged = if query.is_empty() {
        "pageSize=10000".to_string()
    } else {
        format!("{query}&pageSize=10000")
    };
    let rows = api.list(resource, &paged).await.len() as u64;
    // `search=` with an empty text matches every row, but forces a scan instead of the kept count.
    let scan_query = if query.is_empty() {
        "search=".to_string()
    } else {
        format!("{query}&search=")
    };
    let scanned = api.count(resource, &scan_query).await;
    assert_eq!(
        kept, rows,
        "{resource} {query}: totalCount {kept} but {rows} rows"
    );
    assert_eq!(
        kept, scanned,
        "{resource} {query}: totalCount {kept} but a scan counts {scanned}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_totals_follow_creates_archives_restores_and_deletes() {
    let server = TestServer::start().await;
    let api = server.org("Counts").await;
    let other = server.org("Other").await;

    let names: Vec<_> = (0..7)
        .map(|i| json!({ "name": format!("Vendor {i}") }))
        .collect();
    let ids = api.bulk_put("vendor", names).await;
    for id in &ids[..3] {
        assert_eq!(api.delete(&format!("/vendor/{id}")).await.status, 204);
    }
    // Deleting an archived vendor again changes nothing.
    assert_eq!(api.delete(&format!("/vendor/{}", ids[0])).await.status, 204);
    assert_eq!(
        api.patch(
            &format!("/vendor/{}", ids[1]),
            json!({ "isArchived": false })
        )
        .await
        .status,
        200
    );
    assert_eq!(
        api.req(reqwest::Method::DELETE, "/vendor/bulk?search=Vendor%206")
            .send()
            .await
            .status,
        200
    );
    // A rejected batch leaves the counts as they were.
    let rejected = api
        .put(
            "/vendor/bulk",
            json!([{ "name": "Vendor 7" }, { "name": 5 }]),
        )
        .await;
    assert_eq!(rejected.status, 400);

    assert_eq!(api.list_total("vendor", "").await, 4);
    assert_eq!(api.list_total("vendor", "isArchived=true").await, 3);
    for archived in [None, Some(false), Some(true)] {
        assert_counts_agree(&api, "vendor", archived).await;
    }
    assert_eq!(
        other.list_total("vendor", "isArchived=false").await,
        0,
        "another organization sees none"
    );
    assert_eq!(other.list_total("vendor", "isArchived=true").await, 0);

    // A resource that is removed by DELETE, not archived.
    let mut comments = Vec::new();
    for i in 0..3 {
        comments.push(
            api.create("comment", json!({ "body": format!("comment {i}") }))
                .await,
        );
    }
    let first = comments[0]["id"].as_str().unwrap();
    assert_eq!(api.delete(&format!("/comment/{first}")).await.status, 204);
    assert_eq!(api.list_total("comment", "").await, 2);
    assert_eq!(api.count("comment", "").await, 2);
    assert_counts_agree(&api, "comment", None).await;
}

/// Concurrent writers to one table of one organization (on PostgreSQL through many pooled
/// connections, each counting in its own shard; here also through a second server process on the
/// same database) keep the total exact: rows created through one connection and deleted through
/// another still sum right.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_keep_the_total_exact() {
    let server = TestServer::start().await;
    let second = server.another().await;
    let api = server.org("Concurrent counts").await;
    let via_second = api.on(&second);

    let mut tasks = Vec::new();
    for t in 0..8 {
        let api = if t % 2 == 0 {
            api.clone()
        } else {
            via_second.clone()
        };
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..15 {
                let c = api
                    .create(
                        "comment",
                        json!({ "body": format!("task {t} comment {i}") }),
                    )
                    .await;
                ids.push(c["id"].as_str().unwrap().to_string());
            }
            ids
        }));
    }
    let mut created = Vec::new();
    for task in tasks {
        created.extend(task.await.expect("task"));
    }
    // Delete a third of them from other tasks than created them, concurrently again.
    let doomed: Vec<String> = created.iter().step_by(3).cloned().collect();
    let mut deletes = Vec::new();
    for (n, chunk) in doomed.chunks(5).enumerate() {
        let api = if n % 2 == 0 {
            via_second.clone()
        } else {
            api.clone()
        };
        let chunk = chunk.to_vec();
        deletes.push(tokio::spawn(async move {
            for id in chunk {
                assert_eq!(api.delete(&format!("/comment/{id}")).await.status, 204);
            }
        }));
    }
    for d in deletes {
        d.await.expect("delete task");
    }
    let expected = (created.len() - doomed.len()) as u64;
    assert_eq!(api.list_total("comment", "").await, expected);
    assert_counts_agree(&api, "comment", None).await;
    second.shutdown().await;
}

/// Large bulk batches keep their counts per batch rather than per row (records::insert_rows):
/// the totals stay exact through such batches, mixed with archived creates, a batch refused
/// whole for a duplicate, and single writes after them (whose counting triggers must be on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_bulk_batches_keep_the_counts_exact() {
    let server = TestServer::start().await;
    let api = server.org("Large batches").await;
    let other = server.org("Other large").await;
    let workers = |from: usize, n: usize| -> Vec<serde_json::Value> {
        (from..from + n)
            .map(|i| json!({ "name": format!("Worker {i}"), "customerIdentifier": format!("E{i}"), "isArchived": i % 3 == 0 }))
            .collect()
    };
    api.bulk_put("worker", workers(0, 700)).await;
    other.bulk_put("worker", workers(0, 130)).await;
    // A bad record at the end: the whole batch, its first 199 rows (written before the bad
    // one is met) included, is refused.
    let mut refused = workers(700, 199);
    refused.push(json!({ "name": "  " }));
    let r = api.put("/worker/bulk", json!(refused)).await;
    assert_eq!(r.status, 400, "{}", r.text);
    // Single writes after the batches still count (the triggers are back on).
    let r = api.post("/worker", json!({ "name": "Single" })).await;
    assert_eq!(r.status, 201, "{}", r.text);
    for archived in [None, Some(true), Some(false)] {
        assert_counts_agree(&api, "worker", archived).await;
        assert_counts_agree(&other, "worker", archived).await;
    }
    assert_eq!(api.list_total("worker", "isArchived=true").await, 234);
    assert_eq!(api.list_total("worker", "isArchived=false").await, 467);
    assert_eq!(other.list_total("worker", "isArchived=false").await, 86);
}

/// The count of a filter answered from the counts kept per value of an enum field
/// (store/value_counts.rs) or from the custom property value index alone must equal the records
/// that match: the rows of the filtered list, and a scanning count (`search=` makes the filter
/// one the kept counts do not answer).
async fn assert_filtered_counts_agree(api: &Api, resource: &str, filter: &str) {
    for archived in ["", "&isArchived=false", "&isArchived=true"] {
        let query = format!("{filter}{archived}");
        let kept = api.count(resource, &query).await;
        let total = api.list_total(resource, &query).await;
        let rows = api
            .list(resource, &format!("{query}&pageSize=10000"))
            .await
            .len() as u64;
        let scanned = api.count(resource, &format!("{query}&search=")).await;
        assert_eq!(
            kept, rows,
            "{resource}?{query}: count {kept} but {rows} rows"
        );
        assert_eq!(
            kept, total,
            "{resource}?{query}: count {kept} but totalCount {total}"
        );
        assert_eq!(
            kept, scanned,
            "{resource}?{query}: count {kept} but a scan counts {scanned}"
        );
    }
}

/// Issue 14 item 2: filtered counts kept per value, and property filters answered by the index
/// alone, follow large and small batches, refused batches, status changes, archives, restores,
/// deletes and bulk updates, per organization.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_counts_follow_every_write() {
    const STATUS: [&str; 3] = ["active", "inactive", "terminated"];
    let server = TestServer::start().await;
    let api = server.org("Value counts").await;
    let other = server.org("Other value counts").await;
    let workers = |from: usize, n: usize| -> Vec<serde_json::Value> {
        (from..from + n)
            .map(|i| {
                json!({
                    "name": format!("Worker {i}"),
                    "status": STATUS[i % 3],
                    "isArchived": i % 4 == 0,
                })
            })
            .collect()
    };
    // A large batch (counted per batch on SQLite), a small one (counted by the triggers).
    let ids = api.bulk_put("worker", workers(0, 700)).await;
    api.bulk_put("worker", workers(700, 20)).await;
    other.bulk_put("worker", workers(0, 90)).await;
    let mut refused = workers(720, 199);
    refused.push(json!({ "name": "  " }));
    assert_eq!(api.put("/worker/bulk", json!(refused)).await.status, 400);
    let single = api.create("worker", json!({ "name": "Single" })).await;

    // A status change, an archive, a restore, a change of both at once (workers are archived,
    // never deleted; the deletes are the orders' below).
    let changes = [
        (&ids[1], json!({ "status": "terminated" })),
        (&ids[2], json!({ "isArchived": true })),
        (&ids[4], json!({ "isArchived": false })),
        (&ids[5], json!({ "status": "active", "isArchived": true })),
    ];
    for (id, change) in changes {
        let r = api.patch(&format!("/worker/{id}"), change).await;
        assert_eq!(r.status, 200, "{r}");
    }
    let single_id = single["id"].as_str().unwrap();
    let r = api
        .patch(
            &format!("/worker/{single_id}"),
            json!({ "status": "inactive" }),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    // A bulk update of every inactive worker.
    let r = api
        .patch(
            "/worker/bulk?status=inactive&search=Worker%201",
            json!({ "status": "terminated" }),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    for status in STATUS {
        assert_filtered_counts_agree(&api, "worker", &format!("status={status}")).await;
        assert_filtered_counts_agree(&other, "worker", &format!("status={status}")).await;
    }
    assert_filtered_counts_agree(
        &api,
        "worker",
        "status=active&status=inactive&status=active",
    )
    .await;
    // Inactive: i % 3 == 1, 30 of 90; a count leaves archived records out by default, and 8 of
    // those are archived (i % 12 == 4).
    assert_eq!(other.count("worker", "status=inactive").await, 22);

    // Custom properties: archived orders leave the property's count and page at once.
    let r = api
        .post(
            "/custom-property",
            json!({"key": "priority", "name": "Priority", "dataType": "select", "options": ["hold", "normal"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{r}");
    let orders: Vec<serde_json::Value> = (0..300)
        .map(|i| {
            json!({
                "name": format!("Order {i}"),
                "type": "order",
                "data": {"properties": {"priority": if i % 5 == 0 { "hold" } else { "normal" }}},
            })
        })
        .collect();
    let order_ids = api.bulk_put("deliverable", orders).await;
    for id in order_ids.iter().step_by(10) {
        let r = api
            .patch(&format!("/deliverable/{id}"), json!({ "isArchived": true }))
            .await;
        assert_eq!(r.status, 200, "{r}");
    }
    for id in &order_ids[295..] {
        let r = api.delete(&format!("/deliverable/{id}")).await;
        assert_eq!(r.status, 204, "{r}");
    }
    let r = api
        .patch(
            &format!("/deliverable/{}", order_ids[1]),
            json!({ "data": {"properties": {"priority": "hold"}} }),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_filtered_counts_agree(&api, "deliverable", "data.properties.priority=hold").await;
    assert_filtered_counts_agree(&api, "deliverable", "type=order").await;
    // Hold: every 5th (60), and Order 1, less the archived ones (every 10th: 30) and the
    // deleted Order 295.
    assert_eq!(
        api.count(
            "deliverable",
            "data.properties.priority=hold&isArchived=false"
        )
        .await,
        30
    );
    // The page in the list's order, from the index.
    let page = api
        .list(
            "deliverable",
            "data.properties.priority=hold&isArchived=false&pageSize=5",
        )
        .await;
    let names: Vec<&str> = page.iter().map(|d| d["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["Order 1", "Order 5", "Order 15", "Order 25", "Order 35"]
    );
}
