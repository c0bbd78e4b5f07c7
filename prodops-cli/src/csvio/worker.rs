//! `prodops worker import FILE.csv` and `prodops worker export`, with the worker [`Spec`]
//! (`worker_spec.rs`).

use clap::{Arg, ArgAction, ArgMatches, Command};

use super::export::RowWriter;
use super::worker_spec::SPEC;
use crate::context::CommandContext;
use crate::fail::{CmdResult, Fail};

/// Worker imports send batches of 10,000 rows, four in flight: the server writes one batch at a
/// time, and fewer, larger transactions rewrite fewer index pages; with four in flight one batch
/// is written while the next waits for the writer and two more are read and checked, so neither
/// core idles (bench/README.md).
const IMPORT_DEFAULTS: (&str, &str) = ("10000", "4");

pub fn import_command() -> Command {
    super::command::import_command_with(
        "worker",
        &["customerIdentifier"],
        "Imports workers from CSV. The header row holds field names: id, name, customerIdentifier,\n\
         teamId, status, isArchived, exemptFromAssignments, unionCode, qbBadgeLink (createdAt,\n\
         updatedAt and organizationId are read past). Only the columns present are written.\n\
         Every row is checked before anything is sent; rows with an id (or, with --key\n\
         customerIdentifier, a known identifier) update that worker, others create one, so running\n\
         the same file twice changes nothing. Rejected rows are reported on stderr with their line\n\
         numbers while the rest are written; the exit code is then 5."
            .into(),
        "prodops worker import people.csv --key customerIdentifier",
        IMPORT_DEFAULTS,
    )
}

pub fn export_command() -> Command {
    super::command::export_args(
        Command::new("export")
            .about("Exports workers as CSV (streams: memory stays flat)")
            .arg(
                Arg::new("filter")
                    .long("filter")
                    .short('f')
                    .value_name("FIELD=VALUE")
                    .action(ArgAction::Append)
                    .help("Equality filter (isArchived=true for archived workers)"),
            )
            .arg(
                Arg::new("search")
                    .long("search")
                    .value_name("TEXT")
                    .help("Substring of name or customerIdentifier"),
            ),
    )
    .after_help("Example:\n  prodops worker export --filter isArchived=true -o archived.csv")
}

pub async fn import(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    super::import::import(ctx, &SPEC, args).await
}

/// One page's answer of `GET /worker`, read past its records: how many it holds, the count
/// in all and the cursor of the next page.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageHead {
    values: Vec<serde::de::IgnoredAny>,
    total_count: u64,
    #[serde(default)]
    next_cursor: Option<String>,
}

/// Asks for a page of `GET /worker?{query}{paging}` (`query` empty or ending in `&`) on a task
/// of its own, so that the answer arrives while a page is written.
fn fetch_page(
    ctx: &CommandContext,
    query: &str,
    paging: String,
) -> tokio::task::JoinHandle<prodops_client::Result<bytes::Bytes>> {
    let client = ctx.client.clone();
    let path = format!("/worker?{query}{paging}");
    tokio::spawn(async move { client.send(prodops_client::Method::GET, &path, None).await })
}

/// Exports the list page by page: the requests of the client's `Resource::pages` (the first
/// page, then by keyset, or by number where the first page gives no cursor), each asked for
/// as soon as the page before is in. While a page's records are written on a blocking thread,
/// straight from the answer's text into the CSV writer, the next page arrives: two pages are
/// held at most. (Through `pages`, up to three more pages' texts waited while a page was read
/// into records: 50 MiB of a million workers' export.)
pub async fn export(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let params = crate::context::list_params(args)?;
    let size = args
        .get_one::<u64>("page-size")
        .copied()
        .unwrap_or(ctx.client.config().page_size);
    let mut query = params.query_string(true);
    if !query.is_empty() {
        query.push('&');
    }
    let mut out = RowWriter::open(&SPEC, args)?;
    let mut next = Some(fetch_page(ctx, &query, format!("page=1&pageSize={size}")));
    let mut pb = None;
    // By number: the last page's number, and the number of the page in hand.
    let mut numbered: Option<(u64, u64)> = None;
    let mut first = true;
    while let Some(fetching) = next.take() {
        let page = fetching
            .await
            .map_err(|e| Fail::io("reading a page", std::io::Error::other(e.to_string())))??;
        let head: PageHead = serde_json::from_slice(&page).map_err(|e| {
            let sample: String = String::from_utf8_lossy(&page).chars().take(200).collect();
            Fail::from(prodops_client::Error::Decode(format!("{e} in {sample}")))
        })?;
        if first {
            first = false;
            pb = super::command::progress(
                head.total_count,
                "{spinner} exporting [{bar:40}] {pos}/{len} {elapsed} eta {eta}",
            );
            if head.next_cursor.is_none() && head.values.len() as u64 >= size {
                numbered = Some((head.total_count.div_ceil(size), 1));
            }
        }
        if head.values.is_empty() {
            break;
        }
        next = match (&mut numbered, head.next_cursor) {
            (Some((last, page)), _) => (*page < *last).then(|| {
                *page += 1;
                fetch_page(ctx, &query, format!("page={page}&pageSize={size}"))
            }),
            (None, Some(cursor)) => Some(fetch_page(
                ctx,
                &query,
                format!(
                    "cursor={}&pageSize={size}",
                    prodops_client::paths::encode(&cursor)
                ),
            )),
            (None, None) => None,
        };
        let (back, written) = tokio::task::spawn_blocking(move || {
            let written = out.write_page(&SPEC, &page);
            (out, written)
        })
        .await
        .map_err(|e| Fail::io("writing the CSV", std::io::Error::other(e.to_string())))?;
        out = back;
        written?;
        if let Some(pb) = &pb {
            pb.set_position(out.count);
        }
    }
    if let Some(pb) = &pb {
        pb.finish_and_clear();
    }
    out.finish(&SPEC)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::csvio::import::row_record;
    use crate::csvio::spec::Column;

    fn cols(names: &[&str]) -> Vec<Option<&'static Column>> {
        names
            .iter()
            .map(|n| SPEC.columns.iter().find(|c| c.name == *n))
            .collect()
    }

    #[test]
    fn a_good_row_becomes_its_present_columns() {
        let c = cols(&[
            "name",
            "customerIdentifier",
            "teamId",
            "status",
            "isArchived",
            "createdAt",
        ]);
        let r = csv::StringRecord::from(vec![
            "Ann",
            "E1",
            "",
            "inactive",
            "false",
            "2020-01-01T00:00:00Z",
        ]);
        let rec = row_record(&SPEC, &c, &r, false).unwrap();
        assert_eq!(
            Value::Object(rec),
            json!({"name": "Ann", "customerIdentifier": "E1", "teamId": null, "status": "inactive", "isArchived": false})
        );
    }

    #[test]
    fn bad_rows_name_what_is_wrong() {
        let c = cols(&["id", "name", "status", "teamId", "isArchived"]);
        let bad = |cells: Vec<&str>| {
            row_record(&SPEC, &c, &csv::StringRecord::from(cells), false)
                .unwrap_err()
                .join(" ")
        };
        assert!(bad(vec!["nope", "A", "", "", ""]).contains("id"));
        assert!(bad(vec!["", " ", "", "", ""]).contains("name"));
        assert!(bad(vec!["", "A", "retired", "", ""]).contains("status"));
        assert!(bad(vec!["", "A", "", "x", ""]).contains("teamId"));
        assert!(bad(vec!["", "A", "", "", "maybe"]).contains("isArchived"));
    }

    #[test]
    fn an_update_by_id_may_leave_out_the_name() {
        let c = cols(&["id", "status"]);
        let r = csv::StringRecord::from(vec!["0191c3a8-0000-7000-8000-000000000001", "terminated"]);
        assert!(row_record(&SPEC, &c, &r, false).is_ok());
    }

    #[test]
    fn cells_are_the_texts_the_value_path_writes() {
        let record = json!({
            "organizationId": "o", "id": "0191c3a8-0000-7000-8000-000000000001",
            "name": "A \"quoted\", name", "customerIdentifier": "", "teamId": null,
            "status": "active", "isArchived": true, "exemptFromAssignments": false,
            "unionCode": 12.5, "qbBadgeLink": [1, {"x": "y"}], "createdAt": "2024-01-02T08:00:00.123Z",
            "extra": {"ignored": true}
        });
        let text = serde_json::to_vec(&record).unwrap();
        let mut cells = vec![String::new(); SPEC.columns.len()];
        serde::de::DeserializeSeed::deserialize(
            crate::csvio::export::RecordCells {
                columns: &SPEC.columns,
                cells: &mut cells,
            },
            &mut serde_json::Deserializer::from_slice(&text),
        )
        .unwrap();
        let mut buf = String::new();
        for (col, cell) in SPEC.columns.iter().zip(&cells) {
            crate::csvio::cells::cell_text(
                col.kind,
                crate::csvio::cells::get_path(&record, &col.name),
                &mut buf,
            );
            assert_eq!(cell, &buf, "{}", col.name);
        }
        assert!(
            SPEC.columns.iter().all(|c| !c.name.contains('.')),
            "a flat spec"
        );
    }

    #[test]
    fn export_columns_are_importable_or_read_only() {
        for c in &SPEC.columns {
            assert!(
                SPEC.column(&c.name).is_some(),
                "{} is a column of its own spec",
                c.name
            );
        }
        assert_eq!(SPEC.headers()[0], "id");
    }
}
