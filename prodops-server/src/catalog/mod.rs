//! Catalog entries (spec 2.8): the hooks of the catalog-entry resource.

use serde_json::{Map, Value, json};

use crate::engine::ServedResource;
use crate::engine::hooks::{DeleteAction, Hooks};
use crate::http::context::Ctx;
use crate::http::error::ApiResult;
use crate::store::Tx;

/// Catalog entries (spec 2.8): a code rename queues the durable job that rewrites references;
/// an entry that history references is deactivated rather than deleted.
pub struct CatalogHooks;

impl Hooks for CatalogHooks {
    fn before_delete(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        res: &ServedResource,
        record: &Value,
    ) -> ApiResult<DeleteAction> {
        let catalog = record.get("catalog").and_then(Value::as_str).unwrap_or("");
        let code = record.get("code").and_then(Value::as_str).unwrap_or("");
        let referenced = crate::jobs::code_references(tx, ctx.org(), catalog, code, 1)?
            .is_some_and(|(_, found)| !found.is_empty());
        if !referenced {
            return Ok(DeleteAction::Proceed);
        }
        let mut patch = Map::new();
        patch.insert("isActive".into(), Value::Bool(false));
        crate::engine::update_record(tx, ctx, res, record, patch)?;
        Ok(DeleteAction::Handled)
    }

    fn after_write(
        &self,
        tx: &mut dyn Tx,
        ctx: &Ctx,
        _res: &ServedResource,
        old: Option<&Value>,
        new: &Value,
    ) -> ApiResult<()> {
        let Some(old) = old else { return Ok(()) };
        let old_code = old.get("code").and_then(Value::as_str).unwrap_or("");
        let new_code = new.get("code").and_then(Value::as_str).unwrap_or("");
        if old_code != new_code {
            let payload = crate::jobs::CodeRename {
                catalog: new
                    .get("catalog")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                old_code: old_code.to_string(),
                new_code: new_code.to_string(),
                entry_id: new
                    .get("id")
                    .and_then(Value::as_str)
                    .and_then(|id| id.parse().ok()),
                key_id: Some(ctx.auth.key_id),
                request_id: ctx.request_id.as_deref().map(str::to_string),
            };
            crate::jobs::enqueue(tx, ctx, crate::jobs::CATALOG_CODE_RENAME, &json!(payload))?;
        }
        Ok(())
    }
}
