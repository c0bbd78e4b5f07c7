//! Documents and their versions (spec 2.9, 4.7).
//!
//! Generic writes of a document are limited to archiving (`patch_only`); documents are created
//! by the Hub upload and by version writes. `documentUrl` is a time-limited link the server
//! generates on read from the durable `documentKey`.

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
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
    #[schema(pattern = r"\S")]
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
    #[serde(deserialize_with = "crate::number::whole_opt")]
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
    /// Further deliverables the document is linked to (link actions); `deliverableId` is the
    /// deliverable it was attached to first.
    #[serde(default)]
    pub linked_deliverable_ids: Vec<Uuid>,
    /// Link of a current version kept outside the blob store (a version created with
    /// `documentUrl` only); answered as `documentUrl` when there is no `documentKey`.
    #[serde(default)]
    pub external_url: Option<String>,
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
    #[serde(with = "crate::time::iso_opt")]
    pub archived_at: Option<DateTime<Utc>>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
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

    /// Makes `version` the current one ("the new version becomes current and updates the
    /// document's file metadata", spec 2.9): name, key or external link, MIME type, size and
    /// the current version id.
    pub fn make_current(&mut self, version: &DocumentVersion, size_bytes: Option<i64>) {
        self.current_version_id = Some(version.id);
        self.name = version.name.clone();
        self.document_key = version.document_key.clone();
        self.external_url = if version.document_key.is_some() {
            None
        } else {
            version.document_url.clone()
        };
        self.mime_type = version.mime_type.clone();
        self.size_bytes = size_bytes;
    }
}

impl Record for Document {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["name"],
        // Archived and restored by PATCH `isArchived`; DELETE removes it for good (spec 4.7).
        archive: Archive::PatchOnly,
        archived_at: true,
        ops: Ops {
            create: Allow::NotAllowed,
            bulk_put: Allow::NotAllowed,
            ..Ops::ALL
        },
        read_only: &[
            "documentUrl",
            "currentVersionId",
            "appUserId",
            "linkedDeliverableIds",
            "externalUrl",
        ],
        patch_only: &["isArchived"],
        default_filters: &[("deliverableDocument", "true")],
        answered: &["documentUrl"],
        summary: "Documents: files of deliverables and the Documents Hub",
        ..ResourceDesc::new("document", "document", "Document")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
        // The link is generated on every read and never stored.
        self.document_url = None;
        // An explicit copy mode wins over the legacy booleans; the boolean that only says
        // whether the file travels with a copy is kept in step with it.
        if let Some(mode) = self.copy_mode {
            self.copy_with_deliverable = mode != CopyMode::None;
        }
        self.linked_deliverable_ids.sort();
        self.linked_deliverable_ids.dedup();
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
    #[schema(pattern = r"\S")]
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
    #[serde(with = "crate::time::iso_opt")]
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
    #[serde(with = "crate::time::iso_opt")]
    pub archived_at: Option<DateTime<Utc>>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for DocumentVersion {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["name", "versionLabel"],
        archive: Archive::OnDelete,
        archived_at: true,
        ops: Ops {
            create: Allow::Custom,
            bulk_put: Allow::NotAllowed,
            ..Ops::ALL
        },
        read_only: &["appUserId"],
        immutable: &["documentId", "documentKey"],
        answered: &["documentUrl"],
        summary: "Document versions: revisions of a document",
        ..ResourceDesc::new("document-version", "document_version", "Document")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
        trim_opt(&mut self.document_key);
        trim_opt(&mut self.document_url);
        // With a key, the link is generated on every read and never stored.
        if self.document_key.as_deref().is_some_and(|k| !k.is_empty()) {
            self.document_url = None;
        }
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

    #[cfg(feature = "openapi")]
    fn refine_form(form: crate::openapi::Form, schema: &mut Value) {
        if form == crate::openapi::Form::Create {
            needs_a_file(schema);
        }
    }
}

/// The answer of `POST /document/upload`: the bytes are stored under `documentKey`, which
/// version create and the Hub bulk upload then name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UploadedFile {
    /// Durable storage key of the bytes.
    pub document_key: String,
    /// Size in bytes.
    pub size_bytes: i64,
    /// The request's `Content-Type`, if any.
    pub mime_type: Option<String>,
    /// SHA-256 of the bytes, hex.
    pub sha256: String,
}

/// A new version needs a file: an uploaded `documentKey` or a `documentUrl` (the rule of
/// [`VersionCreate`] and of a document version's create form).
#[cfg(feature = "openapi")]
pub fn needs_a_file(schema: &mut serde_json::Value) {
    let given = |field: &str| {
        serde_json::json!({
            "required": [field],
            "properties": { field: { "type": "string", "pattern": crate::openapi::nonblank_pattern() } }
        })
    };
    schema["anyOf"] = serde_json::json!([given("documentKey"), given("documentUrl")]);
}

/// The body of `POST /document-version`: a [`VersionCreate`] that names its document.
#[cfg(feature = "openapi")]
pub fn version_create_with_document(
    schemas: &mut crate::api::endpoint::Schemas,
) -> crate::openapi::RefOr<crate::openapi::Schema> {
    use utoipa::openapi::schema::{AllOfBuilder, KnownFormat, ObjectBuilder, SchemaFormat, Type};
    let version = crate::api::endpoint::schema_of::<VersionCreate>(schemas);
    let uuid = ObjectBuilder::new()
        .schema_type(Type::String)
        .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)));
    let document_id = ObjectBuilder::new()
        .required("documentId")
        .property("documentId", uuid);
    let both = AllOfBuilder::new().item(version).item(document_id).build();
    utoipa::openapi::RefOr::T(crate::openapi::Schema::AllOf(both))
}

/// Without the `openapi` feature no schema exists; the declaration still names this function.
#[cfg(not(feature = "openapi"))]
pub fn version_create_with_document(
    _: &mut crate::api::endpoint::Schemas,
) -> crate::openapi::RefOr<crate::openapi::Schema> {
    panic!("prodops-core is built without its `openapi` feature")
}

/// `POST /document-version` and `POST /document/{id}/versions`: a new version, made current.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VersionCreate {
    /// The document (required on `POST /document-version`, implied by the path otherwise).
    #[serde(default)]
    pub document_id: Option<Uuid>,
    /// Optional id of the new version.
    #[serde(default)]
    pub id: Option<Uuid>,
    /// Label of the revision.
    #[serde(default)]
    pub version_label: Option<String>,
    /// File name; required.
    #[schema(pattern = r"\S")]
    pub name: String,
    /// Key of uploaded bytes (`POST /document/upload`).
    #[serde(default)]
    pub document_key: Option<String>,
    /// A link kept outside the blob store, when there is no `documentKey`.
    #[serde(default)]
    pub document_url: Option<String>,
    /// MIME type; defaults to the upload's.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// When the file itself was last modified.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub last_modified_at: Option<DateTime<Utc>>,
    /// Free-form key-value data.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

/// One document of `POST /document/hub/bulk-upload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HubUploadItem {
    /// File name; required.
    #[schema(pattern = r"\S")]
    pub name: String,
    /// Key of uploaded bytes (`POST /document/upload`); required.
    #[schema(pattern = r"\S")]
    pub document_key: String,
    /// MIME type; defaults to the upload's.
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Deliverable to attach the document to.
    #[serde(default)]
    pub deliverable_id: Option<Uuid>,
    /// Copy behaviour; wins over the legacy booleans.
    #[serde(default)]
    pub copy_mode: Option<CopyMode>,
    /// Legacy; defaults to whether `deliverableId` is given (a document without one is Hub-only).
    #[serde(default)]
    pub deliverable_document: Option<bool>,
    /// Legacy: carried along when its deliverable is copied.
    #[serde(default)]
    pub copy_with_deliverable: Option<bool>,
    /// Label of the first version (default `v1`).
    #[serde(default)]
    pub version_label: Option<String>,
    /// Free-form key-value data.
    #[serde(default)]
    pub metadata: Map<String, Value>,
}

/// `POST /document/hub/bulk-upload`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HubBulkUpload {
    /// The documents to create, 1 to [`MAX_HUB_UPLOAD`].
    pub documents: Vec<HubUploadItem>,
}

/// The most documents one Hub bulk upload creates.
pub const MAX_HUB_UPLOAD: usize = 1000;

/// The most deliverable ids one `POST /document/counts-by-deliverable` accepts (spec 8).
pub const MAX_COUNT_IDS: usize = 1000;

/// `POST /document/counts-by-deliverable`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CountsByDeliverable {
    /// Up to 1,000 deliverable ids.
    pub deliverable_ids: Vec<Uuid>,
}

/// `POST /document/{id}/links` and `DELETE /document/{id}/links/{deliverableId}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LinkRequest {
    /// The deliverable to link the document to.
    pub deliverable_id: Uuid,
}

/// `POST /document/{id}/copy-mode`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CopyModeRequest {
    /// The new copy mode.
    pub copy_mode: CopyMode,
}

impl HubUploadItem {
    /// Rules of one item: a name and a key.
    pub fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "name", &self.name);
        require_nonempty(&mut v, "documentKey", &self.document_key);
        v
    }

    /// The legacy `deliverableDocument` in force: as given, else whether a deliverable is named.
    pub fn deliverable_document(&self) -> bool {
        self.deliverable_document
            .unwrap_or(self.deliverable_id.is_some())
    }
}

impl CountsByDeliverable {
    /// At most [`MAX_COUNT_IDS`] ids.
    pub fn validate(&self) -> Vec<Violation> {
        if self.deliverable_ids.len() > MAX_COUNT_IDS {
            vec![Violation::field(
                "deliverableIds",
                format!(
                    "at most {MAX_COUNT_IDS} deliverable ids per call ({} given)",
                    self.deliverable_ids.len()
                ),
            )]
        } else {
            Vec::new()
        }
    }
}

/// Whether a document is attached (first or by a link) to `deliverable`.
pub fn is_attached_to(doc: &Document, deliverable: Uuid) -> bool {
    doc.deliverable_id == Some(deliverable) || doc.linked_deliverable_ids.contains(&deliverable)
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

    #[test]
    fn copy_mode_keeps_the_travel_flag_in_step() {
        let out = check::<Document>(
            json!({"name": "a", "copyMode": "reference", "copyWithDeliverable": false}),
        )
        .unwrap();
        assert_eq!(out["copyWithDeliverable"], true);
        let out = check::<Document>(
            json!({"name": "a", "copyMode": "none", "copyWithDeliverable": true}),
        )
        .unwrap();
        assert_eq!(out["copyWithDeliverable"], false);
        let out = check::<Document>(json!({"name": "a", "documentUrl": "https://stale"})).unwrap();
        assert_eq!(out["documentUrl"], Value::Null);
    }

    #[test]
    fn current_version_rewrites_the_file_fields() {
        let doc = "00000000-0000-4000-8000-0000000000d1";
        let v: DocumentVersion = crate::common::testing::parse(
            json!({"documentId": doc, "name": "rev-b.pdf", "documentKey": "k2", "mimeType": "application/pdf"}),
        );
        let mut stored: Document = crate::common::testing::parse(json!({
            "name": "rev-a.pdf", "documentKey": "k1", "externalUrl": "https://stale",
            "mimeType": "text/plain", "sizeBytes": 3, "copyMode": "copy"
        }));
        let untouched = stored.clone();
        stored.make_current(&v, Some(10));
        assert_eq!(stored.current_version_id, Some(v.id));
        assert_eq!(stored.name, "rev-b.pdf");
        assert_eq!(stored.document_key.as_deref(), Some("k2"));
        assert_eq!(stored.external_url, None);
        assert_eq!(stored.mime_type.as_deref(), Some("application/pdf"));
        assert_eq!(stored.size_bytes, Some(10));
        // Only the file fields change.
        assert_eq!(stored.copy_mode, untouched.copy_mode);
        let ext: DocumentVersion = crate::common::testing::parse(
            json!({"documentId": doc, "name": "x", "documentUrl": "https://example.com/x"}),
        );
        stored.make_current(&ext, None);
        assert_eq!(stored.document_key, None);
        assert_eq!(
            stored.external_url.as_deref(),
            Some("https://example.com/x")
        );
        assert_eq!(stored.mime_type, None);
        assert_eq!(stored.size_bytes, None);
    }

    #[test]
    fn counts_are_capped_and_hub_items_default_to_hub_only() {
        let ids = vec![Uuid::nil(); MAX_COUNT_IDS];
        assert!(
            CountsByDeliverable {
                deliverable_ids: ids.clone()
            }
            .validate()
            .is_empty()
        );
        let mut more = ids;
        more.push(Uuid::nil());
        assert_eq!(
            CountsByDeliverable {
                deliverable_ids: more
            }
            .validate()
            .len(),
            1
        );
        let item: HubUploadItem =
            serde_json::from_value(json!({"name": "a", "documentKey": "k"})).unwrap();
        assert!(!item.deliverable_document());
        let item: HubUploadItem = serde_json::from_value(
            json!({"name": "a", "documentKey": "k", "deliverableId": Uuid::nil()}),
        )
        .unwrap();
        assert!(item.deliverable_document());
        assert!(
            serde_json::from_value::<HubUploadItem>(
                json!({"name": "a", "documentKey": "k", "x": 1})
            )
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
