//! Filters use indexes (issue 14, item 2): the plan of the statements the server runs for a
//! filtered list and count, read with `EXPLAIN` on the real database
//! (`PRODOPS_TEST_DATABASE_URL` for PostgreSQL, else SQLite), names the field's filter index
//! (enums, ids, external identifiers) or the custom property value index, and never reads the
//! whole table; the count of an enum's values reads the counts kept per value alone, and the
//! count of a custom property the property value index alone.
//!
//! The tables hold enough rows (20,000 workers, 5,000 deliverables, statistics gathered) that
//! PostgreSQL's planner chooses as it would for a real shop, not as it does for a toy table.

mod common;
use common::database_url;

use prodops_server::migrate::filter_index_name;
use prodops_server::store::records::{self, NewRow, Select};
use prodops_server::store::sql::Cond;
use prodops_server::store::{Dialect, PageRead, Store, StoreError};
#[path = "common/plans.rs"]
mod plans;
use plans::plan;
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

/// Asserts that a page of 100 under `conds` reads `table` through `index`, and returns the
/// plan of their count.
async fn assert_page_reads(
    store: &Store,
    table: &'static str,
    org: Uuid,
    conds: &[Cond],
    index: &str,
) -> String {
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
    // The list's own page, by keyset (the default order), first and next.
    let after = (
        "2026-11-21T00:00:10.000Z".to_string(),
        Uuid::nil().to_string(),
    );
    for after in [None, Some(&after)] {
        let page = PageRead {
            table,
            conds: conds.to_vec(),
            after: after.cloned(),
            limit: 100,
            offset: 0,
        };
        let (sql, params) = records::keyset_sql(dialect, org, &page);
        let list = plan(store, sql, params).await;
        assert!(
            uses_index(dialect, &list, table, index) && reads_page_records_by_key(dialect, &list),
            "the keyset page under {conds:?} reads {index}:\n{list}"
        );
    }
    let (sql, params) = records::count_sql(dialect, table, org, conds);
    plan(store, sql, params).await
}

/// Asserts that a page of 100 and the count under `conds` both read `table` through `index`,
/// the count from the index alone: on SQLite a covering index, on PostgreSQL an index-only
/// scan, which it only plans on columns (the filter's generated column), never on an
/// expression over `data`.
async fn assert_page_and_count_read(
    store: &Store,
    table: &'static str,
    org: Uuid,
    conds: &[Cond],
    index: &str,
) {
    let dialect = store.dialect();
    let count = assert_page_reads(store, table, org, conds, index).await;
    assert!(
        uses_index(dialect, &count, table, index) && reads_index_alone(dialect, &count, index),
        "the count under {conds:?} reads {index} alone:\n{count}"
    );
}

/// Whether a page from the property value index reads its records (`d`) by key, after the
/// ids: never the organization's deliverables one by one.
fn reads_page_records_by_key(dialect: Dialect, plan: &str) -> bool {
    if !plan.contains("deliverable_property_index") {
        return true;
    }
    match dialect {
        Dialect::Sqlite => plan
            .lines()
            .filter(|l| l.contains(" d "))
            .all(|l| l.starts_with("SEARCH d ") && l.contains(" AND id=?)")),
        Dialect::Postgres => plan.contains("Nested Loop") && plan.contains("deliverable_pkey"),
    }
}

fn reads_index_alone(dialect: Dialect, plan: &str, index: &str) -> bool {
    match dialect {
        Dialect::Sqlite => plan.contains(&format!("COVERING INDEX {index}")),
        Dialect::Postgres => plan.contains(&format!("Index Only Scan using {index}")),
    }
}

/// Whether a plan reads the counts kept per value and no resource table.
fn reads_kept_counts(plan: &str) -> bool {
    plan.contains("record_value_counts")
        && !["worker", "deliverable"]
            .iter()
            .any(|t| plan.contains(&format!("SCAN {t}")) || plan.contains(&format!(" on {t}")))
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
        for t in [table, "deliverable_property_index"] {
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
        broad: field == "status",
    };
    let team_id = team.to_string();
    let cases = [
        (
            "customerIdentifier",
            text("customerIdentifier", &["E-00042"]),
        ),
        ("teamId", text("teamId", &[team_id.as_str()])),
    ];
    for (field, cond) in cases {
        let index = filter_index_name("worker", field);
        let conds = vec![cond, Cond::Archived(false)];
        assert_page_and_count_read(&store, "worker", org, &conds, &index).await;
    }
    // An enum (status): the page through its filter index, the count from the counts kept per
    // value, for one value or several, a value matching most records or few.
    let index = filter_index_name("worker", "status");
    let conds = vec![text("status", &["inactive"]), Cond::Archived(false)];
    let count = assert_page_reads(&store, "worker", org, &conds, &index).await;
    assert!(
        reads_kept_counts(&count),
        "the count under {conds:?} reads the kept counts:\n{count}"
    );
    // A value most records hold: its page may as well read the list index and skip the few
    // others (the planner's choice); its count reads the kept counts.
    let conds = vec![text("status", &["active"]), Cond::Archived(false)];
    let (sql, params) = records::count_sql(dialect, "worker", org, &conds);
    let count = plan(&store, sql, params).await;
    assert!(
        reads_kept_counts(&count),
        "the count under {conds:?} reads the kept counts:\n{count}"
    );
    // Several values (a value given twice counts once). (A page in creation order is the
    // planner's choice between the filter index and the list index, by how many rows it
    // expects.)
    let conds = vec![
        text("status", &["inactive", "terminated", "inactive"]),
        Cond::Archived(false),
    ];
    let (sql, params) = records::count_sql(dialect, "worker", org, &conds);
    let count = plan(&store, sql, params).await;
    assert!(
        reads_kept_counts(&count),
        "the count of several statuses reads the kept counts:\n{count}"
    );
    // With `null` among the values (a missing status is not counted) the count reads the
    // workers; with another filter, their filter indexes.
    let conds = vec![text("status", &["inactive", "null"])];
    let (sql, params) = records::count_sql(dialect, "worker", org, &conds);
    let count = plan(&store, sql, params).await;
    assert!(!count.contains("record_value_counts"), "{count}");
    let conds = vec![
        text("status", &["inactive"]),
        text("teamId", &[team_id.as_str()]),
        Cond::Archived(false),
    ];
    let (sql, params) = records::count_sql(dialect, "worker", org, &conds);
    let count = plan(&store, sql, params).await;
    let team_index = filter_index_name("worker", "teamId");
    assert!(
        !count.contains("record_value_counts")
            && uses_index(dialect, &count, "worker", &team_index)
            && reads_index_alone(dialect, &count, &team_index),
        "the count under {conds:?} reads the team's index alone, not the enum's:\n{count}"
    );
    // Both filters are answered by the team's index, which carries the status: a page of a
    // broad status within the team reads only the records it answers, its count the index
    // alone (the team's 200 entries, not the 19,600 active workers or their records).
    let conds = vec![
        text("status", &["active"]),
        text("teamId", &[team_id.as_str()]),
        Cond::Archived(false),
    ];
    assert_page_and_count_read(&store, "worker", org, &conds, &team_index).await;
    // The answers are the records that match, however they are counted.
    for (conds, expected) in [
        (
            vec![text("status", &["inactive"]), Cond::Archived(false)],
            400,
        ),
        (vec![text("status", &["active", "active"])], 19_600),
        (
            vec![text("status", &["inactive", "terminated", "inactive"])],
            400,
        ),
        (vec![text("status", &["inactive"]), Cond::Archived(true)], 0),
        (vec![text("status", &["inactive", "null"])], 400),
        (
            vec![
                text("status", &["inactive"]),
                text("teamId", &[team_id.as_str()]),
            ],
            200,
        ),
        (
            vec![
                text("status", &["active", "null"]),
                text("teamId", &[team_id.as_str()]),
                Cond::Archived(false),
            ],
            0,
        ),
    ] {
        let counted = store
            .read(move |tx| records::count(tx, "worker", org, &conds))
            .await
            .unwrap();
        assert_eq!(counted, expected);
    }
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
        let index = format!("ix_deliverable_property_index_{index}");
        let conds = vec![cond, Cond::Archived(false)];
        assert_page_and_count_read(&store, "deliverable", org, &conds, &index).await;
        // The page reads no more candidates than it shows: the property index gives its ids
        // in the list's order.
        let select = Select {
            conds: conds.clone(),
            limit: 100,
            ..Default::default()
        };
        let (sql, params) = records::select_sql(store.dialect(), "deliverable", org, &select);
        let plan_of_page = plan(&store, sql, params).await;
        assert!(
            reads_page_records_by_key(store.dialect(), &plan_of_page),
            "{plan_of_page}"
        );
        let page = store
            .read(move |tx| records::select_values(tx, "deliverable", org, &select))
            .await
            .unwrap();
        assert_eq!(page.len(), expected.min(100) as usize);
        let counted = store
            .read(move |tx| records::count(tx, "deliverable", org, &conds))
            .await
            .unwrap();
        assert_eq!(counted, expected);
    }
    // A filter the index cannot answer exactly (a boolean asked in upper case also matches the
    // string "true" in the index) checks each candidate on its record.
    let conds = vec![prop("priority", &["TRUE"]), Cond::Archived(false)];
    let (sql, _) = records::count_sql(store.dialect(), "deliverable", org, &conds);
    assert!(sql.contains("FROM deliverable "), "{sql}");
}
