//! Black-box HTTP tests of prodops-server: one test binary, one module per area.
//!
//! Each test starts its own server (`TestServer::start`) over real HTTP against a real database:
//! a fresh SQLite file by default, or the PostgreSQL database named by
//! `PRODOPS_TEST_DATABASE_URL`.

#[path = "api/abandoned.rs"]
mod abandoned;
#[path = "api/actions.rs"]
mod actions;
#[path = "api/alerts.rs"]
mod alerts;
#[path = "api/auth.rs"]
mod auth;
#[path = "api/bom.rs"]
mod bom;
#[path = "api/bulk.rs"]
mod bulk;
#[path = "api/bulk_checks.rs"]
mod bulk_checks;
#[path = "api/catalog.rs"]
mod catalog;
#[path = "api/contract.rs"]
mod contract;
#[path = "api/counts.rs"]
mod counts;
#[path = "api/custom_property.rs"]
mod custom_property;
#[path = "api/deep_tree.rs"]
mod deep_tree;
#[path = "api/deliverable.rs"]
mod deliverable;
#[path = "api/deliverable_actions.rs"]
mod deliverable_actions;
#[path = "api/deliverable_bulk.rs"]
mod deliverable_bulk;
#[path = "api/deliverable_identifier.rs"]
mod deliverable_identifier;
#[path = "api/deliverable_properties.rs"]
mod deliverable_properties;
#[path = "api/deliverable_sessions.rs"]
mod deliverable_sessions;
#[path = "api/delivery.rs"]
mod delivery;
#[path = "api/delivery_manifest.rs"]
mod delivery_manifest;
#[path = "api/document.rs"]
mod document;
#[path = "api/dry_run.rs"]
mod dry_run;
#[path = "api/errors.rs"]
mod errors;
#[path = "api/events.rs"]
mod events;
#[path = "api/explain.rs"]
mod explain;
#[path = "api/export_cursor.rs"]
mod export_cursor;
#[path = "api/filter_scale.rs"]
mod filter_scale;
#[path = "api/filters_all.rs"]
mod filters_all;
#[path = "api/hostile_text.rs"]
mod hostile_text;
#[path = "api/idempotency.rs"]
mod idempotency;
#[path = "api/inventory.rs"]
mod inventory;
#[path = "api/inventory_support.rs"]
mod inventory_support;
#[path = "api/isolation.rs"]
mod isolation;
#[path = "api/key_changes.rs"]
mod key_changes;
#[path = "api/keyset.rs"]
mod keyset;
#[path = "api/list_along.rs"]
mod list_along;
#[path = "api/lot_postings.rs"]
mod lot_postings;
#[path = "api/lot_trace.rs"]
mod lot_trace;
#[path = "api/lots.rs"]
mod lots;
#[path = "api/member.rs"]
mod member;
#[path = "api/notification.rs"]
mod notification;
#[path = "api/production.rs"]
mod production;
#[path = "api/qc.rs"]
mod qc;
#[path = "api/rate_limit.rs"]
mod rate_limit;
#[path = "api/readiness_writes.rs"]
mod readiness_writes;
#[path = "api/reversals.rs"]
mod reversals;
#[path = "api/scale.rs"]
mod scale;
#[path = "api/server.rs"]
mod server;
#[path = "api/standard.rs"]
mod standard;
#[path = "api/time_events.rs"]
mod time_events;
#[path = "api/timesheet.rs"]
mod timesheet;
#[path = "api/transient.rs"]
mod transient;
#[path = "api/units_count.rs"]
mod units_count;
#[path = "api/vendor_contact.rs"]
mod vendor_contact;
#[path = "api/webhooks.rs"]
mod webhooks;
#[path = "api/worker.rs"]
mod worker;
