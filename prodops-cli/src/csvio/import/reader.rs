//! The reader thread: it reads the file, checks each row ([`row_json`]) and places the checked
//! rows into batches ([`Placer`]; in a tree, a row after its parent's row), handing each full
//! batch to the senders one batch ahead of them.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{Hash, Hasher};
use std::io::{Read, Seek};

use indicatif::ProgressBar;
use uuid::Uuid;

use super::batches::Batch;
use super::rows::{Checked, RowBuffers, row_json};
use crate::csvio::spec::{Column, Spec};
use crate::fail::{CmdResult, Fail};

/// The file being imported: a file can be read more than once (the `--key` check reads it
/// first for keys given twice); a stream is read once.
pub(super) enum Input {
    File(std::fs::File),
    Stream(Box<dyn Read + Send>),
}

impl Input {
    /// A reader from the start of the input. A stream can be read from its start only once.
    fn read_from_start(&mut self) -> std::io::Result<Box<dyn Read + Send + '_>> {
        match self {
            Input::File(file) => {
                file.rewind()?;
                Ok(Box::new(&*file))
            }
            Input::Stream(stream) => Ok(Box::new(stream)),
        }
    }
}

/// Opens FILE (or stdin for `-`) and its length. `rereadable`: the input will be read more
/// than once, so stdin is first copied to an unnamed temporary file (disk, not memory).
pub(super) fn open_input(path: &str, rereadable: bool) -> CmdResult<(Input, Option<u64>)> {
    if path == "-" {
        if !rereadable {
            return Ok((Input::Stream(Box::new(std::io::stdin())), None));
        }
        let mut spool =
            tempfile::tempfile().map_err(|e| Fail::io("spooling stdin to a temporary file", e))?;
        std::io::copy(&mut std::io::stdin().lock(), &mut spool)
            .map_err(|e| Fail::io("reading stdin", e))?;
        return Ok((Input::File(spool), None));
    }
    let file = std::fs::File::open(path).map_err(|e| Fail::usage(format!("{path}: {e}")))?;
    let len = file.metadata().ok().map(|m| m.len());
    Ok((Input::File(file), len))
}

/// How the file's text is written: the cell delimiter and the character encoding.
#[derive(Clone, Copy)]
pub(super) struct TextFormat {
    pub(super) delimiter: u8,
    pub(super) encoding: &'static encoding_rs::Encoding,
}

impl TextFormat {
    /// `--delimiter` and `--encoding`.
    pub(super) fn parse(delimiter: &str, encoding: &str) -> CmdResult<TextFormat> {
        let delimiter = match delimiter {
            "\\t" | "tab" | "\t" => b'\t',
            d if d.len() == 1 && d.is_ascii() && !matches!(d, "\"" | "\n" | "\r") => {
                d.as_bytes()[0]
            }
            d => {
                return Err(Fail::usage(format!(
                    "--delimiter {d:?}: one ASCII character other than a quote or a line break (, ; | or tab)"
                )));
            }
        };
        let encoding = encoding_rs::Encoding::for_label(encoding.trim().as_bytes()).ok_or_else(|| {
            Fail::usage(format!(
                "--encoding {encoding}: not an encoding name (utf-8, windows-1252, latin1, utf-16le, ...)"
            ))
        })?;
        Ok(TextFormat {
            delimiter,
            encoding,
        })
    }
}

/// The CSV reader every pass over the file uses: the file's text decoded to UTF-8 first when it
/// is in another encoding (a UTF-8 file is read as it is; csv drops a leading byte-order mark).
fn csv_reader<'r>(
    input: Box<dyn Read + Send + 'r>,
    format: TextFormat,
) -> csv::Reader<Box<dyn Read + Send + 'r>> {
    let input: Box<dyn Read + Send + 'r> = if format.encoding == encoding_rs::UTF_8 {
        input
    } else {
        Box::new(
            encoding_rs_io::DecodeReaderBytesBuilder::new()
                .encoding(Some(format.encoding))
                .build(input),
        )
    };
    csv::ReaderBuilder::new()
        .has_headers(true)
        .flexible(false)
        .delimiter(format.delimiter)
        .buffer_capacity(1 << 20)
        .from_reader(input)
}

/// Why a row could not be read, with what to do about a file that is not UTF-8.
fn unreadable(e: &csv::Error) -> String {
    if matches!(e.kind(), csv::ErrorKind::Utf8 { .. }) {
        format!(
            "unreadable row: {e} (the file is not UTF-8; a spreadsheet's CSV is often Windows-1252: use --encoding windows-1252)"
        )
    } else {
        format!("unreadable row: {e}")
    }
}

/// Where a row's `--key` lies: the key column, and the id column (a row with an id is matched
/// by it, not by its key).
#[derive(Clone, Copy)]
struct KeyCells {
    key: usize,
    id: Option<usize>,
    /// The key's scope column (`Spec::key_scope`), for a scoped key.
    scope: Option<usize>,
}

impl KeyCells {
    /// The row's key as the import matches it (trimmed, not empty; with its scope's UUID
    /// before it for a scoped key, as `Checked::key` holds it), when it has no id.
    fn of<'r>(&self, record: &'r csv::StringRecord) -> Option<std::borrow::Cow<'r, str>> {
        if let Some(id) = self.id
            && !record.get(id).unwrap_or("").trim().is_empty()
        {
            return None;
        }
        let key = Some(record.get(self.key)?.trim()).filter(|k| !k.is_empty())?;
        match self.scope {
            None => Some(std::borrow::Cow::Borrowed(key)),
            Some(scope) => {
                let scope = Uuid::parse_str(record.get(scope)?.trim()).ok()?;
                Some(std::borrow::Cow::Owned(Spec::key_text(Some(scope), key)))
            }
        }
    }
}

fn key_hash(key: &str) -> u64 {
    let mut h = std::hash::DefaultHasher::new();
    key.hash(&mut h);
    h.finish()
}

/// Keys given to more than one row of the file, found before any row is sent, so that no row
/// of such a key is written whatever batch it falls in. Held as 64-bit hashes (8 bytes a row
/// while the file is read, then only the repeated ones): a hash that two different keys share
/// only holds their rows back for an exact comparison ([`Repeated::finish`]).
fn repeated_key_hashes<R: Read>(
    reader: &mut csv::Reader<R>,
    cells: KeyCells,
) -> CmdResult<HashSet<u64>> {
    let mut record = csv::StringRecord::new();
    let mut hashes = Vec::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) if matches!(e.kind(), csv::ErrorKind::Io(_)) => {
                return Err(Fail::io(
                    "reading the file",
                    std::io::Error::other(e.to_string()),
                ));
            }
            // Reported by the pass that writes.
            Err(_) => continue,
        }
        if let Some(key) = cells.of(&record) {
            hashes.push(key_hash(&key));
        }
    }
    hashes.sort_unstable();
    Ok(hashes
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0])
        .collect())
}

/// The rows whose key's hash is repeated: held back by line (their text is not kept), and at
/// the end either refused (the key is given more than once) or read again and placed (another
/// key shared the hash).
#[derive(Default)]
struct Repeated {
    hashes: HashSet<u64>,
    lines: HashMap<String, Vec<u64>>,
}

impl Repeated {
    /// Holds the row back when its key may be repeated.
    fn holds(&mut self, key: Option<&str>, line: u64) -> bool {
        let Some(key) = key.filter(|_| !self.hashes.is_empty()) else {
            return false;
        };
        if !self.hashes.contains(&key_hash(key)) {
            return false;
        }
        self.lines.entry(key.to_string()).or_default().push(line);
        true
    }

    /// The rejections of the keys given more than once, and the lines to read again.
    fn finish(self, spec: &Spec) -> (Vec<(u64, String)>, HashSet<u64>) {
        let key_name = spec.key.unwrap_or("key");
        let mut rejected = Vec::new();
        let mut again = HashSet::new();
        for (key, lines) in self.lines {
            if lines.len() < 2 {
                again.extend(lines);
                continue;
            }
            let listed = list_lines(&lines);
            for line in lines {
                rejected.push((
                    line,
                    format!(
                        "{} appears on lines {listed}; no row of it was written (give each row its own {key_name}, or an id)",
                        spec.describe_key(&key)
                    ),
                ));
            }
        }
        rejected.sort_unstable_by_key(|(line, _)| *line);
        (rejected, again)
    }
}

/// `2 and 5`, `2, 5 and 9`, the first ten and how many more.
fn list_lines(lines: &[u64]) -> String {
    const SHOWN: usize = 10;
    let mut shown: Vec<String> = lines.iter().take(SHOWN).map(u64::to_string).collect();
    if lines.len() > SHOWN {
        return format!("{} and {} more", shown.join(", "), lines.len() - SHOWN);
    }
    let last = shown.pop().unwrap_or_default();
    if shown.is_empty() {
        last
    } else {
        format!("{} and {last}", shown.join(", "))
    }
}

/// How many batches' worth of a tree's rows the placer holds back to group siblings: a bulk
/// call costs the server a recomputation of every parent it writes under (each reads all of
/// its children), so a batch of 5,000 rows spread over 200 parents costs about 40 times as
/// much as one under 5 parents. Holding 4 batches keeps that grouping for files in any order
/// (a shuffled or sorted spreadsheet) at a few megabytes of rows.
const GROUPING_WINDOW_BATCHES: usize = 4;

/// Places checked rows into batches: in a tree, a row goes in once its parent's row has
/// (rows whose parent is not in the file go in at the end: the parent is on the server), and
/// rows are grouped by parent ([`GROUPING_WINDOW_BATCHES`]), siblings keeping their file order
/// (their order under their parent).
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
    /// A tree's rows whose parent is placed (or that have none), not yet in a batch: by
    /// parent, each group in file order.
    ready: HashMap<Option<Uuid>, VecDeque<(Checked, Vec<u8>)>>,
    /// How many rows `ready` holds.
    ready_rows: usize,
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
            self.hold(row, json.to_vec());
            if self.ready_rows >= self.batch_size.saturating_mul(GROUPING_WINDOW_BATCHES) {
                return self.place_ready(false);
            }
            return true;
        }
        self.place_with_children(row, json, false)
    }

    /// Holds a tree's row whose parent is placed until [`Placer::place_ready`] groups it.
    fn hold(&mut self, row: Checked, json: Vec<u8>) {
        self.ready
            .entry(row.parent)
            .or_default()
            .push_back((row, json));
        self.ready_rows += 1;
    }

    /// Places held rows, the largest group of siblings first: until the batch being filled is
    /// full (`all` false), or every held row (`all`, at the end of the file). A placed row's
    /// children that waited for it join the held rows. False when the importer has stopped.
    fn place_ready(&mut self, all: bool) -> bool {
        let index = self.batch.index;
        while self.ready_rows > 0 && (all || self.batch.index == index) {
            // The groups by size, largest first (ties by parent, so that a file is always cut
            // the same way); sorted once per round, not once per group.
            let mut order: Vec<(usize, Option<Uuid>)> = self
                .ready
                .iter()
                .map(|(p, rows)| (rows.len(), *p))
                .collect();
            order.sort_unstable_by(|a, b| b.cmp(a));
            for (_, parent) in order {
                if !all && self.batch.index != index {
                    break;
                }
                let Some(mut group) = self.ready.remove(&parent) else {
                    continue;
                };
                while let Some((row, json)) = group.pop_front() {
                    self.ready_rows -= 1;
                    let id = row.id;
                    if !self.place(row, &json, false) {
                        return false;
                    }
                    if let Some(children) = id.and_then(|id| self.waiting.remove(&id)) {
                        for (child, json) in children {
                            self.hold(child, json);
                        }
                    }
                    if !all && self.batch.index != index {
                        break;
                    }
                }
                if !group.is_empty() {
                    // The batch filled up in the middle of the group: the rest stays held, in
                    // file order (no sibling of it can have joined since: a row placed here
                    // releases only its own children). Its rows were never taken off the
                    // count.
                    let held = self.ready.entry(parent).or_default();
                    let since = std::mem::replace(held, group);
                    held.extend(since);
                }
            }
        }
        true
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
        if !self.place_ready(true) {
            return;
        }
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
pub(super) fn reader_thread(
    spec: &'static Spec,
    mut input: Input,
    format: TextFormat,
    batch_size: usize,
    key_mode: bool,
    tx: tokio::sync::mpsc::Sender<Result<Batch, Fail>>,
    pb: Option<ProgressBar>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut placer = Placer {
            batch_size,
            tree: spec.tree,
            batch: Batch::new(0, batch_size, 0),
            placed: HashMap::new(),
            seen: HashSet::new(),
            waiting: HashMap::new(),
            ready: HashMap::new(),
            ready_rows: 0,
            tx: tx.clone(),
            permit: None,
        };
        if let Err(f) = read_file(spec, &mut input, format, key_mode, &mut placer, &pb) {
            return placer.fail(f);
        }
        placer.finish(&pb);
    })
}

/// The header's columns: each header's column (`None` for one the import reads past). Headers
/// match without regard to case (`Name`, `CUSTOMERIDENTIFIER`), as spreadsheets write them.
fn header_columns<'s>(
    spec: &'s Spec,
    header: &csv::StringRecord,
    format: TextFormat,
) -> CmdResult<Vec<Option<&'s Column>>> {
    let mut cols: Vec<Option<&Column>> = Vec::new();
    let mut unknown = Vec::new();
    for name in header.iter() {
        let name = name.trim();
        match spec.column_ignoring_case(name) {
            Some(c) if cols.contains(&Some(c)) => {
                return Err(Fail::rejected(format!(
                    "line 1: column {} appears twice",
                    c.name
                )));
            }
            Some(c) => cols.push(Some(c)),
            None if spec.ignored.iter().any(|i| i.eq_ignore_ascii_case(name)) => cols.push(None),
            None => unknown.push(name.to_string()),
        }
    }
    if unknown.is_empty() {
        return Ok(cols);
    }
    // A header of one cell holding another delimiter: the file is not comma-separated.
    if header.len() == 1 {
        for (d, shown) in [(b';', ";"), (b'\t', "\\t"), (b'|', "|")] {
            if d != format.delimiter && header[0].contains(d as char) {
                return Err(Fail::rejected(format!(
                    "line 1: the file looks `{shown}`-separated; use --delimiter '{shown}'"
                )));
            }
        }
    }
    let hints: Vec<String> = unknown
        .iter()
        .map(|name| match spec.closest_column(name) {
            Some(c) => format!("{name} (did you mean {c}?)"),
            None => name.clone(),
        })
        .collect();
    Err(Fail::rejected(format!(
        "line 1: unknown column(s) {}; {} columns are {}",
        hints.join(", "),
        spec.noun,
        spec.headers().join(", ")
    )))
}

/// Reads every row of the file into the placer: the header checked, the `--key` values given
/// more than once found first ([`repeated_key_hashes`]), then each row checked and placed.
fn read_file(
    spec: &'static Spec,
    input: &mut Input,
    format: TextFormat,
    key_mode: bool,
    placer: &mut Placer,
    pb: &Option<ProgressBar>,
) -> CmdResult {
    let io = |e: std::io::Error| Fail::io("reading the file", e);
    let mut reader = csv_reader(input.read_from_start().map_err(io)?, format);
    let header = reader
        .headers()
        .map_err(|e| Fail::rejected(format!("reading the header row: {}", unreadable(&e))))?
        .clone();
    let cols = header_columns(spec, &header, format)?;
    let position = |name: &str| cols.iter().position(|c| c.is_some_and(|c| c.name == name));
    if position(spec.create_needs).is_none() && position("id").is_none() && !key_mode {
        return Err(Fail::rejected(format!(
            "line 1: the file needs a {} or an id column (or --key)",
            spec.create_needs
        )));
    }
    let key_cells = match spec.key.filter(|_| key_mode) {
        Some(k) => match (position(k), spec.key_scope.map(position)) {
            (Some(key), None) => Some(KeyCells {
                key,
                id: position("id"),
                scope: None,
            }),
            (Some(key), Some(Some(scope))) => Some(KeyCells {
                key,
                id: position("id"),
                scope: Some(scope),
            }),
            // A scoped key is the default key (lots): a file without its columns but with ids
            // is matched by id alone.
            (_, Some(_)) if position("id").is_some() => None,
            (None, _) => {
                return Err(Fail::rejected(format!(
                    "--key {k}: the file has no {k} column"
                )));
            }
            (Some(_), Some(None)) => {
                let s = spec.key_scope.unwrap_or_default();
                return Err(Fail::rejected(format!(
                    "line 1: the file has no {s} column: rows are matched by {s} and {k} ({k} is unique per {s}), or by id"
                )));
            }
        },
        None => None,
    };
    let mut repeated = Repeated::default();
    if let Some(cells) = key_cells {
        // The first pass goes on from the header; the rows are then read again from the start
        // (a `--key` import's input is a file: `open_input` spools stdin to one).
        repeated.hashes = repeated_key_hashes(&mut reader, cells)?;
        drop(reader);
        reader = csv_reader(input.read_from_start().map_err(io)?, format);
        reader
            .headers()
            .map_err(|e| Fail::rejected(format!("reading the header row: {e}")))?;
    }
    let mut record = csv::StringRecord::new();
    let mut buffers = RowBuffers::default();
    let mut n = 0u64;
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                    return Err(io(std::io::Error::other(e.to_string())));
                }
                // A broken quote or a short row: report it and read on.
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                placer.batch.rejected.push((line, unreadable(&e)));
                continue;
            }
        }
        n += 1;
        let line = record.position().map(|p| p.line()).unwrap_or(n + 1);
        if n.is_multiple_of(4096)
            && let Some(pb) = pb
        {
            pb.set_position(record.position().map(|p| p.byte()).unwrap_or(0));
        }
        if repeated.holds(key_cells.and_then(|c| c.of(&record)).as_deref(), line) {
            continue;
        }
        if !place_row(spec, &cols, &record, line, key_mode, &mut buffers, placer) {
            return Ok(());
        }
    }
    drop(reader);
    let (rejected, again) = repeated.finish(spec);
    placer.batch.rejected.extend(rejected);
    if again.is_empty() {
        return Ok(());
    }
    // Rows held back only because another key shared their key's hash: read once more.
    let mut reader = csv_reader(input.read_from_start().map_err(io)?, format);
    let _ = reader.headers();
    while reader
        .read_record(&mut record)
        .map_err(|e| io(std::io::Error::other(e.to_string())))?
    {
        let Some(line) = record
            .position()
            .map(|p| p.line())
            .filter(|l| again.contains(l))
        else {
            continue;
        };
        if !place_row(spec, &cols, &record, line, key_mode, &mut buffers, placer) {
            return Ok(());
        }
    }
    Ok(())
}

/// Checks a row and places it (or records why it is refused). False when the importer has
/// stopped.
fn place_row(
    spec: &Spec,
    cols: &[Option<&Column>],
    record: &csv::StringRecord,
    line: u64,
    key_mode: bool,
    buffers: &mut RowBuffers,
    placer: &mut Placer,
) -> bool {
    match row_json(spec, cols, record, line, key_mode, buffers) {
        Ok(row) => placer.take(row, buffers.json.as_bytes()),
        Err(errors) => {
            placer.batch.rejected.push((line, errors.join("; ")));
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::*;

    /// A tree's rows as a file gives them: (id, parent index or none).
    fn rows_of(parents: &[Option<usize>]) -> Vec<(Uuid, Option<Uuid>)> {
        let ids: Vec<Uuid> = (0..parents.len())
            .map(|i| Uuid::from_u128(i as u128 + 1))
            .collect();
        parents
            .iter()
            .enumerate()
            .map(|(i, p)| (ids[i], p.map(|p| ids[p])))
            .collect()
    }

    /// Runs the placer over `rows` in the given order; the batches' rows as (id, parent).
    fn place_all(
        rows: &[(Uuid, Option<Uuid>)],
        batch_size: usize,
    ) -> Vec<Vec<(Uuid, Option<Uuid>)>> {
        let (tx, mut rx) = tokio::sync::mpsc::channel(rows.len() + 2);
        let mut placer = Placer {
            batch_size,
            tree: true,
            batch: Batch::new(0, batch_size, 0),
            placed: HashMap::new(),
            seen: HashSet::new(),
            waiting: HashMap::new(),
            ready: HashMap::new(),
            ready_rows: 0,
            tx,
            permit: None,
        };
        for (line, (id, parent)) in rows.iter().enumerate() {
            let json = serde_json::json!({"id": id, "parentId": parent}).to_string();
            let row = Checked {
                line: line as u64 + 2,
                id: Some(*id),
                parent: *parent,
                key: None,
            };
            assert!(placer.take(row, json.as_bytes()));
        }
        placer.finish(&None);
        let mut batches = Vec::new();
        while let Ok(batch) = rx.try_recv() {
            let batch = batch.unwrap_or_else(|_| panic!("the placer failed"));
            assert!(batch.rejected.is_empty());
            let body: Vec<Value> = serde_json::from_slice(&batch.body).unwrap();
            batches.push(
                body.iter()
                    .map(|v| {
                        (
                            v["id"].as_str().unwrap().parse().unwrap(),
                            v["parentId"].as_str().map(|p| p.parse().unwrap()),
                        )
                    })
                    .collect(),
            );
        }
        batches
    }

    /// Every row placed once, after its parent's row, and siblings in their file order.
    fn check_order(file: &[(Uuid, Option<Uuid>)], batches: &[Vec<(Uuid, Option<Uuid>)>]) {
        let placed: Vec<(Uuid, Option<Uuid>)> = batches.iter().flatten().copied().collect();
        assert_eq!(placed.len(), file.len(), "every row placed once");
        let position: HashMap<Uuid, usize> = placed
            .iter()
            .enumerate()
            .map(|(i, (id, _))| (*id, i))
            .collect();
        assert_eq!(position.len(), file.len());
        for (i, (_, parent)) in placed.iter().enumerate() {
            if let Some(p) = parent {
                assert!(position[p] < i, "a row after its parent's row");
            }
        }
        let file_position: HashMap<Uuid, usize> = file
            .iter()
            .enumerate()
            .map(|(i, (id, _))| (*id, i))
            .collect();
        let mut last_under: HashMap<Option<Uuid>, usize> = HashMap::new();
        for (id, parent) in &placed {
            let at = file_position[id];
            if let Some(before) = last_under.insert(*parent, at) {
                assert!(before < at, "siblings keep their file order");
            }
        }
    }

    /// A shuffle that needs no generator: multiplying by a number prime to the length.
    fn shuffled<T: Copy>(items: &[T]) -> Vec<T> {
        let n = items.len();
        let step = (1..n)
            .rev()
            .find(|s| gcd(*s, n) == 1 && *s > n / 3)
            .unwrap_or(1);
        (0..n).map(|i| items[(i * step + 7) % n]).collect()
    }

    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 { a } else { gcd(b, a % b) }
    }

    #[test]
    fn a_shuffled_tree_is_cut_into_batches_of_few_parents() {
        // 4 orders x 5 phases x 200 stages, rows in a scrambled order, batches of 100.
        let mut parents = Vec::new();
        for o in 0..4 {
            parents.push(None);
            let order = o * (1 + 5 * 201);
            for p in 0..5 {
                let phase = parents.len();
                parents.push(Some(order));
                let _ = p;
                parents.extend(std::iter::repeat_n(Some(phase), 200));
            }
        }
        let tree = rows_of(&parents);
        let file = shuffled(&tree);
        let batches = place_all(&file, 100);
        check_order(&file, &batches);
        // Without grouping, a batch of 100 scrambled stages falls under most of the 20
        // phases; grouped, a full batch holds the children of one or two parents.
        let full: Vec<_> = batches.iter().filter(|b| b.len() == 100).collect();
        assert!(full.len() >= 35, "{} full batches", full.len());
        let spread: usize = full
            .iter()
            .map(|b| b.iter().map(|(_, p)| *p).collect::<HashSet<_>>().len())
            .sum();
        assert!(
            spread <= full.len() * 3,
            "{spread} parents over {} full batches",
            full.len()
        );
    }

    #[test]
    fn a_chain_and_rows_before_their_parents_are_placed_in_order() {
        // A chain of 50 given deepest first, and a fan of 30 under its middle.
        let mut parents: Vec<Option<usize>> = (0..50usize).map(|i| i.checked_sub(1)).collect();
        parents.extend(std::iter::repeat_n(Some(25), 30));
        let tree = rows_of(&parents);
        let file: Vec<_> = tree.iter().rev().copied().collect();
        let batches = place_all(&file, 7);
        check_order(&file, &batches);
    }

    proptest! {
        #[test]
        fn any_tree_in_any_order_is_placed_once_parents_first_siblings_in_order(
            shape in prop::collection::vec(0usize..1000, 1..300),
            order in prop::collection::vec(any::<u32>(), 300),
            batch_size in 1usize..40,
        ) {
            // Node i's parent is an earlier node (or none when its draw says so).
            let parents: Vec<Option<usize>> = shape
                .iter()
                .enumerate()
                .map(|(i, d)| (i > 0 && d % 5 != 0).then(|| d % i))
                .collect();
            let tree = rows_of(&parents);
            let mut file: Vec<(u32, (Uuid, Option<Uuid>))> =
                tree.iter().enumerate().map(|(i, r)| (order[i], *r)).collect();
            file.sort_by_key(|(k, _)| *k);
            let file: Vec<_> = file.into_iter().map(|(_, r)| r).collect();
            let batches = place_all(&file, batch_size);
            for b in &batches[..batches.len().saturating_sub(1)] {
                prop_assert!(b.len() == batch_size);
            }
            check_order(&file, &batches);
        }
    }
}
