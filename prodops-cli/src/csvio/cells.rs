//! Cells: a CSV cell read into the JSON sent for it ([`read_cell`]; dotted fields nest through
//! [`set_path`]), JSON strings written without needless escapes ([`push_json_string`]), and a
//! record's JSON value written as a cell's text ([`cell_text`]).

use prodops_core::custom_property::DataType;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::spec::CellKind;

// ---- cells to JSON ------------------------------------------------------------------------------

pub fn parse_bool(raw: &str) -> Option<bool> {
    let t = raw.trim();
    let is = |words: [&str; 3]| words.iter().any(|w| t.eq_ignore_ascii_case(w));
    if is(["true", "1", "yes"]) {
        Some(true)
    } else if is(["false", "0", "no"]) {
        Some(false)
    } else {
        None
    }
}

/// One cell, read: what its column's field gets.
pub(super) enum Cell<'a> {
    /// Left out of the record.
    Skip,
    Null,
    /// A string, as it goes into the JSON.
    Str(&'a str),
    Uuid(Uuid),
    Bool(bool),
    /// Anything else (a number, an array).
    Json(Value),
}

impl Cell<'_> {
    pub(super) fn into_value(self) -> Option<Value> {
        Some(match self {
            Cell::Skip => return None,
            Cell::Null => Value::Null,
            Cell::Str(s) => Value::String(s.to_string()),
            Cell::Uuid(id) => Value::String(id.to_string()),
            Cell::Bool(b) => Value::Bool(b),
            Cell::Json(v) => v,
        })
    }

    /// Appends the cell's JSON (not for [`Cell::Skip`]).
    pub(super) fn write_json(&self, out: &mut String) {
        match self {
            Cell::Skip | Cell::Null => out.push_str("null"),
            Cell::Str(s) => push_json_string(out, s),
            Cell::Uuid(id) => {
                out.push('"');
                out.push_str(id.hyphenated().encode_lower(&mut Uuid::encode_buffer()));
                out.push('"');
            }
            Cell::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Cell::Json(v) => out.push_str(&v.to_string()),
        }
    }
}

/// Reads one cell of a column of `kind`.
pub(super) fn read_cell<'a>(kind: CellKind, name: &str, raw: &'a str) -> Result<Cell<'a>, String> {
    // The server refuses NUL in any text (PostgreSQL cannot store it), and a key holding one
    // would make the lookup of a whole batch's keys fail: the row is refused here.
    if raw.contains('\0') && kind != CellKind::ReadOnly {
        return Err(format!(
            "{name}: text must not contain the NUL character (U+0000)"
        ));
    }
    let t = raw.trim();
    let uuid = |t: &str| Uuid::parse_str(t).map_err(|_| format!("{name}: {t:?} is not a UUID"));
    Ok(match kind {
        CellKind::ReadOnly => Cell::Skip,
        CellKind::Id => {
            if t.is_empty() {
                Cell::Skip
            } else {
                Cell::Uuid(uuid(t)?)
            }
        }
        CellKind::Text => Cell::Str(raw),
        CellKind::NullableText => {
            if t.is_empty() {
                Cell::Null
            } else {
                Cell::Str(raw)
            }
        }
        CellKind::NullableUuid => {
            if t.is_empty() {
                Cell::Null
            } else {
                Cell::Uuid(uuid(t)?)
            }
        }
        CellKind::OptionalText => {
            if t.is_empty() {
                Cell::Skip
            } else {
                Cell::Str(t)
            }
        }
        CellKind::Bool => {
            if t.is_empty() {
                return Ok(Cell::Skip);
            }
            match parse_bool(t) {
                Some(b) => Cell::Bool(b),
                None => return Err(format!("{name}: {raw:?} is not true or false")),
            }
        }
        CellKind::Int => {
            if t.is_empty() {
                return Ok(Cell::Skip);
            }
            match t.parse::<i64>() {
                Ok(n) => Cell::Json(json!(n)),
                Err(_) => return Err(format!("{name}: {raw:?} is not a whole number")),
            }
        }
        CellKind::Number => {
            if t.is_empty() {
                return Ok(Cell::Skip);
            }
            match number(t) {
                Some(n) => Cell::Json(n),
                None => return Err(format!("{name}: {raw:?} is not a number")),
            }
        }
        CellKind::Time => {
            if t.is_empty() {
                Cell::Null
            } else {
                Cell::Str(t)
            }
        }
        CellKind::JsonArray => {
            if t.is_empty() {
                return Ok(Cell::Skip);
            }
            match serde_json::from_str::<Value>(t) {
                Ok(v @ Value::Array(_)) => Cell::Json(v),
                _ => return Err(format!("{name}: {raw:?} is not a JSON array")),
            }
        }
        CellKind::Property(dt) => {
            if t.is_empty() {
                return Ok(Cell::Null);
            }
            match dt {
                DataType::Number => match number(t) {
                    Some(n) => Cell::Json(n),
                    None => return Err(format!("{name}: {raw:?} is not a number")),
                },
                DataType::Boolean => match parse_bool(t) {
                    Some(b) => Cell::Bool(b),
                    None => return Err(format!("{name}: {raw:?} is not true or false")),
                },
                DataType::Multiselect => {
                    if t.starts_with('[') {
                        match serde_json::from_str::<Value>(t) {
                            Ok(v @ Value::Array(_)) => Cell::Json(v),
                            _ => {
                                return Err(format!(
                                    "{name}: {raw:?} is not a JSON array of options"
                                ));
                            }
                        }
                    } else {
                        Cell::Json(json!([t]))
                    }
                }
                DataType::Text => Cell::Str(raw),
                DataType::Date | DataType::Select => Cell::Str(t),
            }
        }
    })
}

fn number(t: &str) -> Option<Value> {
    if let Ok(n) = t.parse::<i64>() {
        return Some(json!(n));
    }
    t.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number))
}

/// Sets a dotted field in a nested object.
pub(super) fn set_path(out: &mut Map<String, Value>, name: &str, value: Value) {
    match name.split_once('.') {
        None => {
            out.insert(name.to_string(), value);
        }
        Some((head, rest)) => {
            let inner = out
                .entry(head.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !inner.is_object() {
                *inner = Value::Object(Map::new());
            }
            if let Value::Object(m) = inner {
                set_path(m, rest, value);
            }
        }
    }
}

/// Reads a dotted field of a record.
pub fn get_path<'a>(record: &'a Value, name: &str) -> Option<&'a Value> {
    let mut v = record;
    for part in name.split('.') {
        v = v.get(part)?;
    }
    Some(v)
}

// ---- JSON strings -------------------------------------------------------------------------------

/// Appends `value` as a JSON string (escaped only when it needs it: this runs for every
/// field of every row).
pub(super) fn push_json_string(text: &mut String, value: &str) {
    if needs_escape(value.as_bytes()) {
        text.push_str(&Value::String(value.to_string()).to_string());
    } else {
        text.push('"');
        text.push_str(value);
        text.push('"');
    }
}

/// Whether `s` holds a byte a JSON string escapes (`"`, `\` or a control character), looked
/// for eight bytes at a time: each test below is non-zero exactly when some byte of the word
/// matches ("determine if a word has a byte less than n", Bit Twiddling Hacks).
pub(super) fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = ONES * 0x80;
    let less_than = |word: u64, n: u8| word.wrapping_sub(ONES * n as u64) & !word & HIGH;
    let mut words = s.chunks_exact(8);
    for word in &mut words {
        let word = u64::from_ne_bytes(word.try_into().expect("eight bytes"));
        let quote = less_than(word ^ (ONES * b'"' as u64), 1);
        let backslash = less_than(word ^ (ONES * b'\\' as u64), 1);
        if less_than(word, 0x20) | quote | backslash != 0 {
            return true;
        }
    }
    words
        .remainder()
        .iter()
        .any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

// ---- JSON to cells ------------------------------------------------------------------------------

/// The text of one cell of an exported record.
pub fn cell_text(kind: CellKind, value: Option<&Value>, buf: &mut String) {
    buf.clear();
    let _ = kind;
    match value {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) => buf.push_str(s),
        Some(Value::Bool(b)) => buf.push_str(if *b { "true" } else { "false" }),
        Some(Value::Number(n)) => {
            use std::fmt::Write as _;
            let _ = write!(buf, "{n}");
        }
        Some(v) => buf.push_str(&v.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn needs_escape_finds_every_byte_at_every_place() {
        for b in 0..=255u8 {
            for at in 0..17 {
                let mut s = vec![b'a'; 17];
                s[at] = b;
                let escaped = b < 0x20 || b == b'"' || b == b'\\';
                assert_eq!(needs_escape(&s), escaped, "byte {b:#x} at {at}");
            }
        }
    }

    proptest! {
        #[test]
        fn needs_escape_finds_exactly_what_json_escapes(
            s in prop_oneof!["(?s).{0,40}", r#"[a-z"\\\x00-\x1f\x7f]{0,24}"#],
        ) {
            let slow = s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
            prop_assert_eq!(needs_escape(s.as_bytes()), slow);
            let mut text = String::new();
            push_json_string(&mut text, &s);
            prop_assert_eq!(text, Value::String(s.clone()).to_string());
        }
    }
}
