//! The typed inputs of `prodops_client::inputs` (src/inputs.rs) are generated, for every
//! standard resource, from the same declarations as everything else: the registry's record
//! types (their schemas: fields, types, which are required) and their descriptions (which fields
//! the server manages, which cannot change, which operations exist), and the fields users
//! filter by (`prodops_core::filter_fields`). This test writes the file again and fails when
//! the checked-in one differs: run
//! `PRODOPS_REGENERATE=1 cargo test --workspace --test typed_inputs` after changing a record.

use std::fmt::Write as _;

use prodops_core::resource::COMMON_READ_ONLY;
use prodops_core::{Allow, ResourceKind, registry::ResourceId};
use serde_json::{Map, Value};

/// The Rust type of a property's schema, and whether it may be null.
fn rust_type(schema: &Value, named: &Map<String, Value>) -> (String, bool) {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap();
        // A component that is not a struct or an enum of core's is read as JSON.
        return match named.get(name) {
            Some(_) => (name.to_string(), false),
            None => ("Value".into(), false),
        };
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(arms) = schema.get(key).and_then(Value::as_array) {
            let others: Vec<&Value> = arms
                .iter()
                .filter(|a| a.get("type") != Some(&Value::from("null")))
                .collect();
            if others.len() == 1 {
                let (t, _) = rust_type(others[0], named);
                return (t, others.len() < arms.len());
            }
            return ("Value".into(), true);
        }
    }
    let (ty, nullable) = match schema.get("type") {
        Some(Value::String(t)) => (t.as_str(), false),
        Some(Value::Array(ts)) => {
            let non_null: Vec<&str> = ts
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null")
                .collect();
            match non_null.as_slice() {
                [one] => (*one, non_null.len() < ts.len()),
                _ => return ("Value".into(), true),
            }
        }
        _ => return ("Value".into(), false),
    };
    let t = match ty {
        "string" => match schema.get("format").and_then(Value::as_str) {
            Some("uuid") => "Uuid".to_string(),
            _ => "String".to_string(),
        },
        "integer" => "i64".into(),
        "number" => "f64".into(),
        "boolean" => "bool".into(),
        "array" => match schema.get("items") {
            Some(items) => format!("Vec<{}>", rust_type(items, named).0),
            None => "Vec<Value>".into(),
        },
        _ => "Value".into(),
    };
    (t, nullable)
}

fn snake(camel: &str) -> String {
    let mut out = String::new();
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    match out.as_str() {
        "type" | "ref" | "move" | "match" | "mod" | "use" | "where" => format!("r#{out}"),
        _ => out,
    }
}

/// The parameter type and the expression that stores it, of a setter of `ty`.
fn param(ty: &str) -> (String, &'static str) {
    if ty == "String" {
        ("impl Into<String>".into(), "value.into()")
    } else {
        (ty.to_string(), "value")
    }
}

struct Field {
    managed: bool,
    wire: String,
    rust: String,
    ty: String,
    nullable: bool,
    doc: String,
}

fn fields_of(kind: &dyn ResourceKind) -> (Vec<Field>, Vec<String>, Map<String, Value>) {
    let mut components = Vec::new();
    kind.schemas(&mut components);
    let named: Map<String, Value> = components
        .iter()
        .map(|(n, s)| (n.clone(), serde_json::to_value(s).unwrap()))
        .collect();
    let (_, root) = kind.schema();
    let mut root = serde_json::to_value(root).unwrap();
    while let Some(r) = root.get("$ref").and_then(Value::as_str) {
        root = named[r.rsplit('/').next().unwrap()].clone();
    }
    let desc = kind.desc();
    let managed: Vec<&str> = ["id"]
        .iter()
        .chain(COMMON_READ_ONLY)
        .chain(desc.read_only)
        .chain(desc.answered)
        .copied()
        .collect();
    let required: Vec<String> = root["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let mut fields = Vec::new();
    for (wire, schema) in root["properties"].as_object().into_iter().flatten() {
        let (ty, nullable) = rust_type(schema, &named);
        let doc = schema["description"]
            .as_str()
            .unwrap_or("")
            .lines()
            .next()
            .unwrap_or("")
            .to_string();
        fields.push(Field {
            managed: managed.contains(&wire.as_str()),
            wire: wire.clone(),
            rust: snake(wire),
            ty,
            nullable,
            doc,
        });
    }
    (fields, required, named)
}

fn generate() -> String {
    let mut out = String::new();
    out.push_str(
        "//! Typed create and update inputs, and typed filters, of every standard resource.\n\
         //!\n\
         //! Generated by `prodops-client/tests/typed_inputs.rs` from the registry's record types and\n\
         //! descriptions; do not edit. For each resource `R`: `RCreate` (`Resource::create`; `new`\n\
         //! takes the required fields), `RPatch` (`Resource::update`, `bulk_update`; a nullable field\n\
         //! set to `None` is cleared), both `Default` with a setter per field and an `extra` map for\n\
         //! what the types do not say (custom properties, a newer server's fields); and `RFilter`,\n\
         //! one function per field users filter by, for `ListParams::with`.\n\n\
         #![allow(clippy::too_many_arguments, clippy::new_without_default, unused_imports)]\n\n\
         use serde::Serialize;\n\n\
         use crate::{Filter, Map, Uuid, Value};\n\
         use prodops_core::{\n    bom_actions::*, catalog::*, contact::*, custom_property::*, deliverable::*, delivery::*,\n    \
         document::*, inventory::*, lot::*, minimal::*, notification::*, organization::*,\n    \
         production::*, qc::*, timesheet::*, units::*, vendor::*, webhook::*, work_session::*,\n    \
         worker::*,\n};\n",
    );
    for id in ResourceId::ALL {
        let kind = id.kind();
        let desc = kind.desc();
        let name = format!("{id:?}");
        let (all, required, _) = fields_of(kind);
        let fields: Vec<&Field> = all.iter().filter(|f| !f.managed).collect();
        if desc.ops.create == Allow::Yes {
            let _ = write!(
                out,
                "\n/// The fields of a new `{path}` record (`POST /{path}`).\n\
                 #[derive(Debug, Clone, Default, PartialEq, Serialize)]\n\
                 pub struct {name}Create {{\n",
                path = desc.path
            );
            for f in &fields {
                if !f.doc.is_empty() {
                    let _ = writeln!(out, "    /// {}", f.doc);
                }
                let _ = writeln!(
                    out,
                    "    #[serde(rename = \"{}\", skip_serializing_if = \"Option::is_none\")]\n    pub {}: Option<{}>,",
                    f.wire, f.rust, f.ty
                );
            }
            out.push_str(
                "    /// Fields the types do not name (custom properties, a newer server's).\n    \
                 #[serde(flatten, skip_serializing_if = \"Map::is_empty\")]\n    \
                 pub extra: Map<String, Value>,\n}\n",
            );
            let req: Vec<&&Field> = fields
                .iter()
                .filter(|f| required.contains(&f.wire))
                .collect();
            let _ = write!(
                out,
                "\nimpl {name}Create {{\n    /// A new record with its required fields.\n    pub fn new("
            );
            let params: Vec<String> = req
                .iter()
                .map(|f| format!("{}: {}", f.rust, param(&f.ty).0))
                .collect();
            out.push_str(&params.join(", "));
            out.push_str(") -> Self {\n        Self {\n");
            for f in &req {
                let (_, store) = param(&f.ty);
                let _ = writeln!(
                    out,
                    "            {}: Some({}),",
                    f.rust,
                    store.replace("value", &f.rust)
                );
            }
            out.push_str("            ..Self::default()\n        }\n    }\n");
            for f in &fields {
                let (p, store) = param(&f.ty);
                let _ = write!(
                    out,
                    "\n    /// Sets `{}`.\n    pub fn {}(mut self, value: {p}) -> Self {{\n        self.{} = Some({store});\n        self\n    }}\n",
                    f.wire, f.rust, f.rust
                );
            }
            out.push_str("}\n");
        }
        if desc.ops.update == Allow::Yes {
            let patchable: Vec<&&Field> = fields
                .iter()
                .filter(|f| !desc.immutable.contains(&f.wire.as_str()))
                .filter(|f| {
                    desc.patch_only.is_empty() || desc.patch_only.contains(&f.wire.as_str())
                })
                .collect();
            let _ = write!(
                out,
                "\n/// A change of a `{path}` record (`PATCH /{path}/{{id}}`): only the fields set are sent.\n\
                 #[derive(Debug, Clone, Default, PartialEq, Serialize)]\n\
                 pub struct {name}Patch {{\n",
                path = desc.path
            );
            for f in &patchable {
                let ty = if f.nullable {
                    format!("Option<{}>", f.ty)
                } else {
                    f.ty.clone()
                };
                if !f.doc.is_empty() {
                    let _ = writeln!(out, "    /// {}", f.doc);
                }
                let _ = writeln!(
                    out,
                    "    #[serde(rename = \"{}\", skip_serializing_if = \"Option::is_none\")]\n    pub {}: Option<{ty}>,",
                    f.wire, f.rust
                );
            }
            out.push_str(
                "    /// Fields the types do not name (custom properties, a newer server's).\n    \
                 #[serde(flatten, skip_serializing_if = \"Map::is_empty\")]\n    \
                 pub extra: Map<String, Value>,\n}\n",
            );
            let _ = writeln!(out, "\nimpl {name}Patch {{");
            for f in &patchable {
                let (p, store) = if f.nullable {
                    (format!("Option<{}>", f.ty), "value")
                } else {
                    param(&f.ty)
                };
                let _ = write!(
                    out,
                    "    /// Sets `{}`{}.\n    pub fn {}(mut self, value: {p}) -> Self {{\n        self.{} = Some({store});\n        self\n    }}\n\n",
                    f.wire,
                    if f.nullable {
                        " (`None` clears it)"
                    } else {
                        ""
                    },
                    f.rust,
                    f.rust
                );
            }
            out.push_str("}\n");
        }
        let filters = prodops_core::filter_fields::field_kinds(kind).filter_indexed;
        let _ = write!(
            out,
            "\n/// The filters of `{path}` lists, counts and bulk calls: the fields users filter by.\n\
             pub struct {name}Filter;\n\nimpl {name}Filter {{\n",
            path = desc.path
        );
        let _ = write!(
            out,
            "    /// `isArchived`.\n    pub fn is_archived(value: bool) -> Filter {{\n        Filter::new(\"isArchived\", value)\n    }}\n"
        );
        for wire in filters {
            let Some(f) = all.iter().find(|f| f.wire == wire) else {
                continue;
            };
            let (p, store) = param(&f.ty);
            let _ = write!(
                out,
                "\n    /// `{}`.\n    pub fn {}(value: {p}) -> Filter {{\n        Filter::new(\"{}\", {})\n    }}\n",
                f.wire,
                f.rust,
                f.wire,
                if store == "value" {
                    "value"
                } else {
                    "value.into()"
                }
            );
        }
        out.push_str("}\n");
    }
    out
}

#[test]
fn typed_inputs_are_generated_from_the_declarations() {
    let text = generate();
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/src/inputs.rs");
    if std::env::var_os("PRODOPS_REGENERATE").is_some() {
        std::fs::write(path, &text).unwrap();
        return;
    }
    let current = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        current == text,
        "src/inputs.rs differs from what the declarations give: run \
         PRODOPS_REGENERATE=1 cargo test --workspace --test typed_inputs"
    );
}

/// The inputs against a real server: a typed create, a typed change (a nullable field cleared),
/// a typed filter, and the `extra` map for what the types do not name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_inputs_write_and_filter_on_a_real_server() {
    use prodops_client::worker::WorkerStatus;
    use prodops_client::{Client, Config, ListParams, WorkerCreate, WorkerFilter, WorkerPatch};
    use prodops_tests::TestServer;
    let server = TestServer::start().await;
    let api = server.org("Typed inputs").await;
    let c = Client::new(Config::new(server.base_url(), api.key().unwrap())).unwrap();
    let ann = c
        .workers()
        .create(
            &WorkerCreate::new("Ann")
                .customer_identifier("E1")
                .union_code("U7")
                .status(WorkerStatus::Inactive),
        )
        .await
        .unwrap();
    assert_eq!(
        (ann.customer_identifier.as_str(), ann.union_code.as_deref()),
        ("E1", Some("U7"))
    );
    let ann = c
        .workers()
        .update(
            ann.id,
            &WorkerPatch::default()
                .status(WorkerStatus::Active)
                .union_code(None),
        )
        .await
        .unwrap();
    assert_eq!((ann.status, ann.union_code), (WorkerStatus::Active, None));
    c.workers()
        .create(&WorkerCreate::new("Bo").status(WorkerStatus::Inactive))
        .await
        .unwrap();
    let active = ListParams::new().with(WorkerFilter::status(WorkerStatus::Active));
    assert_eq!(c.workers().count(&active).await.unwrap(), 1);
    let by_id = ListParams::new().with(WorkerFilter::customer_identifier("E1"));
    assert_eq!(c.workers().count(&by_id).await.unwrap(), 1);
    // What the types cannot say goes in `extra`; the server still refuses what it does not know.
    let mut typo = WorkerCreate::new("Cy");
    typo.extra.insert("nme".into(), serde_json::json!("x"));
    let err = c.workers().create(&typo).await.unwrap_err();
    assert_eq!(err.status(), Some(400), "{err}");
}
