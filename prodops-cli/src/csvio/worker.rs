//! `prodops worker import FILE.csv` and `prodops worker export`: the worker [`Spec`].

use std::sync::LazyLock;

use clap::{Arg, ArgAction, ArgMatches, Command};
use futures::TryStreamExt;

use super::{Cells, Column, FlatSpec, Kind, RowWriter, Spec};
use crate::fail::CmdResult;
use crate::run::Ctx;

pub static SPEC: LazyLock<Spec> = LazyLock::new(|| Spec {
    path: "worker",
    noun: "worker",
    columns: vec![
        Column::new("id", Kind::Id),
        Column::new("name", Kind::Text),
        Column::new("customerIdentifier", Kind::Text),
        Column::new("teamId", Kind::NullableUuid),
        Column::new("status", Kind::OptionalText),
        Column::new("isArchived", Kind::Bool),
        Column::new("exemptFromAssignments", Kind::Bool),
        Column::new("unionCode", Kind::NullableText),
        Column::new("qbBadgeLink", Kind::NullableText),
        Column::new("createdAt", Kind::ReadOnly),
        Column::new("updatedAt", Kind::ReadOnly),
    ],
    ignored: &["organizationId"],
    key: Some("customerIdentifier"),
    tree: false,
    update_placeholders: &[("name", "-")],
    create_needs: "name",
});

/// Worker imports send batches of 10,000 rows, four in flight: the server writes one batch at a
/// time, and fewer, larger transactions rewrite fewer index pages; with four in flight one batch
/// is written while the next waits for the writer and two more are read and checked, so neither
/// core idles (bench/README.md).
const IMPORT_DEFAULTS: (&str, &str) = ("10000", "4");

pub fn import_command() -> Command {
    super::import_command_with(
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
    super::export_args(
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

pub async fn import(ctx: &Ctx, args: &ArgMatches) -> CmdResult {
    super::import(ctx, &SPEC, args).await
}

/// The worker spec's columns are all top-level fields: exports read records as [`Cells`].
pub struct WorkerSpec;

impl FlatSpec for WorkerSpec {
    fn spec() -> &'static Spec {
        &SPEC
    }
}

/// Streams pages of the list (the next fetched while one is written) straight into the CSV
/// writer, each record read into its cells.
pub async fn export(ctx: &Ctx, args: &ArgMatches) -> CmdResult {
    let mut params = crate::run::list_params(args)?;
    params.page_size = args.get_one::<u64>("page-size").copied();
    params.prefetch = Some(2);
    let mut out = RowWriter::open(&SPEC, args)?;
    let mut pages = ctx
        .client
        .resource_as::<Cells<WorkerSpec>>("worker")
        .pages(params);
    let mut pb = None;
    while let Some(page) = pages.try_next().await? {
        if pb.is_none() {
            pb = Some(super::progress(
                page.total_count,
                "{spinner} exporting [{bar:40}] {pos}/{len} {elapsed} eta {eta}",
            ));
        }
        for w in &page.values {
            out.write_cells(&w.cells)?;
        }
        if let Some(Some(pb)) = &pb {
            pb.set_position(out.count);
        }
    }
    if let Some(Some(pb)) = &pb {
        pb.finish_and_clear();
    }
    out.finish(&SPEC)
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::csvio::row_record;

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
        let cells: Cells<WorkerSpec> = serde_json::from_value(record.clone()).unwrap();
        let mut buf = String::new();
        for (col, cell) in SPEC.columns.iter().zip(&cells.cells) {
            crate::csvio::cell_text(
                col.kind,
                crate::csvio::get_path(&record, &col.name),
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
