//! The storage interface and its two implementations, SQLite (embedded default) and PostgreSQL.
//!
//! Rule code runs inside one transaction per request, written once against the synchronous
//! [`Tx`] trait and run on a blocking thread ([`Store::write`], [`Store::read`]). The two hot
//! reads of every request, the API key lookup and a record by id, have async fast paths
//! ([`Store::find_key`], [`Store::get_raw`]) that avoid a thread hand-off; a read by id does
//! both in one statement ([`PointRead`]).
//! Dialect differences stay in [`Dialect`], the two implementations, the migrations
//! ([`migrate`]) and the SQL of the deliverable tables ([`deliverables`]); nothing above this
//! module knows which database runs (`tests/layers.rs` checks it). The lowest layer of the
//! crate: it imports nothing of the others.

pub mod alert_times;
pub mod counting;
pub mod deliverables;
pub mod event_links;
pub mod events;
pub mod filter_columns;
pub mod limits;
pub mod memory;
pub mod migrate;
mod postgres;
pub mod property_index;
pub mod records;
pub mod sql;
mod sqlite;
pub mod value_counts;
pub mod webhooks;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use limits::{DEFAULT_STATEMENT_TIMEOUT, requests_in_flight};
pub use postgres::{ReadStatements, read_statements};
pub use sql::Dialect;

/// A value bound to, or read from, a SQL statement.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Bool(bool),
    /// A list of texts bound as one parameter (a filter's values): a `TEXT[]` on PostgreSQL,
    /// a JSON array text on SQLite (read with `json_each`). Parameters only, never read.
    TextArray(Vec<String>),
    /// A list of numbers bound as one parameter: a `FLOAT8[]` on PostgreSQL, a JSON array
    /// text on SQLite. Parameters only, never read.
    RealArray(Vec<f64>),
}

impl SqlValue {
    pub fn as_str(&self) -> Option<&str> {
        match self {
            SqlValue::Text(s) => Some(s),
            _ => None,
        }
    }
    pub fn into_string(self) -> Option<String> {
        match self {
            SqlValue::Text(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            SqlValue::Int(i) => Some(*i),
            SqlValue::Real(f) => Some(*f as i64),
            SqlValue::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            SqlValue::Bool(b) => Some(*b),
            SqlValue::Int(i) => Some(*i != 0),
            _ => None,
        }
    }
}

impl From<&str> for SqlValue {
    fn from(s: &str) -> Self {
        SqlValue::Text(s.to_string())
    }
}
impl From<String> for SqlValue {
    fn from(s: String) -> Self {
        SqlValue::Text(s)
    }
}
impl From<i64> for SqlValue {
    fn from(i: i64) -> Self {
        SqlValue::Int(i)
    }
}
impl From<bool> for SqlValue {
    fn from(b: bool) -> Self {
        SqlValue::Bool(b)
    }
}
impl From<uuid::Uuid> for SqlValue {
    fn from(u: uuid::Uuid) -> Self {
        SqlValue::Text(u.to_string())
    }
}
impl<T: Into<SqlValue>> From<Option<T>> for SqlValue {
    fn from(o: Option<T>) -> Self {
        o.map_or(SqlValue::Null, Into::into)
    }
}

tokio::task_local! {
    /// The id of the request being served, for error bodies and the statements in flight; set
    /// by the request-id middleware (`http::app`).
    pub static REQUEST_ID: std::sync::Arc<str>;
}

/// What can stop the server or an operator command (`prodops_server::Error`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("database: {0}")]
    Store(#[from] StoreError),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl TxError for Error {
    fn is_retry(&self) -> bool {
        matches!(self, Error::Store(StoreError::Retry))
    }
}

/// What can go wrong in the storage layer. The text of `Other` goes to the log, never to a client.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A unique index refused the write; carries the index (constraint) name.
    #[error("unique constraint {0}")]
    Conflict(String),
    /// Concurrent transactions collided (PostgreSQL serialization failure, SQLite busy).
    #[error("transaction conflict, retry")]
    Retry,
    /// A statement ran (or waited for a lock) past the statement timeout and was stopped.
    #[error("a statement ran past the statement timeout and was stopped")]
    Timeout,
    /// The request that started the transaction went away; its statements were stopped.
    #[error("the request was abandoned; its statements were stopped")]
    Cancelled,
    /// The database could not be reached, or the connection to it was lost (a PostgreSQL
    /// backend terminated, a restart, a network cut): transient, worth the same request again
    /// a moment later. A transaction whose connection broke during its `COMMIT` may have been
    /// applied: a retry with the same `Idempotency-Key` is answered with the first answer.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// The database's disk is full (SQLite `SQLITE_FULL`, PostgreSQL `53100`): nothing of the
    /// transaction was written, and writes work again once space is freed.
    #[error("the database's disk is full: {0}")]
    StorageFull(String),
    #[error("{0}")]
    Other(String),
}

impl StoreError {
    pub fn other(e: impl fmt::Display) -> Self {
        StoreError::Other(e.to_string())
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// An error a transaction body may return: it can carry a storage error, and says whether the
/// transaction is worth running again (a serialization failure between concurrent writers).
pub trait TxError: From<StoreError> {
    fn is_retry(&self) -> bool;
}

impl TxError for StoreError {
    fn is_retry(&self) -> bool {
        matches!(self, StoreError::Retry)
    }
}

/// One open transaction. Statements use `?` placeholders; the PostgreSQL implementation
/// numbers them.
pub trait Tx {
    fn dialect(&self) -> Dialect;
    /// Whether its statements run in one transaction block, so that a transaction-local
    /// setting (`SET LOCAL`) holds for the statements after it: a write or a snapshot read. A
    /// plain read on PostgreSQL sends each statement as a transaction of its own.
    fn in_block(&self) -> bool {
        true
    }
    /// The field of the record's `data` as SQL text ([`Dialect::text_expr`]), for statements
    /// written outside this module.
    fn text_expr(&self, path: &sql::FieldPath) -> String {
        self.dialect().text_expr(path)
    }
    /// A column compared without its affinity ([`Dialect::plain_column`]), for statements
    /// written outside this module.
    fn plain_column(&self, column: &str) -> String {
        self.dialect().plain_column(column)
    }
    /// The field of the record's `data` as JSON text ([`Dialect::json_expr`]).
    fn json_expr(&self, path: &sql::FieldPath) -> String {
        self.dialect().json_expr(path)
    }
    /// ` WHERE organization_id = ? AND ...` of the conditions ([`Dialect::where_clause`]).
    fn where_clause(
        &self,
        org: uuid::Uuid,
        conds: &[sql::Cond],
        params: &mut Vec<SqlValue>,
    ) -> String {
        self.dialect().where_clause(org, conds, params)
    }
    /// ` ORDER BY ...` of the sort keys ([`Dialect::order_by`]).
    fn order_by(&self, sort: &[sql::Sort]) -> String {
        self.dialect().order_by(sort)
    }
    /// Runs a statement; returns the number of rows it changed.
    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> StoreResult<u64>;
    /// [`Tx::execute`] with parameters borrowed instead of owned, for statements with many
    /// large ones (a multi-row insert binds each record's text where it already is, instead of
    /// copying it into a [`SqlValue`] first). The default copies, then executes.
    fn execute_refs(&mut self, sql: &str, params: &[CellRef<'_>]) -> StoreResult<u64> {
        let owned: Vec<SqlValue> = params.iter().map(CellRef::to_value).collect();
        self.execute(sql, &owned)
    }
    /// SQLite: the rowid of the last row this connection inserted (`sqlite3_last_insert_rowid`);
    /// `None` on PostgreSQL, whose tables have no rowids.
    fn last_insert_rowid(&mut self) -> Option<i64> {
        None
    }
    /// Runs a query; every row as a vector of values in select order.
    fn query(&mut self, sql: &str, params: &[SqlValue]) -> StoreResult<Vec<Vec<SqlValue>>>;
    /// Appends rows to `table` through the database's bulk loading path, answering whether it
    /// has one: PostgreSQL's `COPY ... FROM STDIN (FORMAT binary)`, which skips parsing and
    /// planning a multi-row `INSERT` and binding its parameters one by one. SQLite has no such
    /// path (`false`, nothing written); callers then insert with multi-row statements.
    /// `cells` holds the rows one after another, `columns.len()` cells each: `Int` cells go to
    /// `BIGINT` columns, `Real` to `DOUBLE PRECISION`, `Bool` to `BOOLEAN`, `Text` to any
    /// textual or `JSON` column. Triggers fire as for an `INSERT`.
    fn copy_in(
        &mut self,
        table: &str,
        columns: &[&str],
        cells: &[CellRef<'_>],
    ) -> StoreResult<bool> {
        let _ = (table, columns, cells);
        Ok(false)
    }
    /// Turns this connection's triggers off (`on == false`) or back on, answering whether it
    /// could: SQLite can, per connection; on PostgreSQL triggers stay on (`false`). Only
    /// [`records::insert_rows`](records::insert_rows) uses it, for large batches whose
    /// record counts it then keeps itself.
    fn set_triggers(&mut self, on: bool) -> StoreResult<bool> {
        let _ = on;
        Ok(false)
    }
    /// Runs a query and hands each row to `f` as values borrowed from the database's own
    /// buffers, in select order, without collecting them (large reads copy each text once).
    fn for_each_row(
        &mut self,
        sql: &str,
        params: &[SqlValue],
        f: &mut dyn FnMut(&[CellRef<'_>]) -> StoreResult<()>,
    ) -> StoreResult<()> {
        for row in self.query(sql, params)? {
            let cells: Vec<CellRef<'_>> = row.iter().map(CellRef::of).collect();
            f(&cells)?;
        }
        Ok(())
    }
}

/// A column value borrowed for the length of one row (see [`Tx::for_each_row`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CellRef<'a> {
    Null,
    Int(i64),
    Real(f64),
    /// Text as stored: checked to be UTF-8 only when read as a `str` ([`CellRef::as_str`]), so
    /// that text passed on as bytes (a hierarchy read sends records as stored) is not
    /// scanned for it.
    Text(&'a [u8]),
    Bool(bool),
}

impl<'a> CellRef<'a> {
    pub fn of(v: &'a SqlValue) -> Self {
        match v {
            SqlValue::Null => CellRef::Null,
            SqlValue::Int(i) => CellRef::Int(*i),
            SqlValue::Real(f) => CellRef::Real(*f),
            SqlValue::Text(t) => CellRef::Text(t.as_bytes()),
            SqlValue::Bool(b) => CellRef::Bool(*b),
            // Arrays are parameters only; no query reads one back.
            SqlValue::TextArray(_) | SqlValue::RealArray(_) => CellRef::Null,
        }
    }

    /// The value, owned.
    pub fn to_value(&self) -> SqlValue {
        match *self {
            CellRef::Null => SqlValue::Null,
            CellRef::Int(i) => SqlValue::Int(i),
            CellRef::Real(f) => SqlValue::Real(f),
            CellRef::Text(t) => SqlValue::Text(String::from_utf8_lossy(t).into_owned()),
            CellRef::Bool(b) => SqlValue::Bool(b),
        }
    }

    /// The text, when it is text (and UTF-8, as everything this server writes is).
    pub fn as_str(&self) -> Option<&'a str> {
        match self {
            CellRef::Text(t) => std::str::from_utf8(t).ok(),
            _ => None,
        }
    }

    /// The text as an owned string (a copy), checked as UTF-8 with `simdutf8`; stored text is
    /// UTF-8, and anything else comes out with replacement characters rather than failing.
    pub fn to_text(&self) -> Option<String> {
        match self {
            CellRef::Text(t) => Some(match simdutf8::basic::from_utf8(t) {
                Ok(s) => s.to_owned(),
                Err(_) => String::from_utf8_lossy(t).into_owned(),
            }),
            _ => None,
        }
    }

    /// The text's bytes, unchecked.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        match self {
            CellRef::Text(t) => Some(t),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match self {
            CellRef::Int(i) => Some(*i),
            _ => None,
        }
    }
}

/// Serializes the transactions that take the same `scope` until they end: for rules that read
/// and then write (choosing a free name, ...). SQLite writers are serialized anyway; PostgreSQL
/// takes a transaction-scoped advisory lock.
pub fn lock_scope(tx: &mut dyn Tx, scope: &str) -> StoreResult<()> {
    if tx.dialect() == Dialect::Postgres {
        tx.query(
            "SELECT pg_advisory_xact_lock(hashtextextended(?, 0))",
            &[SqlValue::Text(scope.to_string())],
        )?;
    }
    Ok(())
}

/// An API key's row, as the authentication step needs it.
#[derive(Debug, Clone)]
pub struct KeyRow {
    pub key_id: uuid::Uuid,
    pub organization_id: uuid::Uuid,
    pub is_admin: bool,
    pub permissions: Vec<String>,
    pub flags: serde_json::Map<String, serde_json::Value>,
}

/// A record that the key lookup reads in its own statement ([`Store::find_key`]).
#[derive(Debug, Clone, Copy)]
pub struct PointRead {
    pub table: &'static str,
    pub id: uuid::Uuid,
}

/// A list page in the default order that the key lookup reads in the same statement
/// ([`Store::find_key_and_page`]): what `records::read_keyset_and_count` reads, but for the
/// key's organization.
#[derive(Debug, Clone)]
pub struct PageRead {
    pub table: &'static str,
    pub conds: Vec<sql::Cond>,
    pub after: Option<(String, String)>,
    pub limit: u64,
    pub offset: u64,
}

impl PageRead {
    /// Whether the page reads at most `offset + limit` entries of the list index and nothing
    /// else (no condition but the archived flag; its total comes from the kept counts), with a
    /// bound small enough to read on a request's own task. Such a page has one right plan
    /// whatever its organization's size: the walk of `ix_<table>_list`.
    pub fn walks_the_list_index(&self) -> bool {
        self.conds
            .iter()
            .all(|c| matches!(c, sql::Cond::Archived(_)))
            && self.limit.saturating_add(self.offset) <= IN_PLACE_ROWS
    }
}

/// Rows a page may walk to be read in place ([`PageRead::walks_the_list_index`]): a
/// millisecond or so of SQLite's work, a tenth of the largest page.
const IN_PLACE_ROWS: u64 = 1_000;

/// What the key lookup found: the key, and with a [`PointRead`], the record's JSON text if it
/// exists in the key's organization; with a [`PageRead`], the page and its total when the
/// store read them along.
#[derive(Debug)]
pub struct KeyLookup {
    pub key: KeyRow,
    pub record: Option<String>,
    pub page: Option<(records::KeysetPage, u64)>,
}

/// How a transaction reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Reads: on SQLite one snapshot; on PostgreSQL one per statement, without a transaction
    /// block ([`Store::read`]).
    Read,
    /// Reads in one snapshot on both databases ([`Store::read_snapshot`]).
    Snapshot,
    /// A write transaction.
    Write,
}

/// The database: SQLite or PostgreSQL.
#[derive(Clone)]
pub enum Store {
    Sqlite(sqlite::SqliteStore),
    Postgres(postgres::PgStore),
}

impl Store {
    /// Opens (creating if needed) the database at `url` and runs the migrations; statements
    /// run under the [`DEFAULT_STATEMENT_TIMEOUT`].
    pub async fn open(url: &str) -> StoreResult<Store> {
        Self::open_with(url, DEFAULT_STATEMENT_TIMEOUT).await
    }

    /// [`Store::open`] with a statement timeout: every statement of every transaction (and of
    /// the async fast paths on PostgreSQL) is stopped once it has run, or waited for a lock,
    /// this long, and the transaction fails with [`StoreError::Timeout`]. Zero: no timeout.
    /// The migrations run without one.
    pub async fn open_with(url: &str, statement_timeout: Duration) -> StoreResult<Store> {
        let store = if let Some(rest) = url.strip_prefix("sqlite:") {
            let path = rest.trim_start_matches("//");
            Store::Sqlite(sqlite::SqliteStore::open(path, statement_timeout)?)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Store::Postgres(postgres::PgStore::open(url, statement_timeout).await?)
        } else {
            return Err(StoreError::Other(format!(
                "unsupported database URL (expected sqlite://PATH, sqlite::memory: or postgres://...): {}",
                redact_url(url)
            )));
        };
        // A migration may rewrite a large table: it runs without a statement timeout.
        store
            .transaction(true, false, |tx| {
                if tx.dialect() == Dialect::Postgres {
                    tx.execute("SET LOCAL statement_timeout = 0", &[])?;
                }
                migrate::run(tx)
            })
            .await?;
        Ok(store)
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            Store::Sqlite(_) => Dialect::Sqlite,
            Store::Postgres(_) => Dialect::Postgres,
        }
    }

    /// The fields of `table` whose filter columns the writes fill themselves
    /// (store/filter_columns.rs): its filter-indexed fields.
    pub fn filter_fields_written(&self, table: &str) -> &'static [String] {
        filter_columns::written(table)
    }

    /// Runs `f` in a write transaction on a blocking thread: committed when `f` returns `Ok`,
    /// rolled back otherwise. PostgreSQL serialization failures are retried a few times.
    pub async fn write<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: TxError + Send + 'static,
        F: FnMut(&mut dyn Tx) -> Result<T, E> + Send + 'static,
    {
        self.transaction(true, true, f).await
    }

    /// Tells the store that a bulk write just added or changed `rows` records of `table`. On
    /// PostgreSQL a large one brings the table's planner statistics up to date in the
    /// background (`ANALYZE`, at most once per table every [`ANALYZE_EVERY`] per process),
    /// instead of waiting up to a minute for autovacuum: until then the planner still sees the
    /// table as it was before the load (often empty), and may read a keyset page of a million
    /// freshly imported workers by fetching and sorting every row after the cursor, page after
    /// page (an export of 300,000 workers took 9.5 s instead of about 1.5 s). SQLite keeps no
    /// statistics the server uses.
    ///
    /// The first large bulk write of an organization into a table refreshes them at once,
    /// whenever the table's last refresh was: statistics that do not know the organization
    /// estimate it at one row, and the planner then reads a bulk call's lookup of 512 ids
    /// (`records::get_many_raw`) as a filter over every record of the organization instead of
    /// 512 probes of the primary key (an import of 200,000 workers with ids spent 25 s there;
    /// bench/README.md, issue 14; `tests/lookup_plans.rs`).
    pub fn after_bulk_write(&self, table: &'static str, org: uuid::Uuid, rows: usize) {
        if let Store::Postgres(pg) = self
            && rows >= ANALYZE_FROM_ROWS
            && analyze_due(table, org)
        {
            pg.analyze_in_background(table, written_with(table));
        }
    }

    /// Runs `f` read-only on a blocking thread: on SQLite in one transaction (one snapshot for
    /// all its statements); on PostgreSQL statement by statement, each one its own read-only
    /// transaction and snapshot (as a `READ COMMITTED` transaction block would give, without
    /// its `BEGIN` and `COMMIT`; store/postgres.rs). A read that must see one state writes it
    /// as one statement.
    pub async fn read<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: TxError + Send + 'static,
        F: FnMut(&mut dyn Tx) -> Result<T, E> + Send + 'static,
    {
        self.transaction(false, true, f).await
    }

    /// Runs `f` read-only on a blocking thread in one snapshot for all its statements: on
    /// SQLite a read transaction (as [`Store::read`]); on PostgreSQL a `REPEATABLE READ READ
    /// ONLY` transaction. For a read that names the feed cursor it is consistent with
    /// (`events::feed_cursor`) beside what it read in several statements, or streams a long
    /// answer from one state (`GET /r/export`). It holds no lock: writers go on meanwhile.
    pub async fn read_snapshot<T, E, F>(&self, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: TxError + Send + 'static,
        F: FnMut(&mut dyn Tx) -> Result<T, E> + Send + 'static,
    {
        self.transaction_in(Mode::Snapshot, true, f).await
    }

    /// Runs `f` in a transaction on a blocking thread, under the statement timeout when
    /// `limited`. The future holds a [`limits::CancelOnDrop`]: dropped before the transaction
    /// ends (the client went away and hyper dropped the handler), it stops the transaction's
    /// statements, so no query outlives the request that asked for it.
    async fn transaction<T, E, F>(&self, write: bool, limited: bool, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: TxError + Send + 'static,
        F: FnMut(&mut dyn Tx) -> Result<T, E> + Send + 'static,
    {
        let mode = if write { Mode::Write } else { Mode::Read };
        self.transaction_in(mode, limited, f).await
    }

    /// [`Store::transaction`] in a [`Mode`].
    async fn transaction_in<T, E, F>(&self, mode: Mode, limited: bool, f: F) -> Result<T, E>
    where
        T: Send + 'static,
        E: TxError + Send + 'static,
        F: FnMut(&mut dyn Tx) -> Result<T, E> + Send + 'static,
    {
        let write = mode == Mode::Write;
        let store = self.clone();
        let handle = tokio::runtime::Handle::current();
        let cancel = Arc::new(limits::Cancel::default());
        let request_id = REQUEST_ID.try_with(Arc::clone).ok();
        let guard = limits::CancelOnDrop::new(cancel.clone());
        let result = tokio::task::spawn_blocking(move || {
            let _in_flight = limits::InFlight::enter(request_id);
            let started = std::time::Instant::now();
            let result = match store {
                Store::Sqlite(s) => s.transaction(write, limited, &cancel, f),
                Store::Postgres(p) => p.transaction(&handle, mode, &cancel, f),
            };
            memory::release_after_long_job(started);
            result
        })
        .await;
        guard.defuse();
        result.map_err(|e| E::from(StoreError::other(format!("storage task failed: {e}"))))?
    }

    /// Looks up an unrevoked API key by its hash, with its organization's flags: on every
    /// request, never from a cache, so revocations and flag changes apply at once. With `read`,
    /// the same statement reads that record of the key's organization, so a read by id takes
    /// one round trip to the database, not two (the key lookup used to be cached for that).
    pub async fn find_key(
        &self,
        key_hash: &str,
        read: Option<PointRead>,
    ) -> StoreResult<Option<KeyLookup>> {
        match self {
            Store::Sqlite(s) => s.find_key(key_hash, read),
            Store::Postgres(p) => p.find_key(key_hash, read).await,
        }
    }

    /// Whether [`Store::find_key_and_page`] reads pages along (PostgreSQL); SQLite, in
    /// process, has no round trip to save.
    pub fn reads_pages_with_key(&self) -> bool {
        matches!(self, Store::Postgres(_))
    }

    /// [`Store::find_key`] and a list page of the key's organization. On PostgreSQL the key
    /// lookup and the page are one statement, one round trip, once this process has
    /// seen the key (a key's organization never changes, so the process remembers it; whether
    /// the key is still valid is read with the page, every time). The page is `None` when it
    /// was not read along; the caller reads it itself then.
    pub async fn find_key_and_page(
        &self,
        key_hash: &str,
        page: &PageRead,
    ) -> StoreResult<Option<KeyLookup>> {
        match self {
            Store::Sqlite(s) => s.find_key(key_hash, None),
            Store::Postgres(p) => p.find_key_and_page(key_hash, page).await,
        }
    }

    /// The stored JSON text of one record, if it exists in the organization.
    pub async fn get_raw(
        &self,
        table: &str,
        org: uuid::Uuid,
        id: uuid::Uuid,
    ) -> StoreResult<Option<String>> {
        match self {
            Store::Sqlite(s) => s.get_raw(table, org, id),
            Store::Postgres(p) => p.get_raw(table, org, id).await,
        }
    }

    /// Whether the database answers (for `/healthz`).
    pub async fn ping(&self) -> bool {
        self.read(|tx| tx.query("SELECT 1", &[]).map(|_| ()))
            .await
            .is_ok()
    }
}

/// A database URL with any password removed, for messages.
/// Bulk writes of this many records or more may refresh the table's statistics
/// ([`Store::after_bulk_write`]).
const ANALYZE_FROM_ROWS: usize = 1_000;

/// The tables a write of `table`'s records fills beside it, whose statistics a bulk write
/// makes as stale as the table's own: without them, the planner read the children of 500
/// parents in a deliverable import (`deliverables::tree`) as a scan of every node of the
/// organization, 200 ms a batch instead of 500 probes of the parent index.
fn written_with(table: &str) -> &'static [&'static str] {
    match table {
        deliverables::TABLE => &[deliverables::TREE, property_index::TABLE],
        _ => &[],
    }
}

/// How often one process refreshes one table's statistics at most.
const ANALYZE_EVERY: Duration = Duration::from_secs(10);

/// How many (table, organization) pairs [`analyze_due`] remembers before it starts over (then
/// an organization's next bulk write may refresh a table's statistics once more than needed).
const ANALYZED_ORGS_KEPT: usize = 100_000;

/// Whether `table`'s statistics should be refreshed after a bulk write of `org`: when this
/// process has not refreshed them since `org` first wrote to it in bulk, or last did long enough
/// ago. Marks them refreshed now if so.
fn analyze_due(table: &'static str, org: uuid::Uuid) -> bool {
    use std::collections::HashSet;
    use std::sync::{LazyLock, Mutex};
    use std::time::Instant;
    struct Analyzed {
        last: Vec<(&'static str, Instant)>,
        orgs: HashSet<(&'static str, uuid::Uuid)>,
    }
    static ANALYZED: LazyLock<Mutex<Analyzed>> = LazyLock::new(|| {
        Mutex::new(Analyzed {
            last: Vec::new(),
            orgs: HashSet::new(),
        })
    });
    let now = Instant::now();
    let mut analyzed = ANALYZED.lock().unwrap_or_else(|e| e.into_inner());
    if analyzed.orgs.len() >= ANALYZED_ORGS_KEPT {
        analyzed.orgs.clear();
    }
    let new_org = analyzed.orgs.insert((table, org));
    match analyzed.last.iter_mut().find(|(t, _)| *t == table) {
        Some((_, at)) if !new_org && now.duration_since(*at) < ANALYZE_EVERY => false,
        Some((_, at)) => {
            *at = now;
            true
        }
        None => {
            analyzed.last.push((table, now));
            true
        }
    }
}

pub fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{}@{}", &url[..scheme + 3], user, &url[at + 1..])
        }
        _ => url.to_string(),
    }
}
