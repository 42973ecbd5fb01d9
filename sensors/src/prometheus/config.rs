//! The settings of a `prometheus` sensor.

use std::collections::BTreeMap;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::sensor::{PrometheusSensor, ScrapeTarget};
use crate::SensorConfigError;

/// The shortest scrape interval accepted: exporters render their whole
/// page per scrape, and none is meant to be scraped faster than this.
pub const MIN_INTERVAL_MS: u64 = 100;

/// The most targets one sensor scrapes (one task each). A node has a
/// handful of exporters; more belongs in a Prometheus server.
pub const MAX_TARGETS: usize = 64;

/// A `prometheus` sensor's settings: the targets it scrapes.
///
/// ```toml
/// [[targets]]
/// url = "http://127.0.0.1:9400/metrics"
/// interval_ms = 5000
/// timeout_ms = 2000
/// allow = ["DCGM_FI_DEV_.*"]
/// prefix = "dcgm_"
/// labels = { Hostname = "node", gpu = "gpu" }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrometheusConfig {
    /// The targets, each scraped on its own schedule by its own task, so a
    /// slow one never holds up the others. At least one.
    pub targets: Vec<ScrapeTargetConfig>,
}

/// One scrape target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScrapeTargetConfig {
    /// What to GET: `http://host:port/path` (`/metrics` if no path). Plain
    /// HTTP only; exporters on the node listen on loopback.
    pub url: String,
    /// How often to scrape, in milliseconds (at least 100).
    #[serde(default = "default_interval_ms")]
    pub interval_ms: u64,
    /// How long one scrape may take, connect to last byte, in milliseconds;
    /// at most `interval_ms`.
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    /// Metric names to keep, as regexes that must match the whole name
    /// (before `prefix`); empty keeps every metric.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Labels to keep, from the exporter's name to the engine's
    /// (`Hostname = "node"`); labels not listed are dropped. Empty keeps
    /// every label under its own name.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Prepended to every metric name (`dcgm_`), to keep sources apart.
    #[serde(default)]
    pub prefix: String,
}

/// 10 s: exporters' own refresh period is typically seconds.
fn default_interval_ms() -> u64 {
    10_000
}

/// 5 s: a loopback exporter answers in milliseconds; one that takes
/// seconds is stuck.
fn default_timeout_ms() -> u64 {
    5_000
}

impl ScrapeTargetConfig {
    /// A target with the defaults for everything but the URL.
    pub fn new(url: &str) -> ScrapeTargetConfig {
        ScrapeTargetConfig {
            url: url.to_string(),
            interval_ms: default_interval_ms(),
            timeout_ms: default_timeout_ms(),
            allow: Vec::new(),
            labels: BTreeMap::new(),
            prefix: String::new(),
        }
    }

    fn compile(&self) -> Result<ScrapeTarget, SensorConfigError> {
        let setting = |name: &str| format!("target {}: {name}", self.url);
        let url = super::http::parse_url(&self.url)
            .map_err(|source| SensorConfigError::Url { setting: format!("target {}", self.url), source })?;
        if self.interval_ms < MIN_INTERVAL_MS {
            return Err(SensorConfigError::OutOfRange {
                setting: setting("interval_ms"),
                value: self.interval_ms.to_string(),
                reason: format!("is below the minimum of {MIN_INTERVAL_MS} ms"),
            });
        }
        if self.timeout_ms == 0 || self.timeout_ms > self.interval_ms {
            return Err(SensorConfigError::OutOfRange {
                setting: setting("timeout_ms"),
                value: self.timeout_ms.to_string(),
                reason: format!("must be between 1 and interval_ms ({})", self.interval_ms),
            });
        }
        let allow = self
            .allow
            .iter()
            .map(|p| {
                Regex::new(&format!("^(?:{p})$")).map_err(|source| SensorConfigError::Regex {
                    setting: setting("allow"),
                    pattern: p.clone(),
                    source,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let Some((from, _)) = self.labels.iter().find(|(_, to)| to.is_empty()) {
            return Err(SensorConfigError::Invalid {
                setting: setting("labels"),
                value: from.clone(),
                reason: "maps to an empty name",
            });
        }
        Ok(ScrapeTarget { config: self.clone(), url, allow })
    }
}

impl PrometheusConfig {
    /// Validates the settings and builds the sensor `name`.
    pub fn build(&self, name: &str) -> Result<PrometheusSensor, SensorConfigError> {
        if self.targets.is_empty() {
            return Err(SensorConfigError::Empty { setting: "targets".into(), consequence: Some("nothing to scrape") });
        }
        if self.targets.len() > MAX_TARGETS {
            return Err(SensorConfigError::TooMany { setting: "targets", count: self.targets.len(), max: MAX_TARGETS });
        }
        let targets = self.targets.iter().map(ScrapeTargetConfig::compile).collect::<Result<Vec<_>, _>>()?;
        Ok(PrometheusSensor::new(name, targets))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prometheus::http::TargetUrlError;

    #[test]
    fn defaults_and_round_trip() {
        let config: PrometheusConfig = toml::from_str(
            "[[targets]]\nurl = \"http://127.0.0.1:9400/metrics\"\nallow = [\"DCGM_.*\"]\nlabels = { Hostname = \"node\" }",
        )
        .unwrap();
        let t = &config.targets[0];
        assert_eq!((t.interval_ms, t.timeout_ms, t.prefix.as_str()), (10_000, 5_000, ""));
        assert_eq!(t.labels.get("Hostname").map(String::as_str), Some("node"));
        let text = toml::to_string(&config).unwrap();
        assert_eq!(toml::from_str::<PrometheusConfig>(&text).unwrap(), config);
    }

    #[test]
    fn bad_settings_are_named() {
        let with = |t: ScrapeTargetConfig| PrometheusConfig { targets: vec![t] }.build("p").err().unwrap().to_string();
        assert!(with(ScrapeTargetConfig::new("https://x/")).contains("only http://"));
        let slow = ScrapeTargetConfig { timeout_ms: 20_000, ..ScrapeTargetConfig::new("http://127.0.0.1:1/") };
        assert!(with(slow).contains("timeout_ms 20000 must be between 1 and interval_ms (10000)"));
        let regex = ScrapeTargetConfig { allow: vec!["(".into()], ..ScrapeTargetConfig::new("http://127.0.0.1:1/") };
        assert!(with(regex).contains("allow: \"(\" is not a regex"));
        let none = PrometheusConfig { targets: vec![] }.build("p").err().unwrap();
        assert!(matches!(&none, SensorConfigError::Empty { setting, .. } if setting == "targets"), "{none:?}");
        let https = PrometheusConfig { targets: vec![ScrapeTargetConfig::new("https://x/")] }.build("p").err().unwrap();
        assert!(matches!(https, SensorConfigError::Url { source: TargetUrlError::NotHttp { .. }, .. }), "{https:?}");
    }
}
