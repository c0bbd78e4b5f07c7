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

use prodops_core::deliverable::DeliverableType;
use prodops_core::production::{BomLine, ProductionOutput};
use prodops_core::template::{
    AppliedNode, ApplyTemplateRequest, ApplyTemplateResult, TemplateNode, check_application,
    copied_placement, copy_plan, remap_dependencies, scaled_line_quantity, scaled_output_quantity,
};
use serde_json::{Map, Value, json};
use uuid::Uuid;

use crate::deliverables::tree::{raw_records, tree_row};
use crate::engine::{create_record, create_records_held};
use crate::http::call::Call;
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult, read_stored};
use crate::http::typed::Answered;
use crate::plans::{SOURCE_LINE, SOURCE_OUTPUT};
use crate::plans::{deliverable, lock_owner, order_quantity, owned, uuid_field};
use crate::store::Tx;
use prodops_core::api;

/// The fields a copied node takes from its template node; everything else is the copy's own
/// (new id and identifier, parent, computed fields, no progress or schedule).
const NODE_FIELDS: &[&str] = &[
    "name",
    "type",
    "quantity",
    "cycleTimeSec",
    "durationSec",
    "peopleNum",
    "costCode",
];

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
    let mut sources: HashMap<Uuid, Value> = HashMap::new();
    let mut nodes = Vec::new();
    for (id, parent, sort_key, _, text) in raw_records(tx, ctx.org(), &template_row)? {
        let record: Value = serde_json::from_str(&text).map_err(ApiError::internal)?;
        nodes.push(TemplateNode {
            id,
            parent_id: parent,
            sort_key,
            is_archived: record.get("isArchived").and_then(Value::as_bool) == Some(true),
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
        let mut body = Map::new();
        for f in NODE_FIELDS {
            if let Some(v) = source.get(*f).filter(|v| !v.is_null()) {
                body.insert((*f).to_string(), v.clone());
            }
        }
        // `data` as the template has it (stageId, qcTemplateId, ...), without custom property
        // values, which belong to orders.
        if let Some(Value::Object(data)) = source.get("data") {
            let mut data = data.clone();
            data.remove("properties");
            body.insert("data".into(), Value::Object(data));
        }
        let parent = step.parent.map_or(target_id, |p| copies[&p]);
        body.insert("parentId".into(), json!(parent));
        body.insert("originTemplateId".into(), json!(template_id));
        let created = create_record(tx, &batch, res, body)?;
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
        .map(|(predecessor, successor)| {
            let mut body = Map::new();
            body.insert("predecessorId".into(), json!(predecessor));
            body.insert("successorId".into(), json!(successor));
            body
        })
        .collect();
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
            let mut body = copy_of(
                &src,
                &[
                    "itemId",
                    "name",
                    "unitMeasureId",
                    "poNumber",
                    "subOrderRef",
                    "sortOrder",
                    "notes",
                ],
            );
            body.insert("orderDeliverableId".into(), json!(order_id));
            body.insert("mode".into(), json!("total"));
            body.insert("scaling".into(), json!("per_order"));
            body.insert(
                "quantity".into(),
                json!(scaled_line_quantity(&line, target_quantity)),
            );
            body.insert(
                "placedOnDeliverableId".into(),
                json!(copied_placement(&line, &copies, target_id, target_is_order)),
            );
            body.insert("source".into(), json!("route_template"));
            body.insert(
                "metadata".into(),
                provenance(SOURCE_LINE, line.id, target_id),
            );
            bom_lines.push(read_stored(&create_record(
                tx,
                ctx,
                ctx.resource(ResourceId::BomLine),
                body,
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
            let mut body = copy_of(
                &src,
                &[
                    "itemId",
                    "name",
                    "unitMeasureId",
                    "locationId",
                    "producedPerUnit",
                    "sortOrder",
                    "notes",
                ],
            );
            body.insert("orderDeliverableId".into(), json!(order_id));
            body.insert(
                "quantity".into(),
                json!(scaled_output_quantity(&decl, target_quantity)),
            );
            body.insert("source".into(), json!("route_template"));
            body.insert(
                "metadata".into(),
                provenance(SOURCE_OUTPUT, decl.id, target_id),
            );
            outputs.push(read_stored(&create_record(
                tx,
                ctx,
                ctx.resource(ResourceId::ProductionOutput),
                body,
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

fn copy_of(from: &Value, fields: &[&str]) -> Map<String, Value> {
    let mut to = Map::new();
    for f in fields {
        if let Some(v) = from.get(*f).filter(|v| !v.is_null()) {
            to.insert((*f).to_string(), v.clone());
        }
    }
    to
}

/// Where a copied line or declaration came from: its route record (the key prepopulate also
/// reads, so a later prepopulate from the same route does not copy it again) and the target.
fn provenance(source_key: &str, source: Uuid, target: Uuid) -> Value {
    json!({ source_key: source, "appliedOnDeliverableId": target })
}
