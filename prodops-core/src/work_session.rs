//! Work sessions (spec 2.14, 4.3): a worker's time on a deliverable, or a planned assignment.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
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
    pub start_date: DateTime<Utc>,
    /// End time; null while open.
    #[serde(default)]
    pub end_date: Option<DateTime<Utc>>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last update time.
    pub updated_at: DateTime<Utc>,
}

impl WorkSession {
    /// Whether the session is still running.
    pub fn is_open(&self) -> bool {
        self.end_date.is_none()
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
            _ => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::check;
    use serde_json::json;

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
        let mut before = base;
        before["endDate"] = json!("2024-03-01T07:59:59Z");
        assert!(check::<WorkSession>(before).is_err());
    }
}
