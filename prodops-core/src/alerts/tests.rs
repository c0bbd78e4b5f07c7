use std::collections::HashMap;

use chrono::TimeZone;
use proptest::prelude::*;
use serde_json::json;
use uuid::Uuid;

use super::*;
use crate::deliverable::{Deliverable, DeliverableType, Progress, ProgressStatus, Schedule};
use crate::tree::recompute_all;

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

fn now(text: &str) -> AsOf {
    AsOf::at(at(text))
}

#[test]
fn stamps_are_fixed_width_whole_seconds() {
    assert_eq!(
        stamp(at("2026-11-25T10:00:00.999Z")),
        "2026-11-25T10:00:00Z"
    );
    assert_eq!(
        stamp(at("2026-11-25T12:30:00+02:00")),
        "2026-11-25T10:30:00Z"
    );
    let far = Utc.with_ymd_and_hms(12000, 1, 1, 0, 0, 0).unwrap();
    assert_eq!(stamp(far), "9999-12-31T23:59:59Z");
    let early = Utc.with_ymd_and_hms(-5, 1, 1, 0, 0, 0).unwrap();
    assert_eq!(stamp(early), "0000-01-01T00:00:00Z");
    assert_eq!(AsOf::from_secs(0).as_str(), "1970-01-01T00:00:00");
}

#[test]
fn a_date_is_due_at_the_end_of_its_day_a_date_time_at_its_instant() {
    assert_eq!(
        due_instant("2026-11-25").map(stamp).as_deref(),
        Some("2026-11-26T00:00:00Z")
    );
    assert_eq!(
        due_instant("2026-11-25T08:15:00+01:00")
            .map(stamp)
            .as_deref(),
        Some("2026-11-25T07:15:00Z")
    );
    assert_eq!(due_instant("soon"), None);
    // Late from that instant on, not before.
    let due = stamp(due_instant("2026-11-25T08:15:00Z").unwrap());
    assert!(!reached(Some(&due), &now("2026-11-25T08:14:59Z")));
    assert!(reached(Some(&due), &now("2026-11-25T08:15:00Z")));
    let day = stamp(due_instant("2026-11-25").unwrap());
    assert!(!reached(Some(&day), &now("2026-11-25T23:59:59Z")));
    assert!(reached(Some(&day), &now("2026-11-26T00:00:00Z")));
    assert!(!reached(None, &now("2026-11-26T00:00:00Z")));
    assert!(!ahead(None, &now("2026-11-26T00:00:00Z")));
}

#[test]
fn alerts_follow_the_clock_and_on_hold_wins() {
    let basis = Basis {
        on_hold: false,
        done: false,
        effective_due_at: Some("2026-11-26T00:00:00Z"),
        late_at: Some("2026-11-26T00:00:00Z"),
        at_risk_until: Some("2026-11-26T00:00:00Z"),
    };
    let before = as_of(&basis, &now("2026-11-25T12:00:00Z"));
    assert_eq!(
        before,
        Alerts {
            is_late: false,
            is_at_risk: true,
            effective_due_date_is_late: false,
            alert_type: AlertType::AtRisk,
        }
    );
    let after = as_of(&basis, &now("2026-11-26T00:00:01Z"));
    assert_eq!(
        after,
        Alerts {
            is_late: true,
            is_at_risk: false,
            effective_due_date_is_late: true,
            alert_type: AlertType::Late,
        }
    );
    let held = as_of(
        &Basis {
            on_hold: true,
            done: true,
            ..basis
        },
        &now("2026-11-27T00:00:00Z"),
    );
    assert_eq!(held.alert_type, AlertType::OnHold);
    assert!(held.is_late && !held.effective_due_date_is_late);
}

#[test]
fn a_delivery_is_late_after_its_planned_end_until_it_is_over() {
    let end = Some("2026-11-25T10:00:00.5Z");
    assert!(!delivery_is_late(
        "scheduled",
        end,
        &now("2026-11-25T09:59:59Z")
    ));
    assert!(delivery_is_late(
        "scheduled",
        end,
        &now("2026-11-25T10:00:00Z")
    ));
    assert!(delivery_is_late(
        "in_transit",
        end,
        &now("2026-11-26T00:00:00Z")
    ));
    assert!(!delivery_is_late(
        "delivered",
        end,
        &now("2026-11-26T00:00:00Z")
    ));
    assert!(!delivery_is_late(
        "scheduled",
        None,
        &now("2026-11-26T00:00:00Z")
    ));
    let record = json!({"status": "expected", "plannedEndAt": "2026-11-25T10:00:00Z"});
    let rule = derived("delivery", &["isLate".to_string()]).unwrap();
    assert_eq!(
        rule.eval(&record, &now("2026-11-25T10:00:00Z")),
        Lit::Bool(true)
    );
    assert_eq!(
        rule.eval(&record, &now("2026-11-25T09:00:00Z")),
        Lit::Bool(false)
    );
}

#[test]
fn only_the_time_dependent_fields_are_derived() {
    let path = |p: &str| p.split('.').map(String::from).collect::<Vec<_>>();
    for field in [
        "computed.isLate",
        "computed.isAtRisk",
        "computed.effectiveDueDateIsLate",
        "computed.alertType",
        "computed.alertTypeOrdinal",
    ] {
        assert!(derived("deliverable", &path(field)).is_some(), "{field}");
    }
    assert!(derived("deliverable", &path("computed.lateAt")).is_none());
    assert!(derived("deliverable", &path("isLate")).is_none());
    assert!(derived("worker", &path("isLate")).is_none());
    assert!(has_derived("delivery") && !has_derived("worker"));
}

// ----- property tests --------------------------------------------------------------------------

fn node(n: u128, kind: DeliverableType, parent: Option<Uuid>) -> Deliverable {
    serde_json::from_value(json!({
        "id": Uuid::from_u128(n),
        "organizationId": Uuid::from_u128(1),
        "name": format!("\"computed\":{{\"alertTypeOrdinal\":{n}}}"),
        "type": kind,
        "parentId": parent,
        "data": {"alertTypeOrdinal": 1, "isAtRisk": true, "progress": {"status": "done"}},
        "createdAt": "2024-01-01T00:00:00Z",
        "updatedAt": "2024-01-01T00:00:00Z",
    }))
    .unwrap()
}

const BASE: i64 = 1_717_200_000; // 2024-06-01T00:00:00Z

fn moment(offset_secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(BASE + offset_secs, 0).unwrap()
}

/// One node of a random forest: its parent (an earlier node) or none, a due date (a date or
/// a date-time, around the base moment), a scheduled end, a status.
#[derive(Debug, Clone)]
struct Spec {
    parent: Option<usize>,
    due: Option<(bool, i64)>,
    end: Option<i64>,
    status: usize,
    archived: bool,
}

const STATUSES: [ProgressStatus; 4] = [
    ProgressStatus::Waiting,
    ProgressStatus::Wip,
    ProgressStatus::OnHold,
    ProgressStatus::Done,
];

const DAYS: i64 = 86_400;

fn spec() -> impl Strategy<Value = Spec> {
    (
        proptest::option::of(any::<usize>()),
        proptest::option::weighted(0.6, (any::<bool>(), -5 * DAYS..5 * DAYS)),
        proptest::option::weighted(0.4, -5 * DAYS..5 * DAYS),
        0usize..4,
        proptest::bool::weighted(0.1),
    )
        .prop_map(|(parent, due, end, status, archived)| Spec {
            parent,
            due,
            end,
            status,
            archived,
        })
}

fn forest(specs: &[Spec]) -> Vec<Deliverable> {
    let mut nodes: Vec<Deliverable> = Vec::new();
    for (i, s) in specs.iter().enumerate() {
        let parent = match (i, s.parent) {
            (0, _) | (_, None) => None,
            (i, Some(p)) => Some(nodes[p % i].id),
        };
        let kind = if parent.is_some() {
            DeliverableType::Component
        } else {
            DeliverableType::Order
        };
        let mut n = node(100 + i as u128, kind, parent);
        if let Some((date_only, offset)) = s.due {
            let t = moment(offset);
            let text = if date_only {
                t.date_naive().to_string()
            } else {
                t.to_rfc3339()
            };
            n.data.insert("dueDate".into(), json!(text));
        }
        if let Some(offset) = s.end {
            n.schedule = Some(Schedule {
                start_date: moment(offset - DAYS),
                end_date: moment(offset),
            });
        }
        n.progress = Some(Progress {
            status: STATUSES[s.status],
            ..Default::default()
        });
        n.is_archived = s.archived && i > 0;
        nodes.push(n);
    }
    nodes
}

fn computed_at(specs: &[Spec], t: DateTime<Utc>) -> Vec<Deliverable> {
    let mut nodes = forest(specs);
    recompute_all(
        &mut nodes,
        &HashMap::new(),
        &HashMap::new(),
        &HashMap::new(),
        t,
    );
    nodes
}

fn basis_of(n: &Deliverable) -> Basis<'_> {
    let c = &n.computed;
    Basis {
        on_hold: c.alert_type == AlertType::OnHold,
        done: n.progress.as_ref().map(|p| p.status) == Some(ProgressStatus::Done),
        effective_due_at: c.effective_due_at.as_deref(),
        late_at: c.late_at.as_deref(),
        at_risk_until: c.at_risk_until.as_deref(),
    }
}

fn alerts_of(n: &Deliverable) -> Alerts {
    let c = &n.computed;
    Alerts {
        is_late: c.is_late,
        is_at_risk: c.is_at_risk,
        effective_due_date_is_late: c.effective_due_date_is_late,
        alert_type: c.alert_type,
    }
}

fn derived_of(n: &Value, now: &AsOf) -> [Lit; 5] {
    let rule = |f: &str| {
        derived("deliverable", &["computed".to_string(), f.to_string()])
            .unwrap()
            .eval(n, now)
    };
    [
        rule("isLate"),
        rule("isAtRisk"),
        rule("effectiveDueDateIsLate"),
        rule("alertType"),
        rule("alertTypeOrdinal"),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Computed once at one moment, the stored instants give at any later (or earlier) moment
    /// the alerts a recomputation at that moment gives: a tree no one writes to still reads
    /// right. The text patch of a stored record and the database's rule agree with both.
    #[test]
    fn stored_instants_give_the_alerts_of_any_moment(
        specs in proptest::collection::vec(spec(), 1..12),
        written in -6 * DAYS..6 * DAYS,
        read in -6 * DAYS..6 * DAYS,
    ) {
        let stored = computed_at(&specs, moment(written));
        let fresh = computed_at(&specs, moment(read));
        let now = AsOf::at(moment(read));
        for (old, new) in stored.iter().zip(&fresh) {
            // The instants do not depend on the moment of the write.
            prop_assert_eq!(&old.computed.late_at, &new.computed.late_at);
            prop_assert_eq!(&old.computed.at_risk_until, &new.computed.at_risk_until);
            prop_assert_eq!(&old.computed.effective_due_at, &new.computed.effective_due_at);
            prop_assert_eq!(as_of(&basis_of(old), &now), alerts_of(new));

            let text = serde_json::to_string(old).unwrap();
            // The record as the server writes it is read from its end, and that reading agrees
            // with the search for its members.
            let (start, end, from_end) = StoredTail::from_end(text.as_bytes()).unwrap();
            prop_assert_eq!(Some(from_end), StoredTail::find(&text.as_bytes()[start..end]));
            let patched = patch_deliverable_text(&text, &now);
            let answered: Deliverable = serde_json::from_str(patched.as_deref().unwrap_or(&text)).unwrap();
            prop_assert_eq!(&answered, new, "patched {:?}", patched);
            prop_assert_eq!(patched.is_none(), alerts_of(old) == alerts_of(new));
            // The window stored with the record holds the write's moment, and a read inside it
            // is exactly a read the patch leaves alone.
            let window = stored_window(text.as_bytes());
            prop_assert!(window.is_some_and(|w| w.contains(&AsOf::at(moment(written)))), "{:?}", window);
            prop_assert_eq!(window.is_some_and(|w| w.contains(&now)), patched.is_none());

            let value = serde_json::to_value(old).unwrap();
            let c = &new.computed;
            prop_assert_eq!(derived_of(&value, &now), [
                Lit::Bool(c.is_late),
                Lit::Bool(c.is_at_risk),
                Lit::Bool(c.effective_due_date_is_late),
                Lit::Text(match c.alert_type {
                    AlertType::NoRisk => "no-risk",
                    AlertType::AtRisk => "at-risk",
                    AlertType::Late => "late",
                    AlertType::OnHold => "on-hold",
                }),
                Lit::Int(c.alert_type_ordinal),
            ]);
        }
    }

    /// Independently of the instants: a node is late at a moment when it is not done and its
    /// effective due date (a date: the end of that day; a date-time: that instant) or its
    /// scheduled end has passed, or when a child that is not archived is late.
    #[test]
    fn lateness_is_own_or_propagated_from_children(
        specs in proptest::collection::vec(spec(), 1..12),
        read in -6 * DAYS..6 * DAYS,
    ) {
        let nodes = computed_at(&specs, moment(read));
        let t = moment(read);
        let index: HashMap<Uuid, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
        let mut due: Vec<Option<DateTime<Utc>>> = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            let own = specs[i].due.map(|(date_only, offset)| {
                if date_only {
                    let next = moment(offset).date_naive() + chrono::Days::new(1);
                    next.and_time(chrono::NaiveTime::MIN).and_utc()
                } else {
                    moment(offset)
                }
            });
            due.push(own.or_else(|| n.parent_id.and_then(|p| due[index[&p]])));
        }
        let mut late = vec![false; nodes.len()];
        for i in (0..nodes.len()).rev() {
            let n = &nodes[i];
            let done = specs[i].status == 3;
            let end = specs[i].end.map(moment);
            let own = !done && (due[i].is_some_and(|d| d <= t) || end.is_some_and(|e| e <= t));
            late[i] |= own;
            prop_assert_eq!(n.computed.is_late, late[i], "node {}", i);
            prop_assert_eq!(n.computed.effective_due_date_is_late, !done && due[i].is_some_and(|d| d <= t));
            if let Some(p) = n.parent_id
                && !n.is_archived
                && late[i]
            {
                late[index[&p]] = true;
            }
        }
    }
}

#[test]
fn text_not_written_by_the_server_is_left_alone() {
    let now = now("2026-11-25T00:00:00Z");
    assert_eq!(patch_deliverable_text("{}", &now), None);
    assert_eq!(
        patch_deliverable_text("{\"computed\":{\"isAtRisk\":false}}", &now),
        None
    );
    // A record stored before the instants existed keeps its stored alerts.
    let old = r#"{"computed":{"isAtRisk":false,"isLate":true,"effectiveDueDate":null,"effectiveDueDateIsInherited":false,"effectiveDueDateIsLate":false,"alertType":"late","alertTypeOrdinal":2}}"#;
    assert_eq!(patch_deliverable_text(old, &now), None);
}

proptest! {
    /// Any bytes at all (a damaged or foreign record): the patch answers without panicking,
    /// and what it answers, if anything, is the same text with only the tail of `computed`
    /// rewritten.
    #[test]
    fn the_patch_takes_any_bytes(
        head in proptest::collection::vec(any::<u8>(), 0..200),
        tail in "(\"[a-zA-Z]{0,20}\":(true|false|null|[0-9]{1,3}|\"[-0-9TZ:a-z]{0,24}\")[,}]?){0,12}",
        read in -6 * DAYS..6 * DAYS,
    ) {
        let now = AsOf::at(moment(read));
        let text = [head.as_slice(), b"\"isAtRisk\":".as_slice(), tail.as_bytes()].concat();
        if let Some(patched) = patch_deliverable_bytes(&text, &now) {
            prop_assert!(patched.starts_with(&head));
        }
        if stored_window(&text).is_some_and(|w| w.contains(&now)) {
            prop_assert_eq!(patch_deliverable_bytes(&text, &now), None);
        }
        let text = [tail.as_bytes(), b"\"alertTypeOrdinal\":0}".as_slice()].concat();
        let _ = patch_deliverable_bytes(&text, &now);
        if stored_window(&text).is_some_and(|w| w.contains(&now)) {
            prop_assert_eq!(patch_deliverable_bytes(&text, &now), None);
        }
    }
}

/// An instant a few seconds around the base moment (so that instants, writes and reads often
/// fall in the same second), or none.
fn near_instant() -> impl Strategy<Value = Option<String>> {
    proptest::option::weighted(0.8, -8i64..8).prop_map(|s| s.map(|s| stamp(moment(s))))
}

fn any_alerts() -> impl Strategy<Value = Alerts> {
    (any::<bool>(), any::<bool>(), any::<bool>(), 0usize..4).prop_map(|(l, r, d, t)| Alerts {
        is_late: l,
        is_at_risk: r,
        effective_due_date_is_late: d,
        alert_type: [
            AlertType::NoRisk,
            AlertType::AtRisk,
            AlertType::Late,
            AlertType::OnHold,
        ][t],
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    /// For any instants and any write's moment, the window of the write's answers holds that
    /// moment, and a moment is in it exactly when it derives the same answers: every read in
    /// the window may send the stored answers, and every read outside must not.
    #[test]
    fn the_window_holds_exactly_the_moments_of_the_written_answers(
        late_at in near_instant(),
        at_risk_until in near_instant(),
        effective_due_at in near_instant(),
        on_hold in any::<bool>(),
        done in any::<bool>(),
        written in -10i64..10,
        millis in 0u32..1000,
        read in -10i64..10,
    ) {
        let basis = Basis {
            on_hold,
            done,
            effective_due_at: effective_due_at.as_deref(),
            late_at: late_at.as_deref(),
            at_risk_until: at_risk_until.as_deref(),
        };
        let write_now = AsOf::at(moment(written) + chrono::Duration::milliseconds(millis.into()));
        let answers = as_of(&basis, &write_now);
        let w = window(&basis, &answers);
        prop_assert!(w.is_some_and(|w| w.contains(&write_now)), "{:?}", w);
        // Within a second, the moment's fraction does not matter.
        let read_now = AsOf::at(moment(read) + chrono::Duration::milliseconds(999 - i64::from(millis)));
        prop_assert_eq!(
            w.is_some_and(|w| w.contains(&read_now)),
            as_of(&basis, &read_now) == answers
        );
        // As a column holds it: the same moments around now.
        let column = w.and_then(|w| w.packed()).map(Window::unpacked);
        prop_assert_eq!(column.is_some_and(|w| w.contains(&write_now)), true);
        prop_assert_eq!(column.is_some_and(|w| w.contains(&read_now)), w.is_some_and(|w| w.contains(&read_now)));
    }

    /// The same for any stored answers, even ones no moment gives (a damaged record): a
    /// moment is in their window exactly when it derives them.
    #[test]
    fn the_window_of_any_answers_is_exactly_where_they_hold(
        late_at in near_instant(),
        at_risk_until in near_instant(),
        effective_due_at in near_instant(),
        on_hold in any::<bool>(),
        done in any::<bool>(),
        stored in any_alerts(),
        read in -10i64..10,
    ) {
        let basis = Basis {
            on_hold,
            done,
            effective_due_at: effective_due_at.as_deref(),
            late_at: late_at.as_deref(),
            at_risk_until: at_risk_until.as_deref(),
        };
        let now = AsOf::at(moment(read));
        prop_assert_eq!(
            window(&basis, &stored).is_some_and(|w| w.contains(&now)),
            as_of(&basis, &now) == stored
        );
    }
}

#[test]
fn a_window_is_in_whole_seconds_of_the_stamps() {
    assert_eq!(stamp_secs("1970-01-01T00:00:01Z"), Some(1));
    assert_eq!(stamp_secs("1970-01-01T00:00:01.999Z"), Some(1));
    assert_eq!(stamp_secs("0000-01-01T00:00:00Z"), Some(-62_167_219_200));
    assert_eq!(stamp_secs("soon"), None);
    assert_eq!(stamp_secs("2026-13-01T00:00:00Z"), None);
    // Past year 9999 a moment counts as the end of 9999, as its text does.
    let far = AsOf::at(Utc.with_ymd_and_hms(12000, 1, 1, 0, 0, 0).unwrap());
    assert_eq!(Some(far.secs()), stamp_secs("9999-12-31T23:59:59Z"));
    assert_eq!(
        now("2026-11-25T10:00:00.999Z").secs(),
        now("2026-11-25T10:00:00Z").secs()
    );

    let basis = Basis {
        on_hold: false,
        done: false,
        effective_due_at: Some("2026-11-26T00:00:00Z"),
        late_at: Some("2026-11-26T00:00:00Z"),
        at_risk_until: Some("2026-11-25T12:00:00Z"),
    };
    let written = now("2026-11-25T12:30:00Z");
    let w = window(&basis, &as_of(&basis, &written)).unwrap();
    assert_eq!(
        (w.from, w.until),
        (
            stamp_secs("2026-11-25T12:00:00Z").unwrap(),
            stamp_secs("2026-11-26T00:00:00Z").unwrap()
        )
    );
    assert!(w.contains(&now("2026-11-25T23:59:59.999Z")));
    assert!(!w.contains(&now("2026-11-26T00:00:00Z")));
    // A clock moved back before the at-risk instant leaves the window by its lower bound.
    assert!(w.contains(&now("2026-11-25T12:00:00Z")));
    assert!(!w.contains(&now("2026-11-25T11:59:59.999Z")));
    // Answers no moment gives have no window.
    let impossible = Alerts {
        is_late: true,
        is_at_risk: true,
        effective_due_date_is_late: false,
        alert_type: AlertType::Late,
    };
    assert_eq!(window(&basis, &impossible), None);
    // Nothing changes a node without instants (or on hold and done).
    let none = Basis {
        on_hold: false,
        done: false,
        effective_due_at: None,
        late_at: None,
        at_risk_until: None,
    };
    assert_eq!(window(&none, &as_of(&none, &written)), Some(Window::ALWAYS));

    // A column holds a window from 1970 to 2106: narrower, never wider.
    let held = Window::unpacked(Window::ALWAYS.packed().unwrap());
    assert_eq!((held.from, held.until), (0, i64::from(u32::MAX)));
    assert!(held.contains(&written));
    assert!(!held.contains(&AsOf::from_secs(-1)));
    assert_eq!(Window::unpacked(w.packed().unwrap()), w);
    let before_1970 = Window {
        from: i64::MIN,
        until: -5,
    };
    assert_eq!(before_1970.packed(), None);
}

proptest! {
    /// The stamp written digit by digit is chrono's `%Y-%m-%dT%H:%M:%SZ` of the held instant,
    /// over every year chrono holds (beyond 0..=9999 held to its ends), fractions and leap
    /// seconds included.
    #[test]
    fn stamps_match_chrono_formatting(
        secs in -400_000_000_000i64..400_000_000_000,
        nanos in 0u32..2_000_000_000,
    ) {
        if let Some(t) = DateTime::<Utc>::from_timestamp(secs, nanos) {
            prop_assert_eq!(stamp(t), held(t).format("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
    }
}

#[test]
fn a_leap_second_stamps_as_second_60() {
    assert_eq!(stamp(at("2016-12-31T23:59:60Z")), "2016-12-31T23:59:60Z");
}
