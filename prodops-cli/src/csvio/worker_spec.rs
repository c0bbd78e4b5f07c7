//! The worker's CSV [`Spec`]: its columns and cells. Apart from `worker.rs` (the commands), so
//! that the import's own tests can check rows against a real flat spec without depending on
//! the commands that drive the import.

use std::sync::LazyLock;

use super::spec::{CellKind, Column, Spec};

pub static SPEC: LazyLock<Spec> = LazyLock::new(|| Spec {
    path: "worker",
    noun: "worker",
    columns: vec![
        Column::new("id", CellKind::Id),
        Column::new("name", CellKind::Text),
        Column::new("customerIdentifier", CellKind::Text),
        Column::new("teamId", CellKind::NullableUuid),
        Column::new("status", CellKind::OptionalText),
        Column::new("isArchived", CellKind::Bool),
        Column::new("exemptFromAssignments", CellKind::Bool),
        Column::new("unionCode", CellKind::NullableText),
        Column::new("qbBadgeLink", CellKind::NullableText),
        Column::new("createdAt", CellKind::ReadOnly),
        Column::new("updatedAt", CellKind::ReadOnly),
    ],
    ignored: &["organizationId"],
    key: Some("customerIdentifier"),
    key_scope: None,
    tree: false,
    update_placeholders: &[("name", "-")],
    create_needs: "name",
});
