//! argv templates: parsing placeholders once, filling them per action with
//! checked values, and showing the result the way a shell user would type it.

use std::borrow::Cow;
use std::fmt;

use engine::{Action, ActuatorError};

/// The longest value a placeholder may take, in bytes: above any real label
/// value (a DNS name is at most 253), far below the kernel's argv limits.
pub const MAX_VALUE_LEN: usize = 256;

/// Whether `c` may appear in a substituted value, and in a displayed argv
/// element without quotes: none of these is special to a POSIX shell or
/// starts a glob, so a value made of them means the same everywhere.
pub fn is_safe_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '@' | '/' | '=' | '+' | ',' | '-')
}

/// Checks a value before it may go into argv; the error says why not.
pub fn check_value(value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err("it is empty".into());
    }
    if value.len() > MAX_VALUE_LEN {
        return Err(format!("it is {} bytes long, above the limit of {MAX_VALUE_LEN}", value.len()));
    }
    if let Some(c) = value.chars().find(|c| !is_safe_char(*c)) {
        return Err(format!("it contains {c:?}; values may only contain A-Z a-z 0-9 . _ : @ / = + , -"));
    }
    if value.starts_with('-') {
        return Err("it starts with '-' and would be read as an option".into());
    }
    Ok(())
}

/// What a placeholder stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placeholder {
    /// `{kind}`: the action kind.
    Kind,
    /// `{verb}`: the verb of the action kind.
    Verb,
    /// `{target.<label>}`: a label of the action's target.
    Target(String),
    /// `{params.<name>}`: a parameter of the action.
    Param(String),
}

impl Placeholder {
    fn parse(inner: &str) -> Result<Placeholder, String> {
        let named = |prefix: &str, name: &str| {
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                Ok(name.to_string())
            } else {
                Err(format!("placeholder {{{prefix}.{name}}} needs a name of letters, digits and '_'"))
            }
        };
        match inner.split_once('.') {
            None if inner == "kind" => Ok(Placeholder::Kind),
            None if inner == "verb" => Ok(Placeholder::Verb),
            Some(("target", label)) => Ok(Placeholder::Target(named("target", label)?)),
            Some(("params", name)) => Ok(Placeholder::Param(named("params", name)?)),
            _ => Err(format!(
                "unknown placeholder {{{inner}}} (expected {{kind}}, {{verb}}, {{target.<label>}} or {{params.<name>}})"
            )),
        }
    }

    /// The value the action gives this placeholder, if any.
    fn value<'a>(&self, action: &'a Action) -> Result<&'a str, String> {
        match self {
            Placeholder::Kind => Ok(&action.kind),
            Placeholder::Verb => Ok(action.verb()),
            Placeholder::Target(label) => action
                .target
                .get(label)
                .ok_or_else(|| format!("the action's target {} has no label {label:?}", action.target)),
            Placeholder::Param(name) => action.params.get(name).map(String::as_str).ok_or_else(|| {
                let known: Vec<&str> = action.params.keys().map(String::as_str).collect();
                format!("the action has no parameter {name:?} (it has: {})", known.join(", "))
            }),
        }
    }
}

impl fmt::Display for Placeholder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Placeholder::Kind => f.write_str("{kind}"),
            Placeholder::Verb => f.write_str("{verb}"),
            Placeholder::Target(label) => write!(f, "{{target.{label}}}"),
            Placeholder::Param(name) => write!(f, "{{params.{name}}}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Slot(Placeholder),
}

/// A parsed argv: literal text and placeholders, element by element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArgvTemplate {
    args: Vec<Vec<Piece>>,
}

impl ArgvTemplate {
    /// Parses each element's placeholders. Braces are reserved for
    /// placeholders, so a stray `{` or `}` is an error rather than text.
    pub fn parse(argv: &[String]) -> Result<ArgvTemplate, String> {
        let mut args = Vec::with_capacity(argv.len());
        for (i, arg) in argv.iter().enumerate() {
            args.push(parse_arg(arg).map_err(|e| format!("argv[{i}] {arg:?}: {e}"))?);
        }
        Ok(ArgvTemplate { args })
    }

    /// Whether element `i` holds a placeholder.
    pub fn has_placeholder(&self, i: usize) -> bool {
        self.args.get(i).is_some_and(|pieces| pieces.iter().any(|p| matches!(p, Piece::Slot(_))))
    }

    /// The argv for `action`, each substituted value checked first.
    pub fn render(&self, action: &Action) -> Result<Vec<String>, ActuatorError> {
        self.args
            .iter()
            .map(|pieces| {
                let mut arg = String::new();
                for piece in pieces {
                    match piece {
                        Piece::Text(text) => arg.push_str(text),
                        Piece::Slot(slot) => {
                            let value = slot.value(action).map_err(|why| {
                                ActuatorError::Invalid(format!("placeholder {slot} has no value: {why}"))
                            })?;
                            check_value(value).map_err(|why| {
                                ActuatorError::Invalid(format!("placeholder {slot} value {value:?} is refused: {why}"))
                            })?;
                            arg.push_str(value);
                        }
                    }
                }
                Ok(arg)
            })
            .collect()
    }
}

fn parse_arg(arg: &str) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = arg;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err("'}' without '{' (braces are reserved for placeholders)".into());
        }
        if open > 0 {
            pieces.push(Piece::Text(rest[..open].to_string()));
        }
        let close = rest[open..].find('}').ok_or("'{' without '}'")? + open;
        let inner = &rest[open + 1..close];
        if inner.contains('{') {
            return Err("'{' inside a placeholder".into());
        }
        pieces.push(Piece::Slot(Placeholder::parse(inner)?));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    if arg.contains('\0') {
        return Err("contains a NUL byte".into());
    }
    Ok(pieces)
}

/// `arg` as a POSIX shell would need it: unchanged when every character is
/// safe, else in single quotes.
pub fn shell_quote(arg: &str) -> Cow<'_, str> {
    if !arg.is_empty() && arg.chars().all(is_safe_char) {
        Cow::Borrowed(arg)
    } else {
        Cow::Owned(format!("'{}'", arg.replace('\'', r"'\''")))
    }
}

/// An argv as one line: its elements joined by spaces, each quoted if needed.
pub fn display(argv: &[String]) -> String {
    argv.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_leaves_safe_words_alone_and_quotes_the_rest() {
        assert_eq!(shell_quote("--node=node-01"), "--node=node-01");
        assert_eq!(shell_quote("two words"), "'two words'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("*"), "'*'");
        assert_eq!(display(&["/bin/echo".into(), "a b".into(), "c".into()]), "/bin/echo 'a b' c");
    }

    #[test]
    fn values_outside_the_safe_set_are_refused_with_a_reason() {
        assert_eq!(check_value("node-01"), Ok(()));
        assert_eq!(check_value("leaf-rail3:Ethernet8/3=a+b,c@d_e.f"), Ok(()));
        assert_eq!(check_value(&"a".repeat(MAX_VALUE_LEN)), Ok(()));
        assert_eq!(check_value(""), Err("it is empty".into()));
        assert!(check_value(&"a".repeat(MAX_VALUE_LEN + 1)).unwrap_err().contains("257 bytes long"));
        assert!(check_value("a b").unwrap_err().contains("contains ' '"));
        assert!(check_value("-rf").unwrap_err().contains("starts with '-'"));
        assert!(check_value("é").unwrap_err().contains("contains 'é'"));
    }

    #[test]
    fn malformed_templates_are_refused_with_the_element() {
        let parse = |arg: &str| ArgvTemplate::parse(&["/bin/x".into(), arg.into()]).unwrap_err();
        assert_eq!(parse("{node}"), "argv[1] \"{node}\": unknown placeholder {node} (expected {kind}, {verb}, {target.<label>} or {params.<name>})");
        assert_eq!(parse("--x={target.node"), "argv[1] \"--x={target.node\": '{' without '}'");
        assert!(parse("a}b").contains("'}' without '{'"));
        assert!(parse("{target.}").contains("needs a name"));
        assert!(parse("{target.a-b}").contains("needs a name"));
        assert!(parse("{{kind}}").contains("'{' inside a placeholder"));
        assert!(parse("a\0b").contains("NUL"));
    }
}
