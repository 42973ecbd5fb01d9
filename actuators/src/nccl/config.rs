//! The settings of an `nccl` actuator: where the jobs' NCCL environment
//! files are.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::NcclActuator;
use crate::ActuatorConfigError;

/// An `nccl` actuator's settings.
///
/// ```toml
/// env_dir = "/etc/rocemend/nccl-jobs"   # <env_dir>/<job>.env, sourced by the job's launcher
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcclConfig {
    /// The directory of the jobs' files, an absolute path: on a filesystem every launcher
    /// of the job reads (a shared `/etc`, or each node's own when the daemon that acts
    /// runs there).
    pub env_dir: PathBuf,
}

impl NcclConfig {
    /// Validates the settings and builds the actuator `name`.
    pub fn build(&self, name: &str) -> Result<NcclActuator, ActuatorConfigError> {
        if !self.env_dir.is_absolute() {
            return Err(ActuatorConfigError::Invalid {
                setting: "env_dir".into(),
                value: self.env_dir.display().to_string(),
                reason: "is not an absolute path",
            });
        }
        Ok(NcclActuator::new(name, self.env_dir.clone()))
    }
}
