//! The settings of a `sonic_redis` sensor.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sensor::SonicRedisSensor;
use crate::switch_series::PauseUnit;
use crate::SensorConfigError;

/// The shortest poll accepted. The watchdog's own counters move every 200 ms (its default
/// poll); faster reads only load the switch's Redis, which orchagent and syncd need.
pub const MIN_INTERVAL_MS: u64 = 100;
/// The longest poll accepted: the standard switch rules go stale after 3 s.
pub const MAX_INTERVAL_MS: u64 = 60_000;
/// The longest answer wait accepted: a local Redis answers in milliseconds.
pub const MAX_TIMEOUT_MS: u64 = 30_000;

/// A `sonic_redis` sensor's settings.
///
/// ```toml
/// switch = "leaf-rail3"
/// database_config = "/var/run/redis/sonic-db/database_config.json"
/// password_file = "/run/redis/auth/passwd"
/// interval_ms = 1000
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SonicRedisConfig {
    /// The switch's name: the `switch` label of every series (the inventory's name of it).
    pub switch: String,
    /// The layout of the switch's databases (a multi-ASIC switch: one sensor per namespace,
    /// `/var/run/redis<N>/sonic-db/database_config.json`). Absent file: the standard layout.
    #[serde(default = "default_layout")]
    pub database_config: PathBuf,
    /// The Redis password, on builds that set one. Absent file: no password.
    #[serde(default = "default_password")]
    pub password_file: PathBuf,
    /// How often to read the counters, in milliseconds (100 to 60000).
    #[serde(default = "default_interval_ms")]
    pub interval_ms: u64,
    /// How long one Redis command may take, in milliseconds (at most 30000).
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// How to read Marvell's `…_PAUSE_DURATION` counters (see [`PauseUnit`]).
    #[serde(default)]
    pub pause_unit: PauseUnit,
}

fn default_layout() -> PathBuf {
    PathBuf::from(sonic::layout::CONFIG_PATH)
}

fn default_password() -> PathBuf {
    PathBuf::from(sonic::layout::PASSWORD_PATH)
}

/// 1 s: SONiC's port counter group polls every second.
fn default_interval_ms() -> u64 {
    1_000
}

/// 2 s: SONiC's own clients wait that long on a busy Redis.
fn default_timeout_ms() -> u64 {
    2_000
}

impl SonicRedisConfig {
    /// The settings with the defaults, for switch `switch`.
    pub fn new(switch: &str) -> SonicRedisConfig {
        SonicRedisConfig {
            switch: switch.to_string(),
            database_config: default_layout(),
            password_file: default_password(),
            interval_ms: default_interval_ms(),
            timeout_ms: default_timeout_ms(),
            pause_unit: PauseUnit::default(),
        }
    }

    /// The poll interval.
    pub fn interval(&self) -> Duration {
        Duration::from_millis(self.interval_ms)
    }

    /// The answer wait of one Redis command.
    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// Validates the settings and builds the sensor `name`.
    pub fn build(self, name: &str) -> Result<SonicRedisSensor, SensorConfigError> {
        if self.switch.trim().is_empty() {
            return Err(SensorConfigError::Empty { setting: "switch".into(), consequence: None });
        }
        let range = |setting: &str, value: u64, reason: String| SensorConfigError::OutOfRange {
            setting: setting.into(),
            value: value.to_string(),
            reason,
        };
        if self.interval_ms < MIN_INTERVAL_MS {
            return Err(range(
                "interval_ms",
                self.interval_ms,
                format!("is below the minimum of {MIN_INTERVAL_MS} ms"),
            ));
        }
        if self.interval_ms > MAX_INTERVAL_MS {
            return Err(range(
                "interval_ms",
                self.interval_ms,
                format!("is above the maximum of {MAX_INTERVAL_MS} ms"),
            ));
        }
        if self.timeout_ms == 0 {
            return Err(SensorConfigError::Zero { setting: "timeout_ms".into() });
        }
        if self.timeout_ms > MAX_TIMEOUT_MS {
            return Err(range("timeout_ms", self.timeout_ms, format!("is above the maximum of {MAX_TIMEOUT_MS} ms")));
        }
        Ok(SonicRedisSensor::new(name, self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_sonics_paths_and_bad_values_name_their_setting() {
        let config: SonicRedisConfig = toml::from_str(r#"switch = "leaf01""#).unwrap();
        assert_eq!(config, SonicRedisConfig::new("leaf01"));
        assert_eq!(config.database_config, PathBuf::from("/var/run/redis/sonic-db/database_config.json"));
        assert!(config.clone().build("s").is_ok());
        let fast = SonicRedisConfig { interval_ms: 50, ..config.clone() };
        assert_eq!(
            fast.build("s").unwrap_err().to_string(),
            "configuration: interval_ms 50 is below the minimum of 100 ms"
        );
        let unnamed = SonicRedisConfig { switch: " ".into(), ..config };
        assert!(unnamed.build("s").unwrap_err().to_string().contains("switch is empty"));
        assert!(toml::from_str::<SonicRedisConfig>("switch = \"a\"\ninterval = 1").is_err(), "unknown setting");
    }
}
