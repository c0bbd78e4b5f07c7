//! Import: the reader thread ([`reader`]) reads the file, checks each row with core's rules
//! ([`rows`]) and places the rows into batches; [`import`] sends the batches ([`batches`]),
//! several in flight, each once the batches holding its rows' parents are written, reports the
//! rejected rows and writes the summary.

mod batches;
mod reader;
mod rows;

use std::collections::BTreeSet;
use std::sync::Mutex;

use clap::ArgMatches;
use futures::StreamExt;
use serde_json::json;

use self::batches::{Batch, send_batch};
use self::reader::{TextFormat, open_input, reader_thread};
#[cfg(test)]
pub use self::rows::row_record;
use crate::context::CommandContext;
use crate::csvio::command::{progress, report};
use crate::csvio::spec::Spec;
use crate::fail::{CmdResult, Fail};

/// Which batches are written: every batch below the watermark, and the ones in `done`.
struct Written {
    state: Mutex<(usize, BTreeSet<usize>)>,
    notify: tokio::sync::Notify,
}

impl Written {
    fn finish(&self, index: usize) {
        let mut s = self.state.lock().expect("lock");
        s.1.insert(index);
        loop {
            let next = s.0;
            if !s.1.remove(&next) {
                break;
            }
            s.0 += 1;
        }
        drop(s);
        self.notify.notify_waiters();
    }

    /// Waits until every batch up to `index` is written.
    async fn wait_through(&self, index: usize) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.state.lock().expect("lock").0 > index {
                return;
            }
            notified.await;
        }
    }
}

/// `import FILE.csv` for the resource `spec` describes.
pub async fn import(ctx: &CommandContext, spec: &'static Spec, args: &ArgMatches) -> CmdResult {
    if args
        .try_get_one::<String>("idempotency-key")
        .ok()
        .flatten()
        .is_some()
    {
        // One key names one write; an import sends a batch per write, each with a key of its
        // own that the batch's retries reuse.
        return Err(Fail::usage(
            "--idempotency-key names one write; an import sends one per batch, each with its own key (leave the flag out)",
        ));
    }
    // A bad --jq or --template is refused before any row is sent, not after the import.
    let post = crate::shape::Post::from_args(args)?.map(std::sync::Arc::new);
    let path = args.get_one::<String>("file").expect("required").clone();
    let key_mode = args.try_get_one::<String>("key").ok().flatten().is_some();
    let dry_run = args.get_flag("dry-run");
    let batch_size = *args.get_one::<u64>("batch-size").expect("default") as usize;
    let concurrency = *args.get_one::<u64>("concurrency").expect("default") as usize;
    let format = TextFormat::parse(
        args.get_one::<String>("delimiter")
            .map_or(",", String::as_str),
        args.get_one::<String>("encoding")
            .map_or("utf-8", String::as_str),
    )?;
    let (input, len) = open_input(&path, key_mode)?;
    let pb = len.and_then(|l| {
        progress(
            l,
            "{spinner} importing [{bar:40}] {bytes}/{total_bytes} {elapsed} eta {eta}",
        )
    });
    // The reader stays one batch ahead of the senders, no more: every batch held costs memory
    // (its rows and body), and the senders rarely wait for a batch. One batch waits in the
    // channel, and the reader starts the next once the senders have taken it
    // ([`Placer::reserve`]), rather than filling it and waiting to hand it over.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Batch, Fail>>(1);
    let reader = reader_thread(spec, input, format, batch_size, key_mode, tx, pb.clone());
    let batches =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
    let written_batches = Written {
        state: Mutex::new((0, BTreeSet::new())),
        notify: tokio::sync::Notify::new(),
    };
    let written_batches = &written_batches;
    let mut rows_total = 0u64;
    let mut written = 0u64;
    let mut rejected = 0u64;
    let mut warned = false;
    let mut would = prodops_client::Tally::default();
    let mut results = batches
        .map(|batch| async move {
            let batch = batch?;
            let n = (batch.rows.len() + batch.rejected.len()) as u64;
            if dry_run {
                // The server's dry run of the batch, against the records as they are now
                // (nothing is written, so no batch waits for another).
                let without_id = batch.creates;
                let (_, rej, tally) = send_batch(ctx, spec, batch, key_mode, true).await?;
                return Ok((n, 0, rej, without_id, Some(tally)));
            }
            let without_id = batch.creates;
            if let Some(after) = batch.after {
                written_batches.wait_through(after).await;
            }
            let index = batch.index;
            let (w, rej, _) = send_batch(ctx, spec, batch, key_mode, false).await?;
            written_batches.finish(index);
            Ok::<_, Fail>((n, w, rej, without_id, None))
        })
        .buffered(concurrency)
        .boxed_local();
    let mut failure = None;
    while let Some(result) = results.next().await {
        match result {
            Ok((n, w, rej, without_id, dry)) => {
                if let Some(d) = dry {
                    would = would + d;
                }
                rows_total += n;
                written += w;
                rejected += rej.len() as u64;
                for (line, msg) in rej {
                    report(&pb, format!("line {line}: {msg}"));
                }
                if without_id && !key_mode && !warned {
                    warned = true;
                    let key = spec
                        .key
                        .map(|k| format!(" or --key {k}"))
                        .unwrap_or_default();
                    report(
                        &pb,
                        format!(
                            "warning: rows without an id create new {}s on every run; use ids{key} to make re-runs change nothing",
                            spec.noun
                        ),
                    );
                }
            }
            Err(f) => {
                failure = Some(f);
                break;
            }
        }
    }
    drop(results);
    let _ = reader.join();
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    if let Some(f) = failure {
        if written > 0 {
            eprintln!("{written} row(s) were written before the failure");
        }
        return Err(f);
    }
    let summary = if dry_run {
        // What a real run would do, found against the records as they are now (nothing was
        // written): `accepted` is every row that would be taken.
        json!({
            "rows": rows_total,
            "accepted": would.created + would.updated + would.unchanged,
            "created": would.created,
            "updated": would.updated,
            "unchanged": would.unchanged,
            "rejected": rejected,
            "dryRun": true,
        })
    } else {
        json!({
            "rows": rows_total,
            "accepted": written,
            "rejected": rejected,
            "dryRun": false,
        })
    };
    let mut shape = crate::output::Shape::new(ctx.format);
    shape.post = post;
    crate::output::write_shaped(&shape, &summary)?;
    if rejected > 0 {
        return Err(Fail::rejected(format!("{rejected} row(s) rejected")));
    }
    Ok(())
}
