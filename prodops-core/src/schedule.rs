//! The schedule engine (spec 4.2): schedule, drag, shrink, expand and reschedule of a node of
//! an order, with finish-to-start dependencies, durations, and the roll-up of child schedules
//! to their parents up to the order. Times are epoch seconds. The semantics are documented in
//! `docs/deliverables.md`; [`apply`] is their one implementation.

use std::collections::{BTreeSet, HashMap, HashSet};

use crate::openapi::ToSchema;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::deliverable::Schedule;
use crate::violation::Violation;

/// The latest epoch second accepted (9999-12-31T23:59:59Z).
pub const MAX_EPOCH: i64 = 253_402_300_799;

/// A schedule action, discriminated by `type` (spec 4.2). Times are epoch seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ScheduleAction {
    /// Places the node to start at `newStart`, for its duration.
    #[serde(rename_all = "camelCase")]
    Schedule {
        #[serde(deserialize_with = "crate::number::whole")]
        new_start: i64,
    },
    /// Moves the node keeping its length: to start at `newStart` or to finish at `newFinish`.
    #[serde(rename_all = "camelCase")]
    Drag {
        #[serde(deserialize_with = "crate::number::whole_opt")]
        #[serde(default)]
        new_start: Option<i64>,
        #[serde(deserialize_with = "crate::number::whole_opt")]
        #[serde(default)]
        new_finish: Option<i64>,
    },
    /// Makes the node shorter: `newDuration` seconds from `newStart` (or up to `newFinish`).
    #[serde(rename_all = "camelCase")]
    Shrink {
        #[serde(deserialize_with = "crate::number::whole")]
        new_duration: i64,
        #[serde(deserialize_with = "crate::number::whole_opt")]
        #[serde(default)]
        new_start: Option<i64>,
        #[serde(deserialize_with = "crate::number::whole_opt")]
        #[serde(default)]
        new_finish: Option<i64>,
    },
    /// Makes the node longer: `newDuration` seconds up to `newFinish` (or from `newStart`).
    #[serde(rename_all = "camelCase")]
    Expand {
        #[serde(deserialize_with = "crate::number::whole")]
        new_duration: i64,
        #[serde(deserialize_with = "crate::number::whole_opt")]
        #[serde(default)]
        new_start: Option<i64>,
        #[serde(deserialize_with = "crate::number::whole_opt")]
        #[serde(default)]
        new_finish: Option<i64>,
    },
    /// Recomputed from the dependencies: starts when the last predecessor finishes.
    Reschedule,
}

/// One entry of `POST /deliverable/schedule/batch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleBatchItem {
    pub root_parent_id: Uuid,
    pub target_id: Uuid,
    pub action: ScheduleAction,
}

/// A scheduled interval in epoch seconds, `start <= end`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: i64,
    pub end: i64,
}

impl Span {
    pub fn len(&self) -> i64 {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    fn shifted(self, delta: i64) -> Span {
        Span {
            start: self.start + delta,
            end: self.end + delta,
        }
    }
    pub fn of(s: &Schedule) -> Span {
        Span {
            start: s.start_date.timestamp(),
            end: s.end_date.timestamp(),
        }
    }
    /// The stored form; `None` outside the representable range.
    pub fn to_schedule(self) -> Option<Schedule> {
        Some(Schedule {
            start_date: DateTime::<Utc>::from_timestamp(self.start, 0)?,
            end_date: DateTime::<Utc>::from_timestamp(self.end, 0)?,
        })
    }
}

/// The schedules of one order's tree and the facts the engine needs.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Every node of the tree (the order included) and its parent (`None` for the order).
    pub parent: HashMap<Uuid, Option<Uuid>>,
    /// Current schedules.
    pub spans: HashMap<Uuid, Span>,
    /// `durationSec` of each node.
    pub durations: HashMap<Uuid, i64>,
    /// Finish-to-start dependencies `(predecessor, successor)` among the nodes.
    pub deps: Vec<(Uuid, Uuid)>,
}

fn check_time(field: &str, t: i64) -> Result<i64, Violation> {
    if (0..=MAX_EPOCH).contains(&t) {
        Ok(t)
    } else {
        Err(Violation::field(
            field,
            format!("{field} must be epoch seconds between 0 and {MAX_EPOCH}"),
        ))
    }
}

fn one_of(start: Option<i64>, finish: Option<i64>) -> Result<Anchor, Violation> {
    match (start, finish) {
        (Some(s), None) => Ok(Anchor::Start(check_time("newStart", s)?)),
        (None, Some(f)) => Ok(Anchor::Finish(check_time("newFinish", f)?)),
        (Some(_), Some(_)) => Err(Violation::field(
            "newStart",
            "give only one of newStart and newFinish; the engine derives the other",
        )),
        (None, None) => Err(Violation::field(
            "newStart",
            "newStart or newFinish is required",
        )),
    }
}

enum Anchor {
    Start(i64),
    Finish(i64),
}

impl Anchor {
    fn span(&self, len: i64) -> Span {
        match *self {
            Anchor::Start(s) => Span {
                start: s,
                end: s + len,
            },
            Anchor::Finish(f) => Span {
                start: f - len,
                end: f,
            },
        }
    }
}

impl Plan {
    fn children(&self) -> HashMap<Uuid, Vec<Uuid>> {
        let mut kids: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        for (id, parent) in &self.parent {
            if let Some(p) = parent {
                kids.entry(*p).or_default().push(*id);
            }
        }
        kids
    }

    fn descendants(&self, id: Uuid, kids: &HashMap<Uuid, Vec<Uuid>>) -> Vec<Uuid> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(n) = stack.pop() {
            for k in kids.get(&n).into_iter().flatten() {
                out.push(*k);
                stack.push(*k);
            }
        }
        out
    }

    /// The earliest `id` may start: the latest end of a scheduled predecessor of the node or of
    /// any of its ancestors (a dependency on a container constrains everything under it).
    fn earliest_start(&self, id: Uuid) -> Option<i64> {
        let mut line = HashSet::new();
        let mut n = Some(id);
        while let Some(x) = n {
            if !line.insert(x) {
                break;
            }
            n = self.parent.get(&x).copied().flatten();
        }
        self.deps
            .iter()
            .filter(|(_, s)| line.contains(s))
            .filter_map(|(p, _)| self.spans.get(p).map(|sp| sp.end))
            .max()
    }

    fn depth(&self, mut id: Uuid) -> usize {
        let mut d = 0;
        while let Some(Some(p)) = self.parent.get(&id) {
            id = *p;
            d += 1;
            if d > self.parent.len() {
                break;
            }
        }
        d
    }

    /// Moves `id` (and its scheduled descendants with it) by `delta`.
    fn shift(&mut self, id: Uuid, delta: i64, kids: &HashMap<Uuid, Vec<Uuid>>) {
        if delta == 0 {
            return;
        }
        for n in std::iter::once(id).chain(self.descendants(id, kids)) {
            if let Some(sp) = self.spans.get_mut(&n) {
                *sp = sp.shifted(delta);
            }
        }
    }
}

/// What an action changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    /// Nodes whose schedule changed.
    pub changed: BTreeSet<Uuid>,
    /// The node's new `durationSec` (shrink and expand set it).
    pub new_duration: Option<(Uuid, i64)>,
}

/// Applies `action` to `target` of `plan`; see the module docs and docs/deliverables.md.
pub fn apply(plan: &mut Plan, target: Uuid, action: &ScheduleAction) -> Result<Outcome, Violation> {
    if !plan.parent.contains_key(&target) {
        return Err(Violation::field(
            "targetId",
            "the target is not a node of this order",
        ));
    }
    let before = plan.spans.clone();
    let kids = plan.children();
    let has_scheduled_children = plan
        .descendants(target, &kids)
        .iter()
        .any(|d| plan.spans.contains_key(d));
    let current = plan.spans.get(&target).copied();
    let duration = plan.durations.get(&target).copied().unwrap_or(0).max(0);
    let length = current.map_or(duration, |c| if duration > 0 { duration } else { c.len() });
    let mut outcome = Outcome::default();
    let envelope_only = |what: &str| {
        Violation::field(
            "type",
            format!(
                "{what} does not apply to a node with scheduled children: its schedule spans theirs; act on the children"
            ),
        )
    };
    let wanted = match action {
        ScheduleAction::Schedule { new_start } => {
            let start = check_time("newStart", *new_start)?;
            Span {
                start,
                end: start + length,
            }
        }
        ScheduleAction::Drag {
            new_start,
            new_finish,
        } => {
            let len = current.map_or(duration, |c| c.len());
            one_of(*new_start, *new_finish)?.span(len)
        }
        ScheduleAction::Shrink {
            new_duration,
            new_start,
            new_finish,
        }
        | ScheduleAction::Expand {
            new_duration,
            new_start,
            new_finish,
        } => {
            let shrink = matches!(action, ScheduleAction::Shrink { .. });
            if has_scheduled_children {
                return Err(envelope_only(if shrink { "shrink" } else { "expand" }));
            }
            if *new_duration < 0 || *new_duration > MAX_EPOCH {
                return Err(Violation::field(
                    "newDuration",
                    "newDuration must be seconds, 0 or more",
                ));
            }
            if let Some(c) = current {
                if shrink && *new_duration > c.len() {
                    return Err(Violation::field(
                        "newDuration",
                        format!(
                            "shrink needs a duration of at most the current {} seconds; use expand",
                            c.len()
                        ),
                    ));
                }
                if !shrink && *new_duration < c.len() {
                    return Err(Violation::field(
                        "newDuration",
                        format!(
                            "expand needs a duration of at least the current {} seconds; use shrink",
                            c.len()
                        ),
                    ));
                }
            }
            outcome.new_duration = Some((target, *new_duration));
            plan.durations.insert(target, *new_duration);
            one_of(*new_start, *new_finish)?.span(*new_duration)
        }
        ScheduleAction::Reschedule => {
            if has_scheduled_children {
                return Err(envelope_only("reschedule"));
            }
            let start = match (plan.earliest_start(target), current) {
                (Some(e), _) => e,
                (None, Some(c)) => c.start,
                (None, None) => {
                    return Err(Violation::field(
                        "type",
                        "the node has no schedule and no scheduled predecessor to reschedule from",
                    ));
                }
            };
            Span {
                start,
                end: start + length,
            }
        }
    };
    // Finish-to-start: never before the last predecessor finishes.
    let wanted = match plan.earliest_start(target) {
        Some(e) if e > wanted.start => wanted.shifted(e - wanted.start),
        _ => wanted,
    };
    match current {
        Some(c) if has_scheduled_children => {
            // A container moves with its scheduled children.
            plan.shift(target, wanted.start - c.start, &kids);
        }
        _ => {
            if has_scheduled_children {
                let first = plan
                    .descendants(target, &kids)
                    .iter()
                    .filter_map(|d| plan.spans.get(d).map(|s| s.start))
                    .min()
                    .unwrap_or(wanted.start);
                plan.shift(target, wanted.start - first, &kids);
            }
            plan.spans.insert(target, wanted);
        }
    }
    settle(plan, &kids);
    for (id, span) in &plan.spans {
        if before.get(id) != Some(span) {
            outcome.changed.insert(*id);
        }
    }
    if plan
        .spans
        .values()
        .any(|s| s.start < 0 || s.end > MAX_EPOCH)
    {
        return Err(Violation::field(
            "type",
            "the resulting schedule leaves the representable range",
        ));
    }
    Ok(outcome)
}

/// Makes every container span its children and every dependency hold at every level: a
/// scheduled successor (with everything scheduled under it) that would start before its
/// predecessor (the predecessor's whole subtree, which its span covers) finishes is pushed later,
/// transitively, until nothing moves. Successors never move earlier on their own. Ends for the
/// dependency graphs [`creates_cycle_in_tree`] admits; a bounded number of rounds otherwise.
fn settle(plan: &mut Plan, kids: &HashMap<Uuid, Vec<Uuid>>) {
    let rounds = (plan.deps.len() + 1) * (plan.parent.len() + 1) + 2;
    let deps = plan.deps.clone();
    for _ in 0..rounds {
        roll_up(plan, kids);
        let mut moved = false;
        for (p, s) in &deps {
            let Some(end) = plan.spans.get(p).map(|x| x.end) else {
                continue;
            };
            if let Some(sp) = plan.spans.get(s).copied()
                && sp.start < end
            {
                // `s` spans its scheduled descendants (rolled up above): they all move.
                plan.shift(*s, end - sp.start, kids);
                moved = true;
            }
        }
        if !moved {
            return;
        }
    }
    roll_up(plan, kids);
}

/// Every node with scheduled children spans them: from the earliest child start to the latest
/// child end, deepest nodes first, up to the order.
fn roll_up(plan: &mut Plan, kids: &HashMap<Uuid, Vec<Uuid>>) {
    let mut nodes: Vec<Uuid> = plan.parent.keys().copied().collect();
    nodes.sort_by_key(|n| std::cmp::Reverse(plan.depth(*n)));
    for n in nodes {
        let spans: Vec<Span> = kids
            .get(&n)
            .into_iter()
            .flatten()
            .filter_map(|k| plan.spans.get(k).copied())
            .collect();
        if let Some(env) = envelope(&spans) {
            plan.spans.insert(n, env);
        }
    }
}

/// The span covering every span given, `None` for none.
pub fn envelope(spans: &[Span]) -> Option<Span> {
    let start = spans.iter().map(|s| s.start).min()?;
    let end = spans.iter().map(|s| s.end).max()?;
    Some(Span { start, end })
}

/// Whether adding the dependency `pred → succ` to `edges` closes a cycle.
pub fn creates_cycle(edges: &[(Uuid, Uuid)], pred: Uuid, succ: Uuid) -> bool {
    if pred == succ {
        return true;
    }
    // A cycle appears when `pred` is reachable from `succ`.
    let mut stack = vec![succ];
    let mut seen = HashSet::new();
    while let Some(n) = stack.pop() {
        if n == pred {
            return true;
        }
        if seen.insert(n) {
            stack.extend(edges.iter().filter(|(a, _)| *a == n).map(|(_, b)| *b));
        }
    }
    false
}

/// Whether adding the dependency `pred → succ` makes the dependencies unsatisfiable once they
/// constrain whole subtrees: everything under a predecessor finishes before anything under its
/// successor starts, and a container spans its children. `ancestry` gives, for every endpoint
/// of `edges` and for `pred` and `succ`, its ancestors and itself (its `fullPath`). Refused:
/// a node and its own ancestor or descendant (including itself), and any chain of dependencies
/// leading back, where a dependency leads to the next when its successor and the next one's
/// predecessor are the same node or one holds the other.
pub fn creates_cycle_in_tree(
    edges: &[(Uuid, Uuid)],
    ancestry: &HashMap<Uuid, Vec<Uuid>>,
    pred: Uuid,
    succ: Uuid,
) -> bool {
    let related = |a: Uuid, b: Uuid| {
        a == b
            || ancestry.get(&a).is_some_and(|l| l.contains(&b))
            || ancestry.get(&b).is_some_and(|l| l.contains(&a))
    };
    if related(pred, succ) {
        return true;
    }
    // From the new dependency, follow dependencies whose predecessor is related to the current
    // successor; a cycle comes back to one whose successor is related to `pred`.
    let mut seen = vec![false; edges.len()];
    let mut stack = vec![succ];
    while let Some(at) = stack.pop() {
        if related(at, pred) {
            return true;
        }
        for (i, (p, s)) in edges.iter().enumerate() {
            if !seen[i] && related(at, *p) {
                seen[i] = true;
                stack.push(*s);
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    /// Order 1 with phase 2 holding steps 3 and 4; step 4 depends on step 3.
    fn plan() -> Plan {
        let mut p = Plan::default();
        p.parent.insert(id(1), None);
        p.parent.insert(id(2), Some(id(1)));
        p.parent.insert(id(3), Some(id(2)));
        p.parent.insert(id(4), Some(id(2)));
        p.durations.insert(id(3), 100);
        p.durations.insert(id(4), 50);
        p.deps.push((id(3), id(4)));
        p
    }

    #[test]
    fn wire_forms() {
        let a: ScheduleAction =
            serde_json::from_value(json!({"type": "drag", "newFinish": 5})).unwrap();
        assert_eq!(
            a,
            ScheduleAction::Drag {
                new_start: None,
                new_finish: Some(5)
            }
        );
        let a: ScheduleAction = serde_json::from_value(json!({"type": "reschedule"})).unwrap();
        assert_eq!(a, ScheduleAction::Reschedule);
        assert!(
            serde_json::from_value::<ScheduleAction>(
                json!({"type": "schedule", "newStart": "2024-01-01"})
            )
            .is_err()
        );
        assert!(
            serde_json::from_value::<ScheduleAction>(
                json!({"type": "schedule", "newStart": 1, "x": 1})
            )
            .is_err()
        );
    }

    #[test]
    fn schedule_uses_duration_and_rolls_up() {
        let mut p = plan();
        let out = apply(&mut p, id(3), &ScheduleAction::Schedule { new_start: 1000 }).unwrap();
        assert_eq!(
            p.spans[&id(3)],
            Span {
                start: 1000,
                end: 1100
            }
        );
        assert_eq!(
            p.spans[&id(2)],
            Span {
                start: 1000,
                end: 1100
            }
        );
        assert_eq!(
            p.spans[&id(1)],
            Span {
                start: 1000,
                end: 1100
            }
        );
        assert_eq!(out.changed.len(), 3);
    }

    #[test]
    fn dependencies_are_honoured() {
        let mut p = plan();
        apply(&mut p, id(3), &ScheduleAction::Schedule { new_start: 1000 }).unwrap();
        // Asking step 4 to start before step 3 finishes places it right after.
        apply(&mut p, id(4), &ScheduleAction::Schedule { new_start: 0 }).unwrap();
        assert_eq!(
            p.spans[&id(4)],
            Span {
                start: 1100,
                end: 1150
            }
        );
        // Dragging the predecessor later pushes the successor.
        apply(
            &mut p,
            id(3),
            &ScheduleAction::Drag {
                new_start: Some(2000),
                new_finish: None,
            },
        )
        .unwrap();
        assert_eq!(
            p.spans[&id(4)],
            Span {
                start: 2100,
                end: 2150
            }
        );
        assert_eq!(
            p.spans[&id(1)],
            Span {
                start: 2000,
                end: 2150
            }
        );
        // Dragging it earlier leaves the successor where it is.
        apply(
            &mut p,
            id(3),
            &ScheduleAction::Drag {
                new_start: None,
                new_finish: Some(1500),
            },
        )
        .unwrap();
        assert_eq!(
            p.spans[&id(3)],
            Span {
                start: 1400,
                end: 1500
            }
        );
        assert_eq!(
            p.spans[&id(4)],
            Span {
                start: 2100,
                end: 2150
            }
        );
        // Reschedule pulls it back to right after its predecessor.
        apply(&mut p, id(4), &ScheduleAction::Reschedule).unwrap();
        assert_eq!(
            p.spans[&id(4)],
            Span {
                start: 1500,
                end: 1550
            }
        );
    }

    #[test]
    fn shrink_expand() {
        let mut p = plan();
        apply(&mut p, id(3), &ScheduleAction::Schedule { new_start: 1000 }).unwrap();
        let out = apply(
            &mut p,
            id(3),
            &ScheduleAction::Shrink {
                new_duration: 40,
                new_start: None,
                new_finish: Some(1100),
            },
        )
        .unwrap();
        assert_eq!(
            p.spans[&id(3)],
            Span {
                start: 1060,
                end: 1100
            }
        );
        assert_eq!(out.new_duration, Some((id(3), 40)));
        assert!(
            apply(
                &mut p,
                id(3),
                &ScheduleAction::Shrink {
                    new_duration: 50,
                    new_start: Some(0),
                    new_finish: None
                }
            )
            .is_err()
        );
        apply(
            &mut p,
            id(3),
            &ScheduleAction::Expand {
                new_duration: 200,
                new_start: Some(1000),
                new_finish: None,
            },
        )
        .unwrap();
        assert_eq!(
            p.spans[&id(3)],
            Span {
                start: 1000,
                end: 1200
            }
        );
        assert!(
            apply(
                &mut p,
                id(2),
                &ScheduleAction::Expand {
                    new_duration: 900,
                    new_start: Some(1),
                    new_finish: None
                }
            )
            .is_err()
        );
        assert!(
            apply(
                &mut p,
                id(3),
                &ScheduleAction::Drag {
                    new_start: Some(1),
                    new_finish: Some(2)
                }
            )
            .is_err()
        );
        assert!(
            apply(
                &mut p,
                id(3),
                &ScheduleAction::Drag {
                    new_start: None,
                    new_finish: None
                }
            )
            .is_err()
        );
    }

    #[test]
    fn dragging_a_container_moves_its_children() {
        let mut p = plan();
        apply(&mut p, id(3), &ScheduleAction::Schedule { new_start: 1000 }).unwrap();
        apply(&mut p, id(4), &ScheduleAction::Reschedule).unwrap();
        apply(
            &mut p,
            id(2),
            &ScheduleAction::Drag {
                new_start: Some(5000),
                new_finish: None,
            },
        )
        .unwrap();
        assert_eq!(
            p.spans[&id(3)],
            Span {
                start: 5000,
                end: 5100
            }
        );
        assert_eq!(
            p.spans[&id(4)],
            Span {
                start: 5100,
                end: 5150
            }
        );
        assert_eq!(
            p.spans[&id(1)],
            Span {
                start: 5000,
                end: 5150
            }
        );
    }

    #[test]
    fn reschedule_without_anything_is_refused() {
        let mut p = plan();
        assert!(apply(&mut p, id(3), &ScheduleAction::Reschedule).is_err());
        assert!(apply(&mut p, id(9), &ScheduleAction::Reschedule).is_err());
        assert!(apply(&mut p, id(3), &ScheduleAction::Schedule { new_start: -1 }).is_err());
    }

    #[test]
    fn cycles() {
        let edges = vec![(id(1), id(2)), (id(2), id(3))];
        assert!(creates_cycle(&edges, id(3), id(1)));
        assert!(creates_cycle(&edges, id(2), id(2)));
        assert!(!creates_cycle(&edges, id(1), id(3)));
    }

    /// Order 1 with phase A (2: steps 3 → 4) before phase B (5: steps 6, 7).
    fn phases() -> Plan {
        let mut p = plan();
        p.parent.insert(id(5), Some(id(1)));
        p.parent.insert(id(6), Some(id(5)));
        p.parent.insert(id(7), Some(id(5)));
        p.durations.insert(id(6), 10);
        p.durations.insert(id(7), 20);
        p.deps.push((id(2), id(5)));
        p
    }

    #[test]
    fn a_dependency_between_containers_constrains_their_descendants() {
        let mut p = phases();
        apply(&mut p, id(3), &ScheduleAction::Schedule { new_start: 1000 }).unwrap();
        // A step of B asked to start before A ends starts when A ends.
        apply(&mut p, id(6), &ScheduleAction::Schedule { new_start: 0 }).unwrap();
        assert_eq!(
            p.spans[&id(6)],
            Span {
                start: 1100,
                end: 1110
            }
        );
        assert_eq!(
            p.spans[&id(5)],
            Span {
                start: 1100,
                end: 1110
            }
        );
        // Reschedule of a step of B starts it when A ends (A is its ancestor's predecessor).
        apply(&mut p, id(7), &ScheduleAction::Schedule { new_start: 5000 }).unwrap();
        apply(&mut p, id(7), &ScheduleAction::Reschedule).unwrap();
        assert_eq!(
            p.spans[&id(7)],
            Span {
                start: 1100,
                end: 1120
            }
        );
        // A longer A pushes everything under B.
        apply(&mut p, id(4), &ScheduleAction::Schedule { new_start: 2000 }).unwrap();
        assert_eq!(
            p.spans[&id(2)],
            Span {
                start: 1000,
                end: 2050
            }
        );
        assert_eq!(
            p.spans[&id(6)],
            Span {
                start: 2050,
                end: 2060
            }
        );
        assert_eq!(
            p.spans[&id(7)],
            Span {
                start: 2050,
                end: 2070
            }
        );
        assert_eq!(
            p.spans[&id(5)],
            Span {
                start: 2050,
                end: 2070
            }
        );
        assert_eq!(
            p.spans[&id(1)],
            Span {
                start: 1000,
                end: 2070
            }
        );
        // Dragging B earlier than A's end keeps it after A.
        apply(
            &mut p,
            id(5),
            &ScheduleAction::Drag {
                new_start: Some(0),
                new_finish: None,
            },
        )
        .unwrap();
        assert_eq!(
            p.spans[&id(5)],
            Span {
                start: 2050,
                end: 2070
            }
        );
        // Dragging A later moves B's steps with it, keeping their offsets.
        apply(
            &mut p,
            id(2),
            &ScheduleAction::Drag {
                new_start: Some(3000),
                new_finish: None,
            },
        )
        .unwrap();
        assert_eq!(
            p.spans[&id(2)],
            Span {
                start: 3000,
                end: 4050
            }
        );
        assert_eq!(
            p.spans[&id(6)],
            Span {
                start: 4050,
                end: 4060
            }
        );
        assert_eq!(
            p.spans[&id(7)],
            Span {
                start: 4050,
                end: 4070
            }
        );
    }

    #[test]
    fn cycles_through_containers() {
        let p = phases();
        let mut anc: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        for n in p.parent.keys() {
            let mut line = vec![*n];
            let mut x = *n;
            while let Some(Some(up)) = p.parent.get(&x) {
                line.push(*up);
                x = *up;
            }
            anc.insert(*n, line);
        }
        let edges = p.deps.clone();
        // A node and its own container.
        assert!(creates_cycle_in_tree(&edges, &anc, id(3), id(2)));
        assert!(creates_cycle_in_tree(&edges, &anc, id(1), id(6)));
        assert!(creates_cycle_in_tree(&edges, &anc, id(6), id(6)));
        // A step of B before a step of A, while A is before B.
        assert!(creates_cycle_in_tree(&edges, &anc, id(6), id(3)));
        assert!(creates_cycle_in_tree(&edges, &anc, id(5), id(4)));
        assert!(creates_cycle_in_tree(&edges, &anc, id(7), id(2)));
        // Consistent ones.
        assert!(!creates_cycle_in_tree(&edges, &anc, id(4), id(6)));
        assert!(!creates_cycle_in_tree(&edges, &anc, id(6), id(7)));
        assert!(!creates_cycle_in_tree(&edges, &anc, id(3), id(7)));
    }

    /// A random tree: node 0 is the order, node `i` hangs under one of the nodes before it.
    fn random_plan(parents: &[usize], durations: &[i64], deps: &[(usize, usize)]) -> Plan {
        let mut p = Plan::default();
        p.parent.insert(id(0), None);
        for (i, par) in parents.iter().enumerate() {
            let n = i as u128 + 1;
            p.parent.insert(id(n), Some(id((*par % (i + 1)) as u128)));
            p.durations.insert(id(n), durations[i % durations.len()]);
        }
        let mut anc: HashMap<Uuid, Vec<Uuid>> = HashMap::new();
        for n in p.parent.keys() {
            let mut line = vec![*n];
            let mut x = *n;
            while let Some(Some(up)) = p.parent.get(&x) {
                line.push(*up);
                x = *up;
            }
            anc.insert(*n, line);
        }
        let count = parents.len() + 1;
        for (a, b) in deps {
            let (a, b) = (id((a % count) as u128), id((b % count) as u128));
            if !creates_cycle_in_tree(&p.deps, &anc, a, b) && !p.deps.contains(&(a, b)) {
                p.deps.push((a, b));
            }
        }
        p
    }

    fn under(plan: &Plan, node: Uuid, top: Uuid) -> bool {
        let mut x = Some(node);
        let mut steps = 0;
        while let Some(n) = x {
            if n == top {
                return true;
            }
            steps += 1;
            if steps > plan.parent.len() {
                return false;
            }
            x = plan.parent.get(&n).copied().flatten();
        }
        false
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Random trees with random acyclic dependencies at all levels: after any sequence of
        /// schedule actions (and reschedules) on any nodes, every scheduled node under a
        /// successor starts no earlier than its predecessor ends, and every node with
        /// scheduled children spans exactly them.
        #[test]
        fn constraints_hold_at_every_level(
            parents in proptest::collection::vec(any::<usize>(), 1..12),
            durations in proptest::collection::vec(0i64..300, 1..5),
            deps in proptest::collection::vec((any::<usize>(), any::<usize>()), 0..10),
            actions in proptest::collection::vec((any::<usize>(), 0i64..10_000, 0i64..500, 0u8..6), 1..25),
        ) {
            let mut p = random_plan(&parents, &durations, &deps);
            let count = parents.len() + 1;
            let kids = p.children();
            for (n, t, d, k) in actions {
                let target = id((n % count) as u128);
                let action = match k {
                    0 => ScheduleAction::Schedule { new_start: t },
                    1 => ScheduleAction::Drag { new_start: None, new_finish: Some(t + 1000) },
                    2 => ScheduleAction::Drag { new_start: Some(t), new_finish: None },
                    3 => ScheduleAction::Shrink { new_duration: d, new_start: Some(t), new_finish: None },
                    4 => ScheduleAction::Expand { new_duration: d, new_start: None, new_finish: Some(t + 1000) },
                    _ => ScheduleAction::Reschedule,
                };
                let before = p.clone();
                if apply(&mut p, target, &action).is_err() {
                    // A refused action writes nothing (the server rolls its transaction back).
                    p = before;
                }
                for (a, b) in &p.deps {
                    let Some(x) = p.spans.get(a).copied() else { continue };
                    for (m, y) in &p.spans {
                        if under(&p, *m, *b) {
                            prop_assert!(y.start >= x.end, "{a} -> {b}: {m} {x:?} {y:?}");
                        }
                    }
                }
                for (node, list) in &kids {
                    let spans: Vec<Span> = list.iter().filter_map(|k| p.spans.get(k).copied()).collect();
                    if let Some(env) = envelope(&spans) {
                        prop_assert_eq!(p.spans.get(node).copied(), Some(env), "{} spans its children", node);
                    }
                }
                for s in p.spans.values() { prop_assert!(s.start <= s.end); }
            }
        }
    }

    proptest! {
        /// After any sequence of actions on a chain of steps, every dependency holds and every
        /// parent spans its children.
        #[test]
        fn constraints_hold(actions in proptest::collection::vec((0u128..5, 0i64..10_000, 0i64..500, 0u8..5), 1..25)) {
            let mut p = Plan::default();
            p.parent.insert(id(100), None);
            for n in 0..5u128 {
                p.parent.insert(id(n), Some(id(100)));
                p.durations.insert(id(n), 60);
            }
            p.deps = vec![(id(0), id(1)), (id(1), id(2)), (id(0), id(3))];
            for (n, t, d, k) in actions {
                let action = match k {
                    0 => ScheduleAction::Schedule { new_start: t },
                    1 => ScheduleAction::Drag { new_start: None, new_finish: Some(t + 1000) },
                    2 => ScheduleAction::Shrink { new_duration: d, new_start: Some(t), new_finish: None },
                    3 => ScheduleAction::Expand { new_duration: d, new_start: None, new_finish: Some(t + 1000) },
                    _ => ScheduleAction::Reschedule,
                };
                let _ = apply(&mut p, id(n), &action);
                for (a, b) in &p.deps {
                    if let (Some(x), Some(y)) = (p.spans.get(a), p.spans.get(b)) {
                        prop_assert!(y.start >= x.end, "{a} -> {b}: {x:?} {y:?}");
                    }
                }
                let kids: Vec<Span> = (0..5).filter_map(|n| p.spans.get(&id(n)).copied()).collect();
                prop_assert_eq!(p.spans.get(&id(100)).copied(), envelope(&kids));
                for s in p.spans.values() { prop_assert!(s.start <= s.end); }
            }
        }
    }
}
