//! A job's NCCL environment file: `<dir>/<job>.env`, the settings rocemend
//! asks for the job's next communicators.
//!
//! ```sh
//! # Managed by rocemend: NCCL settings for the next communicators of this job.
//! export NCCL_IB_QPS_PER_CONNECTION=4
//! export NCCL_IB_SPLIT_DATA_ON_QPS=1
//! ```
//!
//! NCCL reads both variables when a communicator is created
//! (`ncclCommInitRank`): a running job keeps its queue pairs until it
//! creates new communicators (a restart, an elastic re-rendezvous). The
//! launcher sources the file (a Slurm `TaskProlog` prints it, a container
//! entrypoint sources it; docs/actions.md). Lines other than the two
//! managed ones are kept as they are.

use std::path::{Path, PathBuf};

use engine::ActuatorError;
use serde::{Deserialize, Serialize};

use crate::env_file;

/// Queue pairs per connection: NCCL's variable.
pub const QPS: &str = "NCCL_IB_QPS_PER_CONNECTION";
/// Whether a message is split over the QPs (1) or sent whole on each in turn (0).
pub const SPLIT: &str = "NCCL_IB_SPLIT_DATA_ON_QPS";
/// NCCL's most queue pairs per connection (`NCCL_IB_MAX_QPS`).
pub const MAX_QPS: u64 = 128;

const HEADER: &str = "# Managed by rocemend: NCCL settings for the next communicators of this job.\n";

/// The managed settings of a job's file; `None`: the file does not set it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QpSettings {
    /// `NCCL_IB_QPS_PER_CONNECTION`.
    pub qps: Option<u32>,
    /// `NCCL_IB_SPLIT_DATA_ON_QPS`.
    pub split: Option<bool>,
}

impl QpSettings {
    /// The settings after an action that asks for at least `qps` queue pairs and, if
    /// given, `split`: more QPs already set are kept (fewer would concentrate the flows
    /// again).
    pub fn raised(self, qps: u32, split: Option<bool>) -> QpSettings {
        QpSettings { qps: Some(self.qps.map_or(qps, |q| q.max(qps))), split: split.or(self.split) }
    }
}

impl std::fmt::Display for QpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: Option<String>| v.unwrap_or_else(|| "(unset)".into());
        write!(
            f,
            "{QPS}={} {SPLIT}={}",
            show(self.qps.map(|q| q.to_string())),
            show(self.split.map(|s| u8::from(s).to_string()))
        )
    }
}

/// A job's file: its managed settings and its other lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobEnv {
    /// The managed settings.
    pub settings: QpSettings,
    /// Lines other than the managed ones and the header.
    pub other: Vec<String>,
}

/// The file of `job` under `dir`. The job's name becomes a file name, so it
/// is held to letters, digits, `.`, `_` and `-`, not starting with `.`.
pub fn path(dir: &Path, job: &str) -> Result<PathBuf, ActuatorError> {
    let safe = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if job.is_empty() || job.len() > 128 || job.starts_with('.') || !job.chars().all(safe) {
        return Err(ActuatorError::Invalid(format!(
            "job {job:?} cannot name a file: 1 to 128 of A-Z a-z 0-9 . _ -, not starting with '.'"
        )));
    }
    Ok(dir.join(format!("{job}.env")))
}

/// Parses a file's text; a managed variable with a value NCCL would not take is refused
/// rather than overwritten.
pub fn parse(text: &str, path: &Path) -> Result<JobEnv, ActuatorError> {
    let mut env = JobEnv::default();
    let bad = |var: &str, value: &str| {
        ActuatorError::Invalid(format!("{} sets {var}={value}, which is not a setting NCCL takes", path.display()))
    };
    for line in text.lines() {
        if let Some(value) = env_file::assignment(line, QPS) {
            let qps = value.parse::<u32>().ok().filter(|q| (1..=MAX_QPS as u32).contains(q));
            env.settings.qps = Some(qps.ok_or_else(|| bad(QPS, value))?);
        } else if let Some(value) = env_file::assignment(line, SPLIT) {
            env.settings.split = Some(match value {
                "0" => false,
                "1" => true,
                _ => return Err(bad(SPLIT, value)),
            });
        } else if !env_file::is_header(HEADER, line) {
            env.other.push(line.to_string());
        }
    }
    Ok(env)
}

impl JobEnv {
    /// The file's text.
    pub fn render(&self) -> String {
        let qps = self.settings.qps.map(|q| (QPS, q.to_string()));
        let split = self.settings.split.map(|s| (SPLIT, u8::from(s).to_string()));
        let exports: Vec<(&str, String)> = qps.into_iter().chain(split).collect();
        env_file::render(HEADER, &self.other, &exports)
    }

    /// Whether the file would say nothing: it is removed rather than left empty.
    pub fn is_empty(&self) -> bool {
        self.settings == QpSettings::default() && self.other.iter().all(|l| l.trim().is_empty())
    }
}

/// Reads the file; a missing one sets nothing.
pub fn read(path: &Path) -> Result<JobEnv, ActuatorError> {
    env_file::read(path)?.map_or_else(|| Ok(JobEnv::default()), |text| parse(&text, path))
}

/// Writes `env` to `path` atomically, or removes the file when `env` says nothing.
pub fn write(path: &Path, env: &JobEnv) -> Result<(), ActuatorError> {
    if env.is_empty() {
        return match std::fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(ActuatorError::Failed(format!("removing {}: {e}", path.display()))),
        };
    }
    env_file::replace(path, &env.render())
}

/// The request text of a write.
pub fn request(path: &Path, settings: &QpSettings) -> String {
    if *settings == QpSettings::default() {
        return format!("remove the managed settings of {}", path.display());
    }
    format!("replace {} atomically: {settings}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_managed_lines_round_trip_and_other_lines_stay() {
        let p = Path::new("/run/nccl/train-a.env");
        let env = parse("NCCL_DEBUG=WARN\nexport NCCL_IB_QPS_PER_CONNECTION=2\n", p).unwrap();
        assert_eq!(env.settings, QpSettings { qps: Some(2), split: None });
        assert_eq!(env.other, ["NCCL_DEBUG=WARN"]);
        let raised = JobEnv { settings: env.settings.raised(4, Some(true)), ..env.clone() };
        assert!(raised
            .render()
            .ends_with("NCCL_DEBUG=WARN\nexport NCCL_IB_QPS_PER_CONNECTION=4\nexport NCCL_IB_SPLIT_DATA_ON_QPS=1\n"));
        assert_eq!(parse(&raised.render(), p).unwrap(), raised);
        for bad in ["NCCL_IB_QPS_PER_CONNECTION=0", "NCCL_IB_QPS_PER_CONNECTION=129", "NCCL_IB_SPLIT_DATA_ON_QPS=yes"] {
            let err = parse(bad, p).unwrap_err().to_string();
            assert!(err.contains("not a setting NCCL takes"), "{bad}: {err}");
        }
        assert!(JobEnv::default().is_empty());
        assert_eq!(request(p, &QpSettings::default()), "remove the managed settings of /run/nccl/train-a.env");
    }

    #[test]
    fn raising_never_lowers_what_is_set() {
        let eight = QpSettings { qps: Some(8), split: Some(false) };
        assert_eq!(eight.raised(4, None), eight);
        assert_eq!(eight.raised(16, Some(true)), QpSettings { qps: Some(16), split: Some(true) });
        assert_eq!(QpSettings::default().raised(4, None), QpSettings { qps: Some(4), split: None });
    }

    #[test]
    fn a_job_name_that_is_not_a_plain_file_name_is_refused() {
        let dir = Path::new("/run/nccl");
        assert_eq!(path(dir, "train-a.7").unwrap(), Path::new("/run/nccl/train-a.7.env"));
        for bad in ["", "../etc/passwd", ".hidden", "a/b", "a b", &"x".repeat(129)] {
            assert!(path(dir, bad).is_err(), "{bad:?}");
        }
    }
}
