//! `prodops worker import FILE.csv` and `prodops worker export`, with the worker [`Spec`]
//! (`worker_spec.rs`).

use clap::{Arg, ArgAction, ArgMatches, Command};

use super::worker_spec::SPEC;
use crate::context::CommandContext;
use crate::fail::CmdResult;

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
    super::command::streamed_export_args(
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
    .after_help(
        "The export is read in one snapshot of the database (one request, streamed).\n\n\
         Examples:\n  prodops worker export --filter isArchived=true -o archived.csv\n  \
         prodops worker export -o workers.csv --cursor-file cursor && prodops events tail --resource worker --since $(cat cursor)",
    )
}

pub async fn import(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    super::import::import(ctx, &SPEC, args).await
}

/// Exports the workers through `GET /worker/export`, one snapshot streamed as CSV
/// ([`super::export::export_list`]).
pub async fn export(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    super::export::export_list(ctx, &SPEC, args).await
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
