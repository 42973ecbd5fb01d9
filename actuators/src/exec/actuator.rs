//! The running `exec` actuator.

use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use engine::{Action, Actuator, ActuatorError, Outcome, Plan};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::template::{self, ArgvTemplate};

/// How much of stdout and of stderr is kept for the outcome. Enough for a
/// tool's message or an error; a command that prints megabytes must not
/// grow the daemon's memory or its ledger. The rest is read and dropped, so
/// the command never blocks on a full pipe.
pub const OUTPUT_LIMIT: usize = 4096;

/// Runs a configured command, built from an [`ExecConfig`](super::ExecConfig).
#[derive(Debug, Clone)]
pub struct ExecActuator {
    name: String,
    template: ArgvTemplate,
    timeout: Duration,
    env: Vec<(String, String)>,
}

impl ExecActuator {
    pub(super) fn new(name: &str, template: ArgvTemplate, timeout: Duration, env: Vec<(String, String)>) -> Self {
        ExecActuator { name: name.to_string(), template, timeout, env }
    }

    /// How long the command may run.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The argv that `action` runs, every placeholder value checked.
    pub fn render(&self, action: &Action) -> Result<Vec<String>, ActuatorError> {
        self.template.render(action)
    }
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

    async fn dry_run(&self, action: &Action) -> Result<Plan, ActuatorError> {
        let argv = self.render(action)?;
        Ok(Plan { actuator: self.name.clone(), requests: vec![template::display(&argv)] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let argv = self.render(action)?;
        let request = template::display(&argv);
        let program = argv.first().ok_or_else(|| ActuatorError::Invalid("the command has no program".into()))?;
        tracing::info!(message = "Running command.", actuator = %self.name, action = %action, argv = %request);
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
                tracing::warn!(message = "Command timed out.", actuator = %self.name, argv = %request, timeout_ms = ms);
                return Err(ActuatorError::Timeout(ms));
            }
        };
        let status = status.map_err(|e| ActuatorError::Failed(format!("waiting for {program}: {e}")))?;
        let (stdout, stderr) = (stdout.text(), stderr.text());
        if !status.success() {
            let mut message = format!("{program} exited with {status}");
            if !stderr.is_empty() {
                message.push_str(&format!("; stderr: {stderr:?}"));
            }
            tracing::warn!(message = "Command failed.", actuator = %self.name, argv = %request, %status, stderr = %stderr);
            return Err(ActuatorError::Failed(message));
        }
        let mut summary = format!("{program} exited with {status}");
        for (name, text) in [("stdout", &stdout), ("stderr", &stderr)] {
            if !text.is_empty() {
                summary.push_str(&format!("; {name}: {text:?}"));
            }
        }
        tracing::info!(message = "Command done.", actuator = %self.name, argv = %request, %status);
        Ok(Outcome { summary, requests: vec![request], prior: None })
    }
}
