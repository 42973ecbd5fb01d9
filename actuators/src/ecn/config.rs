//! The settings of an `ecn` actuator.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{switch, EcnActuator, HostSide};
use crate::link::config::{check_netdevs, node_or_local};
use crate::sonic::SonicConfig;
use crate::ConfigError;

/// An `ecn` actuator's settings.
///
/// ```toml
/// profile = "AZURE_LOSSLESS"
/// factor = 0.5
/// floor = 262144
/// [gnmi]
/// switches = { leaf-rail1 = "10.0.0.11:8080" }
/// [host]
/// sysfs_root = "/sys/class/net"
/// netdevs = ["eth0", "eth1"]
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EcnConfig {
    /// The switches `ecn.lower` may change; without it, lowerings are
    /// refused as not supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gnmi: Option<SonicConfig>,
    /// The WRED profile lowered when the action names none (its `profile`
    /// parameter). Default `AZURE_LOSSLESS`, SONiC's lossless profile.
    #[serde(default = "default_profile")]
    pub profile: String,
    /// The factor applied when the action gives none: 0.05 ≤ f < 1. Default 0.5.
    #[serde(default = "default_factor")]
    pub factor: f64,
    /// The lowest threshold a lowering sets, in bytes. Default 256 KiB:
    /// below a few MTU-sized bursts per port, marking turns into noise.
    #[serde(default = "default_floor")]
    pub floor: u64,
    /// The host side (`ecn.dcqcn`); without it, DCQCN actions are refused
    /// as not supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostConfig>,
}

/// The host side of the `ecn` actuator.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// The node this daemon runs on, as the actions' `node` label names it.
    /// Default: this host's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Where the netdevs' sysfs directories are. Default `/sys/class/net`.
    #[serde(default = "default_root")]
    pub sysfs_root: PathBuf,
    /// The netdevs it may change; empty allows any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub netdevs: Vec<String>,
}

fn default_profile() -> String {
    "AZURE_LOSSLESS".into()
}
fn default_factor() -> f64 {
    0.5
}
fn default_floor() -> u64 {
    256 * 1024
}
fn default_root() -> PathBuf {
    PathBuf::from("/sys/class/net")
}

impl EcnConfig {
    /// Validates the settings and builds the actuator `name`.
    pub fn build(&self, name: &str) -> Result<EcnActuator, ConfigError> {
        self.build_in(name, None)
    }

    /// [`Self::build`], with the inventory that names the switches of `[gnmi]`.
    pub fn build_in(&self, name: &str, inventory: Option<&engine::Topology>) -> Result<EcnActuator, ConfigError> {
        let sonic = self.gnmi.as_ref().map(|g| g.build(inventory)).transpose()?;
        crate::sonic::check_name("profile", &self.profile)
            .map_err(|source| ConfigError::Action { setting: "profile".into(), source })?;
        switch::check_factor(&self.factor.to_string())
            .map_err(|source| ConfigError::Action { setting: "factor".into(), source })?;
        let host = self.host.as_ref().map(HostConfig::build).transpose()?;
        Ok(EcnActuator {
            name: name.to_string(),
            sonic,
            profile: self.profile.clone(),
            factor: self.factor,
            floor: self.floor,
            host,
        })
    }
}

impl HostConfig {
    /// The host side, checked.
    fn build(&self) -> Result<HostSide, ConfigError> {
        check_netdevs("host.netdevs", &self.netdevs)?;
        if !self.sysfs_root.is_absolute() {
            return Err(ConfigError::Invalid {
                setting: "host.sysfs_root".into(),
                value: self.sysfs_root.display().to_string(),
                reason: "is not an absolute path",
            });
        }
        let node = node_or_local("host.node", self.node.as_deref())?;
        Ok(HostSide { node, root: self.sysfs_root.clone(), netdevs: self.netdevs.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_bad_settings() {
        let config: EcnConfig = toml::from_str("").unwrap();
        assert_eq!((config.profile.as_str(), config.factor, config.floor), ("AZURE_LOSSLESS", 0.5, 262144));
        for (text, expected) in [
            ("factor = 1.0", "factor \"1\""),
            ("profile = \"a|b\"", "profile \"a|b\" is refused"),
            ("[host]\nsysfs_root = \"sys\"\nnode = \"n\"", "not an absolute path"),
            ("[host]\nnetdevs = [\"a/b\"]", "host.netdevs"),
        ] {
            let err = toml::from_str::<EcnConfig>(text).unwrap().build("e").unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
