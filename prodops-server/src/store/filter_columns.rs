//! The filter columns: each field users filter by (`prodops_core::filter_fields`,
//! `filter_indexed`) kept beside the record's text as a column of its own, `f_<field>`
//! ([`filter_column`]), which the filter indexes are on and filters compare (store/migrate.rs,
//! `filter_index_ddl`). The record's text stays the source of truth: a column holds what the
//! text holds, the field's string value, or NULL when the field is null or missing.
//!
//! PostgreSQL computes them itself (stored generated columns). SQLite cannot add a stored
//! generated column to an existing table, and an index on the field's expression made SQLite
//! parse each record's JSON again for every index entry it wrote: two fifths of the writer's
//! work on a bulk import of workers. So on SQLite they are plain columns that the writes of
//! store/records.rs fill from the text they already hold ([`values_of`]), with triggers behind
//! them ([`sqlite_ddl`]) that put right any row whose columns disagree with its text, whoever
//! wrote it; a bulk insert that runs with triggers off fills every row itself or runs with them
//! on.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};

use super::sql::{Dialect, filter_column};
use super::{SqlValue, StoreResult, Tx};

/// The filter fields of `table` whose columns a write fills itself: those of
/// `filter_indexed` on SQLite, none on PostgreSQL (generated there).
pub fn written(dialect: Dialect, table: &str) -> &'static [String] {
    match dialect {
        Dialect::Sqlite => &prodops_core::filter_fields::of_table(table).filter_indexed,
        Dialect::Postgres => &[],
    }
}

/// The column names of [`written`], in its order.
pub fn written_columns(dialect: Dialect, table: &str) -> Vec<String> {
    written(dialect, table)
        .iter()
        .map(|f| filter_column(f))
        .collect()
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

/// SQLite: the triggers that set the filter columns of `t` from the text of a row inserted or
/// updated with columns that disagree with it (a write that could not read them, or any other
/// statement). A write that filled them right costs the comparison alone.
pub fn sqlite_ddl(t: &str) -> Vec<String> {
    let mut ddl: Vec<String> = ["insert", "update"]
        .iter()
        .map(|name| format!("DROP TRIGGER IF EXISTS tr_{t}_filter_columns_{name}"))
        .collect();
    let fields = written(Dialect::Sqlite, t);
    if fields.is_empty() {
        return ddl;
    }
    let from_text = |f: &str| format!("json_extract(NEW.data, '$.{f}')");
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

/// SQLite: adds the filter columns `t` lacks (a table made before they existed, or a field
/// that became filterable) and fills them from the rows' text, in the set-up's transaction.
/// Runs after the table is created and before its triggers and indexes, which name them.
pub fn add_missing(tx: &mut dyn Tx, t: &str) -> StoreResult<()> {
    if tx.dialect() != Dialect::Sqlite {
        return Ok(());
    }
    let fields = written(Dialect::Sqlite, t);
    if fields.is_empty() {
        return Ok(());
    }
    let present: Vec<String> = tx
        .query(
            "SELECT name FROM pragma_table_info(?)",
            &[SqlValue::Text(t.to_string())],
        )?
        .into_iter()
        .filter_map(|row| row.into_iter().next().and_then(SqlValue::into_string))
        .collect();
    let missing: Vec<&String> = fields
        .iter()
        .filter(|f| !present.contains(&filter_column(f)))
        .collect();
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
        .map(|f| format!("{} = json_extract(data, '$.{f}')", filter_column(f)))
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
