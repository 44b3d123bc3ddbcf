//! Diagnostics on very long lines. ariadne prints every line a label touches in full, underlined: one
//! label in a one-line initializer of a million elements printed 4 MB, and the 500 diagnostics that
//! `ptx-jit lint` shows of a file printed gigabytes. A diagnostic whose labels touch a line longer
//! than [`LONG`] bytes is drawn here instead, in ariadne's look, each line cut to a window around its
//! labels (`…` marks a cut): the output is bounded, and the cost is that of the windows.

use super::{Diagnostic, Severity};
use crate::span::{LineIndex, Span};
use ariadne::{Color, Fmt};
use std::fmt::Write;

/// Lines up to this many bytes are printed whole, by ariadne.
const LONG: usize = 240;
/// Bytes of text kept on each side of a line's labels.
const CONTEXT: usize = 40;
/// At most this many bytes from the first label of a line on; labels further right are drawn at the
/// window's end.
const WIDTH: usize = 120;

struct Label<'d> {
    span: Span,
    message: &'d str,
    color: Color,
}

/// The primary label first, spans clamped to the text.
fn labels<'d>(d: &'d Diagnostic, src: &str) -> Vec<Label<'d>> {
    let clamp = |s: Span| {
        let len = src.len() as u32;
        let start = s.start.min(len);
        Span {
            start,
            end: s.end.clamp(start, len),
        }
    };
    let primary = if d.is_error() { Color::Red } else { Color::Yellow };
    let mut v = vec![Label {
        span: clamp(d.span),
        message: d.label.as_deref().unwrap_or(""),
        color: primary,
    }];
    v.extend(d.secondary.iter().map(|(s, m)| Label {
        span: clamp(*s),
        message: m,
        color: Color::Blue,
    }));
    v
}

/// Whether ariadne would print a line longer than [`LONG`]: of each label, it prints the line where
/// the label starts, the next one if the label goes on past it, and the line where it ends.
pub(super) fn touches_long_line(d: &Diagnostic, idx: &LineIndex<'_>) -> bool {
    labels(d, idx.src()).iter().any(|l| {
        let first = idx.line(l.span.start);
        let last = idx.line(l.span.end.saturating_sub(1).max(l.span.start));
        [first, (first + 1).min(last), last]
            .iter()
            .any(|&k| idx.line_range(k).len() > LONG)
    })
}

/// The largest char boundary at or below `k`, and the smallest at or above it.
fn floor(s: &str, mut k: usize) -> usize {
    while !s.is_char_boundary(k) {
        k -= 1;
    }
    k
}
fn ceil(s: &str, mut k: usize) -> usize {
    while !s.is_char_boundary(k) {
        k += 1;
    }
    k
}

/// One source line cut to a window: its text as shown, and the display column of each byte offset of
/// the line within the window (tabs are 4 columns, as ariadne draws them; other control characters 1).
struct Window {
    text: String,
    /// (byte offset in the line, column) at each char of the window, and one past its end.
    cols: Vec<(usize, usize)>,
}

impl Window {
    fn new(line: &str, lo: usize, hi: usize) -> Window {
        let (a, b) = (floor(line, lo), ceil(line, hi.min(line.len())));
        let mut w = Window {
            text: String::new(),
            cols: vec![],
        };
        let mut col = 0;
        if a > 0 {
            w.text.push('…');
            col += 1;
        }
        for (k, c) in line[a..b].char_indices() {
            w.cols.push((a + k, col));
            match c {
                '\t' => w.text.push_str("    "),
                c if c.is_control() => w.text.push(' '),
                c => w.text.push(c),
            }
            col += if c == '\t' { 4 } else { 1 };
        }
        w.cols.push((b, col));
        if b < line.len() {
            w.text.push('…');
        }
        w
    }

    /// The column of a byte offset of the line, clamped to the window.
    fn col(&self, at: usize) -> usize {
        let k = self.cols.partition_point(|&(b, _)| b < at);
        self.cols[k.min(self.cols.len() - 1)].1
    }
}

pub(super) fn render(d: &Diagnostic, file: &str, idx: &LineIndex<'_>, color: bool) -> String {
    let paint = |c: Color| Some(c).filter(|_| color);
    let margin = paint(Color::Fixed(246));
    let labels = labels(d, idx.src());
    // Each label is drawn on the line where it starts, as far as that line goes.
    let mut lines: Vec<usize> = labels.iter().map(|l| idx.line(l.span.start)).collect();
    lines.sort_unstable();
    lines.dedup();
    let width = (lines[lines.len() - 1] + 1).to_string().len();
    let pad = " ".repeat(width + 2);
    let bar = |o: &mut String| {
        let _ = write!(o, "{pad}{}", '│'.fg(margin));
    };

    let mut o = String::new();
    let (kind, kind_color) = match d.severity {
        Severity::Error => ("Error", Color::Red),
        Severity::Warning => ("Warning", Color::Yellow),
    };
    let id = format!("[{}] {kind}:", d.code.as_str());
    let _ = writeln!(o, "{} {}", id.fg(paint(kind_color)), d.message);
    let (l, c) = idx.line_col(labels[0].span.start);
    let _ = writeln!(
        o,
        "{pad}{}{}{} {file}:{l}:{c} {}",
        '╭'.fg(margin),
        '─'.fg(margin),
        '['.fg(margin),
        ']'.fg(margin)
    );
    bar(&mut o);
    o.push('\n');

    for (n, &line) in lines.iter().enumerate() {
        if n > 0 && lines[n - 1] + 1 < line {
            let _ = writeln!(o, "{pad}{}", '┆'.fg(paint(Color::Fixed(240))));
        }
        let range = idx.line_range(line);
        let text = &idx.src()[range.clone()];
        // Byte ranges within the line; a label that runs on past the line is cut at its end.
        let mut here: Vec<(&Label, usize, usize)> = labels
            .iter()
            .filter(|l| idx.line(l.span.start) == line)
            .map(|l| {
                let a = l.span.start as usize - range.start;
                (
                    l,
                    a,
                    (l.span.end as usize).min(range.end).max(range.start + a) - range.start,
                )
            })
            .collect();
        let lo = here.iter().map(|h| h.1).min().unwrap_or(0);
        let hi = here.iter().map(|h| h.2).max().unwrap_or(0).clamp(lo + 1, lo + WIDTH);
        let window = if text.len() > LONG {
            Window::new(text, lo.saturating_sub(CONTEXT), hi + CONTEXT)
        } else {
            Window::new(text, 0, text.len())
        };
        let _ = writeln!(o, " {:>width$} {} {}", line + 1, '│'.fg(margin), window.text);

        // Display columns: [start, end) of each label's underline and the column of its `┬`.
        here.sort_by_key(|h| h.1);
        let mut marks: Vec<(&Label, usize, usize, usize)> = here
            .iter()
            .map(|&(l, a, b)| {
                let start = window.col(a);
                let end = window.col(b).max(start + 1);
                (l, start, end, start + (end - start) / 2)
            })
            .collect();
        // Messages hang from the `┬`s left to right, one column each: a label whose `┬` would share
        // a column with another's (the same span, one label inside another, labels clamped to the
        // window's end) moves its own right.
        marks.sort_by_key(|m| m.3);
        for k in 1..marks.len() {
            marks[k].3 = marks[k].3.max(marks[k - 1].3 + 1);
        }
        let last = marks.iter().map(|m| m.2.max(m.3 + 1)).max().unwrap_or(0);
        bar(&mut o);
        o.push(' ');
        for col in 0..last {
            match marks
                .iter()
                .find(|m| m.3 == col)
                .or_else(|| marks.iter().find(|m| m.1 <= col && col < m.2))
            {
                Some(m) => {
                    let _ = write!(o, "{}", if m.3 == col { '┬' } else { '─' }.fg(paint(m.0.color)));
                }
                None => o.push(' '),
            }
        }
        o.push('\n');
        // Messages from the rightmost label leftwards, with a `│` down from each label still to come.
        let said: Vec<_> = marks.iter().filter(|m| !m.0.message.is_empty()).collect();
        for (k, m) in said.iter().enumerate().rev() {
            if k + 1 < said.len() {
                bar(&mut o);
                o.push(' ');
                stems(&mut o, &said[..=k], paint);
                o.push('\n');
            }
            bar(&mut o);
            o.push(' ');
            stems(&mut o, &said[..k], paint);
            let before = said[..k].last().map_or(0, |p| p.3 + 1);
            o.push_str(&" ".repeat(m.3 - before));
            let arrow: String = std::iter::once('╰')
                .chain(std::iter::repeat_n('─', last + 1 - m.3))
                .collect();
            let _ = writeln!(o, "{} {}", arrow.fg(paint(m.0.color)), m.0.message);
        }
    }
    for (word, text) in [("Help", &d.help), ("Note", &d.note)] {
        if let Some(t) = text {
            bar(&mut o);
            o.push_str(" \n");
            bar(&mut o);
            let _ = writeln!(o, " {}: {t}", word.fg(paint(Color::Fixed(115))));
        }
    }
    let _ = writeln!(o, "{}", format!("{}╯", "─".repeat(width + 2)).fg(margin));
    o
}

/// A `│` under the `┬` of each of `marks` (sorted by column), nothing after the last.
fn stems(o: &mut String, marks: &[&(&Label, usize, usize, usize)], paint: impl Fn(Color) -> Option<Color>) {
    let mut col = 0;
    for m in marks {
        o.push_str(&" ".repeat(m.3 - col));
        let _ = write!(o, "{}", '│'.fg(paint(m.0.color)));
        col = m.3 + 1;
    }
}

#[cfg(test)]
mod tests {
    use crate::span::LineIndex;
    use crate::Diagnostic;

    /// A module whose fourth line is an initializer of `n` elements, one of them a bad token.
    fn huge_initializer(n: usize) -> String {
        let mut elements = vec!["1"; n];
        elements[n / 2] = "#";
        format!(
            ".version 8.5\n.target sm_80\n.address_size 64\n.global .u32 a[{n}] = {{{}}};\n",
            elements.join(",")
        )
    }

    #[test]
    fn a_label_on_a_huge_line_shows_a_window() {
        let src = huge_initializer(1_000_000);
        let (_, diags) = crate::parse_and_check(&src);
        let d = &diags[0];
        assert_eq!(d.code, crate::Code::P0001);
        let text = d.render("big.ptx", &src, false);
        assert!(text.len() < 1000, "{} bytes", text.len());
        let header = format!("big.ptx:4:{}", src.lines().nth(3).unwrap().find('#').unwrap() + 1);
        assert!(text.contains(&header), "{text}");
        let line = text.lines().find(|l| l.starts_with(" 4 │ ")).expect("the source line");
        assert_eq!(line, format!(" 4 │ …{}#{}…", "1,".repeat(20), ",1".repeat(20)));
        // The underline's `┬` sits under the `#`.
        let under = text.lines().find(|l| l.contains('┬')).unwrap();
        assert_eq!(
            under.chars().position(|c| c == '┬'),
            line.chars().position(|c| c == '#')
        );
    }

    #[test]
    fn every_diagnostic_of_a_huge_line_is_small() {
        let src = huge_initializer(1_000_000);
        let (_, diags) = crate::parse_and_check(&src);
        assert!(diags.len() >= 2, "{diags:?}");
        let mut total = 0;
        Diagnostic::render_each(&diags, "big.ptx", &src, true, |r| total += r.len());
        assert!(
            total < 2000 * diags.len(),
            "{total} bytes for {} diagnostics",
            diags.len()
        );
    }

    #[test]
    fn short_lines_keep_ariadnes_rendering() {
        let src = ".version 8.5\n.target sm_80\n.global .u32 a[3] = {1,#,1};\n";
        let (_, diags) = crate::parse_and_check(src);
        assert!(!super::touches_long_line(&diags[0], &LineIndex::new(src)));
        let text = diags[0].render("small.ptx", src, false);
        assert!(text.contains(" 3 │ .global .u32 a[3] = {1,#,1};"), "{text}");
    }

    #[test]
    fn labels_on_two_lines_one_long() {
        let long = format!("// {}", "x".repeat(1000));
        let src = format!("{long}\n.reg .b32 %r;\n{long}\n");
        let second = src.find("%r").unwrap();
        let d = Diagnostic::error(
            crate::Code::P0202,
            crate::span::Span::new(src.len() - 10, src.len() - 9),
            "m",
        )
        .label("here")
        .secondary(crate::span::Span::new(second, second + 2), "first")
        .help("rename it");
        let text = d.render("f.ptx", &src, false);
        assert_eq!(
            text,
            format!(
                "[P0202] Error: m
   ╭─[ f.ptx:3:995 ]
   │
 2 │ .reg .b32 %r;
   │           ─┬
   │            ╰── first
 3 │ …{x}x{y}
   │                                          ┬
   │                                          ╰── here
   │ \n   │ Help: rename it
───╯
",
                x = "x".repeat(40),
                // The label is 9 bytes before the line's end: 8 more are shown, and no `…`.
                y = "x".repeat(8)
            )
        );
    }

    /// Labels whose `┬` fall in one column (the same span, one inside another) each get their own
    /// column instead of an overflowing subtraction.
    #[test]
    fn labels_sharing_a_column_on_a_long_line() {
        let src = format!(".global .u32 a[3] = {{{}}};\n", "1,".repeat(200));
        let s = |a: usize, b: usize| crate::span::Span::new(a, b);
        for (p, q) in [((100, 101), (100, 101)), ((50, 90), (60, 61)), ((60, 61), (50, 90))] {
            let d = Diagnostic::error(crate::Code::P0001, s(p.0, p.1), "m")
                .label("first")
                .secondary(s(q.0, q.1), "second");
            let text = d.render("x.ptx", &src, false);
            assert!(text.contains("first") && text.contains("second"), "{text}");
            let _ = LineIndex::new(&src);
        }
    }
}
