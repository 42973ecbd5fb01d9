//! The one text table of the verbs (`decisions`, `incidents`, `rules`,
//! `instances`, `sensors`): a header, then one row per record, columns two
//! spaces apart and as wide as their widest cell, no borders, no trailing
//! spaces. Drawn by `comfy-table`; a row may carry notes, printed on lines
//! of their own under it, from its second column on.

use comfy_table::{CellAlignment, ContentArrangement};

/// Spaces between two columns.
const GAP: u16 = 2;

/// A table being filled.
pub struct Table {
    inner: comfy_table::Table,
    /// The notes of each row, by row index.
    notes: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column titles.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        let mut inner = comfy_table::Table::new();
        inner.load_preset(comfy_table::presets::NOTHING).set_content_arrangement(ContentArrangement::Disabled);
        let header: Vec<String> = header.into_iter().map(Into::into).collect();
        let columns = header.len();
        inner.set_header(header);
        for (i, column) in inner.column_iter_mut().enumerate() {
            column.set_padding((0, if i + 1 == columns { 0 } else { GAP }));
        }
        Table { inner, notes: Vec::new() }
    }

    /// Aligns the columns at `indices` to the right (counts).
    pub fn right(mut self, indices: &[usize]) -> Table {
        for &i in indices {
            if let Some(column) = self.inner.column_mut(i) {
                column.set_cell_alignment(CellAlignment::Right);
            }
        }
        self
    }

    /// Adds a row.
    pub fn row<S: ToString>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.row_with_notes(cells, Vec::new());
    }

    /// Adds a row and lines under it (a drift, who resolved it).
    pub fn row_with_notes<S: ToString>(&mut self, cells: impl IntoIterator<Item = S>, notes: Vec<String>) {
        let cells: Vec<String> = cells.into_iter().map(|c| c.to_string()).collect();
        self.inner.add_row(cells);
        self.notes.push(notes);
    }

    /// The table as text, each line ending in a newline.
    pub fn render(&self) -> String {
        let indent = self.inner.column_max_content_widths().first().map_or(0, |w| usize::from(*w + GAP));
        let mut out = String::new();
        for (i, line) in self.inner.lines().enumerate() {
            out.push_str(line.trim_end());
            out.push('\n');
            // Line 0 is the header; line i is row i - 1.
            for note in i.checked_sub(1).and_then(|row| self.notes.get(row)).into_iter().flatten() {
                out.push_str(&format!("{:indent$}{note}\n", ""));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_two_spaces_apart_counts_right_aligned_and_notes_under_their_row() {
        let mut t = Table::new(["RULE", "FIRING", "last error"]).right(&[1]);
        t.row(["slow-step", "2", "-"]);
        t.row_with_notes(["pfc-storm", "10", "timeout"], vec!["drift: reverted".into()]);
        assert_eq!(
            t.render(),
            "RULE       FIRING  last error\n\
             slow-step       2  -\n\
             pfc-storm      10  timeout\n           drift: reverted\n"
        );
    }

    #[test]
    fn a_table_without_rows_is_its_header() {
        assert_eq!(Table::new(["ID", "RULE"]).render(), "ID  RULE\n");
    }
}
