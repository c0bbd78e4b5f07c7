//! Record counts per value of the enum fields (`prodops_core::filter_fields::FieldKinds::counted`),
//! so that the count of a filter on such a field (`/count`, a filtered list's `totalCount`) is
//! a lookup however many records match: counting the index entries of `status=active` over
//! 196,000 workers cost 25 times the unfiltered page (bench/README.md, "filters").
//!
//! `record_value_counts` holds one row per (table, organization, field, value, archived flag,
//! shard), kept by database triggers on the resource table like `record_count_shards` (store/
//! migrate.rs), so that no write path can leave it behind; on PostgreSQL one statement-level
//! trigger per kind of write adds one row per value it touched, each connection in its own
//! shard, and readers sum the shards. SQLite's large insert batches run with triggers off and
//! add their counts per batch ([`add_batch`]). A record whose field is null or missing is not
//! counted: a filter on `null` counts through the table instead.
//!
//! The enum's values form a closed set, so the table stays a few rows per organization; ids
//! and identifiers, whose counts would be a row per record, are not counted.

use std::borrow::Cow;
use std::collections::HashMap;

use prodops_core::filter_fields;
use uuid::Uuid;

use super::sql::{Dialect, FieldPath};
use super::{SqlValue, StoreResult, Tx};

/// The table of counts.
pub const TABLE: &str = "record_value_counts";

/// PostgreSQL: the moves of the counts of a table whose bulk call counts later
/// ([`count_later`]), one row per statement and value, inserted only; `field` and `value` are
/// empty for the plain counts of `record_count_shards`. `tx` tells the transactions apart.
const LATER: &str = "record_counts_later";

pub const PG_LATER_TABLE: &str = "CREATE TABLE IF NOT EXISTS record_counts_later (
    tx BIGINT NOT NULL DEFAULT txid_current(), table_name TEXT NOT NULL, organization_id TEXT NOT NULL,
    field TEXT NOT NULL, value TEXT NOT NULL, is_archived BOOLEAN NOT NULL, shard INTEGER NOT NULL,
    n BIGINT NOT NULL)";

pub const PG_LATER_INDEX: &str =
    "CREATE INDEX IF NOT EXISTS ix_record_counts_later ON record_counts_later (tx, table_name)";

/// Runs `f` (a bulk call's writes to `table`) with the counts of `table` kept later: between
/// [`count_later`] and [`apply_later`].
pub fn counting_later<T, E: From<super::StoreError>>(
    tx: &mut dyn Tx,
    table: &str,
    f: impl FnOnce(&mut dyn Tx) -> Result<T, E>,
) -> Result<T, E> {
    count_later(tx, table)?;
    let done = f(tx)?;
    apply_later(tx, table)?;
    Ok(done)
}

/// From here to [`apply_later`] in this transaction, the count triggers of `table` record
/// their moves in `record_counts_later` instead of updating the counts (PostgreSQL; nothing on
/// SQLite, whose row triggers update a count row in place). Why: a bulk call writes its records
/// one statement each, and each statement moved the same few count rows (the connection's
/// shard); PostgreSQL keeps every version a transaction writes of a row and walks them on each
/// lookup, so a bulk PATCH of a counted field grew with the square of its records (60,000
/// workers: 139 s). Every write to `table` in between is counted later, whoever makes it (a
/// hook's too), so nothing is missed; a rollback drops the moves with everything else.
fn count_later(tx: &mut dyn Tx, table: &str) -> StoreResult<()> {
    if tx.dialect() == Dialect::Postgres {
        tx.query(
            "SELECT set_config('prodops.count_later_' || ?, '1', true)",
            &[table.into()],
        )?;
    }
    Ok(())
}

/// Applies the moves recorded since [`count_later`] to the counts, in one statement per kind
/// of count, and counts at once again.
fn apply_later(tx: &mut dyn Tx, table: &str) -> StoreResult<()> {
    if tx.dialect() != Dialect::Postgres {
        return Ok(());
    }
    tx.query(
        "SELECT set_config('prodops.count_later_' || ?, '', true)",
        &[table.into()],
    )?;
    tx.execute(
        "INSERT INTO record_count_shards (table_name, organization_id, is_archived, shard, n) \
         SELECT table_name, organization_id, is_archived, shard, sum(n) FROM record_counts_later \
         WHERE tx = txid_current() AND table_name = ? AND field = '' \
         GROUP BY table_name, organization_id, is_archived, shard HAVING sum(n) <> 0 \
         ON CONFLICT (table_name, organization_id, is_archived, shard) \
         DO UPDATE SET n = record_count_shards.n + EXCLUDED.n",
        &[table.into()],
    )?;
    tx.execute(
        &format!(
            "INSERT INTO {TABLE} (table_name, organization_id, field, value, is_archived, shard, n) \
             SELECT table_name, organization_id, field, value, is_archived, shard, sum(n) FROM {LATER} \
             WHERE tx = txid_current() AND table_name = ? AND field <> '' \
             GROUP BY table_name, organization_id, field, value, is_archived, shard HAVING sum(n) <> 0 \
             ON CONFLICT (table_name, organization_id, field, value, is_archived, shard) \
             DO UPDATE SET n = {TABLE}.n + EXCLUDED.n"
        ),
        &[table.into()],
    )?;
    tx.execute(
        &format!("DELETE FROM {LATER} WHERE tx = txid_current() AND table_name = ?"),
        &[table.into()],
    )?;
    Ok(())
}

/// The fields of `table` whose values are counted.
pub fn counted_fields(table: &str) -> &'static [String] {
    &filter_fields::of_table(table).counted
}

/// The triggers (and on PostgreSQL the function) that keep the counts of `t`, idempotent; none
/// for a table without counted fields.
pub fn ddl(dialect: Dialect, t: &str) -> Vec<String> {
    let fields = counted_fields(t);
    let mut ddl = Vec::new();
    match dialect {
        Dialect::Sqlite => {
            for name in ["insert", "delete", "update"] {
                ddl.push(format!("DROP TRIGGER IF EXISTS tr_{t}_values_{name}"));
            }
            if fields.is_empty() {
                return ddl;
            }
            let value = |row: &str, f: &str| format!("json_extract({row}.data, '$.{f}')");
            let plus = |row: &str| {
                fields
                    .iter()
                    .map(|f| {
                        format!(
                            "INSERT INTO {TABLE} (table_name, organization_id, field, value, is_archived, shard, n) \
                             SELECT '{t}', {row}.organization_id, '{f}', v, {row}.is_archived, 0, 1 \
                             FROM (SELECT {} AS v) WHERE v IS NOT NULL \
                             ON CONFLICT (table_name, organization_id, field, value, is_archived, shard) \
                             DO UPDATE SET n = n + 1;",
                            value(row, f)
                        )
                    })
                    .collect::<String>()
            };
            let minus = |row: &str| {
                fields
                    .iter()
                    .map(|f| {
                        format!(
                            "UPDATE {TABLE} SET n = n - 1 WHERE table_name = '{t}' \
                             AND organization_id = {row}.organization_id AND field = '{f}' \
                             AND value = {} AND is_archived = {row}.is_archived AND shard = 0;",
                            value(row, f)
                        )
                    })
                    .collect::<String>()
            };
            let changed = std::iter::once("OLD.is_archived <> NEW.is_archived".to_string())
                .chain(
                    fields
                        .iter()
                        .map(|f| format!("{} IS NOT {}", value("OLD", f), value("NEW", f))),
                )
                .collect::<Vec<_>>()
                .join(" OR ");
            ddl.push(format!(
                "CREATE TRIGGER tr_{t}_values_insert AFTER INSERT ON {t} BEGIN {} END",
                plus("NEW")
            ));
            ddl.push(format!(
                "CREATE TRIGGER tr_{t}_values_delete AFTER DELETE ON {t} BEGIN {} END",
                minus("OLD")
            ));
            ddl.push(format!(
                "CREATE TRIGGER tr_{t}_values_update AFTER UPDATE OF data, is_archived ON {t} \
                 WHEN {changed} BEGIN {} {} END",
                minus("OLD"),
                plus("NEW")
            ));
        }
        Dialect::Postgres => {
            let function = pg_function_name(t);
            for name in ["insert", "delete", "update"] {
                ddl.push(format!(
                    "DROP TRIGGER IF EXISTS tr_{t}_values_{name} ON {t}"
                ));
            }
            if fields.is_empty() {
                ddl.push(format!("DROP FUNCTION IF EXISTS {function}()"));
                return ddl;
            }
            // The filter columns (store/filter_columns.rs), set before AFTER triggers run:
            // the counts are of what the filter compares.
            let values = |r: &str| {
                let pairs: Vec<String> = fields
                    .iter()
                    .map(|f| format!("('{f}', {r}.{})", super::sql::filter_column(f)))
                    .collect();
                format!(
                    "CROSS JOIN LATERAL (VALUES {}) v(field, value)",
                    pairs.join(", ")
                )
            };
            let columns = "(table_name, organization_id, field, value, is_archived, shard, n)";
            let upsert = format!("INSERT INTO {TABLE} {columns}");
            let on_conflict = format!(
                "ON CONFLICT (table_name, organization_id, field, value, is_archived, shard) \
                 DO UPDATE SET n = {TABLE}.n + EXCLUDED.n"
            );
            // The moves of one statement into `insert` (each operation in its own branch: an
            // insert's trigger has no `old_rows`).
            let moves = |insert: &str, on_conflict: &str| {
                format!(
                    "IF TG_OP = 'INSERT' THEN
    {insert} SELECT '{t}', r.organization_id, v.field, v.value, r.is_archived, s, count(*)
    FROM new_rows r {new} WHERE v.value IS NOT NULL
    GROUP BY r.organization_id, v.field, v.value, r.is_archived {on_conflict};
  ELSIF TG_OP = 'DELETE' THEN
    {insert} SELECT '{t}', r.organization_id, v.field, v.value, r.is_archived, s, -count(*)
    FROM old_rows r {old} WHERE v.value IS NOT NULL
    GROUP BY r.organization_id, v.field, v.value, r.is_archived {on_conflict};
  ELSE
    {insert} SELECT '{t}', organization_id, field, value, is_archived, s, sum(d) FROM (
      SELECT r.organization_id, v.field, v.value, r.is_archived, 1 AS d FROM new_rows r {new}
      UNION ALL SELECT r.organization_id, v.field, v.value, r.is_archived, -1 AS d FROM old_rows r {old}
    ) moved WHERE value IS NOT NULL GROUP BY organization_id, field, value, is_archived HAVING sum(d) <> 0
    {on_conflict};
  END IF;",
                    new = values("r"),
                    old = values("r"),
                )
            };
            ddl.push(format!(
                "CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $body$
DECLARE
  s integer := pg_backend_pid() % 16;
BEGIN
  -- A bulk call counts later ([`count_later`]): inserts only, applied once when it ends.
  IF current_setting('prodops.count_later_{t}', true) = '1' THEN
  {later}
  ELSE
  {now}
  END IF;
  RETURN NULL;
END $body$",
                later = moves(&format!("INSERT INTO {LATER} {columns}"), ""),
                now = moves(&upsert, &on_conflict),
            ));
            ddl.push(format!(
                "CREATE TRIGGER tr_{t}_values_insert AFTER INSERT ON {t} \
                 REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
            ));
            ddl.push(format!(
                "CREATE TRIGGER tr_{t}_values_delete AFTER DELETE ON {t} \
                 REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION {function}()"
            ));
            ddl.push(format!(
                "CREATE TRIGGER tr_{t}_values_update AFTER UPDATE ON {t} \
                 REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT \
                 EXECUTE FUNCTION {function}()"
            ));
        }
    }
    ddl
}

fn pg_function_name(t: &str) -> String {
    super::sql::bounded_name(format!("prodops_value_counts_{t}"))
}

/// Seeds the counts of `table` from its rows, once per set of counted fields (a field that
/// becomes an enum is counted from the rows stored before): for databases that held records
/// before the counts existed. Runs after the table's triggers are in place, in the same
/// transaction.
pub fn seed(tx: &mut dyn Tx, table: &str) -> StoreResult<()> {
    let fields = counted_fields(table);
    let marker = format!("{table}#values:{}", fields.join(","));
    let seeded = !tx
        .query(
            "SELECT table_name FROM counted_tables WHERE table_name = ?",
            &[marker.as_str().into()],
        )?
        .is_empty();
    if seeded {
        return Ok(());
    }
    let dialect = tx.dialect();
    tx.execute(
        &format!("DELETE FROM {TABLE} WHERE table_name = ?"),
        &[table.into()],
    )?;
    for field in fields {
        let value = dialect
            .text_expr(&FieldPath::parse(field).expect("schema field names are valid paths"));
        tx.execute(
            &format!(
                "INSERT INTO {TABLE} (table_name, organization_id, field, value, is_archived, shard, n) \
                 SELECT ?, organization_id, ?, {value}, is_archived, 0, COUNT(*) FROM {table} \
                 WHERE {value} IS NOT NULL GROUP BY organization_id, {value}, is_archived"
            ),
            &[table.into(), field.as_str().into()],
        )?;
    }
    tx.execute(
        "DELETE FROM counted_tables WHERE table_name LIKE ?",
        &[format!("{table}#values:%").into()],
    )?;
    tx.execute(
        "INSERT INTO counted_tables (table_name) VALUES (?)",
        &[marker.into()],
    )?;
    Ok(())
}

/// Adds the counts of a batch of new records of organization `org` inserted with the
/// connection's triggers off (store/records.rs, `insert_rows`): each record given by the values
/// of its filter columns (store/filter_columns.rs, `values_of`, in the order of
/// `filter_indexed`, of which the counted fields are a part) and its archived flag. A null or
/// missing value is not counted, as the triggers skip it.
pub fn add_batch<'a, 'v: 'a>(
    tx: &mut dyn Tx,
    table: &str,
    org: Uuid,
    rows: impl Iterator<Item = (&'a [Option<Cow<'v, str>>], bool)>,
) -> StoreResult<()> {
    let fields = counted_fields(table);
    if fields.is_empty() {
        return Ok(());
    }
    let indexed = &filter_fields::of_table(table).filter_indexed;
    let at: Vec<usize> = fields
        .iter()
        .map(|f| {
            indexed
                .iter()
                .position(|g| g == f)
                .expect("counted fields are filter-indexed ones")
        })
        .collect();
    let mut tally: HashMap<(usize, &str, bool), i64> = HashMap::new();
    for (values, archived) in rows {
        for (field, &i) in at.iter().enumerate() {
            if let Some(Some(value)) = values.get(i) {
                *tally.entry((field, value.as_ref(), archived)).or_default() += 1;
            }
        }
    }
    for ((field, value, archived), n) in tally {
        tx.execute(
            &format!(
                "INSERT INTO {TABLE} (table_name, organization_id, field, value, is_archived, shard, n) \
                 VALUES (?, ?, ?, ?, ?, 0, ?) \
                 ON CONFLICT (table_name, organization_id, field, value, is_archived, shard) \
                 DO UPDATE SET n = n + excluded.n"
            ),
            &[
                table.into(),
                org.into(),
                fields[field].as_str().into(),
                value.into(),
                SqlValue::Bool(archived),
                SqlValue::Int(n),
            ],
        )?;
    }
    Ok(())
}

/// The statement answering the count of records of `table` in organization `org` whose field
/// `field` (a counted one) holds one of `values` (none of them `null`), archived or not as
/// `archived` says (either when `None`), from the kept counts.
pub fn count_sql(
    dialect: Dialect,
    table: &str,
    org: Uuid,
    field: &str,
    values: &[String],
    archived: Option<bool>,
) -> (String, Vec<SqlValue>) {
    let mut sql = format!(
        "SELECT CAST(COALESCE(SUM(n), 0) AS BIGINT) FROM {TABLE} \
         WHERE table_name = ? AND organization_id = ? AND field = ? AND "
    );
    let mut params: Vec<SqlValue> = vec![table.into(), org.into(), field.into()];
    dialect.distinct_text_in("value", values, &mut sql, &mut params);
    if let Some(a) = archived {
        sql.push_str(" AND is_archived = ?");
        params.push(SqlValue::Bool(a));
    }
    (sql, params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_count_binds_each_value_once() {
        for dialect in [Dialect::Sqlite, Dialect::Postgres] {
            let values = ["active".to_string(), "active".to_string()];
            let (sql, params) = count_sql(
                dialect,
                "worker",
                Uuid::nil(),
                "status",
                &values,
                Some(false),
            );
            assert!(sql.contains("value = "), "{sql}");
            assert_eq!(params.len(), 5, "{params:?}");
        }
    }
}
