//! `--jq EXPR` and `--template TEXT`: shaping what a command prints, as gh does.
//!
//! - `--jq` runs a jq program (jaq, a jq implementation in Rust) over the JSON the command would
//!   print with `-o json`: a record, an answer, or a list as one array. Each result is printed
//!   on its own line, strings raw (`--jq .id` prints the bare id), anything else as compact JSON.
//!   A list is read whole before the program runs (it sees the array), so bound it with
//!   `--limit` when it is large.
//! - `--template` renders a minijinja template (Jinja2 syntax: `{{ name }}`, `{% if %}`,
//!   filters such as `{{ name | upper }}`): once per record of a list as it streams, once for a
//!   single answer. The record's fields are the template's variables (`{{ progress.status }}`);
//!   a value that is not an object is `{{ value }}`. A line break ends each rendering that does
//!   not end with one.
//!
//! Both are checked when the command starts, before any request: a program or template that
//! does not parse is exit 2.

use std::io::Write;

use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Ctx, Vars, data, unwrap_valr};
use jaq_json::Val;
use serde_json::Value;

use crate::fail::{CmdResult, Fail};

/// A compiled `--jq` program.
pub struct Jq {
    filter: jaq_core::Filter<data::JustLut<Val>>,
}

impl std::fmt::Debug for Jq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Jq")
    }
}

impl Jq {
    pub fn compile(code: &str) -> CmdResult<Jq> {
        let defs = jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs());
        let funs = jaq_core::funs()
            .chain(jaq_std::funs())
            .chain(jaq_json::funs());
        let arena = Arena::default();
        let bad = |what: String| Fail::usage(format!("--jq {code:?}: {what}"));
        let modules = Loader::new(defs)
            .load(&arena, File { code, path: () })
            .map_err(|errs| bad(describe_load(&errs)))?;
        let filter = jaq_core::Compiler::default()
            .with_funs(funs)
            .compile(modules)
            .map_err(|errs| {
                let names: Vec<String> = errs
                    .iter()
                    .flat_map(|(_, es)| es.iter().map(|(name, _)| name.to_string()))
                    .collect();
                bad(format!("undefined: {}", names.join(", ")))
            })?;
        Ok(Jq { filter })
    }

    /// Runs the program over `input` and writes each result on its own line.
    pub fn write(&self, input: &Value, out: &mut dyn Write) -> CmdResult {
        let text = serde_json::to_vec(input).expect("JSON");
        let input = jaq_json::read::parse_single(&text)
            .map_err(|e| Fail::usage(format!("--jq: reading the answer: {e}")))?;
        let ctx = Ctx::<data::JustLut<Val>>::new(&self.filter.lut, Vars::new([]));
        for result in self.filter.id.run((ctx, input)).map(unwrap_valr) {
            let v = result.map_err(|e| Fail::usage(format!("--jq: {e}")))?;
            let written = match &v {
                Val::TStr(bytes) => out.write_all(bytes).and_then(|()| out.write_all(b"\n")),
                other => writeln!(out, "{other}"),
            };
            written.map_err(|e| Fail::io("writing the output", e))?;
        }
        Ok(())
    }
}

fn describe_load<P>(errs: &jaq_core::load::Errors<&str, P>) -> String {
    use jaq_core::load::Error;
    let mut parts = Vec::new();
    for (_, e) in errs {
        match e {
            Error::Io(es) => parts.extend(es.iter().map(|(path, why)| format!("{path}: {why}"))),
            Error::Lex(es) => parts.extend(es.iter().map(|(expected, at)| {
                format!("expected {} at {:?}", expected.as_str(), snippet(at))
            })),
            Error::Parse(es) => parts.extend(es.iter().map(|(expected, at)| {
                format!("expected {} at {:?}", expected.as_str(), snippet(at))
            })),
        }
    }
    if parts.is_empty() {
        "not a jq program".into()
    } else {
        parts.join("; ")
    }
}

fn snippet(at: &str) -> String {
    let s: String = at.chars().take(20).collect();
    if s.is_empty() { "the end".into() } else { s }
}

/// A parsed `--template`.
pub struct Template {
    env: minijinja::Environment<'static>,
}

impl std::fmt::Debug for Template {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Template")
    }
}

impl Template {
    pub fn parse(text: &str) -> CmdResult<Template> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Lenient);
        env.add_template_owned("t", text.to_string())
            .map_err(|e| Fail::usage(format!("--template: {e}")))?;
        Ok(Template { env })
    }

    /// Renders the template for one value and writes it, ending with a line break.
    pub fn write(&self, value: &Value, out: &mut dyn Write) -> CmdResult {
        let ctx = match value {
            Value::Object(_) => minijinja::Value::from(minijinja::value::Serde(value)),
            other => {
                minijinja::context! { value => minijinja::Value::from(minijinja::value::Serde(other)) }
            }
        };
        let text = self
            .env
            .get_template("t")
            .and_then(|t| t.render(ctx))
            .map_err(|e| Fail::usage(format!("--template: {e}")))?;
        out.write_all(text.as_bytes())
            .and_then(|()| {
                if text.ends_with('\n') {
                    Ok(())
                } else {
                    out.write_all(b"\n")
                }
            })
            .map_err(|e| Fail::io("writing the output", e))
    }
}

/// What replaces the format: a jq program or a template.
#[derive(Debug)]
pub enum Post {
    Jq(Jq),
    Template(Box<Template>),
}

impl Post {
    /// Runs the program, or renders the template, over one value.
    pub fn write(&self, value: &Value, out: &mut dyn Write) -> CmdResult {
        match self {
            Post::Jq(jq) => jq.write(value, out),
            Post::Template(t) => t.write(value, out),
        }
    }

    /// `--jq` or `--template` of a command, checked now.
    pub fn from_args(args: &clap::ArgMatches) -> CmdResult<Option<Post>> {
        if let Ok(Some(code)) = args.try_get_one::<String>("jq") {
            return Jq::compile(code).map(|j| Some(Post::Jq(j)));
        }
        if let Ok(Some(text)) = args.try_get_one::<String>("template") {
            return Template::parse(text).map(|t| Some(Post::Template(Box::new(t))));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn jq(code: &str, input: Value) -> String {
        let mut out = Vec::new();
        Jq::compile(code).unwrap().write(&input, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn jq_prints_strings_raw_and_other_values_as_json() {
        assert_eq!(jq(".id", json!({"id": "abc"})), "abc\n");
        assert_eq!(jq(".[].n", json!([{"n": 1}, {"n": 2}])), "1\n2\n");
        assert_eq!(jq("{a: .x}", json!({"x": [1]})), "{\"a\":[1]}\n");
        assert_eq!(jq("map(.n) | add", json!([{"n": 1}, {"n": 2}])), "3\n");
        assert_eq!(
            Jq::compile(".[").unwrap_err().code,
            crate::fail::code::USAGE
        );
        assert_eq!(
            Jq::compile("nosuchfn").unwrap_err().code,
            crate::fail::code::USAGE
        );
    }

    #[test]
    fn templates_render_a_record_per_line() {
        let t = Template::parse("{{ name }} ({{ progress.status }})").unwrap();
        let mut out = Vec::new();
        t.write(
            &json!({"name": "A", "progress": {"status": "done"}}),
            &mut out,
        )
        .unwrap();
        t.write(&json!({"name": "B", "progress": null}), &mut out)
            .unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "A (done)\nB ()\n");
        assert!(Template::parse("{{ name").is_err());
    }
}
