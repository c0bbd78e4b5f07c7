//! Deliverable identifiers (spec 2.1 "auto-generated", issue 13 item 6): `D-` and the next
//! number of the organization when a create gives none, on every create path; a given one is
//! kept and generated ones skip past it; unique under concurrent writers on several servers;
//! found by search and by filter; stored deliverables without one get one (the migration's
//! step, per organization).

use std::collections::HashSet;

use prodops_server::store::{SqlValue, Store};
use prodops_tests::*;
use serde_json::Value;

const D: &str = "deliverable";

fn identifier(v: &Value) -> String {
    v["identifier"].as_str().unwrap_or_default().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_without_an_identifier_get_the_next_number_and_given_ones_are_kept() {
    let server = TestServer::start().await;
    let api = server.org("Identifiers").await;
    let first = api.create(D, json!({"name": "A", "type": "order"})).await;
    assert_eq!(identifier(&first), "D-000001");
    let second = api
        .create(D, json!({"name": "B", "type": "order", "identifier": "  "}))
        .await;
    assert_eq!(identifier(&second), "D-000002");
    let null = api
        .create(D, json!({"name": "C", "type": "order", "identifier": null}))
        .await;
    assert_eq!(identifier(&null), "D-000003");
    let given = api
        .create(
            D,
            json!({"name": "G", "type": "order", "identifier": " O-17 "}),
        )
        .await;
    assert_eq!(identifier(&given), "O-17", "kept (trimmed)");
    // A given identifier in the generated form: generated ones skip past it.
    let taken = api
        .create(
            D,
            json!({"name": "T", "type": "order", "identifier": "D-000010"}),
        )
        .await;
    assert_eq!(identifier(&taken), "D-000010");
    let concept = api
        .create("concept/order", json!({"name": "Concept"}))
        .await;
    assert_eq!(identifier(&concept), "D-000011");
    let child = api
        .create(
            D,
            json!({"name": "Phase", "type": "phase", "parentId": concept["id"]}),
        )
        .await;
    assert_eq!(identifier(&child), "D-000012");

    // Bulk PUT: numbers in input order; a given one inside the call's block is skipped; an
    // update keeps its identifier; a blank identifier in an update keeps the stored one.
    let ids = api
        .bulk_put(
            D,
            vec![
                json!({"name": "b1", "type": "order"}),
                json!({"name": "b2", "type": "order", "identifier": ""}),
                json!({"name": "b3", "type": "order", "identifier": "D-000015"}),
                json!({"name": "b4", "type": "order"}),
                json!({"id": first["id"], "name": "A2", "identifier": ""}),
                json!({"name": "b5", "type": "order"}),
            ],
        )
        .await;
    let mut got = Vec::new();
    for id in &ids {
        got.push(identifier(&api.read(D, id).await));
    }
    assert_eq!(
        got,
        [
            "D-000013", "D-000014", "D-000015", "D-000016", "D-000001", "D-000017"
        ]
    );
    // The block's unused numbers went back: the next create continues without a gap.
    let next = api.create(D, json!({"name": "N", "type": "order"})).await;
    assert_eq!(identifier(&next), "D-000018");
    // PATCH: blank keeps, a new value replaces, a generated-form value moves the counter.
    let id = next["id"].as_str().unwrap();
    let resp = api
        .patch(&format!("/{D}/{id}"), json!({"identifier": ""}))
        .await;
    assert_eq!(identifier(&resp.body), "D-000018", "{resp}");
    let resp = api
        .patch(&format!("/{D}/{id}"), json!({"identifier": "D-000040"}))
        .await;
    assert_eq!(identifier(&resp.body), "D-000040", "{resp}");
    let after = api.create(D, json!({"name": "M", "type": "order"})).await;
    assert_eq!(identifier(&after), "D-000041");

    // Search and filters find records by their generated identifier.
    let found = api.list(D, "search=D-000013").await;
    assert_eq!(ids_of(&found), [ids[0].clone()]);
    let resp = api
        .post(
            &format!("/{D}/query"),
            json!({"filter": {"identifier": ["D-000014", "D-000016"]}}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["totalCount"], 2, "{resp}");
    assert_eq!(api.count(D, "identifier=D-000041").await, 1);
    // Every deliverable of the organization has a distinct identifier.
    let all = api.list(D, "pageSize=1000").await;
    let distinct: HashSet<String> = all.iter().map(identifier).collect();
    assert_eq!(distinct.len(), all.len());
    assert!(!distinct.contains(""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writers_on_two_servers_never_share_a_number() {
    let a = TestServer::start().await;
    let b = a.another().await;
    let api = a.org("Concurrent identifiers").await;
    let servers = [api.clone(), api.on(&b)];
    let mut tasks = Vec::new();
    for i in 0..24 {
        let api = servers[i % 2].clone();
        tasks.push(tokio::spawn(async move {
            if i % 6 == 0 {
                let records = (0..40)
                    .map(|j| json!({"name": format!("bulk {i} {j}"), "type": "order"}))
                    .collect();
                api.bulk_put(D, records).await;
            } else {
                api.create(D, json!({"name": format!("one {i}"), "type": "order"}))
                    .await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer");
    }
    let all = api.list(D, "pageSize=1000").await;
    assert_eq!(all.len(), 4 * 40 + 20);
    let numbers: HashSet<String> = all.iter().map(identifier).collect();
    assert_eq!(numbers.len(), all.len(), "every identifier distinct");
    assert!(
        numbers.iter().all(|n| n.starts_with("D-")),
        "every identifier generated: {numbers:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_deliverables_without_an_identifier_get_one_in_creation_order() {
    let server = TestServer::start().await;
    let api = server.org("Backfill").await;
    let ids = api
        .bulk_put(
            D,
            (0..5)
                .map(|i| json!({"name": format!("n{i}"), "type": "order"}))
                .collect(),
        )
        .await;
    let given = api
        .create(
            D,
            json!({"name": "given", "type": "order", "identifier": "D-000009"}),
        )
        .await;
    let before: Vec<Value> = {
        let mut v = Vec::new();
        for id in &ids {
            v.push(api.read(D, id).await);
        }
        v
    };
    // Records as a server before identifiers were generated stored them: blank identifiers
    // (written the way an operator's SQL would, outside the API).
    let ops = Store::open(server.database_url()).await.expect("open");
    let org = api.org_id;
    let blanked: Vec<(String, String)> = before
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 2 == 0)
        .map(|(_, r)| {
            let mut r = r.clone();
            r["identifier"] = json!(if r["name"] == "n0" { "" } else { "   " });
            (r["id"].as_str().unwrap().to_string(), r.to_string())
        })
        .collect();
    let rows = blanked.clone();
    ops.write(move |tx| {
        for (id, data) in &rows {
            tx.execute(
                "UPDATE deliverable SET data = ? WHERE organization_id = ? AND id = ?",
                &[
                    SqlValue::Text(data.clone()),
                    org.into(),
                    SqlValue::Text(id.clone()),
                ],
            )?;
        }
        Ok::<_, prodops_server::store::StoreError>(())
    })
    .await
    .expect("blank some identifiers");
    let filled = ops
        .write(move |tx| prodops_server::deliverables::identifiers::backfill_org(tx, org))
        .await
        .expect("backfill");
    assert_eq!(filled, 3);
    // After the largest number in use (the counter's 7 and the given 9), in creation order;
    // the others and `updatedAt` untouched.
    let mut got = Vec::new();
    for (i, id) in ids.iter().enumerate() {
        let now = api.read(D, id).await;
        assert_eq!(now["updatedAt"], before[i]["updatedAt"]);
        got.push(identifier(&now));
    }
    assert_eq!(
        got,
        ["D-000010", "D-000002", "D-000011", "D-000004", "D-000012"]
    );
    assert_eq!(
        identifier(&api.read(D, given["id"].as_str().unwrap()).await),
        "D-000009"
    );
    let next = api
        .create(D, json!({"name": "next", "type": "order"}))
        .await;
    assert_eq!(identifier(&next), "D-000013");
}
