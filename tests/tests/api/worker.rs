//! Workers (spec 2.4, 3.3, 4.11): archive naming and restore, read-only when archived, no delete.

use prodops_tests::*;
use serde_json::Value;

/// A team id to put on a worker: a real team where the server offers `/team`, else a fresh UUID.
async fn some_team_id(api: &Api) -> String {
    let resp = api
        .post("/team", json!({"name": format!("Team {}", unique())}))
        .await;
    if resp.status == 201 {
        resp.id()
    } else {
        uuid::Uuid::new_v4().to_string()
    }
}

async fn archive(api: &Api, id: &str) -> Value {
    let resp = api
        .patch(&format!("/worker/{id}"), json!({"isArchived": true}))
        .await;
    assert_eq!(resp.status, 200, "archive: {resp}");
    resp.body
}

async fn restore(api: &Api, id: &str) -> Value {
    let resp = api
        .patch(&format!("/worker/{id}"), json!({"isArchived": false}))
        .await;
    assert_eq!(resp.status, 200, "restore: {resp}");
    resp.body
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_name_is_required() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    assert_validation_names(&api.post("/worker", json!({})).await, "name");
    assert_validation_names(
        &api.post(
            "/worker",
            json!({"customerIdentifier": "E1", "status": "active"}),
        )
        .await,
        "name",
    );
    assert_validation_names(&api.post("/worker", json!({"name": null})).await, "name");
    let w = api.create("worker", json!({"name": "Just a name"})).await;
    assert_eq!(w["status"], "active");
    let team = some_team_id(&api).await;
    let full = api
        .create(
            "worker",
            json!({"name": "Full", "customerIdentifier": "F-1", "teamId": team, "status": "inactive",
                   "exemptFromAssignments": true, "unionCode": "UC", "qbBadgeLink": "qb://x"}),
        )
        .await;
    assert_eq!(full["teamId"], json!(team));
    assert_eq!(full["status"], "inactive");
    assert_eq!(full["exemptFromAssignments"], true);
    assert_eq!(full["unionCode"], "UC");
    assert_eq!(full["qbBadgeLink"], "qb://x");
    assert_eq!(full["customerIdentifier"], "F-1");
}

/// An identifier whose archive suffix would pass the 256 characters the database indexes is not
/// cut (a restore could not give its end back): the archive is refused with 409 and the worker
/// stays as it was; one that fits archives as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_refuses_an_identifier_the_suffix_would_push_past_the_limit() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let long = "0".repeat(256);
    let worker = api
        .create("worker", json!({"name": "Ann", "customerIdentifier": long}))
        .await;
    let id = worker["id"].as_str().unwrap();
    let resp = api
        .patch(&format!("/worker/{id}"), json!({"isArchived": true}))
        .await;
    assert_error(&resp, 409, "CONFLICT");
    assert!(resp.text.contains("customerIdentifier"), "{resp}");
    let stored = api.read("worker", id).await;
    assert_eq!(stored["isArchived"], false);
    assert_eq!(stored["customerIdentifier"], json!(long));
    assert_eq!(stored["name"], "Ann");

    let fits = "1".repeat(256 - " - (archived 1)".len());
    let worker = api
        .create("worker", json!({"name": "Bo", "customerIdentifier": fits}))
        .await;
    let archived = archive(&api, worker["id"].as_str().unwrap()).await;
    assert_eq!(
        archived["customerIdentifier"],
        json!(format!("{fits} - (archived 1)"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archive_suffixes_name_and_identifier_and_clears_team() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let team = some_team_id(&api).await;
    let w = api
        .create(
            "worker",
            json!({"name": "Ann", "customerIdentifier": "E1", "teamId": team}),
        )
        .await;
    let id = w["id"].as_str().unwrap();
    let a = archive(&api, id).await;
    assert_eq!(a["isArchived"], true);
    assert_eq!(a["name"], "Ann - (archived 1)");
    assert_eq!(a["customerIdentifier"], "E1 - (archived 1)");
    assert_eq!(a["teamId"], Value::Null);
    assert_eq!(
        api.read("worker", id).await,
        a,
        "GET by id returns the archived worker"
    );

    // Hidden from the default list, listed with isArchived=true.
    assert!(!api.list_ids("worker", "").await.contains(&id.to_string()));
    assert_eq!(
        api.list_ids("worker", "isArchived=true").await,
        vec![id.to_string()]
    );

    // A second archived worker of the same name gets the next number.
    let w2 = api
        .create("worker", json!({"name": "Ann", "customerIdentifier": "E2"}))
        .await;
    let a2 = archive(&api, w2["id"].as_str().unwrap()).await;
    assert_eq!(a2["name"], "Ann - (archived 2)");
    assert_eq!(
        a2["customerIdentifier"], "E2 - (archived 2)",
        "the same suffix as the name"
    );
    assert_eq!(api.list_total("worker", "isArchived=true").await, 2);
    assert_eq!(api.list_total("worker", "").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archived_worker_is_read_only_except_restore() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let w = api
        .create("worker", json!({"name": "Ro", "customerIdentifier": "R1"}))
        .await;
    let id = w["id"].as_str().unwrap();
    let archived = archive(&api, id).await;
    for body in [
        json!({"status": "inactive"}),
        json!({"name": "Renamed"}),
        json!({"unionCode": "U"}),
        json!({"exemptFromAssignments": true}),
    ] {
        // The record's state refuses the change, whatever the body: 409 (docs/api.md).
        let resp = api.patch(&format!("/worker/{id}"), body.clone()).await;
        assert_error(&resp, 409, "CONFLICT");
    }
    // A body the record could never take is still 400, naming the field: a uuid field takes
    // no empty string (docs/contract.md), even beside an archive that clears it.
    let other = api.create("worker", json!({"name": "Other"})).await;
    let other = other["id"].as_str().unwrap();
    assert_validation_names(
        &api.patch(
            &format!("/worker/{other}"),
            json!({"teamId": "", "isArchived": true}),
        )
        .await,
        "teamId",
    );
    assert_eq!(api.read("worker", other).await["isArchived"], false);
    // Bulk PATCH matching it cannot change it either.
    let resp = api
        .patch(
            "/worker/bulk?isArchived=true",
            json!({"status": "terminated"}),
        )
        .await;
    assert!(resp.status == 409 || resp.status == 200, "{resp}");
    if resp.status == 409 {
        assert_error(&resp, 409, "CONFLICT");
    } else {
        assert_eq!(
            resp.body["count"], 0,
            "bulk PATCH changed an archived worker: {resp}"
        );
    }
    assert_eq!(api.read("worker", id).await, archived, "unchanged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_removes_the_suffix() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let w = api
        .create(
            "worker",
            json!({"name": "Ben", "customerIdentifier": "B-7", "unionCode": "U1"}),
        )
        .await;
    let id = w["id"].as_str().unwrap();
    archive(&api, id).await;
    let r = restore(&api, id).await;
    assert_eq!(r["isArchived"], false);
    assert_eq!(r["name"], "Ben");
    assert_eq!(r["customerIdentifier"], "B-7");
    assert_eq!(r["unionCode"], "U1");
    assert_eq!(api.list_ids("worker", "").await, vec![id.to_string()]);
    assert!(api.list_ids("worker", "isArchived=true").await.is_empty());
    // Restored workers are writable again.
    let resp = api
        .patch(&format!("/worker/{id}"), json!({"status": "inactive"}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    // And can be archived again.
    let again = archive(&api, id).await;
    assert_eq!(again["name"], "Ben - (archived 1)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restore_picks_the_next_free_name_when_the_name_was_taken() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let w = api.create("worker", json!({"name": "Bo"})).await;
    let id = w["id"].as_str().unwrap();
    archive(&api, id).await;
    api.create("worker", json!({"name": "Bo"})).await;
    let r = restore(&api, id).await;
    assert_eq!(r["name"], "Bo (1)");
    assert_eq!(r["isArchived"], false);

    // Again, with "Bo" and "Bo (1)" both taken.
    let w3 = api.create("worker", json!({"name": "Bo"})).await;
    let id3 = w3["id"].as_str().unwrap();
    // Active now: "Bo", "Bo (1)", and w3's "Bo"; archive w3 and take "Bo" once more.
    archive(&api, id3).await;
    api.create("worker", json!({"name": "Bo"})).await;
    let r3 = restore(&api, id3).await;
    assert_eq!(r3["name"], "Bo (2)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_is_forbidden_and_changes_nothing() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let w = api.create("worker", json!({"name": "Stays"})).await;
    let id = w["id"].as_str().unwrap();
    assert_error(
        &api.delete(&format!("/worker/{id}")).await,
        403,
        "FORBIDDEN",
    );
    assert_error(
        &api.delete("/worker/bulk?status=active").await,
        403,
        "FORBIDDEN",
    );
    assert_error(&api.delete("/worker/bulk").await, 403, "FORBIDDEN");
    assert_eq!(api.read("worker", id).await, w, "unchanged, not archived");
    assert_eq!(api.list_ids("worker", "").await, vec![id.to_string()]);
    assert_eq!(api.list_total("worker", "isArchived=true").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_with_ids_and_select_name() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    let ids = api
        .bulk_put(
            "worker",
            vec![
                json!({"name": "Q-A"}),
                json!({"name": "Q-B"}),
                json!({"name": "Q-C"}),
            ],
        )
        .await;
    let resp = api
        .post(
            "/worker/query",
            json!({"id": [ids[0], ids[2]], "select": ["name"]}),
        )
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    let mut values = resp.body["values"].as_array().unwrap().clone();
    values.sort_by_key(|v| v["name"].as_str().unwrap_or_default().to_string());
    assert_eq!(
        values,
        vec![
            json!({"id": ids[0], "name": "Q-A"}),
            json!({"id": ids[2], "name": "Q-C"})
        ]
    );
    assert_eq!(resp.body["totalCount"], 2);
    // Unknown ids are simply absent.
    let resp = api
        .post(
            "/worker/query",
            json!({"id": [ids[1], uuid::Uuid::new_v4().to_string()], "select": ["name"]}),
        )
        .await;
    assert_eq!(
        resp.body["values"],
        json!([{"id": ids[1], "name": "Q-B"}]),
        "{resp}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_and_count_by_status() {
    let server = TestServer::start().await;
    let api = server.org("Acme").await;
    api.bulk_put(
        "worker",
        vec![
            json!({"name": "1", "status": "terminated"}),
            json!({"name": "2", "status": "active"}),
            json!({"name": "3", "status": "terminated"}),
        ],
    )
    .await;
    let resp = api
        .post("/worker/group-and-count", json!({"groupByField": "status"}))
        .await;
    assert_eq!(resp.status, 200, "{resp}");
    assert_eq!(
        resp.body,
        json!({"values": [{"groupId": "terminated", "count": 2}, {"groupId": "active", "count": 1}]})
    );
}

/// A regression guard for the lock around name choice: the race it prevents (two transactions
/// both seeing a name free) needs precise timing, so a missing lock fails this only sometimes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_archives_of_same_named_workers_get_distinct_names() {
    let server = TestServer::start().await;
    let api = server.org("Race").await;
    let ids = api
        .bulk_put(
            "worker",
            (0..10).map(|_| json!({ "name": "Same Name" })).collect(),
        )
        .await;
    let archives = ids.iter().map(|id| {
        let api = api.clone();
        let id = id.clone();
        tokio::spawn(async move {
            api.patch(&format!("/worker/{id}"), json!({ "isArchived": true }))
                .await
        })
    });
    for archive in archives {
        assert_eq!(archive.await.unwrap().status, 200);
    }
    let names: std::collections::HashSet<String> = api
        .list("worker", "isArchived=true&pageSize=100")
        .await
        .iter()
        .map(|w| w["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names.len(),
        10,
        "every archived worker has its own name: {names:?}"
    );
    assert!(
        names.contains("Same Name - (archived 1)") && names.contains("Same Name - (archived 10)"),
        "{names:?}"
    );
}
