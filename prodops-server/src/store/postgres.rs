//! PostgreSQL: a deadpool of tokio-postgres connections. Transactions run on a blocking thread
//! that drives the async client with `Handle::block_on`, so rule code is the same synchronous
//! code as on SQLite; the hot reads stay async.

use std::error::Error as StdError;

use bytes::{BufMut, BytesMut};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use tokio::runtime::Handle;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{NoTls, Row, Statement};
use uuid::Uuid;

use super::limits::Cancel;
use super::{
    CellRef, Dialect, KeyLookup, PointRead, SqlValue, StoreError, StoreResult, Tx, TxError,
};

/// API keys are not cached: every request looks its key up with one prepared query on the
/// unique index of `api_keys.key_hash`, so a revoked key or a changed flag is seen by the very
/// next request of every process sharing the database (decisions.md section 1). A read by id
/// folds its record into that query ([`PointRead`]), so it still costs one round trip.
#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
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
        return StoreError::Other(format!("{code}: {}", db.message()));
    }
    StoreError::other(e)
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

fn read_row(row: &Row) -> StoreResult<Vec<SqlValue>> {
    let mut vals = Vec::with_capacity(row.len());
    for (i, col) in row.columns().iter().enumerate() {
        let ty = col.type_();
        let v = match *ty {
            Type::BOOL => row
                .try_get::<_, Option<bool>>(i)
                .map(|v| v.map_or(SqlValue::Null, SqlValue::Bool)),
            Type::INT2 => row
                .try_get::<_, Option<i16>>(i)
                .map(|v| v.map_or(SqlValue::Null, |x| SqlValue::Int(x.into()))),
            Type::INT4 => row
                .try_get::<_, Option<i32>>(i)
                .map(|v| v.map_or(SqlValue::Null, |x| SqlValue::Int(x.into()))),
            Type::INT8 => row
                .try_get::<_, Option<i64>>(i)
                .map(|v| v.map_or(SqlValue::Null, SqlValue::Int)),
            Type::FLOAT4 => row
                .try_get::<_, Option<f32>>(i)
                .map(|v| v.map_or(SqlValue::Null, |x| SqlValue::Real(x.into()))),
            Type::FLOAT8 => row
                .try_get::<_, Option<f64>>(i)
                .map(|v| v.map_or(SqlValue::Null, SqlValue::Real)),
            _ if <RawText as FromSql>::accepts(ty) => row
                .try_get::<_, Option<RawText>>(i)
                .map(|v| v.map_or(SqlValue::Null, |t| SqlValue::Text(t.0))),
            // What a function like `pg_advisory_xact_lock` returns.
            Type::VOID => Ok(SqlValue::Null),
            // Anything else (NUMERIC, ...) is a query to fix with a CAST, not a value to guess.
            _ => {
                return Err(StoreError::Other(format!(
                    "column {} has type {ty}, which the storage layer does not read; cast it",
                    col.name()
                )));
            }
        };
        vals.push(v.map_err(map_err)?);
    }
    Ok(vals)
}

fn params(values: &[SqlValue]) -> Vec<&(dyn ToSql + Sync)> {
    values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
}

impl PgStore {
    pub async fn open(url: &str, statement_timeout: std::time::Duration) -> StoreResult<Self> {
        let mut pg_config: tokio_postgres::Config = url.parse().map_err(StoreError::other)?;
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
        let options = match pg_config.get_options() {
            Some(given) => format!("{given} {ours}"),
            None => ours,
        };
        pg_config.options(&options);
        let manager = Manager::from_config(
            pg_config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(pool_size())
            .build()
            .map_err(StoreError::other)?;
        let store = PgStore { pool };
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
            .map_err(|e| StoreError::Other(format!("cannot connect to PostgreSQL: {e}")))
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
        write: bool,
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
        let result = attempts(&client, handle, write, cancel, f);
        if cancel.disarm() {
            drop(Object::take(client));
        }
        result
    }

    /// Runs `ANALYZE table` on a pooled connection in a background task (see
    /// [`Store::after_bulk_write`](super::Store::after_bulk_write)). It takes no lock that
    /// reads or writes wait for; a failure only leaves the statistics to autovacuum.
    pub fn analyze_in_background(&self, table: &'static str) {
        let store = self.clone();
        tokio::spawn(async move {
            let analyzed = match store.client().await {
                // Connections are read-only by default; ANALYZE is refused there.
                Ok(client) => client
                    .batch_execute(&format!("BEGIN READ WRITE; ANALYZE {table}; COMMIT"))
                    .await
                    .map_err(map_err),
                Err(e) => Err(e),
            };
            if let Err(e) = analyzed {
                tracing::warn!("ANALYZE {table} after a bulk write failed: {e}");
            }
        });
    }

    pub async fn find_key(
        &self,
        key_hash: &str,
        read: Option<PointRead>,
    ) -> StoreResult<Option<KeyLookup>> {
        let client = self.client().await?;
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
        let id: &str = row.try_get(0).map_err(map_err)?;
        let org: &str = row.try_get(1).map_err(map_err)?;
        let is_admin: bool = row.try_get(2).map_err(map_err)?;
        let perms: &str = row.try_get(3).map_err(map_err)?;
        let Some(flags) = row.try_get::<_, Option<&str>>(4).map_err(map_err)? else {
            return Ok(None);
        };
        let record = match read {
            Some(_) => row
                .try_get::<_, Option<RawText>>(5)
                .map_err(map_err)?
                .map(|t| t.0),
            None => None,
        };
        let key = super::records::key_row(id, org, is_admin, perms, flags)?;
        Ok(Some(KeyLookup { key, record }))
    }

    pub async fn get_raw(&self, table: &str, org: Uuid, id: Uuid) -> StoreResult<Option<String>> {
        let client = self.client().await?;
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

/// Runs `f` on `client`, again after a serialization failure (a few times, while the request
/// is there): a write in one transaction, a read statement by statement (see
/// [`PgStore::transaction`]).
fn attempts<T, E, F>(
    client: &Object,
    handle: &Handle,
    write: bool,
    cancel: &Cancel,
    mut f: F,
) -> Result<T, E>
where
    E: TxError,
    F: FnMut(&mut dyn Tx) -> Result<T, E>,
{
    let mut attempt = 0;
    loop {
        attempt += 1;
        let mut tx = PgTx {
            client,
            handle,
            cancel,
            pending_begin: write.then_some("BEGIN READ WRITE"),
        };
        let result = f(&mut tx);
        let began = write && tx.pending_begin.is_none();
        let finish = |sql: &'static str| -> StoreResult<()> {
            if began {
                handle.block_on(client.batch_execute(sql)).map_err(map_err)
            } else {
                Ok(())
            }
        };
        let again = attempt < 5 && !cancel.is_cancelled();
        match result {
            Ok(v) if !write => return Ok(v),
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

/// The prepared statement of `sql`: the connection's cached one, except for a statement that
/// binds an array (a filter's values). Only a plan made with the array in hand knows its
/// length: a cached statement's generic plan guesses 10 elements and may pick a nested loop
/// that compares every row with every value (minutes at 10,000 values), while a statement
/// prepared afresh is planned with its parameters on its one execution.
async fn statement(client: &Object, sql: &str, values: &[SqlValue]) -> StoreResult<Statement> {
    let binds_array = values
        .iter()
        .any(|v| matches!(v, SqlValue::TextArray(_) | SqlValue::RealArray(_)));
    let stmt = if binds_array {
        client.prepare(sql).await
    } else {
        client.prepare_cached(sql).await
    };
    stmt.map_err(map_err)
}

impl Tx for PgTx<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
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

    #[test]
    fn numbers_placeholders_outside_literals() {
        assert_eq!(
            number_placeholders("a = ? AND b = '?' AND c = ?"),
            "a = $1 AND b = '?' AND c = $2"
        );
    }
}
