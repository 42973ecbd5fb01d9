//! The settings of an `nccl_tests` sensor.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::sensor::NcclTestsSensor;
use crate::SensorConfigError;

/// The shortest poll interval accepted: the file is checked with a `stat`
/// and a read per poll; faster than 10 ms buys nothing for a benchmark that
/// prints a row every few hundred ms.
pub const MIN_POLL_MS: u64 = 10;

/// An `nccl_tests` sensor's settings.
///
/// ```toml
/// path = "/var/log/nccl/all_reduce.log"
/// job = "burnin-42"
/// collective = "all_reduce"
/// poll_ms = 500
/// from_start = true
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NcclTestsConfig {
    /// The output file to follow (stdout of the nccl-tests run). It may not
    /// exist yet; the sensor waits for it.
    pub path: PathBuf,
    /// The `job` label of every series (a Slurm job id, a burn-in name).
    pub job: String,
    /// The `collective` label when the output does not say which binary
    /// wrote it (`all_reduce`, `all_gather`, …).
    #[serde(default)]
    pub collective: Option<String>,
    /// How often to look for appended lines, in milliseconds (at least 10).
    #[serde(default = "default_poll_ms")]
    pub poll_ms: u64,
    /// Read what the file already holds when the sensor starts (a run that
    /// began before the daemon); `false` reads only lines appended later.
    #[serde(default = "default_from_start")]
    pub from_start: bool,
}

/// Half a second: nccl-tests prints a row per message size, each taking
/// from milliseconds to seconds.
fn default_poll_ms() -> u64 {
    500
}

fn default_from_start() -> bool {
    true
}

impl NcclTestsConfig {
    /// Validates the settings and builds the sensor `name`.
    pub fn build(&self, name: &str) -> Result<NcclTestsSensor, SensorConfigError> {
        if self.path.as_os_str().is_empty() {
            return Err(SensorConfigError::Empty { setting: "path".into(), consequence: None });
        }
        if self.poll_ms < MIN_POLL_MS {
            return Err(SensorConfigError::OutOfRange {
                setting: "poll_ms".into(),
                value: self.poll_ms.to_string(),
                reason: format!("is below the minimum of {MIN_POLL_MS} ms"),
            });
        }
        Ok(NcclTestsSensor::new(name, self.clone()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_round_trip() {
        let config: NcclTestsConfig = toml::from_str("path = \"/tmp/a.log\"\njob = \"j1\"").unwrap();
        assert_eq!(config.poll_ms, 500);
        assert!(config.from_start);
        assert_eq!(config.collective, None);
        let text = toml::to_string(&config).unwrap();
        assert_eq!(toml::from_str::<NcclTestsConfig>(&text).unwrap(), config);
    }

    #[test]
    fn a_fast_poll_is_refused() {
        let config: NcclTestsConfig = toml::from_str("path = \"/tmp/a.log\"\njob = \"j\"\npoll_ms = 1").unwrap();
        assert_eq!(
            config.build("n").err().unwrap().to_string(),
            "configuration: poll_ms 1 is below the minimum of 10 ms"
        );
    }
}
