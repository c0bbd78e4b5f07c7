//! The bulk insert path of the store (`records::insert_rows`): on PostgreSQL batches of 64 rows
//! and more go through `COPY ... FROM STDIN (FORMAT binary)` (`Tx::copy_in`), smaller ones and
//! SQLite through multi-row `INSERT`s. Whichever path a batch takes, the stored text is the
//! text given (escapes, non-ASCII, long strings), the record counts follow, the filter indexes
//! see the rows, and a duplicate id fails the whole batch without writing any of it.
//!
//! Runs on `PRODOPS_TEST_DATABASE_URL` when set (PostgreSQL), else on a SQLite file.

mod common;
use common::database_url;

use prodops_server::store::records::{self, NewRow};
use prodops_server::store::sql::Cond;
use prodops_server::store::{Store, StoreError};
use serde_json::json;
use uuid::Uuid;

/// A worker record as stored, with a name full of what escaping gets wrong (no NUL: the
/// server refuses U+0000 before anything is stored, docs/decisions.md).
fn worker(i: usize, id: Uuid) -> NewRow {
    let hostile = format!(
        "W{i} \u{1} \u{1f} \\ \\N \t\n\r \"quoted\" \u{1F600} é {}",
        "x".repeat(if i.is_multiple_of(97) { 100_000 } else { 10 })
    );
    let doc = json!({
        "id": id.to_string(),
        "createdAt": format!("2026-11-24T10:{:02}:{:02}.000Z", i / 60 % 60, i % 60),
        "name": hostile,
        "customerIdentifier": format!("E{i:05}"),
        "status": if i.is_multiple_of(3) { "inactive" } else { "active" },
        "isArchived": i.is_multiple_of(10),
    });
    NewRow::of_text(doc.to_string()).unwrap()
}

async fn count(store: &Store, org: Uuid, conds: Vec<Cond>) -> u64 {
    store
        .read(move |tx| records::count(tx, "worker", org, &conds))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_inserts_keep_text_counts_and_indexes_and_fail_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    let org = Uuid::now_v7();
    // Batches on both sides of the COPY threshold (64 rows), and one large batch.
    let sizes = [1usize, 63, 64, 65, 2_000];
    let mut rows = Vec::new();
    for (b, size) in sizes.iter().enumerate() {
        let start = rows.len();
        let batch: Vec<NewRow> = (start..start + size)
            .map(|i| worker(i, Uuid::now_v7()))
            .collect();
        let to_write = batch.clone();
        store
            .write(move |tx| records::insert_rows(tx, "worker", org, &to_write))
            .await
            .unwrap_or_else(|e| panic!("batch {b} of {size} rows: {e}"));
        rows.extend(batch);
    }
    let total = rows.len() as u64;

    // Every stored text is the text given, byte for byte.
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id.parse().unwrap()).collect();
    let stored = store
        .read(move |tx| records::get_many_raw(tx, "worker", org, &ids))
        .await
        .unwrap();
    assert_eq!(stored.len(), rows.len());
    for r in &rows {
        assert_eq!(stored[&r.id.parse::<Uuid>().unwrap()], r.data, "{}", r.id);
    }

    // Counts (kept by triggers or by the batch) and the filter indexes follow.
    let archived = rows.iter().filter(|r| r.archived).count() as u64;
    assert_eq!(
        count(&store, org, vec![Cond::Archived(false)]).await,
        total - archived
    );
    assert_eq!(
        count(&store, org, vec![Cond::Archived(true)]).await,
        archived
    );
    let inactive = (0..rows.len()).filter(|i| i.is_multiple_of(3)).count() as u64;
    let status = Cond::Indexed {
        field: "status".into(),
        values: vec!["inactive".into()],
        broad: true,
    };
    assert_eq!(count(&store, org, vec![status]).await, inactive);

    // A batch (large enough for COPY) whose last row repeats an id: nothing of it is written.
    let mut dup: Vec<NewRow> = (0..500)
        .map(|i| worker(10_000 + i, Uuid::now_v7()))
        .collect();
    let mut again = worker(20_000, rows[70].id.parse().unwrap());
    again.id = rows[70].id.clone();
    dup.push(again);
    let failed = store
        .write(move |tx| records::insert_rows(tx, "worker", org, &dup))
        .await;
    assert!(
        matches!(failed, Err(StoreError::Conflict(_))),
        "a repeated id is a unique violation: {failed:?}"
    );
    assert_eq!(count(&store, org, vec![]).await, total);
    // Another organization sees none of it.
    assert_eq!(count(&store, Uuid::now_v7(), vec![]).await, 0);
}
