//! The action endpoints of the API (spec 4.2 to 4.13), each declared once.
//!
//! The standard endpoints of a resource follow from its [`ResourceDesc`](crate::ResourceDesc).
//! Everything else the API serves (produce, consume, progress, schedule, receive, allocate,
//! versions, links, member actions, ...) is an *action*, declared here by one type that
//! implements [`Endpoint`]: its method and path with named parameters, the permissions a key
//! needs, its path, query, request and answer types, its success status, its summary, and its
//! command-line form. From that one declaration come:
//!
//! - the server's route (`prodops-server` binds a handler to each endpoint type; an endpoint
//!   without a handler does not compile, see [`for_each_action!`](crate::for_each_action));
//! - the OpenAPI operation (path parameters, query parameters, request and answer schemas from
//!   the types' `ToSchema`, the status, the summary);
//! - the typed client method (`prodops_client::Client::call::<E>`, and the named methods built
//!   on it);
//! - the CLI command (`prodops <command> <verb>`, one positional argument per path parameter,
//!   one flag per query parameter and per field of the request type; [`Cli::flags`] only
//!   renames or explains a flag where that reads better).
//!
//! The declarations live with their resource family (`api::production`, `api::delivery`, ...);
//! [`ACTIONS`] lists them all, and the agreement tests of each crate walk it.
//!
//! ```
//! use prodops_core::api::{self, Endpoint};
//! let produce = &api::production::Produce::DESC;
//! assert_eq!(produce.method.as_str(), "POST");
//! assert_eq!(produce.path, "/production/produce");
//! assert!(api::ACTIONS.iter().any(|a| a.operation_id == "production_produce"));
//! ```

pub(crate) mod endpoint;

pub mod bom;
pub mod deliverable;
pub mod delivery;
pub mod document;
pub mod event;
pub mod inventory;
pub mod lot;
pub mod member;
pub mod notification;
pub mod production;
pub mod qc;
pub mod webhook;

pub use endpoint::*;

/// Calls `$callback!` with the path of every action endpoint type, once:
/// `for_each_action!(my_macro)` expands to `my_macro! { api::production::Produce, ... }`. The
/// server generates its routes with it (so an endpoint without a handler does not compile), and
/// [`ACTIONS`] is built with it.
#[macro_export]
macro_rules! for_each_action {
    ($callback:ident) => {
        $callback! {
            $crate::api::deliverable::Hierarchy,
            $crate::api::deliverable::Trees,
            $crate::api::deliverable::Roots,
            $crate::api::deliverable::Groups,
            $crate::api::deliverable::CrewTime,
            $crate::api::deliverable::Explain,
            $crate::api::deliverable::Reorder,
            $crate::api::deliverable::Progress,
            $crate::api::deliverable::Schedule,
            $crate::api::deliverable::ScheduleBatch,
            $crate::api::deliverable::SaveWorkSessions,
            $crate::api::deliverable::StopWorkSessions,
            $crate::api::production::Produce,
            $crate::api::production::Consume,
            $crate::api::production::AdjustActual,
            $crate::api::production::OrderStatus,
            $crate::api::production::OrderEntries,
            $crate::api::production::ApplyTemplate,
            $crate::api::bom::Prepopulate,
            $crate::api::bom::AllocateOrder,
            $crate::api::bom::AllocateProject,
            $crate::api::bom::DemandRollup,
            $crate::api::bom::MaterialsRollup,
            $crate::api::inventory::PostTransaction,
            $crate::api::inventory::StockList,
            $crate::api::inventory::Count,
            $crate::api::inventory::Reverse,
            $crate::api::lot::Trace,
            $crate::api::document::Upload,
            $crate::api::document::Download,
            $crate::api::document::CreateVersion,
            $crate::api::document::AddVersion,
            $crate::api::document::HubBulkUpload,
            $crate::api::document::CountsByDeliverable,
            $crate::api::document::Link,
            $crate::api::document::Unlink,
            $crate::api::document::SetCopyMode,
            $crate::api::qc::PublishVersion,
            $crate::api::qc::UpdateTemplate,
            $crate::api::member::Invite,
            $crate::api::member::AcceptInvitation,
            $crate::api::member::ResendInvitation,
            $crate::api::member::Deactivate,
            $crate::api::member::Reactivate,
            $crate::api::member::Outbox,
            $crate::api::notification::ReadChannelComments,
            $crate::api::notification::ReadDeliverableDocuments,
            $crate::api::delivery::CreateOutbound,
            $crate::api::delivery::PatchOutbound,
            $crate::api::delivery::Start,
            $crate::api::delivery::Complete,
            $crate::api::delivery::Cancel,
            $crate::api::delivery::Receive,
            $crate::api::delivery::CloseShort,
            $crate::api::delivery::Archive,
            $crate::api::delivery::Restore,
            $crate::api::delivery::Itinerary,
            $crate::api::delivery::CargoPlan,
            $crate::api::event::List,
            $crate::api::webhook::Redeliver,
            $crate::api::webhook::Test,
            $crate::api::webhook::Deliveries,
        }
    };
}

macro_rules! descs {
    ($($e:path),* $(,)?) => {
        &[$(<$e as Endpoint>::DESC),*]
    };
}

/// Every action endpoint's description, in the order of the specification.
pub const ACTIONS: &[ActionDesc] = for_each_action!(descs);

/// The description with this `operationId`.
pub fn by_operation(id: &str) -> Option<&'static ActionDesc> {
    ACTIONS.iter().find(|a| a.operation_id == id)
}

/// The top-level fields of an action's JSON request type, from its schema (empty for a body
/// without a core type): the properties of the object, or of every variant of a `oneOf`,
/// `anyOf` or `allOf`, in order, each once. The CLI makes a flag of each.
///
/// ```
/// use prodops_core::api::{Endpoint, Schemas, production::Produce, request_fields};
/// let fields = request_fields(&Produce::DESC, &mut Schemas::new());
/// assert!(fields.iter().any(|f| f == "deliverableId"));
/// ```
#[cfg(feature = "openapi")]
pub fn request_fields(a: &ActionDesc, schemas: &mut Schemas) -> Vec<String> {
    let RequestBody::Json {
        schema: Some(schema),
        ..
    } = a.request
    else {
        return Vec::new();
    };
    let root = serde_json::to_value(schema(schemas)).unwrap_or_default();
    let named: serde_json::Map<String, serde_json::Value> = schemas
        .iter()
        .map(|(n, s)| (n.clone(), serde_json::to_value(s).unwrap_or_default()))
        .collect();
    let mut fields = Vec::new();
    collect_fields(&root, &named, &mut fields, 0);
    fields
}

#[cfg(feature = "openapi")]
fn collect_fields(
    schema: &serde_json::Value,
    named: &serde_json::Map<String, serde_json::Value>,
    out: &mut Vec<String>,
    depth: usize,
) {
    if depth > 8 {
        return;
    }
    if let Some(r) = schema["$ref"].as_str() {
        let name = r.rsplit('/').next().unwrap_or_default();
        if let Some(s) = named.get(name) {
            collect_fields(s, named, out, depth + 1);
        }
        return;
    }
    if let Some(props) = schema["properties"].as_object() {
        for k in props.keys() {
            if !out.contains(k) {
                out.push(k.clone());
            }
        }
    }
    for key in ["oneOf", "anyOf", "allOf"] {
        if let Some(variants) = schema[key].as_array() {
            for v in variants {
                collect_fields(v, named, out, depth + 1);
            }
        }
    }
}

/// Every schema rule a type's derive cannot carry ([`TypeRule`](crate::openapi::TypeRule)),
/// each written beside its type; the document applies them to the types' components.
#[cfg(feature = "openapi")]
pub const TYPE_RULES: &[crate::openapi::TypeRule] = &[
    crate::openapi::rule::<crate::work_session::StopRequest>(
        crate::work_session::stop_request_rule,
    ),
    crate::openapi::rule::<crate::document::VersionCreate>(crate::document::needs_a_file),
    crate::openapi::rule::<crate::progress::ProgressAction>(crate::openapi::closed_variants),
    crate::openapi::rule::<crate::schedule::ScheduleAction>(crate::openapi::closed_variants),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn operations_commands_and_routes_are_unique() {
        let mut ops = HashSet::new();
        let mut commands = HashSet::new();
        let mut routes = HashSet::new();
        for a in ACTIONS {
            assert!(ops.insert(a.operation_id), "{}", a.operation_id);
            assert!(
                commands.insert((a.cli.command, a.cli.verb)),
                "{} {}",
                a.cli.command,
                a.cli.verb
            );
            assert!(routes.insert((a.method, a.path)), "{}", a.path);
        }
    }

    #[test]
    fn paths_name_as_many_parameters_as_their_type_has() {
        for a in ACTIONS {
            assert!(a.path.starts_with('/'), "{}", a.path);
            assert_eq!(
                a.path_params().len(),
                a.path_kinds.len(),
                "{}: the path names {:?}",
                a.operation_id,
                a.path_params()
            );
        }
    }

    #[test]
    fn examples_run_their_own_command() {
        for a in ACTIONS {
            let start = format!("prodops {} {}", a.cli.command, a.cli.verb);
            assert!(a.cli.example.starts_with(&start), "{}", a.cli.example);
            assert!(!a.summary.is_empty(), "{}", a.operation_id);
        }
    }

    #[test]
    fn a_204_answers_nothing_and_only_it() {
        for a in ACTIONS {
            let empty = matches!(a.answer, AnswerBody::Empty);
            assert_eq!(empty, a.status == 204, "{}", a.operation_id);
        }
    }

    #[test]
    fn gets_and_deletes_take_no_body() {
        for a in ACTIONS {
            if matches!(a.method, HttpMethod::Get | HttpMethod::Delete) {
                assert!(matches!(a.request, RequestBody::None), "{}", a.operation_id);
            }
        }
    }

    #[test]
    fn cli_flags_name_a_field_of_the_request_or_a_query_parameter() {
        for a in ACTIONS {
            let mut schemas = Schemas::new();
            let fields = request_fields(a, &mut schemas);
            for f in a.cli.flags {
                let known = fields.iter().any(|x| x == f.field)
                    || a.query.iter().any(|q| q.name == f.field);
                assert!(
                    known,
                    "{} {}: --{} names {:?}, which is neither a field of the request nor a query parameter (fields: {fields:?})",
                    a.cli.command, a.cli.verb, f.flag, f.field
                );
            }
        }
    }

    #[test]
    fn fill_percent_encodes_segments() {
        let a = &document::Download::DESC;
        assert_eq!(
            a.fill(&["o".into(), "k/ü".into()]),
            "/document/file/o/k%2F%C3%BC"
        );
    }
}
