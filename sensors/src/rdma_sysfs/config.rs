//! The settings of an `rdma_sysfs` sensor.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::sensor::RdmaSysfsSensor;
use crate::SensorConfigError;

/// The shortest poll interval accepted. Below 10 ms the mlx5 `hw_counters`
/// cache (`hw_counters/lifespan`, 10 ms by default) returns the same values
/// anyway, and the firmware queries behind them start to cost real CPU.
pub const MIN_INTERVAL_MS: u64 = 10;

/// An `rdma_sysfs` sensor's settings.
///
/// ```toml
/// root = "/sys"
/// interval_ms = 100
/// rescan_every = 50
/// devices = ["mlx5_0", "mlx5_1"]
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RdmaSysfsConfig {
    /// Where sysfs is mounted; devices are looked up under
    /// `<root>/class/infiniband`. Tests point it at a temp dir.
    #[serde(default = "default_root")]
    pub root: PathBuf,
    /// How often to read every counter, in milliseconds (at least 10).
    #[serde(default = "default_interval_ms")]
    pub interval_ms: u64,
    /// Rediscover devices, ports and counter files every this many polls
    /// (and at once after a read error), so a device that is unplugged is
    /// noticed and one that comes back is read again. At least 1.
    #[serde(default = "default_rescan_every")]
    pub rescan_every: u32,
    /// Only these RDMA devices (`mlx5_0`, …); empty reads every device.
    #[serde(default)]
    pub devices: Vec<String>,
}

/// The real sysfs.
fn default_root() -> PathBuf {
    PathBuf::from("/sys")
}

/// 100 ms: fast enough to see a pause storm build, cheap enough to stay far
/// below 1 % of a core.
fn default_interval_ms() -> u64 {
    100
}

/// Every 50 polls: 5 s at the default interval, a short blind spot after a
/// hot-plug for a directory walk that costs about as much as a poll.
fn default_rescan_every() -> u32 {
    50
}

impl Default for RdmaSysfsConfig {
    fn default() -> Self {
        RdmaSysfsConfig {
            root: default_root(),
            interval_ms: default_interval_ms(),
            rescan_every: default_rescan_every(),
            devices: Vec::new(),
        }
    }
}

impl RdmaSysfsConfig {
    /// Validates the settings and builds the sensor `name`.
    pub fn build(&self, name: &str) -> Result<RdmaSysfsSensor, SensorConfigError> {
        SensorConfigError::check_polling(self.interval_ms, MIN_INTERVAL_MS, self.rescan_every)?;
        if self.root.as_os_str().is_empty() {
            return Err(SensorConfigError::Empty { setting: "root".into(), consequence: None });
        }
        Ok(RdmaSysfsSensor::new(name, self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_read_the_real_sysfs_every_100_ms() {
        let config: RdmaSysfsConfig = toml::from_str("").unwrap();
        assert_eq!(config, RdmaSysfsConfig::default());
        assert_eq!(config.root, PathBuf::from("/sys"));
        assert_eq!(config.interval_ms, 100);
    }

    #[test]
    fn the_config_round_trips_through_toml() {
        let config = RdmaSysfsConfig {
            root: "/tmp/sys".into(),
            interval_ms: 20,
            rescan_every: 3,
            devices: vec!["mlx5_1".into()],
        };
        let text = toml::to_string(&config).unwrap();
        assert_eq!(toml::from_str::<RdmaSysfsConfig>(&text).unwrap(), config);
    }

    #[test]
    fn an_interval_below_10_ms_is_refused() {
        let config = RdmaSysfsConfig { interval_ms: 5, ..RdmaSysfsConfig::default() };
        let err = config.build("r").err().unwrap();
        assert_eq!(err.to_string(), "configuration: interval_ms 5 is below the minimum of 10 ms");
    }

    #[test]
    fn rescan_every_zero_is_refused() {
        let config = RdmaSysfsConfig { rescan_every: 0, ..RdmaSysfsConfig::default() };
        assert!(matches!(config.build("r"), Err(SensorConfigError::Zero { setting }) if setting == "rescan_every"));
    }
}
