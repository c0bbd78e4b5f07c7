//! The action commands of the real `prodops` binary against a real in-process server
//! (prodops-tests harness; `PRODOPS_TEST_DATABASE_URL` for PostgreSQL): exit codes and outputs.

mod common;
use common::Out;
use std::time::Duration;

use assert_cmd::Command;
use prodops_tests::*;
use serde_json::Value;

/// Runs `prodops ARGS` as this organization, off the async runtime (the server lives on it).
async fn run(server: &TestServer, api: &Api, dir: &std::path::Path, args: &[&str]) -> Out {
    let mut cmd = Command::cargo_bin("prodops").unwrap();
    cmd.env("PRODOPS_CONFIG_DIR", dir.join("config"))
        .env("PRODOPS_CREDENTIAL_STORE", "file")
        .env("HOME", dir.join("home"))
        .env("PRODOPS_BASE_URL", server.base_url())
        .env("PRODOPS_API_KEY", api.key().unwrap())
        .timeout(Duration::from_secs(120))
        .args(["--output", "json"]);
    common::run(cmd, args).await
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn production_inventory_and_progress_end_to_end() {
    let server = TestServer::start().await;
    let api = server.org("CliActions").await;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let shop = api.create("shop", json!({"name": "Weld"})).await;
    let loc = id(&api
        .create("location", json!({"name": "Rack", "shopId": shop["id"]}))
        .await);
    let steel = id(&api.create("item", json!({"name": "Steel"})).await);
    let frame = id(&api.create("item", json!({"name": "Frame"})).await);
    // The order through the CLI's resource verbs.
    let out = run(
        &server,
        &api,
        p,
        &[
            "deliverable",
            "create",
            "--set",
            "name=Order 1",
            "--set",
            "type=order",
            "--set-json",
            "quantity=2",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let order = id(&out.json());
    let phase = id(&api
        .create(
            "deliverable",
            json!({"name": "Weld", "type": "phase", "parentId": order, "quantity": 4}),
        )
        .await);
    let out = run(
        &server,
        &api,
        p,
        &[
            "production-output",
            "create",
            "--data",
            &json!({"orderDeliverableId": order, "itemId": frame, "producedPerUnit": 1})
                .to_string(),
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let out = run(&server, &api, p, &["bom-line", "create", "--data", &json!({"orderDeliverableId": order, "itemId": steel, "quantity": 3, "mode": "total", "scaling": "per_order", "placedOnDeliverableId": phase}).to_string()]).await;
    assert_eq!(out.code, 0, "{out}");

    // Inventory: a posting, then a refused negative posting (409, exit 5, nothing written).
    let out = run(
        &server,
        &api,
        p,
        &[
            "inventory",
            "post",
            "--item-id",
            &steel,
            "--type",
            "adjust",
            "--quantity",
            "10",
            "--to-location-id",
            &loc,
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["quantity"], 10.0);
    let out = run(
        &server,
        &api,
        p,
        &[
            "inventory",
            "post",
            "--item-id",
            &steel,
            "--type",
            "return",
            "--quantity",
            "11",
            "--from-location-id",
            &loc,
        ],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    // With --output json the error is the API's error object on stderr.
    let error: Value = serde_json::from_str(out.stderr.trim()).expect("a JSON error");
    assert_eq!(error["error"]["code"], "CONFLICT", "{out}");
    assert!(out.stdout.is_empty());
    // A malformed UUID never reaches the server.
    let out = run(
        &server,
        &api,
        p,
        &[
            "inventory",
            "post",
            "--item-id",
            "nope",
            "--type",
            "adjust",
            "--quantity",
            "1",
        ],
    )
    .await;
    assert_eq!(out.code, 2, "{out}");

    // BOM allocation, consume on the phase (where the line is placed), produce on the order.
    let out = run(&server, &api, p, &["bom", "allocate", &order]).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["value"]["reservations"][0]["quantity"], 3.0);
    let out = run(
        &server,
        &api,
        p,
        &[
            "production",
            "consume",
            "--deliverable-id",
            &phase,
            "--from-location-id",
            &loc,
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        out.json()["value"]["transactions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let out = run(
        &server,
        &api,
        p,
        &[
            "production",
            "produce",
            "--deliverable-id",
            &order,
            "--quantity",
            "2",
            "--output-location-id",
            &loc,
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["value"]["outputs"][0]["quantityActual"], 2.0);
    // A route applied onto the phase: its nodes below the phase, its line onto the order.
    let route = id(&api
        .create("deliverable", json!({"name": "Route", "type": "route"}))
        .await);
    let cut = id(&api
        .create(
            "deliverable",
            json!({"name": "Cut", "type": "phase", "parentId": route}),
        )
        .await);
    api.create(
        "bom-line",
        json!({"routeDeliverableId": route, "itemId": steel, "outputPerUnit": 0.5}),
    )
    .await;
    let out = run(
        &server,
        &api,
        p,
        &[
            "deliverable",
            "apply-template",
            &phase,
            "--template-id",
            &route,
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let applied = &out.json()["value"];
    assert_eq!(applied["nodes"][0]["templateNodeId"], cut.as_str());
    assert_eq!(applied["nodes"][0]["parentId"], phase.as_str());
    assert_eq!(
        applied["bomLines"][0]["quantity"], 2.0,
        "0.5 x the phase's 4"
    );
    assert_eq!(
        applied["bomLines"][0]["placedOnDeliverableId"],
        phase.as_str()
    );
    // A template onto a target it does not apply to (a route onto a route): 400, exit 5.
    let out = run(
        &server,
        &api,
        p,
        &[
            "deliverable",
            "apply-template",
            &route,
            "--template-id",
            &route,
        ],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert!(out.stdout.is_empty());
    // A produce with nothing to name on an unknown order is rejected (exit 5).
    let out = run(
        &server,
        &api,
        p,
        &[
            "production",
            "produce",
            "--deliverable-id",
            &uuid::Uuid::new_v4().to_string(),
        ],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    let out = run(
        &server,
        &api,
        p,
        &[
            "production",
            "adjust-actual",
            "--stamp-deliverable-id",
            &order,
            "--kind",
            "produce",
            "--item-id",
            &frame,
            "--delta",
            "-1",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");

    let out = run(&server, &api, p, &["production", "status", &order]).await;
    assert_eq!(out.code, 0, "{out}");
    let status = out.json();
    assert_eq!(status["state"], "in_progress");
    assert_eq!(status["outputs"][0]["actual"], 1.0);
    assert_eq!(status["materials"][0]["actual"], 3.0);
    let out = run(
        &server,
        &api,
        p,
        &["production", "entries", &order, "--output", "csv"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[0].contains("actualKind"), "{out}");
    let out = run(
        &server,
        &api,
        p,
        &["production", "status", &uuid::Uuid::new_v4().to_string()],
    )
    .await;
    assert_eq!(out.code, 4, "{out}");

    // Stock after it all: steel 10 - 3, frame 2 - 1.
    let out = run(
        &server,
        &api,
        p,
        &[
            "inventory",
            "stock",
            "--location-id",
            &loc,
            "--output",
            "ndjson",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let rows: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let on_hand = |item: &str| {
        rows.iter()
            .find(|r| r["itemId"] == item)
            .map(|r| r["onHand"].as_f64().unwrap())
    };
    assert_eq!(on_hand(&steel), Some(7.0));
    assert_eq!(on_hand(&frame), Some(1.0));
    assert!(rows.iter().any(|r| r["reserved"] == 0.0));

    // A progress action, and a refused one (exit 5).
    let out = run(
        &server,
        &api,
        p,
        &[
            "deliverable",
            "progress",
            &order,
            &phase,
            "--type",
            "send-ahead",
            "--quantity",
            "1",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["kickedWorkers"], json!([]));
    assert_eq!(
        api.read("deliverable", &phase).await["progress"]["status"],
        "wip"
    );
    let out = run(
        &server,
        &api,
        p,
        &[
            "deliverable",
            "progress",
            &order,
            &phase,
            "--type",
            "set-percentage",
            "--percentage",
            "120",
        ],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    let out = run(
        &server,
        &api,
        p,
        &[
            "deliverable",
            "crew-time",
            "--deliverable-id",
            &format!("{order},{phase}"),
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()[&order]["totalSeconds"], 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_document_member_and_notification_commands() {
    let server = TestServer::start().await;
    let api = server
        .org_with_flags("CliDocs", &["documentsHubEnabled"])
        .await;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();

    // Inbound delivery received from the command line: stock follows.
    let shop = api.create("shop", json!({"name": "Main"})).await;
    let dock = id(&api
        .create("location", json!({"name": "Dock", "shopId": shop["id"]}))
        .await);
    let bolt = id(&api.create("item", json!({"name": "Bolt"})).await);
    let delivery = id(&api.create("delivery", json!({"name": "Steel"})).await);
    let line = id(&api.create("delivery-manifest-line", json!({"deliveryId": delivery, "itemId": bolt, "quantityExpected": 4, "locationId": dock})).await);
    let receive = |quantity: f64| {
        vec![
            "delivery".to_string(),
            "receive".into(),
            delivery.clone(),
            "--lines".into(),
            json!([{"manifestLineId": line, "quantity": quantity}]).to_string(),
        ]
    };
    let args = receive(1.0);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&server, &api, p, &args).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["status"], "expected");
    assert_eq!(out.json()["partial"], true);
    // Receipts accumulate: a second receive of part.
    let args = receive(2.0);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&server, &api, p, &args).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["status"], "expected");
    assert_eq!(out.json()["partial"], true);
    let out = run(
        &server,
        &api,
        p,
        &["inventory", "stock", "--item-id", &bolt],
    )
    .await;
    assert_eq!(out.json()[0]["onHand"], 3.0, "{out}");
    // Over-receipt (3 + 2 > 4) is a rejected request: exit 5, nothing posted.
    let args = receive(2.0);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&server, &api, p, &args).await;
    assert_eq!(out.code, 5, "{out}");
    assert!(out.stderr.contains("lines[0].quantity"), "{out}");
    // Closing short records the missing one.
    let out = run(
        &server,
        &api,
        p,
        &[
            "delivery",
            "close-short",
            &delivery,
            "--reason",
            "supplier out of stock",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["status"], "received");
    assert_eq!(out.json()["lastReason"], "supplier out of stock");
    assert_eq!(out.json()["partial"], true);
    assert_eq!(
        api.read("delivery-manifest-line", &line).await["quantityShort"],
        1.0
    );
    let out = run(
        &server,
        &api,
        p,
        &["inventory", "stock", "--item-id", &bolt],
    )
    .await;
    assert_eq!(out.json()[0]["onHand"], 3.0, "{out}");
    let out = run(&server, &api, p, &["delivery", "start", &delivery]).await;
    assert_eq!(out.code, 5, "{out}");
    let out = run(&server, &api, p, &["delivery", "close-short", &delivery]).await;
    assert_eq!(out.code, 5, "{out}");

    // Document upload of a file, a Hub document, then a second version.
    let order = id(&api
        .create("deliverable", json!({"name": "O", "type": "order"}))
        .await);
    let file = p.join("plan.txt");
    std::fs::write(&file, "first draft").unwrap();
    let out = run(
        &server,
        &api,
        p,
        &["document", "upload", file.to_str().unwrap()],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let up = out.json();
    assert_eq!(up["mimeType"], "text/plain");
    assert_eq!(up["sizeBytes"], 11);
    let key = up["documentKey"].as_str().unwrap().to_string();
    let out = run(
        &server,
        &api,
        p,
        &[
            "document",
            "hub-upload",
            "--documents",
            &json!([{"name": "plan.txt", "documentKey": key, "deliverableId": order}]).to_string(),
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let doc = id(&out.json()[0]);
    std::fs::write(&file, "second draft!").unwrap();
    let out = run(
        &server,
        &api,
        p,
        &[
            "document",
            "upload",
            file.to_str().unwrap(),
            "--content-type",
            "text/markdown",
        ],
    )
    .await;
    assert_eq!(out.json()["mimeType"], "text/markdown", "{out}");
    let key2 = out.json()["documentKey"].as_str().unwrap().to_string();
    let out = run(
        &server,
        &api,
        p,
        &[
            "document",
            "add-version",
            &doc,
            "--name",
            "plan-v2.txt",
            "--document-key",
            &key2,
            "--version-label",
            "v2",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["versionLabel"], "v2");
    let read = api.read("document", &doc).await;
    assert_eq!(read["sizeBytes"], 13);
    assert_eq!(read["name"], "plan-v2.txt");
    // `document download ORG KEY --expires E --signature S`: the bytes of the signed link.
    let link = read["documentUrl"].as_str().expect("a signed link");
    let rest = &link[link.find("/document/file/").unwrap() + "/document/file/".len()..];
    let (path, query) = rest.split_once('?').unwrap();
    let (org, key) = path.split_once('/').unwrap();
    let mut args = vec!["document", "download", org, key];
    for pair in query.split('&') {
        if let Some((name, value)) = pair.split_once('=') {
            args.push(if name == "expires" {
                "--expires"
            } else {
                "--signature"
            });
            args.push(value);
        }
    }
    let out = run(&server, &api, p, &args).await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.stdout, "second draft!");
    let out = run(
        &server,
        &api,
        p,
        &[
            "document",
            "counts-by-deliverable",
            "--deliverable-ids",
            &order,
        ],
    )
    .await;
    assert_eq!(out.json()[0]["count"], 1, "{out}");

    // The Hub upload notified; `notification read-deliverable-documents` marks it read (204: no output).
    let out = run(
        &server,
        &api,
        p,
        &[
            "notification",
            "read-deliverable-documents",
            "--deliverable-id",
            &order,
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.is_empty(), "{out}");

    // Members: invite (exit 0, the member), a second invite of the same email (409: exit 5),
    // deactivate (204), outbox.
    let out = run(
        &server,
        &api,
        p,
        &[
            "member",
            "invite",
            "--email",
            "Ann@Example.com",
            "--name",
            "Ann",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let member = out.json();
    assert_eq!(member["status"], "pending");
    assert_eq!(member["appUser"]["email"], "ann@example.com");
    let out = run(
        &server,
        &api,
        p,
        &["member", "invite", "--email", "ann@example.com"],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    let out = run(&server, &api, p, &["member", "deactivate", &id(&member)]).await;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.is_empty());
    assert_eq!(
        api.read("organization-member", &id(&member)).await["status"],
        "inactive"
    );
    let out = run(
        &server,
        &api,
        p,
        &["member", "resend-invitation", &id(&member)],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    let out = run(
        &server,
        &api,
        p,
        &["member", "outbox", "--kind", "invitation"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()[0]["recipient"], "ann@example.com");
    let out = run(
        &server,
        &api,
        p,
        &["member", "deactivate", &uuid::Uuid::new_v4().to_string()],
    )
    .await;
    assert_eq!(out.code, 4, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_action_command_has_help_with_an_example() {
    for args in [
        ["production", "produce"],
        ["inventory", "stock"],
        ["document", "upload"],
        ["member", "invite"],
        ["delivery", "receive"],
        ["delivery", "close-short"],
        ["bom", "demand-rollup"],
    ] {
        let out = Command::cargo_bin("prodops")
            .unwrap()
            .args(args)
            .arg("--help")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success());
        assert!(
            text.contains(&format!("Example:\n  prodops {} {}", args[0], args[1])),
            "{text}"
        );
    }
}

/// `prodops inventory count FILE.csv`: refusals by line number (the CLI's and the server's),
/// `--dry-run` showing the differences and posting nothing, then the count itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inventory_count_from_a_csv_file() {
    let server = TestServer::start().await;
    let api = server.org("CliCount").await;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let shop = api.create("shop", json!({"name": "Store"})).await;
    let a = id(&api
        .create("location", json!({"name": "A", "shopId": shop["id"]}))
        .await);
    let b = id(&api
        .create("location", json!({"name": "B", "shopId": shop["id"]}))
        .await);
    let each = id(&api.create("unit-measure", json!({"name": "Each"})).await);
    let boxed = id(&api
        .create(
            "unit-measure",
            json!({"name": "Box", "baseUnitMeasureId": each, "factor": 12}),
        )
        .await);
    let bolt = id(&api
        .create("item", json!({"name": "Bolt", "unitMeasureId": each}))
        .await);
    let nut = id(&api.create("item", json!({"name": "Nut"})).await);
    let r = api
        .post(
            "/inventory-transaction",
            json!({"itemId": bolt, "type": "adjust", "quantity": 30, "toLocationId": a}),
        )
        .await;
    assert_eq!(r.status, 201, "{r}");

    // Rows the CLI refuses, each by its line number; nothing sent.
    let bad = p.join("bad.csv");
    std::fs::write(
        &bad,
        format!(
            "itemId,locationId,quantity\n{bolt},{a},2\nnot-an-id,{a},1\n{nut},{b},lots\n{nut},{b},-1\n"
        ),
    )
    .unwrap();
    let out = run(
        &server,
        &api,
        p,
        &["inventory", "count", bad.to_str().unwrap()],
    )
    .await;
    assert_eq!(out.code, 2, "{out}");
    for line in ["line 3:", "line 4: quantity", "line 5:"] {
        assert!(out.stderr.contains(line), "{line}: {out}");
    }
    assert!(!out.stderr.contains("line 2:"), "{out}");
    // Twice the same item and location: named by both lines.
    std::fs::write(
        &bad,
        format!("itemId,locationId,quantity\n{nut},{b},1\n{bolt},{a},2\n{nut},{b},3\n"),
    )
    .unwrap();
    let out = run(
        &server,
        &api,
        p,
        &["inventory", "count", bad.to_str().unwrap()],
    )
    .await;
    assert_eq!(out.code, 2, "{out}");
    assert!(out.stderr.contains("line 4: itemId"), "{out}");
    assert!(out.stderr.contains("(line 2 too)"), "{out}");
    // What the server refuses (another organization's item, a unit without a conversion) is
    // named by line number too, exit 5.
    let other = server.org("CliCountOther").await;
    let theirs = id(&other.create("item", json!({"name": "Theirs"})).await);
    let kg = id(&api
        .create("unit-measure", json!({"name": "Kilogram"}))
        .await);
    std::fs::write(
        &bad,
        format!(
            "itemId,locationId,quantity,unitMeasureId\n{bolt},{a},2,{boxed}\n{theirs},{a},1,\n{bolt},{b},1,{kg}\n"
        ),
    )
    .unwrap();
    let out = run(
        &server,
        &api,
        p,
        &["inventory", "count", bad.to_str().unwrap()],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    // As JSON (-o json) each detail carries the line; as text, the line leads it.
    let error: Value = serde_json::from_str(&out.stderr).unwrap();
    let details = error["error"]["details"].as_array().unwrap();
    let lines: Vec<(i64, &str)> = details
        .iter()
        .map(|d| (d["line"].as_i64().unwrap(), d["field"].as_str().unwrap()))
        .collect();
    assert_eq!(
        lines,
        [(3, "lines[1].itemId"), (4, "lines[2].unitMeasureId")],
        "{out}"
    );
    let mut text = common::prodops_in(&server, &api, p, Duration::from_secs(120));
    let out = common::run(
        {
            text.args(["--output", "table"]);
            text
        },
        &["inventory", "count", bad.to_str().unwrap()],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert!(out.stderr.contains("line 3: itemId"), "{out}");
    assert!(out.stderr.contains("line 4: unitMeasureId"), "{out}");
    assert_eq!(
        api.list_total("inventory-transaction", "").await,
        1,
        "nothing posted"
    );

    // The dry run shows the differences and posts nothing.
    let good = p.join("count.csv");
    std::fs::write(
        &good,
        format!(
            "itemId,locationId,quantity,unitMeasureId\n{bolt},{a},2,{boxed}\n{nut},{b},4,\n{bolt},{b},0,\n"
        ),
    )
    .unwrap();
    let out = run(
        &server,
        &api,
        p,
        &["inventory", "count", good.to_str().unwrap(), "--dry-run"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let diffs = out.json();
    let diffs = diffs.as_array().unwrap();
    assert_eq!(diffs.len(), 2, "{out}");
    assert_eq!(diffs[0]["line"], 2);
    assert_eq!(diffs[0]["counted"], 24.0);
    assert_eq!(diffs[0]["onHand"], 30.0);
    assert_eq!(diffs[0]["difference"], -6.0);
    assert_eq!(diffs[1]["line"], 3);
    assert_eq!(diffs[1]["difference"], 4.0);
    assert!(out.stderr.contains("dry run"), "{out}");
    assert_eq!(
        api.list_total("inventory-transaction", "").await,
        1,
        "a dry run posts nothing"
    );

    // The count: one adjustment per difference; counted again, nothing differs.
    let out = run(
        &server,
        &api,
        p,
        &[
            "inventory",
            "count",
            good.to_str().unwrap(),
            "--reason",
            "year end",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let diffs = out.json();
    assert_eq!(diffs.as_array().unwrap().len(), 2, "{out}");
    assert!(diffs[0]["transactionId"].is_string(), "{out}");
    assert_eq!(api.list_total("inventory-transaction", "").await, 3);
    let stock = api
        .list("stock", &format!("itemId={bolt}&locationId={a}"))
        .await;
    assert_eq!(stock[0]["onHand"], 24.0);
    let out = run(
        &server,
        &api,
        p,
        &["inventory", "count", good.to_str().unwrap()],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json(), json!([]), "{out}");
    assert_eq!(api.list_total("inventory-transaction", "").await, 3);
}

/// `prodops inventory reverse --ids T`: the reversal rows posted, linked to the original; a
/// second reversal of the same row is refused (409, exit 5) and writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inventory_reverse_posts_the_opposite_once() {
    let server = TestServer::start().await;
    let api = server.org("CliReverse").await;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    let shop = api.create("shop", json!({"name": "Weld"})).await;
    let loc = id(&api
        .create("location", json!({"name": "Rack", "shopId": shop["id"]}))
        .await);
    let bolt = id(&api.create("item", json!({"name": "Bolt"})).await);
    let posted = api
        .post(
            "/inventory-transaction",
            json!({"itemId": bolt, "type": "adjust", "quantity": 12, "toLocationId": loc}),
        )
        .await;
    assert_eq!(posted.status, 201, "{posted}");
    let row = id(&posted.body);
    let out = run(
        &server,
        &api,
        p,
        &["inventory", "reverse", "--ids", &row, "--reason", "typo"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert!(
        out.stdout.contains(&row),
        "the reversal names its row: {out}"
    );
    let reversals = api
        .list("inventory-transaction", &format!("reversesId={row}"))
        .await;
    assert_eq!(reversals.len(), 1);
    assert_eq!(reversals[0]["reason"], "typo");
    let stock = api
        .list("stock", &format!("itemId={bolt}&locationId={loc}"))
        .await;
    assert_eq!(stock[0]["onHand"], 0.0);
    let out = run(&server, &api, p, &["inventory", "reverse", "--ids", &row]).await;
    assert_eq!(out.code, 5, "a conflict: {out}");
    assert!(out.stderr.contains("reversed already"), "{out}");
    assert_eq!(api.list_total("inventory-transaction", "").await, 2);
}
