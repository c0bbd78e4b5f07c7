//! `prodops api`: any endpoint, shaped like `gh api`. `prodops api PATH` is a GET; `-X` sets
//! the method; `-H` adds headers; `-f KEY=VALUE` (text) and `-F KEY=VALUE` (typed) build the
//! JSON body, or the query string of a GET, and make the method POST unless `-X` says
//! otherwise; `--input FILE` sends a body as it is; `-i` prints the status and headers; and
//! `--paginate` reads every page of a list into one array. `prodops api METHOD PATH` (the
//! earlier form) is still read.

use std::io::{Read, Write};

use bytes::Bytes;
use clap::ArgMatches;
use prodops_client::Method;
use serde_json::{Map, Value};

use crate::context::{CommandContext, read_json_arg, set_path, stdout_writer};
use crate::fail::{CmdResult, Fail};
use crate::output::{Shape, write_shaped};
use crate::shape::Post;

const METHODS: [&str; 5] = ["GET", "POST", "PATCH", "PUT", "DELETE"];

/// What the command asks for: the method, the path, the headers and the body.
struct Request {
    method: Method,
    path: String,
    headers: Vec<(String, String)>,
    body: Option<(Bytes, &'static str)>,
}

fn many<'a>(args: &'a ArgMatches, id: &str) -> Vec<&'a String> {
    args.get_many::<String>(id)
        .map(|v| v.collect())
        .unwrap_or_default()
}

/// A `-F` value: `true`, `false`, `null` and numbers as JSON, `@FILE` the file's text, else text.
fn typed_field(raw: &str) -> CmdResult<Value> {
    if let Some(file) = raw.strip_prefix('@') {
        let mut text = String::new();
        if file == "-" {
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| Fail::io("reading stdin", e))?;
        } else {
            text =
                std::fs::read_to_string(file).map_err(|e| Fail::usage(format!("-F {raw}: {e}")))?;
        }
        return Ok(Value::String(text));
    }
    Ok(match raw {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        "null" => Value::Null,
        _ => match serde_json::from_str::<serde_json::Number>(raw) {
            Ok(n) => Value::Number(n),
            Err(_) => Value::String(raw.to_string()),
        },
    })
}

fn request(args: &ArgMatches) -> CmdResult<Request> {
    let endpoint = many(args, "endpoint");
    let (named_method, raw_path) = match endpoint.as_slice() {
        [path] => (None, path.as_str()),
        [method, path] if METHODS.contains(&method.to_uppercase().as_str()) => {
            (Some(method.to_uppercase()), path.as_str())
        }
        [other, _] => {
            return Err(Fail::usage(format!(
                "{other}: not a method; give the path alone (GET), or -X METHOD"
            )));
        }
        _ => unreachable!("clap takes one or two"),
    };
    let flag_method = args.get_one::<String>("method").map(|m| m.to_uppercase());
    if let (Some(a), Some(b)) = (&named_method, &flag_method)
        && a != b
    {
        return Err(Fail::usage(format!(
            "the method is given twice: {a} and -X {b}"
        )));
    }
    let raw_path = raw_path.trim();
    let path = raw_path.strip_prefix("/api/v2").unwrap_or(raw_path);
    let mut path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };

    let mut fields = Vec::new();
    for raw in many(args, "raw-field") {
        let (k, v) = raw
            .split_once('=')
            .ok_or_else(|| Fail::usage(format!("-f {raw}: expected KEY=VALUE")))?;
        fields.push((k.trim().to_string(), Value::String(v.to_string())));
    }
    for raw in many(args, "field") {
        let (k, v) = raw
            .split_once('=')
            .ok_or_else(|| Fail::usage(format!("-F {raw}: expected KEY=VALUE")))?;
        fields.push((k.trim().to_string(), typed_field(v)?));
    }
    let data = args.get_one::<String>("data");
    let input = args.get_one::<String>("input");
    if data.is_some() && input.is_some() {
        return Err(Fail::usage("give the body once: --data or --input"));
    }
    let method_text = named_method.or(flag_method).unwrap_or_else(|| {
        if fields.is_empty() && data.is_none() && input.is_none() {
            "GET".into()
        } else {
            "POST".into()
        }
    });
    if !METHODS.contains(&method_text.as_str()) {
        return Err(Fail::usage(format!(
            "unknown method {method_text}: use GET, POST, PATCH, PUT or DELETE"
        )));
    }
    let method = Method::from_name(&method_text).expect("a method");

    let mut headers = Vec::new();
    for raw in many(args, "header") {
        let (name, value) = raw
            .split_once(':')
            .ok_or_else(|| Fail::usage(format!("-H {raw}: expected NAME:VALUE")))?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }

    let body = if method == Method::GET {
        if data.is_some() || input.is_some() {
            return Err(Fail::usage(
                "a GET sends no body: use -f/-F for its query string",
            ));
        }
        if !fields.is_empty() {
            let mut query = form_urlencoded::Serializer::new(String::new());
            for (k, v) in &fields {
                match v {
                    Value::String(s) => query.append_pair(k, s),
                    other => query.append_pair(k, &other.to_string()),
                };
            }
            let sep = if path.contains('?') { '&' } else { '?' };
            path = format!("{path}{sep}{}", query.finish());
        }
        None
    } else if let Some(file) = input {
        let mut bytes = Vec::new();
        if file == "-" {
            std::io::stdin()
                .read_to_end(&mut bytes)
                .map_err(|e| Fail::io("reading stdin", e))?;
        } else {
            bytes = std::fs::read(file).map_err(|e| Fail::usage(format!("--input {file}: {e}")))?;
        }
        let content_type = if serde_json::from_slice::<serde::de::IgnoredAny>(&bytes).is_ok() {
            "application/json"
        } else {
            "application/octet-stream"
        };
        Some((Bytes::from(bytes), content_type))
    } else if data.is_some() || !fields.is_empty() {
        let mut body = match data {
            Some(raw) => read_json_arg(raw, "--data")?,
            None => Value::Object(Map::new()),
        };
        if !fields.is_empty() {
            let map = body
                .as_object_mut()
                .ok_or_else(|| Fail::usage("-f/-F need --data to be a JSON object"))?;
            for (k, v) in fields {
                set_path(map, &k, v)?;
            }
        }
        Some((Bytes::from(body.to_string()), "application/json"))
    } else {
        None
    };
    Ok(Request {
        method,
        path,
        headers,
        body,
    })
}

/// `prodops api`.
pub async fn api(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let req = request(args)?;
    let mut shape = Shape::new(ctx.format);
    shape.post = Post::from_args(args)?.map(std::sync::Arc::new);
    shape.width = crate::table::terminal_width();
    let headers: Vec<(&str, &str)> = req
        .headers
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_str()))
        .collect();
    if args.get_flag("paginate") {
        if req.method != Method::GET {
            return Err(Fail::usage("--paginate works with GET only"));
        }
        return paginate(ctx, &req.path, &headers, &shape).await;
    }
    let (body, content_type) = match req.body {
        Some((b, t)) => (Some(b), t),
        None => (None, "application/json"),
    };
    let raw = ctx
        .client
        .send_raw_with_headers(req.method, &req.path, body, content_type, &headers)
        .await?;
    let mut stdout = std::io::stdout().lock();
    let io = |e| Fail::io("writing the output", e);
    if args.get_flag("include") {
        let reason = reason_phrase(raw.status);
        writeln!(stdout, "HTTP/1.1 {} {reason}", raw.status).map_err(io)?;
        for (name, value) in &raw.headers {
            writeln!(
                stdout,
                "{}: {}",
                name,
                String::from_utf8_lossy(value.as_bytes())
            )
            .map_err(io)?;
        }
        writeln!(stdout).map_err(io)?;
        if raw.error().is_some() {
            stdout.write_all(&raw.body).map_err(io)?;
            writeln!(stdout).map_err(io)?;
        }
    }
    if let Some(error) = raw.error() {
        return Err(error.into());
    }
    if raw.body.is_empty() {
        return Ok(());
    }
    match serde_json::from_slice::<Value>(&raw.body) {
        Ok(value) => {
            drop(stdout);
            write_shaped(&shape, &value)
        }
        Err(_) => stdout.write_all(&raw.body).map_err(io),
    }
}

/// The reason phrase of a status, for `-i`.
fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        410 => "Gone",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        507 => "Insufficient Storage",
        _ => "",
    }
}

/// `--paginate`: every page of a list, its values written as they come (one JSON array, or a
/// line each with `--output ndjson`).
async fn paginate(
    ctx: &CommandContext,
    path: &str,
    headers: &[(&str, &str)],
    shape: &Shape,
) -> CmdResult {
    let (base, query) = path.split_once('?').unwrap_or((path, ""));
    let mut kept: Vec<&str> = Vec::new();
    let mut size = 10_000u64;
    let mut page = 1u64;
    for part in query.split('&').filter(|p| !p.is_empty()) {
        match part.split_once('=') {
            Some(("pageSize", v)) => {
                size = v
                    .parse()
                    .map_err(|_| Fail::usage("pageSize: not a number"))?
            }
            Some(("page", v)) => page = v.parse().map_err(|_| Fail::usage("page: not a number"))?,
            _ => kept.push(part),
        }
    }
    let mut out = stdout_writer(shape);
    let mut seen = 0u64;
    loop {
        let mut q = kept.clone();
        let paging = format!("page={page}&pageSize={size}");
        q.push(&paging);
        let raw = ctx
            .client
            .send_raw_with_headers(
                Method::GET,
                &format!("{base}?{}", q.join("&")),
                None,
                "application/json",
                headers,
            )
            .await?;
        if let Some(error) = raw.error() {
            return Err(error.into());
        }
        let answer: Value = serde_json::from_slice(&raw.body)
            .map_err(|e| Fail::from(prodops_client::Error::Decode(e.to_string())))?;
        let values = answer
            .get("values")
            .and_then(Value::as_array)
            .ok_or_else(|| {
                Fail::usage(format!(
                    "{base} does not answer a list ({{\"values\": [...]}}); drop --paginate"
                ))
            })?;
        let n = values.len() as u64;
        for v in values {
            out.push(v.clone())?;
        }
        seen += n;
        let total = answer
            .get("totalCount")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        if n < size || n == 0 || seen >= total {
            break;
        }
        page += 1;
    }
    out.finish()
}
