//! The index of custom property values of deliverables (`data.properties.<key>`, spec 4.9), so a
//! filter on a property is an index lookup instead of a read of every record.
//!
//! Property keys are defined per organization at run time, so no expression index can name
//! them; instead, `deliverable_property_index` holds one row per (deliverable, key, scalar
//! value or array element), kept by database triggers on the deliverable table, so that no
//! write path can forget it. Each row also carries its record's archived flag and creation
//! time, so a filtered page in the default order is one index range, and a filtered count
//! reads the index alone (issue 14 item 2; before, each candidate was read and checked).
//!
//! What a row keeps is the text the exact filter compares ([`Cond::Field`](super::sql::Cond::Field)'s
//! JSON-typed match):
//!
//! - a string is kept as its first [`MAX_TEXT_CHARS`] characters (an index row has a size
//!   limit on PostgreSQL; equal strings have equal prefixes);
//! - a boolean as `true`/`false`, a number in `num`;
//! - an array element as the text the exact match compares (strings as they are, numbers as
//!   written, booleans as `true`/`false`), each text once per array (so a filter of one text
//!   finds a record at most once, and its count is a count of rows); null and object members
//!   are not kept (nothing but a `null` filter matches them, and a `null` filter is not looked
//!   up here).
//!
//! So the index finds exactly the matches of most filters, and a superset of the others, which
//! are then checked against the records ([`Lookup::exact`] says which).

use super::sql::Dialect;
use super::{StoreResult, Tx};

/// The table whose records' custom properties are indexed.
pub const SOURCE_TABLE: &str = "deliverable";

/// The index table.
pub const TABLE: &str = "deliverable_property_index";

/// The table's earlier form, without the archived flag and creation time, dropped.
const EARLIER_TABLE: &str = "deliverable_property_values";

/// The columns of an index row, in the order [`sqlite_rows`] and [`pg_rows`] give them.
const COLUMNS: &str = "organization_id, deliverable_id, key, value, num, is_archived, created_at";

/// How many characters of a string value the index keeps.
pub const MAX_TEXT_CHARS: usize = 200;

/// The table, its indexes and the triggers that keep it, idempotent.
pub fn ddl(dialect: Dialect) -> Vec<String> {
    let (t, s) = (TABLE, SOURCE_TABLE);
    let num = match dialect {
        Dialect::Sqlite => "REAL",
        Dialect::Postgres => "DOUBLE PRECISION",
    };
    let mut ddl = vec![
        format!("DROP TABLE IF EXISTS {EARLIER_TABLE}"),
        format!(
            "CREATE TABLE IF NOT EXISTS {t} (organization_id TEXT NOT NULL, deliverable_id TEXT NOT NULL, \
             key TEXT NOT NULL, value TEXT, num {num}, is_archived {} NOT NULL, created_at TEXT NOT NULL)",
            dialect.bool_column_type()
        ),
        // A value's matches in the default list order (archived flag, creation time, id), as
        // the resource's list index orders them.
        format!(
            "CREATE INDEX IF NOT EXISTS ix_{t}_value ON {t} \
             (organization_id, key, value, is_archived, created_at, deliverable_id)"
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS ix_{t}_num ON {t} \
             (organization_id, key, num, is_archived, created_at, deliverable_id)"
        ),
        // The rows of one record, for the triggers. The id first: led by the organization,
        // SQLite's planner took it for a count of distinct ids (an index in id order), read the
        // organization's whole index and dropped the value index.
        format!(
            "CREATE INDEX IF NOT EXISTS ix_{t}_record ON {t} (deliverable_id, organization_id)"
        ),
    ];
    match dialect {
        Dialect::Sqlite => {
            let insert = format!("INSERT INTO {t} ({COLUMNS}) {};", sqlite_rows("NEW", ""));
            let delete = |row: &str| {
                format!(
                    "DELETE FROM {t} WHERE organization_id = {row}.organization_id AND deliverable_id = {row}.id;"
                )
            };
            for name in ["insert", "update", "delete"] {
                ddl.push(format!("DROP TRIGGER IF EXISTS tr_{s}_properties_{name}"));
            }
            ddl.push(format!(
                "CREATE TRIGGER tr_{s}_properties_insert AFTER INSERT ON {s} \
                 WHEN json_type(NEW.data, '$.data.properties') = 'object' BEGIN {insert} END"
            ));
            ddl.push(format!(
                "CREATE TRIGGER tr_{s}_properties_update AFTER UPDATE OF data, is_archived ON {s} \
                 WHEN (OLD.data -> '$.data.properties') IS NOT (NEW.data -> '$.data.properties') \
                 OR OLD.is_archived <> NEW.is_archived OR OLD.created_at <> NEW.created_at \
                 BEGIN {} {insert} END",
                delete("OLD")
            ));
            ddl.push(format!(
                "CREATE TRIGGER tr_{s}_properties_delete AFTER DELETE ON {s} BEGIN {} END",
                delete("OLD")
            ));
        }
        Dialect::Postgres => {
            let changed = "((o.data #> '{data,properties}')::text IS DISTINCT FROM (n.data #> '{data,properties}')::text \
                           OR o.is_archived <> n.is_archived OR o.created_at <> n.created_at)";
            ddl.push(format!(
                "CREATE OR REPLACE FUNCTION prodops_property_values() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO {t} ({COLUMNS}) {};
  ELSIF TG_OP = 'UPDATE' THEN
    DELETE FROM {t} v USING old_rows o JOIN new_rows n ON n.organization_id = o.organization_id AND n.id = o.id
      WHERE v.organization_id = o.organization_id AND v.deliverable_id = o.id AND {changed};
    INSERT INTO {t} ({COLUMNS}) {};
  ELSE
    DELETE FROM {t} v USING old_rows o WHERE v.organization_id = o.organization_id AND v.deliverable_id = o.id;
  END IF;
  RETURN NULL;
END $body$",
                pg_rows("new_rows n", ""),
                pg_rows(
                    "new_rows n JOIN old_rows o ON o.organization_id = n.organization_id AND o.id = n.id",
                    &format!(" AND {changed}")
                ),
            ));
            ddl.push(format!(
                "CREATE OR REPLACE TRIGGER tr_{s}_properties_insert AFTER INSERT ON {s} \
                 REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION prodops_property_values()"
            ));
            ddl.push(format!(
                "CREATE OR REPLACE TRIGGER tr_{s}_properties_update AFTER UPDATE ON {s} \
                 REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT \
                 EXECUTE FUNCTION prodops_property_values()"
            ));
            ddl.push(format!(
                "CREATE OR REPLACE TRIGGER tr_{s}_properties_delete AFTER DELETE ON {s} \
                 REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION prodops_property_values()"
            ));
        }
    }
    ddl
}

/// The index rows of the SQLite record `row` (`NEW`, or a table's alias; `from` adds the table
/// to read it from, as `deliverable d`).
fn sqlite_rows(row: &str, from: &str) -> String {
    let m = MAX_TEXT_CHARS;
    let data = format!("{row}.data");
    let columns = format!("{row}.organization_id, {row}.id");
    let order = format!("{row}.is_archived, {row}.created_at");
    let from_first = if from.is_empty() {
        String::new()
    } else {
        format!("{from}, ")
    };
    format!(
        "SELECT {columns}, p.key, \
         CASE p.type WHEN 'text' THEN substr(p.value, 1, {m}) WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' END, \
         CASE WHEN p.type IN ('integer', 'real') THEN p.value END, {order} \
         FROM {from_first}json_each({data}, '$.data.properties') p \
         WHERE json_type({data}, '$.data.properties') = 'object' AND p.type IN ('text', 'true', 'false', 'integer', 'real') \
         UNION ALL \
         SELECT DISTINCT {columns}, p.key, \
         substr(CASE e.type WHEN 'true' THEN 'true' WHEN 'false' THEN 'false' ELSE CAST(e.value AS TEXT) END, 1, {m}), NULL, {order} \
         FROM {from_first}json_each({data}, '$.data.properties') p, json_each(p.value) e \
         WHERE json_type({data}, '$.data.properties') = 'object' AND p.type = 'array' AND e.type <> 'null'"
    )
}

/// The index rows of the PostgreSQL records of `from` (aliased `n`), `and` narrowing them.
fn pg_rows(from: &str, and: &str) -> String {
    let m = MAX_TEXT_CHARS;
    // `json_each` of a non-object (and `json_array_elements_text` of a non-array) is an error,
    // even on rows a WHERE clause would drop: the argument is an empty one instead.
    let props = "json_each(CASE WHEN json_typeof(n.data #> '{data,properties}') = 'object' \
                 THEN n.data #> '{data,properties}' ELSE '{}'::json END) p";
    format!(
        "SELECT n.organization_id, n.id, p.key, \
         CASE json_typeof(p.value) WHEN 'string' THEN left(p.value #>> '{{}}', {m}) WHEN 'boolean' THEN p.value #>> '{{}}' END, \
         CASE WHEN json_typeof(p.value) = 'number' THEN (p.value #>> '{{}}')::float8 END, n.is_archived, n.created_at \
         FROM {from} CROSS JOIN LATERAL {props} \
         WHERE json_typeof(p.value) IN ('string', 'boolean', 'number'){and} \
         UNION ALL \
         SELECT DISTINCT n.organization_id, n.id, p.key, left(e, {m}), CAST(NULL AS DOUBLE PRECISION), n.is_archived, n.created_at \
         FROM {from} CROSS JOIN LATERAL {props} CROSS JOIN LATERAL \
         json_array_elements_text(CASE WHEN json_typeof(p.value) = 'array' THEN p.value ELSE '[]'::json END) e \
         WHERE e IS NOT NULL{and}"
    )
}

/// Rebuilds the index from the stored records: for databases that held deliverables before it
/// existed (or before its rows carried the archived flag and creation time). Runs once per
/// form of the index, as a migration step.
pub fn backfill(tx: &mut dyn Tx) -> StoreResult<()> {
    let (t, s) = (TABLE, SOURCE_TABLE);
    tx.execute(&format!("DELETE FROM {t}"), &[])?;
    let rows = match tx.dialect() {
        Dialect::Sqlite => sqlite_rows("d", &format!("{s} d")),
        Dialect::Postgres => pg_rows(&format!("{s} n"), ""),
    };
    tx.execute(&format!("INSERT INTO {t} ({COLUMNS}) {rows}"), &[])?;
    Ok(())
}

/// What a property filter looks up in the index.
#[derive(Debug, Clone, PartialEq)]
pub struct Lookup {
    /// The texts to find in `value`.
    pub texts: Vec<String>,
    /// The numbers to find in `num`.
    pub numbers: Vec<f64>,
    /// The rows found are exactly the matches of the filter (no record needs checking):
    /// every text is shorter than what the index keeps of a string, every number is an
    /// integer-exact double (beyond 2^53 SQLite compares a stored integer exactly, the index
    /// holds it rounded), and a `true`/`false` is asked in lower case (the index keeps the
    /// boolean `true` and the string `"true"` alike, which only the lower-case filter matches
    /// both of).
    pub exact: bool,
}

/// The texts and numbers a property filter looks up: a superset of what its exact match can
/// match (see the module's comment), and whether it is exactly that. `raw` are the filter's
/// values as given, `texts` and `numbers` what they can match as strings (and array
/// elements) and as numbers. `None` when the index cannot narrow the filter (it asks for
/// `null`, which also matches a missing property).
pub(super) fn lookup(
    raw: &[String],
    texts: &[String],
    numbers: &[f64],
    with_true: bool,
    with_false: bool,
    with_null: bool,
) -> Option<Lookup> {
    if with_null {
        return None;
    }
    let mut keys: Vec<String> = texts
        .iter()
        .map(|t| t.chars().take(MAX_TEXT_CHARS).collect())
        .collect();
    if with_true {
        keys.push("true".into());
    }
    if with_false {
        keys.push("false".into());
    }
    keys.sort_unstable();
    keys.dedup();
    const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0; // 2^53
    let exact = texts.iter().all(|t| t.chars().count() < MAX_TEXT_CHARS)
        && numbers.iter().all(|n| n.abs() < EXACT_INTEGERS)
        && raw.iter().all(|r| {
            !(r.eq_ignore_ascii_case("true") || r.eq_ignore_ascii_case("false"))
                || r == "true"
                || r == "false"
        });
    Some(Lookup {
        texts: keys,
        numbers: numbers.to_vec(),
        exact,
    })
}

/// Whether `table` has triggers that keep another table (which a write must never switch off).
pub fn keeps_an_index(table: &str) -> bool {
    table == SOURCE_TABLE
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup_of(raw: &[&str], numbers: &[f64], with_true: bool) -> Option<Lookup> {
        let raw: Vec<String> = raw.iter().map(|r| r.to_string()).collect();
        lookup(&raw, &raw, numbers, with_true, false, false)
    }

    #[test]
    fn a_lookup_is_exact_only_where_the_index_tells_the_matches_apart() {
        assert!(lookup_of(&["hold"], &[], false).unwrap().exact);
        assert!(lookup_of(&["7"], &[7.0], false).unwrap().exact);
        assert!(lookup_of(&["true"], &[], true).unwrap().exact);
        // The string "true" is kept as the boolean is; only `true` matches both.
        assert!(!lookup_of(&["TRUE"], &[], true).unwrap().exact);
        let long = "x".repeat(MAX_TEXT_CHARS);
        assert!(!lookup_of(&[&long], &[], false).unwrap().exact);
        assert!(lookup_of(&[&long[1..]], &[], false).unwrap().exact);
        assert!(
            !lookup_of(&["9007199254740992"], &[9_007_199_254_740_992.0], false)
                .unwrap()
                .exact
        );
        assert_eq!(lookup(&[], &[], &[], false, false, true), None);
        // `true` asked for a boolean finds the kept text once.
        assert_eq!(lookup_of(&["true"], &[], true).unwrap().texts, ["true"]);
    }
}
