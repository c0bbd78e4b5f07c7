//! Output formats (docs/cli.md): table for people, json, ndjson and csv for scripts.
//!
//! - json: a single record pretty-printed; a list as a JSON array with one compact record per
//!   line (valid JSON, written while the list streams).
//! - ndjson: one compact JSON value per line, single records included.
//! - csv: a header row of field names (nested fields dotted, `schedule.startDate`), then one row
//!   per record; the columns are `--select`'s, else the fields the resource declares
//!   (`fields.rs`: the same columns on every row, whichever record comes first), else (an answer
//!   no resource describes) the first record's; nulls are empty cells, arrays and objects inside
//!   a cell are JSON text.
//! - tsv: the same header and rows as csv, separated by tabs and never quoted; a tab, a line
//!   end or a backslash inside a cell is written `\t`, `\n`, `\r`, `\\` (the escapes of
//!   PostgreSQL's text COPY), so every record is exactly one line for `cut`, `awk` and `sort`.
//! - yaml: a single value as a YAML document; a list as a YAML sequence, one item per record
//!   written as it arrives (`[]` when empty).
//! - table: a table fitted to the terminal (`table.rs`: the resource's default columns, cells cut
//!   with an ellipsis, ids never cut); a single record as field/value lines.

use std::io::{IsTerminal, Write};

use serde_json::{Map, Value};

use crate::fail::{CmdResult, Fail};
use crate::fields::Fields;
use crate::shape::Post;
use crate::table;
use std::sync::Arc;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Ndjson,
    Csv,
    Tsv,
    Yaml,
}

impl Format {
    pub fn parse(raw: Option<&str>) -> Format {
        match raw {
            Some("table") => Format::Table,
            Some("json") => Format::Json,
            Some("ndjson") => Format::Ndjson,
            Some("csv") => Format::Csv,
            Some("tsv") => Format::Tsv,
            Some("yaml") => Format::Yaml,
            _ if std::io::stdout().is_terminal() => Format::Table,
            _ => Format::Json,
        }
    }
}

/// How a command's answer is printed: the format, `--select`, and the declared fields of the
/// resource the answer is about (none for actions and `prodops api`).
#[derive(Debug, Clone)]
pub struct Shape {
    pub format: Format,
    pub select: Vec<String>,
    pub fields: Option<Fields>,
    /// `--jq` or `--template`, in place of the format.
    pub post: Option<Arc<Post>>,
    /// `--wide`: a table of every field, ids whole, not fitted to the width.
    pub wide: bool,
    /// The width a table fits (`table::terminal_width`).
    pub width: usize,
}

impl Shape {
    pub fn new(format: Format) -> Shape {
        Shape {
            format,
            select: Vec::new(),
            fields: None,
            post: None,
            wide: false,
            width: 80,
        }
    }
}

/// Flattens nested objects into dotted keys, in order.
pub fn flatten(value: &Value) -> Map<String, Value> {
    fn walk(prefix: &str, value: &Value, out: &mut Map<String, Value>) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (k, v) in map {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.clone());
            }
        }
    }
    let mut out = Map::new();
    match value {
        Value::Object(_) => walk("", value, &mut out),
        other => {
            out.insert("value".into(), other.clone());
        }
    }
    out
}

/// A cell's text: strings as they are, null as empty, anything else as JSON.
pub fn cell(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

/// The value at a column: a key of the (projected) record as it is (`x.y` after `--select`),
/// else the dotted path walked through nested objects; `None` past a null or a missing field.
pub fn lookup<'a>(value: &'a Value, column: &str) -> Option<&'a Value> {
    if let Some(v) = value.get(column) {
        return Some(v);
    }
    column.split('.').try_fold(value, |v, k| v.get(k))
}

/// Keeps only the selected fields (dotted paths allowed) of a record, in the selection's order.
pub fn project(value: Value, select: &[String]) -> Value {
    if select.is_empty() {
        return value;
    }
    let flat = flatten(&value);
    let mut out = Map::new();
    for field in select {
        let v = flat
            .get(field)
            .cloned()
            .or_else(|| field.split('.').try_fold(&value, |v, k| v.get(k)).cloned())
            .unwrap_or(Value::Null);
        out.insert(field.clone(), v);
    }
    Value::Object(out)
}

/// The table of a list (`table.rs`): its columns, whether ids show short, the width it fits,
/// and, once the first rows decided it, its layout.
struct TableState {
    columns: Option<Vec<String>>,
    short_ids: bool,
    width: Option<usize>,
    layout: Option<(Vec<String>, table::Layout)>,
}

impl TableState {
    fn new(shape: &Shape) -> TableState {
        let (columns, short_ids, width) = if !shape.select.is_empty() {
            (Some(shape.select.clone()), false, Some(shape.width))
        } else if shape.wide {
            (shape.fields.as_ref().map(Fields::columns), false, None)
        } else {
            (
                shape.fields.as_ref().map(|f| f.defaults.clone()),
                true,
                Some(shape.width),
            )
        };
        TableState {
            columns,
            short_ids,
            width,
            layout: None,
        }
    }

    fn cells(&self, columns: &[String], value: &Value) -> Vec<String> {
        columns
            .iter()
            .map(|c| table::display(cell(lookup(value, c)), self.short_ids))
            .collect()
    }

    /// Decides the columns (an answer no resource describes: its records' fields, but
    /// `organizationId`) and the layout from the rows so far, and writes the header and them.
    fn start(&mut self, rows: &[Value], out: &mut dyn Write) -> CmdResult {
        let columns = self.columns.clone().unwrap_or_else(|| {
            let mut cols: Vec<String> = Vec::new();
            for f in rows.iter().map(flatten) {
                for k in f.keys() {
                    if !cols.contains(k) && k != "organizationId" {
                        cols.push(k.clone());
                    }
                }
            }
            cols
        });
        let cells: Vec<Vec<String>> = rows.iter().map(|r| self.cells(&columns, r)).collect();
        let layout = table::layout(&columns, &cells, self.width);
        table::report_hidden(&columns, &layout);
        table::write_line(out, &layout, &columns)?;
        for row in &cells {
            table::write_line(out, &layout, row)?;
        }
        self.layout = Some((columns, layout));
        Ok(())
    }
}

/// Writes a list of records as they arrive.
pub struct ListWriter<W: Write> {
    out: W,
    format: Format,
    select: Vec<String>,
    /// The columns of CSV and table rows: `--select`'s, else the resource's declared fields,
    /// else (no resource) the first record's.
    columns: Option<Vec<String>>,
    post: Option<Arc<Post>>,
    table: TableState,
    rows: Vec<Value>,
    count: u64,
}

fn io_err(e: std::io::Error) -> Fail {
    Fail::io("writing the output", e)
}

impl<W: Write> ListWriter<W> {
    pub fn new(out: W, shape: &Shape) -> Self {
        let select = shape.select.clone();
        ListWriter {
            out,
            format: shape.format,
            columns: if select.is_empty() {
                shape.fields.as_ref().map(Fields::columns)
            } else {
                Some(select.clone())
            },
            select,
            post: shape.post.clone(),
            table: TableState::new(shape),
            rows: Vec::new(),
            count: 0,
        }
    }

    pub fn push(&mut self, value: Value) -> CmdResult {
        let value = project(value, &self.select);
        match self.post.as_deref() {
            // jq sees the list as one array: kept until the end.
            Some(Post::Jq(_)) => {
                self.rows.push(value);
                self.count += 1;
                return Ok(());
            }
            Some(Post::Template(t)) => {
                t.write(&value, &mut self.out)?;
                self.count += 1;
                return Ok(());
            }
            None => {}
        }
        match self.format {
            Format::Json => {
                let sep = if self.count == 0 { "[\n" } else { ",\n" };
                write!(self.out, "{sep}{value}").map_err(io_err)?;
            }
            Format::Ndjson => writeln!(self.out, "{value}").map_err(io_err)?,
            // One sequence item per record, written as it comes: the items together are the
            // YAML sequence of the list.
            Format::Yaml => self
                .out
                .write_all(yaml(&[value])?.as_bytes())
                .map_err(io_err)?,
            Format::Csv | Format::Tsv => {
                let columns = self
                    .columns
                    .get_or_insert_with(|| flatten(&value).keys().cloned().collect());
                if self.count == 0 {
                    write_row(&mut self.out, self.format, columns.iter().cloned())?;
                }
                let cells = columns.iter().map(|c| cell(lookup(&value, c)));
                write_row(&mut self.out, self.format, cells)?;
            }
            Format::Table => match &self.table.layout {
                Some((columns, layout)) => {
                    let cells = self.table.cells(columns, &value);
                    table::write_line(&mut self.out, layout, &cells)?;
                }
                None => {
                    self.rows.push(value);
                    if self.rows.len() >= table::LAYOUT_ROWS {
                        let rows = std::mem::take(&mut self.rows);
                        self.table.start(&rows, &mut self.out)?;
                    }
                }
            },
        }
        self.count += 1;
        Ok(())
    }

    pub fn finish(mut self) -> CmdResult {
        match self.post.as_deref() {
            Some(Post::Jq(jq)) => {
                let rows = Value::Array(std::mem::take(&mut self.rows));
                jq.write(&rows, &mut self.out)?;
                return self.out.flush().map_err(io_err);
            }
            Some(Post::Template(_)) => return self.out.flush().map_err(io_err),
            None => {}
        }
        match self.format {
            Format::Json => {
                let end = if self.count == 0 { "[]\n" } else { "\n]\n" };
                self.out.write_all(end.as_bytes()).map_err(io_err)?;
            }
            Format::Yaml if self.count == 0 => self.out.write_all(b"[]\n").map_err(io_err)?,
            Format::Csv | Format::Tsv if self.count == 0 => {
                if let Some(columns) = &self.columns {
                    write_row(&mut self.out, self.format, columns.iter().cloned())?;
                }
            }
            Format::Table => {
                if self.table.layout.is_none() {
                    let rows = std::mem::take(&mut self.rows);
                    self.table.start(&rows, &mut self.out)?;
                }
                writeln!(self.out, "{} record(s)", self.count).map_err(io_err)?;
            }
            _ => {}
        }
        self.out.flush().map_err(io_err)
    }
}

/// One header or record row of a CSV or TSV list (docs/cli.md).
fn write_row(
    out: &mut impl Write,
    format: Format,
    cells: impl Iterator<Item = String>,
) -> CmdResult {
    if format == Format::Tsv {
        let mut line = String::new();
        for (i, text) in cells.enumerate() {
            if i > 0 {
                line.push('\t');
            }
            line.push_str(&tsv_escape(&text));
        }
        line.push('\n');
        return out.write_all(line.as_bytes()).map_err(io_err);
    }
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(cells).map_err(csv_err)?;
    let buf = writer.into_inner().map_err(|e| io_err(e.into_error()))?;
    out.write_all(&buf).map_err(io_err)
}

/// A TSV cell: the characters that would break a row, written as PostgreSQL's text COPY
/// writes them.
fn tsv_escape(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\t', '\n', '\r', '\\']) {
        return text.into();
    }
    let mut escaped = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\t' => escaped.push_str("\\t"),
            '\n' => escaped.push_str("\\n"),
            '\r' => escaped.push_str("\\r"),
            '\\' => escaped.push_str("\\\\"),
            other => escaped.push(other),
        }
    }
    escaped.into()
}

/// A value as YAML (serde_norway, a maintained fork of serde_yaml).
fn yaml<T: serde::Serialize + ?Sized>(value: &T) -> CmdResult<String> {
    serde_norway::to_string(value).map_err(|e| Fail::usage(format!("writing YAML: {e}")))
}

fn csv_err(e: csv::Error) -> Fail {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => io_err(io),
        other => Fail::usage(format!("writing CSV: {other:?}")),
    }
}

/// An answer written in `format`, through the command's `--jq` or `--template`, when it has them.
pub fn write_answer(format: Format, value: &Value, args: &clap::ArgMatches) -> CmdResult {
    let mut shape = Shape::new(format);
    shape.post = Post::from_args(args)?.map(Arc::new);
    write_shaped(&shape, value)
}

/// A value (a record, an answer, or `{values: [...]}` as a list) shaped by `shape`.
pub fn write_shaped(shape: &Shape, value: &Value) -> CmdResult {
    let (format, select) = (shape.format, shape.select.as_slice());
    let stdout = std::io::stdout().lock();
    let mut out = std::io::BufWriter::new(stdout);
    if let Some(values) = value.get("values").and_then(Value::as_array)
        && value.as_object().is_some_and(|o| o.len() <= 2)
    {
        let mut w = ListWriter::new(&mut out, shape);
        for v in values {
            w.push(v.clone())?;
        }
        return w.finish();
    }
    let value = project(value.clone(), select);
    match shape.post.as_deref() {
        Some(Post::Jq(jq)) => {
            jq.write(&value, &mut out)?;
            return out.flush().map_err(io_err);
        }
        Some(Post::Template(t)) => {
            t.write(&value, &mut out)?;
            return out.flush().map_err(io_err);
        }
        None => {}
    }
    match format {
        Format::Json => {
            let text = serde_json::to_string_pretty(&value).unwrap_or_default();
            writeln!(out, "{text}").map_err(io_err)?;
        }
        Format::Ndjson => writeln!(out, "{value}").map_err(io_err)?,
        Format::Yaml => out.write_all(yaml(&value)?.as_bytes()).map_err(io_err)?,
        Format::Csv | Format::Tsv => {
            let mut w = ListWriter::new(&mut out, shape);
            w.push(value)?;
            w.finish()?;
        }
        Format::Table => {
            if value.is_object() {
                let pairs: Vec<(String, String)> =
                    match shape.fields.as_ref().filter(|_| select.is_empty()) {
                        Some(fields) => fields
                            .columns()
                            .into_iter()
                            .map(|c| {
                                let text = cell(lookup(&value, &c));
                                (c, text)
                            })
                            .collect(),
                        None => flatten(&value)
                            .into_iter()
                            .map(|(k, v)| (k, cell(Some(&v))))
                            .collect(),
                    };
                let width = if shape.wide {
                    usize::MAX / 4
                } else {
                    shape.width
                };
                table::write_record(&mut out, &pairs, width)?;
            } else {
                writeln!(out, "{}", cell(Some(&value))).map_err(io_err)?;
            }
        }
    }
    out.flush().map_err(io_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flatten_dots_nested_fields() {
        let f =
            flatten(&json!({"a": 1, "schedule": {"startDate": "x", "n": {"m": null}}, "t": [1]}));
        assert_eq!(
            f.keys().cloned().collect::<Vec<_>>(),
            ["a", "schedule.startDate", "schedule.n.m", "t"]
        );
        assert_eq!(cell(f.get("t")), "[1]");
        assert_eq!(cell(f.get("schedule.n.m")), "");
    }

    #[test]
    fn project_keeps_selected_in_order() {
        let v = project(
            json!({"id": 1, "name": "a", "x": {"y": 2}}),
            &["x.y".into(), "name".into()],
        );
        assert_eq!(v, json!({"x.y": 2, "name": "a"}));
    }

    #[test]
    fn list_formats_are_stable() {
        let rows = [
            json!({"id": "1", "n": {"a": true}}),
            json!({"id": "2", "n": {"a": false}}),
        ];
        let render = |format| {
            let mut buf = Vec::new();
            let mut w = ListWriter::new(&mut buf, &Shape::new(format));
            for r in &rows {
                w.push(r.clone()).unwrap();
            }
            w.finish().unwrap();
            String::from_utf8(buf).unwrap()
        };
        assert_eq!(
            render(Format::Json),
            "[\n{\"id\":\"1\",\"n\":{\"a\":true}},\n{\"id\":\"2\",\"n\":{\"a\":false}}\n]\n"
        );
        assert_eq!(
            render(Format::Ndjson),
            "{\"id\":\"1\",\"n\":{\"a\":true}}\n{\"id\":\"2\",\"n\":{\"a\":false}}\n"
        );
        assert_eq!(render(Format::Csv), "id,n.a\n1,true\n2,false\n");
        assert_eq!(render(Format::Tsv), "id\tn.a\n1\ttrue\n2\tfalse\n");
        assert_eq!(
            render(Format::Yaml),
            "- id: '1'\n  n:\n    a: true\n- id: '2'\n  n:\n    a: false\n"
        );
        let mut buf = Vec::new();
        ListWriter::new(&mut buf, &Shape::new(Format::Json))
            .finish()
            .unwrap();
        assert_eq!(String::from_utf8(buf).unwrap(), "[]\n");
    }

    #[test]
    fn a_tsv_record_is_one_line_whatever_its_text() {
        let mut buf = Vec::new();
        let mut w = ListWriter::new(&mut buf, &Shape::new(Format::Tsv));
        w.push(json!({"name": "a\tb\nc\r\\d", "q": "\"x\", y"}))
            .unwrap();
        w.finish().unwrap();
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "name\tq\na\\tb\\nc\\r\\\\d\t\"x\", y\n"
        );
    }
}
