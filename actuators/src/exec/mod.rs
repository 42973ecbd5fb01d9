//! The `exec` actuator: runs a configured command for local tooling.
//!
//! The command is an argv, never a shell line: the program gets its
//! arguments exactly as configured, one element each, and nothing expands
//! `*`, `$VAR` or `$(…)`. Elements may carry placeholders that the action
//! fills in:
//!
//! | placeholder | value |
//! |---|---|
//! | `{kind}` | the action kind, e.g. `rail.drain` |
//! | `{verb}` | its verb, e.g. `drain` |
//! | `{target.<label>}` | a target label, e.g. `{target.node}` |
//! | `{params.<name>}` | a parameter, e.g. `{params.reason}` |
//!
//! Action values come from sensors, rules and the topology, so each one is
//! checked before it reaches argv: it must match `^[A-Za-z0-9._:@/=+,-]{1,256}$`
//! and must not start with `-` (it would read as an option). A missing or
//! refused value is [`ActuatorError::Invalid`](engine::ActuatorError::Invalid)
//! naming the placeholder and the value; nothing runs.
//!
//! ```toml
//! argv = ["/usr/local/sbin/isolate-link", "--node={target.node}", "--netdev", "{target.netdev}"]
//! timeout = "10s"
//! env = { LC_ALL = "C" }
//! ```
//!
//! The command runs with stdin closed and the daemon's environment plus
//! `env`; stdout and stderr are kept up to 4 KiB each for the outcome. It is
//! killed when the timeout passes. Only the command itself is killed: a
//! command that starts children of its own should `exec` into the last one
//! or end them itself.
//!
//! - [`config`]: [`ExecConfig`], the user's settings;
//! - [`template`]: placeholders, value checks and shell quoting for display;
//! - [`actuator`]: [`ExecActuator`], which renders and runs the command.

pub mod actuator;
pub mod config;
pub mod template;

pub use actuator::ExecActuator;
pub use config::ExecConfig;

#[cfg(test)]
mod tests;
