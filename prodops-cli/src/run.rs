//! Running a parsed command.

use std::io::{IsTerminal, Read, Write};
use std::time::Duration;

use clap::ArgMatches;
use clap::parser::ValueSource;
use futures::TryStreamExt;
use prodops_client::{Client, Config, DescribedBody, ListParams, Method, Query};
use prodops_core::api::{AnswerBody, ParamKind};
use serde_json::{Map, Value, json};

use crate::actions::{self, ActionCommand, FlagKind, To};
use crate::cli::resource_command_name;
use crate::creds::{self, Source};
use crate::fail::{CmdResult, Fail};
use crate::fields::Fields;
use crate::output::{Format, ListWriter, Shape, write_shaped};
use crate::shape::Post;
use std::sync::Arc;

/// Global settings every command sees.
pub struct CommandContext {
    pub format: Format,
    /// Whether `-o/--output` was given (else the format is the default of where stdout goes).
    pub format_given: bool,
    pub client: Client,
}

fn source_of(m: &ArgMatches, id: &str) -> Option<Source> {
    match m.value_source(id) {
        Some(ValueSource::CommandLine) => Some(Source::Flag),
        Some(ValueSource::EnvVariable) => Some(Source::Env),
        _ => None,
    }
}

fn text(m: &ArgMatches, id: &str) -> Option<String> {
    m.get_one::<String>(id)
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The instance and key to use, with where each came from: flag, environment, stored login.
/// A setting and where it came from.
type Sourced = Option<(String, Source)>;

pub fn resolve(m: &ArgMatches) -> CmdResult<(Sourced, Sourced)> {
    let mut base =
        text(m, "base-url").map(|u| (u, source_of(m, "base-url").unwrap_or(Source::Flag)));
    let mut key = text(m, "api-key").map(|k| (k, source_of(m, "api-key").unwrap_or(Source::Flag)));
    if base.is_none() || key.is_none() {
        let stored = creds::load(base.as_ref().map(|(u, _)| u.as_str()))?;
        if base.is_none() {
            base = stored.base_url.map(|u| (u, Source::File));
        }
        if key.is_none() {
            key = stored.key;
        }
    }
    Ok((base, key))
}

fn client_for(m: &ArgMatches, base: &str, key: Option<&str>) -> CmdResult<Client> {
    let mut config = Config::new(base, key.unwrap_or(""));
    if key.is_none() {
        config.api_key = None;
    }
    if let Some(t) = m.get_one::<u64>("timeout") {
        config = config.timeout(Duration::from_secs(*t));
    }
    if let Some(n) = m.get_one::<u32>("max-attempts") {
        config = config.max_attempts(*n);
    }
    let client = Client::new(config).map_err(Fail::from)?;
    Ok(match text(m, "idempotency-key") {
        Some(key) if key.len() > 255 => {
            return Err(Fail::usage("--idempotency-key: at most 255 characters"));
        }
        Some(key) => client.with_idempotency_key(key),
        None => client,
    })
}

fn runtime() -> CmdResult<tokio::runtime::Runtime> {
    // One thread is plenty for a client: requests overlap on it, CSV parsing has its own
    // thread, and fewer threads keep the allocator's resident set small.
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Fail::io("starting the runtime", e))
}

pub fn run(m: ArgMatches) -> CmdResult {
    let format = Format::parse(m.get_one::<String>("output").map(String::as_str));
    let (name, sub) = m.subcommand().expect("a subcommand is required");
    match name {
        "completions" => {
            let shell = *sub
                .get_one::<clap_complete::Shell>("shell")
                .expect("required");
            return crate::cli::write_completion_registration(shell, &mut std::io::stdout())
                .map_err(|e| Fail::io("writing the script", e));
        }
        "man" => {
            return crate::cli::write_man_pages(
                sub.get_one::<String>("dir").map(std::path::Path::new),
            );
        }
        "auth" => return auth(&m, sub, format),
        _ => {}
    }
    // An action's own arguments are read first: a missing one is named before the instance.
    let action_first = match sub.subcommand() {
        // The tree view of a hierarchy is not the action's answer (see `dispatch`).
        Some(("hierarchy", _)) if name == "deliverable" && format == Format::Table => None,
        // A count's lines may come from its CSV file (see `dispatch`).
        Some(("count", args))
            if name == "inventory" && args.contains_id(crate::count::FILE_ARG) =>
        {
            None
        }
        Some((verb, args)) => match actions::find(name, verb) {
            Some(command) => Some((action_call(&command, args, None)?, command, args)),
            None => None,
        },
        None => None,
    };
    let (base, key) = resolve(&m)?;
    let Some((base, _)) = base else {
        return Err(Fail::usage(
            "no instance: pass --base-url, set PRODOPS_BASE_URL or run `prodops auth login`",
        ));
    };
    let Some((key, _)) = key else {
        return Err(Fail::auth(
            "no API key: pass --api-key, set PRODOPS_API_KEY or run `prodops auth login`",
        ));
    };
    let ctx = CommandContext {
        format,
        format_given: m.contains_id("output")
            && m.value_source("output") == Some(ValueSource::CommandLine),
        client: client_for(&m, &base, Some(&key))?,
    };
    match action_first {
        Some((call, command, args)) => runtime()?.block_on(send_action(&ctx, &command, args, call)),
        None => runtime()?.block_on(dispatch(&ctx, name, sub)),
    }
}

async fn dispatch(ctx: &CommandContext, name: &str, sub: &ArgMatches) -> CmdResult {
    if name == "api" {
        return crate::api_command::api(ctx, sub).await;
    }
    let (verb, args) = sub.subcommand().expect("a verb is required");
    if name == "deliverable" && verb == "hierarchy" && ctx.format == crate::output::Format::Table {
        return crate::csvio::deliverable::hierarchy_tree(ctx, args).await;
    }
    if name == "events" && verb == "tail" {
        return crate::events::tail(ctx, args).await;
    }
    if name == "inventory"
        && verb == "count"
        && let Some(command) = actions::find(name, verb)
    {
        return crate::count::count(ctx, &command, args).await;
    }
    if let Some(command) = actions::find(name, verb) {
        return action(ctx, &command, args).await;
    }
    let desc = prodops_core::registry::resources()
        .iter()
        .map(|k| k.desc())
        .find(|d| resource_command_name(d.path) == name)
        .ok_or_else(|| Fail::usage(format!("unknown command {name}")))?;
    if verb == "export" && ctx.format_given && ctx.format != Format::Csv {
        // -o is the output format everywhere; an export only writes CSV, to --out FILE.
        return Err(Fail::usage(
            "an export writes CSV: -o/--output is the format (csv); write to a file with --out FILE",
        ));
    }
    match (desc.path, verb) {
        ("worker", "import") => return crate::csvio::worker::import(ctx, args).await,
        ("worker", "export") => return crate::csvio::worker::export(ctx, args).await,
        ("deliverable", "import") => return crate::csvio::deliverable::import(ctx, args).await,
        ("deliverable", "export") => return crate::csvio::deliverable::export(ctx, args).await,
        _ => {}
    }
    resource_verb(ctx, desc.path, verb, args).await
}

// ---- arguments ----------------------------------------------------------------------------

fn select(args: &ArgMatches) -> Vec<String> {
    args.try_get_many::<String>("select")
        .ok()
        .flatten()
        .map(|v| {
            v.map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

pub fn list_params(args: &ArgMatches) -> CmdResult<ListParams> {
    let mut p = ListParams::new();
    if let Ok(Some(filters)) = args.try_get_many::<String>("filter") {
        for raw in filters {
            let (k, v) = raw
                .split_once('=')
                .ok_or_else(|| Fail::usage(format!("--filter {raw}: expected FIELD=VALUE")))?;
            if k.trim().is_empty() {
                return Err(Fail::usage(format!("--filter {raw}: the field is empty")));
            }
            // An empty value is no filter, as on the server.
            if !v.is_empty() {
                p = p.filter(k.trim(), v);
            }
        }
    }
    if let Ok(Some(s)) = args.try_get_one::<String>("search")
        && !s.trim().is_empty()
    {
        p = p.search(s.clone());
    }
    if let Ok(Some(s)) = args.try_get_one::<String>("sort") {
        p = p.sort(s.clone());
    }
    if let Ok(Some(n)) = args.try_get_one::<u64>("page-size") {
        p = p.page_size(*n);
    }
    if let Ok(Some(n)) = args.try_get_one::<u64>("limit") {
        p = p.limit(*n);
    }
    Ok(p)
}

/// Reads `JSON`, `@file` or `@-` (stdin).
pub fn read_json_arg(raw: &str, what: &str) -> CmdResult<Value> {
    let text = if raw == "@-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| Fail::io("reading stdin", e))?;
        s
    } else if let Some(path) = raw.strip_prefix('@') {
        std::fs::read_to_string(path).map_err(|e| Fail::usage(format!("{what} {raw}: {e}")))?
    } else {
        raw.to_string()
    };
    serde_json::from_str(&text).map_err(|e| Fail::usage(format!("{what}: not valid JSON: {e}")))
}

pub(crate) fn set_path(target: &mut Map<String, Value>, field: &str, value: Value) -> CmdResult {
    let mut parts = field.split('.').peekable();
    let mut map = target;
    while let Some(part) = parts.next() {
        if part.is_empty() {
            return Err(Fail::usage(format!("{field}: empty field name")));
        }
        if parts.peek().is_none() {
            map.insert(part.to_string(), value);
            return Ok(());
        }
        let entry = map
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        map = entry.as_object_mut().expect("an object");
    }
    Ok(())
}

/// The value `--set FIELD=TEXT` sends: the text read as the type the resource declares for the
/// field (a number for `quantity`, a boolean for `exemptFromAssignments`, an array from JSON or
/// from comma-separated items), text where the schema says text or says nothing (custom
/// properties). `null` clears a field that is not text; `--set-json` forces any JSON value.
fn typed_set_value(
    types: Option<&prodops_core::field_types::FieldTypes>,
    field: &str,
    raw: &str,
) -> CmdResult<Value> {
    use prodops_core::field_types::FieldType;
    let declared = types.and_then(|t| t.get(field));
    let text = raw.trim();
    let wrong = |what: &str| {
        Fail::usage(format!(
            "--set {field}={raw}: {field} takes {what} (or use --set-json {field}=JSON)"
        ))
    };
    Ok(match declared {
        None | Some(FieldType::Text) | Some(FieldType::Object) => Value::String(raw.to_string()),
        Some(_) if text == "null" => Value::Null,
        Some(FieldType::Integer) => match text.parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => return Err(wrong("a whole number")),
        },
        Some(FieldType::Number) => match serde_json::from_str::<serde_json::Number>(text) {
            Ok(n) => Value::Number(n),
            Err(_) => return Err(wrong("a number")),
        },
        Some(FieldType::Boolean) => match text.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Value::Bool(true),
            "false" | "no" | "0" => Value::Bool(false),
            _ => return Err(wrong("true or false")),
        },
        Some(FieldType::Array) if text.starts_with('[') => serde_json::from_str(text)
            .map_err(|_| wrong("a JSON array or comma-separated items"))?,
        Some(FieldType::Array) if text.is_empty() => Value::Array(Vec::new()),
        Some(FieldType::Array) => Value::Array(
            text.split(',')
                .map(|item| Value::String(item.trim().to_string()))
                .collect(),
        ),
    })
}

/// The body of a create/update of `resource`: `--data`, then every `--set` and `--set-json`
/// over it.
fn body_from(args: &ArgMatches, resource: &str, required: bool) -> CmdResult<Value> {
    let mut body = match args.get_one::<String>("data") {
        Some(raw) => read_json_arg(raw, "--data")?,
        None => Value::Object(Map::new()),
    };
    let many = |id: &str| -> Vec<String> {
        args.try_get_many::<String>(id)
            .ok()
            .flatten()
            .map(|v| v.cloned().collect())
            .unwrap_or_default()
    };
    let sets: Vec<(String, bool)> = many("set")
        .into_iter()
        .map(|s| (s, false))
        .chain(many("set-json").into_iter().map(|s| (s, true)))
        .collect();
    if !sets.is_empty() {
        let map = body
            .as_object_mut()
            .ok_or_else(|| Fail::usage("--set needs --data to be a JSON object"))?;
        let types = prodops_core::registry::by_path(resource)
            .map(prodops_core::field_types::FieldTypes::of);
        for (raw, json) in sets {
            let (k, v) = raw
                .split_once('=')
                .ok_or_else(|| Fail::usage(format!("--set {raw}: expected FIELD=VALUE")))?;
            let value = if json {
                serde_json::from_str(v)
                    .map_err(|e| Fail::usage(format!("--set-json {raw}: not valid JSON: {e}")))?
            } else {
                typed_set_value(types.as_ref(), k.trim(), v)?
            };
            set_path(map, k.trim(), value)?;
        }
    }
    if required && body.as_object().is_some_and(Map::is_empty) {
        return Err(Fail::usage(
            "nothing to send: give --data, --set or --set-json",
        ));
    }
    Ok(body)
}

pub(crate) fn stdout_writer(shape: &Shape) -> ListWriter<std::io::BufWriter<std::io::Stdout>> {
    ListWriter::new(
        std::io::BufWriter::with_capacity(1 << 16, std::io::stdout()),
        shape,
    )
}

// ---- resource verbs -----------------------------------------------------------------------

async fn resource_verb(
    ctx: &CommandContext,
    path: &str,
    verb: &str,
    args: &ArgMatches,
) -> CmdResult {
    let r = ctx.client.resource_at(path);
    let sel = select(args);
    let kind = prodops_core::registry::by_path(path)
        .ok_or_else(|| Fail::usage(format!("unknown resource {path}")))?;
    // Records of the resource: its declared fields are the columns.
    let post = Post::from_args(args)?.map(Arc::new);
    let shape = Shape {
        format: ctx.format,
        select: sel.clone(),
        fields: Some(Fields::of(kind)),
        post: post.clone(),
        wide: args.try_get_one::<bool>("wide").ok().flatten() == Some(&true),
        width: crate::table::terminal_width(),
    };
    // Answers that are not records of the resource.
    let plain = Shape {
        fields: None,
        ..shape.clone()
    };
    if !matches!(verb, "group-count" | "count" | "bulk-put") {
        shape.fields.as_ref().expect("set").check_select(&sel)?;
    }
    let id = || args.get_one::<String>("id").cloned().unwrap_or_default();
    let value = match verb {
        "list" => {
            let mut params = list_params(args)?;
            let all = args.get_flag("all");
            if params.limit.is_none() && !all && std::io::stdout().is_terminal() {
                // A person reads the first page; a pipe gets every page as it arrives.
                params = params.page_size(FIRST_PAGE);
                let page = r.list_page(&params).await?;
                let shown = page.values.len() as u64;
                let mut out = stdout_writer(&shape);
                for v in page.values {
                    out.push(v)?;
                }
                out.finish()?;
                if page.total_count > shown {
                    eprintln!(
                        "{} of {}; --limit N or --all",
                        thousands(shown),
                        thousands(page.total_count)
                    );
                }
                return Ok(());
            }
            let mut stream = r.list(params);
            let mut out = stdout_writer(&shape);
            while let Some(v) = stream.try_next().await? {
                out.push(v)?;
            }
            return out.finish();
        }
        "get" => r.get(id()).await?,
        "create" => r.create(&body_from(args, path, false)?).await?,
        "update" => r.update(id(), &body_from(args, path, true)?).await?,
        "delete" => {
            r.delete(id()).await?;
            return Ok(());
        }
        "archive" => r.archive(id()).await?,
        "restore" => r.restore(id()).await?,
        "query" => {
            let mut q: Query = match args.get_one::<String>("data") {
                Some(raw) => serde_json::from_value(read_json_arg(raw, "--data")?)
                    .map_err(|e| Fail::usage(format!("--data: not a query body: {e}")))?,
                None => Query::new(),
            };
            if let Some(ids) = args.get_many::<String>("ids") {
                q.id = Some(
                    ids.map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect(),
                );
            }
            let params = list_params(args)?;
            let filter = params.filter_object();
            if !filter.is_empty() {
                q.filter.get_or_insert_with(Map::new).extend(filter);
            }
            if params.search.is_some() {
                q.search = params.search.clone();
            }
            if !sel.is_empty() {
                q.select = Some(sel.clone());
            }
            if let Some(n) = params.page_size {
                q.page_size = Some(n);
            }
            let page = r.query_values(&q).await?;
            // The server answers the id with the selected fields.
            let mut shape = shape.clone();
            if !sel.is_empty() && !sel.iter().any(|s| s == "id") {
                shape.select.insert(0, "id".into());
            }
            let mut out = stdout_writer(&shape);
            for v in page.values {
                out.push(v)?;
            }
            return out.finish();
        }
        "count" => {
            let count = r.count(&list_params(args)?).await?;
            return write_shaped(&plain, &json!({ "count": count }));
        }
        "group-count" => {
            let field = args.get_one::<String>("field").expect("required");
            let groups = r.group_and_count(field, &list_params(args)?).await?;
            let mut out = stdout_writer(&plain);
            for g in groups {
                out.push(serde_json::to_value(g).expect("json"))?;
            }
            return out.finish();
        }
        "bulk-put" => {
            let body = body_from(args, path, true)?;
            if !body.is_array() {
                return Err(Fail::usage(
                    "bulk-put: --data must be a JSON array of records",
                ));
            }
            serde_json::to_value(r.bulk_put(body.as_array().expect("array")).await?).expect("json")
        }
        "bulk-update" => {
            let params = require_filter(args)?;
            let body = body_from(args, path, true)?;
            if !bulk_brake(ctx, &r, path, "update", &params, args).await? {
                return Ok(());
            }
            json!({ "count": r.bulk_update(&params, &body).await? })
        }
        "bulk-delete" => {
            let params = require_filter(args)?;
            if !bulk_brake(ctx, &r, path, "delete", &params, args).await? {
                return Ok(());
            }
            json!({ "count": r.bulk_delete(&params).await? })
        }
        other => return Err(Fail::usage(format!("unknown verb {other}"))),
    };
    match verb {
        // Answers that are not records of the resource.
        "bulk-put" | "bulk-update" | "bulk-delete" => write_shaped(&plain, &value),
        _ => write_shaped(&shape, &value),
    }
}

/// The records a list shows on a terminal without `--limit` or `--all` (as gh's 30).
const FIRST_PAGE: u64 = 30;

/// `215036` as `215,036`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn require_filter(args: &ArgMatches) -> CmdResult<ListParams> {
    let params = list_params(args)?;
    if params.filters.is_empty() && params.search.is_none() {
        return Err(Fail::usage(
            "a bulk change needs at least one --filter or --search with a value (it would touch every record; an empty value is no filter); nothing was changed",
        ));
    }
    Ok(params)
}

/// The brake of a bulk change: says on stderr how many records the filter matches, then, on a
/// terminal (stdin and stdout both), asks before changing them unless `--yes` was given. A
/// pipe is never asked. `--dry-run` prints the count and stops. True: go on.
async fn bulk_brake(
    ctx: &CommandContext,
    records: &prodops_client::Resource<Value>,
    path: &str,
    what: &str,
    params: &ListParams,
    args: &ArgMatches,
) -> CmdResult<bool> {
    // A bad --jq or --template is refused before anything is counted or changed.
    Post::from_args(args)?;
    let matched = records.count(params).await?;
    eprintln!("{matched} {path} record(s) match the filter");
    if args.get_flag("dry-run") {
        crate::output::write_answer(
            ctx.format,
            &json!({ "count": matched, "dryRun": true }),
            args,
        )?;
        return Ok(false);
    }
    let interactive = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    if matched == 0 || args.get_flag("yes") || !interactive {
        return Ok(true);
    }
    eprint!("{what} {matched} {path} record(s)? [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| Fail::io("reading the answer", e))?;
    if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
        return Ok(true);
    }
    Err(Fail::new(
        crate::fail::code::DECLINED,
        "declined; nothing was changed",
    ))
}

// ---- actions --------------------------------------------------------------------------------

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
pub(crate) struct ActionCall {
    pub(crate) segments: Vec<String>,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) body: DescribedBody,
}

pub(crate) async fn action(
    ctx: &CommandContext,
    command: &ActionCommand,
    args: &ArgMatches,
) -> CmdResult {
    let call = action_call(command, args, None)?;
    send_action(ctx, command, args, call).await
}

/// Reads an action's arguments into its call, before anything is sent: a missing or malformed
/// argument is reported before the instance or the key is looked for.
/// `field` (a body field read from elsewhere, a CSV file's lines) is set after `--data` and
/// before the flags.
pub(crate) fn action_call(
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
pub(crate) async fn send_action(
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

// ---- api --------------------------------------------------------------------------------------

// ---- auth -------------------------------------------------------------------------------------

fn mask(key: &str) -> String {
    let n = key.chars().count();
    if n <= 8 {
        "****".into()
    } else {
        let tail: String = key.chars().skip(n - 4).collect();
        format!("****{tail}")
    }
}

/// Asks the server whether the key works: 401 means no; anything else (403 included: the key
/// is valid but may not read workers) means yes.
fn verify(m: &ArgMatches, base: &str, key: &str) -> CmdResult<Result<(), String>> {
    let client = client_for(m, base, Some(key))?;
    let rt = runtime()?;
    let raw = rt.block_on(client.send_raw(Method::GET, "/worker/count", None))?;
    Ok(match raw.status {
        401 => Err("the server refused the key (401 UNAUTHORIZED)".into()),
        s if s >= 500 => {
            return Err(Fail::new(
                crate::fail::code::NETWORK,
                format!("the server answered {s}"),
            ));
        }
        _ => Ok(()),
    })
}

/// Asks a person at a terminal for the instance's URL (`auth login` without `--base-url`).
fn ask_base_url(stored: Option<&str>) -> CmdResult<String> {
    match stored {
        Some(url) => eprint!("Base URL of the prodops server [{url}]: "),
        None => {
            eprint!("Base URL of the prodops server (for example http://localhost:8080/api/v2): ")
        }
    }
    let _ = std::io::stderr().flush();
    let mut s = String::new();
    std::io::stdin()
        .read_line(&mut s)
        .map_err(|e| Fail::io("reading stdin", e))?;
    let mut url = s.trim().trim_end_matches('/').to_string();
    if url.is_empty()
        && let Some(stored) = stored
    {
        url = stored.to_string();
    }
    if url.is_empty() {
        return Err(Fail::usage("no base URL given; nothing was stored"));
    }
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(Fail::usage(format!(
            "{url}: the base URL starts with http:// or https://"
        )));
    }
    Ok(url)
}

fn auth(m: &ArgMatches, sub: &ArgMatches, format: Format) -> CmdResult {
    let (verb, args) = sub.subcommand().expect("a verb");
    match verb {
        "login" => {
            let (base, _) = resolve(m)?;
            let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
            let asks = interactive && !args.get_flag("with-token");
            let base = match base {
                // Not named by flag or environment: a person is asked (Enter keeps the URL of
                // the last login).
                Some((stored, Source::File)) if asks => ask_base_url(Some(&stored))?,
                Some((base, _)) => base,
                None if asks => ask_base_url(None)?,
                None => {
                    return Err(Fail::usage(
                        "pass --base-url (or set PRODOPS_BASE_URL) to log in",
                    ));
                }
            };
            let key = if args.get_flag("with-token") {
                let mut s = String::new();
                std::io::stdin()
                    .read_to_string(&mut s)
                    .map_err(|e| Fail::io("reading stdin", e))?;
                s.trim().to_string()
            } else if let Some(k) = text(m, "api-key") {
                k
            } else if interactive {
                // Read from the terminal with echo off: the key never shows on screen.
                crate::hidden_prompt::read_hidden("API key (input hidden): ")
                    .map_err(|e| match e.kind() {
                        std::io::ErrorKind::Interrupted => Fail::new(
                            crate::fail::code::DECLINED,
                            "interrupted; nothing was stored",
                        ),
                        _ => Fail::io("reading the key from the terminal", e),
                    })?
                    .trim()
                    .to_string()
            } else {
                return Err(Fail::usage(
                    "no key: pass --api-key, set PRODOPS_API_KEY or use --with-token",
                ));
            };
            if key.is_empty() {
                return Err(Fail::usage("the key is empty"));
            }
            if !args.get_flag("no-verify")
                && let Err(why) = verify(m, &base, &key)?
            {
                return Err(Fail::auth(format!("not stored: {why}")));
            }
            let source = creds::save(&base, &key)?;
            eprintln!(
                "logged in to {base}; the key is stored in the {}",
                match source {
                    Source::Keyring => "system keyring",
                    _ => "credentials file (readable only by you)",
                }
            );
            Ok(())
        }
        "status" => {
            crate::shape::Post::from_args(args)?;
            let (base, key) = resolve(m)?;
            let mut status = Map::new();
            status.insert("baseUrl".into(), json!(base.as_ref().map(|(u, _)| u)));
            status.insert(
                "baseUrlSource".into(),
                json!(base.as_ref().map(|(_, s)| s.as_str())),
            );
            status.insert("apiKey".into(), json!(key.as_ref().map(|(k, _)| mask(k))));
            status.insert(
                "apiKeySource".into(),
                json!(key.as_ref().map(|(_, s)| s.as_str())),
            );
            // `valid` is null when it could not be checked (no key, or the server unreachable).
            let verdict = match (&base, &key) {
                (Some((b, _)), Some((k, _))) => Some(verify(m, b, k)),
                _ => None,
            };
            let valid = match &verdict {
                Some(Ok(v)) => json!(v.is_ok()),
                _ => Value::Null,
            };
            status.insert("valid".into(), valid);
            crate::output::write_answer(format, &Value::Object(status), args)?;
            match verdict {
                Some(Ok(Ok(()))) => Ok(()),
                Some(Ok(Err(why))) => Err(Fail::auth(why)),
                Some(Err(fail)) => Err(fail),
                None => Err(Fail::auth("not logged in: no instance or no key")),
            }
        }
        "logout" => {
            if creds::clear()? {
                eprintln!("logged out: the stored key is forgotten");
            } else {
                eprintln!("nothing was stored");
            }
            Ok(())
        }
        other => Err(Fail::usage(format!("unknown auth verb {other}"))),
    }
}
