//! QC template versions, QC sets and QC gates (spec 2.11, 4.10; issue 16 item 6).
//!
//! Each QC template row is one version of a template; QC sets reference a version through
//! `templateId`. Versions are read and deleted through the standard endpoints only (a version a
//! QC set still references is a 409, checked by the server), published and, while a draft,
//! edited and finalized through `POST /qc-template/versions`.
//!
//! The gate ([`may_complete`]): a qcstep whose template's version in force requires a pass/fail
//! verdict can be completed only while the latest verdict of its QC sets is `pass`; a newly
//! failing verdict sends the step and its stage to rework ([`newly_failed`],
//! [`rework_targets`]). docs/documents.md, "QC gates", is the prose of these rules.

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::common::{default_one, default_true, require_nonempty, trim};
use crate::deliverable::DeliverableType;
use crate::resource::{Allow, Ops, Record, ResourceDesc, UniqueKey};
use crate::violation::Violation;

/// The longest question key.
pub const MAX_QUESTION_KEY: usize = 64;

/// One question of a QC template version (the entry shape the specification leaves open).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QcQuestion {
    /// The key answers name the question by: 1 to 64 characters, unique within the version;
    /// `q1`, `q2`, ... (its position) when omitted.
    #[serde(default)]
    pub key: Option<String>,
    /// The question as shown; required.
    #[schema(pattern = r"\S")]
    pub text: String,
    /// Whether a `pass` verdict needs this question answered.
    #[serde(default)]
    pub required: bool,
}

/// One answer of a QC set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QcAnswer {
    /// The `key` of a question of the set's template version.
    pub question_key: String,
    /// The answer: a string, a number or a boolean.
    pub value: Value,
}

/// The outcome of a pass/fail QC check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The check passed: the gate opens.
    Pass,
    /// The check failed: the step goes to rework and the gate stays shut.
    Fail,
}

fn normalize_questions(questions: &mut [QcQuestion]) {
    for (i, q) in questions.iter_mut().enumerate() {
        trim(&mut q.text);
        match &mut q.key {
            Some(k) if !k.trim().is_empty() => trim(k),
            _ => q.key = Some(format!("q{}", i + 1)),
        }
    }
}

fn validate_questions(v: &mut Vec<Violation>, questions: &[QcQuestion]) {
    let mut seen = std::collections::HashSet::new();
    for (i, q) in questions.iter().enumerate() {
        if q.text.trim().is_empty() {
            v.push(Violation::field(
                format!("questions[{i}].text"),
                "a question needs its text",
            ));
        }
        let key = q.key.as_deref().unwrap_or("");
        if key.is_empty() || key.chars().count() > MAX_QUESTION_KEY {
            v.push(Violation::field(
                format!("questions[{i}].key"),
                format!("a question key has 1 to {MAX_QUESTION_KEY} characters"),
            ));
        } else if !seen.insert(key) {
            v.push(Violation::field(
                format!("questions[{i}].key"),
                format!("the key {key:?} is used by an earlier question"),
            ));
        }
    }
}

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
    /// Questions in display order.
    #[serde(default)]
    pub questions: Vec<QcQuestion>,
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
        normalize_questions(&mut self.questions);
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        require_nonempty(&mut v, "name", &self.name);
        validate_questions(&mut v, &self.questions);
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
    pub questions: Vec<QcQuestion>,
    /// Pass/fail gate (default) or questions only.
    #[serde(default = "default_true")]
    pub requires_pass_fail: bool,
    /// Whether the version is still being edited. While a template's highest version is a
    /// draft, publishing edits that draft in place; `false` finalizes it.
    #[serde(default)]
    pub is_draft: bool,
}

/// What `POST /qc-template/versions` does for a template whose versions are `existing`
/// (`(versionNumber, isDraft)`): edit (or finalize) the draft that is its highest version, or
/// publish a new version with the next number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Publish {
    /// The highest version is a draft: it is rewritten (and finalized when `isDraft` is false).
    EditDraft(i64),
    /// A new version with this number.
    New(i64),
}

/// See [`Publish`].
pub fn plan_publish(existing: &[(i64, bool)]) -> Publish {
    match existing.iter().max_by_key(|(n, _)| *n) {
        Some((n, true)) => Publish::EditDraft(*n),
        _ => Publish::New(next_version_number(
            &existing.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
        )),
    }
}

/// The version of a template in force for a gate, from its versions
/// `(versionNumber, isDraft, requiresPassFail)`: the highest finalized one. `None` when no
/// version is finalized (drafts are not in force; such a step is not gated).
pub fn version_in_force(versions: &[(i64, bool, bool)]) -> Option<(i64, bool)> {
    versions
        .iter()
        .filter(|(_, draft, _)| !draft)
        .max_by_key(|(n, _, _)| *n)
        .map(|(n, _, rpf)| (*n, *rpf))
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
    /// A free label of the check's progress (searchable); the gate reads `verdict`, not this.
    #[serde(default)]
    pub status: Option<String>,
    /// Answers, in the order of the template's questions.
    #[serde(default)]
    pub answers: Vec<QcAnswer>,
    /// The verdict of a pass/fail template; null while undecided. Not allowed on a set of a
    /// questions-only template.
    #[serde(default)]
    pub verdict: Option<Verdict>,
    /// Why: the reason a questions-only template captures, or a note on the verdict.
    #[serde(default)]
    pub reason: Option<String>,
    /// Server-managed: when `verdict` last changed to its value (null without a verdict).
    #[serde(default, with = "crate::time::iso_opt")]
    pub verdict_at: Option<DateTime<Utc>>,
    /// Server-managed: the API key that recorded the verdict (null without a verdict).
    #[serde(default)]
    pub verdict_by_id: Option<Uuid>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

/// Wire names of the verdict stamps, which the server's QC set hooks write into the candidate
/// of every create and update (a bulk write's included), without parsing a `QcSet`; a test
/// holds each to the serialized record.
impl QcSet {
    pub const FIELD_VERDICT_AT: &'static str = "verdictAt";
    pub const FIELD_VERDICT_BY_ID: &'static str = "verdictById";
}

impl Record for QcSet {
    const DESC: ResourceDesc = ResourceDesc {
        search_columns: &["status"],
        read_only: &[QcSet::FIELD_VERDICT_AT, QcSet::FIELD_VERDICT_BY_ID],
        summary: "QC sets: answers of a deliverable against a QC template version",
        ..ResourceDesc::new("qc-set", "qc_set", "QcSet")
    };

    fn normalize(&mut self) {
        if let Some(r) = &mut self.reason {
            trim(r);
        }
        for a in &mut self.answers {
            trim(&mut a.question_key);
        }
    }

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, a) in self.answers.iter().enumerate() {
            if !seen.insert(a.question_key.as_str()) {
                v.push(Violation::field(
                    format!("answers[{i}].questionKey"),
                    format!("question {:?} is answered twice", a.question_key),
                ));
            }
            if !(a.value.is_string() || a.value.is_number() || a.value.is_boolean()) {
                v.push(Violation::field(
                    format!("answers[{i}].value"),
                    "an answer is a string, a number or a boolean",
                ));
            }
        }
        v
    }
}

/// The rules a QC set must meet against its template version (read by the server): a verdict
/// only on a pass/fail version, answers naming its questions, and a `pass` verdict only with
/// every required question answered. A set may not reference a draft.
pub fn check_set_against(set: &QcSet, version: &QcTemplateVersion) -> Vec<Violation> {
    let mut v = Vec::new();
    if version.is_draft {
        v.push(Violation::field(
            "templateId",
            format!(
                "version {} of the QC template is a draft; finalize it first",
                version.version_number
            ),
        ));
    }
    if set.verdict.is_some() && !version.requires_pass_fail {
        v.push(Violation::field(
            "verdict",
            "a questions-only template takes no verdict (use reason and answers)",
        ));
    }
    let keys: Vec<&str> = version
        .questions
        .iter()
        .filter_map(|q| q.key.as_deref())
        .collect();
    for (i, a) in set.answers.iter().enumerate() {
        if !keys.contains(&a.question_key.as_str()) {
            v.push(Violation::field(
                format!("answers[{i}].questionKey"),
                format!("the template version has no question {:?}", a.question_key),
            ));
        }
    }
    if set.verdict == Some(Verdict::Pass) {
        let missing: Vec<&str> = version
            .questions
            .iter()
            .filter(|q| q.required)
            .filter_map(|q| q.key.as_deref())
            .filter(|k| !set.answers.iter().any(|a| a.question_key == *k))
            .collect();
        if !missing.is_empty() {
            v.push(Violation::field(
                "answers",
                format!(
                    "a pass verdict needs every required question answered; missing: {}",
                    missing.join(", ")
                ),
            ));
        }
    }
    v
}

/// A stored set's verdict with its `verdictAt` and `verdictById`.
pub type StampedVerdict = (Option<Verdict>, Option<DateTime<Utc>>, Option<Uuid>);

/// `verdictAt` and `verdictById` of a set whose verdict goes from `old` (with its stamps) to
/// `new`: kept while the verdict stays, the request's time and key when it changes, null
/// without a verdict.
pub fn stamp_verdict(
    old: Option<StampedVerdict>,
    new: Option<Verdict>,
    by: Uuid,
    now: DateTime<Utc>,
) -> (Option<DateTime<Utc>>, Option<Uuid>) {
    match (old, new) {
        (_, None) => (None, None),
        (Some((Some(o), at @ Some(_), who)), Some(n)) if o == n => (at, who),
        _ => (Some(now), Some(by)),
    }
}

/// What the gate knows of one QC set of a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetVerdict {
    /// The QC set.
    pub qc_set_id: Uuid,
    /// Its verdict, if any.
    pub verdict: Option<Verdict>,
    /// When the verdict was recorded.
    pub verdict_at: Option<DateTime<Utc>>,
}

/// The latest verdict among `sets`: the latest `verdictAt`; on a tie a `fail` wins, then the
/// greater id. Sets without a verdict do not count.
pub fn latest_verdict(sets: &[SetVerdict]) -> Option<&SetVerdict> {
    sets.iter()
        .filter(|s| s.verdict.is_some())
        .max_by_key(|s| (s.verdict_at, s.verdict == Some(Verdict::Fail), s.qc_set_id))
}

/// May the qcstep `step` be completed? `requires_pass_fail` is the gate of its template's
/// version in force (`None`: no finalized version, not gated); `sets` are the step's QC sets of
/// that template. A gated step needs its latest verdict to be `pass`; the refusal names
/// `qcSetId` (the failing set, or that there is none).
pub fn may_complete(
    step: Uuid,
    requires_pass_fail: Option<bool>,
    sets: &[SetVerdict],
) -> Result<(), Violation> {
    if requires_pass_fail != Some(true) {
        return Ok(());
    }
    match latest_verdict(sets) {
        Some(s) if s.verdict == Some(Verdict::Pass) => Ok(()),
        Some(s) => Err(Violation::field(
            "qcSetId",
            format!(
                "the qcstep {step} cannot be completed: its latest QC verdict, of QC set {}, is fail",
                s.qc_set_id
            ),
        )),
        None => Err(Violation::field(
            "qcSetId",
            format!(
                "the qcstep {step} cannot be completed until a QC set for it records a pass verdict"
            ),
        )),
    }
}

/// Whether a set's verdict going from `old` (`None`: a new set) to `new` is a new failure.
/// Re-saving a failed set is not.
pub fn newly_failed(old: Option<Option<Verdict>>, new: Option<Verdict>) -> bool {
    new == Some(Verdict::Fail) && old.flatten() != Some(Verdict::Fail)
}

/// Whether a change of a deliverable's QC sets (a set recorded, changed, moved or deleted),
/// from the sets that counted `before` to those that count `after`, sends it to rework: when
/// its latest verdict is `fail` afterwards and either a set newly failed (`newly_failed`) or the
/// latest verdict was not `fail` before (a passing verdict withdrawn or deleted, leaving an
/// older failure the latest). So a done gated step never has a failing latest verdict.
pub fn rework_needed(before: &[SetVerdict], after: &[SetVerdict], newly_failed: bool) -> bool {
    let fail =
        |sets: &[SetVerdict]| latest_verdict(sets).and_then(|s| s.verdict) == Some(Verdict::Fail);
    fail(after) && (newly_failed || !fail(before))
}

/// The deliverables a failing verdict on `deliverable` sends to rework, in order: the
/// deliverable itself, then, for a qcstep, its parent when that is a stage (the stage's work is
/// what the check found wanting). Ancestors above follow by the progress roll-up.
pub fn rework_targets(
    deliverable: (Uuid, DeliverableType),
    parent: Option<(Uuid, DeliverableType)>,
) -> Vec<Uuid> {
    let mut out = vec![deliverable.0];
    if deliverable.1 == DeliverableType::Qcstep
        && let Some((pid, DeliverableType::Stage)) = parent
    {
        out.push(pid);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;
    use serde_json::json;

    #[test]
    fn verdict_field_names_are_the_records_keys() {
        let set: QcSet = crate::common::testing::parse(json!({
            "templateId": "00000000-0000-4000-8000-0000000000e1",
            "deliverableId": "00000000-0000-4000-8000-0000000000e2",
        }));
        let record = serde_json::to_value(&set).unwrap();
        for field in [QcSet::FIELD_VERDICT_AT, QcSet::FIELD_VERDICT_BY_ID] {
            assert!(record.get(field).is_some(), "{field} is not a QcSet field");
        }
    }

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
            "answers": [{"questionKey": "q1", "value": "even"}]
        }))
        .unwrap();
        assert_eq!(out["answers"][0]["value"], "even");
        assert_eq!(out["status"], Value::Null);
        assert_eq!(out["verdict"], Value::Null);
        let dup = check::<QcSet>(json!({
            "templateId": "00000000-0000-4000-8000-0000000000e1",
            "deliverableId": "00000000-0000-4000-8000-0000000000e2",
            "answers": [{"questionKey": "q1", "value": 1}, {"questionKey": "q1", "value": [1]}]
        }))
        .unwrap_err();
        let fields: Vec<_> = dup.iter().filter_map(|v| v.field.clone()).collect();
        assert!(
            fields.contains(&"answers[1].questionKey".to_string()),
            "{fields:?}"
        );
        assert!(
            fields.contains(&"answers[1].value".to_string()),
            "{fields:?}"
        );
        assert!(
            check::<QcSet>(json!({
                "templateId": "00000000-0000-4000-8000-0000000000e1",
                "deliverableId": "00000000-0000-4000-8000-0000000000e2",
                "answers": [{"q": 1}]
            }))
            .is_err()
        );
    }

    #[test]
    fn questions_get_keys_and_are_checked() {
        let t = "00000000-0000-4000-8000-0000000000e1";
        let out = check::<QcTemplateVersion>(json!({"qcTemplateId": t, "name": "W",
            "questions": [{"text": " Even? "}, {"key": "gap", "text": "Gap", "required": true}]}))
        .unwrap();
        assert_eq!(
            out["questions"],
            json!([{"key": "q1", "text": "Even?", "required": false}, {"key": "gap", "text": "Gap", "required": true}])
        );
        assert!(
            check::<QcTemplateVersion>(
                json!({"qcTemplateId": t, "name": "W", "questions": [{"key": "a", "text": "x"}, {"key": "a", "text": "y"}]})
            )
            .is_err()
        );
        assert!(
            check::<QcTemplateVersion>(
                json!({"qcTemplateId": t, "name": "W", "questions": [{"text": " "}]})
            )
            .is_err()
        );
        assert!(
            check::<QcTemplateVersion>(
                json!({"qcTemplateId": t, "name": "W", "questions": [{"text": "x", "kind": 1}]})
            )
            .is_err()
        );
    }

    fn version(requires_pass_fail: bool, draft: bool) -> QcTemplateVersion {
        let mut v: QcTemplateVersion = serde_json::from_value(json!({
            "id": Uuid::from_u128(1), "organizationId": Uuid::from_u128(2),
            "qcTemplateId": Uuid::from_u128(3), "name": "W",
            "questions": [{"key": "a", "text": "A", "required": true}, {"key": "b", "text": "B"}],
            "requiresPassFail": requires_pass_fail, "isDraft": draft,
            "createdAt": "2024-05-01T10:00:00Z", "updatedAt": "2024-05-01T10:00:00Z"
        }))
        .unwrap();
        v.normalize();
        v
    }

    fn set(verdict: Option<Verdict>, answers: &[&str]) -> QcSet {
        serde_json::from_value(json!({
            "id": Uuid::from_u128(4), "organizationId": Uuid::from_u128(2),
            "templateId": Uuid::from_u128(1), "deliverableId": Uuid::from_u128(5),
            "answers": answers.iter().map(|k| json!({"questionKey": k, "value": true})).collect::<Vec<_>>(),
            "verdict": verdict,
            "createdAt": "2024-05-01T10:00:00Z", "updatedAt": "2024-05-01T10:00:00Z"
        }))
        .unwrap()
    }

    fn fields(v: &[Violation]) -> Vec<String> {
        v.iter().filter_map(|v| v.field.clone()).collect()
    }

    #[test]
    fn sets_against_their_version() {
        assert!(
            check_set_against(&set(Some(Verdict::Pass), &["a"]), &version(true, false)).is_empty()
        );
        assert!(
            check_set_against(&set(Some(Verdict::Fail), &[]), &version(true, false)).is_empty()
        );
        assert_eq!(
            fields(&check_set_against(
                &set(Some(Verdict::Pass), &["b"]),
                &version(true, false)
            )),
            ["answers"]
        );
        assert_eq!(
            fields(&check_set_against(
                &set(Some(Verdict::Pass), &["a"]),
                &version(false, false)
            )),
            ["verdict"]
        );
        assert!(check_set_against(&set(None, &["a", "b"]), &version(false, false)).is_empty());
        assert_eq!(
            fields(&check_set_against(
                &set(None, &["z"]),
                &version(false, false)
            )),
            ["answers[0].questionKey"]
        );
        assert_eq!(
            fields(&check_set_against(&set(None, &[]), &version(true, true))),
            ["templateId"]
        );
    }

    #[test]
    fn publishing_edits_an_open_draft() {
        assert_eq!(plan_publish(&[]), Publish::New(1));
        assert_eq!(
            plan_publish(&[(1, false), (2, true)]),
            Publish::EditDraft(2)
        );
        assert_eq!(plan_publish(&[(1, true), (2, false)]), Publish::New(3));
        assert_eq!(
            version_in_force(&[(1, false, true), (2, true, false)]),
            Some((1, true))
        );
        assert_eq!(version_in_force(&[(1, true, true)]), None);
    }

    #[test]
    fn verdict_stamps() {
        let t0: DateTime<Utc> = "2024-05-01T10:00:00Z".parse().unwrap();
        let t1: DateTime<Utc> = "2024-05-02T10:00:00Z".parse().unwrap();
        let (a, b) = (Uuid::from_u128(8), Uuid::from_u128(9));
        assert_eq!(
            stamp_verdict(None, Some(Verdict::Pass), a, t0),
            (Some(t0), Some(a))
        );
        let old = Some((Some(Verdict::Pass), Some(t0), Some(a)));
        assert_eq!(
            stamp_verdict(old, Some(Verdict::Pass), b, t1),
            (Some(t0), Some(a))
        );
        assert_eq!(
            stamp_verdict(old, Some(Verdict::Fail), b, t1),
            (Some(t1), Some(b))
        );
        assert_eq!(stamp_verdict(old, None, b, t1), (None, None));
        assert!(newly_failed(None, Some(Verdict::Fail)));
        assert!(newly_failed(Some(Some(Verdict::Pass)), Some(Verdict::Fail)));
        assert!(!newly_failed(
            Some(Some(Verdict::Fail)),
            Some(Verdict::Fail)
        ));
        assert!(!newly_failed(None, Some(Verdict::Pass)));
    }

    #[test]
    fn rework_reaches_the_stage_of_a_qcstep() {
        let (q, s) = (Uuid::from_u128(1), Uuid::from_u128(2));
        use DeliverableType as T;
        assert_eq!(rework_targets((q, T::Qcstep), Some((s, T::Stage))), [q, s]);
        assert_eq!(rework_targets((q, T::Qcstep), Some((s, T::Phase))), [q]);
        assert_eq!(rework_targets((q, T::Step), Some((s, T::Stage))), [q]);
    }

    mod gate {
        use super::super::*;
        use crate::deliverable::{Progress, ProgressStatus};
        use crate::progress::{self, ProgressAction};
        use proptest::prelude::*;

        const STEP: Uuid = Uuid::from_u128(0x51);
        const BY: Uuid = Uuid::from_u128(7);

        fn at(t: i64) -> DateTime<Utc> {
            DateTime::from_timestamp(1_700_000_000 + t, 0).unwrap()
        }

        /// One event on a gated (or not) qcstep.
        #[derive(Debug, Clone)]
        enum Event {
            /// Record (create or update) QC set `set` with a verdict.
            Record { set: u8, verdict: Option<Verdict> },
            /// Delete QC set `set`.
            Delete { set: u8 },
            /// A progress action (complete goes through the gate).
            Act(ProgressAction),
            /// Time passes (seconds); 0 means two events at one instant.
            Wait(i64),
        }

        fn event() -> impl Strategy<Value = Event> {
            let verdict = prop_oneof![
                Just(None),
                Just(Some(Verdict::Pass)),
                Just(Some(Verdict::Fail))
            ];
            prop_oneof![
                (0u8..3, verdict).prop_map(|(set, verdict)| Event::Record { set, verdict }),
                (0u8..3).prop_map(|set| Event::Delete { set }),
                prop_oneof![
                    Just(ProgressAction::Complete {}),
                    Just(ProgressAction::Rework {}),
                    Just(ProgressAction::PutOnHold {}),
                    Just(ProgressAction::ResumeWork {}),
                    Just(ProgressAction::SendAhead { quantity: 1.0 }),
                    Just(ProgressAction::Uncomplete { quantity: 1.0 }),
                ]
                .prop_map(Event::Act),
                (0i64..3).prop_map(Event::Wait),
            ]
        }

        /// Runs `events` the way the server does: a progress action reaching done is gated;
        /// a newly failing verdict applies the rework action. Checks the gate's promises after
        /// every event.
        fn simulate(
            requires_pass_fail: Option<bool>,
            events: &[Event],
        ) -> Result<(), TestCaseError> {
            let mut sets: Vec<SetVerdict> = Vec::new();
            let mut p: Option<Progress> = None;
            let mut t = 0;
            for e in events {
                match e {
                    Event::Wait(s) => t += s,
                    Event::Record { set, verdict } => {
                        let id = Uuid::from_u128(0x100 + u128::from(*set));
                        let before = sets.clone();
                        let old = sets.iter().position(|s| s.qc_set_id == id);
                        let was = old.map(|i| sets[i].verdict);
                        let stamps = old.map(|i| (sets[i].verdict, sets[i].verdict_at, Some(BY)));
                        let (verdict_at, _) = stamp_verdict(stamps, *verdict, BY, at(t));
                        let new = SetVerdict {
                            qc_set_id: id,
                            verdict: *verdict,
                            verdict_at,
                        };
                        match old {
                            Some(i) => sets[i] = new,
                            None => sets.push(new),
                        }
                        let failed = newly_failed(was, *verdict);
                        if rework_needed(&before, &sets, failed) {
                            p = Some(
                                progress::apply(
                                    p.as_ref(),
                                    DeliverableType::Qcstep,
                                    1,
                                    &ProgressAction::Rework {},
                                    BY,
                                    at(t),
                                )
                                .map_err(|v| TestCaseError::fail(format!("{v:?}")))?,
                            );
                        }
                        if failed {
                            // A failing verdict always leaves the step in rework.
                            prop_assert_eq!(
                                p.as_ref().map(|p| p.status),
                                Some(ProgressStatus::Rework)
                            );
                        }
                    }
                    Event::Delete { set } => {
                        let id = Uuid::from_u128(0x100 + u128::from(*set));
                        let before = sets.clone();
                        sets.retain(|s| s.qc_set_id != id);
                        if rework_needed(&before, &sets, false) {
                            p = Some(
                                progress::apply(
                                    p.as_ref(),
                                    DeliverableType::Qcstep,
                                    1,
                                    &ProgressAction::Rework {},
                                    BY,
                                    at(t),
                                )
                                .map_err(|v| TestCaseError::fail(format!("{v:?}")))?,
                            );
                        }
                    }
                    Event::Act(a) => {
                        let Ok(next) =
                            progress::apply(p.as_ref(), DeliverableType::Qcstep, 1, a, BY, at(t))
                        else {
                            continue;
                        };
                        let was_done = p.as_ref().is_some_and(|p| p.status == ProgressStatus::Done);
                        if next.status == ProgressStatus::Done && !was_done {
                            let gate = may_complete(STEP, requires_pass_fail, &sets);
                            let latest = latest_verdict(&sets).and_then(|s| s.verdict);
                            if requires_pass_fail == Some(true) {
                                // Never completed without a passing latest verdict, and
                                // always with one.
                                prop_assert_eq!(gate.is_ok(), latest == Some(Verdict::Pass));
                                if let Err(v) = &gate {
                                    prop_assert_eq!(v.field.as_deref(), Some("qcSetId"));
                                }
                            } else {
                                // Questions only (or no version in force): never blocks.
                                prop_assert!(gate.is_ok());
                            }
                            if gate.is_err() {
                                continue;
                            }
                        }
                        p = Some(next);
                    }
                }
                // A gated step that is done never has a failing latest verdict: it got there
                // with a passing one, and whatever makes a failure the latest sends it to rework.
                if requires_pass_fail == Some(true)
                    && p.as_ref().is_some_and(|p| p.status == ProgressStatus::Done)
                {
                    prop_assert_ne!(
                        latest_verdict(&sets).and_then(|s| s.verdict),
                        Some(Verdict::Fail)
                    );
                }
            }
            Ok(())
        }

        proptest! {
            #[test]
            fn gated_steps_complete_only_on_a_passing_latest_verdict(
                events in proptest::collection::vec(event(), 0..40)
            ) {
                simulate(Some(true), &events)?;
            }

            #[test]
            fn questions_only_never_blocks(
                events in proptest::collection::vec(event(), 0..40),
                in_force in prop_oneof![Just(Some(false)), Just(None)],
            ) {
                simulate(in_force, &events)?;
            }

            #[test]
            fn a_failing_verdict_always_leaves_the_step_in_rework(
                step_actions in proptest::collection::vec(prop_oneof![
                    Just(ProgressAction::Complete {}),
                    Just(ProgressAction::PutOnHold {}),
                    Just(ProgressAction::SendAhead { quantity: 1.0 }),
                    Just(ProgressAction::Uncomplete { quantity: 1.0 }),
                ], 0..6),
            ) {
                let mut p: Option<Progress> = None;
                for a in &step_actions {
                    if let Ok(n) = progress::apply(p.as_ref(), DeliverableType::Qcstep, 1, a, BY, at(0)) {
                        p = Some(n);
                    }
                }
                prop_assert!(newly_failed(None, Some(Verdict::Fail)));
                let after = progress::apply(p.as_ref(), DeliverableType::Qcstep, 1, &ProgressAction::Rework {}, BY, at(1)).unwrap();
                prop_assert_eq!(after.status, ProgressStatus::Rework);
                prop_assert!(after.has_been_reworked);
                prop_assert!(after.completed_at.is_none());
            }

            #[test]
            fn the_latest_verdict_decides(
                sets in proptest::collection::vec((0u128..6, proptest::option::of(any::<bool>()), 0i64..4), 0..8)
            ) {
                let sets: Vec<SetVerdict> = sets.iter().map(|(id, v, t)| SetVerdict {
                    qc_set_id: Uuid::from_u128(*id),
                    verdict: v.map(|pass| if pass { Verdict::Pass } else { Verdict::Fail }),
                    verdict_at: v.map(|_| at(*t)),
                }).collect();
                let ok = may_complete(STEP, Some(true), &sets).is_ok();
                let last = sets.iter().filter(|s| s.verdict.is_some()).map(|s| s.verdict_at).max();
                let at_last: Vec<_> = sets.iter().filter(|s| s.verdict.is_some() && s.verdict_at == last.flatten()).collect();
                // Open exactly when some verdict exists and every verdict at the latest instant passes.
                prop_assert_eq!(ok, !at_last.is_empty() && at_last.iter().all(|s| s.verdict == Some(Verdict::Pass)));
            }
        }
    }
}
