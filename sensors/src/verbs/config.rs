//! The settings of a `verbs` sensor.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sensor::VerbsSensor;
use crate::SensorConfigError;

/// A `verbs` sensor's settings.
///
/// ```toml
/// poll_interval_ms = 5000
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerbsConfig {
    /// Milliseconds between two reads of every port. At least 100. Port
    /// state is slow-moving (and carrier changes come from `netlink_link`
    /// at once), so the default is 5 s.
    #[serde(default = "default_poll_interval_ms")]
    pub poll_interval_ms: u64,
}

fn default_poll_interval_ms() -> u64 {
    5000
}

impl Default for VerbsConfig {
    fn default() -> Self {
        VerbsConfig { poll_interval_ms: default_poll_interval_ms() }
    }
}

impl VerbsConfig {
    /// Validates the settings and builds the sensor `name`.
    pub fn build(&self, name: &str) -> Result<VerbsSensor, SensorConfigError> {
        if self.poll_interval_ms < 100 {
            return Err(SensorConfigError::OutOfRange {
                setting: "poll_interval_ms".into(),
                value: self.poll_interval_ms.to_string(),
                reason: "is below 100".into(),
            });
        }
        Ok(VerbsSensor::new(name, Duration::from_millis(self.poll_interval_ms)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_round_trips_through_toml() {
        assert_eq!(toml::from_str::<VerbsConfig>("").unwrap(), VerbsConfig::default());
        let config = VerbsConfig { poll_interval_ms: 250 };
        assert_eq!(toml::from_str::<VerbsConfig>(&toml::to_string(&config).unwrap()).unwrap(), config);
    }

    #[test]
    fn a_short_interval_is_refused() {
        let err = VerbsConfig { poll_interval_ms: 10 }.build("v").err().unwrap();
        assert_eq!(err.to_string(), "configuration: poll_interval_ms 10 is below 100");
    }
}
