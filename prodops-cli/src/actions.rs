//! Action commands, derived from the declarations of `prodops_core::api`: every action endpoint
//! is declared there once (method, path template, query parameters, request type, and its
//! command-line form `cli: Cli { command, verb, about, example, flags }`), and this module turns
//! each [`ActionDesc`] of [`api::ACTIONS`] into `prodops <command> <verb>`. Adding an action in
//! core adds its command here; nothing is declared twice.
//!
//! - The path template's `{name}` segments become positional arguments, in order (a UUID kind
//!   is checked before sending).
//! - Each query parameter becomes a flag (`QueryParam::kind` gives its [`FlagKind`], and
//!   `QueryParam::required` whether it is required).
//! - Each top-level field of the JSON request type becomes a flag ([`api::request_fields`]),
//!   its [`FlagKind`] from the field's schema (uuid format: `Uuid`; array of uuids: `UuidList`;
//!   number or integer: `Number`; boolean: `Bool`; string or enum: `Text`; anything else:
//!   `Json`), required when the schema requires it (in every variant of a `oneOf`). The flag is
//!   the field in kebab case (`routeDeliverableId` → `--route-deliverable-id`) unless the
//!   declaration's `cli.flags` renames it; its help is the override's, else the schema's
//!   description of the field, else the field's name.
//! - Every action with a JSON body also takes `--data JSON|@file|@-`, the base object the flags
//!   set fields on (so a required field may come from `--data` instead of its flag).
//! - A file body (`RequestBody::Bytes`) is a positional `FILE` (`-` for stdin) sent as the raw
//!   body with `--content-type` (else a type guessed from the file name).
//!
//! Actions whose `(command, verb)` is a standard verb of a resource command (`qc-template
//! update`, `document-version create`, `delivery archive`, `delivery restore`) are served by
//! that verb, which sends the same method and path ([`served_by_standard_verb`]; the agreement
//! test checks the route). [`SHORTCUTS`] holds the CLI's few shortcuts over standard endpoints
//! that are not actions (`deliverable property-counts`).

use prodops_core::ResourceDesc;
use prodops_core::api::{
    self, Access, ActionDesc, AnswerBody, Cli, HttpMethod, ParamKind, Perm, RequestBody, Schemas,
};
use serde_json::{Map, Value};

/// How a flag's text becomes a JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagKind {
    /// A UUID, sent as a string.
    Uuid,
    /// Comma-separated UUIDs (the flag may repeat), sent as an array.
    UuidList,
    /// A number.
    Number,
    /// Text.
    Text,
    /// `true` or `false`.
    Bool,
    /// Any JSON value (`[...]`, `{...}`), or `@file`.
    Json,
    /// A file name (`-`: stdin), read as bytes.
    File,
}

/// Where a flag's value goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum To {
    Body,
    Query,
    /// The raw request body (a `File` flag, positional).
    Raw,
    /// The `Content-Type` of the raw body.
    ContentType,
}

/// One flag of an action command.
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    /// `--name` on the command line.
    pub name: String,
    /// The argument's id in the parsed matches: the name, unless a path parameter (a
    /// positional argument) has it (`document add-version DOC --id V`: `id-flag`).
    pub id: String,
    /// The body field or query parameter (empty for the raw body and its content type).
    pub field: String,
    pub kind: FlagKind,
    pub to: To,
    /// The schema (or the query parameter) requires it.
    pub required: bool,
    pub help: String,
}

/// An action command: the declaration it sends, and its flags.
#[derive(Debug, Clone)]
pub struct ActionCommand {
    pub desc: &'static ActionDesc,
    pub flags: Vec<Flag>,
}

/// A CLI shortcut over a standard endpoint (not an action, so core does not declare it): its
/// route and command line described as an [`ActionDesc`] of the CLI's own, and its flags given
/// here (the request has no core type to derive them from).
#[derive(Debug, Clone, Copy)]
pub struct Shortcut {
    pub desc: &'static ActionDesc,
    /// `(flag, field, kind, required, help)`, all body fields.
    pub flags: &'static [(&'static str, &'static str, FlagKind, bool, &'static str)],
}

/// `POST /deliverable/group-and-count` (the standard group-and-count of deliverables) as
/// `deliverable property-counts --group-by-field F`.
const PROPERTY_COUNTS: ActionDesc = ActionDesc {
    operation_id: "cli_deliverable_property_counts",
    tag: "deliverable",
    method: HttpMethod::Post,
    path: "/deliverable/group-and-count",
    path_kinds: &[],
    access: Access::Key(&[("Deliverable", Perm::Read)]),
    query: &[],
    query_filters: None,
    request: RequestBody::Json {
        schema: None,
        required: true,
    },
    body_schema: None,
    answer: AnswerBody::Json(None),
    names_feed_cursor: false,
    status: 200,
    other_answers: &[],
    outcome: "The groups and their counts",
    summary: "Counts deliverables by the exact stored value of a field",
    description: "",
    no_dry_run: None,
    cli: Cli {
        command: "deliverable",
        verb: "property-counts",
        about: "Counts deliverables by the exact stored value of a field",
        example: "prodops deliverable property-counts --group-by-field data.properties.color",
        flags: &[],
    },
};

/// The CLI's shortcuts over standard endpoints.
pub const SHORTCUTS: &[Shortcut] = &[Shortcut {
    desc: &PROPERTY_COUNTS,
    flags: &[(
        "group-by-field",
        "groupByField",
        FlagKind::Text,
        true,
        "For example data.properties.<key>",
    )],
}];

/// The resource whose standard verb serves this action (same command and verb), if any.
pub fn served_by_standard_verb(a: &ActionDesc) -> Option<&'static ResourceDesc> {
    prodops_core::registry::resources()
        .iter()
        .map(|k| k.desc())
        .find(|d| {
            crate::args::resource_command_name(d.path) == a.cli.command
                && crate::args::standard_route(d, a.cli.verb).is_some()
        })
}

/// Every action command: one per declared action not served by a standard verb, then the
/// shortcuts.
pub fn commands() -> Vec<ActionCommand> {
    let mut out: Vec<ActionCommand> = api::ACTIONS
        .iter()
        .filter(|a| served_by_standard_verb(a).is_none())
        .map(derive)
        .collect();
    for s in SHORTCUTS {
        out.push(ActionCommand {
            desc: s.desc,
            flags: s
                .flags
                .iter()
                .map(|&(name, field, kind, required, help)| Flag {
                    name: name.into(),
                    id: name.into(),
                    field: field.into(),
                    kind,
                    to: To::Body,
                    required,
                    help: help.into(),
                })
                .collect(),
        });
    }
    out
}

/// The action command of `prodops <command> <verb>`, if there is one.
pub fn find(command: &str, verb: &str) -> Option<ActionCommand> {
    commands()
        .into_iter()
        .find(|c| c.desc.cli.command == command && c.desc.cli.verb == verb)
}

/// `orderedDeliverableIds` → `ordered-deliverable-ids`.
pub fn kebab(field: &str) -> String {
    let mut out = String::with_capacity(field.len() + 4);
    for (i, c) in field.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else if c == '_' {
            out.push('-');
        } else {
            out.push(c);
        }
    }
    out
}

/// A `select` query parameter (the hierarchy read's) gets no flag of its own: every action
/// command has the global-style `--select`, which the output applies to the answer (as it did
/// before the commands were derived; the table view of `deliverable hierarchy` asks the server
/// for its own fields). A second `--select` would collide with it.
pub fn skipped_query_param(name: &str) -> bool {
    name == "select"
}

/// One top-level field of a request type, from its schema.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    /// The property's schema (references resolved by [`flag_kind`]).
    pub schema: Value,
    /// Required by the schema (in every variant of a `oneOf`/`anyOf`).
    pub required: bool,
}

/// The schema of an action's JSON request type and the named schemas it refers to.
fn request_schema(a: &ActionDesc) -> Option<(Value, Map<String, Value>)> {
    let RequestBody::Json {
        schema: Some(schema),
        ..
    } = a.request
    else {
        return None;
    };
    let mut schemas = Schemas::new();
    let root = serde_json::to_value(schema(&mut schemas)).unwrap_or_default();
    let named = schemas
        .iter()
        .map(|(n, s)| (n.clone(), serde_json::to_value(s).unwrap_or_default()))
        .collect();
    Some((root, named))
}

pub fn resolve<'a>(schema: &'a Value, named: &'a Map<String, Value>) -> &'a Value {
    let mut s = schema;
    for _ in 0..8 {
        match s["$ref"].as_str() {
            Some(r) => match named.get(r.rsplit('/').next().unwrap_or_default()) {
                Some(next) => s = next,
                None => return s,
            },
            None => return s,
        }
    }
    s
}

/// The top-level fields of a schema, in the order [`api::request_fields`] gives them.
fn fields_of(schema: &Value, named: &Map<String, Value>, depth: usize) -> Vec<Field> {
    let mut out: Vec<Field> = Vec::new();
    if depth > 8 {
        return out;
    }
    let s = resolve(schema, named);
    let required: Vec<&str> = s["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(props) = s["properties"].as_object() {
        for (k, v) in props {
            out.push(Field {
                name: k.clone(),
                schema: v.clone(),
                required: required.contains(&k.as_str()),
            });
        }
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(variants) = s[key].as_array() {
            let lists: Vec<Vec<Field>> = variants
                .iter()
                .map(|v| fields_of(v, named, depth + 1))
                .collect();
            for list in &lists {
                for f in list {
                    if out.iter().any(|o| o.name == f.name) {
                        continue;
                    }
                    let everywhere = lists
                        .iter()
                        .all(|l| l.iter().any(|g| g.name == f.name && g.required));
                    out.push(Field {
                        required: everywhere,
                        ..f.clone()
                    });
                }
            }
        }
    }
    if let Some(parts) = s["allOf"].as_array() {
        for part in parts {
            for f in fields_of(part, named, depth + 1) {
                match out.iter_mut().find(|o| o.name == f.name) {
                    Some(o) => o.required |= f.required,
                    None => out.push(f),
                }
            }
        }
    }
    out
}

/// The fields of an action's JSON request type, with their schemas (empty without a core type).
pub fn request_fields(a: &ActionDesc) -> (Vec<Field>, Map<String, Value>) {
    match request_schema(a) {
        Some((root, named)) => (fields_of(&root, &named, 0), named),
        None => (Vec::new(), Map::new()),
    }
}

/// The [`FlagKind`] of a property's schema.
pub fn flag_kind(schema: &Value, named: &Map<String, Value>) -> FlagKind {
    let s = resolve(schema, named);
    // `Option<T>`: a `oneOf`/`anyOf` of `null` and T.
    for key in ["oneOf", "anyOf"] {
        if let Some(variants) = s[key].as_array() {
            let real: Vec<&Value> = variants.iter().filter(|v| v["type"] != "null").collect();
            return match real.as_slice() {
                [one] => flag_kind(one, named),
                _ => FlagKind::Json,
            };
        }
    }
    let types: Vec<&str> = match &s["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let types: Vec<&str> = types.into_iter().filter(|t| *t != "null").collect();
    if s["format"] == "uuid" {
        return FlagKind::Uuid;
    }
    match types.as_slice() {
        ["array"] => {
            if flag_kind(&s["items"], named) == FlagKind::Uuid {
                FlagKind::UuidList
            } else {
                FlagKind::Json
            }
        }
        ["integer"] | ["number"] => FlagKind::Number,
        ["boolean"] => FlagKind::Bool,
        ["string"] => FlagKind::Text,
        [] if s["enum"].is_array() => FlagKind::Text,
        _ => FlagKind::Json,
    }
}

fn help_text(description: Option<&str>, fallback: &str) -> String {
    let text = description
        .map(|d| d.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    let text = text.strip_suffix('.').unwrap_or(&text).trim().to_string();
    if text.is_empty() {
        fallback.to_string()
    } else {
        text
    }
}

/// The command of one declared action.
pub fn derive(a: &'static ActionDesc) -> ActionCommand {
    let rename = |field: &str| a.cli.flags.iter().find(|f| f.field == field);
    let mut flags = Vec::new();
    for q in a.query {
        if skipped_query_param(q.name) {
            continue;
        }
        let o = rename(q.name);
        flags.push(Flag {
            id: String::new(),
            name: o.map_or_else(|| kebab(q.name), |o| o.flag.to_string()),
            field: q.name.to_string(),
            kind: match q.kind {
                ParamKind::Uuid => FlagKind::Uuid,
                ParamKind::UuidList => FlagKind::UuidList,
                ParamKind::Integer => FlagKind::Number,
                ParamKind::Text => FlagKind::Text,
            },
            to: To::Query,
            required: q.required,
            help: o.map_or_else(
                || help_text(Some(q.description), q.name),
                |o| o.help.to_string(),
            ),
        });
    }
    let (fields, named) = request_fields(a);
    for f in fields {
        let o = rename(&f.name);
        flags.push(Flag {
            id: String::new(),
            name: o.map_or_else(|| kebab(&f.name), |o| o.flag.to_string()),
            kind: flag_kind(&f.schema, &named),
            to: To::Body,
            required: f.required,
            help: o.map_or_else(
                || help_text(f.schema["description"].as_str(), &f.name),
                |o| o.help.to_string(),
            ),
            field: f.name,
        });
    }
    if matches!(a.request, RequestBody::Bytes) {
        flags.push(Flag {
            id: String::new(),
            name: "file".into(),
            field: String::new(),
            kind: FlagKind::File,
            to: To::Raw,
            required: true,
            help: "The file to upload (- for stdin)".into(),
        });
        flags.push(Flag {
            id: String::new(),
            name: "content-type".into(),
            field: String::new(),
            kind: FlagKind::Text,
            to: To::ContentType,
            required: false,
            help: "Its media type (default: guessed from the file name)".into(),
        });
    }
    let params = a.path_params();
    for f in &mut flags {
        f.id = if params.contains(&f.name.as_str()) {
            format!("{}-flag", f.name)
        } else {
            f.name.clone()
        };
    }
    ActionCommand { desc: a, flags }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn commands_are_unique_and_well_formed() {
        let mut seen = HashSet::new();
        for c in commands() {
            let a = c.desc;
            assert!(
                seen.insert((a.cli.command, a.cli.verb)),
                "duplicate {} {}",
                a.cli.command,
                a.cli.verb
            );
            assert!(a.path.starts_with('/'), "{}", a.path);
            assert!(
                a.cli
                    .example
                    .starts_with(&format!("prodops {} {}", a.cli.command, a.cli.verb)),
                "{}",
                a.cli.example
            );
            let mut names = HashSet::new();
            for f in &c.flags {
                assert!(
                    names.insert(f.name.clone()),
                    "{} {}: duplicate flag {}",
                    a.cli.command,
                    a.cli.verb,
                    f.name
                );
                assert!(!["data", "output", "select"].contains(&f.name.as_str()));
                assert!(
                    a.takes_json() || f.to != To::Body,
                    "{} {}: body flag without a body",
                    a.cli.command,
                    a.cli.verb
                );
            }
        }
    }

    #[test]
    fn fields_are_core_request_fields_in_order() {
        for a in api::ACTIONS {
            let ours: Vec<String> = request_fields(a).0.into_iter().map(|f| f.name).collect();
            assert_eq!(
                ours,
                api::request_fields(a, &mut Schemas::new()),
                "{}",
                a.operation_id
            );
        }
    }

    #[test]
    fn kinds_and_names_follow_the_schema() {
        let produce = derive(&<api::production::Produce as api::Endpoint>::DESC);
        let by = |name: &str| {
            produce
                .flags
                .iter()
                .find(|f| f.name == name)
                .unwrap()
                .clone()
        };
        assert_eq!(by("deliverable-id").kind, FlagKind::Uuid);
        assert!(by("deliverable-id").required);
        assert_eq!(by("quantity").field, "quantityProduced");
        assert_eq!(by("quantity").kind, FlagKind::Number);
        assert_eq!(by("outputs").kind, FlagKind::Json);
        let reorder = derive(&<api::deliverable::Reorder as api::Endpoint>::DESC);
        let ids = reorder.flags.iter().find(|f| f.name == "ids").unwrap();
        assert_eq!(ids.kind, FlagKind::UuidList);
        assert_eq!(kebab("orderedDeliverableIds"), "ordered-deliverable-ids");
        let progress = derive(&<api::deliverable::Progress as api::Endpoint>::DESC);
        let req: Vec<&str> = progress
            .flags
            .iter()
            .filter(|f| f.required)
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(req, ["type"], "only the tag is in every variant");
    }

    #[test]
    fn standard_verbs_serve_their_actions() {
        let served: Vec<(&str, &str)> = api::ACTIONS
            .iter()
            .filter(|a| served_by_standard_verb(a).is_some())
            .map(|a| (a.cli.command, a.cli.verb))
            .collect();
        for expected in [
            ("qc-template", "update"),
            ("document-version", "create"),
            ("delivery", "archive"),
            ("delivery", "restore"),
        ] {
            assert!(served.contains(&expected), "{expected:?} in {served:?}");
        }
        assert!(find("delivery", "archive").is_none());
        assert!(find("deliverable", "property-counts").is_some());
        assert!(find("production", "produce").is_some());
    }
}
