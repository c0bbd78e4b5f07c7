//! The domain of the Production Operations API v2: every resource as Rust types and every rule
//! of the specification as plain functions. No I/O, no async, no clock it does not receive.

pub mod registry;
pub mod resource;
pub mod violation;
pub mod worker;

pub use resource::{Allow, Archive, Kind, Ops, Record, ResourceDesc, ResourceKind, UniqueKey};
pub use violation::{Violation, Violations};
