//! argv templates: parsing placeholders once, filling them per action with
//! checked values, and showing the result the way a shell user would type it.

use std::borrow::Cow;
use std::fmt;

use engine::{Action, ActuatorError, Prior};
use serde_json::Value;

pub use crate::error::{PlaceholderError, PlaceholderSet};
use crate::{ActuatorConfigError, LabelError};

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
pub fn check_value(value: &str) -> Result<(), LabelError> {
    if value.is_empty() {
        return Err(LabelError::Empty);
    }
    if value.len() > MAX_VALUE_LEN {
        return Err(LabelError::TooLong { len: value.len(), max: MAX_VALUE_LEN });
    }
    if let Some(found) = value.chars().find(|c| !is_safe_char(*c)) {
        return Err(LabelError::Char { found, allowed: "values may only contain A-Z a-z 0-9 . _ : @ / = + , -" });
    }
    if value.starts_with('-') {
        return Err(LabelError::Leading { found: '-' });
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
    /// `{prior}`: the target's state before the action, as its outcome
    /// recorded it; only in an undo command ([`PlaceholderSet::Undo`]).
    Prior,
}

impl Placeholder {
    fn parse(inner: &str, scope: PlaceholderSet) -> Result<Placeholder, PlaceholderError> {
        let named = |prefix: &'static str, name: &str| {
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                Ok(name.to_string())
            } else {
                Err(PlaceholderError::BadName { prefix, name: name.to_string() })
            }
        };
        match inner.split_once('.') {
            None if inner == "kind" => Ok(Placeholder::Kind),
            None if inner == "verb" => Ok(Placeholder::Verb),
            Some(("target", label)) => Ok(Placeholder::Target(named("target", label)?)),
            Some(("params", name)) => Ok(Placeholder::Param(named("params", name)?)),
            None if inner == "prior" => match scope {
                PlaceholderSet::Undo => Ok(Placeholder::Prior),
                PlaceholderSet::Action => Err(PlaceholderError::PriorOutsideUndo),
            },
            _ => Err(PlaceholderError::Unknown { name: inner.to_string(), scope }),
        }
    }

    /// The value this placeholder takes for `action` and the `prior` state
    /// of the outcome being undone. The error completes "placeholder {slot} …".
    fn value<'a>(&self, action: &'a Action, prior: Option<&'a Prior>) -> Result<&'a str, String> {
        match self {
            Placeholder::Kind => Ok(&action.kind),
            Placeholder::Verb => Ok(action.verb()),
            Placeholder::Target(label) => action
                .target
                .get(label)
                .ok_or_else(|| format!("has no value: the action's target {} has no label {label:?}", action.target)),
            Placeholder::Param(name) => action.params.get(name).map(String::as_str).ok_or_else(|| {
                let known: Vec<&str> = action.params.keys().map(String::as_str).collect();
                format!("has no value: the action has no parameter {name:?} (it has: {})", known.join(", "))
            }),
            Placeholder::Prior => match prior.map(Prior::as_json) {
                Some(Value::String(value)) => Ok(value),
                // Only a string is a value a command can take as is; turning
                // a number or an object into text would be a guess.
                Some(other) => Err(format!("value {other} is refused: the outcome's prior is not a JSON string")),
                None => Err("has no value: the outcome recorded no prior state".into()),
            },
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
            Placeholder::Prior => f.write_str("{prior}"),
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
    /// Parses each element's placeholders, allowing those of `scope`.
    /// Braces are reserved for placeholders, so a stray `{` or `}` is an
    /// error rather than text. Errors name the element as `field[i]`.
    pub fn parse(field: &str, argv: &[String], scope: PlaceholderSet) -> Result<ArgvTemplate, ActuatorConfigError> {
        let mut args = Vec::with_capacity(argv.len());
        for (i, arg) in argv.iter().enumerate() {
            args.push(parse_arg(arg, scope).map_err(|source| ActuatorConfigError::Template {
                setting: format!("{field}[{i}]"),
                value: arg.clone(),
                source,
            })?);
        }
        Ok(ArgvTemplate { args })
    }

    /// Whether element `i` holds a placeholder.
    pub fn has_placeholder(&self, i: usize) -> bool {
        self.args.get(i).is_some_and(|pieces| pieces.iter().any(|p| matches!(p, Piece::Slot(_))))
    }

    /// The argv for `action` (and, for `{prior}`, the `prior` state of the
    /// outcome being undone), each substituted value checked first.
    pub fn render(&self, action: &Action, prior: Option<&Prior>) -> Result<Vec<String>, ActuatorError> {
        self.args
            .iter()
            .map(|pieces| {
                let mut arg = String::new();
                for piece in pieces {
                    match piece {
                        Piece::Text(text) => arg.push_str(text),
                        Piece::Slot(slot) => {
                            let value = slot
                                .value(action, prior)
                                .map_err(|why| ActuatorError::Invalid(format!("placeholder {slot} {why}")))?;
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

fn parse_arg(arg: &str, scope: PlaceholderSet) -> Result<Vec<Piece>, PlaceholderError> {
    let mut pieces = Vec::new();
    let mut rest = arg;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return Err(PlaceholderError::UnopenedBrace);
        }
        if open > 0 {
            pieces.push(Piece::Text(rest[..open].to_string()));
        }
        let close = rest[open..].find('}').ok_or(PlaceholderError::UnclosedBrace)? + open;
        let inner = &rest[open + 1..close];
        if inner.contains('{') {
            return Err(PlaceholderError::NestedBrace);
        }
        pieces.push(Piece::Slot(Placeholder::parse(inner, scope)?));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    if arg.contains('\0') {
        return Err(PlaceholderError::Nul);
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
        assert_eq!(check_value(""), Err(LabelError::Empty));
        let too_long = check_value(&"a".repeat(MAX_VALUE_LEN + 1)).unwrap_err();
        assert_eq!(too_long, LabelError::TooLong { len: 257, max: MAX_VALUE_LEN });
        assert_eq!(too_long.to_string(), "it is 257 bytes long, above the limit of 256");
        assert!(matches!(check_value("a b"), Err(LabelError::Char { found: ' ', .. })));
        assert_eq!(
            check_value("a b").unwrap_err().to_string(),
            "it contains ' '; values may only contain A-Z a-z 0-9 . _ : @ / = + , -"
        );
        assert_eq!(check_value("-rf"), Err(LabelError::Leading { found: '-' }));
        assert!(check_value("-rf").unwrap_err().to_string().contains("starts with '-'"));
        assert!(matches!(check_value("é"), Err(LabelError::Char { found: 'é', .. })));
    }

    #[test]
    fn malformed_templates_are_refused_with_the_element() {
        let parse = |arg: &str| {
            ArgvTemplate::parse("argv", &["/bin/x".into(), arg.into()], PlaceholderSet::Action).unwrap_err().to_string()
        };
        assert_eq!(parse("{node}"), "argv[1] \"{node}\": unknown placeholder {node} (expected {kind}, {verb}, {target.<label>} or {params.<name>})");
        assert_eq!(parse("--x={target.node"), "argv[1] \"--x={target.node\": '{' without '}'");
        assert!(parse("a}b").contains("'}' without '{'"));
        assert!(parse("{target.}").contains("needs a name"));
        assert!(parse("{target.a-b}").contains("needs a name"));
        assert!(parse("{{kind}}").contains("'{' inside a placeholder"));
        assert!(parse("a\0b").contains("NUL"));
        assert_eq!(
            parse("--was={prior}"),
            "argv[1] \"--was={prior}\": placeholder {prior} is only available in undo_argv \
             (it is the state the action replaced, known once the action ran)"
        );
    }

    #[test]
    fn an_undo_template_takes_prior_and_names_its_field() {
        let argv = ["/bin/x".to_string(), "--restore={prior}".to_string()];
        assert!(ArgvTemplate::parse("undo_argv", &argv, PlaceholderSet::Undo).unwrap().has_placeholder(1));
        let err =
            ArgvTemplate::parse("undo_argv", &["/bin/x".into(), "{node}".into()], PlaceholderSet::Undo).unwrap_err();
        match &err {
            ActuatorConfigError::Template {
                setting,
                value,
                source: PlaceholderError::Unknown { name, scope: PlaceholderSet::Undo },
            } => {
                assert_eq!((setting.as_str(), value.as_str(), name.as_str()), ("undo_argv[1]", "{node}", "node"));
            }
            other => panic!("{other:?}"),
        }
        let err = err.to_string();
        assert!(err.starts_with("undo_argv[1] \"{node}\": unknown placeholder {node}"), "{err}");
        assert!(err.ends_with("{params.<name>} or {prior})"), "{err}");
    }

    #[test]
    fn prior_must_be_a_json_string_that_passes_the_value_check() {
        let template =
            ArgvTemplate::parse("undo_argv", &["/bin/x".into(), "--restore={prior}".into()], PlaceholderSet::Undo)
                .unwrap();
        let action = Action { kind: "qos.set".into(), target: Default::default(), params: Default::default() };
        let render = |prior: Option<Value>| template.render(&action, prior.map(Prior::from_json).as_ref());
        assert_eq!(render(Some(Value::from("ecn-min=3"))).unwrap(), ["/bin/x", "--restore=ecn-min=3"]);
        let refused = |prior: Option<Value>| match render(prior) {
            Err(ActuatorError::Invalid(message)) => message,
            other => panic!("{other:?}"),
        };
        assert_eq!(refused(None), "placeholder {prior} has no value: the outcome recorded no prior state");
        assert_eq!(
            refused(Some(Value::from(3))),
            "placeholder {prior} value 3 is refused: the outcome's prior is not a JSON string"
        );
        assert!(refused(Some(Value::Null)).starts_with("placeholder {prior} value null is refused"));
        assert!(refused(Some(Value::from("3; reboot")))
            .starts_with("placeholder {prior} value \"3; reboot\" is refused: it contains ';'"));
        assert!(refused(Some(Value::from("--all"))).contains("starts with '-'"));
    }
}
