//! QC template versions and QC sets (spec 2.11, 4.10).
//!
//! - `POST /qc-template` is refused (405); versions are published with
//!   `POST /qc-template/versions` (a new template when `qcTemplateId` is omitted, else the next
//!   version number of that template).
//! - `PATCH /qc-template/{id}` is accepted (a JSON object, `QcTemplate.Update`) and writes
//!   nothing: it answers the stored version.
//! - `DELETE /qc-template/{id}` removes the version for good, 409 while a QC set references it.
//! - A QC set must reference an existing version.

use prodops_core::api;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use prodops_core::qc::{QcTemplateVersionCreate, next_version_number};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::engine::hooks::{DeleteAction, Hooks};
use crate::engine::{self, ServedResource, create_record, parse_body};
use crate::http::app::{JsonBody, Reply};
use crate::http::call::{Call, PathId};
use crate::http::context::Ctx;
use crate::http::error::{ApiError, ApiResult};
use crate::store::records::{self, Select};
use crate::store::sql::Cond;
use crate::store::{Tx, lock_scope};

// The handlers of this family's declared actions (`prodops_core::api::qc`); the router
// serves each on its declared method and path, behind its declared access.
crate::http::action::handle! {
    api::qc::PublishVersion => publish;
    api::qc::UpdateTemplate => patch_nothing;
}

async fn publish(call: Call, JsonBody(body): JsonBody) -> ApiResult<Response> {
    let req: QcTemplateVersionCreate = parse_body(body)?;
    call.write(move |tx, ctx| {
        let res = engine::resource("qc-template");
        let template = req.qc_template_id.unwrap_or_else(Uuid::now_v7);
        // Numbering reads, then writes: concurrent publishes of one template take turns (the
        // unique index on (qcTemplateId, versionNumber) backs this up).
        lock_scope(tx, &format!("qc-template:{}:{template}", ctx.org()))?;
        let existing = records::select_values(
            tx,
            res.table(),
            ctx.org(),
            &Select {
                conds: vec![Cond::field_equals("qcTemplateId", template.to_string())],
                limit: engine::MAX_BULK_RECORDS,
                ..Default::default()
            },
        )?;
        if req.qc_template_id.is_some() && existing.is_empty() {
            return Err(ApiError::field(
                "qcTemplateId",
                "no such QC template; omit qcTemplateId to start a new template",
            ));
        }
        let numbers: Vec<i64> = existing
            .iter()
            .filter_map(|v| v.get("versionNumber").and_then(Value::as_i64))
            .collect();
        let mut body = serde_json::to_value(&req)
            .map_err(ApiError::internal)?
            .as_object()
            .cloned()
            .unwrap_or_default();
        body.insert("qcTemplateId".into(), json!(template));
        body.insert("versionNumber".into(), json!(next_version_number(&numbers)));
        let record = create_record(tx, ctx, &res, body)?;
        Ok(Reply::json(StatusCode::CREATED, &record))
    })
    .await
}

/// PATCH is accepted and writes nothing (spec 4.10): the body must still be a JSON object.
async fn patch_nothing(
    call: Call,
    PathId(id): PathId,
    JsonBody(body): JsonBody,
) -> ApiResult<Response> {
    if !body.is_object() {
        return Err(ApiError::validation(
            "the request body must be a JSON object",
        ));
    }
    let res = engine::resource("qc-template");
    let raw = call
        .state
        .store
        .get_raw(res.table(), call.org(), id)
        .await?
        .ok_or_else(ApiError::not_found)?;
    Ok((
        StatusCode::OK,
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        raw,
    )
        .into_response())
}

/// QC template versions: DELETE is refused with 409 while a QC set references the version.
pub struct QcTemplateHooks;

impl Hooks for QcTemplateHooks {
    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        let id = record.get("id").and_then(Value::as_str).unwrap_or("");
        let sets = engine::resource("qc-set");
        let n = records::count(
            tx,
            sets.table(),
            ctx.org(),
            &[Cond::field_equals("templateId", id.to_string())],
        )?;
        if n > 0 {
            return Err(ApiError::conflict(format!(
                "{n} QC set(s) still reference this QC template version; delete them first"
            )));
        }
        Ok(DeleteAction::Proceed)
    }
}

/// QC sets: `templateId` must name a version of the organization.
pub struct QcSetHooks;

impl Hooks for QcSetHooks {
    fn check_facts(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let template = new.get("templateId").and_then(Value::as_str).unwrap_or("");
        if old
            .and_then(|o| o.get("templateId"))
            .and_then(Value::as_str)
            == Some(template)
        {
            return Ok(());
        }
        let id = Uuid::parse_str(template)
            .map_err(|_| ApiError::field("templateId", "must be a UUID"))?;
        let versions = engine::resource("qc-template");
        if records::get(tx, versions.table(), ctx.org(), id)?.is_none() {
            return Err(ApiError::field("templateId", "no such QC template version"));
        }
        Ok(())
    }
}
