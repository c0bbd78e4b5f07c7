//! The command line every CSV resource shares: the `import` command and its flags, the export
//! flags, and the progress bar with the messages printed beside it.

use std::io::IsTerminal;

use clap::{Arg, ArgAction, Command};
use indicatif::{ProgressBar, ProgressStyle};

/// `import FILE.csv [--key F] [--dry-run] [--batch-size N] [--concurrency N]`, by default
/// 5,000 rows per batch and 4 batches in flight.
pub fn import_command(
    path: &'static str,
    keys: &'static [&'static str],
    long_about: String,
    example: &'static str,
) -> Command {
    import_command_with(path, keys, long_about, example, ("5000", "4"))
}

/// [`import_command`] with other defaults for `--batch-size` and `--concurrency`.
pub fn import_command_with(
    path: &'static str,
    keys: &'static [&'static str],
    long_about: String,
    example: &'static str,
    (batch_size, concurrency): (&'static str, &'static str),
) -> Command {
    let mut cmd = Command::new("import")
        .about(format!(
            "Imports {path} records from CSV through PUT /{path}/bulk (upsert by id, or by --key)"
        ))
        .long_about(long_about)
        .arg(
            Arg::new("file")
                .required(true)
                .value_name("FILE.csv")
                .help("The CSV file (- for stdin)"),
        );
    if !keys.is_empty() {
        cmd = cmd.arg(
            Arg::new("key")
                .long("key")
                .value_name("FIELD")
                .value_parser(keys.to_vec())
                .help("Match rows without an id to existing records by this field"),
        );
    }
    cmd.arg(
        Arg::new("delimiter")
            .long("delimiter")
            .value_name("CHAR")
            .default_value(",")
            .allow_hyphen_values(true)
            .help("The character between cells: , ; | or tab (also \\t)"),
    )
    .arg(
        Arg::new("encoding")
            .long("encoding")
            .value_name("NAME")
            .default_value("utf-8")
            .help("The file's character encoding: utf-8, windows-1252, latin1 (ISO-8859-1), utf-16le, ... (any WHATWG label)"),
    )
    .arg(
        Arg::new("dry-run")
            .long("dry-run")
            .action(ArgAction::SetTrue)
            .help("Check every row here, then send each batch as the server's dry run: print what it would create, update and leave unchanged, and the rows it would refuse; write nothing"),
    )
    .args(crate::args::shape_args())
    .arg(
        Arg::new("batch-size")
            .long("batch-size")
            .value_name("N")
            .default_value(batch_size)
            .value_parser(clap::value_parser!(u64).range(1..=10_000))
            .help(format!("Rows per PUT /{path}/bulk")),
    )
    .arg(
        Arg::new("concurrency")
            .long("concurrency")
            .value_name("N")
            .default_value(concurrency)
            .value_parser(clap::value_parser!(u64).range(1..=32))
            .help("Batches in flight"),
    )
    .after_help(format!("Example:\n  {example}"))
}

/// The flags every export shares: `--out FILE`, `--page-size N` (`-o` is the global output
/// format, as in kubectl; docs/cli.md).
pub fn export_args(cmd: Command) -> Command {
    cmd.arg(
        Arg::new("out")
            .long("out")
            .value_name("FILE")
            .help("Write to FILE instead of stdout"),
    )
    .arg(
        Arg::new("page-size")
            .long("page-size")
            .value_name("N")
            .default_value("10000")
            .value_parser(clap::value_parser!(u64).range(1..=10_000))
            .help("Records per request"),
    )
}

/// The flags of an export that is one streamed request (`GET /r/export`, read in one
/// snapshot): those of [`export_args`], `--cursor-file FILE`, and `--page-size`, kept for the
/// scripts that give it but hidden and without effect.
pub fn streamed_export_args(cmd: Command) -> Command {
    export_args(
        cmd.arg(
            Arg::new("cursor-file")
                .long("cursor-file")
                .value_name("FILE")
                .help("Write the feed cursor the export is consistent with to FILE once it succeeded: `prodops events tail --since $(cat FILE)` continues exactly after it"),
        ),
    )
    .mut_arg("page-size", |a| {
        a.hide(true)
            .help("No effect, kept for scripts: the export is one streamed request")
    })
}

pub fn progress(len: u64, template: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    Some(pb)
}

/// A spinner with a count, for work of unknown length (the worker export).
pub fn spinner(template: &str) -> Option<ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let pb = ProgressBar::new_spinner();
    pb.set_style(
        ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    Some(pb)
}

pub(super) fn report(pb: &Option<ProgressBar>, line: String) {
    match pb {
        Some(pb) => pb.println(line),
        None => eprintln!("{line}"),
    }
}
