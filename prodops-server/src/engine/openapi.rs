//! What the OpenAPI document (`crate::openapi`) says of the standard endpoints, which only the
//! engine knows: the operations it routes for each served resource, the request forms it
//! derives from the record's schema (the create form `<Record>Input` without the
//! server-managed fields' requirements, the PATCH form `<Record>Patch` with nothing required
//! and without the fields a PATCH may not name), the filters, sorts, selects and paging it
//! reads, with the patterns its parsers accept. Core's declarations name these where an
//! action reads the same ([`ParamValues`]), and this module expands them.

use prodops_core::api::{ParamValues, QueryParam};
use prodops_core::openapi::{Form, create_form_name, filter_name, patch_form_name};
use prodops_core::resource::{Allow, Archive, COMMON_READ_ONLY};
use serde_json::{Map, Value, json};

use super::hooks::NoHooks;
use super::{MAX_BULK_RECORDS, MAX_PAGE, MAX_PAGE_SIZE, ServedResource, routed};
use crate::http::text::{MAX_INDEXED_TEXT, MAX_SEARCH_TEXT, indexed_fields};

fn ws() -> String {
    format!("[{}]*", prodops_core::openapi::WS_CHARS)
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

pub fn schema_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

pub fn uuid() -> Value {
    json!({ "type": "string", "format": "uuid" })
}

pub fn nullable(schema: Value) -> Value {
    json!({ "anyOf": [schema, { "type": "null" }] })
}

pub fn path_param(name: &str, schema: Value) -> Value {
    json!({ "name": name, "in": "path", "required": true, "schema": schema })
}

pub fn query_param(name: &str, description: &str, schema: Value) -> Value {
    json!({ "name": name, "in": "query", "required": false, "description": description, "schema": schema })
}

pub fn page_schema(record: Value, cursor: bool) -> Value {
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

fn paging_params() -> [Value; 2] {
    [
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

/// One operation under construction.
pub struct Op {
    pub method: &'static str,
    pub path: String,
    pub value: Value,
    /// Only reads (a GET, or a POST whose body says what to read): never 409 or 507.
    pub read: bool,
    /// Names a record (in its path, or a required id parameter), so it may answer 404.
    pub names_record: bool,
    /// Refused with 403 on every call (the resource forbids it, decisions.md 4).
    pub forbidden: bool,
    /// Takes `dryRun` (a write; docs/api.md, "Dry runs"): set where the operations are
    /// assembled (`openapi.rs`).
    pub dry_run: bool,
}

impl Op {
    pub fn new(method: &'static str, path: String, id: &str, tag: &str, summary: &str) -> Op {
        Op {
            method,
            names_record: path.contains('{'),
            path,
            value: json!({ "operationId": id, "tags": [tag], "summary": summary, "responses": {} }),
            read: method == "get",
            forbidden: false,
            dry_run: false,
        }
    }
    pub fn describe(mut self, description: impl Into<String>) -> Op {
        self.value["description"] = json!(description.into());
        self
    }
    pub fn param(mut self, p: Value) -> Op {
        match self.value["parameters"].as_array_mut() {
            Some(list) => list.push(p),
            None => self.value["parameters"] = json!([p]),
        }
        self
    }
    pub fn params(self, ps: impl IntoIterator<Item = Value>) -> Op {
        ps.into_iter().fold(self, Op::param)
    }
    pub fn body(mut self, schema: Value, required: bool) -> Op {
        self.value["requestBody"] = json!({ "required": required, "content": { "application/json": { "schema": schema } } });
        self
    }
    pub fn answer(mut self, status: &str, description: &str, schema: Option<Value>) -> Op {
        let mut r = json!({ "description": description });
        if let Some(s) = schema {
            r["content"] = json!({ "application/json": { "schema": s } });
        }
        self.value["responses"][status] = r;
        self
    }
    /// Declares the [`FEED_CURSOR_HEADER`](prodops_core::event::FEED_CURSOR_HEADER) on the
    /// answer of `status`: the one mechanism behind every read that names its feed cursor
    /// (the standard list, query and export of every resource).
    pub fn names_feed_cursor(mut self, status: &str) -> Op {
        self.value["responses"][status]["headers"]["Prodops-Feed-Cursor"] = json!({
            "required": true,
            "description": "The feed cursor this answer is consistent with: it holds the effects \
                of exactly the organization's events up to this cursor, read in one snapshot \
                (`GET /event?after=<it>` continues from it; docs/events.md).",
            "schema": { "type": "string", "pattern": "^(0|[1-9][0-9]*)$" }
        });
        self
    }
    fn reads_by_post(mut self) -> Op {
        self.read = true;
        self
    }
    fn forbidden_if(mut self, allow: Allow, why: &str) -> Op {
        if allow == Allow::Forbidden {
            self.value["description"] =
                json!(format!("Always refused with 403 `FORBIDDEN`: {why}"));
            self.forbidden = true;
        }
        self
    }
}

/// A served resource as the document describes it.
pub struct Res<'a> {
    res: &'a ServedResource,
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

impl<'a> Res<'a> {
    pub fn new(res: &'a ServedResource) -> Res<'a> {
        let mut fields: Vec<String> = res.fields.iter().cloned().collect();
        fields.sort();
        let stored = fields
            .iter()
            .filter(|f| !res.desc().answered.contains(&f.as_str()))
            .cloned()
            .collect();
        let implied = res.implied.first().map(|(_, v)| *v);
        Res {
            id: res.base.replace(['/', '-'], "_"),
            // A sub-view (`concept/order`) is tagged with its first segment.
            tag: match implied {
                Some(_) => res.base.split('/').next().unwrap_or_default().to_string(),
                None => res.desc().path.to_string(),
            },
            record: res.kind.schema().0,
            fields,
            stored,
            implied,
            res,
        }
    }

    /// The name of a form: the record's, or `Concept<Type>` under `/concept/<type>`.
    fn form_name(&self, form: Form) -> String {
        let base = match self.implied {
            Some(_) => camel(&self.res.base),
            None => self.record.clone(),
        };
        match form {
            Form::Create => create_form_name(&base),
            Form::Patch => patch_form_name(&base),
        }
    }

    fn archivable(&self) -> bool {
        self.res.desc().archive.is_archivable()
    }
}

fn camel(s: &str) -> String {
    s.split(['-', '/'])
        .map(|part| {
            let mut c = part.chars();
            match c.next() {
                Some(first) => first.to_uppercase().chain(c).collect(),
                None => String::new(),
            }
        })
        .collect()
}

/// The schemas of a served resource: its record (once per record), its forms and its filter.
pub fn resource_components(res: &Res, components: &mut Map<String, Value>) {
    let record = serde_json::to_value(res.res.kind.schema().1).unwrap_or_default();
    let input = input_schema(res, &record);
    let mut patch = patch_schema(res, &input);
    let mut create = input;
    // What the record's forms say beyond its schema, from core (`Record::refine_form`).
    res.res.kind.refine_form(Form::Create, &mut create);
    res.res.kind.refine_form(Form::Patch, &mut patch);
    components.insert(res.form_name(Form::Patch), patch);
    components.insert(res.form_name(Form::Create), create);
    components.insert(filter_name(&res.record), body_filter(res));
    components.insert(res.record.clone(), record);
}

/// The create form of a record: its schema, with the server-managed fields accepted as
/// anything and ignored, `id` optional, and the implied `type` of a concept endpoint.
fn input_schema(res: &Res, record: &Value) -> Value {
    let mut schema = record.clone();
    let desc = res.res.desc();
    let managed: Vec<&str> = COMMON_READ_ONLY
        .iter()
        .chain(desc.read_only)
        .copied()
        .collect();
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
        for field in indexed_fields(desc) {
            if let Some(p) = props.get_mut(field).filter(|p| p.get("type").is_some()) {
                p["maxLength"] = json!(MAX_INDEXED_TEXT);
            }
        }
    }
    if let Some(required) = schema["required"].as_array_mut() {
        required.retain(|f| {
            let f = f.as_str().unwrap_or_default();
            f != "id" && !managed.contains(&f) && (res.implied.is_none() || f != "type")
        });
    }
    schema["description"] = json!(format!(
        "The body that creates a {} record (server-managed fields are ignored)",
        res.res.base
    ));
    schema
}

/// The PATCH form: the fields a PATCH may name, none required.
fn patch_schema(res: &Res, input: &Value) -> Value {
    let desc = res.res.desc();
    let mut schema = input.clone();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("required");
        obj.insert(
            "description".into(),
            json!(format!(
                "The fields a PATCH of a {} record changes; the rest keep their values",
                res.res.base
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
    let cols = res.res.desc().search_columns;
    (!cols.is_empty()).then(|| {
        query_param(
            "search",
            &format!("case-insensitive substring of {}", cols.join(", ")),
            json!({ "type": "string", "maxLength": MAX_SEARCH_TEXT }),
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

/// The served form of the resource a declaration names by its path: its fields and filters,
/// which is all the document reads of it (no hooks).
fn declared(path: &str) -> ServedResource {
    let kind = prodops_core::registry::by_path(path)
        .unwrap_or_else(|| panic!("a declaration names /{path}, which is not registered"));
    ServedResource::new(kind, std::sync::Arc::new(NoHooks))
}

/// The parameters a declared query parameter stands for, where it names what the standard
/// lists take ([`ParamValues::Page`], [`ParamValues::SearchOf`], ...); `None` for the others.
pub fn standard_param(q: &QueryParam) -> Option<Vec<Value>> {
    let of = declared;
    let [page, page_size] = paging_params();
    Some(match q.values {
        ParamValues::Page => vec![page],
        ParamValues::PageSize => vec![page_size],
        ParamValues::SearchOf(path) => search_param(&Res::new(&of(path))).into_iter().collect(),
        ParamValues::SortOf(path) => vec![sort_param(&Res::new(&of(path)))],
        ParamValues::FieldsOf(path) => {
            let pattern = select_list_pattern(&Res::new(&of(path)).fields);
            vec![query_param(
                q.name,
                q.description,
                json!({ "type": "string", "pattern": pattern }),
            )]
        }
        _ => return None,
    })
}

/// The equality filters of the resource at `path`, as its list takes them.
pub fn filters_of(path: &str) -> Vec<Value> {
    filter_params(&Res::new(&declared(path)), false)
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

fn query_body(res: &Res, filter: &Value) -> Value {
    let path = json!({ "type": "string", "pattern": format!("^{}$", field_path(&res.fields)) });
    let mut props = json!({
        "id": { "type": ["array", "null"], "items": uuid(), "description": "only these records" },
        "select": {
            "type": ["array", "null"],
            "items": path,
            "description": "answer `id` and these fields (dotted paths under flattened names)"
        },
        "filter": filter,
        "sort": { "type": ["string", "null"], "pattern": sort_pattern(&res.stored) },
        "page": { "type": ["integer", "null"], "minimum": 1, "maximum": MAX_PAGE },
        "pageSize": {
            "type": ["integer", "null"],
            "minimum": 1,
            "maximum": MAX_PAGE_SIZE,
            "description": "default 100, or the number of ids given"
        }
    });
    if !res.res.desc().search_columns.is_empty() {
        props["search"] = json!({ "type": ["string", "null"], "maxLength": MAX_SEARCH_TEXT });
    }
    json!({ "type": "object", "properties": props, "additionalProperties": false })
}

/// The standard operations of one resource, as the engine routes them.
pub fn standard_ops(res: &Res, ops: &mut Vec<Op>) {
    let desc = res.res.desc();
    let base = format!("/api/v2/{}", res.res.base);
    let what = &res.res.base;
    let record = schema_ref(&res.record);
    let input = schema_ref(&res.form_name(Form::Create));
    let patch = schema_ref(&res.form_name(Form::Patch));
    let filter = nullable(schema_ref(&filter_name(&res.record)));
    let mk = |method, path: String, verb: &str, summary: String| {
        Op::new(
            method,
            path,
            &format!("{}_{verb}", res.id),
            &res.tag,
            &summary,
        )
    };
    let count = json!({
        "type": "object",
        "required": ["count"],
        "properties": { "count": { "type": "integer", "minimum": 0 } }
    });

    ops.push(
        mk("get", base.clone(), "list", format!("List {what} records"))
            .describe(
                "A page of records in the resource's default order (or `sort`), with `totalCount`. \
                 In the default order the answer also carries `nextCursor`; `?cursor=<nextCursor>` \
                 (without `sort` or `page`) continues after that record without an offset. The \
                 cursor is opaque, so it is described here rather than as a parameter.",
            )
            .params(filter_params(res, true))
            .param(sort_param(res))
            .params(paging_params())
            .answer(
                "200",
                "A page of records",
                Some(page_schema(record.clone(), true)),
            )
            .names_feed_cursor("200"),
    );
    ops.push(
        mk(
            "get",
            format!("{base}/export"),
            "export",
            format!("Export every matching {what} record, from one snapshot"),
        )
        .describe(
            "Every record the filters, `search` and `isArchived` match (as the list takes them), \
             in the default order, read in one snapshot and sent in parts as it is read \
             (chunked; no paging). `Prodops-Feed-Cursor` names the feed cursor of that \
             snapshot: the events after it are exactly the changes the answer does not hold.",
        )
        .params(filter_params(res, true))
        .answer(
            "200",
            "Every matching record",
            Some(page_schema(record.clone(), false)),
        )
        .names_feed_cursor("200"),
    );
    if routed(desc.ops.create) {
        ops.push(
            mk(
                "post",
                base.clone(),
                "create",
                format!("Create a {what} record"),
            )
            .body(input.clone(), true)
            .answer("201", "The created record", Some(record.clone()))
            .forbidden_if(desc.ops.create, "records are not created here"),
        );
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
    ops.push(get.answer("200", "The record", Some(record.clone())));
    if routed(desc.ops.update) {
        let mut op = mk(
            "patch",
            item.clone(),
            "update",
            format!("Update a {what} record"),
        )
        .param(path_param("id", uuid()))
        .body(patch.clone(), true)
        .answer("200", "The updated record", Some(record.clone()));
        if !desc.immutable.is_empty() {
            op = op.describe(format!(
                "{} cannot change after creation (a PATCH may repeat the stored value).",
                desc.immutable.join(", ")
            ));
        }
        ops.push(op.forbidden_if(desc.ops.update, "records do not change"));
    }
    if routed(desc.ops.delete) {
        let summary = match desc.archive {
            Archive::OnDelete => format!("Archive a {what} record"),
            _ => format!("Delete a {what} record"),
        };
        ops.push(
            mk("delete", item.clone(), "delete", summary)
                .param(path_param("id", uuid()))
                .answer("204", "Deleted or archived", None)
                .forbidden_if(
                    desc.ops.delete,
                    "archive with PATCH {\"isArchived\": true} instead",
                ),
        );
    }

    ops.push(
        mk(
            "post",
            format!("{base}/query"),
            "query",
            format!("Query {what} records"),
        )
        .reads_by_post()
        .describe("Ids, filter, search, sort, paging and select in one body.")
        .body(query_body(res, &filter), true)
        .answer(
            "200",
            "A page of records",
            Some(page_schema(json!({ "type": "object" }), false)),
        )
        .names_feed_cursor("200"),
    );
    ops.push(
        mk(
            "get",
            format!("{base}/count"),
            "count_get",
            format!("Count {what} records"),
        )
        .params(filter_params(res, true))
        .answer("200", "The count", Some(count.clone())),
    );
    ops.push(
        mk(
            "post",
            format!("{base}/count"),
            "count",
            format!("Count {what} records matching a filter"),
        )
        .reads_by_post()
        .describe(
            "The body is optional: without one, every record (archived ones left out) is counted.",
        )
        .body(
            json!({
                "type": ["object", "null"],
                "properties": { "filter": filter },
                "additionalProperties": false
            }),
            false,
        )
        .answer("200", "The count", Some(count.clone())),
    );
    let group_by = json!({ "type": "string", "pattern": format!("^{}$", field_path(&res.stored)) });
    let groups = json!({
        "type": "object",
        "required": ["values"],
        "properties": { "values": { "type": "array", "items": {
            "type": "object",
            "required": ["groupId", "count"],
            "properties": { "groupId": {}, "count": { "type": "integer", "minimum": 0 } }
        } } }
    });
    ops.push(
        mk(
            "post",
            format!("{base}/group-and-count"),
            "group_and_count",
            format!("Count {what} records by the value of a field"),
        )
        .reads_by_post()
        .body(
            json!({
                "type": "object",
                "required": ["groupByField"],
                "properties": { "groupByField": group_by, "filter": filter },
                "additionalProperties": false
            }),
            true,
        )
        .answer("200", "Groups, largest first", Some(groups)),
    );

    let bulk = format!("{base}/bulk");
    if routed(desc.ops.bulk_put) {
        let ids = json!({
            "type": "object",
            "required": ["count", "ids"],
            "properties": {
                "count": { "type": "integer", "minimum": 0 },
                "ids": { "type": "array", "items": uuid() }
            }
        });
        ops.push(
            mk(
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
                json!({ "type": "array", "maxItems": MAX_BULK_RECORDS, "items": input }),
                true,
            )
            .answer(
                "200",
                "The count and the ids, in the order of the body",
                Some(ids),
            )
            .forbidden_if(desc.ops.bulk_put, "bulk writes are refused here"),
        );
    }
    if routed(desc.ops.bulk_patch) {
        ops.push(
            mk(
                "patch",
                bulk.clone(),
                "bulk_patch",
                format!("Update every {what} record a filter matches"),
            )
            .describe(format!(
                "{NEEDS_A_FILTER} Applies the body to every matching record in one \
                     transaction; one refused record refuses all. A filter matching more than \
                     {MAX_BULK_RECORDS} records is refused."
            ))
            .params(filter_params(res, true))
            .body(patch, true)
            .answer("200", "How many records matched", Some(count.clone()))
            .forbidden_if(desc.ops.bulk_patch, "bulk changes are refused here"),
        );
    }
    if routed(desc.ops.bulk_delete) {
        ops.push(
            mk(
                "delete",
                bulk,
                "bulk_delete",
                format!("Delete (or archive) every {what} record a filter matches"),
            )
            .describe(format!(
                "{NEEDS_A_FILTER} A filter matching more than {MAX_BULK_RECORDS} records is refused."
            ))
            .params(filter_params(res, true))
            .answer("200", "How many records matched", Some(count))
            .forbidden_if(desc.ops.bulk_delete, "bulk deletes are refused here"),
        );
    }
}
