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
//! | `{prior}` | in `undo_argv` only: the state the action replaced |
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
//! verify_argv = ["/usr/local/sbin/isolate-link", "--check", "--node={target.node}", "--netdev", "{target.netdev}"]
//! undo_argv = ["/usr/local/sbin/isolate-link", "--restore={prior}", "--node={target.node}", "--netdev", "{target.netdev}"]
//! prior_from_stdout = true
//! ```
//!
//! Each command runs with stdin closed and the daemon's environment plus
//! `env`; stdout and stderr are kept up to 4 KiB each for the outcome. It is
//! killed when the timeout passes. Only the command itself is killed: a
//! command that starts children of its own should `exec` into the last one
//! or end them itself.
//!
//! # Verify and undo
//!
//! The engine reads a target back before it undoes an action, after an
//! attempt failed or timed out, and for actions a crash interrupted. With
//! `verify_argv` the actuator answers from that command's exit status:
//!
//! | status | [`Verification`](engine::Verification) |
//! |---|---|
//! | 0 | `InEffect` |
//! | 1 | `NotInEffect` |
//! | 2 | `Changed`, with the first line of stdout (or "changed by someone else") |
//! | other, a signal | [`ActuatorError::Failed`](engine::ActuatorError::Failed) |
//!
//! and a timeout is [`ActuatorError::Timeout`](engine::ActuatorError::Timeout).
//! Without `verify_argv` the answer is `Unknown`, and the engine neither
//! retries nor undoes what it cannot see.
//!
//! `undo_argv` restores the target; without it the actuator cannot undo
//! ([`ActuatorError::NotSupported`](engine::ActuatorError::NotSupported)).
//! With `prior_from_stdout = true`, the first line of `argv`'s stdout,
//! trimmed, is recorded as the outcome's `prior` (a JSON string) and fills
//! `{prior}`, so a command can report the value it replaced and its undo put
//! it back. `{prior}` is checked like every other value; a prior that is not
//! a JSON string, or that is missing, is refused and nothing runs.
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
