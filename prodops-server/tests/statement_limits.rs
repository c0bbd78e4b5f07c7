//! The statement timeout and the cancellation of abandoned work, at the storage layer, on a
//! real database (`PRODOPS_TEST_DATABASE_URL` for PostgreSQL, else SQLite): a statement that
//! would never end on its own (an endless recursive query, `pg_sleep`) is stopped by the
//! timeout, or by dropping the future that awaits its transaction, and the store goes on
//! serving; and a store opens while another holds a long write. Nothing here depends on how
//! fast the machine is.

mod common;
use common::database_url;

use std::sync::Arc;
use std::time::Duration;

use prodops_server::store::{SqlValue, Store, StoreError, requests_in_flight};
use uuid::Uuid;

/// A read that never ends on its own; `marker` names it in `pg_stat_activity`.
fn endless(store: &Store, marker: &str) -> String {
    match store.dialect() {
        prodops_server::store::Dialect::Sqlite => format!(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) \
             SELECT count(*) FROM c /* {marker} */"
        ),
        prodops_server::store::Dialect::Postgres => {
            format!("SELECT pg_sleep(86400) /* {marker} */")
        }
    }
}

/// PostgreSQL: how many statements carrying `marker` run (0 on SQLite).
async fn running(store: &Store, marker: &str) -> i64 {
    if store.dialect() != prodops_server::store::Dialect::Postgres {
        return 0;
    }
    let pattern = format!("%/* {marker} */%");
    store
        .read(move |tx| {
            let rows = tx.query(
                "SELECT CAST(count(*) AS BIGINT) FROM pg_stat_activity \
                 WHERE state = 'active' AND query LIKE ? AND pid <> pg_backend_pid()",
                &[SqlValue::Text(pattern.clone())],
            )?;
            Ok::<_, StoreError>(rows[0][0].as_i64().unwrap_or(0))
        })
        .await
        .unwrap()
}

async fn eventually<F, Fut>(what: &str, mut done: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    while !done().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn still_serves(store: &Store) {
    let one = store
        .read(|tx| tx.query("SELECT 1", &[]))
        .await
        .expect("the store answers");
    assert_eq!(one[0][0].as_i64(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_past_the_statement_timeout_is_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_with(&database_url(&dir), Duration::from_secs(1))
        .await
        .unwrap();
    let marker = format!("timeout-{}", Uuid::new_v4().simple());
    let sql = endless(&store, &marker);
    let read = store.read(move |tx| tx.query(&sql, &[]).map(|_| ())).await;
    assert!(matches!(read, Err(StoreError::Timeout)), "{read:?}");
    assert_eq!(running(&store, &marker).await, 0);
    // A write transaction too.
    let sql = endless(&store, &marker);
    let write = store.write(move |tx| tx.query(&sql, &[]).map(|_| ())).await;
    assert!(matches!(write, Err(StoreError::Timeout)), "{write:?}");
    still_serves(&store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_future_of_a_transaction_stops_its_statement() {
    let dir = tempfile::tempdir().unwrap();
    // Only the cancellation can end these statements.
    let store = Store::open_with(&database_url(&dir), Duration::ZERO)
        .await
        .unwrap();
    for write in [false, true] {
        let marker = format!("dropped-{}", Uuid::new_v4().simple());
        let request_id = format!("request-{marker}");
        let task = {
            let store = store.clone();
            let sql = endless(&store, &marker);
            let id: Arc<str> = Arc::from(request_id.as_str());
            tokio::spawn(prodops_server::error::REQUEST_ID.scope(id, async move {
                let run =
                    move |tx: &mut dyn prodops_server::store::Tx| tx.query(&sql, &[]).map(|_| ());
                if write {
                    store.write(run).await
                } else {
                    store.read(run).await
                }
            }))
        };
        let is_postgres = store.dialect() == prodops_server::store::Dialect::Postgres;
        eventually("the statement runs", || async {
            requests_in_flight().contains(&request_id)
                && (!is_postgres || running(&store, &marker).await > 0)
        })
        .await;
        task.abort();
        assert!(task.await.unwrap_err().is_cancelled());
        eventually("the statement has stopped", || async {
            !requests_in_flight().contains(&request_id) && running(&store, &marker).await == 0
        })
        .await;
        still_serves(&store).await;
    }
}

/// A server process that starts while another holds a long write on a resource table opens at
/// once: when the schema is already set up, start-up runs no DDL, whose table locks would wait
/// for that write and hold up every writer queued behind them. PostgreSQL only: SQLite has one
/// server process per database file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_opens_while_a_long_write_holds_a_resource_table() {
    let dir = tempfile::tempdir().unwrap();
    let url = database_url(&dir);
    let first = Store::open_with(&url, Duration::ZERO).await.unwrap();
    if first.dialect() != prodops_server::store::Dialect::Postgres {
        eprintln!("PostgreSQL only (one server process per SQLite file)");
        return;
    }
    let marker = format!("long-write-{}", Uuid::new_v4().simple());
    let sleep = endless(&first, &marker);
    let writer = {
        let first = first.clone();
        tokio::spawn(async move {
            first
                .write(move |tx| {
                    // Should this test fail and its process die, the server still ends the
                    // sleep (and frees the lock) soon after the second store gives up.
                    tx.execute("SET LOCAL statement_timeout = '150s'", &[])?;
                    // The lock an INSERT or UPDATE of workers holds until it commits.
                    tx.execute("LOCK TABLE worker IN ROW EXCLUSIVE MODE", &[])?;
                    tx.query(&sleep, &[]).map(|_| ())
                })
                .await
        })
    };
    eventually("the write holds the worker table", || async {
        running(&first, &marker).await > 0
    })
    .await;
    let second = tokio::time::timeout(
        Duration::from_secs(120),
        Store::open_with(&url, Duration::ZERO),
    )
    .await
    .expect("a second store opens while the write is open")
    .unwrap();
    still_serves(&second).await;
    assert!(
        running(&first, &marker).await > 0,
        "the write is still open"
    );
    writer.abort();
    eventually("the write has stopped", || async {
        running(&first, &marker).await == 0
    })
    .await;
}
