//! `prodops worker import FILE.csv` and `prodops worker export` (decisions.md section 8, CSV).
//!
//! Import streams the file: a reader thread parses and checks every row with core's worker
//! rules and groups rows into batches; batches go through `PUT /worker/bulk`, several in
//! flight. A batch the server rejects is cut down to its good rows (the server names each bad
//! record's `index`) and sent again, so good rows are written and each bad row is reported
//! with its line number. Export streams pages of the list straight into the CSV writer.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command};
use futures::{StreamExt, TryStreamExt};
use indicatif::{ProgressBar, ProgressStyle};
use prodops_client::{Error, ListParams, Query};
use prodops_core::worker::{Worker, WorkerStatus};
use serde_json::{Map, Value, json};

use crate::fail::{CmdResult, Fail};
use crate::run::Ctx;

/// The columns of an export, in order; an import accepts any subset (plus the ignored ones).
pub const COLUMNS: &[&str] = &[
    "id",
    "name",
    "customerIdentifier",
    "teamId",
    "status",
    "isArchived",
    "exemptFromAssignments",
    "unionCode",
    "qbBadgeLink",
    "createdAt",
    "updatedAt",
];

/// Server-managed columns an import reads past.
const IGNORED: &[&str] = &["organizationId", "createdAt", "updatedAt"];

pub fn import_command() -> Command {
    Command::new("import")
        .about("Imports workers from CSV through PUT /worker/bulk (upsert by id, or by --key)")
        .long_about(
            "Imports workers from CSV. The header row holds field names: id, name, customerIdentifier,\n\
             teamId, status, isArchived, exemptFromAssignments, unionCode, qbBadgeLink (createdAt,\n\
             updatedAt and organizationId are read past). Only the columns present are written.\n\
             Every row is checked before anything is sent; rows with an id (or, with --key\n\
             customerIdentifier, a known identifier) update that worker, others create one, so running\n\
             the same file twice changes nothing. Rejected rows are reported on stderr with their line\n\
             numbers while the rest are written; the exit code is then 5.",
        )
        .arg(Arg::new("file").required(true).value_name("FILE.csv").help("The CSV file (- for stdin)"))
        .arg(Arg::new("key").long("key").value_name("FIELD").value_parser(["customerIdentifier"]).help("Match rows without an id to existing workers by this field"))
        .arg(Arg::new("dry-run").long("dry-run").action(ArgAction::SetTrue).help("Check every row, write nothing"))
        .arg(Arg::new("batch-size").long("batch-size").value_name("N").default_value("5000").value_parser(clap::value_parser!(u64).range(1..=10_000)).help("Rows per PUT /worker/bulk"))
        .arg(Arg::new("concurrency").long("concurrency").value_name("N").default_value("4").value_parser(clap::value_parser!(u64).range(1..=32)).help("Batches in flight"))
        .after_help("Example:\n  prodops worker import people.csv --key customerIdentifier")
}

pub fn export_command() -> Command {
    Command::new("export")
        .about("Exports workers as CSV (streams: memory stays flat)")
        .arg(
            Arg::new("filter")
                .long("filter")
                .short('f')
                .value_name("FIELD=VALUE")
                .action(ArgAction::Append)
                .help("Equality filter (isArchived=true for archived workers)"),
        )
        .arg(
            Arg::new("search")
                .long("search")
                .value_name("TEXT")
                .help("Substring of name or customerIdentifier"),
        )
        .arg(
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
        .after_help("Example:\n  prodops worker export --filter isArchived=true -o archived.csv")
}

fn progress(len: u64, template: &str) -> Option<ProgressBar> {
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

// ---- rows ------------------------------------------------------------------------------------

/// One checked row: its line, its JSON, and the key it may be matched by.
struct Row {
    line: u64,
    /// The JSON object sent for the row (kept serialized: memory stays small).
    json: Vec<u8>,
    has_id: bool,
    key: Option<String>,
}

/// A batch of rows ready to send, and the rows of its stretch of the file already rejected.
struct Batch {
    rows: Vec<Row>,
    rejected: Vec<(u64, String)>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Col {
    Id,
    Name,
    Text(&'static str),
    Nullable(&'static str),
    Status,
    Bool(&'static str),
    Ignored,
}

fn column(name: &str) -> Option<Col> {
    Some(match name {
        "id" => Col::Id,
        "name" => Col::Name,
        "customerIdentifier" => Col::Text("customerIdentifier"),
        "teamId" => Col::Nullable("teamId"),
        "unionCode" => Col::Nullable("unionCode"),
        "qbBadgeLink" => Col::Nullable("qbBadgeLink"),
        "status" => Col::Status,
        "isArchived" => Col::Bool("isArchived"),
        "exemptFromAssignments" => Col::Bool("exemptFromAssignments"),
        n if IGNORED.contains(&n) => Col::Ignored,
        _ => return None,
    })
}

fn parse_bool(raw: &str) -> Option<bool> {
    match raw.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// Turns a CSV row into the JSON sent for it, checked with core's worker rules.
fn row_record(
    cols: &[Col],
    record: &csv::StringRecord,
    key_mode: bool,
) -> Result<Map<String, Value>, Vec<String>> {
    let mut out = Map::new();
    let mut errors = Vec::new();
    for (col, raw) in cols.iter().zip(record.iter()) {
        match *col {
            Col::Ignored => {}
            Col::Id => {
                let raw = raw.trim();
                if !raw.is_empty() {
                    match uuid::Uuid::parse_str(raw) {
                        Ok(id) => {
                            out.insert("id".into(), json!(id.to_string()));
                        }
                        Err(_) => errors.push(format!("id: {raw:?} is not a UUID")),
                    }
                }
            }
            Col::Name => {
                out.insert("name".into(), json!(raw));
            }
            Col::Text(f) => {
                out.insert(f.into(), json!(raw));
            }
            Col::Nullable(f) => {
                let v = if raw.trim().is_empty() {
                    Value::Null
                } else {
                    json!(raw)
                };
                out.insert(f.into(), v);
            }
            Col::Status => {
                if !raw.trim().is_empty() {
                    out.insert("status".into(), json!(raw.trim()));
                }
            }
            Col::Bool(f) => {
                if !raw.trim().is_empty() {
                    match parse_bool(raw) {
                        Some(b) => {
                            out.insert(f.into(), json!(b));
                        }
                        None => errors.push(format!("{f}: {raw:?} is not true or false")),
                    }
                }
            }
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    // Core's rules, on the record as the server would complete it.
    let mut candidate = out.clone();
    let epoch = "1970-01-01T00:00:00Z";
    candidate
        .entry("id")
        .or_insert_with(|| json!(uuid::Uuid::nil().to_string()));
    candidate.insert(
        "organizationId".into(),
        json!(uuid::Uuid::nil().to_string()),
    );
    candidate.insert("createdAt".into(), json!(epoch));
    candidate.insert("updatedAt".into(), json!(epoch));
    let keyed = key_mode
        && out
            .get("customerIdentifier")
            .and_then(Value::as_str)
            .is_some_and(|k| !k.trim().is_empty());
    if !candidate.contains_key("name") && (out.contains_key("id") || keyed) {
        // An update by id (or key) may leave the name as it is; a row that turns out to create
        // a worker without a name is refused by the server and reported like any other.
        candidate.insert("name".into(), json!("-"));
    }
    let kind = prodops_core::registry::by_path("worker").expect("workers are registered");
    match kind.check(Value::Object(candidate), None) {
        Ok(_) => Ok(out),
        Err(violations) => Err(violations
            .into_iter()
            .map(|v| match v.field {
                Some(f) => format!("{f}: {}", v.message),
                None => v.message,
            })
            .collect()),
    }
}

fn open_input(path: &str) -> CmdResult<(Box<dyn std::io::Read + Send>, Option<u64>)> {
    if path == "-" {
        return Ok((Box::new(std::io::stdin()), None));
    }
    let file = std::fs::File::open(path).map_err(|e| Fail::usage(format!("{path}: {e}")))?;
    let len = file.metadata().ok().map(|m| m.len());
    Ok((Box::new(file), len))
}

/// Reads, checks and batches the file on its own thread.
fn reader_thread(
    input: Box<dyn std::io::Read + Send>,
    batch_size: usize,
    key_mode: bool,
    tx: tokio::sync::mpsc::Sender<Result<Batch, Fail>>,
    pb: Option<ProgressBar>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut reader = csv::ReaderBuilder::new()
            .has_headers(true)
            .flexible(false)
            .buffer_capacity(1 << 20)
            .from_reader(input);
        let header = match reader.headers() {
            Ok(h) => h.clone(),
            Err(e) => {
                let _ =
                    tx.blocking_send(Err(Fail::rejected(format!("reading the header row: {e}"))));
                return;
            }
        };
        let mut cols = Vec::new();
        let mut unknown = Vec::new();
        for name in header.iter() {
            match column(name.trim()) {
                Some(c) if cols.contains(&c) && c != Col::Ignored => {
                    let _ = tx.blocking_send(Err(Fail::rejected(format!(
                        "line 1: column {name} appears twice"
                    ))));
                    return;
                }
                Some(c) => cols.push(c),
                None => unknown.push(name.to_string()),
            }
        }
        if !unknown.is_empty() {
            let _ = tx.blocking_send(Err(Fail::rejected(format!(
                "line 1: unknown column(s) {}; worker columns are {}",
                unknown.join(", "),
                COLUMNS.join(", ")
            ))));
            return;
        }
        if !cols.contains(&Col::Name) && !cols.contains(&Col::Id) && !key_mode {
            let _ = tx.blocking_send(Err(Fail::rejected(
                "line 1: the file needs a name or an id column (or --key)",
            )));
            return;
        }
        let key_col = cols
            .iter()
            .position(|c| *c == Col::Text("customerIdentifier"));
        if key_mode && key_col.is_none() {
            let _ = tx.blocking_send(Err(Fail::rejected(
                "--key customerIdentifier: the file has no customerIdentifier column",
            )));
            return;
        }
        let mut batch = Batch {
            rows: Vec::with_capacity(batch_size),
            rejected: Vec::new(),
        };
        let mut keys_in_batch: std::collections::HashMap<String, u64> =
            std::collections::HashMap::new();
        let mut record = csv::StringRecord::new();
        let mut n = 0u64;
        loop {
            match reader.read_record(&mut record) {
                Ok(false) => break,
                Ok(true) => {}
                Err(e) => {
                    let line = e.position().map(|p| p.line()).unwrap_or(0);
                    batch.rejected.push((line, format!("unreadable row: {e}")));
                    // A broken quote or a short row: skip it and read on.
                    if matches!(e.kind(), csv::ErrorKind::Io(_)) {
                        let _ = tx.blocking_send(Err(Fail::io(
                            "reading the file",
                            std::io::Error::other(e.to_string()),
                        )));
                        return;
                    }
                    continue;
                }
            }
            n += 1;
            let line = record.position().map(|p| p.line()).unwrap_or(n + 1);
            match row_record(&cols, &record, key_mode) {
                Ok(rec) => {
                    let key = if key_mode && !rec.contains_key("id") {
                        rec.get("customerIdentifier")
                            .and_then(Value::as_str)
                            .map(str::trim)
                            .filter(|k| !k.is_empty())
                            .map(str::to_string)
                    } else {
                        None
                    };
                    if let Some(k) = &key {
                        if let Some(first) = keys_in_batch.get(k) {
                            batch.rejected.push((
                                line,
                                format!("customerIdentifier {k:?} already appears on line {first}"),
                            ));
                            continue;
                        }
                        keys_in_batch.insert(k.clone(), line);
                    }
                    batch.rows.push(Row {
                        line,
                        has_id: rec.contains_key("id"),
                        json: serde_json::to_vec(&rec).expect("json"),
                        key,
                    });
                }
                Err(errors) => batch.rejected.push((line, errors.join("; "))),
            }
            if batch.rows.len() >= batch_size {
                if let Some(pb) = &pb {
                    pb.set_position(record.position().map(|p| p.byte()).unwrap_or(0));
                }
                keys_in_batch.clear();
                let full = std::mem::replace(
                    &mut batch,
                    Batch {
                        rows: Vec::with_capacity(batch_size),
                        rejected: Vec::new(),
                    },
                );
                if tx.blocking_send(Ok(full)).is_err() {
                    return;
                }
            }
        }
        if let Some(pb) = &pb {
            pb.set_position(pb.length().unwrap_or(0));
        }
        if !batch.rows.is_empty() || !batch.rejected.is_empty() {
            let _ = tx.blocking_send(Ok(batch));
        }
    })
}

/// Finds the ids of workers carrying the batch's keys (active and archived ones).
async fn resolve_keys(ctx: &Ctx, batch: &mut Batch) -> CmdResult {
    let keys: Vec<Value> = batch
        .rows
        .iter()
        .filter_map(|r| r.key.clone())
        .map(Value::String)
        .collect();
    if keys.is_empty() {
        return Ok(());
    }
    let workers = ctx.client.workers();
    let mut found: std::collections::HashMap<String, Vec<String>> =
        std::collections::HashMap::new();
    for archived in [false, true] {
        let mut page = 1;
        loop {
            let mut q = Query::new()
                .filter("customerIdentifier", Value::Array(keys.clone()))
                .filter("isArchived", json!(archived))
                .select(["customerIdentifier"])
                .page_size(10_000);
            q.page = Some(page);
            let answer = workers.query_values(&q).await?;
            let n = answer.values.len();
            for v in answer.values {
                if let (Some(id), Some(k)) = (
                    v.get("id").and_then(Value::as_str),
                    v.get("customerIdentifier").and_then(Value::as_str),
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
    let rows = std::mem::take(&mut batch.rows);
    for mut row in rows {
        match row.key.as_ref().and_then(|k| found.get(k)) {
            Some(ids) if ids.len() > 1 => {
                batch.rejected.push((
                    row.line,
                    format!(
                        "customerIdentifier {:?} matches {} workers; give the id instead",
                        row.key.as_deref().unwrap_or(""),
                        ids.len()
                    ),
                ));
                continue;
            }
            Some(ids) => {
                // The row's object gets the id as its first field.
                let mut with_id = format!("{{\"id\":{},", json!(ids[0])).into_bytes();
                if row.json.len() > 2 {
                    with_id.extend_from_slice(&row.json[1..]);
                } else {
                    with_id.pop();
                    with_id.push(b'}');
                }
                row.json = with_id;
                row.has_id = true;
            }
            None => {}
        }
        batch.rows.push(row);
    }
    Ok(())
}

fn body_of(rows: &[Row]) -> bytes::Bytes {
    let mut buf = Vec::with_capacity(rows.iter().map(|r| r.json.len() + 1).sum::<usize>() + 2);
    buf.push(b'[');
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        buf.extend_from_slice(&r.json);
    }
    buf.push(b']');
    buf.into()
}

/// Sends a batch; rows the server rejects are taken out and the rest sent again.
/// Returns (written, rejected rows in line order).
async fn send_batch(
    ctx: &Ctx,
    mut batch: Batch,
    key_mode: bool,
) -> CmdResult<(u64, Vec<(u64, String)>)> {
    if key_mode {
        resolve_keys(ctx, &mut batch).await?;
    }
    let workers = ctx.client.workers();
    let mut written = 0u64;
    let mut pending: Vec<Vec<Row>> = vec![std::mem::take(&mut batch.rows)];
    while let Some(rows) = pending.pop() {
        if rows.is_empty() {
            continue;
        }
        match workers.bulk_put_raw(body_of(&rows)).await {
            Ok(done) => written += done.count,
            Err(Error::Api { status: 413, .. }) if rows.len() > 1 => {
                let mut rows = rows;
                let second = rows.split_off(rows.len() / 2);
                pending.push(second);
                pending.push(rows);
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
                        batch.rejected.push((r.line, message.clone()));
                    }
                    continue;
                }
                let mut good = Vec::with_capacity(rows.len());
                for (i, r) in rows.into_iter().enumerate() {
                    match bad.get(&i) {
                        Some(msgs) => batch.rejected.push((r.line, msgs.join("; "))),
                        None => good.push(r),
                    }
                }
                pending.push(good);
            }
            Err(e) => return Err(e.into()),
        }
    }
    batch.rejected.sort_by_key(|(line, _)| *line);
    Ok((written, batch.rejected))
}

pub async fn import(ctx: &Ctx, args: &ArgMatches) -> CmdResult {
    let path = args.get_one::<String>("file").expect("required").clone();
    let key_mode = args.get_one::<String>("key").is_some();
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
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Batch, Fail>>(concurrency + 1);
    let reader = reader_thread(input, batch_size, key_mode, tx, pb.clone());
    let batches =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
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
                return Ok((n, 0, rej, batch.rows.iter().any(|r| !r.has_id)));
            }
            let without_id = batch.rows.iter().any(|r| !r.has_id && r.key.is_none());
            let (w, rej) = send_batch(ctx, batch, key_mode).await?;
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
                    report(&pb, "warning: rows without an id create new workers on every run; use ids or --key customerIdentifier to make re-runs change nothing".into());
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

// ---- export ------------------------------------------------------------------------------------

fn status_text(s: WorkerStatus) -> &'static str {
    match s {
        WorkerStatus::Active => "active",
        WorkerStatus::Inactive => "inactive",
        WorkerStatus::Terminated => "terminated",
    }
}

fn time_text(t: &chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

fn write_worker<W: Write>(out: &mut csv::Writer<W>, w: &Worker) -> csv::Result<()> {
    let id = w.id.to_string();
    let team = w.team_id.map(|t| t.to_string()).unwrap_or_default();
    let created = time_text(&w.created_at);
    let updated = time_text(&w.updated_at);
    out.write_record([
        id.as_str(),
        w.name.as_str(),
        w.customer_identifier.as_str(),
        team.as_str(),
        status_text(w.status),
        if w.is_archived { "true" } else { "false" },
        if w.exempt_from_assignments {
            "true"
        } else {
            "false"
        },
        w.union_code.as_deref().unwrap_or(""),
        w.qb_badge_link.as_deref().unwrap_or(""),
        created.as_str(),
        updated.as_str(),
    ])
}

fn csv_fail(e: csv::Error) -> Fail {
    match e.into_kind() {
        csv::ErrorKind::Io(io) => Fail::io("writing the CSV", io),
        other => Fail::usage(format!("writing the CSV: {other:?}")),
    }
}

pub async fn export(ctx: &Ctx, args: &ArgMatches) -> CmdResult {
    let mut params: ListParams = crate::run::list_params(args)?;
    params.page_size = args.get_one::<u64>("page-size").copied();
    params.prefetch = Some(2);
    let out_path = args.get_one::<String>("out").map(PathBuf::from);
    let sink: Box<dyn Write> = match &out_path {
        Some(p) => Box::new(
            std::fs::File::create(p).map_err(|e| Fail::usage(format!("{}: {e}", p.display())))?,
        ),
        None => Box::new(std::io::stdout().lock()),
    };
    let mut out = csv::WriterBuilder::new()
        .buffer_capacity(1 << 20)
        .from_writer(sink);
    out.write_record(COLUMNS).map_err(csv_fail)?;
    let mut pages = ctx.client.workers().pages(params);
    let mut pb = None;
    let mut n = 0u64;
    while let Some(page) = pages.try_next().await? {
        if pb.is_none() {
            pb = Some(progress(
                page.total_count,
                "{spinner} exporting [{bar:40}] {pos}/{len} {elapsed} eta {eta}",
            ));
        }
        for w in &page.values {
            write_worker(&mut out, w).map_err(csv_fail)?;
        }
        n += page.values.len() as u64;
        if let Some(Some(pb)) = &pb {
            pb.set_position(n);
        }
    }
    out.flush().map_err(|e| Fail::io("writing the CSV", e))?;
    if let Some(Some(pb)) = &pb {
        pb.finish_and_clear();
    }
    if let Some(p) = out_path {
        eprintln!("exported {n} worker(s) to {}", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(names: &[&str]) -> Vec<Col> {
        names.iter().map(|n| column(n).unwrap()).collect()
    }

    #[test]
    fn a_good_row_becomes_its_present_columns() {
        let c = cols(&[
            "name",
            "customerIdentifier",
            "teamId",
            "status",
            "isArchived",
            "createdAt",
        ]);
        let r = csv::StringRecord::from(vec![
            "Ann",
            "E1",
            "",
            "inactive",
            "false",
            "2020-01-01T00:00:00Z",
        ]);
        let rec = row_record(&c, &r, false).unwrap();
        assert_eq!(
            Value::Object(rec),
            json!({"name": "Ann", "customerIdentifier": "E1", "teamId": null, "status": "inactive", "isArchived": false})
        );
    }

    #[test]
    fn bad_rows_name_what_is_wrong() {
        let c = cols(&["id", "name", "status", "teamId", "isArchived"]);
        let bad_id = row_record(
            &c,
            &csv::StringRecord::from(vec!["nope", "A", "", "", ""]),
            false,
        )
        .unwrap_err();
        assert!(bad_id[0].contains("id"), "{bad_id:?}");
        let empty_name = row_record(
            &c,
            &csv::StringRecord::from(vec!["", " ", "", "", ""]),
            false,
        )
        .unwrap_err();
        assert!(empty_name.join(" ").contains("name"), "{empty_name:?}");
        let bad_status = row_record(
            &c,
            &csv::StringRecord::from(vec!["", "A", "retired", "", ""]),
            false,
        )
        .unwrap_err();
        assert!(bad_status.join(" ").contains("status"), "{bad_status:?}");
        let bad_team = row_record(
            &c,
            &csv::StringRecord::from(vec!["", "A", "", "x", ""]),
            false,
        )
        .unwrap_err();
        assert!(bad_team.join(" ").contains("teamId"), "{bad_team:?}");
        let bad_bool = row_record(
            &c,
            &csv::StringRecord::from(vec!["", "A", "", "", "maybe"]),
            false,
        )
        .unwrap_err();
        assert!(bad_bool.join(" ").contains("isArchived"), "{bad_bool:?}");
    }

    #[test]
    fn an_update_by_id_may_leave_out_the_name() {
        let c = cols(&["id", "status"]);
        let r = csv::StringRecord::from(vec!["0191c3a8-0000-7000-8000-000000000001", "terminated"]);
        assert!(row_record(&c, &r, false).is_ok());
    }

    #[test]
    fn export_columns_are_importable() {
        for c in COLUMNS {
            assert!(column(c).is_some(), "{c}");
        }
    }
}
