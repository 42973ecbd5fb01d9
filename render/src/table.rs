//! HTML tables, written one way. Every value is escaped here, so a label
//! with `<` or `&` (a netdev, a rule subject, a reason from a daemon)
//! cannot break a page; text cells carry `class="text"` ([`STYLE`] aligns
//! figures right and text left) and failing cells `class="fail"` (red).

use std::fmt::{self, Display, Write as _};

use crate::escape;

/// The style of the tables: ruled cells, figures right, the first column,
/// text and failing cells as [`Row`] marks them.
pub const STYLE: &str = "table{border-collapse:collapse}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}td:first-child{text-align:left}\
.fail{color:#b00}td.text{text-align:left}";

/// `<table id="{id}">` and its header row: one `<th>` per name.
pub fn table_head(id: &str, names: &[&str]) -> String {
    let mut out = format!("<table id=\"{}\"><tr>", escape(id));
    for name in names {
        let _ = write!(out, "<th>{}</th>", escape(name));
    }
    out.push_str("</tr>");
    out
}

/// A whole table: its head ([`table_head`]), one [`Row`] per item drawn
/// by `row`, and its end.
pub fn table<T>(id: &str, names: &[&str], items: impl IntoIterator<Item = T>, row: impl Fn(T) -> Row) -> String {
    let mut out = table_head(id, names);
    for item in items {
        let _ = write!(out, "{}", row(item));
    }
    out.push_str("</table>");
    out
}

/// One `<tr>`, built cell by cell; shown (`Display`) as its HTML.
#[derive(Debug, Default)]
pub struct Row {
    cells: Vec<Cell>,
}

#[derive(Debug)]
struct Cell {
    /// Escaped.
    html: String,
    text: bool,
    fail: bool,
}

impl Row {
    /// An empty row.
    pub fn new() -> Row {
        Row::default()
    }

    /// A figure (or the row's name, in its first column): aligned by the
    /// page's default style.
    pub fn cell(self, value: impl Display) -> Row {
        self.push(value, false)
    }

    /// Words: aligned left.
    pub fn text(self, value: impl Display) -> Row {
        self.push(value, true)
    }

    /// Marks the last cell as failing when `failing`, so what broke an
    /// expectation stands out.
    pub fn fail_if(mut self, failing: bool) -> Row {
        if let Some(last) = self.cells.last_mut() {
            last.fail |= failing;
        }
        self
    }

    fn push(mut self, value: impl Display, text: bool) -> Row {
        self.cells.push(Cell { html: escape(&value.to_string()), text, fail: false });
        self
    }
}

impl Display for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<tr>")?;
        for c in &self.cells {
            match (c.text, c.fail) {
                (false, false) => write!(f, "<td>{}</td>", c.html)?,
                (true, false) => write!(f, "<td class=\"text\">{}</td>", c.html)?,
                (false, true) => write!(f, "<td class=\"fail\">{}</td>", c.html)?,
                (true, true) => write!(f, "<td class=\"text fail\">{}</td>", c.html)?,
            }
        }
        f.write_str("</tr>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_is_escaped_and_text_and_failures_are_marked() {
        let row =
            Row::new().cell("a<b").text("x & y").cell(2).fail_if(true).text("why").fail_if(true).cell(0).fail_if(false);
        assert_eq!(
            row.to_string(),
            "<tr><td>a&lt;b</td><td class=\"text\">x &amp; y</td><td class=\"fail\">2</td>\
             <td class=\"text fail\">why</td><td>0</td></tr>"
        );
    }

    #[test]
    fn a_table_opens_with_its_header_row() {
        assert_eq!(table_head("t", &["", "p50"]), "<table id=\"t\"><tr><th></th><th>p50</th></tr>");
    }

    #[test]
    fn a_whole_table_is_its_head_a_row_per_item_and_its_end() {
        let t = table("t", &["n"], [1, 2], |n| Row::new().cell(n));
        assert_eq!(t, "<table id=\"t\"><tr><th>n</th></tr><tr><td>1</td></tr><tr><td>2</td></tr></table>");
    }
}
