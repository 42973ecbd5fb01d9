//! The settings of a `link` actuator.

use engine::SECOND;
use serde::{Deserialize, Serialize};
use std::time::Duration;

use super::{check_netdev, LinkActuator};
use crate::ActuatorConfigError;

/// The longest timeout accepted: a netlink request is answered by the local
/// kernel in microseconds; one that takes a minute means a wedged kernel.
const MAX_TIMEOUT: i64 = 60 * SECOND;

/// A `link` actuator's settings.
///
/// ```toml
/// node = "gpu-07"
/// netdevs = ["eth2", "eth3", "eth4", "eth5"]
/// timeout = "5s"
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// The node this daemon runs on, as the actions' `node` label names it.
    /// The actuator only changes links of this host, so an action for any
    /// other node is refused. Default: this host's name
    /// (`/proc/sys/kernel/hostname`, up to the first dot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The netdevs it may take down, e.g. the RoCE ports. Empty (the default)
    /// allows any; listing them keeps a mislabelled action off the
    /// management interface.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub netdevs: Vec<String>,
    /// How long one netlink request may take, e.g. `"5s"`; at most a minute.
    #[serde(default = "default_timeout", with = "engine::config::duration")]
    pub timeout: Duration,
}

impl Default for LinkConfig {
    fn default() -> Self {
        LinkConfig { node: None, netdevs: Vec::new(), timeout: default_timeout() }
    }
}

fn default_timeout() -> Duration {
    Duration::from_secs(5)
}

impl LinkConfig {
    /// Validates the settings and builds the actuator `name`.
    pub fn build(&self, name: &str) -> Result<LinkActuator, ActuatorConfigError> {
        let timeout = crate::error::bounded_duration("timeout", self.timeout, MAX_TIMEOUT)?;
        check_netdevs("netdevs", &self.netdevs)?;
        let node = node_or_local("node", self.node.as_deref())?;
        Ok(LinkActuator::new(name, node, self.netdevs.clone(), timeout))
    }
}

/// Checks each netdev the list `setting` allows.
pub(crate) fn check_netdevs(setting: &str, netdevs: &[String]) -> Result<(), ActuatorConfigError> {
    for netdev in netdevs {
        check_netdev(netdev).map_err(|source| ActuatorConfigError::Unsafe {
            setting: setting.into(),
            value: netdev.clone(),
            source,
        })?;
    }
    Ok(())
}

/// The node a host-side actuator changes: `node` as the setting `setting`
/// gives it, else this host's name.
pub(crate) fn node_or_local(setting: &str, node: Option<&str>) -> Result<String, ActuatorConfigError> {
    match node {
        Some("") => Err(ActuatorConfigError::Empty {
            setting: setting.into(),
            need: "name the node this daemon runs on, or leave it out for this host's name",
        }),
        Some(node) => Ok(node.to_string()),
        None => local_node().map_err(|source| ActuatorConfigError::Hostname { setting: setting.into(), source }),
    }
}

/// This host's short name (`/proc/sys/kernel/hostname` up to the first dot).
pub fn local_node() -> std::io::Result<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")?;
    let short = name.trim().split('.').next().unwrap_or_default().to_string();
    if short.is_empty() {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "the hostname is empty"));
    }
    Ok(short)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_example_round_trips_and_bad_settings_are_refused() {
        let text = "node = \"gpu-07\"\nnetdevs = [\"eth2\", \"eth3\"]\ntimeout = \"2s\"\n";
        let config: LinkConfig = toml::from_str(text).unwrap();
        assert_eq!(toml::from_str::<LinkConfig>(&toml::to_string(&config).unwrap()).unwrap(), config);
        assert_eq!(config.build("x").unwrap().timeout(), Duration::from_secs(2));
        for (text, expected) in [
            ("netdevs = [\"a/b\"]", "netdevs: \"a/b\": it contains '/'"),
            ("netdevs = [\"averyveryverylongname\"]", "it is 21 bytes long"),
            ("timeout = \"2m\"", "must be above 0 and at most 60s"),
            ("node = \"\"", "node is empty"),
            ("device = \"eth2\"", "unknown field `device`"),
        ] {
            let err = toml::from_str::<LinkConfig>(text)
                .map_err(|e| e.to_string())
                .and_then(|c| c.build("x").map(|_| ()).map_err(|e| e.to_string()))
                .unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
