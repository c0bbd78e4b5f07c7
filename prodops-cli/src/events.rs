//! `prodops events tail`: the change feed (docs/events.md) as NDJSON, one event per line,
//! flushed as it arrives; with `--follow` it never ends (long polling), and with
//! `--cursor-file` the cursor of the last printed event is kept in a file, so the next run
//! (a cron job, a restarted follower) starts after it. `events list` (one page) is derived
//! from the declaration of `GET /event` like every action command.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Arg, ArgAction, ArgMatches, Command};
use futures::StreamExt;
use prodops_core::api::event::EventQuery;
use prodops_core::event::Cursor;

use crate::fail::{CmdResult, Fail};
use crate::run::CommandContext;

/// The `tail` verb of `prodops events`.
pub fn tail_command() -> Command {
    Command::new("tail")
        .about("Prints the change feed as NDJSON, one event per line (with --follow, forever)")
        .arg(Arg::new("follow").long("follow").action(ArgAction::SetTrue).help("Keep waiting for new events instead of stopping at the end of the feed"))
        .arg(Arg::new("type").long("type").value_name("TYPES").help("Only these event types, comma-separated (`deliverable.progress.*` matches a prefix)"))
        .arg(Arg::new("resource").long("resource").value_name("RESOURCES").help("Only events of these resources, comma-separated"))
        .arg(Arg::new("record-id").long("record-id").value_name("ID").help("Only events of this record"))
        .arg(Arg::new("since").long("since").value_name("CURSOR").help("Start after this cursor (default: the cursor file's, else the oldest event kept)"))
        .arg(Arg::new("cursor-file").long("cursor-file").value_name("FILE").help("Read the cursor to start after from FILE (if it exists) and write each printed event's cursor to it"))
        .after_help("Example:\n  prodops events tail --follow --type deliverable.progress.done --cursor-file ~/.prodops-done.cursor | while read ev; do ...; done")
}

fn read_cursor(path: &Path) -> CmdResult<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok(None),
        Ok(text) => {
            let text = text.trim();
            Cursor::parse(text)
                .map(|c| Some(c.to_string()))
                .ok_or_else(|| {
                    Fail::usage(format!(
                        "{}: {text:?} is not a cursor of the change feed",
                        path.display()
                    ))
                })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Fail::io(&format!("reading {}", path.display()), e)),
    }
}

/// Replaces the file's content with `cursor` (written beside it, then renamed over it, so a
/// reader or a crash never sees half a cursor).
fn write_cursor(path: &Path, cursor: &str) -> CmdResult {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, format!("{cursor}\n"))
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| Fail::io(&format!("writing {}", path.display()), e))
}

/// Runs `prodops events tail`.
pub async fn tail(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let text = |id: &str| args.get_one::<String>(id).cloned();
    let cursor_file = text("cursor-file").map(PathBuf::from);
    let since = match (text("since"), &cursor_file) {
        (Some(s), _) => Some(
            Cursor::parse(s.trim())
                .ok_or_else(|| Fail::usage(format!("--since: {s:?} is not a cursor")))?
                .to_string(),
        ),
        (None, Some(path)) => read_cursor(path)?,
        (None, None) => None,
    };
    let record_id = match text("record-id") {
        Some(raw) => Some(
            uuid::Uuid::parse_str(raw.trim())
                .map_err(|_| Fail::usage(format!("--record-id: {raw:?} is not a UUID")))?,
        ),
        None => None,
    };
    let query = EventQuery {
        after: since,
        event_type: text("type"),
        resource: text("resource"),
        record_id,
        limit: Some(prodops_core::api::event::MAX_LIMIT),
        wait: None,
    };
    let follow = args.get_flag("follow");
    let mut feed = Box::pin(ctx.client.event_stream(query, follow));
    let stdout = std::io::stdout();
    while let Some(event) = feed.next().await {
        let event = event.map_err(Fail::from)?;
        let line = serde_json::to_string(&event)
            .map_err(|e| Fail::usage(format!("an event could not be written: {e}")))?;
        {
            let mut out = stdout.lock();
            writeln!(out, "{line}")
                .and_then(|()| out.flush())
                .map_err(|e| Fail::io("writing to stdout", e))?;
        }
        if let Some(path) = &cursor_file {
            write_cursor(path, &event.cursor)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_file_round_trips_and_refuses_what_is_not_a_cursor() {
        let dir = std::env::temp_dir().join(format!("prodops-cursor-{}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c");
        assert_eq!(
            read_cursor(&path).unwrap(),
            None,
            "a missing file starts at the beginning"
        );
        write_cursor(&path, "42").unwrap();
        assert_eq!(read_cursor(&path).unwrap().as_deref(), Some("42"));
        std::fs::write(&path, "nope").unwrap();
        assert_eq!(
            read_cursor(&path).unwrap_err().code,
            crate::fail::code::USAGE
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
