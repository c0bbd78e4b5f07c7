//! What the command modules share of the command tree: the name of a resource's command, the
//! request a standard verb sends, and the clap arguments several commands carry. It sits below
//! `cli.rs` (which assembles the tree) and below the command modules that build their own
//! subcommands (`events.rs`, `csvio/`), so that none of them needs the tree.

use clap::Arg;
use prodops_core::{Allow, Archive, ResourceDesc};

/// The command name of a resource: its path, with nested paths given a short name.
pub fn resource_command_name(path: &str) -> String {
    match path {
        "deliverable/work-sessions" => "work-session".to_string(),
        other => other.replace('/', "-"),
    }
}

/// `--jq` and `--template`, on every command that prints JSON (`shape.rs`).
pub fn shape_args() -> [Arg; 2] {
    [
        Arg::new("jq")
            .long("jq")
            .value_name("EXPR")
            .conflicts_with("template")
            .help("Print what this jq program makes of the JSON answer (a list as one array); strings print raw"),
        Arg::new("template")
            .long("template")
            .value_name("TEMPLATE")
            .help("Print each record (or the answer) through a Jinja template: {{ name }} {{ progress.status }}"),
    ]
}

/// Whether a resource offers an operation to the command line.
pub fn offered(allow: Allow) -> bool {
    matches!(allow, Allow::Yes | Allow::Custom)
}

/// The method and path template (`{id}` for the record) a standard verb of a resource command
/// sends, as `Resource` in the client sends it; `None` for a verb the command does not have (or
/// one that is not one request, such as `import`). The agreement test holds the actions served
/// by a standard verb to it.
pub fn standard_route(d: &ResourceDesc, verb: &str) -> Option<(&'static str, String)> {
    let base = format!("/{}", d.path);
    let item = format!("/{}/{{id}}", d.path);
    let ops = d.ops;
    Some(match verb {
        "list" => ("GET", base),
        "get" => ("GET", item),
        "query" => ("POST", format!("{base}/query")),
        "count" => ("GET", format!("{base}/count")),
        "group-count" => ("POST", format!("{base}/group-and-count")),
        "create" if offered(ops.create) => ("POST", base),
        "update" if offered(ops.update) => ("PATCH", item),
        "delete" if offered(ops.delete) => ("DELETE", item),
        "bulk-put" if offered(ops.bulk_put) => ("PUT", format!("{base}/bulk")),
        "bulk-update" if offered(ops.bulk_patch) => ("PATCH", format!("{base}/bulk")),
        "bulk-delete" if offered(ops.bulk_delete) => ("DELETE", format!("{base}/bulk")),
        "archive" | "restore" => match d.archive {
            Archive::No => return None,
            Archive::Actions => ("POST", format!("{item}/{verb}")),
            Archive::OnDelete if verb == "archive" => ("DELETE", item),
            Archive::OnDelete | Archive::PatchOnly => ("PATCH", item),
        },
        _ => return None,
    })
}
