//! The running `exec` actuator.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use async_trait::async_trait;
use engine::{Action, ActionKindDecl, Actuator, ActuatorError, Outcome, Prior, RequestPlan, Verification};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::template::{self, ArgvTemplate};

/// How much of stdout and of stderr is kept for the outcome. Enough for a
/// tool's message or an error; a command that prints megabytes must not
/// grow the daemon's memory or its ledger. The rest is read and dropped, so
/// the command never blocks on a full pipe.
pub const OUTPUT_LIMIT: usize = 4096;

/// What a verify command's status 2 means when it prints no reason.
const CHANGED_WITHOUT_REASON: &str = "changed by someone else";

/// Runs a configured command, built from an [`ExecConfig`](super::ExecConfig).
#[derive(Debug, Clone)]
pub struct ExecActuator {
    name: String,
    kinds: Vec<ActionKindDecl>,
    commands: Commands,
    timeout: Duration,
    env: Vec<(String, String)>,
}

/// The validated commands of an actuator.
#[derive(Debug, Clone)]
pub(super) struct Commands {
    /// `argv`: carries the action out.
    pub(super) execute: ArgvTemplate,
    /// `verify_argv`: reads the target back, if configured.
    pub(super) verify: Option<ArgvTemplate>,
    /// `undo_argv`: restores the target, if configured.
    pub(super) undo: Option<ArgvTemplate>,
    /// `prior_from_stdout`: `execute`'s first stdout line is the prior state.
    pub(super) prior_from_stdout: bool,
}

/// Which of its commands an actuator runs, for logs.
#[derive(Debug, Clone, Copy)]
enum Role {
    Execute,
    Verify,
    Undo,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::Execute => "execute",
            Role::Verify => "verify",
            Role::Undo => "undo",
        }
    }
}

impl ExecActuator {
    pub(super) fn new(
        name: &str,
        kinds: Vec<ActionKindDecl>,
        commands: Commands,
        timeout: Duration,
        env: Vec<(String, String)>,
    ) -> Self {
        ExecActuator { name: name.to_string(), kinds, commands, timeout, env }
    }

    /// How long each command may run.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The argv that `action` runs, every placeholder value checked.
    pub fn render(&self, action: &Action) -> Result<Vec<String>, ActuatorError> {
        self.commands.execute.render(action, None)
    }

    /// The argv that undoes `action`, whose execution gave `applied`, every
    /// placeholder value (`{prior}` too) checked.
    pub fn render_undo(&self, action: &Action, applied: &Outcome) -> Result<Vec<String>, ActuatorError> {
        let undo = self.commands.undo.as_ref().ok_or_else(|| {
            ActuatorError::NotSupported(format!("{} has no undo_argv, so it cannot undo {}", self.name, action.kind))
        })?;
        undo.render(action, applied.prior.as_ref())
    }

    /// Runs `argv` (whose display is `request`) to its end, within the
    /// timeout, keeping the start of its output. Whether its status is a
    /// success is for the caller to say.
    async fn run(
        &self,
        role: Role,
        action: &Action,
        argv: &[String],
        request: &str,
    ) -> Result<Finished, ActuatorError> {
        let program = argv.first().ok_or_else(|| ActuatorError::Invalid("the command has no program".into()))?;
        tracing::info!(
            message = "Running command.",
            actuator = %self.name,
            role = role.as_str(),
            action = %action,
            argv = %request,
        );
        let mut child = Command::new(program)
            .args(&argv[1..])
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A timed-out or abandoned run must not leave the command behind.
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| ActuatorError::Failed(format!("cannot start {program}: {e}")))?;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let run = async { tokio::join!(child.wait(), capture(stdout), capture(stderr)) };
        let (status, stdout, stderr) = match tokio::time::timeout(self.timeout, run).await {
            Ok(done) => done,
            Err(_) => {
                // Dropping the child kills it too; killing first says so in one place.
                let _ = child.start_kill();
                let ms = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
                tracing::warn!(
                    message = "Command timed out.",
                    actuator = %self.name,
                    role = role.as_str(),
                    argv = %request,
                    timeout_ms = ms,
                );
                return Err(ActuatorError::Timeout(ms));
            }
        };
        let status = status.map_err(|e| ActuatorError::Failed(format!("waiting for {program}: {e}")))?;
        Ok(Finished { program: program.clone(), status, stdout, stderr })
    }

    /// The summary of a command that had to exit 0, or the failure it is.
    fn succeeded(&self, role: Role, request: &str, finished: &Finished) -> Result<String, ActuatorError> {
        if !finished.status.success() {
            return Err(self.failed(role, request, finished));
        }
        tracing::info!(
            message = "Command done.",
            actuator = %self.name,
            role = role.as_str(),
            argv = %request,
            status = %finished.status,
        );
        let mut summary = format!("{} exited with {}", finished.program, finished.status);
        for (name, text) in [("stdout", finished.stdout.text()), ("stderr", finished.stderr.text())] {
            if !text.is_empty() {
                summary.push_str(&format!("; {name}: {text:?}"));
            }
        }
        Ok(summary)
    }

    /// The failure of a command that exited with a status it may not have.
    fn failed(&self, role: Role, request: &str, finished: &Finished) -> ActuatorError {
        let stderr = finished.stderr.text();
        tracing::warn!(
            message = "Command failed.",
            actuator = %self.name,
            role = role.as_str(),
            argv = %request,
            status = %finished.status,
            stderr = %stderr,
        );
        let mut message = format!("{} exited with {}", finished.program, finished.status);
        if !stderr.is_empty() {
            message.push_str(&format!("; stderr: {stderr:?}"));
        }
        ActuatorError::Failed(message)
    }

    /// The prior state `execute`'s command reported on its first stdout
    /// line, recorded as a JSON string.
    fn prior(&self, action: &Action, stdout: &Captured) -> Option<Prior> {
        // The command has changed the target by now, so a missing prior is
        // not a failure (a retry would change it again): the action stands,
        // and only an undo that needs `{prior}` will be refused.
        let why = match stdout.first_line() {
            Some(line) if !line.is_empty() => return Some(Prior::from_json(serde_json::Value::String(line))),
            Some(_) => "the command printed no first line",
            None => "the first line is longer than the output kept",
        };
        tracing::warn!(
            message = "No prior state recorded; an undo using {prior} will be refused.",
            actuator = %self.name,
            action = %action,
            reason = why,
        );
        None
    }
}

/// A command that ran to its end.
#[derive(Debug)]
struct Finished {
    program: String,
    status: ExitStatus,
    stdout: Captured,
    stderr: Captured,
}

/// What was read from one of the command's pipes.
#[derive(Debug, Default)]
struct Captured {
    kept: Vec<u8>,
    total: usize,
}

impl Captured {
    /// The text, with a note of what was cut.
    fn text(&self) -> String {
        let mut text = String::from_utf8_lossy(&self.kept).trim_end().to_string();
        if self.total > self.kept.len() {
            text.push_str(&format!("… ({} more bytes)", self.total - self.kept.len()));
        }
        text
    }

    /// The first line, trimmed; `None` when the limit cut it short.
    fn first_line(&self) -> Option<String> {
        let end = self.kept.iter().position(|&b| b == b'\n');
        if end.is_none() && self.total > self.kept.len() {
            return None;
        }
        let line = &self.kept[..end.unwrap_or(self.kept.len())];
        Some(String::from_utf8_lossy(line).trim().to_string())
    }
}

/// Reads a pipe to its end, keeping the first [`OUTPUT_LIMIT`] bytes.
async fn capture(pipe: Option<impl AsyncRead + Unpin>) -> Captured {
    let mut captured = Captured::default();
    let Some(mut pipe) = pipe else { return captured };
    let mut buf = [0u8; 4096];
    loop {
        match pipe.read(&mut buf).await {
            Ok(0) => break,
            Ok(n) => {
                let room = OUTPUT_LIMIT - captured.kept.len();
                captured.kept.extend_from_slice(&buf[..n.min(room)]);
                captured.total += n;
            }
            Err(error) => {
                tracing::debug!(message = "Reading command output failed.", %error);
                break;
            }
        }
    }
    captured
}

#[async_trait]
impl Actuator for ExecActuator {
    fn name(&self) -> &str {
        &self.name
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        let argv = self.render(action)?;
        Ok(RequestPlan { actuator: self.name.clone(), requests: vec![template::display(&argv)] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let argv = self.render(action)?;
        let request = template::display(&argv);
        let finished = self.run(Role::Execute, action, &argv, &request).await?;
        let summary = self.succeeded(Role::Execute, &request, &finished)?;
        let prior = if self.commands.prior_from_stdout { self.prior(action, &finished.stdout) } else { None };
        Ok(Outcome { summary, requests: vec![request], prior })
    }

    /// Runs `verify_argv` and reads its exit status: 0 in effect, 1 not in
    /// effect, 2 changed by someone else (the first stdout line says how);
    /// any other status is a failure. Without `verify_argv`, unknown.
    async fn verify(&self, action: &Action, _applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let Some(verify) = &self.commands.verify else { return Ok(Verification::Unknown) };
        let argv = verify.render(action, None)?;
        let request = template::display(&argv);
        let finished = self.run(Role::Verify, action, &argv, &request).await?;
        let verification = match finished.status.code() {
            Some(0) => Verification::InEffect,
            Some(1) => Verification::NotInEffect,
            Some(2) => Verification::Changed(
                finished
                    .stdout
                    .first_line()
                    .filter(|line| !line.is_empty())
                    .unwrap_or_else(|| CHANGED_WITHOUT_REASON.to_string()),
            ),
            // Any other exit, or a signal: the check itself went wrong, and
            // guessing an answer could undo or repeat the wrong thing.
            _ => return Err(self.failed(Role::Verify, &request, &finished)),
        };
        tracing::info!(
            message = "Verified.",
            actuator = %self.name,
            action = %action,
            argv = %request,
            verification = ?verification,
        );
        Ok(verification)
    }

    async fn dry_run_undo(&self, action: &Action, applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        let argv = self.render_undo(action, applied)?;
        Ok(RequestPlan { actuator: self.name.clone(), requests: vec![template::display(&argv)] })
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let argv = self.render_undo(action, applied)?;
        let request = template::display(&argv);
        let finished = self.run(Role::Undo, action, &argv, &request).await?;
        let summary = self.succeeded(Role::Undo, &request, &finished)?;
        Ok(Outcome { summary, requests: vec![request], prior: None })
    }
}
