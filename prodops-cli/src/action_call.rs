//! Running an action command (`prodops <command> <verb>` derived from a declaration in
//! `actions.rs`): its arguments read into a call, the call sent with the client's described
//! request, the answer printed.

use std::io::{Read, Write};
use std::sync::Arc;

use clap::ArgMatches;
use prodops_client::DescribedBody;
use prodops_core::api::{AnswerBody, ParamKind};
use serde_json::{Map, Value, json};

use crate::actions::{ActionCommand, FlagKind, To};
use crate::context::{CommandContext, read_json_arg, select};
use crate::fail::{CmdResult, Fail};
use crate::fields::Fields;
use crate::output::{Shape, write_shaped};
use crate::shape::Post;

/// The value of the flag `--name` (argument id `id`), parsed as its kind says.
fn flag_value(kind: FlagKind, id: &str, name: &str, args: &ArgMatches) -> CmdResult<Option<Value>> {
    let bad = |raw: &str, what: &str| Fail::usage(format!("--{name} {raw}: {what}"));
    let uuid = |raw: &str| {
        uuid::Uuid::parse_str(raw.trim())
            .map(|u| Value::String(u.to_string()))
            .map_err(|_| bad(raw, "not a UUID"))
    };
    Ok(match kind {
        FlagKind::Bool => args.get_one::<bool>(id).map(|b| Value::Bool(*b)),
        FlagKind::UuidList => match args.get_many::<String>(id) {
            None => None,
            Some(items) => Some(Value::Array(
                items
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| uuid(s))
                    .collect::<CmdResult<_>>()?,
            )),
        },
        _ => match args.get_one::<String>(id) {
            None => None,
            Some(raw) => Some(match kind {
                FlagKind::Uuid => uuid(raw)?,
                FlagKind::Number => {
                    let n: f64 = raw.trim().parse().map_err(|_| bad(raw, "not a number"))?;
                    if n.fract() == 0.0 && n.abs() < 9e15 {
                        json!(n as i64)
                    } else {
                        json!(n)
                    }
                }
                FlagKind::Text => Value::String(raw.clone()),
                FlagKind::Json => read_json_arg(raw, &format!("--{name}"))?,
                FlagKind::File => Value::String(raw.clone()),
                FlagKind::Bool | FlagKind::UuidList => unreachable!(),
            }),
        },
    })
}

/// Runs an action command: the path's segments from the positional arguments, the query and
/// the body from the flags (over `--data`), sent with the client's described call.
/// An action's call, read from its arguments: the path's segments, the query and the body.
pub struct ActionCall {
    pub segments: Vec<String>,
    pub query: Vec<(String, String)>,
    pub body: DescribedBody,
}

pub async fn action(ctx: &CommandContext, command: &ActionCommand, args: &ArgMatches) -> CmdResult {
    let call = action_call(command, args, None)?;
    send_action(ctx, command, args, call).await
}

/// Reads an action's arguments into its call, before anything is sent: a missing or malformed
/// argument is reported before the instance or the key is looked for.
/// `field` (a body field read from elsewhere, a CSV file's lines) is set after `--data` and
/// before the flags.
pub fn action_call(
    command: &ActionCommand,
    args: &ArgMatches,
    field: Option<(&str, Value)>,
) -> CmdResult<ActionCall> {
    let desc = command.desc;
    // A field the declared answer does not have: refused before the request is sent.
    if let Some(fields) = Fields::of_answer(desc) {
        fields.check_select(&select(args))?;
    }
    Post::from_args(args)?;
    let mut segments = Vec::new();
    for (i, p) in desc.path_params().into_iter().enumerate() {
        let raw = args.get_one::<String>(p).expect("required");
        match desc.path_kinds.get(i) {
            Some(ParamKind::Uuid) | None => {
                let id = uuid::Uuid::parse_str(raw.trim()).map_err(|_| {
                    Fail::usage(format!("{}: {raw:?} is not a UUID", p.to_uppercase()))
                })?;
                segments.push(id.to_string());
            }
            Some(_) => segments.push(raw.clone()),
        }
    }
    let mut body = if desc.takes_json() {
        match args.get_one::<String>("data") {
            Some(raw) => Some(read_json_arg(raw, "--data")?),
            None => Some(Value::Object(Map::new())),
        }
    } else {
        None
    };
    if let Some((name, value)) = field
        && let Some(map) = body.as_mut().and_then(Value::as_object_mut)
    {
        map.insert(name.to_string(), value);
    }
    let mut query = Vec::new();
    let mut raw_file: Option<String> = None;
    let mut content_type: Option<String> = None;
    for f in &command.flags {
        let Some(value) = flag_value(f.kind, &f.id, &f.name, args)? else {
            continue;
        };
        match f.to {
            To::Raw => raw_file = value.as_str().map(str::to_string),
            To::ContentType => content_type = value.as_str().map(str::to_string),
            To::Query => {
                // A list goes as one comma-separated value.
                let text = match &value {
                    Value::Array(items) => items
                        .iter()
                        .map(|v| crate::output::cell(Some(v)))
                        .collect::<Vec<_>>()
                        .join(","),
                    other => crate::output::cell(Some(other)),
                };
                query.push((f.field.clone(), text));
            }
            To::Body => {
                let map = body
                    .as_mut()
                    .and_then(Value::as_object_mut)
                    .ok_or_else(|| {
                        Fail::usage(format!("--{} needs --data to be a JSON object", f.name))
                    })?;
                map.insert(f.field.clone(), value);
            }
        }
    }
    missing_required(command, body.as_ref())?;
    let body = match (raw_file, body) {
        (Some(file), _) => {
            let bytes = read_file_arg(&file)?;
            let content_type = content_type.unwrap_or_else(|| guess_content_type(&file).into());
            DescribedBody::File {
                bytes: bytes.into(),
                content_type,
            }
        }
        (None, Some(json)) => DescribedBody::Json(json),
        (None, None) => DescribedBody::None,
    };
    Ok(ActionCall {
        segments,
        query,
        body,
    })
}

/// Sends an action's call and prints its answer.
pub async fn send_action(
    ctx: &CommandContext,
    command: &ActionCommand,
    args: &ArgMatches,
    call: ActionCall,
) -> CmdResult {
    let desc = command.desc;
    let mut shape = Shape::new(ctx.format);
    shape.select = select(args);
    shape.post = Post::from_args(args)?.map(Arc::new);
    shape.width = crate::table::terminal_width();
    let mut query = call.query;
    if desc.operation_id == "event_list" {
        events_list_since(ctx, &mut query).await?;
    }
    // `--dry-run`: the server's dry run; its answer is the `{dryRun, answer, ledger, events}`
    // it sends, printed as it came.
    if crate::context::dry_run(args) && desc.takes_dry_run() {
        query.push((prodops_core::dry_run::PARAM.to_string(), "true".to_string()));
        shape.select.clear();
    }
    let answer = ctx
        .client
        .call_described(desc, &call.segments, &query, call.body)
        .await?;
    if matches!(desc.answer, AnswerBody::Bytes) {
        // A file: its bytes as they came.
        let mut out = std::io::stdout().lock();
        return out
            .write_all(&answer)
            .and_then(|()| out.flush())
            .map_err(|e| Fail::io("writing the file", e));
    }
    if answer.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let answer: Value = serde_json::from_slice(&answer).map_err(|e| {
        let sample: String = String::from_utf8_lossy(&answer).chars().take(200).collect();
        Fail::from(prodops_client::Error::Decode(format!("{e} in {sample}")))
    })?;
    if answer.is_null() {
        return Ok(());
    }
    write_shaped(&shape, &answer)
}

/// `events list --since CURSOR|now|beginning` (the declared `after`), as `events tail` reads it.
async fn events_list_since(ctx: &CommandContext, query: &mut Vec<(String, String)>) -> CmdResult {
    let Some(pos) = query.iter().position(|(k, _)| k == "after") else {
        return Ok(());
    };
    let since = crate::events::parse_since(&query[pos].1)?;
    let get = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let filters = prodops_core::api::event::EventQuery {
        event_type: get("type"),
        resource: get("resource"),
        record_id: get("recordId").and_then(|r| uuid::Uuid::parse_str(&r).ok()),
        ..Default::default()
    };
    match crate::events::resolve_since(&ctx.client, &since, &filters).await? {
        Some(after) => query[pos].1 = after,
        None => {
            query.remove(pos);
        }
    }
    Ok(())
}

/// A required body field given neither by its flag nor in `--data`.
pub fn missing_required(command: &ActionCommand, body: Option<&Value>) -> CmdResult {
    for f in command
        .flags
        .iter()
        .filter(|f| f.required && f.to == To::Body)
    {
        if body.and_then(|b| b.get(&f.field)).is_none() {
            return Err(Fail::usage(format!(
                "--{} is required (or {} in --data)",
                f.name, f.field
            )));
        }
    }
    Ok(())
}

/// The bytes of FILE, or of stdin for `-`.
fn read_file_arg(file: &str) -> CmdResult<Vec<u8>> {
    if file == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .read_to_end(&mut bytes)
            .map_err(|e| Fail::io("reading stdin", e))?;
        Ok(bytes)
    } else {
        std::fs::read(file).map_err(|e| Fail::usage(format!("{file}: {e}")))
    }
}

/// A media type from a file name's extension (`application/octet-stream` when unknown).
pub fn guess_content_type(file: &str) -> &'static str {
    let ext = std::path::Path::new(file)
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .unwrap_or_default();
    match ext.as_str() {
        "pdf" => "application/pdf",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "txt" | "text" | "log" => "text/plain",
        "csv" => "text/csv",
        "json" => "application/json",
        "xml" => "application/xml",
        "html" | "htm" => "text/html",
        "zip" => "application/zip",
        "dwg" => "image/vnd.dwg",
        "dxf" => "image/vnd.dxf",
        "step" | "stp" => "model/step",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        _ => "application/octet-stream",
    }
}
