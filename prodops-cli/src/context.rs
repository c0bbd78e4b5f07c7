//! What every command module shares: the [`CommandContext`] a command runs in and the helpers
//! that read common arguments (`--select`, the list flags, JSON arguments) and write records
//! to stdout. It dispatches nothing: `run.rs` sits on top and calls the command modules, which
//! depend on this module and not on `run.rs`.

use std::io::Read;

use clap::ArgMatches;
use prodops_client::{Client, ListParams};
use serde_json::{Map, Value};

use crate::fail::{CmdResult, Fail};
use crate::output::{Format, ListWriter, Shape};

/// Global settings every command sees.
pub struct CommandContext {
    pub format: Format,
    /// Whether `-o/--output` was given (else the format is the default of where stdout goes).
    pub format_given: bool,
    pub client: Client,
}

/// Whether a write command was given `--dry-run` (the server's dry run: docs/cli.md). A
/// command whose `dry-run` is something else (a body field's flag) or that has none: false.
pub fn dry_run(args: &ArgMatches) -> bool {
    matches!(args.try_get_one::<bool>("dry-run"), Ok(Some(true)))
}

/// The fields `--select` names, trimmed, empty ones left out.
pub fn select(args: &ArgMatches) -> Vec<String> {
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

pub fn set_path(target: &mut Map<String, Value>, field: &str, value: Value) -> CmdResult {
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

/// Records written to stdout as `shape` says, through a 64 KiB buffer.
pub fn stdout_writer(shape: &Shape) -> ListWriter<std::io::BufWriter<std::io::Stdout>> {
    ListWriter::new(
        std::io::BufWriter::with_capacity(1 << 16, std::io::stdout()),
        shape,
    )
}
