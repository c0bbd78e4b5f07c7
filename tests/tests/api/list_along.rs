//! A list in the default order is read along with its key (http/app.rs `page_read`): on
//! PostgreSQL, once a process has seen a key, its lookup and the page go out in one round
//! trip. What a client sees must not change with it: the page is the key's organization's,
//! a key without the read permission gets a 403 and no records, paging and filters answer as
//! a list read on its own does, and an empty page still carries its total. Each call is made
//! three times, so the calls after the first take the read-along path.

use prodops_tests::*;
use serde_json::Value;

/// The answer to `GET /api/v2/<path>` three times over; all three must be the same (but for
/// an error's request id).
async fn thrice(api: &Api, path: &str) -> Resp {
    let first = api.get(path).await;
    for _ in 0..2 {
        let again = api.get(path).await;
        assert_eq!(again.status, first.status, "{path}: {}", again.body);
        assert_eq!(sameness(&again.body), sameness(&first.body), "{path}");
    }
    first
}

fn sameness(body: &Value) -> Value {
    let mut body = body.clone();
    if let Some(error) = body.get_mut("error").and_then(Value::as_object_mut) {
        error.remove("requestId");
    }
    body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_read_with_its_key_answers_as_a_list_read_alone() {
    let server = TestServer::start().await;
    let acme = server.org("Along A").await;
    let other = server.org("Along B").await;
    let mut ann = Vec::new();
    for (i, status) in ["active", "inactive", "active"].into_iter().enumerate() {
        let w = acme
            .create(
                "worker",
                json!({"name": format!("Acme {i}"), "status": status}),
            )
            .await;
        ann.push(w["id"].as_str().unwrap().to_string());
    }
    let bea = other.create("worker", json!({"name": "Other 0"})).await;

    // Each organization's key sees its own records only.
    let (reader, _) = server.key(&acme, false, &["Worker.Read"]).await;
    let page = thrice(&reader, "/worker").await;
    assert_eq!(page.status, 200, "{}", page.body);
    assert_eq!(ids_of(page.body["values"].as_array().unwrap()), ann);
    assert_eq!(page.body["totalCount"], 3);
    let theirs = thrice(&other, "/worker").await;
    assert_eq!(
        ids_of(theirs.body["values"].as_array().unwrap()),
        vec![bea["id"].as_str().unwrap().to_string()]
    );

    // A key of the organization without the read permission: refused, nothing of the page.
    let (no_read, _) = server.key(&acme, false, &["Vendor.Read"]).await;
    for _ in 0..3 {
        let resp = no_read.get("/worker").await;
        assert_error(&resp, 403, "FORBIDDEN");
        assert!(!resp.body.to_string().contains("Acme"), "{}", resp.body);
    }

    // Cursor paging visits every record once, in order.
    let first = thrice(&reader, "/worker?pageSize=2").await;
    let cursor = first.body["nextCursor"].as_str().unwrap().to_string();
    let second = thrice(&reader, &format!("/worker?pageSize=2&cursor={cursor}")).await;
    let mut seen = ids_of(first.body["values"].as_array().unwrap());
    seen.extend(ids_of(second.body["values"].as_array().unwrap()));
    assert_eq!(seen, ann);
    assert_eq!(second.body["nextCursor"], Value::Null);

    // A filter, and a page past the end, which still carries the total.
    let inactive = thrice(&reader, "/worker?status=inactive").await;
    assert_eq!(
        ids_of(inactive.body["values"].as_array().unwrap()),
        vec![ann[1].clone()]
    );
    assert_eq!(inactive.body["totalCount"], 1);
    let last = thrice(&reader, "/worker?pageSize=3").await;
    let past = last.body["nextCursor"].as_str().unwrap().to_string();
    let empty = thrice(&reader, &format!("/worker?pageSize=3&cursor={past}")).await;
    assert_eq!(empty.body["values"], json!([]));
    assert_eq!(empty.body["totalCount"], 3);

    // A query the list refuses is refused the same way.
    assert_error(
        &thrice(&reader, "/worker?pageSize=0").await,
        400,
        "VALIDATION_ERROR",
    );

    // A record created since is in the next page read along.
    let late = acme.create("worker", json!({"name": "Acme late"})).await;
    let page = reader.get("/worker").await;
    assert_eq!(page.body["totalCount"], 4);
    assert_eq!(page.body["values"][3]["id"], late["id"], "{}", page.body);
}
