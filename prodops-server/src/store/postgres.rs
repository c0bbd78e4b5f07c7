//! PostgreSQL: a deadpool of tokio-postgres connections. Transactions run on a blocking thread
//! that drives the async client with `Handle::block_on`, so rule code is the same synchronous
//! code as on SQLite; the hot reads stay async.

use std::error::Error as StdError;

use bytes::{BufMut, BytesMut};
use deadpool_postgres::{ClientWrapper, Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio::runtime::Handle;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{NoTls, Row, Statement};
use uuid::Uuid;

use super::limits::Cancel;
use super::{
    CellRef, Dialect, KeyLookup, PageRead, PointRead, SqlValue, StoreError, StoreResult, Tx,
    TxError,
};

/// API keys are not cached: every request looks its key up with one prepared query on the
/// unique index of `api_keys.key_hash`, so a revoked key or a changed flag is seen by the very
/// next request of every process sharing the database (decisions.md section 1). A read by id
/// folds its record into that query ([`PointRead`]), so it still costs one round trip.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    /// Connections (one per two cores) shared by every request for the short reads each
    /// request starts with: the key lookup, with the record of a read by id or a plain list page along
    /// ([`PageRead::walks_the_list_index`]). Requests do not take one for themselves: their
    /// statements queue on it and tokio-postgres writes those of concurrent requests together
    /// (pipelining), so PostgreSQL runs a batch per wake-up instead of one statement per
    /// round trip (see [`HotClients`]).
    hot: std::sync::Arc<HotClients>,
    /// The organization of each key hash this process has found valid: a key never changes
    /// organization, so a list can be read along with the key's own lookup
    /// ([`PgStore::find_key_and_page`]). Validity itself is never remembered.
    key_orgs: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, Uuid>>>,
}

/// Connections per process: a few per core. More only queue on the CPU (measured: a pool of 32
/// on 2 cores tripled the p99 of point reads without adding throughput).
fn pool_size() -> usize {
    if let Some(n) = std::env::var("PRODOPS_DATABASE_POOL_SIZE")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    (cores * 4).max(4)
}

type BoxError = Box<dyn StdError + Sync + Send>;

impl ToSql for SqlValue {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self {
            SqlValue::Null => Ok(IsNull::Yes),
            SqlValue::Int(i) => match *ty {
                Type::INT2 => (i16::try_from(*i)?).to_sql(ty, out),
                Type::INT4 => (i32::try_from(*i)?).to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                Type::FLOAT4 => (*i as f32).to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => i.to_string().to_sql(ty, out),
                _ => i.to_sql(ty, out),
            },
            SqlValue::Real(f) => match *ty {
                Type::FLOAT4 => (*f as f32).to_sql(ty, out),
                Type::INT8 => (*f as i64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => f.to_string().to_sql(ty, out),
                _ => f.to_sql(ty, out),
            },
            SqlValue::Text(s) => match *ty {
                // JSON's binary format is its text; JSONB's is a version byte and the text.
                Type::JSON => {
                    out.put_slice(s.as_bytes());
                    Ok(IsNull::No)
                }
                Type::JSONB => {
                    out.put_u8(1);
                    out.put_slice(s.as_bytes());
                    Ok(IsNull::No)
                }
                _ => s.as_str().to_sql(ty, out),
            },
            SqlValue::TextArray(v) => v.to_sql(ty, out),
            SqlValue::RealArray(v) => v.to_sql(ty, out),
            SqlValue::Bool(b) => match *ty {
                Type::INT2 => (*b as i16).to_sql(ty, out),
                Type::INT4 => (*b as i32).to_sql(ty, out),
                Type::INT8 => (*b as i64).to_sql(ty, out),
                _ => b.to_sql(ty, out),
            },
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// Any textual column, JSON and JSONB included, as its text.
struct RawText(String);

impl<'a> FromSql<'a> for RawText {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        let bytes = if *ty == Type::JSONB {
            raw.get(1..).unwrap_or_default()
        } else {
            raw
        };
        Ok(RawText(std::str::from_utf8(bytes)?.to_string()))
    }
    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::TEXT
                | Type::VARCHAR
                | Type::BPCHAR
                | Type::NAME
                | Type::JSON
                | Type::JSONB
                | Type::UNKNOWN
        )
    }
}

fn map_err(e: tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code().code();
        if code == "23505" {
            let name = db.constraint().unwrap_or("unique").to_string();
            return StoreError::Conflict(if name.ends_with("_pkey") {
                "primary_key".into()
            } else {
                name
            });
        }
        if code == "40001" || code == "40P01" {
            return StoreError::Retry;
        }
        // query_canceled: the statement timeout, or a cancel request (`PgTx::run` tells which).
        if code == "57014" {
            return StoreError::Timeout;
        }
        // Connection exceptions (class 08), a backend terminated by an administrator or a
        // restart (57P01-57P03), too many connections (53300): transient.
        if code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03" | "53300") {
            return StoreError::Unavailable(format!("{code}: {}", db.message()));
        }
        // disk_full and insufficient_resources.
        if matches!(code, "53100" | "53000") {
            return StoreError::StorageFull(format!("{code}: {}", db.message()));
        }
        return StoreError::Other(format!("{code}: {}", db.message()));
    }
    // No answer from the server: the connection closed, or broke mid-request.
    if e.is_closed() || std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>()) {
        return StoreError::Unavailable(e.to_string());
    }
    StoreError::other(e)
}

/// The statements two reads send on PostgreSQL, with their parameters as text, for
/// `bench/worker-reads.sh`: it runs them in `pgbench -M prepared` on the same machine as the
/// server, so that the server's rate is measured against what its database itself serves for
/// the same work (bench/README.md, "worker-reads"; issue 39 item 3). Taken from the functions
/// the requests use, so they stay exactly what the server sends.
#[derive(Debug, Clone)]
pub struct ReadStatements {
    /// `GET /{resource}/{id}`: one statement, the key lookup with the record; parameters `$1`
    /// the record id, `$2` the key's hash.
    pub by_id: String,
    /// `GET /{resource}?pageSize=N` in the default order, once the process knows the key's
    /// organization: one statement, the key lookup joined with the page, its total and feed
    /// cursor ([`PgStore::find_key_and_page`]).
    pub list: String,
    /// The list's parameters (`$1`, `$2`, ...), as text.
    pub list_params: Vec<String>,
}

/// [`ReadStatements`] of `table` in organization `org`, for a page of `limit` records read
/// with the key whose hash is `key_hash`.
pub fn read_statements(
    table: &'static str,
    org: Uuid,
    key_hash: &str,
    limit: u64,
) -> ReadStatements {
    let page = PageRead {
        table,
        conds: vec![super::sql::Cond::Archived(false)],
        after: None,
        limit,
        offset: 0,
    };
    let (sql, params) = super::records::key_and_page_statement(&page, org, key_hash);
    let text = |v: &SqlValue| match v {
        SqlValue::Null => String::new(),
        SqlValue::Int(n) => n.to_string(),
        SqlValue::Real(x) => x.to_string(),
        SqlValue::Text(t) => t.clone(),
        SqlValue::Bool(b) => b.to_string(),
        SqlValue::TextArray(_) | SqlValue::RealArray(_) => {
            unreachable!("a page of the default order binds no list")
        }
    };
    ReadStatements {
        by_id: super::records::key_lookup_sql(Dialect::Postgres, Some(table)).to_string(),
        list: number_placeholders(&sql),
        list_params: params.iter().map(text).collect(),
    }
}

/// `?` placeholders numbered as PostgreSQL wants them (`$1`, `$2`, ...), outside string literals.
pub fn number_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut n = 0;
    let mut in_literal = false;
    for c in sql.chars() {
        match c {
            '\'' => {
                in_literal = !in_literal;
                out.push(c);
            }
            '?' if !in_literal => {
                n += 1;
                out.push('$');
                out.push_str(&n.to_string());
            }
            _ => out.push(c),
        }
    }
    out
}

/// A textual column's bytes as stored (JSONB without its version byte), borrowed from the row.
struct RawBytes<'a>(&'a [u8]);

impl<'a> FromSql<'a> for RawBytes<'a> {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        Ok(RawBytes(if *ty == Type::JSONB {
            raw.get(1..).unwrap_or_default()
        } else {
            raw
        }))
    }
    fn accepts(ty: &Type) -> bool {
        <RawText as FromSql>::accepts(ty)
    }
}

/// The cells of one row, borrowed from the row's own buffer: text is not copied or checked
/// here ([`CellRef::Text`]), so a page of records is copied once, by whoever keeps it.
fn row_cells(row: &Row) -> StoreResult<Vec<CellRef<'_>>> {
    let mut cells = Vec::with_capacity(row.len());
    for (i, col) in row.columns().iter().enumerate() {
        let ty = col.type_();
        let cell = match *ty {
            Type::BOOL => row
                .try_get::<_, Option<bool>>(i)
                .map(|v| v.map_or(CellRef::Null, CellRef::Bool)),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)
                .map(|v| v.map_or(CellRef::Null, |x| CellRef::Int(x.into()))),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)
                .map(|v| v.map_or(CellRef::Null, |x| CellRef::Int(x.into()))),
            Type::INT8 => row
                .try_get::<_, Option<i64>>(i)
                .map(|v| v.map_or(CellRef::Null, CellRef::Int)),
            Type::FLOAT4 => row
                .try_get::<_, Option<f32>>(i)
                .map(|v| v.map_or(CellRef::Null, |x| CellRef::Real(x.into()))),
            Type::FLOAT8 => row
                .try_get::<_, Option<f64>>(i)
                .map(|v| v.map_or(CellRef::Null, CellRef::Real)),
            _ if <RawBytes as FromSql>::accepts(ty) => row
                .try_get::<_, Option<RawBytes>>(i)
                .map(|v| v.map_or(CellRef::Null, |t| CellRef::Text(t.0))),
            Type::VOID => Ok(CellRef::Null),
            _ => {
                return Err(StoreError::Other(format!(
                    "column {} has type {ty}, which the storage layer does not read; cast it",
                    col.name()
                )));
            }
        };
        cells.push(cell.map_err(map_err)?);
    }
    Ok(cells)
}

fn read_row(row: &Row) -> StoreResult<Vec<SqlValue>> {
    Ok(row_cells(row)?.iter().map(CellRef::to_value).collect())
}

/// A pool of `size` connections to the database of `config`, with server `options`.
fn new_pool(config: &tokio_postgres::Config, options: &str, size: usize) -> StoreResult<Pool> {
    let mut config = config.clone();
    config.options(options);
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size)
        .build()
        .map_err(StoreError::other)
}

fn params(values: &[SqlValue]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl PgStore {
    pub async fn open(url: &str, statement_timeout: std::time::Duration) -> StoreResult<Self> {
        let pg_config: tokio_postgres::Config = url.parse().map_err(StoreError::other)?;
        // `CREATE ... IF NOT EXISTS` sends a notice on every start; only warnings matter.
        // Every pooled connection stops a statement that runs (or waits for a lock) past the
        // statement timeout (0: none); it fails with 57014, read as `StoreError::Timeout`.
        let timeout_ms = match statement_timeout.as_millis() {
            0 if !statement_timeout.is_zero() => 1,
            ms => ms,
        };
        // Connections are read-only unless a transaction says otherwise: a read runs its
        // statements without a transaction block (see [`PgStore::transaction`]) and still
        // cannot write; a write opens `BEGIN READ WRITE`.
        let ours = format!(
            "-c client_min_messages=warning -c statement_timeout={timeout_ms} \
             -c default_transaction_read_only=on"
        );
        // No JIT compilation unless the URL's own `options` ask for it (they come after, and
        // win): it starts once a plan's estimated cost passes `jit_above_cost`, and the
        // server's statements are index probes whose estimates can be far above what they
        // do. A deliverable import's child reads spent 116 ms compiling a 2 ms query.
        let options = match pg_config.get_options() {
            Some(given) => format!("-c jit=off {given} {ours}"),
            None => format!("-c jit=off {ours}"),
        };
        let pool = new_pool(&pg_config, &options, pool_size())?;
        let mut hot_config = pg_config.clone();
        hot_config.options(format!("{options} -c plan_cache_mode=force_generic_plan"));
        let store = PgStore {
            pool,
            hot: std::sync::Arc::new(HotClients::new(hot_config, hot_size())),
            key_orgs: Default::default(),
        };
        // Fail at start, with a clear message, when the database does not answer.
        store
            .client()
            .await?
            .simple_query("SELECT 1")
            .await
            .map_err(map_err)?;
        Ok(store)
    }

    async fn client(&self) -> StoreResult<Object> {
        self.pool
            .get()
            .await
            .map_err(|e| StoreError::Unavailable(format!("cannot connect to PostgreSQL: {e}")))
    }

    /// Runs `f` in a transaction. A write's `BEGIN READ WRITE` travels with its first statement
    /// instead of costing a round trip of its own. A read sends no `BEGIN` and no `COMMIT`:
    /// each of its statements is a transaction of its own, read-only by the connection's
    /// default (`default_transaction_read_only`). That is what a read transaction gave at
    /// PostgreSQL's `READ COMMITTED`, where every statement takes its own snapshot anyway,
    /// without the two extra commands per read: a list of 100 (one statement, page and total)
    /// ran at about 15,000 per second in pgbench on this 2-core machine alone, and at about
    /// 10,000 wrapped in `BEGIN READ ONLY` ... `COMMIT` (bench/README.md, issue 14).
    ///
    /// Once `cancel` is cancelled no further statement starts, and the one in progress is
    /// stopped by a cancel request to the connection's backend (`CancelToken`); that
    /// connection then leaves the pool, since a cancel request still on its way must not reach
    /// another transaction.
    pub fn transaction<T, E, F>(
        &self,
        handle: &Handle,
        mode: super::Mode,
        cancel: &Cancel,
        f: F,
    ) -> Result<T, E>
    where
        E: TxError,
        F: FnMut(&mut dyn Tx) -> Result<T, E>,
    {
        let client = handle.block_on(self.client()).map_err(E::from)?;
        let token = client.cancel_token();
        let spawner = handle.clone();
        let armed = cancel.arm(Box::new(move || {
            spawner.spawn(async move {
                let _ = token.cancel_query(NoTls).await;
            });
        }));
        if !armed {
            return Err(E::from(StoreError::Cancelled));
        }
        let result = attempts(&client, handle, mode, cancel, f);
        if cancel.disarm() {
            drop(Object::take(client));
        }
        result
    }

    /// Runs `ANALYZE` of `table` and of the tables written beside it (`with`) on a pooled
    /// connection in a background task (see
    /// [`Store::after_bulk_write`](super::Store::after_bulk_write)). It takes no lock that
    /// reads or writes wait for; a failure only leaves the statistics to autovacuum.
    pub fn analyze_in_background(&self, table: &'static str, with: &'static [&'static str]) {
        let store = self.clone();
        let tables = std::iter::once(table)
            .chain(with.iter().copied())
            .collect::<Vec<_>>()
            .join(", ");
        tokio::spawn(async move {
            let analyzed = match store.client().await {
                // Connections are read-only by default; ANALYZE is refused there.
                Ok(client) => client
                    .batch_execute(&format!("BEGIN READ WRITE; ANALYZE {tables}; COMMIT"))
                    .await
                    .map_err(map_err),
                Err(e) => Err(e),
            };
            if let Err(e) = analyzed {
                tracing::warn!("ANALYZE {tables} after a bulk write failed: {e}");
            }
        });
    }

    pub async fn find_key(
        &self,
        key_hash: &str,
        read: Option<PointRead>,
    ) -> StoreResult<Option<KeyLookup>> {
        let client = self.hot.client().await?;
        let sql = super::records::key_lookup_sql(Dialect::Postgres, read.map(|r| r.table));
        let stmt = client.prepare_cached(sql).await.map_err(map_err)?;
        let record_id = read.map(|r| r.id.to_string());
        let found = match &record_id {
            Some(id) => client.query_opt(&stmt, &[id, &key_hash]).await,
            None => client.query_opt(&stmt, &[&key_hash]).await,
        };
        let Some(row) = found.map_err(map_err)? else {
            return Ok(None);
        };
        let found = key_lookup_of(&row, read.is_some())?;
        if let Some(found) = &found {
            self.remember_org(key_hash, found.key.organization_id);
        }
        Ok(found)
    }

    /// The organization of a key this process has seen valid ([`PgStore::find_key`]).
    fn known_org(&self, key_hash: &str) -> Option<Uuid> {
        let orgs = self.key_orgs.lock().unwrap_or_else(|p| p.into_inner());
        orgs.get(key_hash).copied()
    }

    fn remember_org(&self, key_hash: &str, org: Uuid) {
        let mut orgs = self.key_orgs.lock().unwrap_or_else(|p| p.into_inner());
        if orgs.contains_key(key_hash) {
            return;
        }
        if orgs.len() >= KEY_ORGS_LIMIT {
            orgs.clear();
        }
        orgs.insert(key_hash.to_string(), org);
    }

    /// [`PgStore::find_key`] and a list page ([`super::Store::find_key_and_page`]): once the
    /// key's organization is known, the key lookup and the page are one statement
    /// ([`records::key_and_page_statement`](super::records::key_and_page_statement)), one
    /// round trip, as a read by id's key lookup reads its record. The page is kept only when
    /// the key, read in the same statement, is valid and of that organization.
    pub async fn find_key_and_page(
        &self,
        key_hash: &str,
        page: &PageRead,
    ) -> StoreResult<Option<KeyLookup>> {
        let Some(org) = self.known_org(key_hash) else {
            return self.find_key(key_hash, None).await;
        };
        let (sql, params) = super::records::key_and_page_statement(page, org, key_hash);
        let sql = number_placeholders(&sql);
        let request_id = super::REQUEST_ID.try_with(std::sync::Arc::clone).ok();
        let _in_flight = super::limits::InFlight::enter(request_id);
        let mut read = KeyAndPage {
            key: None,
            rows: super::records::KeysetRows::new(page.limit),
        };
        let mut add = |row: &[CellRef<'_>]| read.add(row);
        let result = if page.walks_the_list_index() {
            let client = self.hot.client().await?;
            rows_on(&client, &sql, &params, &mut add).await
        } else {
            let mut held = CancelIfDropped(Some(self.client().await?));
            let client = held.0.as_ref().expect("held until the statement ends");
            let result = rows_on(client, &sql, &params, &mut add).await;
            held.0.take();
            result
        };
        // A statement that failed is left to the handler: the key is looked up alone, and the
        // handler reads the page again and reports what is wrong in its own terms (after its
        // own checks of the request).
        if result.is_err() {
            return self.find_key(key_hash, None).await;
        }
        let Some(Some(mut found)) = read.key else {
            return Ok(None);
        };
        if found.key.organization_id == org {
            found.page = Some(self.with_total(read.rows.finish(), page, org).await?);
        }
        Ok(Some(found))
    }

    /// A keyset page in the key's organization, read on the calling task
    /// (`records::read_keyset_and_count`).
    pub async fn read_page(
        &self,
        page: &PageRead,
        org: Uuid,
    ) -> StoreResult<(super::records::KeysetPage, u64)> {
        let (sql, params) = super::records::keyset_page_statement(page, org);
        let mut rows = super::records::KeysetRows::new(page.limit);
        if page.walks_the_list_index() {
            let client = self.hot.client().await?;
            rows_on(&client, &number_placeholders(&sql), &params, &mut |row| {
                rows.add(row)
            })
            .await?;
        } else {
            self.for_each_row(&sql, &params, &mut |row| rows.add(row))
                .await?;
        }
        self.with_total(rows.finish(), page, org).await
    }

    /// The page with its total: the one its statement selected, or, for an empty page (which
    /// carries none), counted by a statement of its own.
    async fn with_total(
        &self,
        (rows, total): (super::records::KeysetPage, Option<u64>),
        page: &PageRead,
        org: Uuid,
    ) -> StoreResult<(super::records::KeysetPage, u64)> {
        if let Some(total) = total {
            return Ok((rows, total));
        }
        let (sql, params) =
            super::records::count_statement(Dialect::Postgres, page.table, org, &page.conds);
        let mut total = 0;
        self.for_each_row(&sql, &params, &mut |row| {
            if let [CellRef::Int(n), ..] = row {
                total = (*n).max(0) as u64;
            }
            Ok(())
        })
        .await?;
        Ok((rows, total))
    }

    /// Runs one read statement on the calling task, handing each row to `f` as it arrives: no
    /// blocking thread and no transaction block (a read at `READ COMMITTED` takes one
    /// snapshot per statement anyway; see [`PgStore::transaction`]). A list through the
    /// blocking thread spent most of the server's time per request handing the work between
    /// threads (bench/README.md, issue 14). Under the statement timeout like every pooled
    /// statement; dropped before it ends (the client went away), the future sends the
    /// backend a cancel request and the connection leaves the pool, as a cancelled
    /// transaction does.
    pub async fn for_each_row(
        &self,
        sql: &str,
        params: &[SqlValue],
        f: &mut (dyn FnMut(&[CellRef<'_>]) -> StoreResult<()> + Send),
    ) -> StoreResult<()> {
        let sql = number_placeholders(sql);
        let request_id = super::REQUEST_ID.try_with(std::sync::Arc::clone).ok();
        let _in_flight = super::limits::InFlight::enter(request_id);
        let mut held = CancelIfDropped(Some(self.client().await?));
        let client = held.0.as_ref().expect("held until the statement ends");
        let result = rows_on(client, &sql, params, f).await;
        // Ended (well or not): the connection goes back to the pool.
        held.0.take();
        result
    }

    pub async fn get_raw(&self, table: &str, org: Uuid, id: Uuid) -> StoreResult<Option<String>> {
        let client = self.hot.client().await?;
        // `table` comes from a static resource description, never from a request.
        let stmt = client
            .prepare_cached(&format!(
                "SELECT data FROM {table} WHERE organization_id = $1 AND id = $2"
            ))
            .await
            .map_err(map_err)?;
        let row = client
            .query_opt(&stmt, &[&org.to_string(), &id.to_string()])
            .await
            .map_err(map_err)?;
        match row {
            Some(row) => Ok(Some(row.try_get::<_, RawText>(0).map_err(map_err)?.0)),
            None => Ok(None),
        }
    }
}

/// Runs `sql` (numbered placeholders) on `client`, handing each row to `f`.
async fn rows_on(
    client: &ClientWrapper,
    sql: &str,
    params: &[SqlValue],
    f: &mut (dyn FnMut(&[CellRef<'_>]) -> StoreResult<()> + Send),
) -> StoreResult<()> {
    let stmt = statement(client, sql, params).await?;
    let rows = client
        .query_raw(&stmt, params.iter().map(|v| v as &(dyn ToSql + Sync)))
        .await
        .map_err(map_err)?;
    futures::pin_mut!(rows);
    while let Some(row) = futures::TryStreamExt::try_next(&mut rows)
        .await
        .map_err(map_err)?
    {
        f(&row_cells(&row)?)?;
    }
    Ok(())
}

/// Connections every request shares for its first, short statements ([`PgStore::hot`]). A
/// statement is never cancelled on them (a cancel request would reach whichever statement of
/// another request runs then): what runs here is bounded, a lookup by key or a walk of at
/// most 1,000 entries of a list index, and under the statement timeout.
pub(super) struct HotClients {
    config: tokio_postgres::Config,
    slots: Vec<std::sync::Mutex<Option<std::sync::Arc<ClientWrapper>>>>,
    next: std::sync::atomic::AtomicUsize,
}

/// Shared connections per process: one per two cores (`PRODOPS_DATABASE_SHARED_CONNECTIONS`
/// overrides it). Fewer connections batch more statements per wake-up: on 2 cores, one served
/// 38,000 reads by id per second, two 33,000 and four 27,000-30,000 (bench/README.md, issue 14).
fn hot_size() -> usize {
    if let Some(n) = std::env::var("PRODOPS_DATABASE_SHARED_CONNECTIONS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
    {
        return n;
    }
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .div_ceil(2)
}

impl HotClients {
    fn new(config: tokio_postgres::Config, size: usize) -> Self {
        HotClients {
            config,
            slots: (0..size).map(|_| std::sync::Mutex::new(None)).collect(),
            next: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// The next connection in turn, connected again if it was closed (the database restarted).
    async fn client(&self) -> StoreResult<std::sync::Arc<ClientWrapper>> {
        let turn = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % self.slots.len();
        let slot = &self.slots[turn];
        if let Some(client) = slot.lock().unwrap_or_else(|p| p.into_inner()).as_ref()
            && !client.is_closed()
        {
            return Ok(client.clone());
        }
        let (client, connection) =
            self.config.connect(NoTls).await.map_err(|e| {
                StoreError::Unavailable(format!("cannot connect to PostgreSQL: {e}"))
            })?;
        let task = tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!("a shared PostgreSQL connection ended: {e}");
            }
        });
        let client = std::sync::Arc::new(ClientWrapper::new(client, task));
        *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(client.clone());
        Ok(client)
    }
}

/// Keys whose organization a process remembers at most ([`PgStore::known_org`]); past it the
/// map starts over. Only keys found valid are remembered.
const KEY_ORGS_LIMIT: usize = 10_000;

/// The key lookup's row ([`records::key_lookup_sql`](super::records::key_lookup_sql)) as a
/// [`KeyLookup`]; `None` for a key whose organization is gone. With `with_record`, the sixth
/// column is the record read along.
fn key_lookup_of(row: &Row, with_record: bool) -> StoreResult<Option<KeyLookup>> {
    let id: &str = row.try_get(0).map_err(map_err)?;
    let org: &str = row.try_get(1).map_err(map_err)?;
    let is_admin: bool = row.try_get(2).map_err(map_err)?;
    let perms: &str = row.try_get(3).map_err(map_err)?;
    let Some(flags) = row.try_get::<_, Option<&str>>(4).map_err(map_err)? else {
        return Ok(None);
    };
    let record = if with_record {
        row.try_get::<_, Option<RawText>>(5)
            .map_err(map_err)?
            .map(|t| t.0)
    } else {
        None
    };
    let key = super::records::key_row(id, org, is_admin, perms, flags)?;
    Ok(Some(KeyLookup {
        key,
        record,
        page: None,
    }))
}

/// The rows of the key lookup joined with a page
/// ([`records::key_and_page_statement`](super::records::key_and_page_statement)) as they
/// arrive: the key from the first row, the page's columns of every row.
struct KeyAndPage {
    /// `None` before the first row; `Some(None)` for a key whose organization is gone.
    key: Option<Option<KeyLookup>>,
    rows: super::records::KeysetRows,
}

impl KeyAndPage {
    fn add(&mut self, row: &[CellRef<'_>]) -> StoreResult<()> {
        let (key, page) = row
            .split_at_checked(super::records::KEY_COLUMNS)
            .ok_or_else(|| {
                StoreError::Other("the key lookup with its page returned too few columns".into())
            })?;
        if self.key.is_none() {
            self.key = Some(key_lookup_of_cells(key)?);
        }
        // An empty page is one row whose page columns are NULL: `KeysetRows` skips it.
        self.rows.add(page)
    }
}

/// [`key_lookup_of`] for the key's columns as cells.
fn key_lookup_of_cells(cells: &[CellRef<'_>]) -> StoreResult<Option<KeyLookup>> {
    fn text<'a>(cell: &CellRef<'a>) -> StoreResult<&'a str> {
        cell.as_str().ok_or_else(|| {
            StoreError::Other("the key lookup returned a column that is not text".into())
        })
    }
    let [id, org, is_admin, perms, flags] = cells else {
        return Err(StoreError::Other(
            "the key lookup returned another number of columns".into(),
        ));
    };
    if *flags == CellRef::Null {
        return Ok(None);
    }
    let is_admin = match is_admin {
        CellRef::Bool(b) => *b,
        _ => {
            return Err(StoreError::Other(
                "the key's admin flag is not a boolean".into(),
            ));
        }
    };
    let key = super::records::key_row(text(id)?, text(org)?, is_admin, text(perms)?, text(flags)?)?;
    Ok(Some(KeyLookup {
        key,
        record: None,
        page: None,
    }))
}

/// A pooled connection running a statement of [`PgStore::for_each_row`]; dropped while still
/// held, the statement is cancelled and the connection does not go back to the pool (a cancel
/// request still on its way must not reach the next statement run on it).
struct CancelIfDropped(Option<Object>);

impl Drop for CancelIfDropped {
    fn drop(&mut self) {
        let Some(client) = self.0.take() else {
            return;
        };
        let token = client.cancel_token();
        if let Ok(handle) = Handle::try_current() {
            handle.spawn(async move {
                let _ = token.cancel_query(NoTls).await;
            });
        }
        drop(Object::take(client));
    }
}

/// Runs `f` on `client`, again after a serialization failure (a few times, while the request
/// is there): a write, or a snapshot read, in one transaction; a read statement by statement
/// (see [`PgStore::transaction`]).
fn attempts<T, E, F>(
    client: &Object,
    handle: &Handle,
    mode: super::Mode,
    cancel: &Cancel,
    mut f: F,
) -> Result<T, E>
where
    E: TxError,
    F: FnMut(&mut dyn Tx) -> Result<T, E>,
{
    // A snapshot read is a transaction block too: `REPEATABLE READ` takes one snapshot at its
    // first statement for all of them, and takes no lock a writer waits for.
    let begin = match mode {
        super::Mode::Write => Some("BEGIN READ WRITE"),
        super::Mode::Snapshot => Some("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"),
        super::Mode::Read => None,
    };
    let block = begin.is_some();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut tx = PgTx {
            client,
            handle,
            cancel,
            pending_begin: begin,
            block,
        };
        let result = f(&mut tx);
        let began = block && tx.pending_begin.is_none();
        let finish = |sql: &'static str| -> StoreResult<()> {
            if began {
                handle.block_on(client.batch_execute(sql)).map_err(map_err)
            } else {
                Ok(())
            }
        };
        let again = attempt < 5 && !cancel.is_cancelled();
        match result {
            Ok(v) if !block => return Ok(v),
            Ok(v) => match finish("COMMIT") {
                Ok(()) => return Ok(v),
                Err(err) => {
                    let _ = finish("ROLLBACK");
                    if matches!(err, StoreError::Retry) && again {
                        continue;
                    }
                    return Err(E::from(err));
                }
            },
            Err(e) => {
                let _ = finish("ROLLBACK");
                if e.is_retry() && again {
                    continue;
                }
                return Err(e);
            }
        }
    }
}

struct PgTx<'c> {
    client: &'c Object,
    handle: &'c Handle,
    cancel: &'c Cancel,
    /// The `BEGIN` not sent yet: it goes out with the first statement.
    pending_begin: Option<&'static str>,
    /// Whether the statements run in a transaction block (`Tx::in_block`).
    block: bool,
}

impl PgTx<'_> {
    /// Runs one statement's work, preceded by the pending `BEGIN` on the same connection: both
    /// are written before either answer is awaited, so they cost one round trip.
    fn run<T>(
        &mut self,
        work: impl std::future::Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        if self.cancel.is_cancelled() {
            return Err(StoreError::Cancelled);
        }
        let result = self.run_now(work);
        match result {
            // Stopped by the cancel request rather than by the statement timeout.
            Err(StoreError::Timeout) if self.cancel.is_cancelled() => Err(StoreError::Cancelled),
            r => r,
        }
    }

    fn run_now<T>(
        &mut self,
        work: impl std::future::Future<Output = StoreResult<T>>,
    ) -> StoreResult<T> {
        match self.pending_begin.take() {
            Some(begin) => {
                let client = self.client;
                self.handle.block_on(async {
                    let (began, result) = tokio::join!(client.batch_execute(begin), work);
                    began.map_err(map_err)?;
                    result
                })
            }
            None => self.handle.block_on(work),
        }
    }
}

/// Prepared statements a connection keeps at most; past it the cache starts over. Statement
/// texts vary with a request's filters and page size (`records::page_bounds`), so an unbounded
/// cache would grow with whatever combinations clients send.
const STATEMENT_CACHE_LIMIT: usize = 512;

/// The prepared statement of `sql`: the connection's cached one, except for a statement that
/// binds an array (a filter's values). Only a plan made with the array in hand knows its
/// length: a cached statement's generic plan guesses 10 elements and may pick a nested loop
/// that compares every row with every value (minutes at 10,000 values), while a statement
/// prepared afresh is planned with its parameters on its one execution.
async fn statement(
    client: &ClientWrapper,
    sql: &str,
    values: &[SqlValue],
) -> StoreResult<Statement> {
    let binds_array = values
        .iter()
        .any(|v| matches!(v, SqlValue::TextArray(_) | SqlValue::RealArray(_)));
    let stmt = if binds_array {
        client.prepare(sql).await
    } else {
        if client.statement_cache.size() >= STATEMENT_CACHE_LIMIT {
            client.statement_cache.clear();
        }
        client.prepare_cached(sql).await
    };
    stmt.map_err(map_err)
}

impl Tx for PgTx<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn in_block(&self) -> bool {
        self.block
    }

    fn execute(&mut self, sql: &str, values: &[SqlValue]) -> StoreResult<u64> {
        let sql = number_placeholders(sql);
        let client = self.client;
        self.run(async move {
            let stmt = statement(client, &sql, values).await?;
            client
                .execute(&stmt, &params(values))
                .await
                .map_err(map_err)
        })
    }

    fn query(&mut self, sql: &str, values: &[SqlValue]) -> StoreResult<Vec<Vec<SqlValue>>> {
        let sql = number_placeholders(sql);
        let client = self.client;
        self.run(async move {
            let stmt = statement(client, &sql, values).await?;
            let rows = client
                .query(&stmt, &params(values))
                .await
                .map_err(map_err)?;
            rows.iter().map(read_row).collect()
        })
    }

    fn for_each_row(
        &mut self,
        sql: &str,
        values: &[SqlValue],
        f: &mut dyn FnMut(&[CellRef<'_>]) -> StoreResult<()>,
    ) -> StoreResult<()> {
        let sql = number_placeholders(sql);
        let client = self.client;
        let rows = self.run(async move {
            let stmt = statement(client, &sql, values).await?;
            client.query(&stmt, &params(values)).await.map_err(map_err)
        })?;
        for row in &rows {
            f(&row_cells(row)?)?;
        }
        Ok(())
    }

    fn copy_in(
        &mut self,
        table: &str,
        columns: &[&str],
        cells: &[CellRef<'_>],
    ) -> StoreResult<bool> {
        use futures::SinkExt;
        if columns.is_empty() || cells.is_empty() {
            return Ok(true);
        }
        let sql = format!(
            "COPY {table} ({}) FROM STDIN (FORMAT binary)",
            columns.join(", ")
        );
        let client = self.client;
        self.run(async move {
            let sink = client.copy_in(&sql).await.map_err(map_err)?;
            futures::pin_mut!(sink);
            let mut buf = BytesMut::with_capacity(COPY_CHUNK + COPY_CHUNK / 4);
            buf.put_slice(b"PGCOPY\n\xff\r\n\0");
            buf.put_i32(0); // flags: no OIDs
            buf.put_i32(0); // no header extension
            for row in cells.chunks(columns.len()) {
                put_copy_row(&mut buf, row)?;
                if buf.len() >= COPY_CHUNK {
                    sink.send(buf.split().freeze()).await.map_err(map_err)?;
                }
            }
            buf.put_i16(-1); // the file trailer
            sink.send(buf.freeze()).await.map_err(map_err)?;
            sink.finish().await.map_err(map_err)?;
            Ok(true)
        })
    }
}

/// Bytes of `COPY` data sent per message: large enough that the per-message cost vanishes,
/// small enough not to hold a whole batch twice.
const COPY_CHUNK: usize = 256 * 1024;

/// One tuple of PostgreSQL's binary `COPY` format: the field count, then each field as its
/// length (-1 for NULL) and its binary value.
fn put_copy_row(buf: &mut BytesMut, row: &[CellRef<'_>]) -> StoreResult<()> {
    let fields = i16::try_from(row.len()).map_err(StoreError::other)?;
    buf.put_i16(fields);
    for cell in row {
        match *cell {
            CellRef::Null => buf.put_i32(-1),
            CellRef::Int(i) => {
                buf.put_i32(8);
                buf.put_i64(i);
            }
            CellRef::Real(f) => {
                buf.put_i32(8);
                buf.put_f64(f);
            }
            CellRef::Bool(b) => {
                buf.put_i32(1);
                buf.put_u8(u8::from(b));
            }
            CellRef::Text(t) => {
                buf.put_i32(i32::try_from(t.len()).map_err(StoreError::other)?);
                buf.put_slice(t);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::number_placeholders;

    /// Plain pages run their generic plan from the first execution, on every connection they
    /// are read on ([`super::PgStore::hot`]): the statement as the server prepares it, asked
    /// of PostgreSQL on each connection. Against the database of
    /// `PRODOPS_TEST_DATABASE_URL` when it is PostgreSQL (the SQLite run has nothing to check).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn plain_pages_run_their_generic_plan_from_the_first_execution() {
        use crate::store::records::{self, NewRow};
        use crate::store::sql::Cond;
        use crate::store::{PageRead, Store};
        let Some(url) = std::env::var("PRODOPS_TEST_DATABASE_URL")
            .ok()
            .filter(|u| u.starts_with("postgres"))
        else {
            return;
        };
        let store = Store::open(&url).await.unwrap();
        let Store::Postgres(pg) = &store else {
            unreachable!("a PostgreSQL URL opens PostgreSQL")
        };
        let org = uuid::Uuid::now_v7();
        let rows: Vec<NewRow> = (0..150)
            .map(|i| {
                NewRow::of_text(
                    serde_json::json!({
                        "id": uuid::Uuid::now_v7(), "organizationId": org, "name": format!("W{i}"),
                        "status": "active", "isArchived": false,
                        "createdAt": "2026-11-27T12:00:00.000Z",
                        "updatedAt": "2026-11-27T12:00:00.000Z",
                    })
                    .to_string(),
                )
                .unwrap()
            })
            .collect();
        store
            .write(move |tx| records::insert_rows(tx, "worker", org, &rows).map(|_| ()))
            .await
            .unwrap();
        let page = PageRead {
            table: "worker",
            conds: vec![Cond::Archived(false)],
            after: None,
            limit: 100,
            offset: 0,
        };
        assert!(page.walks_the_list_index());
        for _ in 0..3 {
            let (read, total) = pg.read_page(&page, org).await.unwrap();
            assert_eq!((read.values.len(), total), (100, 150));
        }
        let (sql, _) = records::keyset_page_statement(&page, org);
        let sql = number_placeholders(&sql);
        // Every shared connection in turn: whichever ran the page is among them.
        let mut generic = 0;
        for _ in 0..pg.hot.slots.len() {
            let client = pg.hot.client().await.unwrap();
            let mode: String = client
                .query_one("SHOW plan_cache_mode", &[])
                .await
                .unwrap()
                .get(0);
            assert_eq!(mode, "force_generic_plan");
            let plans = client
                .query(
                    "SELECT generic_plans, custom_plans FROM pg_prepared_statements \
                     WHERE statement = $1",
                    &[&sql],
                )
                .await
                .unwrap();
            for row in plans {
                generic += row.get::<_, i64>(0);
                assert_eq!(row.get::<_, i64>(1), 0, "a custom plan of {sql}");
            }
        }
        assert_eq!(generic, 3, "{sql}");
    }

    /// A list read with its key (`PgStore::find_key_and_page`) is one statement: it answers the
    /// page the list reads alone, reads the organization's flags once rather than once per
    /// record, and reads no page for a revoked key. Against the database of
    /// `PRODOPS_TEST_DATABASE_URL` when it is PostgreSQL (the SQLite run has nothing to check).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_list_read_with_its_key_is_one_statement_reading_the_key_once() {
        use crate::store::records::{self, NewRow};
        use crate::store::sql::Cond;
        use crate::store::{PageRead, Store};
        let Some(url) = std::env::var("PRODOPS_TEST_DATABASE_URL")
            .ok()
            .filter(|u| u.starts_with("postgres"))
        else {
            return;
        };
        let store = Store::open(&url).await.unwrap();
        let Store::Postgres(pg) = &store else {
            unreachable!("a PostgreSQL URL opens PostgreSQL")
        };
        // An organization and an admin key, as `admin::create_org` writes them (the store
        // takes the key's hash; what it is the hash of does not matter here).
        let org = uuid::Uuid::now_v7();
        let key_id = uuid::Uuid::now_v7();
        let hash = format!("{:064x}", uuid::Uuid::new_v4().as_u128());
        let key_hash = hash.clone();
        store
            .write(move |tx| {
                tx.execute(
                    "INSERT INTO organizations (id, name, flags, created_at) VALUES (?, ?, ?, ?)",
                    &[
                        org.into(),
                        "Along".into(),
                        "{}".into(),
                        "2026-11-29T12:00:00.000Z".into(),
                    ],
                )?;
                tx.execute(
                    "INSERT INTO api_keys (id, organization_id, key_hash, is_admin, permissions, \
                     created_at, revoked_at) VALUES (?, ?, ?, ?, '[]', ?, NULL)",
                    &[
                        key_id.into(),
                        org.into(),
                        key_hash.clone().into(),
                        true.into(),
                        "2026-11-29T12:00:00.000Z".into(),
                    ],
                )
            })
            .await
            .unwrap();
        let rows: Vec<NewRow> = (0..30)
            .map(|i| {
                NewRow::of_text(
                    serde_json::json!({
                        "id": uuid::Uuid::now_v7(), "organizationId": org, "name": format!("W{i}"),
                        "status": "active", "isArchived": false,
                        "createdAt": "2026-11-29T12:00:00.000Z",
                        "updatedAt": "2026-11-29T12:00:00.000Z",
                    })
                    .to_string(),
                )
                .unwrap()
            })
            .collect();
        store
            .write(move |tx| records::insert_rows(tx, "worker", org, &rows).map(|_| ()))
            .await
            .unwrap();
        let page = PageRead {
            table: "worker",
            conds: vec![Cond::Archived(false)],
            after: None,
            limit: 20,
            offset: 0,
        };
        // The first lookup of a key learns its organization; the page is read apart then.
        let first = pg.find_key_and_page(&hash, &page).await.unwrap().unwrap();
        assert_eq!(first.key.organization_id, org);
        assert!(first.page.is_none());
        let along = pg.find_key_and_page(&hash, &page).await.unwrap().unwrap();
        assert_eq!(along.key.organization_id, org);
        assert!(along.key.is_admin);
        let (read, total) = along.page.expect("the page read along");
        let (alone, alone_total) = pg.read_page(&page, org).await.unwrap();
        assert_eq!(read.values.len(), 20);
        assert_eq!(
            (&read.values, &read.last, read.feed, total),
            (&alone.values, &alone.last, alone.feed, alone_total)
        );
        assert_eq!(total, 30);

        // The plan: the key's flags once, not once per record of the page.
        let (sql, values) = records::key_and_page_statement(&page, org, &hash);
        let client = pg.hot.client().await.unwrap();
        let plan: Vec<String> = client
            .query(
                &format!(
                    "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) {}",
                    number_placeholders(&sql)
                ),
                &super::params(&values),
            )
            .await
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        let flags = plan
            .iter()
            .find(|l| l.contains("on organizations"))
            .unwrap_or_else(|| panic!("no lookup of the organization: {plan:#?}"));
        assert!(flags.contains("loops=1)"), "{plan:#?}");
        assert!(
            plan.iter().any(|l| l.contains("rows=20 loops=1")),
            "{plan:#?}"
        );

        // A revoked key: no key, and no page.
        assert_eq!(along.key.key_id, key_id);
        store
            .write(move |tx| {
                tx.execute(
                    "UPDATE api_keys SET revoked_at = ? WHERE id = ?",
                    &["2026-11-29T12:00:01.000Z".into(), key_id.into()],
                )
            })
            .await
            .unwrap();
        assert!(pg.find_key_and_page(&hash, &page).await.unwrap().is_none());
        let rows = client
            .query(&number_placeholders(&sql), &super::params(&values))
            .await
            .unwrap();
        assert!(rows.is_empty());
    }

    #[test]
    fn numbers_placeholders_outside_literals() {
        assert_eq!(
            number_placeholders("a = ? AND b = '?' AND c = ?"),
            "a = $1 AND b = '?' AND c = $2"
        );
    }
}
