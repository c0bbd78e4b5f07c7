//! `GET /deliverable/{id}/explain` (docs/deliverables.md, "Why? (explain)"): the facts core's
//! `explain` turns into reasons, read in one read transaction. The reasoning is core's
//! (`prodops_core::explain`); this module only reads.
//!
//! It reads across families (the tree, dependencies, QC sets, BOM lines, stock), so it sits
//! above them all in layer 4 (`tests/layers.rs`): it uses the deliverables' readers
//! (`readiness::dependencies_by`, `qc_gate`), the plans' (`owned`, `order_quantity`) and the
//! inventory's (`reservations`, `units`), and no family uses it.
//!
//! What it costs: the node, its predecessors, the children of each node on a lateness path
//! (a path is at most as long as the tree is deep), a stage's qcsteps and their sets, and the
//! order's BOM lines with the stock of their items. Never the whole tree.

use std::collections::HashSet;

use prodops_core::api;
use prodops_core::bom_actions::on_order;
use prodops_core::deliverable::{Deliverable, DeliverableType, ProgressStatus};
use prodops_core::explain::{self, Along, Facts, LineFacts, QcFacts};
use prodops_core::inventory::from_micros;
use prodops_core::production::BomLine;
use prodops_core::production_actions::{lines_drawn_by, planned_for_order, remaining};
use prodops_core::qc::SetVerdict;
use prodops_core::registry::ResourceId;
use prodops_core::tree;
use serde_json::Value;
use uuid::Uuid;

use crate::deliverables::qc_gate::{Counting, counted_sets, verdict};
use crate::deliverables::readiness::dependencies_by;
use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::http::typed::Answered;
use crate::inventory::reservations;
use crate::inventory::units::Converter;
use crate::plans::{order_quantity, owned};
use crate::store::Tx;
use crate::store::records;

crate::http::action::handle! {
    api::deliverable::Explain => explain_deliverable;
}

async fn explain_deliverable(
    call: Call,
    id: Uuid,
    (): (),
    (): (),
) -> ApiResult<Answered<api::deliverable::Explain>> {
    // Lateness is as of the read, on the server's clock, as every read answers alerts.
    let now = call.state.clock.as_of();
    let answer = call
        .read(move |tx, ctx| {
            let read = Read::of(tx, ctx, id)?;
            Ok(explain::explain(&read.facts(), &now))
        })
        .await?;
    Ok(Answered::new(answer.into()))
}

/// A qcstep, its QC template, the template's version in force (and whether it requires
/// pass/fail) and the step's sets of it.
type Gate = (Deliverable, Uuid, Option<(i64, bool)>, Vec<SetVerdict>);

/// The facts, owned (core's [`Facts`] borrows them).
struct Read {
    node: Deliverable,
    predecessors: Vec<(Uuid, Deliverable)>,
    late_path: Vec<Deliverable>,
    at_risk_path: Vec<Deliverable>,
    qc: Vec<Gate>,
    materials: Vec<LineFacts>,
}

impl Read {
    fn of(tx: &mut dyn Tx, ctx: &Ctx, id: Uuid) -> ApiResult<Read> {
        // Scoped by the key's organization: another organization's id is a 404.
        let node: Deliverable =
            read_stored(&deliverable(tx, ctx, id)?.ok_or_else(ApiError::not_found)?)?;
        let predecessors = predecessors(tx, ctx, &node)?;
        let org = ctx.org();
        let late_path = explain::path_down(&node, Along::Late, |p| children(tx, org, p))?;
        let at_risk_path = explain::path_down(&node, Along::AtRisk, |p| children(tx, org, p))?;
        let qc = qc_gates(tx, ctx, &node)?;
        let materials = materials(tx, ctx, &node)?;
        Ok(Read {
            node,
            predecessors,
            late_path,
            at_risk_path,
            qc,
            materials,
        })
    }

    fn facts(&self) -> Facts<'_> {
        Facts {
            node: &self.node,
            predecessors: self.predecessors.iter().map(|(d, p)| (*d, p)).collect(),
            late_path: self.late_path.iter().collect(),
            at_risk_path: self.at_risk_path.iter().collect(),
            qc: self
                .qc
                .iter()
                .map(|(step, template, in_force, sets)| QcFacts {
                    step,
                    qc_template_id: *template,
                    in_force: *in_force,
                    sets: sets.clone(),
                })
                .collect(),
            materials: self.materials.clone(),
        }
    }
}

fn deliverable(tx: &mut dyn Tx, ctx: &Ctx, id: Uuid) -> ApiResult<Option<Value>> {
    Ok(records::get(
        tx,
        ResourceId::Deliverable.kind().desc().table,
        ctx.org(),
        id,
    )?)
}

/// The non-archived children of `parent`, in sibling order, through the tree index.
fn children(tx: &mut dyn Tx, org: Uuid, parent: Uuid) -> ApiResult<Vec<Deliverable>> {
    let rows = crate::store::deliverables::children_with_records(tx, org, &[parent])?;
    let mut out = Vec::with_capacity(rows.len());
    for (_, _, text) in rows {
        let Some(text) = text else { continue };
        let d: Deliverable = serde_json::from_str(&text).map_err(ApiError::internal)?;
        if !d.is_archived {
            out.push(d);
        }
    }
    Ok(out)
}

/// The node's non-archived predecessors, each with its dependency's id (through the
/// `(organization_id, successorId)` index).
fn predecessors(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    node: &Deliverable,
) -> ApiResult<Vec<(Uuid, Deliverable)>> {
    let mut out = Vec::new();
    for dep in dependencies_by(tx, ctx.org(), "successorId", &[node.id])? {
        let Some(pred) = deliverable(tx, ctx, dep.predecessor_id)? else {
            continue;
        };
        let pred: Deliverable = read_stored(&pred)?;
        if !pred.is_archived {
            out.push((dep.id, pred));
        }
    }
    Ok(out)
}

/// The gates the node's completion passes: its own (a qcstep), or those of a stage's qcsteps
/// not yet done (completing a stage completes its steps, each through its gate).
fn qc_gates(tx: &mut dyn Tx, ctx: &Ctx, node: &Deliverable) -> ApiResult<Vec<Gate>> {
    if tree::status(node) == ProgressStatus::Done {
        return Ok(Vec::new());
    }
    let steps = match node.kind {
        DeliverableType::Qcstep => vec![node.clone()],
        DeliverableType::Stage => children(tx, ctx.org(), node.id)?
            .into_iter()
            .filter(|c| {
                c.kind == DeliverableType::Qcstep && tree::status(c) != ProgressStatus::Done
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for step in steps {
        let Some(template) = tree::data_uuid(&step, "qcTemplateId") else {
            continue;
        };
        let counting = Counting::of(tx, ctx, &step)?;
        let sets = counted_sets(tx, ctx, step.id, &counting)?
            .iter()
            .map(verdict)
            .collect();
        out.push((step.clone(), template, counting.in_force(), sets));
    }
    Ok(out)
}

/// The BOM lines the node draws (`production_actions::lines_drawn_by`: an order draws all its
/// lines, a node below it those placed on it or below it) that still need something, with the
/// stock of their items; quantities in each item's base unit.
fn materials(tx: &mut dyn Tx, ctx: &Ctx, node: &Deliverable) -> ApiResult<Vec<LineFacts>> {
    if tree::status(node) == ProgressStatus::Done {
        return Ok(Vec::new());
    }
    let order_id = node.root_parent_id.unwrap_or(node.id);
    let Some(order) = deliverable(tx, ctx, order_id)? else {
        return Ok(Vec::new());
    };
    // BOM lines of a tree belong to its root order (routes and projects have lines too, but
    // nothing draws on them).
    let is_order = order.get("type").and_then(Value::as_str) == Some("order");
    if !is_order {
        return Ok(Vec::new());
    }
    let lines: Vec<BomLine> = owned(
        tx,
        ctx,
        ctx.resource(ResourceId::BomLine),
        "orderDeliverableId",
        order_id,
    )?
    .iter()
    .map(read_stored)
    .collect::<ApiResult<_>>()?;
    // The placements in the node's subtree: those whose path from the root passes the node.
    let mut subtree = HashSet::new();
    if node.id != order_id {
        let placed: HashSet<Uuid> = lines
            .iter()
            .filter_map(|l| l.placed_on_deliverable_id)
            .collect();
        let me = node.id.to_string();
        for p in placed {
            let under = p == node.id
                || deliverable(tx, ctx, p)?.is_some_and(|d| {
                    d.pointer("/computed/fullPath")
                        .and_then(Value::as_array)
                        .is_some_and(|path| path.iter().any(|x| x.as_str() == Some(&me)))
                });
            if under {
                subtree.insert(p);
            }
        }
    }
    let quantity = order_quantity(&order);
    let mut units = Converter::default();
    let mut out = Vec::new();
    for i in lines_drawn_by(&lines, node.id, order_id, &subtree) {
        let line = &lines[i];
        let planned = planned_for_order(line, quantity);
        let mut base =
            |tx: &mut dyn Tx, q: f64| units.to_base(tx, ctx, line.item_id, line.unit_measure_id, q);
        let needed = base(tx, remaining(planned, line.quantity_actual))?;
        if needed <= 0.0 {
            continue;
        }
        let on_order = base(tx, on_order(line, planned))?;
        let (on_hand, reserved) = reservations::item_totals(tx, ctx.org(), line.item_id)?;
        let mine = reservations::line_reserved(tx, ctx, line.id)?;
        out.push(LineFacts {
            bom_line_id: line.id,
            name: line.name.clone(),
            identifier: line.identifier.clone(),
            item_id: line.item_id,
            placed_on_deliverable_id: line.placed_on_deliverable_id,
            needed,
            on_order,
            on_hand: from_micros(on_hand),
            reserved: from_micros(reserved),
            reserved_for_line: from_micros(mine),
        });
    }
    Ok(out)
}
