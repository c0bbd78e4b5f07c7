//! The dependencies of one deliverable tree, indexed for the checks a new dependency must pass
//! (docs/deliverables.md, "Schedule engine"): it may not exist already, close a cycle, link a
//! node and its own ancestor or descendant, or close a chain through the containers it
//! constrains. These are the rules of [`creates_cycle`](crate::schedule::creates_cycle) and
//! [`creates_cycle_in_tree`](crate::schedule::creates_cycle_in_tree), which scan every
//! dependency at every step; here each step looks only at the dependencies of the nodes it
//! reaches, so a check costs what it walks, not the tree's dependencies, and the graph can be
//! kept across the writes of a bulk call (`insert`, `remove`).
//!
//! A dependency links two nodes of one tree, so a cycle never leaves its tree: the graph of the
//! tree the new dependency is in is all a check needs.

use std::collections::{HashMap, HashSet};

use uuid::Uuid;

/// Why a dependency is refused (each is a 400 naming `successorId`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The same predecessor and successor exist already.
    Exists,
    /// The predecessor can be reached from the successor (or is the successor).
    Cycle,
    /// One end is an ancestor of the other.
    Related,
    /// A chain of dependencies through the containers leads back.
    CycleThroughContainers,
}

impl Refusal {
    /// The message of the 400.
    pub fn message(self) -> &'static str {
        match self {
            Refusal::Exists => "this dependency already exists",
            Refusal::Cycle => "this dependency would close a cycle",
            Refusal::Related => {
                "a dependency cannot link a deliverable and one of its own ancestors or descendants"
            }
            Refusal::CycleThroughContainers => {
                "this dependency would close a cycle through the containers it constrains"
            }
        }
    }
}

/// The dependencies of one tree, by id, with the paths of the nodes they name.
#[derive(Debug, Default, Clone)]
pub struct DependencyGraph {
    /// Dependency id → (predecessor, successor).
    edges: HashMap<Uuid, (Uuid, Uuid)>,
    /// Predecessor → the dependencies it starts.
    by_pred: HashMap<Uuid, Vec<Uuid>>,
    /// A node → the dependencies whose predecessor lies strictly below it.
    below: HashMap<Uuid, Vec<Uuid>>,
    /// A node → its ancestors and itself (its tree path, in any order).
    paths: HashMap<Uuid, Vec<Uuid>>,
}

impl DependencyGraph {
    pub fn new() -> Self {
        Self::default()
    }

    /// How many dependencies it holds.
    pub fn len(&self) -> usize {
        self.edges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.edges.is_empty()
    }

    /// Whether the path of `node` is known.
    pub fn knows(&self, node: Uuid) -> bool {
        self.paths.contains_key(&node)
    }

    /// Learns the path of `node`: its ancestors and itself. Needed for both ends of a
    /// dependency before it is inserted or checked.
    pub fn know(&mut self, node: Uuid, mut path: Vec<Uuid>) {
        if !path.contains(&node) {
            path.push(node);
        }
        self.paths.insert(node, path);
    }

    /// Whether the dependency `id` is held.
    pub fn contains(&self, id: Uuid) -> bool {
        self.edges.contains_key(&id)
    }

    /// Adds (or replaces) the dependency `id`. The path of `pred` must be known.
    pub fn insert(&mut self, id: Uuid, pred: Uuid, succ: Uuid) {
        self.remove(id);
        self.edges.insert(id, (pred, succ));
        self.by_pred.entry(pred).or_default().push(id);
        if let Some(path) = self.paths.get(&pred) {
            for a in path.iter().filter(|a| **a != pred) {
                self.below.entry(*a).or_default().push(id);
            }
        }
    }

    /// Removes the dependency `id`, if held.
    pub fn remove(&mut self, id: Uuid) {
        let Some((pred, _)) = self.edges.remove(&id) else {
            return;
        };
        if let Some(list) = self.by_pred.get_mut(&pred) {
            list.retain(|d| *d != id);
        }
        if let Some(path) = self.paths.get(&pred) {
            for a in path.iter().filter(|a| **a != pred) {
                if let Some(list) = self.below.get_mut(a) {
                    list.retain(|d| *d != id);
                }
            }
        }
    }

    /// `a` is `b`, or one holds the other.
    fn related(&self, a: Uuid, b: Uuid) -> bool {
        a == b
            || self.paths.get(&a).is_some_and(|p| p.contains(&b))
            || self.paths.get(&b).is_some_and(|p| p.contains(&a))
    }

    /// Whether the dependency `pred → succ` may be added to the graph as it is without the
    /// dependency `except` (the one being changed, when it is a change). The paths of `pred`
    /// and `succ` must be known. The same answers, in the same order, as the rules of
    /// `creates_cycle` and `creates_cycle_in_tree` over the graph's dependencies.
    pub fn check(&self, except: Option<Uuid>, pred: Uuid, succ: Uuid) -> Result<(), Refusal> {
        let live = |id: &Uuid| Some(*id) != except;
        let starting = |n: Uuid| {
            self.by_pred
                .get(&n)
                .into_iter()
                .flatten()
                .filter(|d| live(d))
                .map(|d| self.edges[d])
        };
        if starting(pred).any(|(_, s)| s == succ) {
            return Err(Refusal::Exists);
        }
        // A cycle appears when `pred` is reachable from `succ`.
        let mut stack = vec![succ];
        let mut seen = HashSet::new();
        while let Some(n) = stack.pop() {
            if n == pred {
                return Err(Refusal::Cycle);
            }
            if seen.insert(n) {
                stack.extend(starting(n).map(|(_, s)| s));
            }
        }
        if self.related(pred, succ) {
            return Err(Refusal::Related);
        }
        // From the new dependency, follow the dependencies whose predecessor is related to the
        // node reached (the node, an ancestor of it, or a node below it); a cycle comes back to
        // a node related to `pred`.
        let mut stack = vec![succ];
        let mut seen_nodes = HashSet::new();
        let mut seen_edges = HashSet::new();
        while let Some(at) = stack.pop() {
            if self.related(at, pred) {
                return Err(Refusal::CycleThroughContainers);
            }
            if !seen_nodes.insert(at) {
                continue;
            }
            let own = [at];
            let above = self.paths.get(&at).map_or(&own[..], Vec::as_slice);
            let ids = above
                .iter()
                .filter_map(|a| self.by_pred.get(a))
                .chain(self.below.get(&at))
                .flatten();
            for id in ids {
                if live(id) && seen_edges.insert(*id) {
                    stack.push(self.edges[id].1);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{creates_cycle, creates_cycle_in_tree};
    use proptest::prelude::*;

    fn id(n: usize) -> Uuid {
        Uuid::from_u128(n as u128 + 1)
    }

    /// Node 0 is the root; node `i` hangs under one of the nodes before it.
    fn paths(parents: &[usize]) -> HashMap<Uuid, Vec<Uuid>> {
        let mut parent = vec![None];
        for (i, p) in parents.iter().enumerate() {
            parent.push(Some(p % (i + 1)));
        }
        (0..parent.len())
            .map(|n| {
                let mut line = vec![id(n)];
                let mut x = n;
                while let Some(up) = parent[x] {
                    line.push(id(up));
                    x = up;
                }
                (id(n), line)
            })
            .collect()
    }

    /// The reference: the two scans of `schedule`, in the server's order.
    fn reference(
        edges: &[(Uuid, Uuid)],
        paths: &HashMap<Uuid, Vec<Uuid>>,
        pred: Uuid,
        succ: Uuid,
    ) -> Result<(), Refusal> {
        if edges.contains(&(pred, succ)) {
            return Err(Refusal::Exists);
        }
        if creates_cycle(edges, pred, succ) {
            return Err(Refusal::Cycle);
        }
        let related = |a: Uuid, b: Uuid| paths.get(&a).is_some_and(|l| l.contains(&b));
        if related(pred, succ) || related(succ, pred) {
            return Err(Refusal::Related);
        }
        if creates_cycle_in_tree(edges, paths, pred, succ) {
            return Err(Refusal::CycleThroughContainers);
        }
        Ok(())
    }

    #[test]
    fn a_chain_of_phases_refuses_the_step_going_back() {
        // 0: order; 1, 2: phases; 3, 4 under 1; 5, 6 under 2.
        let p = paths(&[0, 0, 1, 1, 2, 2]);
        let mut g = DependencyGraph::new();
        for (n, line) in &p {
            g.know(*n, line.clone());
        }
        g.insert(Uuid::from_u128(100), id(1), id(2));
        assert_eq!(g.check(None, id(1), id(2)), Err(Refusal::Exists));
        assert_eq!(g.check(None, id(2), id(1)), Err(Refusal::Cycle));
        assert_eq!(g.check(None, id(3), id(1)), Err(Refusal::Related));
        assert_eq!(
            g.check(None, id(5), id(3)),
            Err(Refusal::CycleThroughContainers)
        );
        assert_eq!(g.check(None, id(3), id(5)), Ok(()));
        // Changing the dependency itself: it does not count against its new ends.
        assert_eq!(g.check(Some(Uuid::from_u128(100)), id(2), id(1)), Ok(()));
        g.remove(Uuid::from_u128(100));
        assert_eq!(g.check(None, id(5), id(3)), Ok(()));
        assert!(g.is_empty());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any tree, any sequence of dependencies offered (some then removed): the graph
        /// answers what the scans over every dependency answer, and keeps what they keep.
        #[test]
        fn answers_what_the_scans_answer(
            parents in proptest::collection::vec(0usize..1000, 1..24),
            offers in proptest::collection::vec((0usize..1000, 0usize..1000, 0u8..10), 0..60),
        ) {
            let p = paths(&parents);
            let count = parents.len() + 1;
            let mut g = DependencyGraph::new();
            for (n, line) in &p {
                g.know(*n, line.clone());
            }
            let mut edges: Vec<(Uuid, Uuid, Uuid)> = Vec::new();
            for (i, (a, b, op)) in offers.iter().enumerate() {
                let (a, b) = (id(a % count), id(b % count));
                if *op == 0 && !edges.is_empty() {
                    // Remove one.
                    let (d, _, _) = edges.remove(i % edges.len());
                    g.remove(d);
                    continue;
                }
                // A change of an existing dependency, or a new one.
                let except = (*op == 1 && !edges.is_empty()).then(|| edges[i % edges.len()].0);
                let others: Vec<(Uuid, Uuid)> = edges
                    .iter()
                    .filter(|(d, _, _)| Some(*d) != except)
                    .map(|(_, p, s)| (*p, *s))
                    .collect();
                let want = reference(&others, &p, a, b);
                prop_assert_eq!(g.check(except, a, b), want, "{:?} -> {:?}", a, b);
                if want.is_ok() {
                    let d = except.unwrap_or(Uuid::from_u128(10_000 + i as u128));
                    edges.retain(|(x, _, _)| *x != d);
                    edges.push((d, a, b));
                    g.insert(d, a, b);
                }
            }
            prop_assert_eq!(g.len(), edges.len());
        }
    }
}
