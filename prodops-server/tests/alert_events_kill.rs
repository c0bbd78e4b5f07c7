//! Issue 38 item 3: 10,000 deliverables whose due dates pass give exactly one
//! `deliverable.became-late` each (docs/events.md, "Events for what time changes"), with two
//! `prodops-server serve` processes on one database, the one running the job killed with
//! SIGKILL in the middle of its run.
//!
//! Each process follows a test clock of its own (`PRODOPS_TEST_CLOCK_FILE`). Only process A's
//! clock is moved past the due dates, so A is the one that runs the announcing job (B's turns
//! find nothing new at its clock); A is killed once some events are in the feed, and B, which
//! finishes an interval a dead process left part way whatever its own clock, takes the job over
//! when A's lease runs out. On PostgreSQL the test holds the advisory lock of the tests that
//! run the job (`prodops_tests::ALERT_EVENTS_LOCK`'s value) and starts the watermark anew.

mod common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use prodops_server::store::{SqlValue, Store, Tx};
use serde_json::{Value, json};

#[path = "common/server_process.rs"]
mod server_process;
use server_process::cmd;

/// Deliverables whose due dates pass.
const N: usize = 10_000;
/// Every wait ends by this bound: a failure, not a hang.
const WAIT: Duration = Duration::from_secs(300);
/// `prodops_tests::ALERT_EVENTS_LOCK`.
const LOCK: i64 = 0x7072_6f64_616c_7274;

fn write_clock(path: &Path, secs: i64) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, secs.to_string()).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// Starts `serve` on the clock of `clock` with the job looking every second; answers the child
/// and its `/api/v2` base.
fn serve(url: &str, clock: &Path) -> (Child, String) {
    let mut child = cmd(&[
        "serve",
        "--bind",
        "127.0.0.1:0",
        "--database",
        url,
        "--rate-limit",
        "1000000",
        "--alert-events-poll-secs",
        "1",
    ])
    .env("PRODOPS_TEST_CLOCK_FILE", clock)
    .stdout(Stdio::piped())
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("listening line");
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_string();
    (child, format!("{base}/api/v2"))
}

async fn payload(store: &Store) -> String {
    store
        .read(|tx: &mut dyn Tx| {
            tx.query(
                "SELECT payload FROM jobs WHERE id = ?",
                &[SqlValue::from(prodops_server::jobs::ALERT_EVENTS_ID)],
            )
        })
        .await
        .unwrap()
        .first()
        .and_then(|r| r.first())
        .and_then(|v| v.as_str())
        .unwrap_or_default()
        .to_string()
}

/// Every `deliverable.became-late` of the organization, oldest first.
async fn late_events(client: &reqwest::Client, base: &str, key: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after = "0".to_string();
    loop {
        let v: Value = client
            .get(format!(
                "{base}/event?type=deliverable.became-late&limit=1000&after={after}"
            ))
            .header("X-API-Key", key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let values = v["values"].as_array().unwrap().clone();
        after = v["nextCursor"].as_str().unwrap().to_string();
        let n = values.len();
        out.extend(values);
        if n < 1000 {
            return out;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_due_dates_pass_with_a_process_killed_mid_run() {
    let dir = tempfile::tempdir().unwrap();
    let url = common::database_url(&dir);
    let start = chrono::Utc::now().timestamp();
    let (clock_a, clock_b) = (dir.path().join("clock-a"), dir.path().join("clock-b"));
    write_clock(&clock_a, start);
    write_clock(&clock_b, start);

    let _lock = if url.starts_with("postgres") {
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        client
            .execute("SELECT pg_advisory_lock($1)", &[&LOCK])
            .await
            .unwrap();
        Some(client)
    } else {
        None
    };
    let key = server_process::create_org(&url, "Alert events");
    let store = Store::open(&url).await.unwrap();
    store
        .write(|tx: &mut dyn Tx| {
            prodops_server::jobs::ensure_recurring(tx)?;
            tx.execute(
                "UPDATE jobs SET payload = '{}', run_after = 0 WHERE id = ?",
                &[SqlValue::from(prodops_server::jobs::ALERT_EVENTS_ID)],
            )
        })
        .await
        .unwrap();
    let (mut a, base_a) = serve(&url, &clock_a);
    let deadline = Instant::now() + WAIT;
    while !payload(&store).await.contains("watermark") {
        assert!(Instant::now() < deadline, "the job never ran");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (mut b, base_b) = serve(&url, &clock_b);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .unwrap();

    // 10,000 orders due one second apart, an hour from now.
    let mut ids = HashSet::new();
    for chunk in (0..N).collect::<Vec<_>>().chunks(2000) {
        let records: Vec<Value> = chunk
            .iter()
            .map(|i| {
                let due = chrono::DateTime::from_timestamp(start + 3600 + *i as i64, 0).unwrap();
                json!({"name": format!("Order {i}"), "type": "order",
                       "data": {"dueDate": due.format("%Y-%m-%dT%H:%M:%SZ").to_string()}})
            })
            .collect();
        let r = client
            .put(format!("{base_b}/deliverable/bulk"))
            .header("X-API-Key", &key)
            .json(&records)
            .send()
            .await
            .unwrap();
        assert!(r.status().is_success(), "{}", r.status());
        let v: Value = r.json().await.unwrap();
        for id in v["ids"].as_array().unwrap() {
            ids.insert(id.as_str().unwrap().to_string());
        }
    }
    assert_eq!(ids.len(), N);

    // A's clock passes every due date; A announces, until it is killed.
    write_clock(&clock_a, start + 3600 + N as i64 + 60);
    let deadline = Instant::now() + WAIT;
    loop {
        let v: Value = client
            .get(format!(
                "{base_b}/event?type=deliverable.became-late&limit=1"
            ))
            .header("X-API-Key", &key)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if !v["values"].as_array().unwrap().is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "A announced nothing");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    a.kill().unwrap();
    a.wait().unwrap();
    let at_kill = late_events(&client, &base_b, &key).await.len();
    eprintln!("killed A with {at_kill} of {N} events committed");

    // B finishes the interval A left, once A's lease runs out.
    let deadline = Instant::now() + WAIT;
    let events = loop {
        let got = late_events(&client, &base_b, &key).await;
        if got.len() >= N {
            break got;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {N} events after the kill",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // A few more turns of B's job: nothing more comes.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let events_after = late_events(&client, &base_b, &key).await;
    let _ = (base_a, &mut b);
    b.kill().unwrap();
    b.wait().unwrap();
    assert_eq!(events_after.len(), N, "exactly one each, nothing later");
    let announced: HashSet<String> = events
        .iter()
        .map(|e| e["recordId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(announced.len(), N, "no deliverable twice");
    assert_eq!(announced, ids, "every deliverable once");
    assert!(
        at_kill < N,
        "A was killed mid-run ({at_kill} of {N} announced when it was)"
    );
}
