//! Applying a template onto a deliverable (spec 2.1): a route is a reusable process blueprint
//! applied onto orders, phases or components; a template-phase is applied to a phase.
//!
//! Applying copies the template's subtree (every node below the template root, not the root
//! itself) under the target, each copy with `originTemplateId` set to the template; the route's
//! dependencies between copied nodes are copied too, remapped; the route's BOM lines and output
//! declarations are copied onto the target's order, scaled to the target's quantity. These are
//! the rules of that copy as functions; the server reads the facts and writes the plan.

use std::collections::{HashMap, HashSet};

use crate::openapi::ToSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::deliverable::DeliverableType;
use crate::inventory::round_quantity;
use crate::minimal::Dependency;
use crate::production::{BomLine, ProductionOutput};
use crate::production_actions::planned_for_order;
use crate::violation::Violation;

/// `POST /deliverable/{id}/apply-template`: the template applied onto the deliverable `{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyTemplateRequest {
    /// A root route (onto an order, phase or component) or a root template-phase (onto a phase).
    pub template_id: Uuid,
}

/// One node the application created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppliedNode {
    /// The template node it copies.
    pub template_node_id: Uuid,
    /// The new deliverable.
    pub id: Uuid,
    /// Its generated identifier.
    pub identifier: String,
    /// Its parent: the target or another copy.
    pub parent_id: Uuid,
}

/// The `value` of an apply-template answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplyTemplateResult {
    pub template_id: Uuid,
    pub target_id: Uuid,
    /// The order the target belongs to (owner of the copied lines and declarations).
    pub order_id: Uuid,
    /// The target's quantity, which per-unit figures were scaled by.
    pub target_quantity: f64,
    /// The copied nodes, parents before children, siblings in the template's order.
    pub nodes: Vec<AppliedNode>,
    /// The copied dependencies, between copied nodes.
    pub dependencies: Vec<Dependency>,
    /// The route's BOM lines as new lines of the order.
    pub bom_lines: Vec<BomLine>,
    /// The route's output declarations as new declarations of the order.
    pub outputs: Vec<ProductionOutput>,
}

/// Which templates apply onto which targets (spec 2.1), and that the target is inside an order
/// (the copied lines and declarations belong to it). `template_has_parent`: whether the
/// template is nested (a template is a root); `target_root`: the type of the target's root
/// (itself for a root).
pub fn check_application(
    template: DeliverableType,
    template_has_parent: bool,
    target: DeliverableType,
    target_root: DeliverableType,
) -> Result<(), Violation> {
    use DeliverableType::*;
    let targets: &[DeliverableType] = match template {
        Route => &[Order, Phase, Component],
        TemplatePhase => &[Phase],
        other => {
            return Err(Violation::field(
                "templateId",
                format!("a template is a route or a template-phase, not a {other}"),
            ));
        }
    };
    if template_has_parent {
        return Err(Violation::field(
            "templateId",
            format!("a template is a root {template}, not a nested one"),
        ));
    }
    if !targets.contains(&target) {
        let names: Vec<&str> = targets.iter().map(|t| t.as_str()).collect();
        return Err(Violation::field(
            "id",
            format!(
                "a {template} is applied onto {}, not onto a {target}",
                names.join(", ")
            ),
        ));
    }
    if target_root != Order {
        return Err(Violation::field(
            "id",
            format!(
                "templates are applied onto orders or nodes under an order; this {target} is under a {target_root}"
            ),
        ));
    }
    Ok(())
}

/// A node of the template's subtree, as the tree index holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TemplateNode {
    pub id: Uuid,
    pub parent_id: Option<Uuid>,
    /// Order among siblings.
    pub sort_key: i64,
    pub is_archived: bool,
}

/// One node to create: a copy of `source` under the copy of `parent` (`None`: under the target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyStep {
    pub source: Uuid,
    pub parent: Option<Uuid>,
}

/// The order in which to copy a template's subtree: every node below `root` (the root itself is
/// not copied: its children go under the target), parents before children, siblings in their
/// order (sort key, then id) so the copies, each appended last among its siblings, keep it.
/// Archived nodes and everything below them are left out. Nodes not connected to `root` are
/// ignored.
pub fn copy_plan(root: Uuid, nodes: &[TemplateNode]) -> Vec<CopyStep> {
    let mut children: HashMap<Uuid, Vec<&TemplateNode>> = HashMap::new();
    for n in nodes {
        if let Some(p) = n.parent_id
            && n.id != root
        {
            children.entry(p).or_default().push(n);
        }
    }
    for list in children.values_mut() {
        list.sort_by_key(|n| (n.sort_key, n.id));
    }
    let mut plan = Vec::new();
    // Depth first keeps each subtree together; any parent-first order would do.
    let mut stack: Vec<(&TemplateNode, Option<Uuid>)> = children
        .get(&root)
        .map(|l| l.iter().rev().map(|n| (*n, None)).collect())
        .unwrap_or_default();
    let mut seen = HashSet::new();
    while let Some((node, parent)) = stack.pop() {
        if node.is_archived || !seen.insert(node.id) {
            continue;
        }
        plan.push(CopyStep {
            source: node.id,
            parent,
        });
        if let Some(kids) = children.get(&node.id) {
            stack.extend(kids.iter().rev().map(|k| (*k, Some(node.id))));
        }
    }
    plan
}

/// The dependencies to copy: those whose both ends were copied, each end replaced by its copy.
pub fn remap_dependencies(
    edges: &[(Uuid, Uuid)],
    copies: &HashMap<Uuid, Uuid>,
) -> Vec<(Uuid, Uuid)> {
    edges
        .iter()
        .filter_map(|(p, s)| Some((*copies.get(p)?, *copies.get(s)?)))
        .collect()
}

/// A route line's quantity for a target of `target_quantity` units (spec 2.3 rules 4, 5): ratio
/// lines `outputPerUnit x quantity`, per-unit totals `quantity x quantity`, per-order totals
/// their `quantity` once. The copy is a per-order total of this quantity on the order.
pub fn scaled_line_quantity(line: &BomLine, target_quantity: f64) -> f64 {
    planned_for_order(line, target_quantity)
}

/// A route declaration's planned quantity for a target of `target_quantity` units:
/// `producedPerUnit x quantity` (spec 2.2 rule 3: a route declaration has a positive
/// `producedPerUnit`), else its own `quantity`.
pub fn scaled_output_quantity(decl: &ProductionOutput, target_quantity: f64) -> Option<f64> {
    decl.produced_per_unit
        .map(|p| p * target_quantity)
        .or(decl.quantity)
        .map(round_quantity)
        .filter(|q| *q > 0.0)
}

/// Where a copied line is placed: on the copy of the route node it was placed on, else on the
/// target (`None` when the target is the order itself: the line belongs to the whole order).
pub fn copied_placement(
    line: &BomLine,
    copies: &HashMap<Uuid, Uuid>,
    target: Uuid,
    target_is_order: bool,
) -> Option<Uuid> {
    line.placed_on_deliverable_id
        .and_then(|p| copies.get(&p).copied())
        .or(if target_is_order { None } else { Some(target) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::testing::parse;
    use proptest::prelude::*;
    use serde_json::json;

    fn id(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn node(n: u128, parent: u128, key: i64) -> TemplateNode {
        TemplateNode {
            id: id(n),
            parent_id: Some(id(parent)),
            sort_key: key,
            is_archived: false,
        }
    }

    #[test]
    fn which_templates_apply_where() {
        use DeliverableType::*;
        for target in [Order, Phase, Component] {
            assert!(check_application(Route, false, target, Order).is_ok());
        }
        assert!(check_application(TemplatePhase, false, Phase, Order).is_ok());
        let err = check_application(TemplatePhase, false, Component, Order).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("id"));
        let err = check_application(Phase, false, Phase, Order).unwrap_err();
        assert_eq!(err.field.as_deref(), Some("templateId"));
        assert!(check_application(Route, true, Phase, Order).is_err());
        assert!(check_application(Route, false, Stage, Order).is_err());
        assert!(
            check_application(Route, false, Phase, Route).is_err(),
            "a route is not applied inside another route"
        );
    }

    #[test]
    fn the_plan_copies_parents_first_in_sibling_order_without_archived_subtrees() {
        let root = id(1);
        let mut archived = node(5, 1, 0);
        archived.is_archived = true;
        let nodes = [
            TemplateNode {
                id: root,
                parent_id: None,
                sort_key: 0,
                is_archived: false,
            },
            node(3, 1, 2),
            node(2, 1, 1),
            node(4, 2, 0),
            archived,
            node(6, 5, 0),
        ];
        let plan = copy_plan(root, &nodes);
        assert_eq!(
            plan,
            vec![
                CopyStep {
                    source: id(2),
                    parent: None
                },
                CopyStep {
                    source: id(4),
                    parent: Some(id(2))
                },
                CopyStep {
                    source: id(3),
                    parent: None
                },
            ]
        );
    }

    #[test]
    fn scaling_and_placement() {
        let line = |fields: serde_json::Value| -> BomLine {
            let mut body = json!({"itemId": id(9), "routeDeliverableId": id(1)});
            body.as_object_mut()
                .unwrap()
                .extend(fields.as_object().unwrap().clone());
            let mut l: BomLine = parse(body);
            crate::resource::Record::normalize(&mut l);
            l
        };
        assert_eq!(
            scaled_line_quantity(&line(json!({"outputPerUnit": 1.5})), 4.0),
            6.0
        );
        assert_eq!(
            scaled_line_quantity(&line(json!({"quantity": 2})), 3.0),
            6.0
        );
        assert_eq!(
            scaled_line_quantity(&line(json!({"quantity": 2, "scaling": "per_order"})), 3.0),
            2.0
        );
        let decl: ProductionOutput =
            parse(json!({"itemId": id(9), "routeDeliverableId": id(1), "producedPerUnit": 2}));
        assert_eq!(scaled_output_quantity(&decl, 5.0), Some(10.0));
        let copies: HashMap<Uuid, Uuid> = [(id(2), id(22))].into();
        let mut placed = line(json!({"quantity": 1}));
        assert_eq!(copied_placement(&placed, &copies, id(50), true), None);
        assert_eq!(
            copied_placement(&placed, &copies, id(50), false),
            Some(id(50))
        );
        placed.placed_on_deliverable_id = Some(id(2));
        assert_eq!(
            copied_placement(&placed, &copies, id(50), true),
            Some(id(22))
        );
    }

    /// A random tree under node 0: node i's parent is some node before it.
    fn tree() -> impl Strategy<Value = Vec<TemplateNode>> {
        proptest::collection::vec(
            (
                any::<prop::sample::Index>(),
                0i64..4,
                proptest::bool::weighted(0.1),
            ),
            0..40,
        )
        .prop_map(|specs| {
            let mut nodes = vec![TemplateNode {
                id: id(0),
                parent_id: None,
                sort_key: 0,
                is_archived: false,
            }];
            for (i, (parent, key, archived)) in specs.into_iter().enumerate() {
                let p = parent.index(i + 1) as u128;
                nodes.push(TemplateNode {
                    id: id(i as u128 + 1),
                    parent_id: Some(id(p)),
                    sort_key: key,
                    is_archived: archived,
                });
            }
            nodes
        })
    }

    proptest! {
        /// The plan copies exactly the nodes below the root with no archived node on their way
        /// up, each once, after its parent, siblings in (sort key, id) order.
        #[test]
        fn copy_plan_is_a_parent_first_copy_of_the_live_subtree(nodes in tree()) {
            let root = id(0);
            let plan = copy_plan(root, &nodes);
            let by_id: HashMap<Uuid, TemplateNode> = nodes.iter().map(|n| (n.id, *n)).collect();
            let live = |mut n: TemplateNode| loop {
                if n.is_archived { return false; }
                match n.parent_id { Some(p) if p == root => return true, Some(p) => n = by_id[&p], None => return false }
            };
            let expected: HashSet<Uuid> = nodes.iter().filter(|n| n.id != root && live(**n)).map(|n| n.id).collect();
            let got: Vec<Uuid> = plan.iter().map(|s| s.source).collect();
            prop_assert_eq!(got.len(), expected.len());
            prop_assert_eq!(got.iter().copied().collect::<HashSet<_>>(), expected);
            let position: HashMap<Uuid, usize> = got.iter().enumerate().map(|(i, s)| (*s, i)).collect();
            for step in &plan {
                let parent = by_id[&step.source].parent_id.unwrap();
                if parent == root {
                    prop_assert_eq!(step.parent, None);
                } else {
                    prop_assert_eq!(step.parent, Some(parent));
                    prop_assert!(position[&parent] < position[&step.source]);
                }
            }
            // Siblings keep their order.
            for a in &plan { for b in &plan {
                if a.parent == b.parent && position[&a.source] < position[&b.source] {
                    let (na, nb) = (by_id[&a.source], by_id[&b.source]);
                    prop_assert!((na.sort_key, na.id) < (nb.sort_key, nb.id));
                }
            }}
        }

        /// Remapped dependencies are exactly those with both ends copied, mapped end by end.
        #[test]
        fn dependencies_keep_only_copied_ends(edges in proptest::collection::vec((0u128..8, 0u128..8), 0..20), copied in proptest::collection::btree_set(0u128..8, 0..8)) {
            let copies: HashMap<Uuid, Uuid> = copied.iter().map(|n| (id(*n), id(100 + n))).collect();
            let edges: Vec<(Uuid, Uuid)> = edges.iter().map(|(a, b)| (id(*a), id(*b))).collect();
            let out = remap_dependencies(&edges, &copies);
            let expected: Vec<(Uuid, Uuid)> = edges.iter().filter(|(a, b)| copies.contains_key(a) && copies.contains_key(b)).map(|(a, b)| (copies[a], copies[b])).collect();
            prop_assert_eq!(out, expected);
        }

        /// Scaling is linear in the target's quantity for per-unit lines and flat per order.
        #[test]
        fn scaling_is_per_unit_times_quantity(per_unit in 0.001f64..1000.0, q in 1i64..500, per_order in any::<bool>()) {
            let mut l: BomLine = parse(json!({"itemId": id(9), "routeDeliverableId": id(1), "quantity": per_unit}));
            if per_order { l.scaling = Some(crate::production::BomScaling::PerOrder); }
            crate::resource::Record::normalize(&mut l);
            let got = scaled_line_quantity(&l, q as f64);
            let want = if per_order { per_unit } else { per_unit * q as f64 };
            prop_assert!((got - round_quantity(want)).abs() < 1e-9);
            prop_assert!(got > 0.0 || want < 1e-6);
        }
    }
}
