//! Cordoning through Slurm: `scontrol update … State=DRAIN`, read back with
//! `scontrol show node`, undone with `State=RESUME`.
//!
//! `scontrol` runs as an argv (never a shell), with stdin closed, under the
//! configured timeout. Its `Reason=` is one argv element, so the reason's
//! spaces need no quoting.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use engine::{ActuatorError, Outcome, Prior, Verification};
use serde::{Deserialize, Serialize};
use tokio::process::Command;

use super::config::SlurmConfig;
use super::{Request, REASON_PREFIX};
use crate::error::excerpt;
use crate::exec::template::display;
use crate::ParseError;

/// How much of `scontrol`'s output is read. `show node` prints about 1 KiB
/// per node; anything far beyond that is not the output we asked for.
const OUTPUT_LIMIT: usize = 64 * 1024;

/// Runs `scontrol` for one cluster.
#[derive(Debug, Clone)]
pub struct Slurm {
    scontrol: PathBuf,
    slurm_conf: Option<PathBuf>,
    timeout: Duration,
}

/// A node as `scontrol show node` shows it; a cordon's prior
/// (`{"state": …, "reason": …}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeState {
    /// `State=`, e.g. `IDLE+DRAIN`.
    pub state: String,
    /// `Reason=`, without the `[user@time]` Slurm appends; empty when none.
    pub reason: String,
}

impl NodeState {
    /// Whether the node is draining or drained (`DRAIN`, `DRAINED`, `DRAINING`
    /// as the base state or a `+` flag).
    pub fn drained(&self) -> bool {
        self.state.split('+').any(|s| matches!(s, "DRAIN" | "DRAINED" | "DRAINING"))
    }

    /// Whether the reason is rocemend's.
    pub fn ours(&self) -> bool {
        self.reason.starts_with(REASON_PREFIX)
    }
}

/// Parses the output of `scontrol show node <node>`.
pub fn parse_show_node(output: &str) -> Result<NodeState, ParseError> {
    let state = output
        .split_whitespace()
        .find_map(|word| word.strip_prefix("State="))
        .ok_or_else(|| ParseError::MissingField { command: "scontrol", field: "State=", excerpt: excerpt(output) })?;
    let reason =
        output.lines().find_map(|line| line.trim_start().strip_prefix("Reason=")).map(strip_stamp).unwrap_or_default();
    // Slurm prints `Reason=(null)` on some versions for a node without one.
    let reason = if reason == "(null)" { String::new() } else { reason };
    Ok(NodeState { state: state.to_string(), reason })
}

/// `rocemend: xid inc-1 [root@2026-12-02T16:40:00]` → `rocemend: xid inc-1`.
fn strip_stamp(reason: &str) -> String {
    let reason = reason.trim_end();
    match reason.rfind(" [") {
        Some(i) if reason.ends_with(']') => reason[..i].to_string(),
        _ => reason.to_string(),
    }
}

impl Slurm {
    pub(crate) fn new(config: &SlurmConfig, timeout: Duration) -> Slurm {
        Slurm { scontrol: config.scontrol.clone(), slurm_conf: config.slurm_conf.clone(), timeout }
    }

    pub(crate) fn argv(&self, args: &[String]) -> Vec<String> {
        std::iter::once(self.scontrol.display().to_string()).chain(args.iter().cloned()).collect()
    }

    /// The argv that drains the node.
    pub fn drain_argv(&self, request: &Request) -> Vec<String> {
        self.argv(&[
            "update".into(),
            format!("NodeName={}", request.node),
            "State=DRAIN".into(),
            format!("Reason={}", request.reason),
        ])
    }

    /// The argv that resumes the node.
    pub fn resume_argv(&self, request: &Request) -> Vec<String> {
        self.argv(&["update".into(), format!("NodeName={}", request.node), "State=RESUME".into()])
    }

    pub(super) fn plan_cordon(&self, request: &Request) -> Vec<String> {
        vec![display(&self.drain_argv(request))]
    }

    pub(super) fn plan_resume(&self, request: &Request) -> Vec<String> {
        vec![display(&self.resume_argv(request))]
    }

    /// Reads the node's state.
    pub async fn show(&self, node: &str) -> Result<NodeState, ActuatorError> {
        let argv = self.argv(&["show".into(), "node".into(), node.into()]);
        let stdout = self.run(&argv).await?;
        parse_show_node(&stdout).map_err(|e| ActuatorError::Failed(e.to_string()))
    }

    pub(super) async fn cordon(&self, request: &Request) -> Result<Outcome, ActuatorError> {
        let before = self.show(&request.node).await?;
        if before.drained() && !before.ours() {
            // Draining over it would replace their reason with ours, and our
            // undo would then resume a node someone else took out.
            return Err(ActuatorError::Invalid(format!(
                "node {} is already drained by someone else: {}",
                request.node, before.reason
            )));
        }
        let argv = self.drain_argv(request);
        self.run(&argv).await?;
        Ok(Outcome {
            summary: format!("drained {} ({}; was {})", request.node, request.reason, before.state),
            requests: vec![display(&argv)],
            prior: Some(Prior::of(&before)?),
        })
    }

    pub(super) async fn verify(&self, request: &Request) -> Result<Verification, ActuatorError> {
        let now = self.show(&request.node).await?;
        Ok(if !now.drained() {
            Verification::NotInEffect
        } else if now.reason == request.reason {
            Verification::InEffect
        } else {
            Verification::Changed(format!("drained by someone else: {}", now.reason))
        })
    }

    pub(super) async fn resume(&self, request: &Request) -> Result<Outcome, ActuatorError> {
        let now = self.show(&request.node).await?;
        if !now.drained() {
            return Ok(Outcome {
                summary: format!("{} is not drained ({}); nothing to resume", request.node, now.state),
                requests: Vec::new(),
                prior: Some(Prior::of(&now)?),
            });
        }
        if !now.ours() {
            return Err(ActuatorError::Invalid(format!(
                "node {} is drained by someone else: {}; not resuming it",
                request.node, now.reason
            )));
        }
        let argv = self.resume_argv(request);
        self.run(&argv).await?;
        Ok(Outcome {
            summary: format!("resumed {} (was {}: {})", request.node, now.state, now.reason),
            requests: vec![display(&argv)],
            prior: Some(Prior::of(&now)?),
        })
    }

    /// Runs `argv` to its end within the timeout; its stdout on exit 0.
    pub(crate) async fn run(&self, argv: &[String]) -> Result<String, ActuatorError> {
        let request = display(argv);
        tracing::info!(message = "Running scontrol.", argv = %request);
        let mut command = Command::new(&argv[0]);
        command
            .args(&argv[1..])
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(conf) = &self.slurm_conf {
            command.env("SLURM_CONF", conf);
        }
        let child = command.spawn().map_err(|e| ActuatorError::Failed(format!("cannot start {}: {e}", argv[0])))?;
        let ms = u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX);
        let output = tokio::time::timeout(self.timeout, child.wait_with_output())
            .await
            .map_err(|_| ActuatorError::Timeout(ms))?
            .map_err(|e| ActuatorError::Failed(format!("waiting for {request}: {e}")))?;
        let stdout = String::from_utf8_lossy(&output.stdout[..output.stdout.len().min(OUTPUT_LIMIT)]).into_owned();
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(ActuatorError::Failed(format!(
                "{request} exited with {}; stderr: {:?}",
                output.status,
                excerpt(stderr.trim())
            )));
        }
        Ok(stdout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHOW: &str = "NodeName=vm Arch=x86_64 CoresPerSocket=1 \n   CPUAlloc=0 CPUTot=1 CPULoad=0.10\n   \
        State=IDLE+DRAIN ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\n   \
        Reason=rocemend: xid inc-1 [root@2026-12-02T16:40:00]\n";

    #[test]
    fn show_node_gives_the_state_and_the_reason_without_its_stamp() {
        let node = parse_show_node(SHOW).unwrap();
        assert_eq!(node, NodeState { state: "IDLE+DRAIN".into(), reason: "rocemend: xid inc-1".into() });
        assert!(node.drained() && node.ours());
        let idle = parse_show_node("NodeName=vm\n   State=IDLE ThreadsPerCore=1\n").unwrap();
        assert_eq!(idle, NodeState { state: "IDLE".into(), reason: String::new() });
        assert!(!idle.drained());
        for state in ["DRAINED", "MIXED+DRAINING", "DOWN+DRAIN"] {
            assert!(NodeState { state: state.into(), reason: String::new() }.drained(), "{state}");
        }
        let err = parse_show_node("Node vm not found").unwrap_err();
        assert!(matches!(err, ParseError::MissingField { field: "State=", .. }), "{err:?}");
        assert_eq!(err.to_string(), "no State= in scontrol's output \"Node vm not found\"");
    }
}
