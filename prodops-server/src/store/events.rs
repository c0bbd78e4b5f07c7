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
//!
//! Storage: what the events of one transaction share (the organization's key, the request, the
//! time) is one `event_origins` row keyed by the transaction's first number; an event row holds
//! only what is its own. Every transaction's events are one range of numbers, so an event's
//! origin is the origin with the greatest `first_seq` not above its `seq`. The events' ids come
//! from the origin too: the transaction's first event has the origin's `first_id` (a UUIDv7),
//! each next one that id plus one in its random bits ([`event_id`]). Why: a bulk call of
//! 10,000 records wrote those columns 10,000 times (bench/README.md, issue 17).

use uuid::Uuid;

use super::{CellRef, Dialect, SqlValue, StoreResult, Tx};

/// One event to append.
#[derive(Debug, Clone, PartialEq)]
pub struct NewEvent {
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
    /// SQLite: the rowid the record was inserted at, when the insert told it
    /// ([`super::records::insert_rows`]); linking the event to its record
    /// (store/event_links.rs) then need not look it up.
    pub record_rowid: Option<i64>,
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

const COLUMNS: [&str; 7] = [
    "organization_id",
    "seq",
    "event_type",
    "resource",
    "record_id",
    "data",
    "changed",
];

/// Rows per multi-row `INSERT` (7 parameters each, under SQLite's limit).
const CHUNK: usize = 500;
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
    let optional = |s: &Option<String>| s.as_deref().map_or(SqlValue::Null, SqlValue::from);
    tx.execute(
        "INSERT INTO event_origins (organization_id, first_seq, first_id, key_id, request_id, occurred_at, occurred_ms) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
        &[
            origin.org.into(),
            SqlValue::Int(first),
            Uuid::now_v7().to_string().into(),
            optional(&origin.key_id.map(|k| k.to_string())),
            optional(&origin.request_id),
            origin.occurred_at.as_str().into(),
            SqlValue::Int(origin.occurred_ms),
        ],
    )?;
    let mut by_reference = stored_as_sent(tx, origin.org, events)?;
    if tx.dialect() == Dialect::Sqlite {
        // SQLite keeps these events out of `ix_events_record` and links them to their
        // records' rowids instead (store/event_links.rs).
        super::event_links::link(tx, origin.org, first, events, &mut by_reference)?;
    }
    let org = origin.org.to_string();
    let cells_of = |i: usize| -> [CellRef<'_>; 7] {
        let e = &events[i];
        [
            CellRef::Text(org.as_bytes()),
            CellRef::Int(first + i as i64),
            CellRef::Text(e.event_type.as_bytes()),
            CellRef::Text(e.resource.as_bytes()),
            CellRef::Text(e.record_id.as_bytes()),
            if by_reference[i] {
                CellRef::Null
            } else {
                CellRef::Text(e.data.as_bytes())
            },
            e.changed
                .as_deref()
                .map_or(CellRef::Null, |c| CellRef::Text(c.as_bytes())),
        ]
    };
    if events.len() >= COPY_FROM && tx.dialect() == Dialect::Postgres {
        let all: Vec<CellRef<'_>> = (0..events.len()).flat_map(cells_of).collect();
        if tx.copy_in("events", &COLUMNS, &all)? {
            return Ok(events.len());
        }
    }
    let mut params: Vec<CellRef<'_>> = Vec::with_capacity(CHUNK.min(events.len()) * COLUMNS.len());
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
///
/// How: on SQLite by the writer's record of touched records ([`touched_records_kept`]); on
/// PostgreSQL, for a table no statement of the transaction changed or removed rows of
/// ([`touched_in_transaction`]), without looking; otherwise by reading the records back and
/// comparing their texts.
fn stored_as_sent(tx: &mut dyn Tx, org: Uuid, events: &[NewEvent]) -> StoreResult<Vec<bool>> {
    if tx.dialect() == Dialect::Sqlite && touched_records_kept(tx)? {
        return not_touched(tx, org, events);
    }
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
        if tx.dialect() == Dialect::Postgres && !touched_in_transaction(tx, table)? {
            for i in indexes {
                keep[i] = true;
            }
            continue;
        }
        // Compared as the rows stream by, without copying the records' texts out.
        for_each_record_of(tx, table, org, "data", events, &indexes, &mut |i, data| {
            if let CellRef::Text(data) = data {
                keep[i] = data == events[i].data.as_bytes();
            }
        })?;
    }
    Ok(keep)
}

/// Streams one `column` of the records of `table` that the events `which` (indexes into
/// `events`) name by `record_id`, [`LOOKUP_CHUNK`] ids per statement: `f` gets the event's
/// index and the record's cell, borrowed. Events whose record is not there are not called.
pub(super) fn for_each_record_of(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    column: &str,
    events: &[NewEvent],
    which: &[usize],
    f: &mut dyn FnMut(usize, CellRef<'_>),
) -> StoreResult<()> {
    for chunk in which.chunks(LOOKUP_CHUNK) {
        let sql = format!(
            "SELECT id, {column} FROM {table} WHERE organization_id = ? AND id IN ({})",
            vec!["?"; chunk.len()].join(", ")
        );
        let mut params: Vec<SqlValue> = Vec::with_capacity(chunk.len() + 1);
        params.push(org.into());
        params.extend(
            chunk
                .iter()
                .map(|&i| SqlValue::from(events[i].record_id.as_str())),
        );
        let by_id: std::collections::HashMap<&[u8], usize> = chunk
            .iter()
            .map(|&i| (events[i].record_id.as_bytes(), i))
            .collect();
        tx.for_each_row(&sql, &params, &mut |row| {
            if let CellRef::Text(id) = &row[0]
                && let Some(&i) = by_id.get(id)
            {
                f(i, row[1]);
            }
            Ok(())
        })?;
    }
    Ok(())
}

/// SQLite: the writer connection's temporary table of the resource records whose text was
/// changed or that were removed since the last append, filled by temporary triggers on every
/// resource table (`BEFORE UPDATE OF data`, `BEFORE DELETE`, as the `event_keep` triggers).
const TOUCHED: &str = "prodops_touched_records";

/// SQLite: whether this connection keeps [`TOUCHED`]. When it does not yet, it starts to (in
/// this transaction: a rollback drops it again) and answers false, so this append reads the
/// records back; every later one only reads the table.
///
/// Why: reading 10,000 records back cost about as many instructions as appending their events
/// (bench/README.md, issue 17). A bulk-created record still holds the text its event announces
/// unless something changed or removed it later in the transaction, and SQLite's triggers see
/// every such change, whichever path made it. Entries older than the transaction (a write
/// that appended nothing) only make an event keep its own copy.
fn touched_records_kept(tx: &mut dyn Tx) -> StoreResult<bool> {
    let kept = !tx
        .query(
            "SELECT 1 FROM sqlite_temp_master WHERE type = 'table' AND name = ?",
            &[TOUCHED.into()],
        )?
        .is_empty();
    if kept {
        return Ok(true);
    }
    tx.execute(
        &format!(
            "CREATE TEMP TABLE IF NOT EXISTS {TOUCHED} \
             (table_name TEXT NOT NULL, organization_id TEXT NOT NULL, id TEXT NOT NULL)"
        ),
        &[],
    )?;
    let mut tables: Vec<&str> = prodops_core::registry::resources()
        .iter()
        .map(|k| k.desc().table)
        .collect();
    tables.sort_unstable();
    tables.dedup();
    for t in tables {
        let note = format!(
            "INSERT INTO {TOUCHED} (table_name, organization_id, id) VALUES ('{t}', OLD.organization_id, OLD.id);"
        );
        tx.execute(
            &format!(
                "CREATE TEMP TRIGGER IF NOT EXISTS {TOUCHED}_{t}_update BEFORE UPDATE OF data ON main.{t} \
                 BEGIN {note} END"
            ),
            &[],
        )?;
        tx.execute(
            &format!(
                "CREATE TEMP TRIGGER IF NOT EXISTS {TOUCHED}_{t}_delete BEFORE DELETE ON main.{t} \
                 BEGIN {note} END"
            ),
            &[],
        )?;
    }
    Ok(false)
}

/// SQLite, with [`TOUCHED`] kept: a creation event is stored without its text when its record
/// was not changed or removed since the organization's last append; the organization's entries
/// are then removed for the next one (only its own: another organization's entries of this
/// transaction still count for that organization's events).
fn not_touched(tx: &mut dyn Tx, org: Uuid, events: &[NewEvent]) -> StoreResult<Vec<bool>> {
    let touched: std::collections::HashSet<(String, String)> = tx
        .query(
            &format!("SELECT table_name, id FROM {TOUCHED} WHERE organization_id = ?"),
            &[org.into()],
        )?
        .into_iter()
        .filter_map(|r| Some((r[0].as_str()?.to_string(), r[1].as_str()?.to_string())))
        .collect();
    if !touched.is_empty() {
        tx.execute(
            &format!("DELETE FROM {TOUCHED} WHERE organization_id = ?"),
            &[org.into()],
        )?;
    }
    Ok(events
        .iter()
        .map(|e| {
            e.by_reference
                && (touched.is_empty()
                    || prodops_core::registry::by_path(e.resource).is_some_and(|kind| {
                        !touched.contains(&(kind.desc().table.to_string(), e.record_id.clone()))
                    }))
        })
        .collect())
}

/// PostgreSQL: whether a statement of this transaction changed or removed rows of `table`
/// (its `event_keep` trigger sets `prodops.touched_<table>` for the transaction, store/migrate.rs).
/// When none did, a record this transaction created still holds the text it was created with,
/// and a bulk call's records need not be read back (their 10,000 texts were what the append
/// cost most, bench/README.md, issue 17).
fn touched_in_transaction(tx: &mut dyn Tx, table: &str) -> StoreResult<bool> {
    let rows = tx.query(
        "SELECT current_setting(?, true)",
        &[format!("prodops.touched_{table}").into()],
    )?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_str)
        .is_some_and(|v| v == "1"))
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
                     WHERE r.organization_id = e.organization_id AND r.id = e.record_id)",
                    d.path, d.table
                )
            })
            .collect();
        format!("COALESCE(e.data, CASE e.resource{arms} END)")
    })
}

/// Migration (PostgreSQL): the creation events a bulk call stores without their text leave
/// `ix_events_record` (partial, `data IS NOT NULL`, as on SQLite) for a partial hash index on
/// the record id, `ix_events_created`. A B-tree entry per created record costs the import a
/// random insert into a wide ordered index (record and organization ids as text); a hash
/// index entry is a 4-byte hash code and a row pointer, and a record has at most one such
/// event (its text is copied in, moving the event into `ix_events_record`, before the record
/// changes or goes). Measured alone: 200,000 creation events with random record ids, +550 ms
/// with the B-tree entry, +170 ms with the hash one (bench/README.md, issue 17). The
/// `event_keep` trigger's lookup (`data IS NULL`) is served by the hash index; the audit
/// trail reads both ([`read_sql`]). Nothing on SQLite, which links such events to their
/// records' rowids (store/event_links.rs).
pub fn migrate_created_index(tx: &mut dyn Tx) -> StoreResult<()> {
    if tx.dialect() != Dialect::Postgres {
        return Ok(());
    }
    tx.execute("DROP INDEX IF EXISTS ix_events_record", &[])?;
    tx.execute(
        "CREATE INDEX ix_events_record ON events (record_id, organization_id, seq) WHERE data IS NOT NULL",
        &[],
    )?;
    tx.execute(
        "CREATE INDEX IF NOT EXISTS ix_events_created ON events USING hash (record_id) WHERE data IS NULL",
        &[],
    )?;
    Ok(())
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
    if filter.resources.as_ref().is_some_and(Vec::is_empty) {
        return Ok(Vec::new());
    }
    let (sql, params) = read_sql(tx.dialect(), org, filter);
    let text = |v: &SqlValue| v.as_str().map(str::to_string);
    tx.query(&sql, &params)?
        .into_iter()
        .map(|r| {
            let first_id = r[1].as_str().unwrap_or_default();
            Ok(StoredEvent {
                seq: r[0].as_i64().unwrap_or_default(),
                id: event_id(first_id, r[2].as_i64().unwrap_or_default())?,
                event_type: text(&r[3]).unwrap_or_default(),
                resource: text(&r[4]).unwrap_or_default(),
                record_id: text(&r[5]).unwrap_or_default(),
                key_id: text(&r[6]),
                request_id: text(&r[7]),
                occurred_at: text(&r[8]).unwrap_or_default(),
                // NULL only for an event kept by reference whose record is gone without its text
                // copied in, which the `event_keep` triggers prevent.
                data: text(&r[9]).unwrap_or_else(|| "null".to_string()),
                changed: text(&r[10]),
            })
        })
        .collect()
}

/// The statement of [`feed_cursor`] (one `?`: the organization), also written as a column of
/// a list page's one statement on PostgreSQL (`records::keyset_page_statement`). NULL for an
/// organization that never wrote.
pub const FEED_CURSOR_SQL: &str = "SELECT last_seq FROM event_counters WHERE organization_id = ?";

/// The cursor of the organization's newest event as the transaction sees it (0 before its first
/// event): read in the snapshot of a read, it names the events whose effects that read sees,
/// exactly the ones up to it, since cursors follow commit order and the counter moves in the
/// writes' own transactions (docs/events.md, "Reads that name their cursor"). One index probe.
pub fn feed_cursor(tx: &mut dyn Tx, org: Uuid) -> StoreResult<i64> {
    let rows = tx.query(FEED_CURSOR_SQL, &[org.into()])?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64)
        .unwrap_or(0))
}

/// The cursor of the oldest event the organization's feed keeps; when it keeps none, the
/// cursor its next event will get. Pruning removes a prefix of the feed and cursors have no
/// gaps, so the events after a cursor below this one less are (partly) gone. Two index probes.
pub fn oldest_kept(tx: &mut dyn Tx, org: Uuid) -> StoreResult<i64> {
    let org = org.to_string();
    let rows = tx.query(
        "SELECT (SELECT MIN(seq) FROM events WHERE organization_id = ?), \
         (SELECT last_seq FROM event_counters WHERE organization_id = ?)",
        &[org.as_str().into(), org.as_str().into()],
    )?;
    let row = rows.first();
    let at = |i: usize| row.and_then(|r| r.get(i)).and_then(SqlValue::as_i64);
    Ok(at(0).unwrap_or_else(|| at(1).unwrap_or(0) + 1))
}

/// The statement [`read`] runs, and its parameters (public for the plan tests).
pub fn read_sql(dialect: Dialect, org: Uuid, filter: &EventFilter) -> (String, Vec<SqlValue>) {
    // The events' conditions, on `e`, with their parameters.
    let mut conds = String::from("e.organization_id = ? AND e.seq > ?");
    let mut params: Vec<SqlValue> = vec![org.into(), SqlValue::Int(filter.after)];
    if !filter.types.is_empty() || !filter.type_prefixes.is_empty() {
        let mut any = Vec::new();
        if !filter.types.is_empty() {
            any.push(format!(
                "e.event_type IN ({})",
                vec!["?"; filter.types.len()].join(", ")
            ));
            params.extend(filter.types.iter().map(|t| SqlValue::from(t.as_str())));
        }
        for prefix in &filter.type_prefixes {
            any.push(format!("substr(e.event_type, 1, {}) = ?", prefix.len()));
            params.push(prefix.as_str().into());
        }
        conds.push_str(&format!(" AND ({})", any.join(" OR ")));
    }
    if let Some(resources) = filter.resources.as_ref().filter(|r| !r.is_empty()) {
        conds.push_str(&format!(
            " AND e.resource IN ({})",
            vec!["?"; resources.len()].join(", ")
        ));
        params.extend(resources.iter().map(|r| SqlValue::from(r.as_str())));
    }
    let mut events = "events e".to_string();
    if let Some(record) = &filter.record_id {
        conds.push_str(" AND e.record_id = ?");
        params.push(record.as_str().into());
        match dialect {
            Dialect::Sqlite => {
                // The audit trail of one record: its events that hold their text are its
                // entries of the partial `ix_events_record` (named: without statistics SQLite
                // prefers the primary key's one equal column, the organization's whole feed,
                // over the index's two); its creation event stored without text is found
                // through the record's rowid (store/event_links.rs).
                let tables = super::event_links::tables_of(filter.resources.as_deref());
                let mut arms = vec![
                    "SELECT i.seq FROM events i INDEXED BY ix_events_record WHERE i.record_id = ? \
                     AND i.organization_id = ? AND i.data IS NOT NULL"
                        .to_string(),
                ];
                params.extend([record.as_str().into(), org.into()]);
                arms.extend(super::event_links::record_seq_arms(&tables));
                for _ in &tables {
                    params.extend([org.into(), record.as_str().into()]);
                }
                conds.push_str(&format!(" AND e.seq IN ({})", arms.join(" UNION ALL ")));
            }
            Dialect::Postgres => {
                // The events that hold their text are a range of the partial
                // `ix_events_record`, read in order up to the page's end; the one creation
                // event stored without its text, if any, is in `ix_events_created`
                // ([`migrate_created_index`]).
                events = format!(
                    "((SELECT e.* FROM events e WHERE {conds} AND e.data IS NOT NULL ORDER BY e.seq LIMIT {limit}) \
                     UNION ALL (SELECT e.* FROM events e WHERE {conds} AND e.data IS NULL)) e",
                    limit = filter.limit
                );
                let arm = std::mem::take(&mut params);
                params = arm.iter().chain(arm.iter()).cloned().collect();
                conds = "TRUE".to_string();
            }
        }
    }
    // Each event joins its transaction's origin: the greatest `first_seq` not above its `seq`
    // (one index probe per event).
    let sql = format!(
        "SELECT e.seq, o.first_id, e.seq - o.first_seq, e.event_type, e.resource, e.record_id, o.key_id, \
         o.request_id, o.occurred_at, {}, e.changed FROM {events} JOIN event_origins o ON o.organization_id = e.organization_id \
         AND o.first_seq = (SELECT p.first_seq FROM event_origins p WHERE p.organization_id = e.organization_id \
         AND p.first_seq <= e.seq ORDER BY p.first_seq DESC LIMIT 1) \
         WHERE {conds} ORDER BY e.seq LIMIT {}",
        data_expr(),
        filter.limit,
    );
    (sql, params)
}

/// The bits of a UUID that are random in a UUIDv7 (`rand_b`, below the two variant bits).
const RAND_B: u128 = (1 << 62) - 1;

/// The id of the event `offset` places after the first of its transaction, whose id is
/// `first_id`: that UUIDv7 with `offset` added to its 62 random low bits (wrapping within
/// them, so version, variant and time stay). The ids of one transaction are distinct (fewer
/// than 2^62 events) and follow the cursor order; two transactions' ids could meet only with
/// the same millisecond and the same 74 random bits but for the offset, as unlikely as two
/// UUIDv7 meeting. One id per transaction is stored instead of one per event.
pub fn event_id(first_id: &str, offset: i64) -> StoreResult<String> {
    let first = Uuid::parse_str(first_id)
        .map_err(|e| super::StoreError::other(format!("an event origin's id {first_id:?}: {e}")))?
        .as_u128();
    let low = (first & RAND_B).wrapping_add(offset as u128) & RAND_B;
    Ok(Uuid::from_u128((first & !RAND_B) | low).to_string())
}

/// Removes the events that occurred before `before_ms`; answers how many. The counters stay,
/// so cursors are never handed out twice.
///
/// Per organization, the feed is cut before its oldest transaction that occurred at or after
/// `before_ms` (found by walking `event_origins` from the oldest, so the walk costs what it
/// removes): every event before that transaction goes, with its origin row. Numbers follow
/// commit order and times follow the requests' start, so a transaction that started before
/// `before_ms` but committed after a newer one stays until the next run passes it; nothing
/// newer than `before_ms` is ever removed. No index on time: the events' `(organization_id,
/// seq)` key is the range to delete.
pub fn prune(tx: &mut dyn Tx, before_ms: i64) -> StoreResult<u64> {
    let counters = tx.query(
        "SELECT organization_id, last_seq FROM event_counters ORDER BY organization_id",
        &[],
    )?;
    let mut removed = 0;
    for counter in counters {
        let (Some(org), Some(last)) = (counter[0].as_str(), counter[1].as_i64()) else {
            continue;
        };
        let org = org.to_string();
        let kept_from = tx
            .query(
                "SELECT first_seq FROM event_origins WHERE organization_id = ? AND occurred_ms >= ? \
                 ORDER BY first_seq LIMIT 1",
                &[org.as_str().into(), SqlValue::Int(before_ms)],
            )?
            .first()
            .and_then(|r| r.first())
            .and_then(SqlValue::as_i64)
            .unwrap_or(last + 1);
        removed += tx.execute(
            "DELETE FROM events WHERE organization_id = ? AND seq < ?",
            &[org.as_str().into(), SqlValue::Int(kept_from)],
        )?;
        super::event_links::prune(tx, &org, kept_from)?;
        tx.execute(
            "DELETE FROM event_origins WHERE organization_id = ? AND first_seq < ?",
            &[org.as_str().into(), SqlValue::Int(kept_from)],
        )?;
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_first_event_has_the_origins_id_and_the_next_ones_count_up() {
        let first = "0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b";
        assert_eq!(event_id(first, 0).unwrap(), first);
        assert_eq!(
            event_id(first, 1).unwrap(),
            "0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2c"
        );
        assert_eq!(
            event_id(first, 0x15).unwrap(),
            "0193a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a40"
        );
        // At the top of the random bits it wraps within them: the variant stays.
        let top = "0193a1b2-c3d4-7e5f-bfff-ffffffffffff";
        assert_eq!(
            event_id(top, 1).unwrap(),
            "0193a1b2-c3d4-7e5f-8000-000000000000"
        );
        assert!(event_id("not a uuid", 0).is_err());
    }

    proptest! {
        /// Any UUIDv7 and offset: the result is a UUIDv7 (RFC 9562 variant) with the same
        /// time, distinct offsets give distinct ids, and it is the same id read twice.
        #[test]
        fn derived_ids_are_uuidv7_of_the_same_time_and_distinct(
            bits in any::<u128>(), a in 0i64..1_000_000, b in 0i64..1_000_000,
        ) {
            let first = uuid::Builder::from_u128(bits)
                .with_version(uuid::Version::SortRand)
                .with_variant(uuid::Variant::RFC4122)
                .into_uuid();
            let first_text = first.to_string();
            let x = Uuid::parse_str(&event_id(&first_text, a).unwrap()).unwrap();
            let y = Uuid::parse_str(&event_id(&first_text, b).unwrap()).unwrap();
            prop_assert_eq!(x.get_version_num(), 7);
            prop_assert_eq!(x.get_variant(), uuid::Variant::RFC4122);
            prop_assert_eq!(x.get_timestamp(), first.get_timestamp());
            prop_assert_eq!(x == y, a == b);
            prop_assert_eq!(event_id(&first_text, a).unwrap(), x.to_string());
        }
    }
}
