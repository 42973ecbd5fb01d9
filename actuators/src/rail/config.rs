//! The settings of a `rail` actuator: which of its steps run, and how each
//! reaches what it changes.

use std::path::PathBuf;
use std::time::Duration;

use engine::SECOND;
use serde::{Deserialize, Serialize};

use super::kubernetes::{Kube, RailKubernetesConfig};
use super::RailActuator;
use crate::cordon::config::check_scontrol;
use crate::cordon::slurm::Slurm;
use crate::cordon::SlurmConfig;
use crate::link::config::node_or_local;
use crate::sonic::SonicConfig;
use crate::ActuatorConfigError;

/// The longest timeout of one scheduler call (as for `cordon`).
const MAX_TIMEOUT: i64 = 300 * SECOND;

/// A `rail` actuator's settings; each table turns one step on.
///
/// ```toml
/// timeout = "10s"
/// [gnmi]                       # switch side: admin-down of the rail's leaf port
/// switches = { leaf-rail3 = "10.0.0.13:8080" }
/// [nccl]                       # node side: the NCCL environment file
/// env_file = "/etc/rocemend/nccl.env"
/// [slurm]                      # node side: Slurm node features
/// scontrol = "/usr/bin/scontrol"
/// [kubernetes]                 # node side: Node label and taint
/// api_server = "https://10.0.0.1:6443"
/// token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token"
/// ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RailConfig {
    /// How long one scheduler call may take, e.g. `"10s"`; at most five minutes.
    #[serde(default = "default_timeout", with = "engine::config::duration")]
    pub timeout: Duration,
    /// Switch side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gnmi: Option<SonicConfig>,
    /// The NCCL environment file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nccl: Option<NcclConfig>,
    /// Slurm node features.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm: Option<SlurmConfig>,
    /// Kubernetes Node label and taint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<RailKubernetesConfig>,
}

/// Where the NCCL environment file is.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcclConfig {
    /// The file job launchers source, an absolute path.
    pub env_file: PathBuf,
    /// The node this daemon runs on (the file is local). Default: this host's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
}

fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

impl RailConfig {
    /// Validates the settings and builds the actuator `name`.
    pub fn build(&self, name: &str) -> Result<RailActuator, ActuatorConfigError> {
        self.build_in(name, None)
    }

    /// [`Self::build`], with the inventory that names the switches of `[gnmi]`.
    pub fn build_in(
        &self,
        name: &str,
        inventory: Option<&engine::Topology>,
    ) -> Result<RailActuator, ActuatorConfigError> {
        let timeout = crate::error::bounded_duration("timeout", self.timeout, MAX_TIMEOUT)?;
        if self.gnmi.is_none() && self.nccl.is_none() && self.slurm.is_none() && self.kubernetes.is_none() {
            return Err(ActuatorConfigError::Missing {
                setting: "gnmi, nccl, slurm or kubernetes".into(),
                reason: "no step is configured: give at least one of [gnmi], [nccl], [slurm], [kubernetes]",
            });
        }
        let sonic = self.gnmi.as_ref().map(|g| g.build(inventory)).transpose()?;
        let nccl = self.nccl.as_ref().map(NcclConfig::build).transpose()?;
        if let Some(s) = &self.slurm {
            check_scontrol(&s.scontrol)?;
        }
        let slurm = self.slurm.as_ref().map(|s| Slurm::new(s, timeout));
        let kube = self.kubernetes.as_ref().map(|k| Kube::new(k, timeout)).transpose()?;
        Ok(RailActuator { name: name.to_string(), kinds: super::kinds(), sonic, nccl, slurm, kube })
    }
}

impl NcclConfig {
    /// The environment file and the node it is on, checked.
    fn build(&self) -> Result<(PathBuf, String), ActuatorConfigError> {
        if !self.env_file.is_absolute() || self.env_file.file_name().is_none() {
            return Err(ActuatorConfigError::Invalid {
                setting: "nccl.env_file".into(),
                value: self.env_file.display().to_string(),
                reason: "is not an absolute file path",
            });
        }
        Ok((self.env_file.clone(), node_or_local("nccl.node", self.node.as_deref())?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_least_one_step_and_valid_settings() {
        for (text, expected) in [
            ("", "no step is configured"),
            ("[nccl]\nenv_file = \"nccl.env\"", "not an absolute file path"),
            ("[slurm]\nscontrol = \"scontrol\"", "not an absolute path"),
            ("timeout = \"1h\"\n[slurm]", "at most 300s"),
            ("[kubernetes]\napi_server = \"https://k:6443\"", "needs ca_file"),
        ] {
            let err = toml::from_str::<RailConfig>(text).unwrap().build("r").unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
        let ok: RailConfig = toml::from_str("[nccl]\nenv_file = \"/etc/nccl.env\"\nnode = \"n1\"").unwrap();
        assert!(ok.build("r").is_ok());
    }
}
