//! The settings of an `nvml` sensor.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sensor::NvmlSensor;
use crate::SensorConfigError;

/// An `nvml` sensor's settings.
///
/// ```toml
/// poll_interval_ms = 10000
/// xid_wait_ms = 1000
/// library = "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NvmlConfig {
    /// Milliseconds between two reads of the counters and gauges (NVLink
    /// errors, PCIe replays, temperature, utilization). XIDs are pushed as
    /// they happen, whatever this is. At least 100.
    #[serde(default = "default_poll_interval_ms")]
    pub poll_interval_ms: u64,
    /// How long, in milliseconds, one wait on the XID event set blocks; the
    /// XID thread checks for shutdown between waits, so this bounds how long
    /// stopping takes. 10 to 60000.
    #[serde(default = "default_xid_wait_ms")]
    pub xid_wait_ms: u32,
    /// The NVML library to load. Default: `libnvidia-ml.so` from the dynamic
    /// loader's search path, as the driver installs it.
    #[serde(default)]
    pub library: Option<PathBuf>,
    /// Read the NVLink error counters (one NVML call per link and counter:
    /// 72 per GPU on an 18-link GPU).
    #[serde(default = "default_nvlink")]
    pub nvlink: bool,
}

/// Ten seconds: these counters feed rules over minutes, and each read costs
/// up to ~80 NVML calls per GPU.
fn default_poll_interval_ms() -> u64 {
    10_000
}

/// One second to stop; NVML waits cost nothing while they block.
fn default_xid_wait_ms() -> u32 {
    1000
}

fn default_nvlink() -> bool {
    true
}

impl Default for NvmlConfig {
    fn default() -> Self {
        NvmlConfig {
            poll_interval_ms: default_poll_interval_ms(),
            xid_wait_ms: default_xid_wait_ms(),
            library: None,
            nvlink: default_nvlink(),
        }
    }
}

impl NvmlConfig {
    /// Validates the settings and builds the sensor `name`.
    pub fn build(&self, name: &str) -> Result<NvmlSensor, SensorConfigError> {
        if self.poll_interval_ms < 100 {
            return Err(SensorConfigError::OutOfRange {
                setting: "poll_interval_ms".into(),
                value: self.poll_interval_ms.to_string(),
                reason: "is below 100".into(),
            });
        }
        if !(10..=60_000).contains(&self.xid_wait_ms) {
            return Err(SensorConfigError::OutOfRange {
                setting: "xid_wait_ms".into(),
                value: self.xid_wait_ms.to_string(),
                reason: "is not within 10..=60000".into(),
            });
        }
        if self.library.as_ref().is_some_and(|p| p.as_os_str().is_empty()) {
            return Err(SensorConfigError::Empty { setting: "library".into(), consequence: None });
        }
        Ok(NvmlSensor::new(
            name,
            Duration::from_millis(self.poll_interval_ms),
            self.xid_wait_ms,
            self.library.clone(),
            self.nvlink,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let config: NvmlConfig = toml::from_str("").unwrap();
        assert_eq!(config, NvmlConfig::default());
        assert_eq!((config.poll_interval_ms, config.xid_wait_ms, config.nvlink), (10_000, 1000, true));
    }

    #[test]
    fn the_config_round_trips_through_toml() {
        let config = NvmlConfig {
            poll_interval_ms: 2000,
            xid_wait_ms: 250,
            library: Some("/opt/libnvidia-ml.so.1".into()),
            nvlink: false,
        };
        let text = toml::to_string(&config).unwrap();
        assert_eq!(toml::from_str::<NvmlConfig>(&text).unwrap(), config);
    }

    #[test]
    fn bad_settings_are_named() {
        let err = |text: &str| toml::from_str::<NvmlConfig>(text).unwrap().build("g").err().unwrap().to_string();
        assert_eq!(err("poll_interval_ms = 5"), "configuration: poll_interval_ms 5 is below 100");
        assert_eq!(err("xid_wait_ms = 0"), "configuration: xid_wait_ms 0 is not within 10..=60000");
        assert_eq!(err("library = \"\""), "configuration: library is empty");
        assert!(toml::from_str::<NvmlConfig>("poll = 1").is_err());
    }
}
