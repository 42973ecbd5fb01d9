//! The settings of a `gnmi` sensor.

use std::path::{Path, PathBuf};
use std::time::Duration;

use gnmi_proto::gnmi::subscription_list::Mode as ListMode;
use gnmi_proto::gnmi::{Encoding, Subscription, SubscriptionList, SubscriptionMode};
use gnmi_proto::{parse_path, ClientConfig, TlsConfig};
use serde::{Deserialize, Serialize};

use super::sensor::{Backoff, GnmiSensor, TargetPlan};
use crate::ConfigError;

/// The most targets one sensor runs: one task and one connection each; a
/// fabric of 64 leaves and spines fits many times over, a typo of a range
/// expansion does not.
const MAX_TARGETS: usize = 1024;

/// A `gnmi` sensor's settings.
///
/// ```toml
/// presets = ["sonic_pfc", "sonic_pfcwd"]
/// sample_interval = "1s"
///
/// [[targets]]
/// name = "leaf01"
/// address = "10.0.0.11:8080"
/// username = "admin"
/// password = "secret"
/// ca = "/etc/rocemend/gnmi-ca.pem"
///
/// [[subscriptions]]
/// path = "openconfig:/interfaces/interface[name=*]/state/counters"
/// mode = "sample"
/// sample_interval = "10s"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GnmiConfig {
    /// The switches to subscribe to; one task and one stream each.
    pub targets: Vec<TargetConfig>,
    /// Ready-made subscriptions and their metric mappings: `sonic_pfc`,
    /// `sonic_queues`, `sonic_pfcwd`, `openconfig_interfaces`.
    #[serde(default)]
    pub presets: Vec<Preset>,
    /// More subscriptions, besides the presets'.
    #[serde(default)]
    pub subscriptions: Vec<SubscriptionConfig>,
    /// A path prefix for `subscriptions` (`COUNTERS_DB@/COUNTERS`); presets
    /// carry their own.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Ask for changes only: no initial values (gNMI `updates_only`).
    #[serde(default)]
    pub updates_only: bool,
    /// The sample interval of presets and of subscriptions that give none.
    #[serde(default = "default_sample_interval")]
    pub sample_interval: String,
    /// Bound on connecting, each call, and the start of a stream.
    #[serde(default = "default_timeout")]
    pub timeout: String,
    /// First reconnection delay; doubles up to `backoff_max`, with jitter.
    #[serde(default = "default_backoff_initial")]
    pub backoff_initial: String,
    /// Longest reconnection delay.
    #[serde(default = "default_backoff_max")]
    pub backoff_max: String,
}

/// One switch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetConfig {
    /// Its name: the `switch` label of every series it yields.
    pub name: String,
    /// `host:port`.
    pub address: String,
    /// The gNMI target string in the prefix, when the switch wants one.
    #[serde(default)]
    pub target: Option<String>,
    /// CA certificate (PEM) to trust; TLS is on when this or `cert` is set.
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// Client certificate (PEM), for mutual TLS; needs `key`.
    #[serde(default)]
    pub cert: Option<PathBuf>,
    /// Client key (PEM).
    #[serde(default)]
    pub key: Option<PathBuf>,
    /// The name in the switch's certificate, when not the address's host.
    #[serde(default)]
    pub tls_domain: Option<String>,
    /// Username, sent as `username` metadata.
    #[serde(default)]
    pub username: Option<String>,
    /// Password, sent as `password` metadata.
    #[serde(default)]
    pub password: Option<String>,
}

/// A subscription.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionConfig {
    /// The path (`COUNTERS_DB@/COUNTERS/Ethernet*/Queues`,
    /// `openconfig:/interfaces/interface[name=*]/state/oper-status`).
    pub path: String,
    /// `sample` or `on_change`.
    #[serde(default = "default_mode")]
    pub mode: StreamMode,
    /// For `sample`: how often; the sensor's `sample_interval` if unset.
    #[serde(default)]
    pub sample_interval: Option<String>,
}

/// How a subscription is triggered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamMode {
    /// Every sample interval.
    Sample,
    /// When the value changes.
    OnChange,
}

/// A ready-made subscription with its metric mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preset {
    /// `COUNTERS/Ethernet*`: PFC frames and pause durations per priority.
    SonicPfc,
    /// `COUNTERS/Ethernet*/Queues`: queue counters and watermarks.
    SonicQueues,
    /// `COUNTERS/Ethernet*/Pfcwd`: the PFC watchdog per queue.
    SonicPfcwd,
    /// OpenConfig oper-status (on change) and error counters.
    OpenconfigInterfaces,
}

impl Preset {
    /// The subscriptions of the preset.
    pub fn subscriptions(self) -> Vec<(&'static str, StreamMode)> {
        match self {
            Preset::SonicPfc => vec![("COUNTERS_DB@/COUNTERS/Ethernet*", StreamMode::Sample)],
            Preset::SonicQueues => vec![("COUNTERS_DB@/COUNTERS/Ethernet*/Queues", StreamMode::Sample)],
            Preset::SonicPfcwd => vec![("COUNTERS_DB@/COUNTERS/Ethernet*/Pfcwd", StreamMode::Sample)],
            Preset::OpenconfigInterfaces => vec![
                ("openconfig:/interfaces/interface[name=*]/state/oper-status", StreamMode::OnChange),
                ("openconfig:/interfaces/interface[name=*]/state/counters", StreamMode::Sample),
            ],
        }
    }
}

fn default_mode() -> StreamMode {
    StreamMode::Sample
}
/// SONiC's counter poll is 1 s for port counters; sampling faster reads
/// the same values twice.
fn default_sample_interval() -> String {
    "1s".into()
}
/// Long enough for a busy switch's telemetry container, short enough that
/// a dead one is noticed within a rule window.
fn default_timeout() -> String {
    "10s".into()
}
fn default_backoff_initial() -> String {
    "500ms".into()
}
/// A switch that reboots is back in a minute or two; 30 s between tries
/// keeps the gap short without hammering it.
fn default_backoff_max() -> String {
    "30s".into()
}

fn duration(setting: &str, text: &str) -> Result<Duration, ConfigError> {
    let ns = engine::time::parse_duration(text)
        .map_err(|source| ConfigError::Duration { setting: setting.into(), source })?;
    Ok(Duration::from_nanos(ns.max(0) as u64))
}

fn read_pem(target: &str, what: &str, path: &Path) -> Result<Vec<u8>, ConfigError> {
    std::fs::read(path).map_err(|source| ConfigError::Read {
        setting: format!("target {target:?}: {what}"),
        path: path.to_path_buf(),
        source,
    })
}

/// The durations of a sensor's settings, parsed and checked.
struct Timing {
    /// The sample interval of presets and of subscriptions that give none.
    sample_interval: Duration,
    /// Bound on connecting, each call, and the start of a stream.
    timeout: Duration,
    /// Reconnection delays.
    backoff: Backoff,
}

/// A gNMI sample interval in nanoseconds, saturating.
fn interval_ns(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

/// One subscription to `path` (a gNMI path string, from `setting`).
fn subscription(setting: &str, path: &str, mode: StreamMode, interval: Duration) -> Result<Subscription, ConfigError> {
    let path = parse_path(path).map_err(|source| ConfigError::Path { setting: setting.into(), source })?;
    let (mode, sample_interval) = match mode {
        StreamMode::Sample => (SubscriptionMode::Sample, interval_ns(interval)),
        StreamMode::OnChange => (SubscriptionMode::OnChange, 0),
    };
    Ok(Subscription { path: Some(path), mode: mode as i32, sample_interval, ..Default::default() })
}

impl GnmiConfig {
    /// Validates the settings, reads the TLS files, and builds the sensor.
    pub fn build(&self, name: &str) -> Result<GnmiSensor, ConfigError> {
        if self.targets.is_empty() {
            return Err(ConfigError::Empty {
                setting: "targets".into(),
                consequence: Some("no switch to subscribe to"),
            });
        }
        if self.targets.len() > MAX_TARGETS {
            return Err(ConfigError::TooMany { setting: "targets", count: self.targets.len(), max: MAX_TARGETS });
        }
        if self.presets.is_empty() && self.subscriptions.is_empty() {
            return Err(ConfigError::Empty {
                setting: "subscriptions".into(),
                consequence: Some("with no presets either, there is nothing to subscribe to"),
            });
        }
        let timing = self.timing()?;
        let subs = self.subscription_list(timing.sample_interval)?;
        let targets = self.target_plans(&subs, timing.timeout)?;
        // A stream of samples that goes quiet for three intervals is dead
        // even if TCP says otherwise.
        let max_interval = subs.iter().map(|s| s.sample_interval).max().unwrap_or(0);
        let stall = (max_interval > 0).then(|| (Duration::from_nanos(max_interval) * 3).max(timing.timeout));
        Ok(GnmiSensor::new(name, targets, timing.backoff, stall))
    }

    /// The durations, parsed; the timeout and the first backoff above 0,
    /// the longest backoff at least the first.
    fn timing(&self) -> Result<Timing, ConfigError> {
        let sample_interval = duration("sample_interval", &self.sample_interval)?;
        let timeout = duration("timeout", &self.timeout)?;
        let backoff = Backoff {
            initial: duration("backoff_initial", &self.backoff_initial)?,
            max: duration("backoff_max", &self.backoff_max)?,
        };
        let out_of_range = |setting: &str, value: &str, reason: String| ConfigError::OutOfRange {
            setting: setting.into(),
            value: value.to_string(),
            reason,
        };
        if timeout.is_zero() {
            return Err(out_of_range("timeout", &self.timeout, "must be above 0".into()));
        }
        if backoff.initial.is_zero() {
            return Err(out_of_range("backoff_initial", &self.backoff_initial, "must be above 0".into()));
        }
        if backoff.max < backoff.initial {
            let reason = format!("is below backoff_initial {}", self.backoff_initial);
            return Err(out_of_range("backoff_max", &self.backoff_max, reason));
        }
        Ok(Timing { sample_interval, timeout, backoff })
    }

    /// The presets' subscriptions, then the user's joined to `prefix`; none
    /// carries a target string yet (presets name their own database target).
    fn subscription_list(&self, default_interval: Duration) -> Result<Vec<Subscription>, ConfigError> {
        let mut subs = Vec::new();
        for preset in &self.presets {
            for (path, mode) in preset.subscriptions() {
                subs.push(subscription("presets", path, mode, default_interval)?);
            }
        }
        let prefix = match &self.prefix {
            Some(p) => Some(parse_path(p).map_err(|source| ConfigError::Path { setting: "prefix".into(), source })?),
            None => None,
        };
        for s in &self.subscriptions {
            let (interval, text) = match &s.sample_interval {
                Some(text) => (duration("sample_interval", text)?, text),
                None => (default_interval, &self.sample_interval),
            };
            if s.mode == StreamMode::Sample && interval.is_zero() {
                return Err(ConfigError::OutOfRange {
                    setting: format!("subscription {:?}: sample_interval", s.path),
                    value: text.clone(),
                    reason: "must be above 0".into(),
                });
            }
            let mut sub = subscription("subscriptions", &s.path, s.mode, interval)?;
            if let (Some(prefix), Some(path)) = (&prefix, sub.path.as_mut()) {
                *path = gnmi_proto::path::join(Some(prefix), path);
            }
            subs.push(sub);
        }
        Ok(subs)
    }

    /// One plan per target, each subscribing to `subs`; names are unique.
    fn target_plans(&self, subs: &[Subscription], timeout: Duration) -> Result<Vec<TargetPlan>, ConfigError> {
        let mut targets = Vec::with_capacity(self.targets.len());
        let mut names = std::collections::BTreeSet::new();
        for t in &self.targets {
            if !names.insert(t.name.as_str()) {
                return Err(ConfigError::Duplicate { setting: "targets".into(), name: t.name.clone() });
            }
            targets.push(t.plan(subs, self.updates_only, timeout)?);
        }
        Ok(targets)
    }
}

impl TargetConfig {
    /// The target's connection and subscription list.
    fn plan(&self, subs: &[Subscription], updates_only: bool, timeout: Duration) -> Result<TargetPlan, ConfigError> {
        if self.name.is_empty() {
            return Err(ConfigError::Empty {
                setting: "target name".into(),
                consequence: Some("every target needs a name and an address"),
            });
        }
        if self.address.is_empty() {
            return Err(ConfigError::Empty { setting: format!("target {:?}: address", self.name), consequence: None });
        }
        let tls = self.tls()?;
        let credentials = self.credentials()?;
        let mut subscriptions = subs.to_vec();
        if let Some(target) = &self.target {
            for s in &mut subscriptions {
                if let Some(p) = s.path.as_mut().filter(|p| p.target.is_empty()) {
                    p.target = target.clone();
                }
            }
        }
        let list = SubscriptionList {
            subscription: subscriptions,
            mode: ListMode::Stream as i32,
            encoding: Encoding::JsonIetf as i32,
            updates_only,
            ..Default::default()
        };
        let client =
            ClientConfig { address: self.address.clone(), tls, credentials, connect_timeout: timeout, timeout };
        Ok(TargetPlan { name: self.name.clone(), client, list })
    }

    /// TLS, with its PEM files read, when `ca` or `cert` is set.
    fn tls(&self) -> Result<Option<TlsConfig>, ConfigError> {
        if self.ca.is_none() && self.cert.is_none() {
            return Ok(None);
        }
        let identity = match (&self.cert, &self.key) {
            (Some(c), Some(k)) => Some((read_pem(&self.name, "cert", c)?, read_pem(&self.name, "key", k)?)),
            (None, None) => None,
            _ => return Err(self.conflict("cert and key go together")),
        };
        let ca_pem = self.ca.as_ref().map(|p| read_pem(&self.name, "ca", p)).transpose()?;
        Ok(Some(TlsConfig { ca_pem, identity, domain: self.tls_domain.clone() }))
    }

    /// The username and password, when both are set.
    fn credentials(&self) -> Result<Option<(String, String)>, ConfigError> {
        match (&self.username, &self.password) {
            (Some(u), Some(p)) => Ok(Some((u.clone(), p.clone()))),
            (None, None) => Ok(None),
            _ => Err(self.conflict("username and password go together")),
        }
    }

    fn conflict(&self, reason: &'static str) -> ConfigError {
        ConfigError::Conflict { setting: format!("target {:?}", self.name), reason }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = r#"
presets = ["sonic_pfc", "openconfig_interfaces"]
sample_interval = "2s"

[[targets]]
name = "leaf01"
address = "127.0.0.1:9339"
username = "admin"
password = "secret"

[[subscriptions]]
path = "COUNTERS_DB@/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_3_RX_PKTS"
mode = "sample"
sample_interval = "500ms"
"#;

    #[test]
    fn the_example_round_trips_and_expands_presets() {
        let config: GnmiConfig = toml::from_str(EXAMPLE).unwrap();
        let again: GnmiConfig = toml::from_str(&toml::to_string(&config).unwrap()).unwrap();
        assert_eq!(again, config);
        let sensor = config.build("fabric").unwrap();
        let list = &sensor.targets()[0].list;
        let paths: Vec<_> =
            list.subscription.iter().map(|s| gnmi_proto::path_to_string(s.path.as_ref().unwrap())).collect();
        assert_eq!(
            paths,
            [
                "COUNTERS_DB@/COUNTERS/Ethernet*",
                "openconfig:/interfaces/interface[name=*]/state/oper-status",
                "openconfig:/interfaces/interface[name=*]/state/counters",
                "COUNTERS_DB@/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_3_RX_PKTS",
            ]
        );
        assert_eq!(list.subscription[0].sample_interval, 2_000_000_000);
        assert_eq!(list.subscription[1].mode, SubscriptionMode::OnChange as i32);
        assert_eq!(list.subscription[3].sample_interval, 500_000_000);
    }

    #[test]
    fn the_prefix_is_joined_to_the_users_subscriptions_only() {
        let mut config: GnmiConfig = toml::from_str(EXAMPLE).unwrap();
        config.prefix = Some("COUNTERS_DB@/COUNTERS".into());
        config.subscriptions[0].path = "/Ethernet0/Queues".into();
        let sensor = config.build("fabric").unwrap();
        let subs = &sensor.targets()[0].list.subscription;
        let path = |i: usize| gnmi_proto::path_to_string(subs[i].path.as_ref().unwrap());
        assert_eq!(path(3), "COUNTERS_DB@/COUNTERS/Ethernet0/Queues");
        assert_eq!(path(0), "COUNTERS_DB@/COUNTERS/Ethernet*", "presets carry their own prefix");
    }

    #[test]
    fn bad_settings_are_named() {
        let base: GnmiConfig = toml::from_str(EXAMPLE).unwrap();
        let mut c = base.clone();
        c.targets[0].password = None;
        assert!(c.build("x").unwrap_err().to_string().contains("username and password go together"));
        let mut c = base.clone();
        c.timeout = "soon".into();
        assert!(c.build("x").unwrap_err().to_string().starts_with("configuration: timeout: invalid duration"));
        let mut c = base.clone();
        c.subscriptions[0].path = "/a[b=c".into();
        assert!(c.build("x").unwrap_err().to_string().contains("unclosed '['"));
        let mut c = base.clone();
        c.backoff_max = "100ms".into();
        let err = c.build("x").unwrap_err();
        assert!(matches!(&err, ConfigError::OutOfRange { setting, .. } if setting == "backoff_max"), "{err:?}");
        assert_eq!(err.to_string(), "configuration: backoff_max 100ms is below backoff_initial 500ms");
        let mut c = base.clone();
        c.targets[0].cert = Some("/nonexistent/cert.pem".into());
        c.targets[0].key = Some("/nonexistent/key.pem".into());
        let err = c.build("x").unwrap_err();
        assert!(matches!(&err, ConfigError::Read { setting, .. } if setting == "target \"leaf01\": cert"), "{err:?}");
        let mut c = base;
        c.targets.push(c.targets[0].clone());
        let err = c.build("x").unwrap_err();
        assert!(matches!(&err, ConfigError::Duplicate { name, .. } if name == "leaf01"), "{err:?}");
        assert!(err.to_string().contains("listed twice"));
        assert!(toml::from_str::<GnmiConfig>("targets = []\nprests = []").is_err());
    }
}
