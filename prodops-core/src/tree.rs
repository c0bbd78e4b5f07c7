//! The computed fields of a deliverable (spec 2.1 `computed`) as functions of the tree, and the
//! one algorithm that keeps them true after a change.
//!
//! A computed field is either *inherited* (a function of the node and its ancestors: breadcrumbs,
//! root type, phase, shop, project, effective due date) or *aggregated* (a function of the node
//! and its subtree: contained stages and phases, the work frontier, workers, tags, alerts).
//! [`compute`] derives both for one node from its parent and its children, whose own computed
//! fields are taken as correct. [`refresh`] applies it after a change: the changed node, then its
//! subtree only while the inherited part of a node changes, then its ancestors only while a
//! node's record changes. So a progress action on a leaf costs O(depth × siblings), not the size
//! of the tree. [`recompute_all`] is the from-scratch definition the property tests compare with.
//!
//! Meanings where the specification says "not shown" are in `docs/deliverables.md`.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;
use uuid::Uuid;

use crate::deliverable::{
    AlertType, ChildSummary, Computed, Deliverable, DeliverableType, ProgressStatus,
};

/// The part of a node's computed fields its children read (the inherited part).
#[derive(Debug, Clone, PartialEq)]
pub struct Inherited {
    pub root_type: Option<DeliverableType>,
    pub full_name: Vec<String>,
    pub full_path: Vec<String>,
    pub phases_path: Vec<String>,
    pub phase: Option<String>,
    pub shop_id: Option<Uuid>,
    pub project_id: Option<Uuid>,
    pub effective_due_date: Option<String>,
    /// When the effective due date passes ([`crate::alerts::due_instant`]), as a stamp.
    pub effective_due_at: Option<String>,
}

impl Inherited {
    /// The inherited part of a node whose computed fields are up to date.
    pub fn of(node: &Deliverable) -> Inherited {
        let c = &node.computed;
        Inherited {
            root_type: c.root_type,
            full_name: c.full_name.clone(),
            full_path: c.full_path.clone(),
            phases_path: c.phases_path.clone(),
            phase: c.phase.clone(),
            shop_id: c.shop_id,
            project_id: c.project_id,
            effective_due_date: c.effective_due_date.clone(),
            effective_due_at: c.effective_due_at.clone(),
        }
    }
}

/// A UUID held as text under `data.<key>`.
pub fn data_uuid(node: &Deliverable, key: &str) -> Option<Uuid> {
    node.data
        .get(key)
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}

/// A date (`YYYY-MM-DD`, or the date of a date-time) held as text under `data.<key>`.
pub fn data_date(node: &Deliverable, key: &str) -> Option<String> {
    node.data
        .get(key)
        .and_then(Value::as_str)
        .and_then(parse_date)
        .map(|d| d.format("%Y-%m-%d").to_string())
}

fn parse_date(text: &str) -> Option<NaiveDate> {
    let text = text.trim();
    NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .ok()
        .or_else(|| {
            chrono::DateTime::parse_from_rfc3339(text)
                .ok()
                .map(|t| t.with_timezone(&chrono::Utc).date_naive())
        })
}

/// UUIDs listed under `data.workerIds`.
pub fn worker_ids(node: &Deliverable) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = node
        .data
        .get("workerIds")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().and_then(|s| Uuid::parse_str(s).ok()))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids.dedup();
    ids
}

/// Tags listed under `data.tags`.
pub fn tags(node: &Deliverable) -> Vec<String> {
    let mut tags: Vec<String> = node
        .data
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(|s| s.trim().to_string()))
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default();
    tags.sort();
    tags.dedup();
    tags
}

/// The progress status of a node: `todo` when its progress was never set (nothing holds it
/// back: a successor of a dependency gets a stored `waiting` when the dependency is created,
/// docs/deliverables.md "Readiness").
pub fn status(node: &Deliverable) -> ProgressStatus {
    crate::progress::status_of(node.progress.as_ref())
}

/// Whether a node is held back from the work frontier: its status is `waiting` (a predecessor
/// has released nothing yet, or every child of it waits).
pub fn held_back(node: &Deliverable) -> bool {
    status(node) == ProgressStatus::Waiting
}

/// The inherited part of `node` given its parent (whose computed fields are up to date) and,
/// for a stage node, the shop of the stage resource it links.
pub fn inherit(
    node: &Deliverable,
    parent: Option<&Deliverable>,
    stage_shop: Option<Uuid>,
) -> Inherited {
    let base = parent.map(Inherited::of);
    let mut full_name = base
        .as_ref()
        .map(|b| b.full_name.clone())
        .unwrap_or_default();
    full_name.push(node.name.clone());
    let mut full_path = base
        .as_ref()
        .map(|b| b.full_path.clone())
        .unwrap_or_default();
    full_path.push(node.id.to_string());
    let mut phases_path = base
        .as_ref()
        .map(|b| b.phases_path.clone())
        .unwrap_or_default();
    let is_phase = node.kind == DeliverableType::Phase;
    if is_phase {
        phases_path.push(node.name.clone());
    }
    let own_due = data_date(node, "dueDate");
    let own_due_at = node
        .data
        .get("dueDate")
        .and_then(Value::as_str)
        .and_then(crate::alerts::due_instant)
        .map(crate::alerts::stamp);
    let inherited_due = own_due.is_none();
    Inherited {
        root_type: match &base {
            Some(b) => b.root_type,
            None => Some(node.kind),
        },
        full_name,
        full_path,
        phases_path,
        phase: if is_phase {
            Some(node.name.clone())
        } else {
            base.as_ref().and_then(|b| b.phase.clone())
        },
        shop_id: if node.kind == DeliverableType::Stage && stage_shop.is_some() {
            stage_shop
        } else {
            base.as_ref().and_then(|b| b.shop_id)
        },
        project_id: data_uuid(node, "projectId").or(base.as_ref().and_then(|b| b.project_id)),
        effective_due_at: if inherited_due {
            base.as_ref().and_then(|b| b.effective_due_at.clone())
        } else {
            own_due_at
        },
        effective_due_date: own_due.or(base.and_then(|b| b.effective_due_date)),
    }
}

/// Facts about one node from outside the tree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodeFacts {
    /// For a stage node, the shop of the stage resource it links.
    pub stage_shop: Option<Uuid>,
    /// Workers with an open work session or plan on the node (work-session assignments).
    pub session_workers: Vec<Uuid>,
}

/// A node's own part of its aggregated fields: what it adds to them whatever its children.
struct Own {
    stage: Option<Uuid>,
    status: ProgressStatus,
    held_back: bool,
    workers: Vec<Uuid>,
    tags: Vec<String>,
}

impl Own {
    fn of(node: &Deliverable, facts: &NodeFacts) -> Own {
        let mut workers = worker_ids(node);
        workers.extend(facts.session_workers.iter().copied());
        workers.sort();
        workers.dedup();
        Own {
            stage: if node.kind == DeliverableType::Stage {
                data_uuid(node, "stageId")
            } else {
                None
            },
            status: status(node),
            held_back: held_back(node),
            workers,
            tags: tags(node),
        }
    }
}

/// The aggregated part of a node's computed fields, its own part included: what
/// [`compute`] gathers from all the children and [`compute_incremental`] from the stored
/// fields and the children that changed.
struct Rollup {
    stage_ids: BTreeSet<Uuid>,
    phase_names: BTreeSet<String>,
    current_stage_ids: BTreeSet<Uuid>,
    current_phase_names: BTreeSet<String>,
    workers: BTreeSet<Uuid>,
    tags: BTreeSet<String>,
    current_children: Vec<ChildSummary>,
    late_at: Option<String>,
    at_risk_until: Option<String>,
    on_hold: bool,
}

/// The entry of `child` in its parent's `currentChildren`.
fn summary(child: &Deliverable) -> ChildSummary {
    ChildSummary {
        id: child.id,
        name: child.name.clone(),
        kind: child.kind,
        status: status(child),
        percentage: child.progress.as_ref().map_or(0.0, |p| p.percentage),
    }
}

/// The computed fields of `node`: the inherited part from its parent, the aggregated part from
/// its children (in sibling order; archived children are left out); the alerts as of `now`
/// (the instants they derive from do not depend on it, see [`crate::alerts`]).
pub fn compute(
    node: &Deliverable,
    parent: Option<&Deliverable>,
    children: &[&Deliverable],
    facts: &NodeFacts,
    now: DateTime<Utc>,
) -> Computed {
    let inh = inherit(node, parent, facts.stage_shop);
    let own = Own::of(node, facts);
    let children: Vec<&Deliverable> = children
        .iter()
        .copied()
        .filter(|c| !c.is_archived)
        .collect();

    let mut stage_ids = BTreeSet::new();
    let mut phase_names = BTreeSet::new();
    let mut current_stage_ids = BTreeSet::new();
    let mut current_phase_names = BTreeSet::new();
    let mut combined_workers = BTreeSet::new();
    let mut combined_tags = BTreeSet::new();
    stage_ids.extend(own.stage);
    if node.kind == DeliverableType::Phase {
        phase_names.insert(node.name.clone());
    }
    combined_workers.extend(own.workers.iter().copied());
    combined_tags.extend(own.tags.iter().cloned());

    if node.kind == DeliverableType::Stage {
        if own.status != ProgressStatus::Done && !own.held_back {
            current_stage_ids.extend(own.stage);
        }
    } else if !own.held_back {
        // Stage nodes of one container are worked in sibling order: the first one not done is
        // the current one (none while it waits for a predecessor). Other children contribute
        // their own frontier (empty while they wait).
        let mut first_open_stage_seen = false;
        for child in &children {
            if child.kind == DeliverableType::Stage {
                if !first_open_stage_seen && status(child) != ProgressStatus::Done {
                    first_open_stage_seen = true;
                    current_stage_ids.extend(child.computed.current_stage_ids.iter().copied());
                }
            } else {
                current_stage_ids.extend(child.computed.current_stage_ids.iter().copied());
            }
        }
    }
    let mut current_children = Vec::with_capacity(children.len());
    let mut child_late_at: Option<&str> = None;
    let mut child_at_risk_until: Option<&str> = None;
    let mut child_on_hold = false;
    for child in &children {
        let c = &child.computed;
        stage_ids.extend(c.contained_stage_ids.iter().copied());
        phase_names.extend(c.contained_phase_names.iter().cloned());
        if !own.held_back {
            current_phase_names.extend(c.current_phase_names.iter().cloned());
        }
        combined_workers.extend(c.combined_worker_ids.iter().copied());
        combined_tags.extend(c.combined_tag_ids.iter().cloned());
        child_late_at = earliest(child_late_at, c.late_at.as_deref());
        child_at_risk_until = latest(child_at_risk_until, c.at_risk_until.as_deref());
        child_on_hold |= c.alert_type == AlertType::OnHold;
        current_children.push(summary(child));
    }
    if node.kind == DeliverableType::Phase && !current_stage_ids.is_empty() {
        current_phase_names.insert(node.name.clone());
    }

    let mine = own_instants(node, inh.effective_due_at.as_deref());
    let rollup = Rollup {
        stage_ids,
        phase_names,
        current_stage_ids,
        current_phase_names,
        workers: combined_workers,
        tags: combined_tags,
        current_children,
        late_at: earliest(mine.late_at.as_deref(), child_late_at).map(str::to_string),
        at_risk_until: latest(mine.at_risk_until.as_deref(), child_at_risk_until)
            .map(str::to_string),
        on_hold: own.status == ProgressStatus::OnHold || child_on_hold,
    };
    assemble(node, inh, own, rollup, now)
}

/// The computed fields of `node` from its inherited part, its own part and its rollup.
fn assemble(
    node: &Deliverable,
    inh: Inherited,
    own: Own,
    r: Rollup,
    now: DateTime<Utc>,
) -> Computed {
    let own_due_date = data_date(node, "dueDate");
    let effective_due_date_is_inherited =
        own_due_date.is_none() && inh.effective_due_date.is_some();
    let done = own.status == ProgressStatus::Done;
    let date = node
        .schedule
        .as_ref()
        .map(|s| s.end_date.date_naive().format("%Y-%m-%d").to_string());
    let alerts = crate::alerts::as_of(
        &crate::alerts::Basis {
            on_hold: r.on_hold,
            done,
            effective_due_at: inh.effective_due_at.as_deref(),
            late_at: r.late_at.as_deref(),
            at_risk_until: r.at_risk_until.as_deref(),
        },
        &crate::alerts::AsOf::at(now),
    );
    Computed {
        root_type: inh.root_type,
        full_name: inh.full_name,
        full_path: inh.full_path,
        shop_id: inh.shop_id,
        phases_path: inh.phases_path,
        phase: inh.phase,
        is_leaf: r.current_children.is_empty(),
        current_children: r.current_children,
        contained_stage_ids: r.stage_ids.into_iter().collect(),
        contained_phase_names: r.phase_names.into_iter().collect(),
        current_stage_ids: r.current_stage_ids.into_iter().collect(),
        current_phase_names: r.current_phase_names.into_iter().collect(),
        combined_worker_ids: r.workers.into_iter().collect(),
        combined_tag_ids: r.tags.into_iter().collect(),
        worker_ids: own.workers,
        tags: own.tags,
        project_id: inh.project_id,
        date,
        is_at_risk: alerts.is_at_risk,
        is_late: alerts.is_late,
        effective_due_date: inh.effective_due_date,
        effective_due_date_is_inherited,
        effective_due_date_is_late: alerts.effective_due_date_is_late,
        alert_type: alerts.alert_type,
        alert_type_ordinal: alerts.alert_type.ordinal(),
        effective_due_at: inh.effective_due_at,
        late_at: r.late_at,
        at_risk_until: r.at_risk_until,
    }
}

/// How one child of a node changed since the node's stored computed fields were computed
/// ([`compute_incremental`]).
#[derive(Debug, Clone, Copy)]
pub enum ChildChange<'a> {
    /// A child created since: after every child the stored fields know, in the order given
    /// (a new node is last among its siblings).
    Created(&'a Deliverable),
    /// A child the stored fields were computed with as `old`, now `new`.
    Changed {
        old: &'a Deliverable,
        new: &'a Deliverable,
    },
}

/// Whether every element of `a` (sorted) is in `b` (sorted).
fn subset<T: Ord>(a: &[T], b: &[T]) -> bool {
    let mut b = b.iter();
    a.iter().all(|x| b.by_ref().any(|y| y == x))
}

/// `a <= b` for instants where null is never (later than any).
fn not_later(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(a), Some(b)) => a <= b,
    }
}

/// The first stage child not done, in sibling order: the one whose frontier counts.
fn first_open_stage(children: &[ChildSummary]) -> Option<Uuid> {
    children
        .iter()
        .find(|c| c.kind == DeliverableType::Stage && c.status != ProgressStatus::Done)
        .map(|c| c.id)
}

/// The computed fields of `node` from its STORED computed fields and the changes of some of its
/// children (each child at most once; the others are as the stored fields know them), without
/// reading the other children: what [`compute`] over all of them gives, or `None` when that
/// cannot be told from these alone and every child must be read. It can be told when every
/// child's contribution only grew (it was created; a stage id, phase name, worker or tag joined
/// its sets; its lateAt moved earlier or its atRiskUntil later, or it was not the one that
/// set the node's; it went on hold), with the node's own record and inherited part as the
/// stored fields know them and the work frontier (the first stage child not done) the same
/// child or none before. It cannot when a child's contribution shrank, a child moved in or out,
/// was archived or restored, or changed type, or the frontier moved from one child to another;
/// a sibling reorder is not a change of a child and must not come here.
pub fn compute_incremental(
    node: &Deliverable,
    parent: Option<&Deliverable>,
    changes: &[ChildChange<'_>],
    facts: &NodeFacts,
    now: DateTime<Utc>,
) -> Option<Computed> {
    let inh = inherit(node, parent, facts.stage_shop);
    if inh != Inherited::of(node) {
        return None;
    }
    let own = Own::of(node, facts);
    let c = &node.computed;
    if own.workers != c.worker_ids || own.tags != c.tags {
        return None;
    }
    let own_on_hold = own.status == ProgressStatus::OnHold;
    let mut r = Rollup {
        stage_ids: c.contained_stage_ids.iter().copied().collect(),
        phase_names: c.contained_phase_names.iter().cloned().collect(),
        current_stage_ids: c.current_stage_ids.iter().copied().collect(),
        current_phase_names: c.current_phase_names.iter().cloned().collect(),
        workers: c.combined_worker_ids.iter().copied().collect(),
        tags: c.combined_tag_ids.iter().cloned().collect(),
        current_children: c.current_children.clone(),
        late_at: c.late_at.clone(),
        at_risk_until: c.at_risk_until.clone(),
        on_hold: c.alert_type == AlertType::OnHold,
    };
    let frontier_before = first_open_stage(&r.current_children);
    let me = Some(node.id);
    let mut slots: Option<HashMap<Uuid, usize>> = None;
    let mut seen = std::collections::HashSet::new();
    // The children whose new contribution joins the rollup, and the old record of each
    // changed one.
    let mut joined: Vec<&Deliverable> = Vec::new();
    let mut olds: HashMap<Uuid, &Deliverable> = HashMap::new();
    for change in changes {
        match *change {
            ChildChange::Created(new) => {
                if new.parent_id != me || !seen.insert(new.id) {
                    return None;
                }
                let slots = slots.get_or_insert_with(|| slot_index(&r.current_children));
                if slots.contains_key(&new.id) {
                    return None;
                }
                if new.is_archived {
                    continue;
                }
                slots.insert(new.id, r.current_children.len());
                r.current_children.push(summary(new));
                joined.push(new);
            }
            ChildChange::Changed { old, new } => {
                if old.id != new.id
                    || old.parent_id != me
                    || new.parent_id != me
                    || !seen.insert(new.id)
                {
                    return None;
                }
                if old.is_archived && new.is_archived {
                    continue;
                }
                if old.is_archived || new.is_archived || old.kind != new.kind {
                    return None;
                }
                let slots = slots.get_or_insert_with(|| slot_index(&r.current_children));
                let slot = *slots.get(&old.id)?;
                // The stored fields must know the child as `old`.
                if r.current_children[slot] != summary(old) {
                    return None;
                }
                let (o, n) = (&old.computed, &new.computed);
                let grew = subset(&o.contained_stage_ids, &n.contained_stage_ids)
                    && subset(&o.contained_phase_names, &n.contained_phase_names)
                    && subset(&o.combined_worker_ids, &n.combined_worker_ids)
                    && subset(&o.combined_tag_ids, &n.combined_tag_ids)
                    && (own.held_back || subset(&o.current_phase_names, &n.current_phase_names))
                    && (own.held_back
                        || node.kind == DeliverableType::Stage
                        || old.kind == DeliverableType::Stage
                        || subset(&o.current_stage_ids, &n.current_stage_ids))
                    // Its lateAt moved earlier, or it was later than the node's (the node's
                    // comes from its own part or another child).
                    && (not_later(n.late_at.as_deref(), o.late_at.as_deref())
                        || !not_later(o.late_at.as_deref(), c.late_at.as_deref()))
                    // Its atRiskUntil moved later, or it was earlier than the node's.
                    && (n.at_risk_until >= o.at_risk_until || o.at_risk_until < c.at_risk_until)
                    && (own_on_hold
                        || o.alert_type != AlertType::OnHold
                        || n.alert_type == AlertType::OnHold);
                if !grew {
                    return None;
                }
                r.current_children[slot] = summary(new);
                joined.push(new);
                olds.insert(new.id, old);
            }
        }
    }
    if node.kind != DeliverableType::Stage && !own.held_back {
        let frontier = first_open_stage(&r.current_children);
        if frontier != frontier_before {
            // The frontier moved: fine from none to a child (it only adds), not from one
            // child to another or to none (the first one's stage ids may leave).
            if frontier_before.is_some() || !joined.iter().any(|j| Some(j.id) == frontier) {
                return None;
            }
        } else if let Some(f) = frontier
            && let Some(old) = olds.get(&f)
        {
            let new = joined.iter().find(|j| j.id == f)?;
            if !subset(
                &old.computed.current_stage_ids,
                &new.computed.current_stage_ids,
            ) {
                return None;
            }
        }
        for j in &joined {
            if j.kind != DeliverableType::Stage || Some(j.id) == frontier {
                r.current_stage_ids
                    .extend(j.computed.current_stage_ids.iter().copied());
            }
        }
    }
    for j in &joined {
        let n = &j.computed;
        r.stage_ids.extend(n.contained_stage_ids.iter().copied());
        r.phase_names
            .extend(n.contained_phase_names.iter().cloned());
        if !own.held_back {
            r.current_phase_names
                .extend(n.current_phase_names.iter().cloned());
        }
        r.workers.extend(n.combined_worker_ids.iter().copied());
        r.tags.extend(n.combined_tag_ids.iter().cloned());
        r.late_at = earliest(r.late_at.as_deref(), n.late_at.as_deref()).map(str::to_string);
        r.at_risk_until =
            latest(r.at_risk_until.as_deref(), n.at_risk_until.as_deref()).map(str::to_string);
        r.on_hold |= n.alert_type == AlertType::OnHold;
    }
    if node.kind == DeliverableType::Phase && !r.current_stage_ids.is_empty() {
        r.current_phase_names.insert(node.name.clone());
    }
    Some(assemble(node, inh, own, r, now))
}

/// Each child's position in a `currentChildren` list.
fn slot_index(children: &[ChildSummary]) -> HashMap<Uuid, usize> {
    children
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id, i))
        .collect()
}

/// A node's own alert instants, without its children's (which [`compute`] adds).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnInstants {
    /// When its schedule ends, as a stamp (`None` unscheduled).
    pub end_at: Option<String>,
    /// From when it is late: not done, the earlier of its effective due date passing and its
    /// schedule's end.
    pub late_at: Option<String>,
    /// Until when it is at risk: not done and scheduled to end after its effective due date,
    /// until that due date passes.
    pub at_risk_until: Option<String>,
}

/// The own instants of `node` whose effective due date passes at `effective_due_at` (a
/// stamp). Instants are stamps (fixed width), so their text order is their time order.
pub fn own_instants(node: &Deliverable, effective_due_at: Option<&str>) -> OwnInstants {
    let done = status(node) == ProgressStatus::Done;
    let end_at = node
        .schedule
        .as_ref()
        .map(|s| crate::alerts::stamp(s.end_date));
    let end = end_at.as_deref();
    let late_at = if done {
        None
    } else {
        earliest(effective_due_at, end).map(str::to_string)
    };
    let at_risk = !done && matches!((end, effective_due_at), (Some(e), Some(d)) if e > d);
    let at_risk_until = at_risk
        .then_some(effective_due_at)
        .flatten()
        .map(str::to_string);
    OwnInstants {
        end_at,
        late_at,
        at_risk_until,
    }
}

/// The earlier of two stamps (null: never).
fn earliest<'a>(a: Option<&'a str>, b: Option<&'a str>) -> Option<&'a str> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The later of two stamps (null: none).
fn latest<'a>(a: Option<&'a str>, b: Option<&'a str>) -> Option<&'a str> {
    a.max(b)
}

/// The root a node hangs under, given its parent: null for a node without parent.
pub fn root_parent_id(parent: Option<&Deliverable>) -> Option<Uuid> {
    parent.map(|p| p.root_parent_id.unwrap_or(p.id))
}

/// What [`refresh`] needs to read and write. The server implements it over one transaction;
/// the tests over memory.
pub trait TreeStore {
    type Error;
    /// One node (archived or not).
    fn node(&mut self, id: Uuid) -> Result<Deliverable, Self::Error>;
    /// One node, shared: a store that caches the records it read hands out its copy instead
    /// of a new one (by default a copy of [`TreeStore::node`]). A refresh reads a parent once
    /// for each changed child, and a parent's record grows with its children, so copying it
    /// each time cost more than the rest of a bulk write's refresh.
    fn node_shared(&mut self, id: Uuid) -> Result<Arc<Deliverable>, Self::Error> {
        self.node(id).map(Arc::new)
    }
    /// The direct children of a node, in sibling order (shared: a store may hand out the
    /// records it caches without copying them).
    fn children(&mut self, id: Uuid) -> Result<Vec<Arc<Deliverable>>, Self::Error>;
    /// Every descendant of a node (not the node), parents before children.
    fn descendants(&mut self, id: Uuid) -> Result<Vec<Deliverable>, Self::Error>;
    /// The shop of a stage resource.
    fn stage_shop(&mut self, stage_id: Uuid) -> Result<Option<Uuid>, Self::Error>;
    /// The workers with an open work session or plan on a node.
    fn session_workers(&mut self, id: Uuid) -> Result<Vec<Uuid>, Self::Error>;
    /// Tells the store that [`TreeStore::session_workers`] is about to be asked for each of
    /// `ids` (a subtree refresh), so that it may read them all at once; by default nothing.
    fn prefetch_session_workers(&mut self, _ids: &[Uuid]) -> Result<(), Self::Error> {
        Ok(())
    }
    /// Tells the store that [`TreeStore::node`], [`TreeStore::children`] and
    /// [`TreeStore::session_workers`] are about to be asked for each of `ids` (the written
    /// records of a refresh), so that it may read them all at once; by default the session
    /// workers only.
    fn prefetch_nodes(&mut self, ids: &[Uuid]) -> Result<(), Self::Error> {
        self.prefetch_session_workers(ids)
    }
    /// Tells the store that [`refresh`] is done with the children of `id` it asked for
    /// ([`TreeStore::children`]), so that it may drop those it holds only for that (a refresh
    /// then holds one parent's children at a time); by default nothing.
    fn release_children(&mut self, _id: Uuid) -> Result<(), Self::Error> {
        Ok(())
    }
    /// Stores a node whose `computed` or `rootParentId` changed.
    fn save(&mut self, node: &Deliverable) -> Result<(), Self::Error>;
}

/// For a stage node, the shop of the stage resource it links.
fn stage_shop_of<S: TreeStore>(
    store: &mut S,
    node: &Deliverable,
) -> Result<Option<Uuid>, S::Error> {
    match (node.kind, data_uuid(node, "stageId")) {
        (DeliverableType::Stage, Some(stage)) => store.stage_shop(stage),
        _ => Ok(None),
    }
}

fn facts_of<S: TreeStore>(store: &mut S, node: &Deliverable) -> Result<NodeFacts, S::Error> {
    let stage_shop = stage_shop_of(store, node)?;
    let mut session_workers = store.session_workers(node.id)?;
    session_workers.sort();
    session_workers.dedup();
    Ok(NodeFacts {
        stage_shop,
        session_workers,
    })
}

/// Recomputes `node` in place from its parent and children (computed fields and
/// `rootParentId`); whether anything changed. The server runs it on a record before writing it.
pub fn prepare<S: TreeStore>(
    store: &mut S,
    node: &mut Deliverable,
    parent: Option<&Deliverable>,
    children: &[&Deliverable],
    now: DateTime<Utc>,
) -> Result<bool, S::Error> {
    let facts = facts_of(store, node)?;
    let computed = compute(node, parent, children, &facts, now);
    let root = root_parent_id(parent);
    let changed = computed != node.computed || root != node.root_parent_id;
    node.computed = computed;
    node.root_parent_id = root;
    Ok(changed)
}

/// One written record, with what it was before (`None` when it was created).
#[derive(Debug, Clone)]
pub struct Change {
    pub id: Uuid,
    pub old: Option<Deliverable>,
}

/// Makes the computed fields (and `rootParentId`) of the rest of the tree true again after the
/// records of `changes` were written (created, edited, moved, archived, their progress or
/// schedule changed): the subtree of a node whose inherited part changed (a rename, a move, a
/// new due date), and the ancestors of every changed node (old and new ones after a move).
/// Returns how many records were saved.
///
/// `old` is the record as it was before the writes (`None` for a record created without any
/// later change); the stored computed fields of every node not among `changes` must be true of
/// the tree as it was before them. The changes may also be a whole batch of writes whose
/// refresh was put off until the batch's end ([`refresh_batch`]); then every affected ancestor
/// is recomputed once for the batch, not once per written record.
///
/// An ancestor none of `changes` names is recomputed from its stored fields and the children
/// that changed below it ([`compute_incremental`]) when that can be told, without reading its
/// other children (a batch of new nodes under large parents reads none of their siblings);
/// otherwise from all its children, which the store may drop once that parent is done
/// ([`TreeStore::release_children`]).
pub fn refresh<S: TreeStore>(
    store: &mut S,
    changes: &[Change],
    now: DateTime<Utc>,
) -> Result<usize, S::Error> {
    let created: HashSet<Uuid> = changes
        .iter()
        .filter(|c| c.old.is_none())
        .map(|c| c.id)
        .collect();
    let changes: Vec<ChangeRef<'_>> = changes
        .iter()
        .map(|c| ChangeRef {
            id: c.id,
            old: c.old.as_ref(),
        })
        .collect();
    refresh_with(store, &changes, &created, now)
}

/// A [`Change`] borrowed from where its record is kept (the caller's changes, or a batch's
/// first states), so that a refresh copies no record to learn what it was.
#[derive(Clone, Copy)]
struct ChangeRef<'a> {
    id: Uuid,
    old: Option<&'a Deliverable>,
}

/// What [`refresh`] knows of the nodes it changed, for the ancestors it recomputes
/// incrementally ([`compute_incremental`]).
#[derive(Default)]
struct Touched<'a> {
    /// Each changed node's record as its parent's stored computed fields know it (`None`: it
    /// was created since), the first time it was seen: borrowed from the changes, or the
    /// ancestor's record before this refresh recomputed it.
    before: HashMap<Uuid, Option<Before<'a>>>,
    /// Per parent, its changed children in the order first seen (new ones in the order they
    /// were created, which is their sibling order).
    kids: HashMap<Uuid, Vec<Uuid>>,
    /// Nodes recomputed from all their children: their stored fields are not those of the
    /// tree before the changes (a written record, a node of a refreshed subtree), or a child
    /// moved in or out.
    full: HashSet<Uuid>,
}

/// A record as it was before a refresh, without a copy: borrowed from the changes, or shared
/// with the store's cache.
enum Before<'a> {
    Borrowed(&'a Deliverable),
    Shared(Arc<Deliverable>),
}

impl std::ops::Deref for Before<'_> {
    type Target = Deliverable;
    fn deref(&self) -> &Deliverable {
        match self {
            Before::Borrowed(d) => d,
            Before::Shared(d) => d,
        }
    }
}

impl<'a> Touched<'a> {
    fn note(&mut self, id: Uuid, parent: Option<Uuid>, before: Option<Before<'a>>) {
        if let std::collections::hash_map::Entry::Vacant(e) = self.before.entry(id) {
            e.insert(before);
            if let Some(p) = parent {
                self.kids.entry(p).or_default().push(id);
            }
        }
    }
}

/// [`refresh`] where `created` are the records of `changes` created by the writes (a batch's
/// creates count from their state as created, see [`Batch::changes`]).
fn refresh_with<S: TreeStore>(
    store: &mut S,
    changes: &[ChangeRef<'_>],
    created: &HashSet<Uuid>,
    now: DateTime<Utc>,
) -> Result<usize, S::Error> {
    let mut saved = 0;
    let mut chains: Vec<Uuid> = Vec::new();
    let mut touched = Touched::default();
    touched.full.extend(changes.iter().map(|c| c.id));
    if changes.len() > 1 {
        let ids: Vec<Uuid> = changes.iter().map(|c| c.id).collect();
        store.prefetch_nodes(&ids)?;
    }
    for change in changes {
        let mut node = store.node(change.id)?;
        let parent = match node.parent_id {
            Some(p) => Some(store.node_shared(p)?),
            None => None,
        };
        let children = store.children(change.id)?;
        let refs: Vec<&Deliverable> = children.iter().map(|c| &**c).collect();
        if prepare(store, &mut node, parent.as_deref(), &refs, now)? {
            store.save(&node)?;
            saved += 1;
        }
        drop(refs);
        drop(children);
        if let Some(old) = change.old {
            if old.parent_id != node.parent_id {
                // Moved (or created under one parent and moved within the batch): both
                // parents read all their children.
                touched.full.extend(old.parent_id);
                touched.full.extend(node.parent_id);
            }
            let inherited_changed = Inherited::of(old) != Inherited::of(&node)
                || old.root_parent_id != node.root_parent_id;
            if inherited_changed {
                let n = refresh_subtree(store, &node, now, &mut touched.full)?;
                if n > 0 {
                    saved += n;
                    // Its own aggregates read the children just refreshed.
                    chains.push(node.id);
                }
            }
            if old.parent_id != node.parent_id
                && let Some(p) = old.parent_id
            {
                chains.push(p);
            }
        }
        let before = if created.contains(&change.id) {
            None
        } else {
            change.old.map(Before::Borrowed)
        };
        touched.note(change.id, node.parent_id, before);
        if let Some(p) = node.parent_id {
            chains.push(p);
        }
    }
    saved += refresh_ancestors(store, chains, &mut touched, now)?;
    Ok(saved)
}

/// The writes of one batch whose refresh waits for the batch's end: each written record with
/// the record as the batch first saw it (before its first write, or as first created).
#[derive(Debug, Clone, Default)]
pub struct Batch {
    order: Vec<Uuid>,
    first: HashMap<Uuid, Deliverable>,
    created: HashSet<Uuid>,
}

impl Batch {
    /// Notes a write of `new` (its record as written, computed fields prepared against the tree
    /// as it was then), replacing `old` (`None` for a create).
    pub fn note(&mut self, old: Option<&Deliverable>, new: &Deliverable) {
        if !self.first.contains_key(&new.id) {
            self.order.push(new.id);
            if old.is_none() {
                self.created.insert(new.id);
            }
            self.first
                .insert(new.id, old.cloned().unwrap_or_else(|| new.clone()));
        }
    }

    pub fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    pub fn len(&self) -> usize {
        self.order.len()
    }

    /// The changes to refresh: every written record against its first state. A record created
    /// in the batch counts from its state as created, so that a later move or rename in the
    /// same batch refreshes what the creation left stale.
    fn changes(&self) -> Vec<ChangeRef<'_>> {
        self.order
            .iter()
            .map(|id| ChangeRef {
                id: *id,
                old: self.first.get(id),
            })
            .collect()
    }
}

/// [`refresh`] once for a whole batch of writes (the bulk endpoints): the records themselves
/// were prepared when written, each against the tree as it was at that moment; this makes
/// every computed field of the tree true again, recomputing each affected ancestor once.
pub fn refresh_batch<S: TreeStore>(
    store: &mut S,
    batch: &Batch,
    now: DateTime<Utc>,
) -> Result<usize, S::Error> {
    refresh_with(store, &batch.changes(), &batch.created, now)
}

/// Recomputes every descendant of `top` (whose record is current): inherited parts parents
/// first, then aggregated parts children first. Adds each descendant to `full`.
fn refresh_subtree<S: TreeStore>(
    store: &mut S,
    top: &Deliverable,
    now: DateTime<Utc>,
    full: &mut HashSet<Uuid>,
) -> Result<usize, S::Error> {
    let mut nodes = store.descendants(top.id)?;
    if nodes.is_empty() {
        return Ok(0);
    }
    let ids: Vec<Uuid> = nodes.iter().map(|n| n.id).collect();
    full.extend(ids.iter().copied());
    store.prefetch_session_workers(&ids)?;
    let before: Vec<Deliverable> = nodes.clone();
    let index: HashMap<Uuid, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    let mut kids: HashMap<Uuid, Vec<usize>> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        if let Some(p) = n.parent_id {
            kids.entry(p).or_default().push(i);
        }
    }
    // Parents before children: the inherited part from the (already updated) parent. The
    // nodes are read in place (a parent comes before its children), not copied.
    for i in 0..nodes.len() {
        let shop = stage_shop_of(store, &nodes[i])?;
        let parent = match nodes[i].parent_id.and_then(|p| index.get(&p)) {
            Some(&j) => &nodes[j],
            None => top,
        };
        let inh = inherit(&nodes[i], Some(parent), shop);
        let root = root_parent_id(Some(parent));
        let n = &mut nodes[i];
        n.root_parent_id = root;
        let c = &mut n.computed;
        c.root_type = inh.root_type;
        c.full_name = inh.full_name;
        c.full_path = inh.full_path;
        c.phases_path = inh.phases_path;
        c.phase = inh.phase;
        c.shop_id = inh.shop_id;
        c.project_id = inh.project_id;
        c.effective_due_date = inh.effective_due_date;
        c.effective_due_at = inh.effective_due_at;
    }
    // Children before parents: everything, now that inherited parts are right.
    for i in (0..nodes.len()).rev() {
        let facts = facts_of(store, &nodes[i])?;
        let parent = match nodes[i].parent_id.and_then(|p| index.get(&p)) {
            Some(&j) => &nodes[j],
            None => top,
        };
        let refs: Vec<&Deliverable> = kids
            .get(&nodes[i].id)
            .map(|ks| ks.iter().map(|&k| &nodes[k]).collect())
            .unwrap_or_default();
        let computed = compute(&nodes[i], Some(parent), &refs, &facts, now);
        nodes[i].computed = computed;
    }
    let mut saved = 0;
    for (new, old) in nodes.iter().zip(&before) {
        if new != old {
            store.save(new)?;
            saved += 1;
        }
    }
    Ok(saved)
}

/// Recomputes the nodes of `starts` and, while a node changes, its ancestors: deepest first,
/// so that a node is recomputed once, after every changed node below it. (The inherited parts
/// are current by now, so `computed.fullPath` gives each node's depth.) A node not in
/// `touched.full` is recomputed from its stored fields and its changed children when
/// [`compute_incremental`] can tell, otherwise from all its children, released once it is done.
fn refresh_ancestors<S: TreeStore>(
    store: &mut S,
    starts: Vec<Uuid>,
    touched: &mut Touched<'_>,
    now: DateTime<Utc>,
) -> Result<usize, S::Error> {
    use std::cmp::Reverse;
    let mut saved = 0;
    let mut work: BTreeSet<(Reverse<usize>, Uuid)> = BTreeSet::new();
    let mut seen: HashSet<Uuid> = HashSet::with_capacity(starts.len().min(1024));
    for id in starts {
        // Many changes share a parent: its depth is read once.
        if seen.insert(id) {
            let depth = store.node_shared(id)?.computed.full_path.len();
            work.insert((Reverse(depth), id));
        }
    }
    while let Some((Reverse(depth), id)) = work.pop_first() {
        let before = store.node_shared(id)?;
        let mut node = (*before).clone();
        let parent = match node.parent_id {
            Some(p) => Some(store.node_shared(p)?),
            None => None,
        };
        let kids = touched.kids.remove(&id).unwrap_or_default();
        let incremental = if touched.full.contains(&id) {
            None
        } else {
            let mut news = Vec::with_capacity(kids.len());
            for k in &kids {
                news.push(store.node_shared(*k)?);
            }
            let changes: Vec<ChildChange<'_>> = kids
                .iter()
                .zip(&news)
                .map(|(k, new)| match touched.before.get(k) {
                    Some(Some(old)) => ChildChange::Changed { old, new },
                    _ => ChildChange::Created(new),
                })
                .collect();
            let facts = facts_of(store, &node)?;
            compute_incremental(&node, parent.as_deref(), &changes, &facts, now)
        };
        // Whatever happens next, this node's stored fields are no longer those of the tree
        // before the changes.
        touched.full.insert(id);
        let changed = match incremental {
            Some(computed) => {
                let root = root_parent_id(parent.as_deref());
                let changed = computed != node.computed || root != node.root_parent_id;
                node.computed = computed;
                node.root_parent_id = root;
                changed
            }
            None => {
                let children = store.children(id)?;
                let refs: Vec<&Deliverable> = children.iter().map(|c| &**c).collect();
                let changed = prepare(store, &mut node, parent.as_deref(), &refs, now)?;
                drop(refs);
                drop(children);
                store.release_children(id)?;
                changed
            }
        };
        if !changed {
            continue;
        }
        store.save(&node)?;
        saved += 1;
        touched.note(id, node.parent_id, Some(Before::Shared(before)));
        if let Some(p) = node.parent_id {
            work.insert((Reverse(depth.saturating_sub(1)), p));
        }
    }
    Ok(saved)
}

/// The from-scratch definition: every node of a forest recomputed from nothing. `nodes` are in
/// any order; `sibling_order` gives each node's sort key among its siblings.
pub fn recompute_all(
    nodes: &mut [Deliverable],
    sibling_key: &HashMap<Uuid, i64>,
    stage_shops: &HashMap<Uuid, Uuid>,
    session_workers: &HashMap<Uuid, Vec<Uuid>>,
    now: DateTime<Utc>,
) {
    let index: HashMap<Uuid, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id, i)).collect();
    let mut kids: HashMap<Option<Uuid>, Vec<usize>> = HashMap::new();
    for (i, n) in nodes.iter().enumerate() {
        let parent = n.parent_id.filter(|p| index.contains_key(p));
        kids.entry(parent).or_default().push(i);
    }
    for list in kids.values_mut() {
        list.sort_by_key(|&i| {
            (
                sibling_key.get(&nodes[i].id).copied().unwrap_or(0),
                nodes[i].id,
            )
        });
    }
    // Pre-order from the roots.
    let mut order = Vec::with_capacity(nodes.len());
    let mut stack: Vec<usize> = kids.get(&None).cloned().unwrap_or_default();
    stack.reverse();
    while let Some(i) = stack.pop() {
        order.push(i);
        if let Some(ks) = kids.get(&Some(nodes[i].id)) {
            stack.extend(ks.iter().rev());
        }
    }
    for n in nodes.iter_mut() {
        n.computed = Computed::default();
    }
    let shop = |n: &Deliverable| match (n.kind, data_uuid(n, "stageId")) {
        (DeliverableType::Stage, Some(s)) => stage_shops.get(&s).copied(),
        _ => None,
    };
    for &i in &order {
        let parent = nodes[i]
            .parent_id
            .and_then(|p| index.get(&p))
            .map(|&j| nodes[j].clone());
        let inh = inherit(&nodes[i], parent.as_ref(), shop(&nodes[i]));
        nodes[i].root_parent_id = root_parent_id(parent.as_ref());
        let c = &mut nodes[i].computed;
        c.root_type = inh.root_type;
        c.full_name = inh.full_name;
        c.full_path = inh.full_path;
        c.phases_path = inh.phases_path;
        c.phase = inh.phase;
        c.shop_id = inh.shop_id;
        c.project_id = inh.project_id;
        c.effective_due_date = inh.effective_due_date;
        c.effective_due_at = inh.effective_due_at;
    }
    for &i in order.iter().rev() {
        let parent = nodes[i]
            .parent_id
            .and_then(|p| index.get(&p))
            .map(|&j| nodes[j].clone());
        let children: Vec<Deliverable> = kids
            .get(&Some(nodes[i].id))
            .map(|ks| ks.iter().map(|&k| nodes[k].clone()).collect())
            .unwrap_or_default();
        let refs: Vec<&Deliverable> = children.iter().collect();
        let facts = NodeFacts {
            stage_shop: shop(&nodes[i]),
            session_workers: session_workers
                .get(&nodes[i].id)
                .cloned()
                .unwrap_or_default(),
        };
        nodes[i].computed = compute(&nodes[i], parent.as_ref(), &refs, &facts, now);
    }
}

/// The order of a hierarchy read: `top` first, then parents before children, siblings by
/// their sort key (then id); of a subtree given in path order (a node's materialized path is
/// its ancestors' ids and its own, so sorting by path lists `top` first and every subtree as
/// one stretch right after its node, siblings by id): `entries` are `(depth, sort_key)`, the
/// first being `top`. Only siblings are reordered, by sort key (a stable sort keeps their id order
/// among equal keys), without looking ids up: what a hierarchy read of a large subtree needs.
pub fn hierarchy_order_of_paths(entries: &[(usize, i64)]) -> Vec<usize> {
    let n = entries.len();
    // Where the stretch of each node's subtree ends (the next node no deeper than it).
    let mut end = vec![n; n];
    let mut open: Vec<usize> = Vec::new();
    for (i, &(depth, _)) in entries.iter().enumerate() {
        while let Some(&j) = open.last() {
            if entries[j].0 < depth {
                break;
            }
            end[j] = i;
            open.pop();
        }
        open.push(i);
    }
    let mut out = Vec::with_capacity(n);
    let mut stack: Vec<usize> = if n > 0 { vec![0] } else { Vec::new() };
    let mut children: Vec<usize> = Vec::new();
    while let Some(i) = stack.pop() {
        out.push(i);
        children.clear();
        let mut j = i + 1;
        while j < end[i] {
            children.push(j);
            j = end[j];
        }
        children.sort_by_key(|&c| entries[c].1);
        stack.extend(children.iter().rev());
    }
    out
}

/// Whether making `new_parent` the parent of `node` would put a node under itself, given the
/// new parent's breadcrumb of ids (`computed.fullPath`, which ends with its own id).
pub fn would_cycle(node: Uuid, new_parent_path: &[String]) -> bool {
    let id = node.to_string();
    new_parent_path.contains(&id)
}

/// Makes the alert fields of every node of a forest (the instants and the answers, as of
/// `now`) those of a from-scratch computation ([`recompute_all`]), every other field left
/// as it is; answers the indexes of the nodes that changed. For records stored before the
/// instants existed (a migration step). Here rather than in `alerts.rs`, which the tree's
/// computation uses.
pub fn backfill_alerts(
    nodes: &mut [crate::deliverable::Deliverable],
    now: DateTime<Utc>,
) -> Vec<usize> {
    let mut fresh = nodes.to_vec();
    recompute_all(
        &mut fresh,
        &HashMap::new(),
        &HashMap::new(),
        &HashMap::new(),
        now,
    );
    let mut changed = Vec::new();
    for (i, (node, f)) in nodes.iter_mut().zip(fresh).enumerate() {
        let (c, f) = (&mut node.computed, f.computed);
        let before = c.clone();
        c.effective_due_at = f.effective_due_at;
        c.late_at = f.late_at;
        c.at_risk_until = f.at_risk_until;
        c.is_late = f.is_late;
        c.is_at_risk = f.is_at_risk;
        c.effective_due_date_is_late = f.effective_due_date_is_late;
        c.alert_type = f.alert_type;
        c.alert_type_ordinal = f.alert_type_ordinal;
        if *c != before {
            changed.push(i);
        }
    }
    changed
}

#[cfg(test)]
mod tests;
