//! The settings of an `exec` actuator.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use engine::SECOND;
use serde::{Deserialize, Serialize};

use super::actuator::Commands;
use super::actuator::ExecActuator;
use super::template::{ArgvTemplate, PlaceholderSet};
use crate::declare::{declarations, KindSettings, Like};
use crate::ActuatorConfigError;

/// The longest timeout accepted. An action holds a dispatch slot while its
/// command runs; a command that needs more than an hour is a job, not an
/// actuation, and a typo like `"10h"` should not pass as one.
const MAX_TIMEOUT: i64 = 3600 * SECOND;

/// An `exec` actuator's settings.
///
/// ```toml
/// argv = ["/usr/local/sbin/isolate-link", "--node={target.node}", "{target.netdev}"]
/// timeout = "10s"
/// env = { LC_ALL = "C" }
/// verify_argv = ["/usr/local/sbin/isolate-link", "--check", "--node={target.node}", "{target.netdev}"]
/// undo_argv = ["/usr/local/sbin/isolate-link", "--restore={prior}", "--node={target.node}", "{target.netdev}"]
/// prior_from_stdout = true
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecConfig {
    /// The command, one element per argument; never run through a shell.
    /// `argv[0]` is the program, an absolute path without placeholders. Later
    /// elements may hold `{kind}`, `{verb}`, `{target.<label>}` and
    /// `{params.<name>}`; braces are reserved for them.
    pub argv: Vec<String>,
    /// How long the command may run before it is killed and the action fails
    /// with a timeout, e.g. `"500ms"`, `"10s"`, `"2m"`; at most one hour.
    #[serde(default = "default_timeout", with = "engine::config::duration")]
    pub timeout: Duration,
    /// Environment variables set for the command, on top of the daemon's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// A command that reads the target back, with the same rules and
    /// placeholders as `argv`. Its exit status answers whether the action is
    /// in effect: 0 yes, 1 no, 2 someone else changed the target since (the
    /// first line of stdout says how); any other status fails the check.
    /// Without it the actuator cannot tell, and the engine treats the action
    /// as unknown: it neither retries nor undoes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_argv: Option<Vec<String>>,
    /// The command that restores the target, with the same rules and
    /// placeholders as `argv` plus `{prior}`: the state the action replaced,
    /// as its outcome recorded it (see `prior_from_stdout`). Without it the
    /// actuator cannot undo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undo_argv: Option<Vec<String>>,
    /// Whether the first line of `argv`'s stdout, trimmed, is the state the
    /// command replaced; it is recorded with the outcome for `{prior}`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub prior_from_stdout: bool,
    /// The actuator types whose kinds it counts as they declare them (see
    /// [`crate::declare`]).
    #[serde(default, skip_serializing_if = "Like::is_empty")]
    pub like: Like,
    /// How the safety policy counts each kind it carries out, by kind
    /// (see [`crate::declare`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kinds: BTreeMap<String, KindSettings>,
}

fn is_false(value: &bool) -> bool {
    !value
}

/// Long enough for a local tool to talk to a scheduler or a switch, short
/// enough that a hung one does not hold up the remediation behind it.
fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

impl ExecConfig {
    /// A config running `argv` with the default timeout and no extra
    /// environment.
    pub fn new(argv: impl IntoIterator<Item = impl Into<String>>) -> ExecConfig {
        ExecConfig {
            argv: argv.into_iter().map(Into::into).collect(),
            timeout: default_timeout(),
            env: BTreeMap::new(),
            verify_argv: None,
            undo_argv: None,
            prior_from_stdout: false,
            like: Like::default(),
            kinds: BTreeMap::new(),
        }
    }

    /// The kinds it declares: any command it is routed, undoable when it
    /// has an `undo_argv`.
    pub fn declarations(&self) -> Result<Vec<engine::ActionKindDecl>, ActuatorConfigError> {
        declarations(&self.like, &self.kinds, self.undo_argv.is_some())
    }

    /// Validates the settings and builds the actuator `name`.
    pub fn build(&self, name: &str) -> Result<ExecActuator, ActuatorConfigError> {
        let commands = Commands {
            execute: command("argv", &self.argv, PlaceholderSet::Action)?,
            verify: self
                .verify_argv
                .as_deref()
                .map(|argv| command("verify_argv", argv, PlaceholderSet::Action))
                .transpose()?,
            undo: self.undo_argv.as_deref().map(|argv| command("undo_argv", argv, PlaceholderSet::Undo)).transpose()?,
            prior_from_stdout: self.prior_from_stdout,
        };
        let timeout = crate::error::bounded_duration("timeout", self.timeout, MAX_TIMEOUT)?;
        for (key, value) in &self.env {
            let entry = |reason: &str| ActuatorConfigError::Entry {
                setting: "env".into(),
                key: key.clone(),
                reason: reason.into(),
            };
            if key.is_empty() || key.contains(['=', '\0']) {
                return Err(entry("is not a variable name"));
            }
            if value.contains('\0') {
                return Err(entry("has a value that contains a NUL byte"));
            }
        }
        let env = self.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        Ok(ExecActuator::new(name, self.declarations()?, commands, timeout, env))
    }
}

/// Parses the command `field`: a fixed, absolute program and the
/// placeholders of `scope`.
fn command(field: &str, argv: &[String], scope: PlaceholderSet) -> Result<ArgvTemplate, ActuatorConfigError> {
    let program = argv
        .first()
        .ok_or_else(|| ActuatorConfigError::Empty { setting: field.into(), need: "it needs at least the program" })?;
    let template = ArgvTemplate::parse(field, argv, scope)?;
    let invalid =
        |reason| ActuatorConfigError::Invalid { setting: format!("{field}[0]"), value: program.clone(), reason };
    if template.has_placeholder(0) {
        return Err(invalid("holds a placeholder; the program must be fixed"));
    }
    if !Path::new(program).is_absolute() {
        return Err(invalid("is not an absolute path (a program looked up in PATH could be anything)"));
    }
    Ok(template)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Builds `text` the way a playbook's actuator is built.
    fn build(text: &str) -> Result<ExecActuator, String> {
        let it = engine::Component { component: "actuator", name: "x", kind: "exec" };
        it.build(toml::from_str(text).unwrap(), |c: ExecConfig| c.build("x")).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_ten_seconds_and_no_extra_environment() {
        let config: ExecConfig = toml::from_str("argv = [\"/bin/true\"]").unwrap();
        assert_eq!(config, ExecConfig::new(["/bin/true"]));
        assert_eq!(config.build("x").unwrap().timeout(), Duration::from_secs(10));
    }

    #[test]
    fn the_documented_example_round_trips_and_builds() {
        let text = r#"
            argv = ["/usr/local/sbin/isolate-link", "--node={target.node}", "{target.netdev}"]
            timeout = "2m"
            env = { LC_ALL = "C" }
            verify_argv = ["/usr/local/sbin/isolate-link", "--check", "--node={target.node}", "{target.netdev}"]
            undo_argv = ["/usr/local/sbin/isolate-link", "--restore={prior}", "--node={target.node}", "{target.netdev}"]
            prior_from_stdout = true
        "#;
        let config: ExecConfig = toml::from_str(text).unwrap();
        assert_eq!(toml::from_str::<ExecConfig>(&toml::to_string(&config).unwrap()).unwrap(), config);
        assert!(config.prior_from_stdout);
        assert_eq!(config.undo_argv.as_ref().unwrap()[1], "--restore={prior}");
        assert_eq!(config.build("x").unwrap().timeout(), Duration::from_secs(120));
    }

    #[test]
    fn refusals_name_the_setting_for_callers_that_match() {
        let config =
            |argv: &[&str]| ExecConfig { timeout: Duration::from_secs(7200), ..ExecConfig::new(argv.iter().copied()) };
        match config(&["/bin/x"]).build("x") {
            Err(ActuatorConfigError::OutOfRange { setting, value, .. }) => {
                assert_eq!((setting.as_str(), value.as_str()), ("timeout", "2h"))
            }
            other => panic!("{other:?}"),
        }
        match config(&["x"]).build("x") {
            Err(ActuatorConfigError::Invalid { setting, value, .. }) => {
                assert_eq!((setting.as_str(), value.as_str()), ("argv[0]", "x"))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(config(&[]).build("x"), Err(ActuatorConfigError::Empty { setting, .. }) if setting == "argv"));
    }

    #[test]
    fn unusable_settings_are_refused_with_a_reason() {
        let cases = [
            ("argv = []", "argv is empty"),
            ("argv = [\"bin/tool\"]", "argv[0] \"bin/tool\" is not an absolute path"),
            ("argv = [\"/opt/{target.node}/tool\"]", "argv[0] \"/opt/{target.node}/tool\" holds a placeholder"),
            ("argv = [\"/bin/x\", \"{node}\"]", "argv[1] \"{node}\": unknown placeholder {node}"),
            ("argv = [\"/bin/x\"]\ntimeout = \"soon\"", "timeout: invalid duration \"soon\""),
            ("argv = [\"/bin/x\"]\ntimeout = \"0\"", "timeout \"0s\" must be above 0 and at most 3600s"),
            ("argv = [\"/bin/x\"]\ntimeout = \"2h\"", "timeout \"2h\" must be above 0"),
            ("argv = [\"/bin/x\"]\nenv = { \"A=B\" = \"1\" }", "env: \"A=B\" is not a variable name"),
            ("argv = [\"/bin/x\"]\nshell = true", "unknown field `shell`"),
            ("argv = [\"/bin/x\"]\nverify_argv = []", "verify_argv is empty"),
            ("argv = [\"/bin/x\"]\nverify_argv = [\"check\"]", "verify_argv[0] \"check\" is not an absolute path"),
            (
                "argv = [\"/bin/x\"]\nverify_argv = [\"/bin/check\", \"{prior}\"]",
                "verify_argv[1] \"{prior}\": placeholder {prior} is only available in undo_argv",
            ),
            (
                "argv = [\"/bin/x\", \"{prior}\"]",
                "argv[1] \"{prior}\": placeholder {prior} is only available in undo_argv",
            ),
            ("argv = [\"/bin/x\"]\nundo_argv = [\"./undo\"]", "undo_argv[0] \"./undo\" is not an absolute path"),
            (
                "argv = [\"/bin/x\"]\nundo_argv = [\"/opt/{prior}\"]",
                "undo_argv[0] \"/opt/{prior}\" holds a placeholder",
            ),
            (
                "argv = [\"/bin/x\"]\nundo_argv = [\"/bin/x\", \"{node}\"]",
                "undo_argv[1] \"{node}\": unknown placeholder",
            ),
            ("argv = [\"/bin/x\"]\nprior_from_stdout = \"yes\"", "invalid type: string \"yes\", expected a boolean"),
        ];
        for (text, expected) in cases {
            let err = build(text).err().unwrap_or_else(|| panic!("{text} was accepted"));
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
