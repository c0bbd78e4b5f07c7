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

// ---- whole trees: `GET /deliverable/trees` and the hierarchy -------------------------------

/// `orders` orders of `phases` phases of `steps` steps each, in one bulk call per order; answers
/// the ids of the orders, the phases and the steps.
async fn seed_trees(
    api: &Api,
    orders: usize,
    phases: usize,
    steps: usize,
) -> (Vec<String>, Vec<String>, Vec<String>) {
    let (mut order_ids, mut phase_ids, mut step_ids) = (Vec::new(), Vec::new(), Vec::new());
    for o in 0..orders {
        let order = uuid::Uuid::new_v4().to_string();
        let mut records = vec![json!({"id": order, "name": format!("Order {o}"), "type": "order"})];
        for p in 0..phases {
            let phase = uuid::Uuid::new_v4().to_string();
            records.push(json!({"id": phase, "name": format!("Phase {o}.{p}"), "type": "phase", "parentId": order}));
            for s in 0..steps {
                let step = uuid::Uuid::new_v4().to_string();
                records.push(json!({"id": step, "name": format!("Step {o}.{p}.{s}"), "type": "step", "parentId": phase}));
                step_ids.push(step);
            }
            phase_ids.push(phase);
        }
        api.bulk_put("deliverable", records).await;
        order_ids.push(order);
    }
    (order_ids, phase_ids, step_ids)
}

/// The records of a page answer by id, each without what the roll-up of its children changes
/// and no event announces (docs/events.md, "Events"): its `computed` fields, and on a node with
/// children (every one but the steps here) its `updatedAt`.
fn own_fields(values: &[Value]) -> BTreeMap<String, Value> {
    values.iter().map(own).collect()
}

fn own(v: &Value) -> (String, Value) {
    let mut v = v.clone();
    let record = v.as_object_mut().unwrap();
    record.remove("computed");
    if record["type"] != "step" {
        record.remove("updatedAt");
    }
    (v["id"].as_str().unwrap().to_string(), v)
}

/// The newest cursor of the organization's feed, over every resource.
async fn newest_of_all(api: &Api) -> i64 {
    let mut last = 0;
    let mut after = "0".to_string();
    loop {
        let r = api.get(&format!("/event?after={after}&limit=1000")).await;
        assert_eq!(r.status, 200, "{r}");
        let values = r.body["values"].as_array().unwrap();
        if values.is_empty() {
            return last;
        }
        last = cursors(values).last().copied().unwrap_or(last);
        after = r.body["nextCursor"].as_str().unwrap().to_string();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_trees_are_read_in_one_snapshot_and_name_its_cursor() {
    let server = TestServer::start().await;
    let api = server.org("Trees").await;
    let empty = api.get("/deliverable/trees").await;
    assert_eq!(cursor_of(&empty), 0);
    assert_eq!(empty.body, json!({"values": [], "totalCount": 0}));

    let (orders, _, steps) = seed_trees(&api, 3, 2, 3).await;
    let loose = api
        .create("deliverable", json!({"name": "Loose", "type": "phase"}))
        .await;
    let loose = loose["id"].as_str().unwrap().to_string();
    let all = api.get("/deliverable/trees").await;
    assert_eq!(cursor_of(&all), newest_of_all(&api).await);
    let values = all.body["values"].as_array().unwrap();
    assert_eq!(all.body["totalCount"], values.len());
    assert_eq!(values.len(), 3 * (1 + 2 * 4) + 1);
    // Each root, then its subtree parents before children, as its hierarchy answers it.
    let mut at = 0;
    for root in orders.iter().chain([&loose]) {
        let tree = api.get(&format!("/deliverable/{root}/hierarchy")).await;
        assert_eq!(cursor_of(&tree), cursor_of(&all));
        let nodes = tree.body["values"].as_array().unwrap();
        assert_eq!(
            &values[at..at + nodes.len()],
            nodes.as_slice(),
            "tree {root}"
        );
        at += nodes.len();
    }
    assert_eq!(at, values.len());

    // The roots' filters and search, and the hierarchy's select.
    let only_orders = api
        .get("/deliverable/trees?type=order&select=name,parentId")
        .await;
    let values = only_orders.body["values"].as_array().unwrap();
    assert_eq!(values.len(), 27);
    assert_eq!(
        values[0],
        json!({"id": orders[0], "name": "Order 0", "parentId": null})
    );
    assert_eq!(values[1]["parentId"], json!(orders[0]));
    let searched = api.get("/deliverable/trees?search=Order%201").await;
    assert_eq!(
        ids_of(&searched.body["values"].as_array().unwrap()[..1]),
        [orders[1].clone()]
    );
    assert_eq!(searched.body["totalCount"], 9);

    // Archived nodes inside a tree are in it; an archived root's tree is left out unless asked.
    let r = api
        .patch(
            &format!("/deliverable/{}", steps[0]),
            json!({"isArchived": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let r = api
        .patch(
            &format!("/deliverable/{}", orders[2]),
            json!({"isArchived": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let now = api.get("/deliverable/trees?type=order").await;
    let values = now.body["values"].as_array().unwrap();
    assert_eq!(values.len(), 18);
    assert!(
        values
            .iter()
            .any(|v| v["id"] == json!(steps[0]) && v["isArchived"] == true)
    );
    let archived = api
        .get("/deliverable/trees?type=order&isArchived=true")
        .await;
    assert_eq!(archived.body["values"][0]["id"], json!(orders[2]));
    assert_eq!(archived.body["totalCount"], 9);
    assert_eq!(cursor_of(&now), newest_of_all(&api).await);

    // Not paged; unknown fields refused, by name.
    for (query, field) in [
        ("page=2", "page"),
        ("pageSize=10", "pageSize"),
        ("cursor=abc", "cursor"),
        ("nosuchfield=1", "nosuchfield"),
        ("select=nosuchfield", "nosuchfield"),
        ("select=", "select"),
    ] {
        let r = api.get(&format!("/deliverable/trees?{query}")).await;
        assert_error(&r, 400, "VALIDATION_ERROR");
        assert!(r.text.contains(field), "{query}: {r}");
    }
    // Another organization's trees are not there.
    let other = server.org("Other").await;
    let r = other.get("/deliverable/trees").await;
    assert_eq!(r.body["totalCount"], 0, "{r}");
    assert_error(
        &other
            .get(&format!("/deliverable/{}/hierarchy", orders[0]))
            .await,
        404,
        "NOT_FOUND",
    );
}

/// Writers add, rename, archive and restore steps (through every server) while the trees are
/// read; the trees and the events after their cursor give exactly the trees as they end, in
/// every field a record keeps of its own (the CSV export's columns).
async fn trees_under_writers(servers: &[&TestServer], orders: usize, steps: usize, writers: usize) {
    let api = servers[0].org("Trees under writers").await;
    let started = Instant::now();
    let (_, phases, step_ids) = seed_trees(&api, orders, 10, steps).await;
    let seeded = started.elapsed();
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicUsize::new(0));
    let (phases, step_ids) = (Arc::new(phases), Arc::new(step_ids));
    let tasks: Vec<_> = (0..writers)
        .map(|w| {
            let api = api.on(servers[w % servers.len()]);
            let (phases, step_ids) = (phases.clone(), step_ids.clone());
            let (stop, done) = (stop.clone(), done.clone());
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
                    let step = &step_ids[next(step_ids.len() as u64) as usize];
                    let path = format!("/deliverable/{step}");
                    let resp = match next(4) {
                        0 => {
                            let phase = &phases[next(phases.len() as u64) as usize];
                            api.post(
                                "/deliverable",
                                json!({"name": format!("new {w}-{n}"), "type": "step", "parentId": phase}),
                            )
                            .await
                        }
                        1 => api.patch(&path, json!({"name": format!("renamed {w}-{n}")})).await,
                        2 => api.patch(&path, json!({"isArchived": true})).await,
                        _ => api.patch(&path, json!({"isArchived": false})).await,
                    };
                    assert!(resp.status == 200 || resp.status == 201, "{resp}");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    while done.load(Ordering::Relaxed) < writers * 2 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let before = done.load(Ordering::Relaxed);
    let export_started = Instant::now();
    let export = api.get("/deliverable/trees").await;
    let exported_in = export_started.elapsed();
    let during = done.load(Ordering::Relaxed) - before;
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
    // Replay: every event's record replaces the row (archived steps stay in their trees).
    let mut state = own_fields(exported);
    for e in events_after(&api, cursor, "deliverable").await {
        let (id, data) = own(&e["data"]);
        if e["type"] == "deliverable.created" {
            assert!(
                !state.contains_key(&id),
                "created after the cursor, yet exported: {e}"
            );
        }
        state.insert(id, data);
    }
    let fin = api.get("/deliverable/trees").await;
    let fin = own_fields(fin.body["values"].as_array().unwrap());
    assert_eq!(state.len(), fin.len());
    for (id, record) in &fin {
        assert_eq!(state.get(id), Some(record), "deliverable {id}");
    }
    eprintln!(
        "trees under writers: seeded in {seeded:?}; {} nodes exported in {exported_in:?} with \
         {during} writes meanwhile, {} after; {:?} in all",
        exported.len(),
        done.load(Ordering::Relaxed) - before - during,
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn trees_and_the_events_after_their_cursor_give_the_final_trees_under_writers() {
    let server = TestServer::start_with(|c| c.rate_limit = 1_000_000).await;
    trees_under_writers(&[&server], 10, 100, 8).await;
}

/// Two server processes on one PostgreSQL, the writers going through both.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_servers_trees_under_8_writers() {
    if !on_postgres() {
        return; // Two processes sharing one database is the PostgreSQL deployment.
    }
    let server = TestServer::start_with(|c| c.rate_limit = 1_000_000).await;
    let replica = server.another_with(|c| c.rate_limit = 1_000_000).await;
    trees_under_writers(&[&server, &replica], 10, 200, 8).await;
}
