//! Filters use indexes (issue 14, item 2): the plan of the statements the server runs for a
//! filtered list and count, read with `EXPLAIN` on the real database
//! (`PRODOPS_TEST_DATABASE_URL` for PostgreSQL, else SQLite), names the field's filter index
//! (enums, ids, external identifiers) or the custom property value index, and never reads the
//! whole table.
//!
//! The tables hold enough rows (20,000 workers, 5,000 deliverables, statistics gathered) that
//! PostgreSQL's planner chooses as it would for a real shop, not as it does for a toy table.

mod common;
use common::database_url;

use prodops_server::migrate::filter_index_name;
use prodops_server::store::records::{self, NewRow, Select};
use prodops_server::store::sql::Cond;
use prodops_server::store::{Dialect, SqlValue, Store, StoreError};
use serde_json::{Value, json};
use uuid::Uuid;

fn created(i: usize) -> String {
    format!(
        "2026-11-21T{:02}:{:02}:{:02}.000Z",
        i / 3600 % 24,
        i / 60 % 60,
        i % 60
    )
}

/// The plan of `sql` as one text.
async fn plan(store: &Store, sql: String, params: Vec<SqlValue>) -> String {
    let dialect = store.dialect();
    store
        .read(move |tx| {
            let explain = match dialect {
                Dialect::Sqlite => format!("EXPLAIN QUERY PLAN {sql}"),
                Dialect::Postgres => format!("EXPLAIN {sql}"),
            };
            let rows = tx.query(&explain, &params)?;
            Ok::<_, StoreError>(
                rows.into_iter()
                    .flat_map(|r| r.into_iter().filter_map(SqlValue::into_string))
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        })
        .await
        .unwrap()
}

/// Whether a plan reads `table` through `index` and never scans the whole table.
fn uses_index(dialect: Dialect, plan: &str, table: &str, index: &str) -> bool {
    let scans = match dialect {
        // `SCAN worker` without `USING ... INDEX` is a full table scan.
        Dialect::Sqlite => plan
            .lines()
            .any(|l| l.contains(&format!("SCAN {table}")) && !l.contains("INDEX")),
        Dialect::Postgres => plan.contains(&format!("Seq Scan on {table}")),
    };
    plan.contains(index) && !scans
}

/// Asserts that a page of 100 and the count under `conds` both read `table` through `index`.
async fn assert_page_and_count_read(
    store: &Store,
    table: &'static str,
    org: Uuid,
    conds: &[Cond],
    index: &str,
) {
    let dialect = store.dialect();
    let select = Select {
        conds: conds.to_vec(),
        limit: 100,
        ..Default::default()
    };
    let (sql, params) = records::select_sql(dialect, table, org, &select);
    let list = plan(store, sql, params).await;
    assert!(
        uses_index(dialect, &list, table, index),
        "the page under {conds:?} reads {index}:\n{list}"
    );
    let (sql, params) = records::count_sql(dialect, table, org, conds);
    let count = plan(store, sql, params).await;
    assert!(
        uses_index(dialect, &count, table, index),
        "the count under {conds:?} reads {index}:\n{count}"
    );
    // A count reads the index alone: on SQLite a covering index, on PostgreSQL an index-only
    // scan, which it only plans on columns (the filter's generated column), never on an
    // expression over `data`.
    let index_only = match dialect {
        Dialect::Sqlite => count.contains("COVERING INDEX"),
        Dialect::Postgres => count.contains("Index Only Scan"),
    };
    if table == "worker" {
        assert!(
            index_only,
            "the count under {conds:?} reads {index} alone:\n{count}"
        );
    }
}

async fn seed(store: &Store, table: &'static str, org: Uuid, docs: Vec<Value>) {
    let rows: Vec<NewRow> = docs
        .iter()
        .map(|d| NewRow::of_text(d.to_string()).unwrap())
        .collect();
    store
        .write(move |tx| {
            for chunk in rows.chunks(2_000) {
                records::insert_rows(tx, table, org, chunk)?;
            }
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
    // What PostgreSQL's autovacuum does soon after a table grows: statistics, and the
    // visibility map that lets a count read an index alone (without it the planner expects to
    // visit the heap anyway, all the more in a test database many runs have written to). VACUUM
    // cannot run in a transaction, so on a connection of its own. The server never runs ANALYZE
    // on SQLite, whose planner goes by the shape of the indexes alone.
    if store.dialect() == Dialect::Postgres {
        let url = std::env::var("PRODOPS_TEST_DATABASE_URL").unwrap();
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        // One statement per call: several in one string run as one implicit transaction.
        for t in [table, "deliverable_property_values"] {
            client
                .batch_execute(&format!("VACUUM ANALYZE {t}"))
                .await
                .unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn filtered_lists_and_counts_read_through_the_filter_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    let dialect = store.dialect();
    let org = Uuid::now_v7();
    let team = Uuid::now_v7();
    let workers: Vec<Value> = (0..20_000)
        .map(|i| {
            json!({
                "id": Uuid::now_v7().to_string(),
                "createdAt": created(i),
                "name": format!("w{i}"),
                "customerIdentifier": format!("E-{i:05}"),
                "status": if i % 50 == 0 { "inactive" } else { "active" },
                "teamId": if i % 100 == 0 { Some(team.to_string()) } else { None },
            })
        })
        .collect();
    seed(&store, "worker", org, workers).await;

    let text = |field: &str, values: &[&str]| Cond::Indexed {
        field: field.to_string(),
        values: values.iter().map(|v| v.to_string()).collect(),
    };
    let team_id = team.to_string();
    let cases = [
        ("status", text("status", &["inactive"])),
        (
            "customerIdentifier",
            text("customerIdentifier", &["E-00042"]),
        ),
        ("teamId", text("teamId", &[team_id.as_str()])),
    ];
    for (field, cond) in cases {
        let index = filter_index_name(dialect, "worker", field);
        let conds = vec![cond, Cond::Archived(false)];
        assert_page_and_count_read(&store, "worker", org, &conds, &index).await;
    }
    // Several values: the count reads the index alone. (A page in creation order is the
    // planner's choice between this index and the list index, by how many rows it expects.)
    let conds = vec![
        text("status", &["inactive", "terminated"]),
        Cond::Archived(false),
    ];
    let (sql, params) = records::count_sql(dialect, "worker", org, &conds);
    let count = plan(&store, sql, params).await;
    let index = filter_index_name(dialect, "worker", "status");
    assert!(
        uses_index(dialect, &count, "worker", &index),
        "the count of several statuses reads {index}:\n{count}"
    );
    // The answers through the index are the records that match.
    let conds = vec![text("status", &["inactive"]), Cond::Archived(false)];
    let counted = store
        .read(move |tx| records::count(tx, "worker", org, &conds))
        .await
        .unwrap();
    assert_eq!(counted, 400);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn property_filters_read_through_the_property_value_index() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    let org = Uuid::now_v7();
    let orders: Vec<Value> = (0..5_000)
        .map(|i| {
            json!({
                "id": Uuid::now_v7().to_string(),
                "createdAt": created(i),
                "name": format!("o{i}"),
                "type": "order",
                "data": {"properties": {
                    "priority": if i % 100 == 0 { "rush" } else { "normal" },
                    "width": i % 250,
                    "tags": [format!("t{}", i % 500), "all"],
                }},
            })
        })
        .collect();
    seed(&store, "deliverable", org, orders).await;
    let prop = |key: &str, values: &[&str]| Cond::Property {
        key: key.into(),
        values: values.iter().map(|v| v.to_string()).collect(),
    };
    let cases = [
        (prop("priority", &["rush"]), 50, "value"),
        (prop("width", &["7"]), 20, "num"),
        (prop("tags", &["t7", "t8"]), 20, "value"),
    ];
    for (cond, expected, index) in cases {
        let index = format!("ix_deliverable_property_values_{index}");
        let conds = vec![cond, Cond::Archived(false)];
        assert_page_and_count_read(&store, "deliverable", org, &conds, &index).await;
        let counted = store
            .read(move |tx| records::count(tx, "deliverable", org, &conds))
            .await
            .unwrap();
        assert_eq!(counted, expected);
    }
}
