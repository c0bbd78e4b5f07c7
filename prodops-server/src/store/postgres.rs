//! PostgreSQL: a deadpool of tokio-postgres connections. Transactions run on a blocking thread
//! that drives the async client with `Handle::block_on`, so rule code is the same synchronous
//! code as on SQLite; the hot reads stay async.

use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod};
use futures::StreamExt;
use tokio::runtime::Handle;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{AsyncMessage, NoTls, Row};
use uuid::Uuid;

use super::{Dialect, KeyRow, SqlValue, StoreError, StoreResult, Tx, TxError};

/// The channel on which operator actions announce that keys or flags changed.
pub const AUTH_CHANNEL: &str = "prodops_auth";
/// A cached key is re-read after this long even without a notification (a safety net).
const KEY_CACHE_TTL: Duration = Duration::from_secs(60);

#[derive(Clone)]
pub struct PgStore {
    pool: Pool,
    keys: Arc<KeyCache>,
}

/// API keys already looked up, so a request costs one round trip instead of two. Entries are used
/// only while a `LISTEN` connection is up: every server drops its whole cache when a key is
/// revoked or a flag set (they `NOTIFY` in the same transaction), and when the listening
/// connection drops, since notifications may have been missed.
#[derive(Default)]
struct KeyCache {
    listening: AtomicBool,
    entries: RwLock<HashMap<String, (KeyRow, Instant)>>,
}

impl KeyCache {
    fn get(&self, hash: &str) -> Option<KeyRow> {
        if !self.listening.load(Ordering::Acquire) {
            return None;
        }
        let entries = self.entries.read().unwrap_or_else(|p| p.into_inner());
        entries
            .get(hash)
            .filter(|(_, at)| at.elapsed() < KEY_CACHE_TTL)
            .map(|(row, _)| row.clone())
    }

    fn put(&self, hash: &str, row: &KeyRow) {
        if self.listening.load(Ordering::Acquire) {
            let mut entries = self.entries.write().unwrap_or_else(|p| p.into_inner());
            entries.insert(hash.to_string(), (row.clone(), Instant::now()));
        }
    }

    fn clear(&self) {
        self.entries
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    fn set_listening(&self, listening: bool) {
        self.clear();
        self.listening.store(listening, Ordering::Release);
        self.clear();
    }
}

/// Keeps one connection listening on [`AUTH_CHANNEL`], reconnecting when it drops.
async fn listen_for_key_changes(config: tokio_postgres::Config, cache: Arc<KeyCache>) {
    loop {
        if let Ok((client, mut connection)) = config.connect(NoTls).await {
            let pump_cache = cache.clone();
            let pump = tokio::spawn(async move {
                let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
                while let Some(message) = messages.next().await {
                    match message {
                        Ok(AsyncMessage::Notification(n)) if n.channel() == AUTH_CHANNEL => {
                            pump_cache.clear()
                        }
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
            });
            if client
                .batch_execute(&format!("LISTEN {AUTH_CHANNEL}"))
                .await
                .is_ok()
            {
                cache.set_listening(true);
            }
            let _ = pump.await;
            cache.set_listening(false);
            drop(client);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
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
    pub async fn open(url: &str) -> StoreResult<Self> {
        let mut pg_config: tokio_postgres::Config = url.parse().map_err(StoreError::other)?;
        // `CREATE ... IF NOT EXISTS` sends a notice on every start; only warnings matter.
        let options = match pg_config.get_options() {
            Some(given) => format!("{given} -c client_min_messages=warning"),
            None => "-c client_min_messages=warning".to_string(),
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
        let keys = Arc::new(KeyCache::default());
        tokio::spawn(listen_for_key_changes(pg_config, keys.clone()));
        let store = PgStore { pool, keys };
        // Fail at start, with a clear message, when the database does not answer.
        store
            .client()
            .await?
            .simple_query("SELECT 1")
            .await
            .map_err(map_err)?;
        Ok(store)
    }

    pub fn forget_cached_keys(&self) {
        self.keys.clear();
    }

    async fn client(&self) -> StoreResult<Object> {
        self.pool
            .get()
            .await
            .map_err(|e| StoreError::Other(format!("cannot connect to PostgreSQL: {e}")))
    }

    /// Runs `f` in a transaction. `BEGIN` travels with the first statement instead of costing a
    /// round trip of its own, and a read-only transaction's `COMMIT` completes after the answer
    /// is on its way (it cannot fail in a way the reader would care about).
    pub fn transaction<T, E, F>(&self, handle: &Handle, write: bool, mut f: F) -> Result<T, E>
    where
        E: TxError,
        F: FnMut(&mut dyn Tx) -> Result<T, E>,
    {
        let client = handle.block_on(self.client()).map_err(E::from)?;
        let begin = if write { "BEGIN" } else { "BEGIN READ ONLY" };
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut tx = PgTx {
                client: &client,
                handle,
                pending_begin: Some(begin),
            };
            let result = f(&mut tx);
            let began = tx.pending_begin.is_none();
            let finish = |sql: &'static str| -> StoreResult<()> {
                if began {
                    handle.block_on(client.batch_execute(sql)).map_err(map_err)
                } else {
                    Ok(())
                }
            };
            match result {
                Ok(v) if !write => {
                    if began {
                        handle.spawn(async move {
                            let _ = client.batch_execute("COMMIT").await;
                        });
                    }
                    return Ok(v);
                }
                Ok(v) => match finish("COMMIT") {
                    Ok(()) => return Ok(v),
                    Err(err) => {
                        let _ = finish("ROLLBACK");
                        if matches!(err, StoreError::Retry) && attempt < 5 {
                            continue;
                        }
                        return Err(E::from(err));
                    }
                },
                Err(e) => {
                    let _ = finish("ROLLBACK");
                    if e.is_retry() && attempt < 5 {
                        continue;
                    }
                    return Err(e);
                }
            }
        }
    }

    pub async fn find_key(&self, key_hash: &str) -> StoreResult<Option<KeyRow>> {
        if let Some(row) = self.keys.get(key_hash) {
            return Ok(Some(row));
        }
        let client = self.client().await?;
        let stmt = client
            .prepare_cached(
                "SELECT k.id, k.organization_id, k.is_admin, k.permissions, o.flags \
                 FROM api_keys k JOIN organizations o ON o.id = k.organization_id \
                 WHERE k.key_hash = $1 AND k.revoked_at IS NULL",
            )
            .await
            .map_err(map_err)?;
        let Some(row) = client
            .query_opt(&stmt, &[&key_hash])
            .await
            .map_err(map_err)?
        else {
            return Ok(None);
        };
        let id: &str = row.try_get(0).map_err(map_err)?;
        let org: &str = row.try_get(1).map_err(map_err)?;
        let is_admin: bool = row.try_get(2).map_err(map_err)?;
        let perms: &str = row.try_get(3).map_err(map_err)?;
        let flags: &str = row.try_get(4).map_err(map_err)?;
        let key = super::records::key_row(id, org, is_admin, perms, flags)?;
        self.keys.put(key_hash, &key);
        Ok(Some(key))
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

struct PgTx<'c> {
    client: &'c Object,
    handle: &'c Handle,
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

impl Tx for PgTx<'_> {
    fn dialect(&self) -> Dialect {
        Dialect::Postgres
    }

    fn execute(&mut self, sql: &str, values: &[SqlValue]) -> StoreResult<u64> {
        let sql = number_placeholders(sql);
        let client = self.client;
        self.run(async move {
            let stmt = client.prepare_cached(&sql).await.map_err(map_err)?;
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
            let stmt = client.prepare_cached(&sql).await.map_err(map_err)?;
            let rows = client
                .query(&stmt, &params(values))
                .await
                .map_err(map_err)?;
            rows.iter().map(read_row).collect()
        })
    }
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
