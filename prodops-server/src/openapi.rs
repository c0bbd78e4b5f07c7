//! The OpenAPI 3.1 document, generated at start from the same resource descriptions, engine
//! routes, action declarations and wire types that drive the server, so that it says exactly
//! what the server does (docs/contract.md): every served path and method and no other (an
//! undeclared method is 405 with an `Allow` header naming the documented ones), every status
//! an operation can answer, request schemas as strict as the server (`additionalProperties:
//! false` where unknown fields are refused, `required` lists of what must be sent,
//! `minimum`/`maximum` on paging, patterns for field paths and nonblank text), and in each
//! operation's description the rules a schema cannot say. `scripts/fuzz.sh` holds the server
//! to it with schemathesis.
//!
//! Where each part comes from:
//! - the standard endpoints of every served resource, their request forms, filters, sorts and
//!   paging: the engine (`engine::openapi`), from the registry's descriptions and the record
//!   schemas, with the rules of each record's forms from core (`Record::refine_form`);
//! - the actions: their declarations (`prodops_core::api::ACTIONS`): method, path,
//!   parameters (their values, `ParamValues`, and the engine's where a parameter is a standard
//!   list's), bodies, answers and other answers;
//! - the schemas of core's types: their `ToSchema` (limits and patterns from core's constants
//!   through `#[schema(schema_with = ...)]`), and the rules their derive cannot carry
//!   (`prodops_core::api::TYPE_RULES`);
//! - here: what holds for every operation (the error answers, the integer bounds of the wire,
//!   the exact whitespace classes of patterns) and the webhook deliveries' format.

use prodops_core::api::TYPE_RULES;
use prodops_core::api::{self, Access, AnswerBody, ParamKind, ParamValues, Perm, RequestBody};
use prodops_core::openapi::{WS_CHARS, nonblank_pattern};
use serde_json::{Map, Value, json};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

use crate::engine::openapi::{
    Op, Res, filters_of, nullable, page_schema, path_param, query_param, resource_components,
    schema_ref, standard_ops, standard_param, uuid,
};

fn to_value(schema: &RefOr<Schema>) -> Value {
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

/// The schema of a declared path or query parameter of `kind` taking `values`.
fn param_schema(kind: ParamKind, values: ParamValues) -> Value {
    match (values, kind) {
        (ParamValues::Range { min, max }, _) => {
            json!({ "type": "integer", "minimum": min, "maximum": max })
        }
        (ParamValues::OneOf(words), _) => json!({ "type": "string", "enum": words }),
        (ParamValues::Pattern(pattern), _) => json!({ "type": "string", "pattern": pattern() }),
        (_, ParamKind::Uuid) => uuid(),
        (_, ParamKind::UuidList) => json!({ "type": "array", "items": uuid() }),
        (_, ParamKind::Integer) => json!({ "type": "integer" }),
        (_, ParamKind::Text) => json!({ "type": "string" }),
    }
}

/// A declared query parameter: the engine's where it is a standard list's, else its own.
fn declared_params(q: &api::QueryParam) -> Vec<Value> {
    if let Some(standard) = standard_param(q) {
        return standard;
    }
    let mut p = query_param(q.name, q.description, param_schema(q.kind, q.values));
    if q.required {
        p["required"] = json!(true);
    }
    if q.kind == ParamKind::UuidList {
        // Repeated (`?id=a&id=b`); a required list names at least one.
        p["style"] = json!("form");
        p["explode"] = json!(true);
        if q.required {
            p["schema"]["minItems"] = json!(1);
        }
    }
    vec![p]
}

/// The operations of the declared actions (`prodops_core::api::ACTIONS`), each from its
/// declaration alone.
fn action_ops(schemas: &mut api::Schemas, ops: &mut Vec<Op>) {
    let object = || json!({ "type": "object" });
    for desc in api::ACTIONS {
        let method = match desc.method {
            api::HttpMethod::Get => "get",
            api::HttpMethod::Post => "post",
            api::HttpMethod::Patch => "patch",
            api::HttpMethod::Delete => "delete",
        };
        let path = format!("/api/v2{}", desc.path);
        let mut o = Op::new(method, path, desc.operation_id, desc.tag, desc.summary);
        // A POST that a key with read permissions alone may call reads (its body says what).
        o.read |= matches!(desc.access, Access::Key(perms) if perms.iter().all(|(_, p)| *p == Perm::Read));
        o.names_record |= desc
            .query
            .iter()
            .any(|q| q.required && matches!(q.kind, ParamKind::Uuid | ParamKind::UuidList));
        o.dry_run = desc.takes_dry_run();
        if !desc.description.is_empty() {
            o = o.describe(desc.description);
        }
        if desc.access == Access::Open {
            o.value["security"] = json!([]);
        }
        for (name, kind) in desc.path_params().into_iter().zip(desc.path_kinds) {
            o = o.param(path_param(name, param_schema(*kind, ParamValues::Any)));
        }
        o = o.params(desc.query_filters.map(filters_of).unwrap_or_default());
        for q in desc.query {
            o = o.params(declared_params(q));
        }
        o = match desc.request {
            RequestBody::None => o,
            RequestBody::Json { schema, required } => {
                let schema = desc.body_schema.or(schema);
                let s = schema.map_or_else(object, |f| to_value(&f(schemas)));
                o.body(if required { s } else { nullable(s) }, required)
            }
            RequestBody::Bytes => {
                o.value["requestBody"] = json!({
                    "required": true,
                    "content": { "application/octet-stream": {
                        "schema": { "type": "string", "format": "binary", "minLength": 1 }
                    } }
                });
                o
            }
        };
        let status = desc.status.to_string();
        let json_of = |schema: Option<api::SchemaFn>, schemas: &mut api::Schemas| {
            schema.map_or_else(object, |f| to_value(&f(schemas)))
        };
        o = match desc.answer {
            AnswerBody::Empty => o.answer(&status, desc.outcome, None),
            AnswerBody::Json(schema) => {
                o.answer(&status, desc.outcome, Some(json_of(schema, schemas)))
            }
            AnswerBody::Value(schema) => {
                let value = json_of(Some(schema), schemas);
                let wrapped = json!({ "type": "object", "required": ["value"], "properties": { "value": value } });
                o.answer(&status, desc.outcome, Some(wrapped))
            }
            AnswerBody::Page(schema) => {
                let page = page_schema(json_of(schema, schemas), false);
                o.answer(&status, desc.outcome, Some(page))
            }
            AnswerBody::Bytes => {
                o.value["responses"][&status] = json!({
                    "description": desc.outcome,
                    "content": { "*/*": { "schema": { "type": "string", "format": "binary" } } }
                });
                o
            }
        };
        if desc.names_feed_cursor {
            o = o.names_feed_cursor(&status);
        }
        for other in desc.other_answers {
            o = o.answer(
                &other.status.to_string(),
                other.description,
                Some((other.schema)()),
            );
        }
        ops.push(o);
    }
}

/// The error answers of an operation, from what the gateway and handlers can answer.
fn add_errors(op: &mut Op) {
    let open = op.value["security"]
        .as_array()
        .is_some_and(|s| s.is_empty());
    let has_body = op.value.get("requestBody").is_some();
    let write = !op.read;
    if write && has_body && !op.forbidden {
        let rule = "Ids in the body that name other records (`parentId`, `itemId`, ...) must \
            name records of this organization, and rules across fields and stored records \
            (docs/api.md) hold; otherwise 400 `VALIDATION_ERROR` naming the field.";
        let text = match op.value["description"].as_str() {
            Some(d) => format!("{d} {rule}"),
            None => rule.to_string(),
        };
        op.value["description"] = json!(text);
    }
    let responses = &mut op.value["responses"];
    if op.forbidden {
        // Refused before the request is read: only the gateway's answers and the 403.
        *responses = json!({});
    }
    let mut add = |status: &str| {
        responses[status] = json!({ "$ref": format!("#/components/responses/E{status}") });
    };
    if op.forbidden {
        ["401", "403", "429", "503"].into_iter().for_each(add);
        return;
    }
    add("400");
    // Open operations check credentials of their own (a link's signature, an invitation's
    // token) and refuse them with 403 too.
    add("403");
    if !open {
        add("401");
    }
    if op.names_record || write {
        add("404");
    }
    if write {
        add("409");
        add("507");
    }
    if has_body {
        add("413");
    }
    add("429");
    add("503");
}

fn error_components() -> Value {
    let error = schema_ref("Error");
    let mut out = Map::new();
    for (status, description) in [
        (
            "400",
            "`VALIDATION_ERROR`: the request breaks a rule; `details` names each field",
        ),
        ("401", "`UNAUTHORIZED`: missing, unknown or revoked API key"),
        (
            "403",
            "`FORBIDDEN`: the key lacks the permission, the organization lacks the feature, or the operation is refused",
        ),
        ("404", "`NOT_FOUND`: no such record in this organization"),
        (
            "409",
            "`CONFLICT`: a unique rule, a referenced record, stock that would go below zero, a record whose state refuses the change (an archived worker or delivery, a closed manifest), or a reused idempotency key",
        ),
        ("413", "`PAYLOAD_TOO_LARGE`: the body is larger than 32 MiB"),
        ("429", "`RATE_LIMITED`: retry after the reset time"),
        (
            "503",
            "`INTERNAL`: the database is busy, could not be reached or lost its connection (with `Retry-After`), or the statement timeout stopped the request; retry later",
        ),
        (
            "507",
            "`INTERNAL`: the database's disk is full; nothing of the request was written; retry once space is freed",
        ),
    ] {
        out.insert(
            format!("E{status}"),
            json!({
                "description": description,
                "content": { "application/json": { "schema": error } }
            }),
        );
    }
    Value::Object(out)
}

/// Integer fields hold at most 2^53 - 1 in size (`prodops_core::number`): what every JSON
/// reader reads exactly.
fn bound_integers(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let is_int = match map.get("type") {
                Some(Value::String(t)) => t == "integer",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "integer"),
                _ => false,
            };
            if is_int {
                let max = prodops_core::number::MAX_SAFE;
                map.entry("minimum").or_insert(json!(-max));
                map.entry("maximum").or_insert(json!(max));
                map.remove("format");
            }
            map.values_mut().for_each(bound_integers);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_integers),
        _ => {}
    }
}

/// Spells out `\S` and `\s` in core's patterns (`#[schema(pattern = r"\S")]` marks text that
/// must not be blank) as the exact classes the server's trimming uses.
fn exact_patterns(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if let Some(pattern) = map.get("pattern").and_then(Value::as_str) {
                let exact = pattern
                    .replace(r"\S", &nonblank_pattern())
                    .replace(r"\s", &format!("[{WS_CHARS}]"));
                map.insert("pattern".into(), json!(exact));
            }
            map.values_mut().for_each(exact_patterns);
        }
        Value::Array(items) => items.iter_mut().for_each(exact_patterns),
        _ => {}
    }
}

/// The document as JSON.
pub fn document_value() -> Value {
    let resources = crate::families::resources();
    let mut schemas: api::Schemas = Vec::new();
    <prodops_core::Violation as utoipa::ToSchema>::schemas(&mut schemas);
    schemas.push((
        "Violation".into(),
        <prodops_core::Violation as utoipa::PartialSchema>::schema(),
    ));
    let mut components = Map::new();
    let mut ops: Vec<Op> = Vec::new();
    let served = resources
        .iter()
        .cloned()
        .chain(crate::deliverables::concept_resources());
    for res in served {
        res.kind.schemas(&mut schemas);
        let res = Res::new(&res);
        resource_components(&res, &mut components);
        standard_ops(&res, &mut ops);
    }
    // Every standard write takes a dry run; the actions say which of them do.
    for op in &mut ops {
        op.dry_run = !op.read && !op.forbidden;
    }
    action_ops(&mut schemas, &mut ops);
    <prodops_core::dry_run::PendingEvent as utoipa::ToSchema>::schemas(&mut schemas);
    schemas.push((
        "PendingEvent".into(),
        <prodops_core::dry_run::PendingEvent as utoipa::PartialSchema>::schema(),
    ));
    for (name, schema) in schemas {
        components.entry(name).or_insert_with(|| to_value(&schema));
    }
    for rule in TYPE_RULES {
        if let Some(schema) = components.get_mut(&*(rule.name)()) {
            (rule.apply)(schema);
        }
    }
    components.values_mut().for_each(bound_integers);
    components.insert(
        "Error".into(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": {
                "error": {
                    "type": "object",
                    "required": ["code", "message", "requestId"],
                    "properties": {
                        "code": { "type": "string" },
                        "message": { "type": "string" },
                        "requestId": { "type": "string" },
                        "details": { "type": "array", "items": schema_ref("Violation") }
                    }
                }
            }
        }),
    );
    webhook_components(&mut components);
    components.insert("DryRun".into(), dry_run_schema());

    let mut paths = Map::new();
    for mut op in ops {
        if op.dry_run {
            declare_dry_run(&mut op);
        }
        add_errors(&mut op);
        let item = paths
            .entry(op.path)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("a path item is an object");
        item.insert(op.method.to_string(), op.value);
    }
    paths.insert(
        "/healthz".into(),
        json!({ "get": {
            "operationId": "healthz",
            "summary": "200 when the database answers; no key needed",
            "security": [],
            "responses": {
                "200": { "description": "Healthy", "content": { "application/json": { "schema": { "type": "object" } } } },
                "429": { "$ref": "#/components/responses/E429" },
                "503": { "$ref": "#/components/responses/E503" }
            }
        } }),
    );
    paths.insert(
        "/api/v2/openapi.json".into(),
        json!({ "get": {
            "operationId": "openapi",
            "summary": "This document; no key needed",
            "security": [],
            "responses": {
                "200": { "description": "The OpenAPI document", "content": { "application/json": { "schema": { "type": "object" } } } },
                "429": { "$ref": "#/components/responses/E429" }
            }
        } }),
    );

    let mut doc = json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Production Operations API",
            "version": "2.0.0",
            "description": "Served by prodops-server. Every request carries X-API-Key (except \
                the operations marked otherwise). Text never contains U+0000 or a lone \
                surrogate: such text anywhere in a path, query or body is refused with 400 \
                `VALIDATION_ERROR`. Errors have one shape (`Error`). A write with an \
                `Idempotency-Key` header is applied once; its repeats answer the first reply. \
                An undeclared method on a path is 405 `METHOD_NOT_ALLOWED` with an `Allow` \
                header; an unknown path is 404."
        },
        "security": [{ "apiKey": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "apiKey": { "type": "apiKey", "in": "header", "name": "X-API-Key" }
            },
            "schemas": components,
            "responses": error_components()
        }
    });
    exact_patterns(&mut doc);
    doc["webhooks"] = webhook_requests();
    fixed_event_types(&mut doc);
    doc
}

/// The event types that are not made of a resource path and a change (docs/events.md), given
/// as examples of an event's `type`, so that a reader of the document (and a webhook's
/// `eventTypes`) knows them.
fn fixed_event_types(doc: &mut Value) {
    let name = <prodops_core::event::Event as utoipa::ToSchema>::name();
    if let Some(ty) = doc
        .pointer_mut(&format!("/components/schemas/{name}/properties/type"))
        .and_then(Value::as_object_mut)
    {
        ty.insert("examples".into(), json!(prodops_core::event::FIXED_TYPES));
    }
}

/// The answer to a dry run (`prodops_core::dry_run::DryRun`).
fn dry_run_schema() -> Value {
    json!({
        "type": "object",
        "description": "What a write asked with `dryRun=true` would have done; nothing of it was written (docs/api.md, \"Dry runs\").",
        "required": ["dryRun", "answer", "ledger", "events"],
        "properties": {
            "dryRun": { "type": "boolean", "const": true },
            "answer": { "description": "The write's own answer as it would have been; `null` for a write answered with 204." },
            "ledger": {
                "type": "array",
                "description": "The ledger rows (`/inventory-transaction` records) the write would have posted.",
                "items": { "type": "object" }
            },
            "events": {
                "type": "array",
                "description": "The events the write would have appended to the feed, in order.",
                "items": schema_ref("PendingEvent")
            }
        }
    })
}

/// A write's `dryRun` parameter, and its success answers as a dry run gives them: the
/// [`dry_run_schema`] envelope beside the write's own answer (a write answered with 204 is
/// answered 200 with the envelope), with the `Prodops-Dry-Run` header.
fn declare_dry_run(op: &mut Op) {
    let param = query_param(
        prodops_core::dry_run::PARAM,
        "`true`: run the write, hooks and rules included, roll it back, and answer what it \
         would have written (`DryRun`), with the header `Prodops-Dry-Run: true`. Nothing is \
         written and no idempotency key is used.",
        json!({ "type": "boolean" }),
    );
    match op.value["parameters"].as_array_mut() {
        Some(list) => list.push(param),
        None => op.value["parameters"] = json!([param]),
    }
    let header = json!({
        prodops_core::dry_run::HEADER: {
            "description": "`true` on the answer to a dry run",
            "schema": { "type": "string", "enum": ["true"] }
        }
    });
    let envelope = schema_ref("DryRun");
    let Some(responses) = op.value["responses"].as_object_mut() else {
        return;
    };
    let mut bodiless = false;
    for (status, response) in responses.iter_mut() {
        if !status.starts_with('2') {
            continue;
        }
        match response
            .pointer_mut("/content/application~1json/schema")
            .map(Value::take)
        {
            None => bodiless = true,
            Some(schema) => {
                response["content"]["application/json"]["schema"] =
                    json!({ "anyOf": [schema, envelope] });
                response["headers"] = header.clone();
            }
        }
    }
    if bodiless && !responses.contains_key("200") {
        responses.insert(
            "200".into(),
            json!({
                "description": "The dry run's answer (`dryRun=true`)",
                "headers": header,
                "content": { "application/json": { "schema": envelope } }
            }),
        );
    }
}

/// What a webhook receiver is sent (docs/events.md, "Webhooks"): the body is an `Event` as
/// `GET /event` answers it (a `webhook.ping` for `POST /webhook/{id}/test`).
fn webhook_components(components: &mut Map<String, Value>) {
    components.insert(
        "WebhookPayload".into(),
        json!({
            "description": "The body of a webhook delivery: one event, exactly as `GET /event` \
                answers it (`POST /webhook/{id}/test` sends one of type `webhook.ping`, cursor \
                `0`, whose `data` is the webhook). Deduplicate by `id` (also in \
                `X-Prodops-Event-Id`): delivery is at least once.",
            "allOf": [schema_ref(&<prodops_core::event::Event as utoipa::ToSchema>::name())]
        }),
    );
    components.insert(
        "WebhookSignature".into(),
        json!({
            "description": "`X-Prodops-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, \
                \"<t>.<raw body>\")>`. Verify: recompute over the raw body, compare in constant \
                time, and refuse a `t` more than 5 minutes from your clock (replays).",
            "type": "string",
            "pattern": "^t=[0-9]+,v1=[0-9a-f]{64}$"
        }),
    );
}

/// The OpenAPI 3.1 `webhooks` object: the request a receiver gets.
fn webhook_requests() -> Value {
    let header = |name: &str, description: &str, schema: Value| json!({ "name": name, "in": "header", "required": true, "description": description, "schema": schema });
    json!({ "event": { "post": {
        "operationId": "webhook_event",
        "summary": "A change feed event delivered to a webhook's URL",
        "parameters": [
            header("X-Prodops-Signature", "See `WebhookSignature`", schema_ref("WebhookSignature")),
            header("X-Prodops-Event-Id", "The event's id: deduplicate by it", json!({"type": "string", "format": "uuid"})),
            header("X-Prodops-Webhook-Id", "The webhook", json!({"type": "string", "format": "uuid"})),
            header("X-Prodops-Delivery-Attempt", "1 for the first attempt", json!({"type": "string", "pattern": "^[0-9]+$"}))
        ],
        "requestBody": { "required": true, "content": { "application/json": { "schema": schema_ref("WebhookPayload") } } },
        "responses": {
            "2XX": { "description": "Accepted: the delivery is done" },
            "default": { "description": "Any other answer, a time-out or a refused connection: retried with backoff, dead after the configured attempts" }
        }
    } } })
}

/// The document as the bytes served at `/api/v2/openapi.json`.
pub fn document() -> Vec<u8> {
    serde_json::to_vec(&document_value()).unwrap_or_default()
}

#[cfg(test)]
mod webhook_document_tests {
    #[test]
    fn webhooks_are_documented() {
        let doc = super::document_value();
        let schemas = &doc["components"]["schemas"];
        assert!(schemas["Webhook"]["properties"].get("secret").is_none());
        let input = &schemas["WebhookInput"];
        assert_eq!(input["properties"]["secret"]["writeOnly"], true, "{input}");
        assert!(
            input["required"]
                .as_array()
                .unwrap()
                .contains(&"secret".into())
        );
        assert!(schemas["WebhookPatch"]["properties"]["secret"].is_object());
        assert!(schemas["WebhookPayload"].is_object());
        let types = schemas["Event"]["properties"]["type"]["examples"].to_string();
        for ty in [
            "deliverable.became-late",
            "deliverable.became-at-risk",
            "deliverable.became-ready",
        ] {
            assert!(types.contains(ty), "{types}");
        }
        assert!(schemas["WebhookDelivery"].is_object());
        assert!(doc["webhooks"]["event"]["post"]["requestBody"].is_object());
        let log = &doc["paths"]["/api/v2/webhook/{id}/deliveries"]["get"]["parameters"];
        assert!(log.to_string().contains("\"delivered\""), "{log}");
        for path in [
            "/api/v2/webhook/{id}/redeliver",
            "/api/v2/webhook/{id}/test",
            "/api/v2/webhook/{id}/deliveries",
        ] {
            assert!(doc["paths"][path].is_object(), "{path}");
        }
    }
}
