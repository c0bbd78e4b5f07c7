//! `--dry-run` of the CLI's writes: the real `prodops` binary against a real server. A write
//! verb or an action prints the server's dry run (`{dryRun, answer, ledger, events}`) and
//! changes nothing; `worker import --dry-run` prints the server's own counts of created,
//! updated, unchanged and refused rows, the refused ones by line.

mod common;
use common::{Out, prodops_in, run};
use std::time::Duration;

use prodops_tests::*;

fn ok(out: &Out) {
    assert_eq!(out.code, 0, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_verbs_and_actions_print_the_servers_dry_run() {
    let server = TestServer::start().await;
    let api = server.org("CliDry").await;
    let dir = tempfile::tempdir().unwrap();
    let cmd = || prodops_in(&server, &api, dir.path(), Duration::from_secs(120));

    // create
    let out = run(
        cmd(),
        &[
            "worker",
            "create",
            "--set",
            "name=Ann",
            "--dry-run",
            "-o",
            "json",
        ],
    )
    .await;
    ok(&out);
    let report = out.json();
    assert_eq!(report["dryRun"], true, "{out}");
    assert_eq!(report["answer"]["name"], "Ann", "{out}");
    assert_eq!(report["events"][0]["type"], "worker.created", "{out}");
    assert_eq!(report["ledger"], json!([]), "{out}");
    assert_eq!(api.total("worker").await, 0, "a dry run creates nothing");

    // update
    let ann = api.create("worker", json!({"name": "Ann"})).await;
    let id = ann["id"].as_str().unwrap();
    let out = run(
        cmd(),
        &[
            "worker",
            "update",
            id,
            "--set",
            "name=Bea",
            "--dry-run",
            "--jq",
            ".answer.name",
        ],
    )
    .await;
    ok(&out);
    assert_eq!(out.stdout, "Bea\n", "{out}");
    assert_eq!(api.read("worker", id).await["name"], "Ann");

    // an action
    let delivery = api
        .post("/delivery/outbound", json!({"name": "Truck"}))
        .await;
    assert_eq!(delivery.status, 201, "{delivery}");
    let delivery_id = delivery.body["id"].as_str().unwrap();
    let out = run(
        cmd(),
        &[
            "delivery",
            "start",
            delivery_id,
            "--reason",
            "loaded",
            "--dry-run",
            "-o",
            "json",
        ],
    )
    .await;
    ok(&out);
    let report = out.json();
    assert_eq!(report["answer"]["status"], "in_transit", "{out}");
    assert_eq!(report["answer"]["lastReason"], "loaded", "{out}");
    assert_eq!(report["events"][0]["type"], "delivery.in_transit", "{out}");
    assert_eq!(
        api.read("delivery", delivery_id).await["status"],
        "scheduled",
        "a dry run starts nothing"
    );

    // a refusal is the write's
    let out = run(
        cmd(),
        &["worker", "update", id, "--set", "name=", "--dry-run"],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert!(out.stderr.contains("name"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_dry_run_prints_the_servers_counts() {
    let server = TestServer::start().await;
    let api = server.org("CliDryImport").await;
    let dir = tempfile::tempdir().unwrap();
    let same = api
        .create(
            "worker",
            json!({"name": "Same", "customerIdentifier": "K-1", "status": "active"}),
        )
        .await;
    let old = api
        .create(
            "worker",
            json!({"name": "Old", "customerIdentifier": "K-2", "status": "active"}),
        )
        .await;
    let gone = api
        .create(
            "worker",
            json!({"name": "Gone", "customerIdentifier": "K-5"}),
        )
        .await;
    let gone_id = gone["id"].as_str().unwrap();
    let archived = api
        .patch(&format!("/worker/{gone_id}"), json!({"isArchived": true}))
        .await;
    assert_eq!(archived.status, 200, "{archived}");
    let before = api.list("worker", "isArchived=false").await;
    let gone_before = api.read("worker", gone_id).await;
    // Line 2 unchanged, 3 updated, 4 created, 5 refused here (a status no worker has), 6
    // refused by the server (a change to an archived worker).
    let file = dir.path().join("workers.csv");
    std::fs::write(
        &file,
        format!(
            "id,name,customerIdentifier,status\n{},Same,K-1,active\n{},Renamed,K-2,active\n,New,K-3,active\n,Bad,K-4,bogus\n{gone_id},Back,K-5,active\n",
            same["id"].as_str().unwrap(),
            old["id"].as_str().unwrap(),
        ),
    )
    .unwrap();
    let out = run(
        prodops_in(&server, &api, dir.path(), Duration::from_secs(120)),
        &[
            "worker",
            "import",
            file.to_str().unwrap(),
            "--dry-run",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    let summary = out.json();
    assert_eq!(summary["dryRun"], true, "{out}");
    assert_eq!(summary["rows"], 5, "{out}");
    assert_eq!(summary["created"], 1, "{out}");
    assert_eq!(summary["updated"], 1, "{out}");
    assert_eq!(summary["unchanged"], 1, "{out}");
    assert_eq!(summary["rejected"], 2, "{out}");
    assert_eq!(summary["accepted"], 3, "{out}");
    assert!(out.stderr.contains("line 5:"), "{out}");
    assert!(out.stderr.contains("line 6: isArchived"), "{out}");
    assert_eq!(
        api.list("worker", "isArchived=false").await,
        before,
        "a dry run writes nothing"
    );
    assert_eq!(api.read("worker", gone_id).await, gone_before);

    // The real import then does what the dry run said.
    let out = run(
        prodops_in(&server, &api, dir.path(), Duration::from_secs(120)),
        &["worker", "import", file.to_str().unwrap(), "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert_eq!(out.json()["accepted"], 3, "{out}");
    assert_eq!(api.total("worker").await, 4);
    assert_eq!(
        api.read("worker", old["id"].as_str().unwrap()).await["name"],
        "Renamed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliverable_import_dry_run_counts_a_tree_and_writes_nothing() {
    let server = TestServer::start().await;
    let api = server.org("CliDryTree").await;
    let dir = tempfile::tempdir().unwrap();
    let [order, phase, step, bad] = [(); 4].map(|()| uuid::Uuid::now_v7());
    // Children before their parents; line 5 is refused here (a negative quantity).
    let file = dir.path().join("tree.csv");
    std::fs::write(
        &file,
        format!(
            "id,identifier,name,type,parentId,quantity\n\
             {step},S-1,Drill,step,{phase},4\n\
             {phase},P-1,Frame,phase,{order},2\n\
             {order},O-1,Order one,order,,10\n\
             {bad},B-1,Bad,phase,{order},-2\n"
        ),
    )
    .unwrap();
    let out = run(
        prodops_in(&server, &api, dir.path(), Duration::from_secs(120)),
        &[
            "deliverable",
            "import",
            file.to_str().unwrap(),
            "--dry-run",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    let summary = out.json();
    assert_eq!(summary["created"], 3, "{out}");
    assert_eq!(summary["updated"], 0, "{out}");
    assert_eq!(summary["unchanged"], 0, "{out}");
    assert_eq!(summary["rejected"], 1, "{out}");
    assert!(out.stderr.contains("line 5:"), "{out}");
    assert_eq!(
        api.total("deliverable").await,
        0,
        "a dry run writes nothing"
    );
}
