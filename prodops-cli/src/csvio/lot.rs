//! `prodops lot import FILE.csv` and `prodops lot export`: the lot [`Spec`], built at run time
//! like the deliverable's (its fixed columns, then one `properties.<key>` column per active
//! custom property definition scoped to lots).
//!
//! A lot is named by its item and code (codes are unique per item, archived lots included), so
//! the import always matches a row without an id by both (`--key code`, the default: the key
//! `code` scoped by `itemId`): running a file twice changes nothing and never makes a lot
//! twice. The item is named by its id, as every import names another record (`teamId`,
//! `parentId`): an item's `sku` and `name` are not unique, so neither names one item.

use clap::{Arg, ArgAction, ArgMatches, Command};
use prodops_core::custom_property::CustomPropertyDefinition;

use super::spec::{CellKind, Column, Spec};
use crate::context::CommandContext;
use crate::fail::CmdResult;

/// The fixed columns, in export order. `archivedAt` is kept by the server (archiving is
/// `isArchived`).
pub fn fixed_columns() -> Vec<Column> {
    use CellKind::*;
    [
        ("id", Id),
        ("itemId", NullableUuid),
        ("code", Text),
        ("expiresAt", Time),
        ("manufacturedAt", Time),
        ("vendorLotCode", NullableText),
        ("isArchived", Bool),
        ("archivedAt", ReadOnly),
        ("createdAt", ReadOnly),
        ("updatedAt", ReadOnly),
    ]
    .into_iter()
    .map(|(n, k)| Column::new(n, k))
    .collect()
}

/// The spec for an organization whose custom property definitions are `defs` (the active ones
/// scoped to lots give columns).
pub fn spec(defs: &[CustomPropertyDefinition]) -> Spec {
    let mut columns = fixed_columns();
    columns.extend(super::spec::property_columns(
        defs,
        prodops_core::lot::PROPERTY_SCOPE,
        "properties.",
    ));
    Spec {
        path: "lot",
        noun: "lot",
        columns,
        ignored: &["organizationId"],
        key: Some("code"),
        key_scope: Some("itemId"),
        tree: false,
        update_placeholders: &[
            ("itemId", "00000000-0000-0000-0000-000000000000"),
            ("code", "-"),
        ],
        create_needs: "code",
    }
}

async fn org_spec(ctx: &CommandContext) -> CmdResult<&'static Spec> {
    let defs = super::spec::definitions(ctx).await?;
    // One spec per run of the command.
    Ok(Box::leak(Box::new(spec(&defs))))
}

/// Lot imports send 5,000 rows a batch, four in flight: the default of the other imports.
pub fn import_command() -> Command {
    super::command::import_command(
        "lot",
        &["code"],
        "Imports lots and serials from CSV. The header row holds field names: id, itemId, code,\n\
         expiresAt, manufacturedAt, vendorLotCode, isArchived, plus one properties.<key> column\n\
         per active custom property definition scoped to lots (archivedAt, createdAt, updatedAt\n\
         and organizationId are read past). Only the columns present are written. A row with an\n\
         id updates that lot; a row without one is matched by its itemId and code (a code is\n\
         unique per item): it updates the item's lot of that code, or creates it. Running the\n\
         same file twice changes nothing. Rejected rows are reported on stderr with their line\n\
         numbers while the rest are written; the exit code is then 5."
            .into(),
        "prodops lot import lots.csv --dry-run",
    )
    .mut_arg("key", |a| {
        a.default_value("code")
            .help("Match rows without an id to existing lots by itemId and code (the default and only key)")
    })
}

pub fn export_command() -> Command {
    super::command::streamed_export_args(
        Command::new("export")
            .about("Exports lots and serials as CSV (streams: memory stays flat)")
            .arg(
                Arg::new("filter")
                    .long("filter")
                    .short('f')
                    .value_name("FIELD=VALUE")
                    .action(ArgAction::Append)
                    .help("Equality filter (itemId=ID for one item's lots, isArchived=true)"),
            )
            .arg(
                Arg::new("search")
                    .long("search")
                    .value_name("TEXT")
                    .help("Substring of code or vendorLotCode"),
            ),
    )
    .after_help(
        "The export is read in one snapshot of the database (one request, streamed).\n\n\
         Example:\n  prodops lot export --filter itemId=0191c3a8-... --out lots.csv --cursor-file cursor",
    )
}

pub async fn import(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let spec = org_spec(ctx).await?;
    super::import::import(ctx, spec, args).await
}

pub async fn export(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let spec = org_spec(ctx).await?;
    super::export::export_list(ctx, spec, args).await
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};
    use uuid::Uuid;

    use super::*;
    use crate::csvio::import::row_record;

    fn def(key: &str, data_type: &str, scope: &str) -> CustomPropertyDefinition {
        serde_json::from_value(json!({"id": Uuid::now_v7(), "organizationId": Uuid::nil(),
            "key": key, "name": key, "dataType": data_type, "deliverableTypes": [scope],
            "createdAt": "2024-01-01T00:00:00Z", "updatedAt": "2024-01-01T00:00:00Z"}))
        .unwrap()
    }

    const ITEM: &str = "0191c3a8-0000-7000-8000-000000000001";

    #[test]
    fn definitions_scoped_to_lots_become_columns() {
        let s = spec(&[
            def("origin", "text", "lot"),
            def("color", "select", "order"),
        ]);
        let h = s.headers();
        assert!(h.contains(&"properties.origin"), "{h:?}");
        assert!(!h.iter().any(|c| c.contains("color")), "{h:?}");
        let cols: Vec<Option<&Column>> = ["itemId", "code", "expiresAt", "properties.origin"]
            .iter()
            .map(|n| s.column(n))
            .collect();
        let rec = row_record(
            &s,
            &cols,
            &csv::StringRecord::from(vec![ITEM, " L-1 ", "2027-01-01T00:00:00Z", ""]),
            true,
        )
        .unwrap();
        assert_eq!(
            Value::Object(rec),
            json!({"itemId": ITEM, "code": " L-1 ", "expiresAt": "2027-01-01T00:00:00Z", "properties": {"origin": null}})
        );
    }

    #[test]
    fn bad_cells_name_their_column() {
        let s = spec(&[]);
        let cols: Vec<Option<&Column>> = ["itemId", "code", "expiresAt", "manufacturedAt"]
            .iter()
            .map(|n| s.column(n))
            .collect();
        let bad = |cells: Vec<&str>| {
            row_record(&s, &cols, &csv::StringRecord::from(cells), true)
                .unwrap_err()
                .join(" ")
        };
        assert!(bad(vec!["x", "L", "", ""]).contains("itemId"));
        assert!(bad(vec![ITEM, " ", "", ""]).contains("code"));
        assert!(bad(vec![ITEM, "L", "31/02/2027", ""]).contains("expiresAt"));
        assert!(
            bad(vec![
                ITEM,
                "L",
                "2027-01-01T00:00:00Z",
                "2027-02-01T00:00:00Z"
            ])
            .contains("expiresAt")
        );
        assert!(bad(vec!["", "L", "", ""]).contains("itemId"));
    }
}
