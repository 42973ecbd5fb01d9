//! Helpers shared by every TOML file the daemon reads.
//!
//! # Where a value is
//!
//! One mechanism places an error in a TOML file: the spans `toml_edit`
//! keeps for each key, looked up by the key's path ([`Locator`]). A schema
//! stays plain serde types (no `toml::Spanned` fields): its values can be
//! typed (a `Duration` with `humantime_serde`), the errors of parsing carry
//! toml's own span ([`parse_toml`]), and a problem found later carries the
//! path of what it is about — [`Key`]s, or an owned [`KeyPath`] in the error
//! of a library that checks a table it does not read from the file itself —
//! for the code that read the file to place it.

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

/// A path to a value in a TOML document, owned: what an error of a checked
/// table carries, so that the code that read the file can place it with
/// [`Locator`] (`at.error(&path.keys(), message)`, below the table's own
/// path when the table is part of a larger file).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(Vec<KeyStep>);

/// One step of a [`KeyPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum KeyStep {
    Name(String),
    Index(usize),
}

impl KeyPath {
    /// This path, then the key `name`.
    pub fn key(mut self, name: impl Into<String>) -> KeyPath {
        self.0.push(KeyStep::Name(name.into()));
        self
    }

    /// This path, then the `index`th table (of an array of tables) or element.
    pub fn index(mut self, index: usize) -> KeyPath {
        self.0.push(KeyStep::Index(index));
        self
    }

    /// This path, then every step of `below`.
    pub fn extend(mut self, below: &KeyPath) -> KeyPath {
        self.0.extend(below.0.iter().cloned());
        self
    }

    /// The steps, as [`Locator`] takes them.
    pub fn keys(&self) -> Vec<Key<'_>> {
        (self.0.iter())
            .map(|step| match step {
                KeyStep::Name(name) => Key::Name(name),
                KeyStep::Index(i) => Key::Index(*i),
            })
            .collect()
    }
}

/// Dotted, with indexes in brackets: `budget[1].window`.
impl std::fmt::Display for KeyPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, step) in self.0.iter().enumerate() {
            match step {
                KeyStep::Name(name) if i == 0 => write!(f, "{name}")?,
                KeyStep::Name(name) => write!(f, ".{name}")?,
                KeyStep::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
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

    /// The string the file gives the top-level key `name`, as written.
    pub fn string_at(&self, name: &str) -> Option<&str> {
        self.doc.as_ref()?.get(name)?.as_str()
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
#[error("{}", self.placed())]
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

impl TomlError {
    /// `file:line:col: message`, or `file: message` for a problem of the
    /// whole file (line 0); a message that already names the file does not
    /// name it twice.
    fn placed(&self) -> String {
        let message = self.message.strip_prefix(&format!("{}: ", self.path)).unwrap_or(&self.message);
        match self.line {
            0 => format!("{}: {message}", self.path),
            line => format!("{}:{line}:{}: {message}", self.path, self.column),
        }
    }
}

/// Parses TOML text into `T`, naming `origin` and the line and column of any
/// error. A duration that does not parse is named by its key as well
/// (`limits.window: invalid duration "5x": …`).
pub fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T, TomlError> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e.span().map(|s| line_col(text, s.start)).unwrap_or((0, 0));
        let mut message = e.message().trim().to_string();
        if message.starts_with(duration::INVALID) {
            if let Some(key) = e.span().and_then(|s| key_at(text, s.start)) {
                message = format!("{key}: {message}");
            }
        }
        TomlError { path: origin.to_string(), line, column, message }
    })
}

/// The dotted key whose value starts at `offset`: the key left of the `=`
/// on its line, under the last table header above it.
fn key_at(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let line = &before[before.rfind('\n').map_or(0, |nl| nl + 1)..];
    let key = line.split_once('=')?.0.trim();
    let header = before
        .lines()
        .rev()
        .skip(1)
        .map(str::trim)
        .find(|l| l.starts_with('['))
        .map(|h| h.trim_matches(|c| c == '[' || c == ']').trim());
    Some(match header {
        Some(table) if !table.is_empty() => format!("{table}.{key}"),
        _ => key.to_string(),
    })
}

/// Durations in configuration files, as people write them (`"200ms"`,
/// `"10s"`, `"5m"`, `"1h30m"`): `#[serde(with = "engine::config::duration")]`
/// on a [`std::time::Duration`]. Read with humantime, written back with
/// humantime-serde; a value that does not parse is refused naming it
/// (`invalid duration "soon": …`), and [`parse_toml`] adds its key.
pub mod duration {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// How the error of a duration that does not parse starts.
    pub const INVALID: &str = "invalid duration";

    /// Writes `d` as humantime does (`10m`, `200ms`).
    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        humantime_serde::serialize(d, s)
    }

    /// Reads a duration; the error names the text.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        let text = String::deserialize(d)?;
        parse(&text).map_err(serde::de::Error::custom)
    }

    /// A duration in a configuration file does not parse.
    #[derive(Debug, Clone, PartialEq, thiserror::Error)]
    #[error("{INVALID} {text:?}: {source}")]
    pub struct InvalidDuration {
        /// The text as written.
        pub text: String,
        /// Why it does not parse.
        pub source: humantime::DurationError,
    }

    /// Parses `text` as a duration; the error names it.
    pub fn parse(text: &str) -> Result<Duration, InvalidDuration> {
        humantime::parse_duration(text.trim()).map_err(|source| InvalidDuration { text: text.to_string(), source })
    }

    /// `d` as a configuration file writes it, for messages (`10m`, `200ms`).
    pub fn show(d: Duration) -> String {
        humantime::format_duration(d).to_string()
    }

    /// `d` in nanoseconds, saturating: the engine's time.
    pub fn nanos(d: Duration) -> crate::time::Nanos {
        i64::try_from(d.as_nanos()).unwrap_or(i64::MAX)
    }

    /// An optional duration (`#[serde(default, with = "duration::option")]`).
    pub mod option {
        use std::time::Duration;

        use serde::{Deserialize, Deserializer, Serializer};

        /// Writes `d` as humantime does, or nothing.
        pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
            match d {
                Some(d) => super::serialize(d, s),
                None => s.serialize_none(),
            }
        }

        /// Reads a duration; the error names the text.
        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
            let text = String::deserialize(d)?;
            super::parse(&text).map(Some).map_err(serde::de::Error::custom)
        }
    }
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

/// Setting keys that name a file or directory, wherever they appear in a
/// sensor's or actuator's settings: a relative one is resolved against the
/// directory of the file that sets it, never the daemon's working directory.
pub const FILE_KEYS: &[&str] = &[
    "path",
    "root",
    "sysfs_root",
    "ca_file",
    "cert_file",
    "key_file",
    "credentials_file",
    "token_file",
    "env_file",
    "slurm_conf",
];

/// Setting keys that name a program or library: resolved like
/// [`FILE_KEYS`] only when written as a path (`./bin/scontrol`); a bare
/// name (`scontrol`, `libnvidia-ml.so.1`) is looked up by the system.
pub const PROGRAM_KEYS: &[&str] = &["scontrol", "library"];

/// [`FILE_KEYS`] that name a file only at the top of a component's
/// settings: deeper, `path` is a gNMI subscription path
/// (`openconfig:/interfaces/…`), not a file.
const TOP_LEVEL_ONLY: &[&str] = &["path", "root"];

/// Resolves every relative [`FILE_KEYS`] and [`PROGRAM_KEYS`] value in
/// `settings` (and the tables and arrays of tables inside it) against `base`.
pub fn resolve_paths(settings: &mut toml::Table, base: &std::path::Path) {
    resolve_in(settings, base, true);
}

fn resolve_in(settings: &mut toml::Table, base: &std::path::Path, top: bool) {
    for (key, value) in settings.iter_mut() {
        let key = key.as_str();
        match value {
            toml::Value::String(text) => {
                let file = FILE_KEYS.contains(&key) && (top || !TOP_LEVEL_ONLY.contains(&key));
                let program = PROGRAM_KEYS.contains(&key) && text.contains('/');
                if (file || program) && !text.is_empty() && std::path::Path::new(text.as_str()).is_relative() {
                    *text = base.join(&*text).display().to_string();
                }
            }
            toml::Value::Table(inner) => resolve_in(inner, base, false),
            toml::Value::Array(items) => {
                for item in items.iter_mut() {
                    if let toml::Value::Table(inner) = item {
                        resolve_in(inner, base, false);
                    }
                }
            }
            _ => {}
        }
    }
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
    fn a_key_path_carried_by_an_error_is_placed_below_its_table() {
        let text =
            "[fleet]\netcd = []\n\n[[fleet.budget]]\nname = \"a\"\n\n[[fleet.budget]]\nname = \"b\"\nwindow = \"0s\"\n";
        let at = Locator::new(text, "rocemend.toml");
        let path = KeyPath::default().key("budget").index(1).key("window");
        assert_eq!(path.to_string(), "budget[1].window");
        let mut keys = vec![Key::Name("fleet")];
        keys.extend(path.keys());
        assert_eq!(at.error(&keys, "m").to_string(), "rocemend.toml:9:1: m");
        assert_eq!(KeyPath::default().to_string(), "");
    }

    #[test]
    fn relative_files_resolve_against_their_config_and_bare_programs_do_not() {
        let mut settings: toml::Table = toml::from_str(
            "root = \"sys\"\nlibrary = \"libnvidia-ml.so.1\"\nscontrol = \"./bin/scontrol\"\nname = \"x\"\n\
             [gnmi]\nca_file = \"/etc/ca.pem\"\n[[targets]]\ntls = { ca_file = \"tls/ca.pem\" }\n\
             [[subscriptions]]\npath = \"openconfig:/interfaces\"\n",
        )
        .unwrap();
        resolve_paths(&mut settings, std::path::Path::new("/etc/rocemend"));
        assert_eq!(settings["root"].as_str(), Some("/etc/rocemend/sys"));
        assert_eq!(settings["library"].as_str(), Some("libnvidia-ml.so.1"));
        assert_eq!(settings["scontrol"].as_str(), Some("/etc/rocemend/./bin/scontrol"));
        assert_eq!(settings["name"].as_str(), Some("x"));
        assert_eq!(settings["gnmi"]["ca_file"].as_str(), Some("/etc/ca.pem"));
        assert_eq!(settings["targets"][0]["tls"]["ca_file"].as_str(), Some("/etc/rocemend/tls/ca.pem"));
        assert_eq!(
            settings["subscriptions"][0]["path"].as_str(),
            Some("openconfig:/interfaces"),
            "a gNMI path, not a file"
        );
    }

    #[test]
    fn line_and_column_are_one_based() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_col(text, 0), (1, 1));
        assert_eq!(line_col(text, 6), (2, 1));
        assert_eq!(line_col(text, 9), (2, 4));
    }
}
