//! The domain of the Production Operations API v2: every resource as Rust types and every rule
//! of the specification as plain functions. No I/O, no async, no clock it does not receive.

mod common;

pub mod alerts;
pub mod api;
pub mod bom_actions;
pub mod catalog;
pub mod contact;
pub mod custom_property;
pub mod deliverable;
pub mod delivery;
pub mod dependency_graph;
pub mod document;
pub mod dry_run;
pub mod event;
pub mod explain;
#[cfg(feature = "openapi")]
pub mod field_types;
#[cfg(feature = "openapi")]
pub mod filter_fields;
pub mod inventory;
pub mod line_quantities;
pub mod lot;
pub mod lot_rules;
pub mod manifest;
pub mod minimal;
pub mod notification;
pub mod number;
pub mod objects_only;
pub mod openapi;
pub mod organization;
pub mod production;
pub mod production_actions;
pub mod progress;
pub mod properties;
pub mod qc;
pub mod receiving;
pub mod registry;
pub mod resource;
pub mod schedule;
pub mod shipping;
pub mod stock_count;
pub mod template;
pub mod time;
pub mod timesheet;
pub mod tree;
pub mod units;
pub mod vendor;
pub mod violation;
pub mod webhook;
pub mod work_session;
pub mod worker;

pub use resource::{Allow, Archive, Kind, Ops, Record, ResourceDesc, ResourceKind, UniqueKey};
pub use violation::{Violation, Violations};
