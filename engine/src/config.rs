//! Helpers shared by every TOML file the daemon reads.

/// The 1-based line and column of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map(|nl| offset - nl).unwrap_or(offset + 1);
    (line, column)
}

/// One step of a path to a value in a TOML document: a key, or the index
/// of a table in an array of tables (`[[actuator]]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key<'a> {
    /// A key of a table.
    Name(&'a str),
    /// A table of an array of tables, or an element of an array.
    Index(usize),
}

impl<'a> From<&'a str> for Key<'a> {
    fn from(name: &'a str) -> Key<'a> {
        Key::Name(name)
    }
}

impl From<usize> for Key<'_> {
    fn from(i: usize) -> Self {
        Key::Index(i)
    }
}

/// Finds where values are in a TOML file, so an error found after parsing
/// (a limit that switches safety off, an action no actuator handles) still
/// names the line and column of what it is about.
#[derive(Debug)]
pub struct Locator {
    origin: String,
    text: String,
    doc: Option<toml_edit::ImDocument<String>>,
}

impl Locator {
    /// A locator over `text`, the file `origin`.
    pub fn new(text: &str, origin: &str) -> Locator {
        Locator {
            origin: origin.to_string(),
            text: text.to_string(),
            doc: toml_edit::ImDocument::parse(text.to_string()).ok(),
        }
    }

    /// The file.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The 1-based line and column of the value at `path` (of its key, for a
    /// key; of its header, for a table), or of the nearest part of the path
    /// that exists; (1, 1) when none does.
    pub fn position(&self, path: &[Key<'_>]) -> (usize, usize) {
        let (span, _) = self.find(path);
        span.map(|span| line_col(&self.text, span.start)).unwrap_or((1, 1))
    }

    /// Whether the file sets the value at `path` (rather than leaving it to
    /// its default).
    pub fn has(&self, path: &[Key<'_>]) -> bool {
        self.find(path).1
    }

    /// The span of the deepest part of `path` found, and whether all of it was.
    fn find(&self, path: &[Key<'_>]) -> (Option<std::ops::Range<usize>>, bool) {
        let Some(doc) = &self.doc else { return (None, false) };
        let mut best: Option<std::ops::Range<usize>> = None;
        let mut item: Option<&toml_edit::Item> = None;
        let mut table: Option<&toml_edit::Table> = Some(doc.as_table());
        let mut inline: Option<&toml_edit::Value> = None;
        for step in path {
            match (step, table, item, inline) {
                (Key::Name(name), Some(t), _, _) => {
                    let Some((key, value)) = t.get_key_value(name) else { return (best, false) };
                    best = key.span().or_else(|| value.span()).or(best);
                    item = Some(value);
                    table = value.as_table();
                    inline = value.as_value();
                }
                (Key::Name(name), None, _, Some(v)) => {
                    let Some(value) = v.as_inline_table().and_then(|t| t.get(name)) else { return (best, false) };
                    best = value.span().or(best);
                    (item, table, inline) = (None, None, Some(value));
                }
                (Key::Index(n), _, Some(i), _) if i.as_array_of_tables().is_some() => {
                    let Some(t) = i.as_array_of_tables().and_then(|a| a.get(*n)) else { return (best, false) };
                    best = t.span().or(best);
                    (item, table, inline) = (None, Some(t), None);
                }
                (Key::Index(n), _, _, Some(v)) => {
                    let Some(value) = v.as_array().and_then(|a| a.get(*n)) else { return (best, false) };
                    best = value.span().or(best);
                    (item, table, inline) = (None, None, Some(value));
                }
                _ => return (best, false),
            }
        }
        (best, true)
    }

    /// An error about the value at `path`.
    pub fn error(&self, path: &[Key<'_>], message: impl Into<String>) -> TomlError {
        let (line, column) = self.position(path);
        TomlError { path: self.origin.clone(), line, column, message: message.into() }
    }
}

/// A TOML file could not be read or parsed into its schema.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path}:{line}:{column}: {message}")]
pub struct TomlError {
    /// The file.
    pub path: String,
    /// 1-based line (0 when the error has no location).
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What was expected.
    pub message: String,
}

/// Parses TOML text into `T`, naming `origin` and the line and column of any
/// error.
pub fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T, TomlError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
        TomlError { path: origin.to_string(), line, column, message: e.message().trim().to_string() }
    })
}

/// Reads a configuration file, naming it in the error.
pub fn read_text(path: &std::path::Path) -> Result<String, TomlError> {
    std::fs::read_to_string(path).map_err(|e| TomlError {
        path: path.display().to_string(),
        line: 0,
        column: 0,
        message: format!("cannot read: {e}"),
    })
}

/// Reads and parses a TOML file.
pub fn read_toml<T: serde::de::DeserializeOwned>(path: &std::path::Path) -> Result<T, TomlError> {
    parse_toml(&read_text(path)?, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_locator_finds_keys_tables_of_arrays_and_array_elements() {
        let text = "mode = \"enforce\"\n[breaker]\ntrip_after = 0\n\n[[actuator]]\nname = \"a\"\n\n[[actuator]]\nname = \"b\"\nhandles = [\"x.*\", \"\"]\n";
        let at = Locator::new(text, "p.toml");
        assert_eq!(at.position(&["breaker".into(), "trip_after".into()]), (3, 1));
        assert_eq!(at.position(&["actuator".into(), 1.into(), "handles".into()]), (10, 1));
        assert_eq!(at.position(&["actuator".into(), 1.into(), "handles".into(), 1.into()]), (10, 19));
        assert_eq!(at.position(&["breaker".into(), "window".into()]), (2, 2), "the nearest part that exists");
        assert_eq!(at.error(&["mode".into()], "m").to_string(), "p.toml:1:1: m");
    }

    #[test]
    fn line_and_column_are_one_based() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 9), (2, 4));
    }
}
