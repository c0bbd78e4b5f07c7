//! Lots in CSV (issue 37 item 5) as a process, against a real in-process server (SQLite by
//! default, PostgreSQL with PRODOPS_TEST_DATABASE_URL): `prodops lot import|export`, the `lot`
//! column of `prodops inventory count FILE.csv`, and `prodops delivery receive ID FILE.csv`.

mod common;
use common::Out;
use std::path::{Path, PathBuf};
use std::time::Duration;

use prodops_tests::*;
use serde_json::Value;

async fn run(server: &TestServer, api: &Api, dir: &Path, args: &[&str]) -> Out {
    let cmd = common::prodops_in(server, api, dir, Duration::from_secs(600));
    common::run(cmd, args).await
}

fn write(path: PathBuf, text: &str) -> String {
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_string()
}

/// A shop's location and items: flour (by lot), pump (by serial), bolt (untracked), and the
/// lot-scoped custom property `origin` (text).
struct Floor {
    location: String,
    flour: String,
    pump: String,
    bolt: String,
}

async fn floor(api: &Api) -> Floor {
    let shop = id(&api.create("shop", json!({"name": "Main"})).await);
    let location = id(&api
        .create("location", json!({"name": "Rack", "shopId": shop}))
        .await);
    let flour = id(&api
        .create("item", json!({"name": "Flour", "tracking": "lot"}))
        .await);
    let pump = id(&api
        .create("item", json!({"name": "Pump", "tracking": "serial"}))
        .await);
    let bolt = id(&api.create("item", json!({"name": "Bolt"})).await);
    api.create(
        "custom-property",
        json!({"key": "origin", "name": "Origin", "dataType": "text", "deliverableTypes": ["lot"]}),
    )
    .await;
    Floor {
        location,
        flour,
        pump,
        bolt,
    }
}

/// Each lot as the round trip must keep it, by code.
async fn lots(api: &Api) -> Vec<Value> {
    let mut all: Vec<Value> = api
        .list("lot", "pageSize=1000")
        .await
        .into_iter()
        .map(|l| {
            json!({"id": l["id"], "itemId": l["itemId"], "code": l["code"],
                   "expiresAt": l["expiresAt"], "manufacturedAt": l["manufacturedAt"],
                   "vendorLotCode": l["vendorLotCode"], "properties": l["properties"],
                   "isArchived": l["isArchived"], "updatedAt": l["updatedAt"]})
        })
        .collect();
    all.sort_by(|a, b| a["code"].as_str().cmp(&b["code"].as_str()));
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lot_import_reports_bad_lines_reimports_unchanged_and_round_trips() {
    let server = TestServer::start().await;
    let api = server.org("LotCsv").await;
    let dir = tempfile::tempdir().unwrap();
    let f = floor(&api).await;
    let long = "x".repeat(100_000);
    let file = write(
        dir.path().join("lots.csv"),
        &format!(
            "itemId,code,expiresAt,manufacturedAt,vendorLotCode,properties.origin\n\
             {flour},L-1,2030-01-01T00:00:00Z,2029-01-01T00:00:00Z,V-9,Mill A\n\
             {flour},L-2,,,,\n\
             {pump},S-1,,,,\n\
             {bolt},B-1,,,,\n\
             {flour},L-3,31/02/2030,,,\n\
             {flour},\"L\0NUL\",,,,\n\
             {flour},{long},,,,\n\
             {flour},L-4,2030-01-01T00:00:00Z,2031-01-01T00:00:00Z,,\n\
             {pump},D-1,,,,\n\
             {pump},D-1,,,,\n\
             not-a-uuid,L-5,,,,\n",
            flour = f.flour,
            pump = f.pump,
            bolt = f.bolt,
        ),
    );
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "import", &file, "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert_eq!(
        out.json(),
        json!({"rows": 11, "accepted": 3, "rejected": 8, "dryRun": false}),
        "{out}"
    );
    for (line, what) in [
        (5, "itemId"),
        (6, "expiresAt"),
        (7, "NUL"),
        (8, "code"),
        (9, "expiresAt"),
        (10, "appears on lines 10 and 11"),
        (11, "appears on lines 10 and 11"),
        (12, "itemId"),
    ] {
        let reported = out
            .stderr
            .lines()
            .find(|l| l.starts_with(&format!("line {line}: ")))
            .unwrap_or_else(|| panic!("line {line} is reported: {out}"));
        assert!(reported.contains(what), "line {line}: {reported}");
        assert!(
            reported.len() < 2_000,
            "a message does not repeat a 100 KB cell"
        );
    }
    let before = lots(&api).await;
    assert_eq!(before.len(), 3, "{before:?}");
    assert_eq!(before[0]["code"], "L-1");
    assert_eq!(before[0]["vendorLotCode"], "V-9");
    assert_eq!(before[0]["properties"], json!({"origin": "Mill A"}));
    assert_eq!(before[0]["expiresAt"], "2030-01-01T00:00:00Z");

    // The same file again: the good rows match their lots by item and code; nothing changes.
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "import", &file, "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 5, "{out}");
    assert_eq!(out.json()["accepted"], 3, "{out}");
    assert_eq!(lots(&api).await, before, "a re-import changes nothing");

    // A dry run: the server's counts, nothing written.
    let change = write(
        dir.path().join("change.csv"),
        &format!(
            "itemId,code,vendorLotCode\n{flour},L-1,V-10\n{flour},L-2,\n{flour},L-9,V-1\n",
            flour = f.flour
        ),
    );
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "import", &change, "--dry-run", "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        out.json(),
        json!({"rows": 3, "accepted": 3, "created": 1, "updated": 1, "unchanged": 1,
               "rejected": 0, "dryRun": true}),
        "{out}"
    );
    assert_eq!(lots(&api).await, before, "a dry run writes nothing");

    // Export, then import the export: every row unchanged.
    let export = dir.path().join("export.csv");
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "export", "--out", export.to_str().unwrap()],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let text = std::fs::read_to_string(&export).unwrap();
    assert!(
        text.starts_with(
            "id,itemId,code,expiresAt,manufacturedAt,vendorLotCode,isArchived,archivedAt,createdAt,updatedAt,properties.origin\n"
        ),
        "{text}"
    );
    assert_eq!(text.lines().count(), 4, "{text}");
    let export = export.to_str().unwrap();
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "import", export, "--dry-run", "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["unchanged"], 3, "{out}");
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "import", export, "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(lots(&api).await, before, "the round trip changes nothing");
    // Without ids, the export's rows still find their lots (by item and code).
    let no_ids: String = text
        .lines()
        .map(|l| l.split_once(',').unwrap().1)
        .collect::<Vec<_>>()
        .join("\n");
    let no_ids = write(dir.path().join("no-ids.csv"), &no_ids);
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "import", &no_ids, "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        lots(&api).await,
        before,
        "matched by item and code: nothing changes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_count_names_lots_by_code() {
    let server = TestServer::start().await;
    let api = server.org("LotCount").await;
    let other = server.org("LotCountOther").await;
    let dir = tempfile::tempdir().unwrap();
    let f = floor(&api).await;
    let salt = id(&api
        .create("item", json!({"name": "Salt", "tracking": "lot"}))
        .await);
    let l1 = id(&api
        .create("lot", json!({"itemId": f.flour, "code": "L-1"}))
        .await);
    api.create("lot", json!({"itemId": salt, "code": "X-1"}))
        .await;
    let s1 = id(&api
        .create("lot", json!({"itemId": f.pump, "code": "S-1"}))
        .await);
    let g = floor(&other).await;
    let foreign = id(&other
        .create("lot", json!({"itemId": g.flour, "code": "L-1"}))
        .await);
    let loc = &f.location;

    // Unknown codes and another item's lot: refused by line, nothing sent.
    let file = write(
        dir.path().join("bad.csv"),
        &format!(
            "itemId,locationId,quantity,lot\n{flour},{loc},5,L-1\n{flour},{loc},1,NOPE\n{flour},{loc},1,X-1\n",
            flour = f.flour
        ),
    );
    let out = run(&server, &api, dir.path(), &["inventory", "count", &file]).await;
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("line 3: lot: no lot \"NOPE\""), "{out}");
    assert!(
        out.stderr
            .contains(&format!("line 4: lot: lot \"X-1\" is a lot of item {salt}")),
        "{out}"
    );
    assert!(!out.stderr.contains("line 2"), "{out}");

    // A dry run by code: the difference, nothing posted.
    let file = write(
        dir.path().join("count.csv"),
        &format!(
            "itemId,locationId,quantity,lot\n{flour},{loc},5,L-1\n",
            flour = f.flour
        ),
    );
    let out = run(
        &server,
        &api,
        dir.path(),
        &["inventory", "count", &file, "--dry-run", "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    let values = out.json();
    assert_eq!(values[0]["difference"].as_f64(), Some(5.0), "{out}");
    assert_eq!(values[0]["lotId"], json!(l1), "{out}");
    assert_eq!(api.count("inventory-transaction", "").await, 0);
    let out = run(
        &server,
        &api,
        dir.path(),
        &["inventory", "count", &file, "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(api.count("inventory-transaction", "").await, 1);

    // Another organization's lot id: refused, naming the line.
    let file = write(
        dir.path().join("foreign.csv"),
        &format!(
            "itemId,locationId,quantity,lotId\n{flour},{loc},5,{foreign}\n",
            flour = f.flour
        ),
    );
    let out = run(&server, &api, dir.path(), &["inventory", "count", &file]).await;
    assert_ne!(out.code, 0, "{out}");
    assert!(
        out.stderr
            .contains(&format!("lotId: no lot {foreign} in this organization")),
        "{out}"
    );
    // A serial counted twice over.
    let file = write(
        dir.path().join("serial.csv"),
        &format!(
            "itemId,locationId,quantity,lot\n{pump},{loc},2,S-1\n",
            pump = f.pump
        ),
    );
    let out = run(&server, &api, dir.path(), &["inventory", "count", &file]).await;
    assert_ne!(out.code, 0, "{out}");
    // The server names the count's field without the line (`quantity`, not `lines[0].quantity`).
    assert!(out.stderr.contains("moves 0 or 1 of a serial"), "{out}");
    assert_eq!(api.count("inventory-transaction", "").await, 1);
    let _ = s1;
    // Both columns: refused before anything is sent.
    let file = write(
        dir.path().join("both.csv"),
        &format!(
            "itemId,locationId,quantity,lot,lotId\n{flour},{loc},5,L-1,{l1}\n",
            flour = f.flour
        ),
    );
    let out = run(&server, &api, dir.path(), &["inventory", "count", &file]).await;
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("not both"), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receipt_file_names_lots_by_code() {
    let server = TestServer::start().await;
    let api = server.org("LotReceive").await;
    let dir = tempfile::tempdir().unwrap();
    let f = floor(&api).await;
    let delivery = id(&api.create("delivery", json!({"name": "PO 1"})).await);
    for (item, quantity) in [(&f.flour, 10), (&f.pump, 2), (&f.bolt, 4)] {
        api.create(
            "delivery-manifest-line",
            json!({"deliveryId": delivery, "itemId": item, "quantityExpected": quantity, "locationId": f.location}),
        )
        .await;
    }
    // A serial of quantity 2, and a lot whose expiry is not a date: refused by line.
    let bad = write(
        dir.path().join("bad.csv"),
        &format!(
            "itemId,quantity,lot,expiresAt\n{flour},6,R-1,2030-01-01T00:00:00Z\n{pump},2,S-9,\n{flour},4,R-2,soon\n",
            flour = f.flour,
            pump = f.pump
        ),
    );
    let out = run(
        &server,
        &api,
        dir.path(),
        &["delivery", "receive", &delivery, &bad],
    )
    .await;
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("line 4"), "{out}");
    let bad = write(
        dir.path().join("serial.csv"),
        &format!("itemId,quantity,lots\n{pump},2,S-9:2\n", pump = f.pump),
    );
    let out = run(
        &server,
        &api,
        dir.path(),
        &["delivery", "receive", &delivery, &bad],
    )
    .await;
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("line 2"), "{out}");
    assert_eq!(api.count("lot", "").await, 0, "nothing was received");

    let good = write(
        dir.path().join("good.csv"),
        &format!(
            "itemId,quantity,lots\n{flour},6,R-1:6\n{flour},4,R-2:3;R-3:1\n{pump},2,S-9:1;S-10:1\n{bolt},4,\n",
            flour = f.flour,
            pump = f.pump,
            bolt = f.bolt
        ),
    );
    let out = run(
        &server,
        &api,
        dir.path(),
        &[
            "delivery",
            "receive",
            &delivery,
            &good,
            "--dry-run",
            "-o",
            "json",
        ],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["dryRun"], true, "{out}");
    assert_eq!(api.count("lot", "").await, 0, "a dry run receives nothing");
    let out = run(
        &server,
        &api,
        dir.path(),
        &["delivery", "receive", &delivery, &good, "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["status"], "received", "{out}");
    assert_eq!(api.count("lot", "").await, 5);
    assert_eq!(api.count("lot", &format!("itemId={}", f.pump)).await, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_lots_import_and_reimport_unchanged() {
    let server = TestServer::start().await;
    let api = server.org("LotCsvLarge").await;
    let dir = tempfile::tempdir().unwrap();
    let f = floor(&api).await;
    let mut text = String::from("itemId,code,vendorLotCode\n");
    for n in 0..10_000 {
        text.push_str(&format!("{},SN-{n:05},V-{}\n", f.pump, n % 7));
    }
    let file = write(dir.path().join("big.csv"), &text);
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "import", &file, "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        out.json(),
        json!({"rows": 10000, "accepted": 10000, "rejected": 0, "dryRun": false}),
        "{out}"
    );
    assert_eq!(api.count("lot", "").await, 10_000);
    let out = run(
        &server,
        &api,
        dir.path(),
        &["lot", "import", &file, "--dry-run", "-o", "json"],
    )
    .await;
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.json()["unchanged"], 10_000, "{out}");
    assert_eq!(out.json()["created"], 0, "{out}");
    let out = run(&server, &api, dir.path(), &["lot", "export"]).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout.lines().count(), 10_001);
    assert_eq!(api.count("lot", "").await, 10_000);
}
