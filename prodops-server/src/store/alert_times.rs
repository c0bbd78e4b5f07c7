//! The deliverables whose alerts changed with time alone, found through the bounds of their
//! stored alert window (`records::ALERT_WINDOW_COLUMN`, `prodops_core::alerts::Window`), for
//! the job that announces them (`jobs::alert_events`; docs/events.md, "Events for what time
//! changes").
//!
//! The window `[from, until)` of a row is where its stored answers hold. Two indexes, across
//! organizations, give each bound a range: `until` (the low half of the packed column) is
//! when the stored answers stop holding (for a row stored not late, its `lateAt`), `from`
//! (the high half) the latest instant they had reached when written (for a row stored late,
//! its `lateAt` or a later instant). A read is a range of one index in `(bound, id)` order,
//! never a scan of an organization's deliverables.
//!
//! Both indexes are partial: a bound held to the end of what the column holds (`until` at
//! 2106, `from` at 1970: most rows, those whose answers no instant changes) is never in a
//! range a read asks for, so its row stays out of the index. Each index over every row put
//! an insert at a random place (the row's id) into a B-tree as large as the table on every
//! deliverable written (bench/README.md, "tree-import-shapes").

use uuid::Uuid;

use super::{SqlValue, StoreResult, Tx};

/// The deliverables' table.
const TABLE: &str = super::deliverables::TABLE;

/// Which bound of its window a row was found by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Bound {
    /// `until`: its stored answers stopped holding there.
    Until,
    /// `from`: its stored answers had reached that instant when written.
    From,
}

impl Bound {
    /// The bound as SQL over the packed column (the same text as the index's expression).
    fn expr(self) -> &'static str {
        match self {
            Bound::Until => "(alerts_window & 4294967295)",
            Bound::From => "(alerts_window >> 32)",
        }
    }

    /// The rows the bound's index holds: those whose bound a read can ask for (the same text
    /// in the index's `WHERE` and in every read's, so that SQLite, which matches the terms as
    /// written, takes the index).
    fn kept(self) -> &'static str {
        match self {
            Bound::Until => "(alerts_window & 4294967295) < 4294967295",
            Bound::From => "(alerts_window >> 32) > 0",
        }
    }

    fn index(self) -> &'static str {
        match self {
            Bound::Until => "ix_deliverable_alert_until",
            Bound::From => "ix_deliverable_alert_from",
        }
    }
}

/// A non-archived deliverable whose window bound is in the range asked for.
#[derive(Debug, Clone)]
pub struct Found {
    /// The bound, in seconds after the Unix epoch.
    pub at: i64,
    pub id: String,
    pub bound: Bound,
    pub org: Uuid,
    /// The stored record text.
    pub data: String,
}

/// Migration step: the two indexes on the window's bounds.
pub fn add_indexes(tx: &mut dyn Tx) -> StoreResult<()> {
    for bound in [Bound::Until, Bound::From] {
        tx.execute(
            &format!(
                "CREATE INDEX IF NOT EXISTS {} ON {TABLE} ({}, id) WHERE {}",
                bound.index(),
                bound.expr(),
                bound.kept()
            ),
            &[],
        )?;
    }
    Ok(())
}

/// Migration step: the indexes of a database that made them over every row, made again
/// partial ([`add_indexes`]).
pub fn make_indexes_partial(tx: &mut dyn Tx) -> StoreResult<()> {
    for bound in [Bound::Until, Bound::From] {
        tx.execute(&format!("DROP INDEX IF EXISTS {}", bound.index()), &[])?;
    }
    add_indexes(tx)
}

/// The first `limit` non-archived deliverables, in `(at, id)` order over both bounds, whose
/// bound is after the position `(at, after)` (`after` `None`: the whole second `at` is past)
/// and at most `to`. Ids are UUIDs, all of one length with their dashes in the same places,
/// so the database's order of them is their byte order whatever its collation.
pub fn found(
    tx: &mut dyn Tx,
    at: i64,
    after: Option<&str>,
    to: i64,
    limit: usize,
) -> StoreResult<Vec<Found>> {
    let mut out = Vec::new();
    for bound in [Bound::Until, Bound::From] {
        let [at_second, range] = statements(bound, limit);
        if let Some(after) = after {
            let rows = tx.query(
                &at_second,
                &[SqlValue::Int(at), after.into(), SqlValue::Bool(false)],
            )?;
            out.extend(rows.iter().filter_map(|r| row(r, bound)));
        }
        if at < to {
            let rows = tx.query(
                &range,
                &[SqlValue::Int(at), SqlValue::Int(to), SqlValue::Bool(false)],
            )?;
            out.extend(rows.iter().filter_map(|r| row(r, bound)));
        }
    }
    out.sort_by(|a, b| (a.at, &a.id, a.bound).cmp(&(b.at, &b.id, b.bound)));
    out.truncate(limit);
    Ok(out)
}

/// The two reads of [`found`] for one bound: the rest of the second `at` after an id (its
/// parameters: `at`, the id, `false`), and the seconds after `at` up to `to` (`at`, `to`,
/// `false`). Public for the plan tests, which check that each is a range of the bound's index.
pub fn statements(bound: Bound, limit: usize) -> [String; 2] {
    let (e, kept) = (bound.expr(), bound.kept());
    let cols = format!("{e}, id, organization_id, data FROM {TABLE}");
    [
        format!(
            "SELECT {cols} WHERE {e} = ? AND id > ? AND is_archived = ? AND {kept} \
             ORDER BY id LIMIT {limit}"
        ),
        format!(
            "SELECT {cols} WHERE {e} > ? AND {e} <= ? AND is_archived = ? AND {kept} \
             ORDER BY {e}, id LIMIT {limit}"
        ),
    ]
}

/// The name of `bound`'s index, for the plan tests.
pub fn index_name(bound: Bound) -> &'static str {
    bound.index()
}

fn row(r: &[SqlValue], bound: Bound) -> Option<Found> {
    Some(Found {
        at: r.first()?.as_i64()?,
        id: r.get(1)?.as_str()?.to_string(),
        bound,
        org: Uuid::parse_str(r.get(2)?.as_str()?).ok()?,
        data: r.get(3)?.as_str()?.to_string(),
    })
}
