//! Documents (spec 4.7): file upload and signed download, versions, the Hub bulk upload,
//! counts per deliverable, links and the copy mode. Most need the organization's
//! `documentsHubEnabled` flag (403 without it), which the handlers check.

use uuid::Uuid;

use super::endpoint::{
    Access, Cli, FreeJson, Json, NoBody, ParamKind, ParamValues, Perm, QueryArgs, QueryParam,
    RawFile, action, flag, push,
};
use crate::document::{
    CopyModeRequest, Document, DocumentVersion, LinkRequest, UploadedFile, VersionCreate,
};

/// The credentials of a signed download link: its expiry and signature.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkQuery {
    /// Unix seconds after which the link stops working.
    pub expires: Option<i64>,
    pub signature: Option<String>,
}

impl QueryArgs for LinkQuery {
    const PARAMS: &'static [QueryParam] = &[
        QueryParam {
            name: "expires",
            kind: ParamKind::Integer,
            required: false,
            description: "from the link",
            values: ParamValues::Any,
        },
        QueryParam {
            name: "signature",
            kind: ParamKind::Text,
            required: false,
            description: "from the link",
            values: ParamValues::Any,
        },
    ];
    fn pairs(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        push(&mut out, "expires", self.expires);
        push(&mut out, "signature", self.signature.as_ref());
        out
    }
}

action! {
    /// `POST /document/upload`: a file's bytes.
    Upload: Post "/document/upload" {
        operation: "post_document_upload",
        tag: "document",
        access: Access::KeyChecked,
        path: (),
        query: (),
        body: RawFile,
        answer: Json<UploadedFile>,
        status: 201,
        outcome: "The stored file",
        summary: "Upload a file's bytes; answers its documentKey",
        description: "The body is the file, at least one byte. Any `Content-Type` is taken and kept as \
             the file's `mimeType` (`application/octet-stream` is the documented one). Needs the organization's documentsHubEnabled flag (403 without it).",
        cli: Cli {
            command: "document",
            verb: "upload",
            about: "Uploads a file's bytes; prints its documentKey for add-version or hub-upload",
            example: "prodops document upload plan.pdf",
            flags: &[],
        },
    }
}

action! {
    /// `GET /document/file/{org}/{key}`: a download through a signed link.
    Download: Get "/document/file/{org}/{key}" {
        operation: "get_document_file",
        tag: "document",
        access: Access::Open,
        path: (Uuid, String),
        query: LinkQuery,
        body: NoBody,
        answer: RawFile,
        status: 200,
        outcome: "The file",
        summary: "Download through a signed link (no API key)",
        description: "The link's signature and expiry are its credentials: a link that is not valid, or has expired, is 403.",
        cli: Cli {
            command: "document",
            verb: "download",
            about: "Downloads a file through a signed link (a document's documentUrl)",
            example: "prodops document download ORG KEY --expires 1735689600 --signature SIG > plan.pdf",
            flags: &[],
        },
    }
}

action! {
    /// `POST /document-version`: a version, its document named in the body.
    CreateVersion: Post "/document-version" {
        operation: "document_version_create",
        tag: "document-version",
        access: Access::Key(&[("Document", Perm::Update)]),
        path: (),
        query: (),
        body: Json<VersionCreate>,
        answer: Json<DocumentVersion>,
        status: 201,
        outcome: "The version",
        summary: "Create a version of a document and make it current",
        description: "`documentId` is required here. Needs the organization's documentsHubEnabled flag (403 without it).",
        body_schema: crate::document::version_create_with_document,
        cli: Cli {
            command: "document-version",
            verb: "create",
            about: "Adds a version to the document the body names and makes it current",
            example: "prodops document-version create --data '{\"documentId\": \"DOC\", \"name\": \"plan-v2.pdf\", \"documentKey\": \"KEY\"}'",
            flags: &[],
        },
    }
}

action! {
    /// `POST /document/{id}/versions`.
    AddVersion: Post "/document/{id}/versions" {
        operation: "post_document_id_versions",
        tag: "document",
        access: Access::Key(&[("Document", Perm::Update)]),
        path: Uuid,
        query: (),
        body: Json<VersionCreate>,
        answer: Json<DocumentVersion>,
        status: 201,
        outcome: "The version",
        summary: "Create a version and make it current",
        description: "Needs the organization's documentsHubEnabled flag (403 without it).",
        cli: Cli {
            command: "document",
            verb: "add-version",
            about: "Adds a version to a document and makes it current",
            example: "prodops document add-version DOC --name plan-v2.pdf --document-key KEY --version-label v2",
            flags: &[
                flag("name", "name", "The version's file name"),
                flag("documentKey", "document-key", "The key `document upload` printed"),
                flag("documentUrl", "document-url", "An external link instead of a stored file"),
                flag("versionLabel", "version-label", "For example v2"),
                flag("mimeType", "mime-type", "Media type"),
            ],
        },
    }
}

action! {
    /// `POST /document/hub/bulk-upload`.
    HubBulkUpload: Post "/document/hub/bulk-upload" {
        operation: "post_document_hub_bulk_upload",
        tag: "document",
        access: Access::Key(&[("Document", Perm::Create)]),
        path: (),
        query: (),
        body: Json<crate::document::HubBulkUpload>,
        answer: FreeJson,
        status: 201,
        outcome: "The documents",
        summary: "Create Hub documents",
        description: "Needs the organization's documentsHubEnabled flag (403 without it).",
        cli: Cli {
            command: "document",
            verb: "hub-upload",
            about: "Creates Hub documents from uploaded files, all or nothing",
            example: "prodops document hub-upload --documents '[{\"name\": \"plan.pdf\", \"documentKey\": \"KEY\"}]'",
            flags: &[flag(
                "documents",
                "documents",
                "[{\"name\", \"documentKey\", \"deliverableId\"?, ...}] (or @file)",
            )],
        },
    }
}

action! {
    /// `POST /document/counts-by-deliverable`.
    CountsByDeliverable: Post "/document/counts-by-deliverable" {
        operation: "post_document_counts_by_deliverable",
        tag: "document",
        access: Access::Key(&[("Document", Perm::Read)]),
        path: (),
        query: (),
        body: Json<crate::document::CountsByDeliverable>,
        answer: FreeJson,
        status: 200,
        outcome: "Counts",
        summary: "Document counts per deliverable",
        description: "",
        cli: Cli {
            command: "document",
            verb: "counts-by-deliverable",
            about: "Unarchived documents per deliverable",
            example: "prodops document counts-by-deliverable --deliverable-ids D1,D2 --output csv",
            flags: &[flag("deliverableIds", "deliverable-ids", "The deliverables (comma-separated)")],
        },
    }
}

action! {
    /// `POST /document/{id}/links`.
    Link: Post "/document/{id}/links" {
        operation: "post_document_id_links",
        tag: "document",
        access: Access::Key(&[("Document", Perm::Read), ("Deliverable", Perm::Update)]),
        path: Uuid,
        query: (),
        body: Json<LinkRequest>,
        answer: Json<Document>,
        status: 200,
        outcome: "The document",
        summary: "Link a document to a deliverable",
        description: "Needs the organization's documentsHubEnabled flag (403 without it).",
        cli: Cli {
            command: "document",
            verb: "link",
            about: "Attaches a document to a deliverable",
            example: "prodops document link DOC --deliverable-id D",
            flags: &[flag("deliverableId", "deliverable-id", "The deliverable")],
        },
    }
}

action! {
    /// `DELETE /document/{id}/links/{deliverableId}`.
    Unlink: Delete "/document/{id}/links/{deliverableId}" {
        operation: "delete_document_id_links_deliverable_id",
        tag: "document",
        access: Access::Key(&[("Document", Perm::Read), ("Deliverable", Perm::Update)]),
        path: (Uuid, Uuid),
        query: (),
        body: NoBody,
        answer: Json<Document>,
        status: 200,
        outcome: "The document",
        summary: "Unlink a document from a deliverable",
        description: "Needs the organization's documentsHubEnabled flag (403 without it).",
        cli: Cli {
            command: "document",
            verb: "unlink",
            about: "Detaches a document from a deliverable",
            example: "prodops document unlink DOC DELIVERABLE",
            flags: &[],
        },
    }
}

action! {
    /// `POST /document/{id}/copy-mode`.
    SetCopyMode: Post "/document/{id}/copy-mode" {
        operation: "post_document_id_copy_mode",
        tag: "document",
        access: Access::Key(&[("Document", Perm::Update)]),
        path: Uuid,
        query: (),
        body: Json<CopyModeRequest>,
        answer: Json<Document>,
        status: 200,
        outcome: "The document",
        summary: "Set a document's copy mode",
        description: "Needs the organization's documentsHubEnabled flag (403 without it).",
        cli: Cli {
            command: "document",
            verb: "copy-mode",
            about: "Sets how a document follows its deliverable when that is copied",
            example: "prodops document copy-mode DOC --copy-mode reference",
            flags: &[flag("copyMode", "copy-mode", "none, copy or reference")],
        },
    }
}
