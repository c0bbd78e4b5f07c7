//! `records::update_records` on the real database (`PRODOPS_TEST_DATABASE_URL` for
//! PostgreSQL, else SQLite): many records rewritten together (on PostgreSQL one
//! `UPDATE ... FROM (VALUES ...)` per 500 rows) leave exactly what one `UPDATE` per record
//! leaves: the texts, the filter columns, and the trigger-kept counts of archived and live
//! records and of each status.

mod common;
use common::database_url;

use prodops_server::store::records::{self, NewRow, RowUpdate};
use prodops_server::store::sql::Cond;
use prodops_server::store::{SqlValue, Store, StoreError};
use serde_json::{Value, json};
use uuid::Uuid;

const ROWS: usize = 1_100;

fn worker(id: Uuid, org: Uuid, i: usize, status: &str, archived: bool) -> Value {
    json!({
        "id": id, "organizationId": org, "name": format!("W{i}"),
        "customerIdentifier": format!("C-{i}"), "status": status, "isArchived": archived,
        "createdAt": "2026-11-25T12:00:00.000Z", "updatedAt": "2026-11-25T12:00:00.000Z",
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_records_rewritten_together_keep_columns_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    let org = Uuid::new_v4();
    let ids: Vec<Uuid> = (0..ROWS).map(|_| Uuid::new_v4()).collect();
    let rows: Vec<NewRow> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| NewRow::of_record(&worker(*id, org, i, "active", false)).unwrap())
        .collect();
    let changed = ids.clone();
    store
        .write(move |tx| {
            for chunk in rows.chunks(500) {
                records::insert_rows(tx, "worker", org, chunk)?;
            }
            // Every third inactive and archived, the rest renamed; all rewritten at once.
            let updates: Vec<RowUpdate> = changed
                .iter()
                .enumerate()
                .map(|(i, id)| {
                    let third = i % 3 == 0;
                    let mut w = worker(
                        *id,
                        org,
                        i,
                        if third { "inactive" } else { "active" },
                        third,
                    );
                    w["name"] = json!(format!("Renamed {i} \u{e9}\u{1F600} 'quoted'"));
                    w["updatedAt"] = json!("2026-11-26T08:00:00.000Z");
                    RowUpdate::of_record(&w).unwrap()
                })
                .collect();
            records::update_records(tx, "worker", org, updates)
        })
        .await
        .unwrap();

    let third = ROWS.div_ceil(3) as u64;
    let (live, archived, inactive, renamed, updated) = store
        .read(move |tx| {
            let live = records::count(tx, "worker", org, &[Cond::Archived(false)])?;
            let archived = records::count(tx, "worker", org, &[Cond::Archived(true)])?;
            let n = |rows: Vec<Vec<SqlValue>>| rows[0][0].as_i64().unwrap() as u64;
            let inactive = n(tx.query(
                "SELECT COUNT(*) FROM worker WHERE organization_id = ? AND f_status = 'inactive'",
                &[org.into()],
            )?);
            let renamed = records::get(tx, "worker", org, ids[4])?.unwrap();
            let updated = n(tx.query(
                "SELECT COUNT(*) FROM worker WHERE organization_id = ? AND updated_at > created_at",
                &[org.into()],
            )?);
            Ok::<_, StoreError>((live, archived, inactive, renamed, updated))
        })
        .await
        .unwrap();
    assert_eq!(archived, third);
    assert_eq!(live, ROWS as u64 - third);
    assert_eq!(inactive, third);
    assert_eq!(updated, ROWS as u64);
    assert_eq!(renamed["name"], "Renamed 4 \u{e9}\u{1F600} 'quoted'");
    assert_eq!(renamed["status"], "active");
}
