//! `prodops`: the command line of the Production Operations API v2, for scripts and CI.
//!
//! `prodops <resource> <verb>` for every registered resource (generated from the registry),
//! action commands from the declarative table in `actions.rs`, `prodops api METHOD PATH`,
//! `prodops auth login|status|logout`, `prodops completions SHELL`, and the worker CSV
//! `import`/`export`. Exit codes and output formats: docs/cli.md.

mod actions;
mod cli;
mod creds;
mod csvio;
mod fail;
mod output;
mod run;

use std::io::Write;

/// mimalloc: the bulk write and import paths allocate and free many small values, a pattern it
/// handles well, and it keeps the resident set from fragmenting across threads.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `mi_option_purge_delay`: return freed memory to the system at once instead of
/// after 10 ms, so streaming a million rows keeps a flat, small resident set.
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() {
    // SAFETY: sets a process-wide allocator option before any other thread exists.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 0) };
    let code = match cli::command().try_get_matches() {
        Ok(matches) => match run::run(matches) {
            Ok(()) => 0,
            Err(fail) => {
                if !fail.message.is_empty() {
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
            let _ = e.print();
            code
        }
    };
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}
