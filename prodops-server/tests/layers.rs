//! The layers of `prodops-server/src` (lib.rs describes them): a module imports only from its
//! own top-level module, from a lower layer, or from a module listed after it in its own layer
//! (RANKS lists each layer's modules top-down). So no two top-level modules import each other,
//! directly or around a circle: the resource families included, whose order says which family
//! builds on which. Only `store/` knows SQL dialects.
//!
//! The test reads every source file, strips comments and literals, and follows each
//! `crate::<module>` path (grouped `use crate::{a::x, b}` forms included) and each `super::`
//! path that climbs to the crate root.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

// The file-level import graph and its cycles, and the comment and literal stripping both
// scanners use (shared with the core's and the CLI's module tests).
#[path = "../../prodops-core/tests/support/file_cycles.rs"]
mod file_cycles;
use file_cycles::strip;

/// Every top-level module of the crate and its layer, top-down: within a layer a module may use
/// only the modules listed after it. A new module must be placed here.
const RANKS: &[(&str, u8)] = &[
    // 5: the composition root.
    ("main", 5),
    ("lib", 5),
    ("router", 5),
    ("openapi", 5),
    ("families", 5),
    // 4: the resource families, each with its hooks and handlers, top-down: production and
    // bom build on the plan they share and on inventory; qc, workers and production build on
    // deliverables.
    ("production", 4),
    ("bom", 4),
    ("plans", 4),
    ("qc", 4),
    ("workers", 4),
    ("deliverables", 4),
    ("deliveries", 4),
    ("inventory", 4),
    ("documents", 4),
    ("notifications", 4),
    ("members", 4),
    ("catalog", 4),
    ("webhooks", 4),
    ("events", 4),
    // 3: the standard endpoints and the services beside them.
    ("jobs", 3),
    ("admin", 3),
    ("blob", 3),
    ("engine", 3),
    // 2: the gateway and the request kernel.
    ("http", 2),
    // 1: the database.
    ("store", 1),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rank(module: &str) -> Option<u8> {
    RANKS.iter().find(|(m, _)| *m == module).map(|(_, r)| *r)
}

/// Where a module stands in RANKS (0 at the top).
fn position(module: &str) -> Option<usize> {
    RANKS.iter().position(|(m, _)| *m == module)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file below `src` (`deliverables/tree.rs` → `[deliverables, tree]`,
/// `jobs/mod.rs` → `[jobs]`, `lib.rs` → `[]`, `main.rs` → `[main]`).
fn module_path(relative: &Path) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && !(parts.is_empty() && stem == "lib") {
        parts.push(stem.to_string());
    }
    parts
}

/// A token of stripped code and its line.
fn tokens(code: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut line = 1;
    let c: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch == '\n' {
            line += 1;
            i += 1;
        } else if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphanumeric() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push((c[start..i].iter().collect(), line));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(("::".into(), line));
            i += 2;
        } else {
            out.push((ch.to_string(), line));
            i += 1;
        }
    }
    out
}

/// The first segment of each path of a `{...}` group starting at `toks[open]`, and the index
/// after its closing brace.
fn group_heads(toks: &[(String, usize)], open: usize) -> (Vec<(String, usize)>, usize) {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut expect_head = true;
    let mut i = open;
    while i < toks.len() {
        let t = toks[i].0.as_str();
        match t {
            "{" => {
                depth += 1;
                if depth == 1 {
                    expect_head = true;
                }
            }
            "}" => {
                depth -= 1;
                if depth == 0 {
                    return (heads, i + 1);
                }
            }
            "," if depth == 1 => expect_head = true,
            _ => {
                if depth == 1 && expect_head {
                    heads.push(toks[i].clone());
                    expect_head = false;
                }
            }
        }
        i += 1;
    }
    (heads, i)
}

/// Every top-level module a file names through `crate::` or a `super::` path that climbs to
/// the crate root, with the line.
fn references(file_module: &[String], code: &str) -> Vec<(String, usize)> {
    let toks = tokens(code);
    let mut refs = Vec::new();
    // Inline modules (`mod tests { .. }`) open at a brace depth.
    let mut inline: Vec<usize> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].0.as_str();
        match t {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                while inline.last().is_some_and(|d| *d > depth) {
                    inline.pop();
                }
            }
            "mod" if toks.get(i + 2).is_some_and(|t| t.0 == "{") => {
                inline.push(depth + 1);
            }
            _ => {}
        }
        let at_root = if t == "crate" && toks.get(i + 1).is_some_and(|t| t.0 == "::") {
            Some(i + 2)
        } else if t == "super" && (i == 0 || toks[i - 1].0 != "::") {
            let mut j = i;
            let mut ups = 0;
            while toks.get(j).is_some_and(|t| t.0 == "super")
                && toks.get(j + 1).is_some_and(|t| t.0 == "::")
            {
                ups += 1;
                j += 2;
            }
            let own = file_module.len() + inline.len();
            (ups > 0 && ups >= own).then_some(j)
        } else {
            None
        };
        if let Some(next) = at_root {
            match toks.get(next).map(|t| t.0.as_str()) {
                Some("{") => {
                    let (heads, after) = group_heads(&toks, next);
                    refs.extend(heads.into_iter().filter(|h| h.0 != "self"));
                    i = after;
                    continue;
                }
                Some(_) => refs.push(toks[next].clone()),
                None => {}
            }
            i = next;
            continue;
        }
        i += 1;
    }
    refs
}

struct Checked {
    violations: Vec<String>,
    arrows: usize,
}

fn check() -> Checked {
    let root = src();
    let mut violations = Vec::new();
    // Every top-level module is placed.
    for entry in fs::read_dir(&root).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let module = if path.is_dir() {
            name
        } else if let Some(stem) = name.strip_suffix(".rs") {
            stem.to_string()
        } else {
            continue;
        };
        if rank(&module).is_none() {
            violations.push(format!(
                "src/{}: the top-level module `{module}` has no layer in tests/layers.rs RANKS",
                path.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut arrows = 0;
    let mut counted = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&root).unwrap();
        let shown = format!("src/{}", relative.display());
        let text = fs::read_to_string(file).unwrap();
        let in_store = relative.starts_with("store");
        if !in_store {
            for (n, line) in text.lines().enumerate() {
                if line.contains("Dialect") || line.contains(".dialect()") {
                    violations.push(format!(
                        "{shown}:{}: only store/ may know SQL dialects: {}",
                        n + 1,
                        line.trim()
                    ));
                }
            }
        }
        let module = module_path(relative);
        let own = module.first().cloned().unwrap_or_else(|| "lib".into());
        let Some(own_rank) = rank(&own) else {
            continue;
        };
        for (target, line) in references(&module, &strip(&text)) {
            let Some(target_rank) = rank(&target) else {
                violations.push(format!(
                    "{shown}:{line}: `{own}` -> `crate::{target}`: no top-level module `{target}` in RANKS"
                ));
                continue;
            };
            if target == own {
                continue;
            }
            arrows += 1;
            *counted.entry((own.clone(), target.clone())).or_insert(0) += 1;
            let allowed = target_rank < own_rank
                || (target_rank == own_rank && position(&target) > position(&own));
            if !allowed {
                violations.push(format!(
                    "{shown}:{line}: upward arrow `{own}` ({own_rank}) -> `{target}` ({target_rank}): \
                     within a layer a module uses only those listed after it in RANKS"
                ));
            }
        }
    }
    for ((from, to), n) in &counted {
        eprintln!("{from} -> {to}: {n}");
    }
    Checked { violations, arrows }
}

#[test]
fn imports_point_only_downward() {
    let checked = check();
    eprintln!("{} arrows between top-level modules", checked.arrows);
    assert!(
        checked.violations.is_empty(),
        "layering violations:\n{}",
        checked.violations.join("\n")
    );
}

/// The scanner itself: grouped and inline paths, `super::` climbing to the root, comments and
/// strings ignored.
#[test]
fn the_scanner_finds_every_form() {
    let code = strip(
        "use crate::{http::app::AppState, store};\n\
         // crate::families in a comment\n\
         let s = \"crate::router in a string\";\n\
         fn f() { crate::engine::resource(\"x\"); }\n\
         use super::super::jobs::run;\n\
         mod tests { use super::*; use crate::{blob::{Files, is_key}, self}; }\n",
    );
    let found: Vec<(String, usize)> = references(&["qc".into(), "inner".into()], &code);
    let names: Vec<&str> = found.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(names, ["http", "store", "engine", "jobs", "blob"]);
    assert_eq!(found[2].1, 4);
    // From `qc/mod.rs`, `super::x` names the crate root's `x`.
    let found = references(
        &["qc".into()],
        &strip("fn g() { super::families::install(); }"),
    );
    assert_eq!(found, [("families".to_string(), 1)]);
}

/// Between the server's files, no import cycle but these, which may only shrink (a cycle that
/// is gone or has changed fails too, so the list is kept true). Each is inside one top-level
/// module: its `mod.rs` and its parts share items both ways. (The deliverables family's
/// cycle of eight files is gone: its parts no longer reach back to its `mod.rs`.)
#[test]
fn the_files_import_each_other_in_no_new_cycle() {
    file_cycles::assert_no_cycle_except(
        Path::new(env!("CARGO_MANIFEST_DIR")),
        &[
            (
                &[
                    "src/engine/bulk.rs",
                    "src/engine/events.rs",
                    "src/engine/hooks.rs",
                    "src/engine/mod.rs",
                    "src/engine/params.rs",
                    "src/engine/pipeline.rs",
                    "src/engine/resources.rs",
                ],
                "engine/mod.rs holds ServedResource, which every part uses, and the handlers \
                 that call the parts",
            ),
            (
                &[
                    "src/store/deliverables.rs",
                    "src/store/event_links.rs",
                    "src/store/events.rs",
                    "src/store/filter_columns.rs",
                    "src/store/migrate.rs",
                    "src/store/mod.rs",
                    "src/store/postgres.rs",
                    "src/store/property_index.rs",
                    "src/store/records.rs",
                    "src/store/sql.rs",
                    "src/store/sqlite.rs",
                    "src/store/value_counts.rs",
                ],
                "store/mod.rs holds Tx and Store, which every part uses, and opens the \
                 database through the backends and migrations",
            ),
        ],
    );
}
