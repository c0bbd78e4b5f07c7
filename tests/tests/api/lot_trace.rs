//! `GET /lot/{id}/trace` (issue 37, item 3): a lot's genealogy over HTTP, down (the orders that
//! consumed it, the lots they produced, the deliveries that shipped those) and up (the order
//! that produced it, the lots it consumed, the deliveries that received those), with depth
//! limits, bad parameters, another organization's lot, and the round trip down then up.

use std::collections::BTreeSet;

use prodops_tests::*;
use serde_json::Value;

use crate::inventory_support::Floor;
use crate::production::Plant;

fn id(v: &Value) -> String {
    v["id"].as_str().expect("an id").to_string()
}

async fn tracked(floor: &Floor, name: &str) -> String {
    id(&floor
        .api
        .create(
            "item",
            json!({"name": name, "tracking": "lot", "unitMeasureId": floor.unit}),
        )
        .await)
}

async fn trace(api: &Api, lot: &str, query: &str) -> Value {
    let resp = api.get(&format!("/lot/{lot}/trace?{query}")).await;
    assert_eq!(resp.status, 200, "{resp}");
    resp.body.clone()
}

fn node_ids(trace: &Value) -> BTreeSet<String> {
    trace["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect()
}

fn lot_ids(trace: &Value) -> Vec<String> {
    trace["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["kind"] == "lot")
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect()
}

/// The edge `from -> to` of the trace: its type and quantity.
fn edge(trace: &Value, from: &str, to: &str) -> Option<(String, f64)> {
    trace["edges"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["from"] == json!(from) && e["to"] == json!(to))
        .map(|e| {
            (
                e["type"].as_str().unwrap().to_string(),
                e["quantity"].as_f64().unwrap(),
            )
        })
}

/// A receipt lot of flour (delivery `received_in`) consumed by the plant's order (posted on a
/// phase under it), which produced a lot of bread, part of it shipped (delivery `shipped_in`);
/// a second order consumed bread and made a lot of cake.
struct Chain {
    flour_lot: String,
    received_in: String,
    order: String,
    bread_lot: String,
    shipped_in: String,
    order2: String,
    cake_lot: String,
}

async fn chain(plant: &Plant) -> Chain {
    let floor = &plant.floor;
    let api = &floor.api;
    let flour = tracked(floor, "Flour").await;
    let bread = tracked(floor, "Bread").await;
    let cake = tracked(floor, "Cake").await;

    // Received: 10 of flour, lot L-4471.
    let received_in = id(&api
        .create("delivery", json!({"name": format!("PO {}", unique())}))
        .await);
    let line = id(&api
        .create(
            "delivery-manifest-line",
            json!({"deliveryId": received_in, "itemId": flour, "quantityExpected": 10, "locationId": floor.a}),
        )
        .await);
    let resp = api
        .post(
            &format!("/delivery/{received_in}/receive"),
            json!({"lines": [{"manifestLineId": line, "quantity": 10,
                              "lots": [{"code": "L-4471", "quantity": 10}]}]}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let flour_lot = id(&api.list("lot", "code=L-4471").await[0]);

    // The order consumes 6 of it (on its phase) and makes 4 of bread, lot B-1.
    api.create(
        "bom-line",
        json!({"itemId": flour, "orderDeliverableId": plant.order,
               "placedOnDeliverableId": plant.phase, "quantity": 6}),
    )
    .await;
    api.create(
        "production-output",
        json!({"itemId": bread, "orderDeliverableId": plant.order, "quantity": 4}),
    )
    .await;
    plant
        .ok(
            "/production/consume",
            json!({"deliverableId": plant.phase, "fromLocationId": floor.a,
                   "lines": [{"itemId": flour, "quantity": 6, "lots": [{"lotId": flour_lot}]}]}),
        )
        .await;
    let made = plant
        .ok(
            "/production/produce",
            json!({"deliverableId": plant.order, "outputLocationId": floor.a,
                   "outputs": [{"itemId": bread, "quantity": 4, "lots": [{"code": "B-1", "quantity": 4}]}]}),
        )
        .await;
    let bread_lot = made["lots"][0]["lotId"].as_str().unwrap().to_string();

    // 3 of the bread shipped (a transfer to X).
    let created = api
        .post(
            "/delivery/outbound",
            json!({"name": "To X", "direction": "transfer",
                   "sourceLocationId": floor.a, "destinationLocationId": floor.x}),
        )
        .await;
    assert_eq!(created.status, 201, "{created}");
    let shipped_in = id(&created.body);
    api.create(
        "delivery-manifest-line",
        json!({"deliveryId": shipped_in, "itemId": bread, "quantityExpected": 3,
               "lots": [{"lotId": bread_lot, "quantity": 3}]}),
    )
    .await;
    for step in ["start", "complete"] {
        let resp = api
            .post(&format!("/delivery/{shipped_in}/{step}"), json!({}))
            .await;
        assert_eq!(resp.status, 200, "{resp}");
    }

    // A second order uses the last bread and makes cake, lot C-1.
    let order2 = id(&api
        .create(
            "deliverable",
            json!({"name": "Order 2", "type": "order", "quantity": 1}),
        )
        .await);
    api.create(
        "bom-line",
        json!({"itemId": bread, "orderDeliverableId": order2, "quantity": 1}),
    )
    .await;
    api.create(
        "production-output",
        json!({"itemId": cake, "orderDeliverableId": order2, "quantity": 1}),
    )
    .await;
    plant
        .ok(
            "/production/consume",
            json!({"deliverableId": order2, "fromLocationId": floor.a,
                   "lines": [{"itemId": bread, "quantity": 1, "lots": [{"lotId": bread_lot}]}]}),
        )
        .await;
    let made = plant
        .ok(
            "/production/produce",
            json!({"deliverableId": order2, "outputLocationId": floor.a,
                   "outputs": [{"itemId": cake, "quantity": 1, "lots": [{"code": "C-1", "quantity": 1}]}]}),
        )
        .await;
    let cake_lot = made["lots"][0]["lotId"].as_str().unwrap().to_string();
    Chain {
        flour_lot,
        received_in,
        order: plant.order.clone(),
        bread_lot,
        shipped_in,
        order2,
        cake_lot,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_goes_down_to_the_shipment_and_up_to_the_receipt() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Trace").await).await;
    let api = &plant.floor.api;
    let c = chain(&plant).await;

    // Down from the flour lot: the order that consumed it (the order, not the phase the
    // consumption was posted on), the bread it made, the delivery that shipped the bread,
    // the second order and its cake. Not the receipt.
    let down = trace(api, &c.flour_lot, "direction=down").await;
    assert_eq!(
        edge(&down, &c.flour_lot, &c.order),
        Some(("consume".into(), 6.0)),
        "{down}"
    );
    assert_eq!(
        edge(&down, &c.order, &c.bread_lot),
        Some(("produce".into(), 4.0))
    );
    assert_eq!(
        edge(&down, &c.bread_lot, &c.shipped_in),
        Some(("ship".into(), 3.0))
    );
    assert_eq!(
        edge(&down, &c.bread_lot, &c.order2),
        Some(("consume".into(), 1.0))
    );
    assert_eq!(
        edge(&down, &c.order2, &c.cake_lot),
        Some(("produce".into(), 1.0))
    );
    assert!(!node_ids(&down).contains(&c.received_in), "{down}");
    assert!(!node_ids(&down).contains(&plant.phase), "{down}");
    assert_eq!(down["truncated"], false);
    let kind_of = |t: &Value, id: &str| {
        t["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == json!(id))
            .map(|n| {
                (
                    n["kind"].as_str().unwrap().to_string(),
                    n["depth"].as_u64().unwrap(),
                )
            })
    };
    assert_eq!(kind_of(&down, &c.flour_lot), Some(("lot".into(), 0)));
    assert_eq!(kind_of(&down, &c.order), Some(("order".into(), 0)));
    assert_eq!(kind_of(&down, &c.bread_lot), Some(("lot".into(), 1)));
    assert_eq!(kind_of(&down, &c.shipped_in), Some(("delivery".into(), 1)));
    assert_eq!(kind_of(&down, &c.cake_lot), Some(("lot".into(), 2)));
    for e in down["edges"].as_array().unwrap() {
        assert!(e["firstAt"].is_string() && e["lastAt"].is_string(), "{e}");
    }
    // The default direction is down.
    assert_eq!(trace(api, &c.flour_lot, "").await, down);

    // Up from the cake: the second order, the bread it used, the order that made the bread,
    // the flour, and the delivery that received the flour.
    let up = trace(api, &c.cake_lot, "direction=up").await;
    assert_eq!(
        edge(&up, &c.order2, &c.cake_lot),
        Some(("produce".into(), 1.0))
    );
    assert_eq!(
        edge(&up, &c.bread_lot, &c.order2),
        Some(("consume".into(), 1.0))
    );
    assert_eq!(
        edge(&up, &c.order, &c.bread_lot),
        Some(("produce".into(), 4.0))
    );
    assert_eq!(
        edge(&up, &c.flour_lot, &c.order),
        Some(("consume".into(), 6.0))
    );
    assert_eq!(
        edge(&up, &c.received_in, &c.flour_lot),
        Some(("receipt".into(), 10.0)),
        "{up}"
    );
    // Up from the bread: the receipt of flour too; not the cake (down of the bread).
    let up = trace(api, &c.bread_lot, "direction=up").await;
    assert!(node_ids(&up).contains(&c.received_in), "{up}");
    assert!(!node_ids(&up).contains(&c.cake_lot), "{up}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn depth_limits_the_generations_and_says_truncated() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Trace depth").await).await;
    let api = &plant.floor.api;
    let c = chain(&plant).await;

    let one = trace(api, &c.flour_lot, "direction=down&depth=1").await;
    let lots = lot_ids(&one);
    assert_eq!(lots, [c.flour_lot.clone(), c.bread_lot.clone()], "{one}");
    assert!(!node_ids(&one).contains(&c.cake_lot));
    assert_eq!(one["truncated"], true, "the bread went further: {one}");
    let two = trace(api, &c.flour_lot, "direction=down&depth=2").await;
    assert!(node_ids(&two).contains(&c.cake_lot), "{two}");
    assert_eq!(two["truncated"], false);
    let up = trace(api, &c.cake_lot, "direction=up&depth=1").await;
    assert_eq!(lot_ids(&up), [c.cake_lot.clone(), c.bread_lot.clone()]);
    assert_eq!(up["truncated"], true);
    let up = trace(api, &c.cake_lot, "direction=up&depth=32").await;
    assert!(node_ids(&up).contains(&c.received_in));

    // Bad parameters: 400 naming the parameter.
    for (query, field) in [
        ("depth=0", "depth"),
        ("depth=33", "depth"),
        ("depth=-1", "depth"),
        ("depth=two", "depth"),
        ("direction=sideways", "direction"),
        ("direction=", "direction"),
        ("deep=1", "deep"),
    ] {
        let resp = api
            .get(&format!("/lot/{}/trace?{query}", c.flour_lot))
            .await;
        assert_validation_names(&resp, field);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_organizations_lot_is_not_found() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Trace mine").await).await;
    let c = chain(&plant).await;
    let other = server.org("Trace other").await;
    for path in [
        format!("/lot/{}/trace", c.flour_lot),
        format!("/lot/{}/trace?direction=up", c.cake_lot),
        // Not a lot at all: an order's id.
        format!("/lot/{}/trace", c.order),
    ] {
        let api = if path.contains(&c.order) {
            &plant.floor.api
        } else {
            &other
        };
        assert_error(&api.get(&path).await, 404, "NOT_FOUND");
    }
    let resp = other.get("/lot/not-a-uuid/trace").await;
    assert_eq!(resp.status, 400, "{resp}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lot_down_from_a_lot_finds_it_up_again() {
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Trace round trip").await).await;
    let api = &plant.floor.api;
    let c = chain(&plant).await;
    for start in [&c.flour_lot, &c.bread_lot] {
        let down = trace(api, start, "direction=down").await;
        let reached = lot_ids(&down);
        assert!(reached.len() > 1, "{down}");
        for lot in reached {
            let up = trace(api, &lot, "direction=up").await;
            assert!(
                node_ids(&up).contains(start.as_str()),
                "up from {lot} finds {start}: {up}"
            );
        }
    }
    // And up then down.
    let up = trace(api, &c.cake_lot, "direction=up").await;
    for lot in lot_ids(&up) {
        let down = trace(api, &lot, "direction=down").await;
        assert!(node_ids(&down).contains(&c.cake_lot), "{down}");
    }
}

/// A trace larger than one part of the body (256 KiB): 1,500 lots received, all consumed by one
/// order, which made 1,500 lots. Down from a received lot: the order and its 1,500 lots; up
/// from a lot made: the order, the 1,500 lots it used and their receipt. The body is sent as it
/// is written (chunked, without a length) and is the whole graph all the same: every edge
/// between nodes of the answer, every node but the start on an edge, each node once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_trace_is_streamed_whole() {
    const LOTS: usize = 1500;
    const BATCH: usize = 500;
    let server = TestServer::start().await;
    let plant = Plant::new(server.org("Trace streamed").await).await;
    let floor = &plant.floor;
    let api = &floor.api;
    let grain = tracked(floor, "Grain").await;
    let meal = tracked(floor, "Meal").await;
    let received_in = id(&api
        .create("delivery", json!({"name": format!("PO {}", unique())}))
        .await);
    let line = id(&api
        .create(
            "delivery-manifest-line",
            json!({"deliveryId": received_in, "itemId": grain, "quantityExpected": LOTS, "locationId": floor.a}),
        )
        .await);
    for start in (0..LOTS).step_by(BATCH) {
        let lots: Vec<Value> = (start..start + BATCH)
            .map(|i| json!({"code": format!("G-{i}"), "quantity": 1}))
            .collect();
        let resp = api
            .post(
                &format!("/delivery/{received_in}/receive"),
                json!({"lines": [{"manifestLineId": line, "quantity": BATCH, "lots": lots}]}),
            )
            .await;
        assert_eq!(resp.status, 200, "{resp}");
    }
    api.create(
        "bom-line",
        json!({"itemId": grain, "orderDeliverableId": plant.order, "quantity": LOTS}),
    )
    .await;
    api.create(
        "production-output",
        json!({"itemId": meal, "orderDeliverableId": plant.order, "quantity": LOTS}),
    )
    .await;
    let mut made = Vec::new();
    for start in (0..LOTS).step_by(BATCH) {
        plant
            .ok(
                "/production/consume",
                json!({"deliverableId": plant.order, "fromLocationId": floor.a,
                       "lines": [{"itemId": grain, "quantity": BATCH}]}),
            )
            .await;
        let lots: Vec<Value> = (start..start + BATCH)
            .map(|i| json!({"code": format!("M-{i}"), "quantity": 1}))
            .collect();
        let value = plant
            .ok(
                "/production/produce",
                json!({"deliverableId": plant.order, "outputLocationId": floor.a,
                       "outputs": [{"itemId": meal, "quantity": BATCH, "lots": lots}]}),
            )
            .await;
        made.extend(
            value["lots"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["lotId"].as_str().unwrap().to_string()),
        );
    }
    let grain_lot = id(&api.list("lot", "code=G-0").await[0]);

    let whole = |trace: &Value, start: &str| {
        let nodes = trace["nodes"].as_array().unwrap();
        let ids = node_ids(trace);
        assert_eq!(ids.len(), nodes.len(), "each node once");
        assert_eq!(nodes[0]["id"], json!(start), "the start first");
        let mut linked = BTreeSet::from([start.to_string()]);
        for e in trace["edges"].as_array().unwrap() {
            for end in ["from", "to"] {
                let end = e[end].as_str().unwrap();
                assert!(ids.contains(end), "an edge to a node of the answer: {e}");
                linked.insert(end.to_string());
            }
        }
        assert_eq!(linked, ids, "every node on an edge");
        assert_eq!(trace["truncated"], false);
    };
    let streamed = |resp: &Resp| {
        assert_eq!(resp.status, 200, "{resp}");
        assert_eq!(resp.header("content-type"), Some("application/json"));
        assert!(resp.text.len() > 256 << 10, "{} bytes", resp.text.len());
        assert_eq!(resp.header("content-length"), None, "sent as it is written");
    };

    let resp = api.get(&format!("/lot/{grain_lot}/trace")).await;
    streamed(&resp);
    let down = &resp.body;
    whole(down, &grain_lot);
    assert_eq!(
        lot_ids(down).len(),
        1 + LOTS,
        "the start and every lot made"
    );
    assert_eq!(down["edges"].as_array().unwrap().len(), 1 + LOTS);
    assert_eq!(
        edge(down, &grain_lot, &plant.order),
        Some(("consume".into(), 1.0))
    );
    for lot in &made {
        assert_eq!(edge(down, &plant.order, lot), Some(("produce".into(), 1.0)));
    }

    let last = made.last().unwrap();
    let resp = api.get(&format!("/lot/{last}/trace?direction=up")).await;
    streamed(&resp);
    let up = &resp.body;
    whole(up, last);
    assert_eq!(lot_ids(up).len(), 1 + LOTS, "the start and every lot used");
    // Made, consumed 1,500 times, received 1,500 times.
    assert_eq!(up["edges"].as_array().unwrap().len(), 1 + 2 * LOTS);
    assert!(node_ids(up).contains(&received_in));
    assert_eq!(
        edge(up, &received_in, &grain_lot),
        Some(("receipt".into(), 1.0))
    );
}
