//! Deliverables beyond the standard endpoints (spec 4.2, 4.3, 4.9): the concept endpoints, the
//! tree index, hierarchy, reorder, groups, crew time, progress and schedule actions, work-session
//! save and stop. Rules come from `prodops-core` (`tree`, `progress`, `schedule`, `properties`,
//! `work_session`); handlers read the facts, ask core and write in one transaction.

mod actions;
mod buffers;
pub mod dependencies;
pub mod hooks;
pub mod identifiers;
pub mod qc_gate;
pub mod readiness;
mod reads;
pub mod sessions;
pub mod timesheets;
pub mod tree;

use prodops_core::api;
use prodops_core::registry::ResourceId;
use std::sync::Arc;

use axum::Router;
use prodops_core::deliverable::DeliverableType;

use crate::engine::{ServedResource, resource_routes};
use crate::http::app::AppState;
use crate::http::context::Ctx;
use crate::http::error::ApiResult;
use crate::store::Tx;

/// Applies a progress action to the deliverable `id` as the effect of another write (the
/// rework a failing QC verdict causes), with its roll-up, in the caller's transaction. Returns
/// the kicked workers.
pub fn progress_effect(
    tx: &mut dyn Tx,
    ctx: &Ctx,
    id: uuid::Uuid,
    action: &prodops_core::progress::ProgressAction,
) -> ApiResult<Vec<uuid::Uuid>> {
    let node = crate::engine::load(tx, ctx.resource(ResourceId::Deliverable), ctx.org(), id)?;
    actions::apply_progress(tx, ctx, &node, action)
}

/// The `/concept/{type}` resources: the deliverable resource with `type` implied and the
/// concept rules enforced.
pub fn concept_resources() -> Vec<Arc<ServedResource>> {
    let kind = ResourceId::Deliverable.kind();
    DeliverableType::ALL
        .into_iter()
        .map(|t| {
            let mut res =
                ServedResource::new(kind, Arc::new(hooks::DeliverableHooks { concept: true }));
            res.base = format!("concept/{}", t.as_str());
            res.implied = vec![("type", t.as_str())];
            Arc::new(res)
        })
        .collect()
}

// The handlers of this family's declared actions (`prodops_core::api::deliverable`); the
// router serves each on its declared method and path, behind its declared access.
crate::http::action::handle! {
    api::deliverable::Hierarchy => reads::hierarchy;
    api::deliverable::Trees => reads::trees;
    api::deliverable::Roots => reads::roots;
    api::deliverable::Groups => reads::groups;
    api::deliverable::CrewTime => reads::crew_time;
    api::deliverable::Reorder => actions::reorder;
    api::deliverable::Progress => actions::progress;
    api::deliverable::Schedule => actions::schedule;
    api::deliverable::ScheduleBatch => actions::schedule_batch;
    api::deliverable::SaveWorkSessions => sessions::save;
    api::deliverable::StopWorkSessions => sessions::stop;
}

/// The standard endpoints of each concept (`/concept/<type>`), a deliverable of one type.
pub fn concept_routes() -> Router<Arc<AppState>> {
    let mut router = Router::new();
    for res in concept_resources() {
        router = router.merge(resource_routes(res));
    }
    router
}
