//! `prodops deliverable gantt ORDER`: an order's schedule drawn on the terminal (a bar per node
//! on a time axis, its predecessors named, late and at-risk nodes marked, fitted to the
//! terminal's width), or with `--format svg` as a standalone SVG file a browser opens.
//!
//! It reads through the existing API: the order's subtree (`GET /deliverable/{id}/hierarchy`
//! with only the fields drawn) and the dependencies among its nodes (`POST /dependency/query`
//! by predecessor). The drawing is pure: [`Chart`] is what was read, [`layout`] maps it onto
//! columns, and [`text`] and [`svg`] draw it.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

use chrono::{DateTime, Utc};
use clap::{Arg, ArgMatches, Command};
use prodops_client::{Dependency, Query};
use serde_json::{Value, json};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};
use uuid::Uuid;

use crate::context::CommandContext;
use crate::fail::{CmdResult, Fail};

/// One node of the chart, in tree order (parents before children, siblings in order).
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub id: Uuid,
    pub name: String,
    /// 0 for the order, 1 for its children, ...
    pub depth: usize,
    /// Its schedule in epoch seconds (`start <= end`); `None` unscheduled.
    pub span: Option<(i64, i64)>,
    pub late: bool,
    pub at_risk: bool,
    pub done: bool,
}

/// What is drawn: the nodes, the dependencies between them (`(predecessor, successor)` as
/// indexes into `nodes`) and now (epoch seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    pub nodes: Vec<Node>,
    pub links: Vec<(usize, usize)>,
    pub now: i64,
}

impl Chart {
    /// The time the axis covers: from the earliest start to the latest end (at least a
    /// second); `None` when nothing is scheduled.
    pub fn range(&self) -> Option<(i64, i64)> {
        let spans = self.nodes.iter().filter_map(|n| n.span);
        let from = spans.clone().map(|s| s.0).min()?;
        let until = spans.map(|s| s.1).max()?;
        Some((from, until.max(from + 1)))
    }

    /// The row numbers (1-based) of each node's predecessors, in order.
    fn predecessors(&self) -> Vec<Vec<usize>> {
        let mut out = vec![Vec::new(); self.nodes.len()];
        for &(p, s) in &self.links {
            if p < self.nodes.len() && s < self.nodes.len() {
                out[s].push(p + 1);
            }
        }
        for list in &mut out {
            list.sort_unstable();
            list.dedup();
        }
        out
    }
}

/// How a chart sits in a terminal `width` columns wide. A row is
/// `{number} {mark}{label} {axis}[ {after}]`: the row number, `!` (late), `~` (at risk) or a
/// space, the indented name, the time axis, and `←` the rows of its predecessors.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub width: usize,
    pub number_width: usize,
    pub label_width: usize,
    /// Columns of the time axis.
    pub axis: usize,
    /// Columns of the predecessors' rows (0: no dependencies, and no column).
    pub after_width: usize,
    pub range: Option<(i64, i64)>,
}

/// The narrowest terminal drawn into (`--width` takes no less).
pub const MIN_WIDTH: usize = 30;
/// The fewest columns the time axis gets: the label gives way first.
const MIN_AXIS: usize = 12;
/// The narrowest label column.
const MIN_LABEL: usize = 6;
/// The widest predecessor column.
const MAX_AFTER: usize = 12;
/// Indentation per level, and the deepest level indented.
const INDENT: usize = 2;
const MAX_INDENT_LEVELS: usize = 8;

fn indent(depth: usize) -> usize {
    depth.min(MAX_INDENT_LEVELS) * INDENT
}

fn after_text(rows: &[usize]) -> String {
    if rows.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = rows.iter().map(usize::to_string).collect();
        format!("←{}", list.join(","))
    }
}

/// Fits `chart` into `width` columns (at least [`MIN_WIDTH`]): the label column as wide as the
/// longest indented name but at most a third of the width, the axis the rest (at least
/// [`MIN_AXIS`], taken from the label first).
pub fn layout(chart: &Chart, width: usize) -> Layout {
    let width = width.max(MIN_WIDTH);
    let number_width = chart.nodes.len().max(1).to_string().len();
    let after_width = chart
        .predecessors()
        .iter()
        .map(|rows| after_text(rows).width())
        .max()
        .unwrap_or(0)
        .min(MAX_AFTER);
    let wanted_label = chart
        .nodes
        .iter()
        .map(|n| indent(n.depth) + n.name.width())
        .max()
        .unwrap_or(0)
        .max(MIN_LABEL);
    // Number, space, mark; space before the axis; space before the predecessors.
    let fixed = number_width + 2 + 1 + if after_width > 0 { after_width + 1 } else { 0 };
    let mut label_width = wanted_label.min((width / 3).max(MIN_LABEL));
    let room = width.saturating_sub(fixed);
    if room < label_width + MIN_AXIS {
        label_width = room.saturating_sub(MIN_AXIS).max(MIN_LABEL);
    }
    let axis = room.saturating_sub(label_width).max(1);
    Layout {
        width,
        number_width,
        label_width,
        axis,
        after_width,
        range: chart.range(),
    }
}

/// The column of instant `t` on an axis of `axis` columns over `range` (clamped to it).
pub fn column(t: i64, range: (i64, i64), axis: usize) -> usize {
    let (from, until) = range;
    let span = (until - from).max(1) as i128;
    let at = (t.clamp(from, until) - from) as i128;
    ((at * axis as i128 / span) as usize).min(axis.saturating_sub(1))
}

/// The columns `[first, last]` a span covers: from its start's column to the column its end
/// falls in (its last second's), at least one.
pub fn bar_columns(span: (i64, i64), range: (i64, i64), axis: usize) -> (usize, usize) {
    let first = column(span.0, range, axis);
    let last = column((span.1 - 1).max(span.0), range, axis);
    (first, last.max(first))
}

/// `text` cut to at most `width` columns, ending in `…` when cut.
pub fn truncate(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > width - 1 {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

/// `text` padded with spaces to `width` columns (cut first when wider).
fn pad(text: &str, width: usize) -> String {
    let mut s = truncate(text, width);
    let w = s.width();
    s.extend(std::iter::repeat_n(' ', width - w));
    s
}

/// How the axis labels write an instant: the date when the axis covers two days or more,
/// else the time of day too.
fn stamp(t: i64, range: (i64, i64)) -> String {
    let at = DateTime::<Utc>::from_timestamp(t, 0).unwrap_or_default();
    if range.1 - range.0 >= 2 * 86_400 {
        at.format("%Y-%m-%d").to_string()
    } else {
        at.format("%m-%d %H:%M").to_string()
    }
}

const BAR: char = '█';
const BAR_DONE: char = '░';
const BAR_LATE: char = '▓';
const NOW: char = '┆';

/// The chart drawn in text, one line per node under a line of dates; no line is wider than
/// `layout.width`.
pub fn text(chart: &Chart, layout: &Layout) -> String {
    let mut out = String::new();
    let lead = layout.number_width + 2 + layout.label_width + 1;
    let Some(range) = layout.range else {
        out.push_str(&truncate("(nothing scheduled)", layout.width));
        out.push('\n');
        for (i, n) in chart.nodes.iter().enumerate() {
            let line = format!(
                "{:>w$} {}{}",
                i + 1,
                mark(n),
                label(n),
                w = layout.number_width
            );
            out.push_str(truncate(&line, layout.width).trim_end());
            out.push('\n');
        }
        return out;
    };
    // The dates at both ends of the axis (only the first when both do not fit).
    let (from, until) = (stamp(range.0, range), stamp(range.1, range));
    let mut axis_head = from.clone();
    if from.width() + until.width() < layout.axis {
        let gap = layout.axis - from.width() - until.width();
        axis_head.extend(std::iter::repeat_n(' ', gap));
        axis_head.push_str(&until);
    }
    let head = format!("{}{}", " ".repeat(lead), truncate(&axis_head, layout.axis));
    out.push_str(head.trim_end());
    out.push('\n');
    let now = (range.0..=range.1)
        .contains(&chart.now)
        .then(|| column(chart.now, range, layout.axis));
    let preds = chart.predecessors();
    for (i, n) in chart.nodes.iter().enumerate() {
        let mut cells = vec![' '; layout.axis];
        if let Some(c) = now {
            cells[c] = NOW;
        }
        if let Some(span) = n.span {
            let (a, b) = bar_columns(span, range, layout.axis);
            let glyph = if n.done {
                BAR_DONE
            } else if n.late {
                BAR_LATE
            } else {
                BAR
            };
            for cell in &mut cells[a..=b] {
                *cell = glyph;
            }
        }
        let mut line = format!(
            "{:>w$} {}{} {}",
            i + 1,
            mark(n),
            pad(&label(n), layout.label_width),
            cells.into_iter().collect::<String>(),
            w = layout.number_width
        );
        if layout.after_width > 0 {
            line.push(' ');
            line.push_str(&truncate(&after_text(&preds[i]), layout.after_width));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let legend = format!(
        "{BAR} to do  {BAR_DONE} done  {BAR_LATE}/! late  ~ at risk  {NOW} now  ←n: after row n"
    );
    out.push_str(&truncate(&legend, layout.width));
    out.push('\n');
    out
}

fn mark(n: &Node) -> char {
    if n.late {
        '!'
    } else if n.at_risk {
        '~'
    } else {
        ' '
    }
}

fn label(n: &Node) -> String {
    format!("{}{}", " ".repeat(indent(n.depth)), n.name)
}

/// Text as XML character data or an attribute value.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 takes no other control characters.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// The SVG's geometry, in pixels.
const SVG_LABEL: f64 = 280.0;
const SVG_AXIS: f64 = 900.0;
const SVG_ROW: f64 = 22.0;
const SVG_HEAD: f64 = 36.0;
const SVG_MARGIN: f64 = 12.0;

/// The spacing of the axis ticks: the first of an hour, six hours, a day, a week, thirty days
/// or a year that leaves at most twelve ticks.
fn tick_step(range: (i64, i64)) -> i64 {
    let span = range.1 - range.0;
    [
        3_600,
        6 * 3_600,
        86_400,
        7 * 86_400,
        30 * 86_400,
        365 * 86_400,
    ]
    .into_iter()
    .find(|step| span / step <= 12)
    .unwrap_or(365 * 86_400 * ((span / (365 * 86_400)) / 12 + 1))
}

/// The chart as a standalone SVG document titled `title`: a row per node with its name, its
/// bar (classes `bar`, and `done`, `late` or `at-risk`), an arrow from each predecessor's end to
/// its successor's start (class `dependency`), the axis' ticks and a line at now.
pub fn svg(chart: &Chart, title: &str) -> String {
    let rows = chart.nodes.len().max(1) as f64;
    let width = SVG_MARGIN * 2.0 + SVG_LABEL + SVG_AXIS;
    let height = SVG_HEAD + rows * SVG_ROW + SVG_MARGIN * 2.0 + 20.0;
    let mut s = String::new();
    let _ = write!(
        s,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <title>{}</title>\n\
         <style>\n\
         .bar {{ fill: #4a78c2; }} .bar.done {{ fill: #a9bddf; }} .bar.late {{ fill: #c83c3c; }} \
         .bar.at-risk {{ fill: #e09a26; }} .dependency {{ stroke: #555; fill: none; stroke-width: 1.2; }} \
         .tick {{ stroke: #ddd; }} .now {{ stroke: #2a2; stroke-dasharray: 4 3; }} .late-label {{ fill: #c83c3c; font-weight: bold; }}\n\
         </style>\n\
         <defs><marker id=\"arrow\" viewBox=\"0 0 8 8\" refX=\"8\" refY=\"4\" markerWidth=\"8\" markerHeight=\"8\" orient=\"auto\">\
         <path d=\"M0,0 L8,4 L0,8 z\" fill=\"#555\"/></marker></defs>\n\
         <rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"white\"/>\n\
         <text x=\"{SVG_MARGIN}\" y=\"20\" font-size=\"14\" font-weight=\"bold\">{}</text>\n",
        xml(title),
        xml(title),
    );
    let x0 = SVG_MARGIN + SVG_LABEL;
    let top = SVG_HEAD;
    let bottom = SVG_HEAD + rows * SVG_ROW;
    let range = chart.range();
    let x_of = |t: i64| -> f64 {
        let (from, until) = range.expect("only called with a range");
        x0 + (t.clamp(from, until) - from) as f64 * SVG_AXIS / (until - from).max(1) as f64
    };
    if let Some(r) = range {
        let step = tick_step(r);
        let mut t = r.0.div_euclid(step) * step;
        if t < r.0 {
            t += step;
        }
        while t <= r.1 {
            let x = x_of(t);
            let _ = writeln!(
                s,
                "<line class=\"tick\" x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{bottom}\"/>\
                 <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#666\">{}</text>",
                top - 4.0,
                xml(&stamp(t, r))
            );
            t += step;
        }
        if (r.0..=r.1).contains(&chart.now) {
            let x = x_of(chart.now);
            let _ = writeln!(
                s,
                "<line class=\"now\" x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{bottom}\"><title>now</title></line>"
            );
        }
    }
    let y_of = |i: usize| top + i as f64 * SVG_ROW;
    for (i, n) in chart.nodes.iter().enumerate() {
        let y = y_of(i);
        let name = truncate(&n.name, 44);
        let class = if n.late { " class=\"late-label\"" } else { "" };
        let flag = if n.late {
            " (late)"
        } else if n.at_risk {
            " (at risk)"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{:.1}\"{class}>{}{}</text>",
            SVG_MARGIN + indent(n.depth) as f64 * 5.0,
            y + SVG_ROW * 0.7,
            xml(&name),
            flag
        );
        if let (Some(span), Some(_)) = (n.span, range) {
            let state = if n.done {
                " done"
            } else if n.late {
                " late"
            } else if n.at_risk {
                " at-risk"
            } else {
                ""
            };
            let (a, b) = (x_of(span.0), x_of(span.1));
            let fmt = |t: i64| {
                DateTime::<Utc>::from_timestamp(t, 0)
                    .unwrap_or_default()
                    .format("%Y-%m-%d %H:%M")
                    .to_string()
            };
            let _ = writeln!(
                s,
                "<rect class=\"bar{state}\" data-id=\"{}\" x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{:.1}\" rx=\"2\">\
                 <title>{}: {} to {}{}</title></rect>",
                n.id,
                y + 4.0,
                (b - a).max(2.0),
                SVG_ROW - 8.0,
                xml(&n.name),
                fmt(span.0),
                fmt(span.1),
                flag
            );
        }
    }
    for &(p, q) in &chart.links {
        let (Some(pn), Some(qn)) = (chart.nodes.get(p), chart.nodes.get(q)) else {
            continue;
        };
        let (Some(ps), Some(qs), Some(_)) = (pn.span, qn.span, range) else {
            continue;
        };
        let (x1, y1) = (x_of(ps.1), y_of(p) + SVG_ROW / 2.0);
        let (x2, y2) = (x_of(qs.0), y_of(q) + SVG_ROW / 2.0);
        let bend = 12.0;
        let _ = writeln!(
            s,
            "<path class=\"dependency\" data-from=\"{}\" data-to=\"{}\" d=\"M{x1:.1},{y1:.1} C{:.1},{y1:.1} {:.1},{y2:.1} {x2:.1},{y2:.1}\" marker-end=\"url(#arrow)\"/>",
            pn.id,
            qn.id,
            x1 + bend,
            x2 - bend,
        );
    }
    s.push_str("</svg>\n");
    s
}

// ---- the command --------------------------------------------------------------------------

pub fn command() -> Command {
    Command::new("gantt")
        .about("Draws an order's schedule: a bar per node on a time axis, dependencies, late nodes marked")
        .long_about(
            "Draws the schedule of an order (or of any deliverable's subtree): a row per node,\n\
             indented under its parent, with its scheduled span as a bar on a time axis, the rows\n\
             of its predecessors after it (←n), and late (!, ▓) and at-risk (~) nodes marked.\n\
             On a terminal it fits the terminal's width, else 80 columns (or --width).\n\
             --format svg writes a standalone SVG file instead (to --out FILE, or stdout).",
        )
        .arg(
            Arg::new("id")
                .required(true)
                .value_name("ORDER")
                .help("The order (or any deliverable: its subtree)"),
        )
        .arg(
            Arg::new("format")
                .long("format")
                .value_name("FORMAT")
                .value_parser(["text", "svg"])
                .default_value("text")
                .help("text (for the terminal) or svg (a file a browser opens)"),
        )
        .arg(
            Arg::new("width")
                .long("width")
                .value_name("COLUMNS")
                .value_parser(clap::value_parser!(u16).range(MIN_WIDTH as i64..=1000))
                .help("Columns of the text drawing (default: the terminal's, else 80)"),
        )
        .arg(
            Arg::new("out")
                .long("out")
                .value_name("FILE")
                .help("Write the drawing to FILE instead of stdout"),
        )
        .after_help(
            "Example:\n  prodops deliverable gantt 0191c3a8-... --format svg --out order.svg",
        )
}

/// The fields of each node the chart reads (`GET /deliverable/{id}/hierarchy?select=`).
const SELECT: &[&str] = &[
    "parentId",
    "name",
    "identifier",
    "isArchived",
    "schedule",
    "progress",
    "computed.isLate",
    "computed.isAtRisk",
];

/// Ids per dependency query (`POST /dependency/query`, filtered by predecessor).
const IDS_PER_QUERY: usize = 500;

pub async fn gantt(ctx: &CommandContext, args: &ArgMatches) -> CmdResult {
    let raw = args
        .get_one::<String>("id")
        .ok_or_else(|| Fail::usage("the order id is required"))?;
    let id = Uuid::parse_str(raw.trim()).map_err(|_| Fail::usage(format!("{raw}: not a UUID")))?;
    let chart = read_chart(ctx, id).await?;
    let drawing = match args.get_one::<String>("format").map(String::as_str) {
        Some("svg") => {
            let title = chart
                .nodes
                .first()
                .map_or_else(|| id.to_string(), |n| format!("Schedule of {}", n.name));
            svg(&chart, &title)
        }
        _ => {
            let width = match args.get_one::<u16>("width") {
                Some(w) => usize::from(*w),
                None => terminal_width(),
            };
            text(&chart, &layout(&chart, width))
        }
    };
    match args.get_one::<String>("out") {
        Some(file) => {
            std::fs::write(file, drawing).map_err(|e| Fail::io(&format!("writing {file}"), e))
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(drawing.as_bytes())
                .and_then(|()| out.flush())
                .map_err(|e| Fail::io("writing the drawing", e))
        }
    }
}

/// The terminal's width, or 80 columns when stdout is not a terminal.
fn terminal_width() -> usize {
    let stdout = std::io::stdout();
    if stdout.is_terminal()
        && let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size_of(&stdout)
        && usize::from(w) >= MIN_WIDTH
    {
        return usize::from(w);
    }
    80
}

fn epoch(v: Option<&Value>) -> Option<i64> {
    v.and_then(Value::as_str)
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.timestamp())
}

/// The subtree of `id` (archived nodes and what hangs under them left out) and the
/// dependencies among its nodes.
async fn read_chart(ctx: &CommandContext, id: Uuid) -> CmdResult<Chart> {
    let mut nodes: Vec<Node> = Vec::new();
    let mut index: HashMap<Uuid, usize> = HashMap::new();
    let mut values = ctx.client.deliverable_hierarchy_stream(id, SELECT).await?;
    while let Some(text) = values.next_value().await? {
        let v: Value = serde_json::from_slice(&text)
            .map_err(|e| Fail::usage(format!("reading the hierarchy of {id}: {e}")))?;
        let Some(node_id) = v
            .get("id")
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok())
        else {
            continue;
        };
        if v.get("isArchived").and_then(Value::as_bool) == Some(true) {
            continue;
        }
        let parent = v
            .get("parentId")
            .and_then(Value::as_str)
            .and_then(|s| Uuid::parse_str(s).ok());
        // Parents come first: a node whose parent was left out (archived) is left out too.
        let depth = match parent {
            _ if node_id == id => 0,
            Some(p) => match index.get(&p) {
                Some(&i) => nodes[i].depth + 1,
                None => continue,
            },
            None => continue,
        };
        let schedule = v.get("schedule");
        let span = match (
            epoch(schedule.and_then(|s| s.get("startDate"))),
            epoch(schedule.and_then(|s| s.get("endDate"))),
        ) {
            (Some(a), Some(b)) => Some((a.min(b), a.max(b))),
            _ => None,
        };
        let name = v.get("name").and_then(Value::as_str).unwrap_or_default();
        let identifier = v
            .get("identifier")
            .and_then(Value::as_str)
            .unwrap_or_default();
        index.insert(node_id, nodes.len());
        nodes.push(Node {
            id: node_id,
            name: if identifier.is_empty() {
                name.to_string()
            } else {
                format!("{name} ({identifier})")
            },
            depth,
            span,
            late: v.get("computedIsLate").and_then(Value::as_bool) == Some(true),
            at_risk: v.get("computedIsAtRisk").and_then(Value::as_bool) == Some(true),
            done: v.pointer("/progress/status").and_then(Value::as_str) == Some("done"),
        });
    }
    if nodes.is_empty() {
        return Err(Fail::rejected(format!("{id}: archived, nothing to draw")));
    }
    let ids: Vec<String> = nodes.iter().map(|n| n.id.to_string()).collect();
    let mut links = Vec::new();
    let deps = ctx.client.resource::<Dependency>();
    for chunk in ids.chunks(IDS_PER_QUERY) {
        let mut page = 1;
        loop {
            let mut q = Query::new()
                .filter("predecessorId", json!(chunk))
                .page_size(10_000);
            q.page = Some(page);
            let got = deps.query(&q).await?;
            let n = got.values.len() as u64;
            for d in got.values {
                if let (Some(&p), Some(&s)) =
                    (index.get(&d.predecessor_id), index.get(&d.successor_id))
                {
                    links.push((p, s));
                }
            }
            if n == 0 || page * 10_000 >= got.total_count {
                break;
            }
            page += 1;
        }
    }
    links.sort_unstable();
    links.dedup();
    Ok(Chart {
        nodes,
        links,
        now: Utc::now().timestamp(),
    })
}

#[cfg(test)]
mod tests;
