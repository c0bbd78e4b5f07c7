//! `prodops deliverable why ID` for a person: the answer of `GET /deliverable/{id}/explain` as
//! its sentences (the summary, then one line per reason). With `-o json` (or any format but
//! table) the command prints the answer's data instead, as every action command does; `run.rs`
//! sends only the table form here.

use std::io::Write;

use clap::ArgMatches;
use prodops_client::explain::Explanation;
use uuid::Uuid;

use crate::context::CommandContext;
use crate::fail::{CmdResult, Fail};

pub async fn why(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let raw = args
        .get_one::<String>("id")
        .ok_or_else(|| Fail::usage("the deliverable id is required"))?;
    let id = Uuid::parse_str(raw.trim()).map_err(|_| Fail::usage(format!("{raw}: not a UUID")))?;
    let explanation = ctx.client.deliverable_explain(id).await?;
    let mut out = std::io::stdout().lock();
    out.write_all(sentences(&explanation).as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Fail::io("writing the explanation", e))
}

/// The summary, then each reason's sentence on a line of its own, marked as an item.
pub fn sentences(e: &Explanation) -> String {
    let mut text = format!("{}\n", e.summary);
    for r in &e.reasons {
        text.push_str("  - ");
        text.push_str(&r.sentence);
        text.push('\n');
    }
    text
}
