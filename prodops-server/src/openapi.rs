//! The OpenAPI 3.1 document, generated at start from the same resource descriptions and wire
//! types that drive the engine, so every served endpoint is in it.

use prodops_core::registry;
use prodops_core::resource::{Allow, ResourceKind};
use utoipa::openapi::content::ContentBuilder;
use utoipa::openapi::path::{
    HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItemBuilder,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ArrayBuilder, KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ComponentsBuilder, InfoBuilder, OpenApiBuilder, PathsBuilder, Ref, RefOr, Required, Schema,
};

pub(crate) fn object() -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::Object).into()
}

fn json_content(schema: RefOr<Schema>) -> utoipa::openapi::Content {
    ContentBuilder::new().schema(Some(schema)).build()
}

pub(crate) fn response(
    description: &str,
    schema: Option<RefOr<Schema>>,
) -> utoipa::openapi::Response {
    let mut r = ResponseBuilder::new().description(description);
    if let Some(s) = schema {
        r = r.content("application/json", json_content(s));
    }
    r.build()
}

pub(crate) fn body(schema: RefOr<Schema>) -> utoipa::openapi::request_body::RequestBody {
    RequestBodyBuilder::new()
        .content("application/json", json_content(schema))
        .required(Some(Required::True))
        .build()
}

pub(crate) fn id_param() -> utoipa::openapi::path::Parameter {
    ParameterBuilder::new()
        .name("id")
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid))),
        ))
        .build()
}

/// The query parameters every list takes besides its filters.
fn list_params(op: OperationBuilder) -> OperationBuilder {
    op.parameter(query_param(
        "search",
        "case-insensitive substring over the search columns",
    ))
    .parameter(query_param(
        "sort",
        "fields, comma separated; `-` for descending",
    ))
    .parameter(query_param("page", "1-based page"))
    .parameter(query_param("pageSize", "1 to 10000, default 100"))
}

fn query_param(name: &str, description: &str) -> utoipa::openapi::path::Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Query)
        .required(Required::False)
        .description(Some(description))
        .schema(Some(ObjectBuilder::new().schema_type(Type::String)))
        .build()
}

pub(crate) fn page_of(record: RefOr<Schema>) -> RefOr<Schema> {
    ObjectBuilder::new()
        .property("values", ArrayBuilder::new().items(record))
        .property(
            "totalCount",
            ObjectBuilder::new().schema_type(Type::Integer),
        )
        .required("values")
        .required("totalCount")
        .into()
}

pub(crate) fn error_responses(op: OperationBuilder) -> OperationBuilder {
    let error: RefOr<Schema> = Ref::from_schema_name("Error").into();
    op.response("400", response("Invalid request", Some(error.clone())))
        .response(
            "401",
            response("Missing, unknown or revoked API key", Some(error.clone())),
        )
        .response(
            "403",
            response("The key lacks the permission", Some(error.clone())),
        )
        .response("429", response("Rate limit exceeded", Some(error)))
}

fn op(kind: &dyn ResourceKind, verb: &str, summary: String) -> OperationBuilder {
    let desc = kind.desc();
    error_responses(
        OperationBuilder::new()
            .tag(desc.path)
            .summary(Some(summary))
            .operation_id(Some(format!(
                "{}_{}",
                desc.path.replace(['/', '-'], "_"),
                verb
            ))),
    )
}

/// Renders the document as JSON bytes. It lists the operations the engine serves; operations a
/// resource refuses (403/405) are left out, and a resource's own endpoints add themselves.
/// One action of a path: method, summary, whether no key is needed.
type ActionOp = (HttpMethod, &'static str, bool);

/// Action endpoints served by resource modules: method, path, summary, whether no key is needed.
const ACTIONS: &[(HttpMethod, &str, &str, bool)] = &[
    (
        HttpMethod::Post,
        "/api/v2/document/upload",
        "Upload a file's bytes; answers its documentKey",
        false,
    ),
    (
        HttpMethod::Get,
        "/api/v2/document/file/{org}/{key}",
        "Download through a signed link (no API key)",
        true,
    ),
    (
        HttpMethod::Post,
        "/api/v2/document/hub/bulk-upload",
        "Create Hub documents",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/document/counts-by-deliverable",
        "Document counts per deliverable",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/document/{id}/versions",
        "Create a version and make it current",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/document/{id}/links",
        "Link a document to a deliverable",
        false,
    ),
    (
        HttpMethod::Delete,
        "/api/v2/document/{id}/links/{deliverable_id}",
        "Unlink a document from a deliverable",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/document/{id}/copy-mode",
        "Set a document's copy mode",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/qc-template/versions",
        "Publish a QC template version",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/organization-member/accept-invitation",
        "Accept an invitation (no API key)",
        true,
    ),
    (
        HttpMethod::Post,
        "/api/v2/organization-member/{id}/resend-invitation",
        "Resend an invitation (204)",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/organization-member/{id}/deactivate",
        "Deactivate a member (204)",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/organization-member/{id}/reactivate",
        "Reactivate a member (204)",
        false,
    ),
    (
        HttpMethod::Get,
        "/api/v2/outbox",
        "Outgoing messages (admin keys)",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/notification/read-channel-comments",
        "Mark a channel's comment notifications read (204)",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/notification/read-deliverable-documents",
        "Mark a deliverable's document notifications read (204)",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/delivery/outbound",
        "Create an outbound or transfer delivery",
        false,
    ),
    (
        HttpMethod::Patch,
        "/api/v2/delivery/{id}/outbound",
        "Change planned start and end",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/delivery/{id}/start",
        "Start a delivery",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/delivery/{id}/complete",
        "Complete an outbound delivery (posts ship rows)",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/delivery/{id}/cancel",
        "Cancel a delivery",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/delivery/{id}/receive",
        "Receive an inbound delivery (posts receipt rows)",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/delivery/{id}/archive",
        "Archive a final delivery",
        false,
    ),
    (
        HttpMethod::Post,
        "/api/v2/delivery/{id}/restore",
        "Restore an archived delivery",
        false,
    ),
    (
        HttpMethod::Get,
        "/api/v2/delivery/{id}/itinerary",
        "Stops and legs",
        false,
    ),
    (
        HttpMethod::Get,
        "/api/v2/delivery/{id}/cargo-plan",
        "Cargo spans",
        false,
    ),
];

pub fn document() -> Vec<u8> {
    let mut paths = PathsBuilder::new();
    let mut components = ComponentsBuilder::new()
        .security_scheme(
            "apiKey",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-API-Key"))),
        )
        .schema(
            "Error",
            ObjectBuilder::new().property(
                "error",
                ObjectBuilder::new()
                    .property("code", ObjectBuilder::new().schema_type(Type::String))
                    .property("message", ObjectBuilder::new().schema_type(Type::String))
                    .property("requestId", ObjectBuilder::new().schema_type(Type::String))
                    .property(
                        "details",
                        ArrayBuilder::new().items(Ref::from_schema_name("Violation")),
                    ),
            ),
        );
    let mut schemas = Vec::new();
    <prodops_core::Violation as utoipa::ToSchema>::schemas(&mut schemas);
    schemas.push((
        "Violation".into(),
        <prodops_core::Violation as utoipa::PartialSchema>::schema(),
    ));
    for kind in registry::resources() {
        let desc = kind.desc();
        let (name, _) = kind.schema();
        kind.schemas(&mut schemas);
        let record: RefOr<Schema> = Ref::from_schema_name(&name).into();
        let base = format!("/api/v2/{}", desc.path);
        let what = desc.path;

        let mut collection = PathItemBuilder::new().operation(
            HttpMethod::Get,
            list_params(op(*kind, "list", format!("List {what} records")))
                .response(
                    "200",
                    response("A page of records", Some(page_of(record.clone()))),
                )
                .build(),
        );
        if desc.ops.create == Allow::Yes {
            collection = collection.operation(
                HttpMethod::Post,
                op(*kind, "create", format!("Create a {what} record"))
                    .request_body(Some(body(record.clone())))
                    .response("201", response("The created record", Some(record.clone())))
                    .build(),
            );
        }
        paths = paths.path(base.clone(), collection.build());

        let mut item = PathItemBuilder::new().operation(
            HttpMethod::Get,
            op(*kind, "get", format!("Read one {what} record"))
                .parameter(id_param())
                .response("200", response("The record", Some(record.clone())))
                .response("404", response("No such record in this organization", None))
                .build(),
        );
        if desc.ops.update == Allow::Yes {
            item = item.operation(
                HttpMethod::Patch,
                op(*kind, "update", format!("Update a {what} record"))
                    .parameter(id_param())
                    .request_body(Some(body(object())))
                    .response("200", response("The updated record", Some(record.clone())))
                    .build(),
            );
        }
        if matches!(
            desc.ops.delete,
            Allow::Yes | Allow::Custom | Allow::Forbidden
        ) {
            item = item.operation(
                HttpMethod::Delete,
                op(
                    *kind,
                    "delete",
                    format!("Delete (or archive) a {what} record"),
                )
                .parameter(id_param())
                .response("204", response("Deleted or archived", None))
                .build(),
            );
        }
        paths = paths.path(format!("{base}/{{id}}"), item.build());

        paths = paths.path(
            format!("{base}/query"),
            PathItemBuilder::new()
                .operation(
                    HttpMethod::Post,
                    op(
                        *kind,
                        "query",
                        format!("Query {what} records by ids, filter and select"),
                    )
                    .request_body(Some(body(object())))
                    .response(
                        "200",
                        response("A page of records", Some(page_of(object()))),
                    )
                    .build(),
                )
                .build(),
        );
        let count: RefOr<Schema> = ObjectBuilder::new()
            .property("count", ObjectBuilder::new().schema_type(Type::Integer))
            .into();
        paths = paths.path(
            format!("{base}/count"),
            PathItemBuilder::new()
                .operation(
                    HttpMethod::Get,
                    op(*kind, "count_get", format!("Count {what} records"))
                        .response("200", response("The count", Some(count.clone())))
                        .build(),
                )
                .operation(
                    HttpMethod::Post,
                    op(
                        *kind,
                        "count",
                        format!("Count {what} records matching a filter"),
                    )
                    .response("200", response("The count", Some(count.clone())))
                    .build(),
                )
                .build(),
        );
        paths = paths.path(
            format!("{base}/group-and-count"),
            PathItemBuilder::new()
                .operation(
                    HttpMethod::Post,
                    op(
                        *kind,
                        "group_and_count",
                        format!("Count {what} records by the value of a field"),
                    )
                    .request_body(Some(body(object())))
                    .response("200", response("Groups, largest first", Some(object())))
                    .build(),
                )
                .build(),
        );
        let mut bulk = PathItemBuilder::new();
        let mut any_bulk = false;
        for (allow, method, verb, summary) in [
            (
                desc.ops.bulk_put,
                HttpMethod::Put,
                "bulk_put",
                "Create or update a batch, all or nothing",
            ),
            (
                desc.ops.bulk_patch,
                HttpMethod::Patch,
                "bulk_patch",
                "Update every record matching the filter",
            ),
            (
                desc.ops.bulk_delete,
                HttpMethod::Delete,
                "bulk_delete",
                "Delete every record matching the filter",
            ),
        ] {
            if allow == Allow::Yes {
                any_bulk = true;
                bulk = bulk.operation(
                    method,
                    op(*kind, verb, format!("{summary} ({what})"))
                        .response("200", response("Counts", Some(object())))
                        .build(),
                );
            }
        }
        if any_bulk {
            paths = paths.path(format!("{base}/bulk"), bulk.build());
        }
    }
    paths = deliverable_extras(paths, &mut schemas);
    paths = crate::production::openapi(paths, &mut schemas);
    // The resource modules' own actions (docs/documents.md), grouped by path.
    let mut by_path: Vec<(&str, Vec<ActionOp>)> = Vec::new();
    for (method, path, summary, open) in ACTIONS {
        match by_path.iter_mut().find(|(p, _)| p == path) {
            Some((_, ops)) => ops.push((method.clone(), summary, *open)),
            None => by_path.push((path, vec![(method.clone(), summary, *open)])),
        }
    }
    for (path, ops) in by_path {
        let mut item = PathItemBuilder::new();
        for (method, summary, open) in ops {
            let mut builder = OperationBuilder::new()
                .summary(Some(summary))
                .operation_id(Some(format!(
                    "{}_{}",
                    match method {
                        HttpMethod::Get => "get",
                        HttpMethod::Post => "post",
                        HttpMethod::Patch => "patch",
                        HttpMethod::Delete => "delete",
                        _ => "call",
                    },
                    path.trim_start_matches("/api/v2/")
                        .replace(['/', '-'], "_")
                        .replace(['{', '}'], "")
                )));
            for segment in path.split('/') {
                if let Some(name) = segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                    builder = builder.parameter(
                        ParameterBuilder::new()
                            .name(name)
                            .parameter_in(ParameterIn::Path)
                            .required(Required::True)
                            .schema(Some(ObjectBuilder::new().schema_type(Type::String))),
                    );
                }
            }
            if matches!(method, HttpMethod::Post | HttpMethod::Patch) {
                builder = builder.request_body(Some(body(object())));
            }
            if open {
                builder = builder.security(SecurityRequirement::default());
            }
            builder = error_responses(builder)
                .response("200", response("See docs/documents.md", Some(object())));
            item = item.operation(method, builder.build());
        }
        paths = paths.path(path, item.build());
    }
    for (name, schema) in schemas {
        components = components.schema(name, schema);
    }
    paths = paths.path(
        "/healthz",
        PathItemBuilder::new()
            .operation(
                HttpMethod::Get,
                OperationBuilder::new()
                    .summary(Some("200 when the database answers; no key needed"))
                    .operation_id(Some("healthz"))
                    .security(SecurityRequirement::default())
                    .response("200", response("Healthy", Some(object())))
                    .build(),
            )
            .build(),
    );
    paths = paths.path(
        "/api/v2/openapi.json",
        PathItemBuilder::new()
            .operation(
                HttpMethod::Get,
                OperationBuilder::new()
                    .summary(Some("This document; no key needed"))
                    .operation_id(Some("openapi"))
                    .security(SecurityRequirement::default())
                    .response("200", response("The OpenAPI document", Some(object())))
                    .build(),
            )
            .build(),
    );
    let api = OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("Production Operations API")
                .version("2.0.0")
                .description(Some(
                    "Served by prodops-server. Every request carries X-API-Key.",
                )),
        )
        .paths(paths.build())
        .components(Some(components.build()))
        .security(Some(vec![SecurityRequirement::new(
            "apiKey",
            Vec::<String>::new(),
        )]))
        .build();
    serde_json::to_vec(&api).unwrap_or_default()
}

/// The deliverable endpoints beyond the standard ones (spec 4.2, 4.3; docs/deliverables.md) and
/// the concept endpoints' collection and item paths.
fn deliverable_extras(
    mut paths: PathsBuilder,
    schemas: &mut Vec<(String, RefOr<Schema>)>,
) -> PathsBuilder {
    use prodops_core::progress::{ProgressAction, ProgressResult};
    use prodops_core::schedule::{ScheduleAction, ScheduleBatchItem};
    use prodops_core::work_session::{SaveRequest, StopRequest};
    use utoipa::ToSchema;
    fn add<T: ToSchema>(schemas: &mut Vec<(String, RefOr<Schema>)>) -> RefOr<Schema> {
        T::schemas(schemas);
        schemas.push((T::name().into_owned(), T::schema()));
        Ref::from_schema_name(T::name()).into()
    }
    let progress = add::<ProgressAction>(schemas);
    let progress_result = add::<ProgressResult>(schemas);
    let schedule = add::<ScheduleAction>(schemas);
    let batch_item = add::<ScheduleBatchItem>(schemas);
    let save = add::<SaveRequest>(schemas);
    let stop = add::<StopRequest>(schemas);
    let deliverable: RefOr<Schema> = Ref::from_schema_name("Deliverable").into();
    let path_param = |name: &str| {
        let mut p = id_param();
        p.name = name.to_string();
        p
    };
    let operation = |id: &str, summary: &str| {
        error_responses(
            OperationBuilder::new()
                .tag("deliverable")
                .summary(Some(summary.to_string()))
                .operation_id(Some(id.to_string())),
        )
    };
    let no_content = || response("Done", None);
    let entries: Vec<(String, HttpMethod, OperationBuilder)> = vec![
        (
            "/api/v2/deliverable/{id}/hierarchy".into(),
            HttpMethod::Get,
            operation(
                "deliverable_hierarchy",
                "The node and its whole subtree, parents before children, siblings in their \
                 order (archived nodes included). Large subtrees are sent in parts as they are \
                 read (chunked).",
            )
            .parameter(id_param())
            .parameter(query_param(
                "select",
                "fields, comma separated (repeatable), as POST /deliverable/query selects \
                 them: each value is then `id` and the selected fields, nested paths under \
                 flattened names (`data.properties.area` as `dataPropertiesArea`); an unknown \
                 field is 400",
            ))
            .response(
                "200",
                response(
                    "The subtree (with `select`: `id` and the selected fields of each node)",
                    Some(page_of(deliverable.clone())),
                ),
            ),
        ),
        (
            "/api/v2/deliverable/roots".into(),
            HttpMethod::Get,
            list_params(operation(
                "deliverable_roots",
                "The deliverables without a parent (the tops of the trees), from the tree \
                 index; takes the list's filters, search, sort, page and pageSize",
            ))
            .response(
                "200",
                response("A page of roots", Some(page_of(deliverable.clone()))),
            ),
        ),
        (
            "/api/v2/deliverable/groups".into(),
            HttpMethod::Post,
            operation(
                "deliverable_groups",
                "Deliverables grouped by project, stage, people, root or tags",
            )
            .request_body(Some(body(object())))
            .response("200", response("Groups", Some(object()))),
        ),
        (
            "/api/v2/deliverable/crew-time".into(),
            HttpMethod::Get,
            operation(
                "deliverable_crew_time",
                "Work-session time per worker on deliverables and their subtrees",
            )
            .parameter(query_param(
                "deliverableId",
                "a deliverable id (repeatable)",
            ))
            .response(
                "200",
                response("Time keyed by deliverable id", Some(object())),
            ),
        ),
        (
            "/api/v2/deliverable/reorder".into(),
            HttpMethod::Post,
            operation(
                "deliverable_reorder",
                "Sets the order of siblings under a root",
            )
            .request_body(Some(body(object())))
            .response("204", no_content()),
        ),
        (
            "/api/v2/deliverable/root/{rootId}/progress/{id}".into(),
            HttpMethod::Post,
            operation(
                "deliverable_progress",
                "A progress action on a node of an order",
            )
            .parameter(path_param("rootId"))
            .parameter(id_param())
            .request_body(Some(body(progress)))
            .response("200", response("The kicked workers", Some(progress_result))),
        ),
        (
            "/api/v2/deliverable/root/{rootId}/schedule/{id}".into(),
            HttpMethod::Post,
            operation(
                "deliverable_schedule",
                "A schedule action on a node of an order",
            )
            .parameter(path_param("rootId"))
            .parameter(id_param())
            .request_body(Some(body(schedule)))
            .response("204", no_content()),
        ),
        (
            "/api/v2/deliverable/schedule/batch".into(),
            HttpMethod::Post,
            operation(
                "deliverable_schedule_batch",
                "Schedule actions in order, all or nothing",
            )
            .request_body(Some(body(ArrayBuilder::new().items(batch_item).into())))
            .response("204", no_content()),
        ),
        (
            "/api/v2/deliverable/work-sessions/save".into(),
            HttpMethod::Post,
            operation(
                "work_sessions_save",
                "Saves the assignments of workers, diffed against open sessions",
            )
            .request_body(Some(body(save)))
            .response("204", no_content()),
        ),
        (
            "/api/v2/deliverable/work-sessions/stop".into(),
            HttpMethod::Post,
            operation(
                "work_sessions_stop",
                "Stops open sessions and plans by deliverable or worker",
            )
            .request_body(Some(body(stop)))
            .response("204", no_content()),
        ),
    ];
    for (path, method, op) in entries {
        paths = paths.path(
            path,
            PathItemBuilder::new().operation(method, op.build()).build(),
        );
    }
    for t in prodops_core::deliverable::DeliverableType::ALL {
        let base = format!("/api/v2/concept/{}", t.as_str());
        let name = t.as_str().replace('-', "_");
        let concept_op = |verb: &str, summary: String| {
            error_responses(
                OperationBuilder::new()
                    .tag("concept")
                    .summary(Some(summary))
                    .operation_id(Some(format!("concept_{name}_{verb}"))),
            )
        };
        let collection = PathItemBuilder::new()
            .operation(
                HttpMethod::Get,
                concept_op(
                    "list",
                    format!("List {t} deliverables (the standard list, type implied)"),
                )
                .response(
                    "200",
                    response("A page", Some(page_of(deliverable.clone()))),
                )
                .build(),
            )
            .operation(
                HttpMethod::Post,
                concept_op(
                    "create",
                    format!("Create a {t}, enforcing the concept rules"),
                )
                .request_body(Some(body(deliverable.clone())))
                .response("201", response("Created", Some(deliverable.clone())))
                .build(),
            )
            .build();
        let item = PathItemBuilder::new()
            .operation(
                HttpMethod::Get,
                concept_op("get", format!("Read a {t}"))
                    .parameter(id_param())
                    .response("200", response("The record", Some(deliverable.clone())))
                    .build(),
            )
            .operation(
                HttpMethod::Patch,
                concept_op(
                    "update",
                    format!("Update a {t}, enforcing the concept rules"),
                )
                .parameter(id_param())
                .request_body(Some(body(object())))
                .response("200", response("Updated", Some(deliverable.clone())))
                .build(),
            )
            .operation(
                HttpMethod::Delete,
                concept_op("delete", format!("Archive a {t}"))
                    .parameter(id_param())
                    .response("204", response("Archived", None))
                    .build(),
            )
            .build();
        let post_object = |verb: &str, summary: String, answer: &str| {
            concept_op(verb, summary)
                .request_body(Some(body(object())))
                .response("200", response(answer, Some(object())))
                .build()
        };
        let query = PathItemBuilder::new()
            .operation(
                HttpMethod::Post,
                post_object("query", format!("Query {t} deliverables"), "A page"),
            )
            .build();
        let count = PathItemBuilder::new()
            .operation(
                HttpMethod::Get,
                concept_op("count_get", format!("Count {t} deliverables"))
                    .response("200", response("The count", Some(object())))
                    .build(),
            )
            .operation(
                HttpMethod::Post,
                post_object("count", format!("Count {t} deliverables"), "The count"),
            )
            .build();
        let group = PathItemBuilder::new()
            .operation(
                HttpMethod::Post,
                post_object(
                    "group_and_count",
                    format!("Count {t} deliverables by a field"),
                    "Counts",
                ),
            )
            .build();
        let bulk = PathItemBuilder::new()
            .operation(
                HttpMethod::Put,
                post_object(
                    "bulk_put",
                    format!("Upsert {t} deliverables, all or nothing"),
                    "Count and ids",
                ),
            )
            .operation(
                HttpMethod::Patch,
                post_object(
                    "bulk_patch",
                    format!("Update the {t} deliverables a filter matches"),
                    "The count",
                ),
            )
            .operation(
                HttpMethod::Delete,
                concept_op(
                    "bulk_delete",
                    format!("Archive the {t} deliverables a filter matches"),
                )
                .response("200", response("The count", Some(object())))
                .build(),
            )
            .build();
        paths = paths.path(base.clone(), collection);
        paths = paths.path(format!("{base}/{{id}}"), item);
        paths = paths.path(format!("{base}/query"), query);
        paths = paths.path(format!("{base}/count"), count);
        paths = paths.path(format!("{base}/group-and-count"), group);
        paths = paths.path(format!("{base}/bulk"), bulk);
    }
    paths
}
