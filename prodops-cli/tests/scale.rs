//! The CLI at real sizes (issue 13), the real `prodops` binary against a real server started
//! in-process (SQLite by default, PostgreSQL with PRODOPS_TEST_DATABASE_URL): a 30,000-row
//! worker import by `customerIdentifier` run twice, and a 100,000-node deliverable tree
//! imported and exported. Nothing here is timed: the tests assert counts and contents only.

mod common;
use common::{Out, run};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use prodops_tests::*;
use serde_json::Value;
use uuid::Uuid;

/// The binary with this organization's instance and key, an isolated config directory and a
/// bound (not a speed assertion: only so that a hung run fails instead of blocking the suite).
fn cmd(server: &TestServer, api: &Api, dir: &Path) -> Command {
    common::prodops_in(server, api, dir, Duration::from_secs(1800))
}

fn ok(out: &Out) {
    assert_eq!(out.code, 0, "{out}");
}

/// Every record of a resource, archived or not, by id, read 10,000 at a time.
async fn all_by_id(api: &Api, resource: &str) -> HashMap<String, Value> {
    let mut all = HashMap::new();
    for archived in [false, true] {
        for page in 1.. {
            let values = api
                .list(
                    resource,
                    &format!("isArchived={archived}&pageSize=10000&page={page}"),
                )
                .await;
            let n = values.len();
            for v in values {
                all.insert(v["id"].as_str().unwrap().to_string(), v);
            }
            if n < 10_000 {
                break;
            }
        }
    }
    all
}

const WORKERS: usize = 30_000;
const STATUSES: [&str; 3] = ["active", "inactive", "terminated"];

/// Every record of `first` is in `second` exactly as it was (`updatedAt` included).
fn assert_unchanged(first: &HashMap<String, Value>, second: &HashMap<String, Value>) {
    let moved: Vec<&String> = first
        .iter()
        .filter(|(id, r)| second.get(*id) != Some(*r))
        .map(|(id, _)| id)
        .take(5)
        .collect();
    // What changed of the first one: each top-level field whose value differs.
    let fields: Vec<String> = moved
        .first()
        .map(|id| {
            let (a, b) = (&first[*id], &second.get(*id).cloned().unwrap_or_default());
            a.as_object()
                .into_iter()
                .flatten()
                .filter(|(k, v)| b.get(k.as_str()) != Some(*v))
                .map(|(k, v)| format!("{k}: {v} -> {}", b.get(k.as_str()).unwrap_or(&Value::Null)))
                .collect()
        })
        .unwrap_or_default();
    assert!(
        moved.is_empty(),
        "records changed by the re-import: {moved:?}; the first one's changed fields: {fields:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_import_of_30000_rows_by_key_twice_changes_nothing_the_second_time() {
    let server = TestServer::start().await;
    let api = server.org("Roster").await;
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("name,customerIdentifier,status,exemptFromAssignments\n");
    for i in 0..WORKERS {
        writeln!(
            text,
            "Person {i},EMP-{i:06},{},{}",
            STATUSES[i % 3],
            i % 7 == 0
        )
        .unwrap();
    }
    let file = dir.path().join("roster.csv");
    std::fs::write(&file, text).unwrap();
    let file = file.display().to_string();
    let args = [
        "worker",
        "import",
        file.as_str(),
        "--key",
        "customerIdentifier",
        "--output",
        "json",
    ];

    let out = run(cmd(&server, &api, dir.path()), &args).await;
    ok(&out);
    assert_eq!(out.json()["rows"], WORKERS, "{out}");
    assert_eq!(out.json()["accepted"], WORKERS, "{out}");
    assert_eq!(out.json()["rejected"], 0, "{out}");
    assert_eq!(api.total("worker").await, WORKERS as u64);
    let first = all_by_id(&api, "worker").await;
    assert_eq!(first.len(), WORKERS);
    let by_key: HashMap<&str, &Value> = first
        .values()
        .map(|w| (w["customerIdentifier"].as_str().unwrap(), w))
        .collect();
    assert_eq!(by_key.len(), WORKERS, "one worker per key");
    for i in [0, 1, 2, 6_999, 14_000, 29_999] {
        let w = by_key[format!("EMP-{i:06}").as_str()];
        assert_eq!(w["name"], format!("Person {i}"));
        assert_eq!(w["status"], STATUSES[i % 3]);
        assert_eq!(w["exemptFromAssignments"], i % 7 == 0);
    }

    // The same file again: every row matches its worker by key and equals it, so nothing is
    // written: the same records, `updatedAt` included.
    let out = run(cmd(&server, &api, dir.path()), &args).await;
    ok(&out);
    assert_eq!(out.json()["accepted"], WORKERS, "{out}");
    assert_eq!(out.json()["rejected"], 0, "{out}");
    assert_eq!(api.total("worker").await, WORKERS as u64);
    let second = all_by_id(&api, "worker").await;
    assert_eq!(second.len(), WORKERS);
    assert_unchanged(&first, &second);
}

/// The shape of the tree: one order, `PHASES` phases under it, `STAGES` stages under each
/// phase, `STEPS` steps under each stage: 1 + 9 + 90 + 99,900 = 100,000 nodes.
const PHASES: usize = 9;
const STAGES: usize = 10;
const STEPS: usize = 1_110;
const NODES: usize = 1 + PHASES + PHASES * STAGES + PHASES * STAGES * STEPS;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliverable_tree_of_100000_nodes_imported_and_exported() {
    assert_eq!(NODES, 100_000);
    let server = TestServer::start().await;
    let api = server.org("Big tree").await;
    let dir = tempfile::tempdir().unwrap();

    // Ids made here so that the file names parents by id, as an export does. The file lists
    // each stage's steps before the stage itself, so the importer must hold children back until
    // their parents are written.
    let order = Uuid::now_v7();
    let mut parent_of: HashMap<Uuid, Option<Uuid>> = HashMap::with_capacity(NODES);
    let mut text = String::from("id,identifier,name,type,parentId,quantity\n");
    writeln!(text, "{order},ORD-1,Order,order,,3").unwrap();
    parent_of.insert(order, None);
    let mut sample_step = None;
    for p in 0..PHASES {
        let phase = Uuid::now_v7();
        writeln!(text, "{phase},PH-{p},Phase {p},phase,{order},1").unwrap();
        parent_of.insert(phase, Some(order));
        for s in 0..STAGES {
            let stage = Uuid::now_v7();
            for t in 0..STEPS {
                let step = Uuid::now_v7();
                writeln!(
                    text,
                    "{step},ST-{p}-{s}-{t},Step {p}.{s}.{t},step,{stage},{}",
                    1 + t % 5
                )
                .unwrap();
                parent_of.insert(step, Some(stage));
                if (p, s, t) == (4, 7, 1_000) {
                    sample_step = Some((phase, stage, step));
                }
            }
            writeln!(text, "{stage},SG-{p}-{s},Stage {p}.{s},stage,{phase},1").unwrap();
            parent_of.insert(stage, Some(phase));
        }
    }
    let file = dir.path().join("tree.csv");
    std::fs::write(&file, &text).unwrap();
    let file = file.display().to_string();

    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "import", &file, "--output", "json"],
    )
    .await;
    ok(&out);
    assert_eq!(out.json()["rows"], NODES, "{out}");
    assert_eq!(out.json()["accepted"], NODES, "{out}");
    assert_eq!(out.json()["rejected"], 0, "{out}");
    assert_eq!(api.count("deliverable", "").await, NODES as u64);
    assert_eq!(
        api.count("deliverable", &format!("rootParentId={order}"))
            .await,
        NODES as u64 - 1
    );
    assert_eq!(api.count("deliverable", "type=step").await, 99_900);

    // Computed fields, spot-checked against the shape.
    let root = api.read("deliverable", &order.to_string()).await;
    let computed = &root["computed"];
    assert_eq!(computed["isLeaf"], false, "{computed}");
    assert_eq!(
        computed["currentChildren"].as_array().unwrap().len(),
        PHASES
    );
    let phase_names: Vec<String> = (0..PHASES).map(|p| format!("Phase {p}")).collect();
    assert_eq!(computed["containedPhaseNames"], json!(phase_names));
    assert_eq!(computed["rootType"], "order");
    let (phase, stage, step) = sample_step.unwrap();
    let stage_rec = api.read("deliverable", &stage.to_string()).await;
    assert_eq!(
        stage_rec["computed"]["currentChildren"]
            .as_array()
            .unwrap()
            .len(),
        STEPS
    );
    assert_eq!(stage_rec["computed"]["phase"], "Phase 4");
    let step_rec = api.read("deliverable", &step.to_string()).await;
    assert_eq!(step_rec["rootParentId"], order.to_string());
    assert_eq!(step_rec["parentId"], stage.to_string());
    let c = &step_rec["computed"];
    assert_eq!(c["isLeaf"], true, "{c}");
    assert_eq!(
        c["fullPath"],
        json!([
            order.to_string(),
            phase.to_string(),
            stage.to_string(),
            step.to_string()
        ])
    );
    assert_eq!(
        c["fullName"],
        json!(["Order", "Phase 4", "Stage 4.7", "Step 4.7.1000"])
    );
    assert_eq!(c["phase"], "Phase 4");
    assert_eq!(c["phasesPath"], json!(["Phase 4"]));
    assert_eq!(c["rootType"], "order");

    // Export: the whole tree read back through the CLI, every node once, parents first.
    let exported = dir.path().join("export.csv").display().to_string();
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "export", "--out", &exported],
    )
    .await;
    ok(&out);
    let mut reader = csv::Reader::from_path(&exported).unwrap();
    let headers = reader.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (id_col, parent_col, name_col, qty_col) =
        (col("id"), col("parentId"), col("name"), col("quantity"));
    let mut seen: HashMap<Uuid, usize> = HashMap::with_capacity(NODES);
    for (line, record) in reader.records().enumerate() {
        let record = record.unwrap();
        let id: Uuid = record[id_col].parse().unwrap();
        let parent = match &record[parent_col] {
            "" => None,
            p => Some(p.parse::<Uuid>().unwrap()),
        };
        assert_eq!(parent_of.get(&id), Some(&parent), "line {line}: {id}");
        if let Some(parent) = parent {
            assert!(
                seen.contains_key(&parent),
                "line {line}: parent {parent} before its child {id}"
            );
        }
        if id == step {
            assert_eq!(&record[name_col], "Step 4.7.1000");
            assert_eq!(&record[qty_col], "1");
        }
        assert!(seen.insert(id, line).is_none(), "{id} exported twice");
    }
    assert_eq!(seen.len(), NODES, "every node exported once");

    // The export imported again: every row an update that changes nothing (each batch reads
    // ahead what its updates read, `Hooks::read_ahead`), so nothing is written: the same
    // records, `updatedAt` included.
    let first = all_by_id(&api, "deliverable").await;
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "import", &exported, "--output", "json"],
    )
    .await;
    ok(&out);
    assert_eq!(out.json()["accepted"], NODES, "{out}");
    assert_eq!(out.json()["rejected"], 0, "{out}");
    let second = all_by_id(&api, "deliverable").await;
    assert_eq!(second.len(), NODES);
    assert_unchanged(&first, &second);
}
