//! The filter columns: each field users filter by (`prodops_core::filter_fields`,
//! `filter_indexed`) kept beside the record's text as a column of its own, `f_<field>`
//! ([`filter_column`]), which the filter indexes are on and filters compare (store/migrate.rs,
//! `filter_index_ddl`). The record's text stays the source of truth: a column holds what the
//! text holds, the field's string value, or NULL when the field is null or missing.
//!
//! On both databases they are plain columns that the writes of store/records.rs fill from the
//! text they already hold ([`values_of`]), with triggers behind them that set them from the
//! text, whoever wrote the row.
//!
//! - SQLite cannot add a stored generated column to an existing table, and an index on the
//!   field's expression made SQLite parse each record's JSON again for every index entry it
//!   wrote: two fifths of the writer's work on a bulk import of workers. Its triggers
//!   ([`sqlite_ddl`]) put right any row whose columns disagree with its text; a bulk insert
//!   that runs with triggers off fills every row itself or runs with them on.
//! - PostgreSQL had them as stored generated columns: each one parsed the record's JSON again,
//!   a quarter of the database's work on a bulk import (bench/README.md). Its trigger
//!   ([`postgres_ddl`]) likewise puts right any row whose columns disagree with its text,
//!   and is skipped, comparison and all, within a statement whose writer says it filled them
//!   all ([`trust_written`]: a bulk insert whose every row was read).

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::sql::{Dialect, FieldPath, filter_column};
use super::{SqlValue, StoreResult, Tx};

/// The filter fields of `table` whose columns a write fills itself: those of
/// `filter_indexed`.
pub fn written(table: &str) -> &'static [String] {
    &prodops_core::filter_fields::of_table(table).filter_indexed
}

/// The column names of [`written`], in its order.
pub fn written_columns(table: &str) -> Vec<String> {
    written(table).iter().map(|f| filter_column(f)).collect()
}

/// The setting through which a PostgreSQL transaction tells the filter-column triggers
/// ([`postgres_ddl`]) that the rows its next statements write carry their columns filled.
const TRUST_SETTING: &str = "prodops.filter_columns";

/// PostgreSQL: from now on in this transaction, the rows written carry their filter columns
/// filled from their text (`on`: the triggers leave them as written) or not (`off`, as a
/// transaction starts: the triggers set them). A writer that turns it on turns it off after
/// the statements it filled every row of, so that no later statement of the transaction
/// relies on it. Answers whether it was turned on; SQLite has nothing to turn (`false`).
pub fn trust_written(tx: &mut dyn Tx, on: bool) -> StoreResult<bool> {
    if tx.dialect() != Dialect::Postgres {
        return Ok(false);
    }
    tx.query(
        "SELECT set_config(?, ?, true)",
        &[
            SqlValue::Text(TRUST_SETTING.into()),
            SqlValue::Text(if on { "written" } else { "" }.into()),
        ],
    )?;
    Ok(on)
}

/// The value of each of `fields` in the record stored as `text`, in the order of `fields`: the
/// string a top-level member holds, `None` for null or missing. `None` as a whole when the text
/// is not a JSON object, or one of the fields holds something else than a string or null, or
/// is given twice: the database then works the columns out from the text (the triggers of
/// [`sqlite_ddl`]), by its own reading of such a text.
pub fn values_of<'t>(fields: &[String], text: &'t str) -> Option<Vec<Option<Cow<'t, str>>>> {
    if fields.is_empty() {
        return Some(Vec::new());
    }
    let mut found: Vec<Option<Cow<'t, str>>> = vec![None; fields.len()];
    let mut seen = vec![false; fields.len()];
    let mut de = serde_json::Deserializer::from_str(text);
    TopLevel {
        fields,
        found: &mut found,
        seen: &mut seen,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    Some(found)
}

struct TopLevel<'a, 't> {
    fields: &'a [String],
    found: &'a mut [Option<Cow<'t, str>>],
    seen: &'a mut [bool],
}

impl<'de> DeserializeSeed<'de> for TopLevel<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TopLevel<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            match self.fields.iter().position(|f| *f == key) {
                Some(i) => {
                    if std::mem::replace(&mut self.seen[i], true) {
                        return Err(serde::de::Error::custom("a field given twice"));
                    }
                    self.found[i] = map.next_value::<StringOrNull<'de>>()?.0;
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A JSON string (borrowed from the text where it has no escapes) or null; anything else is
/// an error.
struct StringOrNull<'t>(Option<Cow<'t, str>>);

impl<'de> serde::Deserialize<'de> for StringOrNull<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StringOrNull<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or null")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(StringOrNull(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
                Ok(StringOrNull(Some(Cow::Owned(s.to_string()))))
            }
            fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
                Ok(StringOrNull(Some(Cow::Owned(s))))
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(StringOrNull(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A trigger's reading of filter field `f` from the new row's text, as filters read it
/// (`Dialect::text_expr`).
fn new_row_text(dialect: Dialect, f: &str) -> String {
    let path = FieldPath::parse(f).expect("schema field names are valid paths");
    dialect.text_expr_of("NEW.data", &path)
}

/// SQLite: the triggers that set the filter columns of `t` from the text of a row inserted or
/// updated with columns that disagree with it (a write that could not read them, or any other
/// statement). A write that filled them right costs the comparison alone.
pub fn sqlite_ddl(t: &str) -> Vec<String> {
    let mut ddl: Vec<String> = ["insert", "update"]
        .iter()
        .map(|name| format!("DROP TRIGGER IF EXISTS tr_{t}_filter_columns_{name}"))
        .collect();
    let fields = written(t);
    if fields.is_empty() {
        return ddl;
    }
    let from_text = |f: &str| new_row_text(Dialect::Sqlite, f);
    let differs = fields
        .iter()
        .map(|f| format!("NEW.{} IS NOT {}", filter_column(f), from_text(f)))
        .collect::<Vec<_>>()
        .join(" OR ");
    let set = fields
        .iter()
        .map(|f| format!("{} = {}", filter_column(f), from_text(f)))
        .collect::<Vec<_>>()
        .join(", ");
    let fix = format!("UPDATE {t} SET {set} WHERE rowid = NEW.rowid;");
    ddl.push(format!(
        "CREATE TRIGGER tr_{t}_filter_columns_insert AFTER INSERT ON {t} WHEN {differs} BEGIN {fix} END"
    ));
    ddl.push(format!(
        "CREATE TRIGGER tr_{t}_filter_columns_update AFTER UPDATE OF data ON {t} WHEN {differs} BEGIN {fix} END"
    ));
    ddl
}

/// PostgreSQL: the trigger that sets the filter columns of `t` from the text of a row inserted
/// or updated with columns that disagree with it (a write that could not read them, or any
/// other statement), as the stored generated columns it replaces did, unless the writing
/// transaction said it filled them ([`trust_written`]). A write that filled them right costs
/// the comparison alone, which reads the text as the generated columns did; a trusted bulk
/// batch not even that. A row-level `BEFORE` trigger, so the statement-level triggers that
/// read the columns (store/value_counts.rs) see them set.
pub fn postgres_ddl(t: &str) -> Vec<String> {
    let function = format!("prodops_filter_columns_{t}");
    let mut ddl = vec![format!(
        "DROP TRIGGER IF EXISTS tr_{t}_filter_columns ON {t}"
    )];
    let fields = written(t);
    if fields.is_empty() {
        ddl.push(format!("DROP FUNCTION IF EXISTS {function}()"));
        return ddl;
    }
    let from_text = |f: &str| new_row_text(Dialect::Postgres, f);
    let set: String = fields
        .iter()
        .map(|f| format!("NEW.{} := {}; ", filter_column(f), from_text(f)))
        .collect();
    let differs = fields
        .iter()
        .map(|f| format!("NEW.{} IS DISTINCT FROM {}", filter_column(f), from_text(f)))
        .collect::<Vec<_>>()
        .join(" OR ");
    ddl.push(format!(
        "CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $body$ \
         BEGIN {set}RETURN NEW; END $body$"
    ));
    ddl.push(format!(
        "CREATE TRIGGER tr_{t}_filter_columns BEFORE INSERT OR UPDATE ON {t} FOR EACH ROW \
         WHEN (current_setting('{TRUST_SETTING}', true) IS DISTINCT FROM 'written' AND ({differs})) \
         EXECUTE FUNCTION {function}()"
    ));
    ddl
}

/// Adds the filter columns `t` lacks (a table made before they existed, or a field that
/// became filterable) and fills them from the rows' text, in the set-up's transaction; on
/// PostgreSQL, also turns the stored generated columns of earlier versions into plain ones
/// (their values stay). Runs after the table is created and before its triggers and
/// indexes, which name them.
pub fn add_missing(tx: &mut dyn Tx, t: &str) -> StoreResult<()> {
    let dialect = tx.dialect();
    let fields = written(t);
    if fields.is_empty() {
        return Ok(());
    }
    // Each column there is, and whether the database generates it.
    let columns_sql = match dialect {
        Dialect::Sqlite => "SELECT name, 0 FROM pragma_table_info(?)",
        Dialect::Postgres => {
            "SELECT CAST(column_name AS TEXT), CASE WHEN is_generated = 'ALWAYS' THEN 1 ELSE 0 END \
             FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ?"
        }
    };
    let present: Vec<(String, bool)> = tx
        .query(columns_sql, &[SqlValue::Text(t.to_string())])?
        .into_iter()
        .filter_map(|row| {
            let mut row = row.into_iter();
            let name = row.next()?.into_string()?;
            Some((name, row.next()?.as_i64() == Some(1)))
        })
        .collect();
    let mut missing = Vec::new();
    for f in fields {
        let column = filter_column(f);
        match present.iter().find(|(name, _)| *name == column) {
            None => missing.push(f),
            Some((_, true)) => {
                tx.execute(
                    &format!("ALTER TABLE {t} ALTER COLUMN {column} DROP EXPRESSION"),
                    &[],
                )?;
            }
            Some((_, false)) => {}
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    for f in &missing {
        tx.execute(
            &format!("ALTER TABLE {t} ADD COLUMN {} TEXT", filter_column(f)),
            &[],
        )?;
    }
    let set = missing
        .iter()
        .map(|f| {
            let path = FieldPath::parse(f).expect("schema field names are valid paths");
            format!("{} = {}", filter_column(f), dialect.text_expr(&path))
        })
        .collect::<Vec<_>>()
        .join(", ");
    tx.execute(&format!("UPDATE {t} SET {set}"), &[])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn reads_strings_and_nulls_of_the_named_top_level_fields() {
        let f = fields(&["status", "teamId", "customerIdentifier"]);
        let text = r#"{"name":"A","status":"active","nested":{"status":"x"},"teamId":null,"list":[1,"b"]}"#;
        let got = values_of(&f, text).unwrap();
        assert_eq!(got, vec![Some(Cow::Borrowed("active")), None, None]);
        assert!(matches!(got[0], Some(Cow::Borrowed(_))));
    }

    #[test]
    fn decodes_escapes_as_the_database_would() {
        let f = fields(&["identifier"]);
        let got = values_of(&f, r#"{"identifier":"a\"b\u00e9\n"}"#).unwrap();
        assert_eq!(got, vec![Some(Cow::Owned::<str>("a\"bé\n".into()))]);
    }

    #[test]
    fn leaves_to_the_database_what_is_not_a_string_or_null_or_comes_twice() {
        let f = fields(&["status"]);
        assert_eq!(values_of(&f, r#"{"status":5}"#), None);
        assert_eq!(values_of(&f, r#"{"status":["a"]}"#), None);
        assert_eq!(values_of(&f, r#"{"status":"a","status":"b"}"#), None);
        assert_eq!(values_of(&f, r#"["status"]"#), None);
        assert_eq!(values_of(&f, r#"{"status":"a"} x"#), None);
        assert_eq!(values_of(&f, "not json"), None);
    }

    #[test]
    fn no_fields_need_no_reading() {
        assert_eq!(values_of(&[], "anything"), Some(Vec::new()));
    }
}
