//! The reader thread: it reads the file, checks each row ([`row_json`]) and places the checked
//! rows into batches ([`Placer`]; in a tree, a row after its parent's row), handing each full
//! batch to the senders one batch ahead of them.

use std::collections::{HashMap, HashSet};

use indicatif::ProgressBar;
use uuid::Uuid;

use super::batches::Batch;
use super::rows::{Checked, RowBuffers, row_json};
use crate::csvio::{Column, Spec};
use crate::fail::{CmdResult, Fail};

pub(super) fn open_input(path: &str) -> CmdResult<(Box<dyn std::io::Read + Send>, Option<u64>)> {
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
pub(super) fn reader_thread(
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
