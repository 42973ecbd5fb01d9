//! Error lists and the build error of components.
//!
//! Loading a rule directory, building a playbook's actuators or a config's
//! sensors reports every problem at once, not only the first: those return
//! an [`Errors`] list, which is itself an [`std::error::Error`] (one problem
//! per line), so callers propagate it with `?` instead of joining strings.

use std::fmt;
use std::sync::Arc;

/// Every problem found, in the order found; never empty when returned as
/// an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Errors<E>(pub Vec<E>);

impl<E> Errors<E> {
    /// `Ok(value)` when `errors` is empty, else the list.
    pub fn or_ok<T>(errors: Vec<E>, value: T) -> Result<T, Errors<E>> {
        if errors.is_empty() {
            Ok(value)
        } else {
            Err(Errors(errors))
        }
    }
}

impl<E: fmt::Display> fmt::Display for Errors<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl<E: fmt::Debug + fmt::Display> std::error::Error for Errors<E> {}

impl<E> std::ops::Deref for Errors<E> {
    type Target = [E];
    fn deref(&self) -> &[E] {
        &self.0
    }
}

impl<E> From<E> for Errors<E> {
    fn from(e: E) -> Errors<E> {
        Errors(vec![e])
    }
}

impl<E> IntoIterator for Errors<E> {
    type Item = E;
    type IntoIter = std::vec::IntoIter<E>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a, E> IntoIterator for &'a Errors<E> {
    type Item = &'a E;
    type IntoIter = std::slice::Iter<'a, E>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A sensor or actuator of the configuration could not be built; names the
/// component, so a list of them reads as a report of the config.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The `type` is not one this build knows.
    #[error("{component} {name:?}: unknown kind {kind:?} (known kinds: {known})")]
    UnknownKind {
        /// `sensor` or `actuator`.
        component: &'static str,
        /// Its name in the config.
        name: String,
        /// The kind asked for.
        kind: String,
        /// The kinds known, comma-separated.
        known: String,
    },
    /// The kind exists but this binary was built without it.
    #[error("{component} {name:?}: kind {kind:?} is not in this build: {hint}")]
    NotInBuild {
        /// `sensor` or `actuator`.
        component: &'static str,
        /// Its name in the config.
        name: String,
        /// Its kind.
        kind: String,
        /// How to get a build with it.
        hint: String,
    },
    /// Its settings were refused: not of its schema (a [`SchemaError`]), or
    /// refused by the component's own check (its crate's error, kept as it
    /// is: [`BuildError::source_as`] reads it back).
    #[error("{component} {name:?} (kind {kind:?}): {source}")]
    Invalid {
        /// `sensor` or `actuator`.
        component: &'static str,
        /// Its name in the config.
        name: String,
        /// Its kind.
        kind: String,
        /// Why.
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
}

/// Settings that are not of a component's schema: an unknown setting, a
/// wrong type, a duration that does not parse (serde's words).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub String);

impl PartialEq for BuildError {
    /// Build errors compare by what they say: the source of a refusal is
    /// another crate's error, compared by its message.
    fn eq(&self, other: &BuildError) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Eq for BuildError {}

impl BuildError {
    /// The name of the component, as the config calls it.
    pub fn name(&self) -> &str {
        match self {
            BuildError::UnknownKind { name, .. }
            | BuildError::NotInBuild { name, .. }
            | BuildError::Invalid { name, .. } => name,
        }
    }

    /// Why the settings were refused, as the component's own error `E`
    /// (an actuator's or a sensor's configuration error), if it is one.
    pub fn source_as<E: std::error::Error + 'static>(&self) -> Option<&E> {
        match self {
            BuildError::Invalid { source, .. } => source.downcast_ref::<E>(),
            _ => None,
        }
    }
}

/// A component of the configuration being built: a sensor or an actuator
/// of some kind, by its name. Makes its settings, and names it in errors.
#[derive(Debug, Clone, Copy)]
pub struct Component<'a> {
    /// `sensor` or `actuator`.
    pub component: &'static str,
    /// Its name in the config.
    pub name: &'a str,
    /// Its kind (`type`).
    pub kind: &'a str,
}

impl Component<'_> {
    /// Deserializes `settings` as `C` and builds the component with `build`;
    /// either failure becomes [`BuildError::Invalid`], the component's own
    /// error kept as it is.
    pub fn build<C, T, E>(&self, settings: toml::Table, build: impl FnOnce(C) -> Result<T, E>) -> Result<T, BuildError>
    where
        C: serde::de::DeserializeOwned,
        E: std::error::Error + Send + Sync + 'static,
    {
        let config: C = self.settings(settings)?;
        build(config).map_err(|e| self.invalid(e))
    }

    /// Deserializes `settings` as `C`; a value of the wrong type or one that
    /// does not parse names its key (`timeout: invalid value: string
    /// "soon", expected a duration`), so that a message about a value says
    /// which setting it is.
    pub fn settings<C: serde::de::DeserializeOwned>(&self, settings: toml::Table) -> Result<C, BuildError> {
        settings.try_into().map_err(|e: toml::de::Error| self.invalid(SchemaError(keyed(&e))))
    }

    /// Its settings were refused: `source` says why.
    pub fn invalid(&self, source: impl std::error::Error + Send + Sync + 'static) -> BuildError {
        BuildError::Invalid {
            component: self.component,
            name: self.name.to_string(),
            kind: self.kind.to_string(),
            source: Arc::new(source),
        }
    }

    /// Its kind is none of `known`.
    pub fn unknown(&self, known: &[&str]) -> BuildError {
        BuildError::UnknownKind {
            component: self.component,
            name: self.name.to_string(),
            kind: self.kind.to_string(),
            known: known.join(", "),
        }
    }

    /// Its kind is not in this build; `hint` says how to get one with it.
    pub fn not_in_build(&self, hint: &str) -> BuildError {
        BuildError::NotInBuild {
            component: self.component,
            name: self.name.to_string(),
            kind: self.kind.to_string(),
            hint: hint.to_string(),
        }
    }
}

/// `key: message` for an error of a table's deserialization: toml keeps the
/// key (dotted, from the table's top) out of [`toml::de::Error::message`]
/// and writes it on a line of its own, ``in `key` ``, in its display.
fn keyed(e: &toml::de::Error) -> String {
    let message = e.message().trim();
    let shown = e.to_string();
    match shown.rsplit_once("\nin `").and_then(|(_, key)| key.trim_end().strip_suffix('`')) {
        Some(key) if !key.is_empty() => format!("{key}: {message}"),
        _ => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_that_do_not_deserialize_name_the_key_of_the_value() {
        #[derive(Debug, serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        #[allow(dead_code)]
        struct Settings {
            speed: f64,
            #[serde(default)]
            inner: Option<Inner>,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            every: u32,
        }
        let it = Component { component: "sensor", name: "s", kind: "k" };
        let err = |text: &str| it.settings::<Settings>(toml::from_str(text).unwrap()).unwrap_err().to_string();
        assert_eq!(err("speed = \"x\""), "sensor \"s\" (kind \"k\"): speed: invalid type: string \"x\", expected f64");
        assert_eq!(
            err("speed = 1.0\n[inner]\nevery = -1"),
            "sensor \"s\" (kind \"k\"): inner.every: invalid value: integer `-1`, expected u32"
        );
        // A key that is not a setting names itself; nothing is added.
        assert!(
            err("sped = 1.0").starts_with("sensor \"s\" (kind \"k\"): unknown field `sped`"),
            "{}",
            err("sped = 1.0")
        );
        assert_eq!(err(""), "sensor \"s\" (kind \"k\"): missing field `speed`");
    }

    #[test]
    fn a_list_shows_one_problem_per_line_and_is_an_error() {
        let errors: Result<(), Errors<String>> = Errors::or_ok(vec!["a: bad".into(), "b: worse".into()], ());
        let error: Box<dyn std::error::Error> = Box::new(errors.unwrap_err());
        assert_eq!(error.to_string(), "a: bad\nb: worse");
        assert_eq!(Errors::<String>::or_ok(Vec::new(), 7), Ok(7));
    }

    #[test]
    fn a_build_error_names_the_component() {
        let it = Component { component: "actuator", name: "wd", kind: "pfcwd" };
        let e = it.invalid(SchemaError("no [gnmi]".into()));
        assert_eq!(e.to_string(), "actuator \"wd\" (kind \"pfcwd\"): no [gnmi]");
        assert_eq!(e.source_as::<SchemaError>(), Some(&SchemaError("no [gnmi]".into())));
    }
}
