//! `prodops delivery receive ID FILE.csv`: the declared `POST /delivery/{id}/receive` with its
//! `lines` read from a receiving clerk's CSV file, lots named by code.
//!
//! A row is what arrived of one manifest line, or of one lot of it: the line by
//! `manifestLineId`, or by `itemId` (the delivery's line of that item; with `locationId` when
//! the item has several lines), `quantity`, optionally `locationId`, and for an item tracked by
//! lot or serial either `lot` (a code; with `expiresAt` for a new lot) or `lots`
//! (`CODE:QTY;CODE:QTY`). Rows of the same manifest line add up, as the receive's entries do. A
//! code the item has no lot of yet makes the lot on receipt (the server's rule). Every row is
//! checked with core's types and rules before anything is sent, refusals name the file's line
//! numbers, and the file is received in one request: all of it or, refused, none of it.

use clap::ArgMatches;
use prodops_core::delivery::{ReceiveLine, check_received_lots};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::action_call::{action_call, send_action};
use crate::actions::ActionCommand;
use crate::context::CommandContext;
use crate::count::{lines_named, name_line, refused};
use crate::fail::{CmdResult, Fail};

/// The positional argument the CSV file comes in.
pub const FILE_ARG: &str = "file";

const COLUMNS: [&str; 7] = [
    "manifestLineId",
    "itemId",
    "quantity",
    "locationId",
    "lot",
    "expiresAt",
    "lots",
];

/// A row as read: its entry's JSON (without the manifest line an `itemId` names), and the item
/// it names.
struct Row {
    entry: Map<String, Value>,
    item: Option<Uuid>,
    line: u64,
}

/// At most this many characters of a cell are shown in a message.
fn shown(cell: &str) -> String {
    let s: String = cell.chars().take(60).collect();
    if s.len() < cell.len() {
        format!("{s:?}...")
    } else {
        format!("{s:?}")
    }
}

fn quantity(cell: &str) -> Option<f64> {
    cell.parse::<f64>().ok().filter(|q| q.is_finite())
}

/// `CODE:QTY;CODE:QTY` as received lots.
fn lots_cell(cell: &str) -> Result<Vec<Value>, String> {
    let mut lots = Vec::new();
    for part in cell.split(';') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let Some((code, qty)) = part.rsplit_once(':') else {
            return Err(format!(
                "lots: {} is not CODE:QUANTITY (lots are CODE:QTY;CODE:QTY)",
                shown(part)
            ));
        };
        let Some(q) = quantity(qty.trim()) else {
            return Err(format!(
                "lots: the quantity of {} is not a number",
                shown(part)
            ));
        };
        lots.push(json!({"code": code.trim(), "quantity": q}));
    }
    if lots.is_empty() {
        return Err("lots: no CODE:QTY in the cell".into());
    }
    Ok(lots)
}

fn read_rows(file: &str) -> CmdResult<(Vec<Row>, Vec<String>)> {
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
    for h in &headers {
        if !COLUMNS.contains(&h) {
            return Err(Fail::usage(format!(
                "{file}: line 1: unknown column {h:?} (the columns are {})",
                COLUMNS.join(", ")
            )));
        }
    }
    let has = |c: &str| headers.iter().any(|h| h == c);
    if !has("quantity") {
        return Err(Fail::usage(format!(
            "{file}: line 1: the column quantity is missing"
        )));
    }
    if !has("manifestLineId") && !has("itemId") {
        return Err(Fail::usage(format!(
            "{file}: line 1: name each row's manifest line: a manifestLineId or an itemId column"
        )));
    }
    if has("lot") && has("lots") {
        return Err(Fail::usage(format!(
            "{file}: line 1: give lots in a lot column (one a row) or a lots column (CODE:QTY;...), not both"
        )));
    }
    if has("expiresAt") && !has("lot") {
        return Err(Fail::usage(format!(
            "{file}: line 1: expiresAt is the expiry of a row's lot: it needs a lot column"
        )));
    }
    let mut rows = Vec::new();
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
        let mut entry = Map::new();
        let mut item = None;
        let mut bad = Vec::new();
        let (mut lot, mut expires) = (None, None);
        for (h, cell) in headers.iter().zip(record.iter()) {
            if cell.is_empty() {
                continue;
            }
            if cell.contains('\0') {
                bad.push(format!(
                    "{h}: text must not contain the NUL character (U+0000)"
                ));
                continue;
            }
            match h {
                "quantity" => match quantity(cell) {
                    Some(q) => {
                        entry.insert("quantity".into(), json!(q));
                    }
                    None => bad.push(format!("quantity: {} is not a number", shown(cell))),
                },
                "manifestLineId" | "itemId" | "locationId" => match Uuid::parse_str(cell) {
                    Ok(id) if h == "itemId" => item = Some(id),
                    Ok(id) => {
                        entry.insert(h.to_string(), json!(id));
                    }
                    Err(_) => bad.push(format!("{h}: {} is not a UUID", shown(cell))),
                },
                "lot" => lot = Some(cell.to_string()),
                "expiresAt" => expires = Some(cell.to_string()),
                "lots" => match lots_cell(cell) {
                    Ok(lots) => {
                        entry.insert("lots".into(), Value::Array(lots));
                    }
                    Err(e) => bad.push(e),
                },
                _ => {}
            }
        }
        if !entry.contains_key("quantity") && bad.is_empty() {
            bad.push("quantity: required".into());
        }
        if !entry.contains_key("manifestLineId") && item.is_none() && bad.is_empty() {
            bad.push("manifestLineId or itemId: one of them is required".into());
        }
        match (lot, expires) {
            (Some(code), expires) => {
                let mut l = json!({"code": code, "quantity": entry.get("quantity").cloned().unwrap_or(json!(0))});
                if let Some(e) = expires {
                    l["expiresAt"] = json!(e);
                }
                entry.insert("lots".into(), json!([l]));
            }
            (None, Some(_)) => bad.push("expiresAt: the row names no lot".into()),
            (None, None) => {}
        }
        if !bad.is_empty() {
            errors.extend(bad.into_iter().map(|b| format!("line {line}: {b}")));
            continue;
        }
        rows.push(Row { entry, item, line });
    }
    Ok((rows, errors))
}

/// The delivery's manifest lines: (id, item, location).
async fn manifest(
    ctx: &CommandContext,
    delivery: &str,
) -> CmdResult<Vec<(String, String, Option<String>)>> {
    let lines = ctx.client.resource_at("delivery-manifest-line");
    let mut out = Vec::new();
    let mut page = 1;
    loop {
        let mut q = prodops_client::Query::new()
            .filter("deliveryId", json!(delivery))
            .select(["itemId", "locationId"])
            .page_size(10_000);
        q.page = Some(page);
        let answer = lines.query_values(&q).await?;
        let n = answer.values.len();
        for v in answer.values {
            if let (Some(id), Some(item)) = (v["id"].as_str(), v["itemId"].as_str()) {
                out.push((
                    id.to_string(),
                    item.to_string(),
                    v["locationId"].as_str().map(str::to_string),
                ));
            }
        }
        if n < 10_000 {
            break;
        }
        page += 1;
    }
    Ok(out)
}

/// Gives each row naming an item the manifest line of that item (a row naming both is checked
/// to agree); refusals by line.
fn name_manifest_lines(
    rows: &mut [Row],
    manifest: &[(String, String, Option<String>)],
    errors: &mut Vec<String>,
) {
    for row in rows.iter_mut() {
        let Some(item) = row.item.map(|i| i.to_string()) else {
            continue;
        };
        let line = row.line;
        if let Some(id) = row.entry.get("manifestLineId").and_then(Value::as_str) {
            match manifest.iter().find(|(m, _, _)| m == id) {
                Some((_, of, _)) if *of != item => errors.push(format!(
                    "line {line}: itemId: manifest line {id} is a line of item {of}, not {item}"
                )),
                _ => {}
            }
            continue;
        }
        let mut of_item: Vec<&(String, String, Option<String>)> =
            manifest.iter().filter(|(_, i, _)| *i == item).collect();
        if of_item.len() > 1
            && let Some(loc) = row.entry.get("locationId").and_then(Value::as_str)
        {
            of_item.retain(|(_, _, l)| l.as_deref() == Some(loc));
        }
        match of_item.as_slice() {
            [(id, _, _)] => {
                row.entry.insert("manifestLineId".into(), json!(id));
            }
            [] => errors.push(format!(
                "line {line}: itemId: the delivery has no manifest line of item {item}"
            )),
            several => errors.push(format!(
                "line {line}: itemId: the delivery has {} manifest lines of item {item}; give manifestLineId",
                several.len()
            )),
        }
    }
}

/// `prodops delivery receive ID FILE.csv [--dry-run]`.
pub async fn receive(
    ctx: &CommandContext,
    command: &ActionCommand,
    args: &ArgMatches,
) -> CmdResult {
    let file = args
        .get_one::<String>(FILE_ARG)
        .cloned()
        .expect("called with a file");
    if args.get_one::<String>("lines").is_some() {
        return Err(Fail::usage(
            "give the lines in FILE or with --lines, not both",
        ));
    }
    let delivery = args
        .get_one::<String>("id")
        .cloned()
        .ok_or_else(|| Fail::usage("the delivery id is required"))?;
    let (mut rows, mut errors) = read_rows(&file)?;
    if rows.iter().any(|r| r.item.is_some()) {
        let manifest = manifest(ctx, delivery.trim()).await?;
        name_manifest_lines(&mut rows, &manifest, &mut errors);
    }
    let numbers: Vec<u64> = rows.iter().map(|r| r.line).collect();
    // Core's rules of each entry and its lots (the server applies them again, with the facts).
    if errors.is_empty() {
        for (i, row) in rows.iter().enumerate() {
            match serde_json::from_value::<ReceiveLine>(Value::Object(row.entry.clone())) {
                Ok(entry) => {
                    if let Some(lots) = &entry.lots {
                        for v in check_received_lots(&format!("lines[{i}]"), entry.quantity, lots) {
                            errors.push(name_line(&v.field, &v.message, &numbers));
                        }
                    }
                }
                Err(e) => errors.push(format!("line {}: {e}", row.line)),
            }
        }
    }
    if rows.is_empty() && errors.is_empty() {
        errors.push("the file has no rows: nothing to receive".into());
    }
    if !errors.is_empty() {
        return Err(refused(&file, &errors));
    }
    let lines: Vec<Value> = rows.into_iter().map(|r| Value::Object(r.entry)).collect();
    let call = action_call(command, args, Some(("lines", Value::Array(lines))))?;
    send_action(ctx, command, args, call)
        .await
        .map_err(|f| lines_named(f, &numbers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lots_cells_read_code_quantity_pairs() {
        assert_eq!(
            lots_cell("A-1:2; B:3.5;").unwrap(),
            vec![
                json!({"code": "A-1", "quantity": 2.0}),
                json!({"code": "B", "quantity": 3.5})
            ]
        );
        assert_eq!(
            lots_cell("X:Y:1").unwrap(),
            vec![json!({"code": "X:Y", "quantity": 1.0})],
            "a code may hold a colon: the quantity is after the last"
        );
        assert!(lots_cell("A").unwrap_err().contains("CODE:QUANTITY"));
        assert!(lots_cell("A:two").unwrap_err().contains("not a number"));
        assert!(lots_cell(" ; ").is_err());
    }
}
