//! The settings of an `exec` actuator.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use engine::time::{parse_duration, Span};
use engine::SECOND;
use serde::{Deserialize, Serialize};

use super::actuator::ExecActuator;
use super::template::ArgvTemplate;

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
    #[serde(default = "default_timeout")]
    pub timeout: String,
    /// Environment variables set for the command, on top of the daemon's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// Long enough for a local tool to talk to a scheduler or a switch, short
/// enough that a hung one does not hold up the remediation behind it.
fn default_timeout() -> String {
    "10s".into()
}

impl ExecConfig {
    /// A config running `argv` with the default timeout and no extra
    /// environment.
    pub fn new(argv: impl IntoIterator<Item = impl Into<String>>) -> ExecConfig {
        ExecConfig {
            argv: argv.into_iter().map(Into::into).collect(),
            timeout: default_timeout(),
            env: BTreeMap::new(),
        }
    }

    /// Validates the settings and builds the actuator `name`.
    pub fn build(&self, name: &str) -> Result<ExecActuator, String> {
        let program = self.argv.first().ok_or("argv is empty; it needs at least the program")?;
        let template = ArgvTemplate::parse(&self.argv)?;
        if template.has_placeholder(0) {
            return Err(format!("argv[0] {program:?} holds a placeholder; the program must be fixed"));
        }
        if !Path::new(program).is_absolute() {
            return Err(format!(
                "argv[0] {program:?} is not an absolute path (a program looked up in PATH could be anything)"
            ));
        }
        let timeout = parse_duration(&self.timeout).map_err(|e| format!("timeout: {e}"))?;
        if timeout <= 0 || timeout > MAX_TIMEOUT {
            return Err(format!("timeout {:?} must be above 0 and at most {}", self.timeout, Span(MAX_TIMEOUT)));
        }
        for (key, value) in &self.env {
            if key.is_empty() || key.contains(['=', '\0']) {
                return Err(format!("env: {key:?} is not a variable name"));
            }
            if value.contains('\0') {
                return Err(format!("env: the value of {key} contains a NUL byte"));
            }
        }
        Ok(ExecActuator::new(
            name,
            template,
            Duration::from_nanos(timeout as u64),
            self.env.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(text: &str) -> Result<ExecActuator, String> {
        toml::from_str::<ExecConfig>(text).map_err(|e| e.to_string())?.build("x")
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
        "#;
        let config: ExecConfig = toml::from_str(text).unwrap();
        assert_eq!(toml::from_str::<ExecConfig>(&toml::to_string(&config).unwrap()).unwrap(), config);
        assert_eq!(config.build("x").unwrap().timeout(), Duration::from_secs(120));
    }

    #[test]
    fn unusable_settings_are_refused_with_a_reason() {
        let cases = [
            ("argv = []", "argv is empty"),
            ("argv = [\"bin/tool\"]", "argv[0] \"bin/tool\" is not an absolute path"),
            ("argv = [\"/opt/{target.node}/tool\"]", "argv[0] \"/opt/{target.node}/tool\" holds a placeholder"),
            ("argv = [\"/bin/x\", \"{node}\"]", "argv[1] \"{node}\": unknown placeholder {node}"),
            ("argv = [\"/bin/x\"]\ntimeout = \"soon\"", "timeout: invalid duration \"soon\""),
            ("argv = [\"/bin/x\"]\ntimeout = \"0\"", "timeout \"0\" must be above 0 and at most 3600s"),
            ("argv = [\"/bin/x\"]\ntimeout = \"2h\"", "timeout \"2h\" must be above 0"),
            ("argv = [\"/bin/x\"]\nenv = { \"A=B\" = \"1\" }", "env: \"A=B\" is not a variable name"),
            ("argv = [\"/bin/x\"]\nshell = true", "unknown field `shell`"),
        ];
        for (text, expected) in cases {
            let err = build(text).err().unwrap_or_else(|| panic!("{text} was accepted"));
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
