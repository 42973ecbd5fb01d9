//! The errors of the actuators crate that are not an action's failure:
//! settings refused when an actuator is built ([`ActuatorConfigError`]), a name
//! refused before it reaches a command line, a path or a URL
//! ([`LabelError`]), and a tool's output or a value that does not parse
//! ([`ParseError`]).
//!
//! An action that fails is an [`engine::ActuatorError`]; these say what
//! was wrong in a form callers can match on: which setting, which value,
//! which character.

use std::path::PathBuf;

use engine::ActuatorError;
use net::http::{TlsError, UrlError};

/// An actuator's settings were refused when it was built; each variant
/// names the setting (as the playbook spells it, e.g. `gnmi.timeout`,
/// `argv[0]`, `host.netdevs`) and what was wrong with it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ActuatorConfigError {
    /// A value is outside the range the setting accepts.
    #[error("{setting} {value:?} must be {expected}")]
    OutOfRange {
        /// The setting.
        setting: String,
        /// The value as given.
        value: String,
        /// The range accepted, e.g. `above 0 and at most 60s`.
        expected: String,
    },
    /// A setting that must name or list something is empty.
    #[error("{setting} is empty: {need}")]
    Empty {
        /// The setting.
        setting: String,
        /// What it needs instead.
        need: &'static str,
    },
    /// A setting that others require is absent.
    #[error("{reason}")]
    Missing {
        /// The setting (or table) that is absent.
        setting: String,
        /// Which other setting needs it.
        reason: &'static str,
    },
    /// Settings that exclude each other are both given, or settings that
    /// go together are not.
    #[error("{setting}: {reason}")]
    Conflict {
        /// The setting or table where they clash.
        setting: String,
        /// Which combination is refused.
        reason: &'static str,
    },
    /// A value is not one the setting accepts.
    #[error("{setting} {value:?} {reason}")]
    Invalid {
        /// The setting.
        setting: String,
        /// The value as given.
        value: String,
        /// Why it is refused, e.g. `is not an absolute path`.
        reason: &'static str,
    },
    /// An entry of a table or list setting (`env`, `headers`,
    /// `gnmi.switches`) is not acceptable.
    #[error("{setting}: {key:?} {reason}")]
    Entry {
        /// The setting.
        setting: String,
        /// The entry's key.
        key: String,
        /// Why it is refused.
        reason: String,
    },
    /// A name that would reach a command line, a path or a URL is refused.
    #[error("{setting}: {value:?}: {source}")]
    Unsafe {
        /// The setting.
        setting: String,
        /// The name as given.
        value: String,
        /// What is wrong with it.
        source: LabelError,
    },
    /// A URL is not one the HTTP client can use.
    #[error("{setting}: {source}")]
    Url {
        /// The setting.
        setting: String,
        /// Why not.
        source: UrlError,
    },
    /// A CA file cannot be trusted.
    #[error("{setting}: {source}")]
    Tls {
        /// The setting.
        setting: String,
        /// Why not.
        source: TlsError,
    },
    /// The PEM files of a `tls` table cannot be read, or a client
    /// certificate comes without its key.
    #[error("{setting}: {source}")]
    TlsFiles {
        /// The table.
        setting: String,
        /// Which file, and why.
        source: gnmi_proto::TlsFileError,
    },
    /// A file a setting names cannot be read.
    #[error("{setting} {}: {source}", path.display())]
    Read {
        /// The setting.
        setting: String,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A file a setting names does not hold what it should.
    #[error("{setting} {}: {reason}", path.display())]
    Malformed {
        /// The setting.
        setting: String,
        /// The file.
        path: PathBuf,
        /// What is wrong with its content.
        reason: String,
    },
    /// A switch named from the inventory cannot be reached by name.
    #[error("{setting}: {source}")]
    Switch {
        /// The setting that names it.
        setting: String,
        /// Why.
        source: engine::topology::AccessError,
    },
    /// A credentials file is refused (unreadable, readable by others,
    /// malformed). The password is never part of the error.
    #[error("{setting}: {source}")]
    Credentials {
        /// The setting.
        setting: String,
        /// Why.
        source: gnmi_proto::credentials::CredentialsError,
    },
    /// A secret is not usable. The secret itself is never part of the error.
    #[error("{setting}: {reason}")]
    Secret {
        /// The setting that gave it.
        setting: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A node setting is not given and its default, this host's name,
    /// cannot be read.
    #[error("{setting} is not set and this host's name is unknown: {source}")]
    Hostname {
        /// The setting.
        setting: String,
        /// Why the host name is unknown.
        source: std::io::Error,
    },
    /// An element of a command template does not parse.
    #[error("{setting} {value:?}: {source}")]
    Template {
        /// The element, e.g. `argv[1]`.
        setting: String,
        /// The element as given.
        value: String,
        /// What is wrong with it.
        source: PlaceholderError,
    },
    /// A value is none of the forms the setting accepts.
    #[error("{setting}: {source}")]
    Parse {
        /// The setting.
        setting: String,
        /// Why it does not parse.
        source: ParseError,
    },
    /// A default for actions (a level, a profile, a factor) fails the
    /// check the actions' own parameters go through.
    #[error("{setting}: {source}")]
    Action {
        /// The setting.
        setting: String,
        /// The check's refusal.
        source: ActuatorError,
    },
}

impl ActuatorConfigError {
    /// The setting (or table) the error is about, dotted as in the file
    /// (`kubernetes.ca_file`): where `check` places it.
    pub fn setting(&self) -> &str {
        use ActuatorConfigError as E;
        match self {
            E::OutOfRange { setting, .. }
            | E::Empty { setting, .. }
            | E::Missing { setting, .. }
            | E::Conflict { setting, .. }
            | E::Invalid { setting, .. }
            | E::Entry { setting, .. }
            | E::Unsafe { setting, .. }
            | E::Url { setting, .. }
            | E::Tls { setting, .. }
            | E::TlsFiles { setting, .. }
            | E::Read { setting, .. }
            | E::Malformed { setting, .. }
            | E::Switch { setting, .. }
            | E::Credentials { setting, .. }
            | E::Secret { setting, .. }
            | E::Hostname { setting, .. }
            | E::Template { setting, .. }
            | E::Parse { setting, .. }
            | E::Action { setting, .. } => setting,
        }
    }
}

/// Why an element of a command template (an `exec` actuator's argv) does
/// not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlaceholderError {
    /// A `}` with no `{` before it.
    #[error("'}}' without '{{' (braces are reserved for placeholders)")]
    UnopenedBrace,
    /// A `{` with no `}` after it.
    #[error("'{{' without '}}'")]
    UnclosedBrace,
    /// A `{` between a `{` and its `}`.
    #[error("'{{' inside a placeholder")]
    NestedBrace,
    /// A NUL byte, which no argv element can hold.
    #[error("contains a NUL byte")]
    Nul,
    /// `{target.}` or `{params.a-b}`: the label or parameter name is empty
    /// or not made of letters, digits and `_`.
    #[error("placeholder {{{prefix}.{name}}} needs a name of letters, digits and '_'")]
    BadName {
        /// `target` or `params`.
        prefix: &'static str,
        /// The name as given.
        name: String,
    },
    /// `{prior}` outside `undo_argv`.
    #[error(
        "placeholder {{prior}} is only available in undo_argv \
         (it is the state the action replaced, known once the action ran)"
    )]
    PriorOutsideUndo,
    /// A placeholder that is none of those the scope allows.
    #[error("unknown placeholder {{{name}}} (expected {})", expected(.scope))]
    Unknown {
        /// What was between the braces.
        name: String,
        /// The scope of the command, which decides what is allowed.
        scope: PlaceholderSet,
    },
}

/// The placeholders `scope` allows, for an error.
fn expected(scope: &PlaceholderSet) -> &'static str {
    match scope {
        PlaceholderSet::Action => "{kind}, {verb}, {target.<label>} or {params.<name>}",
        PlaceholderSet::Undo => "{kind}, {verb}, {target.<label>}, {params.<name>} or {prior}",
    }
}

/// What a command's placeholders may draw on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlaceholderSet {
    /// The action alone: `argv` and `verify_argv`, which run before any
    /// outcome exists or without one (after a crash mid-action).
    Action,
    /// The action and the outcome being undone: `undo_argv`, which may use
    /// `{prior}`.
    Undo,
}

/// A name (a label value, a netdev, a node) refused before it reaches a
/// command line, a path or a URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LabelError {
    /// It is empty.
    #[error("it is empty")]
    Empty,
    /// It is longer than the kind of name allows.
    #[error("it is {len} bytes long, above the limit of {max}")]
    TooLong {
        /// Its length, in bytes.
        len: usize,
        /// The longest accepted.
        max: usize,
    },
    /// It holds a character the kind of name does not allow.
    #[error("it contains {found:?}; {allowed}")]
    Char {
        /// The first such character.
        found: char,
        /// What the kind of name allows.
        allowed: &'static str,
    },
    /// It starts with a character that would change its meaning: `-` reads
    /// as an option, `.` as a relative path.
    #[error("it starts with {found:?} and would be read as {}", read_as(.found))]
    Leading {
        /// The first character.
        found: char,
    },
    /// It is `.` or `..`, which name directories, not devices.
    #[error("it is not a name")]
    Dots,
}

/// What a name starting with `c` would be read as.
fn read_as(c: &char) -> &'static str {
    if *c == '-' {
        "an option"
    } else {
        "a relative path"
    }
}

/// A tool's output or a value that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParseError {
    /// A command's output lacks a field it prints for every object.
    #[error("no {field} in {command}'s output {excerpt:?}")]
    MissingField {
        /// The command, e.g. `scontrol`.
        command: &'static str,
        /// The field looked for, e.g. `State=`.
        field: &'static str,
        /// The start of the output (at most 200 bytes).
        excerpt: String,
    },
    /// A value is none of the forms accepted.
    #[error("{what} {value:?} is not {expected}")]
    Value {
        /// What the value is, e.g. `pfc-prevention-tout`.
        what: &'static str,
        /// The value as given.
        value: String,
        /// The forms accepted.
        expected: &'static str,
    },
}

/// At most the first 200 bytes of `text`, cut at a character boundary: an
/// excerpt of a tool's output for an error.
pub(crate) fn excerpt(text: &str) -> String {
    let mut end = text.len().min(200);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

/// The duration `setting`, which must be above 0 and at most `max`: every
/// actuator's call timeout is checked by this one rule.
pub(crate) fn bounded_duration(
    setting: &str,
    d: std::time::Duration,
    max: engine::Nanos,
) -> Result<std::time::Duration, ActuatorConfigError> {
    let ns = engine::config::duration::nanos(d);
    if ns <= 0 || ns > max {
        return Err(ActuatorConfigError::OutOfRange {
            setting: setting.into(),
            value: engine::config::duration::show(d),
            expected: format!("above 0 and at most {}", engine::time::Span(max)),
        });
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_read_as_the_setting_and_what_was_wrong() {
        let e = ActuatorConfigError::OutOfRange {
            setting: "timeout".into(),
            value: "2h".into(),
            expected: "at most 60s".into(),
        };
        assert_eq!(e.to_string(), "timeout \"2h\" must be at most 60s");
        let e =
            ActuatorConfigError::Unsafe { setting: "netdevs".into(), value: "a/b".into(), source: LabelError::Dots };
        assert_eq!(e.to_string(), "netdevs: \"a/b\": it is not a name");
        assert_eq!(LabelError::Leading { found: '-' }.to_string(), "it starts with '-' and would be read as an option");
        assert_eq!(
            LabelError::Leading { found: '.' }.to_string(),
            "it starts with '.' and would be read as a relative path"
        );
        assert_eq!(excerpt(&"é".repeat(150)).len(), 200);
    }
}
