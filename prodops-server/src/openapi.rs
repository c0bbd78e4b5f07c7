//! The OpenAPI 3.1 document, generated at start from the same resource descriptions, engine
//! routes and wire types that drive the server, so that it says exactly what the server does
//! (docs/contract.md): every served path and method and no other (an undeclared method is 405
//! with an `Allow` header naming the documented ones), every status an operation can answer,
//! request schemas as strict as the server (`additionalProperties: false` where unknown fields
//! are refused, `required` lists of what must be sent, `minimum`/`maximum` on paging, patterns
//! for field paths and nonblank text), and in each operation's description the rules a schema
//! cannot say. `scripts/fuzz.sh` holds the server to it with schemathesis.
//!
//! Record schemas come from core's types (`utoipa::ToSchema`); the request forms are derived
//! from them here: the create form (`<Record>Input`) without the server-managed fields'
//! requirements, the PATCH form (`<Record>Patch`) with nothing required and without the fields
//! a PATCH may not name.

use prodops_core::registry;
use prodops_core::resource::{Allow, Archive, COMMON_READ_ONLY, ResourceKind};
use serde_json::{Map, Value, json};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

use crate::engine::{MAX_BULK_RECORDS, MAX_PAGE, MAX_PAGE_SIZE, routed};

/// Unicode White_Space, what Rust's `trim` removes, spelled out: `\s` means different sets in
/// different regex dialects (Python's includes U+001C to U+001F, ECMA-262's U+FEFF), so a
/// pattern built on it would not say what the server does.
const WS_CHARS: &str = r"\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000";

/// A pattern that text which is not blank matches: one character that is not White_Space.
pub fn nonblank_pattern() -> String {
    format!("[^{WS_CHARS}]")
}

fn ws_char() -> String {
    format!("[{WS_CHARS}]")
}

fn ws() -> String {
    format!("{}*", ws_char())
}

/// The field path grammar of filters, sort, select and group-by (`FieldPath::parse`): a field
/// of the record, then up to seven `.segment`s of 1 to 64 ASCII letters, digits or `_`.
fn field_path(fields: &[String]) -> String {
    format!("(?:{})(?:\\.[A-Za-z0-9_]{{1,64}}){{0,7}}", fields.join("|"))
}

/// `sort`: comma-separated field paths, each optionally `-` (descending) or `+`; items are
/// trimmed and empty ones skipped.
fn sort_pattern(fields: &[String]) -> String {
    let ws = ws();
    let item = format!("{ws}(?:[-+]?{}{ws})?", field_path(fields));
    format!("^{item}(?:,{item})*$")
}

/// A comma-separated list of field paths naming at least one (hierarchy `select`).
fn select_list_pattern(fields: &[String]) -> String {
    let ws = ws();
    let item = format!("{ws}{}{ws}", field_path(fields));
    format!("^(?:{ws},)*{item}(?:,(?:{item}|{ws}))*$")
}

fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn to_value(schema: &RefOr<Schema>) -> Value {
    serde_json::to_value(schema).unwrap_or(Value::Null)
}

fn uuid() -> Value {
    json!({ "type": "string", "format": "uuid" })
}

fn path_param(name: &str, schema: Value) -> Value {
    json!({ "name": name, "in": "path", "required": true, "schema": schema })
}

fn query_param(name: &str, description: &str, schema: Value) -> Value {
    json!({ "name": name, "in": "query", "required": false, "description": description, "schema": schema })
}

fn json_body(schema: Value, required: bool) -> Value {
    json!({ "required": required, "content": { "application/json": { "schema": schema } } })
}

fn page_schema(record: Value, cursor: bool) -> Value {
    let mut page = json!({
        "type": "object",
        "required": ["values", "totalCount"],
        "properties": {
            "values": { "type": "array", "items": record },
            "totalCount": { "type": "integer", "minimum": 0 }
        }
    });
    if cursor {
        page["properties"]["nextCursor"] = json!({
            "type": ["string", "null"],
            "description": "The `cursor` of the next page in the default order; null on the last page"
        });
    }
    page
}

fn paging_params() -> Vec<Value> {
    vec![
        query_param(
            "page",
            "1-based page",
            json!({ "type": "integer", "minimum": 1, "maximum": MAX_PAGE, "default": 1 }),
        ),
        query_param(
            "pageSize",
            "records per page",
            json!({ "type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": 100 }),
        ),
    ]
}

/// What the document needs to know about a served resource.
struct Res {
    kind: &'static dyn ResourceKind,
    /// Path under `/api/v2`.
    base: String,
    /// Operation id prefix.
    id: String,
    tag: String,
    /// The record schema's name.
    record: String,
    /// Its top-level fields, sorted.
    fields: Vec<String>,
    /// Those a filter, sort or group-and-count may name: all but the fields computed only for
    /// answers (`ResourceDesc::answered`), which the server refuses there.
    stored: Vec<String>,
    /// `type` under `/concept/<type>`.
    implied: Option<&'static str>,
}

impl Res {
    fn new(kind: &'static dyn ResourceKind, implied: Option<&'static str>) -> Res {
        let (record, schema) = kind.schema();
        let mut fields: Vec<String> = match to_value(&schema)["properties"].as_object() {
            Some(props) => props.keys().cloned().collect(),
            None => Vec::new(),
        };
        fields.sort();
        let stored = fields
            .iter()
            .filter(|f| !kind.desc().answered.contains(&f.as_str()))
            .cloned()
            .collect();
        let base = match implied {
            Some(t) => format!("concept/{t}"),
            None => kind.desc().path.to_string(),
        };
        Res {
            kind,
            id: base.replace(['/', '-'], "_"),
            tag: match implied {
                Some(_) => "concept".to_string(),
                None => kind.desc().path.to_string(),
            },
            base,
            record,
            fields,
            stored,
            implied,
        }
    }

    fn input_name(&self) -> String {
        match self.implied {
            Some(t) => format!("Concept{}Input", camel(t)),
            None => format!("{}Input", self.record),
        }
    }

    fn patch_name(&self) -> String {
        match self.implied {
            Some(t) => format!("Concept{}Patch", camel(t)),
            None => format!("{}Patch", self.record),
        }
    }

    fn archivable(&self) -> bool {
        self.kind.desc().archive.is_archivable()
    }

    /// Fields the server sets and ignores in request bodies.
    fn server_managed(&self) -> Vec<&'static str> {
        COMMON_READ_ONLY
            .iter()
            .chain(self.kind.desc().read_only)
            .copied()
            .collect()
    }
}

fn camel(s: &str) -> String {
    s.split('-')
        .map(|part| {
            let mut c = part.chars();
            match c.next() {
                Some(first) => first.to_uppercase().chain(c).collect(),
                None => String::new(),
            }
        })
        .collect()
}

/// The create form of a record: its schema, with the server-managed fields accepted as
/// anything and ignored, `id` optional, and the implied `type` of a concept endpoint.
fn input_schema(res: &Res, record: &Value) -> Value {
    let mut schema = record.clone();
    let managed = res.server_managed();
    let desc = res.kind.desc();
    if let Some(props) = schema["properties"].as_object_mut() {
        for field in &managed {
            if props.contains_key(*field) {
                props.insert(
                    field.to_string(),
                    json!({ "description": "set by the server; ignored in a request" }),
                );
            }
        }
        if desc.archive == Archive::Actions {
            // Set by the archive and restore actions only.
            props.remove("isArchived");
            props.remove("archivedAt");
        }
        if props.contains_key("id") {
            props.insert(
                "id".into(),
                json!({
                    "type": ["string", "null"],
                    "format": "uuid",
                    "description": "the new record's id; generated when omitted or null"
                }),
            );
        }
        if let Some(t) = res.implied {
            props.insert(
                "type".into(),
                json!({ "enum": [t, null], "description": "implied by the path" }),
            );
        }
        // Text the database indexes (docs/limits.md).
        for field in crate::http::text::indexed_fields(desc) {
            if let Some(p) = props.get_mut(field).filter(|p| p.get("type").is_some()) {
                p["maxLength"] = json!(crate::http::text::MAX_INDEXED_TEXT);
            }
        }
    }
    if let Some(required) = schema["required"].as_array_mut() {
        required.retain(|f| {
            let f = f.as_str().unwrap_or_default();
            f != "id" && !managed.contains(&f) && (res.implied.is_none() || f != "type")
        });
    }
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("description");
        obj.insert(
            "description".into(),
            json!(format!(
                "The body that creates a {} record (server-managed fields are ignored)",
                res.base
            )),
        );
    }
    schema
}

/// The PATCH form: the fields a PATCH may name, none required.
fn patch_schema(res: &Res, input: &Value) -> Value {
    let desc = res.kind.desc();
    let mut schema = input.clone();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("required");
        obj.insert(
            "description".into(),
            json!(format!(
                "The fields a PATCH of a {} record changes; the rest keep their values",
                res.base
            )),
        );
    }
    if let Some(props) = schema["properties"].as_object_mut() {
        if !desc.patch_only.is_empty() {
            props.retain(|k, _| desc.patch_only.contains(&k.as_str()));
        }
        // A change of an immutable field is refused; the stored value may be repeated, which
        // a schema cannot say, so these fields are left out.
        for field in desc.immutable {
            props.remove(*field);
        }
        if desc.archive == Archive::Actions {
            props.remove("isArchived");
            props.remove("archivedAt");
        }
        if props.contains_key("id") {
            props.insert(
                "id".into(),
                json!({ "description": "ignored (the path names the record)" }),
            );
        }
        if let Some(t) = res.implied {
            props.insert(
                "type".into(),
                json!({ "enum": [t], "description": "implied by the path; cannot change" }),
            );
        }
    }
    schema
}

/// What bulk PATCH and DELETE say of their filters (a rule OpenAPI cannot state).
const NEEDS_A_FILTER: &str =
    "Needs at least one filter parameter (or `search`); without one the answer is 400.";

/// The query parameters that filter a list, one per field of the record: `?field=value`
/// (repeat a parameter to match any of its values), `isArchived=true|false`, and with
/// `search`, the search text. Each is a plain string parameter, so a fuzzer re-validates what
/// it sent (an exploded object parameter could not be re-validated after serialization, and
/// gave schemathesis false findings). Bulk PATCH and DELETE need at least one of them; OpenAPI
/// cannot say "one of these optional parameters", so the operation's description says it (and
/// scripts/fuzz-exceptions.toml names the rule).
fn filter_params(res: &Res, with_search: bool) -> Vec<Value> {
    let archivable = res.archivable();
    let mut params: Vec<Value> = res
        .stored
        .iter()
        .filter(|f| !(archivable && f.as_str() == "isArchived"))
        .map(|f| {
            query_param(
                f,
                "equals (in the stored value's JSON type: `5`, `true`); repeat to match any; \
                 `field.key` filters inside an object",
                json!({ "type": "string" }),
            )
        })
        .collect();
    if archivable {
        params.push(query_param(
            "isArchived",
            "archived records are left out unless this is given",
            json!({ "type": "string", "enum": ["true", "false"] }),
        ));
    }
    if with_search {
        params.extend(search_param(res));
    }
    params
}

fn search_param(res: &Res) -> Option<Value> {
    let cols = res.kind.desc().search_columns;
    (!cols.is_empty()).then(|| {
        query_param(
            "search",
            &format!("case-insensitive substring of {}", cols.join(", ")),
            json!({ "type": "string", "maxLength": crate::http::text::MAX_SEARCH_TEXT }),
        )
    })
}

fn sort_param(res: &Res) -> Value {
    query_param(
        "sort",
        "fields (or dotted paths), comma separated; `-` before a field sorts it descending",
        json!({ "type": "string", "pattern": sort_pattern(&res.stored) }),
    )
}

/// The filter of a JSON body (`query`, `count`, `group-and-count`): field → value or values.
fn body_filter(res: &Res) -> Value {
    let scalar = json!({ "type": ["string", "number", "boolean", "null"] });
    let value = json!({ "anyOf": [scalar, { "type": "array", "items": scalar }] });
    let mut pattern_props = Map::new();
    pattern_props.insert(format!("^{}$", field_path(&res.stored)), value);
    let mut schema = json!({
        "type": "object",
        "description": "Equality filters: a field (or dotted path) and a value or a list of \
            values (any of them matches). Archived records are left out unless `isArchived` \
            is given.",
        "patternProperties": pattern_props,
        "additionalProperties": false
    });
    if res.archivable() {
        schema["properties"] = json!({ "isArchived": { "type": "boolean" } });
    }
    schema
}

fn query_body(res: &Res) -> Value {
    let path = json!({ "type": "string", "pattern": format!("^{}$", field_path(&res.fields)) });
    let mut props = json!({
        "id": { "type": ["array", "null"], "items": uuid(), "description": "only these records" },
        "select": {
            "type": ["array", "null"],
            "items": path,
            "description": "answer `id` and these fields (dotted paths under flattened names)"
        },
        "filter": nullable(body_filter(res)),
        "sort": { "type": ["string", "null"], "pattern": sort_pattern(&res.stored) },
        "page": { "type": ["integer", "null"], "minimum": 1, "maximum": MAX_PAGE },
        "pageSize": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": MAX_PAGE_SIZE,
            "description": "default 100, or the number of ids given"
        }
    });
    if !res.kind.desc().search_columns.is_empty() {
        props["search"] = json!({
            "type": ["string", "null"],
            "maxLength": crate::http::text::MAX_SEARCH_TEXT
        });
    }
    json!({ "type": "object", "properties": props, "additionalProperties": false })
}

fn nullable(schema: Value) -> Value {
    json!({ "anyOf": [schema, { "type": "null" }] })
}

/// One operation under construction.
struct Op {
    method: &'static str,
    path: String,
    value: Value,
}

fn op(method: &'static str, path: String, id: &str, tag: &str, summary: &str) -> Op {
    Op {
        method,
        path,
        value: json!({
            "operationId": id,
            "tags": [tag],
            "summary": summary,
            "responses": {}
        }),
    }
}

impl Op {
    fn describe(mut self, description: impl Into<String>) -> Op {
        self.value["description"] = json!(description.into());
        self
    }
    fn param(mut self, p: Value) -> Op {
        match self.value["parameters"].as_array_mut() {
            Some(list) => list.push(p),
            None => self.value["parameters"] = json!([p]),
        }
        self
    }
    fn params(self, ps: impl IntoIterator<Item = Value>) -> Op {
        ps.into_iter().fold(self, Op::param)
    }
    fn body(mut self, schema: Value, required: bool) -> Op {
        self.value["requestBody"] = json_body(schema, required);
        self
    }
    fn ok(mut self, status: &str, description: &str, schema: Option<Value>) -> Op {
        let mut r = json!({ "description": description });
        if let Some(s) = schema {
            r["content"] = json!({ "application/json": { "schema": s } });
        }
        self.value["responses"][status] = r;
        self
    }
    fn open(mut self) -> Op {
        self.value["security"] = json!([]);
        self
    }
    /// Refused with 403 on every call (the resource forbids it, decisions.md 4).
    fn forbidden(mut self, why: &str) -> Op {
        self.value["description"] = json!(format!("Always refused with 403 `FORBIDDEN`: {why}"));
        self.value["x-prodops-forbidden"] = json!(true);
        self
    }
}

/// The standard operations of one resource, as the engine routes them.
fn standard_ops(res: &Res, ops: &mut Vec<Op>) {
    let desc = res.kind.desc();
    let base = format!("/api/v2/{}", res.base);
    let what = &res.base;
    let record = schema_ref(&res.record);
    let mk = |method, path: String, verb: &str, summary: String| {
        op(
            method,
            path,
            &format!("{}_{verb}", res.id),
            &res.tag,
            &summary,
        )
    };
    let forbidden = |o: Op, allow: Allow, what: &str| {
        if allow == Allow::Forbidden {
            o.forbidden(what)
        } else {
            o
        }
    };

    // GET /r
    let mut list = mk("get", base.clone(), "list", format!("List {what} records"))
        .describe(
            "A page of records in the resource's default order (or `sort`), with `totalCount`. \
             In the default order the answer also carries `nextCursor`; `?cursor=<nextCursor>` \
             (without `sort` or `page`) continues after that record without an offset. The \
             cursor is opaque, so it is described here rather than as a parameter.",
        )
        .params(filter_params(res, false));
    if let Some(p) = search_param(res) {
        list = list.param(p);
    }
    list = list.param(sort_param(res)).params(paging_params()).ok(
        "200",
        "A page of records",
        Some(page_schema(record.clone(), true)),
    );
    ops.push(list);

    // POST /r
    if routed(desc.ops.create) {
        let create = mk(
            "post",
            base.clone(),
            "create",
            format!("Create a {what} record"),
        )
        .body(schema_ref(&res.input_name()), true)
        .ok("201", "The created record", Some(record.clone()));
        ops.push(forbidden(
            create,
            desc.ops.create,
            "records are not created here",
        ));
    }

    let item = format!("{base}/{{id}}");
    let mut get = mk(
        "get",
        item.clone(),
        "get",
        format!("Read one {what} record"),
    )
    .param(path_param("id", uuid()));
    for (field, value) in desc.default_filters {
        get = get.param(query_param(
            field,
            &format!("without it, only records with {field}={value} are found"),
            json!({ "type": "string" }),
        ));
    }
    ops.push(get.ok("200", "The record", Some(record.clone())));
    if routed(desc.ops.update) {
        let patch = mk(
            "patch",
            item.clone(),
            "update",
            format!("Update a {what} record"),
        )
        .param(path_param("id", uuid()))
        .body(schema_ref(&res.patch_name()), true)
        .ok("200", "The updated record", Some(record.clone()));
        let patch = if desc.immutable.is_empty() {
            patch
        } else {
            patch.describe(format!(
                "{} cannot change after creation (a PATCH may repeat the stored value).",
                desc.immutable.join(", ")
            ))
        };
        ops.push(forbidden(patch, desc.ops.update, "records do not change"));
    }
    if routed(desc.ops.delete) {
        let summary = match desc.archive {
            Archive::OnDelete => format!("Archive a {what} record"),
            _ => format!("Delete a {what} record"),
        };
        let delete = mk("delete", item.clone(), "delete", summary)
            .param(path_param("id", uuid()))
            .ok("204", "Deleted or archived", None);
        ops.push(forbidden(
            delete,
            desc.ops.delete,
            "archive with PATCH {\"isArchived\": true} instead",
        ));
    }

    ops.push(
        mk(
            "post",
            format!("{base}/query"),
            "query",
            format!("Query {what} records"),
        )
        .describe("Ids, filter, search, sort, paging and select in one body.")
        .body(query_body(res), true)
        .ok(
            "200",
            "A page of records",
            Some(page_schema(json!({ "type": "object" }), false)),
        ),
    );
    let count = json!({
        "type": "object",
        "required": ["count"],
        "properties": { "count": { "type": "integer", "minimum": 0 } }
    });
    let mut count_get = mk(
        "get",
        format!("{base}/count"),
        "count_get",
        format!("Count {what} records"),
    )
    .params(filter_params(res, false));
    if let Some(p) = search_param(res) {
        count_get = count_get.param(p);
    }
    ops.push(count_get.ok("200", "The count", Some(count.clone())));
    ops.push(
        mk(
            "post",
            format!("{base}/count"),
            "count",
            format!("Count {what} records matching a filter"),
        )
        .describe(
            "The body is optional: without one, every record (archived ones left out) is counted.",
        )
        .body(
            json!({
                "type": ["object", "null"],
                "properties": { "filter": nullable(body_filter(res)) },
                "additionalProperties": false
            }),
            false,
        )
        .ok("200", "The count", Some(count)),
    );
    ops.push(
        mk(
            "post",
            format!("{base}/group-and-count"),
            "group_and_count",
            format!("Count {what} records by the value of a field"),
        )
        .body(
            json!({
                "type": "object",
                "required": ["groupByField"],
                "properties": {
                    "groupByField": {
                        "type": "string",
                        "pattern": format!("^{}$", field_path(&res.stored))
                    },
                    "filter": nullable(body_filter(res))
                },
                "additionalProperties": false
            }),
            true,
        )
        .ok(
            "200",
            "Groups, largest first",
            Some(json!({
                "type": "object",
                "required": ["values"],
                "properties": {
                    "values": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["groupId", "count"],
                            "properties": {
                                "groupId": {},
                                "count": { "type": "integer", "minimum": 0 }
                            }
                        }
                    }
                }
            })),
        ),
    );

    let bulk = format!("{base}/bulk");
    let counted = json!({
        "type": "object",
        "required": ["count"],
        "properties": { "count": { "type": "integer", "minimum": 0 } }
    });
    if routed(desc.ops.bulk_put) {
        let o = mk(
            "put",
            bulk.clone(),
            "bulk_put",
            format!("Create or update a batch of {what} records, all or nothing"),
        )
        .describe(
            "Each record with the `id` of a stored record changes it as a PATCH would; any \
                 other creates a record (keeping a given `id`). One refused record refuses the \
                 whole batch, naming its `index`.",
        )
        .body(
            json!({
                "type": "array",
                "maxItems": MAX_BULK_RECORDS,
                "items": schema_ref(&res.input_name())
            }),
            true,
        )
        .ok(
            "200",
            "The count and the ids, in the order of the body",
            Some(json!({
                "type": "object",
                "required": ["count", "ids"],
                "properties": {
                    "count": { "type": "integer", "minimum": 0 },
                    "ids": { "type": "array", "items": uuid() }
                }
            })),
        );
        ops.push(forbidden(
            o,
            desc.ops.bulk_put,
            "bulk writes are refused here",
        ));
    }
    if routed(desc.ops.bulk_patch) {
        let o = mk(
            "patch",
            bulk.clone(),
            "bulk_patch",
            format!("Update every {what} record a filter matches"),
        )
        .describe(format!(
            "{NEEDS_A_FILTER} Applies the body to every matching record in one transaction; one \
             refused record refuses all. A filter matching more than {MAX_BULK_RECORDS} records is refused."
        ))
        .params(filter_params(res, true))
        .body(schema_ref(&res.patch_name()), true)
        .ok("200", "How many records matched", Some(counted.clone()));
        ops.push(forbidden(
            o,
            desc.ops.bulk_patch,
            "bulk changes are refused here",
        ));
    }
    if routed(desc.ops.bulk_delete) {
        let o = mk(
            "delete",
            bulk.clone(),
            "bulk_delete",
            format!("Delete (or archive) every {what} record a filter matches"),
        )
        .describe(format!(
            "{NEEDS_A_FILTER} A filter matching more than {MAX_BULK_RECORDS} records is refused."
        ))
        .params(filter_params(res, true))
        .ok("200", "How many records matched", Some(counted));
        ops.push(forbidden(
            o,
            desc.ops.bulk_delete,
            "bulk deletes are refused here",
        ));
    }
}

/// The operations served by resource modules, beside the engine's.
/// The operations of the declared actions (`prodops_core::api::ACTIONS`): method, path,
/// parameters, bodies, status and summary come from each declaration; what a core type cannot
/// say (a pattern built from the record's fields, a stricter body) the families add in
/// [`crate::families::refine_action`].
fn action_ops(schemas: &mut Vec<(String, RefOr<Schema>)>, ops: &mut Vec<Op>) {
    use prodops_core::api::{self, Access, AnswerBody, ParamKind, RequestBody};
    fn kind_schema(kind: ParamKind) -> Value {
        match kind {
            ParamKind::Uuid => uuid(),
            ParamKind::UuidList => json!({ "type": "array", "items": uuid() }),
            ParamKind::Integer => json!({ "type": "integer" }),
            ParamKind::Text => json!({ "type": "string" }),
        }
    }
    let object = || json!({ "type": "object" });
    for desc in api::ACTIONS {
        let method = match desc.method {
            api::HttpMethod::Get => "get",
            api::HttpMethod::Post => "post",
            api::HttpMethod::Patch => "patch",
            api::HttpMethod::Delete => "delete",
        };
        let mut o = op(
            method,
            format!("/api/v2{}", desc.path),
            desc.operation_id,
            desc.tag,
            desc.summary,
        );
        if !desc.description.is_empty() {
            o = o.describe(desc.description);
        }
        if desc.access == Access::Open {
            o = o.open();
        }
        for (name, kind) in desc.path_params().into_iter().zip(desc.path_kinds) {
            o = o.param(path_param(name, kind_schema(*kind)));
        }
        let mut paging = false;
        for q in desc.query {
            if matches!(q.name, "page" | "pageSize") {
                paging = true;
                continue;
            }
            let mut p = query_param(q.name, q.description, kind_schema(q.kind));
            if q.required {
                p["required"] = json!(true);
            }
            o = o.param(p);
        }
        if paging {
            o = o.params(paging_params());
        }
        o = match (body_override(desc), desc.request) {
            (Some((schema, required)), _) => o.body(schema, required),
            (None, RequestBody::None) => o,
            (None, RequestBody::Json { schema, required }) => {
                let s = schema.map_or_else(object, |f| to_value(&f(schemas)));
                o.body(if required { s } else { nullable(s) }, required)
            }
            (None, RequestBody::Bytes) => o.value_body_bytes(),
        };
        let status = desc.status.to_string();
        o = match desc.answer {
            AnswerBody::Empty => o.ok(&status, desc.outcome, None),
            AnswerBody::Json(schema) => {
                let s = schema.map_or_else(object, |f| to_value(&f(schemas)));
                o.ok(&status, desc.outcome, Some(s))
            }
            AnswerBody::Value(schema) => {
                let s = to_value(&schema(schemas));
                o.ok(
                    &status,
                    desc.outcome,
                    Some(json!({ "type": "object", "required": ["value"], "properties": { "value": s } })),
                )
            }
            AnswerBody::Page(schema) => {
                let s = schema.map_or_else(object, |f| to_value(&f(schemas)));
                o.ok(&status, desc.outcome, Some(page_schema(s, false)))
            }
            AnswerBody::Bytes => o.ok_bytes(&status, desc.outcome),
        };
        ops.push(refine_action(desc, o));
    }
}

/// Bodies the server describes itself: a stricter shape than the core type's (an enum, the
/// record's filter fields), a body taken in more forms than one type, or the record form the
/// document already names. The core type is then not added to the document.
fn body_override(desc: &prodops_core::api::ActionDesc) -> Option<(Value, bool)> {
    let deliverable = || Res::new(registry::ResourceId::Deliverable.kind(), None);
    match desc.operation_id {
        "deliverable_groups" => Some((
            json!({
                "type": "object",
                "required": ["groupBy"],
                "properties": {
                    "groupBy": { "enum": ["project", "stage", "people", "root", "tags"] },
                    "filter": nullable(body_filter(&deliverable()))
                },
                "additionalProperties": false
            }),
            true,
        )),
        "deliverable_reorder" => Some((
            json!({
                "type": "object",
                "required": ["rootParentId", "orderedDeliverableIds"],
                "properties": {
                    "rootParentId": uuid(),
                    "orderedDeliverableIds": { "type": "array", "items": uuid() }
                },
                "additionalProperties": false
            }),
            true,
        )),
        "bom_line_project_allocate" => Some((
            json!({
                "description": "no body, null or {}",
                "anyOf": [
                    { "type": "object", "maxProperties": 0 },
                    { "type": "null" }
                ]
            }),
            false,
        )),
        // The server takes the record's create form; PostInventory is the part a client fills.
        "inventory_transaction_post" => Some((schema_ref("InventoryTransactionInput"), true)),
        _ => None,
    }
}

/// What the declarations' core types cannot say about an action's parameters: the patterns
/// and filters built from the deliverable record's fields, a list parameter's form; and the
/// one body that adds a requirement to its core type's.
fn refine_action(desc: &prodops_core::api::ActionDesc, mut o: Op) -> Op {
    let deliverable = || Res::new(registry::ResourceId::Deliverable.kind(), None);
    match desc.operation_id {
        "event_list" => {
            // What the feed's parser accepts, so that a generated value it refuses is a finding.
            let paths: Vec<String> = registry::resources()
                .iter()
                .map(|r| regex_escape(r.desc().path))
                .collect();
            let resource = format!("(?:{})", paths.join("|"));
            let event_type = prodops_core::event::type_filter_pattern();
            let list = |item: &str| format!("^(?:{item}(?:,{item})*)?$");
            if let Some(params) = o.value["parameters"].as_array_mut() {
                for p in params {
                    let schema = match p["name"].as_str() {
                        Some("after") => json!({ "type": "string", "pattern": "^[0-9]{0,18}$" }),
                        Some("type") => json!({ "type": "string", "pattern": list(&event_type) }),
                        Some("resource") => json!({ "type": "string", "pattern": list(&resource) }),
                        Some("limit") => json!({
                            "type": "integer", "minimum": 1, "maximum": prodops_core::api::event::MAX_LIMIT
                        }),
                        Some("wait") => json!({
                            "type": "integer", "minimum": 0, "maximum": prodops_core::api::event::MAX_WAIT_SECS
                        }),
                        _ => continue,
                    };
                    p["schema"] = schema;
                }
            }
            // A cursor whose following events were pruned (docs/events.md, "Retention").
            o.value["responses"]["410"] = json!({
                "description": "`GONE`: the events after `after` are no longer kept (older than \
                    the feed's retention), so a follower would miss some. The detail names \
                    `after` and carries `oldestCursor`, the cursor of the oldest event kept (the \
                    next event's when none is kept); ask with `after=0` to read from it.",
                "content": { "application/json": { "schema": {
                    "type": "object",
                    "required": ["error"],
                    "properties": { "error": {
                        "type": "object",
                        "required": ["code", "message", "requestId", "details"],
                        "properties": {
                            "code": { "type": "string", "enum": ["GONE"] },
                            "message": { "type": "string" },
                            "requestId": { "type": "string" },
                            "details": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "object",
                                    "required": ["field", "message", "oldestCursor"],
                                    "properties": {
                                        "field": { "type": "string", "enum": ["after"] },
                                        "message": { "type": "string" },
                                        "oldestCursor": { "type": "string", "pattern": "^[0-9]{1,18}$" }
                                    }
                                }
                            }
                        }
                    }}
                }}}
            });
        }
        "get_webhook_deliveries" => {
            // What the log's parser accepts.
            if let Some(params) = o.value["parameters"].as_array_mut() {
                for p in params {
                    let schema = match p["name"].as_str() {
                        Some("status") => {
                            json!({ "type": "string", "enum": ["pending", "delivered", "dead"] })
                        }
                        Some("page") => {
                            json!({ "type": "integer", "minimum": 1, "maximum": 1_000_000 })
                        }
                        Some("pageSize") => {
                            json!({ "type": "integer", "minimum": 1, "maximum": 1000 })
                        }
                        _ => continue,
                    };
                    p["schema"] = schema;
                }
            }
        }
        "deliverable_hierarchy" => {
            let res = deliverable();
            o.value["parameters"] = json!([
                path_param("id", uuid()),
                query_param(
                    "select",
                    "fields, comma separated, as POST /deliverable/query selects them: each value is \
                     then `id` and the selected fields, nested paths under flattened names \
                     (`data.properties.area` as `dataPropertiesArea`)",
                    json!({ "type": "string", "pattern": select_list_pattern(&res.fields) }),
                )
            ]);
        }
        "deliverable_roots" => {
            let res = deliverable();
            let mut params = filter_params(&res, false);
            params.extend(search_param(&res));
            params.push(sort_param(&res));
            params.extend(paging_params());
            o.value["parameters"] = Value::Array(params);
        }
        "deliverable_crew_time" => {
            o.value["parameters"] = json!([{
                "name": "deliverableId",
                "in": "query",
                "required": true,
                "style": "form",
                "explode": true,
                "schema": { "type": "array", "minItems": 1, "items": uuid() }
            }]);
        }
        "document_version_create" => {
            let version = o.value["requestBody"]["content"]["application/json"]["schema"].clone();
            o = o.body(
                json!({
                    "allOf": [
                        version,
                        { "required": ["documentId"], "properties": { "documentId": uuid() } }
                    ]
                }),
                true,
            );
        }
        _ => {}
    }
    o
}

impl Op {
    fn value_body_bytes(mut self) -> Op {
        self.value["requestBody"] = json!({
            "required": true,
            "content": {
                "application/octet-stream": {
                    "schema": { "type": "string", "format": "binary", "minLength": 1 }
                }
            }
        });
        self
    }
    fn ok_bytes(mut self, status: &str, description: &str) -> Op {
        self.value["responses"][status] = json!({
            "description": description,
            "content": { "*/*": { "schema": { "type": "string", "format": "binary" } } }
        });
        self
    }
}

/// Read-only operations sent as POST (their bodies describe what to read).
fn reads_by_post(id: &str) -> bool {
    id.ends_with("_query")
        || id.ends_with("_count")
        || id.ends_with("_group_and_count")
        || id == "deliverable_groups"
        || id == "post_document_counts_by_deliverable"
}

/// Operations that name no record and so never answer 404.
fn never_404(method: &str, path: &str, id: &str) -> bool {
    !path.contains('{') && (method == "get" || reads_by_post(id)) && id != "deliverable_crew_time"
}

/// The error answers of an operation, from what the gateway and handlers can answer.
fn add_errors(method: &str, path: &str, operation: &mut Value) {
    let id = operation["operationId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let open = operation["security"]
        .as_array()
        .is_some_and(|s| s.is_empty());
    let has_body = operation.get("requestBody").is_some();
    let write = matches!(method, "post" | "put" | "patch" | "delete") && !reads_by_post(&id);
    let forbidden_only = operation
        .as_object_mut()
        .and_then(|o| o.remove("x-prodops-forbidden"))
        .is_some();
    if write && has_body && !forbidden_only {
        let rule = "Ids in the body that name other records (`parentId`, `itemId`, ...) must \
            name records of this organization, and rules across fields and stored records \
            (docs/api.md) hold; otherwise 400 `VALIDATION_ERROR` naming the field.";
        let text = match operation["description"].as_str() {
            Some(d) => format!("{d} {rule}"),
            None => rule.to_string(),
        };
        operation["description"] = json!(text);
    }
    let responses = &mut operation["responses"];
    if forbidden_only {
        // Refused before the request is read: only the gateway's answers and the 403.
        *responses = json!({});
        let mut add = |status: &str| {
            responses[status] = json!({ "$ref": format!("#/components/responses/E{status}") });
        };
        for status in ["401", "403", "429", "503"] {
            add(status);
        }
        return;
    }
    let mut add = |status: &str| {
        responses[status] = json!({ "$ref": format!("#/components/responses/E{status}") });
    };
    add("400");
    // Open operations check credentials of their own (a link's signature, an invitation's
    // token) and refuse them with 403 too.
    add("403");
    if !open {
        add("401");
    }
    if !never_404(method, path, &id) {
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
            "`CONFLICT`: a unique rule, a referenced record, stock that would go below zero, or a reused idempotency key",
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

/// Rules of the request forms that the record types alone do not carry, derived from the
/// same registry and descriptions the server checks them with.
fn refine(components: &mut Map<String, Value>) {
    // Integer fields hold at most 2^53 - 1 in size (`prodops_core::number`).
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
    for schema in components.values_mut() {
        bound_integers(schema);
    }
    // A role's permissions: `admin` or `<Resource>.<Action>` of a registered resource.
    let mut resources: Vec<&str> = registry::resources()
        .iter()
        .map(|k| k.desc().permission)
        .collect();
    resources.sort();
    resources.dedup();
    let permission = format!(
        "^(?:{}|(?:{})\\.(?:{}))$",
        prodops_core::organization::ADMIN_PERMISSION,
        resources.join("|"),
        prodops_core::organization::PERMISSION_ACTIONS.join("|")
    );
    for name in ["Role", "RoleInput", "RolePatch"] {
        if let Some(items) = components
            .get_mut(name)
            .and_then(|s| s.pointer_mut("/properties/permissions/items"))
        {
            items["pattern"] = json!(permission);
        }
    }
    // Custom properties are scoped to orders only.
    for name in [
        "CustomPropertyDefinitionInput",
        "CustomPropertyDefinitionPatch",
    ] {
        if let Some(props) = components
            .get_mut(name)
            .and_then(|s| s.get_mut("properties"))
        {
            props["deliverableTypes"] = json!({
                "type": "array",
                "items": { "enum": ["order"] },
                "minItems": 1,
                "maxItems": 1,
                "description": "[\"order\"], the only supported scope"
            });
        }
    }
    // POST /delivery creates inbound deliveries; the others come from POST /delivery/outbound.
    if let Some(props) = components
        .get_mut("DeliveryInput")
        .and_then(|s| s.get_mut("properties"))
    {
        props["direction"] = json!({
            "enum": ["inbound"],
            "description": "inbound (the default); outbound and transfer deliveries are created with POST /delivery/outbound"
        });
    }
    // A deliverable's identifier is generated when a create leaves it blank (omitted, null or
    // only whitespace), and kept when an update does.
    let deliverable_forms = components
        .keys()
        .filter(|k| {
            k.as_str() == "DeliverableInput"
                || k.as_str() == "DeliverablePatch"
                || (k.starts_with("Concept") && (k.ends_with("Input") || k.ends_with("Patch")))
        })
        .cloned()
        .collect::<Vec<_>>();
    for name in deliverable_forms {
        if let Some(props) = components
            .get_mut(&name)
            .and_then(|s| s.get_mut("properties"))
            .filter(|p| p.get("identifier").is_some())
        {
            if name.ends_with("Patch") {
                // A PATCH of `data: null` leaves the data as it is (its keys merge).
                let data = props["data"].take();
                props["data"] = nullable(data);
            }
            let max = crate::http::text::MAX_INDEXED_TEXT;
            props["identifier"] = json!({
                "type": ["string", "null"],
                "maxLength": max,
                "description": "readable and unique in the organization; generated (docs/deliverables.md) when a create leaves it blank, kept when an update does"
            });
        }
    }
    // POST /inventory-transaction posts adjustments, transfers and returns; the other types
    // are posted by the workflows that move stock.
    if let Some(props) = components
        .get_mut("InventoryTransactionInput")
        .and_then(|s| s.get_mut("properties"))
    {
        props["type"] = json!({ "enum": ["adjust", "transfer", "return"] });
    }
    // A version needs a file: an uploaded `documentKey` or a `documentUrl`.
    for name in ["DocumentVersionInput", "VersionCreate"] {
        if let Some(schema) = components.get_mut(name).and_then(Value::as_object_mut) {
            let given = |field: &str| {
                json!({
                    "required": [field],
                    "properties": { field: { "type": "string", "pattern": nonblank_pattern() } }
                })
            };
            schema.insert(
                "anyOf".into(),
                json!([given("documentKey"), given("documentUrl")]),
            );
        }
    }
    // Stopping needs deliverables or workers.
    if let Some(schema) = components
        .get_mut("StopRequest")
        .and_then(Value::as_object_mut)
    {
        let some = |field: &str| json!({ "required": [field], "properties": { field: { "minItems": 1 } } });
        schema.insert(
            "anyOf".into(),
            json!([some("deliverableIds"), some("workerIds")]),
        );
    }
    // An invitation's address as the server reads it (trimmed, lowercased): one `@` between a
    // nonempty local part and a domain with an inner dot; no whitespace or control characters.
    if let Some(email) = components
        .get_mut("InviteRequest")
        .and_then(|s| s.pointer_mut("/properties/email"))
    {
        let bad = format!("{WS_CHARS}\\x00-\\x1F\\x7F-\\x9F");
        email["pattern"] = json!(format!(
            "^\\s*[^@{bad}]+@[^@.{bad}](?:[^@{bad}]*\\.)+[^@{bad}]*[^@.{bad}]\\s*$"
        ));
        email["maxLength"] = json!(254);
    }
}

/// Core's internally tagged enums that refuse unknown fields (`deny_unknown_fields`): each
/// variant's schema says so (utoipa leaves it out of `oneOf` variants).
fn closed_variants(components: &mut Map<String, Value>) {
    for name in ["ProgressAction", "ScheduleAction"] {
        if let Some(variants) = components
            .get_mut(name)
            .and_then(|s| s.get_mut("oneOf"))
            .and_then(Value::as_array_mut)
        {
            for v in variants {
                v["additionalProperties"] = json!(false);
            }
        }
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
                    .replace(r"\s", &ws_char());
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
    let mut schemas: Vec<(String, RefOr<Schema>)> = Vec::new();
    <prodops_core::Violation as utoipa::ToSchema>::schemas(&mut schemas);
    schemas.push((
        "Violation".into(),
        <prodops_core::Violation as utoipa::PartialSchema>::schema(),
    ));
    let mut components = Map::new();
    let mut ops: Vec<Op> = Vec::new();
    for kind in registry::resources() {
        let res = Res::new(*kind, None);
        kind.schemas(&mut schemas);
        let (name, schema) = kind.schema();
        let record = to_value(&schema);
        let input = input_schema(&res, &record);
        components.insert(res.patch_name(), patch_schema(&res, &input));
        components.insert(res.input_name(), input);
        components.insert(name, record.clone());
        if kind.desc().path == "deliverable" {
            for t in prodops_core::deliverable::DeliverableType::ALL {
                let concept = Res::new(*kind, Some(t.as_str()));
                let input = input_schema(&concept, &record);
                components.insert(concept.patch_name(), patch_schema(&concept, &input));
                components.insert(concept.input_name(), input);
            }
        }
        standard_ops(&res, &mut ops);
        if kind.desc().path == "deliverable" {
            for t in prodops_core::deliverable::DeliverableType::ALL {
                standard_ops(&Res::new(*kind, Some(t.as_str())), &mut ops);
            }
        }
    }
    action_ops(&mut schemas, &mut ops);

    for (name, schema) in schemas {
        components.entry(name).or_insert_with(|| to_value(&schema));
    }
    closed_variants(&mut components);
    refine(&mut components);
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

    let mut paths = Map::new();
    for Op {
        method,
        path,
        mut value,
    } in ops
    {
        add_errors(method, &path, &mut value);
        let item = paths
            .entry(path)
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("a path item is an object");
        item.insert(method.to_string(), value);
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
    doc
}

/// What a webhook receiver is sent (docs/events.md, "Webhooks"): the body is an `Event` as
/// `GET /event` answers it (a `webhook.ping` for `POST /webhook/{id}/test`).
fn webhook_components(components: &mut Map<String, Value>) {
    // The secret is write-only: the record type never writes it out, so its schema (and the
    // input and patch derived from it) lacks it; a request names it.
    let secret = json!({
        "type": "string",
        "minLength": prodops_core::webhook::SECRET_MIN,
        "maxLength": prodops_core::webhook::SECRET_MAX,
        "writeOnly": true,
        "description": "The key of the `X-Prodops-Signature` HMAC; required on create, never answered"
    });
    for (name, required) in [("WebhookInput", true), ("WebhookPatch", false)] {
        let Some(schema) = components.get_mut(name) else {
            continue;
        };
        if let Some(props) = schema["properties"].as_object_mut() {
            let mut secret = secret.clone();
            if !required {
                // A PATCH's `null` leaves the secret as it is.
                secret["type"] = json!(["string", "null"]);
            }
            props.insert("secret".into(), secret);
            // What `prodops_core::webhook::check_url` and `check_pattern` accept (IPv6 literal
            // hosts, which the server also takes, left out).
            if let Some(url) = props.get_mut("url") {
                url["pattern"] = json!(WEBHOOK_URL_PATTERN);
                url["maxLength"] = json!(2000);
            }
            if let Some(types) = props.get_mut("eventTypes") {
                types["minItems"] = json!(1);
                types["items"] = json!({
                    "type": "string",
                    "pattern": r"^(?:\*|[A-Za-z0-9_./-]{1,200}|[A-Za-z0-9_./-]{1,198}\.\*)$"
                });
            }
            if let Some(d) = props.get_mut("description") {
                d["maxLength"] = json!(1000);
            }
        }
        if required {
            match schema["required"].as_array_mut() {
                Some(list) => list.push(json!("secret")),
                None => schema["required"] = json!(["secret"]),
            }
        }
    }
    components.insert(
        "WebhookPayload".into(),
        json!({
            "description": "The body of a webhook delivery: one event, exactly as `GET /event` \
                answers it (`POST /webhook/{id}/test` sends one of type `webhook.ping`, cursor \
                `0`, whose `data` is the webhook). Deduplicate by `id` (also in \
                `X-Prodops-Event-Id`): delivery is at least once.",
            "allOf": [schema_ref("Event")]
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

/// A webhook URL as the server takes it: http or https, a host name or IPv4 address, a port
/// from 1 to 65535, printable ASCII without spaces or `#`.
const WEBHOOK_URL_PATTERN: &str = r"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9.-]{1,253}(?::(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?(?:[/?][!-\x22$-~]*)?$";

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

/// `text` as a regular expression matching exactly it.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if r"\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
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
