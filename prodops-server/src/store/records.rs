//! Record operations on resource tables, written once over [`Tx`] for both databases.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde_json::Value;
use uuid::Uuid;

use super::filter_columns;
use super::property_index::Lookup;
use super::sql::{Cond, Dialect, Sort, filter_column};
use super::{CellRef, KeyRow, PageRead, SqlValue, Store, StoreError, StoreResult, Tx};

/// What a list read asks for.
#[derive(Debug, Clone, Default)]
pub struct Select {
    pub conds: Vec<Cond>,
    pub sort: Vec<Sort>,
    pub limit: u64,
    pub offset: u64,
}

fn parse_json(text: &str) -> StoreResult<Value> {
    serde_json::from_str(text)
        .map_err(|e| StoreError::Other(format!("stored record is not JSON: {e}")))
}

fn text_rows(rows: Vec<Vec<SqlValue>>) -> Vec<String> {
    rows.into_iter()
        .filter_map(|mut r| r.pop().and_then(SqlValue::into_string))
        .collect()
}

/// The stored texts of the records of `table` whose field `path` (compared as text, through
/// its expression index) is `value`.
pub fn texts_where(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    path: &super::sql::FieldPath,
    value: SqlValue,
) -> StoreResult<Vec<String>> {
    let expr = tx.text_expr(path);
    let rows = tx.query(
        &format!("SELECT data FROM {table} WHERE organization_id = ? AND {expr} = ?"),
        &[org.into(), value],
    )?;
    Ok(rows
        .into_iter()
        .filter_map(|mut r| r.pop().and_then(SqlValue::into_string))
        .collect())
}

/// The stored texts of the records of `table` whose field `path` (compared as text, through
/// its expression index) is one of `values` (one statement: the caller chunks).
pub fn texts_where_in(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    path: &super::sql::FieldPath,
    values: &[SqlValue],
) -> StoreResult<Vec<String>> {
    let expr = tx.text_expr(path);
    let mut params: Vec<SqlValue> = Vec::with_capacity(values.len() + 1);
    params.push(org.into());
    params.extend(values.iter().cloned());
    let rows = tx.query(
        &format!(
            "SELECT data FROM {table} WHERE organization_id = ? AND {expr} IN ({})",
            vec!["?"; values.len()].join(", ")
        ),
        &params,
    )?;
    Ok(rows
        .into_iter()
        .filter_map(|mut r| r.pop().and_then(SqlValue::into_string))
        .collect())
}

/// The stored JSON text of the records whose filter-indexed `field`
/// (`prodops_core::filter_fields`) is one of `values` (texts, as the field's filter column
/// holds them), through that column and its index, in one statement however many values
/// there are: on PostgreSQL `= ANY` of one array parameter, planned once with the array in
/// hand, rather than a list of one parameter each (a trace binds thousands of lot ids; a
/// statement of 500 parameters costs more to parse, plan and bind than to run); on SQLite an
/// `IN` list, or `json_each` of one parameter past a few dozen values
/// ([`Dialect::distinct_text_in`](super::Dialect::distinct_text_in)).
pub fn texts_where_indexed_in(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    field: &str,
    values: &[String],
) -> StoreResult<Vec<String>> {
    if values.is_empty() {
        return Ok(Vec::new());
    }
    let column = tx.dialect().indexed_expr(field);
    let mut params: Vec<SqlValue> = vec![org.into()];
    let mut sql =
        format!("SELECT data FROM {table} WHERE organization_id = ? AND {column} IS NOT NULL AND ");
    tx.dialect()
        .distinct_text_in(&column, values, &mut sql, &mut params);
    Ok(text_rows(tx.query(&sql, &params)?))
}

/// One record by id.
pub fn get(tx: &mut dyn Tx, table: &str, org: Uuid, id: Uuid) -> StoreResult<Option<Value>> {
    let rows = tx.query(
        &format!("SELECT data FROM {table} WHERE organization_id = ? AND id = ?"),
        &[org.into(), id.into()],
    )?;
    text_rows(rows).first().map(|t| parse_json(t)).transpose()
}

/// The stored JSON text of the records a select picks, in order.
pub fn select_raw(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    select: &Select,
) -> StoreResult<Vec<String>> {
    let (sql, params) = select_sql(tx.dialect(), table, org, select);
    Ok(text_rows(tx.query(&sql, &params)?))
}

/// The statement of [`select_raw`] and its parameters (also for plan tests).
pub fn select_sql(
    dialect: super::Dialect,
    table: &str,
    org: Uuid,
    select: &Select,
) -> (String, Vec<SqlValue>) {
    let mut params = Vec::new();
    let mut sql = format!("SELECT data FROM {table}");
    if let (Some((Answered::Property { key, lookup }, archived)), []) =
        (answered_alone(table, &select.conds), select.sort.as_slice())
    {
        let page = PropertyPage {
            key,
            lookup: &lookup,
            archived,
            after: None,
            limit: select.limit,
            offset: select.offset,
        };
        return page.sql(dialect, table, org, "d.data");
    }
    sql.push_str(&dialect.where_clause(org, &select.conds, &mut params));
    sql.push_str(&dialect.order_by(&select.sort));
    sql.push_str(&page_bounds(
        dialect,
        select.limit,
        select.offset,
        &mut params,
    ));
    (sql, params)
}

/// A page in the default order (`created_at, id`) starting after the row `after`
/// (`(created_at, id)` as stored) or at `offset`: keyset paging, whose cost does not grow with
/// the page number. Each row: `(created_at, id, data)`.
pub fn select_keyset(tx: &mut dyn Tx, org: Uuid, page: &PageRead) -> StoreResult<KeysetPage> {
    let (sql, params) = keyset_sql(tx.dialect(), org, page);
    Ok(read_keyset(tx, &sql, &params, page.limit)?.0)
}

/// [`select_keyset`] and the [`count`] of the same conditions (a list's `totalCount`). On
/// PostgreSQL in one statement: the count is a scalar subquery of the page's select list,
/// which the planner runs once (an InitPlan), so the page and its total cost one round trip
/// and one statement instead of two (bench/README.md, issue 14). A page that comes back empty
/// carries no total, which a second statement then counts. SQLite, in process, runs the two.
pub fn select_keyset_and_count(
    tx: &mut dyn Tx,
    org: Uuid,
    page: &PageRead,
) -> StoreResult<(KeysetPage, u64)> {
    if tx.dialect() == Dialect::Sqlite || page.limit == 0 {
        // On SQLite the read is one transaction, one snapshot: the cursor read in it names
        // the feed position of the page (docs/events.md, "Reads that name their cursor").
        let feed = match tx.dialect() {
            Dialect::Sqlite => Some(super::events::feed_cursor(tx, org)?),
            Dialect::Postgres => None,
        };
        let mut rows = select_keyset(tx, org, page)?;
        rows.feed = feed;
        return Ok((rows, count(tx, page.table, org, &page.conds)?));
    }
    let (sql, params) = keyset_page_statement(page, org);
    match read_keyset(tx, &sql, &params, page.limit)? {
        (rows, Some(total)) => Ok((rows, total)),
        (rows, None) => Ok((rows, count(tx, page.table, org, &page.conds)?)),
    }
}

/// [`select_keyset_and_count`] as a request's read, in its own transaction. On PostgreSQL
/// the statement runs on the calling task ([`PgStore::read_page`]) rather than on a
/// blocking thread: handing a list's one statement from the request's task to a blocking
/// thread and its rows back cost the server more than the rest of the request (bench/README.md,
/// issue 14). SQLite, in process, runs both statements in one read transaction as before.
///
/// [`PgStore::read_page`]: super::postgres::PgStore::read_page
pub async fn read_keyset_and_count(
    store: &Store,
    org: Uuid,
    page: PageRead,
) -> StoreResult<(KeysetPage, u64)> {
    match store {
        Store::Postgres(pg) => pg.read_page(&page, org).await,
        // A plain page (an index walk of a few rows) on a file database: read in place, as
        // the key lookup is, instead of on a blocking thread.
        Store::Sqlite(sqlite) if sqlite.reads_in_place() && page.walks_the_list_index() => {
            sqlite.read_in_place(|tx| select_keyset_and_count(tx, org, &page))
        }
        Store::Sqlite(_) => {
            store
                .read(move |tx| select_keyset_and_count(tx, org, &page))
                .await
        }
    }
}

/// The one statement of a keyset page and its total on PostgreSQL ([`select_keyset_and_count`]),
/// with its parameters (`?` placeholders).
///
/// A fifth column names the organization's feed cursor (`store::events::FEED_CURSOR_SQL`): the
/// statement's one snapshot holds the page, its total and the cursor they are consistent with
/// (docs/events.md, "Reads that name their cursor"). An empty page has no row to carry it.
pub(super) fn keyset_page_statement(page: &PageRead, org: Uuid) -> (String, Vec<SqlValue>) {
    let dialect = Dialect::Postgres;
    let total = (page.limit > 0).then(|| {
        let (sql, mut params) = count_statement(dialect, page.table, org, &page.conds);
        params.push(org.into());
        (
            format!(", ({sql}), ({})", super::events::FEED_CURSOR_SQL),
            params,
        )
    });
    keyset_sql_selecting(dialect, org, page, total)
}

/// Reads a keyset page's rows (`created_at, id, data`, and a total as a fourth column when the
/// statement selects one) in place: each record's text is copied once, and only the last row's
/// position is kept (in buffers reused from row to row). Collecting every cell as an owned
/// value first cost a list of 100 a tenth of its instructions (bench/README.md, issue 14).
fn read_keyset(
    tx: &mut dyn Tx,
    sql: &str,
    params: &[SqlValue],
    limit: u64,
) -> StoreResult<(KeysetPage, Option<u64>)> {
    let mut rows = KeysetRows::new(limit);
    tx.for_each_row(sql, params, &mut |row| rows.add(row))?;
    Ok(rows.finish())
}

/// A keyset page as its rows arrive ([`read_keyset`]).
pub(super) struct KeysetRows {
    values: Vec<String>,
    created: Vec<u8>,
    id: Vec<u8>,
    total: Option<u64>,
    feed: Option<i64>,
}

impl KeysetRows {
    pub(super) fn new(limit: u64) -> Self {
        KeysetRows {
            values: Vec::with_capacity(limit.min(1_000) as usize),
            created: Vec::new(),
            id: Vec::new(),
            total: None,
            feed: None,
        }
    }

    pub(super) fn add(&mut self, row: &[CellRef<'_>]) -> StoreResult<()> {
        if let [CellRef::Text(c), CellRef::Text(i), data, rest @ ..] = row
            && let Some(data) = data.to_text()
        {
            self.values.push(data);
            self.created.clear();
            self.created.extend_from_slice(c);
            self.id.clear();
            self.id.extend_from_slice(i);
            if let [CellRef::Int(n), feed @ ..] = rest {
                self.total = Some((*n).max(0) as u64);
                if let [feed, ..] = feed {
                    self.feed = Some(feed.as_i64().unwrap_or(0));
                }
            }
        }
        Ok(())
    }

    pub(super) fn finish(self) -> (KeysetPage, Option<u64>) {
        let last = (!self.values.is_empty()).then(|| {
            (
                String::from_utf8_lossy(&self.created).into_owned(),
                String::from_utf8_lossy(&self.id).into_owned(),
            )
        });
        (
            KeysetPage {
                values: self.values,
                last,
                feed: self.feed,
            },
            self.total,
        )
    }
}

/// A page in the default order ([`select_keyset`]): the records' JSON texts, and the creation
/// time and id of the last one (where the next page starts).
#[derive(Debug, Clone, Default)]
pub struct KeysetPage {
    pub values: Vec<String>,
    pub last: Option<(String, String)>,
    /// The feed cursor the page is consistent with, when it was read in the page's snapshot
    /// (`store::events::feed_cursor`): always on SQLite; on PostgreSQL when the page's one
    /// statement returned a row to carry it.
    pub feed: Option<i64>,
}

/// The statement of [`select_keyset`] and its parameters (also for plan tests).
pub fn keyset_sql(dialect: Dialect, org: Uuid, page: &PageRead) -> (String, Vec<SqlValue>) {
    keyset_sql_selecting(dialect, org, page, None)
}

/// [`keyset_sql`], selecting after the page's columns the value of `total` (a statement that
/// answers one number, with its parameters) when given.
fn keyset_sql_selecting(
    dialect: Dialect,
    org: Uuid,
    page: &PageRead,
    // Extra columns after `data` (each `, (subquery)`), with their parameters.
    total: Option<(String, Vec<SqlValue>)>,
) -> (String, Vec<SqlValue>) {
    let PageRead {
        table,
        conds,
        after,
        limit,
        offset,
    } = page;
    let (after, limit, offset) = (after.as_ref(), *limit, *offset);
    // The extra columns' parameters come first: they stand in the select list, before the rest.
    let (total_column, mut params) = total.unwrap_or_default();
    if let Some((Answered::Property { key, lookup }, archived)) = answered_alone(table, conds) {
        let page = PropertyPage {
            key,
            lookup: &lookup,
            archived,
            after,
            limit,
            offset,
        };
        let (sql, page_params) = page.sql(
            dialect,
            table,
            org,
            &format!("d.created_at, d.id, d.data{total_column}"),
        );
        params.extend(page_params);
        return (sql, params);
    }
    let mut sql = format!("SELECT created_at, id, data{total_column} FROM {table}");
    sql.push_str(&dialect.where_clause(org, conds, &mut params));
    if let Some((created, id)) = after {
        sql.push_str(" AND (created_at, id) > (?, ?)");
        params.push(SqlValue::Text(created.clone()));
        params.push(SqlValue::Text(id.clone()));
    }
    sql.push_str(&dialect.order_by(&[]));
    sql.push_str(&page_bounds(dialect, limit, offset, &mut params));
    (sql, params)
}

/// A page's ` LIMIT ... OFFSET ...`. On PostgreSQL the limit is written into the statement and
/// a zero offset left out: of a prepared statement whose limit is a parameter, PostgreSQL's
/// generic plan is costed as reading a tenth of the table, so it never prefers that plan to a
/// custom one and plans the statement again at every execution, which cost a list of 100
/// about as much as running it (bench/README.md, issue 14). Page sizes are few (at most
/// `MAX_PAGE_SIZE`), and the connections' statement caches are bounded
/// (`postgres::statement`). SQLite plans once per prepared statement either way.
fn page_bounds(dialect: Dialect, limit: u64, offset: u64, params: &mut Vec<SqlValue>) -> String {
    let limit = limit.min(i64::MAX as u64);
    match dialect {
        Dialect::Postgres if offset == 0 => format!(" LIMIT {limit}"),
        Dialect::Postgres => {
            params.push(SqlValue::Int(offset.min(i64::MAX as u64) as i64));
            format!(" LIMIT {limit} OFFSET ?")
        }
        Dialect::Sqlite => {
            params.push(SqlValue::Int(limit as i64));
            params.push(SqlValue::Int(offset.min(i64::MAX as u64) as i64));
            " LIMIT ? OFFSET ?".to_string()
        }
    }
}

/// A page in the default order of the deliverables a custom property filter finds exactly
/// ([`Answered::Property`]), optionally after a keyset position.
struct PropertyPage<'a> {
    key: &'a str,
    lookup: &'a Lookup,
    archived: Option<bool>,
    after: Option<&'a (String, String)>,
    limit: u64,
    offset: u64,
}

impl PropertyPage<'_> {
    /// The page's ids in the default order from the property index alone (its rows carry the
    /// archived flag and creation time, in that order after the value), then those records by
    /// key, selecting `columns` of the record (`d`). A join on a limited subquery, so that
    /// PostgreSQL reads the few ids first: given `id IN (...)` it filtered the whole list with
    /// a hashed subplan (35 ms for 100,000 orders).
    fn sql(
        &self,
        dialect: Dialect,
        table: &str,
        org: Uuid,
        columns: &str,
    ) -> (String, Vec<SqlValue>) {
        let mut params = Vec::new();
        let mut sql = format!("SELECT {columns} FROM (SELECT deliverable_id, created_at FROM (");
        dialect.property_rows(
            "deliverable_id, created_at",
            org,
            self.key,
            self.lookup,
            self.archived,
            &mut sql,
            &mut params,
        );
        sql.push_str(") matches");
        if let Some((created, id)) = self.after {
            sql.push_str(" WHERE (created_at, deliverable_id) > (?, ?)");
            params.push(SqlValue::Text(created.clone()));
            params.push(SqlValue::Text(id.clone()));
        }
        // Grouped: an array holding several of the values finds its record more than once.
        sql.push_str(
            " GROUP BY created_at, deliverable_id ORDER BY created_at, deliverable_id LIMIT ?) m",
        );
        params.push(SqlValue::Int(self.limit.saturating_add(self.offset) as i64));
        // `CROSS JOIN` fixes the order on SQLite (ids first): as an inner join its planner
        // read every deliverable of the organization and looked each up among the ids.
        sql.push_str(&format!(
            " CROSS JOIN {table} d WHERE d.organization_id = ? AND d.id = m.deliverable_id \
             ORDER BY d.created_at, d.id LIMIT ? OFFSET ?"
        ));
        params.push(SqlValue::Text(org.to_string()));
        params.push(SqlValue::Int(self.limit as i64));
        params.push(SqlValue::Int(self.offset as i64));
        (sql, params)
    }
}

pub fn select_values(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    select: &Select,
) -> StoreResult<Vec<Value>> {
    select_raw(tx, table, org, select)?
        .iter()
        .map(|t| parse_json(t))
        .collect()
}

/// Locks the organization's records among `ids` until the transaction ends, in id order (two
/// writers locking overlapping sets wait for each other instead of deadlocking): `SELECT ...
/// FOR UPDATE` on PostgreSQL; SQLite's writers are serialized anyway.
pub fn lock_rows(tx: &mut dyn Tx, table: &str, org: Uuid, ids: &[Uuid]) -> StoreResult<()> {
    if tx.dialect() != Dialect::Postgres {
        return Ok(());
    }
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    for chunk in ids.chunks(400) {
        let marks = vec!["?"; chunk.len()].join(", ");
        let mut params: Vec<SqlValue> = Vec::with_capacity(1 + chunk.len());
        params.push(org.into());
        params.extend(chunk.iter().map(|id| SqlValue::from(*id)));
        tx.query(
            &format!(
                "SELECT id FROM {table} WHERE organization_id = ? AND id IN ({marks}) \
                 ORDER BY id FOR UPDATE"
            ),
            &params,
        )?;
    }
    Ok(())
}

pub fn count(tx: &mut dyn Tx, table: &str, org: Uuid, conds: &[Cond]) -> StoreResult<u64> {
    let (sql, params) = count_statement(tx.dialect(), table, org, conds);
    let rows = tx.query(&sql, &params)?;
    Ok(rows
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64)
        .unwrap_or(0) as u64)
}

/// The statement of [`count`] and its parameters: a plain list (no condition but the archived
/// flag) from the trigger-kept counts, any other from [`count_sql`].
pub(super) fn count_statement(
    dialect: Dialect,
    table: &str,
    org: Uuid,
    conds: &[Cond],
) -> (String, Vec<SqlValue>) {
    let archived = match conds {
        [] => Some(None),
        [Cond::Archived(a)] => Some(Some(*a)),
        _ => None,
    };
    let Some(archived) = archived else {
        return count_sql(dialect, table, org, conds);
    };
    let mut sql = String::from(
        "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM record_count_shards \
         WHERE table_name = ? AND organization_id = ?",
    );
    let mut params: Vec<SqlValue> = vec![table.into(), org.into()];
    if let Some(a) = archived {
        sql.push_str(" AND is_archived = ?");
        params.push(SqlValue::Bool(a));
    }
    (sql, params)
}

/// A filter answered without reading the records (see [`answered_alone`]).
enum Answered<'a> {
    /// Values of a counted enum field (`prodops_core::filter_fields::FieldKinds::counted`),
    /// `null` not among them: the counts kept per value (store/value_counts.rs).
    Counted {
        field: &'a str,
        values: &'a [String],
    },
    /// A custom property the property value index finds exactly (store/property_index.rs).
    Property { key: &'a str, lookup: Lookup },
}

/// The filter of `conds` when it is one condition [`Answered`] covers, with or without the
/// archived flag (the flag, when given): its count and its page need no record but the
/// page's. Any other combination of conditions goes through the records' indexes.
fn answered_alone<'a>(table: &str, conds: &'a [Cond]) -> Option<(Answered<'a>, Option<bool>)> {
    let mut archived: Option<bool> = None;
    let mut answered = None;
    for cond in conds {
        match cond {
            Cond::Archived(a) if archived.is_none_or(|b| b == *a) => archived = Some(*a),
            Cond::Indexed { field, values, .. }
                if answered.is_none()
                    && !values.is_empty()
                    && !values.iter().any(|v| v == "null")
                    && super::value_counts::counted_fields(table).contains(field) =>
            {
                answered = Some(Answered::Counted { field, values });
            }
            Cond::Property { key, values }
                if answered.is_none()
                    && !values.is_empty()
                    && table == super::property_index::SOURCE_TABLE =>
            {
                let lookup = super::sql::property_lookup(values).filter(|l| l.exact)?;
                answered = Some(Answered::Property { key, lookup });
            }
            _ => return None,
        }
    }
    answered.map(|a| (a, archived))
}

/// The statement of a [`count`] under conditions other than the archived flag alone, and its
/// parameters (also for plan tests): from the kept counts or the property value index alone
/// when they answer it ([`answered_alone`]), else a count of the matching records.
pub fn count_sql(
    dialect: super::Dialect,
    table: &str,
    org: Uuid,
    conds: &[Cond],
) -> (String, Vec<SqlValue>) {
    match answered_alone(table, conds) {
        Some((Answered::Counted { field, values }, archived)) => {
            return super::value_counts::count_sql(dialect, table, org, field, values, archived);
        }
        Some((Answered::Property { key, lookup }, archived)) => {
            let mut params = Vec::new();
            // A record has one index row per text of its property (store/property_index.rs),
            // and a scalar has one row: one text (with numbers or not) finds each record once,
            // several texts may find an array's record more than once.
            let mut sql = String::from(if lookup.texts.len() <= 1 {
                "SELECT COUNT(*) FROM ("
            } else {
                "SELECT COUNT(DISTINCT deliverable_id) FROM ("
            });
            let columns = "deliverable_id";
            dialect.property_rows(columns, org, key, &lookup, archived, &mut sql, &mut params);
            sql.push_str(") matches");
            return (sql, params);
        }
        None => {}
    }
    let mut params = Vec::new();
    let sql = format!(
        "SELECT COUNT(*) FROM {table}{}",
        dialect.where_clause(org, conds, &mut params)
    );
    (sql, params)
}

/// Counts by the exact stored value of a field (or, for a field answered as of the moment of
/// the read, by that answer), largest count first (ties by value).
pub fn group_count(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    path: &super::sql::FieldPath,
    as_of: Option<&super::sql::AsOfField>,
    conds: &[Cond],
    limit: u64,
) -> StoreResult<Vec<(Value, u64)>> {
    let dialect = tx.dialect();
    let mut params = Vec::new();
    let expr = match as_of {
        Some(field) => dialect.as_of_json(field),
        None => dialect.json_expr(path),
    };
    let sql = format!(
        "SELECT {expr} AS g, COUNT(*) AS n FROM {table}{} GROUP BY {expr} ORDER BY n DESC, g ASC LIMIT ?",
        dialect.where_clause(org, conds, &mut params)
    );
    params.push(SqlValue::Int(limit as i64));
    let rows = tx.query(&sql, &params)?;
    rows.into_iter()
        .map(|r| {
            let group = match r.first() {
                Some(SqlValue::Text(t)) => parse_json(t)?,
                _ => Value::Null,
            };
            let n = r.get(1).and_then(SqlValue::as_i64).unwrap_or(0) as u64;
            Ok((group, n))
        })
        .collect()
}

fn columns_of(record: &Value) -> StoreResult<(String, bool, String, String)> {
    let text = |k: &str| record.get(k).and_then(Value::as_str).map(str::to_string);
    let id = text("id").ok_or_else(|| StoreError::other("record without id"))?;
    let created = text("createdAt").ok_or_else(|| StoreError::other("record without createdAt"))?;
    let updated = text("updatedAt").unwrap_or_else(|| created.clone());
    // The columns sort as text, so they hold one fixed-width form whatever the JSON says.
    let created = sortable_time(&created)?;
    let updated = sortable_time(&updated)?;
    let archived = record
        .get("isArchived")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok((id, archived, created, updated))
}

pub fn sortable_time(text: &str) -> StoreResult<String> {
    // Fast path: the server's own form (`2024-01-02T08:00:00.123Z`, context::format_time) only
    // needs three more digits; bulk writes hit it for every record.
    let b = text.as_bytes();
    if b.len() == 24
        && b[23] == b'Z'
        && b[19] == b'.'
        && b[10] == b'T'
        && [4, 7].iter().all(|&i| b[i] == b'-')
        && [13, 16].iter().all(|&i| b[i] == b':')
        && [0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22]
            .iter()
            .all(|&i| b[i].is_ascii_digit())
        && {
            let n = |i: usize| u32::from(b[i] - b'0') * 10 + u32::from(b[i + 1] - b'0');
            (1..=12).contains(&n(5))
                && (1..=28).contains(&n(8))
                && n(11) < 24
                && n(14) < 60
                && n(17) < 60
        }
    {
        let mut out = String::with_capacity(27);
        out.push_str(&text[..23]);
        out.push_str("000Z");
        return Ok(out);
    }
    slow_sortable_time(text)
}

fn slow_sortable_time(text: &str) -> StoreResult<String> {
    let t = chrono::DateTime::parse_from_rfc3339(text)
        .map_err(|e| StoreError::Other(format!("bad timestamp {text}: {e}")))?;
    Ok(t.with_timezone(&chrono::Utc)
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string())
}

/// The column of the alert window a deliverable's row keeps beside its text: the moments in
/// which the alerts its text stores are those of the moment (`prodops_core::alerts::
/// stored_window`), as one integer (`Window::packed`; NULL when there are none). Every write
/// of a deliverable's text sets it from that text, so that a read whose now is inside sends
/// the text as stored after one comparison, without looking at it (deliverables/reads.rs).
pub const ALERT_WINDOW_COLUMN: &str = "alerts_window";

/// Whether rows of `table` keep the [`ALERT_WINDOW_COLUMN`].
pub fn keeps_alert_window(table: &str) -> bool {
    prodops_core::alerts::patches_stored(table)
}

/// The [`ALERT_WINDOW_COLUMN`] of a record stored as `data`.
pub fn alert_window_of(data: &[u8]) -> Option<i64> {
    prodops_core::alerts::stored_window(data).and_then(|w| w.packed())
}

fn window_value(data: &[u8]) -> SqlValue {
    alert_window_of(data).map_or(SqlValue::Null, SqlValue::Int)
}

/// The first item of an `UPDATE`'s `SET` for a record stored as `data`, with its value:
/// `alerts_window = ?, ` for a table that keeps it, else nothing.
fn window_set(table: &str, data: &str) -> (&'static str, Vec<SqlValue>) {
    if keeps_alert_window(table) {
        ("alerts_window = ?, ", vec![window_value(data.as_bytes())])
    } else {
        ("", Vec::new())
    }
}

pub fn insert(tx: &mut dyn Tx, table: &str, org: Uuid, record: &Value) -> StoreResult<()> {
    insert_row(tx, table, org, &NewRow::of_record(record)?)
}

/// The values of a row's filter columns (store/filter_columns.rs, `values_of`).
type FilterValues<'t> = Vec<Option<Cow<'t, str>>>;

/// The columns and text of a new record, ready for [`insert_rows`].
#[derive(Debug, Clone)]
pub struct NewRow {
    pub id: String,
    pub archived: bool,
    pub created: String,
    pub updated: String,
    pub data: String,
    /// The values of its filter columns (store/filter_columns.rs) when read ahead of the write
    /// ([`NewRow::read_filters`]), so that the writer, which every write waits for, does not
    /// read them; `None`: [`insert_rows`] reads them.
    pub filters: Option<Vec<Option<String>>>,
}

impl NewRow {
    /// The row of a record checked as a value: its columns read from it, its text written.
    pub fn of_record(record: &Value) -> StoreResult<NewRow> {
        let (id, archived, created, updated) = columns_of(record)?;
        Ok(NewRow {
            id,
            archived,
            created,
            updated,
            data: record.to_string(),
            filters: None,
        })
    }

    /// Reads the values of the row's filter columns now, those of `fields` (the table's
    /// `Store::filter_fields_written`; a bulk call does, before its turn on the writer). A text
    /// whose values the database works out stays without them.
    pub fn read_filters(mut self, fields: &[String]) -> NewRow {
        if !fields.is_empty() {
            self.filters = filter_columns::values_of(fields, &self.data)
                .map(|values| values.into_iter().map(|v| v.map(Cow::into_owned)).collect());
        }
        self
    }

    /// The values of the row's filter columns: those read ahead, else read from the text
    /// (`None`: left to the database).
    fn filter_values(&self, fields: &[String]) -> Option<FilterValues<'_>> {
        match &self.filters {
            Some(values) if values.len() == fields.len() => Some(
                values
                    .iter()
                    .map(|v| v.as_deref().map(Cow::Borrowed))
                    .collect(),
            ),
            _ => filter_columns::values_of(fields, &self.data),
        }
    }

    /// The row of a record given as its stored JSON text: the same columns [`insert`] derives
    /// from a `Value`, read from the text without building one.
    pub fn of_text(data: String) -> StoreResult<NewRow> {
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Columns<'a> {
            #[serde(borrow)]
            id: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow)]
            created_at: Option<std::borrow::Cow<'a, str>>,
            #[serde(borrow)]
            updated_at: Option<std::borrow::Cow<'a, str>>,
            is_archived: Option<bool>,
        }
        let c: Columns<'_> = serde_json::from_str(&data)
            .map_err(|e| StoreError::Other(format!("record is not JSON: {e}")))?;
        let id =
            c.id.ok_or_else(|| StoreError::other("record without id"))?
                .into_owned();
        let created = c
            .created_at
            .ok_or_else(|| StoreError::other("record without createdAt"))?;
        let updated = sortable_time(c.updated_at.as_deref().unwrap_or(&created))?;
        let created = sortable_time(&created)?;
        let archived = c.is_archived.unwrap_or(false);
        Ok(NewRow {
            id,
            archived,
            created,
            updated,
            data,
            filters: None,
        })
    }
}

/// Rows per multi-row `INSERT`: 6 parameters each stays far below SQLite's 32,766 and
/// PostgreSQL's 65,535 bound parameters.
const INSERT_CHUNK: usize = 512;

/// Inserts new records with multi-row `INSERT` statements (a few statements instead of one
/// per row). Fails as a whole if any row is refused; the caller finds the row by inserting
/// one at a time ([`insert_row`]). Answers, on SQLite, the rowids the rows got, in their order
/// (see [`inserted_rowids`]); `None` on PostgreSQL.
///
/// A large batch on SQLite is inserted with the connection's triggers off, and the record
/// counts their triggers keep (`record_count_shards`, store/migrate.rs, and the counts per value
/// of store/value_counts.rs) are raised once per batch instead: the counting trigger was a fifth of the cost of each row. Either way the counts
/// change in the same transaction as the rows, so they stay exact.
///
/// The rows' filter columns (store/filter_columns.rs) are those read ahead
/// ([`NewRow::read_filters`]) or read from their text here; a batch with a row whose text
/// leaves them to the database runs with its triggers on, which work them out. On PostgreSQL
/// the triggers check every row of a small batch too, and leave a large batch whose every row
/// was read unchecked (`filter_columns::trust_written`).
pub fn insert_rows<R: std::borrow::Borrow<NewRow>>(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    rows: &[R],
) -> StoreResult<Option<Vec<i64>>> {
    insert_rows_with(tx, table, org, rows, true)
}

/// [`insert_rows`], asking SQLite for the rowids the rows got only when `rowids` (a probe of
/// the table after each statement; a single record's insert has no use for them).
fn insert_rows_with<R: std::borrow::Borrow<NewRow>>(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    rows: &[R],
    rowids: bool,
) -> StoreResult<Option<Vec<i64>>> {
    let fields = filter_columns::written(table);
    let values: Vec<Option<FilterValues<'_>>> = rows
        .iter()
        .map(|r| r.borrow().filter_values(fields))
        .collect();
    let all_read = values.iter().all(Option::is_some);
    if rows.len() < COUNT_PER_BATCH_FROM
        || super::property_index::keeps_an_index(table)
        || !all_read
        || !tx.set_triggers(false)?
    {
        // PostgreSQL: a large batch whose every row was read spares its triggers the JSON.
        let trusted = all_read
            && rows.len() >= COUNT_PER_BATCH_FROM
            && filter_columns::trust_written(tx, true)?;
        // A failed insert leaves the transaction (or its savepoint) to be rolled back, which
        // takes the setting back with it.
        let inserted = insert_rows_as_they_are(tx, table, org, rows, &values, rowids)?;
        if trusted {
            filter_columns::trust_written(tx, false)?;
        }
        return Ok(inserted);
    }
    let inserted = insert_rows_as_they_are(tx, table, org, rows, &values, rowids);
    tx.set_triggers(true)?;
    let rowids = inserted?;
    super::value_counts::add_batch(
        tx,
        table,
        org,
        values
            .iter()
            .zip(rows)
            .filter_map(|(v, r)| Some((v.as_deref()?, r.borrow().archived))),
    )?;
    let archived = rows.iter().filter(|r| r.borrow().archived).count() as i64;
    for (is_archived, n) in [(false, rows.len() as i64 - archived), (true, archived)] {
        if n > 0 {
            tx.execute(
                "INSERT INTO record_count_shards (table_name, organization_id, is_archived, shard, n) \
                 VALUES (?, ?, ?, 0, ?) ON CONFLICT (table_name, organization_id, is_archived, shard) \
                 DO UPDATE SET n = n + excluded.n",
                &[
                    table.into(),
                    org.into(),
                    SqlValue::Bool(is_archived),
                    SqlValue::Int(n),
                ],
            )?;
        }
    }
    Ok(rowids)
}

/// Batches from this many rows keep their counts per batch (see [`insert_rows`]): turning
/// triggers off and on makes SQLite prepare the connection's statements again.
const COUNT_PER_BATCH_FROM: usize = 64;

/// `values`: each row's filter columns as [`insert_rows`] read them (`None`: NULL, which the
/// triggers set right); `want_rowids`: as `rowids` of `insert_rows_with`.
fn insert_rows_as_they_are<R: std::borrow::Borrow<NewRow>>(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    rows: &[R],
    values: &[Option<FilterValues<'_>>],
    want_rowids: bool,
) -> StoreResult<Option<Vec<i64>>> {
    let org = org.to_string();
    let window = keeps_alert_window(table);
    let filter_columns = filter_columns::written_columns(table);
    let columns: Vec<&str> = RECORD_COLUMNS
        .iter()
        .copied()
        .chain(window.then_some(ALERT_WINDOW_COLUMN))
        .chain(filter_columns.iter().map(String::as_str))
        .collect();
    let filters = filter_columns.len();
    fn cells<'a>(
        org: &'a str,
        r: &'a NewRow,
        window: bool,
        values: &'a Option<FilterValues<'_>>,
        filters: usize,
        into: &mut Vec<CellRef<'a>>,
    ) {
        into.extend(record_cells(org, r));
        if window {
            into.push(alert_window_of(r.data.as_bytes()).map_or(CellRef::Null, CellRef::Int));
        }
        match values {
            Some(values) => into.extend(values.iter().map(|v| {
                v.as_deref()
                    .map_or(CellRef::Null, |v| CellRef::Text(v.as_bytes()))
            })),
            None => into.extend(std::iter::repeat_n(CellRef::Null, filters)),
        }
    }
    // Only PostgreSQL has `COPY`: SQLite would build the cells for nothing.
    if rows.len() >= COPY_FROM && tx.dialect() == super::Dialect::Postgres {
        let mut all: Vec<CellRef<'_>> = Vec::with_capacity(rows.len() * columns.len());
        for (r, v) in rows.iter().zip(values) {
            cells(&org, r.borrow(), window, v, filters, &mut all);
        }
        if tx.copy_in(table, &columns, &all)? {
            return Ok(None);
        }
    }
    // Within SQLite's 32,766 bound parameters however many filter columns a table has.
    let chunk_rows = INSERT_CHUNK.min(32_000 / columns.len());
    let mut params: Vec<CellRef<'_>> =
        Vec::with_capacity(chunk_rows.min(rows.len()) * columns.len());
    let mut rowids = (want_rowids && tx.dialect() == super::Dialect::Sqlite).then(Vec::new);
    for (chunk, chunk_values) in rows.chunks(chunk_rows).zip(values.chunks(chunk_rows)) {
        let sql = tx
            .dialect()
            .insert_records_sql(table, &columns, chunk.len());
        params.clear();
        for (r, v) in chunk.iter().zip(chunk_values) {
            cells(&org, r.borrow(), window, v, filters, &mut params);
        }
        tx.execute_refs(&sql, &params)?;
        if let Some(all) = rowids.as_mut() {
            match inserted_rowids(tx, table, chunk.len())? {
                Some(got) => all.extend(got),
                None => rowids = None,
            }
        }
    }
    Ok(rowids)
}

/// SQLite: the rowids the `n` rows of the multi-row `INSERT` just run got, in their order, when
/// that is certain. A new row gets the table's largest rowid plus one unless that largest is
/// `i64::MAX` (then a random free one); if the largest rowid after the statement is the last
/// row's and not `i64::MAX`, no row of the statement met that case, so each got the one before
/// it plus one: `last - n + 1 ..= last`. One probe of the table's right edge.
fn inserted_rowids(
    tx: &mut dyn Tx,
    table: &str,
    n: usize,
) -> StoreResult<Option<std::ops::RangeInclusive<i64>>> {
    let Some(last) = tx.last_insert_rowid() else {
        return Ok(None);
    };
    let largest = tx
        .query(&format!("SELECT max(rowid) FROM {table}"), &[])?
        .first()
        .and_then(|r| r.first())
        .and_then(SqlValue::as_i64);
    Ok((largest == Some(last) && last != i64::MAX && n > 0).then(|| last - (n as i64 - 1)..=last))
}

/// A new row's cells, in the order of [`RECORD_COLUMNS`].
fn record_cells<'a>(org: &'a str, r: &'a NewRow) -> [CellRef<'a>; 6] {
    [
        CellRef::Text(org.as_bytes()),
        CellRef::Text(r.id.as_bytes()),
        CellRef::Bool(r.archived),
        CellRef::Text(r.created.as_bytes()),
        CellRef::Text(r.updated.as_bytes()),
        CellRef::Text(r.data.as_bytes()),
    ]
}

/// The columns of every record table, in the order [`record_cells`] gives them (a
/// deliverable's row has the [`ALERT_WINDOW_COLUMN`] after them).
const RECORD_COLUMNS: [&str; 6] = [
    "organization_id",
    "id",
    "is_archived",
    "created_at",
    "updated_at",
    "data",
];

/// Inserts of this many rows or more go through [`Tx::copy_in`] where the database has it:
/// `COPY` costs a round trip more than one `INSERT`, and saves far more than that on large
/// batches (parsing, planning and binding a statement of thousands of parameters).
const COPY_FROM: usize = 64;

/// Inserts one new record given as a [`NewRow`].
pub fn insert_row(tx: &mut dyn Tx, table: &str, org: Uuid, row: &NewRow) -> StoreResult<()> {
    insert_rows_with(tx, table, org, std::slice::from_ref(row), false)?;
    Ok(())
}

/// The statement [`get_many_raw`] runs for one chunk of ids (`id`, `data` of those that
/// exist), and its parameters (public for the plan tests).
pub fn get_many_sql(
    dialect: super::Dialect,
    table: &str,
    org: Uuid,
    ids: &[Uuid],
) -> (String, Vec<SqlValue>) {
    let mut params = Vec::with_capacity(2);
    let sql = format!(
        "SELECT id, data FROM {table}{}",
        dialect.where_clause(org, &[Cond::Ids(ids.to_vec())], &mut params)
    );
    (sql, params)
}

/// The stored JSON text of the records among `ids` that exist, by id (looked up in chunks).
pub fn get_many_raw(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    ids: &[Uuid],
) -> StoreResult<std::collections::HashMap<Uuid, String>> {
    let mut found = std::collections::HashMap::new();
    let dialect = tx.dialect();
    for chunk in ids.chunks(INSERT_CHUNK) {
        let (sql, params) = get_many_sql(dialect, table, org, chunk);
        tx.for_each_row(&sql, &params, &mut |row| {
            if let (Some(id), Some(data)) = (
                row.first().and_then(|c| c.as_str()),
                row.get(1).and_then(|c| c.as_str()),
            ) {
                let id = Uuid::parse_str(id).map_err(StoreError::other)?;
                found.insert(id, data.to_string());
            }
            Ok(())
        })?;
    }
    Ok(found)
}

pub fn update(tx: &mut dyn Tx, table: &str, org: Uuid, record: &Value) -> StoreResult<()> {
    let (id, archived, _, updated) = columns_of(record)?;
    let data = record.to_string();
    rewrite_row(tx, table, org, id.into(), archived, updated, data)
}

/// [`update`] of a record the caller already holds as JSON text, with the columns it keeps
/// (`updated_at` as the record's `updatedAt` says it).
pub fn update_text(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    id: Uuid,
    archived: bool,
    updated_at: &str,
    data: String,
) -> StoreResult<()> {
    let updated = sortable_time(updated_at)?;
    rewrite_row(tx, table, org, id.into(), archived, updated, data)
}

/// A stored record [`update_records`] rewrites: its JSON text with the columns kept from it.
#[derive(Debug, Clone)]
pub struct RowUpdate {
    pub id: String,
    pub archived: bool,
    /// `updated_at` in its sortable form.
    pub updated: String,
    pub data: String,
}

impl RowUpdate {
    pub fn of_record(record: &Value) -> StoreResult<RowUpdate> {
        let (id, archived, _, updated) = columns_of(record)?;
        Ok(RowUpdate {
            id,
            archived,
            updated,
            data: record.to_string(),
        })
    }
}

/// Rows per statement of [`update_records`] (far under PostgreSQL's 65,535 parameters and
/// SQLite's 32,766 with every filter column of a deliverable).
const UPDATE_CHUNK: usize = 500;

/// [`update`] of many records of `table`: one `WITH v AS (VALUES ...) UPDATE ... FROM v` per
/// [`UPDATE_CHUNK`] rows instead of a statement per row (a bulk call that makes 10,000 steps
/// `waiting` rewrites 10,000 records); each row's triggers fire as for its own `UPDATE`, so
/// counts, value counts and the change feed's kept texts are kept the same way.
///
/// On PostgreSQL a statement per row was a round trip per row. On SQLite, where a statement is
/// no round trip, it was still a statement journal per row: a statement that fires triggers
/// copies every page it changes into its journal first, so each row's rewrite copied the
/// pages of the table, its indexes and the feed's (16 KiB each) again, and the journal's
/// memory was taken from and given back to the system each time: two thirds of a bulk call
/// that made 10,000 steps `waiting` (bench/README.md, "dependencies").
///
/// Every row's filter columns are read from its text here; on PostgreSQL the filter-column
/// trigger is told so and skips its own reading of the text (`filter_columns::trust_written`).
pub fn update_records(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    rows: Vec<RowUpdate>,
) -> StoreResult<()> {
    let dialect = tx.dialect();
    if rows.len() < 2 {
        for r in rows {
            rewrite_row(tx, table, org, r.id.into(), r.archived, r.updated, r.data)?;
        }
        return Ok(());
    }
    let fields = filter_columns::written(table);
    let window = keeps_alert_window(table);
    let mut trusted = false;
    let mut rows = rows.into_iter().peekable();
    while rows.peek().is_some() {
        let chunk: Vec<RowUpdate> = rows.by_ref().take(UPDATE_CHUNK).collect();
        // A row whose filter values do not read is left to the update trigger, as
        // `rewrite_row` leaves it: such a chunk goes row by row, with the trigger reading.
        let values: Option<Vec<Vec<Option<String>>>> = chunk
            .iter()
            .map(|r| {
                filter_columns::values_of(fields, &r.data)
                    .map(|v| v.into_iter().map(|c| c.map(|c| c.into_owned())).collect())
            })
            .collect();
        let Some(values) = values else {
            if trusted {
                trusted = filter_columns::trust_written(tx, false)?;
            }
            for r in chunk {
                rewrite_row(tx, table, org, r.id.into(), r.archived, r.updated, r.data)?;
            }
            continue;
        };
        if !trusted {
            // A failed statement leaves the transaction (or its savepoint) to be rolled back,
            // which takes the setting back with it.
            trusted = filter_columns::trust_written(tx, true)?;
        }
        let mut names = vec!["id".to_string()];
        let mut sets = Vec::new();
        let mut casts = vec!["TEXT".to_string()];
        if window {
            names.push("w".into());
            sets.push(format!("{ALERT_WINDOW_COLUMN} = v.w"));
            casts.push("BIGINT".into());
        }
        for (i, field) in fields.iter().enumerate() {
            names.push(format!("f{i}"));
            sets.push(format!("{} = v.f{i}", filter_column(field)));
            casts.push("TEXT".into());
        }
        for (name, column, cast) in [
            ("a", "is_archived", dialect.bool_column_type()),
            ("u", "updated_at", "TEXT"),
            ("d", "data", dialect.json_column_type()),
        ] {
            names.push(name.into());
            sets.push(format!("{column} = v.{name}"));
            casts.push(cast.into());
        }
        let tuple = format!(
            "({})",
            casts
                .iter()
                .map(|c| format!("CAST(? AS {c})"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let mut params: Vec<SqlValue> = Vec::with_capacity(chunk.len() * casts.len() + 1);
        for (r, filters) in chunk.into_iter().zip(values) {
            params.push(SqlValue::Text(r.id));
            if window {
                params.push(window_value(r.data.as_bytes()));
            }
            params.extend(
                filters
                    .into_iter()
                    .map(|v| v.map_or(SqlValue::Null, SqlValue::Text)),
            );
            params.push(r.archived.into());
            params.push(SqlValue::Text(r.updated));
            params.push(SqlValue::Text(r.data));
        }
        let n = params.len() / casts.len();
        params.push(org.into());
        // The column names go on the common table (SQLite has no column list on a `FROM`
        // alias); both databases then probe the table's primary key once per row of `v`.
        tx.execute(
            &format!(
                "WITH v({}) AS (VALUES {}) UPDATE {table} SET {} FROM v \
                 WHERE {table}.organization_id = ? AND {table}.id = v.id",
                names.join(", "),
                vec![tuple; n].join(", "),
                sets.join(", "),
            ),
            &params,
        )?;
    }
    if trusted {
        filter_columns::trust_written(tx, false)?;
    }
    Ok(())
}

/// The one statement of [`update`] and [`update_text`]: the row's text, the columns kept from
/// it (`updated` already in its sortable form) and, for deliverables, its alert window.
fn rewrite_row(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    id: SqlValue,
    archived: bool,
    updated: String,
    data: String,
) -> StoreResult<()> {
    let (window, mut params) = window_set(table, &data);
    // The filter columns from the text; those it leaves to the database are left as they
    // are for the update trigger to set (store/filter_columns.rs).
    let fields = filter_columns::written(table);
    let mut filters = String::new();
    if let Some(values) = filter_columns::values_of(fields, &data) {
        for (field, value) in fields.iter().zip(values) {
            filters.push_str(&filter_column(field));
            filters.push_str(" = ?, ");
            params.push(value.map_or(SqlValue::Null, |v| SqlValue::Text(v.into_owned())));
        }
    }
    params.extend([
        archived.into(),
        updated.into(),
        SqlValue::Text(data),
        org.into(),
        id,
    ]);
    tx.execute(
        &format!("UPDATE {table} SET {window}{filters}is_archived = ?, updated_at = ?, data = ? WHERE organization_id = ? AND id = ?"),
        &params,
    )?;
    Ok(())
}

pub fn delete(tx: &mut dyn Tx, table: &str, org: Uuid, id: Uuid) -> StoreResult<bool> {
    let n = tx.execute(
        &format!("DELETE FROM {table} WHERE organization_id = ? AND id = ?"),
        &[org.into(), id.into()],
    )?;
    Ok(n > 0)
}

/// The key lookup: an unrevoked key by its hash (the last parameter), with its organization's
/// flags (NULL if the organization is gone). With `table`, the same statement also reads the
/// JSON text of the record whose id is the first parameter (NULL when the key's organization
/// has none), so that a read by id costs one statement, not two, and sees the key and the
/// record in one snapshot.
///
/// Every request runs it, so its text is built once per dialect and table and kept: the tables
/// are those of the static resource descriptions, a bounded set.
pub fn key_lookup_sql(dialect: Dialect, table: Option<&'static str>) -> &'static str {
    type Texts = HashMap<(Dialect, Option<&'static str>), &'static str>;
    static TEXTS: OnceLock<Mutex<Texts>> = OnceLock::new();
    let mut texts = TEXTS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    texts.entry((dialect, table)).or_insert_with(|| {
        // Scalar subqueries, not joins: PostgreSQL plans and runs them as lookups on the
        // primary keys without weighing join orders, which measured about a third more lookups
        // per second than the same statement written with joins (pgbench, prepared, 4 clients).
        let record = match table {
            Some(table) => format!(
                ", (SELECT r.data FROM {table} r WHERE r.organization_id = k.organization_id AND r.id = ?)"
            ),
            None => String::new(),
        };
        let sql = key_lookup_text(&record);
        let sql = match dialect {
            Dialect::Sqlite => sql,
            Dialect::Postgres => super::postgres::number_placeholders(&sql),
        };
        Box::leak(sql.into_boxed_str())
    })
}

/// The key lookup's text ([`key_lookup_sql`]), `?` placeholders, with `more` (further columns)
/// after the key's [`KEY_COLUMNS`].
fn key_lookup_text(more: &str) -> String {
    format!(
        "SELECT k.id, k.organization_id, k.is_admin, k.permissions, \
         (SELECT o.flags FROM organizations o WHERE o.id = k.organization_id){more} \
         FROM api_keys k WHERE k.key_hash = ? AND k.revoked_at IS NULL"
    )
}

/// The key lookup's own columns: key id, organization id, admin flag, permissions, and the
/// organization's flags. A record or a page read along comes after them.
pub(super) const KEY_COLUMNS: usize = 5;

/// The key lookup ([`key_lookup_sql`]) and a keyset page of `org` with its total and feed cursor
/// ([`keyset_page_statement`]) as one PostgreSQL statement, as a read by id's record is read in
/// its key lookup: one statement and one round trip instead of two statements pipelined, which
/// PostgreSQL runs as two executions (bench/README.md, issue 39 item 3). The page is a `LATERAL`
/// subquery of the key's row: no row for an unknown or revoked key, so the page is then not
/// read at all; otherwise a row per record, each the key's [`KEY_COLUMNS`] and then the page's
/// columns, or a single row with NULL page columns for an empty page. The key's subquery is
/// kept apart (`OFFSET 0`) so that its flags are read once, not once per record. Parameters:
/// the key's hash, then the page's. `org` is the key's organization as this process knows it;
/// the caller keeps the page only when the key read with it belongs there.
pub(super) fn key_and_page_statement(
    page: &PageRead,
    org: Uuid,
    key_hash: &str,
) -> (String, Vec<SqlValue>) {
    let (page_sql, page_params) = keyset_page_statement(page, org);
    let sql = format!(
        "SELECT k.*, p.* FROM ({} OFFSET 0) k LEFT JOIN LATERAL ({page_sql}) p ON true",
        key_lookup_text("")
    );
    let mut params = Vec::with_capacity(page_params.len() + 1);
    params.push(SqlValue::Text(key_hash.to_string()));
    params.extend(page_params);
    (sql, params)
}

/// Builds a [`KeyRow`] from the columns of the key lookup.
pub fn key_row(
    id: &str,
    org: &str,
    is_admin: bool,
    permissions: &str,
    flags: &str,
) -> StoreResult<KeyRow> {
    Ok(KeyRow {
        key_id: Uuid::parse_str(id).map_err(StoreError::other)?,
        organization_id: Uuid::parse_str(org).map_err(StoreError::other)?,
        is_admin,
        permissions: serde_json::from_str(permissions).map_err(StoreError::other)?,
        flags: serde_json::from_str(flags).map_err(StoreError::other)?,
    })
}

#[cfg(test)]
mod sortable_time_tests {
    use super::*;

    #[test]
    fn the_fast_path_agrees_with_chrono() {
        for t in [
            "2024-01-02T08:00:00.123Z",
            "1999-12-28T23:59:59.999Z",
            "2024-02-29T00:00:00.000Z",
            "2024-01-31T08:00:00.123Z",
            "2024-01-02T08:00:00Z",
            "2024-01-02T08:00:00.123456+02:00",
        ] {
            assert_eq!(
                sortable_time(t).unwrap(),
                slow_sortable_time(t).unwrap(),
                "{t}"
            );
        }
        assert!(sortable_time("2024-13-02T08:00:00.123Z").is_err());
    }
}
