//! `prodops deliverable import|export` and the tree view of `deliverable hierarchy`: the real
//! binary against a real server started in-process (SQLite by default, PostgreSQL with
//! PRODOPS_TEST_DATABASE_URL).

mod common;
use common::run;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use prodops_tests::*;
use serde_json::Value;
use uuid::Uuid;

fn cmd(server: &TestServer, api: &Api, dir: &Path) -> Command {
    common::prodops_in(server, api, dir, Duration::from_secs(300))
}

fn write(path: PathBuf, text: &str) -> String {
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// The organization's custom property definitions: color (select), area (number), and old
/// (text, archived).
async fn definitions(api: &Api) {
    api.create(
        "custom-property",
        json!({"key": "color", "name": "Color", "dataType": "select", "options": ["Red", "Blue"]}),
    )
    .await;
    api.create(
        "custom-property",
        json!({"key": "area", "name": "Area", "dataType": "number"}),
    )
    .await;
    let old = api
        .create(
            "custom-property",
            json!({"key": "old", "name": "Old", "dataType": "text"}),
        )
        .await;
    let resp = api
        .delete(&format!("/custom-property/{}", old["id"].as_str().unwrap()))
        .await;
    assert!(resp.status == 200 || resp.status == 204, "{}", resp.status);
}

async fn hierarchy(api: &Api, id: &str) -> Vec<Value> {
    let resp = api.get(&format!("/deliverable/{id}/hierarchy")).await;
    assert_eq!(resp.status, 200);
    resp.body["values"].as_array().unwrap().clone()
}

/// What a round trip must keep of a node.
fn essence(v: &Value) -> Value {
    json!({
        "id": v["id"], "parentId": v["parentId"], "identifier": v["identifier"], "name": v["name"],
        "type": v["type"], "quantity": v["quantity"], "durationSec": v["durationSec"],
        "peopleNum": v["peopleNum"], "costCode": v["costCode"], "data": v["data"],
        "progress": v["progress"], "isArchived": v["isArchived"],
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_writes_parents_first_reports_bad_rows_and_reimport_changes_nothing() {
    let server = TestServer::start().await;
    let api = server.org("Csv").await;
    let dir = tempfile::tempdir().unwrap();
    definitions(&api).await;
    let [order, phase, stage, step, bad, orphan_of_bad, green]: [Uuid; 7] =
        std::array::from_fn(|_| Uuid::now_v7());
    // Children come before their parents in the file.
    let text = format!(
        "id,identifier,name,type,parentId,quantity,data.properties.color,data.properties.area\n\
         {step},S-1,Drill,step,{stage},4,,\n\
         {stage},ST-1,Cut,stage,{phase},1,,\n\
         {phase},P-1,Frame,phase,{order},2,,\n\
         {order},O-1,Order one,order,,10,red,12.5\n\
         {bad},B-1,Bad,phase,{order},-2,,\n\
         {orphan_of_bad},B-2,Orphan,stage,{bad},1,,\n\
         {green},O-2,Green order,order,,1,Green,\n\
         ,O-3,,order,,1,,\n"
    );
    let file = write(dir.path().join("tree.csv"), &text);
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "import", &file, "--batch-size", "2"],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert_eq!(out.json()["accepted"], 4, "{out}");
    assert_eq!(out.json()["rejected"], 4, "{out}");
    for (line, what) in [(6, "quantity"), (7, "parentId"), (8, "color"), (9, "name")] {
        assert!(
            out.stderr
                .lines()
                .any(|l| l.starts_with(&format!("line {line}: ")) && l.contains(what)),
            "line {line} ({what}) reported: {out}"
        );
    }
    let tree = hierarchy(&api, &order.to_string()).await;
    let names: Vec<&str> = tree.iter().map(|v| v["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Order one", "Frame", "Cut", "Drill"]);
    assert_eq!(tree[3]["parentId"], json!(stage.to_string()));
    assert_eq!(tree[3]["rootParentId"], json!(order.to_string()));
    // The select option takes the catalog's spelling; the number is a number.
    assert_eq!(
        tree[0]["data"]["properties"],
        json!({"color": "Red", "area": 12.5})
    );
    assert_eq!(api.count("deliverable", "").await, 4);

    // Running it again changes nothing that was written, and reports the same rows.
    let before: HashMap<String, Value> = tree
        .iter()
        .map(|v| {
            (
                v["id"].as_str().unwrap().to_string(),
                v["updatedAt"].clone(),
            )
        })
        .collect();
    let again = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "import", &file],
    )
    .await;
    assert_eq!(again.code, 5, "{again}");
    assert_eq!(again.json()["accepted"], 4, "{again}");
    for v in hierarchy(&api, &order.to_string()).await {
        assert_eq!(
            before[v["id"].as_str().unwrap()],
            v["updatedAt"],
            "{} unchanged",
            v["name"]
        );
    }
    assert_eq!(api.count("deliverable", "").await, 4);

    // --key identifier: rows without ids update the deliverables carrying the identifiers.
    let keyed = write(
        dir.path().join("keyed.csv"),
        "identifier,quantity\nP-1,3\nS-1,4\nNEW-1,1\n",
    );
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "import", &keyed, "--key", "identifier"],
    )
    .await;
    // NEW-1 has no name and no type: the server refuses to create it.
    assert_eq!(out.code, 5, "{out}");
    assert_eq!(out.json()["accepted"], 2, "{out}");
    assert!(out.stderr.contains("line 4: "), "{out}");
    assert_eq!(
        api.read("deliverable", &phase.to_string()).await["quantity"],
        3
    );
    assert_eq!(
        api.read("deliverable", &step.to_string()).await["updatedAt"],
        before[&step.to_string()]
    );

    // Unknown and archived property columns refuse the file before anything is sent.
    let archived_col = write(
        dir.path().join("old.csv"),
        "name,type,data.properties.old\nX,order,y\n",
    );
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "import", &archived_col],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert!(
        out.stderr.contains("unknown column(s) data.properties.old"),
        "{out}"
    );
    assert_eq!(api.count("deliverable", "").await, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_then_round_trip_into_an_empty_org_reproduces_the_tree() {
    let server = TestServer::start().await;
    let api = server.org("Source").await;
    let dir = tempfile::tempdir().unwrap();
    definitions(&api).await;
    let order = api
        .create(
            "deliverable",
            json!({"name": "Order, \"big\"", "identifier": "O-1", "type": "order", "quantity": 5,
            "data": {"properties": {"color": "Blue", "area": 3}, "tags": ["x"]}}),
        )
        .await;
    let oid = order["id"].as_str().unwrap().to_string();
    let mut phases = Vec::new();
    for p in 0..3 {
        let phase = api.create("deliverable", json!({"name": format!("Phase {p}"), "type": "phase", "parentId": oid, "quantity": p + 1})).await;
        let pid = phase["id"].as_str().unwrap().to_string();
        phases.push(pid.clone());
        for s in 0..2 {
            let stage = api
                .create(
                    "deliverable",
                    json!({"name": format!("Stage {p}.{s}"), "type": "stage", "parentId": pid,
                "durationSec": 60 * s, "data": {"stageId": Uuid::now_v7()}}),
                )
                .await;
            let sid = stage["id"].as_str().unwrap().to_string();
            api.create("deliverable", json!({"name": format!("Step {p}.{s}"), "type": "step", "parentId": sid, "costCode": "C7"})).await;
        }
    }
    // Siblings in an order other than creation, an archived node, progress.
    let resp = api
        .post(
            "/deliverable/reorder",
            json!({"rootParentId": oid, "orderedDeliverableIds": [phases[2], phases[0], phases[1]]}),
        )
        .await;
    assert!(resp.status < 300, "reorder: {}", resp.status);
    let resp = api.delete(&format!("/deliverable/{}", phases[1])).await;
    assert!(resp.status < 300, "archive: {}", resp.status);
    let resp = api
        .post(
            &format!("/deliverable/root/{oid}/progress/{oid}"),
            json!({"type": "send-ahead", "quantity": 2}),
        )
        .await;
    assert!(resp.status < 300, "progress: {} {}", resp.status, resp.body);
    let route = api
        .create("deliverable", json!({"name": "Route", "type": "route"}))
        .await;

    let csv_path = dir.path().join("tree.csv").display().to_string();
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "export", "--out", &csv_path],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let text = std::fs::read_to_string(&csv_path).unwrap();
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        header[..5],
        ["id", "identifier", "name", "type", "parentId"]
    );
    assert!(header.contains(&"data.properties.color".to_string()));
    assert!(header.contains(&"data.properties.area".to_string()));
    assert!(
        !header.iter().any(|h| h == "data.properties.old"),
        "archived definitions are not exported"
    );
    assert!(
        !header.iter().any(|h| h.starts_with("computed")),
        "computed fields are not exported"
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 1 + 3 + 6 + 6 + 1, "every node of both trees");
    // Parents before children.
    let mut seen = std::collections::HashSet::new();
    for r in &rows {
        if !r[4].is_empty() {
            assert!(
                seen.contains(&r[4]),
                "parent {} written before {}",
                &r[4],
                &r[0]
            );
        }
        seen.insert(r[0].to_string());
    }
    assert!(seen.contains(route["id"].as_str().unwrap()));

    // --root: one subtree, as the hierarchy lists it.
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "export", "--root", &phases[0]],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.stdout.lines().count(), 1 + 5, "{out}");

    // Into an empty organization with the same definitions.
    let other = server.org("Target").await;
    definitions(&other).await;
    let out = run(
        cmd(&server, &other, dir.path()),
        &["deliverable", "import", &csv_path, "--batch-size", "3"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["accepted"], rows.len(), "{out}");
    let source = hierarchy(&api, &oid).await;
    let copy = hierarchy(&other, &oid).await;
    assert_eq!(copy.len(), source.len());
    for (a, b) in source.iter().zip(&copy) {
        assert_eq!(essence(a), essence(b), "node {}", a["name"]);
        assert_eq!(a["rootParentId"], b["rootParentId"]);
        assert_eq!(a["computed"]["fullName"], b["computed"]["fullName"]);
    }
    assert_eq!(
        hierarchy(&other, route["id"].as_str().unwrap()).await.len(),
        1
    );

    // Exporting the copy gives the same file but the times; importing it again changes nothing.
    let copy_path = dir.path().join("copy.csv").display().to_string();
    let out = run(
        cmd(&server, &other, dir.path()),
        &["deliverable", "export", "--out", &copy_path],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let strip = |t: &str| -> Vec<Vec<String>> {
        csv::Reader::from_reader(t.as_bytes())
            .records()
            .map(|r| {
                let r = r.unwrap();
                r.iter()
                    .enumerate()
                    .filter(|(i, _)| {
                        !header[*i].ends_with("edAt") || header[*i].starts_with("progress")
                    })
                    .map(|(_, c)| c.to_string())
                    .collect()
            })
            .collect()
    };
    assert_eq!(
        strip(&text),
        strip(&std::fs::read_to_string(&copy_path).unwrap())
    );
    let out = run(
        cmd(&server, &other, dir.path()),
        &["deliverable", "import", &copy_path],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    for (a, b) in copy.iter().zip(hierarchy(&other, &oid).await) {
        assert_eq!(
            a["updatedAt"], b["updatedAt"],
            "re-import changed {}",
            a["name"]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hierarchy_prints_as_a_tree() {
    let server = TestServer::start().await;
    let api = server.org("Tree").await;
    let dir = tempfile::tempdir().unwrap();
    let order = api
        .create("deliverable", json!({"name": "Order", "type": "order"}))
        .await;
    let oid = order["id"].as_str().unwrap();
    let phase = api
        .create(
            "deliverable",
            json!({"name": "Phase A", "type": "phase", "parentId": oid}),
        )
        .await;
    api.create("deliverable", json!({"name": "Stage A1", "type": "stage", "parentId": phase["id"], "data": {"stageId": Uuid::now_v7()}})).await;
    api.create(
        "deliverable",
        json!({"name": "Phase B", "type": "phase", "parentId": oid}),
    )
    .await;
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "hierarchy", oid, "--output", "table"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("├─ Phase A"), "{out}");
    assert!(out.stdout.contains("│  └─ Stage A1"), "{out}");
    assert!(out.stdout.contains("└─ Phase B"), "{out}");
    assert!(out.stdout.contains("4 node(s)"), "{out}");
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "hierarchy", oid, "--output", "json"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json().as_array().unwrap().len(), 4);
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "deliverable",
            "hierarchy",
            &Uuid::now_v7().to_string(),
            "--output",
            "table",
        ],
    )
    .await;
    assert_eq!(out.code, 4, "{out}");
}

/// A tree larger than one part of a streamed hierarchy body and than one batch of the server's
/// record reads, its siblings reordered: the export streams it in order, the import of the
/// export into an empty organization (one bulk batch, refreshed once at its end) gives every
/// node the same computed fields as the source, and importing it again writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_tree_round_trips_with_the_same_computed_fields() {
    let server = TestServer::start().await;
    let api = server.org("Source").await;
    let dir = tempfile::tempdir().unwrap();
    let order = Uuid::now_v7().to_string();
    let mut records = vec![json!({"id": order, "name": "Order", "type": "order",
        "data": {"dueDate": "2030-01-01", "tags": ["o"]}})];
    let mut phases = Vec::new();
    for p in 0..12 {
        let phase = Uuid::new_v4().to_string();
        records.push(
            json!({"id": phase, "name": format!("Phase {p}"), "type": "phase", "parentId": order}),
        );
        phases.push(phase.clone());
        for s in 0..10 {
            let stage = Uuid::new_v4().to_string();
            records.push(
                json!({"id": stage, "name": format!("Stage {p}.{s}"), "type": "stage",
                "parentId": phase, "data": {"stageId": Uuid::from_u128(s as u128 % 3 + 1),
                "workerIds": [Uuid::from_u128(100 + s as u128)]}}),
            );
            for k in 0..10 {
                records.push(
                    json!({"id": Uuid::new_v4(), "name": format!("Step {p}.{s}.{k}"),
                    "type": "step", "parentId": stage, "quantity": k + 1,
                    "data": {"tags": [format!("k{k}")], "dueDate": "2020-01-01"}}),
                );
            }
        }
    }
    // The source in small batches.
    for batch in records.chunks(97) {
        let resp = api
            .put("/deliverable/bulk", Value::Array(batch.to_vec()))
            .await;
        assert_eq!(resp.status, 200, "{}", resp.body);
    }
    phases.reverse();
    let resp = api
        .post(
            "/deliverable/reorder",
            json!({"rootParentId": order, "orderedDeliverableIds": phases}),
        )
        .await;
    assert!(resp.status < 300, "reorder: {}", resp.status);
    let resp = api
        .post(
            &format!("/deliverable/root/{order}/progress/{}", phases[3]),
            json!({"type": "complete"}),
        )
        .await;
    assert!(resp.status < 300, "progress: {} {}", resp.status, resp.body);

    let csv_path = dir.path().join("big.csv").display().to_string();
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "export", "--out", &csv_path],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let source = hierarchy(&api, &order).await;
    assert_eq!(source.len(), records.len());
    let exported: Vec<String> = csv::Reader::from_path(&csv_path)
        .unwrap()
        .records()
        .map(|r| r.unwrap()[0].to_string())
        .collect();
    assert_eq!(exported, ids_of(&source), "the hierarchy's order");

    let other = server.org("Target").await;
    let out = run(
        cmd(&server, &other, dir.path()),
        &["deliverable", "import", &csv_path],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["accepted"], records.len(), "{out}");
    let copy = hierarchy(&other, &order).await;
    assert_eq!(ids_of(&copy), ids_of(&source));
    for (a, b) in source.iter().zip(&copy) {
        assert_eq!(essence(a), essence(b), "node {}", a["name"]);
        assert_eq!(a["rootParentId"], b["rootParentId"], "node {}", a["name"]);
        assert_eq!(a["computed"], b["computed"], "node {}", a["name"]);
    }

    let out = run(
        cmd(&server, &other, dir.path()),
        &["deliverable", "import", &csv_path],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    for (a, b) in copy.iter().zip(hierarchy(&other, &order).await) {
        assert_eq!(
            a["updatedAt"], b["updatedAt"],
            "re-import changed {}",
            a["name"]
        );
    }
}

/// Records made through the API get generated identifiers (`D-000001`, ...), so an import
/// keyed by identifier finds them: it updates them, creates nothing, and a second run changes
/// nothing. Search finds them by identifier too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_by_identifier_updates_deliverables_made_through_the_api() {
    let server = TestServer::start().await;
    let api = server.org("Keyed").await;
    let dir = tempfile::tempdir().unwrap();
    let order = api
        .create("deliverable", json!({"name": "Order", "type": "order"}))
        .await;
    let phase = api
        .create(
            "deliverable",
            json!({"name": "Phase", "type": "phase", "parentId": order["id"]}),
        )
        .await;
    assert_eq!(order["identifier"], "D-000001");
    assert_eq!(phase["identifier"], "D-000002");
    let found = api.list("deliverable", "search=D-000002").await;
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["id"], phase["id"]);

    let keyed = write(
        dir.path().join("keyed.csv"),
        "identifier,name,quantity\nD-000001,Order renamed,5\nD-000002,Phase,7\n",
    );
    let mut stamps = Vec::new();
    for run_no in 0..2 {
        let out = run(
            cmd(&server, &api, dir.path()),
            &["deliverable", "import", &keyed, "--key", "identifier"],
        )
        .await;
        assert_eq!(out.code, 0, "run {run_no}: {out}");
        assert_eq!(out.json()["accepted"], 2, "{out}");
        let now = api.read("deliverable", order["id"].as_str().unwrap()).await;
        stamps.push(now["updatedAt"].clone());
    }
    assert_eq!(stamps[0], stamps[1], "the second run changed nothing");
    assert_eq!(api.count("deliverable", "").await, 2, "nothing created");
    let order_now = api.read("deliverable", order["id"].as_str().unwrap()).await;
    assert_eq!(order_now["name"], "Order renamed");
    assert_eq!(order_now["quantity"], 5);
    assert_eq!(order_now["identifier"], "D-000001");
    let phase_now = api.read("deliverable", phase["id"].as_str().unwrap()).await;
    assert_eq!(phase_now["quantity"], 7);
    assert_eq!(phase_now["parentId"], order["id"]);
    // An export carries the generated identifiers, and its re-import changes nothing.
    let file = dir.path().join("export.csv");
    let out = run(
        cmd(&server, &api, dir.path()),
        &[
            "deliverable",
            "export",
            "--out",
            &file.display().to_string(),
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("D-000001") && text.contains("D-000002"),
        "{text}"
    );
    let stamp = order_now["updatedAt"].clone();
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "import", &file.display().to_string()],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let again = api.read("deliverable", order["id"].as_str().unwrap()).await;
    assert_eq!(again["updatedAt"], stamp, "a re-import changes nothing");
}

/// Issue 35 item 5: an import that sets a predecessor done releases its successor, and one that
/// archives it too (readiness follows the bulk PUT an import sends).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_import_moving_a_predecessor_moves_its_successor() {
    let server = TestServer::start().await;
    let api = server.org("Ready").await;
    let dir = tempfile::tempdir().unwrap();
    let order = api
        .create("deliverable", json!({"name": "Order", "type": "order"}))
        .await;
    let mut ids = Vec::new();
    for name in ["a", "b", "c"] {
        let node = api
            .create(
                "deliverable",
                json!({"name": name, "type": "step", "parentId": order["id"]}),
            )
            .await;
        ids.push(node["id"].as_str().unwrap().to_string());
    }
    for successor in [&ids[1], &ids[2]] {
        api.create(
            "dependency",
            json!({"predecessorId": ids[0], "successorId": successor}),
        )
        .await;
    }
    let status = |v: Value| {
        v["progress"]["status"]
            .as_str()
            .unwrap_or("none")
            .to_string()
    };
    assert_eq!(status(api.read("deliverable", &ids[1]).await), "waiting");
    // D-000002 is `a`: done by import.
    let done = write(
        dir.path().join("done.csv"),
        "identifier,progress.status\nD-000002,done\n",
    );
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "import", &done, "--key", "identifier"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    for successor in [&ids[1], &ids[2]] {
        assert_eq!(status(api.read("deliverable", successor).await), "todo");
    }
    // Back to todo and then archived, by import: held back, then released again.
    let back = write(
        dir.path().join("back.csv"),
        "identifier,progress.status\nD-000002,todo\n",
    );
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "import", &back, "--key", "identifier"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(status(api.read("deliverable", &ids[2]).await), "waiting");
    let archived = write(
        dir.path().join("archived.csv"),
        "identifier,isArchived\nD-000002,true\n",
    );
    let out = run(
        cmd(&server, &api, dir.path()),
        &["deliverable", "import", &archived, "--key", "identifier"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(status(api.read("deliverable", &ids[2]).await), "todo");
}
