//! Catalog entries and the history that references them (spec 2.8 rules 2 and 5): the durable
//! background job behind code renames, and deletes that deactivate instead. Against a real
//! database (`PRODOPS_TEST_DATABASE_URL` for PostgreSQL, else a fresh SQLite file).
//! Timesheets are read-only through the API, so the test seeds one through the storage layer.

mod common;
use common::database_url;

use std::time::{Duration, Instant};

use prodops_server::admin::CreatedOrg;
use prodops_server::store::records;
use prodops_server::{Config, RunningServer, start};
use serde_json::{Value, json};
use uuid::Uuid;

/// A valid timesheet of `org` naming `pay_types`, as stored.
fn timesheet(org: Uuid, pay_types: &[&str]) -> (Uuid, Value) {
    let id = Uuid::now_v7();
    let kind = prodops_core::registry::by_path("timesheet").expect("timesheet is a resource");
    let record = kind
        .check(
            json!({
                "id": id, "organizationId": org, "workerId": Uuid::now_v7(), "date": "2026-11-20",
                "hours": 8.0, "payTypes": pay_types,
                "createdAt": "2026-11-20T08:00:00.000Z", "updatedAt": "2026-11-20T08:00:00.000Z"
            }),
            None,
        )
        .expect("a valid timesheet");
    (id, record)
}

async fn seed_timesheet(server: &RunningServer, org: Uuid, pay_types: &[&str]) -> Uuid {
    let (id, record) = timesheet(org, pay_types);
    server
        .store()
        .write(move |tx| records::insert(tx, "timesheet", org, &record))
        .await
        .expect("timesheet stored");
    id
}

/// A server with two organizations, and the pay type `OT` of the first one (`acme`).
struct Renaming {
    /// The SQLite file's directory, kept as long as the server.
    dir: tempfile::TempDir,
    server: RunningServer,
    acme: CreatedOrg,
    other: CreatedOrg,
    http: reqwest::Client,
    /// `http://HOST:PORT/api/v2`.
    base: String,
    entry: Value,
}

async fn renaming() -> Renaming {
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new(database_url(&dir))).await.unwrap();
    let acme = server.create_org("acme", &[]).await.unwrap();
    let other = server.create_org("other", &[]).await.unwrap();
    let http = reqwest::Client::new();
    let base = format!("{}/api/v2", server.base_url());

    let entry: Value = http
        .post(format!("{base}/catalog-entry"))
        .header("X-API-Key", &acme.api_key)
        .json(&json!({ "catalog": "pay_type", "code": "OT" }))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    Renaming {
        dir,
        server,
        acme,
        other,
        http,
        base,
        entry,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renaming_a_pay_type_code_rewrites_timesheets_of_that_organization_only() {
    let Renaming {
        dir: _dir,
        server,
        acme,
        other,
        http,
        base,
        entry,
    } = renaming().await;
    let mine = seed_timesheet(&server, acme.organization_id, &["OT", "REG"]).await;
    let theirs = seed_timesheet(&server, other.organization_id, &["OT"]).await;

    let renamed = http
        .patch(format!(
            "{base}/catalog-entry/{}",
            entry["id"].as_str().unwrap()
        ))
        .header("X-API-Key", &acme.api_key)
        .json(&json!({ "code": "OVT" }))
        .send()
        .await
        .unwrap();
    assert_eq!(renamed.status(), 200);

    // A bound on a background job, only so that a job that never runs fails instead of hanging.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let sheet: Value = http
            .get(format!("{base}/timesheet/{mine}"))
            .header("X-API-Key", &acme.api_key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if sheet["payTypes"] == json!(["OVT", "REG"]) {
            break;
        }
        assert_eq!(
            sheet["payTypes"],
            json!(["OT", "REG"]),
            "either the old or the new codes, never a mix"
        );
        assert!(
            Instant::now() < deadline,
            "the rename job did not rewrite the timesheet in time"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let untouched: Value = http
        .get(format!("{base}/timesheet/{theirs}"))
        .header("X-API-Key", &other.api_key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        untouched["payTypes"],
        json!(["OT"]),
        "another organization's references are not touched"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_entry_that_history_references_deactivates_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(Config::new(database_url(&dir))).await.unwrap();
    let acme = server.create_org("acme", &[]).await.unwrap();
    let http = reqwest::Client::new();
    let base = format!("{}/api/v2", server.base_url());
    let create = |code: &'static str| {
        let http = http.clone();
        let url = format!("{base}/catalog-entry");
        let key = acme.api_key.clone();
        async move {
            let entry: Value = http
                .post(url)
                .header("X-API-Key", key)
                .json(&json!({ "catalog": "pay_type", "code": code }))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            entry["id"].as_str().unwrap().to_string()
        }
    };
    let used = create("OT").await;
    let unused = create("HOL").await;
    seed_timesheet(&server, acme.organization_id, &["OT"]).await;

    for id in [&used, &unused] {
        let deleted = http
            .delete(format!("{base}/catalog-entry/{id}"))
            .header("X-API-Key", &acme.api_key)
            .send()
            .await
            .unwrap();
        assert_eq!(deleted.status(), 204);
    }
    let kept = http
        .get(format!("{base}/catalog-entry/{used}"))
        .header("X-API-Key", &acme.api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(kept.status(), 200, "a referenced entry is kept");
    let kept: Value = kept.json().await.unwrap();
    assert_eq!(kept["isActive"], json!(false), "and deactivated: {kept}");
    let gone = http
        .get(format!("{base}/catalog-entry/{unused}"))
        .header("X-API-Key", &acme.api_key)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404, "an unreferenced entry is deleted");
    server.shutdown().await;
}

/// Every event of `org` of the given `type` filter, oldest first, read page by page.
async fn events_of(http: &reqwest::Client, base: &str, key: &str, types: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after = "0".to_string();
    loop {
        let page: Value = http
            .get(format!(
                "{base}/event?type={types}&after={after}&limit=1000"
            ))
            .header("X-API-Key", key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let values = page["values"].as_array().expect("a page of events").clone();
        if values.is_empty() {
            return out;
        }
        after = page["nextCursor"].as_str().unwrap().to_string();
        out.extend(values);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rename_announces_every_rewritten_timesheet_then_the_rename_itself() {
    // More timesheets than one batch of the job (500), so the rename spans several
    // transactions and only the last one announces it done.
    const SHEETS: usize = 1_201;
    let Renaming {
        dir: _dir,
        server,
        acme,
        other,
        http,
        base,
        entry,
    } = renaming().await;
    let entry_id = entry["id"].as_str().unwrap().to_string();
    let org = acme.organization_id;
    let mut seeded: Vec<String> = server
        .store()
        .write(move |tx| {
            (0..SHEETS)
                .map(|_| {
                    let (id, record) = timesheet(org, &["OT", "REG"]);
                    records::insert(tx, "timesheet", org, &record)?;
                    Ok(id.to_string())
                })
                .collect::<Result<Vec<_>, prodops_server::store::StoreError>>()
        })
        .await
        .expect("timesheets stored");
    seed_timesheet(&server, other.organization_id, &["OT"]).await;

    let renamed = http
        .patch(format!("{base}/catalog-entry/{entry_id}"))
        .header("X-API-Key", &acme.api_key)
        .json(&json!({ "code": "OVT" }))
        .send()
        .await
        .unwrap();
    assert_eq!(renamed.status(), 200);
    let request_id = renamed.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();

    // A bound on a background job, only so that a job that never runs fails instead of hanging.
    let deadline = Instant::now() + Duration::from_secs(300);
    let done = loop {
        let done = events_of(&http, &base, &acme.api_key, "catalog-entry.renamed").await;
        if !done.is_empty() {
            break done;
        }
        assert!(
            Instant::now() < deadline,
            "the rename was never announced done"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done.len(), 1, "one rename, announced once: {done:?}");
    let done = &done[0];
    assert_eq!(done["resource"], "catalog-entry");
    assert_eq!(done["recordId"], entry_id.as_str());
    assert_eq!(done["data"]["code"], "OVT");
    assert_eq!(done["changed"], json!(["code"]));
    assert_eq!(
        done["requestId"],
        request_id.as_str(),
        "the rename's request"
    );
    let update = events_of(&http, &base, &acme.api_key, "catalog-entry.updated").await;
    assert_eq!(update.len(), 1, "{update:?}");
    assert_eq!(done["keyId"], update[0]["keyId"], "the key that renamed");

    let rewrites = events_of(&http, &base, &acme.api_key, "timesheet.*").await;
    assert_eq!(rewrites.len(), SHEETS, "one event per rewritten timesheet");
    let cursor = |e: &Value| e["cursor"].as_str().unwrap().parse::<u64>().unwrap();
    for e in &rewrites {
        assert_eq!(e["type"], "timesheet.updated", "{e}");
        assert_eq!(e["changed"], json!(["payTypes"]), "{e}");
        assert_eq!(e["data"]["payTypes"], json!(["OVT", "REG"]), "{e}");
        assert_eq!(e["keyId"], done["keyId"]);
        assert_eq!(e["requestId"], request_id.as_str());
        assert!(cursor(e) < cursor(done), "the rewrites come before the end");
    }
    let mut announced: Vec<String> = rewrites
        .iter()
        .map(|e| e["recordId"].as_str().unwrap().to_string())
        .collect();
    announced.sort();
    seeded.sort();
    assert_eq!(announced, seeded, "each timesheet exactly once");

    let theirs = events_of(&http, &base, &other.api_key, "timesheet.*,catalog-entry.*").await;
    assert!(
        theirs.is_empty(),
        "nothing in another organization's feed: {theirs:?}"
    );
    server.shutdown().await;
}
