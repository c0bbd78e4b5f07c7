//! `prodops deliverable import FILE.csv`, `prodops deliverable export` and the tree view of
//! `prodops deliverable hierarchy ID` (table output).
//!
//! The deliverable [`Spec`] is built at run time: its fixed columns, then one
//! `data.properties.<key>` column per active custom property definition of the organization.
//! Export reads the trees with `GET /deliverable/trees?select=...` (or one subtree with
//! `GET /deliverable/{id}/hierarchy?select=...`): parents before children, siblings in their
//! order, only the fields the columns read, one streamed request read by the server in one
//! snapshot, each record written as it arrives.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use clap::{Arg, ArgAction, ArgMatches, Command};
use prodops_core::custom_property::CustomPropertyDefinition;
use serde_json::Value;
use uuid::Uuid;

use super::export::{Layout, RowWriter};
use super::spec::{CellKind, Column, Spec};
use crate::context::CommandContext;
use crate::fail::{CmdResult, Fail};

/// The fixed columns, in export order. `rootParentId` and `computed` are server-derived and not
/// exported; `schedule` is exported but read past on import (only the schedule actions write
/// it).
pub fn fixed_columns() -> Vec<Column> {
    use CellKind::*;
    [
        ("id", Id),
        ("identifier", Text),
        ("name", Text),
        ("type", OptionalText),
        ("parentId", NullableUuid),
        ("quantity", Int),
        ("cycleTimeSec", Int),
        ("durationSec", Int),
        ("peopleNum", Int),
        ("costCode", NullableText),
        ("originTemplateId", NullableUuid),
        ("data.stageId", OptionalText),
        ("data.qcTemplateId", OptionalText),
        ("data.projectId", OptionalText),
        ("data.dueDate", OptionalText),
        ("data.workerIds", JsonArray),
        ("data.tags", JsonArray),
        ("progress.status", OptionalText),
        ("progress.completed", Number),
        ("progress.wip", Number),
        ("progress.percentage", Number),
        ("progress.startedAt", Time),
        ("progress.completedAt", Time),
        ("progress.hasBeenReworked", Bool),
        ("progress.updatedById", NullableUuid),
        ("progress.updatedAt", Time),
        ("schedule.startDate", ReadOnly),
        ("schedule.endDate", ReadOnly),
        ("isArchived", Bool),
        ("createdAt", ReadOnly),
        ("updatedAt", ReadOnly),
    ]
    .into_iter()
    .map(|(n, k)| Column::new(n, k))
    .collect()
}

/// The spec for an organization whose active definitions are `defs` (those scoped to orders
/// give columns; a definition scoped to lots has no place on a deliverable).
pub fn spec(defs: &[CustomPropertyDefinition]) -> Spec {
    let mut columns = fixed_columns();
    columns.extend(super::spec::property_columns(
        defs,
        "order",
        "data.properties.",
    ));
    Spec {
        path: "deliverable",
        noun: "deliverable",
        columns,
        ignored: &["organizationId", "rootParentId"],
        key: Some("identifier"),
        key_scope: None,
        tree: true,
        update_placeholders: &[("name", "-"), ("type", "order")],
        create_needs: "name",
    }
}

async fn org_spec(ctx: &CommandContext) -> CmdResult<&'static Spec> {
    let defs = super::spec::definitions(ctx).await?;
    // One spec per run of the command.
    Ok(Box::leak(Box::new(spec(&defs))))
}

pub fn import_command() -> Command {
    super::command::import_command(
        "deliverable",
        &["identifier"],
        "Imports deliverables from CSV. The header row holds field names (nested fields dotted:\n\
         progress.status, data.stageId, ...), as `deliverable export` writes them, plus one\n\
         data.properties.<key> column per active custom property definition. Only the columns\n\
         present are written. Rows are written parents before children whatever their order in\n\
         the file (by id and parentId). Rows with an id (or, with --key identifier, a known\n\
         identifier) update that deliverable, others create one, so running the same file twice\n\
         changes nothing. Rejected rows are reported on stderr with their line numbers while the\n\
         rest are written; the exit code is then 5."
            .into(),
        "prodops deliverable import orders.csv --key identifier",
    )
}

pub fn export_command() -> Command {
    super::command::streamed_export_args(
        Command::new("export")
            .about("Exports deliverable trees as CSV, parents before children")
            .long_about(
                "Exports every tree whose root matches the filters (all non-archived roots by\n\
                 default), or the subtree of --root, parents before children and siblings in\n\
                 their order. Archived nodes inside a tree are exported with isArchived=true.\n\
                 The server reads the whole export in one snapshot (one streamed request);\n\
                 --cursor-file writes that snapshot's feed cursor, after which `prodops events\n\
                 tail --since` gives exactly the changes the file does not hold.",
            )
            .arg(
                Arg::new("root")
                    .long("root")
                    .value_name("ID")
                    .help("Export only the subtree of this deliverable"),
            )
            .arg(
                Arg::new("filter")
                    .long("filter")
                    .short('f')
                    .value_name("FIELD=VALUE")
                    .action(ArgAction::Append)
                    .help("Equality filter on the roots (type=order, isArchived=true, ...)"),
            )
            .arg(
                Arg::new("search")
                    .long("search")
                    .value_name("TEXT")
                    .help("Substring of a root's name or identifier"),
            ),
    )
    .after_help(
        "Example:\n  prodops deliverable export --filter type=order --out orders.csv --cursor-file cursor \\\n\
         \x20   && prodops events tail --resource deliverable --since $(cat cursor)",
    )
}

pub async fn import(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let spec = org_spec(ctx).await?;
    super::import::import(ctx, spec, args).await
}

// ---- export ----------------------------------------------------------------------------------

/// `deliverable export`: the subtree of `--root` (`GET /deliverable/{id}/hierarchy`) or every
/// tree whose root matches the filters (`GET /deliverable/trees`), one streamed request read by
/// the server in one snapshot, each record written as a CSV row as it arrives (none is kept).
/// With `--cursor-file`, the snapshot's feed cursor is written once the export succeeded
/// (docs/cli.md, "Exports you can continue from").
pub async fn export(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let root = args
        .get_one::<String>("root")
        .map(|r| {
            Uuid::parse_str(r.trim()).map_err(|_| Fail::usage(format!("--root {r}: not a UUID")))
        })
        .transpose()?;
    let cursor_file = args.get_one::<String>("cursor-file").map(PathBuf::from);
    let spec = org_spec(ctx).await?;
    // Only the fields the columns read leave the server (not the computed fields, most of a
    // record's bytes), and only those are parsed.
    let layout = Layout::new(spec);
    let select: Vec<&str> = layout.fields().collect();
    let out = RowWriter::open(spec, args)?;
    let nodes = match root {
        Some(root) => {
            ctx.client
                .deliverable_hierarchy_stream(root, &select)
                .await?
        }
        None => {
            let params = crate::context::list_params(args)?;
            ctx.client
                .deliverable_trees_stream(&params, &select)
                .await?
        }
    };
    super::export::write_snapshot(nodes, spec, &layout, out, cursor_file).await
}

// ---- the tree view -----------------------------------------------------------------------------

/// `deliverable hierarchy ID` in table output: one line per node, names indented by depth.
pub async fn hierarchy_tree(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let raw = args
        .get_one::<String>("id")
        .ok_or_else(|| Fail::usage("the deliverable id is required"))?;
    let id = Uuid::parse_str(raw.trim()).map_err(|_| Fail::usage(format!("{raw}: not a UUID")))?;
    let mut nodes = Vec::new();
    let select = [
        "parentId",
        "name",
        "type",
        "identifier",
        "quantity",
        "progress",
        "isArchived",
    ];
    let mut values = ctx.client.deliverable_hierarchy_stream(id, &select).await?;
    while let Some(text) = values.next_value().await? {
        let node: Value = serde_json::from_slice(&text)
            .map_err(|e| Fail::usage(format!("reading the hierarchy of {id}: {e}")))?;
        nodes.push(node);
    }
    let text = tree_table(id, &nodes);
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").map_err(|e| Fail::io("writing the table", e))
}

/// Renders a hierarchy (parents before children) as an indented tree table.
pub fn tree_table(top: Uuid, nodes: &[Value]) -> String {
    let text = |v: &Value, f: &str| {
        super::cells::get_path(v, f)
            .map(|x| {
                let mut s = String::new();
                super::cells::cell_text(CellKind::Text, Some(x), &mut s);
                s
            })
            .unwrap_or_default()
    };
    // Depth of each node: its parent's plus one (parents come first).
    let mut depth: HashMap<String, usize> = HashMap::new();
    // Whether each node is the last of its siblings, for the branch glyphs.
    let mut last_child: HashMap<String, String> = HashMap::new();
    for v in nodes {
        if let (Some(id), Some(p)) = (
            v.get("id").and_then(Value::as_str),
            v.get("parentId").and_then(Value::as_str),
        ) {
            last_child.insert(p.to_string(), id.to_string());
        }
    }
    // For each depth, whether the ancestor at that depth still has siblings below it.
    let mut open: Vec<bool> = Vec::new();
    let mut t = comfy_table::Table::new();
    t.load_preset(comfy_table::presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(comfy_table::ContentArrangement::Dynamic);
    t.set_header([
        "name",
        "type",
        "identifier",
        "qty",
        "status",
        "%",
        "archived",
        "id",
    ]);
    let top = top.to_string();
    for v in nodes {
        let id = text(v, "id");
        let parent = text(v, "parentId");
        let d = if id == top {
            0
        } else {
            depth.get(&parent).map_or(1, |d| d + 1)
        };
        depth.insert(id.clone(), d);
        let mut prefix = String::new();
        if d > 0 {
            open.truncate(d - 1);
            for o in &open {
                prefix.push_str(if *o { "│  " } else { "   " });
            }
            let is_last = last_child.get(&parent) == Some(&id);
            prefix.push_str(if is_last { "└─ " } else { "├─ " });
            open.push(!is_last);
        } else {
            open.clear();
        }
        t.add_row([
            format!("{prefix}{}", text(v, "name")),
            text(v, "type"),
            text(v, "identifier"),
            text(v, "quantity"),
            text(v, "progress.status"),
            text(v, "progress.percentage"),
            if v.get("isArchived").and_then(Value::as_bool) == Some(true) {
                "yes".into()
            } else {
                String::new()
            },
            id,
        ]);
    }
    format!("{t}\n{} node(s)", nodes.len())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::csvio::import::row_record;

    fn spec_with(defs: Vec<Value>) -> Spec {
        let defs: Vec<CustomPropertyDefinition> = defs
            .into_iter()
            .map(|d| serde_json::from_value(d).unwrap())
            .collect();
        spec(&defs)
    }

    fn def(key: &str, data_type: &str, archived: bool) -> Value {
        json!({"id": Uuid::now_v7(), "organizationId": Uuid::nil(), "key": key, "name": key,
               "dataType": data_type, "isArchived": archived,
               "createdAt": "2024-01-01T00:00:00Z", "updatedAt": "2024-01-01T00:00:00Z"})
    }

    #[test]
    fn active_definitions_become_typed_columns() {
        let s = spec_with(vec![
            def("color", "select", false),
            def("old", "text", true),
            def("area", "number", false),
            {
                let mut on_lots = def("origin", "text", false);
                on_lots["deliverableTypes"] = json!(["lot"]);
                on_lots
            },
        ]);
        let h = s.headers();
        assert!(h.contains(&"data.properties.color"));
        assert!(h.contains(&"data.properties.area"));
        assert!(
            !h.contains(&"data.properties.old"),
            "archived definitions are left out"
        );
        assert!(
            !h.contains(&"data.properties.origin"),
            "definitions scoped to lots are left out"
        );
        let cols: Vec<Option<&Column>> = [
            "name",
            "type",
            "parentId",
            "data.properties.area",
            "progress.status",
        ]
        .iter()
        .map(|n| s.column(n))
        .collect();
        let rec = row_record(
            &s,
            &cols,
            &csv::StringRecord::from(vec!["Cut", "stage", "", "12.5", ""]),
            false,
        )
        .unwrap();
        assert_eq!(
            Value::Object(rec),
            json!({"name": "Cut", "type": "stage", "parentId": null, "data": {"properties": {"area": 12.5}}})
        );
        let bad = row_record(
            &s,
            &cols,
            &csv::StringRecord::from(vec!["Cut", "stage", "", "wide", ""]),
            false,
        )
        .unwrap_err();
        assert!(bad[0].contains("data.properties.area"), "{bad:?}");
    }

    #[test]
    fn core_rules_check_rows() {
        let s = spec_with(vec![]);
        let cols: Vec<Option<&Column>> = ["id", "name", "type", "quantity", "parentId"]
            .iter()
            .map(|n| s.column(n))
            .collect();
        let bad = |cells: Vec<&str>| {
            row_record(&s, &cols, &csv::StringRecord::from(cells), false)
                .unwrap_err()
                .join(" ")
        };
        assert!(bad(vec!["", "A", "order", "-1", ""]).contains("quantity"));
        assert!(bad(vec!["", "A", "widget", "1", ""]).contains("type"));
        assert!(bad(vec!["", "", "order", "1", ""]).contains("name"));
        assert!(bad(vec!["", "A", "order", "x", ""]).contains("quantity"));
        let id = "0191c3a8-0000-7000-8000-000000000001";
        assert!(bad(vec![id, "A", "phase", "1", id]).contains("own parent"));
        // An update by id may leave out name and type.
        let cols: Vec<Option<&Column>> = ["id", "quantity"].iter().map(|n| s.column(n)).collect();
        assert!(row_record(&s, &cols, &csv::StringRecord::from(vec![id, "3"]), false).is_ok());
    }

    #[test]
    fn exported_cells_read_back_to_the_same_json() {
        let s = spec_with(vec![
            def("tagsx", "multiselect", false),
            def("ok", "boolean", false),
        ]);
        let record = json!({"id": "0191c3a8-0000-7000-8000-000000000001", "identifier": "D-1", "name": "Order, \"A\"",
            "type": "order", "parentId": null, "quantity": 3, "cycleTimeSec": 0, "durationSec": 60, "peopleNum": 2,
            "costCode": null, "originTemplateId": null,
            "data": {"tags": ["a", "b"], "properties": {"tagsx": ["X", "Y"], "ok": true}},
            "progress": {"status": "wip", "completed": 1.5, "wip": 1, "percentage": 50, "startedAt": "2024-01-01T00:00:00Z",
                         "completedAt": null, "hasBeenReworked": false, "updatedById": null, "updatedAt": null},
            "isArchived": false});
        let cols: Vec<Option<&Column>> = s.columns.iter().map(Some).collect();
        let cells: Vec<String> = s
            .columns
            .iter()
            .map(|c| {
                let mut b = String::new();
                super::super::cells::cell_text(
                    c.kind,
                    super::super::cells::get_path(&record, &c.name),
                    &mut b,
                );
                b
            })
            .collect();
        let back = row_record(&s, &cols, &csv::StringRecord::from(cells), false).unwrap();
        let back = Value::Object(back);
        for f in [
            "id",
            "identifier",
            "name",
            "type",
            "quantity",
            "durationSec",
            "peopleNum",
            "isArchived",
        ] {
            assert_eq!(back[f], record[f], "{f}");
        }
        assert_eq!(back["data"]["tags"], record["data"]["tags"]);
        assert_eq!(back["data"]["properties"], record["data"]["properties"]);
        assert_eq!(back["progress"]["status"], "wip");
        assert_eq!(back["progress"]["completed"], 1.5);
        assert_eq!(back["progress"]["percentage"], 50);
    }

    #[test]
    fn the_tree_view_indents_by_depth() {
        let a = Uuid::now_v7();
        let b = Uuid::now_v7();
        let c = Uuid::now_v7();
        let d = Uuid::now_v7();
        let nodes = vec![
            json!({"id": a, "parentId": null, "name": "Order", "type": "order"}),
            json!({"id": b, "parentId": a, "name": "Phase", "type": "phase"}),
            json!({"id": c, "parentId": b, "name": "Stage", "type": "stage"}),
            json!({"id": d, "parentId": a, "name": "Last", "type": "phase"}),
        ];
        let t = tree_table(a, &nodes);
        assert!(t.contains("├─ Phase"), "{t}");
        assert!(t.contains("│  └─ Stage"), "{t}");
        assert!(t.contains("└─ Last"), "{t}");
        assert!(t.ends_with("4 node(s)"), "{t}");
    }
}
