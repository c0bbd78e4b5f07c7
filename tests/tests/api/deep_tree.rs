//! Tree depth (issue 13 item 5, docs/limits.md): a deliverable may be at most 64 levels deep
//! (a root is level 1) on both databases; one level more is a 400 `VALIDATION_ERROR` naming
//! `parentId`, on create, on a move by PATCH of `parentId`, and in a bulk PUT (naming the
//! record's index), with nothing written.

use prodops_tests::*;
use serde_json::Value;

const D: &str = "deliverable";
const MAX_DEPTH: usize = 64;

async fn child(api: &Api, parent: &str, name: &str) -> String {
    api.create(
        D,
        json!({"name": name, "type": "phase", "parentId": parent}),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tree_takes_64_levels_and_refuses_the_65th_everywhere() {
    let server = TestServer::start().await;
    let api = server.org("Deep").await;
    let root = api
        .create(D, json!({"name": "Order", "type": "order"}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    // levels[k] is the node at level k + 1.
    let mut levels = vec![root.clone()];
    for level in 2..=MAX_DEPTH {
        let parent = levels.last().unwrap().clone();
        levels.push(child(&api, &parent, &format!("level {level}")).await);
    }
    let deepest = levels[MAX_DEPTH - 1].clone();
    let count = api.count(D, "").await;

    // Create at level 65.
    let resp = api
        .post(
            &format!("/{D}"),
            json!({"name": "too deep", "type": "phase", "parentId": deepest}),
        )
        .await;
    assert_validation_names(&resp, "parentId");
    // The same through the concept endpoint.
    let resp = api
        .post(
            "/concept/phase",
            json!({"name": "too deep", "parentId": deepest}),
        )
        .await;
    assert!(resp.status == 400, "{resp}");
    assert_eq!(api.count(D, "").await, count, "nothing written");

    // Bulk PUT: the record that would be at level 65 is named by its index.
    let resp = api
        .put(
            &format!("/{D}/bulk"),
            json!([
                {"name": "fine", "type": "phase", "parentId": levels[10]},
                {"name": "too deep", "type": "phase", "parentId": deepest},
            ]),
        )
        .await;
    let details = assert_error_details(&resp, 400, "VALIDATION_ERROR");
    assert!(
        details
            .iter()
            .any(|d| d["index"] == 1 && d["field"] == "parentId"),
        "{resp}"
    );
    assert_eq!(api.count(D, "").await, count, "nothing written");

    // Moves: a two-level tree under level 63 would put its leaf at level 65.
    let other = api
        .create(D, json!({"name": "Other", "type": "order"}))
        .await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let leaf = child(&api, &other, "leaf").await;
    let resp = api
        .patch(
            &format!("/{D}/{other}"),
            json!({"parentId": levels[MAX_DEPTH - 2]}),
        )
        .await;
    assert_validation_names(&resp, "parentId");
    assert_eq!(
        api.read(D, &other).await["parentId"],
        Value::Null,
        "nothing moved"
    );
    // Under level 62 the leaf lands at level 64: allowed.
    let resp = api
        .patch(
            &format!("/{D}/{other}"),
            json!({"parentId": levels[MAX_DEPTH - 3]}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let resp = api.get(&format!("/{D}/{root}/hierarchy")).await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(resp.body["values"].as_array().unwrap().len(), MAX_DEPTH + 2);
    assert_eq!(api.read(D, &leaf).await["rootParentId"], json!(root));
    // A move by bulk PATCH of parentId is refused the same way.
    let resp = api
        .patch(
            &format!("/{D}/bulk?name=leaf"),
            json!({"parentId": deepest}),
        )
        .await;
    assert_validation_names(&resp, "parentId");
    assert_eq!(api.read(D, &leaf).await["parentId"], json!(other));
}
