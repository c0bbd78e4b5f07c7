//! SQLite: one file in WAL mode, one writer connection (SQLite serializes writers anyway) and a
//! small pool of reader connections. `sqlite::memory:` uses a single connection for everything,
//! since every connection to `:memory:` would be a database of its own.

use std::cell::{Cell, RefCell};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::types::{ToSqlOutput, Value as RValue, ValueRef};
use rusqlite::{Connection, OpenFlags, ToSql};
use uuid::Uuid;

use super::limits::Cancel;
use super::{
    CellRef, Dialect, KeyLookup, PointRead, SqlValue, StoreError, StoreResult, Tx, TxError,
};

const MAX_IDLE_READERS: usize = 16;
const MMAP_BYTES: i64 = 1 << 30;
/// The page size of a new database file. 16 KiB rather than SQLite's 4 KiB: records are
/// JSON texts of a few hundred bytes, so a 4 KiB table page held eight of them and a bulk insert
/// split a page, wrote a WAL frame and copied it back at a checkpoint every eight rows; with
/// 16 KiB pages a 1,000,000-worker import takes a quarter less time. Existing files keep theirs
/// (`VACUUM` after `PRAGMA page_size` changes it).
const PAGE_SIZE: i64 = 16 * 1024;
/// WAL bytes after which the checkpointer thread copies the WAL back into the database file
/// ([`Checkpointer`]).
const WAL_CHECKPOINT_BYTES: i64 = 64 << 20;
/// WAL bytes after which the writer checkpoints itself at commit, as SQLite's automatic
/// checkpoint would: only when the checkpointer thread falls this far behind (a long stream of
/// large writes), so the WAL stays bounded.
const WAL_WRITER_CHECKPOINT_BYTES: i64 = 4 * WAL_CHECKPOINT_BYTES;
/// The writer's page cache by default, in MiB (docs/operations.md, "Memory").
const WRITER_CACHE_MIB: i64 = 32;

/// The writer's page cache as SQLite's `cache_size` takes KiB (negative): the default, or
/// `PRODOPS_SQLITE_CACHE_MIB` (1 to 4096) when set.
fn writer_cache_kib() -> i64 {
    let mib = std::env::var("PRODOPS_SQLITE_CACHE_MIB")
        .ok()
        .and_then(|v| v.trim().parse::<i64>().ok())
        .filter(|m| (1..=4096).contains(m))
        .unwrap_or(WRITER_CACHE_MIB);
    -mib * 1024
}

#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// `None` for an in-memory database.
    path: Option<PathBuf>,
    /// Transactions take turns on the writer here first (see [`Turns`]).
    turns: Turns,
    writer: Mutex<Connection>,
    readers: Mutex<Vec<Connection>>,
    /// `None`: statements run as long as they take.
    statement_timeout: Option<Duration>,
}

/// The queue for the writer connection: a transaction waits for its turn as long as its
/// statement timeout allows and only while its request is still there, which a plain mutex
/// wait could not give up on.
#[derive(Default)]
struct Turns {
    taken: Mutex<bool>,
    freed: Condvar,
}

impl Turns {
    fn take(&self) -> StoreResult<Turn<'_>> {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        while *taken {
            if let Some(stop) = LIMITS.with(Limits::stop) {
                drop(taken);
                // The turn this waiter may have been woken for goes to the next one.
                self.freed.notify_one();
                return Err(stop);
            }
            taken = self
                .freed
                .wait_timeout(taken, Duration::from_millis(20))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *taken = true;
        Ok(Turn(self))
    }
}

/// The writer's turn, given back when dropped.
struct Turn<'a>(&'a Turns);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *self.0.taken.lock().unwrap_or_else(|p| p.into_inner()) = false;
        self.0.freed.notify_one();
    }
}

/// The limits of the transaction running on this thread: its statement timeout, the deadline
/// of the statement in progress and the request's cancellation. SQLite calls the progress and
/// busy handlers every connection carries ([`tune`]) on the thread that steps the statement,
/// which is the one running the transaction, so they find the limits here.
#[derive(Default)]
struct Limits {
    timeout: Cell<Option<Duration>>,
    deadline: Cell<Option<Instant>>,
    cancel: RefCell<Option<Arc<Cancel>>>,
}

thread_local! {
    static LIMITS: Limits = Limits::default();
}

impl Limits {
    /// Why the work on this thread must stop now, if it must.
    fn stop(&self) -> Option<StoreError> {
        if self
            .cancel
            .borrow()
            .as_ref()
            .is_some_and(|c| c.is_cancelled())
        {
            return Some(StoreError::Cancelled);
        }
        match self.deadline.get() {
            Some(deadline) if Instant::now() >= deadline => Some(StoreError::Timeout),
            _ => None,
        }
    }

    /// A statement starts: its deadline is the statement timeout from now. Fails when the
    /// request is gone.
    fn start_statement(&self) -> StoreResult<()> {
        if let Some(timeout) = self.timeout.get() {
            self.deadline.set(Some(Instant::now() + timeout));
        }
        match self.stop() {
            Some(StoreError::Cancelled) => Err(StoreError::Cancelled),
            _ => Ok(()),
        }
    }
}

/// Sets this thread's [`Limits`] for one transaction; clears them when dropped.
struct LimitScope;

impl LimitScope {
    fn enter(timeout: Option<Duration>, cancel: &Arc<Cancel>) -> LimitScope {
        LIMITS.with(|l| {
            l.timeout.set(timeout);
            l.deadline.set(timeout.map(|t| Instant::now() + t));
            *l.cancel.borrow_mut() = Some(cancel.clone());
        });
        LimitScope
    }
}

impl Drop for LimitScope {
    fn drop(&mut self) {
        LIMITS.with(|l| {
            l.timeout.set(None);
            l.deadline.set(None);
            *l.cancel.borrow_mut() = None;
        });
    }
}

/// Virtual machine steps between two calls of [`progress`]: a call costs a clock read, a few
/// tens of nanoseconds against some hundred microseconds of work.
const PROGRESS_STEPS: std::os::raw::c_int = 10_000;

/// SQLite's progress handler: a nonzero answer interrupts the statement in progress
/// (`SQLITE_INTERRUPT`), which [`tx_err`] reports as the timeout or the cancellation.
extern "C" fn progress(_: *mut std::os::raw::c_void) -> std::os::raw::c_int {
    LIMITS
        .try_with(|l| l.stop().is_some())
        .unwrap_or(false)
        .into()
}

/// How long a statement waits for a lock outside a transaction with a deadline (as the
/// `busy_timeout` this handler replaces did).
const BUSY_TIMEOUT: Duration = Duration::from_secs(10);
/// The waits between tries for a lock, in milliseconds, as SQLite's own busy handler sleeps;
/// then the last one over and over.
const BUSY_SLEEPS_MS: [u64; 12] = [1, 2, 5, 10, 15, 20, 25, 25, 25, 50, 50, 100];

/// SQLite's busy handler (another process holds the lock): sleeps and tries again until the
/// statement's deadline, or [`BUSY_TIMEOUT`] without one, and gives up at once when the request
/// is gone; `false` makes the statement fail with `SQLITE_BUSY`.
extern "C" fn busy(
    _: *mut std::os::raw::c_void,
    tries: std::os::raw::c_int,
) -> std::os::raw::c_int {
    keep_waiting(tries).into()
}

fn keep_waiting(tries: i32) -> bool {
    let tries = tries.max(0) as usize;
    let sleep = Duration::from_millis(BUSY_SLEEPS_MS[tries.min(BUSY_SLEEPS_MS.len() - 1)]);
    let deadline = LIMITS.try_with(|l| {
        if l.stop().is_some() {
            return Err(());
        }
        Ok(l.deadline.get())
    });
    match deadline {
        Err(_) | Ok(Err(())) => false,
        Ok(Ok(Some(deadline))) => {
            let left = deadline.saturating_duration_since(Instant::now());
            std::thread::sleep(sleep.min(left));
            true
        }
        Ok(Ok(None)) => {
            let slept: u64 = BUSY_SLEEPS_MS.iter().take(tries).sum::<u64>()
                + tries.saturating_sub(BUSY_SLEEPS_MS.len()) as u64 * BUSY_SLEEPS_MS[11];
            if Duration::from_millis(slept) >= BUSY_TIMEOUT {
                return false;
            }
            std::thread::sleep(sleep);
            true
        }
    }
}

/// [`map_err`] for a statement of a transaction: a statement stopped by the progress handler,
/// or one that gave up waiting for a lock, fails with the reason it was stopped.
fn tx_err(e: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(err, _) = &e
        && matches!(
            err.code,
            rusqlite::ErrorCode::OperationInterrupted
                | rusqlite::ErrorCode::DatabaseBusy
                | rusqlite::ErrorCode::DatabaseLocked
        )
    {
        if let Some(stop) = LIMITS.with(Limits::stop) {
            return stop;
        }
        if err.code == rusqlite::ErrorCode::OperationInterrupted {
            return StoreError::Timeout;
        }
    }
    map_err(e)
}

fn start_statement() -> StoreResult<()> {
    LIMITS.with(Limits::start_statement)
}

/// `ROLLBACK`, never itself stopped by the limits that may have ended the transaction.
fn rollback(conn: &Connection) {
    LIMITS.with(|l| {
        l.deadline.set(None);
        *l.cancel.borrow_mut() = None;
    });
    let _ = run_cached(conn, "ROLLBACK");
}

/// Runs a statement without parameters or rows (`BEGIN`, `COMMIT`, `ROLLBACK`) from the
/// connection's statement cache: `execute_batch` parses the text again on every call, a few
/// thousand instructions per transaction.
fn run_cached(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

impl ToSql for SqlValue {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            SqlValue::Null => ToSqlOutput::Owned(RValue::Null),
            SqlValue::Int(i) => ToSqlOutput::Owned(RValue::Integer(*i)),
            SqlValue::Real(f) => ToSqlOutput::Owned(RValue::Real(*f)),
            SqlValue::Text(s) => ToSqlOutput::Borrowed(ValueRef::Text(s.as_bytes())),
            SqlValue::Bool(b) => ToSqlOutput::Owned(RValue::Integer(*b as i64)),
            // Read in SQL with `json_each(?)`.
            SqlValue::TextArray(v) => ToSqlOutput::Owned(RValue::Text(
                serde_json::to_string(v)
                    .map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?,
            )),
            SqlValue::RealArray(v) => ToSqlOutput::Owned(RValue::Text(
                serde_json::to_string(v)
                    .map_err(|e| rusqlite::Error::ToSqlConversionFailure(e.into()))?,
            )),
        })
    }
}

impl ToSql for CellRef<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            CellRef::Null => ValueRef::Null,
            CellRef::Int(i) => ValueRef::Integer(i),
            CellRef::Real(f) => ValueRef::Real(f),
            CellRef::Text(t) => ValueRef::Text(t),
            CellRef::Bool(b) => ValueRef::Integer(b as i64),
        }))
    }
}

fn map_err(e: rusqlite::Error) -> StoreError {
    if let rusqlite::Error::SqliteFailure(err, msg) = &e {
        match err.code {
            rusqlite::ErrorCode::ConstraintViolation => {
                // "UNIQUE constraint failed: index 'ux_...'" or "... failed: worker.organization_id, worker.id"
                let text = msg.clone().unwrap_or_default();
                let name = text
                    .split('\'')
                    .nth(1)
                    .map(str::to_string)
                    .unwrap_or_else(|| {
                        if text.contains(".id") {
                            "primary_key".into()
                        } else {
                            text.clone()
                        }
                    });
                return StoreError::Conflict(name);
            }
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked => {
                return StoreError::Retry;
            }
            rusqlite::ErrorCode::DiskFull => return StoreError::StorageFull(e.to_string()),
            _ => {}
        }
    }
    StoreError::other(e)
}

/// Settings every connection gets, reader or writer.
fn tune(conn: &Connection) -> StoreResult<()> {
    // Waits for another process's lock as long as the statement may run (see `busy`), and
    // stops a statement past its deadline or of a request that is gone (see `progress`).
    // SAFETY: the handle is this open connection's; the handlers are plain functions that
    // read only this thread's limits and outlive the connection.
    unsafe {
        rusqlite::ffi::sqlite3_busy_handler(conn.handle(), Some(busy), std::ptr::null_mut());
        rusqlite::ffi::sqlite3_progress_handler(
            conn.handle(),
            PROGRESS_STEPS,
            Some(progress),
            std::ptr::null_mut(),
        );
    }
    // rusqlite clears a cached statement's bindings when it is reused; without the query planner
    // stability guarantee SQLite then re-prepares any statement whose plan could depend on a bound
    // value (the key lookup did, on every request). With it, a cached statement stays prepared.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
        .map_err(map_err)?;
    // Reads straight from the page cache of the OS instead of a copy per page read.
    conn.pragma_update(None, "mmap_size", MMAP_BYTES)
        .map_err(map_err)?;
    conn.set_prepared_statement_cache_capacity(256);
    Ok(())
}

fn configure(conn: &Connection, memory: bool) -> StoreResult<()> {
    tune(conn)?;
    if !memory {
        // Only takes effect on a file without tables yet, and before WAL mode is on.
        conn.pragma_update(None, "page_size", PAGE_SIZE)
            .map_err(map_err)?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(map_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(map_err)?;
        // Checkpoint every 64 MiB of WAL instead of every 4 MiB: a page that several
        // transactions change in between (index pages of bulk writes) is copied back once.
        let page_size: i64 = conn
            .pragma_query_value(None, "page_size", |row| row.get(0))
            .map_err(map_err)?;
        conn.pragma_update(
            None,
            "wal_autocheckpoint",
            WAL_CHECKPOINT_BYTES / page_size.max(512),
        )
        .map_err(map_err)?;
        // The WAL file is cut back to this size when it starts over after a checkpoint: a
        // long-running read can keep the WAL from starting over, and the file from shrinking
        // after it. Not smaller: a bulk load's WAL reaches [`WAL_WRITER_CHECKPOINT_BYTES`]
        // every time, and writing into a file cut shorter (allocating its blocks again) cost
        // more than the space it gave back.
        conn.pragma_update(
            None,
            "journal_size_limit",
            WAL_WRITER_CHECKPOINT_BYTES + WAL_CHECKPOINT_BYTES,
        )
        .map_err(map_err)?;
    }
    // The writer's page cache (the default is 2 MB): inserts at random places in a large index
    // (client-chosen UUIDv4 ids) otherwise read most index pages back from the OS per row, and a
    // large write transaction (a bulk PUT of 5,000 deliverables and the refresh of their
    // ancestors) spills dirty pages to the WAL before it commits.
    conn.pragma_update(None, "cache_size", writer_cache_kib())
        .map_err(map_err)?;
    // Temporary tables, indexes and statement journals in temporary files, which SQLite keeps
    // in memory up to 64 KiB each and the OS caches beyond that. In memory (`MEMORY`, the
    // bundled library's default), the statement journal of one bulk call's multi-row inserts
    // and savepoints held about 75 MiB at its peak, as much as everything else a tree import
    // holds, and no bulk write ran faster for it (bench/README.md, "server-memory").
    conn.pragma_update(None, "temp_store", "FILE")
        .map_err(map_err)?;
    conn.pragma_update(None, "foreign_keys", "OFF")
        .map_err(map_err)?;
    Ok(())
}

/// Process-wide SQLite settings, applied once before the first connection opens (afterwards
/// SQLite refuses them, harmlessly).
fn configure_library() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // Memory statistics make every SQLite allocation take one global mutex, which concurrent
        // readers on different threads then queue on; nothing here reads those statistics.
        // SAFETY: sqlite3_config is called before any connection exists, with an int argument as
        // SQLITE_CONFIG_MEMSTATUS expects.
        unsafe {
            rusqlite::ffi::sqlite3_config(
                rusqlite::ffi::SQLITE_CONFIG_MEMSTATUS,
                0 as std::os::raw::c_int,
            );
            // SQLite's own allocations (a copy of every bound text, every record it builds,
            // page buffers) through mimalloc rather than the C library's allocator, which was a
            // twentieth of a bulk insert's time.
            // SAFETY: as above; the methods live for the whole process and SQLite copies them.
            rusqlite::ffi::sqlite3_config(
                rusqlite::ffi::SQLITE_CONFIG_MALLOC,
                &MIMALLOC_METHODS.0 as *const rusqlite::ffi::sqlite3_mem_methods,
            );
        }
    });
}

/// SQLite's allocator methods: mimalloc's functions (see `configure_library`).
struct MemMethods(rusqlite::ffi::sqlite3_mem_methods);
// SAFETY: the methods are plain functions and the app-data pointer is null; nothing is shared.
unsafe impl Sync for MemMethods {}

static MIMALLOC_METHODS: MemMethods = {
    use libmimalloc_sys as mi;
    use std::ffi::{c_int, c_void};
    unsafe extern "C" fn malloc(n: c_int) -> *mut c_void {
        // SAFETY: SQLite asks for a positive size.
        unsafe { mi::mi_malloc(n as usize) }
    }
    unsafe extern "C" fn free(p: *mut c_void) {
        // SAFETY: `p` came from `malloc` or `realloc` here (or is null).
        unsafe { mi::mi_free(p) }
    }
    unsafe extern "C" fn realloc(p: *mut c_void, n: c_int) -> *mut c_void {
        // SAFETY: as for `free`.
        unsafe { mi::mi_realloc(p, n as usize) }
    }
    unsafe extern "C" fn size(p: *mut c_void) -> c_int {
        // SAFETY: as for `free`.
        unsafe { mi::mi_usable_size(p) as c_int }
    }
    unsafe extern "C" fn roundup(n: c_int) -> c_int {
        // SAFETY: a pure function of the size.
        unsafe { mi::mi_good_size(n as usize) as c_int }
    }
    unsafe extern "C" fn init(_: *mut c_void) -> c_int {
        rusqlite::ffi::SQLITE_OK
    }
    unsafe extern "C" fn shutdown(_: *mut c_void) {}
    MemMethods(rusqlite::ffi::sqlite3_mem_methods {
        xMalloc: Some(malloc),
        xFree: Some(free),
        xRealloc: Some(realloc),
        xSize: Some(size),
        xRoundup: Some(roundup),
        xInit: Some(init),
        xShutdown: Some(shutdown),
        pAppData: std::ptr::null_mut(),
    })
};

impl SqliteStore {
    pub fn open(path: &str, statement_timeout: Duration) -> StoreResult<Self> {
        configure_library();
        let memory = path == ":memory:" || path.is_empty();
        let mut writer = if memory {
            Connection::open_in_memory().map_err(map_err)?
        } else {
            if let Some(parent) = std::path::Path::new(path).parent()
                && !parent.as_os_str().is_empty()
            {
                std::fs::create_dir_all(parent).map_err(StoreError::other)?;
            }
            Connection::open(path).map_err(map_err)?
        };
        configure(&writer, memory)?;
        if !memory {
            Checkpointer::start(
                path,
                &mut writer,
                WAL_CHECKPOINT_BYTES,
                WAL_WRITER_CHECKPOINT_BYTES,
            )?;
        }
        Ok(SqliteStore {
            inner: Arc::new(Inner {
                path: if memory {
                    None
                } else {
                    Some(PathBuf::from(path))
                },
                turns: Turns::default(),
                writer: Mutex::new(writer),
                readers: Mutex::new(Vec::new()),
                statement_timeout: (!statement_timeout.is_zero()).then_some(statement_timeout),
            }),
        })
    }

    fn lock_writer(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves the connection usable: SQLite rolls back an
        // unfinished transaction when the next BEGIN fails, so a poisoned lock is taken over.
        self.inner.writer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` with a reader connection (the writer for an in-memory database).
    fn with_reader<T>(&self, f: impl FnOnce(&Connection) -> StoreResult<T>) -> StoreResult<T> {
        let Some(path) = &self.inner.path else {
            return f(&self.lock_writer());
        };
        let pooled = self
            .inner
            .readers
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop();
        let conn = match pooled {
            Some(c) => c,
            None => {
                let c = Connection::open_with_flags(
                    path,
                    OpenFlags::SQLITE_OPEN_READ_ONLY
                        | OpenFlags::SQLITE_OPEN_NO_MUTEX
                        | OpenFlags::SQLITE_OPEN_URI,
                )
                .map_err(map_err)?;
                tune(&c)?;
                c
            }
        };
        let result = f(&conn);
        let mut readers = self.inner.readers.lock().unwrap_or_else(|p| p.into_inner());
        if readers.len() < MAX_IDLE_READERS {
            readers.push(conn);
        }
        result
    }

    /// Runs `f` in a transaction, its statements under the statement timeout when `limited`,
    /// and all of it stopped once `cancel` is.
    pub fn transaction<T, E, F>(
        &self,
        write: bool,
        limited: bool,
        cancel: &Arc<Cancel>,
        mut f: F,
    ) -> Result<T, E>
    where
        E: TxError,
        F: FnMut(&mut dyn Tx) -> Result<T, E>,
    {
        let timeout = if limited {
            self.inner.statement_timeout
        } else {
            None
        };
        // The wait for the writer and `BEGIN` count as the first statement.
        let _limits = LimitScope::enter(timeout, cancel);
        if write || self.inner.path.is_none() {
            let _turn = self.inner.turns.take().map_err(E::from)?;
            let conn = self.lock_writer();
            // Triggers are only ever off inside `records::insert_rows`; should a panic have
            // left them off, they are on again before anything else writes (a no-op when on).
            conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, true)
                .map_err(map_err)?;
            run_in_transaction(
                &conn,
                if write { "BEGIN IMMEDIATE" } else { "BEGIN" },
                &mut f,
            )
        } else {
            let mut out = None;
            self.with_reader(|conn| {
                out = Some(run_in_transaction(conn, "BEGIN", &mut f));
                Ok(())
            })
            .map_err(E::from)?;
            out.expect("reader ran")
        }
    }

    /// Whether reads have connections of their own (a database file), so that a short read
    /// can run on the calling thread without waiting for the writer.
    pub fn reads_in_place(&self) -> bool {
        self.inner.path.is_some()
    }

    /// Runs a short read `f` in a read transaction on the calling thread, under the statement
    /// timeout: for reads bounded to a few rows, as the key lookup is, which a blocking
    /// thread would only cost a hand-over each way. A caller must know the read is short:
    /// it holds up the task's thread while it runs.
    pub fn read_in_place<T>(&self, f: impl FnMut(&mut dyn Tx) -> StoreResult<T>) -> StoreResult<T> {
        self.transaction(false, true, &Arc::new(Cancel::default()), f)
    }

    pub fn find_key(
        &self,
        key_hash: &str,
        read: Option<PointRead>,
    ) -> StoreResult<Option<KeyLookup>> {
        let sql = super::records::key_lookup_sql(Dialect::Sqlite, read.map(|r| r.table));
        let record_id = read.map(|r| r.id.to_string());
        self.with_reader(|conn| {
            let mut stmt = conn.prepare_cached(sql).map_err(map_err)?;
            let mut rows = match &record_id {
                Some(id) => stmt.query([id.as_str(), key_hash]),
                None => stmt.query([key_hash]),
            }
            .map_err(map_err)?;
            let Some(row) = rows.next().map_err(map_err)? else {
                return Ok(None);
            };
            let id: String = row.get(0).map_err(map_err)?;
            let org: String = row.get(1).map_err(map_err)?;
            let is_admin: bool = row.get(2).map_err(map_err)?;
            let perms: String = row.get(3).map_err(map_err)?;
            let Some(flags) = row.get::<_, Option<String>>(4).map_err(map_err)? else {
                return Ok(None);
            };
            let record: Option<String> = match read {
                Some(_) => row.get(5).map_err(map_err)?,
                None => None,
            };
            let key = super::records::key_row(&id, &org, is_admin, &perms, &flags)?;
            Ok(Some(KeyLookup {
                key,
                record,
                page: None,
            }))
        })
    }

    pub fn get_raw(&self, table: &str, org: Uuid, id: Uuid) -> StoreResult<Option<String>> {
        // `table` comes from a static resource description, never from a request.
        let sql = format!("SELECT data FROM {table} WHERE organization_id = ? AND id = ?");
        self.with_reader(|conn| {
            let mut stmt = conn.prepare_cached(&sql).map_err(map_err)?;
            let mut rows = stmt
                .query([org.to_string(), id.to_string()])
                .map_err(map_err)?;
            match rows.next().map_err(map_err)? {
                Some(row) => Ok(Some(row.get(0).map_err(map_err)?)),
                None => Ok(None),
            }
        })
    }
}

/// Copies the WAL back into the database file on a thread of its own, instead of in the
/// commit of whichever write crosses SQLite's automatic checkpoint threshold. The writer is
/// the one thing every write waits for: a bulk import spent a fifth of its writer's time in
/// the checkpoints its commits ran (about 100 ms each, every 64 MiB of WAL), time in which no
/// other write could start. A checkpoint runs beside the writer (SQLite lets one checkpointer
/// and one writer work on a WAL database at once), so now the writer only appends to the WAL.
///
/// The writer's WAL hook (which replaces SQLite's automatic checkpoint on that connection)
/// wakes the thread once the WAL holds [`WAL_CHECKPOINT_BYTES`], and checkpoints itself past
/// [`WAL_WRITER_CHECKPOINT_BYTES`], so a checkpointer that falls behind cannot let the WAL
/// grow without bound. The thread ends with the writer connection (the hook's sender goes).
struct Checkpointer;

impl Checkpointer {
    /// Starts the thread for the database at `path`, woken by `writer` once its WAL holds
    /// `wake_bytes`; past `self_bytes` the writer checkpoints at commit.
    fn start(
        path: &str,
        writer: &mut Connection,
        wake_bytes: i64,
        self_bytes: i64,
    ) -> StoreResult<()> {
        let page_size: i64 = writer
            .pragma_query_value(None, "page_size", |row| row.get(0))
            .map_err(map_err)?;
        let page_size = page_size.max(512);
        let wake_at = (wake_bytes / page_size).max(1) as std::os::raw::c_int;
        let self_at = (self_bytes / page_size).max(1) as std::os::raw::c_int;
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )
        .map_err(map_err)?;
        // A wait of its own for the rare lock it cannot take at once; never the statement
        // timeout's handlers of the request connections.
        conn.busy_timeout(Duration::from_secs(5)).map_err(map_err)?;
        let (wake, woken) = std::sync::mpsc::sync_channel::<()>(1);
        std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || {
                while woken.recv().is_ok() {
                    if let Err(e) = conn.pragma_query(None, "wal_checkpoint", |_| Ok(())) {
                        tracing::warn!("WAL checkpoint failed: {e}");
                    }
                }
            })
            .map_err(StoreError::other)?;
        writer
            .wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages| {
                if pages >= self_at {
                    // Never an error from here: SQLite would report it as the COMMIT's, though
                    // the commit happened. Busy (the thread is checkpointing) is tried again at
                    // the next commit.
                    if let Err(e) = wal.checkpoint() {
                        tracing::debug!("WAL checkpoint at commit skipped: {e}");
                    }
                } else if pages >= wake_at {
                    // Full means a wake-up is pending already.
                    let _ = wake.try_send(());
                }
                Ok(())
            }))
            .map_err(map_err)
    }
}

fn run_in_transaction<T, E, F>(conn: &Connection, begin: &str, f: &mut F) -> Result<T, E>
where
    E: From<StoreError>,
    F: FnMut(&mut dyn Tx) -> Result<T, E>,
{
    run_cached(conn, begin).map_err(|e| E::from(tx_err(e)))?;
    let mut tx = SqliteTx { conn };
    match f(&mut tx) {
        Ok(v) => {
            match start_statement().and_then(|()| run_cached(conn, "COMMIT").map_err(tx_err)) {
                Ok(()) => Ok(v),
                Err(e) => {
                    rollback(conn);
                    Err(E::from(e))
                }
            }
        }
        Err(e) => {
            rollback(conn);
            Err(e)
        }
    }
}

/// Runs a cached statement of a transaction with owned or borrowed parameters.
fn execute<P: ToSql>(conn: &Connection, sql: &str, params: &[P]) -> StoreResult<u64> {
    start_statement()?;
    let mut stmt = conn.prepare_cached(sql).map_err(map_err)?;
    stmt.execute(rusqlite::params_from_iter(params.iter()))
        .map(|n| n as u64)
        .map_err(tx_err)
}

struct SqliteTx<'c> {
    conn: &'c Connection,
}

fn read_value(v: ValueRef<'_>) -> SqlValue {
    match v {
        ValueRef::Null => SqlValue::Null,
        ValueRef::Integer(i) => SqlValue::Int(i),
        ValueRef::Real(f) => SqlValue::Real(f),
        // Stored text is UTF-8: validating it is far cheaper than the lossy decoder's
        // chunk-by-chunk walk (a tenth of a 15 MB hierarchy read went there), and simdutf8
        // validates a list page's 70 KB in about a fifth of std's instructions.
        ValueRef::Text(t) | ValueRef::Blob(t) => {
            SqlValue::Text(match simdutf8::basic::from_utf8(t) {
                Ok(s) => s.to_owned(),
                Err(_) => String::from_utf8_lossy(t).into_owned(),
            })
        }
    }
}

impl Tx for SqliteTx<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn execute(&mut self, sql: &str, params: &[SqlValue]) -> StoreResult<u64> {
        execute(self.conn, sql, params)
    }

    fn execute_refs(&mut self, sql: &str, params: &[CellRef<'_>]) -> StoreResult<u64> {
        execute(self.conn, sql, params)
    }

    fn query(&mut self, sql: &str, params: &[SqlValue]) -> StoreResult<Vec<Vec<SqlValue>>> {
        start_statement()?;
        let mut stmt = self.conn.prepare_cached(sql).map_err(map_err)?;
        let ncols = stmt.column_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params.iter()))
            .map_err(tx_err)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(tx_err)? {
            let mut vals = Vec::with_capacity(ncols);
            for i in 0..ncols {
                vals.push(read_value(row.get_ref(i).map_err(map_err)?));
            }
            out.push(vals);
        }
        Ok(out)
    }

    fn last_insert_rowid(&mut self) -> Option<i64> {
        Some(self.conn.last_insert_rowid())
    }

    fn set_triggers(&mut self, on: bool) -> StoreResult<bool> {
        self.conn
            .set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, on)
            .map_err(map_err)?;
        Ok(true)
    }

    fn for_each_row(
        &mut self,
        sql: &str,
        params: &[SqlValue],
        f: &mut dyn FnMut(&[CellRef<'_>]) -> StoreResult<()>,
    ) -> StoreResult<()> {
        start_statement()?;
        let mut stmt = self.conn.prepare_cached(sql).map_err(map_err)?;
        let ncols = stmt.column_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params.iter()))
            .map_err(tx_err)?;
        while let Some(row) = rows.next().map_err(tx_err)? {
            let mut cells = Vec::with_capacity(ncols);
            for i in 0..ncols {
                cells.push(match row.get_ref(i).map_err(map_err)? {
                    ValueRef::Null => CellRef::Null,
                    ValueRef::Integer(n) => CellRef::Int(n),
                    ValueRef::Real(x) => CellRef::Real(x),
                    ValueRef::Text(t) | ValueRef::Blob(t) => CellRef::Text(t),
                });
            }
            f(&cells)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod checkpointer_tests {
    use super::*;

    fn wal_bytes(path: &std::path::Path) -> u64 {
        std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len())
    }

    /// The thread copies the WAL back while the writer goes on, and the WAL stays bounded by
    /// the writer's own threshold however much is written (here 80 times that threshold).
    #[test]
    fn the_wal_is_checkpointed_beside_the_writer_and_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let text = path.to_str().unwrap();
        let mut writer = Connection::open(text).unwrap();
        configure(&writer, false).unwrap();
        let (wake, own) = (256 << 10, 1 << 20);
        Checkpointer::start(text, &mut writer, wake, own).unwrap();
        writer
            .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            .unwrap();
        let body = "x".repeat(4_000);
        let mut largest = 0;
        for batch in 0..200 {
            writer.execute_batch("BEGIN").unwrap();
            for i in 0..100 {
                writer
                    .execute(
                        "INSERT INTO t (id, body) VALUES (?, ?)",
                        rusqlite::params![batch * 100 + i, body],
                    )
                    .unwrap();
            }
            // A commit never reports an error for a checkpoint it could not run.
            writer.execute_batch("COMMIT").unwrap();
            largest = largest.max(wal_bytes(&path));
        }
        // 80 MB written, commits back to back: the WAL grows past the writer's threshold only
        // while a checkpoint of the thread's is still running (the writer's own attempts are
        // then busy, and the thread is not woken again): 4-7 MB here. Without the writer's
        // checkpoints it held everything (89 MB): the WAL only starts over when a write
        // begins after all of it was copied back, which commits this close together never
        // leave time for. The bound is loose for a loaded machine's slower checkpoints.
        assert!(largest < 30 * own as u64, "the WAL reached {largest} bytes");
        // The thread has been copying: the database file holds most of what was written
        // before the last commits, without any checkpoint of the writer's own at close.
        std::thread::sleep(Duration::from_millis(200));
        let db = std::fs::metadata(&path).unwrap().len();
        assert!(db > 40 << 20, "the database file holds {db} bytes");
        let n: i64 = writer
            .query_row("SELECT count(*) FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 20_000);
    }
}

#[cfg(test)]
mod full_disk_tests {
    use super::*;

    /// A database that can grow no further (here: `max_page_count`, as a full disk does) is
    /// `StorageFull` (answered 507: `http::error`'s tests), not an error of the server's own.
    #[test]
    fn a_full_database_is_storage_full() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch("CREATE TABLE t (v TEXT); PRAGMA max_page_count = 2;")
            .unwrap();
        let big = "x".repeat(64 * 1024);
        let failure = (0..16)
            .find_map(|_| conn.execute("INSERT INTO t VALUES (?1)", [&big]).err())
            .expect("the database fills up");
        let err = map_err(failure);
        assert!(matches!(err, StoreError::StorageFull(_)), "{err:?}");
    }
}
