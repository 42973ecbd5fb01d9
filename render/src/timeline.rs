//! A generic SVG timeline: tracks of series, spans and marks on one shared
//! time axis. The chaos report draws a run with it (probes as series, rule
//! instance states and faults as spans, decisions and the recovery point as
//! marks), the `timeline` page a daemon's history; anything else with
//! timestamps can use it the same way.
//!
//! The output is plain SVG 1.1 with inline styles by class, so it renders
//! in any browser without scripts. Every drawn element carries a class
//! (`series`, `span`, `mark`, plus the item's own `class`) and marks a
//! `data-label`, so tests and scripts can find what was drawn.
//!
//! ```
//! use render::timeline::{Mark, Span, Timeline, Track};
//!
//! let svg = Timeline {
//!     title: "storm".into(),
//!     start: 0,
//!     end: 1_000_000_000,
//!     tracks: vec![
//!         Track::Series { label: "paused".into(), points: vec![(0, 0.0), (500_000_000, 0.9)], bounds: (None, Some(0.05)) },
//!         Track::Spans { label: "fault".into(), spans: vec![Span { start: 100_000_000, end: Some(600_000_000), label: "pfc_storm".into(), class: "fault".into() }] },
//!         Track::Marks { label: "actions".into(), marks: vec![Mark { at: 300_000_000, label: "pfcwd.escalate".into(), class: "executed".into() }] },
//!     ],
//! }
//! .svg(800);
//! assert!(svg.starts_with("<svg") && svg.contains(r#"data-label="pfcwd.escalate""#));
//! ```

use std::fmt::Write;
use std::time::{Duration, UNIX_EPOCH};

use crate::{escape, Nanos};

/// A time range on a track.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    /// Start.
    pub start: Nanos,
    /// End; open spans run to the timeline's end.
    pub end: Option<Nanos>,
    /// Text shown in it (and as its tooltip).
    pub label: String,
    /// CSS class (its colour): `fault`, `pending`, `firing`, `resolved`, ….
    pub class: String,
}

/// An instant on a track.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// When.
    pub at: Nanos,
    /// Text (tooltip and `data-label`).
    pub label: String,
    /// CSS class: `executed`, `held`, `dry-run`, `recovered`, ….
    pub class: String,
}

/// One row of the timeline.
#[derive(Debug, Clone, PartialEq)]
pub enum Track {
    /// A line of values, scaled to the track's height; `bounds` (min, max)
    /// are drawn as dashed lines.
    Series {
        /// Row label.
        label: String,
        /// `(time, value)`, in time order.
        points: Vec<(Nanos, f64)>,
        /// Allowed range, if any.
        bounds: (Option<f64>, Option<f64>),
    },
    /// Time ranges.
    Spans {
        /// Row label.
        label: String,
        /// The spans; overlapping spans share the row.
        spans: Vec<Span>,
    },
    /// Instants.
    Marks {
        /// Row label.
        label: String,
        /// The marks.
        marks: Vec<Mark>,
    },
    /// One line of text across the plot, e.g. the names of the series that
    /// did not move and so take no row of their own.
    Note {
        /// Row label.
        label: String,
        /// The text; cut to the plot's width, whole in the tooltip.
        text: String,
    },
}

/// How the time axis is labelled.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Axis {
    /// Seconds from the start (`12.5s`): a run's own time.
    #[default]
    Offset,
    /// UTC wall-clock time (`03:12:30`): for "what happened at 03:12".
    Clock,
}

/// A timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// Title, drawn on top.
    pub title: String,
    /// Left edge.
    pub start: Nanos,
    /// Right edge.
    pub end: Nanos,
    /// Rows, top to bottom.
    pub tracks: Vec<Track>,
}

const LABEL_W: f64 = 170.0;
const ROW_H: f64 = 34.0;
const SERIES_H: f64 = 60.0;
const TOP: f64 = 24.0;
const AXIS_H: f64 = 26.0;

/// The styles the classes refer to, for pages that embed several timelines.
pub const STYLE: &str = "\
.timeline text{font:11px sans-serif;fill:#333}\
.timeline .title{font-weight:bold;font-size:12px}\
.timeline .grid{stroke:#e5e5e5}\
.timeline .series polyline{fill:none;stroke:#1f77b4;stroke-width:1.5}\
.timeline .bound{stroke:#d62728;stroke-dasharray:4 3}\
.timeline .span rect{fill:#bbb;opacity:.85}\
.timeline .span.fault rect{fill:#d62728}\
.timeline .span.pending rect{fill:#ffbf00}\
.timeline .span.firing rect{fill:#ff7f0e}\
.timeline .span.resolved rect{fill:#2ca02c}\
.timeline .mark line{stroke:#555;stroke-width:2}\
.timeline .mark.executed line{stroke:#2ca02c}\
.timeline .mark.held line,.timeline .mark.failed line{stroke:#d62728}\
.timeline .mark.dry-run line{stroke:#9467bd}\
.timeline .mark.recovered line{stroke:#17becf;stroke-width:3}\
.timeline .mark circle{fill:currentColor}";

impl Track {
    /// The row's height, pixels.
    fn height(&self) -> f64 {
        if matches!(self, Track::Series { .. }) {
            SERIES_H
        } else {
            ROW_H
        }
    }
}

impl Timeline {
    fn height(&self) -> f64 {
        TOP + self.tracks.iter().map(Track::height).sum::<f64>() + AXIS_H
    }

    /// The SVG, `width` pixels wide, its axis in seconds from the start.
    pub fn svg(&self, width: u32) -> String {
        self.svg_with_axis(width, Axis::Offset)
    }

    /// The SVG, `width` pixels wide, its axis labelled as `axis` says.
    pub fn svg_with_axis(&self, width: u32, axis: Axis) -> String {
        let w = width.max(300) as f64;
        let h = self.height();
        let plot = Plot {
            start: self.start,
            end: self.end,
            span: (self.end - self.start).max(1) as f64,
            width: w - LABEL_W - 10.0,
        };
        let mut out = String::new();
        let _ = write!(
            out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#
        );
        let _ = write!(out, "<style>{STYLE}</style>");
        // Row labels are clipped to their column: never drawn over the data.
        let _ = write!(
            out,
            r#"<defs><clipPath id="timeline-labels"><rect x="0" y="0" width="{:.1}" height="{h}"/></clipPath></defs>"#,
            LABEL_W - 6.0
        );
        let _ = write!(out, r#"<text class="title" x="4" y="15">{}</text>"#, escape(&self.title));
        write_axis(&mut out, &plot, h - AXIS_H + 4.0, axis);
        let mut y = TOP;
        for track in &self.tracks {
            write_track(&mut out, &plot, y, track);
            y += track.height();
        }
        out.push_str("</svg>");
        out
    }
}

/// Where time is drawn: right of the labels, `width` pixels for
/// `start..end` (`span` ns, at least 1).
struct Plot {
    start: Nanos,
    end: Nanos,
    span: f64,
    width: f64,
}

impl Plot {
    /// The x of time `t`, clipped to the plot.
    fn x(&self, t: Nanos) -> f64 {
        LABEL_W + ((t - self.start) as f64 / self.span).clamp(0.0, 1.0) * self.width
    }
}

/// The grid and the time axis at `axis_y`: ticks at a round step,
/// labelled as `axis` says.
fn write_axis(out: &mut String, plot: &Plot, axis_y: f64, axis: Axis) {
    let step = nice_step(plot.span / 8.0);
    let mut t = 0.0;
    while t <= plot.span {
        let px = LABEL_W + t / plot.span * plot.width;
        let _ = write!(out, r#"<line class="grid" x1="{px:.1}" y1="{TOP}" x2="{px:.1}" y2="{axis_y}"/>"#);
        let tick = match axis {
            Axis::Offset => format!("{:.1}s", t / 1e9),
            Axis::Clock => clock_label(plot.start + t as Nanos, step),
        };
        let _ = write!(out, r#"<text x="{px:.1}" y="{:.1}" text-anchor="middle">{tick}</text>"#, axis_y + 14.0);
        t += step;
    }
}

/// One row, its top at `y`.
fn write_track(out: &mut String, plot: &Plot, y: f64, track: &Track) {
    match track {
        Track::Series { label, points, bounds } => write_series(out, plot, y, label, points, *bounds),
        Track::Spans { label, spans } => {
            write_label(out, y + ROW_H / 2.0, ROW_H, label);
            for s in spans {
                write_span(out, plot, y, s);
            }
        }
        Track::Marks { label, marks } => {
            write_label(out, y + ROW_H / 2.0, ROW_H, label);
            for m in marks {
                write_mark(out, plot, y, m);
            }
        }
        Track::Note { label, text } => {
            write_label(out, y + ROW_H / 2.0, ROW_H, label);
            let chars = (plot.width / 6.2) as usize;
            let shown = wrap(text, chars, 1).remove(0);
            let _ = write!(
                out,
                r#"<g class="note" data-label="{}"><title>{}</title><text x="{:.1}" y="{:.1}">{}</text></g>"#,
                escape(text),
                escape(text),
                LABEL_W + 4.0,
                y + ROW_H / 2.0 + 4.0,
                escape(&shown)
            );
        }
    }
}

/// Characters of a label line that fit the label column: 11 px sans-serif
/// averages under 6.2 px a character, and the column keeps 8 px clear of
/// the plot.
const LABEL_CHARS: usize = ((LABEL_W - 12.0) / 6.2) as usize;

/// Line height of a wrapped label.
const LABEL_LINE_H: f64 = 12.0;

/// A row's label, centred on `middle`, in the label column of a row
/// `height` high: wrapped at spaces to the column's width, cut with "…"
/// when the row has no room for the rest (the whole label is the
/// tooltip), and clipped to the column, so no label runs over the data.
fn write_label(out: &mut String, middle: f64, height: f64, label: &str) {
    let max_lines = ((height - 4.0) / LABEL_LINE_H).floor().max(1.0) as usize;
    let lines = wrap(label, LABEL_CHARS, max_lines);
    let first = middle + 4.0 - (lines.len() - 1) as f64 * LABEL_LINE_H / 2.0;
    let _ = write!(
        out,
        r#"<text class="label" x="4" y="{first:.1}" clip-path="url(#timeline-labels)"><title>{}</title>"#,
        escape(label)
    );
    for (i, line) in lines.iter().enumerate() {
        let dy = if i == 0 { 0.0 } else { LABEL_LINE_H };
        let _ = write!(out, r#"<tspan x="4" dy="{dy}">{}</tspan>"#, escape(line));
    }
    out.push_str("</text>");
}

/// `text` in lines of at most `width` characters, broken at spaces (a
/// word longer than a line is cut), at most `max_lines` of them; the last
/// ends with "…" when something was left out.
fn wrap(text: &str, width: usize, max_lines: usize) -> Vec<String> {
    let width = width.max(2);
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let mut word: Vec<char> = word.chars().collect();
        loop {
            let used = line.chars().count();
            let room = if used == 0 { width } else { width.saturating_sub(used + 1) };
            if word.len() <= room {
                if used > 0 {
                    line.push(' ');
                }
                line.extend(word.iter());
                break;
            }
            if used == 0 {
                // A word longer than a whole line: cut it.
                line.extend(word.drain(..width));
            }
            lines.push(std::mem::take(&mut line));
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    if lines.len() > max_lines {
        lines.truncate(max_lines);
        let last = &mut lines[max_lines - 1];
        let kept: String = last.chars().take(width - 1).collect();
        *last = format!("{kept}…");
    }
    if lines.is_empty() {
        lines.push(String::new());
    }
    lines
}

/// A series row: its label, its bounds as dashed lines, and the line of
/// its values scaled to the row (bounds included).
fn write_series(
    out: &mut String,
    plot: &Plot,
    y: f64,
    label: &str,
    points: &[(Nanos, f64)],
    bounds: (Option<f64>, Option<f64>),
) {
    let (lo, hi) = range(points, bounds);
    let sy = |v: f64| y + SERIES_H - 6.0 - (v - lo) / (hi - lo) * (SERIES_H - 12.0);
    let _ = write!(out, r#"<g class="series" data-label="{}">"#, escape(label));
    write_label(out, y + SERIES_H / 2.0 - 4.0, SERIES_H, label);
    for b in [bounds.0, bounds.1].into_iter().flatten() {
        let by = sy(b);
        let _ = write!(
            out,
            r#"<line class="bound" x1="{LABEL_W}" y1="{by:.1}" x2="{:.1}" y2="{by:.1}"/>"#,
            LABEL_W + plot.width
        );
    }
    let pts: Vec<String> = points.iter().map(|&(t, v)| format!("{:.1},{:.1}", plot.x(t), sy(v))).collect();
    let _ = write!(out, r#"<polyline points="{}"/>"#, pts.join(" "));
    let _ = write!(out, "</g>");
}

/// A span of a row whose top is at `y`; an open span runs to the end.
fn write_span(out: &mut String, plot: &Plot, y: f64, s: &Span) {
    let (x0, x1) = (plot.x(s.start), plot.x(s.end.unwrap_or(plot.end)));
    write_item(
        out,
        "span",
        &s.class,
        &s.label,
        format_args!(
            r#"<rect x="{x0:.1}" y="{:.1}" width="{:.1}" height="{:.1}"/>"#,
            y + 6.0,
            (x1 - x0).max(1.5),
            ROW_H - 12.0
        ),
    );
}

/// A mark of a row whose top is at `y`: a vertical line.
fn write_mark(out: &mut String, plot: &Plot, y: f64, m: &Mark) {
    let px = plot.x(m.at);
    write_item(
        out,
        "mark",
        &m.class,
        &m.label,
        format_args!(r#"<line x1="{px:.1}" y1="{:.1}" x2="{px:.1}" y2="{:.1}"/>"#, y + 4.0, y + ROW_H - 4.0),
    );
}

/// A drawn item (`kind` `span` or `mark`): `shape` in a group that carries
/// the classes and the label, with the label as its tooltip.
fn write_item(out: &mut String, kind: &str, class: &str, label: &str, shape: std::fmt::Arguments) {
    let _ = write!(
        out,
        r#"<g class="{kind} {}" data-label="{}"><title>{}</title>{shape}</g>"#,
        escape(class),
        escape(label),
        escape(label)
    );
}

/// The value range of a series, bounds included, never empty.
fn range(points: &[(Nanos, f64)], bounds: (Option<f64>, Option<f64>)) -> (f64, f64) {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for v in points.iter().map(|p| p.1).chain(bounds.0).chain(bounds.1) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        return (lo - 0.5, hi + 0.5);
    }
    (lo, hi)
}

/// `HH:MM:SS` UTC, with milliseconds when ticks are closer than a second.
/// A time before the epoch (no clock axis has one) is labelled in seconds
/// from it rather than refused.
fn clock_label(at: Nanos, step: f64) -> String {
    let Ok(since_epoch) = u64::try_from(at) else { return format!("{:.1}s", at as f64 / 1e9) };
    let text = humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_nanos(since_epoch)).to_string();
    // `YYYY-MM-DDTHH:MM:SS.mmmZ`: the time of day is bytes 11..23.
    let end = if step < 1e9 { 23 } else { 19 };
    text.get(11..end).unwrap_or(&text).to_string()
}

/// 1, 2 or 5 × 10^k nanoseconds, at least `raw`.
fn nice_step(raw: f64) -> f64 {
    let raw = raw.max(1.0);
    let mag = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * mag).find(|s| *s >= raw).unwrap_or(10.0 * mag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_label_is_wrapped_to_the_column_and_cut_where_the_row_ends() {
        assert_eq!(wrap("switch=leaf-rail3 rail=3", 12, 3), ["switch=leaf-", "rail3 rail=3"]);
        assert_eq!(wrap("a b c", 3, 3), ["a b", "c"]);
        let cut = wrap("one two three four five six", 7, 2);
        assert_eq!(cut, ["one two", "three…"]);
        assert_eq!(wrap("", 10, 2), [""]);
        for width in 2..30 {
            for lines in 1..4 {
                let text = "ethtool_rx_queue_0_xdp_redirect{node=node-01 netdev=eth0} switch=leaf-rail3 rail=3";
                let out = wrap(text, width, lines);
                assert!(out.len() <= lines, "{out:?}");
                assert!(out.iter().all(|l| l.chars().count() <= width), "{width}: {out:?}");
            }
        }
    }

    #[test]
    fn row_labels_stay_in_their_column_whole_in_the_tooltip() {
        let label = "rule switch-pfc-storm {switch=leaf-rail3 port=Ethernet12 queue=3 rail=3 plane=0}";
        let t = Timeline {
            title: "t".into(),
            start: 0,
            end: 10,
            tracks: vec![Track::Spans { label: label.into(), spans: vec![] }],
        };
        let svg = t.svg(600);
        assert!(svg.contains(&format!("<title>{}</title>", escape(label))), "{svg}");
        assert!(
            svg.contains(r#"clip-path="url(#timeline-labels)""#) && svg.contains(r#"<clipPath id="timeline-labels">"#)
        );
        let lines: Vec<&str> =
            svg.split("<tspan").skip(1).map(|t| &t[t.find('>').unwrap() + 1..t.find("</tspan>").unwrap()]).collect();
        assert_eq!(lines.len(), 2, "a 34 px row holds two lines: {lines:?}");
        assert!(lines.iter().all(|l| l.chars().count() <= LABEL_CHARS), "{lines:?}");
        assert!(lines[1].ends_with('…'), "{lines:?}");
    }

    #[test]
    fn every_item_is_drawn_with_its_class_inside_the_plot() {
        let t = Timeline {
            title: "a <b>".into(),
            start: 1_000,
            end: 2_000,
            tracks: vec![
                Track::Marks {
                    label: "m".into(),
                    marks: vec![Mark { at: 1_500, label: "x".into(), class: "executed".into() }],
                },
                Track::Spans {
                    label: "s".into(),
                    spans: vec![Span { start: 900, end: None, label: "open".into(), class: "firing".into() }],
                },
            ],
        };
        let svg = t.svg(470);
        assert!(svg.contains("a &lt;b&gt;"));
        assert!(svg.contains(r#"<g class="mark executed" data-label="x"><title>x</title><line x1="315.0""#), "{svg}");
        // The open span is clipped to the start and runs to the end.
        assert!(svg.contains(r#"<rect x="170.0" y="64.0" width="290.0""#), "{svg}");
    }

    #[test]
    fn a_clock_axis_is_labelled_in_utc() {
        // 2023-11-14T22:13:20Z, over 40 s: ticks every 5 s.
        let start = 1_700_000_000_000_000_000;
        let t = Timeline { title: "t".into(), start, end: start + 40_000_000_000, tracks: vec![] };
        let svg = t.svg_with_axis(600, Axis::Clock);
        assert!(svg.contains(">22:13:20</text>") && svg.contains(">22:13:25</text>"), "{svg}");
        assert!(t.svg(600).contains(">5.0s</text>"), "the default stays seconds from the start");
    }

    #[test]
    fn steps_are_round() {
        assert_eq!(nice_step(1.3e8), 2e8);
        assert_eq!(nice_step(4e8), 5e8);
        assert_eq!(nice_step(1e9), 1e9);
    }
}
