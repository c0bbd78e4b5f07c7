//! Bulk PUT works per batch where it can (one id lookup per chunk, plain creates checked
//! straight into core's types and written with multi-row inserts; `engine/bulk.rs`). These
//! tests hold it to the semantics of upserting the records one by one, in order: mixed creates
//! and updates, an id twice in one batch, unique key clashes named by index, a bad row in a
//! large batch writing nothing, exact totals, re-imports writing nothing, and random batches
//! compared with the same records sent one request at a time.

use std::collections::HashSet;

use prodops_tests::*;
use serde_json::Value;
use uuid::Uuid;

fn ids(resp: &Resp) -> Vec<String> {
    resp.body["ids"]
        .as_array()
        .unwrap_or_else(|| panic!("ids: {resp}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn indices(details: &[Value]) -> HashSet<u64> {
    details.iter().filter_map(|d| d["index"].as_u64()).collect()
}

/// `totalCount` (kept by triggers) agrees with the rows and with a scanning count.
async fn assert_totals_exact(api: &Api, resource: &str) {
    for query in ["", "isArchived=true", "isArchived=false"] {
        let kept = api.list_total(resource, query).await;
        let scan = if query.is_empty() {
            "search=".to_string()
        } else {
            format!("{query}&search=")
        };
        assert_eq!(
            kept,
            api.count(resource, &scan).await,
            "{resource} {query}: kept total against a scan"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mixed_batch_creates_and_updates_in_input_order() {
    let server = TestServer::start().await;
    let api = server.org("Mixed").await;
    let a = api.create("worker", json!({"name": "A"})).await;
    let b = api
        .create("worker", json!({"name": "B", "status": "inactive"}))
        .await;
    let (a_id, b_id) = (a["id"].as_str().unwrap(), b["id"].as_str().unwrap());
    let fresh = Uuid::new_v4().to_string();
    let resp = api
        .put(
            "/worker/bulk",
            json!([
                {"name": "New 1"},
                {"id": a_id, "name": "A renamed"},
                {"id": fresh, "name": "Chosen id", "customerIdentifier": "C1"},
                {"id": b_id, "name": "B", "status": "inactive"},
                {"name": "New 2", "exemptFromAssignments": true, "createdAt": "2001-01-01T00:00:00Z", "organizationId": Uuid::nil()}
            ]),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let got = ids(&resp);
    assert_eq!(got.len(), 5);
    assert_eq!(got[1], a_id);
    assert_eq!(got[2], fresh, "a client-chosen id is kept");
    assert_eq!(got[3], b_id);
    assert_eq!(api.read("worker", a_id).await["name"], "A renamed");
    assert_eq!(
        api.read("worker", b_id).await,
        b,
        "an update that changes nothing writes nothing"
    );
    let chosen = api.read("worker", &fresh).await;
    assert_eq!(chosen["customerIdentifier"], "C1");
    assert_eq!(chosen["teamId"], Value::Null, "defaults are filled");
    let second = api.read("worker", &got[4]).await;
    assert_eq!(second["exemptFromAssignments"], true);
    assert_ne!(
        second["createdAt"], "2001-01-01T00:00:00Z",
        "read-only fields are ignored"
    );
    assert_eq!(second["organizationId"], a["organizationId"]);
    assert_eq!(second["createdAt"], second["updatedAt"]);
    let first = api.read("worker", &got[0]).await;
    assert_eq!(
        first["createdAt"], second["createdAt"],
        "one clock per request"
    );
    assert_eq!(api.total("worker").await, 5);
    assert_totals_exact(&api, "worker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_twice_in_one_batch_is_created_then_updated() {
    let server = TestServer::start().await;
    let api = server.org("Twice").await;
    let x = Uuid::new_v4().to_string();
    let resp = api
        .put(
            "/worker/bulk",
            json!([
                {"id": x, "name": "First", "unionCode": "U1"},
                {"name": "Between"},
                {"id": x, "status": "terminated"},
                {"id": x.to_uppercase(), "name": "Third"}
            ]),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        ids(&resp),
        [x.clone(), ids(&resp)[1].clone(), x.clone(), x.clone()]
    );
    let w = api.read("worker", &x).await;
    assert_eq!(w["name"], "Third", "the later rows see the earlier ones");
    assert_eq!(w["status"], "terminated");
    assert_eq!(w["unionCode"], "U1", "an update merges like PATCH");
    assert_eq!(api.total("worker").await, 2);

    // An id stored before the batch, twice.
    let resp = api
        .put(
            "/worker/bulk",
            json!([{"id": x, "name": "Fourth"}, {"id": x, "unionCode": null}]),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let w = api.read("worker", &x).await;
    assert_eq!(
        (w["name"].as_str(), w["unionCode"].is_null()),
        (Some("Fourth"), true)
    );
    assert_eq!(api.total("worker").await, 2);
    assert_totals_exact(&api, "worker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unique_key_clashes_name_their_record_and_write_nothing() {
    let server = TestServer::start().await;
    let api = server.org("Unique").await;
    const R: &str = "custom-property";
    let def = |key: &str, name: &str| json!({"key": key, "name": name, "dataType": "text"});
    api.create(R, def("stored", "Stored")).await;

    // Against a stored record (keys compare case-insensitively).
    let resp = api
        .put(
            &format!("/{R}/bulk"),
            json!([
                def("k1", "One"),
                def("k2", "Two"),
                def("STORED", "Other"),
                def("k3", "Three")
            ]),
        )
        .await;
    let details = assert_error_details(&resp, 409, "CONFLICT");
    assert_eq!(indices(&details), HashSet::from([2]), "{resp}");
    assert!(
        resp.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("custom property with this key already exists")
    );
    assert_eq!(api.total(R).await, 1, "nothing written");

    // Within the batch: the second of the two is named.
    let resp = api
        .put(
            &format!("/{R}/bulk"),
            json!([def("a", "A"), def("b", "B"), def("c", "C"), def("B", "B2")]),
        )
        .await;
    let details = assert_error_details(&resp, 409, "CONFLICT");
    assert_eq!(indices(&details), HashSet::from([3]), "{resp}");
    assert_eq!(api.total(R).await, 1);

    // A clash stops the batch even after an invalid record, as in the one-by-one order.
    let resp = api
        .put(
            &format!("/{R}/bulk"),
            json!([{"key": "bad", "name": "Bad", "dataType": "colour"}, def("d", "D"), def("e", "Stored")]),
        )
        .await;
    let details = assert_error_details(&resp, 409, "CONFLICT");
    assert_eq!(indices(&details), HashSet::from([2]), "{resp}");
    assert!(
        resp.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("active custom property with this name")
    );
    assert_eq!(api.total(R).await, 1);

    // A name is free again once archived; an archived create keeps its archivedAt.
    let ids = api
        .bulk_put(
            R,
            vec![
                json!({"key": "old", "name": "Reused", "dataType": "text", "isArchived": true}),
                def("new", "Reused"),
            ],
        )
        .await;
    let old = api.read(R, &ids[0]).await;
    assert_eq!(old["isArchived"], true);
    assert_eq!(old["archivedAt"], old["createdAt"]);
    assert_eq!(api.read(R, &ids[1]).await["archivedAt"], Value::Null);
    assert_totals_exact(&api, R).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_row_in_a_large_batch_writes_nothing_and_is_named() {
    let server = TestServer::start().await;
    let api = server.org("Large").await;
    let existing = api.create("worker", json!({"name": "Keep"})).await;
    let eid = existing["id"].as_str().unwrap();
    let mut rows: Vec<Value> = (0..3000)
        .map(|i| json!({"name": format!("W{i:04}"), "customerIdentifier": format!("E{i}")}))
        .collect();
    rows[700] = json!({"id": eid, "name": "Would change"});
    rows[1234] = json!({"name": 5});
    rows[2345] = json!({"name": "   "});
    rows[2999] = json!({"name": "Last", "status": "retired"});
    let resp = api.put("/worker/bulk", Value::Array(rows)).await;
    let details = assert_error_details(&resp, 400, "VALIDATION_ERROR");
    assert_eq!(
        indices(&details),
        HashSet::from([1234, 2345, 2999]),
        "{resp}"
    );
    assert!(
        details
            .iter()
            .any(|d| d["index"] == 2345 && d["field"] == "name"),
        "{resp}"
    );
    assert!(
        resp.body["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("the batch was rejected and nothing was written")
    );
    assert_eq!(api.total("worker").await, 1, "nothing written");
    assert_eq!(api.read("worker", eid).await, existing);
    assert_totals_exact(&api, "worker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn totals_are_exact_after_bulk_creates() {
    let server = TestServer::start().await;
    let api = server.org("Totals").await;
    let other = server.org("Other").await;
    other
        .bulk_put("worker", vec![json!({"name": "Elsewhere"})])
        .await;
    // Archived workers take the one-by-one path (their hooks), the rest are batched: the
    // two interleave.
    let rows: Vec<Value> = (0..1500)
        .map(|i| json!({"name": format!("T{i}"), "isArchived": i % 7 == 0}))
        .collect();
    let ids = api.bulk_put("worker", rows).await;
    assert_eq!(
        ids.iter().collect::<HashSet<_>>().len(),
        1500,
        "distinct ids"
    );
    let archived = (0..1500).filter(|i| i % 7 == 0).count() as u64;
    assert_eq!(api.list_total("worker", "isArchived=true").await, archived);
    assert_eq!(
        api.list_total("worker", "").await,
        1500 - archived,
        "lists show active workers"
    );
    assert_totals_exact(&api, "worker").await;
    assert_eq!(other.total("worker").await, 1);
    let vendors: Vec<Value> = (0..600)
        .map(|i| json!({"name": format!("V{i}"), "isArchived": i % 3 == 0}))
        .collect();
    api.bulk_put("vendor", vendors).await;
    assert_eq!(api.list_total("vendor", "isArchived=true").await, 200);
    assert_totals_exact(&api, "vendor").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_re_import_writes_nothing() {
    let server = TestServer::start().await;
    let api = server.org("Again").await;
    let rows: Vec<Value> = (0..400)
        .map(|i| {
            json!({"id": Uuid::new_v4(), "name": format!(" R{i} "), "status": "inactive",
                   "isArchived": i % 50 == 0, "unionCode": if i % 2 == 0 { json!("U") } else { Value::Null }})
        })
        .collect();
    let ids = api.bulk_put("worker", rows.clone()).await;
    let before = api.list("worker", "pageSize=10000").await;
    let archived_before = api.list("worker", "isArchived=true&pageSize=10000").await;
    assert_eq!(before.len() + archived_before.len(), 400);
    assert!(
        before
            .iter()
            .all(|w| !w["name"].as_str().unwrap().starts_with(' ')),
        "names are stored trimmed, so the re-import's untrimmed names are no change"
    );
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    assert_eq!(api.bulk_put("worker", rows).await, ids);
    assert_eq!(
        api.list("worker", "pageSize=10000").await,
        before,
        "updatedAt unchanged"
    );
    assert_eq!(
        api.list("worker", "isArchived=true&pageSize=10000").await,
        archived_before
    );
    assert_totals_exact(&api, "worker").await;
}

/// A small deterministic generator (xorshift), so a failing case can be replayed.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// One random record of a batch over a small pool of ids.
fn random_row(rng: &mut Rng, pool: &[String]) -> Value {
    let mut row = serde_json::Map::new();
    match rng.below(4) {
        0 => {}
        _ => {
            row.insert(
                "id".into(),
                json!(pool[rng.below(pool.len() as u64) as usize]),
            );
        }
    }
    if rng.below(3) > 0 {
        row.insert("name".into(), json!(format!("N{}", rng.below(6))));
    }
    match rng.below(10) {
        0 => {
            row.insert("isArchived".into(), json!(true));
        }
        1 => {
            row.insert("isArchived".into(), json!(false));
        }
        2 => {
            row.insert("status".into(), json!("terminated"));
        }
        3 => {
            row.insert("unionCode".into(), json!(format!("U{}", rng.below(3))));
        }
        _ => {}
    }
    if rng.below(25) == 0 {
        row.insert("name".into(), json!(7));
    }
    Value::Object(row)
}

/// The workers of an organization by id, without the fields that differ between two
/// organizations fed the same records.
async fn state(api: &Api) -> Vec<(String, Value)> {
    let mut all = api.list("worker", "pageSize=10000").await;
    all.extend(api.list("worker", "isArchived=true&pageSize=10000").await);
    let mut out: Vec<(String, Value)> = all
        .into_iter()
        .map(|mut w| {
            let o = w.as_object_mut().unwrap();
            for f in ["organizationId", "createdAt", "updatedAt"] {
                o.remove(f);
            }
            // Records created without an id get a new one: compare them by name.
            (o["id"].as_str().unwrap().to_string(), w)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_batches_match_the_records_sent_one_at_a_time() {
    let server = TestServer::start().await;
    for seed in 1..=24u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let batched = server.org(&format!("Batched {seed}")).await;
        let single = server.org(&format!("Single {seed}")).await;
        let pool: Vec<String> = (0..6).map(|_| Uuid::new_v4().to_string()).collect();
        // Some of the pool is stored beforehand, the same in both organizations.
        for id in &pool[..3] {
            let body = json!({"id": id, "name": format!("Pre {}", &id[..4])});
            batched.create("worker", body.clone()).await;
            single.create("worker", body).await;
        }
        let rows: Vec<Value> = (0..2 + rng.below(30))
            .map(|_| random_row(&mut rng, &pool))
            .collect();
        // The reference: each record through POST (new) or PATCH (stored), in order.
        let mut failed = Vec::new();
        let mut single_ids = Vec::new();
        for (i, row) in rows.iter().enumerate() {
            let id = row.get("id").and_then(Value::as_str);
            let exists = match id {
                Some(id) => single.get(&format!("/worker/{id}")).await.status == 200,
                None => false,
            };
            let resp = match (id, exists) {
                (Some(id), true) => single.patch(&format!("/worker/{id}"), row.clone()).await,
                _ => single.post("/worker", row.clone()).await,
            };
            if resp.status >= 300 {
                failed.push((i as u64, resp.status));
            } else {
                single_ids.push(resp.body["id"].as_str().unwrap().to_string());
            }
        }
        let before = state(&batched).await;
        let resp = batched
            .put("/worker/bulk", Value::Array(rows.clone()))
            .await;
        if failed.is_empty() {
            assert_eq!(resp.status, 200, "seed {seed}: {resp}");
            let got = ids(&resp);
            // Ids the client chose are the same in both; new ones differ, and are renamed
            // before comparing.
            let rename = |s: Vec<(String, Value)>, ids: &[String]| -> Vec<Value> {
                let chosen: HashSet<&String> = pool.iter().collect();
                let mut out: Vec<Value> = s
                    .into_iter()
                    .map(|(id, mut w)| {
                        if !chosen.contains(&id) {
                            let at = ids.iter().position(|x| *x == id).unwrap();
                            w["id"] = json!(format!("new-{at}"));
                        }
                        w
                    })
                    .collect();
                out.sort_by_key(|w| w["id"].to_string());
                out
            };
            assert_eq!(
                rename(state(&batched).await, &got),
                rename(state(&single).await, &single_ids),
                "seed {seed}: {rows:?}"
            );
        } else {
            assert!(
                resp.status == 400 || resp.status == 409,
                "seed {seed}: {resp}"
            );
            let named = indices(
                &resp.body["error"]["details"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default(),
            );
            // A record its stored state refuses (409, an archived worker's change) ends the
            // batch there, and the answer names it alone; otherwise every invalid record.
            let expected: HashSet<u64> = match failed.iter().find(|(_, s)| *s == 409) {
                Some((conflict, _)) => HashSet::from([*conflict]),
                None => failed.iter().map(|(i, _)| *i).collect(),
            };
            assert_eq!(
                named, expected,
                "seed {seed}: every failing record is named: {resp}"
            );
            assert_eq!(
                state(&batched).await,
                before,
                "seed {seed}: nothing written"
            );
        }
        assert_totals_exact(&batched, "worker").await;
    }
}
