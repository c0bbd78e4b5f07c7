//! The import graph between the files of a crate's `src/`, and its cycles. Shared by the
//! module tests of prodops-core (`tests/modules.rs`) and prodops-cli (`tests/modules.rs`),
//! which include this file with `#[path = ...] mod file_cycles;`.
//!
//! The rule, strict at file level (a module is a file): a file depends on another when its
//! code names an item through that file's module, in a `use` or in a qualified path:
//! `crate::a::b::x`, `super::x`, `self::child::x`, or a child module's bare name
//! (`child::x`, `use child::x`). A path goes to the deepest module file it names, so naming an
//! item through a re-export depends on the file that re-exports it. `mod x;` declarations are
//! not dependencies. No two files may depend on each other, directly or around a longer loop: a
//! `mod.rs` (or `a.rs` beside `a/`) that uses its children's items while they use its own is a
//! cycle too; the items both sides need go into a child both can use.
//!
//! Comments, string and char literals are blanked before the code is read; paths inside an
//! inline `mod tests { .. }` count for the file that holds it.

// Each including test uses part of it.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// One import arrow: the file that names, the file named, and the line of the naming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrow {
    pub from: String,
    pub to: String,
    pub line: usize,
}

/// The files of a crate's `src/` and the arrows between them.
pub struct Graph {
    /// File (relative to the crate, e.g. `src/csvio/mod.rs`) by module path.
    pub files: BTreeMap<Vec<String>, String>,
    pub arrows: Vec<Arrow>,
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

/// The module path of a file below `src` (`csvio/import/mod.rs` → `[csvio, import]`,
/// `alerts.rs` → `[alerts]`, the crate root `lib.rs` or `main.rs` → `[]`).
fn module_path(relative: &Path, root_file: &str) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap();
    let stem = last.trim_end_matches(".rs");
    if stem != "mod" && !(parts.is_empty() && last == root_file) {
        parts.push(stem.to_string());
    }
    parts
}

/// The code with comments, string and char literals blanked (newlines kept, so that
/// positions keep their line).
pub fn strip(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if (c[i] == 'r' || c[i] == 'b')
            && (next == Some('"') || next == Some('#') || (c[i] == 'b' && next == Some('r')))
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            // A raw or byte string: r"..", r#".."#, br#".."#, b"..".
            let mut j = i + 1;
            let raw = c[i] == 'r' || next == Some('r');
            if c[i] == 'b' && next == Some('r') {
                j += 1;
            }
            let mut hashes = 0;
            while raw && c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            while j < c.len() {
                if !raw && c[j] == '\\' {
                    j += 2;
                    continue;
                }
                if c[j] == '"' && (0..hashes).all(|k| c.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            for ch in &c[i..j.min(c.len())] {
                out.push(blank(*ch));
            }
            i = j;
        } else if c[i] == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c[i] == '\'' {
            // A char literal ('x', '\n', '\u{..}'); otherwise a lifetime.
            if next == Some('\\') {
                let mut j = i + 2;
                while j < c.len() && c[j] != '\'' {
                    j += 1;
                }
                for _ in i..=j.min(c.len() - 1) {
                    out.push(' ');
                }
                i = j + 1;
            } else if c.get(i + 2) == Some(&'\'') {
                out.push_str("   ");
                i += 3;
            } else {
                out.push('\'');
                i += 1;
            }
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// A token of stripped code and its line.
type Token = (String, usize);

fn tokens(code: &str) -> Vec<Token> {
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

fn is_ident(t: &str) -> bool {
    t.chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// The paths of a use tree starting at `toks[at]` (a segment or a `{` group), each as its
/// segments after `prefix`, with the line of its first segment; and the index after the tree.
fn use_tree(
    toks: &[Token],
    at: usize,
    prefix: &[String],
    out: &mut Vec<(Vec<String>, usize)>,
) -> usize {
    let mut path = prefix.to_vec();
    let mut line = toks.get(at).map_or(0, |t| t.1);
    let mut i = at;
    loop {
        let Some((t, l)) = toks.get(i) else {
            return i;
        };
        if t == "{" {
            i += 1;
            loop {
                match toks.get(i).map(|t| t.0.as_str()) {
                    None => return i,
                    Some("}") => return i + 1,
                    Some(",") => i += 1,
                    Some(_) => i = use_tree(toks, i, &path, out),
                }
            }
        }
        if t == "*" {
            out.push((path, line));
            return i + 1;
        }
        if !is_ident(t) {
            out.push((path, line));
            return i;
        }
        if i == at {
            line = *l;
        }
        if t != "self" || path.is_empty() {
            path.push(t.clone());
        }
        i += 1;
        if toks.get(i).is_some_and(|t| t.0 == "::") {
            i += 1;
            continue;
        }
        // `as name`, `,`, `}` or `;` ends the path.
        if toks.get(i).is_some_and(|t| t.0 == "as") {
            i += 2;
        }
        out.push((path, line));
        return i;
    }
}

/// A qualified path in code starting at `toks[at]`: its segments and the index after it.
fn code_path(toks: &[Token], at: usize) -> (Vec<String>, usize) {
    let mut path = vec![toks[at].0.clone()];
    let mut i = at + 1;
    while toks.get(i).is_some_and(|t| t.0 == "::")
        && toks.get(i + 1).is_some_and(|t| is_ident(&t.0))
    {
        path.push(toks[i + 1].0.clone());
        i += 2;
    }
    (path, i)
}

/// Every module path (absolute, from the crate root) the code of the file at `module` names,
/// with its line. `is_module` tells whether a module path is one of the crate's files.
pub fn named_paths(
    module: &[String],
    code: &str,
    is_module: &dyn Fn(&[String]) -> bool,
) -> Vec<(Vec<String>, usize)> {
    let toks = tokens(code);
    let mut found = Vec::new();
    // Inline modules (`mod tests { .. }`): their names and the brace depth they open at.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].0.as_str();
        let prev = if i == 0 { "" } else { toks[i - 1].0.as_str() };
        match t {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                while inline.last().is_some_and(|(_, d)| *d > depth) {
                    inline.pop();
                }
            }
            "mod" if toks.get(i + 2).is_some_and(|t| t.0 == "{") => {
                inline.push((toks[i + 1].0.clone(), depth + 1));
            }
            _ => {}
        }
        let mut scope: Vec<String> = module.to_vec();
        scope.extend(inline.iter().map(|(name, _)| name.clone()));
        let mut relative: Vec<(Vec<String>, usize)> = Vec::new();
        let next_is_path = toks.get(i + 1).is_some_and(|t| t.0 == "::");
        if t == "use" {
            let start = if toks.get(i + 1).is_some_and(|t| t.0 == "::") {
                i + 2
            } else {
                i + 1
            };
            let mut paths = Vec::new();
            i = use_tree(&toks, start, &[], &mut paths);
            relative = paths;
        } else if prev != "::" && prev != "in" && next_is_path && is_ident(t) {
            let (path, after) = code_path(&toks, i);
            relative.push((path, toks[i].1));
            i = after;
        } else {
            i += 1;
        }
        for (path, line) in relative {
            let Some(first) = path.first() else {
                continue;
            };
            let absolute: Vec<String> = match first.as_str() {
                "crate" => path[1..].to_vec(),
                "self" => scope.iter().chain(&path[1..]).cloned().collect(),
                "super" => {
                    let ups = path.iter().take_while(|s| *s == "super").count();
                    let keep = scope.len().saturating_sub(ups);
                    scope[..keep].iter().chain(&path[ups..]).cloned().collect()
                }
                name => {
                    let mut child = scope.clone();
                    child.push(name.to_string());
                    if !is_module(&child) {
                        continue;
                    }
                    scope.iter().chain(&path).cloned().collect()
                }
            };
            found.push((absolute, line));
        }
    }
    found
}

/// The deepest module file a path names: its longest prefix that is a file module.
fn owner<'a>(files: &'a BTreeMap<Vec<String>, String>, path: &[String]) -> Option<&'a String> {
    (0..=path.len()).rev().find_map(|n| files.get(&path[..n]))
}

/// Reads the crate at `crate_dir`: every file of its `src/` and the arrows between them. The
/// crate root is `src/lib.rs`, or `src/main.rs` when the crate has no library.
pub fn read_crate(crate_dir: &Path) -> Graph {
    let src = crate_dir.join("src");
    let root_file = if src.join("lib.rs").exists() {
        "lib.rs"
    } else {
        "main.rs"
    };
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let mut files = BTreeMap::new();
    let mut texts = Vec::new();
    for path in &paths {
        let relative = path.strip_prefix(&src).unwrap();
        // A `main.rs` beside a `lib.rs` (or a `src/bin/` file) is a crate of its own.
        if (root_file == "lib.rs" && relative == Path::new("main.rs"))
            || relative.starts_with("bin")
        {
            continue;
        }
        let module = module_path(relative, root_file);
        let shown = format!("src/{}", relative.display());
        files.insert(module.clone(), shown.clone());
        texts.push((module, shown, fs::read_to_string(path).unwrap()));
    }
    let mut arrows = Vec::new();
    for (module, shown, text) in &texts {
        let is_module = |m: &[String]| files.contains_key(m);
        for (path, line) in named_paths(module, &strip(text), &is_module) {
            let Some(to) = owner(&files, &path) else {
                continue;
            };
            if to != shown {
                arrows.push(Arrow {
                    from: shown.clone(),
                    to: to.clone(),
                    line,
                });
            }
        }
    }
    Graph { files, arrows }
}

impl Graph {
    /// The strongly connected groups of more than one file (Tarjan), each sorted, each with a
    /// loop through its files shown with the line of every arrow.
    pub fn cycles(&self) -> Vec<(Vec<String>, String)> {
        let names: Vec<&String> = self.files.values().collect();
        let index: BTreeMap<&String, usize> =
            names.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let mut next: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); names.len()];
        for a in &self.arrows {
            next[index[&a.from]].insert(index[&a.to]);
        }
        let groups = tarjan(&next);
        let mut out = Vec::new();
        for group in groups.into_iter().filter(|g| g.len() > 1) {
            let members: BTreeSet<usize> = group.iter().copied().collect();
            let start = *members.iter().next().unwrap();
            let path = loop_through(&next, &members, start);
            let mut shown = String::new();
            for pair in path.windows(2) {
                let (from, to) = (names[pair[0]], names[pair[1]]);
                let line = self
                    .arrows
                    .iter()
                    .find(|a| &a.from == from && &a.to == to)
                    .map_or(0, |a| a.line);
                shown.push_str(&format!("  {from}:{line} -> {to}\n"));
            }
            let mut files: Vec<String> = members.iter().map(|i| names[*i].clone()).collect();
            files.sort();
            out.push((files, shown));
        }
        out.sort();
        out
    }

    /// Every distinct arrow, `from -> to`, for a failure message.
    pub fn arrows_between(&self, files: &[String]) -> Vec<String> {
        let mut seen = BTreeSet::new();
        for a in &self.arrows {
            if files.contains(&a.from) && files.contains(&a.to) {
                seen.insert(format!("{} -> {}", a.from, a.to));
            }
        }
        seen.into_iter().collect()
    }
}

fn tarjan(next: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        next: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        groups: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in s.next[v].iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(iw) if s.on_stack[w] => s.low[v] = s.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut group = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack[w] = false;
                group.push(w);
                if w == v {
                    break;
                }
            }
            s.groups.push(group);
        }
    }
    let n = next.len();
    let mut s = State {
        next,
        index: vec![None; n],
        low: vec![0; n],
        on_stack: vec![false; n],
        stack: Vec::new(),
        counter: 0,
        groups: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.groups
}

/// A shortest loop from `start` back to itself inside `members` (breadth first).
fn loop_through(next: &[BTreeSet<usize>], members: &BTreeSet<usize>, start: usize) -> Vec<usize> {
    let mut came_from: BTreeMap<usize, usize> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(v) = queue.pop_front() {
        for &w in &next[v] {
            if !members.contains(&w) {
                continue;
            }
            if w == start {
                let mut path = vec![start, v];
                let mut at = v;
                while at != start {
                    at = came_from[&at];
                    path.push(at);
                }
                path.reverse();
                return path;
            }
            if let std::collections::btree_map::Entry::Vacant(e) = came_from.entry(w) {
                e.insert(v);
                queue.push_back(w);
            }
        }
    }
    vec![start]
}

/// Fails naming every cycle of the crate's file import graph.
pub fn assert_no_cycle(crate_dir: &Path) {
    assert_no_cycle_except(crate_dir, &[]);
}

/// Fails naming every cycle of the crate's file import graph but the `known` ones (each the
/// sorted files of one cycle, and why it stays). A known cycle that is gone or has changed
/// fails too, so that the list only shrinks.
pub fn assert_no_cycle_except(crate_dir: &Path, known: &[(&[&str], &str)]) {
    let graph = read_crate(crate_dir);
    let cycles = graph.cycles();
    let in_cycles: usize = cycles.iter().map(|(files, _)| files.len()).sum();
    eprintln!(
        "{} files, {} arrows, {} files in {} import cycles",
        graph.files.len(),
        graph.arrows.len(),
        in_cycles,
        cycles.len()
    );
    let is_known = |files: &[String]| known.iter().any(|(k, _)| *k == files);
    let mut message = String::new();
    for (files, shown) in cycles.iter().filter(|(files, _)| !is_known(files)) {
        message.push_str(&format!(
            "cycle of {} files: {}\n{shown}  arrows inside it: {}\n",
            files.len(),
            files.join(", "),
            graph.arrows_between(files).join("; ")
        ));
    }
    for (files, why) in known {
        eprintln!("known cycle: {} ({why})", files.join(", "));
        if !cycles.iter().any(|(c, _)| c == files) {
            message.push_str(&format!(
                "the known cycle {} is gone or has changed: update the list\n",
                files.join(", ")
            ));
        }
    }
    assert!(
        message.is_empty(),
        "the files of {} import each other in a cycle:\n{message}",
        crate_dir.display()
    );
}

/// The scanner itself: grouped, nested, aliased and glob `use` paths, `self::`, `super::` and
/// bare child paths, inline `mod tests`, comments and strings ignored.
#[test]
fn the_scanner_finds_every_form() {
    let modules: BTreeSet<Vec<String>> = [
        vec![],
        vec!["a".to_string()],
        vec!["a".into(), "child".into()],
        vec!["a".into(), "sib".into()],
        vec!["b".into()],
    ]
    .into_iter()
    .collect();
    let is_module = |m: &[String]| modules.contains(m);
    let code = strip(
        "use crate::{b::{X, y as z}, a::sib::{self, W}};\n\
         // crate::commented in a comment\n\
         let s = \"crate::quoted in a string\"; let r = r#\"super::raw\"#;\n\
         fn f() { crate::b::run(\"x\"); child::go(); std::mem::take(x); }\n\
         use super::*;\n\
         use self::child::Q;\n\
         pub(in crate::b) fn g() {}\n\
         use std::fmt::{self, Write};\n\
         mod tests { use super::*; use super::super::b; }\n",
    );
    let found = named_paths(&["a".to_string()], &code, &is_module);
    let shown: Vec<String> = found
        .iter()
        .map(|(p, l)| format!("{}@{l}", p.join("::")))
        .collect();
    assert_eq!(
        shown,
        [
            "b::X@1",
            "b::y@1",
            "a::sib@1",
            "a::sib::W@1",
            "b::run@4",
            "a::child::go@4",
            "@5",
            "a::child::Q@6",
            "a@9",
            "b@9",
        ]
    );
}
