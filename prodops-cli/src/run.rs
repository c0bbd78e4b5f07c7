//! Running a parsed command: the context built from the global flags, each command dispatched
//! to its module, the standard verbs of a resource and `auth` run here.

use std::io::{IsTerminal, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use clap::ArgMatches;
use clap::parser::ValueSource;
use futures::TryStreamExt;
use prodops_client::{Client, Config, ListParams, Method, Query};
use serde_json::{Map, Value, json};

use crate::action_call::{action, action_call, send_action};
use crate::actions;
use crate::args::resource_command_name;
use crate::context::{CommandContext, list_params, read_json_arg, select, set_path, stdout_writer};
use crate::creds::{self, Source};
use crate::fail::{CmdResult, Fail};
use crate::fields::Fields;
use crate::output::{Format, Shape, write_shaped};
use crate::shape::Post;

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
        // The tree view of a hierarchy is not the action's answer (see `dispatch`), nor are
        // the sentences of `why`.
        Some(("hierarchy" | "why", _)) if name == "deliverable" && format == Format::Table => None,
        // Nor is the tree or the Graphviz graph of a lot's trace.
        Some(("trace", args))
            if name == "lot" && crate::trace::drawn(args, format == Format::Table) =>
        {
            None
        }
        // A count's lines may come from its CSV file (see `dispatch`).
        Some(("count", args))
            if name == "inventory" && args.contains_id(crate::count::FILE_ARG) =>
        {
            None
        }
        // So may a receive's (see `dispatch`).
        Some(("receive", args))
            if name == "delivery" && args.contains_id(crate::receive::FILE_ARG) =>
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
    if name == "deliverable" && verb == "why" && ctx.format == crate::output::Format::Table {
        return crate::why::why(ctx, args).await;
    }
    if name == "lot"
        && verb == "trace"
        && crate::trace::drawn(args, ctx.format == crate::output::Format::Table)
    {
        return crate::trace::trace(ctx, args).await;
    }
    if name == "deliverable" && verb == "gantt" {
        return crate::gantt::gantt(ctx, args).await;
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
    if name == "delivery"
        && verb == "receive"
        && args.contains_id(crate::receive::FILE_ARG)
        && let Some(command) = actions::find(name, verb)
    {
        return crate::receive::receive(ctx, &command, args).await;
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
        ("lot", "import") => return crate::csvio::lot::import(ctx, args).await,
        ("lot", "export") => return crate::csvio::lot::export(ctx, args).await,
        ("deliverable", "import") => return crate::csvio::deliverable::import(ctx, args).await,
        ("deliverable", "export") => return crate::csvio::deliverable::export(ctx, args).await,
        _ => {}
    }
    resource_verb(ctx, desc.path, verb, args).await
}

// ---- arguments ----------------------------------------------------------------------------

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
    if crate::context::dry_run(args) && WRITE_VERBS.contains(&verb) {
        return dry_run_verb(ctx, kind.desc(), verb, args, &plain).await;
    }
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
            if !bulk_brake(&r, path, "update", &params, args).await? {
                return Ok(());
            }
            json!({ "count": r.bulk_update(&params, &body).await? })
        }
        "bulk-delete" => {
            let params = require_filter(args)?;
            if !bulk_brake(&r, path, "delete", &params, args).await? {
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

/// The verbs of a resource command that write: `--dry-run` sends them as a dry run.
const WRITE_VERBS: [&str; 8] = [
    "create",
    "update",
    "delete",
    "archive",
    "restore",
    "bulk-put",
    "bulk-update",
    "bulk-delete",
];

/// A write verb with `--dry-run`: the request the verb sends, as a dry run on the server
/// (`Client::dry_run`). Prints what it would have written (`{dryRun, answer, ledger,
/// events}`); nothing is written.
async fn dry_run_verb(
    ctx: &CommandContext,
    desc: &prodops_core::ResourceDesc,
    verb: &str,
    args: &ArgMatches,
    plain: &Shape,
) -> CmdResult {
    let (method, template) = crate::args::standard_route(desc, verb)
        .ok_or_else(|| Fail::usage(format!("{} has no verb {verb}", desc.path)))?;
    let id = args
        .try_get_one::<String>("id")
        .ok()
        .flatten()
        .cloned()
        .unwrap_or_default();
    let mut path = template.replace("{id}", &prodops_client::paths::encode(&id));
    let mut method = Method::from_name(method).expect("a standard method");
    let body = match verb {
        "create" => Some(body_from(args, desc.path, false)?),
        "update" => Some(body_from(args, desc.path, true)?),
        "bulk-put" => {
            let body = body_from(args, desc.path, true)?;
            if !body.is_array() {
                return Err(Fail::usage(
                    "bulk-put: --data must be a JSON array of records",
                ));
            }
            Some(body)
        }
        "bulk-update" => {
            let params = require_filter(args)?;
            path = format!("{path}?{}", params.query_string(false));
            Some(body_from(args, desc.path, true)?)
        }
        "bulk-delete" => {
            let params = require_filter(args)?;
            path = format!("{path}?{}", params.query_string(false));
            None
        }
        // Archive and restore as `Resource::archive` and `restore` send them.
        "archive" | "restore" if method == Method::PATCH => {
            Some(json!({ "isArchived": verb == "archive" }))
        }
        "archive" | "restore" if method == Method::DELETE && verb == "restore" => {
            method = Method::PATCH;
            Some(json!({ "isArchived": false }))
        }
        _ => None,
    };
    let body = body
        .map(|b| serde_json::to_vec(&b).map(bytes::Bytes::from))
        .transpose()
        .map_err(|e| Fail::usage(format!("the request body: {e}")))?;
    let report = ctx.client.dry_run(method, &path, body).await?;
    let value = serde_json::to_value(report).expect("json");
    write_shaped(plain, &value)
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
/// pipe is never asked. True: go on. (`--dry-run` never gets here: the server's dry run
/// asks nothing, `dry_run_verb`.)
async fn bulk_brake(
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
