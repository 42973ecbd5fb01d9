//! The settings of a `netlink_link` sensor.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::sensor::NetlinkLinkSensor;
use crate::SensorConfigError;

/// A `netlink_link` sensor's settings.
///
/// ```toml
/// include = ["eth*", "ens*"]
/// exclude = ["lo", "docker*", "veth*"]
/// retry_min_ms = 100
/// retry_max_ms = 30000
/// heartbeat = "1s"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetlinkLinkConfig {
    /// Interface names to watch, as glob patterns (`*` any run of
    /// characters, `?` one character). A link is watched when it matches at
    /// least one of these and none of `exclude`. Default: every link.
    #[serde(default = "default_include")]
    pub include: Vec<String>,
    /// Interface names never watched, as glob patterns. Default: `lo`, which
    /// has no carrier to lose.
    #[serde(default = "default_exclude")]
    pub exclude: Vec<String>,
    /// The first wait, in milliseconds, before re-subscribing after a socket
    /// error; it doubles on each failure in a row up to `retry_max_ms`.
    #[serde(default = "default_retry_min_ms")]
    pub retry_min_ms: u64,
    /// The longest wait, in milliseconds, between two subscription attempts.
    #[serde(default = "default_retry_max_ms")]
    pub retry_max_ms: u64,
    /// The netlink socket's receive buffer in bytes. The kernel drops
    /// notifications when it is full (the sensor then re-reads every link, so
    /// no carrier change is lost, but the push latency is). The kernel caps it
    /// at `net.core.rmem_max` unless the daemon has CAP_NET_ADMIN.
    #[serde(default = "default_receive_buffer_bytes")]
    pub receive_buffer_bytes: usize,
    /// How often the current state of every watched link (its counters and
    /// operstate, unchanged values included) is sent again, e.g. `"1s"`,
    /// between 100 ms and 60 s; `"0"` sends changes only. The kernel pushes
    /// changes, so a link that stays up sends nothing; without this, every
    /// rule over these series would find a quiet link stale `stale_after`
    /// after its last change, and could neither fire on it nor resolve.
    #[serde(default = "default_heartbeat", with = "humantime_serde")]
    pub heartbeat: Duration,
}

fn default_include() -> Vec<String> {
    vec!["*".into()]
}

fn default_exclude() -> Vec<String> {
    vec!["lo".into()]
}

/// A first retry soon enough that a transient error costs little.
fn default_retry_min_ms() -> u64 {
    100
}

/// Thirty seconds: a broken netlink socket is a host problem; retrying more
/// often only fills the log.
fn default_retry_max_ms() -> u64 {
    30_000
}

/// 1 MiB holds about 1,000 link notifications: a burst of flaps on every
/// port of a large host while the daemon is briefly descheduled.
fn default_receive_buffer_bytes() -> usize {
    1 << 20
}

/// Five beats within the rules' default `stale_after` (5 s): a link is
/// stale only when several beats in a row are missing, i.e. the sensor is
/// gone, and a second of lag is far below any link rule's window.
fn default_heartbeat() -> Duration {
    Duration::from_secs(1)
}

/// The shortest heartbeat: each beat is three samples per link, and a
/// tenth of a second is far inside any useful `stale_after`; faster beats
/// only cost the engine work.
const MIN_HEARTBEAT: Duration = Duration::from_millis(100);

/// The longest heartbeat. A period above a rule's `stale_after` (5 s unless
/// the rule says otherwise) leaves quiet links stale between beats, and the
/// sensor cannot see the rules; a period above a minute is surely a mistake
/// (for `"0"`, which turns the heartbeat off, or for seconds).
const MAX_HEARTBEAT: Duration = Duration::from_secs(60);

impl Default for NetlinkLinkConfig {
    fn default() -> Self {
        NetlinkLinkConfig {
            include: default_include(),
            exclude: default_exclude(),
            retry_min_ms: default_retry_min_ms(),
            retry_max_ms: default_retry_max_ms(),
            receive_buffer_bytes: default_receive_buffer_bytes(),
            heartbeat: default_heartbeat(),
        }
    }
}

/// Longest accepted pattern; interface names are at most 15 bytes, so a
/// longer pattern is a mistake (and bounds the matcher's work).
const MAX_PATTERN_LEN: usize = 64;

/// The rule a pattern breaks, for its error; spells [`MAX_PATTERN_LEN`].
const PATTERN_LEN: &str = "must be 1 to 64 characters";

impl NetlinkLinkConfig {
    /// Validates the settings and builds the sensor `name`.
    pub fn build(&self, name: &str) -> Result<NetlinkLinkSensor, SensorConfigError> {
        let filter = NameFilter::new(self.include.clone(), self.exclude.clone())?;
        if self.retry_min_ms == 0 {
            return Err(SensorConfigError::Zero { setting: "retry_min_ms".into() });
        }
        if self.retry_max_ms < self.retry_min_ms {
            return Err(SensorConfigError::OutOfRange {
                setting: "retry_max_ms".into(),
                value: self.retry_max_ms.to_string(),
                reason: format!("is below retry_min_ms {}", self.retry_min_ms),
            });
        }
        if self.receive_buffer_bytes < 4096 {
            return Err(SensorConfigError::OutOfRange {
                setting: "receive_buffer_bytes".into(),
                value: self.receive_buffer_bytes.to_string(),
                reason: "is below one page (4096)".into(),
            });
        }
        Ok(NetlinkLinkSensor::new(
            name,
            filter,
            Duration::from_millis(self.retry_min_ms),
            Duration::from_millis(self.retry_max_ms),
            self.receive_buffer_bytes,
            self.heartbeat()?,
        ))
    }

    /// The heartbeat period, `None` when it is off (`"0"`).
    fn heartbeat(&self) -> Result<Option<Duration>, SensorConfigError> {
        let period = self.heartbeat;
        if period.is_zero() {
            return Ok(None);
        }
        if !(MIN_HEARTBEAT..=MAX_HEARTBEAT).contains(&period) {
            let reason = format!("is not between {MIN_HEARTBEAT:?} and {MAX_HEARTBEAT:?} (\"0\" turns it off)");
            return Err(SensorConfigError::duration_out_of_range("heartbeat", period, reason));
        }
        Ok(Some(period))
    }
}

/// Which interface names are watched: include and exclude glob patterns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameFilter {
    include: Vec<String>,
    exclude: Vec<String>,
}

impl NameFilter {
    /// A filter; refuses empty or over-long patterns and an empty include
    /// list (which would watch nothing).
    pub fn new(include: Vec<String>, exclude: Vec<String>) -> Result<NameFilter, SensorConfigError> {
        if include.is_empty() {
            return Err(SensorConfigError::Empty {
                setting: "include".into(),
                consequence: Some("no link would be watched"),
            });
        }
        for (field, patterns) in [("include", &include), ("exclude", &exclude)] {
            if let Some(p) = patterns.iter().find(|p| p.is_empty() || p.len() > MAX_PATTERN_LEN) {
                return Err(SensorConfigError::Invalid {
                    setting: format!("{field} pattern"),
                    value: p.clone(),
                    reason: PATTERN_LEN,
                });
            }
        }
        Ok(NameFilter { include, exclude })
    }

    /// Whether the link `name` is watched.
    pub fn matches(&self, name: &str) -> bool {
        self.include.iter().any(|p| glob(p, name)) && !self.exclude.iter().any(|p| glob(p, name))
    }
}

impl Default for NameFilter {
    fn default() -> Self {
        NameFilter { include: default_include(), exclude: default_exclude() }
    }
}

/// Glob match with `*` and `?`, by the usual backtracking over the last star
/// (linear in practice, quadratic at worst on 15-byte names).
fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_watch_everything_but_lo() {
        let config: NetlinkLinkConfig = toml::from_str("").unwrap();
        assert_eq!(config, NetlinkLinkConfig::default());
        let filter = NameFilter::new(config.include, config.exclude).unwrap();
        assert!(filter.matches("eth0"));
        assert!(filter.matches("ens1f0np0"));
        assert!(!filter.matches("lo"));
    }

    #[test]
    fn the_config_round_trips_through_toml() {
        let config = NetlinkLinkConfig {
            include: vec!["eth*".into(), "ens?f*".into()],
            exclude: vec!["eth9".into()],
            retry_min_ms: 50,
            retry_max_ms: 5000,
            receive_buffer_bytes: 1 << 16,
            heartbeat: Duration::from_millis(250),
        };
        let text = toml::to_string(&config).unwrap();
        assert_eq!(toml::from_str::<NetlinkLinkConfig>(&text).unwrap(), config);
    }

    #[test]
    fn globs_match_stars_and_question_marks() {
        assert!(glob("eth*", "eth0"));
        assert!(glob("eth*", "eth"));
        assert!(!glob("eth*", "ens1"));
        assert!(glob("ens?f*np*", "ens1f0np0"));
        assert!(!glob("ens?f*np*", "ens12f0np0"));
        assert!(glob("*0", "veth0"));
        assert!(!glob("*0", "veth1"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
        assert!(glob("lo", "lo"));
        assert!(!glob("lo", "lo0"));
    }

    #[test]
    fn exclude_wins_over_include() {
        let filter = NameFilter::new(vec!["veth*".into()], vec!["veth1".into()]).unwrap();
        assert!(filter.matches("veth0"));
        assert!(!filter.matches("veth1"));
        assert!(!filter.matches("eth0"));
    }

    #[test]
    fn bad_settings_are_named() {
        let err = |text: &str| NetlinkLinkConfig::build(&toml::from_str(text).unwrap(), "n").err().unwrap().to_string();
        assert_eq!(err("include = []"), "configuration: include is empty: no link would be watched");
        assert_eq!(err("exclude = [\"\"]"), "configuration: exclude pattern \"\" must be 1 to 64 characters");
        assert_eq!(err("retry_min_ms = 0"), "configuration: retry_min_ms must be at least 1");
        assert_eq!(
            err("retry_min_ms = 500\nretry_max_ms = 100"),
            "configuration: retry_max_ms 100 is below retry_min_ms 500"
        );
        assert_eq!(err("receive_buffer_bytes = 10"), "configuration: receive_buffer_bytes 10 is below one page (4096)");
        assert_eq!(
            err("heartbeat = \"50ms\""),
            "configuration: heartbeat 50ms is not between 100ms and 60s (\"0\" turns it off)"
        );
        assert_eq!(
            err("heartbeat = \"2m\""),
            "configuration: heartbeat 2m is not between 100ms and 60s (\"0\" turns it off)"
        );
        // A duration that does not parse is refused as the table is read,
        // naming the key and the value.
        let unparsed = crate::build("netlink_link", "n", toml::from_str("heartbeat = \"1 parsec\"").unwrap());
        assert_eq!(
            unparsed.err().unwrap().to_string(),
            "sensor \"n\" (kind \"netlink_link\"): heartbeat: invalid value: string \"1 parsec\", expected a duration"
        );
    }

    #[test]
    fn the_heartbeat_is_a_second_by_default_and_zero_turns_it_off() {
        let heartbeat = |text: &str| toml::from_str::<NetlinkLinkConfig>(text).unwrap().build("n").unwrap().heartbeat();
        assert_eq!(heartbeat(""), Some(Duration::from_secs(1)));
        assert_eq!(heartbeat("heartbeat = \"0\""), None);
        assert_eq!(heartbeat("heartbeat = \"100ms\""), Some(Duration::from_millis(100)));
        assert_eq!(heartbeat("heartbeat = \"1m\""), Some(Duration::from_secs(60)));
    }
}
