//! Timesheets (spec 2.8, decisions.md section 5): the time a worker worked, rolled up from the
//! worker's stopped work sessions into one record per worker and UTC day.
//!
//! The rules, as plain functions the server calls in the transaction that stops, edits or
//! deletes a session:
//!
//! - the day boundary is midnight UTC: a session is cut at each midnight it spans
//!   ([`split_by_day`]); organizations and workers have no time zone;
//! - a day's `hours` is the time the worker was clocked in: the length of the union of the day's
//!   pieces, so concurrent sessions on several deliverables (a save may assign a worker to
//!   several at once) count once; each deliverable's `hours` is its own sessions' time that day
//!   (as crew time counts it), so the per-deliverable hours may add up to more than `hours`;
//! - hours past [`OVERTIME_AFTER_HOURS`] in a day are overtime;
//! - pay types come from the organization's active `pay_type` catalog entries in display order
//!   (`sortOrder`, then `code`): the first is the regular code, the second the overtime code
//!   ([`PayCodes::from_catalog`]); a day lists the codes its hours fall under;
//! - plans, open sessions and zero-length sessions are not time worked; a day left with no time
//!   has no timesheet.

use std::collections::{BTreeMap, BTreeSet};

use crate::openapi::ToSchema;
use chrono::{DateTime, Duration, NaiveDate, NaiveTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::catalog::{CatalogEntry, PAY_TYPE};
use crate::resource::{Ops, Record, ResourceDesc, UniqueKey};
use crate::violation::Violation;
use crate::work_session::{WorkSession, WorkSessionKind};

/// Hours a day holds at the regular pay type; time past them is overtime.
pub const OVERTIME_AFTER_HOURS: i64 = 8;

const MS_PER_HOUR: i64 = 3_600_000;

/// Hours one deliverable was worked on during a timesheet's day.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeliverableHours {
    /// The deliverable worked on.
    pub deliverable_id: Uuid,
    /// The time of the worker's sessions on it that day, in hours.
    pub hours: f64,
}

/// Hours a worker worked on one UTC day (read-only through the API; the server writes it from
/// the worker's stopped work sessions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Timesheet {
    /// Record id.
    pub id: Uuid,
    /// Owning organization, from the API key.
    pub organization_id: Uuid,
    /// The worker.
    pub worker_id: Uuid,
    /// The day (UTC).
    pub date: NaiveDate,
    /// Time clocked in that day: concurrent sessions count once.
    #[serde(default)]
    pub hours: f64,
    /// The part of `hours` at the regular pay type (at most 8).
    #[serde(default)]
    pub regular_hours: f64,
    /// The part of `hours` past 8 in the day.
    #[serde(default)]
    pub overtime_hours: f64,
    /// The deliverables worked on that day, sorted.
    #[serde(default)]
    pub deliverable_ids: Vec<Uuid>,
    /// Each deliverable's hours that day, in the order of `deliverableIds`.
    #[serde(default)]
    pub deliverables: Vec<DeliverableHours>,
    /// Codes of the `pay_type` catalog the hours fall under; rewritten when a code is renamed.
    #[serde(default)]
    pub pay_types: Vec<String>,
    /// Creation time.
    #[serde(with = "crate::time::iso")]
    pub created_at: DateTime<Utc>,
    /// Last update time.
    #[serde(with = "crate::time::iso")]
    pub updated_at: DateTime<Utc>,
}

impl Record for Timesheet {
    const DESC: ResourceDesc = ResourceDesc {
        ops: Ops::READ_ONLY,
        unique: &[UniqueKey {
            name: "worker_date",
            fields: &["workerId", "date"],
            case_insensitive: false,
            active_only: false,
            message: "a timesheet for this worker and day already exists",
        }],
        summary: "Timesheets: hours worked per worker and day, rolled up from stopped work sessions (read-only)",
        ..ResourceDesc::new("timesheet", "timesheet", "Timesheet")
    };

    fn validate(&self) -> Vec<Violation> {
        let mut v = Vec::new();
        for (field, value) in [
            ("hours", self.hours),
            ("regularHours", self.regular_hours),
            ("overtimeHours", self.overtime_hours),
        ] {
            if value < 0.0 {
                v.push(Violation::field(
                    field,
                    format!("{field} must not be negative"),
                ));
            }
        }
        v
    }
}

/// The pay-type codes a day's hours fall under.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PayCodes {
    /// The code of regular hours: the first active pay type in display order.
    pub regular: Option<String>,
    /// The code of overtime hours: the second active pay type in display order; without one,
    /// overtime hours fall under the regular code.
    pub overtime: Option<String>,
}

impl PayCodes {
    /// The codes of an organization's catalog entries: its active `pay_type` entries in display
    /// order (`sortOrder`, then `code`); entries of other catalogs are ignored.
    pub fn from_catalog(entries: &[CatalogEntry]) -> PayCodes {
        let mut active: Vec<&CatalogEntry> = entries
            .iter()
            .filter(|e| e.catalog == PAY_TYPE && e.is_active)
            .collect();
        active.sort_by(|a, b| (a.sort_order, &a.code).cmp(&(b.sort_order, &b.code)));
        let mut codes = active.into_iter().map(|e| e.code.clone());
        PayCodes {
            regular: codes.next(),
            overtime: codes.next(),
        }
    }

    /// The codes of a day with this regular and overtime time, distinct, regular first.
    pub fn for_day(&self, regular_ms: i64, overtime_ms: i64) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let mut push = |code: &Option<String>| {
            if let Some(c) = code
                && !out.contains(c)
            {
                out.push(c.clone());
            }
        };
        if regular_ms > 0 {
            push(&self.regular);
        }
        if overtime_ms > 0 {
            if self.overtime.is_some() {
                push(&self.overtime);
            } else {
                push(&self.regular);
            }
        }
        out
    }
}

/// The start of a UTC day.
pub fn day_start(date: NaiveDate) -> DateTime<Utc> {
    date.and_time(NaiveTime::MIN).and_utc()
}

/// The pieces of `[start, end)` cut at each midnight UTC: `(day, milliseconds)`, in day order,
/// each piece longer than zero. An empty or reversed interval has none.
pub fn split_by_day(start: DateTime<Utc>, end: DateTime<Utc>) -> Vec<(NaiveDate, i64)> {
    let mut out = Vec::new();
    let mut from = start;
    while from < end {
        let day = from.date_naive();
        let next = day
            .succ_opt()
            .map(day_start)
            .map_or(end, |midnight| midnight.min(end));
        out.push((day, (next - from).num_milliseconds()));
        if next <= from {
            break;
        }
        from = next;
    }
    out.retain(|(_, ms)| *ms > 0);
    out
}

/// The interval a session counts as time worked: a stopped session (not a plan).
fn worked(s: &WorkSession) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    match (s.kind, s.end_date) {
        (WorkSessionKind::Session, Some(end)) if end > s.start_date => Some((s.start_date, end)),
        _ => None,
    }
}

/// The `(worker, day)` pairs whose timesheet a session's time lands on (none for a plan or an
/// open session).
pub fn days_of(s: &WorkSession) -> Vec<(Uuid, NaiveDate)> {
    worked(s)
        .map(|(start, end)| {
            split_by_day(start, end)
                .into_iter()
                .map(|(day, _)| (s.worker_id, day))
                .collect()
        })
        .unwrap_or_default()
}

/// The `(worker, day)` pairs to roll up again after a session changed from `old` to `new`
/// (`None` for a create or a delete): the days of both versions.
pub fn affected_days(
    old: Option<&WorkSession>,
    new: Option<&WorkSession>,
) -> BTreeSet<(Uuid, NaiveDate)> {
    old.into_iter()
        .chain(new)
        .flat_map(days_of)
        .collect::<BTreeSet<_>>()
}

/// One worker's time on one day, as the roll-up computes it.
#[derive(Debug, Clone, PartialEq)]
pub struct DaySheet {
    pub worker_id: Uuid,
    pub date: NaiveDate,
    /// Time clocked in (the union of the day's pieces), in milliseconds.
    pub ms: i64,
    pub regular_ms: i64,
    pub overtime_ms: i64,
    /// Each deliverable's time that day, in milliseconds, by deliverable id.
    pub deliverables: BTreeMap<Uuid, i64>,
    pub pay_types: Vec<String>,
}

fn hours(ms: i64) -> f64 {
    ms as f64 / MS_PER_HOUR as f64
}

impl DaySheet {
    /// The timesheet's fields (without id, organization and timestamps), as the server writes
    /// them.
    pub fn fields(&self) -> serde_json::Map<String, Value> {
        let ids: Vec<Uuid> = self.deliverables.keys().copied().collect();
        let per: Vec<Value> = self
            .deliverables
            .iter()
            .map(|(d, ms)| json!({"deliverableId": d, "hours": hours(*ms)}))
            .collect();
        let Value::Object(map) = json!({
            "workerId": self.worker_id,
            "date": self.date,
            "hours": hours(self.ms),
            "regularHours": hours(self.regular_ms),
            "overtimeHours": hours(self.overtime_ms),
            "deliverableIds": ids,
            "deliverables": per,
            "payTypes": self.pay_types,
        }) else {
            unreachable!("an object literal")
        };
        map
    }
}

/// Rolls up one worker's day from their sessions (any sessions may be passed: other workers',
/// plans, open ones and other days are left out). `None` when the worker worked no time that
/// day: the day has no timesheet.
pub fn roll_up_day(
    worker: Uuid,
    date: NaiveDate,
    sessions: &[WorkSession],
    codes: &PayCodes,
) -> Option<DaySheet> {
    let from = day_start(date);
    let to = date.succ_opt().map_or(DateTime::<Utc>::MAX_UTC, day_start);
    let mut pieces: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::new();
    let mut deliverables: BTreeMap<Uuid, i64> = BTreeMap::new();
    for s in sessions.iter().filter(|s| s.worker_id == worker) {
        let Some((start, end)) = worked(s) else {
            continue;
        };
        let (start, end) = (start.max(from), end.min(to));
        if start >= end {
            continue;
        }
        *deliverables.entry(s.deliverable_id).or_default() += (end - start).num_milliseconds();
        pieces.push((start, end));
    }
    if pieces.is_empty() {
        return None;
    }
    let ms = union_ms(pieces);
    let limit = OVERTIME_AFTER_HOURS * MS_PER_HOUR;
    let regular_ms = ms.min(limit);
    let overtime_ms = ms - regular_ms;
    Some(DaySheet {
        worker_id: worker,
        date,
        ms,
        regular_ms,
        overtime_ms,
        deliverables,
        pay_types: codes.for_day(regular_ms, overtime_ms),
    })
}

/// The length of the union of intervals, in milliseconds.
fn union_ms(mut pieces: Vec<(DateTime<Utc>, DateTime<Utc>)>) -> i64 {
    pieces.sort();
    let mut total = Duration::zero();
    let mut current: Option<(DateTime<Utc>, DateTime<Utc>)> = None;
    for (start, end) in pieces {
        current = match current {
            Some((s, e)) if start <= e => Some((s, e.max(end))),
            Some((s, e)) => {
                total += e - s;
                Some((start, end))
            }
            None => Some((start, end)),
        };
    }
    if let Some((s, e)) = current {
        total += e - s;
    }
    total.num_milliseconds()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::{check, parse};
    use proptest::prelude::*;

    fn at(text: &str) -> DateTime<Utc> {
        text.parse().unwrap()
    }

    fn session(worker: u128, deliverable: u128, start: &str, end: Option<&str>) -> WorkSession {
        parse(json!({
            "id": Uuid::now_v7(), "workerId": Uuid::from_u128(worker),
            "deliverableId": Uuid::from_u128(deliverable), "shopId": Uuid::from_u128(99),
            "startDate": start, "endDate": end,
        }))
    }

    fn entry(code: &str, sort: i64, active: bool) -> CatalogEntry {
        parse(json!({"catalog": PAY_TYPE, "code": code, "sortOrder": sort, "isActive": active}))
    }

    fn date(text: &str) -> NaiveDate {
        text.parse().unwrap()
    }

    #[test]
    fn a_session_is_cut_at_midnight_utc() {
        let pieces = split_by_day(at("2024-03-01T22:00:00Z"), at("2024-03-03T01:30:00Z"));
        assert_eq!(
            pieces,
            vec![
                (date("2024-03-01"), 2 * MS_PER_HOUR),
                (date("2024-03-02"), 24 * MS_PER_HOUR),
                (date("2024-03-03"), 90 * 60_000),
            ]
        );
        // Ending at midnight touches no second day; an empty interval touches none.
        let pieces = split_by_day(at("2024-03-01T22:00:00Z"), at("2024-03-02T00:00:00Z"));
        assert_eq!(pieces, vec![(date("2024-03-01"), 2 * MS_PER_HOUR)]);
        assert!(split_by_day(at("2024-03-01T22:00:00Z"), at("2024-03-01T22:00:00Z")).is_empty());
    }

    #[test]
    fn pay_codes_come_from_the_active_catalog_in_display_order() {
        let entries = vec![
            entry("OT", 2, true),
            entry("REG", 1, true),
            entry("OLD", 0, false),
            parse(json!({"catalog": "other", "code": "AAA"})),
        ];
        let codes = PayCodes::from_catalog(&entries);
        assert_eq!(codes.regular.as_deref(), Some("REG"));
        assert_eq!(codes.overtime.as_deref(), Some("OT"));
        assert_eq!(codes.for_day(1, 0), vec!["REG"]);
        assert_eq!(codes.for_day(1, 1), vec!["REG", "OT"]);
        // Without a second pay type, overtime falls under the regular code.
        let one = PayCodes::from_catalog(&entries[1..2]);
        assert_eq!(one.for_day(1, 1), vec!["REG"]);
        assert!(PayCodes::from_catalog(&[]).for_day(1, 1).is_empty());
        // Ties on sortOrder break on code.
        let tied = PayCodes::from_catalog(&[entry("B", 0, true), entry("A", 0, true)]);
        assert_eq!(tied.regular.as_deref(), Some("A"));
    }

    #[test]
    fn a_day_sums_the_worker_time_with_concurrent_sessions_once() {
        let codes = PayCodes {
            regular: Some("REG".into()),
            overtime: Some("OT".into()),
        };
        let sessions = vec![
            // Two deliverables at once, 06:00-12:00 and 08:00-12:00: clocked in 6 hours.
            session(1, 100, "2024-03-01T06:00:00Z", Some("2024-03-01T12:00:00Z")),
            session(1, 101, "2024-03-01T08:00:00Z", Some("2024-03-01T12:00:00Z")),
            // 13:00 to 02:00 the next day: 11 hours that day, 2 the next.
            session(1, 100, "2024-03-01T13:00:00Z", Some("2024-03-02T02:00:00Z")),
            // Not time worked: open, another worker's, a plan.
            session(1, 102, "2024-03-01T14:00:00Z", None),
            session(2, 100, "2024-03-01T06:00:00Z", Some("2024-03-01T12:00:00Z")),
            parse(json!({
                "workerId": Uuid::from_u128(1), "deliverableId": Uuid::from_u128(103),
                "shopId": Uuid::from_u128(99), "kind": "plan",
                "startDate": "2024-03-01T06:00:00Z", "endDate": "2024-03-01T20:00:00Z",
            })),
        ];
        let w = Uuid::from_u128(1);
        let day = roll_up_day(w, date("2024-03-01"), &sessions, &codes).unwrap();
        assert_eq!(day.ms, 17 * MS_PER_HOUR);
        assert_eq!(day.regular_ms, 8 * MS_PER_HOUR);
        assert_eq!(day.overtime_ms, 9 * MS_PER_HOUR);
        assert_eq!(day.pay_types, vec!["REG", "OT"]);
        assert_eq!(day.deliverables[&Uuid::from_u128(100)], 17 * MS_PER_HOUR);
        assert_eq!(day.deliverables[&Uuid::from_u128(101)], 4 * MS_PER_HOUR);
        assert_eq!(day.deliverables.len(), 2);
        let next = roll_up_day(w, date("2024-03-02"), &sessions, &codes).unwrap();
        assert_eq!((next.ms, next.overtime_ms), (2 * MS_PER_HOUR, 0));
        assert_eq!(next.pay_types, vec!["REG"]);
        assert_eq!(roll_up_day(w, date("2024-03-03"), &sessions, &codes), None);
        // The fields the server writes pass the record's own rules.
        let record = check::<Timesheet>(Value::Object(day.fields())).unwrap();
        assert_eq!(record["hours"], 17.0);
        assert_eq!(record["overtimeHours"], 9.0);
        assert_eq!(
            record["deliverables"][1],
            json!({"deliverableId": Uuid::from_u128(101), "hours": 4.0})
        );
    }

    #[test]
    fn edits_roll_up_the_days_of_both_versions() {
        let old = session(1, 100, "2024-03-01T22:00:00Z", Some("2024-03-02T01:00:00Z"));
        let mut new = old.clone();
        new.start_date = at("2024-03-05T08:00:00Z");
        new.end_date = Some(at("2024-03-05T09:00:00Z"));
        let w = Uuid::from_u128(1);
        let days: Vec<_> = affected_days(Some(&old), Some(&new)).into_iter().collect();
        assert_eq!(
            days,
            vec![
                (w, date("2024-03-01")),
                (w, date("2024-03-02")),
                (w, date("2024-03-05"))
            ]
        );
        let open = session(1, 100, "2024-03-01T22:00:00Z", None);
        assert!(affected_days(None, Some(&open)).is_empty());
    }

    #[test]
    fn timesheet_rules() {
        let id = "00000000-0000-4000-8000-000000000031";
        let ts =
            check::<Timesheet>(json!({"workerId": id, "date": "2024-05-06", "payTypes": ["OT"]}))
                .unwrap();
        assert_eq!(ts["hours"], 0.0);
        assert_eq!(ts["deliverables"], json!([]));
        assert!(
            check::<Timesheet>(json!({"workerId": id, "date": "2024-05-06T00:00:00Z"})).is_err()
        );
        assert!(
            check::<Timesheet>(json!({"workerId": id, "date": "2024-05-06", "hours": -1})).is_err()
        );
        assert!(
            check::<Timesheet>(json!({"workerId": id, "date": "2024-05-06", "deliverableId": id}))
                .is_err(),
            "one record per day lists its deliverables"
        );
    }

    /// Sessions of one worker: start minutes from a base time, length in minutes (0 allowed),
    /// one of three deliverables.
    fn sessions_strategy() -> impl Strategy<Value = Vec<(i64, i64, u128)>> {
        prop::collection::vec((0i64..6 * 24 * 60, 0i64..40 * 60, 0u128..3), 0..12)
    }

    fn build(raw: &[(i64, i64, u128)]) -> Vec<WorkSession> {
        let base = at("2024-02-27T00:00:00Z");
        raw.iter()
            .map(|(start, len, d)| {
                let start = base + Duration::minutes(*start) + Duration::milliseconds(*d as i64);
                let end = start + Duration::minutes(*len);
                parse(json!({
                    "workerId": Uuid::from_u128(1), "deliverableId": Uuid::from_u128(100 + d),
                    "shopId": Uuid::from_u128(99),
                    "startDate": start.to_rfc3339(), "endDate": end.to_rfc3339(),
                }))
            })
            .collect()
    }

    proptest! {
        /// Rolling up every day a worker's sessions touch: each deliverable's hours add up to
        /// its sessions' durations, the days' hours add up to the length of the union of the
        /// sessions (their sum when they do not overlap), no day exceeds 24 hours, and regular
        /// plus overtime is the day.
        #[test]
        fn timesheets_hold_exactly_the_stopped_sessions_time(raw in sessions_strategy()) {
            let sessions = build(&raw);
            let w = Uuid::from_u128(1);
            let codes = PayCodes { regular: Some("REG".into()), overtime: None };
            let days: BTreeSet<NaiveDate> = sessions.iter().flat_map(days_of).map(|(_, d)| d).collect();
            let sheets: Vec<DaySheet> = days
                .iter()
                .filter_map(|d| roll_up_day(w, *d, &sessions, &codes))
                .collect();
            let mut per: BTreeMap<Uuid, i64> = BTreeMap::new();
            for s in &sessions {
                let ms = (s.end_date.unwrap() - s.start_date).num_milliseconds();
                if ms > 0 {
                    *per.entry(s.deliverable_id).or_default() += ms;
                }
            }
            let mut rolled: BTreeMap<Uuid, i64> = BTreeMap::new();
            for sheet in &sheets {
                prop_assert!(sheet.ms > 0 && sheet.ms <= 24 * MS_PER_HOUR);
                prop_assert_eq!(sheet.regular_ms + sheet.overtime_ms, sheet.ms);
                prop_assert_eq!(sheet.pay_types.clone(), vec!["REG".to_string()]);
                for (d, ms) in &sheet.deliverables {
                    *rolled.entry(*d).or_default() += ms;
                }
            }
            prop_assert_eq!(&rolled, &per);
            let union = union_ms(
                sessions.iter().filter_map(worked).collect(),
            );
            prop_assert_eq!(sheets.iter().map(|s| s.ms).sum::<i64>(), union);
            let worked_ones: Vec<_> = sessions.iter().filter_map(worked).collect();
            let disjoint = worked_ones.iter().enumerate().all(|(i, (a0, a1))| {
                worked_ones[i + 1..].iter().all(|(b0, b1)| b1 <= a0 || a1 <= b0)
            });
            if disjoint {
                prop_assert_eq!(union, per.values().sum::<i64>());
            }
            // Every day a session touches and only those have a timesheet.
            prop_assert_eq!(sheets.len(), days.len());
        }
    }
}
