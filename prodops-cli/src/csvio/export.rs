//! Export: a record's JSON text read straight into its cells' texts (the serde visitor
//! [`RecordCells`] for records of top-level fields; [`Layout`] and [`Fields`] for nested ones)
//! and written as a CSV row by the [`RowWriter`].

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::ArgMatches;

use crate::context::CommandContext;
use prodops_client::Error;
use serde_json::Value;

use super::cells::cell_text;
use super::spec::{Column, Spec};
use crate::fail::{CmdResult, Fail};

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

    /// Whether every column is a top-level field.
    fn is_flat(&self) -> bool {
        self.cols.iter().all(|(_, rest)| rest.is_empty())
    }

    /// The texts of `columns`' cells (the spec's this layout was made from), from the fields
    /// [`Fields`] read into `slots`.
    fn cells(&self, columns: &[Column], slots: &[Option<Value>], cells: &mut [String]) {
        for ((col, (top, rest)), cell) in columns.iter().zip(&self.cols).zip(cells.iter_mut()) {
            let value = slots[*top]
                .as_ref()
                .and_then(|v| rest.iter().try_fold(v, |v, k| v.get(k.as_str())));
            cell_text(col.kind, value, cell);
        }
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
    /// `-o FILE`: the target, and the temporary file beside it that takes the rows until the
    /// export has succeeded (dropped unrenamed, it is removed: a failed export leaves the
    /// target as it was).
    out_path: Option<(PathBuf, tempfile::TempPath)>,
}

/// A temporary file beside `target` (same directory, so the final rename is atomic), created
/// with the permissions a new file of the user's gets (0666 less the umask), or the target's
/// own when it exists.
pub fn temporary_beside(target: &Path) -> CmdResult<(std::fs::File, tempfile::TempPath)> {
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".partial");
    #[cfg(unix)]
    let permissions = match std::fs::metadata(target) {
        Ok(m) => m.permissions(),
        Err(_) => std::os::unix::fs::PermissionsExt::from_mode(0o666),
    };
    #[cfg(unix)]
    builder.permissions(permissions);
    let file = builder
        .tempfile_in(dir)
        .map_err(|e| Fail::usage(format!("{}: {e}", target.display())))?;
    Ok(file.into_parts())
}

pub fn csv_fail(e: csv::Error) -> Fail {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => Fail::io("writing the CSV", io),
        other => Fail::usage(format!("writing the CSV: {other:?}")),
    }
}

impl RowWriter {
    /// Opens `--out FILE` (or stdout) and writes the header row.
    pub fn open(spec: &Spec, args: &ArgMatches) -> CmdResult<RowWriter> {
        let (sink, out_path): (Box<dyn Write + Send>, _) =
            match args.get_one::<String>("out").map(PathBuf::from) {
                Some(target) => {
                    let (file, temporary) = temporary_beside(&target)?;
                    (Box::new(file), Some((target, temporary)))
                }
                None => (Box::new(std::io::stdout()), None),
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

    /// Writes the record whose JSON text is `text` (a record of top-level fields only) as a
    /// row of `spec`, the writer's spec, read straight into the writer's cells.
    pub fn write_record_text(&mut self, spec: &Spec, text: &[u8]) -> CmdResult {
        let mut de = serde_json::Deserializer::from_slice(text);
        serde::de::DeserializeSeed::deserialize(
            RecordCells {
                columns: &spec.columns,
                cells: &mut self.cells,
            },
            &mut de,
        )
        .and_then(|()| de.end())
        .map_err(|e| {
            let sample: String = String::from_utf8_lossy(text).chars().take(200).collect();
            Fail::from(Error::Decode(format!("{e} in {sample}")))
        })?;
        self.out.write_record(&self.cells).map_err(csv_fail)?;
        self.count += 1;
        Ok(())
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
        layout.cells(&spec.columns, &slots, &mut self.cells);
        self.out.write_record(&self.cells).map_err(csv_fail)?;
        self.count += 1;
        Ok(())
    }

    /// Ends the export: the rows are flushed and, with `-o FILE`, the temporary file takes the
    /// target's place in one rename. Until then the target is untouched.
    pub fn finish(self, spec: &Spec) -> CmdResult {
        let sink = self
            .out
            .into_inner()
            .map_err(|e| Fail::io("writing the CSV", e.into_error()))?;
        if let Some((p, temporary)) = self.out_path {
            drop(sink);
            temporary.persist(&p).map_err(|e| {
                Fail::io(&format!("renaming the export to {}", p.display()), e.error)
            })?;
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

// ---- the export of a standard list ------------------------------------------------------------

/// Exports the standard list of `spec`'s resource through `GET /{path}/export`: one request,
/// read by the server in one snapshot and streamed, each record written as a CSV row as it
/// arrives (none is kept): straight into the cells for a spec of top-level columns, through
/// the layout's fields for one with nested columns (a lot's `properties.*`). With
/// `--cursor-file`, the feed cursor of that snapshot (the answer's `Prodops-Feed-Cursor`) is
/// written to the file once the export succeeded: the events after it are exactly the changes
/// the file does not hold (docs/cli.md, "Exports you can continue from"). The flags are
/// [`super::command::streamed_export_args`]'.
pub async fn export_list(
    ctx: &CommandContext,
    spec: &'static Spec,
    args: &ArgMatches,
) -> CmdResult {
    let params = crate::context::list_params(args)?;
    let cursor_file = args.get_one::<String>("cursor-file").map(PathBuf::from);
    let out = RowWriter::open(spec, args)?;
    let layout = Layout::new(spec);
    let values = ctx.client.resource_at(spec.path).export(&params).await?;
    write_snapshot(values, spec, &layout, out, cursor_file).await
}

/// Writes an answer read in one snapshot (an export, whole trees) into `out` as it arrives,
/// a CSV row per value (none is kept), then, with a `cursor_file`, the snapshot's feed cursor
/// into it once every row is written: the events after it are exactly the changes the file
/// does not hold (docs/cli.md, "Exports you can continue from").
pub async fn write_snapshot(
    mut values: prodops_client::ValuesStream,
    spec: &Spec,
    layout: &Layout,
    mut out: RowWriter,
    cursor_file: Option<PathBuf>,
) -> CmdResult {
    let cursor = values.feed_cursor().map(str::to_string);
    if cursor_file.is_some() && cursor.is_none() {
        return Err(Fail::usage(
            "the server's export names no feed cursor (Prodops-Feed-Cursor); --cursor-file needs a newer server",
        ));
    }
    let pb = super::command::spinner("{spinner} exporting {pos} {elapsed}");
    while let Some(text) = values.next_value().await? {
        if layout.is_flat() {
            out.write_record_text(spec, &text)?;
        } else {
            out.write_json(spec, layout, &text)?;
        }
        if let Some(pb) = &pb
            && out.count.is_multiple_of(1_000)
        {
            pb.set_position(out.count);
        }
    }
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    out.finish(spec)?;
    if let (Some(file), Some(cursor)) = (cursor_file, cursor) {
        crate::events::write_cursor(&file, &cursor)?;
    }
    Ok(())
}
