//! Helpers shared by every TOML file the daemon reads.

/// The 1-based line and column of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map(|nl| offset - nl).unwrap_or(offset + 1);
    (line, column)
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
    fn line_and_column_are_one_based() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 9), (2, 4));
    }
}
