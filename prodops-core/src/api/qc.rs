//! QC templates (spec 4.10): publishing a version (or editing and finalizing the open draft); a
//! PATCH of a template changes nothing.

use uuid::Uuid;

use super::endpoint::{Access, Cli, FreeJson, Json, Perm, action, flag};
use crate::qc::{QcTemplateVersion, QcTemplateVersionCreate};

action! {
    /// `POST /qc-template/versions`.
    PublishVersion: Post "/qc-template/versions" {
        operation: "post_qc_template_versions",
        tag: "qc-template",
        access: Access::Key(&[("QcTemplate", Perm::Create)]),
        path: (),
        query: (),
        body: Json<QcTemplateVersionCreate>,
        answer: Json<QcTemplateVersion>,
        status: 201,
        outcome: "The version",
        summary: "Publish a QC template version",
        description: "A new version with the next number; while the template's highest version is a draft, that draft is edited in place instead, and `isDraft: false` finalizes it.",
        cli: Cli {
            command: "qc-template",
            verb: "publish",
            about: "Publishes a QC template version (the next version number), or edits and finalizes (--is-draft false) the template's open draft",
            example: "prodops qc-template publish --name 'Weld check' --questions @questions.json",
            flags: &[
                flag("qcTemplateId", "qc-template-id", "The template (omitted: a new template)"),
                flag("questions", "questions", "The questions, a JSON array (or @file)"),
                flag("requiresPassFail", "requires-pass-fail", "true or false"),
                flag("isDraft", "is-draft", "true or false"),
            ],
        },
    }
}

action! {
    /// `PATCH /qc-template/{id}`: accepted, changes nothing.
    UpdateTemplate: Patch "/qc-template/{id}" {
        operation: "qc_template_update",
        tag: "qc-template",
        access: Access::Key(&[("QcTemplate", Perm::Update)]),
        path: Uuid,
        query: (),
        body: FreeJson,
        answer: Json<QcTemplateVersion>,
        status: 200,
        outcome: "The version as stored",
        summary: "Accepted and changes nothing (published versions are immutable)",
        description: "The body must be a JSON object; it is not applied.",
        cli: Cli {
            command: "qc-template",
            verb: "update",
            about: "Accepted and changes nothing: published versions are immutable (publish a new one)",
            example: "prodops qc-template update ID --data '{}'",
            flags: &[],
        },
    }
}
