//! The settings of a `replay` sensor.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::sensor::ReplaySensor;
use crate::SensorConfigError;

/// A `replay` sensor's settings.
///
/// ```toml
/// path = "/var/lib/rocemend/recordings/incident-42.jsonl"
/// speed = 10.0
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayConfig {
    /// The recording to play: JSON lines as written by
    /// [`engine::recording::Writer`]. A relative path is taken from the
    /// daemon's working directory.
    pub path: PathBuf,
    /// How fast to play, as a multiple of recorded time: `1.0` plays in real
    /// time, `10.0` ten times faster, `0.0` as fast as the engine takes the
    /// batches. Must be finite and not negative.
    #[serde(default = "default_speed")]
    pub speed: f64,
    /// Shift every timestamp so the recording starts when the sensor starts,
    /// for a daemon on the wall clock (which would find recorded samples stale).
    #[serde(default)]
    pub rebase: bool,
}

/// Real time: a replay looks like the live fabric unless asked otherwise.
fn default_speed() -> f64 {
    1.0
}

impl ReplayConfig {
    /// Validates the settings and builds the sensor `name`.
    pub fn build(&self, name: &str) -> Result<ReplaySensor, SensorConfigError> {
        if self.path.as_os_str().is_empty() {
            return Err(SensorConfigError::Empty { setting: "path".into(), consequence: None });
        }
        let sensor = ReplaySensor::from_path(name, self.path.clone(), self.speed)?.rebased(self.rebase);
        // Refused here, where `check` sees it, not when the sensor starts
        // and finds nothing to play.
        if !self.path.exists() {
            let value = self.path.display().to_string();
            return Err(SensorConfigError::Invalid { setting: "path".into(), value, reason: "names no file" });
        }
        Ok(sensor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_defaults_to_real_time() {
        let config: ReplayConfig = toml::from_str("path = \"rec.jsonl\"").unwrap();
        assert_eq!(config, ReplayConfig { path: "rec.jsonl".into(), speed: 1.0, rebase: false });
    }

    #[test]
    fn the_config_round_trips_through_toml() {
        let config = ReplayConfig { path: "/tmp/rec.jsonl".into(), speed: 2.5, rebase: true };
        let text = toml::to_string(&config).unwrap();
        assert_eq!(toml::from_str::<ReplayConfig>(&text).unwrap(), config);
    }

    #[test]
    fn an_empty_path_is_refused() {
        let err = ReplayConfig { path: "".into(), speed: 1.0, rebase: false }.build("r").err().unwrap();
        assert_eq!(err.to_string(), "configuration: path is empty");
    }
}
