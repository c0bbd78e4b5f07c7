//! Retention runs as one durable, recurring job (`jobs::EVENT_PRUNE`, docs/events.md
//! "Retention"): a row in `jobs` that every process makes sure of at start (once, however many
//! start), claimed like any job, and due again an hour after each run.
//!
//! Its own test binary: the job prunes every organization's events older than the retention,
//! which would include the 1970 events the other feed tests write. Runs on
//! `PRODOPS_TEST_DATABASE_URL` when set (PostgreSQL), else on a SQLite file.

mod common;
use common::database_url;
#[path = "common/events.rs"]
mod feed;
use feed::{append, feed, origin};

use std::time::{Duration, Instant};

use prodops_server::store::events::Origin;
use prodops_server::store::{SqlValue, Store, Tx};
use prodops_server::{Config, start};
use uuid::Uuid;

/// The prune job's row: status, attempts, and when it is due (seconds since the epoch).
async fn job(store: &Store) -> Vec<(String, i64, i64)> {
    store
        .read(|tx: &mut dyn Tx| {
            tx.query(
                "SELECT status, attempts, run_after FROM jobs WHERE kind = 'event_prune'",
                &[],
            )
        })
        .await
        .unwrap()
        .into_iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_i64().unwrap(),
                r[2].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Brings the job's next turn forward to now, then waits (bounded, so that a job that never
/// runs fails instead of hanging) until a process has run it and it waits for its next turn,
/// an hour after that run.
async fn run_now(store: &Store) {
    let asked = chrono::Utc::now().timestamp();
    store
        .write(|tx: &mut dyn Tx| {
            tx.execute(
                "UPDATE jobs SET run_after = 0 WHERE id = ?",
                &[SqlValue::from(prodops_server::jobs::EVENT_PRUNE_ID)],
            )
        })
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let rows = job(store).await;
        assert_eq!(rows.len(), 1, "one prune job for the database: {rows:?}");
        let (status, attempts, run_after) = rows[0].clone();
        if status == "pending" && run_after >= asked + 3600 {
            assert_eq!(attempts, 0, "a run that succeeded counts no attempt");
            let now = chrono::Utc::now().timestamp();
            assert!(
                run_after <= now + 3600,
                "{run_after} is at most an hour away"
            );
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the prune job never ran: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_recurring_job_prunes_the_feed_and_is_due_again_an_hour_later() {
    let dir = tempfile::tempdir().unwrap();
    let url = database_url(&dir);
    let mut config = Config::new(url.clone());
    config.event_retention = Duration::from_secs(24 * 3600);
    let first = start(config.clone()).await.unwrap();
    let second = start(config).await.unwrap();
    let store = first.store().clone();
    // Both processes made sure of the row at start. Due at once when new, it runs now; on a
    // shared database another test's server may have run it within the hour. Either way, wait
    // until no turn is due or running, so that the turn below is the first to see the events.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let rows = job(&store).await;
        assert_eq!(rows.len(), 1, "one prune job for the database: {rows:?}");
        if rows[0].0 == "pending" && rows[0].2 > chrono::Utc::now().timestamp() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the prune job never ran: {rows:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let org = Uuid::now_v7();
    append(&store, origin(org, 1_000, "old"), 3).await;
    let now = chrono::Utc::now();
    let recent = Origin {
        occurred_at: now.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
        occurred_ms: now.timestamp_millis(),
        ..origin(org, 0, "recent")
    };
    append(&store, recent, 2).await;
    assert_eq!(feed(&store, org).await.len(), 5);

    // A turn of the job: the old transaction goes, the recent one stays, and the next turn is
    // an hour later.
    run_now(&store).await;
    let kept = feed(&store, org).await;
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(
        kept.iter()
            .all(|e| e.request_id.as_deref() == Some("recent"))
    );
    second.shutdown().await;
    first.shutdown().await;
}
