//! `POST /deliverable/{id}/apply-template` (spec 2.1): a route applied onto an order, phase or
//! component, or a template-phase onto a phase, in one transaction.
//!
//! Core (`prodops_core::template`) decides what applies where, the copy plan, the remapping of
//! dependencies and the scaling; this module reads the template, and writes every copy through
//! the engine pipeline: the nodes as one deferred batch (identifiers taken in blocks, the tree
//! refreshed once at the end, as a bulk write does), then the dependencies, BOM lines and output
//! declarations, each through its resource's hooks and rules.

use prodops_core::registry::ResourceId;
use std::collections::HashMap;

use prodops_core::deliverable::{Deliverable, DeliverableType};
use prodops_core::minimal::Dependency;
use prodops_core::production::{
    BomLine, BomMode, BomScaling, BomSource, OutputSource, ProductionOutput,
};
use prodops_core::template::{
    AppliedNode, ApplyTemplateRequest, ApplyTemplateResult, TemplateNode, check_application,
    copied_placement, copy_plan, remap_dependencies, scaled_line_quantity, scaled_output_quantity,
};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::deliverables::tree::{raw_records, tree_row};
use crate::engine::{create_records_held, create_server_typed, record_body};
use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::http::typed::Answered;
use crate::plans::{SOURCE_LINE, SOURCE_OUTPUT};
use crate::plans::{deliverable, lock_owner, order_quantity, owned, uuid_field};
use crate::store::Tx;
use prodops_core::api;

fn kind_of(v: &Value) -> Option<DeliverableType> {
    v.get("type")
        .and_then(|t| serde_json::from_value(t.clone()).ok())
}

pub(super) async fn apply_template(
    call: Call,
    id: Uuid,
    (): (),
    req: ApplyTemplateRequest,
) -> ApiResult<Answered<api::production::ApplyTemplate>> {
    call.write(move |tx, ctx| Ok(apply_template_in(tx, ctx, id, &req)?.into()))
        .await
}

/// The application inside a transaction.
pub fn apply_template_in(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    target_id: Uuid,
    req: &ApplyTemplateRequest,
) -> ApiResult<ApplyTemplateResult> {
    let target = deliverable(tx, ctx, target_id)?.ok_or_else(ApiError::not_found)?;
    let template_id = req.template_id;
    let template = deliverable(tx, ctx, template_id)?.ok_or_else(|| {
        ApiError::field(
            "templateId",
            format!("no deliverable {template_id} in this organization"),
        )
    })?;
    let (Some(target_kind), Some(template_kind)) = (kind_of(&target), kind_of(&template)) else {
        return Err(ApiError::internal("stored deliverable without a type"));
    };
    let target_row = tree_row(tx, ctx.org(), target_id)?
        .ok_or_else(|| ApiError::internal("deliverable without a tree row"))?;
    let order_id = target_row.root_id;
    let order = deliverable(tx, ctx, order_id)?
        .ok_or_else(|| ApiError::internal("tree row naming a missing root"))?;
    let root_kind = kind_of(&order).unwrap_or(target_kind);
    check_application(
        template_kind,
        uuid_field(&template, "parentId").is_some(),
        target_kind,
        root_kind,
    )
    .map_err(|v| ApiError::violations(vec![v]))?;
    if target.get("isArchived").and_then(Value::as_bool) == Some(true) {
        // The target's state refuses the change: a conflict (409), not a bad request.
        return Err(ApiError::conflicts(vec![prodops_core::Violation::field(
            "id",
            "the target is archived; restore it before applying a template",
        )]));
    }
    // The order's production records change: serialized with its production actions.
    lock_owner(tx, ctx, order_id)?;
    let target_quantity = order_quantity(&target);

    // The template's subtree, read through the tree index.
    let template_row = tree_row(tx, ctx.org(), template_id)?
        .ok_or_else(|| ApiError::internal("deliverable without a tree row"))?;
    let mut sources: HashMap<Uuid, Deliverable> = HashMap::new();
    let mut nodes = Vec::new();
    for (id, parent, sort_key, _, text) in raw_records(tx, ctx.org(), &template_row)? {
        let record: Deliverable = serde_json::from_str(&text).map_err(ApiError::internal)?;
        nodes.push(TemplateNode {
            id,
            parent_id: parent,
            sort_key,
            is_archived: record.is_archived,
        });
        sources.insert(id, record);
    }
    let plan = copy_plan(template_id, &nodes);

    // The nodes, as one deferred batch of the deliverable resource.
    let res = ctx.resource(ResourceId::Deliverable);
    let batch = ctx.deferring();
    let mut copies: HashMap<Uuid, Uuid> = HashMap::with_capacity(plan.len());
    let mut applied = Vec::with_capacity(plan.len());
    for step in &plan {
        let source = &sources[&step.source];
        let parent = step.parent.map_or(target_id, |p| copies[&p]);
        // The copy takes the template node's name, type, quantities, crew and cost code, and
        // `data` as the template has it (stageId, qcTemplateId, ...) without custom property
        // values, which belong to orders; everything else is its own (a new id and
        // identifier, its parent, computed fields, no progress or schedule).
        let mut data = source.data.clone();
        data.remove("properties");
        let copy = Deliverable {
            id: Uuid::now_v7(),
            organization_id: ctx.org(),
            identifier: String::new(),
            name: source.name.clone(),
            kind: source.kind,
            quantity: source.quantity,
            parent_id: Some(parent),
            root_parent_id: None,
            origin_template_id: Some(template_id),
            cycle_time_sec: source.cycle_time_sec,
            duration_sec: source.duration_sec,
            people_num: source.people_num,
            data,
            cost_code: source.cost_code.clone(),
            schedule: None,
            progress: None,
            computed: Default::default(),
            is_archived: false,
            created_at: ctx.now,
            updated_at: ctx.now,
        };
        let created = create_server_typed(tx, &batch, res, &copy)?;
        let id = uuid_field(&created, "id").unwrap_or_default();
        copies.insert(step.source, id);
        applied.push(AppliedNode {
            template_node_id: step.source,
            id,
            identifier: created
                .get("identifier")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            parent_id: parent,
        });
    }
    res.hooks.end_bulk(tx, &batch, res)?;

    // Dependencies between copied nodes, remapped.
    // Those of the template's tree only (a dependency never leaves its tree), created as one
    // deferred batch: each checked against the target tree's graph, read once.
    let deps_res = ctx.resource(ResourceId::Dependency);
    let mut found =
        crate::deliverables::dependencies::tree_dependencies(tx, ctx.org(), &template_row)?;
    // In the order they were created (generated ids are UUIDv7).
    found.sort_by_key(|d| d.0);
    let edges: Vec<(Uuid, Uuid)> = found.into_iter().map(|(_, p, _, s, _)| (p, s)).collect();
    let batch = ctx.deferring();
    let bodies: Vec<Map<String, Value>> = remap_dependencies(&edges, &copies)
        .into_iter()
        .map(|(predecessor_id, successor_id)| {
            record_body(&Dependency {
                id: Uuid::now_v7(),
                organization_id: ctx.org(),
                predecessor_id,
                successor_id,
                created_at: ctx.now,
                updated_at: ctx.now,
            })
        })
        .collect::<ApiResult<_>>()?;
    let mut dependencies = Vec::with_capacity(bodies.len());
    for created in create_records_held(tx, &batch, deps_res, bodies)? {
        dependencies.push(read_stored(&created)?);
    }
    deps_res.hooks.end_bulk(tx, &batch, deps_res)?;

    // A route's BOM lines and output declarations, onto the order, scaled to the target.
    let mut bom_lines = Vec::new();
    let mut outputs = Vec::new();
    if template_kind == DeliverableType::Route {
        let target_is_order = target_id == order_id;
        for src in owned(
            tx,
            ctx,
            ctx.resource(ResourceId::BomLine),
            "routeDeliverableId",
            template_id,
        )? {
            let line: BomLine = read_stored(&src)?;
            let copy = BomLine {
                id: Uuid::now_v7(),
                organization_id: ctx.org(),
                name: line.name.clone(),
                identifier: String::new(),
                item_id: line.item_id,
                route_deliverable_id: None,
                order_deliverable_id: Some(order_id),
                project_id: None,
                placed_on_deliverable_id: copied_placement(
                    &line,
                    &copies,
                    target_id,
                    target_is_order,
                ),
                mode: Some(BomMode::Total),
                scaling: Some(BomScaling::PerOrder),
                output_per_unit: None,
                quantity: Some(scaled_line_quantity(&line, target_quantity)),
                quantity_actual: 0.0,
                unit_measure_id: line.unit_measure_id,
                po_number: line.po_number.clone(),
                sub_order_ref: line.sub_order_ref.clone(),
                source: BomSource::RouteTemplate,
                sort_order: line.sort_order,
                notes: line.notes.clone(),
                metadata: provenance(SOURCE_LINE, line.id, target_id),
                is_archived: false,
                archived_at: None,
                created_at: ctx.now,
                updated_at: ctx.now,
            };
            bom_lines.push(read_stored(&create_server_typed(
                tx,
                ctx,
                ctx.resource(ResourceId::BomLine),
                &copy,
            )?)?);
        }
        for src in owned(
            tx,
            ctx,
            ctx.resource(ResourceId::ProductionOutput),
            "routeDeliverableId",
            template_id,
        )? {
            let decl: ProductionOutput = read_stored(&src)?;
            let copy = ProductionOutput {
                id: Uuid::now_v7(),
                organization_id: ctx.org(),
                name: decl.name.clone(),
                identifier: String::new(),
                item_id: decl.item_id,
                route_deliverable_id: None,
                order_deliverable_id: Some(order_id),
                produced_per_unit: decl.produced_per_unit,
                quantity: scaled_output_quantity(&decl, target_quantity),
                quantity_actual: 0.0,
                location_id: decl.location_id,
                unit_measure_id: decl.unit_measure_id,
                source: OutputSource::RouteTemplate,
                sort_order: decl.sort_order,
                notes: decl.notes.clone(),
                metadata: provenance(SOURCE_OUTPUT, decl.id, target_id),
                is_archived: false,
                archived_at: None,
                created_at: ctx.now,
                updated_at: ctx.now,
            };
            outputs.push(read_stored(&create_server_typed(
                tx,
                ctx,
                ctx.resource(ResourceId::ProductionOutput),
                &copy,
            )?)?);
        }
    }
    Ok(ApplyTemplateResult {
        template_id,
        target_id,
        order_id,
        target_quantity,
        nodes: applied,
        dependencies,
        bom_lines,
        outputs,
    })
}

/// Where a copied line or declaration came from: its route record (the key prepopulate also
/// reads, so a later prepopulate from the same route does not copy it again) and the target.
fn provenance(source_key: &str, source: Uuid, target: Uuid) -> Map<String, Value> {
    Map::from_iter([
        (source_key.to_string(), json!(source)),
        ("appliedOnDeliverableId".to_string(), json!(target)),
    ])
}
