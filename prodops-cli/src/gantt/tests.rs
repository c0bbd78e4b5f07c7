use proptest::prelude::*;
use quick_xml::Reader;
use quick_xml::events::Event;

use super::*;

const DAY: i64 = 86_400;
const T0: i64 = 1_772_323_200; // 2026-03-01T00:00:00Z

fn node(n: u128, name: &str, depth: usize, span: Option<(i64, i64)>) -> Node {
    Node {
        id: Uuid::from_u128(n),
        name: name.to_string(),
        depth,
        span,
        late: false,
        at_risk: false,
        done: false,
    }
}

fn sample() -> Chart {
    let mut weld = node(2, "Weld the frame", 1, Some((T0, T0 + 3 * DAY)));
    weld.done = true;
    let mut paint = node(
        3,
        "Paint <red> & \"dry\"",
        1,
        Some((T0 + 3 * DAY, T0 + 6 * DAY)),
    );
    paint.late = true;
    let mut pack = node(4, "Pack", 2, Some((T0 + 6 * DAY, T0 + 10 * DAY)));
    pack.at_risk = true;
    Chart {
        nodes: vec![
            node(1, "Order 1001", 0, Some((T0, T0 + 10 * DAY))),
            weld,
            paint,
            pack,
            node(5, "Unscheduled note", 1, None),
        ],
        links: vec![(1, 2), (2, 3)],
        now: T0 + 5 * DAY,
    }
}

#[test]
fn columns_map_the_range_onto_the_axis() {
    let r = (T0, T0 + 10 * DAY);
    assert_eq!(column(T0, r, 50), 0);
    assert_eq!(
        column(T0 + 10 * DAY, r, 50),
        49,
        "the end is in the last column"
    );
    assert_eq!(column(T0 + 5 * DAY, r, 50), 25);
    assert_eq!(column(T0 - DAY, r, 50), 0, "clamped");
    // A span covers from its start's column to its last second's, at least one column.
    assert_eq!(bar_columns((T0, T0 + 2 * DAY), r, 50), (0, 9));
    assert_eq!(bar_columns((T0 + 2 * DAY, T0 + 2 * DAY), r, 50), (10, 10));
}

#[test]
fn truncation_keeps_within_the_width_and_says_it_cut() {
    assert_eq!(truncate("Weld the frame", 20), "Weld the frame");
    assert_eq!(truncate("Weld the frame", 8), "Weld th…");
    assert_eq!(
        truncate("溶接フレーム", 5),
        "溶接…",
        "wide characters count two"
    );
    assert_eq!(truncate("abc", 0), "");
}

#[test]
fn the_drawing_fits_80_columns_with_bars_marks_and_predecessors() {
    let chart = sample();
    let l = layout(&chart, 80);
    assert_eq!(l.width, 80);
    let drawn = text(&chart, &l);
    for line in drawn.lines() {
        assert!(line.width() <= 80, "{} columns: {line:?}", line.width());
    }
    let lines: Vec<&str> = drawn.lines().collect();
    assert_eq!(lines.len(), 1 + 5 + 1, "dates, a row per node, the legend");
    assert!(
        lines[0].contains("2026-03-01") && lines[0].contains("2026-03-11"),
        "{}",
        lines[0]
    );
    assert!(lines[2].contains('░'), "done: {}", lines[2]);
    assert!(
        lines[3].starts_with("3 !") && lines[3].contains('▓'),
        "late: {}",
        lines[3]
    );
    assert!(lines[3].ends_with("←2"), "after the weld: {}", lines[3]);
    assert!(lines[4].starts_with("4 ~"), "at risk: {}", lines[4]);
    assert!(!lines[5].contains('█'), "unscheduled: no bar: {}", lines[5]);
    assert!(lines[5].contains('┆'), "now is marked: {}", lines[5]);
    // Bars follow time: each starts where the one before it ends or later.
    let start = |line: &str| line.chars().position(|c| "█░▓".contains(c)).unwrap();
    assert!(start(lines[2]) < start(lines[3]) && start(lines[3]) < start(lines[4]));
}

#[test]
fn a_long_name_gives_way_to_the_axis() {
    let mut chart = sample();
    chart.nodes[1].name = "A very long name of a step that would take the whole line alone".into();
    let l = layout(&chart, 80);
    assert!(l.label_width <= 80 / 3, "{l:?}");
    assert!(l.axis >= 40, "{l:?}");
    let drawn = text(&chart, &l);
    assert!(drawn.contains('…'), "{drawn}");
}

#[test]
fn nothing_scheduled_is_said() {
    let chart = Chart {
        nodes: vec![node(1, "Order", 0, None)],
        links: vec![],
        now: T0,
    };
    let drawn = text(&chart, &layout(&chart, 80));
    assert!(
        drawn.starts_with("(nothing scheduled)\n1  Order"),
        "{drawn}"
    );
}

/// An element's name and attributes.
type Element = (String, Vec<(String, String)>);

/// The SVG's elements in document order, and its text content.
fn parse_svg(doc: &str) -> (Vec<Element>, String) {
    let mut reader = Reader::from_str(doc);
    let mut elements = Vec::new();
    let mut text = String::new();
    loop {
        match reader.read_event().expect("well-formed XML") {
            Event::Start(e) | Event::Empty(e) => {
                let name = String::from_utf8(e.name().as_ref().to_vec()).unwrap();
                let attrs = e
                    .attributes()
                    .map(|a| {
                        let a = a.expect("a well-formed attribute");
                        (
                            String::from_utf8(a.key.as_ref().to_vec()).unwrap(),
                            a.unescape_value().expect("escaped").into_owned(),
                        )
                    })
                    .collect();
                elements.push((name, attrs));
            }
            Event::Text(t) => text.push_str(&t.decode().expect("text")),
            Event::GeneralRef(r) => {
                let name: &[u8] = &r;
                text.push_str(match std::str::from_utf8(name).unwrap() {
                    "amp" => "&",
                    "lt" => "<",
                    "gt" => ">",
                    "quot" => "\"",
                    "apos" => "'",
                    other => panic!("an unknown entity {other}"),
                });
            }
            Event::Eof => break,
            _ => {}
        }
    }
    (elements, text)
}

fn attr<'a>(attrs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    attrs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

#[test]
fn the_svg_is_a_standalone_document_with_a_bar_per_scheduled_node() {
    let chart = sample();
    let doc = svg(&chart, "Schedule of Order 1001");
    let (elements, text) = parse_svg(&doc);
    let (root, root_attrs) = &elements[0];
    assert_eq!(root, "svg");
    assert_eq!(
        attr(root_attrs, "xmlns"),
        Some("http://www.w3.org/2000/svg")
    );
    assert!(attr(root_attrs, "viewBox").is_some());
    let bars: Vec<&Vec<(String, String)>> = elements
        .iter()
        .filter(|(n, a)| n == "rect" && attr(a, "class").is_some_and(|c| c.starts_with("bar")))
        .map(|(_, a)| a)
        .collect();
    assert_eq!(bars.len(), 4, "the unscheduled node has no bar");
    let class_of = |id: u128| {
        bars.iter()
            .find(|a| attr(a, "data-id") == Some(&Uuid::from_u128(id).to_string()))
            .and_then(|a| attr(a, "class"))
            .unwrap()
    };
    assert_eq!(class_of(2), "bar done");
    assert_eq!(class_of(3), "bar late");
    assert_eq!(class_of(4), "bar at-risk");
    // Bars follow time.
    let x = |id: u128| -> f64 {
        bars.iter()
            .find(|a| attr(a, "data-id") == Some(&Uuid::from_u128(id).to_string()))
            .and_then(|a| attr(a, "x"))
            .unwrap()
            .parse()
            .unwrap()
    };
    assert!(x(2) < x(3) && x(3) < x(4));
    let deps: Vec<_> = elements
        .iter()
        .filter(|(n, a)| n == "path" && attr(a, "class") == Some("dependency"))
        .collect();
    assert_eq!(deps.len(), 2);
    assert_eq!(
        attr(&deps[0].1, "data-to"),
        Some(Uuid::from_u128(3).to_string().as_str())
    );
    assert!(
        elements
            .iter()
            .any(|(n, a)| n == "line" && attr(a, "class") == Some("now")),
        "now is inside the range"
    );
    // Names are escaped and read back as they were.
    assert!(text.contains("Paint <red> & \"dry\" (late)"), "{text}");
    assert!(text.contains("Schedule of Order 1001"));
}

fn chart_strategy() -> impl Strategy<Value = Chart> {
    let node = (
        "[a-zA-Z0-9 éü漢字-]{0,60}",
        0usize..12,
        prop::option::of((0i64..400 * DAY, 0i64..40 * DAY)),
        any::<(bool, bool, bool)>(),
    );
    (
        prop::collection::vec(node, 1..60),
        prop::collection::vec((0usize..60, 0usize..60), 0..40),
    )
        .prop_map(|(nodes, links)| {
            let n = nodes.len();
            Chart {
                nodes: nodes
                    .into_iter()
                    .enumerate()
                    .map(|(i, (name, depth, span, (late, at_risk, done)))| Node {
                        id: Uuid::from_u128(i as u128 + 1),
                        name,
                        depth,
                        span: span.map(|(s, d)| (T0 + s, T0 + s + d)),
                        late,
                        at_risk,
                        done,
                    })
                    .collect(),
                links: links
                    .into_iter()
                    .filter(|(a, b)| *a < n && *b < n)
                    .collect(),
                now: T0 + 100 * DAY,
            }
        })
}

proptest! {
    /// Whatever the names, depths, spans and dependencies, no line is wider than the width.
    #[test]
    fn no_line_is_wider_than_the_terminal(chart in chart_strategy(), width in MIN_WIDTH..200usize) {
        let drawn = text(&chart, &layout(&chart, width));
        for line in drawn.lines() {
            prop_assert!(line.width() <= width, "{} > {width}: {line:?}", line.width());
        }
        prop_assert_eq!(drawn.lines().count(), chart.nodes.len() + 2 - usize::from(chart.range().is_none()));
    }

    /// Every chart gives a document an XML parser reads, with a bar per scheduled node.
    #[test]
    fn every_svg_parses(chart in chart_strategy()) {
        let (elements, _) = parse_svg(&svg(&chart, "t"));
        let bars = elements.iter().filter(|(n, a)| n == "rect" && attr(a, "data-id").is_some()).count();
        prop_assert_eq!(bars, chart.nodes.iter().filter(|n| n.span.is_some()).count());
    }
}
