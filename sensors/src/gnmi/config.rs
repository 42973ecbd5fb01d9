//! The settings of a `gnmi` sensor.

use std::path::PathBuf;
use std::time::Duration;

use gnmi_proto::gnmi::SubscriptionMode;
use gnmi_proto::path::split_target;
use gnmi_proto::sonic::PathStyle;
use gnmi_proto::{parse_path, ClientConfig, TlsConfig};
use serde::{Deserialize, Serialize};

use super::plan::{oid_plan, streams, Backoff, Place, StyleChoice, SubSpec, TargetPlan, Virtual};
use super::sensor::GnmiSensor;
use crate::SensorConfigError;

/// The most targets one sensor runs: one task and one connection each; a
/// fabric of 64 leaves and spines fits many times over, a typo of a range
/// expansion does not.
const MAX_TARGETS: usize = 1024;

/// The shortest heartbeat: each beat re-sends every ON_CHANGE value of
/// every target; a tenth of a second is far inside any useful
/// `stale_after`, faster beats only cost the engine work.
const MIN_HEARTBEAT: Duration = Duration::from_millis(100);

/// The longest heartbeat. Above a rule's `stale_after` (5 s unless the rule
/// says otherwise) quiet series go stale between beats, and the sensor
/// cannot see the rules; above a minute it is surely a mistake (for `"0"`,
/// which turns the heartbeat off, or for seconds).
const MAX_HEARTBEAT: Duration = Duration::from_secs(60);

/// A `gnmi` sensor's settings.
///
/// ```toml
/// presets = ["sonic_pfc", "sonic_pfcwd"]
/// sample_interval = "1s"
/// heartbeat = "1s"
///
/// [[targets]]
/// name = "leaf01"
/// address = "10.0.0.11:8080"
/// path_style = "auto"
/// credentials_file = "/etc/rocemend/gnmi-credentials.toml"
/// tls = { ca_file = "/etc/rocemend/gnmi-ca.pem" }
///
/// [[subscriptions]]
/// path = "openconfig:/interfaces/interface[name=*]/state/counters"
/// mode = "sample"
/// sample_interval = "10s"
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GnmiConfig {
    /// The switches to subscribe to; one task and one connection each.
    pub targets: Vec<GnmiTargetConfig>,
    /// Ready-made subscriptions and their metric mappings: `sonic_pfc`,
    /// `sonic_queues`, `sonic_pfcwd`, `openconfig_interfaces`.
    #[serde(default)]
    pub presets: Vec<Preset>,
    /// More subscriptions, besides the presets'.
    #[serde(default)]
    pub subscriptions: Vec<SubscriptionConfig>,
    /// The request prefix of `subscriptions` (`COUNTERS_DB@/COUNTERS`): its
    /// target, origin and elements go in the SubscriptionList's prefix;
    /// presets carry their own.
    #[serde(default)]
    pub prefix: Option<String>,
    /// Ask for changes only: no initial values (gNMI `updates_only`).
    #[serde(default)]
    pub updates_only: bool,
    /// The sample interval of presets and of subscriptions that give none.
    #[serde(default = "default_sample_interval", with = "humantime_serde")]
    pub sample_interval: Duration,
    /// How often the last value of every ON_CHANGE series is sent again,
    /// stamped with the time of the beat, so a quiet series goes stale only
    /// when the sensor (or its stream) is gone; also asked of the switch as
    /// the subscriptions' `heartbeat_interval`. 100ms to 60s; `"0"` turns
    /// it off.
    #[serde(default = "default_heartbeat", with = "humantime_serde")]
    pub heartbeat: Duration,
    /// Bound on connecting, each call, and the start of a stream.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    pub timeout: Duration,
    /// First reconnection delay; doubles up to `backoff_max`, ±20 % jitter.
    /// A refused connection is retried after this delay every time.
    #[serde(default = "default_backoff_initial", with = "humantime_serde")]
    pub backoff_initial: Duration,
    /// Longest reconnection delay.
    #[serde(default = "default_backoff_max", with = "humantime_serde")]
    pub backoff_max: Duration,
}

/// One switch: a name of the inventory's switches, which says where it is
/// and how to log in; or, in a lab without an inventory, a name with its
/// `address` and the access settings below.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GnmiTargetConfig {
    /// Its name: the `switch` label of every series it yields.
    pub name: String,
    /// `host:port`; without it, the inventory's switch of this name gives
    /// the address, `path_style`, `namespace`, TLS and credentials.
    #[serde(default)]
    pub address: String,
    /// The gNMI target put in the request prefix of the user's
    /// subscriptions and of the OpenConfig preset (SONiC's translib wants
    /// `OC-YANG`); the SONiC presets name their database themselves.
    #[serde(default)]
    pub target: Option<String>,
    /// How the switch wants a SONiC database named: `prefix-target` (the
    /// database is the prefix's target, classic SONiC telemetry),
    /// `sonic-db-origin` (origin `sonic-db`, the database as the first path
    /// element), or `auto` (probe at the first connection, keep the winner).
    #[serde(default)]
    pub path_style: Option<PathStyleSetting>,
    /// The instance element after the database in the `sonic-db-origin`
    /// style: `localhost` (the default), `asic0` on multi-ASIC switches.
    #[serde(default)]
    pub namespace: Option<String>,
    /// TLS to the switch, spelled as the inventory's `[[switch]]` and
    /// `[gnmi]` spell it: `tls = { ca_file, cert_file, key_file, domain }`
    /// (PEM files; a client certificate for mutual TLS goes with its key;
    /// `domain` is the name in the switch's certificate when it is not the
    /// address's host). Plain HTTP/2 when absent (a lab only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<SwitchTls>,
    /// A TOML file of `username` and `password` (mode 0600), sent as
    /// `username` and `password` metadata.
    #[serde(default)]
    pub credentials_file: Option<PathBuf>,
    /// Refused: secrets are never written inline (see `credentials_file`).
    #[serde(default, skip_serializing)]
    pub username: Option<String>,
    /// Refused: secrets are never written inline (see `credentials_file`).
    #[serde(default, skip_serializing)]
    pub password: Option<String>,
    /// `ca`, `cert`, `key`, `tls_domain`: the earlier spelling of `tls`'s
    /// fields, read only to be refused with the new one.
    #[serde(default, skip_serializing)]
    ca: Option<Respelled>,
    #[serde(default, skip_serializing)]
    cert: Option<Respelled>,
    #[serde(default, skip_serializing)]
    key: Option<Respelled>,
    #[serde(default, skip_serializing)]
    tls_domain: Option<Respelled>,
}

/// A setting of an earlier spelling, whatever its value: read only to be
/// refused, naming what replaced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Respelled;

impl<'de> Deserialize<'de> for Respelled {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Respelled, D::Error> {
        serde::de::IgnoredAny::deserialize(d).map(|_| Respelled)
    }
}

/// A target's `path_style`: one setting for the sensor and the actuators.
pub use engine::topology::PathStyleSetting;
/// A target's `tls`: one spelling for the inventory, the sensor and the
/// actuators.
pub use engine::topology::SwitchTls;

/// A subscription.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionConfig {
    /// The path (`/COUNTERS/Ethernet*/Queues` under a `prefix`,
    /// `openconfig:/interfaces/interface[name=*]/state/oper-status`). A
    /// target written as `COUNTERS_DB@/…` goes into the request prefix.
    pub path: String,
    /// `sample` or `on_change`.
    #[serde(default = "default_mode")]
    pub mode: StreamMode,
    /// For `sample`: how often; the sensor's `sample_interval` if unset.
    #[serde(default, with = "humantime_serde")]
    pub sample_interval: Option<Duration>,
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
    /// APPL_DB `PORT_TABLE`, ON_CHANGE: each port's link state and portsorch's count of its
    /// changes, without translib (OpenConfig) on the switch.
    SonicPorts,
    /// OpenConfig oper-status (on change) and error counters.
    OpenconfigInterfaces,
}

/// Where a preset's subscription points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PresetPath {
    /// A sonic-gnmi virtual path of COUNTERS_DB: in the prefix-target style
    /// the path below the database, in the sonic-db-origin style the OIDs
    /// it stands for.
    Counters {
        /// The path below the database.
        path: &'static str,
        /// Which virtual path it is.
        virtual_path: Virtual,
    },
    /// A table of a SONiC database other than COUNTERS_DB: the style names the database.
    Database {
        /// The database (`APPL_DB`).
        db: &'static str,
        /// The path below it.
        path: &'static str,
    },
    /// A path of its own (OpenConfig).
    Plain(&'static str),
}

impl Preset {
    /// The subscriptions of the preset.
    pub fn subscriptions(self) -> Vec<(PresetPath, StreamMode)> {
        let counters = |path, virtual_path| PresetPath::Counters { path, virtual_path };
        match self {
            Preset::SonicPfc => vec![(counters("/COUNTERS/Ethernet*", Virtual::Ports), StreamMode::Sample)],
            Preset::SonicQueues => {
                vec![(counters("/COUNTERS/Ethernet*/Queues", Virtual::Queues), StreamMode::Sample)]
            }
            // The watchdog's state as soon as its detector writes it: sonic-gnmi
            // follows the queues' entries by keyspace notification (ON_CHANGE
            // on a table path, `db_client.go:281-297`), so a storm SONiC
            // declares is seen within milliseconds, not at the next sample.
            Preset::SonicPfcwd => vec![(counters("/COUNTERS/Ethernet*/Pfcwd", Virtual::Pfcwd), StreamMode::OnChange)],
            // portsorch writes `oper_status` and `flap_count` at each change of the link
            // (`portsorch.cpp:10034-10052`); sonic-gnmi follows the table by keyspace.
            Preset::SonicPorts => {
                vec![(PresetPath::Database { db: "APPL_DB", path: "/PORT_TABLE" }, StreamMode::OnChange)]
            }
            Preset::OpenconfigInterfaces => vec![
                (PresetPath::Plain("openconfig:/interfaces/interface[name=*]/state/oper-status"), StreamMode::OnChange),
                (PresetPath::Plain("openconfig:/interfaces/interface[name=*]/state/counters"), StreamMode::Sample),
            ],
        }
    }
}

fn default_mode() -> StreamMode {
    StreamMode::Sample
}
/// SONiC's counter poll is 1 s for port counters; sampling faster reads
/// the same values twice.
fn default_sample_interval() -> Duration {
    Duration::from_secs(1)
}
/// Five beats inside the rules' default `stale_after` of 5 s.
fn default_heartbeat() -> Duration {
    Duration::from_secs(1)
}
/// Long enough for a busy switch's telemetry container, short enough that
/// a dead one is noticed within a rule window.
fn default_timeout() -> Duration {
    Duration::from_secs(10)
}
/// A telemetry container that restarts refuses connections for a few
/// seconds; retrying ten times a second ends the gap within ~0.1 s of its
/// return and costs a SYN and a RST each.
fn default_backoff_initial() -> Duration {
    Duration::from_millis(100)
}
/// The longest a target that is back waits for the sensor to notice: the
/// gap in samples is the outage plus at most this (plus 20 % jitter).
/// Failures that cost the switch more than a refused connection (a TLS
/// handshake, a timeout) are at most one a second per target.
fn default_backoff_max() -> Duration {
    Duration::from_secs(1)
}

/// The durations of a sensor's settings, parsed and checked.
struct Timing {
    /// The sample interval of presets and of subscriptions that give none.
    sample_interval: Duration,
    /// The heartbeat, `None` when off.
    heartbeat: Option<Duration>,
    /// Bound on connecting, each call, and the start of a stream.
    timeout: Duration,
    /// Reconnection delays.
    backoff: Backoff,
}

/// A gNMI interval in nanoseconds, saturating.
fn interval_ns(d: Duration) -> u64 {
    d.as_nanos().min(u64::MAX as u128) as u64
}

impl GnmiConfig {
    /// [`GnmiConfig::build`], with the inventory that says how to reach the
    /// targets given by name only.
    pub fn build_in(&self, name: &str, inventory: Option<&engine::Topology>) -> Result<GnmiSensor, SensorConfigError> {
        let mut config = self.clone();
        for target in config.targets.iter_mut().filter(|t| t.address.is_empty()) {
            target.fill_from_inventory(inventory)?;
        }
        config.build(name)
    }

    /// Validates the settings, reads the TLS files, and builds the sensor.
    pub fn build(&self, name: &str) -> Result<GnmiSensor, SensorConfigError> {
        if self.targets.is_empty() {
            return Err(SensorConfigError::Empty {
                setting: "targets".into(),
                consequence: Some("no switch to subscribe to"),
            });
        }
        if self.targets.len() > MAX_TARGETS {
            return Err(SensorConfigError::TooMany { setting: "targets", count: self.targets.len(), max: MAX_TARGETS });
        }
        if self.presets.is_empty() && self.subscriptions.is_empty() {
            return Err(SensorConfigError::Empty {
                setting: "subscriptions".into(),
                consequence: Some("with no presets either, there is nothing to subscribe to"),
            });
        }
        let timing = self.timing()?;
        let specs = self.specs(&timing)?;
        sonic_sampling(&specs)?;
        let targets = self.target_plans(&specs, timing.timeout)?;
        // A stream of samples that goes quiet for three intervals is dead
        // even if TCP says otherwise.
        let max_interval =
            specs.iter().filter(|s| s.mode == SubscriptionMode::Sample).map(|s| s.sample_interval).max().unwrap_or(0);
        let stall = (max_interval > 0).then(|| (Duration::from_nanos(max_interval) * 3).max(timing.timeout));
        Ok(GnmiSensor::new(name, targets, timing.backoff, stall, timing.heartbeat))
    }

    /// The durations, checked: the timeout and the first backoff above 0,
    /// the longest backoff at least the first, the heartbeat 0 or in range.
    fn timing(&self) -> Result<Timing, SensorConfigError> {
        let (timeout, heartbeat) = (self.timeout, self.heartbeat);
        let backoff = Backoff { initial: self.backoff_initial, max: self.backoff_max };
        let out_of_range = SensorConfigError::duration_out_of_range;
        if timeout.is_zero() {
            return Err(out_of_range("timeout", timeout, "must be above 0".into()));
        }
        if backoff.initial.is_zero() {
            return Err(out_of_range("backoff_initial", backoff.initial, "must be above 0".into()));
        }
        if backoff.max < backoff.initial {
            let reason = format!("is below backoff_initial {}", humantime::format_duration(backoff.initial));
            return Err(out_of_range("backoff_max", backoff.max, reason));
        }
        if !heartbeat.is_zero() && !(MIN_HEARTBEAT..=MAX_HEARTBEAT).contains(&heartbeat) {
            let reason = format!("is not between {MIN_HEARTBEAT:?} and {MAX_HEARTBEAT:?} (\"0\" turns it off)");
            return Err(out_of_range("heartbeat", heartbeat, reason));
        }
        let heartbeat = (!heartbeat.is_zero()).then_some(heartbeat);
        Ok(Timing { sample_interval: self.sample_interval, heartbeat, timeout, backoff })
    }

    /// The presets' subscriptions, then the user's under `prefix`, before
    /// a target's path style names their databases.
    fn specs(&self, timing: &Timing) -> Result<Vec<SubSpec>, SensorConfigError> {
        let heartbeat_interval = timing.heartbeat.map(interval_ns).unwrap_or(0);
        let spec = |place: Place, mode: StreamMode, interval: Duration| SubSpec {
            place,
            mode: match mode {
                StreamMode::Sample => SubscriptionMode::Sample,
                StreamMode::OnChange => SubscriptionMode::OnChange,
            },
            sample_interval: interval_ns(interval),
            heartbeat_interval,
        };
        let parse = |setting: &str, path: &str| {
            parse_path(path).map_err(|source| SensorConfigError::Path { setting: setting.into(), source })
        };
        let mut specs = Vec::new();
        for preset in &self.presets {
            for (path, mode) in preset.subscriptions() {
                let place = match path {
                    PresetPath::Counters { path, virtual_path } => Place::Sonic {
                        db: gnmi_proto::sonic::COUNTERS_DB,
                        below: parse("presets", path)?,
                        virtual_path: Some(virtual_path),
                    },
                    PresetPath::Database { db, path } => {
                        Place::Sonic { db, below: parse("presets", path)?, virtual_path: None }
                    }
                    PresetPath::Plain(path) => Place::Plain { prefix: None, path: parse("presets", path)? },
                };
                specs.push(spec(place, mode, timing.sample_interval));
            }
        }
        let prefix = self.prefix.as_deref().map(|p| parse("prefix", p)).transpose()?;
        for s in &self.subscriptions {
            let interval = s.sample_interval.unwrap_or(timing.sample_interval);
            if s.mode == StreamMode::Sample && interval.is_zero() {
                let setting = format!("subscription {:?}: sample_interval", s.path);
                return Err(SensorConfigError::duration_out_of_range(&setting, interval, "must be above 0".into()));
            }
            // A `target@` in the path is the prefix's target (gNMI reads a
            // target nowhere else); it overrides the `prefix` setting's.
            let (target, path) = split_target(parse("subscriptions", &s.path)?);
            let mut prefix = prefix.clone();
            if let Some(target) = target {
                prefix.get_or_insert_with(Default::default).target = target.target;
            }
            specs.push(spec(Place::Plain { prefix, path }, s.mode, interval));
        }
        Ok(specs)
    }

    /// One plan per target; names are unique.
    fn target_plans(&self, specs: &[SubSpec], timeout: Duration) -> Result<Vec<TargetPlan>, SensorConfigError> {
        let mut targets = Vec::with_capacity(self.targets.len());
        let mut names = std::collections::BTreeSet::new();
        for t in &self.targets {
            if !names.insert(t.name.as_str()) {
                return Err(SensorConfigError::Duplicate { setting: "targets".into(), name: t.name.clone() });
            }
            targets.push(t.plan(specs, self.updates_only, timeout)?);
        }
        Ok(targets)
    }
}

impl GnmiTargetConfig {
    /// The target's connection, path style and streams.
    fn plan(&self, specs: &[SubSpec], updates_only: bool, timeout: Duration) -> Result<TargetPlan, SensorConfigError> {
        self.refuse_respelled()?;
        if self.name.is_empty() {
            return Err(SensorConfigError::Empty {
                setting: "target name".into(),
                consequence: Some("every target needs a name and an address"),
            });
        }
        if self.address.is_empty() {
            return Err(SensorConfigError::Empty {
                setting: format!("target {:?}: address", self.name),
                consequence: None,
            });
        }
        if self.namespace.as_deref().is_some_and(|ns| ns.is_empty() || ns.contains('/')) {
            return Err(SensorConfigError::Invalid {
                setting: format!("target {:?}: namespace", self.name),
                value: self.namespace.clone().unwrap_or_default(),
                reason: "is not a path element (empty, or has a '/')",
            });
        }
        let client = ClientConfig {
            address: self.address.clone(),
            tls: self.tls()?,
            credentials: self.credentials()?,
            connect_timeout: timeout,
            timeout,
        };
        let target = self.target.as_deref();
        // sonic-gnmi always takes the element after the database as the instance: without
        // one, `localhost` (the single-ASIC switch's), as the switch actuators default to.
        let instance = self.namespace.clone().unwrap_or_else(|| sonic::probe::LOCALHOST.to_string());
        let origin_style = PathStyle::SonicDbOrigin { namespace: Some(instance) };
        let (style, prefix_target, sonic_db_origin, oids) = match self.path_style.unwrap_or_default() {
            PathStyleSetting::PrefixTarget => {
                if self.namespace.is_some() {
                    return Err(self.conflict("namespace goes with path_style \"sonic-db-origin\" or \"auto\""));
                }
                let lists = streams(specs, &PathStyle::PrefixTarget, target, updates_only);
                (StyleChoice::Fixed(PathStyle::PrefixTarget), lists, Vec::new(), None)
            }
            PathStyleSetting::SonicDbOrigin => {
                let lists = streams(specs, &origin_style, target, updates_only);
                (StyleChoice::Fixed(origin_style), Vec::new(), lists, oid_plan(specs))
            }
            PathStyleSetting::Auto => (
                StyleChoice::Auto { namespace: self.namespace.clone() },
                streams(specs, &PathStyle::PrefixTarget, target, updates_only),
                streams(specs, &origin_style, target, updates_only),
                oid_plan(specs),
            ),
        };
        Ok(TargetPlan { name: self.name.clone(), client, style, prefix_target, sonic_db_origin, oids })
    }

    /// TLS, with its PEM files read, when `tls` is set.
    fn tls(&self) -> Result<Option<TlsConfig>, SensorConfigError> {
        let Some(tls) = &self.tls else { return Ok(None) };
        let files =
            TlsConfig::from_files(&tls.ca_file, tls.cert_file.as_deref(), tls.key_file.as_deref(), tls.domain.clone());
        files
            .map(Some)
            .map_err(|source| SensorConfigError::Tls { setting: format!("target {:?}: tls", self.name), source })
    }

    /// Refuses the earlier spelling of `tls`'s fields, naming the new one.
    fn refuse_respelled(&self) -> Result<(), SensorConfigError> {
        let given = [
            (self.ca.is_some(), "ca", "ca_file"),
            (self.cert.is_some(), "cert", "cert_file"),
            (self.key.is_some(), "key", "key_file"),
            (self.tls_domain.is_some(), "tls_domain", "domain"),
        ];
        let Some((_, old, new)) = given.into_iter().find(|(set, ..)| *set) else { return Ok(()) };
        Err(SensorConfigError::Respelled {
            setting: format!("target {:?}", self.name),
            old,
            hint: format!(
                "write `tls = {{ {new} = … }}`: a switch's TLS is spelled as the inventory spells it, \
                 tls = {{ ca_file, cert_file, key_file, domain }}"
            ),
        })
    }

    /// Fills in how to reach this switch from its entry in `inventory`.
    fn fill_from_inventory(&mut self, inventory: Option<&engine::Topology>) -> Result<(), SensorConfigError> {
        self.refuse_respelled()?;
        let set_here = self.path_style.is_some()
            || self.namespace.is_some()
            || self.tls.is_some()
            || self.credentials_file.is_some();
        if set_here {
            return Err(self.conflict(
                "a target without an address is reached as the inventory says: set path_style, namespace, \
                 tls and credentials_file on its [[switch]] or its [gnmi], not here",
            ));
        }
        let access = engine::Topology::access_in(inventory, &self.name)
            .map_err(|source| SensorConfigError::Switch { setting: format!("target {:?}", self.name), source })?;
        self.address = access.address;
        self.path_style = Some(access.path_style);
        self.namespace = access.namespace;
        self.credentials_file = access.credentials_file;
        self.tls = access.tls;
        Ok(())
    }

    /// The username and password of `credentials_file`, when it is set.
    fn credentials(&self) -> Result<Option<(String, String)>, SensorConfigError> {
        if self.username.is_some() || self.password.is_some() {
            return Err(self.conflict(
                "an inline username or password is refused: put both in a credentials_file (TOML, mode 0600)",
            ));
        }
        let Some(path) = &self.credentials_file else { return Ok(None) };
        let c = gnmi_proto::credentials::read_file(path).map_err(|source| SensorConfigError::Credentials {
            setting: format!("target {:?}: credentials_file", self.name),
            source,
        })?;
        Ok(Some((c.username, c.password)))
    }

    fn conflict(&self, reason: &'static str) -> SensorConfigError {
        SensorConfigError::Conflict { setting: format!("target {:?}", self.name), reason }
    }
}

/// sonic-gnmi's shortest sample interval (`db_client.go:83-85`, `:1616-1626`): a shorter one
/// ends the stream with InvalidArgument "invalid interval: 200ms. It cannot be less than 1s",
/// and with it every subscription of the request.
pub const SONIC_MIN_SAMPLE: Duration = Duration::from_secs(1);

/// Whether a subscription reads one of SONiC's databases: a preset's (named by the path
/// style), or a path whose prefix target is a SONiC database (`COUNTERS_DB@…`) or whose origin
/// is `sonic-db`.
fn reads_sonic(place: &Place) -> bool {
    match place {
        Place::Sonic { .. } => true,
        Place::Plain { prefix, path } => {
            let target = prefix.as_ref().map(|p| p.target.as_str()).unwrap_or_default();
            let origin = |p: &gnmi_proto::gnmi::Path| p.origin == "sonic-db";
            target.ends_with("_DB") || origin(path) || prefix.as_ref().is_some_and(origin)
        }
    }
}

/// Refuses a SAMPLE subscription of SONiC's databases under [`SONIC_MIN_SAMPLE`]: sonic-gnmi
/// would refuse it at every connection, and `check` says so before a storm does.
fn sonic_sampling(specs: &[SubSpec]) -> Result<(), SensorConfigError> {
    let min = SONIC_MIN_SAMPLE.as_nanos() as u64;
    let short =
        specs.iter().find(|s| s.mode == SubscriptionMode::Sample && s.sample_interval < min && reads_sonic(&s.place));
    match short {
        None => Ok(()),
        Some(spec) => {
            let setting = match &spec.place {
                Place::Sonic { .. } => "sample_interval".to_string(),
                Place::Plain { path, .. } => {
                    format!("subscription {:?}: sample_interval", gnmi_proto::path_to_string(path))
                }
            };
            let reason = "is below sonic-gnmi's minimum of 1s for SONiC's databases (it refuses the subscription: \"invalid interval … It cannot be less than 1s\")".to_string();
            Err(SensorConfigError::duration_out_of_range(&setting, Duration::from_nanos(spec.sample_interval), reason))
        }
    }
}

#[cfg(test)]
mod tests;
