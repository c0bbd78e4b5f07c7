//! The filter columns (store/filter_columns.rs) hold what the record's text holds, whichever way
//! the row was written, on the real database (`PRODOPS_TEST_DATABASE_URL` for PostgreSQL, else
//! SQLite): a large batch (SQLite writes it with its triggers off and fills the columns itself),
//! a batch with a row whose filter field is not a string (left to the database), a small batch,
//! one record, an update through the store, and a statement that rewrites the text behind the
//! store's back. A database made before the columns were what they are now (SQLite: none;
//! PostgreSQL: generated) gets them, filled from its records, when the server starts on it.

mod common;
use common::database_url;

use prodops_core::filter_fields;
use prodops_server::store::filter_columns;
use prodops_server::store::records::{self, NewRow};
use prodops_server::store::sql::{FieldPath, filter_column};
use prodops_server::store::{Dialect, SqlValue, Store, StoreError, Tx};
use serde_json::{Value, json};
use uuid::Uuid;

fn worker(i: usize, status: Value, team: Option<Uuid>) -> NewRow {
    let mut doc = json!({
        "id": Uuid::now_v7().to_string(),
        "name": format!("Worker {i}"),
        "customerIdentifier": format!("E{i:07}\u{e9}\"q"),
        "status": status,
        "isArchived": i.is_multiple_of(7),
        "createdAt": "2026-11-27T10:00:00.000Z",
        "updatedAt": "2026-11-27T10:00:00.000Z",
    });
    if let Some(team) = team {
        doc["teamId"] = json!(team.to_string());
    }
    NewRow::of_text(doc.to_string()).unwrap()
}

/// The rows of organization `org` whose filter column of some field of `worker` differs from
/// what the filter reads from the record's text (`Dialect::text_expr`), and the rows there are.
async fn disagreements(store: &Store, org: Uuid) -> (i64, i64) {
    let dialect = store.dialect();
    let differs = filter_fields::of_table("worker")
        .filter_indexed
        .iter()
        .map(|f| {
            let text = dialect.text_expr(&FieldPath::parse(f).unwrap());
            format!("{} IS DISTINCT FROM {text}", filter_column(f))
        })
        .collect::<Vec<_>>()
        .join(" OR ");
    let differs = match dialect {
        // SQLite spells `IS DISTINCT FROM` as `IS NOT`.
        Dialect::Sqlite => differs.replace("IS DISTINCT FROM", "IS NOT"),
        Dialect::Postgres => differs,
    };
    let sql = format!(
        "SELECT CAST(SUM(CASE WHEN {differs} THEN 1 ELSE 0 END) AS BIGINT), CAST(COUNT(*) AS BIGINT) \
         FROM worker WHERE organization_id = ?"
    );
    store
        .read(move |tx| {
            let row = tx.query(&sql, &[org.into()])?.remove(0);
            Ok::<_, StoreError>((row[0].as_i64().unwrap_or(0), row[1].as_i64().unwrap_or(0)))
        })
        .await
        .unwrap()
}

/// Stores `rows` (workers of `org`) in the database at `url`, puts it back to an earlier form
/// with `revert` in the same transaction, forgets the set-up's digest (as a server from
/// before would have left it), and answers the store of the next start.
async fn restart_from_an_earlier_form(
    url: &str,
    org: Uuid,
    rows: Vec<NewRow>,
    revert: impl Fn(&mut dyn Tx) -> Result<(), StoreError> + Send + 'static,
) -> Store {
    {
        let store = Store::open(url).await.unwrap();
        store
            .write(move |tx| {
                records::insert_rows(tx, "worker", org, &rows)?;
                revert(tx)?;
                tx.execute("DELETE FROM schema_state WHERE name = 'resource_ddl'", &[])?;
                Ok::<_, StoreError>(())
            })
            .await
            .unwrap();
    }
    Store::open(url).await.unwrap()
}

#[tokio::test]
async fn filter_columns_agree_with_the_text_however_the_row_was_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    let org = Uuid::now_v7();
    let team = Uuid::now_v7();
    let statuses = ["active", "inactive", "terminated"];
    // A batch large enough for SQLite's triggers-off path, with teams, nulls and missing fields.
    let large: Vec<NewRow> = (0..2_000)
        .map(|i| {
            let status = match i % 5 {
                0 => Value::Null,
                _ => json!(statuses[i % 3]),
            };
            worker(i, status, (i % 4 == 0).then_some(team))
        })
        .collect();
    // A batch with one row whose enum holds a number (no API write stores that; a database
    // written by other means may): the database works its columns out.
    let mut odd: Vec<NewRow> = (2_000..2_100)
        .map(|i| worker(i, json!("active"), None))
        .collect();
    odd.push(worker(2_100, json!(5), Some(team)));
    let small: Vec<NewRow> = (3_000..3_010)
        .map(|i| worker(i, json!("inactive"), Some(team)))
        .collect();
    let single = worker(4_000, json!("terminated"), None);
    store
        .write(move |tx| {
            records::insert_rows(tx, "worker", org, &large)?;
            records::insert_rows(tx, "worker", org, &odd)?;
            records::insert_rows(tx, "worker", org, &small)?;
            let record: Value = serde_json::from_str(&single.data).unwrap();
            records::insert(tx, "worker", org, &record)?;
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
    assert_eq!(disagreements(&store, org).await, (0, 2_112));

    // Updates: through the store (which fills the columns), and a statement that only
    // rewrites the text (which the database puts right).
    let ids: Vec<String> = store
        .read(move |tx| {
            let rows = tx.query(
                "SELECT id FROM worker WHERE organization_id = ? ORDER BY id LIMIT 3",
                &[org.into()],
            )?;
            Ok::<_, StoreError>(
                rows.into_iter()
                    .map(|mut r| r.remove(0).into_string().unwrap())
                    .collect(),
            )
        })
        .await
        .unwrap();
    store
        .write(move |tx| {
            let through_store = json!({
                "id": ids[0], "name": "Moved", "customerIdentifier": "NEW-1", "status": "inactive",
                "teamId": team.to_string(), "isArchived": false,
                "createdAt": "2026-11-27T10:00:00.000Z", "updatedAt": "2026-11-27T11:00:00.000Z",
            });
            records::update(tx, "worker", org, &through_store)?;
            let behind = json!({
                "id": ids[1], "name": "Behind", "customerIdentifier": "NEW-2",
                "isArchived": false,
                "createdAt": "2026-11-27T10:00:00.000Z", "updatedAt": "2026-11-27T11:00:00.000Z",
            });
            let numeric = json!({
                "id": ids[2], "name": "Numeric", "customerIdentifier": 42, "status": true,
                "isArchived": false,
                "createdAt": "2026-11-27T10:00:00.000Z", "updatedAt": "2026-11-27T11:00:00.000Z",
            });
            for (id, doc) in [(&ids[1], behind), (&ids[2], numeric)] {
                let set = match tx.dialect() {
                    Dialect::Sqlite => "data = ?",
                    Dialect::Postgres => "data = CAST(? AS JSON)",
                };
                tx.execute(
                    &format!("UPDATE worker SET {set} WHERE organization_id = ? AND id = ?"),
                    &[
                        SqlValue::Text(doc.to_string()),
                        org.into(),
                        id.as_str().into(),
                    ],
                )?;
            }
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
    assert_eq!(disagreements(&store, org).await, (0, 2_112));
}

/// SQLite: a database whose tables predate the filter columns (as a server before them left
/// it: no columns, indexes on the fields' expressions, no triggers) gets them at the next start,
/// filled from the records, and its filters answer as before.
#[tokio::test]
async fn a_sqlite_database_from_before_the_columns_gets_them_filled_at_start() {
    if std::env::var("PRODOPS_TEST_DATABASE_URL").is_ok_and(|u| !u.is_empty()) {
        return; // PostgreSQL: the test below.
    }
    let dir = tempfile::tempdir().unwrap();
    let url = database_url(&dir);
    let org = Uuid::now_v7();
    let rows: Vec<NewRow> = (0..500)
        .map(|i| worker(i, json!(["active", "inactive"][i % 2]), None))
        .collect();
    let store = restart_from_an_earlier_form(&url, org, rows, |tx| {
        let fields = &filter_fields::of_table("worker").filter_indexed;
        for t in ["insert", "update"] {
            tx.execute(&format!("DROP TRIGGER tr_worker_filter_columns_{t}"), &[])?;
        }
        for f in fields {
            let index = prodops_server::migrate::filter_index_name("worker", f);
            tx.execute(&format!("DROP INDEX {index}"), &[])?;
        }
        for f in fields {
            tx.execute(
                &format!("ALTER TABLE worker DROP COLUMN {}", filter_column(f)),
                &[],
            )?;
        }
        tx.execute(
            "CREATE INDEX ix_worker_on_status ON worker (organization_id, json_extract(data, '$.status'), is_archived, created_at, id) WHERE json_extract(data, '$.status') IS NOT NULL",
            &[],
        )?;
        Ok(())
    })
    .await;
    assert_eq!(disagreements(&store, org).await, (0, 500));
    let (indexes, active) = store
        .read(move |tx| {
            let indexes = tx.query(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'worker' AND name LIKE 'ix_worker_on_%' ORDER BY name",
                &[],
            )?;
            let active = tx.query(
                "SELECT COUNT(*) FROM worker WHERE organization_id = ? AND f_status = 'active'",
                &[org.into()],
            )?;
            Ok::<_, StoreError>((
                indexes
                    .into_iter()
                    .map(|mut r| r.remove(0).into_string().unwrap())
                    .collect::<Vec<_>>(),
                active[0][0].as_i64(),
            ))
        })
        .await
        .unwrap();
    let mut expected: Vec<String> = filter_fields::of_table("worker")
        .filter_indexed
        .iter()
        .map(|f| prodops_server::migrate::filter_index_name("worker", f))
        .collect();
    expected.sort();
    assert_eq!(indexes, expected, "the expression indexes are gone");
    assert_eq!(active, Some(250));
}

/// PostgreSQL: a database whose filter columns are the stored generated columns of earlier
/// versions (and one that lacks a column altogether) gets plain columns at the next start:
/// the generated ones keep their values, the missing one is added and filled from the
/// records, and the trigger that sets them from the text is in place. On a database of its
/// own, since it changes the tables other tests write to.
#[tokio::test]
async fn a_postgres_database_with_generated_filter_columns_gets_plain_ones_at_start() {
    let Some(admin) = std::env::var("PRODOPS_TEST_DATABASE_URL")
        .ok()
        .filter(|u| u.starts_with("postgres"))
    else {
        return; // SQLite: the test above.
    };
    let name = format!("prodops_filter_columns_{}", Uuid::now_v7().simple());
    let (client, connection) = tokio_postgres::connect(&admin, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .unwrap();
    let (path, query) = admin.split_once('?').unwrap_or((&admin, ""));
    let server = &path[..path.rfind('/').unwrap()];
    let url = if query.is_empty() {
        format!("{server}/{name}")
    } else {
        format!("{server}/{name}?{query}")
    };
    let org = Uuid::now_v7();
    let team = Uuid::now_v7();
    let rows: Vec<NewRow> = (0..500)
        .map(|i| {
            let status = json!(["active", "inactive"][i % 2]);
            worker(i, status, (i % 3 == 0).then_some(team))
        })
        .collect();
    // Generated columns (their indexes go with the columns), no trigger, and the team's
    // column missing.
    let store = restart_from_an_earlier_form(&url, org, rows, |tx| {
        tx.execute("DROP TRIGGER tr_worker_filter_columns ON worker", &[])?;
        for f in &filter_fields::of_table("worker").filter_indexed {
            let column = filter_column(f);
            tx.execute(&format!("ALTER TABLE worker DROP COLUMN {column}"), &[])?;
            if f != "teamId" {
                tx.execute(
                    &format!(
                        "ALTER TABLE worker ADD COLUMN {column} TEXT GENERATED ALWAYS AS (data #>> '{{{f}}}') STORED"
                    ),
                    &[],
                )?;
            }
        }
        Ok(())
    })
    .await;
    let (generated, teams, trigger) = store
        .read(move |tx| {
            let generated = tx.query(
                "SELECT CAST(column_name AS TEXT) FROM information_schema.columns \
                 WHERE table_schema = current_schema() AND table_name = 'worker' \
                 AND is_generated <> 'NEVER'",
                &[],
            )?;
            let teams = tx.query(
                "SELECT COUNT(*) FROM worker WHERE organization_id = ? AND f_teamid = ?",
                &[org.into(), team.into()],
            )?;
            let trigger = tx.query(
                "SELECT COUNT(*) FROM pg_trigger WHERE tgname = 'tr_worker_filter_columns'",
                &[],
            )?;
            Ok::<_, StoreError>((
                generated.len(),
                teams[0][0].as_i64(),
                trigger[0][0].as_i64(),
            ))
        })
        .await
        .unwrap();
    assert_eq!(generated, 0, "no filter column is generated any more");
    assert_eq!(
        teams,
        Some(167),
        "the missing column is filled from the records"
    );
    assert_eq!(trigger, Some(1));
    assert_eq!(disagreements(&store, org).await, (0, 500));
    // New rows, large batch and single, get their columns as before.
    let more: Vec<NewRow> = (500..700)
        .map(|i| worker(i, json!("terminated"), Some(team)))
        .collect();
    store
        .write(move |tx| records::insert_rows(tx, "worker", org, &more).map(|_| ()))
        .await
        .unwrap();
    assert_eq!(disagreements(&store, org).await, (0, 700));
    drop(store);
    let _ = client
        .batch_execute(&format!("DROP DATABASE {name} WITH (FORCE)"))
        .await;
}

/// PostgreSQL: the trigger leaves the columns as written only while the writing transaction
/// says it filled them (`trust_written`), and sets them from the text again once it says no
/// more. Rolled back at the end, so the shared database keeps no row whose columns disagree.
#[tokio::test]
async fn on_postgres_columns_stay_as_written_only_while_the_writer_vouches_for_them() {
    if !std::env::var("PRODOPS_TEST_DATABASE_URL").is_ok_and(|u| u.starts_with("postgres")) {
        return; // SQLite's triggers compare instead (the first test).
    }
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    let org = Uuid::now_v7();
    let outcome = store
        .write(move |tx| {
            let status_of = |tx: &mut dyn Tx, id: &str| {
                tx.query(
                    "SELECT f_status FROM worker WHERE organization_id = ? AND id = ?",
                    &[org.into(), id.into()],
                )
                .map(|rows| rows[0][0].as_str().map(str::to_string))
            };
            let id = Uuid::now_v7().to_string();
            let data = json!({"id": id, "name": "W", "status": "active"}).to_string();
            assert!(filter_columns::trust_written(tx, true)?);
            tx.execute(
                "INSERT INTO worker (organization_id, id, is_archived, created_at, updated_at, data, f_status) \
                 VALUES (?, ?, false, '2026-11-28T00:00:00.000Z', '2026-11-28T00:00:00.000Z', CAST(? AS JSON), 'as written')",
                &[org.into(), id.as_str().into(), data.as_str().into()],
            )?;
            let trusted = status_of(tx, &id)?;
            filter_columns::trust_written(tx, false)?;
            tx.execute(
                "UPDATE worker SET data = CAST(? AS JSON) WHERE organization_id = ? AND id = ?",
                &[data.as_str().into(), org.into(), id.as_str().into()],
            )?;
            let after = status_of(tx, &id)?;
            // Roll back: the row was only there to be looked at.
            Err::<(), _>(StoreError::Other(format!("{trusted:?} {after:?}")))
        })
        .await
        .unwrap_err();
    assert_eq!(
        outcome.to_string(),
        StoreError::Other(r#"Some("as written") Some("active")"#.into()).to_string()
    );
}
