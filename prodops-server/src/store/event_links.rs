//! SQLite: how a record finds its creation event when that event is stored without its text
//! (store/events.rs, "by reference"), without an index entry per event.
//!
//! Why: `ix_events_record` took one entry per event, and a bulk import with random (UUIDv4)
//! record ids put each at a random place, so every 10,000-row commit rewrote pages all over
//! the index; the feed cost that import 37% (bench/README.md, issue 17). On SQLite the index
//! is partial (`WHERE data IS NOT NULL`): events stored without their text are not in it.
//! Instead, one `event_record_links` row per run of such events says: the records at rowids
//! `first_rowid .. first_rowid + n` of `table_name` have, in that order, the events
//! `first_seq .. first_seq + n` of the organization. A bulk call inserts its records one after
//! another and announces them in the same order, so its rowids and its cursors both count up
//! by one and the whole call is one row.
//!
//! Who reads the links: the `event_keep` triggers (store/migrate.rs), which copy a record's
//! text into its creation event before the record changes or goes (the event then holds its
//! text and is in the index like any other), and the audit trail of one record
//! (`GET /event?recordId=`, [`super::events::read_sql`]).
//!
//! Invariants:
//! - Every event with `data` NULL is covered by exactly one link, which names its record's
//!   rowid ([`link`] at append, [`rebuild`] in the migration and after a renumbering).
//! - Links of one table never overlap: a new link takes the rowids it covers from older ones
//!   ([`insert`]). A rowid an older link covers is in a newer record only after the older
//!   record was removed, and its trigger copied the text into its event first, so the part
//!   taken held nothing left to find. Then the covering link of a rowid is the one with the
//!   greatest `first_rowid` at or below it: one probe of the primary key.
//! - Whoever follows a link checks that the event it names is the record's (`record_id`)
//!   and still without its text: a link is where to look, the event says whether it is there.
//! - A `VACUUM` keeps the rowids of tables that have indexes, as every resource table has;
//!   should rowids ever be renumbered, the start-up check ([`check`]) finds links that name
//!   the wrong records and builds the table's links again from the events.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::events::NewEvent;
use super::{CellRef, SqlValue, StoreResult, Tx};

/// The links table (SQLite only; PostgreSQL keeps every event in `ix_events_record`).
pub const TABLE: &str = "event_record_links";

/// Its definition.
const DDL: &str = "CREATE TABLE IF NOT EXISTS event_record_links (
    table_name TEXT NOT NULL, first_rowid INTEGER NOT NULL, organization_id TEXT NOT NULL,
    first_seq BIGINT NOT NULL, n BIGINT NOT NULL,
    PRIMARY KEY (table_name, first_rowid)) WITHOUT ROWID";

/// A run of events whose records' rowids and whose cursors both count up by one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub org: String,
    pub first_rowid: i64,
    pub first_seq: i64,
    pub n: i64,
}

impl Run {
    fn last_rowid(&self) -> i64 {
        self.first_rowid + (self.n - 1)
    }
}

/// Cuts a sequence of (organization, cursor, rowid), in cursor order, into [`Run`]s.
#[derive(Debug, Default)]
pub struct Runs {
    runs: Vec<Run>,
}

impl Runs {
    pub fn push(&mut self, org: &str, seq: i64, rowid: i64) {
        if let Some(last) = self.runs.last_mut()
            && last.org == org
            && last.first_seq + last.n == seq
            && last.first_rowid.checked_add(last.n) == Some(rowid)
        {
            last.n += 1;
            return;
        }
        self.runs.push(Run {
            org: org.to_string(),
            first_rowid: rowid,
            first_seq: seq,
            n: 1,
        });
    }

    pub fn into_runs(self) -> Vec<Run> {
        self.runs
    }
}

/// The statement that finds the cursor of the creation event of the record at rowid `{rowid}`
/// of `table` that is stored without its text, by the covering link; `{rowid}` is an SQL
/// expression (`OLD.rowid` in a trigger, a column in a read). NULL when no link covers it.
/// The caller checks the event's `record_id` and `data IS NULL` (see the module's invariants).
pub fn linked_seq_sql(table: &str, rowid: &str) -> String {
    format!(
        "(SELECT CASE WHEN {rowid} - l.first_rowid < l.n THEN l.first_seq + ({rowid} - l.first_rowid) END \
         FROM {TABLE} l WHERE l.table_name = '{table}' AND l.first_rowid <= {rowid} \
         ORDER BY l.first_rowid DESC LIMIT 1)"
    )
}

/// At append: links the events `by_reference` marks (cursor `first + i` for event `i`) to
/// their records' rowids: the ones the bulk insert told ([`NewEvent::record_rowid`], from
/// `records::insert_rows`), else looked up by id (a lookup per record cost the import about
/// 8% more instructions than the whole link without it, bench/README.md). An event whose
/// record is not found keeps its own text (its flag is cleared), so that no event is left
/// without text and without a link.
pub fn link(
    tx: &mut dyn Tx,
    org: Uuid,
    first: i64,
    events: &[NewEvent],
    by_reference: &mut [bool],
) -> StoreResult<()> {
    let mut by_table: BTreeMap<&'static str, Vec<usize>> = BTreeMap::new();
    for (i, e) in events.iter().enumerate() {
        if !by_reference[i] {
            continue;
        }
        match prodops_core::registry::by_path(e.resource) {
            Some(kind) => by_table.entry(kind.desc().table).or_default().push(i),
            None => by_reference[i] = false,
        }
    }
    let org_text = org.to_string();
    for (table, indexes) in by_table {
        // The rowids the inserts told, and the others looked up.
        let mut rowid_of: Vec<Option<i64>> = events.iter().map(|e| e.record_rowid).collect();
        let missing: Vec<usize> = indexes
            .iter()
            .copied()
            .filter(|&i| rowid_of[i].is_none())
            .collect();
        super::events::for_each_record_of(
            tx,
            table,
            org,
            "rowid",
            events,
            &missing,
            &mut |i, rowid| {
                if let CellRef::Int(rowid) = rowid {
                    rowid_of[i] = Some(rowid);
                }
            },
        )?;
        let mut runs = Runs::default();
        for &i in &indexes {
            match rowid_of[i] {
                Some(rowid) => runs.push(&org_text, first + i as i64, rowid),
                None => by_reference[i] = false,
            }
        }
        for run in runs.into_runs() {
            insert(tx, table, &run)?;
        }
    }
    Ok(())
}

/// Stores `run` as a link of `table`, taking its rowids from the older links that cover any
/// of them (their records at those rowids are gone; see the module's invariants).
fn insert(tx: &mut dyn Tx, table: &str, run: &Run) -> StoreResult<()> {
    let (a, b) = (run.first_rowid, run.last_rowid());
    // Links never overlap, so the ones that can reach into [a, b] are the last one starting
    // at or before `a` and those starting within it.
    let older = tx.query(
        &format!(
            "SELECT first_rowid, organization_id, first_seq, n FROM {TABLE} \
             WHERE table_name = ? AND first_rowid <= ? AND first_rowid >= \
             COALESCE((SELECT max(first_rowid) FROM {TABLE} WHERE table_name = ? AND first_rowid <= ?), ?)"
        ),
        &[
            table.into(),
            SqlValue::Int(b),
            table.into(),
            SqlValue::Int(a),
            SqlValue::Int(a),
        ],
    )?;
    for row in older {
        let (Some(first_rowid), Some(org), Some(first_seq), Some(n)) = (
            row[0].as_i64(),
            row[1].as_str(),
            row[2].as_i64(),
            row[3].as_i64(),
        ) else {
            continue;
        };
        let old = Run {
            org: org.to_string(),
            first_rowid,
            first_seq,
            n,
        };
        if old.last_rowid() < a || old.first_rowid > b {
            continue;
        }
        tx.execute(
            &format!("DELETE FROM {TABLE} WHERE table_name = ? AND first_rowid = ?"),
            &[table.into(), SqlValue::Int(old.first_rowid)],
        )?;
        // The parts before `a` and after `b` stay (`a - 1` and `b + 1` exist when they do).
        let before = (old.first_rowid < a).then(|| (old.first_rowid, a - 1));
        let after = (old.last_rowid() > b).then(|| (b + 1, old.last_rowid()));
        for (from, to) in before.into_iter().chain(after) {
            let part = Run {
                org: old.org.clone(),
                first_rowid: from,
                first_seq: old.first_seq + (from - old.first_rowid),
                n: to - from + 1,
            };
            put(tx, table, &part)?;
        }
    }
    put(tx, table, run)
}

fn put(tx: &mut dyn Tx, table: &str, run: &Run) -> StoreResult<()> {
    tx.execute(
        &format!(
            "INSERT INTO {TABLE} (table_name, first_rowid, organization_id, first_seq, n) VALUES (?, ?, ?, ?, ?)"
        ),
        &[
            table.into(),
            SqlValue::Int(run.first_rowid),
            run.org.as_str().into(),
            SqlValue::Int(run.first_seq),
            SqlValue::Int(run.n),
        ],
    )?;
    Ok(())
}

/// The resource tables and the resource paths each serves.
fn tables() -> BTreeMap<&'static str, Vec<&'static str>> {
    let mut tables: BTreeMap<&'static str, Vec<&'static str>> = BTreeMap::new();
    for kind in prodops_core::registry::resources() {
        let d = kind.desc();
        tables.entry(d.table).or_default().push(d.path);
    }
    tables
}

fn quoted(paths: &[&str]) -> String {
    paths
        .iter()
        .map(|p| format!("'{p}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Builds the links of `table` again from the events stored without their text (one pass
/// over the feed): for the migration that introduced them and after a renumbering of rowids.
pub fn rebuild(tx: &mut dyn Tx, table: &str, paths: &[&str]) -> StoreResult<()> {
    let mut runs = Runs::default();
    tx.for_each_row(
        &format!(
            "SELECT e.organization_id, e.seq, x.rowid FROM events e JOIN {table} x \
             ON x.organization_id = e.organization_id AND x.id = e.record_id \
             WHERE e.data IS NULL AND e.resource IN ({}) ORDER BY e.organization_id, e.seq",
            quoted(paths)
        ),
        &[],
        &mut |row| {
            if let (CellRef::Text(org), CellRef::Int(seq), CellRef::Int(rowid)) =
                (&row[0], &row[1], &row[2])
            {
                runs.push(&String::from_utf8_lossy(org), *seq, *rowid);
            }
            Ok(())
        },
    )?;
    tx.execute(
        &format!("DELETE FROM {TABLE} WHERE table_name = ?"),
        &[table.into()],
    )?;
    // Distinct records have distinct rowids, so these runs do not overlap; sorted by rowid,
    // each is stored as it is.
    for run in runs.into_runs() {
        put(tx, table, &run)?;
    }
    Ok(())
}

/// Migration (SQLite): creates the links table, links the events already stored without their
/// text, and makes `ix_events_record` partial. Nothing on PostgreSQL.
pub fn migrate(tx: &mut dyn Tx) -> StoreResult<()> {
    if tx.dialect() != super::Dialect::Sqlite {
        return Ok(());
    }
    tx.execute(DDL, &[])?;
    for (table, paths) in tables() {
        rebuild(tx, table, &paths)?;
    }
    tx.execute("DROP INDEX IF EXISTS ix_events_record", &[])?;
    tx.execute(
        "CREATE INDEX ix_events_record ON events (record_id, organization_id, seq) WHERE data IS NOT NULL",
        &[],
    )?;
    Ok(())
}

/// Start-up (SQLite): checks that each link's first and last events, where still stored
/// without their text, name the records at its rowids, and builds a table's links again from
/// the events when one does not (rowids renumbered). One probe per link end.
pub fn check(tx: &mut dyn Tx) -> StoreResult<()> {
    if tx.dialect() != super::Dialect::Sqlite {
        return Ok(());
    }
    for (table, paths) in tables() {
        let stale = !tx
            .query(
                &format!(
                    "SELECT 1 FROM {TABLE} l JOIN events e ON e.organization_id = l.organization_id \
                     AND e.seq IN (l.first_seq, l.first_seq + l.n - 1) \
                     WHERE l.table_name = ? AND e.data IS NULL AND NOT EXISTS (SELECT 1 FROM {table} x \
                     WHERE x.rowid = l.first_rowid + (e.seq - l.first_seq) \
                     AND x.organization_id = e.organization_id AND x.id = e.record_id) LIMIT 1"
                ),
                &[table.into()],
            )?
            .is_empty();
        if stale {
            tracing::warn!(
                table,
                "the change feed's record links name other rows (rowids renumbered?): building them again"
            );
            rebuild(tx, table, &paths)?;
        }
    }
    Ok(())
}

/// Pruning: the links of an organization whose events are all before `kept_from` go.
pub fn prune(tx: &mut dyn Tx, org: &str, kept_from: i64) -> StoreResult<()> {
    if tx.dialect() != super::Dialect::Sqlite {
        return Ok(());
    }
    tx.execute(
        &format!("DELETE FROM {TABLE} WHERE organization_id = ? AND first_seq + n <= ?"),
        &[org.into(), SqlValue::Int(kept_from)],
    )?;
    Ok(())
}

/// The audit trail's way to a record's linked creation event (SQLite): the cursors of the
/// events stored without their text of the record `?` (organization `?`) in any of `tables`,
/// as `SELECT` arms to `UNION ALL`; two parameters per table: organization, record id.
pub fn record_seq_arms(tables: &[&str]) -> Vec<String> {
    tables
        .iter()
        .map(|t| {
            format!(
                "SELECT {} FROM {t} x WHERE x.organization_id = ? AND x.id = ?",
                linked_seq_sql(t, "x.rowid")
            )
        })
        .collect()
}

/// The resource tables that serve any of `resources` (every table when `None`).
pub fn tables_of(resources: Option<&[String]>) -> Vec<&'static str> {
    tables()
        .into_iter()
        .filter(|(_, paths)| {
            resources.is_none_or(|r| paths.iter().any(|p| r.iter().any(|x| x == p)))
        })
        .map(|(t, _)| t)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::events::{self, EventFilter, Origin};
    use crate::store::records::{self, NewRow};
    use proptest::prelude::*;

    fn note(org: Uuid, i: usize) -> NewRow {
        let id = Uuid::now_v7();
        NewRow::of_text(
            serde_json::json!({
                "id": id, "organizationId": org, "body": format!("note {i}"), "isArchived": false,
                "createdAt": "2026-11-25T12:00:00.000Z", "updatedAt": "2026-11-25T12:00:00.000Z",
            })
            .to_string(),
        )
        .unwrap()
    }

    fn links(tx: &mut dyn Tx) -> Vec<(i64, i64, i64)> {
        tx.query(
            &format!("SELECT first_rowid, first_seq, n FROM {TABLE} WHERE table_name = 'note' ORDER BY first_rowid"),
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| (r[0].as_i64().unwrap(), r[1].as_i64().unwrap(), r[2].as_i64().unwrap()))
        .collect()
    }

    /// Each record's audit trail is its one creation event, with the text it was created with.
    fn assert_creation_text_kept<'a>(
        tx: &mut dyn Tx,
        org: Uuid,
        rows: impl IntoIterator<Item = &'a NewRow>,
    ) -> StoreResult<()> {
        for row in rows {
            let trail = events::read(
                tx,
                org,
                &EventFilter {
                    record_id: Some(row.id.clone()),
                    limit: 10,
                    ..Default::default()
                },
            )?;
            assert_eq!(trail.len(), 1, "{}", row.id);
            assert_eq!(trail[0].record_id, row.id);
            assert_eq!(trail[0].data, row.data, "{}", row.id);
        }
        Ok(())
    }

    fn created(rows: &[NewRow]) -> Vec<NewEvent> {
        rows.iter()
            .map(|r| NewEvent {
                event_type: "note.created".into(),
                resource: "note",
                record_id: r.id.clone(),
                data: r.data.clone(),
                changed: None,
                by_reference: true,
                record_rowid: None,
            })
            .collect()
    }

    fn origin(org: Uuid) -> Origin {
        Origin {
            org,
            key_id: None,
            request_id: None,
            occurred_at: "2026-11-25T12:00:00.000Z".into(),
            occurred_ms: 0,
        }
    }

    /// A record created where a removed one was (SQLite hands out the rowid of a removed
    /// newest row again) takes that rowid from the older link, and both records' trails hold
    /// their own creation text after a change.
    #[tokio::test]
    async fn a_new_link_takes_the_rowids_of_removed_records_from_the_older_one() {
        let store = crate::store::Store::open("sqlite::memory:").await.unwrap();
        let org = Uuid::now_v7();
        store
            .write(move |tx| {
                let first: Vec<NewRow> = (0..4).map(|i| note(org, i)).collect();
                records::insert_rows(tx, "note", org, &first)?;
                events::append(tx, &origin(org), &created(&first))?;
                let [(r, 1, 4)] = links(tx)[..] else {
                    panic!("{:?}", links(tx))
                };
                // The two newest go; their events get their text.
                for row in &first[2..] {
                    tx.execute("DELETE FROM note WHERE id = ?", &[row.id.as_str().into()])?;
                }
                let second: Vec<NewRow> = (4..7).map(|i| note(org, i)).collect();
                records::insert_rows(tx, "note", org, &second)?;
                let reused = tx.query(
                    "SELECT rowid FROM note WHERE id = ?",
                    &[second[0].id.as_str().into()],
                )?[0][0]
                    .as_i64();
                assert_eq!(reused, Some(r + 2), "the freed rowid is handed out again");
                events::append(tx, &origin(org), &created(&second))?;
                assert_eq!(links(tx), [(r, 1, 2), (r + 2, 5, 3)]);
                // Every remaining record changes.
                for row in first[..2].iter().chain(&second) {
                    tx.execute(
                        "UPDATE note SET data = '{}' WHERE id = ?",
                        &[row.id.as_str().into()],
                    )?;
                }
                assert_creation_text_kept(tx, org, first.iter().chain(&second))?;
                Ok::<_, crate::store::StoreError>(())
            })
            .await
            .unwrap();
    }

    /// A database from before the links: its events stored without their text are in the
    /// whole index and have no link. The migration links them and makes the index partial;
    /// the trail and the triggers then find them.
    #[tokio::test]
    async fn the_migration_links_the_events_stored_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", dir.path().join("db.sqlite").display());
        let org = Uuid::now_v7();
        let rows: Vec<NewRow> = (0..6).map(|i| note(org, i)).collect();
        {
            let store = crate::store::Store::open(&url).await.unwrap();
            let rows = rows.clone();
            store
                .write(move |tx| {
                    records::insert_rows(tx, "note", org, &rows)?;
                    events::append(tx, &origin(org), &created(&rows))?;
                    // As the release before: no links, the whole index.
                    tx.execute(&format!("DROP TABLE {TABLE}"), &[])?;
                    tx.execute("DROP INDEX ix_events_record", &[])?;
                    tx.execute(
                        "CREATE INDEX ix_events_record ON events (record_id, organization_id, seq)",
                        &[],
                    )?;
                    tx.execute("DELETE FROM schema_migrations WHERE version = 73", &[])?;
                    Ok::<_, crate::store::StoreError>(())
                })
                .await
                .unwrap();
        }
        let store = crate::store::Store::open(&url).await.unwrap();
        store
            .write(move |tx| {
                assert_eq!(links(tx).len(), 1);
                assert_eq!(links(tx)[0].1..links(tx)[0].2 + 1, 1..7);
                let index = tx.query(
                    "SELECT sql FROM sqlite_master WHERE name = 'ix_events_record'",
                    &[],
                )?;
                assert!(
                    index[0][0]
                        .as_str()
                        .unwrap()
                        .contains("WHERE data IS NOT NULL"),
                    "{index:?}"
                );
                tx.execute(
                    "UPDATE note SET data = '{}' WHERE id = ?",
                    &[rows[4].id.as_str().into()],
                )?;
                assert_creation_text_kept(tx, org, &rows)?;
                Ok::<_, crate::store::StoreError>(())
            })
            .await
            .unwrap();
    }

    /// A new link inside an older one splits it: the older keeps its rowids before and after.
    #[tokio::test]
    async fn a_new_link_inside_an_older_one_leaves_both_ends_of_it() {
        let store = crate::store::Store::open("sqlite::memory:").await.unwrap();
        store
            .write(move |tx| {
                let run = |first_rowid, first_seq, n| Run {
                    org: "o".into(),
                    first_rowid,
                    first_seq,
                    n,
                };
                insert(tx, "note", &run(10, 1, 10))?;
                insert(tx, "note", &run(13, 50, 2))?;
                assert_eq!(links(tx), [(10, 1, 3), (13, 50, 2), (15, 6, 5)]);
                // Over the end of one and the start of the next.
                insert(tx, "note", &run(14, 60, 3))?;
                assert_eq!(
                    links(tx),
                    [(10, 1, 3), (13, 50, 1), (14, 60, 3), (17, 8, 3)]
                );
                Ok::<_, crate::store::StoreError>(())
            })
            .await
            .unwrap();
    }

    /// The insert tells the rowids only when they are certain: after a row at `i64::MAX`,
    /// SQLite hands out random free rowids, and the append looks them up instead.
    #[tokio::test]
    async fn rowids_past_the_largest_are_looked_up_not_assumed() {
        let store = crate::store::Store::open("sqlite::memory:").await.unwrap();
        let org = Uuid::now_v7();
        store
            .write(move |tx| {
                let rows: Vec<NewRow> = (0..4).map(|i| note(org, i)).collect();
                assert!(records::insert_rows(tx, "note", org, &rows[..1])?.is_some());
                tx.execute(
                    "UPDATE note SET rowid = 9223372036854775807 WHERE id = ?",
                    &[rows[0].id.as_str().into()],
                )?;
                assert_eq!(records::insert_rows(tx, "note", org, &rows[1..])?, None);
                events::append(tx, &origin(org), &created(&rows))?;
                for row in &rows {
                    tx.execute(
                        "UPDATE note SET data = '{}' WHERE id = ?",
                        &[row.id.as_str().into()],
                    )?;
                }
                assert_creation_text_kept(tx, org, &rows)?;
                Ok::<_, crate::store::StoreError>(())
            })
            .await
            .unwrap();
    }

    /// A bulk call's creation events are one link; rowids renumbered (as a `VACUUM` may do
    /// to a table without indexes) are found at start-up and the links built again, after
    /// which a change of a record still copies its creation text into its event.
    #[tokio::test]
    async fn one_link_per_bulk_call_and_the_start_up_check_mends_renumbered_rowids() {
        let store = crate::store::Store::open("sqlite::memory:").await.unwrap();
        let org = Uuid::now_v7();
        store
            .write(move |tx| {
                let rows: Vec<NewRow> = (0..5).map(|i| note(org, i)).collect();
                records::insert_rows(tx, "note", org, &rows)?;
                events::append(tx, &origin(org), &created(&rows))?;
                let stored_without_text =
                    tx.query("SELECT count(*) FROM events WHERE data IS NULL", &[])?[0][0].as_i64();
                assert_eq!(stored_without_text, Some(5));
                let before = links(tx);
                assert_eq!(before.len(), 1);
                assert_eq!((before[0].1, before[0].2), (1, 5));

                // Renumbered rowids: the links name other rows until the check.
                tx.execute("UPDATE note SET rowid = rowid + 1000", &[])?;
                check(tx)?;
                let after = links(tx);
                assert_eq!(after, [(before[0].0 + 1000, 1, 5)]);

                // A change of the third record keeps its creation text in its event.
                tx.execute(
                    "UPDATE note SET data = '{}' WHERE id = ?",
                    &[rows[2].id.as_str().into()],
                )?;
                assert_creation_text_kept(tx, org, &rows)?;
                let copied = tx.query("SELECT seq FROM events WHERE data IS NOT NULL", &[])?;
                assert_eq!(copied.len(), 1);
                assert_eq!(copied[0][0].as_i64(), Some(3));
                // Pruning the events takes their links.
                assert_eq!(events::prune(tx, 1)?, 5);
                assert_eq!(links(tx), []);
                Ok::<_, crate::store::StoreError>(())
            })
            .await
            .unwrap();
    }

    fn runs_of(items: &[(&str, i64, i64)]) -> Vec<Run> {
        let mut runs = Runs::default();
        for &(org, seq, rowid) in items {
            runs.push(org, seq, rowid);
        }
        runs.into_runs()
    }

    #[test]
    fn a_run_goes_on_while_cursor_and_rowid_both_count_up_in_one_organization() {
        let runs = runs_of(&[
            ("a", 1, 10),
            ("a", 2, 11),
            ("a", 3, 12),
            ("a", 4, 20), // rowid jumps
            ("a", 6, 21), // cursor jumps
            ("b", 7, 22), // another organization
        ]);
        let got: Vec<(i64, i64, i64)> = runs
            .iter()
            .map(|r| (r.first_seq, r.first_rowid, r.n))
            .collect();
        assert_eq!(got, [(1, 10, 3), (4, 20, 1), (6, 21, 1), (7, 22, 1)]);
        assert_eq!(runs[3].org, "b");
        // No run wraps past the largest rowid.
        let runs = runs_of(&[("a", 1, i64::MAX), ("a", 2, i64::MIN)]);
        assert_eq!(runs.len(), 2);
    }

    proptest! {
        /// Any sequence in cursor order: the runs give back each (cursor, rowid) exactly once,
        /// in order, and no two neighbouring runs could have been one.
        #[test]
        fn runs_cover_every_item_once(steps in proptest::collection::vec((1i64..3, -2i64..3), 0..200)) {
            let mut items = Vec::new();
            let (mut seq, mut rowid) = (0i64, 100i64);
            for (ds, dr) in steps {
                seq += ds;
                rowid += dr;
                items.push(("o", seq, rowid));
            }
            let runs = runs_of(&items);
            let back: Vec<(i64, i64)> = runs
                .iter()
                .flat_map(|r| (0..r.n).map(move |k| (r.first_seq + k, r.first_rowid + k)))
                .collect();
            let want: Vec<(i64, i64)> = items.iter().map(|&(_, s, r)| (s, r)).collect();
            prop_assert_eq!(back, want);
            for w in runs.windows(2) {
                prop_assert!(
                    !(w[0].first_seq + w[0].n == w[1].first_seq
                        && w[0].first_rowid + w[0].n == w[1].first_rowid)
                );
            }
        }
    }
}
