//! `prodops events tail`: the change feed (docs/events.md), one event per line, flushed as it
//! arrives: on a terminal (`-o table`, the default there) a readable line, else NDJSON. With
//! `-f/--follow` it never ends (long polling) and starts from now, unless `--since` or the
//! cursor file says otherwise; a lost connection is said on stderr and retried from the last
//! printed event. With `--cursor-file` the cursor of the last printed event is kept in a file,
//! so the next run (a cron job, a restarted follower) starts after it. `events list` (one page)
//! is derived from the declaration of `GET /event` like every action command; its `--since`
//! takes the same `CURSOR|now|beginning` ([`resolve_since`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Arg, ArgAction, ArgMatches, Command};
use futures::StreamExt;
use prodops_client::Client;
use prodops_core::api::event::EventQuery;
use prodops_core::event::{Cursor, Event};

use crate::context::CommandContext;
use crate::fail::{CmdResult, Fail};
use crate::output::Format;

/// The `tail` verb of `prodops events`.
pub fn tail_command() -> Command {
    Command::new("tail")
        .about("Prints the change feed, one event per line (with -f, from now on, forever)")
        .arg(Arg::new("follow").long("follow").short('f').action(ArgAction::SetTrue).help("Keep waiting for new events; starts from now unless --since or the cursor file says otherwise"))
        .arg(Arg::new("type").long("type").value_name("TYPES").help("Only these event types, comma-separated (`deliverable.progress.*` matches a prefix)"))
        .arg(Arg::new("resource").long("resource").value_name("RESOURCES").help("Only events of these resources, comma-separated"))
        .arg(Arg::new("record-id").long("record-id").value_name("ID").help("Only events of this record"))
        .arg(Arg::new("since").long("since").value_name("CURSOR|now|beginning").help("Start after this cursor, after the newest event (now), or at the oldest kept (beginning); default: the cursor file's, else now with --follow, else beginning"))
        .args(crate::args::shape_args())
        .arg(Arg::new("cursor-file").long("cursor-file").value_name("FILE").help("Read the cursor to start after from FILE (if it exists) and write each printed event's cursor to it"))
        .after_help("Example:\n  prodops events tail -f --type deliverable.progress.done --cursor-file ~/.prodops-done.cursor -o ndjson | while read ev; do ...; done")
}

/// Where `--since` starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Since {
    Cursor(String),
    Now,
    Beginning,
}

/// Reads `CURSOR|now|beginning` (exit 2 for anything else).
pub fn parse_since(raw: &str) -> CmdResult<Since> {
    match raw.trim() {
        "now" => Ok(Since::Now),
        "beginning" => Ok(Since::Beginning),
        other => Cursor::parse(other)
            .map(|c| Since::Cursor(c.to_string()))
            .ok_or_else(|| {
                Fail::usage(format!(
                    "--since: {raw:?} is not a cursor, `now` or `beginning`"
                ))
            }),
    }
}

/// Whether an event matching `query` follows the cursor `after`.
async fn any_after(client: &Client, query: &EventQuery, after: i64) -> CmdResult<bool> {
    let probe = EventQuery {
        after: Some(after.to_string()),
        limit: Some(1),
        wait: None,
        ..query.clone()
    };
    match client.events(&probe).await {
        Ok(page) => Ok(!page.values.is_empty()),
        // Pruned after `after`: the newest is further on (the search keeps going up).
        Err(e) if e.events_gone().is_some() => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// The cursor of the newest event matching `query` (`0` when there is none): the feed has no
/// call for it, so it is searched for (cursors count up without gaps, so "an event follows
/// cursor c" holds below the newest and not from it on): doubling, then halving, about
/// 2·log2(newest) one-event reads however long the feed is.
pub async fn newest_cursor(client: &Client, query: &EventQuery) -> CmdResult<String> {
    if !any_after(client, query, 0).await? {
        return Ok("0".into());
    }
    let (mut lo, mut hi) = (0i64, 1i64);
    while any_after(client, query, hi).await? {
        lo = hi;
        hi = hi.saturating_mul(2);
    }
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if any_after(client, query, mid).await? {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi.to_string())
}

/// The `after` to read from for a `--since` value.
pub async fn resolve_since(
    client: &Client,
    since: &Since,
    query: &EventQuery,
) -> CmdResult<Option<String>> {
    Ok(match since {
        Since::Cursor(c) => Some(c.clone()),
        Since::Beginning => None,
        Since::Now => Some(newest_cursor(client, query).await?),
    })
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
/// reader or a crash never sees half a cursor). Also what an export's `--cursor-file` writes
/// (csvio/worker.rs), so that `events tail --cursor-file` continues from it.
pub fn write_cursor(path: &Path, cursor: &str) -> CmdResult {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, format!("{cursor}\n"))
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| Fail::io(&format!("writing {}", path.display()), e))
}

/// A readable line of an event: time, type, record, cursor.
fn readable(e: &Event) -> String {
    let changed = match &e.changed {
        Some(fields) if !fields.is_empty() => format!("  changed {}", fields.join(",")),
        _ => String::new(),
    };
    format!(
        "{}  {:<28} {} {}{changed}  #{}",
        e.occurred_at, e.event_type, e.resource, e.record_id, e.cursor
    )
}

/// The failure of a feed read; the feed's 410 (the events after `after` were pruned) says what
/// was missed and how to go on (exit 9).
fn gone_or(e: prodops_client::Error, after: Option<&str>, cursor_file: Option<&Path>) -> Fail {
    let Some(gone) = e.events_gone() else {
        return Fail::from(e);
    };
    let mut fail = Fail::from(e);
    let resume = match cursor_file {
        Some(path) => format!(
            "run again with --since beginning to read from it (the cursor file {} is left as it is)",
            path.display()
        ),
        None => "run again with --since beginning to read from it".to_string(),
    };
    fail.message = format!(
        "the feed no longer keeps the events after cursor {}: they are older than the server's \
         retention, so events were missed; the oldest kept has cursor {}; {resume}\n{}",
        after.unwrap_or("0"),
        gone.oldest_cursor,
        fail.message
    );
    fail
}

/// Runs `prodops events tail`.
pub async fn tail(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let text = |id: &str| args.get_one::<String>(id).cloned();
    // `--jq` and `--template` run on each event as it arrives (the feed never ends with -f).
    let post = crate::shape::Post::from_args(args)?;
    let follow = args.get_flag("follow");
    let cursor_file = text("cursor-file").map(PathBuf::from);
    let record_id = match text("record-id") {
        Some(raw) => Some(
            uuid::Uuid::parse_str(raw.trim())
                .map_err(|_| Fail::usage(format!("--record-id: {raw:?} is not a UUID")))?,
        ),
        None => None,
    };
    let since = match (text("since"), &cursor_file) {
        (Some(s), _) => parse_since(&s)?,
        (None, Some(path)) => match read_cursor(path)? {
            Some(c) => Since::Cursor(c),
            None if follow => Since::Now,
            None => Since::Beginning,
        },
        (None, None) if follow => Since::Now,
        (None, None) => Since::Beginning,
    };
    let mut query = EventQuery {
        after: None,
        event_type: text("type"),
        resource: text("resource"),
        record_id,
        limit: Some(prodops_core::api::event::MAX_LIMIT),
        wait: None,
    };
    query.after = resolve_since(&ctx.client, &since, &query).await?;
    let readable_lines = ctx.format == Format::Table;
    if follow {
        eprintln!(
            "following the feed after cursor {} (Ctrl-C to stop)",
            query.after.as_deref().unwrap_or("0")
        );
    }
    let stdout = std::io::stdout();
    let mut wait = Duration::from_secs(1);
    loop {
        let mut feed = ctx.client.event_stream(query.clone(), follow);
        let failure = loop {
            let Some(event) = feed.next().await else {
                return Ok(());
            };
            let event = match event {
                Ok(e) => e,
                Err(e) => break gone_or(e, query.after.as_deref(), cursor_file.as_deref()),
            };
            wait = Duration::from_secs(1);
            {
                let mut out = stdout.lock();
                match &post {
                    Some(post) => {
                        let value = serde_json::to_value(&event).map_err(|e| {
                            Fail::usage(format!("an event could not be written: {e}"))
                        })?;
                        post.write(&value, &mut out)?;
                    }
                    None => {
                        let line = if readable_lines {
                            readable(&event)
                        } else {
                            serde_json::to_string(&event).map_err(|e| {
                                Fail::usage(format!("an event could not be written: {e}"))
                            })?
                        };
                        writeln!(out, "{line}").map_err(|e| Fail::io("writing to stdout", e))?;
                    }
                }
                out.flush().map_err(|e| Fail::io("writing to stdout", e))?;
            }
            if let Some(path) = &cursor_file {
                write_cursor(path, &event.cursor)?;
            }
            query.after = Some(event.cursor);
        };
        // Following: a lost connection or a failing server is waited out, from the last
        // printed event; anything else (a refused key, a bad filter) ends the command.
        if !follow || failure.code != crate::fail::code::NETWORK {
            return Err(failure);
        }
        let first = failure
            .message
            .lines()
            .next()
            .unwrap_or_default()
            .to_string();
        eprintln!(
            "connection lost ({first}); reconnecting in {}s after cursor {}",
            wait.as_secs(),
            query.after.as_deref().unwrap_or("0")
        );
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(Duration::from_secs(30));
        eprintln!("reconnected; following again");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_is_a_cursor_now_or_beginning() {
        assert_eq!(parse_since("now").unwrap(), Since::Now);
        assert_eq!(parse_since("beginning").unwrap(), Since::Beginning);
        assert_eq!(parse_since("42").unwrap(), Since::Cursor("42".into()));
        assert_eq!(
            parse_since("yesterday").unwrap_err().code,
            crate::fail::code::USAGE
        );
    }

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
