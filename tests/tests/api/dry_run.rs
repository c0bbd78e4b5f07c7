//! Dry runs (`?dryRun=true`, docs/api.md "Dry runs"): every standard write and every writing
//! action runs, rolls back, and answers what it would have written (`{dryRun, answer, ledger,
//! events}`) with `Prodops-Dry-Run: true`. Afterwards the organization's rows in every table of
//! the database are as they were, the event feed too, and the idempotency key is still free.

use prodops_server::store::{Dialect, SqlValue, Store, StoreError};
use prodops_tests::*;
use reqwest::Method;
use serde_json::Value;
use uuid::Uuid;

use crate::inventory_support::Floor;

/// Every row of the organization, in every table with an `organization_id`, as text, sorted:
/// what a dry run must leave exactly as it was.
async fn rows_of(server: &TestServer, org: Uuid) -> Vec<String> {
    let store = Store::open(server.database_url()).await.expect("open");
    store
        .read(move |tx| {
            let tables_sql = match tx.dialect() {
                Dialect::Sqlite => {
                    "SELECT m.name FROM sqlite_master m, pragma_table_info(m.name) p \
                     WHERE m.type = 'table' AND p.name = 'organization_id' ORDER BY m.name"
                }
                Dialect::Postgres => {
                    "SELECT table_name::text FROM information_schema.columns \
                     WHERE column_name = 'organization_id' AND table_schema = current_schema() \
                     ORDER BY 1"
                }
            };
            let tables: Vec<String> = tx
                .query(tables_sql, &[])?
                .into_iter()
                .filter_map(|r| r.first().and_then(SqlValue::as_str).map(str::to_string))
                .collect();
            assert!(
                tables.len() > 10,
                "the tables of the organization: {tables:?}"
            );
            let mut out = Vec::new();
            for table in tables {
                let sql = match tx.dialect() {
                    Dialect::Sqlite => format!("SELECT * FROM {table} WHERE organization_id = ?"),
                    Dialect::Postgres => format!(
                        "SELECT row_to_json(x)::text FROM {table} x WHERE organization_id::text = ?"
                    ),
                };
                for row in tx.query(&sql, &[org.to_string().into()])? {
                    out.push(format!("{table}: {row:?}"));
                }
            }
            out.sort();
            Ok::<_, StoreError>(out)
        })
        .await
        .expect("read the organization's rows")
}

/// The whole event feed of the organization.
async fn feed(api: &Api) -> Vec<Value> {
    let resp = api.get("/event?limit=1000").await;
    assert_eq!(resp.status, 200, "{resp}");
    resp.body["values"].as_array().cloned().unwrap_or_default()
}

/// What the organization holds, to compare before and after a dry run.
async fn state(server: &TestServer, api: &Api) -> (Vec<String>, Vec<Value>) {
    (rows_of(server, api.org_id).await, feed(api).await)
}

/// `value` without what differs between two writes of the same request: ids, times, and
/// generated identifiers.
fn stable(value: &Value) -> Value {
    const VOLATILE: [&str; 9] = [
        "id",
        "ids",
        "createdAt",
        "updatedAt",
        "occurredAt",
        "identifier",
        "transactionId",
        "recordId",
        "productionOutputId",
    ];
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !VOLATILE.contains(&k.as_str()) && !k.ends_with("At"))
                .map(|(k, v)| (k.clone(), stable(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(stable).collect()),
        other => other.clone(),
    }
}

/// Sends `method path` with `?dryRun=true` (and `body`) and expects a dry run's answer with
/// `status`; checks that nothing of the organization changed. Returns the envelope.
async fn dry(
    server: &TestServer,
    api: &Api,
    method: Method,
    path: &str,
    body: Option<Value>,
    status: u16,
) -> Value {
    let before = state(server, api).await;
    let sep = if path.contains('?') { '&' } else { '?' };
    let mut req = api.req(method, &format!("{path}{sep}dryRun=true"));
    if let Some(body) = body {
        req = req.json(body);
    }
    let resp = req.send().await;
    assert_eq!(resp.status, status, "{resp}");
    assert_eq!(resp.header("prodops-dry-run"), Some("true"), "{resp}");
    assert_eq!(resp.body["dryRun"], json!(true), "{resp}");
    assert!(resp.body["events"].is_array(), "{resp}");
    assert!(resp.body["ledger"].is_array(), "{resp}");
    let after = state(server, api).await;
    assert!(
        before.0 == after.0,
        "{path}: the database changed: {:?}",
        after
            .0
            .iter()
            .filter(|r| !before.0.contains(r))
            .chain(before.0.iter().filter(|r| !after.0.contains(r)))
            .collect::<Vec<_>>()
    );
    assert_eq!(before.1, after.1, "{path}: the event feed changed");
    resp.body
}

fn event_types(envelope: &Value) -> Vec<String> {
    envelope["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap().to_string())
        .collect()
}

/// The events a real write appended after `seen` events, as the dry run lists them: type,
/// resource and data (the real ones have an id and a cursor besides).
fn real_events(after: &[Value], seen: usize) -> Vec<Value> {
    after[seen..]
        .iter()
        .map(|e| stable(&json!({"type": e["type"], "resource": e["resource"], "data": e["data"], "changed": e["changed"]})))
        .collect()
}

fn dry_events(envelope: &Value) -> Vec<Value> {
    envelope["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| stable(&json!({"type": e["type"], "resource": e["resource"], "data": e["data"], "changed": e["changed"]})))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standard_writes_answer_what_they_would_write_and_write_nothing() {
    let server = TestServer::start().await;
    let api = server.org("dry standard").await;
    let ann = api
        .create(
            "worker",
            json!({"name": "Ann", "customerIdentifier": "A-1"}),
        )
        .await;
    let ann_id = ann["id"].as_str().unwrap().to_string();

    // Create.
    let body = json!({"name": "Bob", "customerIdentifier": "B-1"});
    let envelope = dry(
        &server,
        &api,
        Method::POST,
        "/worker",
        Some(body.clone()),
        201,
    )
    .await;
    assert_eq!(event_types(&envelope), ["worker.created"]);
    assert_eq!(envelope["events"][0]["data"], envelope["answer"]);
    assert_eq!(envelope["ledger"], json!([]));
    let seen = feed(&api).await.len();
    let real = api.post("/worker", body).await;
    assert_eq!(real.status, 201, "{real}");
    assert_eq!(stable(&envelope["answer"]), stable(&real.body));
    assert_eq!(dry_events(&envelope), real_events(&feed(&api).await, seen));

    // Update.
    let path = format!("/worker/{ann_id}");
    let patch = json!({"name": "Ann B"});
    let envelope = dry(
        &server,
        &api,
        Method::PATCH,
        &path,
        Some(patch.clone()),
        200,
    )
    .await;
    assert_eq!(event_types(&envelope), ["worker.updated"]);
    assert_eq!(envelope["events"][0]["changed"], json!(["name"]));
    let seen = feed(&api).await.len();
    let real = api.patch(&path, patch).await;
    assert_eq!(real.status, 200, "{real}");
    assert_eq!(stable(&envelope["answer"]), stable(&real.body));
    assert_eq!(envelope["answer"]["id"], real.body["id"]);
    assert_eq!(dry_events(&envelope), real_events(&feed(&api).await, seen));

    // Bulk PUT: one update, one create with its own id.
    let new_id = Uuid::now_v7().to_string();
    let records = json!([{"id": ann_id, "name": "Ann C"}, {"id": new_id, "name": "Cy", "customerIdentifier": "C-1"}]);
    let envelope = dry(
        &server,
        &api,
        Method::PUT,
        "/worker/bulk",
        Some(records.clone()),
        200,
    )
    .await;
    assert_eq!(envelope["answer"]["count"], json!(2));
    assert_eq!(envelope["answer"]["ids"], json!([ann_id, new_id]));
    assert_eq!(event_types(&envelope), ["worker.updated", "worker.created"]);
    let seen = feed(&api).await.len();
    let real = api.put("/worker/bulk", records).await;
    assert_eq!(real.status, 200, "{real}");
    assert_eq!(envelope["answer"], real.body);
    assert_eq!(dry_events(&envelope), real_events(&feed(&api).await, seen));

    // Bulk PATCH.
    let path = "/worker/bulk?name=Cy";
    let patch = json!({"status": "inactive"});
    let envelope = dry(&server, &api, Method::PATCH, path, Some(patch.clone()), 200).await;
    assert_eq!(envelope["answer"], json!({"count": 1}));
    assert_eq!(event_types(&envelope), ["worker.updated"]);
    let seen = feed(&api).await.len();
    let real = api.patch(path, patch).await;
    assert_eq!(real.status, 200, "{real}");
    assert_eq!(envelope["answer"], real.body);
    assert_eq!(dry_events(&envelope), real_events(&feed(&api).await, seen));

    // Bulk DELETE (of shops: workers are never deleted in bulk).
    api.create("shop", json!({"name": "Gone"})).await;
    let kept = api.create("shop", json!({"name": "Kept"})).await;
    let path = "/shop/bulk?name=Gone";
    let envelope = dry(&server, &api, Method::DELETE, path, None, 200).await;
    assert_eq!(envelope["answer"], json!({"count": 1}));
    assert_eq!(event_types(&envelope), ["shop.archived"]);
    let seen = feed(&api).await.len();
    let real = api.delete(path).await;
    assert_eq!(real.status, 200, "{real}");
    assert_eq!(envelope["answer"], real.body);
    assert_eq!(dry_events(&envelope), real_events(&feed(&api).await, seen));

    // Delete: a 204 is answered 200 with a null answer.
    let kept_id = kept["id"].as_str().unwrap();
    let path = format!("/shop/{kept_id}");
    let envelope = dry(&server, &api, Method::DELETE, &path, None, 200).await;
    assert_eq!(envelope["answer"], Value::Null);
    assert_eq!(event_types(&envelope), ["shop.archived"]);
    assert_eq!(envelope["events"][0]["recordId"], json!(kept_id));
    let seen = feed(&api).await.len();
    let real = api.delete(&path).await;
    assert_eq!(real.status, 204, "{real}");
    assert_eq!(dry_events(&envelope), real_events(&feed(&api).await, seen));
    assert_eq!(api.total("worker").await, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_lists_its_ledger_rows_and_posts_none() {
    let server = TestServer::start().await;
    let api = server.org("dry produce").await;
    let floor = Floor::new(api.clone()).await;
    let order = api
        .create(
            "deliverable",
            json!({"name": "Order 1", "type": "order", "quantity": 4}),
        )
        .await["id"]
        .clone();
    let widget = floor.item("Widget", None).await;
    let body = json!({"deliverableId": order, "outputItemId": widget, "quantityProduced": 3, "outputLocationId": floor.b});
    let envelope = dry(
        &server,
        &api,
        Method::POST,
        "/production/produce",
        Some(body.clone()),
        200,
    )
    .await;
    let ledger = envelope["ledger"].as_array().unwrap();
    assert_eq!(ledger.len(), 1, "{envelope}");
    assert_eq!(ledger[0]["type"], json!("produce"));
    assert_eq!(ledger[0]["itemId"], json!(widget));
    assert_eq!(ledger[0]["toLocationId"], json!(floor.b));
    assert!(event_types(&envelope).contains(&"inventory.posted".to_string()));
    assert_eq!(floor.on_hand(&widget, &floor.b).await, 0.0);

    let seen = feed(&api).await.len();
    let real = api.post("/production/produce", body).await;
    assert_eq!(real.status, 200, "{real}");
    assert_eq!(stable(&envelope["answer"]), stable(&real.body));
    assert_eq!(
        stable(&envelope["answer"]["value"]["transactions"]),
        stable(&json!(ledger)),
        "the ledger rows are the answer's transactions"
    );
    assert_eq!(dry_events(&envelope), real_events(&feed(&api).await, seen));
    assert_eq!(floor.on_hand(&widget, &floor.b).await, 3.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completing_a_delivery_is_answered_and_ships_nothing() {
    let server = TestServer::start().await;
    let api = server.org("dry delivery").await;
    let shop = api.create("shop", json!({"name": "Main"})).await;
    let yard = api
        .create("location", json!({"name": "Yard", "shopId": shop["id"]}))
        .await;
    let beam = api.create("item", json!({"name": "Beam"})).await;
    let adjust = api
        .post(
            "/inventory-transaction",
            json!({"itemId": beam["id"], "type": "adjust", "quantity": 5, "toLocationId": yard["id"]}),
        )
        .await;
    assert_eq!(adjust.status, 201, "{adjust}");
    let delivery = api
        .post("/delivery/outbound", json!({"name": "Truck 1"}))
        .await;
    assert_eq!(delivery.status, 201, "{delivery}");
    let id = delivery.body["id"].as_str().unwrap().to_string();
    api.create(
        "delivery-manifest-line",
        json!({"deliveryId": id, "itemId": beam["id"], "quantityExpected": 2, "locationId": yard["id"]}),
    )
    .await;
    let start = format!("/delivery/{id}/start");
    let envelope = dry(&server, &api, Method::POST, &start, Some(json!({})), 200).await;
    assert_eq!(envelope["answer"]["status"], json!("in_transit"));
    assert_eq!(event_types(&envelope)[0], "delivery.in_transit");
    let started = api.post(&start, json!({})).await;
    assert_eq!(started.status, 200, "{started}");

    let complete = format!("/delivery/{id}/complete");
    let envelope = dry(&server, &api, Method::POST, &complete, Some(json!({})), 200).await;
    assert_eq!(envelope["answer"]["status"], json!("delivered"));
    let ledger = envelope["ledger"].as_array().unwrap();
    assert_eq!(ledger.len(), 1, "{envelope}");
    assert_eq!(ledger[0]["type"], json!("ship"));
    assert_eq!(ledger[0]["deliveryId"], json!(id));
    let seen = feed(&api).await.len();
    let real = api.post(&complete, json!({})).await;
    assert_eq!(real.status, 200, "{real}");
    assert_eq!(stable(&envelope["answer"]), stable(&real.body));
    assert_eq!(dry_events(&envelope), real_events(&feed(&api).await, seen));
    let ships = api
        .list(
            "inventory-transaction",
            &format!("deliveryId={id}&type=ship"),
        )
        .await;
    assert_eq!(stable(&json!(ships)), stable(&json!(ledger)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_leaves_its_idempotency_key_free() {
    let server = TestServer::start().await;
    let api = server.org("dry idempotency").await;
    let key = format!("dry-{}", unique());
    let body = json!({"name": "Once"});
    let resp = api
        .req(Method::POST, "/worker?dryRun=true")
        .json(body.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.header("prodops-dry-run"), Some("true"));
    assert_eq!(resp.header("idempotent-replayed"), None);
    // The same key again as a dry run: run again, not replayed.
    let again = api
        .req(Method::POST, "/worker?dryRun=true")
        .json(body.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(again.status, 201, "{again}");
    assert_eq!(again.header("idempotent-replayed"), None);
    assert_eq!(api.total("worker").await, 0);
    // The real write with the key creates, once.
    let real = api
        .req(Method::POST, "/worker")
        .json(body.clone())
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(real.status, 201, "{real}");
    assert_eq!(real.header("idempotent-replayed"), None, "{real}");
    assert_eq!(real.header("prodops-dry-run"), None, "{real}");
    let repeat = api
        .req(Method::POST, "/worker")
        .json(body)
        .idempotency_key(&key)
        .send()
        .await;
    assert_eq!(repeat.body, real.body);
    assert_eq!(repeat.header("idempotent-replayed"), Some("true"));
    assert_eq!(api.total("worker").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_is_refused_as_the_write_would_be() {
    let server = TestServer::start().await;
    let api = server.org("dry refusals").await;
    let floor = Floor::new(api.clone()).await;
    let steel = floor.item("Steel", None).await;
    // A rule of the record: the same 400.
    let bad = json!({"name": ""});
    let real = api.post("/worker", bad.clone()).await;
    let dry_resp = api.post("/worker?dryRun=true", bad).await;
    assert_eq!(dry_resp.status, 400, "{dry_resp}");
    assert_eq!(dry_resp.body["error"]["code"], real.body["error"]["code"]);
    assert_eq!(
        dry_resp.body["error"]["details"],
        real.body["error"]["details"]
    );
    assert_eq!(dry_resp.header("prodops-dry-run"), Some("true"));
    // Stock that would go below zero: the same 409.
    let take = json!({"itemId": steel, "type": "adjust", "quantity": -5, "toLocationId": floor.a});
    let before = state(&server, &api).await;
    let dry_resp = api
        .post("/inventory-transaction?dryRun=true", take.clone())
        .await;
    assert_eq!(dry_resp.status, 409, "{dry_resp}");
    assert_eq!(before, state(&server, &api).await);
    let real = api.post("/inventory-transaction", take).await;
    assert_eq!(real.status, 409, "{real}");
    assert_eq!(
        dry_resp.body["error"]["message"],
        real.body["error"]["message"]
    );
    assert_eq!(
        dry_resp.body["error"]["details"],
        real.body["error"]["details"]
    );
    // A bulk PUT refused at its second record: the same index.
    let records = json!([{"name": "Ok"}, {"name": ""}]);
    let dry_resp = api.put("/worker/bulk?dryRun=true", records.clone()).await;
    let real = api.put("/worker/bulk", records).await;
    assert_eq!(dry_resp.status, real.status, "{dry_resp}");
    assert_eq!(
        dry_resp.body["error"]["details"],
        real.body["error"]["details"]
    );
    assert_eq!(api.total("worker").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_parameter_is_read_strictly_and_only_on_writes() {
    let server = TestServer::start().await;
    let api = server.org("dry parameter").await;
    for bad in ["yes", "1", "TRUE", ""] {
        let resp = api
            .post(&format!("/worker?dryRun={bad}"), json!({"name": "X"}))
            .await;
        assert_validation_names(&resp, "dryRun");
    }
    let resp = api
        .post("/worker?dryRun=true&dryRun=true", json!({"name": "X"}))
        .await;
    assert_validation_names(&resp, "dryRun");
    // `false` is the write itself.
    let resp = api.post("/worker?dryRun=false", json!({"name": "X"})).await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.header("prodops-dry-run"), None);
    assert_eq!(resp.body["name"], json!("X"));
    // A read sent by POST writes nothing: refused.
    let resp = api.post("/worker/query?dryRun=true", json!({})).await;
    assert_validation_names(&resp, "dryRun");
    // A GET takes no such parameter.
    let resp = api.get("/worker?dryRun=true").await;
    assert_eq!(resp.status, 400, "{resp}");
    // The webhook test sends a request; it has no dry run.
    let hook = api
        .post(
            "/webhook",
            json!({"url": "https://example.com/hook", "eventTypes": ["worker.created"]}),
        )
        .await;
    if hook.status == 201 {
        let id = hook.body["id"].as_str().unwrap();
        let resp = api
            .post(&format!("/webhook/{id}/test?dryRun=true"), json!({}))
            .await;
        assert_validation_names(&resp, "dryRun");
    }
    // A dry run counts toward the rate limit.
    let first = api.post("/worker?dryRun=true", json!({"name": "Y"})).await;
    let second = api.post("/worker?dryRun=true", json!({"name": "Y"})).await;
    let (a, b) = (
        first.header_u64("ratelimit-remaining").unwrap(),
        second.header_u64("ratelimit-remaining").unwrap(),
    );
    assert!(b < a, "a dry run is counted: {a} then {b}");
    assert_eq!(api.total("worker").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_upload_stores_no_file() {
    let server = TestServer::start().await;
    let api = server
        .org_with_flags("dry upload", &["documentsHubEnabled"])
        .await;
    let before = state(&server, &api).await;
    let resp = api
        .req(Method::POST, "/document/upload?dryRun=true")
        .header("Content-Type", "text/plain")
        .raw(b"hello".to_vec())
        .send()
        .await;
    assert_eq!(resp.status, 201, "{resp}");
    assert_eq!(resp.header("prodops-dry-run"), Some("true"));
    assert_eq!(resp.body["answer"]["sizeBytes"], json!(5));
    assert_eq!(before, state(&server, &api).await);
    assert_eq!(resp.body["events"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_declares_the_parameter_on_every_write() {
    let server = TestServer::start().await;
    let doc = server.get_root("/api/v2/openapi.json").await.body;
    let mut writes = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let takes = op["parameters"]
                .as_array()
                .is_some_and(|ps| ps.iter().any(|p| p["name"] == "dryRun"));
            let id = op["operationId"].as_str().unwrap_or_default();
            if method == "get" || path.ends_with("/query") {
                assert!(!takes, "{method} {path} ({id}) reads: no dryRun");
            }
            if takes {
                writes += 1;
                let success: Vec<&String> = op["responses"]
                    .as_object()
                    .unwrap()
                    .keys()
                    .filter(|s| s.starts_with('2'))
                    .collect();
                assert!(
                    success.iter().any(|s| {
                        let r = &op["responses"][s.as_str()];
                        r.to_string().contains("#/components/schemas/DryRun")
                    }),
                    "{method} {path}: a success answer declares the DryRun envelope: {}",
                    op["responses"]
                );
            }
        }
    }
    assert!(writes > 60, "{writes} writes declare dryRun");
    let takes = |path: &str, method: &str| {
        doc["paths"][path][method]["parameters"]
            .as_array()
            .is_some_and(|ps| ps.iter().any(|p| p["name"] == "dryRun"))
    };
    assert!(takes("/api/v2/worker", "post"));
    assert!(takes("/api/v2/worker/{id}", "patch"));
    assert!(takes("/api/v2/shop/{id}", "delete"));
    assert!(
        !takes("/api/v2/worker/{id}", "delete"),
        "refused with 403 on every call"
    );
    assert!(takes("/api/v2/worker/bulk", "put"));
    assert!(takes("/api/v2/worker/bulk", "patch"));
    assert!(takes("/api/v2/shop/bulk", "delete"));
    assert!(takes("/api/v2/production/produce", "post"));
    assert!(takes("/api/v2/delivery/{id}/complete", "post"));
    assert!(!takes("/api/v2/webhook/{id}/test", "post"));
    assert!(!takes("/api/v2/worker/query", "post"));
    assert_eq!(
        doc["paths"]["/api/v2/shop/{id}"]["delete"]["responses"]["200"]["content"]["application/json"]
            ["schema"]["$ref"],
        json!("#/components/schemas/DryRun")
    );
    assert!(doc["components"]["schemas"]["PendingEvent"].is_object());
    // The write's own 204 stays bodiless.
    assert_eq!(
        doc["paths"]["/api/v2/shop/{id}"]["delete"]["responses"]["204"].get("content"),
        None
    );
}

/// Every declared action: one that writes answers a dry run (whatever it makes of an empty
/// body and of these records) with the header, never a 5xx, and leaves every row of the
/// organization and the feed as they were; one that does not write refuses `dryRun`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_declared_action_answers_a_dry_run_and_writes_nothing() {
    use prodops_core::api::{ACTIONS, HttpMethod, RequestBody};
    let server = TestServer::start().await;
    let api = server
        .org_with_flags("dry actions", &["documentsHubEnabled"])
        .await;
    let order = api
        .create(
            "deliverable",
            json!({"name": "O", "type": "order", "quantity": 2}),
        )
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let delivery = api
        .post("/delivery/outbound", json!({"name": "T"}))
        .await
        .body["id"]
        .as_str()
        .unwrap()
        .to_string();
    let before = state(&server, &api).await;
    let mut ran = 0;
    for desc in ACTIONS {
        if desc.method == HttpMethod::Get {
            continue;
        }
        let segments: Vec<String> = desc
            .path_params()
            .iter()
            .map(|name| match (desc.tag, *name) {
                ("delivery", "id") => delivery.clone(),
                (_, "rootId") => order.clone(),
                ("deliverable" | "bom-line" | "production", "id") => order.clone(),
                _ => Uuid::now_v7().to_string(),
            })
            .collect();
        let path = format!("{}?dryRun=true", desc.fill(&segments));
        let method = Method::from_bytes(desc.method.as_str().as_bytes()).unwrap();
        let req = api.req(method, &path);
        let req = match desc.request {
            RequestBody::None => req,
            RequestBody::Json { .. } => req.json(json!({})),
            RequestBody::Bytes => req.header("Content-Type", "text/plain").raw(b"x".to_vec()),
        };
        let resp = req.send().await;
        if desc.takes_dry_run() {
            assert_eq!(resp.header("prodops-dry-run"), Some("true"), "{resp}");
            if resp.status < 300 {
                assert_eq!(resp.body["dryRun"], json!(true), "{resp}");
                ran += 1;
            }
        } else if desc.access != prodops_core::api::Access::Open {
            assert_validation_names(&resp, "dryRun");
        }
    }
    assert!(ran >= 5, "{ran} actions ran their dry run to the end");
    assert!(
        before == state(&server, &api).await,
        "the dry runs of every action changed nothing"
    );
}
