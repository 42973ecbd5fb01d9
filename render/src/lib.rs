//! The HTML and SVG of rocemend's pages, in one place: the chaos reports,
//! the `timeline` page and the web console all draw with it. It knows
//! nothing of the daemon: text in, markup out.
//!
//! # Brief overview
//!
//! - [`escape`]: text made safe for HTML and SVG, the one way every page
//!   escapes;
//! - [`page`]: the page shell (doctype, head, title, style, body) and the
//!   body style the pages share;
//! - [`table`]: `<table>` heads and [`table::Row`]s, every cell escaped,
//!   text and failing cells marked;
//! - [`timeline`]: a generic SVG [`Timeline`]: tracks of series, spans,
//!   marks and notes on one time axis.
//!
//! ```
//! use render::table::{table_head, Row};
//!
//! let mut html = render::page::start("a <report>", render::table::STYLE);
//! html.push_str(&table_head("runs", &["run", "verdict"]));
//! html.push_str(&Row::new().cell(0).text("failed: late").fail_if(true).to_string());
//! html.push_str("</table>");
//! html.push_str(render::page::END);
//! assert!(html.contains("<title>a &lt;report&gt;</title>"));
//! assert!(html.contains(r#"<td class="text fail">failed: late</td>"#));
//! ```

#![deny(missing_docs)]

pub mod page;
pub mod table;
pub mod timeline;

pub use timeline::{Axis, Mark, Span, Timeline, Track};

/// Nanoseconds since the Unix epoch: the time every track is drawn on (the
/// engine's `Nanos`).
pub type Nanos = i64;

/// Escapes text for HTML and SVG: `&`, `<`, `>` and `"` (attribute values
/// are always double-quoted here).
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    #[test]
    fn markup_and_quotes_are_escaped_and_nothing_else() {
        assert_eq!(super::escape(r#"a<b & "c" > d's"#), "a&lt;b &amp; &quot;c&quot; &gt; d's");
    }
}
