//! The change feed (docs/events.md): every write as one event in its own transaction, read by
//! cursor in commit order without gaps, filtered, within the key's permissions, with long
//! polling; nothing announced for a write that failed.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use prodops_tests::*;
use serde_json::Value;

use crate::deliverable::{D, node};

/// Every event after `after` (following `nextCursor` page by page).
async fn feed(api: &Api, query: &str) -> Vec<Value> {
    let mut after = "0".to_string();
    let mut all = Vec::new();
    loop {
        let r = api
            .get(&format!("/event?after={after}&limit=1000{query}"))
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

fn types(events: &[Value]) -> Vec<&str> {
    events.iter().map(|e| e["type"].as_str().unwrap()).collect()
}

fn cursors(events: &[Value]) -> Vec<i64> {
    events
        .iter()
        .map(|e| e["cursor"].as_str().unwrap().parse().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_is_one_event_with_its_record_and_request() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let r = api
        .req(reqwest::Method::POST, "/worker")
        .json(json!({"name": "Ann"}))
        .request_id("req-create-ann")
        .send()
        .await;
    assert_eq!(r.status, 201, "{r}");
    let ann = r.id();
    let r = api
        .patch(&format!("/worker/{ann}"), json!({"name": "Anna"}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    // A change to nothing writes nothing, and announces nothing.
    let r = api
        .patch(&format!("/worker/{ann}"), json!({"name": "Anna"}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let r = api
        .patch(&format!("/worker/{ann}"), json!({"isArchived": true}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let r = api
        .patch(&format!("/worker/{ann}"), json!({"isArchived": false}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    let note = api.create("note", json!({"body": "hello"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(api.delete(&format!("/note/{note}")).await.status, 204);
    let bulk = api
        .bulk_put(
            "worker",
            (0..3).map(|i| json!({"name": format!("W{i}")})).collect(),
        )
        .await;
    // An action: progress on a deliverable.
    let o = node(&api, "O", "order", None).await;
    let r = api
        .post(
            &format!("/{D}/root/{o}/progress/{o}"),
            json!({"type": "complete"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");

    let events = feed(&api, "").await;
    let got = types(&events);
    assert_eq!(
        &got[..9],
        [
            "worker.created",
            "worker.updated",
            "worker.archived",
            "worker.restored",
            "note.created",
            "note.deleted",
            "worker.created",
            "worker.created",
            "worker.created",
        ],
        "{events:#?}"
    );
    assert!(got[9..].contains(&"deliverable.created"), "{got:?}");
    assert_eq!(got.last(), Some(&"deliverable.progress.done"), "{got:?}");
    // Cursors count up from 1 without a gap.
    assert_eq!(
        cursors(&events),
        (1..=events.len() as i64).collect::<Vec<_>>()
    );
    let created = &events[0];
    assert_eq!(created["recordId"], json!(ann));
    assert_eq!(created["resource"], "worker");
    assert_eq!(created["requestId"], "req-create-ann");
    assert!(created["keyId"].is_string());
    assert_eq!(created["data"]["name"], "Ann");
    assert_eq!(created["changed"], Value::Null);
    let updated = &events[1];
    assert_eq!(updated["data"]["name"], "Anna");
    assert_eq!(updated["changed"], json!(["name"]));
    assert_eq!(
        events[5]["data"]["body"], "hello",
        "a deletion carries the record as it was"
    );
    let bulk_ids: Vec<&str> = events[6..9]
        .iter()
        .map(|e| e["recordId"].as_str().unwrap())
        .collect();
    assert_eq!(
        bulk_ids,
        bulk.iter().map(String::as_str).collect::<Vec<_>>()
    );
    assert_eq!(events[6]["data"]["name"], "W0");
    let ids: HashSet<&str> = events.iter().map(|e| e["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), events.len(), "event ids are unique");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_fails_announces_nothing() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let w = api.create("worker", json!({"name": "Ann"})).await;
    let before = feed(&api, "").await.len();
    // Refused by a rule; a bulk call with one bad record (the good ones are rolled back too);
    // a bulk call whose second record clashes with the first's id.
    assert_eq!(api.post("/worker", json!({})).await.status, 400);
    let r = api
        .put("/worker/bulk", json!([{"name": "ok"}, {"name": ""}]))
        .await;
    assert_eq!(r.status, 400, "{r}");
    let id = uuid::Uuid::now_v7().to_string();
    let r = api
        .put(
            "/worker/bulk",
            json!([{"id": id, "name": "x"}, {"name": "y", "id": w["id"], "customerIdentifier": 5}]),
        )
        .await;
    assert_eq!(r.status, 400, "{r}");
    assert_eq!(feed(&api, "").await.len(), before);
    assert_eq!(api.get(&format!("/worker/{id}")).await.status, 404);
    // Another organization's feed is its own.
    let other = server.org("Other").await;
    assert!(feed(&other, "").await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filters_audit_trail_and_permissions() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let ann = api.create("worker", json!({"name": "Ann"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let bob = api.create("worker", json!({"name": "Bob"})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    api.patch(&format!("/worker/{ann}"), json!({"isArchived": true}))
        .await;
    api.create("note", json!({"body": "n"})).await;

    let archived = feed(&api, "&type=worker.archived").await;
    assert_eq!(types(&archived), ["worker.archived"]);
    let workers = feed(&api, "&type=worker.*").await;
    assert_eq!(workers.len(), 3);
    let notes = feed(&api, "&resource=note").await;
    assert_eq!(types(&notes), ["note.created"]);
    let trail = feed(&api, &format!("&recordId={ann}")).await;
    assert_eq!(types(&trail), ["worker.created", "worker.archived"]);
    assert!(
        feed(&api, &format!("&recordId={bob}&type=worker.archived"))
            .await
            .is_empty()
    );
    // A page: `limit`, and `nextCursor` to go on from.
    let r = api.get("/event?limit=2").await;
    assert_eq!(r.body["values"].as_array().unwrap().len(), 2);
    assert_eq!(r.body["nextCursor"], "2");
    let r = api.get("/event?after=2").await;
    assert_eq!(cursors(r.body["values"].as_array().unwrap()), [3, 4]);
    // Past the end: an empty page that keeps the cursor.
    let r = api.get("/event?after=99").await;
    assert_eq!(r.body, json!({"values": [], "nextCursor": "99"}));

    // A key that reads workers only sees worker events, and may not ask for notes.
    let (reader, _) = server.key(&api, false, &["Worker.Read"]).await;
    let seen = feed(&reader, "").await;
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|e| e["resource"] == "worker"));
    let r = reader.get("/event?resource=note").await;
    assert_eq!(r.status, 403, "{r}");
    // A key that may only create notes reads no resource, so no event.
    let (writer, _) = server.key(&api, false, &["Note.Create"]).await;
    assert!(feed(&writer, "").await.is_empty());

    for (query, field) in [
        ("after=x", "after"),
        ("after=-1", "after"),
        ("limit=0", "limit"),
        ("wait=31", "wait"),
        ("resource=nope", "resource"),
        ("recordId=x", "recordId"),
        ("type=worker*", "type"),
        ("colour=red", "colour"),
    ] {
        assert_validation_names(&api.get(&format!("/event?{query}")).await, field);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_reader_gets_an_event_as_soon_as_it_commits() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    // Nothing happens: the wait runs out, and the cursor stays.
    let started = Instant::now();
    let r = api.get("/event?wait=1").await;
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(r.body, json!({"values": [], "nextCursor": "0"}));

    // Through another server on the same database, as another replica would commit it.
    let replica = server.another().await;
    let writer = api.on(&replica);
    let waiting = {
        let api = api.clone();
        tokio::spawn(async move {
            let started = Instant::now();
            let r = api.get("/event?wait=20").await;
            (r, started.elapsed())
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let w = writer.create("worker", json!({"name": "Ann"})).await;
    let (r, took) = waiting.await.unwrap();
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(
        types(r.body["values"].as_array().unwrap()),
        ["worker.created"]
    );
    assert_eq!(r.body["values"][0]["recordId"], w["id"]);
    assert!(took < Duration::from_secs(10), "answered after {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_writers_on_two_servers_make_a_gap_free_feed_a_follower_reads_whole() {
    let server = TestServer::start().await;
    let replica = server.another().await;
    let api = server.org("Acme").await;
    const WRITERS: usize = 8;
    const EACH: usize = 10;
    // A follower reading while the writers write: it must see every event once, in order.
    let follower = {
        let api = api.clone();
        tokio::spawn(async move {
            let mut after = "0".to_string();
            let mut seen = Vec::new();
            let until = Instant::now() + Duration::from_secs(300);
            while seen.len() < WRITERS * EACH && Instant::now() < until {
                let r = api.get(&format!("/event?after={after}&wait=2")).await;
                assert_eq!(r.status, 200, "{r}");
                seen.extend(r.body["values"].as_array().unwrap().iter().cloned());
                after = r.body["nextCursor"].as_str().unwrap().to_string();
            }
            seen
        })
    };
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let api = if w % 2 == 0 {
            api.clone()
        } else {
            api.on(&replica)
        };
        tasks.push(tokio::spawn(async move {
            let mut ids = Vec::new();
            for i in 0..EACH {
                let r = api
                    .post("/worker", json!({"name": format!("W{w}-{i}")}))
                    .await;
                assert_eq!(r.status, 201, "{r}");
                ids.push(r.id());
            }
            ids
        }));
    }
    let mut written = HashSet::new();
    for t in tasks {
        written.extend(t.await.unwrap());
    }
    let seen = follower.await.unwrap();
    let all = feed(&api, "").await;
    assert_eq!(all.len(), WRITERS * EACH, "exactly one event per change");
    assert_eq!(cursors(&all), (1..=all.len() as i64).collect::<Vec<_>>());
    let announced: HashSet<String> = all
        .iter()
        .map(|e| e["recordId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(announced, written);
    assert_eq!(
        cursors(&seen),
        cursors(&all),
        "the follower skipped or repeated nothing"
    );
}

/// The events of `record`, oldest first.
async fn trail(api: &Api, record: &str) -> Vec<Value> {
    feed(api, &format!("&recordId={record}")).await
}

/// Bulk-created records' creation events are stored without a copy of the text while the
/// record holds it (store/events.rs); they still carry the text right after the creation once
/// the record is changed or removed, by one record or by a bulk call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_created_records_keep_their_created_text_in_the_feed() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let workers = api
        .bulk_put(
            "worker",
            (0..4)
                .map(|i| json!({"name": format!("W{i}"), "unionCode": "U1"}))
                .collect(),
        )
        .await;
    let created: Vec<Value> = {
        let mut v = Vec::new();
        for w in &workers {
            v.push(api.read("worker", w).await);
        }
        v
    };
    // Unchanged: the creation event is the record.
    let t = trail(&api, &workers[0]).await;
    assert_eq!(types(&t), ["worker.created"]);
    assert_eq!(t[0]["data"], created[0]);
    // One update, then archive and restore.
    let r = api
        .patch(
            &format!("/worker/{}", workers[1]),
            json!({"name": "Renamed"}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let r = api
        .patch(
            &format!("/worker/{}", workers[1]),
            json!({"isArchived": true}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let t = trail(&api, &workers[1]).await;
    assert_eq!(
        types(&t),
        ["worker.created", "worker.updated", "worker.archived"]
    );
    assert_eq!(
        t[0]["data"], created[1],
        "the text right after the creation"
    );
    assert_eq!(t[1]["data"]["name"], "Renamed");
    assert_eq!(t[2]["data"]["isArchived"], true);
    // A bulk PATCH over several, and a bulk PUT updating one by id.
    let r = api
        .patch("/worker/bulk?unionCode=U1", json!({"unionCode": "U2"}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["count"], 3, "{r}");
    api.bulk_put(
        "worker",
        vec![json!({"id": workers[3], "name": "W3 again"})],
    )
    .await;
    for (i, w) in workers.iter().enumerate() {
        let t = trail(&api, w).await;
        assert_eq!(t[0]["type"], "worker.created", "{t:#?}");
        assert_eq!(t[0]["data"], created[i], "worker {i}: {t:#?}");
    }
    let t = trail(&api, &workers[3]).await;
    assert_eq!(t.last().unwrap()["data"]["name"], "W3 again");
    assert_eq!(t.last().unwrap()["data"]["unionCode"], "U2");

    // Removed, one and by a bulk DELETE: the creation event keeps the text, the deletion
    // carries the record as it was.
    let notes = api
        .bulk_put(
            "note",
            (0..3)
                .map(|i| json!({"body": format!("note {i}")}))
                .collect(),
        )
        .await;
    let first = api.read("note", &notes[0]).await;
    assert_eq!(api.delete(&format!("/note/{}", notes[0])).await.status, 204);
    let t = trail(&api, &notes[0]).await;
    assert_eq!(types(&t), ["note.created", "note.deleted"]);
    assert_eq!(t[0]["data"], first);
    assert_eq!(t[1]["data"], first);
    let rest = [
        api.read("note", &notes[1]).await,
        api.read("note", &notes[2]).await,
    ];
    let r = api.delete("/note/bulk?search=note").await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["count"], 2, "{r}");
    for (i, n) in notes[1..].iter().enumerate() {
        let t = trail(&api, n).await;
        assert_eq!(types(&t), ["note.created", "note.deleted"]);
        assert_eq!(t[0]["data"], rest[i]);
        assert_eq!(t[1]["data"], rest[i]);
    }
}

/// A record a bulk call creates and then changes again before its transaction ends keeps its
/// own creation text: the events are appended at the end, after the change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_created_and_changed_in_one_bulk_call_keeps_the_created_text() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    // Twice: the server's first write (on SQLite the records are read back) and a later one
    // (on SQLite the writer's record of touched records is what tells).
    for round in 0..2 {
        let id = uuid::Uuid::now_v7().to_string();
        let r = api
            .put(
                "/worker/bulk",
                json!([
                    {"id": id, "name": "First"},
                    {"name": "Other"},
                    {"id": id, "name": "Second"}
                ]),
            )
            .await;
        if r.status != 200 {
            // The bulk call refuses an id twice: nothing to check.
            assert_eq!(r.status, 400, "{r}");
            return;
        }
        let t = trail(&api, &id).await;
        assert_eq!(
            types(&t),
            ["worker.created", "worker.updated"],
            "round {round}: {t:#?}"
        );
        assert_eq!(t[0]["data"]["name"], "First", "round {round}");
        assert_eq!(t[1]["data"]["name"], "Second", "round {round}");
        assert_eq!(api.read("worker", &id).await["name"], "Second");
    }
}

/// On SQLite a bulk call's creation events are found through their records' rowids
/// (store/event_links.rs); rowids freed by a deletion are handed out again. Whatever the
/// database: a record created in the place of a removed one, and its neighbours, keep their
/// own creation text through later changes, and each trail holds only its own record's events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_created_where_removed_ones_were_keep_their_own_creation_events() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let body = |i: usize| json!({"body": format!("note {i}")});
    let first = api.bulk_put("note", (0..3).map(body).collect()).await;
    let first_text: Vec<Value> = {
        let mut v = Vec::new();
        for n in &first {
            v.push(api.read("note", n).await);
        }
        v
    };
    // The newest goes (its rowid is the next one handed out), then two more come in one call.
    assert_eq!(api.delete(&format!("/note/{}", first[2])).await.status, 204);
    let second = api.bulk_put("note", (3..5).map(body).collect()).await;
    let second_text = [
        api.read("note", &second[0]).await,
        api.read("note", &second[1]).await,
    ];
    // Every record changes once.
    for n in first[..2].iter().chain(&second) {
        let r = api
            .patch(
                &format!("/note/{n}"),
                json!({"body": format!("changed {n}")}),
            )
            .await;
        assert_eq!(r.status, 200, "{r}");
    }
    for (n, created) in first[..2]
        .iter()
        .zip(&first_text)
        .chain(second.iter().zip(&second_text))
    {
        let t = trail(&api, n).await;
        assert_eq!(types(&t), ["note.created", "note.updated"], "{n}: {t:#?}");
        assert_eq!(&t[0]["data"], created, "{n}");
        assert_eq!(t[1]["data"]["body"], format!("changed {n}"));
        assert!(t.iter().all(|e| e["recordId"] == json!(n)));
    }
    let t = trail(&api, &first[2]).await;
    assert_eq!(types(&t), ["note.created", "note.deleted"], "{t:#?}");
    assert_eq!(t[0]["data"], first_text[2]);
    assert_eq!(t[1]["data"], first_text[2]);
    // The whole feed: one event per change, each creation with its own text.
    let all = feed(&api, "&resource=note").await;
    assert_eq!(all.len(), 5 + 1 + 4);
    let created: Vec<&Value> = all.iter().filter(|e| e["type"] == "note.created").collect();
    for (e, want) in created.iter().zip(first_text.iter().chain(&second_text)) {
        assert_eq!(&e["data"], want);
    }
}

/// A bulk import of thousands of records in several calls, then a bulk change of all of them:
/// every creation event still carries the text right after the creation (on SQLite through
/// one link per call and the triggers that copy the text in, store/event_links.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_bulk_created_records_keep_their_creation_text_through_a_bulk_change() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    const CALLS: usize = 3;
    const EACH: usize = 1_500;
    let mut ids = Vec::new();
    for c in 0..CALLS {
        ids.extend(
            api.bulk_put(
                "worker",
                (0..EACH)
                    .map(|i| json!({"name": format!("W{c}-{i}"), "unionCode": "U1"}))
                    .collect(),
            )
            .await,
        );
    }
    let r = api
        .patch("/worker/bulk?unionCode=U1", json!({"unionCode": "U2"}))
        .await;
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(r.body["count"], CALLS * EACH, "{r}");
    let all = feed(&api, "&resource=worker").await;
    let created: Vec<&Value> = all
        .iter()
        .filter(|e| e["type"] == "worker.created")
        .collect();
    assert_eq!(created.len(), CALLS * EACH);
    for (e, id) in created.iter().zip(&ids) {
        assert_eq!(e["recordId"], json!(id));
        assert_eq!(e["data"]["unionCode"], "U1", "{e}");
    }
    // A few trails, across the calls.
    for id in [&ids[0], &ids[EACH - 1], &ids[EACH], &ids[CALLS * EACH - 1]] {
        let t = trail(&api, id).await;
        assert_eq!(types(&t), ["worker.created", "worker.updated"], "{t:#?}");
        assert_eq!(t[0]["data"]["unionCode"], "U1");
        assert_eq!(t[1]["data"]["unionCode"], "U2");
    }
}
