//! `prodops lot trace LOT` as a process, against a real in-process server (prodops-tests
//! harness; `PRODOPS_TEST_DATABASE_URL` for PostgreSQL): the tree a person reads, the
//! Graphviz graph of `--format dot`, the answer itself with `-o json`, and a bad depth.

mod common;
use common::Out;
use std::path::Path;
use std::time::Duration;

use prodops_tests::*;
use serde_json::Value;

async fn run(server: &TestServer, api: &Api, dir: &Path, args: &[&str]) -> Out {
    let cmd = common::prodops_in(server, api, dir, Duration::from_secs(120));
    common::run(cmd, args).await
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// Flour lot F-1 (10 on hand), consumed (6) by an order that made bread lot B-1 (4).
/// Returns (flour lot, order, bread lot).
async fn chain(api: &Api) -> (String, String, String) {
    let unit = id(&api
        .create("unit-measure", json!({"name": "Kilogram", "symbol": "kg"}))
        .await);
    let shop = id(&api.create("shop", json!({"name": "Bakery"})).await);
    let location = id(&api
        .create("location", json!({"name": "Store", "shopId": shop}))
        .await);
    let item = |name: &str| json!({"name": name, "tracking": "lot", "unitMeasureId": unit});
    let flour = id(&api.create("item", item("Flour")).await);
    let bread = id(&api.create("item", item("Bread")).await);
    let flour_lot = id(&api
        .create("lot", json!({"itemId": flour, "code": "F-1"}))
        .await);
    let r = api
        .post(
            "/inventory-transaction",
            json!({"itemId": flour, "type": "adjust", "quantity": 10, "toLocationId": location, "lotId": flour_lot}),
        )
        .await;
    assert_eq!(r.status, 201, "{r}");
    let order = id(&api
        .create(
            "deliverable",
            json!({"name": "Order 1", "type": "order", "quantity": 1}),
        )
        .await);
    api.create(
        "bom-line",
        json!({"itemId": flour, "orderDeliverableId": order, "quantity": 6}),
    )
    .await;
    api.create(
        "production-output",
        json!({"itemId": bread, "orderDeliverableId": order, "quantity": 4}),
    )
    .await;
    let r = api
        .post(
            "/production/consume",
            json!({"deliverableId": order, "fromLocationId": location,
                   "lines": [{"itemId": flour, "quantity": 6, "lots": [{"lotId": flour_lot}]}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let r = api
        .post(
            "/production/produce",
            json!({"deliverableId": order, "outputLocationId": location,
                   "outputs": [{"itemId": bread, "quantity": 4, "lots": [{"code": "B-1", "quantity": 4}]}]}),
        )
        .await;
    assert_eq!(r.status, 200, "{r}");
    let bread_lot = r.body["value"]["lots"][0]["lotId"]
        .as_str()
        .unwrap()
        .to_string();
    (flour_lot, order, bread_lot)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lot_trace_prints_a_tree_a_dot_graph_or_the_answer() {
    let server = TestServer::start().await;
    let api = server.org("CliTrace").await;
    let dir = tempfile::tempdir().unwrap();
    let (flour_lot, order, bread_lot) = chain(&api).await;

    // The tree, down (the default direction).
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "trace", &flour_lot, "-o", "table"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        out.stdout,
        format!(
            "lot {flour_lot}\n└─ consume 6 -> order {order}\n   └─ produce 4 -> lot {bread_lot}\n"
        ),
        "{out}"
    );
    // Up from the bread.
    let out = run(
        &server,
        &api,
        dir.path(),
        &[
            "lot",
            "trace",
            &bread_lot,
            "--direction",
            "up",
            "--format",
            "tree",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        out.stdout,
        format!(
            "lot {bread_lot}\n└─ produce 4 <- order {order}\n   └─ consume 6 <- lot {flour_lot}\n"
        ),
        "{out}"
    );

    // Graphviz.
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "trace", &flour_lot, "--format", "dot"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.starts_with("digraph trace {"), "{out}");
    assert_eq!(out.stdout.matches("shape=").count(), 3, "{out}");
    assert!(
        out.stdout.contains(&format!(
            "\"{flour_lot}\" -> \"{order}\" [label=\"consume 6\"];"
        )),
        "{out}"
    );
    assert!(
        out.stdout.contains(&format!(
            "\"{order}\" -> \"{bread_lot}\" [label=\"produce 4\"];"
        )),
        "{out}"
    );

    // The answer itself.
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "trace", &flour_lot, "--depth", "1", "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let answer = out.json();
    assert_eq!(answer["nodes"].as_array().unwrap().len(), 3, "{out}");
    assert_eq!(answer["edges"][0]["type"], "consume");
    assert_eq!(answer["truncated"], false);

    // A depth out of range: refused by the server, naming depth.
    for format in ["json", "table"] {
        let out = run(
            &server,
            &api,
            dir.path(),
            &["lot", "trace", &flour_lot, "--depth", "40", "-o", format],
        )
        .await;
        assert_ne!(out.code, 0, "{out}");
        assert!(out.stderr.contains("depth"), "{out}");
        assert!(out.stdout.is_empty(), "{out}");
    }
}
