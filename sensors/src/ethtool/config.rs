//! The settings of an `ethtool` sensor.

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::sensor::EthtoolSensor;
use crate::SensorConfigError;

/// The shortest poll interval accepted. mlx5 answers `ETHTOOL_GSTATS` with
/// firmware queries; faster than 10 ms would cost real CPU for counters the
/// NIC refreshes no faster.
pub const MIN_INTERVAL_MS: u64 = 10;

/// An `ethtool` sensor's settings.
///
/// ```toml
/// interfaces = ["ens1f0np0", "ens2f0np0"]
/// interval_ms = 1000
/// exclude = ['^(ch|rx|tx)\d+_']
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EthtoolConfig {
    /// The interfaces to read; empty reads every non-loopback interface that
    /// has ethtool statistics (re-listed every `rescan_every` polls).
    #[serde(default)]
    pub interfaces: Vec<String>,
    /// How often to read the statistics, in milliseconds (at least 10).
    #[serde(default = "default_interval_ms")]
    pub interval_ms: u64,
    /// Re-list interfaces and re-read statistic names every this many polls
    /// (names are also re-read at once when their count changes). At least 1.
    #[serde(default = "default_rescan_every")]
    pub rescan_every: u32,
    /// Only statistics whose ethtool name matches one of these regexes;
    /// empty takes every statistic.
    #[serde(default)]
    pub include: Vec<String>,
    /// Drop statistics whose ethtool name matches one of these regexes (after
    /// `include`). mlx5 has per-channel statistics (`ch3_…`, `rx12_…`,
    /// `tx5_…`) by the thousand; `'^(ch|rx|tx)\d+_'` drops them.
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// Once a second: pause and error counters are cumulative, so a slower
/// poll loses nothing but resolution, and mlx5 stats cost firmware time.
fn default_interval_ms() -> u64 {
    1000
}

/// Every 30 polls: 30 s at the default interval.
fn default_rescan_every() -> u32 {
    30
}

impl Default for EthtoolConfig {
    fn default() -> Self {
        EthtoolConfig {
            interfaces: Vec::new(),
            interval_ms: default_interval_ms(),
            rescan_every: default_rescan_every(),
            include: Vec::new(),
            exclude: Vec::new(),
        }
    }
}

/// Compiled `include`/`exclude` filters.
#[derive(Debug, Clone)]
pub struct Filter {
    include: Vec<Regex>,
    exclude: Vec<Regex>,
}

impl Filter {
    /// Whether statistic `name` is read.
    pub fn keeps(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|r| r.is_match(name)))
            && !self.exclude.iter().any(|r| r.is_match(name))
    }
}

fn compile(field: &str, patterns: &[String]) -> Result<Vec<Regex>, SensorConfigError> {
    patterns
        .iter()
        .map(|p| {
            Regex::new(p).map_err(|source| SensorConfigError::Regex {
                setting: field.into(),
                pattern: p.clone(),
                source,
            })
        })
        .collect()
}

impl EthtoolConfig {
    /// The compiled statistic filter.
    pub fn filter(&self) -> Result<Filter, SensorConfigError> {
        Ok(Filter { include: compile("include", &self.include)?, exclude: compile("exclude", &self.exclude)? })
    }

    /// Validates the settings and builds the sensor `name`.
    pub fn build(&self, name: &str) -> Result<EthtoolSensor, SensorConfigError> {
        SensorConfigError::check_polling(self.interval_ms, MIN_INTERVAL_MS, self.rescan_every)?;
        if let Some(bad) = self.interfaces.iter().find(|i| i.is_empty() || i.len() >= libc::IFNAMSIZ) {
            return Err(SensorConfigError::Invalid {
                setting: "interfaces".into(),
                value: bad.clone(),
                reason: "is not an interface name (1 to 15 bytes)",
            });
        }
        let filter = self.filter()?;
        Ok(EthtoolSensor::new(name, self.clone(), filter))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_round_trip() {
        let config: EthtoolConfig = toml::from_str("").unwrap();
        assert_eq!(config, EthtoolConfig::default());
        let config = EthtoolConfig { interfaces: vec!["eth0".into()], exclude: vec![r"^ch\d+_".into()], ..config };
        let text = toml::to_string(&config).unwrap();
        assert_eq!(toml::from_str::<EthtoolConfig>(&text).unwrap(), config);
    }

    #[test]
    fn filters_include_then_exclude() {
        let config = EthtoolConfig {
            include: vec!["pause".into(), "_phy$".into()],
            exclude: vec![r"^rx_prio7".into()],
            ..EthtoolConfig::default()
        };
        let f = config.filter().unwrap();
        assert!(f.keeps("rx_prio3_pause"));
        assert!(f.keeps("rx_bits_phy"));
        assert!(!f.keeps("rx_prio7_pause"));
        assert!(!f.keeps("rx_packets"));
    }

    #[test]
    fn bad_settings_are_named() {
        let bad_regex = EthtoolConfig { exclude: vec!["(".into()], ..EthtoolConfig::default() };
        assert!(bad_regex
            .build("e")
            .err()
            .unwrap()
            .to_string()
            .starts_with("configuration: exclude: \"(\" is not a regex"));
        let long = EthtoolConfig { interfaces: vec!["a-very-long-interface".into()], ..EthtoolConfig::default() };
        assert!(matches!(long.build("e"), Err(SensorConfigError::Invalid { setting, .. }) if setting == "interfaces"));
        let fast = EthtoolConfig { interval_ms: 1, ..EthtoolConfig::default() };
        assert!(fast.build("e").is_err());
    }
}
