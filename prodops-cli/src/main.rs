//! `prodops`: the command line of the Production Operations API v2, for scripts and CI.
//!
//! `prodops <resource> <verb>` for every registered resource (generated from the registry),
//! action commands derived from the declarations of `prodops_core::api` (`actions.rs`),
//! `prodops api METHOD PATH`,
//! `prodops auth login|status|logout`, `prodops completions SHELL`, and the worker CSV
//! `import`/`export`. Exit codes and output formats: docs/cli.md.

mod action_call;
mod actions;
mod api_command;
mod args;
mod cli;
mod context;
mod count;
mod creds;
mod csvio;
mod events;
mod fail;
mod fields;
mod gantt;
mod hidden_prompt;
mod output;
mod receive;
mod run;
mod shape;
mod table;
mod trace;
mod why;

use std::io::Write;

/// mimalloc: the bulk write and import paths allocate and free many small values, a pattern it
/// handles well, and it keeps the resident set from fragmenting across threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay`: return freed memory to the system at once instead of
/// after 10 ms, so streaming a million rows keeps a flat, small resident set.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// mimalloc's `mi_option_allow_thp` (v3's `mimalloc.h`; `libmimalloc-sys` names no constant).
/// Left on, mimalloc asks for transparent huge pages on its arena (`MADV_HUGEPAGE`), and a
/// kernel in THP `madvise` (or `always`) mode then backs the heap with 2 MiB pages: the first
/// byte touched in a 2 MiB stretch makes all of it resident, and a purge of less than a whole
/// page frees nothing. That was a fifth of the worker import's and export's peak resident set
/// (44-49 MiB with it, 36 without, measured before their buffers shrank) and 5 of the 12.5 MiB
/// of a bare `prodops --version`. A command line's heap is too small for huge pages to save
/// anything measurable. Off, mimalloc also sets `PR_SET_THP_DISABLE` for the process at start.
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// Sets the allocator options mimalloc reads while it starts (before `main`: its start-up is a
/// constructor of its own, which runs after this one, and the Rust runtime allocates before
/// `main` is called). A default only: `MIMALLOC_ALLOW_THP=1` in the environment still wins.
extern "C" fn allocator_options() {
    // SAFETY: writes a static option value; no thread exists yet.
    unsafe { libmimalloc_sys::mi_option_set_default(MI_OPTION_ALLOW_THP, 0) };
}

/// Runs [`allocator_options`] early: `.init_array` entries with a priority run before the
/// unnumbered ones (mimalloc's, built by gcc) and those of priority 101 (built by clang).
#[cfg(target_os = "linux")]
#[used]
#[unsafe(link_section = ".init_array.00099")]
static ALLOCATOR_OPTIONS: extern "C" fn() = allocator_options;

/// Errors go to stderr as JSON (the API's error object, docs/cli.md "Errors a script can
/// read") with `--output json` or `ndjson`, or when stderr is not a terminal and
/// `PRODOPS_ERROR_FORMAT=json`. Read from the raw arguments: a usage error must know it too.
fn errors_as_json() -> bool {
    use std::io::IsTerminal;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let output_json = args.iter().enumerate().any(|(i, a)| {
        let value = match a.as_str() {
            "--output" | "-o" => args.get(i + 1).map(String::as_str),
            other => other.strip_prefix("--output="),
        };
        matches!(value, Some("json" | "ndjson"))
    });
    output_json
        || (!std::io::stderr().is_terminal()
            && std::env::var("PRODOPS_ERROR_FORMAT").is_ok_and(|v| v.eq_ignore_ascii_case("json")))
}

fn main() {
    // SAFETY: sets process-wide allocator options before any other thread exists.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    #[cfg(not(target_os = "linux"))]
    allocator_options();
    cli::complete_if_asked();
    let json_errors = errors_as_json();
    let code = match cli::command().try_get_matches() {
        Ok(matches) => match run::run(matches) {
            Ok(()) => 0,
            Err(fail) => {
                if json_errors && fail.code != 0 {
                    eprintln!("{}", fail.to_json());
                } else if !fail.message.is_empty() {
                    eprintln!("error: {}", fail.message);
                }
                fail.code
            }
        },
        Err(e) => {
            let code = match e.kind() {
                clap::error::ErrorKind::DisplayHelp
                | clap::error::ErrorKind::DisplayVersion
                | clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => 0,
                _ => fail::code::USAGE,
            };
            if json_errors && code != 0 {
                // clap's first line, without its `error: ` and its colours.
                let text = e.render().to_string();
                let message = text
                    .lines()
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("error: ")
                    .to_string();
                eprintln!("{}", fail::Fail::new(code, message).to_json());
            } else {
                let _ = e.print();
            }
            code
        }
    };
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}
