use std::collections::HashMap;
use std::convert::Infallible;

use chrono::{DateTime, Utc};
use proptest::prelude::*;
use serde_json::{Value, json};

use super::*;
use crate::tree::recompute_all;

fn now() -> DateTime<Utc> {
    "2026-03-10T12:00:00Z".parse().unwrap()
}

fn as_of() -> AsOf {
    AsOf::at(now())
}

fn node(n: u128, kind: DeliverableType, parent: Option<u128>, extra: Value) -> Deliverable {
    let mut v = json!({
        "id": Uuid::from_u128(n),
        "organizationId": Uuid::from_u128(1),
        "name": format!("n{n}"),
        "identifier": format!("D-{n}"),
        "type": kind,
        "parentId": parent.map(Uuid::from_u128),
        "createdAt": "2024-01-01T00:00:00Z",
        "updatedAt": "2024-01-01T00:00:00Z",
    });
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    serde_json::from_value(v).unwrap()
}

/// `nodes` with their computed fields derived from scratch, as the server stores them.
fn computed(mut nodes: Vec<Deliverable>) -> Vec<Deliverable> {
    recompute_all(
        &mut nodes,
        &HashMap::new(),
        &HashMap::new(),
        &HashMap::new(),
        now(),
    );
    nodes
}

fn by_id(nodes: &[Deliverable], n: u128) -> &Deliverable {
    nodes.iter().find(|d| d.id == Uuid::from_u128(n)).unwrap()
}

fn kids(nodes: &[Deliverable]) -> impl FnMut(Uuid) -> Result<Vec<Deliverable>, Infallible> + '_ {
    move |id| {
        Ok(nodes
            .iter()
            .filter(|d| d.parent_id == Some(id))
            .cloned()
            .collect())
    }
}

fn facts(node: &Deliverable) -> Facts<'_> {
    Facts {
        node,
        predecessors: Vec::new(),
        late_path: Vec::new(),
        at_risk_path: Vec::new(),
        qc: Vec::new(),
        materials: Vec::new(),
    }
}

fn schedule(start: &str, end: &str) -> Value {
    json!({"startDate": start, "endDate": end})
}

#[test]
fn a_waiting_node_names_the_predecessors_that_hold_it_back() {
    let me = node(
        10,
        DeliverableType::Stage,
        None,
        json!({"progress": {"status": "waiting"}}),
    );
    let holding = node(11, DeliverableType::Stage, None, json!({}));
    let released = node(
        12,
        DeliverableType::Stage,
        None,
        json!({"progress": {"status": "wip", "completed": 2}}),
    );
    let mut f = facts(&me);
    f.predecessors = vec![
        (Uuid::from_u128(91), &released),
        (Uuid::from_u128(90), &holding),
    ];
    let e = explain(&f, &as_of());
    assert_eq!(e.reasons.len(), 1, "{e:#?}");
    let r = &e.reasons[0];
    assert_eq!(r.kind, ReasonKind::Waiting);
    let w = r.waiting.as_ref().unwrap();
    assert_eq!(w.predecessors.len(), 2);
    assert!(w.predecessors[0].holds_back, "holders first");
    assert_eq!(w.predecessors[0].deliverable.id, holding.id);
    assert_eq!(w.predecessors[1].completed, 2.0);
    assert!(!w.predecessors[1].holds_back);
    assert_eq!(
        r.sentence,
        "“n10” (D-10) is waiting for its predecessor: “n11” (D-11) is todo and has completed nothing."
    );
}

#[test]
fn a_container_waits_for_its_waiting_children() {
    let nodes = computed(vec![
        node(
            1,
            DeliverableType::Order,
            None,
            json!({"progress": {"status": "waiting"}}),
        ),
        node(
            2,
            DeliverableType::Stage,
            Some(1),
            json!({"progress": {"status": "waiting"}}),
        ),
    ]);
    let e = explain(&facts(by_id(&nodes, 1)), &as_of());
    let w = e.reasons[0].waiting.as_ref().unwrap();
    assert!(w.predecessors.is_empty());
    assert_eq!(w.waiting_children.len(), 1);
    assert!(
        e.reasons[0]
            .sentence
            .contains("every child of it waits: “n2”")
    );
}

#[test]
fn a_late_order_is_explained_along_the_path_to_the_late_step() {
    // The order's due date (inherited by everything below) passed; its stage's step is the
    // one whose schedule ended first.
    let nodes = computed(vec![
        node(
            1,
            DeliverableType::Order,
            None,
            json!({"data": {"dueDate": "2026-03-20"}}),
        ),
        node(2, DeliverableType::Stage, Some(1), json!({})),
        node(
            3,
            DeliverableType::Step,
            Some(2),
            json!({"schedule": schedule("2026-03-01T00:00:00Z", "2026-03-05T08:00:00Z")}),
        ),
        node(
            4,
            DeliverableType::Step,
            Some(2),
            json!({"progress": {"status": "done"},
                   "schedule": schedule("2026-03-01T00:00:00Z", "2026-03-02T00:00:00Z")}),
        ),
    ]);
    let order = by_id(&nodes, 1);
    assert_eq!(
        order.computed.late_at.as_deref(),
        Some("2026-03-05T08:00:00Z")
    );
    let path = path_down(order, Along::Late, kids(&nodes)).unwrap();
    let ids: Vec<Uuid> = path.iter().map(|d| d.id).collect();
    assert_eq!(ids, [1, 2, 3].map(Uuid::from_u128));
    let mut f = facts(order);
    f.late_path = path.iter().collect();
    let e = explain(&f, &as_of());
    assert_eq!(e.alert_type, AlertType::Late);
    let r = &e.reasons[0];
    assert_eq!(r.kind, ReasonKind::Late);
    let late = r.late.as_ref().unwrap();
    assert_eq!(late.cause, LateCause::ScheduleEnd);
    assert_eq!(
        late.dates.schedule_end.as_deref(),
        Some("2026-03-05T08:00:00Z")
    );
    assert!(late.dates.due_date_is_inherited);
    assert_eq!(
        r.sentence,
        "“n1” (D-1) is late since 2026-03-05T08:00:00Z, along “n1” › “n2” › “n3”: “n3” (D-3) is not \
         done and its schedule ended at 2026-03-05T08:00:00Z (its due date 2026-03-20 (inherited))."
    );
}

#[test]
fn a_passed_due_date_is_the_cause_when_it_came_first() {
    let nodes = computed(vec![node(
        1,
        DeliverableType::Order,
        None,
        json!({"data": {"dueDate": "2026-03-01"},
               "schedule": schedule("2026-02-01T00:00:00Z", "2026-03-09T00:00:00Z")}),
    )]);
    let order = &nodes[0];
    let path = path_down(order, Along::Late, kids(&nodes)).unwrap();
    assert_eq!(path.len(), 1, "its own dates");
    let mut f = facts(order);
    f.late_path = path.iter().collect();
    let e = explain(&f, &as_of());
    let late = e.reasons[0].late.as_ref().unwrap();
    assert_eq!(late.cause, LateCause::DueDate);
    assert_eq!(late.late_since, "2026-03-02T00:00:00Z");
    assert_eq!(
        e.reasons[0].sentence,
        "“n1” (D-1) is late since 2026-03-02T00:00:00Z: it is not done and its due date 2026-03-01 \
         passed at 2026-03-02T00:00:00Z."
    );
}

#[test]
fn at_risk_names_the_end_after_the_due_date() {
    let nodes = computed(vec![
        node(
            1,
            DeliverableType::Order,
            None,
            json!({"data": {"dueDate": "2026-04-01"}}),
        ),
        node(
            2,
            DeliverableType::Stage,
            Some(1),
            json!({"schedule": schedule("2026-03-20T00:00:00Z", "2026-04-03T00:00:00Z")}),
        ),
    ]);
    let order = by_id(&nodes, 1);
    let path = path_down(order, Along::AtRisk, kids(&nodes)).unwrap();
    assert_eq!(path.len(), 2);
    let mut f = facts(order);
    f.at_risk_path = path.iter().collect();
    let e = explain(&f, &as_of());
    assert_eq!(e.alert_type, AlertType::AtRisk);
    let r = &e.reasons[0];
    assert_eq!(r.kind, ReasonKind::AtRisk);
    assert_eq!(
        r.at_risk.as_ref().unwrap().at_risk_until,
        "2026-04-02T00:00:00Z"
    );
    assert!(
        r.sentence.contains(
            "“n2” (D-2) is scheduled to end at 2026-04-03T00:00:00Z, after its due date 2026-04-01 (inherited)"
        ),
        "{}",
        r.sentence
    );
    // Once the due date passed it is late instead, and no longer at risk.
    let later = AsOf::at("2026-04-02T00:00:00Z".parse().unwrap());
    let e = explain(&f, &later);
    let kinds: Vec<ReasonKind> = e.reasons.iter().map(|r| r.kind).collect();
    assert_eq!(kinds, [ReasonKind::Late]);
}

fn qc_step(status: &str) -> Deliverable {
    node(
        5,
        DeliverableType::Qcstep,
        Some(2),
        json!({"progress": {"status": status}, "data": {"qcTemplateId": Uuid::from_u128(70)}}),
    )
}

fn set(n: u128, verdict: Option<Verdict>, at: &str) -> SetVerdict {
    SetVerdict {
        qc_set_id: Uuid::from_u128(n),
        verdict,
        verdict_at: Some(at.parse().unwrap()),
    }
}

#[test]
fn a_shut_qc_gate_names_the_latest_verdict() {
    let step = qc_step("wip");
    let gate = |sets: Vec<SetVerdict>, in_force| QcFacts {
        step: &step,
        qc_template_id: Uuid::from_u128(70),
        in_force,
        sets,
    };
    let reasons = |g: QcFacts| {
        let mut f = facts(&step);
        f.qc = vec![g];
        explain(&f, &as_of()).reasons
    };
    let failed = reasons(gate(
        vec![
            set(80, Some(Verdict::Pass), "2026-03-01T00:00:00Z"),
            set(81, Some(Verdict::Fail), "2026-03-02T00:00:00Z"),
        ],
        Some((2, true)),
    ));
    assert_eq!(failed.len(), 1);
    let g = failed[0].qc_gate.as_ref().unwrap();
    assert_eq!(g.version_in_force, 2);
    assert_eq!(g.latest.as_ref().unwrap().verdict, Verdict::Fail);
    assert_eq!(g.latest.as_ref().unwrap().qc_set_id, Uuid::from_u128(81));
    assert!(
        failed[0].sentence.contains("is fail"),
        "{}",
        failed[0].sentence
    );
    let none = reasons(gate(vec![], Some((1, true))));
    assert!(
        none[0]
            .sentence
            .contains("no QC set for it records a verdict yet")
    );
    assert!(none[0].qc_gate.as_ref().unwrap().latest.is_none());
    // A pass opens the gate; an ungated or draft-only template has none.
    assert!(
        reasons(gate(
            vec![set(82, Some(Verdict::Pass), "2026-03-03T00:00:00Z")],
            Some((1, true))
        ))
        .is_empty()
    );
    assert!(reasons(gate(vec![], Some((1, false)))).is_empty());
    assert!(reasons(gate(vec![], None)).is_empty());
}

fn line(needed: f64, on_hand: f64, reserved: f64, mine: f64, on_order: f64) -> LineFacts {
    LineFacts {
        bom_line_id: Uuid::from_u128(60),
        name: "Steel".into(),
        identifier: "BL-1".into(),
        item_id: Uuid::from_u128(61),
        placed_on_deliverable_id: None,
        needed,
        on_order,
        on_hand,
        reserved,
        reserved_for_line: mine,
    }
}

#[test]
fn a_short_line_counts_its_reservation_and_the_free_stock() {
    // 10 needed; 3 reserved for it, of 5 reserved in all; 6 on hand, so 1 free.
    let l = line(10.0, 6.0, 5.0, 3.0, 4.0);
    assert_eq!(available(&l), 4.0);
    assert_eq!(short_by(&l), 6.0);
    let me = node(1, DeliverableType::Order, None, json!({}));
    let mut f = facts(&me);
    f.materials = vec![l, line(2.0, 6.0, 5.0, 3.0, 0.0)];
    let e = explain(&f, &as_of());
    assert_eq!(e.reasons.len(), 1, "the covered line is no reason");
    let s = e.reasons[0].materials_short.as_ref().unwrap();
    assert_eq!(
        (s.needed, s.available, s.short_by, s.on_order),
        (10.0, 4.0, 6.0, 4.0)
    );
    assert_eq!(
        e.reasons[0].sentence,
        "BOM line “Steel” (BL-1) is short by 6: it still needs 10, and 4 is available to it (3 \
         reserved for it; 6 on hand, 5 reserved in all); only 4 is on order."
    );
    // A reservation beyond the stock makes none: 10 reserved for it, 6 on hand.
    assert_eq!(available(&line(10.0, 6.0, 10.0, 10.0, 0.0)), 6.0);
    // A done node needs nothing more.
    let done = node(
        1,
        DeliverableType::Order,
        None,
        json!({"progress": {"status": "done"}}),
    );
    let mut f = facts(&done);
    f.materials = vec![line(10.0, 0.0, 0.0, 0.0, 0.0)];
    assert!(explain(&f, &as_of()).reasons.is_empty());
}

#[test]
fn nothing_to_explain_says_so() {
    let me = node(1, DeliverableType::Order, None, json!({}));
    let e = explain(&facts(&me), &as_of());
    assert!(e.reasons.is_empty());
    assert_eq!(
        e.summary,
        "“n1” (D-1) (order) is todo, alert no risk: nothing holds it back."
    );
    assert_eq!(e.as_of, "2026-03-10T12:00:00Z");
    let json = serde_json::to_value(&e).unwrap();
    assert_eq!(json["deliverable"]["type"], "order");
    assert_eq!(json["alertType"], "no-risk");
}

#[test]
fn each_reason_carries_the_data_of_its_kind_and_reads_back() {
    let me = node(
        10,
        DeliverableType::Qcstep,
        None,
        json!({"progress": {"status": "waiting"}, "data": {"dueDate": "2026-03-01"}}),
    );
    let nodes = computed(vec![me]);
    let me = &nodes[0];
    let pred = node(11, DeliverableType::Stage, None, json!({}));
    let mut f = facts(me);
    f.predecessors = vec![(Uuid::from_u128(90), &pred)];
    f.late_path = vec![me];
    f.qc = vec![QcFacts {
        step: me,
        qc_template_id: Uuid::from_u128(70),
        in_force: Some((1, true)),
        sets: Vec::new(),
    }];
    f.materials = vec![line(5.0, 0.0, 0.0, 0.0, 0.0)];
    let e = explain(&f, &as_of());
    let kinds: Vec<ReasonKind> = e.reasons.iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [
            ReasonKind::Waiting,
            ReasonKind::Late,
            ReasonKind::QcGate,
            ReasonKind::MaterialsShort
        ]
    );
    for r in &e.reasons {
        let present = [
            r.waiting.is_some(),
            r.late.is_some(),
            r.at_risk.is_some(),
            r.qc_gate.is_some(),
            r.materials_short.is_some(),
        ];
        assert_eq!(present.iter().filter(|p| **p).count(), 1, "{r:?}");
        assert!(r.sentence.ends_with('.'), "{}", r.sentence);
    }
    assert!(e.summary.ends_with("4 reasons follow."), "{}", e.summary);
    let text = serde_json::to_string(&e).unwrap();
    let back: Explanation = serde_json::from_str(&text).unwrap();
    assert_eq!(back, e);
    let json: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["reasons"][1]["kind"], "late");
    assert_eq!(json["reasons"][1]["late"]["cause"], "due-date");
    assert!(json["reasons"][1].get("waiting").is_none());
}

/// A random tree: each node's parent is an earlier node (or none), with a due date, a schedule
/// end, a status and an archived flag drawn from small sets, so instants collide often.
fn tree_strategy() -> impl Strategy<Value = Vec<Deliverable>> {
    prop::collection::vec(
        (
            any::<prop::sample::Index>(),
            prop::option::of(0u32..6),
            prop::option::of(0u32..6),
            0u8..4,
            prop::bool::weighted(0.1),
        ),
        1..24,
    )
    .prop_map(|specs| {
        specs
            .into_iter()
            .enumerate()
            .map(|(i, (parent, due, end, status, archived))| {
                let n = i as u128 + 1;
                let parent = (i > 0).then(|| parent.index(i + 1)).filter(|p| *p < i);
                let kind = if parent.is_none() {
                    DeliverableType::Order
                } else {
                    DeliverableType::Phase
                };
                let mut extra = json!({"isArchived": archived && parent.is_some()});
                if let Some(d) = due {
                    extra["data"] = json!({"dueDate": format!("2026-03-{:02}", 5 + d)});
                }
                if let Some(e) = end {
                    extra["schedule"] = schedule(
                        "2026-03-01T00:00:00Z",
                        &format!("2026-03-{:02}T12:00:00Z", 4 + e),
                    );
                }
                extra["progress"] = {
                    let status = ["todo", "wip", "done", "on-hold"][status as usize];
                    json!({ "status": status })
                };
                node(n, kind, parent.map(|p| p as u128 + 1), extra)
            })
            .collect()
    })
}

proptest! {
    /// Every path goes down the tree from the node, through nodes carrying its instant, to a
    /// node whose own dates give it: the walk finds where the tree took the instant from.
    #[test]
    fn paths_end_at_the_node_whose_own_dates_give_the_instant(nodes in tree_strategy()) {
        let nodes = computed(nodes);
        for along in [Along::Late, Along::AtRisk] {
            for top in &nodes {
                let path = path_down(top, along, kids(&nodes)).unwrap();
                let Some(target) = along.stored(top) else {
                    prop_assert!(path.is_empty());
                    continue;
                };
                prop_assert_eq!(path[0].id, top.id);
                for pair in path.windows(2) {
                    prop_assert_eq!(pair[1].parent_id, Some(pair[0].id));
                    prop_assert!(!pair[1].is_archived);
                }
                for d in &path {
                    prop_assert_eq!(along.stored(d), Some(target));
                }
                let last = path.last().unwrap();
                let own = along.own(last);
                prop_assert_eq!(own.as_deref(), Some(target));
            }
        }
    }

    /// A late or at-risk reason is given exactly when the read answers late or at risk, at any
    /// moment, and its path is the one the walk found.
    #[test]
    fn reasons_agree_with_the_alerts_of_the_read(nodes in tree_strategy(), hour in 0i64..24 * 12) {
        let nodes = computed(nodes);
        let start: DateTime<Utc> = "2026-03-03T00:00:00Z".parse().unwrap();
        let now = AsOf::at(start + chrono::Duration::hours(hour));
        for top in &nodes {
            let late = path_down(top, Along::Late, kids(&nodes)).unwrap();
            let risk = path_down(top, Along::AtRisk, kids(&nodes)).unwrap();
            let mut f = facts(top);
            f.late_path = late.iter().collect();
            f.at_risk_path = risk.iter().collect();
            let e = explain(&f, &now);
            let alerts = alerts_now(top, &now);
            let has = |k| e.reasons.iter().any(|r| r.kind == k);
            prop_assert_eq!(has(ReasonKind::Late), alerts.is_late);
            prop_assert_eq!(has(ReasonKind::AtRisk), alerts.is_at_risk);
            if let Some(r) = e.reasons.iter().find(|r| r.kind == ReasonKind::Late) {
                let ids: Vec<Uuid> = r.late.as_ref().unwrap().path.iter().map(|n| n.id).collect();
                let want: Vec<Uuid> = late.iter().map(|d| d.id).collect();
                prop_assert_eq!(ids, want);
            }
        }
    }

    /// A line is short exactly when it needs more than it can draw, by that much, never less
    /// than nothing.
    #[test]
    fn short_by_is_what_the_draw_does_not_cover(
        needed in 0.0f64..1e6, on_hand in 0.0f64..1e6, reserved in 0.0f64..1e6, share in 0.0f64..=1.0,
        on_order in 0.0f64..1e6,
    ) {
        let l = line(needed, on_hand, reserved, reserved * share, on_order);
        let s = short_by(&l);
        prop_assert!(s >= 0.0);
        prop_assert!(available(&l) >= 0.0);
        prop_assert!(available(&l) <= round_quantity(on_hand) + 1e-6, "a reservation makes no stock");
        prop_assert!((s - (needed - available(&l)).max(0.0)).abs() < 1e-5);
        let me = node(1, DeliverableType::Order, None, json!({}));
        let mut f = facts(&me);
        f.materials = vec![l];
        let e = explain(&f, &as_of());
        prop_assert_eq!(e.reasons.len(), usize::from(s > 0.0));
    }
}
