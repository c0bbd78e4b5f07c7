//! Progress actions (spec 3.1, 4.2): the state machine of one node's progress, the roll-up of
//! children's progress to their ancestors, and the action request types.
//!
//! The table of every action from every state is in `docs/deliverables.md`; [`apply`] is its
//! one implementation.

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::deliverable::{DeliverableType, Progress, ProgressStatus};
use crate::violation::Violation;

/// A progress action, discriminated by `type` (spec 4.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ProgressAction {
    /// Everything done.
    Complete {},
    /// Reverts a completed quantity to work in progress.
    Uncomplete {
        /// How much of the completed quantity goes back to work in progress.
        quantity: f64,
    },
    /// Partial completion ahead of dependencies.
    SendAhead {
        /// How much more is completed.
        quantity: f64,
    },
    /// The work is redone; `hasBeenReworked` becomes true for good.
    Rework {},
    /// Work stops until resumed.
    PutOnHold {},
    /// Work on an on-hold node goes on.
    ResumeWork {},
    /// Sets the percentage done; not allowed on qcstep nodes.
    SetPercentage {
        /// 0 to 100.
        percentage: f64,
    },
}

/// The answer of a progress action: the workers whose open sessions or plans the transition to
/// done stopped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProgressResult {
    pub kicked_workers: Vec<Uuid>,
}

impl ProgressAction {
    /// The wire name of the action.
    pub fn name(&self) -> &'static str {
        match self {
            ProgressAction::Complete {} => "complete",
            ProgressAction::Uncomplete { .. } => "uncomplete",
            ProgressAction::SendAhead { .. } => "send-ahead",
            ProgressAction::Rework {} => "rework",
            ProgressAction::PutOnHold {} => "put-on-hold",
            ProgressAction::ResumeWork {} => "resume-work",
            ProgressAction::SetPercentage { .. } => "set-percentage",
        }
    }
}

/// The progress a node whose progress was never set counts as: `todo`, nothing done.
fn never_set() -> Progress {
    Progress {
        status: ProgressStatus::Todo,
        ..Default::default()
    }
}

/// The status of a progress, `todo` for progress never set.
pub fn status_of(p: Option<&Progress>) -> ProgressStatus {
    p.map_or(ProgressStatus::Todo, |p| p.status)
}

fn started(p: &Progress) -> bool {
    p.started_at.is_some() || p.completed > 0.0 || p.wip > 0.0 || p.percentage > 0.0
}

fn pct(completed: f64, quantity: f64) -> f64 {
    if quantity <= 0.0 {
        return 0.0;
    }
    ((completed / quantity) * 100.0).clamp(0.0, 100.0)
}

/// The progress of a node after `action`, from its current progress (`None`: never set, todo
/// with nothing done). `quantity` is the node's quantity (at least 1 is assumed for arithmetic), `by` the
/// key that acted, `now` the request time. Refusals name the field at fault.
pub fn apply(
    current: Option<&Progress>,
    kind: DeliverableType,
    quantity: i64,
    action: &ProgressAction,
    by: Uuid,
    now: DateTime<Utc>,
) -> Result<Progress, Violation> {
    let q = quantity.max(1) as f64;
    let mut p = current.cloned().unwrap_or_else(never_set);
    let from = p.status;
    let start = |p: &mut Progress| {
        if p.started_at.is_none() {
            p.started_at = Some(now);
        }
    };
    match action {
        ProgressAction::Complete {} => {
            start(&mut p);
            p.status = ProgressStatus::Done;
            p.completed = q;
            p.wip = 0.0;
            p.percentage = 100.0;
            if from != ProgressStatus::Done || p.completed_at.is_none() {
                p.completed_at = Some(now);
            }
        }
        ProgressAction::Uncomplete { quantity } => {
            if !(quantity.is_finite() && *quantity > 0.0) {
                return Err(Violation::field(
                    "quantity",
                    "quantity must be greater than 0",
                ));
            }
            if p.completed <= 0.0 {
                return Err(Violation::field(
                    "type",
                    format!("nothing is completed on this {kind} to uncomplete"),
                ));
            }
            if *quantity > p.completed {
                return Err(Violation::field(
                    "quantity",
                    format!(
                        "at most the completed quantity {} can be uncompleted",
                        p.completed
                    ),
                ));
            }
            p.completed -= quantity;
            p.wip = (p.wip + quantity).min(q - p.completed);
            p.percentage = pct(p.completed, q);
            p.completed_at = None;
            if from != ProgressStatus::OnHold && from != ProgressStatus::Rework {
                p.status = ProgressStatus::Wip;
            }
            start(&mut p);
        }
        ProgressAction::SendAhead { quantity } => {
            if !(quantity.is_finite() && *quantity > 0.0) {
                return Err(Violation::field(
                    "quantity",
                    "quantity must be greater than 0",
                ));
            }
            match from {
                ProgressStatus::Done => {
                    return Err(Violation::field("type", "the node is already done"));
                }
                ProgressStatus::OnHold => {
                    return Err(Violation::field(
                        "type",
                        "the node is on hold; resume work first",
                    ));
                }
                _ => {}
            }
            let left = q - p.completed;
            if *quantity > left {
                return Err(Violation::field(
                    "quantity",
                    format!("at most the remaining quantity {left} can be sent ahead"),
                ));
            }
            start(&mut p);
            p.completed += quantity;
            p.wip = (p.wip - quantity).max(0.0);
            p.percentage = pct(p.completed, q);
            if p.completed >= q {
                p.status = ProgressStatus::Done;
                p.completed_at = Some(now);
                p.wip = 0.0;
            } else if from != ProgressStatus::Rework {
                p.status = ProgressStatus::Wip;
            }
        }
        ProgressAction::Rework {} => {
            start(&mut p);
            if from == ProgressStatus::Done {
                p.completed = 0.0;
                p.percentage = 0.0;
            }
            p.wip = q - p.completed;
            p.status = ProgressStatus::Rework;
            p.has_been_reworked = true;
            p.completed_at = None;
        }
        ProgressAction::PutOnHold {} => {
            if from == ProgressStatus::Done {
                return Err(Violation::field(
                    "type",
                    "a done node cannot be put on hold",
                ));
            }
            p.status = ProgressStatus::OnHold;
        }
        ProgressAction::ResumeWork {} => {
            if from != ProgressStatus::OnHold {
                return Err(Violation::field(
                    "type",
                    format!(
                        "only an on-hold node can resume work (this one is {})",
                        status_name(from)
                    ),
                ));
            }
            p.status = if started(&p) {
                start(&mut p);
                ProgressStatus::Wip
            } else {
                ProgressStatus::Todo
            };
        }
        ProgressAction::SetPercentage { percentage } => {
            if kind == DeliverableType::Qcstep {
                return Err(Violation::field(
                    "type",
                    "set-percentage is not allowed on qcstep nodes",
                ));
            }
            if !(percentage.is_finite() && (0.0..=100.0).contains(percentage)) {
                return Err(Violation::field(
                    "percentage",
                    "percentage must be between 0 and 100",
                ));
            }
            let pc = *percentage;
            p.percentage = pc;
            p.completed = (q * pc / 100.0).floor();
            if pc >= 100.0 {
                start(&mut p);
                p.completed = q;
                p.wip = 0.0;
                if from != ProgressStatus::Done {
                    p.completed_at = Some(now);
                }
                p.status = ProgressStatus::Done;
            } else {
                p.completed_at = None;
                if pc > 0.0 {
                    start(&mut p);
                    p.wip = q - p.completed;
                    if matches!(
                        from,
                        ProgressStatus::Waiting | ProgressStatus::Todo | ProgressStatus::Done
                    ) {
                        p.status = ProgressStatus::Wip;
                    }
                } else {
                    p.wip = 0.0;
                    if matches!(from, ProgressStatus::Wip | ProgressStatus::Done) {
                        p.status = ProgressStatus::Todo;
                    }
                }
            }
        }
    }
    stamp(&mut p, by, now);
    Ok(p)
}

fn status_name(s: ProgressStatus) -> &'static str {
    match s {
        ProgressStatus::Waiting => "waiting",
        ProgressStatus::Todo => "todo",
        ProgressStatus::Wip => "wip",
        ProgressStatus::Rework => "rework",
        ProgressStatus::OnHold => "on-hold",
        ProgressStatus::Done => "done",
    }
}

/// `updatedById` and `updatedAt` name who changed progress and when; both null for a
/// transition that ends in `waiting`.
fn stamp(p: &mut Progress, by: Uuid, now: DateTime<Utc>) {
    if p.status == ProgressStatus::Waiting {
        p.updated_by_id = None;
        p.updated_at = None;
    } else {
        p.updated_by_id = Some(by);
        p.updated_at = Some(now);
    }
}

/// The progress of a parent from its children's (`None`: a child with no progress, todo at
/// 0 %), after an action below it. Returns `None` when every child is untouched and the parent
/// has no progress of its own. Rules (docs/deliverables.md):
/// - percentage: the mean of the children's percentages; completed: that share of the
///   parent's quantity (whole units), the rest is wip once work started;
/// - status: done when every child is done; otherwise on-hold stays on-hold and rework stays
///   rework; otherwise wip when any child started (wip, rework, done, on-hold with work), todo
///   when any child is todo, else waiting;
/// - startedAt: the earliest child start; completedAt: set when it becomes done;
///   hasBeenReworked is the parent's own and is kept.
pub fn roll_up(
    parent: Option<&Progress>,
    quantity: i64,
    children: &[Option<&Progress>],
    by: Uuid,
    now: DateTime<Utc>,
) -> Option<Progress> {
    if children.is_empty() {
        return parent.cloned();
    }
    if parent.is_none() && children.iter().all(Option::is_none) {
        return None;
    }
    let q = quantity.max(1) as f64;
    let mut p = parent.cloned().unwrap_or_default();
    let from = p.status;
    let n = children.len() as f64;
    let percentage = children
        .iter()
        .map(|c| c.map_or(0.0, |c| c.percentage))
        .sum::<f64>()
        / n;
    let statuses: Vec<ProgressStatus> = children.iter().map(|c| status_of(*c)).collect();
    let all_done = statuses.iter().all(|s| *s == ProgressStatus::Done);
    let any_started = children.iter().any(|c| c.is_some_and(started));
    let any_todo = statuses.contains(&ProgressStatus::Todo);
    let status = if all_done {
        ProgressStatus::Done
    } else if matches!(from, ProgressStatus::OnHold | ProgressStatus::Rework) {
        from
    } else if any_started {
        ProgressStatus::Wip
    } else if any_todo {
        ProgressStatus::Todo
    } else {
        ProgressStatus::Waiting
    };
    p.percentage = if all_done {
        100.0
    } else {
        percentage.min(100.0)
    };
    p.completed = if all_done {
        q
    } else {
        (q * p.percentage / 100.0).floor()
    };
    p.wip = if all_done || !any_started {
        0.0
    } else {
        q - p.completed
    };
    let earliest = children
        .iter()
        .filter_map(|c| c.and_then(|c| c.started_at))
        .min();
    p.started_at = match (p.started_at, earliest) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    if all_done {
        if from != ProgressStatus::Done || p.completed_at.is_none() {
            p.completed_at = Some(now);
        }
    } else {
        p.completed_at = None;
    }
    p.status = status;
    if Some(&p) != parent {
        stamp(&mut p, by, now);
    }
    Some(p)
}

/// Whether the progress of a finish-to-start predecessor still holds its successors back: it
/// has released nothing, i.e. it is not done and has completed nothing (`send-ahead`, like
/// every completed quantity, releases what it completed; docs/deliverables.md, "Readiness").
pub fn holds_back(pred: Option<&Progress>) -> bool {
    pred.is_none_or(|p| p.status != ProgressStatus::Done && p.completed <= 0.0)
}

/// The quantity a predecessor has released to its successors: its completed quantity.
pub fn released(pred: Option<&Progress>) -> f64 {
    pred.map_or(0.0, |p| p.completed.max(0.0))
}

/// Whether a node whose predecessors have `preds` as progress waits for them: one of them
/// still holds it back. A node without predecessors waits for nothing.
pub fn blocked(preds: &[Option<&Progress>]) -> bool {
    preds.iter().any(|p| holds_back(*p))
}

/// Whether a progress is unstarted: its status is `waiting` or `todo` and nothing was done.
/// Only unstarted progress follows readiness; work that started keeps its status.
pub fn unstarted(p: Option<&Progress>) -> bool {
    p.is_none_or(|p| {
        matches!(p.status, ProgressStatus::Waiting | ProgressStatus::Todo) && !started(p)
    })
}

/// The progress of a node after its readiness was evaluated (`blocked`: a predecessor still
/// holds it back, [`blocked`]), or `None` when it does not change: unstarted progress (also
/// progress never set) becomes `waiting` when blocked and `todo` otherwise; started work keeps
/// its status. A `waiting` result carries no updater (spec 2.1).
pub fn readiness(
    current: Option<&Progress>,
    blocked: bool,
    by: Uuid,
    now: DateTime<Utc>,
) -> Option<Progress> {
    if !unstarted(current) {
        return None;
    }
    let status = if blocked {
        ProgressStatus::Waiting
    } else {
        ProgressStatus::Todo
    };
    if status_of(current) == status {
        return None;
    }
    let mut p = current.cloned().unwrap_or_else(never_set);
    p.status = status;
    stamp(&mut p, by, now);
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    const BY: Uuid = Uuid::from_u128(7);

    fn now() -> DateTime<Utc> {
        "2024-05-01T10:00:00Z".parse().unwrap()
    }

    fn at(status: ProgressStatus, completed: f64) -> Progress {
        Progress {
            status,
            completed,
            percentage: completed * 10.0,
            ..Default::default()
        }
    }

    fn run(p: Option<&Progress>, a: ProgressAction) -> Result<Progress, Violation> {
        apply(p, DeliverableType::Step, 10, &a, BY, now())
    }

    #[test]
    fn actions_parse_from_the_wire() {
        let a: ProgressAction =
            serde_json::from_value(json!({"type": "send-ahead", "quantity": 2})).unwrap();
        assert_eq!(a, ProgressAction::SendAhead { quantity: 2.0 });
        let a: ProgressAction = serde_json::from_value(json!({"type": "put-on-hold"})).unwrap();
        assert_eq!(a, ProgressAction::PutOnHold {});
        assert!(serde_json::from_value::<ProgressAction>(json!({"type": "bogus"})).is_err());
        assert!(
            serde_json::from_value::<ProgressAction>(json!({"type": "set-percentage"})).is_err()
        );
        assert!(
            serde_json::from_value::<ProgressAction>(json!({"type": "complete", "extra": 1}))
                .is_err()
        );
    }

    #[test]
    fn complete_from_every_state() {
        use ProgressStatus::*;
        for s in [Waiting, Todo, Wip, Rework, OnHold, Done] {
            let p = run(Some(&at(s, 3.0)), ProgressAction::Complete {}).unwrap();
            assert_eq!(p.status, Done);
            assert_eq!(p.completed, 10.0);
            assert_eq!(p.percentage, 100.0);
            assert!(p.completed_at.is_some());
            assert!(p.started_at.is_some());
            assert_eq!(p.updated_by_id, Some(BY));
        }
    }

    #[test]
    fn rework_sets_the_flag_for_good() {
        let p = run(None, ProgressAction::Complete {}).unwrap();
        let p = run(Some(&p), ProgressAction::Rework {}).unwrap();
        assert_eq!(p.status, ProgressStatus::Rework);
        assert!(p.has_been_reworked);
        assert_eq!(p.completed_at, None);
        assert_eq!(p.completed, 0.0);
        let p = run(Some(&p), ProgressAction::Complete {}).unwrap();
        assert!(p.has_been_reworked);
    }

    #[test]
    fn hold_and_resume() {
        let p = run(None, ProgressAction::PutOnHold {}).unwrap();
        assert_eq!(p.status, ProgressStatus::OnHold);
        let p = run(Some(&p), ProgressAction::ResumeWork {}).unwrap();
        assert_eq!(p.status, ProgressStatus::Todo);
        let p = run(Some(&p), ProgressAction::SetPercentage { percentage: 30.0 }).unwrap();
        let p = run(Some(&p), ProgressAction::PutOnHold {}).unwrap();
        let p = run(Some(&p), ProgressAction::ResumeWork {}).unwrap();
        assert_eq!(p.status, ProgressStatus::Wip);
        assert!(run(Some(&p), ProgressAction::ResumeWork {}).is_err());
        let done = run(None, ProgressAction::Complete {}).unwrap();
        assert!(run(Some(&done), ProgressAction::PutOnHold {}).is_err());
    }

    #[test]
    fn quantities() {
        let p = run(None, ProgressAction::SendAhead { quantity: 4.0 }).unwrap();
        assert_eq!(
            (p.status, p.completed, p.percentage),
            (ProgressStatus::Wip, 4.0, 40.0)
        );
        assert!(run(Some(&p), ProgressAction::SendAhead { quantity: 7.0 }).is_err());
        let p = run(Some(&p), ProgressAction::SendAhead { quantity: 6.0 }).unwrap();
        assert_eq!(p.status, ProgressStatus::Done);
        let p = run(Some(&p), ProgressAction::Uncomplete { quantity: 3.0 }).unwrap();
        assert_eq!(
            (p.status, p.completed, p.wip),
            (ProgressStatus::Wip, 7.0, 3.0)
        );
        assert!(p.completed_at.is_none());
        assert!(run(Some(&p), ProgressAction::Uncomplete { quantity: 8.0 }).is_err());
        assert!(run(None, ProgressAction::Uncomplete { quantity: 1.0 }).is_err());
        assert!(run(None, ProgressAction::SendAhead { quantity: 0.0 }).is_err());
    }

    #[test]
    fn set_percentage() {
        let p = run(None, ProgressAction::SetPercentage { percentage: 0.0 }).unwrap();
        assert_eq!(p.status, ProgressStatus::Todo, "never set counts as todo");
        let waiting = Progress::default();
        let p = run(
            Some(&waiting),
            ProgressAction::SetPercentage { percentage: 0.0 },
        )
        .unwrap();
        assert_eq!(p.status, ProgressStatus::Waiting);
        assert_eq!(
            p.updated_by_id, None,
            "waiting transitions carry no updater"
        );
        let p = run(None, ProgressAction::SetPercentage { percentage: 100.0 }).unwrap();
        assert_eq!(p.status, ProgressStatus::Done);
        let p = run(Some(&p), ProgressAction::SetPercentage { percentage: 0.0 }).unwrap();
        assert_eq!(p.status, ProgressStatus::Todo);
        assert!(run(None, ProgressAction::SetPercentage { percentage: 101.0 }).is_err());
        let qc = apply(
            None,
            DeliverableType::Qcstep,
            1,
            &ProgressAction::SetPercentage { percentage: 5.0 },
            BY,
            now(),
        );
        assert!(qc.is_err());
    }

    #[test]
    fn roll_up_rules() {
        let done = run(None, ProgressAction::Complete {}).unwrap();
        let half = run(None, ProgressAction::SetPercentage { percentage: 50.0 }).unwrap();
        let p = roll_up(None, 4, &[Some(&done), None], BY, now()).unwrap();
        assert_eq!(p.status, ProgressStatus::Wip);
        assert_eq!(p.percentage, 50.0);
        assert_eq!(p.completed, 2.0);
        let p = roll_up(None, 4, &[Some(&done), Some(&done)], BY, now()).unwrap();
        assert_eq!(p.status, ProgressStatus::Done);
        assert!(p.completed_at.is_some());
        let held = Progress {
            status: ProgressStatus::OnHold,
            ..Default::default()
        };
        let p = roll_up(Some(&held), 1, &[Some(&half)], BY, now()).unwrap();
        assert_eq!(p.status, ProgressStatus::OnHold);
        assert_eq!(roll_up(None, 1, &[None, None], BY, now()), None);
    }

    #[test]
    fn readiness_rules() {
        let done = run(None, ProgressAction::Complete {}).unwrap();
        let ahead = run(None, ProgressAction::SendAhead { quantity: 2.0 }).unwrap();
        let fresh = Progress::default();
        // What holds a successor back.
        assert!(holds_back(None));
        assert!(holds_back(Some(&fresh)));
        assert!(!holds_back(Some(&done)));
        assert!(
            !holds_back(Some(&ahead)),
            "send-ahead releases its quantity"
        );
        assert_eq!(released(Some(&ahead)), 2.0);
        assert_eq!(released(None), 0.0);
        assert!(!blocked(&[]));
        assert!(blocked(&[Some(&done), None]));
        assert!(!blocked(&[Some(&done), Some(&ahead)]));
        // Never-set progress counts as todo; held back, it is stored waiting (no updater).
        assert_eq!(readiness(None, false, BY, now()), None);
        let w = readiness(None, true, BY, now()).unwrap();
        assert_eq!((w.status, w.updated_by_id), (ProgressStatus::Waiting, None));
        let t = readiness(Some(&w), false, BY, now()).unwrap();
        assert_eq!(
            (t.status, t.updated_by_id),
            (ProgressStatus::Todo, Some(BY))
        );
        assert_eq!(readiness(Some(&t), false, BY, now()), None);
        let back = readiness(Some(&t), true, BY, now()).unwrap();
        assert_eq!(back.status, ProgressStatus::Waiting);
        assert_eq!(back.updated_at, None);
        // Started work keeps its status.
        let wip = run(None, ProgressAction::SetPercentage { percentage: 20.0 }).unwrap();
        assert_eq!(readiness(Some(&wip), true, BY, now()), None);
        assert_eq!(readiness(Some(&done), true, BY, now()), None);
        let held = run(None, ProgressAction::PutOnHold {}).unwrap();
        assert_eq!(readiness(Some(&held), false, BY, now()), None);
    }

    fn action() -> impl Strategy<Value = ProgressAction> {
        prop_oneof![
            Just(ProgressAction::Complete {}),
            (0.0f64..12.0).prop_map(|q| ProgressAction::Uncomplete { quantity: q }),
            (0.0f64..12.0).prop_map(|q| ProgressAction::SendAhead { quantity: q }),
            Just(ProgressAction::Rework {}),
            Just(ProgressAction::PutOnHold {}),
            Just(ProgressAction::ResumeWork {}),
            (-5.0f64..105.0).prop_map(|p| ProgressAction::SetPercentage { percentage: p }),
        ]
    }

    proptest! {
        #[test]
        fn invariants_hold_after_any_sequence(actions in proptest::collection::vec(action(), 0..30)) {
            let mut p: Option<Progress> = None;
            let mut reworked = false;
            for a in &actions {
                if let Ok(next) = run(p.as_ref(), a.clone()) {
                    prop_assert!((0.0..=100.0).contains(&next.percentage));
                    prop_assert!(next.completed >= 0.0 && next.completed <= 10.0);
                    prop_assert!(next.wip >= 0.0 && next.completed + next.wip <= 10.0 + 1e-9);
                    prop_assert_eq!(next.status == ProgressStatus::Done, next.completed_at.is_some());
                    if matches!(a, ProgressAction::Rework {}) { reworked = true; }
                    prop_assert_eq!(next.has_been_reworked, reworked);
                    prop_assert_eq!(next.status == ProgressStatus::Waiting, next.updated_by_id.is_none());
                    p = Some(next);
                }
            }
        }

        /// Readiness: after any actions on a predecessor, a successor that never started is
        /// waiting exactly while the predecessor has released nothing, and started work is never
        /// moved by readiness.
        #[test]
        fn readiness_follows_the_predecessor(
            pred_actions in proptest::collection::vec(action(), 0..20),
            succ_actions in proptest::collection::vec(action(), 0..4),
        ) {
            let mut pred: Option<Progress> = None;
            for a in &pred_actions {
                if let Ok(next) = run(pred.as_ref(), a.clone()) { pred = Some(next); }
            }
            let mut succ: Option<Progress> = None;
            for a in &succ_actions {
                if let Ok(next) = run(succ.as_ref(), a.clone()) { succ = Some(next); }
            }
            let b = blocked(&[pred.as_ref()]);
            prop_assert_eq!(b, pred.as_ref().is_none_or(|p| p.status != ProgressStatus::Done && p.completed <= 0.0));
            let after = readiness(succ.as_ref(), b, BY, now()).or(succ.clone());
            if unstarted(succ.as_ref()) {
                let s = after.unwrap_or_else(never_set);
                prop_assert_eq!(s.status, if b { ProgressStatus::Waiting } else { ProgressStatus::Todo });
                prop_assert_eq!(status_of(Some(&s)) == ProgressStatus::Waiting, b);
                // Evaluating again changes nothing.
                prop_assert_eq!(readiness(Some(&s), b, BY, now()), None);
            } else {
                prop_assert_eq!(after, succ);
            }
        }

        #[test]
        fn roll_up_is_done_exactly_when_all_children_are(flags in proptest::collection::vec(any::<bool>(), 1..8)) {
            let done = run(None, ProgressAction::Complete {}).unwrap();
            let wip = run(None, ProgressAction::SetPercentage { percentage: 20.0 }).unwrap();
            let kids: Vec<Option<&Progress>> = flags.iter().map(|d| Some(if *d { &done } else { &wip })).collect();
            let p = roll_up(None, 3, &kids, BY, now()).unwrap();
            prop_assert_eq!(p.status == ProgressStatus::Done, flags.iter().all(|d| *d));
            prop_assert!((0.0..=100.0).contains(&p.percentage));
        }
    }
}
