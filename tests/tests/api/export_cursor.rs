//! Reads that name their feed cursor (docs/events.md, "Reads that name their cursor" and
//! "Exports"): a list page, a query and an export answer from one snapshot and carry the
//! `Prodops-Feed-Cursor` of that snapshot, so that the events after it are exactly the changes
//! the answer does not hold: nothing missed, nothing seen twice, also while others write.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use prodops_tests::*;
use serde_json::Value;

const HEADER: &str = "prodops-feed-cursor";

/// The feed cursor an answer names.
fn cursor_of(resp: &Resp) -> i64 {
    assert_eq!(resp.status, 200, "{resp}");
    resp.header(HEADER)
        .unwrap_or_else(|| panic!("no {HEADER} on {resp}"))
        .parse()
        .unwrap_or_else(|e| panic!("{HEADER} of {resp}: {e}"))
}

/// Every event of `resource` after `after`, oldest first.
async fn events_after(api: &Api, after: i64, resource: &str) -> Vec<Value> {
    let mut after = after.to_string();
    let mut all = Vec::new();
    loop {
        let r = api
            .get(&format!(
                "/event?after={after}&limit=1000&resource={resource}"
            ))
            .await;
        assert_eq!(r.status, 200, "{r}");
        let values = r.body["values"].as_array().unwrap().clone();
        after = r.body["nextCursor"].as_str().unwrap().to_string();
        if values.is_empty() {
            return all;
        }
        all.extend(values);
    }
}

fn cursors(events: &[Value]) -> Vec<i64> {
    events
        .iter()
        .map(|e| e["cursor"].as_str().unwrap().parse().unwrap())
        .collect()
}

/// The newest cursor of the organization's feed (0 before its first event).
async fn newest(api: &Api) -> i64 {
    cursors(&events_after(api, 0, "worker").await)
        .last()
        .copied()
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_query_and_export_name_the_cursor_of_what_they_hold() {
    let server = TestServer::start().await;
    let api = server.org("Cursor").await;
    // Before any write: cursor 0, on every read.
    assert_eq!(cursor_of(&api.get("/worker").await), 0);
    assert_eq!(cursor_of(&api.post("/worker/query", json!({})).await), 0);
    assert_eq!(cursor_of(&api.get("/worker/export").await), 0);

    // Write, read, write: the first write's event is at or before the cursor, the second's
    // after it; the events after the cursor are exactly the second write's.
    let ann = api.create("worker", json!({"name": "Ann"})).await;
    let id = ann["id"].as_str().unwrap().to_string();
    let first = newest(&api).await;
    assert!(first > 0);
    let reads = [
        ("list", api.get("/worker").await),
        ("list, sorted", api.get("/worker?sort=name").await),
        ("list, filtered", api.get("/worker?name=Ann").await),
        (
            "list, empty page",
            api.get("/worker?name=nobody-has-this-name").await,
        ),
        ("query", api.post("/worker/query", json!({})).await),
        (
            "query, sorted and selected",
            api.post(
                "/worker/query",
                json!({"sort": "-name", "select": ["name"]}),
            )
            .await,
        ),
        ("export", api.get("/worker/export").await),
        ("export, filtered", api.get("/worker/export?name=Ann").await),
    ];
    api.patch(&format!("/worker/{id}"), json!({"name": "Ann B"}))
        .await;
    let after_second = events_after(&api, first, "worker").await;
    assert_eq!(after_second.len(), 1);
    for (what, resp) in &reads {
        assert_eq!(cursor_of(resp), first, "{what}: {resp}");
        let later = events_after(&api, cursor_of(resp), "worker").await;
        assert_eq!(cursors(&later), cursors(&after_second), "{what}");
        if !what.contains("empty") {
            assert_eq!(resp.body["values"][0]["name"], "Ann", "{what}: {resp}");
        }
    }
    // The answer after the second write names its event and holds its effect.
    let second = cursors(&after_second)[0];
    for resp in [
        api.get("/worker").await,
        api.post("/worker/query", json!({})).await,
        api.get("/worker/export").await,
    ] {
        assert_eq!(cursor_of(&resp), second, "{resp}");
        assert_eq!(resp.body["values"][0]["name"], "Ann B", "{resp}");
    }

    // The export: every matching record in the default order, without paging, archived ones
    // only when asked; its parameters are the list's filters, nothing of paging.
    let more: Vec<Value> = (0..30)
        .map(|i| json!({"name": format!("W{i:02}"), "status": if i % 3 == 0 { "inactive" } else { "active" }}))
        .collect();
    let ids = api.bulk_put("worker", more).await;
    api.patch(&format!("/worker/{}", ids[0]), json!({"isArchived": true}))
        .await;
    let export = api.get("/worker/export").await;
    assert_eq!(cursor_of(&export), newest(&api).await);
    let listed = api.list_ids("worker", "pageSize=1000").await;
    assert_eq!(ids_of(export.body["values"].as_array().unwrap()), listed);
    assert_eq!(export.body["totalCount"], listed.len());
    let inactive = api.get("/worker/export?status=inactive").await;
    assert_eq!(
        ids_of(inactive.body["values"].as_array().unwrap()),
        api.list_ids("worker", "status=inactive&pageSize=1000")
            .await
    );
    let archived = api.get("/worker/export?isArchived=true").await;
    assert_eq!(
        ids_of(archived.body["values"].as_array().unwrap()),
        vec![ids[0].clone()]
    );
    let searched = api.get("/worker/export?search=W0").await;
    assert_eq!(searched.body["totalCount"], 9, "{searched}");
    for bad in ["page=1", "pageSize=10", "cursor=x", "sort=name", "bogus=1"] {
        let name = bad.split('=').next().unwrap();
        assert_validation_names(&api.get(&format!("/worker/export?{bad}")).await, name);
    }
    // Another organization's export holds none of these, and names its own feed.
    let other = server.org("Other").await;
    let theirs = other.get("/worker/export").await;
    assert_eq!(cursor_of(&theirs), 0);
    assert_eq!(theirs.body["totalCount"], 0);
    // A key without the read permission gets 403, as on the list.
    let (reader, _) = server.key(&api, false, &["Deliverable.Read"]).await;
    assert_error(&reader.get("/worker/export").await, 403, "FORBIDDEN");
}

/// An export of a few thousand records is sent in parts (chunked) as it is read, and still
/// one snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_export_streams_every_record_once() {
    let server = TestServer::start().await;
    let api = server.org("Streamed").await;
    let records: Vec<Value> = (0..5_000)
        .map(|i| json!({"name": format!("Worker {i:05} {}", "x".repeat(100))}))
        .collect();
    let mut ids = Vec::new();
    for chunk in records.chunks(2_500) {
        ids.extend(api.bulk_put("worker", chunk.to_vec()).await);
    }
    let export = api.get("/worker/export").await;
    assert!(export.text.len() > 256 << 10, "more than one part");
    assert_eq!(ids_of(export.body["values"].as_array().unwrap()), ids);
    assert_eq!(export.body["totalCount"], 5_000);
    assert_eq!(cursor_of(&export), newest(&api).await);
}

/// What `writers` concurrent clients do to workers until `stop`: create one, rename one of
/// `ids` (a name no other write uses), archive one, restore one; through `servers` in turn.
/// Answers how many writes were made.
fn start_writers(
    api: &Api,
    servers: &[&TestServer],
    ids: &[String],
    writers: usize,
    stop: &Arc<AtomicBool>,
) -> (Vec<tokio::task::JoinHandle<()>>, Arc<AtomicUsize>) {
    let done = Arc::new(AtomicUsize::new(0));
    let ids = Arc::new(ids.to_vec());
    let tasks = (0..writers)
        .map(|w| {
            let api = api.on(servers[w % servers.len()]);
            let (ids, stop, done) = (ids.clone(), stop.clone(), done.clone());
            tokio::spawn(async move {
                let mut seed = w as u64 * 7919 + 17;
                let mut next = move |n: u64| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    (seed >> 33) % n
                };
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let id = &ids[next(ids.len() as u64) as usize];
                    let path = format!("/worker/{id}");
                    let resp = match next(4) {
                        0 => {
                            api.post("/worker", json!({"name": format!("new {w}-{n}")}))
                                .await
                        }
                        1 => {
                            api.patch(&path, json!({"name": format!("renamed {w}-{n}")}))
                                .await
                        }
                        2 => api.patch(&path, json!({"isArchived": true})).await,
                        _ => api.patch(&path, json!({"isArchived": false})).await,
                    };
                    assert!(resp.status == 200 || resp.status == 201, "{resp}");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    (tasks, done)
}

/// The exported records with the events after the export's cursor applied, in order: what
/// the list (records not archived) holds then. Checks on the way that no event after the
/// cursor is already in the export (nothing seen twice): a created record is not in it, and no
/// other event's record equals the exported one (every write makes a record no other write
/// makes).
fn apply(exported: &[Value], events: &[Value]) -> BTreeMap<String, Value> {
    let mut state: BTreeMap<String, Value> = exported
        .iter()
        .map(|r| (r["id"].as_str().unwrap().to_string(), r.clone()))
        .collect();
    let mut touched = std::collections::HashSet::new();
    for e in events {
        let id = e["recordId"].as_str().unwrap().to_string();
        let data = &e["data"];
        if touched.insert(id.clone())
            && let Some(had) = state.get(&id)
        {
            assert!(
                e["type"] != "worker.created",
                "created after the cursor, yet exported: {e}"
            );
            assert_ne!(had, data, "the export holds the effect of {e} already");
        }
        match e["type"].as_str().unwrap() {
            "worker.deleted" | "worker.archived" => {
                state.remove(&id);
            }
            _ if data["isArchived"] == true => {
                state.remove(&id);
            }
            _ => {
                state.insert(id, data.clone());
            }
        }
    }
    state
}

/// Every worker not archived, through the list (pages by cursor), after the writers stopped.
async fn final_state(api: &Api) -> BTreeMap<String, Value> {
    let mut all = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/worker?pageSize=10000&cursor={}", enc(c)),
            None => "/worker?pageSize=10000".to_string(),
        };
        let r = api.get(&path).await;
        assert_eq!(r.status, 200, "{r}");
        for v in r.body["values"].as_array().unwrap() {
            all.insert(v["id"].as_str().unwrap().to_string(), v.clone());
        }
        match r.body["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return all,
        }
    }
}

/// `size` workers, then an export through `servers[0]` while `writers` clients write through
/// every server; the export and the events after its cursor give exactly the final state.
async fn export_under_writers(servers: &[&TestServer], size: usize, writers: usize) {
    let api = servers[0].org("Export under writers").await;
    let started = Instant::now();
    let mut ids = Vec::with_capacity(size);
    let batch = 10_000;
    for from in (0..size).step_by(batch) {
        let records: Vec<Value> = (from..(from + batch).min(size))
            .map(|i| json!({"name": format!("seed {i}"), "customerIdentifier": format!("C{i}")}))
            .collect();
        ids.extend(api.bulk_put("worker", records).await);
    }
    let seeded = started.elapsed();
    let stop = Arc::new(AtomicBool::new(false));
    let (tasks, done) = start_writers(&api, servers, &ids, writers, &stop);
    // Writes are under way before the export starts, and go on while it is read.
    while done.load(Ordering::Relaxed) < writers * 2 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let before = done.load(Ordering::Relaxed);
    let export_started = Instant::now();
    let export = api.get("/worker/export").await;
    let exported_in = export_started.elapsed();
    let during = done.load(Ordering::Relaxed) - before;
    // A few more writes after the export, then stop.
    let after_export = done.load(Ordering::Relaxed);
    while done.load(Ordering::Relaxed) < after_export + writers * 2 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("writer");
    }
    let cursor = cursor_of(&export);
    let exported = export.body["values"].as_array().unwrap();
    assert_eq!(export.body["totalCount"], exported.len());
    let events = events_after(&api, cursor, "worker").await;
    let replayed = apply(exported, &events);
    let fin = final_state(&api).await;
    assert_eq!(replayed.len(), fin.len());
    for (id, record) in &fin {
        assert_eq!(replayed.get(id), Some(record), "worker {id}");
    }
    eprintln!(
        "export under writers: {size} workers seeded in {seeded:?}; export of {} in {exported_in:?} \
         with {during} writes meanwhile ({} writes in all, {} events after the cursor)",
        exported.len(),
        done.load(Ordering::Relaxed),
        events.len()
    );
    assert!(during > 0, "the writers wrote during the export");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_export_and_the_events_after_it_give_the_final_state_under_writers() {
    let server = TestServer::start_with(|c| c.rate_limit = 1_000_000).await;
    export_under_writers(&[&server], 20_000, 8).await;
}

/// The case: PostgreSQL, two server processes on the database, 200,000 workers, 8
/// writers through both during the export.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_200k_export_under_8_writers() {
    if !on_postgres() {
        return; // Two processes sharing one database is the PostgreSQL deployment.
    }
    let server = TestServer::start_with(|c| c.rate_limit = 1_000_000).await;
    let replica = server.another_with(|c| c.rate_limit = 1_000_000).await;
    export_under_writers(&[&server, &replica], 200_000, 8).await;
}
