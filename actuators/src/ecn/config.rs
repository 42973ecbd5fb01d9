//! The settings of an `ecn` actuator.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{switch, EcnActuator, HostSide};
use crate::link::config::{check_netdevs, node_or_local};
use crate::sonic::SonicConfig;
use crate::ActuatorConfigError;

/// An `ecn` actuator's settings.
///
/// ```toml
/// lowers = "queue"           # or "profile": the named profile, switch-wide
/// queue = 3
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
    /// What `ecn.lower` changes, and so its blast radius. `"queue"` (the
    /// default): one queue of one port, which gets its own copy of the WRED
    /// profile bound to it (`ROCEMEND_<port>_<queue>`), lowered. `"profile"`:
    /// the profile itself, and with it every queue bound to it — on SONiC,
    /// every lossless queue of the switch; such an action's target names no
    /// single port or queue (`port = "*"` or none).
    #[serde(default)]
    pub lowers: Lowers,
    /// With `lowers = "queue"`, the queue lowered when the action's target
    /// has no `queue` label: 0 to 7. Default 3, RoCE's lossless priority.
    #[serde(default = "default_queue")]
    pub queue: u64,
    /// With `lowers = "profile"`, the WRED profile lowered when the action
    /// names none (its `profile` parameter). Default `AZURE_LOSSLESS`,
    /// SONiC's lossless profile.
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

/// What `ecn.lower` changes ([`EcnConfig::lowers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lowers {
    /// One queue of one port: a copy of its profile, bound to it alone.
    #[default]
    Queue,
    /// The named profile: every queue bound to it.
    Profile,
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

fn default_queue() -> u64 {
    3
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
    pub fn build(&self, name: &str) -> Result<EcnActuator, ActuatorConfigError> {
        self.build_in(name, None)
    }

    /// [`Self::build`], with the inventory that names the switches of `[gnmi]`.
    pub fn build_in(
        &self,
        name: &str,
        inventory: Option<&engine::Topology>,
    ) -> Result<EcnActuator, ActuatorConfigError> {
        let sonic = self.gnmi.as_ref().map(|g| g.build(inventory)).transpose()?;
        switch::check_profile("profile", &self.profile)
            .map_err(|source| ActuatorConfigError::Action { setting: "profile".into(), source })?;
        crate::target::integer("queue", &self.queue.to_string(), 0, gnmi_proto::sonic::QUEUES - 1, "")
            .map_err(|source| ActuatorConfigError::Action { setting: "queue".into(), source })?;
        switch::check_factor(&self.factor.to_string())
            .map_err(|source| ActuatorConfigError::Action { setting: "factor".into(), source })?;
        let host = self.host.as_ref().map(HostConfig::build).transpose()?;
        Ok(EcnActuator {
            name: name.to_string(),
            kinds: super::kinds(),
            sonic,
            lowers: self.lowers,
            queue: self.queue,
            profile: self.profile.clone(),
            factor: self.factor,
            floor: self.floor,
            host,
        })
    }
}

impl HostConfig {
    /// The host side, checked.
    fn build(&self) -> Result<HostSide, ActuatorConfigError> {
        check_netdevs("host.netdevs", &self.netdevs)?;
        if !self.sysfs_root.is_absolute() {
            return Err(ActuatorConfigError::Invalid {
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
        assert_eq!((config.lowers, config.queue), (Lowers::Queue, 3));
        let config: EcnConfig = toml::from_str("lowers = \"profile\"\nqueue = 4").unwrap();
        assert_eq!((config.lowers, config.queue), (Lowers::Profile, 4));
        assert!(toml::from_str::<EcnConfig>("lowers = \"port\"").is_err());
        for (text, expected) in [
            ("factor = 1.0", "factor \"1\""),
            ("profile = \"a|b\"", "profile \"a|b\" is refused"),
            ("profile = \"a.b\"", "not a WRED profile name"),
            ("queue = 8", "queue 8 is out of range 0..7"),
            ("[host]\nsysfs_root = \"sys\"\nnode = \"n\"", "not an absolute path"),
            ("[host]\nnetdevs = [\"a/b\"]", "host.netdevs"),
        ] {
            let err = toml::from_str::<EcnConfig>(text).unwrap().build("e").unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
