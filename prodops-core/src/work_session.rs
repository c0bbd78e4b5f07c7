//! Work sessions (spec 2.14, 4.3): a worker's time on a deliverable, or a planned assignment.

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::resource::{Record, ResourceDesc};
use crate::violation::Violation;

/// Whether a work session is time worked or a saved plan.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum WorkSessionKind {
    /// Time worked (open while `endDate` is null).
    #[default]
    Session,
    /// A saved plan for a worker absent from a save request.
    Plan,
}

/// The longest a stopped work session (or plan) may last: its time is rolled up into one
/// timesheet per day it spans (`timesheet`).
pub const MAX_SESSION_DAYS: i64 = 366;

/// A worker's session (or plan) on one deliverable in one shop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkSession {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The worker.
    pub worker_id: Uuid,
    /// The deliverable worked on.
    pub deliverable_id: Uuid,
    /// The shop the work happens in.
    pub shop_id: Uuid,
    /// Session or plan.
    #[serde(default)]
    pub kind: WorkSessionKind,
    /// Start time.
    #[serde(with = "crate::time::iso")]
    pub start_date: DateTime<Utc>,
    /// End time; null while open.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub end_date: Option<DateTime<Utc>>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl WorkSession {
    /// Whether the session is still running.
    pub fn is_open(&self) -> bool {
        self.end_date.is_none()
    }

    /// The end a stop (or the server ending the session) at `end` gives it: never before its
    /// start, never more than [`MAX_SESSION_DAYS`] after it.
    pub fn clamp_end(&self, end: DateTime<Utc>) -> DateTime<Utc> {
        end.max(self.start_date)
            .min(self.start_date + chrono::Duration::days(MAX_SESSION_DAYS))
    }
}

impl Record for WorkSession {
    const DESC: ResourceDesc = ResourceDesc {
        summary: "Work sessions: workers' time on deliverables",
        ..ResourceDesc::new("deliverable/work-sessions", "work_session", "WorkSession")
    };

    fn validate(&self) -> Vec<Violation> {
        match self.end_date {
            Some(end) if end < self.start_date => {
                vec![Violation::field(
                    "endDate",
                    "endDate must not be before startDate",
                )]
            }
            Some(end) if end - self.start_date > chrono::Duration::days(MAX_SESSION_DAYS) => {
                vec![Violation::field(
                    "endDate",
                    format!("a work session lasts at most {MAX_SESSION_DAYS} days"),
                )]
            }
            _ => Vec::new(),
        }
    }
}

/// `POST /deliverable/work-sessions/save` (spec 4.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SaveRequest {
    /// Worker id → the deliverables the worker works on now (at least one each).
    pub assignments: std::collections::BTreeMap<Uuid, Vec<Uuid>>,
    /// The shop the work happens in.
    pub shop_id: Uuid,
    /// When the added sessions start and the removed ones end; default now.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub start_date: Option<DateTime<Utc>>,
    /// Whether the request is the whole crew of the shop: open sessions and plans in the shop of
    /// workers not named are stopped too.
    #[serde(default)]
    pub should_stop_entire_batch: bool,
}

/// `POST /deliverable/work-sessions/stop` (spec 4.3).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StopRequest {
    #[serde(default)]
    pub deliverable_ids: Vec<Uuid>,
    #[serde(default)]
    pub worker_ids: Vec<Uuid>,
    /// When the sessions end; default now.
    #[serde(default)]
    #[serde(with = "crate::time::iso_opt")]
    pub end_date: Option<DateTime<Utc>>,
}

/// [`StopRequest`]'s rule beyond its fields: it names deliverables or workers.
#[cfg(feature = "openapi")]
pub fn stop_request_rule(schema: &mut serde_json::Value) {
    let some = |field: &str| serde_json::json!({ "required": [field], "properties": { field: { "minItems": 1 } } });
    schema["anyOf"] = serde_json::json!([some("deliverableIds"), some("workerIds")]);
}

impl SaveRequest {
    /// Rule of spec 4.3: at least one deliverable per worker.
    pub fn violations(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        for (worker, list) in &self.assignments {
            if list.is_empty() {
                v.push(Violation::field(
                    format!("assignments.{worker}"),
                    "each worker needs at least one deliverable id",
                ));
            }
        }
        v
    }
}

impl StopRequest {
    /// Rule 3 of spec 4.3: at least one of `deliverableIds` and `workerIds`.
    pub fn violations(&self) -> Vec<Violation> {
        if self.deliverable_ids.is_empty() && self.worker_ids.is_empty() {
            vec![Violation::field(
                "deliverableIds",
                "stop needs deliverableIds or workerIds (there is no stop-everything form)",
            )]
        } else {
            Vec::new()
        }
    }

    /// Whether an open session is one this request stops: it matches every list given.
    pub fn matches(&self, s: &WorkSession) -> bool {
        s.is_open()
            && (self.deliverable_ids.is_empty() || self.deliverable_ids.contains(&s.deliverable_id))
            && (self.worker_ids.is_empty() || self.worker_ids.contains(&s.worker_id))
    }
}

/// What a save does: open sessions (or plans) to end, open plans that become sessions (the
/// worker clocked in), and `(worker, deliverable, kind)` to start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SaveDiff {
    pub stop: Vec<Uuid>,
    pub to_session: Vec<Uuid>,
    pub start: Vec<(Uuid, Uuid, WorkSessionKind)>,
}

/// Diffs a save against the open sessions and plans (rule 1): for each named worker, what is
/// open and no longer listed ends, what is listed and not open starts. A worker in `absent`
/// gets a plan instead of a session (rule 2); a present worker's open plan on a listed
/// deliverable becomes the session (the worker clocked in), their other open entries of the
/// other kind end. With `shouldStopEntireBatch`, open entries in the shop of workers not named end too.
pub fn plan_save(
    open: &[WorkSession],
    req: &SaveRequest,
    absent: &std::collections::HashSet<Uuid>,
) -> SaveDiff {
    let mut diff = SaveDiff::default();
    for (worker, wanted) in &req.assignments {
        let kind = if absent.contains(worker) {
            WorkSessionKind::Plan
        } else {
            WorkSessionKind::Session
        };
        let mine: Vec<&WorkSession> = open
            .iter()
            .filter(|s| s.worker_id == *worker && s.is_open())
            .collect();
        let mut covered = std::collections::HashSet::new();
        for s in &mine {
            if s.kind == kind && wanted.contains(&s.deliverable_id) {
                covered.insert(s.deliverable_id);
            }
        }
        for s in &mine {
            if s.kind == kind && wanted.contains(&s.deliverable_id) {
                continue;
            }
            let clocks_in = kind == WorkSessionKind::Session
                && s.kind == WorkSessionKind::Plan
                && wanted.contains(&s.deliverable_id);
            if clocks_in && covered.insert(s.deliverable_id) {
                diff.to_session.push(s.id);
            } else {
                diff.stop.push(s.id);
            }
        }
        let mut seen = std::collections::HashSet::new();
        for d in wanted {
            if seen.insert(*d) && !covered.contains(d) {
                diff.start.push((*worker, *d, kind));
            }
        }
    }
    if req.should_stop_entire_batch {
        for s in open {
            if s.is_open()
                && s.shop_id == req.shop_id
                && !req.assignments.contains_key(&s.worker_id)
            {
                diff.stop.push(s.id);
            }
        }
    }
    diff
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::{check, parse};
    use serde_json::json;
    use std::collections::{BTreeMap, HashSet};

    fn session(n: u128, worker: u128, deliverable: u128, kind: &str) -> WorkSession {
        parse(json!({
            "id": Uuid::from_u128(n), "workerId": Uuid::from_u128(worker),
            "deliverableId": Uuid::from_u128(deliverable), "shopId": Uuid::from_u128(99),
            "kind": kind, "startDate": "2024-03-01T08:00:00Z",
        }))
    }

    fn save(pairs: &[(u128, &[u128])], entire: bool) -> SaveRequest {
        SaveRequest {
            assignments: pairs
                .iter()
                .map(|(w, ds)| {
                    (
                        Uuid::from_u128(*w),
                        ds.iter().map(|d| Uuid::from_u128(*d)).collect(),
                    )
                })
                .collect::<BTreeMap<_, _>>(),
            shop_id: Uuid::from_u128(99),
            start_date: None,
            should_stop_entire_batch: entire,
        }
    }

    #[test]
    fn save_diffs_against_open_sessions() {
        let open = vec![
            session(1, 10, 100, "session"),
            session(2, 10, 101, "session"),
            session(3, 11, 100, "session"),
        ];
        let diff = plan_save(&open, &save(&[(10, &[101, 102])], false), &HashSet::new());
        assert_eq!(diff.stop, vec![Uuid::from_u128(1)]);
        assert_eq!(
            diff.start,
            vec![(
                Uuid::from_u128(10),
                Uuid::from_u128(102),
                WorkSessionKind::Session
            )]
        );
        let diff = plan_save(&open, &save(&[(10, &[101, 102])], true), &HashSet::new());
        assert_eq!(diff.stop, vec![Uuid::from_u128(1), Uuid::from_u128(3)]);
        // An absent worker gets a plan, and a running session of theirs becomes the plan.
        let absent: HashSet<Uuid> = [Uuid::from_u128(11)].into();
        let diff = plan_save(&open, &save(&[(11, &[100])], false), &absent);
        assert_eq!(diff.stop, vec![Uuid::from_u128(3)]);
        assert_eq!(
            diff.start,
            vec![(
                Uuid::from_u128(11),
                Uuid::from_u128(100),
                WorkSessionKind::Plan
            )]
        );
        // The worker is present again: the plan becomes the session, nothing else starts.
        let planned = vec![session(4, 11, 100, "plan"), session(5, 11, 101, "plan")];
        let diff = plan_save(
            &planned,
            &save(&[(11, &[100, 102])], false),
            &HashSet::new(),
        );
        assert_eq!(diff.to_session, vec![Uuid::from_u128(4)]);
        assert_eq!(diff.stop, vec![Uuid::from_u128(5)]);
        assert_eq!(
            diff.start,
            vec![(
                Uuid::from_u128(11),
                Uuid::from_u128(102),
                WorkSessionKind::Session
            )]
        );
        // Saving the same again changes nothing.
        let diff = plan_save(&open, &save(&[(10, &[100, 101])], false), &HashSet::new());
        assert_eq!(diff, SaveDiff::default());
    }

    #[test]
    fn request_rules() {
        assert_eq!(StopRequest::default().violations().len(), 1);
        let stop = StopRequest {
            worker_ids: vec![Uuid::from_u128(10)],
            ..Default::default()
        };
        assert!(stop.violations().is_empty());
        assert!(stop.matches(&session(1, 10, 100, "session")));
        let s = session(1, 10, 100, "session");
        let at = |t: &str| t.parse::<DateTime<Utc>>().unwrap();
        assert_eq!(s.clamp_end(at("2024-03-01T07:00:00Z")), s.start_date);
        assert_eq!(
            s.clamp_end(at("2024-03-01T09:00:00Z")),
            at("2024-03-01T09:00:00Z")
        );
        assert_eq!(
            s.clamp_end(at("2030-01-01T00:00:00Z")),
            at("2025-03-02T08:00:00Z")
        );
        assert!(!stop.matches(&session(1, 11, 100, "session")));
        assert_eq!(save(&[(10, &[])], false).violations().len(), 1);
        assert!(serde_json::from_value::<StopRequest>(json!({"bogus": 1})).is_err());
    }

    #[test]
    fn end_not_before_start() {
        let base = json!({
            "workerId": "00000000-0000-4000-8000-000000000011",
            "deliverableId": "00000000-0000-4000-8000-000000000012",
            "shopId": "00000000-0000-4000-8000-000000000013",
            "startDate": "2024-03-01T08:00:00Z",
        });
        let out = check::<WorkSession>(base.clone()).unwrap();
        assert_eq!(out["kind"], "session");
        assert_eq!(out["endDate"], serde_json::Value::Null);
        let mut same = base.clone();
        same["endDate"] = json!("2024-03-01T08:00:00Z");
        assert!(check::<WorkSession>(same).is_ok());
        let mut before = base.clone();
        before["endDate"] = json!("2024-03-01T07:59:59Z");
        assert!(check::<WorkSession>(before).is_err());
        let mut year = base.clone();
        year["endDate"] = json!("2025-03-02T08:00:00Z");
        assert!(check::<WorkSession>(year).is_ok());
        let mut longer = base;
        longer["endDate"] = json!("2025-03-02T08:00:01Z");
        assert!(check::<WorkSession>(longer).is_err());
    }
}
