//! One CSV import/export mechanism for every resource that has one (decisions.md section 8).
//!
//! A resource describes its CSV in a [`Spec`]: the columns in export order with the kind of
//! each cell, the field `--key` may match by, whether rows form a tree through `parentId`, and
//! the placeholders core's rules need to check a partial row. The mechanism does the rest:
//!
//! - Import streams the file: a reader thread parses and checks every row with core's rules
//!   (the server's own types and checks) and groups rows into batches. In a tree, a row waits
//!   until its parent's row has been placed (parents before children, whatever the file's
//!   order); a batch records the last earlier batch holding one of its parents and is sent only
//!   once every batch up to that one is written. Batches go through `PUT /r/bulk`, several in
//!   flight. A batch the server rejects is cut down to its good rows (the server names each
//!   bad record's `index`) and sent again, so good rows are written and each bad row is
//!   reported with its line number.
//! - Export writes records as they stream in (the resource supplies them in order).

pub mod deliverable;
pub mod worker;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Mutex;

use clap::{Arg, ArgAction, ArgMatches, Command};
use futures::StreamExt;
use indicatif::{ProgressBar, ProgressStyle};
use prodops_client::{Error, Query};
use prodops_core::custom_property::DataType;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::fail::{CmdResult, Fail};
use crate::run::Ctx;

// ---- the description of a resource's CSV ----------------------------------------------------

/// How a cell is read and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The record id: a UUID; empty means "no id".
    Id,
    /// Text; an empty cell is the empty string.
    Text,
    /// Text; an empty cell is null.
    NullableText,
    /// A UUID; an empty cell is null.
    NullableUuid,
    /// Text that an empty cell leaves out (defaults on create, unchanged on update): enums.
    OptionalText,
    /// `true/false/1/0/yes/no`; an empty cell is left out.
    Bool,
    /// A whole number; an empty cell is left out.
    Int,
    /// A number; an empty cell is left out.
    Number,
    /// A date-time (or date) kept as text; an empty cell is null.
    Time,
    /// A JSON array; an empty cell is left out.
    JsonArray,
    /// A custom property value of that type; an empty cell clears the property (null).
    Property(DataType),
    /// Written on export, read past on import (server-managed).
    ReadOnly,
}

/// One column: its header (the API field name, nested fields dotted) and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: Kind,
}

impl Column {
    pub fn new(name: impl Into<String>, kind: Kind) -> Column {
        Column {
            name: name.into(),
            kind,
        }
    }
}

/// A resource's CSV.
pub struct Spec {
    /// The resource path (`worker`, `deliverable`).
    pub path: &'static str,
    /// What a row is, for messages (`worker`).
    pub noun: &'static str,
    /// Export columns, in order; an import accepts any subset.
    pub columns: Vec<Column>,
    /// Further headers an import reads past.
    pub ignored: &'static [&'static str],
    /// The field `--key` matches rows without an id by.
    pub key: Option<&'static str>,
    /// Rows form a tree through `parentId`: parents are written before children.
    pub tree: bool,
    /// Placeholders for required fields an update may leave out, so that core can check the
    /// rest of a partial row (a row that turns out to create a record without them is refused
    /// by the server and reported like any other).
    pub update_placeholders: &'static [(&'static str, &'static str)],
    /// The field a file needs (besides `id` or `--key`) to create records.
    pub create_needs: &'static str,
}

impl Spec {
    fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    pub fn headers(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.name.as_str()).collect()
    }
}

// ---- command line -----------------------------------------------------------------------------

/// `import FILE.csv [--key F] [--dry-run] [--batch-size N] [--concurrency N]`, by default
/// 5,000 rows per batch and 4 batches in flight.
pub fn import_command(
    path: &'static str,
    keys: &'static [&'static str],
    long_about: String,
    example: &'static str,
) -> Command {
    import_command_with(path, keys, long_about, example, ("5000", "4"))
}

/// [`import_command`] with other defaults for `--batch-size` and `--concurrency`.
pub fn import_command_with(
    path: &'static str,
    keys: &'static [&'static str],
    long_about: String,
    example: &'static str,
    (batch_size, concurrency): (&'static str, &'static str),
) -> Command {
    let mut cmd = Command::new("import")
        .about(format!(
            "Imports {path} records from CSV through PUT /{path}/bulk (upsert by id, or by --key)"
        ))
        .long_about(long_about)
        .arg(
            Arg::new("file")
                .required(true)
                .value_name("FILE.csv")
                .help("The CSV file (- for stdin)"),
        );
    if !keys.is_empty() {
        cmd = cmd.arg(
            Arg::new("key")
                .long("key")
                .value_name("FIELD")
                .value_parser(keys.to_vec())
                .help("Match rows without an id to existing records by this field"),
        );
    }
    cmd.arg(
        Arg::new("dry-run")
            .long("dry-run")
            .action(ArgAction::SetTrue)
            .help("Check every row, write nothing"),
    )
    .arg(
        Arg::new("batch-size")
            .long("batch-size")
            .value_name("N")
            .default_value(batch_size)
            .value_parser(clap::value_parser!(u64).range(1..=10_000))
            .help(format!("Rows per PUT /{path}/bulk")),
    )
    .arg(
        Arg::new("concurrency")
            .long("concurrency")
            .value_name("N")
            .default_value(concurrency)
            .value_parser(clap::value_parser!(u64).range(1..=32))
            .help("Batches in flight"),
    )
    .after_help(format!("Example:\n  {example}"))
}

/// The flags every export shares: `-o FILE`, `--page-size N`.
pub fn export_args(cmd: Command) -> Command {
    cmd.arg(
        Arg::new("out")
            .short('o')
            .long("out")
            .value_name("FILE")
            .help("Write to FILE instead of stdout"),
    )
    .arg(
        Arg::new("page-size")
            .long("page-size")
            .value_name("N")
            .default_value("10000")
            .value_parser(clap::value_parser!(u64).range(1..=10_000))
            .help("Records per request"),
    )
}

pub fn progress(len: u64, template: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    Some(pb)
}

fn report(pb: &Option<ProgressBar>, line: String) {
    match pb {
        Some(pb) => pb.println(line),
        None => eprintln!("{line}"),
    }
}

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
enum Cell<'a> {
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
    fn into_value(self) -> Option<Value> {
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
    fn write_json(&self, out: &mut String) {
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
fn read_cell<'a>(kind: Kind, name: &str, raw: &'a str) -> Result<Cell<'a>, String> {
    let t = raw.trim();
    let uuid = |t: &str| Uuid::parse_str(t).map_err(|_| format!("{name}: {t:?} is not a UUID"));
    Ok(match kind {
        Kind::ReadOnly => Cell::Skip,
        Kind::Id => {
            if t.is_empty() {
                Cell::Skip
            } else {
                Cell::Uuid(uuid(t)?)
            }
        }
        Kind::Text => Cell::Str(raw),
        Kind::NullableText => {
            if t.is_empty() {
                Cell::Null
            } else {
                Cell::Str(raw)
            }
        }
        Kind::NullableUuid => {
            if t.is_empty() {
                Cell::Null
            } else {
                Cell::Uuid(uuid(t)?)
            }
        }
        Kind::OptionalText => {
            if t.is_empty() {
                Cell::Skip
            } else {
                Cell::Str(t)
            }
        }
        Kind::Bool => {
            if t.is_empty() {
                return Ok(Cell::Skip);
            }
            match parse_bool(t) {
                Some(b) => Cell::Bool(b),
                None => return Err(format!("{name}: {raw:?} is not true or false")),
            }
        }
        Kind::Int => {
            if t.is_empty() {
                return Ok(Cell::Skip);
            }
            match t.parse::<i64>() {
                Ok(n) => Cell::Json(json!(n)),
                Err(_) => return Err(format!("{name}: {raw:?} is not a whole number")),
            }
        }
        Kind::Number => {
            if t.is_empty() {
                return Ok(Cell::Skip);
            }
            match number(t) {
                Some(n) => Cell::Json(n),
                None => return Err(format!("{name}: {raw:?} is not a number")),
            }
        }
        Kind::Time => {
            if t.is_empty() {
                Cell::Null
            } else {
                Cell::Str(t)
            }
        }
        Kind::JsonArray => {
            if t.is_empty() {
                return Ok(Cell::Skip);
            }
            match serde_json::from_str::<Value>(t) {
                Ok(v @ Value::Array(_)) => Cell::Json(v),
                _ => return Err(format!("{name}: {raw:?} is not a JSON array")),
            }
        }
        Kind::Property(dt) => {
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
fn set_path(out: &mut Map<String, Value>, name: &str, value: Value) {
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

/// Turns a CSV row into the JSON sent for it, checked with core's rules for the resource.
#[cfg(test)]
pub fn row_record(
    spec: &Spec,
    cols: &[Option<&Column>],
    record: &csv::StringRecord,
    key_mode: bool,
) -> Result<Map<String, Value>, Vec<String>> {
    let mut buffers = RowBuffers::default();
    row_json(spec, cols, record, 0, key_mode, &mut buffers)
        .map(|_| serde_json::from_str(&buffers.json).expect("the row's JSON reads back"))
}

/// The texts [`row_json`] writes, kept from row to row (no allocation per row).
#[derive(Default)]
struct RowBuffers {
    /// The row's JSON object, as sent.
    json: String,
    /// The record as the server would complete it, for core's check.
    candidate: String,
}

/// The top-level fields a row gives, as the check needs them.
#[derive(Default)]
struct Given<'a> {
    names: Vec<&'a str>,
    id: Option<Uuid>,
    parent: Option<Uuid>,
    /// The `--key` field's text, when it is a string.
    key: Option<&'a str>,
}

impl Given<'_> {
    fn has(&self, name: &str) -> bool {
        self.names.contains(&name)
    }
}

/// [`row_record`] for line `line`: the row's JSON in `buffers.json`, and what it is matched and
/// ordered by. A file of top-level fields only (workers) is written straight to JSON; one with
/// dotted (nested) columns is gathered into a map first.
fn row_json(
    spec: &Spec,
    cols: &[Option<&Column>],
    record: &csv::StringRecord,
    line: u64,
    key_mode: bool,
    buffers: &mut RowBuffers,
) -> Result<Checked, Vec<String>> {
    let mut errors = Vec::new();
    let text = &mut buffers.json;
    text.clear();
    let mut map = Map::new();
    let given = if cols.iter().flatten().any(|c| c.name.contains('.')) {
        gather_by_map(spec, cols, record, &mut map, &mut errors, text)
    } else {
        gather_flat(spec, cols, record, &mut errors, text)
    };
    if spec.tree
        && let (Some(id), Some(parent)) = (given.id, given.parent)
        && id == parent
    {
        errors.push(format!(
            "parentId: a {} cannot be its own parent",
            spec.noun
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Core's rules, on the record as the server would complete it: the row's JSON with the
    // server's fields (and the placeholders of an update) added, read straight into the
    // resource's type. Only a row that does not read as the resource is checked again as a
    // `Value`, for the messages that name the field.
    let key = match spec.key {
        Some(_) if key_mode => given.key.map(str::trim).filter(|k| !k.is_empty()),
        _ => None,
    };
    let update = given.has("id") || key.is_some();
    let kind = prodops_core::registry::by_path(spec.path).expect("a registered resource");
    let server_fields = ["organizationId", "createdAt", "updatedAt"];
    let checked = if server_fields.iter().any(|f| given.has(f)) {
        None
    } else {
        candidate_text(spec, &given, text, update, &mut buffers.candidate);
        kind.validate_new_json(&buffers.candidate)
    };
    let checked = checked.unwrap_or_else(|| {
        let out: Map<String, Value> =
            serde_json::from_str(text).expect("the row's JSON reads back");
        kind.check(Value::Object(candidate_map(spec, &out, update)), None)
            .map(|_| ())
    });
    match checked {
        Ok(()) => Ok(Checked {
            line,
            id: given.id,
            parent: if spec.tree { given.parent } else { None },
            key: if given.id.is_none() {
                key.map(str::to_string)
            } else {
                None
            },
        }),
        Err(violations) => Err(violations
            .into_iter()
            .map(|v| match v.field {
                Some(f) => format!("{f}: {}", v.message),
                None => v.message,
            })
            .collect()),
    }
}

/// Gathers a row's fields in a map (dotted columns nest), then writes its JSON to `text`.
fn gather_by_map<'m>(
    spec: &Spec,
    cols: &[Option<&Column>],
    record: &csv::StringRecord,
    map: &'m mut Map<String, Value>,
    errors: &mut Vec<String>,
    text: &mut String,
) -> Given<'m> {
    for (col, raw) in cols.iter().zip(record.iter()) {
        let Some(col) = col else { continue };
        match read_cell(col.kind, &col.name, raw) {
            Ok(cell) => {
                if let Some(v) = cell.into_value() {
                    set_path(map, &col.name, v)
                }
            }
            Err(e) => errors.push(e),
        }
    }
    // A nested field whose cells are all empty (`progress.*` of a node without progress) is
    // left out rather than written as an object of nulls; `data` keeps its nulls (they clear
    // custom property values).
    map.retain(|k, v| {
        k == "data"
            || !v
                .as_object()
                .is_some_and(|o| o.values().all(Value::is_null))
    });
    text.push_str(&serde_json::to_string(&*map).expect("a map of JSON values serializes"));
    let map: &'m Map<String, Value> = map;
    let uuid = |name: &str| {
        map.get(name)
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
    };
    Given {
        names: map.keys().map(String::as_str).collect(),
        id: uuid("id"),
        parent: uuid("parentId"),
        key: spec.key.and_then(|k| map.get(k)).and_then(Value::as_str),
    }
}

/// Writes a row of top-level fields only straight to JSON in `text`, in column order (the
/// order [`gather_by_map`] gives them).
fn gather_flat<'a>(
    spec: &Spec,
    cols: &[Option<&'a Column>],
    record: &'a csv::StringRecord,
    errors: &mut Vec<String>,
    text: &mut String,
) -> Given<'a> {
    let mut given = Given::default();
    text.push('{');
    for (col, raw) in cols.iter().zip(record.iter()) {
        let Some(col) = col else { continue };
        let cell = match read_cell(col.kind, &col.name, raw) {
            Ok(Cell::Skip) => continue,
            Ok(cell) => cell,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if text.len() > 1 {
            text.push(',');
        }
        // Column names are the spec's field names: nothing in them to escape.
        debug_assert!(!needs_escape(col.name.as_bytes()));
        text.push('"');
        text.push_str(&col.name);
        text.push_str("\":");
        cell.write_json(text);
        let name = col.name.as_str();
        given.names.push(name);
        match (&cell, name) {
            (Cell::Uuid(id), "id") => given.id = Some(*id),
            (Cell::Uuid(id), "parentId") => given.parent = Some(*id),
            (Cell::Str(s), _) if Some(name) == spec.key => given.key = Some(s),
            _ => {}
        }
    }
    text.push('}');
    given
}

const EPOCH: &str = "1970-01-01T00:00:00Z";

/// The record as the server would complete it, for core's check (the reference form).
fn candidate_map(spec: &Spec, out: &Map<String, Value>, update: bool) -> Map<String, Value> {
    let mut candidate = out.clone();
    candidate
        .entry("id")
        .or_insert_with(|| json!(Uuid::nil().to_string()));
    candidate.insert("organizationId".into(), json!(Uuid::nil().to_string()));
    candidate.insert("createdAt".into(), json!(EPOCH));
    candidate.insert("updatedAt".into(), json!(EPOCH));
    if update {
        for (field, placeholder) in spec.update_placeholders {
            candidate
                .entry(*field)
                .or_insert_with(|| json!(placeholder));
        }
    }
    candidate
}

/// [`candidate_map`] as JSON text in `text`, from the row's JSON (which holds none of the
/// server's fields): the added fields go after the row's own.
fn candidate_text(spec: &Spec, given: &Given<'_>, json: &str, update: bool, text: &mut String) {
    text.clear();
    text.push_str(&json[..json.len() - 1]);
    let mut add = |key: &str, value: &str| {
        if text.len() > 1 {
            text.push(',');
        }
        text.push('"');
        text.push_str(key);
        text.push_str("\":");
        push_json_string(text, value);
    };
    const NIL: &str = "00000000-0000-0000-0000-000000000000";
    if !given.has("id") {
        add("id", NIL);
    }
    add("organizationId", NIL);
    add("createdAt", EPOCH);
    add("updatedAt", EPOCH);
    if update {
        for (field, placeholder) in spec.update_placeholders {
            if !given.has(field) {
                add(field, placeholder);
            }
        }
    }
    text.push('}');
}

/// Appends `value` as a JSON string (escaped only when it needs it: this runs for every
/// field of every row).
fn push_json_string(text: &mut String, value: &str) {
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
fn needs_escape(s: &[u8]) -> bool {
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

// ---- import -------------------------------------------------------------------------------------

/// A checked row, not placed yet: its line, and what it is matched and ordered by. Its JSON is
/// in the reader's [`RowBuffers`] until it goes into a batch's body.
struct Checked {
    line: u64,
    id: Option<Uuid>,
    /// Its `parentId`, for a tree's rows.
    parent: Option<Uuid>,
    /// The `--key` field's value (trimmed, not empty), in key mode, for a row without an id.
    key: Option<String>,
}

/// A row placed in a batch: its line and where its JSON object lies in the batch's body.
struct Row {
    line: u64,
    json: std::ops::Range<usize>,
    /// Its id, parent and key where they are used once it is placed (a tree's rows, rows with a
    /// key); `None` for the rest, which keeps a batch of 10,000 workers' rows at 320 KB.
    links: Option<Box<Links>>,
}

/// What a placed row is matched and ordered by (see [`Checked`]).
struct Links {
    id: Option<Uuid>,
    parent: Option<Uuid>,
    key: Option<String>,
}

impl Row {
    fn id(&self) -> Option<Uuid> {
        self.links.as_ref().and_then(|l| l.id)
    }

    fn parent(&self) -> Option<Uuid> {
        self.links.as_ref().and_then(|l| l.parent)
    }

    fn key(&self) -> Option<&str> {
        self.links.as_ref().and_then(|l| l.key.as_deref())
    }
}

/// A batch of rows ready to send, and the rows of its stretch of the file already rejected.
struct Batch {
    index: usize,
    /// Every batch up to this one must be written before this one is sent.
    after: Option<usize>,
    /// The body sent for the batch: the JSON array of its rows' objects, written as they are
    /// placed (each row's text is held once, here, and sent without a copy).
    body: Vec<u8>,
    rows: Vec<Row>,
    /// Some row has no id.
    without_id: bool,
    /// Some row has neither an id nor a key: it creates a record.
    creates: bool,
    rejected: Vec<(u64, String)>,
}

impl Batch {
    fn new(index: usize, capacity: usize, body_capacity: usize) -> Batch {
        let mut body = Vec::with_capacity(body_capacity);
        body.push(b'[');
        Batch {
            index,
            after: None,
            body,
            rows: Vec::with_capacity(capacity),
            without_id: false,
            creates: false,
            rejected: Vec::new(),
        }
    }

    /// Appends a row's JSON object to the body.
    fn push(&mut self, row: &Checked, json: &[u8], keep_links: bool) {
        if !self.rows.is_empty() {
            self.body.push(b',');
        }
        let start = self.body.len();
        self.body.extend_from_slice(json);
        self.without_id |= row.id.is_none();
        self.creates |= row.id.is_none() && row.key.is_none();
        self.rows.push(Row {
            line: row.line,
            json: start..self.body.len(),
            links: (keep_links || row.key.is_some()).then(|| {
                Box::new(Links {
                    id: row.id,
                    parent: row.parent,
                    key: row.key.clone(),
                })
            }),
        });
    }

    /// Ends the body's array: the batch is complete.
    fn close(&mut self) {
        self.body.push(b']');
    }
}

/// The JSON array of `rows`, whose objects lie in `from`, as a new body; each row's range then
/// points into it.
fn body_of(from: &[u8], mut rows: Vec<Row>) -> (bytes::Bytes, Vec<Row>) {
    let mut body = Vec::with_capacity(rows.iter().map(|r| r.json.len() + 1).sum::<usize>() + 2);
    body.push(b'[');
    for (i, r) in rows.iter_mut().enumerate() {
        if i > 0 {
            body.push(b',');
        }
        let start = body.len();
        body.extend_from_slice(&from[r.json.clone()]);
        r.json = start..body.len();
    }
    body.push(b']');
    (body.into(), rows)
}

fn open_input(path: &str) -> CmdResult<(Box<dyn std::io::Read + Send>, Option<u64>)> {
    if path == "-" {
        return Ok((Box::new(std::io::stdin()), None));
    }
    let file = std::fs::File::open(path).map_err(|e| Fail::usage(format!("{path}: {e}")))?;
    let len = file.metadata().ok().map(|m| m.len());
    Ok((Box::new(file), len))
}

/// Places checked rows into batches: in a tree, a row goes in once its parent's row has
/// (rows whose parent is not in the file go in at the end: the parent is on the server).
struct Placer {
    batch_size: usize,
    tree: bool,
    batch: Batch,
    /// Rows of the file by id → the batch that holds them.
    placed: HashMap<Uuid, usize>,
    /// Every id the file gives a row.
    seen: HashSet<Uuid>,
    /// Rows waiting for their parent's row, by parent id, with their JSON.
    waiting: HashMap<Uuid, Vec<(Checked, Vec<u8>)>>,
    /// Keys of the current batch, to refuse a key given twice.
    keys_in_batch: HashMap<String, u64>,
    key_name: &'static str,
    tx: tokio::sync::mpsc::Sender<Result<Batch, Fail>>,
    /// The channel's place for the batch being filled, taken before its first row.
    permit: Option<tokio::sync::mpsc::OwnedPermit<Result<Batch, Fail>>>,
}

impl Placer {
    /// Waits, before a batch's first row, until the senders have taken the batch before (the
    /// channel holds one): so the reader is one batch ahead of the senders, no more; every
    /// batch held costs memory (its body and rows). Returns false when the importer has
    /// stopped.
    fn reserve(&mut self) -> bool {
        if self.permit.is_none() {
            match futures::executor::block_on(self.tx.clone().reserve_owned()) {
                Ok(permit) => self.permit = Some(permit),
                Err(_) => return false,
            }
        }
        true
    }

    /// Hands a batch (or a failure) to the senders. Returns false when the importer has
    /// stopped.
    fn send(&mut self, item: Result<Batch, Fail>) -> bool {
        if !self.reserve() {
            return false;
        }
        let permit = self.permit.take().expect("reserved");
        permit.send(item);
        true
    }

    /// Ends the import with a failure.
    fn fail(mut self, f: Fail) {
        self.send(Err(f));
    }

    /// Takes a row read from the file, its JSON in `json`. Returns false when the importer
    /// has stopped.
    fn take(&mut self, row: Checked, json: &[u8]) -> bool {
        if self.tree {
            if let Some(id) = row.id {
                self.seen.insert(id);
            }
            if let Some(p) = row.parent
                && !self.placed.contains_key(&p)
            {
                self.waiting
                    .entry(p)
                    .or_default()
                    .push((row, json.to_vec()));
                return true;
            }
        }
        self.place_with_children(row, json, false)
    }

    fn place_with_children(&mut self, row: Checked, json: &[u8], after_all: bool) -> bool {
        let mut stack = vec![(row, std::borrow::Cow::Borrowed(json))];
        while let Some((row, json)) = stack.pop() {
            let id = row.id;
            if !self.place(row, &json, after_all) {
                return false;
            }
            if let Some(children) = id.and_then(|id| self.waiting.remove(&id)) {
                // Children keep their file order.
                let children = children.into_iter().rev();
                stack.extend(children.map(|(row, json)| (row, std::borrow::Cow::Owned(json))));
            }
        }
        true
    }

    fn place(&mut self, row: Checked, json: &[u8], after_all: bool) -> bool {
        if let Some(k) = &row.key {
            if let Some(first) = self.keys_in_batch.get(k) {
                self.batch.rejected.push((
                    row.line,
                    format!("{} {k:?} already appears on line {first}", self.key_name),
                ));
                return true;
            }
            self.keys_in_batch.insert(k.clone(), row.line);
        }
        let index = self.batch.index;
        let dep = if after_all {
            index.checked_sub(1)
        } else {
            row.parent
                .and_then(|p| self.placed.get(&p).copied())
                .filter(|b| *b < index)
        };
        if dep > self.batch.after {
            self.batch.after = dep;
        }
        if self.tree
            && let Some(id) = row.id
        {
            self.placed.insert(id, index);
        }
        if self.batch.rows.is_empty() && !self.reserve() {
            return false;
        }
        self.batch.push(&row, json, self.tree);
        if self.batch.rows.len() >= self.batch_size {
            return self.flush();
        }
        true
    }

    fn flush(&mut self) -> bool {
        self.keys_in_batch.clear();
        // The next body is about as long as this one: reserving that (and a little more)
        // spares the copies of growing it.
        let len = self.batch.body.len();
        let next = Batch::new(self.batch.index + 1, self.batch_size, len + len / 16);
        let mut full = std::mem::replace(&mut self.batch, next);
        full.close();
        self.send(Ok(full))
    }

    /// End of file: rows whose parent is not in the file go in (after every earlier batch);
    /// rows whose parents wait on each other (a cycle) are rejected.
    fn finish(mut self, pb: &Option<ProgressBar>) {
        let outside: Vec<Uuid> = self
            .waiting
            .keys()
            .filter(|p| !self.seen.contains(p))
            .copied()
            .collect();
        for p in outside {
            if let Some(rows) = self.waiting.remove(&p) {
                for (row, json) in rows {
                    if !self.place_with_children(row, &json, true) {
                        return;
                    }
                }
            }
        }
        let mut cyclic: Vec<u64> = self
            .waiting
            .values()
            .flatten()
            .map(|(r, _)| r.line)
            .collect();
        cyclic.sort_unstable();
        for line in cyclic {
            self.batch
                .rejected
                .push((line, "parentId: the rows' parents form a cycle".to_string()));
        }
        if let Some(pb) = pb {
            pb.set_position(pb.length().unwrap_or(0));
        }
        if !self.batch.rows.is_empty() || !self.batch.rejected.is_empty() {
            let mut last = std::mem::replace(&mut self.batch, Batch::new(0, 0, 0));
            last.close();
            self.send(Ok(last));
        }
    }
}

/// Reads, checks and batches the file on its own thread.
fn reader_thread(
    spec: &'static Spec,
    input: Box<dyn std::io::Read + Send>,
    batch_size: usize,
    key_mode: bool,
    tx: tokio::sync::mpsc::Sender<Result<Batch, Fail>>,
    pb: Option<ProgressBar>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let fail = |tx: &tokio::sync::mpsc::Sender<Result<Batch, Fail>>, f: Fail| {
            let _ = tx.blocking_send(Err(f));
        };
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .buffer_capacity(1 << 20)
            .from_reader(input);
        let header = match reader.headers() {
            Ok(h) => h.clone(),
            Err(e) => {
                return fail(&tx, Fail::rejected(format!("reading the header row: {e}")));
            }
        };
        let mut cols: Vec<Option<&Column>> = Vec::new();
        let mut unknown = Vec::new();
        for name in header.iter() {
            let name = name.trim();
            match spec.column(name) {
                Some(c) if cols.contains(&Some(c)) => {
                    return fail(
                        &tx,
                        Fail::rejected(format!("line 1: column {name} appears twice")),
                    );
                }
                Some(c) => cols.push(Some(c)),
                None if spec.ignored.contains(&name) => cols.push(None),
                None => unknown.push(name.to_string()),
            }
        }
        if !unknown.is_empty() {
            return fail(
                &tx,
                Fail::rejected(format!(
                    "line 1: unknown column(s) {}; {} columns are {}",
                    unknown.join(", "),
                    spec.noun,
                    spec.headers().join(", ")
                )),
            );
        }
        let has = |n: &str| cols.iter().flatten().any(|c| c.name == n);
        if !has(spec.create_needs) && !has("id") && !key_mode {
            return fail(
                &tx,
                Fail::rejected(format!(
                    "line 1: the file needs a {} or an id column (or --key)",
                    spec.create_needs
                )),
            );
        }
        if key_mode
            && let Some(k) = spec.key
            && !has(k)
        {
            return fail(
                &tx,
                Fail::rejected(format!("--key {k}: the file has no {k} column")),
            );
        }
        let mut placer = Placer {
            batch_size,
            tree: spec.tree,
            batch: Batch::new(0, batch_size, 0),
            placed: HashMap::new(),
            seen: HashSet::new(),
            waiting: HashMap::new(),
            keys_in_batch: HashMap::new(),
            key_name: spec.key.unwrap_or(""),
            tx: tx.clone(),
            permit: None,
        };
        let mut record = csv::StringRecord::new();
        let mut buffers = RowBuffers::default();
        let mut n = 0u64;
        loop {
            match reader.read_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) => {
                    if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                        return placer.fail(Fail::io(
                            "reading the file",
                            std::io::Error::other(e.to_string()),
                        ));
                    }
                    // A broken quote or a short row: report it and read on.
                    let line = e.position().map(|p| p.line()).unwrap_or(0);
                    placer
                        .batch
                        .rejected
                        .push((line, format!("unreadable row: {e}")));
                    continue;
                }
            }
            n += 1;
            let line = record.position().map(|p| p.line()).unwrap_or(n + 1);
            match row_json(spec, &cols, &record, line, key_mode, &mut buffers) {
                Ok(row) => {
                    if !placer.take(row, buffers.json.as_bytes()) {
                        return;
                    }
                }
                Err(errors) => placer.batch.rejected.push((line, errors.join("; "))),
            }
            if n.is_multiple_of(4096)
                && let Some(pb) = &pb
            {
                pb.set_position(record.position().map(|p| p.byte()).unwrap_or(0));
            }
        }
        placer.finish(&pb);
    })
}

/// Finds the ids of the records carrying the batch's keys (active and archived ones).
async fn resolve_keys(ctx: &Ctx, spec: &Spec, batch: &mut Batch) -> CmdResult {
    let Some(key_field) = spec.key else {
        return Ok(());
    };
    let keys: Vec<Value> = batch
        .rows
        .iter()
        .filter_map(|r| r.key().map(|k| Value::String(k.to_string())))
        .collect();
    if keys.is_empty() {
        return Ok(());
    }
    let records = ctx.client.resource_at(spec.path);
    let mut found: HashMap<String, Vec<String>> = HashMap::new();
    for archived in [false, true] {
        let mut page = 1;
        loop {
            let mut q = Query::new()
                .filter(key_field, Value::Array(keys.clone()))
                .filter("isArchived", json!(archived))
                .select([key_field])
                .page_size(10_000);
            q.page = Some(page);
            let answer = records.query_values(&q).await?;
            let n = answer.values.len();
            for v in answer.values {
                if let (Some(id), Some(k)) = (
                    v.get("id").and_then(Value::as_str),
                    v.get(key_field).and_then(Value::as_str),
                ) {
                    found.entry(k.to_string()).or_default().push(id.to_string());
                }
            }
            if n < 10_000 {
                break;
            }
            page += 1;
        }
    }
    // The body is written again: rows matching one record get its id, rows matching several
    // are rejected.
    let rows = std::mem::take(&mut batch.rows);
    let old = std::mem::take(&mut batch.body);
    let mut body = Vec::with_capacity(old.len() + 48 * found.len());
    body.push(b'[');
    for mut row in rows {
        let ids = row.key().and_then(|k| found.get(k));
        if let Some(ids) = ids.filter(|ids| ids.len() > 1) {
            batch.rejected.push((
                row.line,
                format!(
                    "{key_field} {:?} matches {} {}s; give the id instead",
                    row.key().unwrap_or(""),
                    ids.len(),
                    spec.noun
                ),
            ));
            continue;
        }
        if !batch.rows.is_empty() {
            body.push(b',');
        }
        let json = &old[row.json.clone()];
        let start = body.len();
        match ids {
            Some(ids) => {
                // The row's object gets the id as its first field.
                body.extend_from_slice(format!("{{\"id\":{},", json!(ids[0])).as_bytes());
                if json.len() > 2 {
                    body.extend_from_slice(&json[1..]);
                } else {
                    body.pop();
                    body.push(b'}');
                }
                if let Some(links) = &mut row.links {
                    links.id = Uuid::parse_str(&ids[0]).ok();
                }
            }
            None => body.extend_from_slice(json),
        }
        row.json = start..body.len();
        batch.rows.push(row);
    }
    body.push(b']');
    batch.body = body;
    Ok(())
}

/// `PUT /r/bulk` of a body: how many records the server wrote. The answer also lists every
/// record's id, which the import does not use: they are read past, not collected into strings.
async fn bulk_put(ctx: &Ctx, path: &str, body: bytes::Bytes) -> Result<u64, Error> {
    #[derive(serde::Deserialize)]
    struct Answer {
        count: u64,
        #[allow(dead_code)]
        ids: serde::de::IgnoredAny,
    }
    let answer = ctx
        .client
        .send(prodops_client::Method::PUT, path, Some(body))
        .await?;
    serde_json::from_slice::<Answer>(&answer)
        .map(|a| a.count)
        .map_err(|e| {
            let sample: String = String::from_utf8_lossy(&answer).chars().take(200).collect();
            Error::Decode(format!("{e} in {sample}"))
        })
}

/// Sends a batch; rows the server rejects are taken out and the rest sent again.
/// Returns (written, rejected rows in line order).
async fn send_batch(
    ctx: &Ctx,
    spec: &Spec,
    mut batch: Batch,
    key_mode: bool,
) -> CmdResult<(u64, Vec<(u64, String)>)> {
    if key_mode {
        resolve_keys(ctx, spec, &mut batch).await?;
    }
    let path = format!("/{}/bulk", spec.path);
    let Batch {
        body,
        rows,
        mut rejected,
        ..
    } = batch;
    let mut written = 0u64;
    // Each body with its rows (their ranges point into it); the first is the batch's own.
    let mut pending: Vec<(bytes::Bytes, Vec<Row>)> = vec![(body.into(), rows)];
    while let Some((body, rows)) = pending.pop() {
        if rows.is_empty() {
            continue;
        }
        match bulk_put(ctx, &path, body.clone()).await {
            Ok(count) => written += count,
            Err(Error::Api { status: 413, .. }) if rows.len() > 1 => {
                // Halves keep their order: the first goes first (parents before children).
                let mut rows = rows;
                let second = rows.split_off(rows.len() / 2);
                pending.push(body_of(&body, second));
                pending.push(body_of(&body, rows));
            }
            Err(Error::Api {
                status: 400 | 409,
                message,
                details,
                ..
            }) => {
                let mut bad: std::collections::BTreeMap<usize, Vec<String>> =
                    std::collections::BTreeMap::new();
                for d in &details {
                    if let Some(i) = d
                        .index
                        .and_then(|i| usize::try_from(i).ok())
                        .filter(|i| *i < rows.len())
                    {
                        let field = d
                            .field
                            .as_deref()
                            .map(|f| {
                                f.trim_start_matches(|c: char| {
                                    c == '[' || c.is_ascii_digit() || c == ']' || c == '.'
                                })
                            })
                            .filter(|f| !f.is_empty());
                        bad.entry(i).or_default().push(match field {
                            Some(f) => format!("{f}: {}", d.message),
                            None => d.message.clone(),
                        });
                    }
                }
                if bad.is_empty() {
                    // The server named no record: the whole stretch is rejected.
                    for r in &rows {
                        rejected.push((r.line, message.clone()));
                    }
                    continue;
                }
                let mut good = Vec::with_capacity(rows.len());
                let mut dropped: HashSet<Uuid> = HashSet::new();
                for (i, r) in rows.into_iter().enumerate() {
                    match bad.get(&i) {
                        Some(msgs) => {
                            dropped.extend(r.id());
                            rejected.push((r.line, msgs.join("; ")))
                        }
                        // A child of a rejected row cannot be written either.
                        None if r.parent().is_some_and(|p| dropped.contains(&p)) => {
                            dropped.extend(r.id());
                            rejected
                                .push((r.line, "parentId: the parent's row was rejected".into()));
                        }
                        None => good.push(r),
                    }
                }
                pending.push(body_of(&body, good));
            }
            Err(e) => return Err(e.into()),
        }
    }
    rejected.sort_by_key(|(line, _)| *line);
    Ok((written, rejected))
}

/// Which batches are written: every batch below the watermark, and the ones in `done`.
struct Written {
    state: Mutex<(usize, BTreeSet<usize>)>,
    notify: tokio::sync::Notify,
}

impl Written {
    fn finish(&self, index: usize) {
        let mut s = self.state.lock().expect("lock");
        s.1.insert(index);
        loop {
            let next = s.0;
            if !s.1.remove(&next) {
                break;
            }
            s.0 += 1;
        }
        drop(s);
        self.notify.notify_waiters();
    }

    /// Waits until every batch up to `index` is written.
    async fn wait_through(&self, index: usize) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.state.lock().expect("lock").0 > index {
                return;
            }
            notified.await;
        }
    }
}

/// `import FILE.csv` for the resource `spec` describes.
pub async fn import(ctx: &Ctx, spec: &'static Spec, args: &ArgMatches) -> CmdResult {
    let path = args.get_one::<String>("file").expect("required").clone();
    let key_mode = args.try_get_one::<String>("key").ok().flatten().is_some();
    let dry_run = args.get_flag("dry-run");
    let batch_size = *args.get_one::<u64>("batch-size").expect("default") as usize;
    let concurrency = *args.get_one::<u64>("concurrency").expect("default") as usize;
    let (input, len) = open_input(&path)?;
    let pb = len.and_then(|l| {
        progress(
            l,
            "{spinner} importing [{bar:40}] {bytes}/{total_bytes} {elapsed} eta {eta}",
        )
    });
    // The reader stays one batch ahead of the senders, no more: every batch held costs memory
    // (its rows and body), and the senders rarely wait for a batch. One batch waits in the
    // channel, and the reader starts the next once the senders have taken it
    // ([`Placer::reserve`]), rather than filling it and waiting to hand it over.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Batch, Fail>>(1);
    let reader = reader_thread(spec, input, batch_size, key_mode, tx, pb.clone());
    let batches =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
    let written_batches = Written {
        state: Mutex::new((0, BTreeSet::new())),
        notify: tokio::sync::Notify::new(),
    };
    let written_batches = &written_batches;
    let mut rows_total = 0u64;
    let mut written = 0u64;
    let mut rejected = 0u64;
    let mut warned = false;
    let mut results = batches
        .map(|batch| async move {
            let batch = batch?;
            let n = (batch.rows.len() + batch.rejected.len()) as u64;
            if dry_run {
                let mut rej = batch.rejected;
                rej.sort_by_key(|(l, _)| *l);
                return Ok((n, 0, rej, batch.without_id));
            }
            let without_id = batch.creates;
            if let Some(after) = batch.after {
                written_batches.wait_through(after).await;
            }
            let index = batch.index;
            let (w, rej) = send_batch(ctx, spec, batch, key_mode).await?;
            written_batches.finish(index);
            Ok::<_, Fail>((n, w, rej, without_id))
        })
        .buffered(concurrency)
        .boxed_local();
    let mut failure = None;
    while let Some(result) = results.next().await {
        match result {
            Ok((n, w, rej, without_id)) => {
                rows_total += n;
                written += w;
                rejected += rej.len() as u64;
                for (line, msg) in rej {
                    report(&pb, format!("line {line}: {msg}"));
                }
                if without_id && !key_mode && !warned {
                    warned = true;
                    let key = spec
                        .key
                        .map(|k| format!(" or --key {k}"))
                        .unwrap_or_default();
                    report(
                        &pb,
                        format!(
                            "warning: rows without an id create new {}s on every run; use ids{key} to make re-runs change nothing",
                            spec.noun
                        ),
                    );
                }
            }
            Err(f) => {
                failure = Some(f);
                break;
            }
        }
    }
    drop(results);
    let _ = reader.join();
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    if let Some(f) = failure {
        if written > 0 {
            eprintln!("{written} row(s) were written before the failure");
        }
        return Err(f);
    }
    let summary = json!({
        "rows": rows_total,
        "accepted": written,
        "rejected": rejected,
        "dryRun": dry_run,
    });
    crate::output::write_value(ctx.format, &summary, &[])?;
    if rejected > 0 {
        return Err(Fail::rejected(format!("{rejected} row(s) rejected")));
    }
    Ok(())
}

// ---- export ----------------------------------------------------------------------------------

/// The text of one cell of an exported record.
pub fn cell_text(kind: Kind, value: Option<&Value>, buf: &mut String) {
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

/// Reads a record (a JSON object) into the texts of `columns`' cells (what [`cell_text`] gives
/// for each), in `cells`, straight from the text: no map and no allocation per record. For
/// specs whose columns are all top-level fields.
pub struct RecordCells<'a> {
    pub columns: &'a [Column],
    pub cells: &'a mut [String],
}

impl<'de> serde::de::DeserializeSeed<'de> for RecordCells<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for RecordCells<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a record")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        for cell in self.cells.iter_mut() {
            cell.clear();
        }
        while let Some(FieldName(key)) = map.next_key::<FieldName<'de>>()? {
            match self.columns.iter().position(|c| c.name == key) {
                Some(i) => {
                    self.cells[i].clear();
                    map.next_value_seed(CellSeed(&mut self.cells[i]))?;
                }
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Where [`PageRows`] writes a page's records.
struct PageSink<'a> {
    columns: &'a [Column],
    cells: &'a mut [String],
    out: &'a mut csv::Writer<Box<dyn Write + Send>>,
    count: &'a mut u64,
    /// A failure to write, which ends the reading.
    failure: Option<Fail>,
}

/// Writes the records of a page's answer (`{"values": [...], ...}`) as CSV rows, each read
/// with [`RecordCells`] and written before the next is read.
struct PageRows<'s, 'a>(&'s mut PageSink<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for PageRows<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for PageRows<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a page of records")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        use serde::de::Error as _;
        let mut values = false;
        while let Some(FieldName(key)) = map.next_key::<FieldName<'de>>()? {
            if key != "values" {
                map.next_value::<serde::de::IgnoredAny>()?;
            } else if values {
                return Err(A::Error::duplicate_field("values"));
            } else {
                values = true;
                map.next_value_seed(ValueRows(&mut *self.0))?;
            }
        }
        if !values {
            return Err(A::Error::missing_field("values"));
        }
        Ok(())
    }
}

/// The `values` array of [`PageRows`].
struct ValueRows<'s, 'a>(&'s mut PageSink<'a>);

impl<'de> serde::de::DeserializeSeed<'de> for ValueRows<'_, '_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ValueRows<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of records")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        use serde::de::Error as _;
        let sink = self.0;
        while let Some(()) = seq.next_element_seed(RecordCells {
            columns: sink.columns,
            cells: &mut *sink.cells,
        })? {
            if let Err(e) = sink.out.write_record(&*sink.cells) {
                sink.failure = Some(csv_fail(e));
                return Err(A::Error::custom("writing the CSV failed"));
            }
            *sink.count += 1;
        }
        Ok(())
    }
}

/// An object key, borrowed from the text when it has no escapes.
struct FieldName<'a>(std::borrow::Cow<'a, str>);

impl<'de> serde::Deserialize<'de> for FieldName<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct NameVisitor;
        impl<'de> serde::de::Visitor<'de> for NameVisitor {
            type Value = FieldName<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a field name")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<FieldName<'de>, E> {
                Ok(FieldName(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<FieldName<'de>, E> {
                Ok(FieldName(std::borrow::Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(NameVisitor)
    }
}

/// Reads one JSON value into the text [`cell_text`] writes for it, appended to the string.
struct CellSeed<'b>(&'b mut String);

impl<'de> serde::de::DeserializeSeed<'de> for CellSeed<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for CellSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_str<E>(self, v: &str) -> Result<(), E> {
        self.0.push_str(v);
        Ok(())
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn visit_i64<E>(self, v: i64) -> Result<(), E> {
        self.visit_number(serde_json::Number::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<(), E> {
        self.visit_number(serde_json::Number::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<(), E> {
        match serde_json::Number::from_f64(v) {
            Some(n) => self.visit_number(n),
            None => Ok(()),
        }
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        use serde::Deserialize;
        let v = Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        self.0.push_str(&v.to_string());
        Ok(())
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        use serde::Deserialize;
        let v = Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
        self.0.push_str(&v.to_string());
        Ok(())
    }
}

impl CellSeed<'_> {
    fn visit_number<E>(self, n: serde_json::Number) -> Result<(), E> {
        use std::fmt::Write as _;
        let _ = write!(self.0, "{n}");
        Ok(())
    }
}

/// How the columns of a [`Spec`] read a record's JSON text: the top-level fields they need
/// (each parsed once; the others, such as a deliverable's `computed`, skipped while parsing)
/// and each column's field and path inside it.
pub struct Layout {
    tops: Vec<String>,
    cols: Vec<(usize, Vec<String>)>,
}

impl Layout {
    pub fn new(spec: &Spec) -> Layout {
        let mut tops: Vec<String> = Vec::new();
        let cols = spec
            .columns
            .iter()
            .map(|c| {
                let mut parts = c.name.split('.').map(str::to_string);
                let top = parts.next().unwrap_or_default();
                let i = match tops.iter().position(|t| *t == top) {
                    Some(i) => i,
                    None => {
                        tops.push(top);
                        tops.len() - 1
                    }
                };
                (i, parts.collect())
            })
            .collect();
        Layout { tops, cols }
    }

    /// The top-level fields the columns read.
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.tops.iter().map(String::as_str)
    }
}

/// Parses the fields a [`Layout`] reads into `slots` (one per top-level field).
struct Fields<'a> {
    layout: &'a Layout,
    slots: &'a mut [Option<Value>],
}

/// A key of a record: its position among the layout's fields, `None` for one it skips.
struct KeyIndex<'a>(&'a Layout);

impl<'de> serde::de::DeserializeSeed<'de> for KeyIndex<'_> {
    type Value = Option<usize>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Option<usize>, D::Error> {
        d.deserialize_str(self)
    }
}

impl serde::de::Visitor<'_> for KeyIndex<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<Option<usize>, E> {
        Ok(self.0.tops.iter().position(|t| t == key))
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Fields<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Fields<'_> {
    type Value = ();
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a record")
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(found) = map.next_key_seed(KeyIndex(self.layout))? {
            match found {
                Some(i) => self.slots[i] = Some(map.next_value()?),
                None => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// Writes records as CSV rows of `spec`'s columns.
pub struct RowWriter {
    /// Sendable, so that a page can be written on a blocking thread.
    out: csv::Writer<Box<dyn Write + Send>>,
    cells: Vec<String>,
    pub count: u64,
    out_path: Option<PathBuf>,
}

pub fn csv_fail(e: csv::Error) -> Fail {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => Fail::io("writing the CSV", io),
        other => Fail::usage(format!("writing the CSV: {other:?}")),
    }
}

impl RowWriter {
    /// Opens `-o FILE` (or stdout) and writes the header row.
    pub fn open(spec: &Spec, args: &ArgMatches) -> CmdResult<RowWriter> {
        let out_path = args.get_one::<String>("out").map(PathBuf::from);
        let sink: Box<dyn Write + Send> = match &out_path {
            Some(p) => Box::new(
                std::fs::File::create(p)
                    .map_err(|e| Fail::usage(format!("{}: {e}", p.display())))?,
            ),
            None => Box::new(std::io::stdout()),
        };
        let mut out = csv::WriterBuilder::new()
            .buffer_capacity(1 << 20)
            .from_writer(sink);
        out.write_record(spec.headers()).map_err(csv_fail)?;
        Ok(RowWriter {
            out,
            cells: vec![String::new(); spec.columns.len()],
            count: 0,
            out_path,
        })
    }

    /// Writes the records of a page's answer (`{"values": [...], ...}`, records of top-level
    /// fields only) as rows of `spec`, the writer's spec: each record is read straight from
    /// the answer's text into the writer's cells and written, none is kept.
    pub fn write_page(&mut self, spec: &Spec, page: &[u8]) -> CmdResult {
        let mut sink = PageSink {
            columns: &spec.columns,
            cells: &mut self.cells,
            out: &mut self.out,
            count: &mut self.count,
            failure: None,
        };
        let mut de = serde_json::Deserializer::from_slice(page);
        let read = serde::de::DeserializeSeed::deserialize(PageRows(&mut sink), &mut de)
            .and_then(|()| de.end());
        if let Some(f) = sink.failure {
            return Err(f);
        }
        read.map_err(|e| {
            // As the client reports an answer it cannot read.
            let sample: String = String::from_utf8_lossy(page).chars().take(200).collect();
            Error::Decode(format!("{e} in {sample}")).into()
        })
    }

    /// Writes the record whose JSON text is `text`, parsing only the fields `layout` (made
    /// from the same spec) reads.
    pub fn write_json(&mut self, spec: &Spec, layout: &Layout, text: &[u8]) -> CmdResult {
        let mut slots: Vec<Option<Value>> = vec![None; layout.tops.len()];
        let mut de = serde_json::Deserializer::from_slice(text);
        serde::de::DeserializeSeed::deserialize(
            Fields {
                layout,
                slots: &mut slots,
            },
            &mut de,
        )
        .and_then(|()| de.end())
        .map_err(|e| Fail::usage(format!("reading a {}: {e}", spec.noun)))?;
        for ((col, (top, rest)), cell) in spec
            .columns
            .iter()
            .zip(&layout.cols)
            .zip(self.cells.iter_mut())
        {
            let value = slots[*top]
                .as_ref()
                .and_then(|v| rest.iter().try_fold(v, |v, k| v.get(k.as_str())));
            cell_text(col.kind, value, cell);
        }
        self.out.write_record(&self.cells).map_err(csv_fail)?;
        self.count += 1;
        Ok(())
    }

    pub fn finish(mut self, spec: &Spec) -> CmdResult {
        self.out
            .flush()
            .map_err(|e| Fail::io("writing the CSV", e))?;
        if let Some(p) = self.out_path {
            eprintln!(
                "exported {} {}(s) to {}",
                self.count,
                spec.noun,
                p.display()
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// Cells as files hold them: valid and invalid UUIDs, booleans, text with quotes,
    /// backslashes, control characters and non-ASCII letters, blanks.
    fn cell() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            Just("  ".to_string()),
            Just("true".to_string()),
            Just(" No ".to_string()),
            Just("maybe".to_string()),
            Just("active".to_string()),
            Just("0190b6a4-4a57-7c3e-8a4e-1f6f1f2b2c3d".to_string()),
            Just(" 0190B6A4-4A57-7C3E-8A4E-1F6F1F2B2C3D ".to_string()),
            Just("not-a-uuid".to_string()),
            "[ -~]{0,12}",
            "[a-zé\"\\\\\n\t\u{1}ß😀 ]{0,8}",
        ]
    }

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

        /// A file of top-level columns is written straight to JSON with exactly the text and
        /// fields the map path gives.
        #[test]
        fn flat_rows_read_as_the_map_path_reads_them(
            picks in proptest::sample::subsequence((0..crate::csvio::worker::SPEC.columns.len()).collect::<Vec<_>>(), 0..=11),
            cells in proptest::collection::vec(cell(), 11),
        ) {
            let spec = &*crate::csvio::worker::SPEC;
            let cols: Vec<Option<&Column>> = picks.iter().map(|&i| Some(&spec.columns[i])).collect();
            let record = csv::StringRecord::from(cells[..cols.len()].to_vec());
            let (mut flat_text, mut map_text) = (String::new(), String::new());
            let (mut flat_errors, mut map_errors) = (Vec::new(), Vec::new());
            let mut map = Map::new();
            let flat = gather_flat(spec, &cols, &record, &mut flat_errors, &mut flat_text);
            let by_map = gather_by_map(spec, &cols, &record, &mut map, &mut map_errors, &mut map_text);
            prop_assert_eq!(&flat_errors, &map_errors);
            if flat_errors.is_empty() {
                prop_assert_eq!(&flat_text, &map_text);
                prop_assert_eq!(&flat.names, &by_map.names);
                prop_assert_eq!(flat.id, by_map.id);
                prop_assert_eq!(flat.parent, by_map.parent);
                prop_assert_eq!(flat.key, by_map.key);
            }
        }
    }
}
