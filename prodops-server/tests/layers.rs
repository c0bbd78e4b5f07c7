//! The layers of `prodops-server/src` (lib.rs describes them): a module imports only from its
//! own top-level module, from a lower layer, or from a module listed after it in its own layer
//! (RANKS lists each layer's modules top-down). So no two top-level modules import each other,
//! directly or around a circle: the resource families included, whose order says which family
//! builds on which. Only `store/` knows SQL dialects.
//!
//! The arrows between files come from the scanner the core's and the CLI's module tests share
//! (`prodops-core/tests/support/file_cycles.rs`, with its own test of every path form): each
//! `crate::`, `super::`, `self::` or child path, grouped `use` forms included, to the file it
//! names; this test groups them by top-level module.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

// The file-level import graph and its cycles (shared with the core's and the CLI's module
// tests).
#[path = "../../prodops-core/tests/support/file_cycles.rs"]
mod file_cycles;

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
    // deliverables. `explain` reads across them all, and none uses it.
    ("explain", 4),
    ("production", 4),
    ("bom", 4),
    ("plans", 4),
    ("qc", 4),
    ("workers", 4),
    ("deliverables", 4),
    ("deliveries", 4),
    ("inventory", 4),
    ("lots", 4),
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

/// The top-level module of a file the shared scanner names (`src/deliverables/tree.rs` →
/// `deliverables`, `src/lib.rs` → `lib`).
fn top_module(file: &str) -> String {
    let relative = file.strip_prefix("src/").unwrap_or(file);
    let first = relative.split('/').next().unwrap_or(relative);
    first.trim_end_matches(".rs").to_string()
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
    // Only store/ names the dialect.
    for entry in walkdir(&root) {
        let relative = entry.strip_prefix(&root).unwrap();
        if relative.starts_with("store") {
            continue;
        }
        let text = fs::read_to_string(&entry).unwrap();
        for (n, line) in text.lines().enumerate() {
            if line.contains("Dialect") || line.contains(".dialect()") {
                violations.push(format!(
                    "src/{}:{}: only store/ may know SQL dialects: {}",
                    relative.display(),
                    n + 1,
                    line.trim()
                ));
            }
        }
    }
    // The arrows between files, as the shared scanner reads them, grouped by top-level module.
    let graph = file_cycles::read_crate(Path::new(env!("CARGO_MANIFEST_DIR")));
    let mut arrows = 0;
    let mut counted = BTreeMap::new();
    for arrow in &graph.arrows {
        let (own, target) = (top_module(&arrow.from), top_module(&arrow.to));
        if target == own {
            continue;
        }
        let (Some(own_rank), Some(target_rank)) = (rank(&own), rank(&target)) else {
            continue; // an unplaced module is reported above
        };
        arrows += 1;
        *counted.entry((own.clone(), target.clone())).or_insert(0) += 1;
        let allowed = target_rank < own_rank
            || (target_rank == own_rank && position(&target) > position(&own));
        if !allowed {
            violations.push(format!(
                "{}:{}: upward arrow `{own}` ({own_rank}) -> `{target}` ({target_rank}): \
                 within a layer a module uses only those listed after it in RANKS",
                arrow.from, arrow.line
            ));
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
                    "src/store/alert_times.rs",
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

/// Every `.rs` file below `dir`.
fn walkdir(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out.sort();
    out
}
