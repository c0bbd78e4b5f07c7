//! After a large bulk write, PostgreSQL's planner statistics of the table are refreshed in the
//! background (`Store::after_bulk_write`), so reads right after an import are planned for the
//! table as it now is, and at once after an organization's first one. Its own test binary: the
//! refresh is rate-limited per process and table.
//!
//! Runs on `PRODOPS_TEST_DATABASE_URL` (PostgreSQL); on SQLite, which keeps no statistics the
//! server uses, it checks only that the call is harmless.

mod common;
use common::database_url;

use std::time::Duration;

use prodops_server::store::{SqlValue, Store, StoreError};

/// How many times PostgreSQL has analyzed `table` by hand (`ANALYZE`, not autovacuum).
async fn analyze_count(store: &Store, table: &'static str) -> i64 {
    store
        .read(move |tx| {
            let rows = tx.query(
                "SELECT analyze_count FROM pg_stat_user_tables WHERE relname = ?",
                &[SqlValue::Text(table.into())],
            )?;
            Ok::<_, StoreError>(
                rows.first()
                    .and_then(|r| r.first())
                    .and_then(SqlValue::as_i64)
                    .unwrap_or(0),
            )
        })
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_bulk_write_refreshes_the_statistics_of_its_table() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    let org = uuid::Uuid::now_v7();
    if store.dialect() == prodops_server::store::Dialect::Sqlite {
        store.after_bulk_write("worker", org, 10_000);
        return;
    }
    // A small write does not analyze.
    let before = analyze_count(&store, "team").await;
    store.after_bulk_write("team", org, 999);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(analyze_count(&store, "team").await, before);

    let after = analyzed_after(&store, || store.after_bulk_write("worker", org, 1_000)).await;

    // A second one of the organization right after is left to the next window.
    store.after_bulk_write("worker", org, 1_000);
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(analyze_count(&store, "worker").await, after);

    // Another organization's first one is not: statistics that do not know it would plan its
    // reads as if it held one row.
    analyzed_after(&store, || {
        store.after_bulk_write("worker", uuid::Uuid::now_v7(), 1_000)
    })
    .await;
}

/// Runs `write` and waits until `worker` has been analyzed once more; answers the count.
async fn analyzed_after(store: &Store, write: impl FnOnce()) -> i64 {
    let before = analyze_count(store, "worker").await;
    write();
    let mut after = before;
    for _ in 0..100 {
        // The statistics collector reports with a short delay.
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = analyze_count(store, "worker").await;
        if after > before {
            break;
        }
    }
    assert!(after > before, "ANALYZE worker ran after the bulk write");
    after
}
