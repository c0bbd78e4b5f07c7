//! Deliverables beyond the standard endpoints (spec 4.2, 4.3, 4.9): the concept endpoints, the
//! tree index, hierarchy, reorder, groups, crew time, progress and schedule actions, work-session
//! save and stop. Rules come from `prodops-core` (`tree`, `progress`, `schedule`, `properties`,
//! `work_session`); handlers read the facts, ask core and write in one transaction.

mod actions;
mod buffers;
pub mod hooks;
pub mod identifiers;
mod reads;
mod sessions;
pub mod tree;

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::routing::{get, post};
use prodops_core::custom_property::CustomPropertyDefinition;
use prodops_core::deliverable::DeliverableType;
use prodops_core::registry;

use crate::app::AppState;
use crate::context::Ctx;
use crate::engine::{ServedResource, resource_routes};
use crate::error::{ApiError, ApiResult};
use crate::store::records::{self, Select};
use crate::store::{Dialect, Tx};

/// The engine's description of a standard resource, built once.
pub fn resource(path: &str) -> &'static ServedResource {
    static ALL: OnceLock<HashMap<&'static str, ServedResource>> = OnceLock::new();
    ALL.get_or_init(|| {
        registry::resources()
            .iter()
            .map(|k| (k.desc().path, ServedResource::new(*k)))
            .collect()
    })
    .get(path)
    .expect("a registered resource")
}

/// Every custom property definition of the organization, archived ones included (they keep
/// validating existing values, spec 3.5).
pub fn custom_property_defs(
    tx: &mut dyn Tx,
    ctx: &Ctx,
) -> ApiResult<Vec<CustomPropertyDefinition>> {
    let select = Select {
        limit: 100_000,
        ..Default::default()
    };
    records::select_values(tx, resource("custom-property").table(), ctx.org(), &select)?
        .into_iter()
        .map(|v| serde_json::from_value(v).map_err(ApiError::internal))
        .collect()
}

/// The `/concept/{type}` resources: the deliverable resource with `type` implied and the
/// concept rules enforced.
fn concept_resources() -> Vec<Arc<ServedResource>> {
    let kind = registry::by_path("deliverable").expect("deliverable is registered");
    DeliverableType::ALL
        .into_iter()
        .map(|t| {
            let mut res = ServedResource::new(kind);
            res.hooks = Arc::new(hooks::DeliverableHooks { concept: true });
            res.base = format!("concept/{}", t.as_str());
            res.implied = vec![("type", t.as_str())];
            Arc::new(res)
        })
        .collect()
}

/// The routes of this module.
pub fn routes() -> Router<Arc<AppState>> {
    let mut router = Router::new()
        .route("/api/v2/deliverable/{id}/hierarchy", get(reads::hierarchy))
        .route("/api/v2/deliverable/roots", get(reads::roots))
        .route("/api/v2/deliverable/groups", post(reads::groups))
        .route("/api/v2/deliverable/crew-time", get(reads::crew_time))
        .route("/api/v2/deliverable/reorder", post(actions::reorder))
        .route(
            "/api/v2/deliverable/root/{root_id}/schedule/{id}",
            post(actions::schedule),
        )
        .route(
            "/api/v2/deliverable/schedule/batch",
            post(actions::schedule_batch),
        )
        .route(
            "/api/v2/deliverable/root/{root_id}/progress/{id}",
            post(actions::progress),
        )
        .route(
            "/api/v2/deliverable/work-sessions/save",
            post(sessions::save),
        )
        .route(
            "/api/v2/deliverable/work-sessions/stop",
            post(sessions::stop),
        );
    for res in concept_resources() {
        router = router.merge(resource_routes(res));
    }
    router
}

/// Indexes on resource tables this module's reads need (run after the resource tables exist).
pub fn extra_ddl(dialect: Dialect) -> Vec<String> {
    use crate::store::sql::FieldPath;
    let expr = |f: &str| dialect.text_expr(&FieldPath::parse(f).expect("static path"));
    vec![
        format!(
            "CREATE INDEX IF NOT EXISTS ix_work_session_deliverable ON work_session (organization_id, {})",
            expr("deliverableId")
        ),
        format!(
            "CREATE INDEX IF NOT EXISTS ix_work_session_worker ON work_session (organization_id, {})",
            expr("workerId")
        ),
        // Search and `--key identifier` imports find deliverables by identifier.
        format!(
            "CREATE INDEX IF NOT EXISTS ix_deliverable_identifier ON deliverable (organization_id, {})",
            expr("identifier")
        ),
        // A schedule action reads the dependencies of its order only (actions.rs `load_plan`).
        format!(
            "CREATE INDEX IF NOT EXISTS ix_dependency_predecessor ON dependency (organization_id, {})",
            expr("predecessorId")
        ),
    ]
}

/// Fills the tree index of databases that held deliverables before it existed, and on SQLite
/// the record rowids it holds (missing, or stale after a `VACUUM` renumbered the rows).
pub fn backfill_tree(tx: &mut dyn Tx) -> crate::store::StoreResult<()> {
    fill_tree(tx)?;
    if tx.dialect() == Dialect::Sqlite {
        let (t, d) = (tree::TREE, tree::TABLE);
        tx.execute(
            &format!(
                "UPDATE {t} SET rid = (SELECT x.rowid FROM {d} x WHERE x.organization_id = {t}.organization_id AND x.id = {t}.id) \
                 WHERE rid IS NULL OR NOT EXISTS (SELECT 1 FROM {d} x WHERE x.rowid = {t}.rid \
                 AND x.organization_id = {t}.organization_id AND x.id = {t}.id)"
            ),
            &[],
        )?;
    }
    Ok(())
}

fn fill_tree(tx: &mut dyn Tx) -> crate::store::StoreResult<()> {
    let has_tree = !tx
        .query(&format!("SELECT id FROM {} LIMIT 1", tree::TREE), &[])?
        .is_empty();
    if has_tree {
        return Ok(());
    }
    let rows = tx.query(
        &format!("SELECT organization_id, id, data FROM {}", tree::TABLE),
        &[],
    )?;
    if rows.is_empty() {
        return Ok(());
    }
    let mut parent: HashMap<(String, String), Option<String>> = HashMap::new();
    for r in &rows {
        let (Some(org), Some(id), Some(data)) = (
            r.first().and_then(|v| v.as_str()),
            r.get(1).and_then(|v| v.as_str()),
            r.get(2).and_then(|v| v.as_str()),
        ) else {
            continue;
        };
        let v: serde_json::Value = serde_json::from_str(data).unwrap_or_default();
        let p = v
            .get("parentId")
            .and_then(|p| p.as_str())
            .map(str::to_string);
        parent.insert((org.to_string(), id.to_string()), p);
    }
    for (i, ((org, id), _)) in parent.iter().enumerate() {
        let mut path = vec![id.clone()];
        let mut cur = parent.get(&(org.clone(), id.clone())).cloned().flatten();
        while let Some(p) = cur {
            if path.contains(&p) || path.len() > 1000 {
                break;
            }
            path.push(p.clone());
            cur = parent.get(&(org.clone(), p)).cloned().flatten();
        }
        path.reverse();
        let text: String = path.iter().map(|p| format!("{p}/")).collect();
        let own_parent = parent.get(&(org.clone(), id.clone())).cloned().flatten();
        tx.execute(
            &format!(
                "INSERT INTO {} (organization_id, id, parent_id, root_id, path, sort_key) VALUES (?, ?, ?, ?, ?, ?)",
                tree::TREE
            ),
            &[
                org.as_str().into(),
                id.as_str().into(),
                own_parent.into(),
                path[0].as_str().into(),
                text.into(),
                crate::store::SqlValue::Int(i as i64),
            ],
        )?;
    }
    Ok(())
}
