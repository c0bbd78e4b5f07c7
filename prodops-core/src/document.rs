//! Documents and their versions (spec 2.9, 4.7).
//!
//! Generic writes of a document are limited to archiving (`patch_only`); documents are created
//! by the Hub upload and by version writes. `documentUrl` is a time-limited link the server
//! generates on read from the durable `documentKey`.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::common::{default_true, require_nonempty, trim, trim_opt};
use crate::resource::{Allow, Archive, Ops, Record, ResourceDesc};
use crate::violation::Violation;

/// What happens to a document when its deliverable is copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum CopyMode {
    /// The document stays in place; the copy does not get it.
    None,
    /// The copy gets an independent copy of the document.
    Copy,
    /// The copy links to the same document; revisions are shared.
    Reference,
}

/// The copy mode in force: `copy_mode` when given, else derived from the legacy booleans.
///
/// Legacy mapping (each boolean at its default when absent: `deliverableDocument` true,
/// `copyWithDeliverable` false):
///
/// | copyWithDeliverable | deliverableDocument | mode |
/// |---|---|---|
/// | false | any | `none` |
/// | true | true (file of one deliverable) | `copy` |
/// | true | false (file of the whole order) | `reference` |
pub fn effective_copy_mode(
    copy_mode: Option<CopyMode>,
    deliverable_document: Option<bool>,
    copy_with_deliverable: Option<bool>,
) -> CopyMode {
    if let Some(mode) = copy_mode {
        return mode;
    }
    match (
        copy_with_deliverable.unwrap_or(false),
        deliverable_document.unwrap_or(true),
    ) {
        (false, _) => CopyMode::None,
        (true, true) => CopyMode::Copy,
        (true, false) => CopyMode::Reference,
    }
}

/// A file attached to a deliverable or kept in the Documents Hub.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Document {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// File name.
    pub name: String,
    /// Deliverable the file is attached to.
    #[serde(default)]
    pub deliverable_id: Option<Uuid>,
    /// Durable storage key of the current version.
    #[serde(default)]
    pub document_key: Option<String>,
    /// Time-limited download link, generated on read; store `documentKey` instead.
    #[serde(default)]
    pub document_url: Option<String>,
    /// MIME type of the current version.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Size of the current version in bytes.
    #[serde(default)]
    pub size_bytes: Option<i64>,
    /// Copy behaviour; takes precedence over the legacy booleans (see [`effective_copy_mode`]).
    #[serde(default)]
    pub copy_mode: Option<CopyMode>,
    /// Legacy: the file belongs to one deliverable rather than the whole order.
    #[serde(default = "default_true")]
    pub deliverable_document: bool,
    /// Legacy: the file is carried along when its deliverable is copied.
    #[serde(default)]
    pub copy_with_deliverable: bool,
    /// Whether the document lives in the Documents Hub.
    #[serde(default)]
    pub is_hub: bool,
    /// The current version; set by version writes.
    #[serde(default)]
    pub current_version_id: Option<Uuid>,
    /// Free-form key-value data.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The user who uploaded it; set by the server.
    #[serde(default)]
    pub app_user_id: Option<Uuid>,
    /// Archived by DELETE or PATCH; restored by PATCH `{ "isArchived": false }`.
    #[serde(default)]
    pub is_archived: bool,
    /// When the record was archived; kept by the engine.
    #[serde(default)]
    pub archived_at: Option<DateTime<Utc>>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last update time.
    pub updated_at: DateTime<Utc>,
}

impl Document {
    /// The copy mode in force for this document.
    pub fn effective_copy_mode(&self) -> CopyMode {
        effective_copy_mode(
            self.copy_mode,
            Some(self.deliverable_document),
            Some(self.copy_with_deliverable),
        )
    }
}

impl Record for Document {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["name"],
        archive: Archive::OnDelete,
        archived_at: true,
        ops: Ops {
            create: Allow::NotAllowed,
            bulk_put: Allow::NotAllowed,
            ..Ops::ALL
        },
        read_only: &["documentUrl", "currentVersionId", "appUserId"],
        patch_only: &["isArchived"],
        summary: "Documents: files of deliverables and the Documents Hub",
        ..ResourceDesc::new("document", "document", "Document")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "name", &self.name);
        if self.size_bytes.is_some_and(|s| s < 0) {
            v.push(Violation::field(
                "sizeBytes",
                "sizeBytes must not be negative",
            ));
        }
        v
    }
}

/// One version of a document; creating one makes it current.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DocumentVersion {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The document; cannot change.
    pub document_id: Uuid,
    /// Label of the revision (`v2`, `Rev B`).
    #[serde(default)]
    pub version_label: Option<String>,
    /// File name; required.
    pub name: String,
    /// Durable storage key.
    #[serde(default)]
    pub document_key: Option<String>,
    /// Download link; required when there is no `documentKey`.
    #[serde(default)]
    pub document_url: Option<String>,
    /// MIME type.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// When the file itself was last modified.
    #[serde(default)]
    pub last_modified_at: Option<DateTime<Utc>>,
    /// Free-form key-value data.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// The user who uploaded it; set by the server.
    #[serde(default)]
    pub app_user_id: Option<Uuid>,
    /// Archived by DELETE, restored by PATCH `{ "isArchived": false }`.
    #[serde(default)]
    pub is_archived: bool,
    /// When the record was archived; kept by the engine.
    #[serde(default)]
    pub archived_at: Option<DateTime<Utc>>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last update time.
    pub updated_at: DateTime<Utc>,
}

impl Record for DocumentVersion {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["name", "versionLabel"],
        archive: Archive::OnDelete,
        archived_at: true,
        read_only: &["appUserId"],
        immutable: &["documentId"],
        summary: "Document versions: revisions of a document",
        ..ResourceDesc::new("document-version", "document_version", "Document")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
        trim_opt(&mut self.document_key);
        trim_opt(&mut self.document_url);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "name", &self.name);
        let given = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.is_empty());
        if !given(&self.document_key) && !given(&self.document_url) {
            v.push(Violation::general(
                "a document version needs documentKey or documentUrl",
            ));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn copy_mode_mapping() {
        assert_eq!(effective_copy_mode(None, None, None), CopyMode::None);
        assert_eq!(
            effective_copy_mode(None, Some(true), Some(true)),
            CopyMode::Copy
        );
        assert_eq!(effective_copy_mode(None, None, Some(true)), CopyMode::Copy);
        assert_eq!(
            effective_copy_mode(None, Some(false), Some(true)),
            CopyMode::Reference
        );
        assert_eq!(
            effective_copy_mode(None, Some(false), Some(false)),
            CopyMode::None
        );
        assert_eq!(
            effective_copy_mode(Some(CopyMode::Reference), Some(true), Some(false)),
            CopyMode::Reference
        );
    }

    #[test]
    fn document_defaults() {
        let out = check::<Document>(json!({"name": "drawing.pdf"})).unwrap();
        assert_eq!(out["deliverableDocument"], true);
        assert_eq!(out["copyWithDeliverable"], false);
        assert_eq!(out["copyMode"], Value::Null);
        assert!(check::<Document>(json!({"name": "a", "copyMode": "link"})).is_err());
    }

    #[test]
    fn version_needs_a_name_and_a_file() {
        let doc = "00000000-0000-4000-8000-0000000000d1";
        assert!(
            check::<DocumentVersion>(
                json!({"documentId": doc, "name": "v1", "documentKey": "k/1"})
            )
            .is_ok()
        );
        assert!(
            check::<DocumentVersion>(
                json!({"documentId": doc, "name": "v1", "documentUrl": "https://x"})
            )
            .is_ok()
        );
        assert!(
            check::<DocumentVersion>(json!({"documentId": doc, "name": "v1", "documentKey": " "}))
                .is_err()
        );
        assert!(
            check::<DocumentVersion>(json!({"documentId": doc, "name": " ", "documentKey": "k"}))
                .is_err()
        );
    }

    fn any_mode() -> impl Strategy<Value = Option<CopyMode>> {
        proptest::option::of(prop_oneof![
            Just(CopyMode::None),
            Just(CopyMode::Copy),
            Just(CopyMode::Reference)
        ])
    }

    proptest! {
        #[test]
        fn explicit_copy_mode_wins(mode in any_mode(), dd in any::<Option<bool>>(), cwd in any::<Option<bool>>()) {
            let effective = effective_copy_mode(mode, dd, cwd);
            if let Some(mode) = mode {
                prop_assert_eq!(effective, mode);
            } else {
                prop_assert_eq!(effective == CopyMode::None, cwd != Some(true));
            }
        }
    }
}
