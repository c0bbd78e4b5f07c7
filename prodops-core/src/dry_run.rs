//! A dry run of a write (`?dryRun=true`, docs/api.md "Dry runs"): the server runs the whole
//! transaction, hooks and rules included, rolls it back, and answers what would have been
//! written in one envelope, [`DryRun`]: the write's own answer (`answer`, in the shape the
//! write answers), the ledger rows it would post and the events it would append to the feed.
//!
//! This module holds the wire forms and the plain rules a client reads a dry run with:
//! [`parse_flag`] (the parameter's values) and [`Tally`] (what a dry run of a bulk PUT says
//! about each record: created, updated or unchanged).

use std::collections::HashSet;

use crate::openapi::ToSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::event::LEDGER;
use crate::violation::Violation;

/// The query parameter that asks for a dry run.
pub const PARAM: &str = "dryRun";

/// The header every answer to a dry run carries (`true`).
pub const HEADER: &str = "Prodops-Dry-Run";

/// The value of `dryRun`: `true` or `false`, nothing else.
///
/// ```
/// use prodops_core::dry_run::parse_flag;
/// assert_eq!(parse_flag("true"), Ok(true));
/// assert_eq!(parse_flag("false"), Ok(false));
/// assert!(parse_flag("yes").is_err());
/// ```
pub fn parse_flag(value: &str) -> Result<bool, Violation> {
    match value {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(Violation::field(PARAM, "must be true or false")),
    }
}

/// An event a dry run would have appended to the change feed: an `Event` of `GET /event`
/// without the `id` and `cursor` a real append gives it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingEvent {
    /// `<resource>.created|updated|...`, `inventory.posted`, ... (docs/events.md).
    #[serde(rename = "type")]
    pub event_type: String,
    /// The resource path of the record.
    pub resource: String,
    pub record_id: Uuid,
    /// The API key of the request.
    pub key_id: Option<Uuid>,
    /// The `X-Request-Id` of the request.
    pub request_id: Option<String>,
    /// The request's time.
    pub occurred_at: String,
    /// The record after the change; for a deletion, the record as it was.
    #[schema(value_type = Object)]
    pub data: Value,
    /// For an update, the top-level fields that changed; `null` otherwise.
    pub changed: Option<Vec<String>>,
}

/// The answer to a dry run: what the write would have answered, posted and announced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DryRun<T> {
    /// Always `true`.
    pub dry_run: bool,
    /// The write's own answer, as it would have been (`null` for a write answered with 204).
    pub answer: T,
    /// The ledger rows (`/inventory-transaction` records) the write would have posted.
    pub ledger: Vec<Value>,
    /// The events the write would have appended to the feed, in order.
    pub events: Vec<PendingEvent>,
}

impl<T> DryRun<T> {
    /// The ledger rows and events of `events` as a dry run answers them: the rows are the data
    /// of the `inventory.posted` events.
    ///
    /// ```
    /// use prodops_core::dry_run::DryRun;
    /// let report = DryRun::new(serde_json::json!({"count": 0}), vec![]);
    /// assert!(report.dry_run && report.ledger.is_empty());
    /// ```
    pub fn new(answer: T, events: Vec<PendingEvent>) -> Self {
        let ledger = events
            .iter()
            .filter(|e| e.resource == LEDGER && e.event_type == "inventory.posted")
            .map(|e| e.data.clone())
            .collect();
        DryRun {
            dry_run: true,
            answer,
            ledger,
            events,
        }
    }
}

/// What a dry run of a bulk PUT of `records` records of `resource` says it would do to each:
/// a record with a `created` event would be created, one with any other event of the resource
/// updated, and one without an event is unchanged (the write stores nothing new for it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tally {
    pub created: usize,
    pub updated: usize,
    pub unchanged: usize,
}

impl Tally {
    /// The tally of a bulk PUT of `records` records of `resource`, from the events its dry run
    /// answered. Events of other resources (hooks' writes) and a second event of one record do
    /// not count again.
    pub fn of(resource: &str, records: usize, events: &[PendingEvent]) -> Tally {
        let created_type = format!("{resource}.created");
        let mut created: HashSet<Uuid> = HashSet::new();
        let mut touched: HashSet<Uuid> = HashSet::new();
        for e in events.iter().filter(|e| e.resource == resource) {
            if e.event_type == created_type {
                created.insert(e.record_id);
            }
            touched.insert(e.record_id);
        }
        let updated = touched.difference(&created).count();
        let created = created.len().min(records);
        let updated = updated.min(records - created);
        Tally {
            created,
            updated,
            unchanged: records - created - updated,
        }
    }
}

impl std::ops::Add for Tally {
    type Output = Tally;
    fn add(self, other: Tally) -> Tally {
        Tally {
            created: self.created + other.created,
            updated: self.updated + other.updated,
            unchanged: self.unchanged + other.unchanged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn event(t: &str, resource: &str, id: u128) -> PendingEvent {
        PendingEvent {
            event_type: t.into(),
            resource: resource.into(),
            record_id: Uuid::from_u128(id),
            key_id: None,
            request_id: None,
            occurred_at: "2026-01-01T00:00:00.000Z".into(),
            data: json!({ "id": Uuid::from_u128(id) }),
            changed: None,
        }
    }

    #[test]
    fn flags_are_true_or_false() {
        assert_eq!(parse_flag("true"), Ok(true));
        assert_eq!(parse_flag("false"), Ok(false));
        for bad in ["", "TRUE", "1", "yes", "true "] {
            let v = parse_flag(bad).unwrap_err();
            assert_eq!(v.field.as_deref(), Some(PARAM), "{bad:?}");
        }
    }

    #[test]
    fn the_ledger_is_the_posted_rows() {
        let events = vec![
            event("inventory.posted", LEDGER, 1),
            event("item.updated", "item", 2),
            event("inventory.posted", LEDGER, 3),
        ];
        let report = DryRun::new(json!(null), events);
        assert_eq!(
            report.ledger,
            vec![
                json!({ "id": Uuid::from_u128(1) }),
                json!({ "id": Uuid::from_u128(3) })
            ]
        );
        assert_eq!(report.events.len(), 3);
        let text = serde_json::to_value(&report).unwrap();
        assert_eq!(text["dryRun"], json!(true));
        assert_eq!(text["events"][1]["type"], json!("item.updated"));
        assert_eq!(text["events"][1]["recordId"], json!(Uuid::from_u128(2)));
    }

    #[test]
    fn a_tally_counts_each_record_once() {
        let events = vec![
            event("worker.created", "worker", 1),
            event("worker.updated", "worker", 1),
            event("worker.updated", "worker", 2),
            event("worker.archived", "worker", 3),
            event("item.updated", "item", 4),
        ];
        assert_eq!(
            Tally::of("worker", 5, &events),
            Tally {
                created: 1,
                updated: 2,
                unchanged: 2
            }
        );
    }

    proptest! {
        #[test]
        fn a_tally_adds_up_to_the_records(
            kinds in proptest::collection::vec(0u8..3, 0..60),
            noise in proptest::collection::vec(0u128..100, 0..20),
        ) {
            // Record i: 0 created, 1 updated, 2 unchanged; noise: events of another resource.
            let mut events = Vec::new();
            for (i, k) in kinds.iter().enumerate() {
                match k {
                    0 => events.push(event("worker.created", "worker", i as u128)),
                    1 => {
                        events.push(event("worker.updated", "worker", i as u128));
                        events.push(event("worker.updated", "worker", i as u128));
                    }
                    _ => {}
                }
            }
            for n in &noise {
                events.push(event("deliverable.updated", "deliverable", 1000 + n));
            }
            let tally = Tally::of("worker", kinds.len(), &events);
            prop_assert_eq!(tally.created, kinds.iter().filter(|k| **k == 0).count());
            prop_assert_eq!(tally.updated, kinds.iter().filter(|k| **k == 1).count());
            prop_assert_eq!(tally.created + tally.updated + tally.unchanged, kinds.len());
        }
    }
}
