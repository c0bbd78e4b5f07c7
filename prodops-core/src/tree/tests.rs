use std::collections::HashMap;
use std::convert::Infallible;

use chrono::NaiveDate;
use proptest::prelude::*;
use serde_json::json;
use uuid::Uuid;

use super::*;
use crate::deliverable::{Deliverable, DeliverableType, Progress, ProgressStatus};

/// The moment the tests write at (the start of a day).
fn today() -> chrono::DateTime<chrono::Utc> {
    NaiveDate::from_ymd_opt(2024, 6, 1)
        .unwrap()
        .and_time(chrono::NaiveTime::MIN)
        .and_utc()
}

fn node(n: u128, kind: DeliverableType, parent: Option<Uuid>) -> Deliverable {
    serde_json::from_value(json!({
        "id": Uuid::from_u128(n),
        "organizationId": Uuid::from_u128(1),
        "name": format!("{kind} {n}"),
        "type": kind,
        "parentId": parent,
        "createdAt": "2024-01-01T00:00:00Z",
        "updatedAt": "2024-01-01T00:00:00Z",
    }))
    .unwrap()
}

/// The tree in memory, as the server keeps it in the database.
#[derive(Default, Clone)]
struct Mem {
    nodes: HashMap<Uuid, Deliverable>,
    keys: HashMap<Uuid, i64>,
    shops: HashMap<Uuid, Uuid>,
    sessions: HashMap<Uuid, Vec<Uuid>>,
    /// The nodes whose children were asked for ([`TreeStore::children`]), in order.
    asked: Vec<Uuid>,
}

impl Mem {
    fn kids(&self, id: Uuid) -> Vec<Deliverable> {
        let mut k: Vec<Deliverable> = self
            .nodes
            .values()
            .filter(|n| n.parent_id == Some(id))
            .cloned()
            .collect();
        k.sort_by_key(|n| (self.keys[&n.id], n.id));
        k
    }

    /// Writes `n` the way the server does: computed prepared first, then the rest refreshed.
    fn write(&mut self, mut n: Deliverable) {
        let old = self.nodes.get(&n.id).cloned();
        let parent = n.parent_id.map(|p| self.nodes[&p].clone());
        let kids = self.kids(n.id);
        let refs: Vec<&Deliverable> = kids.iter().collect();
        prepare(self, &mut n, parent.as_ref(), &refs, today()).unwrap();
        self.keys.entry(n.id).or_insert(self.nodes.len() as i64);
        self.nodes.insert(n.id, n.clone());
        refresh(self, &[Change { id: n.id, old }], today()).unwrap();
    }

    /// Writes `n` the way a bulk write does: computed prepared against the tree as it is now
    /// (possibly stale within the batch), the rest of the refresh put off until the batch ends.
    fn write_deferred(&mut self, batch: &mut Batch, mut n: Deliverable) {
        let old = self.nodes.get(&n.id).cloned();
        let parent = n.parent_id.map(|p| self.nodes[&p].clone());
        let kids = self.kids(n.id);
        let refs: Vec<&Deliverable> = kids.iter().collect();
        prepare(self, &mut n, parent.as_ref(), &refs, today()).unwrap();
        self.keys.entry(n.id).or_insert(self.nodes.len() as i64);
        self.nodes.insert(n.id, n.clone());
        batch.note(old.as_ref(), &n);
    }

    /// Whether `node` is `ancestor` or below it, by parent links (the tree index: computed
    /// breadcrumbs may be stale inside a batch).
    fn is_under(&self, node: Uuid, ancestor: Uuid) -> bool {
        let mut cur = Some(node);
        while let Some(c) = cur {
            if c == ancestor {
                return true;
            }
            cur = self.nodes[&c].parent_id;
        }
        false
    }

    fn scratch(&self) -> HashMap<Uuid, Deliverable> {
        let mut all: Vec<Deliverable> = self.nodes.values().cloned().collect();
        recompute_all(&mut all, &self.keys, &self.shops, &self.sessions, today());
        all.into_iter().map(|n| (n.id, n)).collect()
    }

    fn descendants_of(&self, id: Uuid) -> Vec<Deliverable> {
        let mut out = Vec::new();
        let mut stack = vec![id];
        while let Some(n) = stack.pop() {
            for k in self.kids(n) {
                stack.push(k.id);
                out.push(k);
            }
        }
        out
    }
}

impl TreeStore for Mem {
    type Error = Infallible;
    fn node(&mut self, id: Uuid) -> Result<Deliverable, Infallible> {
        Ok(self.nodes[&id].clone())
    }
    fn children(&mut self, id: Uuid) -> Result<Vec<std::sync::Arc<Deliverable>>, Infallible> {
        self.asked.push(id);
        Ok(self.kids(id).into_iter().map(std::sync::Arc::new).collect())
    }
    fn descendants(&mut self, id: Uuid) -> Result<Vec<Deliverable>, Infallible> {
        Ok(self.descendants_of(id))
    }
    fn stage_shop(&mut self, stage_id: Uuid) -> Result<Option<Uuid>, Infallible> {
        Ok(self.shops.get(&stage_id).copied())
    }
    fn session_workers(&mut self, id: Uuid) -> Result<Vec<Uuid>, Infallible> {
        Ok(self.sessions.get(&id).cloned().unwrap_or_default())
    }
    fn save(&mut self, node: &Deliverable) -> Result<(), Infallible> {
        self.nodes.insert(node.id, node.clone());
        Ok(())
    }
}

const STAGE_A: u128 = 0xA;
const STAGE_B: u128 = 0xB;

fn sample() -> Mem {
    let mut m = Mem::default();
    m.shops
        .insert(Uuid::from_u128(STAGE_A), Uuid::from_u128(0x5A));
    let order = Uuid::from_u128(10);
    m.write(node(10, DeliverableType::Order, None));
    m.write(node(11, DeliverableType::Phase, Some(order)));
    let mut s1 = node(12, DeliverableType::Stage, Some(Uuid::from_u128(11)));
    s1.data
        .insert("stageId".into(), json!(Uuid::from_u128(STAGE_A)));
    m.write(s1);
    let mut s2 = node(13, DeliverableType::Stage, Some(Uuid::from_u128(11)));
    s2.data
        .insert("stageId".into(), json!(Uuid::from_u128(STAGE_B)));
    m.write(s2);
    let mut step = node(14, DeliverableType::Step, Some(Uuid::from_u128(12)));
    step.data
        .insert("workerIds".into(), json!([Uuid::from_u128(77)]));
    step.data.insert("tags".into(), json!(["hot"]));
    m.write(step);
    m
}

#[test]
fn computed_fields_of_a_small_order() {
    let m = sample();
    let step = &m.nodes[&Uuid::from_u128(14)];
    let c = &step.computed;
    assert_eq!(c.root_type, Some(DeliverableType::Order));
    assert_eq!(c.full_name, ["order 10", "phase 11", "stage 12", "step 14"]);
    assert_eq!(c.full_path.len(), 4);
    assert_eq!(c.phase.as_deref(), Some("phase 11"));
    assert_eq!(c.shop_id, Some(Uuid::from_u128(0x5A)));
    assert!(c.is_leaf);
    assert_eq!(step.root_parent_id, Some(Uuid::from_u128(10)));
    let order = &m.nodes[&Uuid::from_u128(10)].computed;
    assert_eq!(
        order.contained_stage_ids,
        [Uuid::from_u128(STAGE_A), Uuid::from_u128(STAGE_B)]
    );
    assert_eq!(order.current_stage_ids, [Uuid::from_u128(STAGE_A)]);
    assert_eq!(order.current_phase_names, ["phase 11"]);
    assert_eq!(order.combined_worker_ids, [Uuid::from_u128(77)]);
    assert_eq!(order.combined_tag_ids, ["hot"]);
    assert_eq!(order.current_children.len(), 1);
    assert_eq!(m.nodes[&Uuid::from_u128(10)].root_parent_id, None);

    // The first stage done: the frontier moves to the second.
    let mut m = m;
    let mut s1 = m.nodes[&Uuid::from_u128(12)].clone();
    s1.progress = Some(Progress {
        status: ProgressStatus::Done,
        ..Default::default()
    });
    m.write(s1);
    let order = &m.nodes[&Uuid::from_u128(10)].computed;
    assert_eq!(order.current_stage_ids, [Uuid::from_u128(STAGE_B)]);
    assert_eq!(m.scratch(), m.nodes);

    // The second stage waits for a predecessor: nothing is on the frontier, and it is seen
    // waiting in its parent's currentChildren.
    let mut s2 = m.nodes[&Uuid::from_u128(13)].clone();
    s2.progress = Some(Progress::default());
    m.write(s2);
    let phase = &m.nodes[&Uuid::from_u128(11)].computed;
    assert_eq!(phase.current_children[1].status, ProgressStatus::Waiting);
    assert!(
        m.nodes[&Uuid::from_u128(13)]
            .computed
            .current_stage_ids
            .is_empty()
    );
    let order = &m.nodes[&Uuid::from_u128(10)].computed;
    assert!(order.current_stage_ids.is_empty());
    assert!(order.current_phase_names.is_empty());
    // Released (todo): it is current again.
    let mut s2 = m.nodes[&Uuid::from_u128(13)].clone();
    s2.progress = Some(Progress {
        status: ProgressStatus::Todo,
        ..Default::default()
    });
    m.write(s2);
    let order = &m.nodes[&Uuid::from_u128(10)].computed;
    assert_eq!(order.current_stage_ids, [Uuid::from_u128(STAGE_B)]);
    assert_eq!(order.current_phase_names, ["phase 11"]);
    // A waiting phase hides its whole frontier from its ancestors.
    let mut phase = m.nodes[&Uuid::from_u128(11)].clone();
    phase.progress = Some(Progress::default());
    m.write(phase);
    let order = &m.nodes[&Uuid::from_u128(10)].computed;
    assert!(order.current_stage_ids.is_empty());
    assert!(order.current_phase_names.is_empty());
    assert_eq!(m.scratch(), m.nodes);
}

#[test]
fn alerts() {
    let mut m = sample();
    let mut order = m.nodes[&Uuid::from_u128(10)].clone();
    order.data.insert("dueDate".into(), json!("2024-05-01"));
    m.write(order);
    let step = &m.nodes[&Uuid::from_u128(14)].computed;
    assert_eq!(step.effective_due_date.as_deref(), Some("2024-05-01"));
    assert!(step.effective_due_date_is_inherited);
    assert!(step.effective_due_date_is_late);
    assert!(step.is_late);
    assert_eq!(step.alert_type, AlertType::Late);
    let mut phase = m.nodes[&Uuid::from_u128(11)].clone();
    phase.progress = Some(Progress {
        status: ProgressStatus::OnHold,
        ..Default::default()
    });
    m.write(phase);
    let order = &m.nodes[&Uuid::from_u128(10)].computed;
    assert_eq!(order.alert_type, AlertType::OnHold);
    assert_eq!(order.alert_type_ordinal, 3);
    assert_eq!(m.scratch(), m.nodes);
}

/// The reference order of a hierarchy read, from parent links: `top` first, then parents before children, siblings by
/// their sort key (then id). `entries` are `(id, parent_id, sort_key)` of the subtree.
fn hierarchy_order(top: Uuid, entries: &[(Uuid, Option<Uuid>, i64)]) -> Vec<usize> {
    let mut kids: HashMap<Uuid, Vec<usize>> = HashMap::new();
    let mut top_index = None;
    for (i, (id, parent, _)) in entries.iter().enumerate() {
        if *id == top {
            top_index = Some(i);
        } else if let Some(p) = parent {
            kids.entry(*p).or_default().push(i);
        }
    }
    for list in kids.values_mut() {
        list.sort_by_key(|&i| (entries[i].2, entries[i].0));
    }
    let mut out = Vec::with_capacity(entries.len());
    let mut stack: Vec<usize> = top_index.into_iter().collect();
    while let Some(i) = stack.pop() {
        out.push(i);
        if let Some(ks) = kids.get(&entries[i].0) {
            stack.extend(ks.iter().rev());
        }
    }
    out
}

#[test]
fn hierarchy_order_is_preorder_in_sibling_order() {
    let id = Uuid::from_u128;
    let entries = vec![
        (id(3), Some(id(1)), 0),
        (id(1), None, 0),
        (id(2), Some(id(1)), 1),
        (id(4), Some(id(3)), 5),
        (id(5), Some(id(2)), 0),
    ];
    let order: Vec<Uuid> = hierarchy_order(id(1), &entries)
        .into_iter()
        .map(|i| entries[i].0)
        .collect();
    assert_eq!(order, [id(1), id(3), id(4), id(2), id(5)]);
}

proptest! {
    /// The path-ordered form agrees with the general one on any tree: parents given as
    /// indexes of earlier nodes, sort keys from a small range so that ties happen.
    #[test]
    fn hierarchy_order_of_paths_agrees(
        parents in proptest::collection::vec((any::<prop::sample::Index>(), 0i64..4), 0..60),
        top_pick in any::<prop::sample::Index>(),
    ) {
        let ids: Vec<Uuid> = (0..=parents.len()).map(|_| Uuid::new_v4()).collect();
        let mut parent: Vec<Option<usize>> = vec![None];
        let mut keys = vec![0i64];
        for (p, k) in &parents {
            parent.push(Some(p.index(parent.len())));
            keys.push(*k);
        }
        let path = |mut i: usize| {
            let mut parts = vec![ids[i].to_string()];
            while let Some(p) = parent[i] {
                parts.push(ids[p].to_string());
                i = p;
            }
            parts.reverse();
            parts.iter().map(|p| format!("{p}/")).collect::<String>()
        };
        let top = top_pick.index(ids.len());
        let top_path = path(top);
        let mut subtree: Vec<(String, usize)> = (0..ids.len())
            .map(|i| (path(i), i))
            .filter(|(p, _)| p.starts_with(&top_path))
            .collect();
        subtree.sort();
        let entries: Vec<(Uuid, Option<Uuid>, i64)> = subtree
            .iter()
            .map(|(_, i)| (ids[*i], parent[*i].map(|p| ids[p]), keys[*i]))
            .collect();
        let by_paths: Vec<(usize, i64)> = subtree
            .iter()
            .map(|(p, i)| (p.matches('/').count(), keys[*i]))
            .collect();
        prop_assert_eq!(
            hierarchy_order_of_paths(&by_paths),
            hierarchy_order(ids[top], &entries)
        );
    }
}

#[derive(Debug, Clone)]
enum Op {
    Add { parent: usize, kind: usize },
    Move { node: usize, parent: usize },
    Rename { node: usize },
    Status { node: usize, status: usize },
    Workers { node: usize, worker: u8 },
    Due { node: usize, day: u8 },
    Swap { a: usize, b: usize },
    Archive { node: usize },
    Session { node: usize, worker: u8 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<usize>(), 0usize..9).prop_map(|(parent, kind)| Op::Add { parent, kind }),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(node, parent)| Op::Move { node, parent }),
        1 => any::<usize>().prop_map(|node| Op::Rename { node }),
        2 => (any::<usize>(), 0usize..6).prop_map(|(node, status)| Op::Status { node, status }),
        1 => (any::<usize>(), 0u8..4).prop_map(|(node, worker)| Op::Workers { node, worker }),
        1 => (any::<usize>(), 0u8..60).prop_map(|(node, day)| Op::Due { node, day }),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Swap { a, b }),
        1 => any::<usize>().prop_map(|node| Op::Archive { node }),
        2 => (any::<usize>(), 0u8..4).prop_map(|(node, worker)| Op::Session { node, worker }),
    ]
}

const STATUSES: [ProgressStatus; 6] = [
    ProgressStatus::Waiting,
    ProgressStatus::Todo,
    ProgressStatus::Wip,
    ProgressStatus::Rework,
    ProgressStatus::OnHold,
    ProgressStatus::Done,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// After any sequence of operations, the incrementally kept computed fields equal a
    /// from-scratch recomputation of the whole forest.
    #[test]
    fn incremental_equals_from_scratch(ops in proptest::collection::vec(op(), 1..40)) {
        let mut m = Mem::default();
        m.shops.insert(Uuid::from_u128(STAGE_A), Uuid::from_u128(0x5A));
        m.write(node(1000, DeliverableType::Order, None));
        let mut ids: Vec<Uuid> = vec![Uuid::from_u128(1000)];
        let mut next = 2000u128;
        for op in ops {
            let pick = |i: usize| ids[i % ids.len()];
            match op {
                Op::Add { parent, kind } => {
                    let kind = DeliverableType::ALL[kind];
                    let mut n = node(next, kind, if kind.is_root() { None } else { Some(pick(parent)) });
                    if kind == DeliverableType::Stage {
                        n.data.insert("stageId".into(), json!(Uuid::from_u128(if next.is_multiple_of(2) { STAGE_A } else { STAGE_B })));
                    }
                    next += 1;
                    ids.push(n.id);
                    m.write(n);
                }
                Op::Move { node: a, parent: b } => {
                    let (a, b) = (pick(a), pick(b));
                    let target_path = m.nodes[&b].computed.full_path.clone();
                    if a != b && !would_cycle(a, &target_path) {
                        let mut n = m.nodes[&a].clone();
                        n.parent_id = Some(b);
                        m.write(n);
                    }
                }
                Op::Rename { node: a } => {
                    let mut n = m.nodes[&pick(a)].clone();
                    n.name = format!("{}'", n.name);
                    m.write(n);
                }
                Op::Status { node: a, status } => {
                    let mut n = m.nodes[&pick(a)].clone();
                    n.progress = Some(Progress { status: STATUSES[status], ..Default::default() });
                    m.write(n);
                }
                Op::Workers { node: a, worker } => {
                    let mut n = m.nodes[&pick(a)].clone();
                    n.data.insert("workerIds".into(), json!([Uuid::from_u128(worker as u128)]));
                    n.data.insert("tags".into(), json!([format!("t{worker}")]));
                    m.write(n);
                }
                Op::Due { node: a, day } => {
                    let mut n = m.nodes[&pick(a)].clone();
                    let d = NaiveDate::from_ymd_opt(2024, 5, 1).unwrap() + chrono::Days::new(day as u64);
                    n.data.insert("dueDate".into(), json!(d.to_string()));
                    m.write(n);
                }
                Op::Swap { a, b } => {
                    let (a, b) = (pick(a), pick(b));
                    let (ka, kb) = (m.keys[&a], m.keys[&b]);
                    m.keys.insert(a, kb);
                    m.keys.insert(b, ka);
                    let mut changes = Vec::new();
                    for id in [a, b] {
                        if let Some(p) = m.nodes[&id].parent_id {
                            changes.push(Change { id: p, old: Some(m.nodes[&p].clone()) });
                        }
                    }
                    refresh(&mut m, &changes, today()).unwrap();
                }
                Op::Session { node: a, worker } => {
                    // A work session starts or ends: the node's facts change, not its record.
                    let id = pick(a);
                    let w = Uuid::from_u128(worker as u128);
                    let list = m.sessions.entry(id).or_default();
                    if let Some(i) = list.iter().position(|x| *x == w) {
                        list.remove(i);
                    } else {
                        list.push(w);
                    }
                    let old = m.nodes[&id].clone();
                    refresh(&mut m, &[Change { id, old: Some(old) }], today()).unwrap();
                }
                Op::Archive { node: a } => {
                    let mut n = m.nodes[&pick(a)].clone();
                    n.is_archived = !n.is_archived;
                    m.write(n);
                }
            }
            let scratch = m.scratch();
            for (id, n) in &m.nodes {
                prop_assert_eq!(&scratch[id], n, "node {}", id);
            }
        }
    }
}

/// One of `ids`: half of the picks among the last few (so that a batch often writes below, moves
/// or renames what it created a moment before), the others anywhere.
fn pick_recent(ids: &[Uuid], i: usize) -> Uuid {
    if i.is_multiple_of(2) {
        ids[ids.len() - 1 - (i / 2) % ids.len().min(3)]
    } else {
        ids[(i / 2) % ids.len()]
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Batches of writes whose refresh waits for the batch's end (the bulk endpoints): after
    /// each batch, every node equals a from-scratch recomputation, whatever the batch held
    /// (creates under nodes created in the same batch, moves and renames of nodes whose
    /// subtrees were written earlier in the batch, ...).
    #[test]
    fn deferred_batches_equal_from_scratch(
        batches in proptest::collection::vec(proptest::collection::vec(op(), 1..12), 1..6)
    ) {
        let mut m = Mem::default();
        m.shops.insert(Uuid::from_u128(STAGE_A), Uuid::from_u128(0x5A));
        m.write(node(1000, DeliverableType::Order, None));
        let mut ids: Vec<Uuid> = vec![Uuid::from_u128(1000)];
        let mut next = 2000u128;
        for ops in batches {
            let mut batch = Batch::default();
            for op in ops {
                let pick = |i: usize| pick_recent(&ids, i);
                let changed = match op {
                    Op::Add { parent, kind } => {
                        let kind = DeliverableType::ALL[kind];
                        let mut n = node(next, kind, if kind.is_root() { None } else { Some(pick(parent)) });
                        if kind == DeliverableType::Stage {
                            n.data.insert("stageId".into(), json!(Uuid::from_u128(if next.is_multiple_of(2) { STAGE_A } else { STAGE_B })));
                        }
                        next += 1;
                        ids.push(n.id);
                        Some(n)
                    }
                    Op::Move { node: a, parent: b } => {
                        let (a, b) = (pick(a), pick(b));
                        (!m.is_under(b, a)).then(|| {
                            let mut n = m.nodes[&a].clone();
                            n.parent_id = Some(b);
                            n
                        })
                    }
                    Op::Rename { node: a } | Op::Swap { a, .. } => {
                        let mut n = m.nodes[&pick(a)].clone();
                        n.name = format!("{}'", n.name);
                        Some(n)
                    }
                    Op::Status { node: a, status } => {
                        let mut n = m.nodes[&pick(a)].clone();
                        n.progress = Some(Progress { status: STATUSES[status], ..Default::default() });
                        Some(n)
                    }
                    Op::Workers { node: a, worker } | Op::Session { node: a, worker } => {
                        let mut n = m.nodes[&pick(a)].clone();
                        n.data.insert("workerIds".into(), json!([Uuid::from_u128(worker as u128)]));
                        n.data.insert("tags".into(), json!([format!("t{worker}")]));
                        Some(n)
                    }
                    Op::Due { node: a, day } => {
                        let mut n = m.nodes[&pick(a)].clone();
                        let d = NaiveDate::from_ymd_opt(2024, 5, 1).unwrap() + chrono::Days::new(day as u64);
                        n.data.insert("dueDate".into(), json!(d.to_string()));
                        Some(n)
                    }
                    Op::Archive { node: a } => {
                        let mut n = m.nodes[&pick(a)].clone();
                        n.is_archived = !n.is_archived;
                        Some(n)
                    }
                };
                if let Some(n) = changed {
                    m.write_deferred(&mut batch, n);
                }
            }
            refresh_batch(&mut m, &batch, today()).unwrap();
            let scratch = m.scratch();
            for (id, n) in &m.nodes {
                prop_assert_eq!(&scratch[id], n, "node {}", id);
            }
        }
    }
}

/// What a child hands its parent, drawn at random (ids and names from small pools, so that
/// children share and lose them).
#[derive(Debug, Clone)]
struct Contribution {
    kind: usize,
    status: usize,
    archived: bool,
    stages: Vec<u8>,
    phases: Vec<u8>,
    cur_stages: Vec<u8>,
    cur_phases: Vec<u8>,
    workers: Vec<u8>,
    tags: Vec<u8>,
    late: Option<u8>,
    risk: Option<u8>,
    on_hold: bool,
}

prop_compose! {
    fn contribution()(
        kind in 0usize..4,
        status in 0usize..6,
        archived in proptest::bool::weighted(0.1),
        stages in proptest::collection::vec(0u8..6, 0..3),
        phases in proptest::collection::vec(0u8..4, 0..2),
        cur_stages in proptest::collection::vec(0u8..6, 0..2),
        cur_phases in proptest::collection::vec(0u8..4, 0..2),
        workers in proptest::collection::vec(0u8..5, 0..2),
        tags in proptest::collection::vec(0u8..4, 0..2),
        late in proptest::option::of(0u8..20),
        risk in proptest::option::of(0u8..20),
        on_hold in proptest::bool::weighted(0.2),
    ) -> Contribution {
        Contribution { kind, status, archived, stages, phases, cur_stages, cur_phases, workers, tags, late, risk, on_hold }
    }
}

/// The kinds a child is drawn from: stages (the frontier rule) and containers.
const CHILD_KINDS: [DeliverableType; 4] = [
    DeliverableType::Stage,
    DeliverableType::Stage,
    DeliverableType::Step,
    DeliverableType::Component,
];

fn instant(day: u8) -> String {
    format!("2024-06-{:02}T00:00:00Z", u32::from(day) + 1)
}

fn sorted<T: Ord + Clone>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let set: std::collections::BTreeSet<T> = items.into_iter().collect();
    set.into_iter().collect()
}

/// A child of `parent` whose computed fields are `c` (they need not be consistent with a
/// subtree: a parent only reads them).
fn child_of(parent: Uuid, n: u128, c: &Contribution) -> Deliverable {
    let kind = CHILD_KINDS[c.kind];
    let mut d = node(n, kind, Some(parent));
    d.progress = Some(Progress {
        status: STATUSES[c.status],
        percentage: f64::from(c.status as u8 * 10),
        ..Default::default()
    });
    d.is_archived = c.archived;
    let k = &mut d.computed;
    k.contained_stage_ids = sorted(c.stages.iter().map(|s| Uuid::from_u128(u128::from(*s) + 1)));
    k.contained_phase_names = sorted(c.phases.iter().map(|p| format!("p{p}")));
    k.current_stage_ids = sorted(
        c.cur_stages
            .iter()
            .map(|s| Uuid::from_u128(u128::from(*s) + 1)),
    );
    k.current_phase_names = sorted(c.cur_phases.iter().map(|p| format!("p{p}")));
    k.combined_worker_ids = sorted(
        c.workers
            .iter()
            .map(|w| Uuid::from_u128(u128::from(*w) + 100)),
    );
    k.combined_tag_ids = sorted(c.tags.iter().map(|t| format!("t{t}")));
    k.late_at = c.late.map(instant);
    k.at_risk_until = c.risk.map(instant);
    if c.on_hold {
        k.alert_type = AlertType::OnHold;
    }
    d
}

/// `old` grown by `extra` (every set a superset, lateAt no later, atRiskUntil no earlier, on
/// hold if either), its status `extra`'s when `restatus`.
fn grown(old: &Contribution, extra: &Contribution, restatus: bool) -> Contribution {
    let join = |a: &[u8], b: &[u8]| a.iter().chain(b).copied().collect::<Vec<u8>>();
    Contribution {
        kind: old.kind,
        status: if restatus { extra.status } else { old.status },
        archived: old.archived,
        stages: join(&old.stages, &extra.stages),
        phases: join(&old.phases, &extra.phases),
        cur_stages: join(&old.cur_stages, &extra.cur_stages),
        cur_phases: join(&old.cur_phases, &extra.cur_phases),
        workers: join(&old.workers, &extra.workers),
        tags: join(&old.tags, &extra.tags),
        late: match (old.late, extra.late) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        },
        risk: old.risk.max(extra.risk),
        on_hold: old.on_hold || extra.on_hold,
    }
}

/// One edit of an existing child: grown (often) or replaced by anything.
#[derive(Debug, Clone)]
struct Edit {
    child: usize,
    grow: bool,
    restatus: bool,
    to: Contribution,
}

prop_compose! {
    fn edit()(
        child in any::<usize>(),
        grow in proptest::bool::weighted(0.7),
        restatus in proptest::bool::weighted(0.3),
        to in contribution(),
    ) -> Edit {
        Edit { child, grow, restatus, to }
    }
}

const PARENT_KINDS: [DeliverableType; 4] = [
    DeliverableType::Phase,
    DeliverableType::Order,
    DeliverableType::Stage,
    DeliverableType::Component,
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The incremental recompute of a parent from its stored fields and the changes of some of
    /// its children equals the full `compute` over all its children, field for field, whenever
    /// it answers; and it answers for appends of new children and children that only grew.
    #[test]
    fn incremental_rollup_equals_full_compute(
        parent_kind in 0usize..4,
        parent_status in 0usize..6,
        parent_due in proptest::option::of(0u8..20),
        parent_workers in proptest::collection::vec(0u8..5, 0..2),
        sessions in proptest::collection::vec(0u8..5, 0..2),
        olds in proptest::collection::vec(contribution(), 0..8),
        edits in proptest::collection::vec(edit(), 0..4),
        creates in proptest::collection::vec(contribution(), 0..4),
    ) {
        let kind = PARENT_KINDS[parent_kind];
        let mut p = node(1, kind, None);
        p.progress = Some(Progress { status: STATUSES[parent_status], ..Default::default() });
        if let Some(d) = parent_due {
            p.data.insert("dueDate".into(), json!(instant(d)[..10].to_string()));
        }
        p.data.insert(
            "workerIds".into(),
            json!(parent_workers.iter().map(|w| Uuid::from_u128(u128::from(*w) + 100)).collect::<Vec<_>>()),
        );
        p.schedule = parent_due.map(|d| crate::deliverable::Schedule {
            start_date: today(),
            end_date: today() + chrono::Days::new(u64::from(d % 7) * 3),
        });
        let facts = NodeFacts {
            stage_shop: None,
            session_workers: sorted(sessions.iter().map(|w| Uuid::from_u128(u128::from(*w) + 100))),
        };
        let old_kids: Vec<Deliverable> =
            olds.iter().enumerate().map(|(i, c)| child_of(p.id, 10 + i as u128, c)).collect();
        let refs: Vec<&Deliverable> = old_kids.iter().collect();
        p.computed = compute(&p, None, &refs, &facts, today());

        // The children after the changes: edited ones in place, new ones appended.
        let mut new_kids = old_kids.clone();
        let mut edited = std::collections::BTreeSet::new();
        // Whether every edit only grew a child's contribution, its status and name kept.
        let mut only_growth = true;
        if !old_kids.is_empty() {
            for e in &edits {
                let i = e.child % old_kids.len();
                if !edited.insert(i) {
                    continue;
                }
                only_growth &= e.grow && !e.restatus;
                let to = if e.grow { grown(&olds[i], &e.to, e.restatus) } else { e.to.clone() };
                let mut n = child_of(p.id, 10 + i as u128, &to);
                n.name = if e.restatus { format!("{} renamed", n.name) } else { n.name };
                new_kids[i] = n;
            }
        }
        for (j, c) in creates.iter().enumerate() {
            new_kids.push(child_of(p.id, 100 + j as u128, c));
        }
        let mut changes: Vec<ChildChange<'_>> = edited
            .iter()
            .map(|&i| ChildChange::Changed { old: &old_kids[i], new: &new_kids[i] })
            .collect();
        changes.extend(new_kids[old_kids.len()..].iter().map(ChildChange::Created));

        let refs: Vec<&Deliverable> = new_kids.iter().collect();
        let full = compute(&p, None, &refs, &facts, today());
        let incremental = compute_incremental(&p, None, &changes, &facts, today());
        if let Some(got) = &incremental {
            prop_assert_eq!(got, &full);
        }
        if only_growth {
            prop_assert!(incremental.is_some(), "appends and growth are incremental");
        }
    }
}

/// A batch of new stages under large stored phases (the shape of a shuffled import) refreshes
/// them without asking for their children, and leaves every node as a from-scratch
/// recomputation; a batch that completes a phase's first open stage (the frontier moves) reads
/// that phase's children.
#[test]
fn appending_children_reads_none_of_their_siblings() {
    let mut m = Mem::default();
    m.shops
        .insert(Uuid::from_u128(STAGE_A), Uuid::from_u128(0x5A));
    let order = Uuid::from_u128(10);
    m.write(node(10, DeliverableType::Order, None));
    let phases: Vec<Uuid> = (0..3).map(|i| Uuid::from_u128(20 + i)).collect();
    for p in &phases {
        m.write(node(p.as_u128(), DeliverableType::Phase, Some(order)));
    }
    let mut next = 1000u128;
    let mut stage = |m: &mut Mem, batch: Option<&mut Batch>, parent: Uuid, tag: &str| {
        let mut s = node(next, DeliverableType::Stage, Some(parent));
        next += 1;
        s.data.insert(
            "stageId".into(),
            json!(Uuid::from_u128(if next.is_multiple_of(2) {
                STAGE_A
            } else {
                STAGE_B
            })),
        );
        s.data.insert("tags".into(), json!([tag]));
        s.data.insert(
            "dueDate".into(),
            json!(format!("2024-05-{:02}", next % 28 + 1)),
        );
        let id = s.id;
        match batch {
            Some(b) => m.write_deferred(b, s),
            None => m.write(s),
        }
        id
    };
    for p in &phases {
        for _ in 0..10 {
            stage(&mut m, None, *p, "old");
        }
    }
    let mut batch = Batch::default();
    for i in 0..30 {
        stage(&mut m, Some(&mut batch), phases[i % 3], &format!("t{i}"));
    }
    m.asked.clear();
    refresh_batch(&mut m, &batch, today()).unwrap();
    for p in &phases {
        assert!(!m.asked.contains(p), "the children of {p} were read");
    }
    assert!(!m.asked.contains(&order));
    let scratch = m.scratch();
    for (id, n) in &m.nodes {
        assert_eq!(&scratch[id], n, "node {id}");
    }
    assert_eq!(m.nodes[&phases[0]].computed.current_children.len(), 20);

    // The first open stage of phase 0 done: the frontier moves, the phase reads its children.
    let first = m.kids(phases[0])[0].clone();
    let mut done = first.clone();
    done.progress = Some(Progress {
        status: ProgressStatus::Done,
        ..Default::default()
    });
    m.asked.clear();
    m.write(done);
    assert!(m.asked.contains(&phases[0]));
    let scratch = m.scratch();
    for (id, n) in &m.nodes {
        assert_eq!(&scratch[id], n, "node {id}");
    }
}
