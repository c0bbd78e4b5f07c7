//! The change feed finds one record's events through `ix_events_record` (issue 17), on the
//! real database (`PRODOPS_TEST_DATABASE_URL` for PostgreSQL, else SQLite): the audit trail
//! of a record (`GET /event?recordId=`) and the `event_keep` trigger that runs on every update
//! and delete of a record, which finds the record's creation event stored without its text
//! through the record's rowid on SQLite (store/event_links.rs) and through the hash index
//! `ix_events_created` on PostgreSQL. Without statistics SQLite
//! preferred the primary key's one equal column, the organization's whole feed, so each update
//! of a record read every event of its organization (a bulk update of 100,000 records ran for
//! hours).

mod common;
use common::database_url;

use prodops_server::store::events::{self, EventFilter, NewEvent, Origin};
use prodops_server::store::{Dialect, SqlValue, Store, StoreError};
#[path = "common/plans.rs"]
mod plans;
use plans::plan;
use uuid::Uuid;

const EVENTS: usize = 5_000;

/// Appends `EVENTS` creation events of as many records to a new organization; answers it and
/// one record id.
async fn seeded(store: &Store) -> (Uuid, String) {
    let org = Uuid::now_v7();
    let records: Vec<String> = (0..EVENTS).map(|_| Uuid::new_v4().to_string()).collect();
    let one = records[EVENTS / 2].clone();
    let evs: Vec<NewEvent> = records
        .into_iter()
        .map(|record_id| NewEvent {
            event_type: "worker.created".to_string(),
            resource: "worker",
            record_id,
            data: "{}".to_string(),
            changed: None,
            by_reference: false,
            record_rowid: None,
        })
        .collect();
    let origin = Origin {
        org,
        key_id: None,
        request_id: Some("seed".to_string()),
        occurred_at: "2026-11-25T12:00:00.000Z".to_string(),
        occurred_ms: 1_795_000_000_000,
    };
    let dialect = store.dialect();
    store
        .write(move |tx| {
            events::append(tx, &origin, &evs)?;
            if dialect == Dialect::Postgres {
                // As autovacuum would; SQLite runs without statistics, as the server leaves it.
                tx.execute("ANALYZE events", &[])?;
            }
            Ok::<_, StoreError>(())
        })
        .await
        .unwrap();
    (org, one)
}

fn reads_the_record_index(dialect: Dialect, plan: &str) -> bool {
    let whole_feed = match dialect {
        Dialect::Sqlite => {
            plan.contains("PRIMARY KEY (organization_id=?)") || plan.contains("SCAN e")
        }
        Dialect::Postgres => plan.contains("Seq Scan on events"),
    };
    plan.contains("ix_events_record") && !whole_feed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_records_audit_trail_reads_its_index_entries() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    let (org, record) = seeded(&store).await;
    let filter = EventFilter {
        record_id: Some(record.clone()),
        limit: 100,
        ..Default::default()
    };
    let (sql, params) = events::read_sql(store.dialect(), org, &filter);
    let p = plan(&store, sql, params).await;
    assert!(reads_the_record_index(store.dialect(), &p), "{p}");
    if store.dialect() == Dialect::Postgres {
        // And the record's creation event stored without its text, through the hash index.
        assert!(p.contains("ix_events_created"), "{p}");
    }

    // And it answers the record's event.
    let found = store
        .read(move |tx| events::read(tx, org, &filter))
        .await
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].record_id, record);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_event_keep_trigger_finds_the_creation_event_without_reading_the_feed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&database_url(&dir)).await.unwrap();
    if store.dialect() == Dialect::Postgres {
        // PostgreSQL's trigger is one statement per write, joined to the rows it changed
        // (migrate.rs, `prodops_event_keep`): its statement over one changed row, with the
        // row as a `VALUES` list in place of the transition table.
        let (org, record) = seeded(&store).await;
        let sql = format!(
            "UPDATE events e SET data = o.data FROM (VALUES ('{org}', '{record}', '{{}}')) \
             AS o(organization_id, id, data) WHERE e.organization_id = o.organization_id \
             AND e.record_id = o.id AND e.resource = ANY(ARRAY['worker']) AND e.data IS NULL"
        );
        let p = plan(&store, sql, vec![]).await;
        assert!(
            p.contains("ix_events_created") && !p.contains("Seq Scan on events"),
            "{p}"
        );
        return;
    }
    // SQLite: through the record's rowid.
    let (org, record) = seeded(&store).await;
    // The body of the worker table's update trigger, as stored, with its `OLD` values as
    // parameters.
    let body = store
        .read(|tx| {
            tx.query(
                "SELECT sql FROM sqlite_master WHERE name = 'tr_worker_event_keep_update'",
                &[],
            )
        })
        .await
        .unwrap()
        .into_iter()
        .next()
        .and_then(|r| r.into_iter().next())
        .and_then(SqlValue::into_string)
        .expect("the trigger exists");
    let update = body
        .split_once("BEGIN")
        .and_then(|(_, rest)| rest.rsplit_once("END"))
        .map(|(stmt, _)| stmt.trim().trim_end_matches(';').to_string())
        .expect("a trigger body");
    let sql = update
        .replace("OLD.data", "'{}'")
        .replace("OLD.organization_id", &format!("'{org}'"))
        .replace("OLD.rowid", "2500")
        .replace("OLD.id", &format!("'{record}'"));
    assert!(!sql.contains("OLD."), "{sql}");
    let p = plan(&store, sql, vec![]).await;
    // One probe of the links for the record's rowid, one of the events' primary key.
    assert!(
        p.contains("SEARCH events USING PRIMARY KEY (organization_id=? AND seq=?)")
            && p.contains("SEARCH l USING PRIMARY KEY (table_name=? AND first_rowid<?)")
            && !p.contains("SCAN"),
        "{update}\n{p}"
    );
}
