//! What the production and BOM families share about an order's plan: its output declarations
//! and BOM lines as the engine serves them, the order they belong to, and the lock that
//! serializes the writes of one owner. Both families build on this module; neither imports the
//! other.

use axum::http::StatusCode;
use prodops_core::deliverable::DeliverableType;
use prodops_core::registry::ResourceId;

use serde_json::Value;
use uuid::Uuid;

use crate::engine::{self, ServedResource};
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::records::{self, Select};
use crate::store::sql::{Cond, FieldPath, Sort};
use crate::store::{Tx, lock_scope};

/// The field of a copied BOM line that names the line it was copied from.
pub const SOURCE_LINE: &str = "sourceBomLineId";
/// The field of a copied output declaration that names the one it was copied from.
pub const SOURCE_OUTPUT: &str = "sourceOutputId";

pub fn uuid_field(v: &Value, field: &str) -> Option<Uuid> {
    v.get(field)
        .and_then(Value::as_str)
        .and_then(|s| Uuid::parse_str(s).ok())
}

/// Serializes the production writes of one owner (order, route or project): actions and PATCHes
/// of its declarations and lines read `quantityActual` and write it back.
pub fn lock_owner(tx: &mut dyn Tx, ctx: &Ctx, owner: Uuid) -> ApiResult<()> {
    lock_scope(tx, &format!("production:{}:{owner}", ctx.org()))?;
    Ok(())
}

/// A deliverable's stored record.
pub fn deliverable(tx: &mut dyn Tx, ctx: &Ctx, id: Uuid) -> ApiResult<Option<Value>> {
    Ok(records::get(
        tx,
        ResourceId::Deliverable.kind().desc().table,
        ctx.org(),
        id,
    )?)
}

pub fn deliverable_type(d: &Value) -> Option<DeliverableType> {
    d.get("type")
        .and_then(|t| serde_json::from_value(t.clone()).ok())
}

/// The order a path names (404 unless it is a root order of this organization).
pub fn order_by_path(tx: &mut dyn Tx, ctx: &Ctx, id: Uuid) -> ApiResult<Value> {
    match deliverable(tx, ctx, id)? {
        Some(d)
            if deliverable_type(&d) == Some(DeliverableType::Order)
                && uuid_field(&d, "parentId").is_none() =>
        {
            Ok(d)
        }
        _ => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "NOT_FOUND",
            format!("no order {id}"),
        )),
    }
}

pub fn order_quantity(order: &Value) -> f64 {
    order.get("quantity").and_then(Value::as_f64).unwrap_or(1.0)
}

/// Active records of `res` whose `owner_field` is `owner`, in display order.
pub fn owned(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    res: &ServedResource,
    owner_field: &str,
    owner: Uuid,
) -> ApiResult<Vec<Value>> {
    let select = Select {
        conds: vec![
            Cond::field_equals(owner_field, owner.to_string()),
            Cond::Archived(false),
        ],
        sort: vec![Sort {
            path: FieldPath::parse("sortOrder").expect("static"),
            descending: false,
            as_of: None,
        }],
        limit: engine::MAX_BULK_RECORDS,
        offset: 0,
    };
    Ok(records::select_values(tx, res.table(), ctx.org(), &select)?)
}
