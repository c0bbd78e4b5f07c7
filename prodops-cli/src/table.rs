//! The table a person reads (`-o table`, the default on a terminal): one line per record, sized
//! to the terminal's width.
//!
//! - Columns: `--select`'s; else, with `--wide`, every declared field with whole ids (lines may
//!   then be wider than the terminal, as kubectl's `-o wide`); else the resource's default
//!   columns (`Fields::defaults`: name, status, key fields, the id).
//! - Fitting: columns are as wide as their widest cell; when the line is wider than the
//!   terminal, the widest text cells are cut with an ellipsis (`…`) until it fits; ids are never
//!   cut; when even that does not fit, columns are left out from the right (said on stderr).
//! - Ids: outside `--wide` and `--select`, a UUID shows as its last 8 hex digits (the random part
//!   of a UUIDv7; its first digits are a timestamp that records made together share).
//! - Width: the terminal's; where there is none, `$COLUMNS`; a terminal that reports 0 is 80.

use std::io::{IsTerminal, Write};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::fail::{CmdResult, Fail};

/// The gap between two columns.
const GAP: usize = 2;
/// The narrowest a cut text column gets (its text then one character and the ellipsis).
const MIN_TEXT: usize = 4;
/// Rows whose widths decide the layout; later rows are cut to it as they stream.
pub const LAYOUT_ROWS: usize = 200;

/// The width to fit: the terminal's (0 counts as none), else `$COLUMNS`, else 80.
pub fn terminal_width() -> usize {
    let stdout = std::io::stdout();
    if stdout.is_terminal()
        && let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size_of(&stdout)
        && w > 0
    {
        return w as usize;
    }
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|w| *w > 0)
        .unwrap_or(80)
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36 && uuid::Uuid::parse_str(s).is_ok()
}

/// A cell's text on one line: line breaks and tabs become spaces; with `short_ids`, a UUID is
/// its last 8 hex digits.
pub fn display(text: String, short_ids: bool) -> String {
    if short_ids && is_uuid(&text) {
        return text[28..].to_string();
    }
    if text.contains(['\n', '\r', '\t']) {
        text.replace(['\n', '\r', '\t'], " ")
    } else {
        text
    }
}

/// `text` cut to `width` columns with an ellipsis, or padded to it.
fn fit(text: &str, width: usize, pad: bool) -> String {
    let w = text.width();
    if w <= width {
        let mut s = text.to_string();
        if pad {
            s.extend(std::iter::repeat_n(' ', width - w));
        }
        return s;
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let cw = c.width().unwrap_or(0);
        if used + cw + 1 > width {
            break;
        }
        out.push(c);
        used += cw;
    }
    out.push('…');
    used += 1;
    if pad {
        out.extend(std::iter::repeat_n(' ', width.saturating_sub(used)));
    }
    out
}

/// Which columns show, and how wide.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// (column index, width), in order.
    pub shown: Vec<(usize, usize)>,
    /// Columns left out for the width.
    pub hidden: Vec<usize>,
}

/// The layout of `headers` over `rows` within `width` (`None`: no limit). A column whose cells
/// are all ids (`whole`) is never cut.
pub fn layout(headers: &[String], rows: &[Vec<String>], width: Option<usize>) -> Layout {
    let n = headers.len();
    let mut natural: Vec<usize> = headers.iter().map(|h| h.width()).collect();
    let mut whole = vec![true; n];
    let mut any = vec![false; n];
    for row in rows {
        for (i, c) in row.iter().enumerate() {
            natural[i] = natural[i].max(c.width());
            if !c.is_empty() {
                any[i] = true;
                whole[i] &=
                    is_uuid(c) || (c.len() == 8 && c.bytes().all(|b| b.is_ascii_hexdigit()));
            }
        }
    }
    for i in 0..n {
        whole[i] &= any[i];
    }
    let mut shown: Vec<usize> = (0..n).collect();
    let mut hidden = Vec::new();
    let Some(width) = width else {
        return Layout {
            shown: shown.into_iter().map(|i| (i, natural[i])).collect(),
            hidden,
        };
    };
    let mut widths = natural.clone();
    loop {
        let total: usize =
            shown.iter().map(|&i| widths[i]).sum::<usize>() + GAP * shown.len().saturating_sub(1);
        if total <= width {
            break;
        }
        // Cut the widest text column by one.
        let widest = shown
            .iter()
            .copied()
            .filter(|&i| !whole[i] && widths[i] > MIN_TEXT.min(natural[i]))
            .max_by_key(|&i| (widths[i], std::cmp::Reverse(i)));
        if let Some(i) = widest {
            widths[i] -= 1;
            continue;
        }
        // Nothing left to cut: leave out the last column (an id last of all).
        if shown.len() <= 1 {
            let i = shown[0];
            widths[i] = width.max(1);
            break;
        }
        let pos = shown
            .iter()
            .rposition(|&i| !whole[i] && i != shown[0])
            .or_else(|| shown.iter().rposition(|&i| i != shown[0]))
            .expect("two columns");
        hidden.push(shown.remove(pos));
    }
    hidden.sort();
    Layout {
        shown: shown.into_iter().map(|i| (i, widths[i])).collect(),
        hidden,
    }
}

/// Writes one line of cells in the layout (the last column not padded).
pub fn write_line(out: &mut dyn Write, layout: &Layout, cells: &[String]) -> CmdResult {
    let mut line = String::new();
    let last = layout.shown.len().saturating_sub(1);
    for (k, &(i, w)) in layout.shown.iter().enumerate() {
        if k > 0 {
            line.push_str(&" ".repeat(GAP));
        }
        line.push_str(&fit(
            cells.get(i).map(String::as_str).unwrap_or(""),
            w,
            k < last,
        ));
    }
    writeln!(out, "{}", line.trim_end()).map_err(|e| Fail::io("writing the output", e))
}

/// Says on stderr which columns the width left out.
pub fn report_hidden(headers: &[String], layout: &Layout) {
    if layout.hidden.is_empty() {
        return;
    }
    let names: Vec<&str> = layout.hidden.iter().map(|&i| headers[i].as_str()).collect();
    eprintln!(
        "not shown for the terminal's width: {}; --select or --wide shows them",
        names.join(", ")
    );
}

/// Writes one record as field/value lines within `width`: values cut with an ellipsis, an id
/// that does not fit shown short rather than cut.
pub fn write_record(out: &mut dyn Write, pairs: &[(String, String)], width: usize) -> CmdResult {
    let field_w = pairs
        .iter()
        .map(|(f, _)| f.width())
        .max()
        .unwrap_or(0)
        .min(width / 2);
    let value_w = width.saturating_sub(field_w + GAP).max(MIN_TEXT);
    for (f, v) in pairs {
        let v = display(v.clone(), false);
        let v = if is_uuid(&v) && v.len() > value_w {
            v[28..].to_string()
        } else {
            fit(&v, value_w, false)
        };
        let line = format!("{}{}{v}", fit(f, field_w, true), " ".repeat(GAP));
        writeln!(out, "{}", line.trim_end()).map_err(|e| Fail::io("writing the output", e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn a_table_fits_its_width_cutting_text_never_ids() {
        let headers = s(&["name", "status", "id"]);
        let rows = vec![
            s(&["A rather long worker name indeed", "active", "1c2e7e60"]),
            s(&["Bob", "inactive", "36e48c65"]),
        ];
        for width in [80, 40, 30, 24] {
            let l = layout(&headers, &rows, Some(width));
            let mut buf = Vec::new();
            write_line(&mut buf, &l, &headers).unwrap();
            for r in &rows {
                write_line(&mut buf, &l, r).unwrap();
            }
            let text = String::from_utf8(buf).unwrap();
            for line in text.lines() {
                assert!(line.width() <= width, "{width}: {line:?}");
            }
            assert!(
                text.contains("1c2e7e60") && text.contains("36e48c65"),
                "{text}"
            );
        }
        let l = layout(&headers, &rows, Some(30));
        assert!(l.hidden.is_empty(), "{l:?}");
        let l = layout(&headers, &rows, Some(14));
        assert_eq!(l.hidden, [1], "status goes first; the name and the id stay");
    }

    #[test]
    fn cells_are_one_line_and_ids_short() {
        assert_eq!(display("a\nb".into(), true), "a b");
        assert_eq!(
            display("0191c3a8-0000-7000-8000-00000000abcd".into(), true),
            "0000abcd"
        );
        assert_eq!(fit("abcdef", 4, false), "abc…");
        assert_eq!(fit("ab", 4, true), "ab  ");
    }
}
