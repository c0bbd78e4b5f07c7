//! Black-box HTTP tests of prodops-server: one test binary, one module per area.
//!
//! Each test starts its own server (`TestServer::start`) over real HTTP against a real database:
//! a fresh SQLite file by default, or the PostgreSQL database named by
//! `PRODOPS_TEST_DATABASE_URL`.

#[path = "api/auth.rs"]
mod auth;
#[path = "api/catalog.rs"]
mod catalog;
#[path = "api/counts.rs"]
mod counts;
#[path = "api/custom_property.rs"]
mod custom_property;
#[path = "api/deliverable.rs"]
mod deliverable;
#[path = "api/deliverable_actions.rs"]
mod deliverable_actions;
#[path = "api/deliverable_properties.rs"]
mod deliverable_properties;
#[path = "api/deliverable_sessions.rs"]
mod deliverable_sessions;
#[path = "api/errors.rs"]
mod errors;
#[path = "api/idempotency.rs"]
mod idempotency;
#[path = "api/isolation.rs"]
mod isolation;
#[path = "api/rate_limit.rs"]
mod rate_limit;
#[path = "api/server.rs"]
mod server;
#[path = "api/standard.rs"]
mod standard;
#[path = "api/vendor_contact.rs"]
mod vendor_contact;
#[path = "api/worker.rs"]
mod worker;
