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
