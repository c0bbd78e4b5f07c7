//! The rows of the change feed (docs/events.md): appended in the write transaction they
//! describe, read by cursor, pruned by age.
//!
//! Order: each organization has one row in `event_counters`; a transaction that appends events
//! moves it by their number (`INSERT ... ON CONFLICT DO UPDATE ... RETURNING`) and numbers its
//! events with the range it got. On PostgreSQL the update locks the row until the transaction
//! ends, so a second writer of the same organization waits there until the first commits (or
//! rolls back, giving its numbers back): numbers are handed out in commit order, and a reader
//! never sees number `n + 1` committed while `n` is still to come. The events are appended as
//! the last statements of the transaction, so the row is held only for the time of the commit.
//! SQLite has one writer, which orders everything anyway.

use uuid::Uuid;

use super::{CellRef, Dialect, SqlValue, StoreResult, Tx};

/// One event to append.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
    pub id: Uuid,
    pub event_type: String,
    pub resource: &'static str,
    pub record_id: String,
    /// The record as JSON text.
    pub data: String,
    /// For an update, the changed fields as a JSON array text.
    pub changed: Option<String>,
}

/// What the events of one transaction share.
#[derive(Debug, Clone)]
pub struct Origin {
    pub org: Uuid,
    pub key_id: Option<Uuid>,
    pub request_id: Option<String>,
    /// The request's time as the API writes it.
    pub occurred_at: String,
    /// The same, in milliseconds since the epoch (what pruning compares).
    pub occurred_ms: i64,
}

/// One stored event, as read.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredEvent {
    pub seq: i64,
    pub id: String,
    pub event_type: String,
    pub resource: String,
    pub record_id: String,
    pub key_id: Option<String>,
    pub request_id: Option<String>,
    pub occurred_at: String,
    pub data: String,
    pub changed: Option<String>,
}

const COLUMNS: [&str; 12] = [
    "organization_id",
    "seq",
    "id",
    "event_type",
    "resource",
    "record_id",
    "key_id",
    "request_id",
    "occurred_at",
    "occurred_ms",
    "data",
    "changed",
];

/// Rows per multi-row `INSERT` (12 parameters each, under SQLite's limit).
const CHUNK: usize = 400;
/// From this many events PostgreSQL appends them with `COPY`.
const COPY_FROM: usize = 64;

/// Appends `events` (in order) to the organization's feed; answers how many were appended.
pub fn append(tx: &mut dyn Tx, origin: &Origin, events: &[NewEvent]) -> StoreResult<usize> {
    if events.is_empty() {
        return Ok(0);
    }
    let n = events.len() as i64;
    let rows = tx.query(
        "INSERT INTO event_counters (organization_id, last_seq) VALUES (?, ?) \
         ON CONFLICT (organization_id) DO UPDATE SET last_seq = event_counters.last_seq + excluded.last_seq \
         RETURNING last_seq",
        &[origin.org.into(), SqlValue::Int(n)],
    )?;
    let last = rows
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64)
        .ok_or_else(|| super::StoreError::other("the event counter answered no row"))?;
    let first = last - n + 1;
    let org = origin.org.to_string();
    let key = origin.key_id.map(|k| k.to_string());
    let ids: Vec<String> = events.iter().map(|e| e.id.to_string()).collect();
    fn text(s: &Option<String>) -> CellRef<'_> {
        s.as_deref()
            .map_or(CellRef::Null, |s| CellRef::Text(s.as_bytes()))
    }
    let key_cell = text(&key);
    let request_cell = text(&origin.request_id);
    let cells_of = |i: usize| -> [CellRef<'_>; 12] {
        let e = &events[i];
        [
            CellRef::Text(org.as_bytes()),
            CellRef::Int(first + i as i64),
            CellRef::Text(ids[i].as_bytes()),
            CellRef::Text(e.event_type.as_bytes()),
            CellRef::Text(e.resource.as_bytes()),
            CellRef::Text(e.record_id.as_bytes()),
            key_cell,
            request_cell,
            CellRef::Text(origin.occurred_at.as_bytes()),
            CellRef::Int(origin.occurred_ms),
            CellRef::Text(e.data.as_bytes()),
            text(&e.changed),
        ]
    };
    if events.len() >= COPY_FROM && tx.dialect() == Dialect::Postgres {
        let all: Vec<CellRef<'_>> = (0..events.len()).flat_map(cells_of).collect();
        if tx.copy_in("events", &COLUMNS, &all)? {
            return Ok(events.len());
        }
    }
    let mut params: Vec<CellRef<'_>> = Vec::with_capacity(CHUNK.min(events.len()) * 12);
    let mut start = 0;
    while start < events.len() {
        let end = (start + CHUNK).min(events.len());
        let row = format!("({})", vec!["?"; COLUMNS.len()].join(", "));
        let sql = format!(
            "INSERT INTO events ({}) VALUES {}",
            COLUMNS.join(", "),
            vec![row; end - start].join(", ")
        );
        params.clear();
        for i in start..end {
            params.extend(cells_of(i));
        }
        tx.execute_refs(&sql, &params)?;
        start = end;
    }
    Ok(events.len())
}

/// What to read of the feed.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    pub after: i64,
    /// Exact types.
    pub types: Vec<String>,
    /// Type prefixes (`deliverable.progress.`).
    pub type_prefixes: Vec<String>,
    /// Resources; `None`: any.
    pub resources: Option<Vec<String>>,
    pub record_id: Option<String>,
    pub limit: u64,
}

/// The events after `filter.after` that match it, in cursor order.
pub fn read(tx: &mut dyn Tx, org: Uuid, filter: &EventFilter) -> StoreResult<Vec<StoredEvent>> {
    let mut sql = String::from(
        "SELECT seq, id, event_type, resource, record_id, key_id, request_id, occurred_at, data, changed \
         FROM events WHERE organization_id = ? AND seq > ?",
    );
    let mut params: Vec<SqlValue> = vec![org.into(), SqlValue::Int(filter.after)];
    if !filter.types.is_empty() || !filter.type_prefixes.is_empty() {
        let mut any = Vec::new();
        if !filter.types.is_empty() {
            any.push(format!(
                "event_type IN ({})",
                vec!["?"; filter.types.len()].join(", ")
            ));
            params.extend(filter.types.iter().map(|t| SqlValue::from(t.as_str())));
        }
        for prefix in &filter.type_prefixes {
            any.push(format!("substr(event_type, 1, {}) = ?", prefix.len()));
            params.push(prefix.as_str().into());
        }
        sql.push_str(&format!(" AND ({})", any.join(" OR ")));
    }
    if let Some(resources) = &filter.resources {
        if resources.is_empty() {
            return Ok(Vec::new());
        }
        sql.push_str(&format!(
            " AND resource IN ({})",
            vec!["?"; resources.len()].join(", ")
        ));
        params.extend(resources.iter().map(|r| SqlValue::from(r.as_str())));
    }
    if let Some(record) = &filter.record_id {
        sql.push_str(" AND record_id = ?");
        params.push(record.as_str().into());
    }
    sql.push_str(&format!(" ORDER BY seq LIMIT {}", filter.limit));
    let text = |v: &SqlValue| v.as_str().map(str::to_string);
    Ok(tx
        .query(&sql, &params)?
        .into_iter()
        .map(|r| StoredEvent {
            seq: r[0].as_i64().unwrap_or_default(),
            id: text(&r[1]).unwrap_or_default(),
            event_type: text(&r[2]).unwrap_or_default(),
            resource: text(&r[3]).unwrap_or_default(),
            record_id: text(&r[4]).unwrap_or_default(),
            key_id: text(&r[5]),
            request_id: text(&r[6]),
            occurred_at: text(&r[7]).unwrap_or_default(),
            data: text(&r[8]).unwrap_or_default(),
            changed: text(&r[9]),
        })
        .collect())
}

/// Removes the events that occurred before `before_ms`; answers how many. The counters stay,
/// so cursors are never handed out twice.
pub fn prune(tx: &mut dyn Tx, before_ms: i64) -> StoreResult<u64> {
    tx.execute(
        "DELETE FROM events WHERE occurred_ms < ?",
        &[SqlValue::Int(before_ms)],
    )
}
