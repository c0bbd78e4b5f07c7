//! Keyset paging of lists (`cursor` / `nextCursor`, docs/api.md): following `nextCursor` visits
//! every record once, in the same order as `page`/`pageSize`, across records created in the
//! same call and in different calls; bad cursors are a 400 on `cursor`.

use prodops_tests::*;
use serde_json::Value;

fn workers(prefix: &str, n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"name": format!("{prefix} {i:03}"), "status": "active"}))
        .collect()
}

async fn pages_by_cursor(api: &Api, query: &str, size: u64) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut calls = 0;
    let mut cursor: Option<String> = None;
    loop {
        let url = match &cursor {
            None => format!("/worker?pageSize={size}{query}"),
            Some(c) => format!("/worker?pageSize={size}&cursor={c}{query}"),
        };
        let resp = api.get(&url).await;
        assert_eq!(resp.status, 200, "{resp}");
        calls += 1;
        let values = resp.body["values"].as_array().unwrap();
        assert!(values.len() as u64 <= size, "{resp}");
        ids.extend(values.iter().map(|v| v["id"].as_str().unwrap().to_string()));
        match &resp.body["nextCursor"] {
            Value::String(c) => {
                assert_eq!(
                    values.len() as u64,
                    size,
                    "a cursor only after a full page: {resp}"
                );
                cursor = Some(c.clone());
            }
            Value::Null => break,
            other => panic!("nextCursor must be a string or null, got {other}: {resp}"),
        }
        assert!(calls < 100, "the cursor does not advance");
    }
    (ids, calls)
}

#[tokio::test]
async fn following_next_cursor_visits_every_record_once_in_list_order() {
    let server = TestServer::start().await;
    let a = server.org("A").await;
    let b = server.org("B").await;
    // Records sharing one creation time (one bulk call) and records created later.
    a.bulk_put("worker", workers("Bulk", 23)).await;
    for i in 0..4 {
        a.create("worker", json!({"name": format!("Single {i}")}))
            .await;
    }
    b.bulk_put("worker", workers("Other", 5)).await;

    let by_offset: Vec<String> = {
        let mut all = Vec::new();
        for page in 1..=3 {
            all.extend(
                a.list_ids("worker", &format!("page={page}&pageSize=10"))
                    .await,
            );
        }
        all
    };
    assert_eq!(by_offset.len(), 27);
    let (by_cursor, calls) = pages_by_cursor(&a, "", 10).await;
    assert_eq!(by_cursor, by_offset, "keyset pages follow the list order");
    assert_eq!(calls, 3);
    // A page size that divides the count: the last full page has a cursor, the next is empty.
    let (exact, calls) = pages_by_cursor(&a, "", 9).await;
    assert_eq!(exact, by_offset);
    assert_eq!(calls, 4);
    // totalCount ignores the cursor: it counts the whole list.
    let first = a.get("/worker?pageSize=10").await;
    let cursor = first.body["nextCursor"].as_str().unwrap().to_string();
    let second = a.get(&format!("/worker?pageSize=10&cursor={cursor}")).await;
    assert_eq!(second.body["totalCount"], 27, "{second}");
    // Filters combine with the cursor; another organization's rows never appear.
    let (filtered, _) = pages_by_cursor(&a, "&search=bulk", 5).await;
    assert_eq!(filtered.len(), 23);
    let (bs, _) = pages_by_cursor(&b, "", 2).await;
    assert_eq!(bs.len(), 5);
    assert!(bs.iter().all(|id| !by_offset.contains(id)));
    // A's cursor used by B pages B's records only.
    let from_b = b.get(&format!("/worker?pageSize=10&cursor={cursor}")).await;
    assert_eq!(from_b.status, 200, "{from_b}");
    for v in from_b.body["values"].as_array().unwrap() {
        assert!(!by_offset.contains(&v["id"].as_str().unwrap().to_string()));
    }
}

#[tokio::test]
async fn a_sorted_list_has_no_cursor_and_bad_cursors_are_refused() {
    let server = TestServer::start().await;
    let a = server.org("A").await;
    a.bulk_put("worker", workers("W", 3)).await;
    let sorted = a.get("/worker?sort=name&pageSize=2").await;
    assert_eq!(sorted.status, 200, "{sorted}");
    assert!(sorted.body.get("nextCursor").is_none(), "{sorted}");
    let cursor = a.get("/worker?pageSize=1").await.body["nextCursor"]
        .as_str()
        .unwrap()
        .to_string();
    for (query, why) in [
        ("cursor=zz".to_string(), "not hex"),
        ("cursor=616263".to_string(), "not a cursor"),
        (format!("cursor={cursor}&sort=name"), "with a sort"),
        (format!("cursor={cursor}&page=2"), "with a page"),
    ] {
        let resp = a.get(&format!("/worker?{query}")).await;
        let details = assert_error_details(&resp, 400, "VALIDATION_ERROR");
        assert_eq!(details[0]["field"], "cursor", "{why}: {resp}");
    }
}
