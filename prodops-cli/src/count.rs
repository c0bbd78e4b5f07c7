//! `prodops inventory count FILE.csv`: the declared `POST /inventory/count` with its `lines`
//! read from a CSV file (a header naming the fields of a line: `itemId`, `locationId`,
//! `quantity`, and optionally `unitMeasureId`, and `lotId` or `lot` for an item tracked by lot
//! or serial). A `lot` cell is the lot's code, as written on the shelf: it is looked up among
//! the lots of the row's item (`GET /lot` by code) and sent as the line's `lotId`. Every row is
//! checked with core's types and rules before anything is sent, and every refusal, the CLI's or
//! the server's, names the file's line number. The answer printed is the lines that differ from the ledger (with the
//! adjustment posted for each); `--dry-run` prints the same and posts nothing.

use std::sync::Arc;

use clap::ArgMatches;
use prodops_core::stock_count::{CountLine, check_lines};
use serde_json::{Map, Value, json};

use crate::action_call::action_call;
use crate::actions::ActionCommand;
use crate::context::CommandContext;
use crate::fail::{CmdResult, Fail};
use crate::output::Shape;
use crate::output::write_shaped;
use crate::shape::Post;

/// The positional argument the CSV file comes in.
pub const FILE_ARG: &str = "file";

/// At most this many refused rows are listed.
const MAX_LISTED: usize = 50;

/// The CSV's rows as read: each line's JSON (without the `lotId` a `lot` code names), its
/// number in the file and its lot code, and the refusals so far.
struct Rows {
    lines: Vec<Value>,
    numbers: Vec<u64>,
    codes: Vec<Option<String>>,
    errors: Vec<String>,
}

/// The CSV's lines as JSON, with each one's line number in the file, `lot` codes resolved to
/// lot ids; every refused row is reported (by line number) before anything is sent.
async fn read_lines(ctx: &CommandContext, file: &str) -> CmdResult<(Vec<Value>, Vec<u64>)> {
    let Rows {
        mut lines,
        mut numbers,
        codes,
        mut errors,
    } = read_rows(file)?;
    if codes.iter().any(Option::is_some) {
        let known = resolve_codes(ctx, &mut lines, &numbers, &codes, &mut errors).await?;
        // A row whose code named no lot of its item is refused already; the rest are checked.
        let mut keep = known.into_iter();
        let mut keep_number = keep.clone();
        lines.retain(|_| keep.next().unwrap_or(true));
        numbers.retain(|_| keep_number.next().unwrap_or(true));
    }
    // Core's rules over the rows that parsed (a count's size, quantities, no item, location
    // and lot twice).
    let mut typed: Vec<CountLine> = Vec::new();
    for (l, n) in lines.iter().zip(&numbers) {
        match serde_json::from_value::<CountLine>(l.clone()) {
            Ok(l) => typed.push(l),
            Err(e) => errors.push(format!("line {n}: {e}")),
        }
    }
    if !typed.is_empty() || errors.is_empty() {
        for v in check_lines(&typed) {
            errors.push(name_line(&v.field, &v.message, &numbers));
        }
    }
    if !errors.is_empty() {
        return Err(refused(file, &errors));
    }
    Ok((lines, numbers))
}

/// The refusal of a file's rows: how many, and the first [`MAX_LISTED`] by line.
pub fn refused(file: &str, errors: &[String]) -> Fail {
    let more = errors.len().saturating_sub(MAX_LISTED);
    let mut message = format!("{file}: {} refused:", plural(errors.len(), "row"));
    for e in errors.iter().take(MAX_LISTED) {
        message.push_str(&format!("\n  - {e}"));
    }
    if more > 0 {
        message.push_str(&format!("\n  ... and {more} more"));
    }
    Fail::usage(message)
}

/// Sets each line's `lotId` from its `lot` code: the lot of that code among its item's lots
/// (archived ones included: a count may find a lot thought gone). A code no lot of the item
/// has is refused by line, naming the items whose lot it is when it is another item's.
/// Returns, for each line, whether it is good (no code, or a code found).
async fn resolve_codes(
    ctx: &CommandContext,
    lines: &mut [Value],
    numbers: &[u64],
    codes: &[Option<String>],
    errors: &mut Vec<String>,
) -> CmdResult<Vec<bool>> {
    let mut wanted: Vec<&str> = codes.iter().flatten().map(String::as_str).collect();
    wanted.sort_unstable();
    wanted.dedup();
    // (code, item) → lot id, for every lot of a wanted code.
    let mut found: std::collections::HashMap<(String, String), String> = Default::default();
    let lots = ctx.client.resource_at("lot");
    for chunk in wanted.chunks(5_000) {
        for archived in [false, true] {
            let mut page = 1;
            loop {
                let mut q = prodops_client::Query::new()
                    .filter("code", json!(chunk))
                    .filter("isArchived", json!(archived))
                    .select(["code", "itemId"])
                    .page_size(10_000);
                q.page = Some(page);
                let answer = lots.query_values(&q).await?;
                let n = answer.values.len();
                for v in answer.values {
                    if let (Some(id), Some(code), Some(item)) =
                        (v["id"].as_str(), v["code"].as_str(), v["itemId"].as_str())
                    {
                        found.insert((code.to_string(), item.to_string()), id.to_string());
                    }
                }
                if n < 10_000 {
                    break;
                }
                page += 1;
            }
        }
    }
    let mut good = Vec::with_capacity(lines.len());
    for ((line, number), code) in lines.iter_mut().zip(numbers).zip(codes) {
        let Some(code) = code else {
            good.push(true);
            continue;
        };
        // The item as the server reads it (a UUID in any case is one item).
        let item = line["itemId"]
            .as_str()
            .and_then(|i| uuid::Uuid::parse_str(i).ok())
            .map(|i| i.to_string())
            .unwrap_or_default();
        good.push(found.contains_key(&(code.clone(), item.clone())));
        match found.get(&(code.clone(), item.clone())) {
            Some(id) => {
                line["lotId"] = json!(id);
            }
            None => {
                let mut others: Vec<&str> = found
                    .keys()
                    .filter(|(c, _)| c == code)
                    .map(|(_, i)| i.as_str())
                    .collect();
                others.sort_unstable();
                errors.push(if others.is_empty() {
                    format!("line {number}: lot: no lot {code:?} of item {item}")
                } else {
                    format!(
                        "line {number}: lot: lot {code:?} is a lot of item {}, not of this row's item {item}",
                        others.join(" and of item ")
                    )
                });
            }
        }
    }
    Ok(good)
}

/// Reads the file's rows: each checked cell by cell, none yet against core's rules.
fn read_rows(file: &str) -> CmdResult<Rows> {
    let reader: Box<dyn std::io::Read> = if file == "-" {
        Box::new(std::io::stdin())
    } else {
        Box::new(std::fs::File::open(file).map_err(|e| Fail::usage(format!("{file}: {e}")))?)
    };
    let mut csv = csv::ReaderBuilder::new()
        .flexible(false)
        .trim(csv::Trim::All)
        .from_reader(reader);
    let headers = csv
        .headers()
        .map_err(|e| Fail::usage(format!("{file}: line 1: {e}")))?
        .clone();
    let known = [
        "itemId",
        "locationId",
        "quantity",
        "unitMeasureId",
        "lotId",
        "lot",
    ];
    for h in &headers {
        if !known.contains(&h) {
            return Err(Fail::usage(format!(
                "{file}: line 1: unknown column {h:?} (the columns are itemId, locationId, quantity and optionally unitMeasureId and lotId or lot)"
            )));
        }
    }
    if headers.iter().any(|h| h == "lotId") && headers.iter().any(|h| h == "lot") {
        return Err(Fail::usage(format!(
            "{file}: line 1: give the lot by its id (lotId) or its code (lot), not both columns"
        )));
    }
    for required in ["itemId", "locationId", "quantity"] {
        if !headers.iter().any(|h| h == required) {
            return Err(Fail::usage(format!(
                "{file}: line 1: the column {required} is missing"
            )));
        }
    }
    let mut lines = Vec::new();
    let mut numbers = Vec::new();
    let mut codes = Vec::new();
    let mut errors = Vec::new();
    for record in csv.records() {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                errors.push(format!("line {line}: {e}"));
                continue;
            }
        };
        let line = record.position().map_or(0, |p| p.line());
        let mut object = Map::new();
        let mut refused = false;
        let mut code = None;
        for (h, cell) in headers.iter().zip(record.iter()) {
            if cell.is_empty() {
                continue;
            }
            if h == "lot" {
                if cell.contains('\0') {
                    errors.push(format!(
                        "line {line}: lot: text must not contain the NUL character (U+0000)"
                    ));
                    refused = true;
                } else {
                    code = Some(cell.to_string());
                }
                continue;
            }
            let value = if h == "quantity" {
                match cell.parse::<f64>() {
                    Ok(q) if q.is_finite() => json!(q),
                    _ => {
                        errors.push(format!("line {line}: quantity: {cell:?} is not a number"));
                        refused = true;
                        continue;
                    }
                }
            } else {
                if uuid::Uuid::parse_str(cell).is_err() {
                    let shown: String = cell.chars().take(60).collect();
                    let more = if shown.len() < cell.len() { "..." } else { "" };
                    errors.push(format!("line {line}: {h}: {shown:?}{more} is not a UUID"));
                    refused = true;
                    continue;
                }
                json!(cell)
            };
            object.insert(h.to_string(), value);
        }
        if refused {
            continue;
        }
        if let Err(e) = serde_json::from_value::<CountLine>(Value::Object(object.clone())) {
            errors.push(format!("line {line}: {e}"));
            continue;
        }
        lines.push(Value::Object(object));
        numbers.push(line);
        codes.push(code);
    }
    Ok(Rows {
        lines,
        numbers,
        codes,
        errors,
    })
}

pub fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The file's line number of a field `lines[i]...`.
fn line_of(field: &str, numbers: &[u64]) -> Option<u64> {
    let rest = field.strip_prefix("lines[")?;
    let (i, _) = rest.split_once(']')?;
    numbers.get(i.parse::<usize>().ok()?).copied()
}

/// A refusal naming `lines[i].field` as the file's line number and the field.
pub fn name_line(field: &Option<String>, message: &str, numbers: &[u64]) -> String {
    if let Some(f) = field
        && let Some(rest) = f.strip_prefix("lines[")
        && let Some((i, tail)) = rest.split_once(']')
        && let Ok(i) = i.parse::<usize>()
        && let Some(line) = numbers.get(i)
    {
        let tail = tail.trim_start_matches('.');
        // Another line a message names, by number too.
        let message = numbers
            .iter()
            .enumerate()
            .fold(message.to_string(), |m, (j, n)| {
                m.replace(&format!("lines[{j}]"), &format!("line {n}"))
            });
        return if tail.is_empty() {
            format!("line {line}: {message}")
        } else {
            format!("line {line}: {tail}: {message}")
        };
    }
    match field {
        Some(f) => format!("{f}: {message}"),
        None => message.to_string(),
    }
}

/// A refusal of the server's whose details name `lines[i]...`: each named by the file's line
/// number (`numbers[i]`) in the message, and given a `line` where the error is written as JSON.
pub fn lines_named(mut fail: Fail, numbers: &[u64]) -> Fail {
    if let Some(details) = fail
        .api_error
        .as_ref()
        .and_then(|e| e["error"]["details"].as_array())
        .filter(|d| !d.is_empty())
    {
        let head = fail.message.lines().next().unwrap_or_default().to_string();
        let mut message = head;
        for d in details {
            let field = d["field"].as_str().map(str::to_string);
            let text = d["message"].as_str().unwrap_or_default();
            message.push_str(&format!("\n  - {}", name_line(&field, text, numbers)));
        }
        fail.message = message;
    }
    // Where the error is written as JSON, each detail about a line carries its number.
    if let Some(details) = fail
        .api_error
        .as_mut()
        .and_then(|e| e["error"]["details"].as_array_mut())
    {
        for d in details {
            if let Some(line) = d["field"].as_str().and_then(|f| line_of(f, numbers)) {
                d["line"] = json!(line);
            }
        }
    }
    fail
}

/// `prodops inventory count [FILE] [--dry-run] [--reason R]`.
pub async fn count(ctx: &CommandContext, command: &ActionCommand, args: &ArgMatches) -> CmdResult {
    let Some(file) = args.get_one::<String>(FILE_ARG).cloned() else {
        // The lines as JSON (--lines or --data): the declared action as it is.
        return crate::action_call::action(ctx, command, args).await;
    };
    if args.get_one::<String>("lines").is_some() {
        return Err(Fail::usage(
            "give the lines in FILE or with --lines, not both",
        ));
    }
    let (lines, numbers) = read_lines(ctx, &file).await?;
    let call = action_call(command, args, Some(("lines", Value::Array(lines))))?;
    let answer = ctx
        .client
        .call_described(command.desc, &call.segments, &call.query, call.body)
        .await;
    let answer = match answer {
        Ok(a) => a,
        Err(err) => return Err(lines_named(Fail::from(err), &numbers)),
    };
    let answer: Value = serde_json::from_slice(&answer)
        .map_err(|e| Fail::from(prodops_client::Error::Decode(e.to_string())))?;
    let lines = answer["lines"].as_array().cloned().unwrap_or_default();
    let differences: Vec<Value> = lines
        .into_iter()
        .zip(&numbers)
        .filter(|(l, _)| l["difference"].as_f64().is_some_and(|d| d != 0.0))
        .map(|(mut l, n)| {
            if let Some(o) = l.as_object_mut() {
                o.insert("line".into(), json!(n));
                if answer["dryRun"] == json!(true) {
                    o.remove("transactionId");
                }
            }
            l
        })
        .collect();
    let counted = answer["lines"].as_array().map_or(0, Vec::len);
    eprintln!(
        "{} counted, {} {}",
        plural(counted, "line"),
        plural(differences.len(), "difference"),
        if answer["dryRun"] == json!(true) {
            "(dry run: nothing posted)"
        } else {
            "adjusted"
        }
    );
    let mut shape = Shape::new(ctx.format);
    shape.post = Post::from_args(args)?.map(Arc::new);
    shape.width = crate::table::terminal_width();
    write_shaped(&shape, &json!({ "values": differences }))
}
