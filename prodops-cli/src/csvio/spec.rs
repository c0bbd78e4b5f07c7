//! The description of a resource's CSV: its [`Spec`], the [`Column`]s in export order and the
//! [`CellKind`] of each column's cells.

use futures::TryStreamExt;
use prodops_client::ListParams;
use prodops_core::custom_property::{CustomPropertyDefinition, DataType};

use crate::context::CommandContext;
use crate::fail::CmdResult;

/// How a cell is read and written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    /// The record id: a UUID; empty means "no id".
    Id,
    /// Text; an empty cell is the empty string.
    Text,
    /// Text; an empty cell is null.
    NullableText,
    /// A UUID; an empty cell is null.
    NullableUuid,
    /// Text that an empty cell leaves out (defaults on create, unchanged on update): enums.
    OptionalText,
    /// `true/false/1/0/yes/no`; an empty cell is left out.
    Bool,
    /// A whole number; an empty cell is left out.
    Int,
    /// A number; an empty cell is left out.
    Number,
    /// A date-time (or date) kept as text; an empty cell is null.
    Time,
    /// A JSON array; an empty cell is left out.
    JsonArray,
    /// A custom property value of that type; an empty cell clears the property (null).
    Property(DataType),
    /// Written on export, read past on import (server-managed).
    ReadOnly,
}

/// One column: its header (the API field name, nested fields dotted) and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub name: String,
    pub kind: CellKind,
}

impl Column {
    pub fn new(name: impl Into<String>, kind: CellKind) -> Column {
        Column {
            name: name.into(),
            kind,
        }
    }
}

/// A resource's CSV.
pub struct Spec {
    /// The resource path (`worker`, `deliverable`).
    pub path: &'static str,
    /// What a row is, for messages (`worker`).
    pub noun: &'static str,
    /// Export columns, in order; an import accepts any subset.
    pub columns: Vec<Column>,
    /// Further headers an import reads past.
    pub ignored: &'static [&'static str],
    /// The field `--key` matches rows without an id by.
    pub key: Option<&'static str>,
    /// The field within whose values `key` is unique (a lot's `code` is unique per `itemId`):
    /// rows are then matched by both, and `None` for a key unique in the organization.
    pub key_scope: Option<&'static str>,
    /// Rows form a tree through `parentId`: parents are written before children.
    pub tree: bool,
    /// Placeholders for required fields an update may leave out, so that core can check the
    /// rest of a partial row (a row that turns out to create a record without them is refused
    /// by the server and reported like any other).
    pub update_placeholders: &'static [(&'static str, &'static str)],
    /// The field a file needs (besides `id` or `--key`) to create records.
    pub create_needs: &'static str,
}

impl Spec {
    #[cfg(test)]
    pub(super) fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// The column a header names, the case of its letters aside.
    pub(super) fn column_ignoring_case(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name).or_else(|| {
            self.columns
                .iter()
                .find(|c| c.name.eq_ignore_ascii_case(name))
        })
    }

    /// The column whose name is nearest an unknown header's, when one is near enough to be
    /// what was meant (`customerIdentifer` → `customerIdentifier`).
    pub(super) fn closest_column(&self, name: &str) -> Option<&str> {
        let lower = name.to_ascii_lowercase();
        self.columns
            .iter()
            .map(|c| {
                (
                    strsim::jaro_winkler(&lower, &c.name.to_ascii_lowercase()),
                    c,
                )
            })
            .filter(|(score, _)| *score > 0.85)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, c)| c.name.as_str())
    }

    /// A row's key as messages name it: `identifier "D-1"`, or for a scoped key (held as
    /// `{scope's UUID} {key}`) `code "L-1" of itemId 0191...`.
    pub(super) fn describe_key(&self, key: &str) -> String {
        let name = self.key.unwrap_or("key");
        match (self.key_scope, key.split_at_checked(36)) {
            (Some(scope), Some((uuid, code))) => {
                format!(
                    "{name} {:?} of {scope} {uuid}",
                    code.trim_start_matches(' ')
                )
            }
            _ => format!("{name} {key:?}"),
        }
    }

    /// The key text of a row: the key itself, or with a scope `{scope's UUID} {key}`.
    pub(super) fn key_text(scope: Option<uuid::Uuid>, key: &str) -> String {
        match scope {
            Some(s) => format!("{s} {key}"),
            None => key.to_string(),
        }
    }

    pub fn headers(&self) -> Vec<&str> {
        self.columns.iter().map(|c| c.name.as_str()).collect()
    }
}

/// One column per active custom property definition that applies to `scope` (in the
/// definitions' sort order, then by key), named `{prefix}{key}` and typed by the definition:
/// the property columns of a resource's spec.
pub fn property_columns(
    defs: &[CustomPropertyDefinition],
    scope: &str,
    prefix: &str,
) -> Vec<Column> {
    let mut defs: Vec<&CustomPropertyDefinition> = defs
        .iter()
        .filter(|d| !d.is_archived && d.applies_to(scope))
        .collect();
    defs.sort_by(|a, b| a.sort_order.cmp(&b.sort_order).then(a.key.cmp(&b.key)));
    defs.into_iter()
        .map(|d| {
            Column::new(
                format!("{prefix}{}", d.key),
                CellKind::Property(d.data_type),
            )
        })
        .collect()
}

/// The organization's custom property definitions, which a spec with property columns is made
/// from once per run of a command.
pub async fn definitions(ctx: &CommandContext) -> CmdResult<Vec<CustomPropertyDefinition>> {
    let params = ListParams::new().page_size(10_000);
    Ok(ctx
        .client
        .resource::<CustomPropertyDefinition>()
        .list(params)
        .try_collect()
        .await?)
}
