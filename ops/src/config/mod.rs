//! The daemon's configuration file (`rocemend run --config FILE`), as
//! written: sections, defaults, paths resolved against the file's
//! directory. [`crate::plan`] checks it and everything it names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use engine::config::{parse_toml, TomlError};
use engine::playbook::Playbook;
use engine::topology::TopologyError;
use engine::Topology;

/// The daemon config the verbs look for when none is given.
pub const DEFAULT_CONFIG: &str = "/etc/rocemend/rocemend.toml";

/// `rocemend run --config FILE`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DaemonConfig {
    /// This daemon's node name, added as the `node` label to every local sample that lacks one.
    /// Unset: `$ROCEMEND_NODE` (a DaemonSet sets it to the pod's `spec.nodeName`), else this
    /// host's short name (`/proc/sys/kernel/hostname` up to its first dot). A daemon with a
    /// sensor that reads its host must find it in its inventory.
    #[serde(default)]
    pub node: Option<String>,
    /// Directory of the sled state database.
    pub state_dir: PathBuf,
    /// The topology inventory (TOML). Without one, samples carry only sensor labels.
    #[serde(default)]
    pub inventory: Option<PathBuf>,
    /// The playbook (TOML).
    pub playbook: PathBuf,
    /// Rule directory; overrides the playbook's `rules`.
    #[serde(default)]
    pub rules: Option<PathBuf>,
    /// Write every sample and note the daemon sees to this recording (compressed blocks, about a
    /// byte a sample or less; `rocemend recording export` gives JSON lines), appended across
    /// restarts (each start begins a segment), rotated by size and pruned by age. A crash loses at
    /// most the last 10 s.
    #[serde(default)]
    pub record: Option<PathBuf>,
    /// The size, in MiB, at which the recording is rotated to `RECORD.1` (older ones to `.2`, …).
    /// With `record_keep`, the recording's bound on disk: (1 + record_keep) × record_max_mib, 2 GiB
    /// by default, which keeps a week of a node's ~2,000 signals at 100 ms with
    /// `record_thin_after` (docs/performance.md, "Recording").
    #[serde(default = "default_record_max_mib")]
    pub record_max_mib: u64,
    /// The budget of rotated recordings, in files of `record_max_mib`: the newest `record_keep`
    /// are kept, and older (thinned, smaller) ones while they fit in record_keep × record_max_mib.
    #[serde(default = "default_record_keep")]
    pub record_keep: u32,
    /// Rotated recordings last written longer ago than this are dropped ("0": kept by size only).
    #[serde(default = "default_record_keep_for", with = "duration::record_keep_for")]
    pub record_keep_for: Duration,
    /// Rotated recordings last written longer ago than this are rewritten at one sample of each
    /// series per `record_thin_to` (counters stay exact over the coarser steps; events, notes and
    /// restarts are all kept), on a thread of their own ("0": never thinned).
    #[serde(default = "default_record_thin_after", with = "duration::record_thin_after")]
    pub record_thin_after: Duration,
    /// The resolution of a thinned recording.
    #[serde(default = "default_record_thin_to", with = "duration::record_thin_to")]
    pub record_thin_to: Duration,
    /// Engine settings.
    #[serde(default)]
    pub engine: EngineSection,
    /// Logging.
    #[serde(default)]
    pub log: LogSection,
    /// The control API.
    #[serde(default)]
    pub control: ControlSection,
    /// The Prometheus endpoint.
    #[serde(default)]
    pub metrics: MetricsSection,
    /// The web console.
    #[serde(default)]
    pub web: WebSection,
    /// Sensors. Fields other than `type`, `name` and `max_series` belong to the sensor type.
    #[serde(default)]
    pub sensor: Vec<SensorEntry>,
    /// Fleet coordination through etcd (docs/safety.md); without it the daemon is standalone.
    #[serde(default)]
    pub fleet: Option<fleet::FleetConfig>,
    /// Send every sample the daemon takes in to a Prometheus remote-write receiver (Prometheus,
    /// VictoriaMetrics, Thanos, Mimir); off when unset.
    #[serde(default)]
    pub remote_write: Option<RemoteWriteSection>,
}

/// `[engine]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct EngineSection {
    /// `wall` (live) or `samples` (evaluate on the samples' own time: replays).
    #[serde(default = "default_clock")]
    pub clock: String,
    /// Evaluation tick on the wall clock, for time-driven transitions (`for`, cooldowns, staleness),
    /// while any is under way; while none is, no more often than every 250 ms (the stale scan).
    #[serde(default = "default_tick", with = "duration::tick")]
    pub tick: Duration,
    /// Default cap on series per sensor.
    #[serde(default = "default_max_series")]
    pub max_series_per_sensor: usize,
    /// How often the rule directory is checked for changes (hot reload); "0" disables it.
    #[serde(default = "default_reload_poll", with = "duration::reload_poll")]
    pub reload_poll: Duration,
    /// Exit once every sensor has ended (replays). By default the daemon runs on until it is
    /// stopped, so approvals, expiry and the control API keep working.
    #[serde(default)]
    pub exit_when_sensors_end: bool,
    /// How far ahead of the clock a sample may be stamped; later ones are refused, counted in
    /// the sensor's health and logged (a switch or node with a wrong clock, a corrupt recording).
    #[serde(default = "default_max_ahead", with = "duration::max_ahead")]
    pub max_ahead: Duration,
    /// The share of a core one rule's scripts may spend, measured over 10 s; a rule over it is
    /// quarantined with the figures in its reason (0.05: 5 % of a core).
    #[serde(default = "default_rule_cost_budget")]
    pub rule_cost_budget: f64,
    /// How long the daemon may take to stop after SIGTERM or SIGINT (1 s to 10 min): the dispatcher
    /// gets half of it to finish the actions in hand, then is stopped where it waits (an intent is on
    /// disk before any change; the next start settles it), and at the end of it the process exits
    /// whatever is still running (a second signal exits at once). Below the supervisor's own
    /// timeout (`TimeoutStopSec=30s`, `terminationGracePeriodSeconds: 30`).
    #[serde(default = "default_shutdown_timeout", with = "duration::shutdown_timeout")]
    pub shutdown_timeout: Duration,
}

impl Default for EngineSection {
    fn default() -> EngineSection {
        EngineSection {
            clock: default_clock(),
            tick: default_tick(),
            max_series_per_sensor: default_max_series(),
            reload_poll: default_reload_poll(),
            exit_when_sensors_end: false,
            max_ahead: default_max_ahead(),
            rule_cost_budget: default_rule_cost_budget(),
            shutdown_timeout: default_shutdown_timeout(),
        }
    }
}

fn default_record_max_mib() -> u64 {
    128
}

fn default_record_keep() -> u32 {
    15
}

fn default_record_keep_for() -> Duration {
    engine::recording::WEEK
}

fn default_record_thin_after() -> Duration {
    engine::recording::DAY
}

fn default_record_thin_to() -> Duration {
    Duration::from_secs(1)
}

fn default_rule_cost_budget() -> f64 {
    engine::evaluator::cost::DEFAULT_COST_BUDGET
}

fn default_shutdown_timeout() -> Duration {
    Duration::from_secs(20)
}

fn default_max_ahead() -> Duration {
    Duration::from_secs(5)
}

fn default_clock() -> String {
    "wall".into()
}
fn default_tick() -> Duration {
    Duration::from_millis(50)
}
fn default_max_series() -> usize {
    100_000
}
fn default_reload_poll() -> Duration {
    Duration::from_secs(2)
}

/// The durations of `[engine]`, written as people write them (`"50ms"`,
/// `"2s"`, `"1h30m"`, `"0"`) and read with `humantime-serde`; a bad one is
/// refused naming its key, at its line and column.
mod duration {
    macro_rules! key {
        ($field:ident, $key:literal) => {
            pub mod $field {
                use std::time::Duration;

                pub fn serialize<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
                    humantime_serde::serialize(d, s)
                }

                pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
                    use serde::de::Error;
                    humantime_serde::deserialize(d).map_err(|e: D::Error| {
                        // The TOML error's text ends in a newline: the hint goes on its line.
                        let e = e.to_string();
                        D::Error::custom(format!("{}: {} (e.g. \"250ms\", \"10s\", \"5m\", \"1h30m\")", $key, e.trim()))
                    })
                }
            }
        };
    }

    key!(tick, "engine.tick");
    key!(reload_poll, "engine.reload_poll");
    key!(max_ahead, "engine.max_ahead");
    key!(shutdown_timeout, "engine.shutdown_timeout");
    key!(record_keep_for, "record_keep_for");
    key!(record_thin_after, "record_thin_after");
    key!(record_thin_to, "record_thin_to");
    key!(rw_timeout, "remote_write.timeout");
    key!(rw_deadline, "remote_write.batch_send_deadline");
    key!(rw_min_backoff, "remote_write.min_backoff");
    key!(rw_max_backoff, "remote_write.max_backoff");
}

/// `[remote_write]`: the Prometheus remote-write 1.0 protocol (snappy-compressed protobuf over
/// HTTP POST). The defaults are Prometheus's own queue settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteWriteSection {
    /// The receiver's write endpoint, e.g. `http://prometheus:9090/api/v1/write`; `https` needs `ca_file`.
    pub url: String,
    /// PEM CA certificates an `https` receiver's certificate is checked against.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
    /// How long one request may take before it counts as failed and is retried.
    #[serde(default = "default_rw_timeout", with = "duration::rw_timeout")]
    pub timeout: Duration,
    /// Samples held in memory while they wait to be sent (a receiver that is down fills it); when it is
    /// full the oldest are dropped and counted, the daemon never waits.
    #[serde(default = "default_rw_queue_capacity")]
    pub queue_capacity: usize,
    /// The most samples in one request.
    #[serde(default = "default_rw_max_samples")]
    pub max_samples_per_send: usize,
    /// The longest a sample waits for a request to fill before it is sent anyway.
    #[serde(default = "default_rw_deadline", with = "duration::rw_deadline")]
    pub batch_send_deadline: Duration,
    /// The first wait before a failed request (network error, 5xx, 429) is sent again; it doubles each time.
    #[serde(default = "default_rw_min_backoff", with = "duration::rw_min_backoff")]
    pub min_backoff: Duration,
    /// The longest wait between two tries of one request (a 429's `Retry-After` may ask for longer).
    #[serde(default = "default_rw_max_backoff", with = "duration::rw_max_backoff")]
    pub max_backoff: Duration,
    /// Extra HTTP headers on every request (e.g. `X-Scope-OrgID` for Mimir), not the protocol's own.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// File holding a bearer token sent as `Authorization: Bearer …`, read at start.
    #[serde(default)]
    pub bearer_token_file: Option<PathBuf>,
    /// HTTP basic authentication; not with `bearer_token_file`.
    #[serde(default)]
    pub basic_auth: Option<BasicAuth>,
    /// Labels added to every series sent (e.g. `cluster = "a"`); a series' own label of the same name wins.
    #[serde(default)]
    pub external_labels: BTreeMap<String, String>,
}

/// `[remote_write.basic_auth]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BasicAuth {
    /// The user name.
    pub username: String,
    /// File holding the password (its trailing newline is not part of it), read at start.
    pub password_file: PathBuf,
}

fn default_rw_timeout() -> Duration {
    Duration::from_secs(30)
}
fn default_rw_queue_capacity() -> usize {
    // Prometheus's shards hold 2500 each; 100k samples is ~2.4 MB here and
    // covers a 10 s outage of 10k series sampled every second.
    100_000
}
fn default_rw_max_samples() -> usize {
    2000
}
fn default_rw_deadline() -> Duration {
    Duration::from_secs(5)
}
fn default_rw_min_backoff() -> Duration {
    Duration::from_millis(30)
}
fn default_rw_max_backoff() -> Duration {
    Duration::from_secs(5)
}

/// `[control]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct ControlSection {
    /// The unix socket of the control API (mode 0600, the daemon's user only); default `<state_dir>/control.sock`.
    pub socket: Option<PathBuf>,
    /// Also serve the control API on this TCP address (`host:port`), with TLS and a bearer token. Off by default.
    pub listen: Option<String>,
    /// PEM certificate chain for the TCP listener. Required with `listen`.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of that certificate. Required with `listen`.
    pub tls_key: Option<PathBuf>,
    /// File holding the bearer token that allows every call on TCP (mode 0600, at least 22 characters). Required with `listen`.
    pub token_file: Option<PathBuf>,
    /// File holding a second token that allows only the calls that change nothing. Optional.
    pub read_token_file: Option<PathBuf>,
}

/// `[metrics]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetricsSection {
    /// Serve `/metrics`, `/healthz` and `/readyz` over HTTP on this address (e.g. `127.0.0.1:9464`). Off by default.
    pub listen: Option<String>,
}

/// `[web]`: the operator's console, a live page served by the daemon.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebSection {
    /// Serve the console on this TCP address (`host:port`). Read-only to anyone who reaches it; off by default.
    pub listen: Option<String>,
    /// PEM certificate chain: serve the console over HTTPS. Needed for approve and reject from the page.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of that certificate.
    pub tls_key: Option<PathBuf>,
    /// File holding the bearer token that allows approve and reject from the page (mode 0600, at least 22 characters; may be `control.token_file`). Needs TLS.
    pub token_file: Option<PathBuf>,
}

/// `[log]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogSection {
    /// `human` or `json`.
    #[serde(default = "default_log_format")]
    pub format: String,
    /// A tracing filter, e.g. `info` or `engine=debug,info`.
    #[serde(default = "default_log_level")]
    pub level: String,
}

impl Default for LogSection {
    fn default() -> LogSection {
        LogSection { format: default_log_format(), level: default_log_level() }
    }
}

fn default_log_format() -> String {
    "human".into()
}
fn default_log_level() -> String {
    "info".into()
}

/// One `[[sensor]]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct SensorEntry {
    /// Sensor type (`replay`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// Name in logs and health; defaults to the type.
    #[serde(default)]
    pub name: Option<String>,
    /// Cap on this sensor's series; defaults to `engine.max_series_per_sensor`.
    #[serde(default)]
    pub max_series: Option<usize>,
    /// Type-specific settings.
    #[serde(flatten)]
    pub settings: toml::Table,
}

impl SensorEntry {
    /// Its name in logs and health: `name`, else its type.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.kind)
    }
}

impl DaemonConfig {
    /// Reads a config file; relative paths in it are resolved against its directory.
    pub fn load(path: &Path) -> Result<DaemonConfig, TomlError> {
        DaemonConfig::parse(&engine::config::read_text(path)?, path)
    }

    /// Parses the text of the config file at `path`; relative paths in it
    /// (its own and the files sensors name) are resolved against the
    /// file's directory, never the working directory.
    pub fn parse(text: &str, path: &Path) -> Result<DaemonConfig, TomlError> {
        let mut config: DaemonConfig = parse_toml(text, &path.display().to_string())?;
        let base = path.parent().unwrap_or(Path::new("."));
        let resolve = |p: &mut PathBuf| {
            if p.is_relative() {
                *p = base.join(&*p);
            }
        };
        resolve(&mut config.state_dir);
        resolve(&mut config.playbook);
        config.inventory.as_mut().map(resolve);
        config.rules.as_mut().map(resolve);
        config.record.as_mut().map(resolve);
        for p in [
            &mut config.control.socket,
            &mut config.control.tls_cert,
            &mut config.control.tls_key,
            &mut config.control.token_file,
            &mut config.control.read_token_file,
            &mut config.web.tls_cert,
            &mut config.web.tls_key,
            &mut config.web.token_file,
        ] {
            p.as_mut().map(resolve);
        }
        if let Some(rw) = &mut config.remote_write {
            rw.ca_file.as_mut().map(resolve);
            rw.bearer_token_file.as_mut().map(resolve);
            if let Some(basic) = &mut rw.basic_auth {
                resolve(&mut basic.password_file);
            }
        }
        for sensor in &mut config.sensor {
            engine::config::resolve_paths(&mut sensor.settings, base);
        }
        Ok(config)
    }

    /// The control socket: `[control] socket`, else `<state_dir>/control.sock`.
    pub fn socket(&self) -> PathBuf {
        self.control.socket.clone().unwrap_or_else(|| self.state_dir.join("control.sock"))
    }

    /// The rule directory a daemon uses: the config's, else the playbook's.
    pub fn rules_dir(&self, playbook: &Playbook) -> Option<PathBuf> {
        self.rules.clone().or_else(|| playbook.rules_dir(&self.playbook))
    }

    /// Uses the files given on the command line instead of those the
    /// config names.
    pub fn apply(&mut self, overrides: &Overrides) {
        if let Some(rules) = &overrides.rules {
            self.rules = Some(rules.clone());
        }
        if let Some(playbook) = &overrides.playbook {
            self.playbook = playbook.clone();
        }
        if let Some(inventory) = &overrides.inventory {
            self.inventory = Some(inventory.clone());
        }
    }
}

/// Files given on the command line instead of those the config names.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--rules`.
    pub rules: Option<PathBuf>,
    /// `--playbook`.
    pub playbook: Option<PathBuf>,
    /// `--inventory`.
    pub inventory: Option<PathBuf>,
}

/// Loads an inventory, if one is named.
pub fn topology(path: Option<&Path>) -> Result<Option<Arc<Topology>>, TopologyError> {
    path.map(|p| Topology::load(p).map(Arc::new)).transpose()
}

// docs/config.md is generated from the structs above and checked by this test.
#[cfg(test)]
mod docs;
