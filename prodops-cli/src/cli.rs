//! The command tree, generated from the resource registry (the standard verbs of each
//! resource) and from the action declarations of `prodops_core::api` (see `actions.rs`).

use clap::{Arg, ArgAction, Command};
use prodops_core::api::{AnswerBody, ParamKind};
use prodops_core::{Archive, ResourceDesc};

use crate::actions::{self, ActionCommand, FlagKind, To};
use crate::args::{offered, resource_command_name, shape_args};

fn example(text: String) -> String {
    format!("Example:\n  {text}")
}

fn filter_arg() -> Arg {
    Arg::new("filter")
        .long("filter")
        .short('f')
        .value_name("FIELD=VALUE")
        .action(ArgAction::Append)
        .help("Equality filter on a field; repeat a field to match any of its values")
}

fn search_arg() -> Arg {
    Arg::new("search")
        .long("search")
        .value_name("TEXT")
        .help("Case-insensitive substring over the resource's search columns")
}

/// `--yes` and `--dry-run` of a command that changes every record a filter matches.
fn bulk_brake_args() -> [Arg; 2] {
    [
        Arg::new("yes")
            .long("yes")
            .short('y')
            .action(ArgAction::SetTrue)
            .help("Do not ask for confirmation on a terminal"),
        dry_run_arg(),
    ]
}

/// `--dry-run` of a write: the server runs it and rolls it back (docs/cli.md).
pub fn dry_run_arg() -> Arg {
    Arg::new("dry-run")
        .long("dry-run")
        .action(ArgAction::SetTrue)
        .help("Run the write on the server and roll it back: print what it would write (its answer, ledger rows and events); change nothing")
}

fn select_arg() -> Arg {
    Arg::new("select")
        .long("select")
        .value_name("FIELDS")
        .value_delimiter(',')
        .action(ArgAction::Append)
        .help("Only these fields (comma-separated, dotted for nested ones)")
}

fn wide_arg() -> Arg {
    Arg::new("wide")
        .long("wide")
        .action(ArgAction::SetTrue)
        .help("A table of every field, ids whole, not fitted to the terminal")
}

fn data_arg(required: bool) -> Arg {
    Arg::new("data")
        .long("data")
        .short('d')
        .value_name("JSON|@FILE|@-")
        .required(required)
        .help("The JSON body: inline, from a file (@file) or from stdin (@-)")
}

fn set_args() -> [Arg; 2] {
    [
        Arg::new("set")
            .long("set")
            .value_name("FIELD=TEXT")
            .action(ArgAction::Append)
            .help("Sets a field to a text value (dotted for nested fields); applied over --data"),
        Arg::new("set-json")
            .long("set-json")
            .value_name("FIELD=JSON")
            .action(ArgAction::Append)
            .help("Sets a field to a JSON value (numbers, booleans, null, arrays); applied over --data"),
    ]
}

fn id_arg() -> Arg {
    Arg::new("id")
        .required(true)
        .value_name("ID")
        .help("The record's id")
}

fn resource_command(d: &ResourceDesc) -> Command {
    let name = resource_command_name(d.path);
    let about = if d.summary.is_empty() {
        format!("/{} records", d.path)
    } else {
        d.summary.to_string()
    };
    let mut cmd = Command::new(name.clone())
        .about(about)
        .subcommand_required(true)
        .arg_required_else_help(true)
        .after_help(example(format!("prodops {name} list --filter status=active --output csv")))
        .subcommand(
            Command::new("list")
                .about(format!("Lists /{} records, all pages (archived ones only with --filter isArchived=true)", d.path))
                .arg(filter_arg())
                .arg(search_arg())
                .arg(Arg::new("sort").long("sort").value_name("FIELDS").help("Order: field names, - for descending (`-createdAt,name`)"))
                .arg(select_arg())
                .args(shape_args())
                .arg(wide_arg())
                .arg(Arg::new("limit").long("limit").value_name("N").value_parser(clap::value_parser!(u64)).help("At most N records (on a terminal, the default is the first 30)"))
                .arg(Arg::new("all").long("all").action(ArgAction::SetTrue).conflicts_with("limit").help("Every record, also on a terminal"))
                .arg(Arg::new("page-size").long("page-size").value_name("N").value_parser(clap::value_parser!(u64).range(1..=10_000)).help("Records per request (default 5000)"))
                .after_help(example(format!("prodops {name} list --sort -createdAt,name --limit 100 --select id,name -o csv"))),
        )
        .subcommand(
            Command::new("get")
                .about("Reads one record")
                .arg(id_arg())
                .arg(select_arg())
                .args(shape_args())
                .arg(wide_arg())
                .after_help(example(format!("prodops {name} get 0191c3a8-0000-7000-8000-000000000001 --output json"))),
        )
        .subcommand(
            Command::new("query")
                .about("POST /query: records by ids, filters, selected fields")
                .arg(data_arg(false))
                .arg(Arg::new("ids").long("id").value_name("IDS").value_delimiter(',').action(ArgAction::Append).help("Only these ids (comma-separated, repeatable)"))
                .arg(filter_arg())
                .arg(search_arg())
                .arg(select_arg())
                .args(shape_args())
                .arg(wide_arg())
                .arg(Arg::new("page-size").long("page-size").value_name("N").value_parser(clap::value_parser!(u64).range(1..=10_000)).help("Page size"))
                .after_help(example(format!("prodops {name} query --id ID1,ID2 --select name"))),
        )
        .subcommand(
            Command::new("count")
                .about("Counts matching records")
                .arg(filter_arg())
                .arg(search_arg())
                .args(shape_args())
                .after_help(example(format!("prodops {name} count --filter isArchived=true"))),
        )
        .subcommand(
            Command::new("group-count")
                .about("Counts records per value of a field, largest first")
                .arg(Arg::new("field").required(true).value_name("FIELD").help("The field to group by"))
                .arg(filter_arg())
                .args(shape_args())
                .after_help(example(format!("prodops {name} group-count {}", if d.path == "worker" { "status" } else { "createdAt" }))),
        );
    let ops = d.ops;
    if offered(ops.create) {
        cmd = cmd.subcommand(
            Command::new("create")
                .about("Creates a record")
                .arg(data_arg(false))
                .arg(dry_run_arg())
                .args(set_args())
                .arg(select_arg())
                .args(shape_args())
                .after_help(example(format!(
                    "id=$(prodops {name} create --data '{{\"name\": \"Ann\"}}' --jq .id)"
                ))),
        );
    }
    if offered(ops.update) {
        cmd = cmd.subcommand(
            Command::new("update")
                .about("Changes fields of a record")
                .arg(id_arg())
                .arg(data_arg(false))
                .arg(dry_run_arg())
                .args(set_args())
                .arg(select_arg())
                .args(shape_args())
                .after_help(example(format!(
                    "prodops {name} update ID --set name='New name'"
                ))),
        );
    }
    if offered(ops.delete) {
        let what = if d.archive == Archive::OnDelete {
            "Archives a record (DELETE)"
        } else {
            "Deletes a record"
        };
        cmd = cmd.subcommand(
            Command::new("delete")
                .about(what)
                .arg(id_arg())
                .arg(dry_run_arg())
                .args(shape_args())
                .after_help(example(format!("prodops {name} delete ID"))),
        );
    }
    if offered(ops.bulk_put) {
        cmd = cmd.subcommand(
            Command::new("bulk-put")
                .about("Upserts a JSON array of records, all or nothing (with id: update; without: create)")
                .arg(data_arg(true))
                .arg(dry_run_arg())
                .args(shape_args())
                .after_help(example(format!("prodops {name} bulk-put --data @records.json"))),
        );
    }
    if offered(ops.bulk_patch) {
        cmd = cmd.subcommand(
            Command::new("bulk-update")
                .about("Sets fields on every record matching the filter (a filter or search is required)")
                .arg(filter_arg())
                .arg(search_arg())
                .arg(data_arg(false))
                .args(set_args())
                .args(bulk_brake_args())
                .args(shape_args())
                .after_help(example(format!("prodops {name} bulk-update --filter status=inactive --set-json isArchived=true"))),
        );
    }
    if offered(ops.bulk_delete) {
        cmd = cmd.subcommand(
            Command::new("bulk-delete")
                .about("Deletes (or archives) every record matching the filter (a filter or search is required)")
                .arg(filter_arg())
                .arg(search_arg())
                .args(bulk_brake_args())
                .args(shape_args())
                .after_help(example(format!("prodops {name} bulk-delete --filter status=inactive"))),
        );
    }
    if d.archive.is_archivable() {
        cmd = cmd
            .subcommand(
                Command::new("archive")
                    .about("Archives a record")
                    .arg(id_arg())
                    .arg(dry_run_arg())
                    .arg(select_arg())
                    .args(shape_args())
                    .after_help(example(format!("prodops {name} archive ID"))),
            )
            .subcommand(
                Command::new("restore")
                    .about("Restores an archived record")
                    .arg(id_arg())
                    .arg(dry_run_arg())
                    .arg(select_arg())
                    .args(shape_args())
                    .after_help(example(format!("prodops {name} restore ID"))),
            );
    }
    if d.path == "worker" {
        cmd = cmd
            .subcommand(crate::csvio::worker::import_command())
            .subcommand(crate::csvio::worker::export_command());
    }
    if d.path == "lot" {
        cmd = cmd
            .subcommand(crate::csvio::lot::import_command())
            .subcommand(crate::csvio::lot::export_command());
    }
    if d.path == "deliverable" {
        cmd = cmd
            .subcommand(crate::csvio::deliverable::import_command())
            .subcommand(crate::csvio::deliverable::export_command())
            .subcommand(crate::gantt::command());
    }
    cmd
}

fn action_command(c: &ActionCommand) -> Command {
    let a = c.desc;
    let mut cmd = Command::new(a.cli.verb)
        .about(format!(
            "{} ({} {})",
            a.cli.about,
            a.method.as_str(),
            a.path
        ))
        .after_help(example(a.cli.example.to_string()));
    for (i, p) in a.path_params().into_iter().enumerate() {
        let what = match a.path_kinds.get(i) {
            Some(ParamKind::Uuid) | None => format!("The {p} in {}", a.path),
            Some(_) => format!("The {p} in {} (text)", a.path),
        };
        cmd = cmd.arg(
            Arg::new(p)
                .required(true)
                .value_name(p.to_uppercase())
                .help(what),
        );
    }
    for f in &c.flags {
        let mut arg = Arg::new(f.id.clone())
            .long(f.name.clone())
            .help(f.help.clone())
            .value_name(match f.kind {
                FlagKind::Uuid => "UUID",
                FlagKind::UuidList => "UUIDS",
                FlagKind::Number => "NUMBER",
                FlagKind::Text => "TEXT",
                FlagKind::Bool => "BOOL",
                FlagKind::Json => "JSON|@FILE",
                FlagKind::File => "FILE",
            });
        if f.to == To::Raw {
            // The raw body is a positional FILE after the path's ids.
            arg = Arg::new(f.id.clone())
                .value_name("FILE")
                .help(f.help.clone());
        }
        if f.kind == FlagKind::UuidList {
            arg = arg.value_delimiter(',').action(ArgAction::Append);
        }
        if f.kind == FlagKind::Number {
            // `--delta -1` is a value, not a flag.
            arg = arg.allow_negative_numbers(true);
        }
        if f.kind == FlagKind::Bool {
            arg = arg.value_parser(clap::value_parser!(bool));
        }
        // A required body field may come from --data instead of its flag.
        if f.required && !(a.takes_json() && f.to == To::Body) {
            arg = arg.required(true);
        }
        cmd = cmd.arg(arg);
    }
    if a.takes_json() {
        cmd = cmd.arg(data_arg(false));
    }
    // A write's dry run on the server, unless a flag of its own is already `--dry-run` (the
    // stock count's `dryRun` field).
    if a.takes_dry_run()
        && !c
            .flags
            .iter()
            .any(|f| f.name == "dry-run" || f.id == "dry-run")
    {
        cmd = cmd.arg(dry_run_arg());
    }
    if matches!(a.answer, AnswerBody::Bytes) {
        // A file's bytes: nothing to select or shape.
        return cmd.arg(select_arg());
    }
    cmd.arg(select_arg()).args(shape_args())
}

/// The whole command tree.
pub fn command() -> Command {
    let mut root = Command::new("prodops")
        .version(env!("CARGO_PKG_VERSION"))
        .about("The Production Operations API v2 from the command line")
        .long_about(
            "The Production Operations API v2 from the command line.\n\n\
             The instance comes from --base-url, PRODOPS_BASE_URL or `prodops auth login`; the key\n\
             from --api-key, PRODOPS_API_KEY or the stored login, in that order. Data goes to stdout,\n\
             errors and progress to stderr.\n\n\
             Exit codes: 0 success, 2 usage, 3 authentication or permission, 4 not found,\n\
             5 rejected request, 6 rate-limited after retries, 7 network error or server error,\n\
             8 declined at a confirmation prompt, 9 events missed (the feed no longer keeps them).",
        )
        .subcommand_required(true)
        .arg_required_else_help(true)
        .after_help(example("PRODOPS_BASE_URL=http://127.0.0.1:8080 PRODOPS_API_KEY=... prodops worker list --output csv".into()))
        .next_help_heading("Global options")
        .arg(Arg::new("base-url").long("base-url").global(true).value_name("URL").env("PRODOPS_BASE_URL").help("The instance address (/api/v2 is appended)"))
        .arg(Arg::new("api-key").long("api-key").global(true).value_name("KEY").env("PRODOPS_API_KEY").hide_env_values(true).help("The API key"))
        .arg(Arg::new("output").long("output").short('o').global(true).value_name("FORMAT").value_parser(["table", "json", "ndjson", "csv", "tsv", "yaml"]).help("Output format (default: table on a terminal, json otherwise); -o is always the format, an export's file is --out"))
        .arg(Arg::new("timeout").long("timeout").global(true).value_name("SECONDS").value_parser(clap::value_parser!(u64).range(1..)).help("Timeout of one request (default 120)"))
        .arg(Arg::new("max-attempts").long("max-attempts").global(true).value_name("N").value_parser(clap::value_parser!(u32).range(1..=100)).help("Attempts per request on 429, or 503 with Retry-After (default 6)"))
        .arg(Arg::new("idempotency-key").long("idempotency-key").global(true).value_name("KEY").help("Idempotency-Key of the write this command sends: running it again with the same key changes nothing (1 to 255 characters)"));

    let mut groups: Vec<Command> = Vec::new();
    for kind in prodops_core::registry::resources() {
        groups.push(resource_command(kind.desc()));
    }
    for c in actions::commands() {
        let a = c.desc.cli;
        let action = action_command(&c);
        match groups.iter_mut().find(|c| c.get_name() == a.command) {
            Some(cmd) => {
                let taken = std::mem::replace(cmd, Command::new("placeholder"));
                *cmd = taken.subcommand(action);
            }
            None => groups.push(
                Command::new(a.command)
                    .about(format!("{} actions", a.command))
                    .subcommand_required(true)
                    .arg_required_else_help(true)
                    .after_help(example(a.example.to_string()))
                    .subcommand(action),
            ),
        }
    }
    // `events tail`, a loop over `events list` (the declared `GET /event`).
    if let Some(cmd) = groups.iter_mut().find(|c| c.get_name() == "events") {
        let taken = std::mem::replace(cmd, Command::new("placeholder"));
        *cmd = taken.subcommand(crate::events::tail_command());
    }
    // `inventory count FILE.csv`: the declared count, its lines read from a CSV file.
    if let Some(cmd) = groups.iter_mut().find(|c| c.get_name() == "inventory") {
        let taken = std::mem::replace(cmd, Command::new("placeholder"));
        *cmd = taken.mut_subcommand("count", |count| {
            count
                .arg(
                    Arg::new(crate::count::FILE_ARG)
                        .value_name("FILE.csv")
                        .help("The count: a CSV file with the columns itemId, locationId, quantity and optionally unitMeasureId and lotId or lot (the lot's code) (- for stdin); refusals name its line numbers"),
                )
                .mut_arg("dry-run", |a| {
                    a.num_args(0..=1)
                        .require_equals(true)
                        .default_missing_value("true")
                })
        });
    }
    // `delivery receive ID FILE.csv`: the declared receive, its lines read from a CSV file.
    if let Some(cmd) = groups.iter_mut().find(|c| c.get_name() == "delivery") {
        let taken = std::mem::replace(cmd, Command::new("placeholder"));
        *cmd = taken.mut_subcommand("receive", |receive| {
            receive.arg(
                Arg::new(crate::receive::FILE_ARG)
                    .value_name("FILE.csv")
                    .help("What arrived: a CSV file with the columns manifestLineId or itemId, quantity, and optionally locationId, and lot (with expiresAt) or lots (CODE:QTY;CODE:QTY) for items tracked by lot or serial (- for stdin); refusals name its line numbers"),
            )
        });
    }
    // `lot trace ID --format tree|dot`: the declared trace, drawn.
    if let Some(cmd) = groups.iter_mut().find(|c| c.get_name() == "lot") {
        let taken = std::mem::replace(cmd, Command::new("placeholder"));
        *cmd = taken.mut_subcommand("trace", |trace| trace.arg(crate::trace::format_arg()));
    }
    // A group of actions is described by its verbs (`produce, consume, ...`).
    for cmd in groups.iter_mut() {
        if prodops_core::registry::resources()
            .iter()
            .any(|k| resource_command_name(k.desc().path) == cmd.get_name())
        {
            continue;
        }
        let verbs: Vec<String> = cmd
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        let about = match cmd.get_name() {
            "events" => format!("The change feed: {}", verbs.join(", ")),
            "bom" => format!("BOM actions: {}", verbs.join(", ")),
            name => format!("{} actions: {}", capitalized(name), verbs.join(", ")),
        };
        let taken = std::mem::replace(cmd, Command::new("placeholder"));
        *cmd = taken.about(about);
    }
    root = root.subcommands(groups);
    let root = root.subcommand(
        Command::new("api")
            .about("Calls any endpoint, as `gh api` does: GET by default, POST once fields are given")
            .arg(Arg::new("endpoint").required(true).num_args(1..=2).value_names(["PATH", ""]).help("The path relative to /api/v2 (query string allowed); `METHOD PATH` is read too"))
            .arg(Arg::new("method").short('X').long("method").value_name("METHOD").help("GET, POST, PATCH, PUT or DELETE (default GET, or POST with -f/-F)"))
            .arg(Arg::new("header").short('H').long("header").value_name("NAME:VALUE").action(ArgAction::Append).help("A request header"))
            .arg(Arg::new("raw-field").short('f').long("raw-field").value_name("KEY=VALUE").action(ArgAction::Append).allow_hyphen_values(true).help("A string field: in the JSON body, or the query string of a GET (dotted keys nest)"))
            .arg(Arg::new("field").short('F').long("field").value_name("KEY=VALUE").action(ArgAction::Append).allow_hyphen_values(true).help("A typed field: true, false, null and numbers as JSON, @FILE a file's text (@- stdin), else a string"))
            .arg(Arg::new("input").long("input").value_name("FILE").help("The request body as it is, from FILE (- for stdin)"))
            .arg(data_arg(false))
            .arg(Arg::new("include").short('i').long("include").action(ArgAction::SetTrue).help("Print the status line and the response headers before the body"))
            .arg(Arg::new("paginate").long("paginate").action(ArgAction::SetTrue).help("GET every page of a list and print all its values as one array"))
            .args(shape_args())
            .after_help(example("prodops api '/worker?status=active' --paginate --output ndjson
  prodops api -X PATCH /worker/ID -f name='Ann Lee' -F exemptFromAssignments=true
  prodops api /worker/count -i".into())),
    )
    .subcommand(
        Command::new("auth")
            .about("Stores, shows and forgets the API key")
            .subcommand_required(true)
            .arg_required_else_help(true)
            .after_help(example("printf '%s' \"$KEY\" | prodops auth login --base-url https://prodops.example.com --with-token".into()))
            .subcommand(
                Command::new("login")
                    .about("Checks a key and stores it (system keyring, else a file readable only by you)")
                    .arg(Arg::new("with-token").long("with-token").action(ArgAction::SetTrue).help("Read the key from stdin"))
                    .arg(Arg::new("no-verify").long("no-verify").action(ArgAction::SetTrue).help("Store without checking the key against the server"))
                    .after_help(example("prodops auth login --base-url http://127.0.0.1:8080 --api-key KEY".into())),
            )
            .subcommand(
                Command::new("status")
                    .about("Shows which instance and key are in use, where they come from, and whether the key works")
                    .args(shape_args())
                    .after_help(example("prodops auth status --output json".into())),
            )
            .subcommand(
                Command::new("logout")
                    .about("Forgets the stored key and instance")
                    .after_help(example("prodops auth logout".into())),
            ),
    )
    .subcommand(
        Command::new("completions")
            .about("Prints a shell completion script")
            .arg(Arg::new("shell").required(true).value_parser(clap::value_parser!(clap_complete::Shell)))
            .long_about("Prints the few lines that register completions with the shell. They ask `prodops` itself for the candidates as you type (`COMPLETE=SHELL prodops -- WORDS`), so they stay small, load at once and follow the commands of the binary you run.")
            .after_help(example("prodops completions bash > ~/.local/share/bash-completion/completions/prodops".into())),
    )
    .subcommand(
        Command::new("man")
            .about("Prints the man page of prodops (roff), or writes one page per command into a directory")
            .arg(Arg::new("dir").long("dir").value_name("DIR").help("Write prodops.1, prodops-worker.1, prodops-worker-list.1, ... into DIR"))
            .after_help(example("prodops man | man -l -".into())),
    );
    let root = hyphen_values(root);
    let grouped = grouped_commands(&root);
    // Every option of the root is global: listed once, under its own heading, after the groups.
    root.help_template(format!(
        "{{before-help}}{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{grouped}Global options:\n{{options}}{{after-help}}"
    ))
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// The environment variable through which a shell asks `prodops` for completions.
pub const COMPLETE_VAR: &str = "COMPLETE";

/// Answers a shell's request for completions (`COMPLETE=bash prodops -- prodops wor`) and
/// exits; returns when the variable is not set. The candidates come from the same command
/// tree as everything else, so a registration script of a few lines serves every command
/// (the generated static scripts were 1.6 MB for bash and took 1.2 s to load in fish).
pub fn complete_if_asked() {
    clap_complete::CompleteEnv::with_factory(command)
        .var(COMPLETE_VAR)
        .complete();
}

/// The lines that register dynamic completions with `shell`.
pub fn write_completion_registration(
    shell: clap_complete::Shell,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    use clap_complete::env::EnvCompleter;
    use clap_complete::env::{Bash, Elvish, Fish, Powershell, Zsh};
    let completer: &dyn EnvCompleter = match shell {
        clap_complete::Shell::Bash => &Bash,
        clap_complete::Shell::Elvish => &Elvish,
        clap_complete::Shell::Fish => &Fish,
        clap_complete::Shell::PowerShell => &Powershell,
        clap_complete::Shell::Zsh => &Zsh,
        _ => &Bash,
    };
    // The shell calls the program by the name it was run as (on PATH, or a path), as clap's
    // own registration does.
    let bin = std::env::args().next().unwrap_or_else(|| "prodops".into());
    completer.write_registration(COMPLETE_VAR, "prodops", "prodops", &bin, out)
}

/// `prodops man`: the root's page on stdout, or with `--dir` one page per command.
pub fn write_man_pages(dir: Option<&std::path::Path>) -> crate::fail::CmdResult {
    use crate::fail::Fail;
    let root = command();
    let Some(dir) = dir else {
        let mut out = std::io::stdout().lock();
        return clap_mangen::Man::new(root)
            .render(&mut out)
            .map_err(|e| Fail::io("writing the man page", e));
    };
    std::fs::create_dir_all(dir).map_err(|e| Fail::io(&dir.display().to_string(), e))?;
    let mut stack = vec![(String::from("prodops"), root)];
    let mut written = 0;
    while let Some((name, cmd)) = stack.pop() {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            stack.push((format!("{name}-{}", sub.get_name()), sub.clone()));
        }
        let cmd = cmd.name(name.clone()).bin_name(name.replace('-', " "));
        let path = dir.join(format!("{name}.1"));
        let mut file =
            std::fs::File::create(&path).map_err(|e| Fail::io(&path.display().to_string(), e))?;
        clap_mangen::Man::new(cmd)
            .render(&mut file)
            .map_err(|e| Fail::io(&path.display().to_string(), e))?;
        written += 1;
    }
    eprintln!("wrote {written} man pages to {}", dir.display());
    Ok(())
}

/// The group a top-level command is listed under in `prodops --help`.
fn group_of(name: &str) -> &'static str {
    if prodops_core::registry::by_path(name).is_some()
        || prodops_core::registry::resources()
            .iter()
            .any(|k| resource_command_name(k.desc().path) == name)
    {
        return "Resources (list, get, create, update, ... of each record type; CSV import and export)";
    }
    match name {
        "events" => "Events (the change feed)",
        "auth" => "Authentication",
        "api" | "completions" | "man" | "help" => "Scripting and setup",
        _ => "Actions (workflows beyond the records' own verbs)",
    }
}

/// The top-level commands in groups, for the root's help (clap lists subcommands under one
/// heading only). Each group's commands keep the order they were added in.
fn grouped_commands(root: &Command) -> String {
    const ORDER: [&str; 5] = [
        "Resources",
        "Actions",
        "Events",
        "Scripting",
        "Authentication",
    ];
    let width = root
        .get_subcommands()
        .map(|c| c.get_name().len())
        .max()
        .unwrap_or(0)
        + 2;
    let mut out = String::new();
    for prefix in ORDER {
        let members: Vec<&Command> = root
            .get_subcommands()
            .filter(|c| group_of(c.get_name()).starts_with(prefix))
            .collect();
        if members.is_empty() {
            continue;
        }
        out.push_str(&format!("{}:\n", group_of(members[0].get_name())));
        for c in members {
            let about = c.get_about().map(|a| a.to_string()).unwrap_or_default();
            out.push_str(&format!("  {:width$}{about}\n", c.get_name()));
        }
        out.push('\n');
    }
    out
}

/// Every option that takes a value takes one beginning with `-` too (`--sort -createdAt,name`,
/// `--search -x`, `--jq -r`): a value is never mistaken for a flag. Applied to the whole tree,
/// so no option can be left out.
fn hyphen_values(cmd: Command) -> Command {
    let cmd = cmd.mut_args(|a| {
        if !a.is_positional() && a.get_action().takes_values() {
            a.allow_hyphen_values(true)
        } else {
            a
        }
    });
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    names
        .into_iter()
        .fold(cmd, |c, name| c.mut_subcommand(name, hyphen_values))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::standard_route;

    #[test]
    fn the_tree_is_consistent() {
        command().debug_assert();
    }

    #[test]
    fn every_option_value_may_begin_with_a_hyphen() {
        fn walk(cmd: &Command, path: &str) {
            let here = format!("{path} {}", cmd.get_name());
            for a in cmd.get_arguments() {
                if !a.is_positional() && a.get_action().takes_values() {
                    assert!(a.is_allow_hyphen_values_set(), "{here} --{}", a.get_id());
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &here);
            }
        }
        walk(&command(), "");
        let m = command()
            .try_get_matches_from(["prodops", "worker", "list", "--sort", "-createdAt,name"])
            .unwrap();
        let (_, worker) = m.subcommand().unwrap();
        let (_, list) = worker.subcommand().unwrap();
        assert_eq!(list.get_one::<String>("sort").unwrap(), "-createdAt,name");
    }

    #[test]
    fn every_command_has_an_example() {
        fn walk(cmd: &Command, path: &str) {
            let here = format!("{path} {}", cmd.get_name());
            assert!(
                cmd.get_after_help()
                    .is_some_and(|h| h.to_string().contains("Example")),
                "{here} has no example"
            );
            for sub in cmd.get_subcommands() {
                walk(sub, &here);
            }
        }
        walk(&command(), "");
    }

    #[test]
    fn every_resource_has_a_command() {
        let cmd = command();
        for r in prodops_core::registry::resources() {
            let name = resource_command_name(r.desc().path);
            let sub = cmd
                .find_subcommand(&name)
                .unwrap_or_else(|| panic!("{name}"));
            assert!(sub.find_subcommand("list").is_some());
        }
        let worker = cmd.find_subcommand("worker").unwrap();
        for verb in ["archive", "restore", "import", "export", "create", "update"] {
            assert!(worker.find_subcommand(verb).is_some(), "worker {verb}");
        }
        assert!(
            worker.find_subcommand("delete").is_none(),
            "worker delete is refused by the server"
        );
        let production = cmd.find_subcommand("production").unwrap();
        for verb in ["produce", "consume", "adjust-actual", "status", "entries"] {
            assert!(
                production.find_subcommand(verb).is_some(),
                "production {verb}"
            );
        }
    }

    /// The agreement test: every declared action has its command (or the standard verb that
    /// serves it, with the same method and path), its positional arguments are the path's
    /// parameters in order, every flag maps to a query parameter or a field of the request
    /// type and every one of those has a flag, required-ness follows the schema, and every
    /// `cli.flags` override names something that exists.
    #[test]
    fn every_action_agrees_with_its_declaration() {
        let root = command();
        // Arguments every action command has besides its own flags.
        let common = [
            "data",
            "select",
            "jq",
            "template",
            "help",
            "base-url",
            "api-key",
            "output",
            "timeout",
            "max-attempts",
            "idempotency-key",
            // The server's dry run of a write (`ActionDesc::takes_dry_run`).
            "dry-run",
        ];
        for a in prodops_core::api::ACTIONS {
            let what = format!("{} {} ({})", a.cli.command, a.cli.verb, a.operation_id);
            let group = root
                .find_subcommand(a.cli.command)
                .unwrap_or_else(|| panic!("{what}: no command {}", a.cli.command));
            let cmd = group
                .find_subcommand(a.cli.verb)
                .unwrap_or_else(|| panic!("{what}: no verb"));
            if let Some(d) = actions::served_by_standard_verb(a) {
                let (method, path) = standard_route(d, a.cli.verb).unwrap();
                let norm = |p: &str| -> String {
                    p.split('/')
                        .map(|s| if s.starts_with('{') { "{}" } else { s })
                        .collect::<Vec<_>>()
                        .join("/")
                };
                assert_eq!(
                    method,
                    a.method.as_str(),
                    "{what}: the standard verb's method"
                );
                assert_eq!(
                    norm(&path),
                    norm(a.path),
                    "{what}: the standard verb's path"
                );
                let positionals = cmd.get_positionals().count();
                assert_eq!(positionals, a.path_params().len(), "{what}: positionals");
                continue;
            }
            let derived = actions::derive(a);
            // Positional arguments: the path's parameters in order, then a file body's FILE.
            let positionals: Vec<String> = cmd
                .get_positionals()
                .map(|p| p.get_id().to_string())
                .collect();
            let mut expected: Vec<String> = a.path_params().iter().map(|p| p.to_string()).collect();
            if matches!(a.request, prodops_core::api::RequestBody::Bytes)
                || a.operation_id == "inventory_count"
                || a.operation_id == "post_delivery_id_receive"
            {
                expected.push("file".into());
            }
            assert_eq!(positionals, expected, "{what}: positional arguments");
            // Flags: each maps to a query parameter or a request field.
            let fields =
                prodops_core::api::request_fields(a, &mut prodops_core::api::Schemas::new());
            let (schema_fields, _) = actions::request_fields(a);
            for arg in cmd.get_arguments().filter(|x| !x.is_positional()) {
                let id = arg.get_id().as_str();
                if common.contains(&id) {
                    continue;
                }
                // The drawing of a trace (tree or dot) is the CLI's, not the server's.
                if a.operation_id == "lot_trace" && id == crate::trace::FORMAT_ARG {
                    continue;
                }
                let f = derived
                    .flags
                    .iter()
                    .find(|f| f.id == id)
                    .unwrap_or_else(|| panic!("{what}: --{id} is no derived flag"));
                assert_eq!(arg.get_long(), Some(f.name.as_str()), "{what}");
                match f.to {
                    To::Query => {
                        let q = a
                            .query
                            .iter()
                            .find(|q| q.name == f.field)
                            .unwrap_or_else(|| {
                                panic!("{what}: --{} names no query parameter", f.name)
                            });
                        assert_eq!(
                            arg.is_required_set(),
                            q.required,
                            "{what}: --{} required",
                            f.name
                        );
                    }
                    To::Body => {
                        assert!(
                            fields.contains(&f.field),
                            "{what}: --{} names no field",
                            f.name
                        );
                        let schema = schema_fields.iter().find(|x| x.name == f.field).unwrap();
                        assert_eq!(f.required, schema.required, "{what}: --{} required", f.name);
                        // A required field may come from --data instead.
                        assert!(!arg.is_required_set(), "{what}: --{}", f.name);
                    }
                    To::ContentType => {
                        assert!(matches!(a.request, prodops_core::api::RequestBody::Bytes))
                    }
                    To::Raw => unreachable!("positional"),
                }
            }
            assert_eq!(
                cmd.get_arguments().any(|x| x.get_id() == "data"),
                a.takes_json(),
                "{what}: --data"
            );
            // Every query parameter and field has its flag.
            for q in a.query {
                if actions::skipped_query_param(q.name) {
                    // Served by the command's --select.
                    assert!(
                        cmd.get_arguments().any(|x| x.get_id() == "select"),
                        "{what}"
                    );
                    continue;
                }
                assert!(
                    derived
                        .flags
                        .iter()
                        .any(|f| f.to == To::Query && f.field == q.name),
                    "{what}: no flag for ?{}",
                    q.name
                );
            }
            for field in &fields {
                assert!(
                    derived
                        .flags
                        .iter()
                        .any(|f| f.to == To::Body && &f.field == field),
                    "{what}: no flag for {field}"
                );
            }
            // Every override names a field or a query parameter, and is used.
            for o in a.cli.flags {
                assert!(
                    derived
                        .flags
                        .iter()
                        .any(|f| f.field == o.field && f.name == o.flag),
                    "{what}: the override --{} ({}) names no field or query parameter",
                    o.flag,
                    o.field
                );
            }
        }
    }

    #[test]
    fn standard_routes_cover_the_standard_verbs() {
        for r in prodops_core::registry::resources() {
            let d = r.desc();
            let cmd = resource_command(d);
            for sub in cmd.get_subcommands() {
                let verb = sub.get_name();
                if matches!(verb, "import" | "export" | "gantt") {
                    continue;
                }
                assert!(standard_route(d, verb).is_some(), "{} {verb}", d.path);
            }
        }
    }

    #[test]
    fn shortcuts_are_commands_of_their_own() {
        let root = command();
        for s in actions::SHORTCUTS {
            let cli = s.desc.cli;
            assert!(
                prodops_core::api::ACTIONS
                    .iter()
                    .all(|a| a.path != s.desc.path),
                "{} is an action, not a shortcut",
                s.desc.path
            );
            let cmd = root
                .find_subcommand(cli.command)
                .and_then(|c| c.find_subcommand(cli.verb))
                .unwrap();
            for (flag, ..) in s.flags {
                assert!(cmd.get_arguments().any(|x| x.get_long() == Some(flag)));
            }
        }
    }
}

#[cfg(test)]
mod shaping_coverage {
    use super::*;

    /// Commands that print no JSON answer: a script, a man page, a prompt's outcome, CSV, a
    /// file's bytes, a drawing, or nothing at all (a delete answers 204).
    const PRINT_NO_JSON: [&str; 7] = [
        "prodops completions",
        "prodops man",
        "prodops auth login",
        "prodops auth logout",
        "export",
        "delete",
        "prodops deliverable gantt",
    ];

    #[test]
    fn every_command_that_prints_json_takes_jq_and_template() {
        fn walk(cmd: &Command, path: &str, missing: &mut Vec<String>) {
            let here = if path.is_empty() {
                cmd.get_name().to_string()
            } else {
                format!("{path} {}", cmd.get_name())
            };
            let leaves: Vec<&Command> = cmd
                .get_subcommands()
                .filter(|s| s.get_name() != "help")
                .collect();
            if leaves.is_empty() {
                let has = |id: &str| cmd.get_arguments().any(|a| a.get_id() == id);
                let exempt = PRINT_NO_JSON
                    .iter()
                    .any(|p| here == *p || here.ends_with(&format!(" {p}")));
                let bytes = actions::commands().iter().any(|c| {
                    matches!(c.desc.answer, AnswerBody::Bytes)
                        && here == format!("prodops {} {}", c.desc.cli.command, c.desc.cli.verb)
                });
                let shaped = has("jq") && has("template");
                if !(exempt || bytes || shaped) {
                    missing.push(here);
                }
                return;
            }
            for sub in leaves {
                walk(sub, &here, missing);
            }
        }
        let mut missing = Vec::new();
        walk(&command(), "", &mut missing);
        assert!(missing.is_empty(), "without --jq/--template: {missing:#?}");
    }
}
