//! Every route of the API (composition root): the standard endpoints of the engine, the
//! concept endpoints, and every declared action (`prodops_core::api::ACTIONS`) on the handler
//! its family binds (`http::action::handle!`), which `http::app::router` puts behind the gateway.

use std::sync::Arc;

use axum::Router;
use prodops_core::api::Endpoint;

use crate::http::action::{Handled, served_path};
use crate::http::app::AppState;
use crate::{deliverables, engine};

/// Routes each endpoint type on its declared path; a type without a handler does not compile.
macro_rules! route_actions {
    ($($endpoint:path),* $(,)?) => {
        Router::new()
            $(.route(
                &served_path(&<$endpoint as Endpoint>::DESC),
                <$endpoint as Handled>::method_router(),
            ))*
    };
}

/// The routes of the engine and every family, merged.
pub fn routes(resources: &engine::Resources) -> Router<Arc<AppState>> {
    prodops_core::for_each_action!(route_actions)
        .merge(engine::routes(resources))
        .merge(deliverables::concept_routes())
}
