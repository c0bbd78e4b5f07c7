//! QC template versions and QC sets (spec 2.11, 4.10).
//!
//! Each QC template row is one version of a template; QC sets reference a version through
//! `templateId`. Versions are read and deleted through the standard endpoints only (a version a
//! QC set still references is a 409, checked by the server).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::common::{default_one, default_true, require_nonempty, trim};
use crate::resource::{Allow, Ops, Record, ResourceDesc, UniqueKey};
use crate::violation::Violation;

/// One version of a QC template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QcTemplateVersion {
    /// Record id: the version id QC sets reference.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The template this is a version of.
    pub qc_template_id: Uuid,
    /// Revision number, from 1.
    #[serde(default = "default_one")]
    #[serde(deserialize_with = "crate::number::whole")]
    #[schema(minimum = 1)]
    pub version_number: i64,
    /// Display name; required.
    #[schema(pattern = r"\S")]
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Questions in display order (the shape of an entry is not specified).
    #[serde(default)]
    pub questions: Vec<Value>,
    /// True: a pass/fail gate ending in a verdict; false: questions only, capturing a reason.
    #[serde(default = "default_true")]
    pub requires_pass_fail: bool,
    /// True while the version is being edited.
    #[serde(default)]
    pub is_draft: bool,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for QcTemplateVersion {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["name"],
        ops: Ops {
            create: Allow::NotAllowed,
            update: Allow::Custom,
            delete: Allow::Yes,
            bulk_put: Allow::NotAllowed,
            bulk_patch: Allow::NotAllowed,
            bulk_delete: Allow::NotAllowed,
        },
        unique: &[UniqueKey {
            name: "version",
            fields: &["qcTemplateId", "versionNumber"],
            case_insensitive: false,
            active_only: false,
            message: "this version of the QC template already exists",
        }],
        summary: "QC template versions: read and delete only",
        ..ResourceDesc::new("qc-template", "qc_template", "QcTemplate")
    };

    fn normalize(&mut self) {
        trim(&mut self.name);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "name", &self.name);
        if self.version_number < 1 {
            v.push(Violation::field(
                "versionNumber",
                "versionNumber must be at least 1",
            ));
        }
        v
    }
}

/// `POST /qc-template/versions`: publishes a new version of a template (a new template when
/// `qcTemplateId` is omitted). The server numbers it one past the template's highest version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QcTemplateVersionCreate {
    /// The template; omitted for a new template.
    #[serde(default)]
    pub qc_template_id: Option<Uuid>,
    /// Display name; required.
    #[schema(pattern = r"\S")]
    pub name: String,
    /// Description.
    #[serde(default)]
    pub description: Option<String>,
    /// Questions in display order.
    #[serde(default)]
    pub questions: Vec<Value>,
    /// Pass/fail gate (default) or questions only.
    #[serde(default = "default_true")]
    pub requires_pass_fail: bool,
    /// Whether the version is still being edited.
    #[serde(default)]
    pub is_draft: bool,
}

/// The number of the next version of a template whose versions carry `existing` numbers.
pub fn next_version_number(existing: &[i64]) -> i64 {
    existing.iter().copied().max().unwrap_or(0).max(0) + 1
}

/// The QC answers of one deliverable against one template version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QcSet {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The QC template version (a `qc-template` id).
    pub template_id: Uuid,
    /// The deliverable checked (usually a qcstep).
    pub deliverable_id: Uuid,
    /// Outcome or progress of the check.
    #[serde(default)]
    pub status: Option<String>,
    /// Answers, in the order of the template's questions.
    #[serde(default)]
    pub answers: Vec<Value>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for QcSet {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["status"],
        summary: "QC sets: answers of a deliverable against a QC template version",
        ..ResourceDesc::new("qc-set", "qc_set", "QcSet")
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;
    use serde_json::json;

    #[test]
    fn template_defaults_and_rules() {
        let t = "00000000-0000-4000-8000-0000000000e1";
        let out =
            check::<QcTemplateVersion>(json!({"qcTemplateId": t, "name": "Weld check"})).unwrap();
        assert_eq!(out["versionNumber"], 1);
        assert_eq!(out["requiresPassFail"], true);
        assert_eq!(out["isDraft"], false);
        assert_eq!(out["questions"], json!([]));
        assert!(
            check::<QcTemplateVersion>(json!({"qcTemplateId": t, "name": "x", "versionNumber": 0}))
                .is_err()
        );
        assert!(check::<QcTemplateVersion>(json!({"qcTemplateId": t, "name": ""})).is_err());
    }

    #[test]
    fn versions_number_upwards() {
        assert_eq!(next_version_number(&[]), 1);
        assert_eq!(next_version_number(&[1, 3, 2]), 4);
    }

    proptest::proptest! {
        #[test]
        fn next_version_is_new_and_positive(existing in proptest::collection::vec(1i64..1000, 0..20)) {
            let next = next_version_number(&existing);
            proptest::prop_assert!(next >= 1);
            proptest::prop_assert!(!existing.contains(&next));
        }
    }

    #[test]
    fn set_keeps_answers() {
        let out = check::<QcSet>(json!({
            "templateId": "00000000-0000-4000-8000-0000000000e1",
            "deliverableId": "00000000-0000-4000-8000-0000000000e2",
            "answers": [{"q": 1, "a": "pass"}]
        }))
        .unwrap();
        assert_eq!(out["answers"][0]["a"], "pass");
        assert_eq!(out["status"], Value::Null);
    }
}
