//! The settings of a `cordon` actuator.

use std::path::{Path, PathBuf};
use std::time::Duration;

use engine::SECOND;
use serde::{Deserialize, Serialize};

use super::{kubernetes, slurm, CordonActuator};
use crate::ActuatorConfigError;

/// The longest timeout accepted for one scheduler call: a cordon holds a
/// dispatch slot while it runs, and a scheduler that needs more than five
/// minutes to answer is down, not slow.
const MAX_TIMEOUT: i64 = 300 * SECOND;

/// A `cordon` actuator's settings.
///
/// ```toml
/// scheduler = "slurm"
/// timeout = "10s"
/// [slurm]
/// scontrol = "/usr/bin/scontrol"
/// ```
///
/// ```toml
/// scheduler = "kubernetes"
/// [kubernetes]
/// api_server = "https://10.0.0.1:6443"
/// token_file = "/var/run/secrets/kubernetes.io/serviceaccount/token"
/// ca_file = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
/// drain = true
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CordonConfig {
    /// Which scheduler owns the nodes: `"slurm"` or `"kubernetes"`.
    pub scheduler: Scheduler,
    /// How long one call to the scheduler (one `scontrol` run, one HTTP
    /// request) may take, e.g. `"10s"`; at most five minutes.
    #[serde(default = "default_timeout", with = "engine::config::duration")]
    pub timeout: Duration,
    /// Slurm settings, used when `scheduler = "slurm"`.
    #[serde(default)]
    pub slurm: SlurmConfig,
    /// Kubernetes settings, required when `scheduler = "kubernetes"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes: Option<KubernetesConfig>,
}

/// The schedulers a cordon can go through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    /// Slurm, through `scontrol`.
    Slurm,
    /// Kubernetes, through the API server.
    Kubernetes,
}

/// How to reach Slurm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmConfig {
    /// The `scontrol` program, an absolute path.
    #[serde(default = "default_scontrol")]
    pub scontrol: PathBuf,
    /// A `slurm.conf` to use instead of the default one (sets `SLURM_CONF`
    /// for `scontrol`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slurm_conf: Option<PathBuf>,
}

impl Default for SlurmConfig {
    fn default() -> Self {
        SlurmConfig { scontrol: default_scontrol(), slurm_conf: None }
    }
}

/// How to reach the Kubernetes API server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubernetesConfig {
    /// The API server's URL, `https://host:port` (or `http://` for a local
    /// proxy such as `kubectl proxy`).
    pub api_server: String,
    /// The bearer token, inline. Prefer `token_file`: a playbook is read by
    /// more people than a secret should be.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// A file holding the bearer token (a service account token), read when
    /// the actuator is built.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// The PEM file of the CA that signed the API server's certificate;
    /// required for `https://`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// Whether a cordon also evicts the node's pods (Eviction API, so
    /// PodDisruptionBudgets are honoured). Pods of DaemonSets and mirror
    /// pods are left alone, as `kubectl drain` does.
    #[serde(default)]
    pub drain: bool,
}

fn default_timeout() -> Duration {
    Duration::from_secs(10)
}

fn default_scontrol() -> PathBuf {
    PathBuf::from("/usr/bin/scontrol")
}

impl CordonConfig {
    /// A Slurm cordon with the defaults.
    pub fn slurm() -> CordonConfig {
        CordonConfig {
            scheduler: Scheduler::Slurm,
            timeout: default_timeout(),
            slurm: SlurmConfig::default(),
            kubernetes: None,
        }
    }

    /// Validates the settings and builds the actuator `name`.
    pub fn build(&self, name: &str) -> Result<CordonActuator, ActuatorConfigError> {
        let timeout = crate::error::bounded_duration("timeout", self.timeout, MAX_TIMEOUT)?;
        match self.scheduler {
            Scheduler::Slurm => {
                if self.kubernetes.is_some() {
                    return Err(ActuatorConfigError::Conflict {
                        setting: "kubernetes".into(),
                        reason: "a [kubernetes] table is given but scheduler is \"slurm\"",
                    });
                }
                check_scontrol(&self.slurm.scontrol)?;
                Ok(CordonActuator::slurm(name, slurm::Slurm::new(&self.slurm, timeout)))
            }
            Scheduler::Kubernetes => {
                let kube = self.kubernetes.as_ref().ok_or(ActuatorConfigError::Missing {
                    setting: "kubernetes".into(),
                    reason: "scheduler is \"kubernetes\" but there is no [kubernetes] table",
                })?;
                Ok(CordonActuator::kubernetes(name, kubernetes::Kubernetes::new(kube, timeout)?))
            }
        }
    }
}

/// Refuses a `slurm.scontrol` that is not an absolute path: a program
/// looked up in PATH could be anything.
pub(crate) fn check_scontrol(scontrol: &Path) -> Result<(), ActuatorConfigError> {
    if scontrol.is_absolute() {
        Ok(())
    } else {
        Err(ActuatorConfigError::Invalid {
            setting: "slurm.scontrol".into(),
            value: scontrol.display().to_string(),
            reason: "is not an absolute path",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(text: &str) -> Result<CordonActuator, String> {
        toml::from_str::<CordonConfig>(text).map_err(|e| e.to_string())?.build("x").map_err(|e| e.to_string())
    }

    #[test]
    fn the_slurm_defaults_use_usr_bin_scontrol() {
        let config: CordonConfig = toml::from_str("scheduler = \"slurm\"").unwrap();
        assert_eq!(config, CordonConfig::slurm());
        assert_eq!(config.slurm.scontrol, PathBuf::from("/usr/bin/scontrol"));
        let text = toml::to_string(&config).unwrap();
        assert_eq!(toml::from_str::<CordonConfig>(&text).unwrap(), config);
        assert!(config.build("x").is_ok());
    }

    #[test]
    fn unusable_settings_are_refused_with_a_reason() {
        let cases = [
            ("scheduler = \"pbs\"", "unknown variant `pbs`"),
            ("scheduler = \"slurm\"\nshell = true", "unknown field `shell`"),
            ("scheduler = \"slurm\"\n[slurm]\nscontrol = \"scontrol\"", "is not an absolute path"),
            ("scheduler = \"slurm\"\ntimeout = \"1h\"", "must be above 0 and at most 300s"),
            ("scheduler = \"kubernetes\"", "there is no [kubernetes] table"),
            ("scheduler = \"slurm\"\n[kubernetes]\napi_server = \"http://x\"", "scheduler is \"slurm\""),
        ];
        for (text, expected) in cases {
            let err = build(text).err().unwrap_or_else(|| panic!("{text} was accepted"));
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
