//! Parsing nccl-tests output, one line at a time.

/// What one line of output says.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// A result row.
    Row(Row),
    /// `# Avg bus bandwidth    : 92.3461`, in GB/s.
    AvgBusBw(f64),
}

/// One result row: a message size, out-of-place and in-place results.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// The collective (`all_reduce`), if known from the output.
    pub collective: Option<String>,
    /// Message size in bytes.
    pub size: u64,
    /// Out-of-place results, if the row has them.
    pub out_of_place: Option<Placement>,
    /// In-place results, if the row has them.
    pub in_place: Option<Placement>,
}

/// The results of one placement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    /// Time in µs.
    pub time_us: f64,
    /// Algorithm bandwidth in GB/s.
    pub algbw_gbps: f64,
    /// Bus bandwidth in GB/s.
    pub busbw_gbps: f64,
}

/// The column header nccl-tests prints for every collective (since 2.10 the
/// same columns for all; `redop`/`root` read `none`/`-1` where meaningless).
const DEFAULT_COLUMNS: &[&str] =
    &["size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"];

/// The most columns taken from a header line; real output has 13.
const MAX_COLUMNS: usize = 32;

/// Where the result columns are in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layout {
    size: usize,
    /// (time, algbw, busbw) column indexes, out-of-place then in-place.
    placements: Vec<(usize, usize, usize)>,
}

impl Layout {
    fn from_columns(columns: &[&str]) -> Option<Layout> {
        let size = columns.iter().position(|c| *c == "size")?;
        let mut placements = Vec::new();
        let mut i = 0;
        while i < columns.len() && placements.len() < 2 {
            if columns[i] == "time" && columns.get(i + 1) == Some(&"algbw") && columns.get(i + 2) == Some(&"busbw") {
                placements.push((i, i + 1, i + 2));
                i += 3;
            } else {
                i += 1;
            }
        }
        (!placements.is_empty()).then_some(Layout { size, placements })
    }
}

/// The collective named by an `*_perf` binary in `text` (a path, a command
/// line): `/opt/nccl-tests/build/all_reduce_perf_mpi` → `all_reduce`.
fn collective_in(text: &str) -> Option<String> {
    text.split(|c: char| c.is_whitespace() || c == '/' || c == '=' || c == '"' || c == '\'').find_map(|word| {
        let base = word.strip_suffix("_mpi").unwrap_or(word);
        let name = base.strip_suffix("_perf")?;
        let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_lowercase() || c == '_');
        ok.then(|| name.to_string())
    })
}

/// Turns nccl-tests output into [`Parsed`] items, a line at a time.
#[derive(Debug, Clone)]
pub struct Parser {
    collective: Option<String>,
    layout: Layout,
}

impl Default for Parser {
    fn default() -> Self {
        Parser::new()
    }
}

impl Parser {
    /// A parser at the start of a file.
    pub fn new() -> Parser {
        let layout = Layout::from_columns(DEFAULT_COLUMNS);
        Parser { collective: None, layout: layout.unwrap_or(Layout { size: 0, placements: Vec::new() }) }
    }

    /// The collective found in the output so far.
    pub fn collective(&self) -> Option<&str> {
        self.collective.as_deref()
    }

    /// Parses one line (without its newline). Lines that are neither a row
    /// nor the average (headers, device lists, warnings) update the parser's
    /// state or are ignored.
    pub fn line(&mut self, line: &str) -> Option<Parsed> {
        let trimmed = line.trim();
        if let Some(comment) = trimmed.strip_prefix('#') {
            return self.comment(comment.trim());
        }
        if self.collective.is_none() && trimmed.contains("_perf") {
            // A command line echoed by the job script before the output.
            self.collective = collective_in(trimmed);
        }
        self.row(trimmed).map(Parsed::Row)
    }

    fn comment(&mut self, text: &str) -> Option<Parsed> {
        if let Some(rest) = text.strip_prefix("Avg bus bandwidth") {
            let value = rest.trim_start().strip_prefix(':')?.trim();
            return value.parse::<f64>().ok().filter(|v| v.is_finite()).map(Parsed::AvgBusBw);
        }
        if let Some(rest) = text.strip_prefix("Collective test starting:").or_else(|| text.strip_prefix("nccl-tests "))
        {
            if let Some(c) = collective_in(rest) {
                self.collective = Some(c);
            }
            return None;
        }
        let columns: Vec<&str> = text.split_whitespace().take(MAX_COLUMNS).collect();
        if columns.first() == Some(&"size") {
            if let Some(layout) = Layout::from_columns(&columns) {
                self.layout = layout;
            }
        }
        None
    }

    fn row(&self, line: &str) -> Option<Row> {
        let fields: Vec<&str> = line.split_whitespace().take(MAX_COLUMNS).collect();
        let size = fields.get(self.layout.size)?.parse::<u64>().ok()?;
        let number = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).filter(|v| v.is_finite());
        let placement = |p: Option<&(usize, usize, usize)>| {
            let (t, a, b) = *p?;
            Some(Placement { time_us: number(t)?, algbw_gbps: number(a)?, busbw_gbps: number(b)? })
        };
        let out_of_place = placement(self.layout.placements.first());
        let in_place = placement(self.layout.placements.get(1));
        if out_of_place.is_none() && in_place.is_none() {
            return None;
        }
        Some(Row { collective: self.collective.clone(), size, out_of_place, in_place })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collectives_are_found_in_binary_names() {
        assert_eq!(collective_in("all_reduce_perf").as_deref(), Some("all_reduce"));
        assert_eq!(
            collective_in("mpirun -np 16 /opt/nccl-tests/build/all_gather_perf_mpi -b 8").as_deref(),
            Some("all_gather")
        );
        assert_eq!(collective_in("perf"), None);
        assert_eq!(collective_in("_perf"), None);
    }

    #[test]
    fn a_row_with_the_default_columns() {
        let mut p = Parser::new();
        let got = p.line("     1048576        262144     float     sum      -1    48.12   21.79   40.86      0    47.90   21.89   41.05      0");
        let Some(Parsed::Row(row)) = got else { panic!("{got:?}") };
        assert_eq!(row.size, 1048576);
        assert_eq!(row.out_of_place, Some(Placement { time_us: 48.12, algbw_gbps: 21.79, busbw_gbps: 40.86 }));
        assert_eq!(row.in_place, Some(Placement { time_us: 47.90, algbw_gbps: 21.89, busbw_gbps: 41.05 }));
    }

    #[test]
    fn the_old_all_gather_header_without_redop_and_root() {
        let mut p = Parser::new();
        p.line("#       size         count      type     time   algbw   busbw  error     time   algbw   busbw  error");
        let got = p.line(
            "        8192           256     float    30.10    0.27    0.24  0e+00    29.80    0.27    0.24  0e+00",
        );
        let Some(Parsed::Row(row)) = got else { panic!("{got:?}") };
        assert_eq!(row.out_of_place.unwrap().time_us, 30.10);
        assert_eq!(row.in_place.unwrap().busbw_gbps, 0.24);
    }

    #[test]
    fn garbage_is_ignored() {
        let mut p = Parser::new();
        assert_eq!(p.line("NCCL WARN something"), None);
        assert_eq!(p.line("12 abc"), None);
        assert_eq!(p.line("# Avg bus bandwidth    : nan"), None);
        assert_eq!(p.line(""), None);
        assert_eq!(p.line("# Avg bus bandwidth    : 92.3461 "), Some(Parsed::AvgBusBw(92.3461)));
    }
}
