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
                "CREATE INDEX IF NOT EXISTS {} ON {TABLE} ({}, id)",
                bound.index(),
                bound.expr()
            ),
            &[],
        )?;
    }
    Ok(())
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
        let e = bound.expr();
        let cols = format!("{e}, id, organization_id, data FROM {TABLE}");
        if let Some(after) = after {
            let rows = tx.query(
                &format!(
                    "SELECT {cols} WHERE {e} = ? AND id > ? AND is_archived = ? ORDER BY id LIMIT {limit}"
                ),
                &[SqlValue::Int(at), after.into(), SqlValue::Bool(false)],
            )?;
            out.extend(rows.iter().filter_map(|r| row(r, bound)));
        }
        if at < to {
            let rows = tx.query(
                &format!(
                    "SELECT {cols} WHERE {e} > ? AND {e} <= ? AND is_archived = ? ORDER BY {e}, id LIMIT {limit}"
                ),
                &[SqlValue::Int(at), SqlValue::Int(to), SqlValue::Bool(false)],
            )?;
            out.extend(rows.iter().filter_map(|r| row(r, bound)));
        }
    }
    out.sort_by(|a, b| (a.at, &a.id, a.bound).cmp(&(b.at, &b.id, b.bound)));
    out.truncate(limit);
    Ok(out)
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
