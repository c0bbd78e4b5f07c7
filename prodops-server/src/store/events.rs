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
    /// `data` is the text the record was stored with by this transaction (a bulk call's batched
    /// creates): if the record still holds exactly that text when the event is appended, the
    /// event is stored without a copy of it (see [`append`]).
    pub by_reference: bool,
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
    let by_reference = stored_as_sent(tx, origin.org, events)?;
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
            if by_reference[i] {
                CellRef::Null
            } else {
                CellRef::Text(e.data.as_bytes())
            },
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

/// Ids per `IN (...)` list when looking records up.
const LOOKUP_CHUNK: usize = 500;

/// For each event, whether it is stored without its text: a creation event whose record
/// (`by_reference`) still holds exactly the event's text at the end of its transaction.
///
/// Why: a bulk import wrote every record's text twice, once into its table and once into
/// `events`; this keeps the events of a bulk call about 60% smaller (bench/README.md,
/// issue 17). The contract stays: the event reads the record's text ([`read`]) until the
/// record changes or goes, and the resource tables' `event_keep` triggers (store/migrate.rs)
/// copy the text into such events before either, in the same transaction. The check here
/// covers a record changed again after its creation within the same transaction (a later
/// item of the same bulk call, the end-of-bulk refresh of the deliverable tree): its events
/// are not stored yet when it changes, so they keep their own copy.
fn stored_as_sent(tx: &mut dyn Tx, org: Uuid, events: &[NewEvent]) -> StoreResult<Vec<bool>> {
    let mut keep = vec![false; events.len()];
    let mut by_resource: std::collections::BTreeMap<&str, Vec<usize>> = Default::default();
    for (i, e) in events.iter().enumerate() {
        if e.by_reference {
            by_resource.entry(e.resource).or_default().push(i);
        }
    }
    for (resource, indexes) in by_resource {
        let Some(kind) = prodops_core::registry::by_path(resource) else {
            continue;
        };
        let table = kind.desc().table;
        for chunk in indexes.chunks(LOOKUP_CHUNK) {
            let sql = format!(
                "SELECT id, data FROM {table} WHERE organization_id = ? AND id IN ({})",
                vec!["?"; chunk.len()].join(", ")
            );
            let mut params: Vec<SqlValue> = Vec::with_capacity(chunk.len() + 1);
            params.push(org.into());
            params.extend(
                chunk
                    .iter()
                    .map(|&i| SqlValue::from(events[i].record_id.as_str())),
            );
            // Compared as the rows stream by, without copying the records' texts out.
            let by_id: std::collections::HashMap<&[u8], usize> = chunk
                .iter()
                .map(|&i| (events[i].record_id.as_bytes(), i))
                .collect();
            tx.for_each_row(&sql, &params, &mut |row| {
                if let (CellRef::Text(id), CellRef::Text(data)) = (&row[0], &row[1])
                    && let Some(&i) = by_id.get(id)
                {
                    keep[i] = *data == events[i].data.as_bytes();
                }
                Ok(())
            })?;
        }
    }
    Ok(keep)
}

/// The expression that reads an event's text: its own, or for an event stored without it,
/// its record's (one `CASE` over every resource, so that the event and the record are read in
/// one statement, from one snapshot).
fn data_expr() -> &'static str {
    static EXPR: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    EXPR.get_or_init(|| {
        let arms: String = prodops_core::registry::resources()
            .iter()
            .map(|k| {
                let d = k.desc();
                format!(
                    " WHEN '{}' THEN (SELECT CAST(r.data AS TEXT) FROM {} r \
                     WHERE r.organization_id = events.organization_id AND r.id = events.record_id)",
                    d.path, d.table
                )
            })
            .collect();
        format!("COALESCE(data, CASE resource{arms} END)")
    })
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
    let mut sql = format!(
        "SELECT seq, id, event_type, resource, record_id, key_id, request_id, occurred_at, {}, changed \
         FROM events WHERE organization_id = ? AND seq > ?",
        data_expr()
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
            // NULL only for an event kept by reference whose record is gone without its text
            // copied in, which the `event_keep` triggers prevent.
            data: text(&r[8]).unwrap_or_else(|| "null".to_string()),
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
