//! A read cannot write, on both databases (store/mod.rs, `Store::read`): SQLite reads run on
//! read-only connections; PostgreSQL reads run without a transaction block, statement by
//! statement, on connections that are read-only by default (`default_transaction_read_only`),
//! which only a write's `BEGIN READ WRITE` lifts. Runs on `PRODOPS_TEST_DATABASE_URL` when set
//! (PostgreSQL), else on a SQLite file.

mod common;
use common::database_url;

use prodops_server::store::{SqlValue, Store, StoreError, Tx};

const VERSION: i64 = -727;

async fn rows_of_version(store: &Store) -> usize {
    store
        .read(|tx: &mut dyn Tx| {
            tx.query(
                "SELECT version FROM schema_migrations WHERE version = ?",
                &[SqlValue::Int(VERSION)],
            )
        })
        .await
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_cannot_write_and_a_write_can() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    let insert = "INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'read_only.rs')";

    let by_execute = store
        .read(move |tx: &mut dyn Tx| tx.execute(insert, &[SqlValue::Int(VERSION)]))
        .await;
    assert!(by_execute.is_err(), "a read wrote: {by_execute:?}");
    let by_query = store
        .read(move |tx: &mut dyn Tx| {
            tx.query(
                &format!("{insert} RETURNING version"),
                &[SqlValue::Int(VERSION)],
            )
        })
        .await;
    assert!(by_query.is_err(), "a read wrote: {by_query:?}");
    // Nor after a statement that read (a later statement of the same read).
    let after_a_read = store
        .read(move |tx: &mut dyn Tx| {
            tx.query("SELECT 1", &[])?;
            tx.execute(insert, &[SqlValue::Int(VERSION)])
        })
        .await;
    assert!(after_a_read.is_err(), "a read wrote: {after_a_read:?}");
    assert_eq!(rows_of_version(&store).await, 0);

    // A write can, and reads on the same pooled connections stay read-only after it.
    store
        .write(move |tx: &mut dyn Tx| {
            tx.execute(insert, &[SqlValue::Int(VERSION)])?;
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
    assert_eq!(rows_of_version(&store).await, 1);
    for _ in 0..8 {
        let again = store
            .read(move |tx: &mut dyn Tx| {
                tx.execute(
                    "DELETE FROM schema_migrations WHERE version = ?",
                    &[SqlValue::Int(VERSION)],
                )
            })
            .await;
        assert!(again.is_err(), "a read wrote: {again:?}");
    }
    store
        .write(move |tx: &mut dyn Tx| {
            tx.execute(
                "DELETE FROM schema_migrations WHERE version = ?",
                &[SqlValue::Int(VERSION)],
            )
        })
        .await
        .unwrap();
    assert_eq!(rows_of_version(&store).await, 0);
}
