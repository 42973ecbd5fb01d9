//! The settings of a `pfcwd` actuator: the switches it may reach, its
//! escalation levels, and the host side.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::host::{Host, Prevention};
use super::switch::Level;
use super::PfcwdActuator;
use crate::link::config::{check_netdevs, node_or_local};
use crate::sonic::SonicConfig;
use crate::ActuatorConfigError;

/// A `pfcwd` actuator's settings.
///
/// ```toml
/// [actuator.gnmi]
/// switches = { leaf-rail3 = "10.0.0.13:8080" }
/// [actuator.levels.1]
/// action = "drop"
/// [actuator.levels.2]
/// action = "drop"
/// detection_time = 100
/// restoration_time = 2000
/// [actuator.host]
/// netdevs = ["eth0", "eth1"]
/// prevention = "auto"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcwdConfig {
    /// The switches `pfcwd.escalate` may change; without it, escalations are
    /// refused as not supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gnmi: Option<SonicConfig>,
    /// Escalation levels by name, chosen by the action's `level` parameter.
    /// Default: level `1`, `action = "drop"`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub levels: BTreeMap<String, Level>,
    /// The host side (`pfcwd.prevent`): NIC PFC storm prevention; without
    /// it, prevention actions are refused as not supported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostConfig>,
}

/// The host side of the `pfcwd` actuator.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// The node this daemon runs on, as the actions' `node` label names it.
    /// Default: this host's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The netdevs it may change; empty allows any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub netdevs: Vec<String>,
    /// The `pfc-prevention-tout` set when the action has no `timeout`
    /// parameter: `"auto"` (the driver's 100 ms) or milliseconds, 80 to 8000.
    #[serde(default = "default_prevention")]
    pub prevention: String,
}

fn default_prevention() -> String {
    "auto".into()
}

impl PfcwdConfig {
    /// Validates the settings and builds the actuator `name`.
    pub fn build(&self, name: &str) -> Result<PfcwdActuator, ActuatorConfigError> {
        self.build_in(name, None)
    }

    /// [`Self::build`], with the inventory that names the switches of `[gnmi]`.
    pub fn build_in(
        &self,
        name: &str,
        inventory: Option<&engine::Topology>,
    ) -> Result<PfcwdActuator, ActuatorConfigError> {
        let sonic = self.gnmi.as_ref().map(|g| g.build(inventory)).transpose()?;
        let mut levels = self.levels.clone();
        if levels.is_empty() {
            levels.insert("1".into(), Level { action: Some("drop".into()), ..Level::default() });
        }
        for (level_name, level) in &levels {
            level
                .fields(&BTreeMap::new())
                .map_err(|source| ActuatorConfigError::Action { setting: format!("levels.{level_name}"), source })?;
        }
        let host = self.host.as_ref().map(HostConfig::build).transpose()?;
        Ok(PfcwdActuator::new(name, sonic, levels, host))
    }
}

impl HostConfig {
    /// The host side, checked.
    fn build(&self) -> Result<Host, ActuatorConfigError> {
        check_netdevs("host.netdevs", &self.netdevs)?;
        let prevention = Prevention::parse(&self.prevention)
            .map_err(|source| ActuatorConfigError::Parse { setting: "host.prevention".into(), source })?;
        let node = node_or_local("host.node", self.node.as_deref())?;
        Ok(Host { node, netdevs: self.netdevs.clone(), prevention })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_round_trips_and_bad_host_settings_are_refused() {
        let text = "[gnmi]\nswitches = { leaf-rail3 = \"10.0.0.13:8080\" }\n[levels.1]\naction = \"drop\"\n\
                    [levels.2]\naction = \"drop\"\ndetection_time = 100\nrestoration_time = 2000\n\
                    [host]\nnode = \"gpu-07\"\nnetdevs = [\"eth0\", \"eth1\"]\nprevention = \"auto\"\n";
        let config: PfcwdConfig = toml::from_str(text).unwrap();
        assert_eq!(toml::from_str::<PfcwdConfig>(&toml::to_string(&config).unwrap()).unwrap(), config);
        assert!(config.build("p").is_ok());
        for (text, expected) in [
            ("[host]\nnode = \"n\"\nprevention = \"50\"", "host.prevention: pfc-prevention-tout \"50\""),
            ("[host]\nnode = \"\"", "host.node is empty"),
            ("[host]\nnode = \"n\"\nnetdevs = [\"a b\"]", "host.netdevs"),
            ("[levels.1]\naction = \"shout\"", "levels.1"),
        ] {
            let err = toml::from_str::<PfcwdConfig>(text).unwrap().build("p").unwrap_err().to_string();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
