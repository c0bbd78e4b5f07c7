//! A `prodops-server` process killed with SIGKILL in the middle of produce calls leaves each
//! call's posting whole or absent: after a restart on the same database, every call's ledger
//! rows are all there or none are, stock equals the sum of the ledger, and every declaration's
//! `quantityActual` equals its postings.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::{Value, json};

#[path = "common/server_process.rs"]
mod server_process;
use server_process::serve;
/// Declarations on the order: each produce call posts this many ledger rows.
const OUTPUTS: usize = 200;
/// Nodes under the order; each call is stamped with its own node.
const CALLS: usize = 60;
/// Answered calls after which the process is killed.
const KILL_AFTER: usize = 6;

struct Api {
    client: reqwest::Client,
    base: String,
    key: String,
}

impl Api {
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> reqwest::Result<(u16, Value)> {
        let mut req = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("X-API-Key", &self.key);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await?;
        let status = resp.status().as_u16();
        let body = resp.json::<Value>().await.unwrap_or(Value::Null);
        Ok((status, body))
    }

    async fn ok(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let (status, body) = self.send(method, path, body).await.expect("request");
        assert!(status < 300, "{path}: {status} {body}");
        body
    }

    async fn all(&self, resource: &str) -> Vec<Value> {
        let mut rows = Vec::new();
        for page in 1.. {
            let v = self
                .ok(
                    reqwest::Method::GET,
                    &format!("/{resource}?pageSize=10000&page={page}"),
                    None,
                )
                .await;
            let values = v["values"].as_array().unwrap().clone();
            let n = values.len();
            rows.extend(values);
            if n < 10000 {
                break;
            }
        }
        rows
    }
}

async fn kill_mid_produce(url: &str) {
    let key = server_process::create_org(url, "Kill");
    let (mut child, base) = serve(url);
    let api = Api {
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
        base,
        key: key.clone(),
    };
    use reqwest::Method;
    let shop = api
        .ok(Method::POST, "/shop", Some(json!({"name": "Shop"})))
        .await["id"]
        .clone();
    let location = api
        .ok(
            Method::POST,
            "/location",
            Some(json!({"name": "Out", "shopId": shop})),
        )
        .await["id"]
        .clone();
    let order = api
        .ok(
            Method::POST,
            "/deliverable",
            Some(json!({"name": "Order", "type": "order"})),
        )
        .await["id"]
        .clone();
    let items: Vec<Value> = (0..OUTPUTS)
        .map(|i| json!({"name": format!("Part {i}")}))
        .collect();
    let item_ids = api
        .ok(Method::PUT, "/item/bulk", Some(Value::Array(items)))
        .await["ids"]
        .clone();
    let decls: Vec<Value> = item_ids
        .as_array()
        .unwrap()
        .iter()
        .map(|id| json!({"itemId": id, "orderDeliverableId": order, "producedPerUnit": 1}))
        .collect();
    api.ok(
        Method::PUT,
        "/production-output/bulk",
        Some(Value::Array(decls)),
    )
    .await;
    let nodes: Vec<Value> = (0..CALLS)
        .map(|i| json!({"name": format!("Step {i}"), "type": "phase", "parentId": order}))
        .collect();
    let node_ids: Vec<String> = api
        .ok(Method::PUT, "/deliverable/bulk", Some(Value::Array(nodes)))
        .await["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();

    // Four clients produce on their nodes; the process is killed while they are at it: as soon
    // as a few calls have completed (an event, not a guess at how long calls take), so some are
    // whole, four are in flight and the rest never start.
    let api = std::sync::Arc::new(api);
    let answered = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let mut tasks = Vec::new();
    for client in 0..4 {
        let api = api.clone();
        let answered = answered.clone();
        let nodes: Vec<String> = node_ids.iter().skip(client).step_by(4).cloned().collect();
        let location = location.clone();
        tasks.push(tokio::spawn(async move {
            let mut completed = 0;
            for node in nodes {
                match api
                    .send(
                        Method::POST,
                        "/production/produce",
                        Some(json!({"deliverableId": node, "outputLocationId": location})),
                    )
                    .await
                {
                    Ok((200, _)) => {
                        completed += 1;
                        answered.add_permits(1);
                    }
                    Ok((status, body)) => panic!("produce answered {status} {body}"),
                    Err(_) => break, // the server is gone
                }
            }
            completed
        }));
    }
    // Let some calls complete, then kill while others are in flight.
    // (The bound only turns a server that answers nothing into a failure instead of a hang.)
    let waited = tokio::time::timeout(
        Duration::from_secs(600),
        answered.acquire_many(KILL_AFTER as u32),
    )
    .await;
    assert!(
        matches!(waited, Ok(Ok(_))),
        "{KILL_AFTER} produce calls answered"
    );
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    let mut completed = 0;
    for t in tasks {
        completed += t.await.expect("client");
    }
    eprintln!("{url}: {completed} of {CALLS} produce calls answered before SIGKILL");
    assert!(completed > 0, "some calls completed before the kill");
    assert!(
        completed < CALLS,
        "the kill came while calls were still running"
    );

    // Restart on the same database and check every call is whole or absent.
    let (mut child, base) = serve(url);
    let api = Api {
        client: reqwest::Client::new(),
        base,
        key,
    };
    let ledger = api.all("inventory-transaction").await;
    let mut per_node: HashMap<String, usize> = HashMap::new();
    let mut per_item: HashMap<String, i64> = HashMap::new();
    for row in &ledger {
        *per_node
            .entry(row["deliverableId"].as_str().unwrap().to_string())
            .or_default() += 1;
        *per_item
            .entry(row["itemId"].as_str().unwrap().to_string())
            .or_default() += (row["quantity"].as_f64().unwrap() * 1e6).round() as i64;
    }
    for (node, n) in &per_node {
        assert_eq!(
            *n, OUTPUTS,
            "node {node}: a produce call's rows are all there or none"
        );
    }
    let whole = per_node.len();
    eprintln!("{whole} calls durable after restart");
    assert!(
        whole >= completed,
        "every answered call is durable: {whole} < {completed}"
    );
    for s in api.all("stock").await {
        let item = s["itemId"].as_str().unwrap();
        let on_hand = (s["onHand"].as_f64().unwrap() * 1e6).round() as i64;
        assert_eq!(
            on_hand,
            per_item.get(item).copied().unwrap_or(0),
            "stock of {item} is its ledger"
        );
        assert_eq!(on_hand, whole as i64 * 1_000_000);
    }
    for d in api.all("production-output").await {
        assert_eq!(
            d["quantityActual"].as_f64(),
            Some(whole as f64),
            "quantityActual of {}",
            d["id"]
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_during_produce_leaves_whole_postings() {
    let dir = tempfile::tempdir().unwrap();
    kill_mid_produce(&format!(
        "sqlite://{}",
        dir.path().join("kill.db").display()
    ))
    .await;
    if let Ok(url) = std::env::var("PRODOPS_TEST_DATABASE_URL")
        && url.starts_with("postgres")
    {
        kill_mid_produce(&url).await;
    }
}
