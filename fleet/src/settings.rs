//! The `[fleet]` table of the daemon's configuration, and the budgets it
//! declares. Compiled without the `etcd` feature too, so every build can
//! read and check a configuration that names a fleet.
//!
//! ```toml
//! [fleet]
//! etcd = ["http://127.0.0.1:2379"]
//! identity = "gpu-node-17"        # default: the host name
//! lease_ttl = "10s"               # a dead daemon's tokens free after this
//! request_timeout = "2s"          # an etcd call slower than this: unavailable
//! fleet_size = 512                # nodes, for `max_percent`
//! aggregator = "pod-a"            # a switch aggregator: only the elected
//!                                 # leader of "pod-a" changes switches
//! # shard = "pod-a"               # or: the aggregators of "pod-a" share its
//!                                 # switches, each read and changed by one
//!
//! [[fleet.budget]]
//! name = "cordon"
//! kinds = ["node.cordon", "node.drain"]
//! max = 3
//! window = "10m"                  # a token counts for 10 minutes
//! max_percent = 5.0               # and never more than 5 % of the fleet
//!
//! [[fleet.budget]]
//! name = "rail"
//! kinds = ["rail.*"]
//! max = 1
//! per = "plane"                   # one rail drained per plane at once
//! ```
//!
//! Without `[[fleet.budget]]` tables the defaults of [`default_budgets`]
//! apply.

use std::time::Duration;

use engine::config::KeyPath;
use engine::policy::{kind_matches, Impact};
use serde::{Deserialize, Serialize};

use crate::FleetError;

/// The `[fleet]` table as written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetConfig {
    /// etcd client URLs.
    pub etcd: Vec<String>,
    /// This daemon's identity; the host name when unset.
    #[serde(default)]
    pub identity: Option<String>,
    /// The session lease's time to live.
    #[serde(default = "default_ttl", with = "humantime_serde")]
    pub lease_ttl: Duration,
    /// How long one etcd call may take.
    #[serde(default = "default_request_timeout", with = "humantime_serde")]
    pub request_timeout: Duration,
    /// Key prefix of everything rocemend keeps in etcd.
    #[serde(default = "default_prefix")]
    pub prefix: String,
    /// Nodes in the fleet, for budgets with `max_percent`.
    #[serde(default)]
    pub fleet_size: Option<u32>,
    /// The budgets (`[[fleet.budget]]`); when none is given: cordons 3 per
    /// 10 minutes and at most 5 % of the fleet, one rail drained per plane
    /// at once, at most 4 switch configuration changes in effect per switch.
    #[serde(default)]
    pub budget: Vec<BudgetConfig>,
    /// Set on a switch aggregator: the election (one per switch set) whose
    /// leader alone takes switch configuration changes (kinds counted by a
    /// `per = "switch"` budget); a standby holds them.
    #[serde(default)]
    pub aggregator: Option<String>,
    /// Set on switch aggregators that share their switches instead of
    /// electing one leader (not with `aggregator`): the shard group. The
    /// switches are the `gnmi` sensors' targets (give every aggregator of the
    /// group the same list); each is subscribed to, and changed, by one live
    /// aggregator at a time, claimed in etcd under its lease. Every action on
    /// a switch, local ones too, is held unless its claim is confirmed right
    /// before; what an aggregator leaves in effect is adopted by the switch's
    /// next owner. A dead aggregator's switches move within `lease_ttl`.
    #[serde(default)]
    pub shard: Option<String>,
}

fn default_ttl() -> Duration {
    Duration::from_secs(10)
}

fn default_request_timeout() -> Duration {
    Duration::from_secs(2)
}

fn default_prefix() -> String {
    "/rocemend/fleet/".into()
}

/// What a budget is counted over.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Per {
    /// One count for the whole fleet.
    #[default]
    Fleet,
    /// One count per plane (of the action's target).
    Plane,
    /// One count per switch.
    Switch,
}

/// One `[[fleet.budget]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Name, in reasons and status.
    pub name: String,
    /// The action kinds it counts (`node.cordon`, `rail.*`).
    pub kinds: Vec<String>,
    /// At most this many tokens.
    pub max: u32,
    /// A token counts for this long after it is taken (a rate: "3 per 10
    /// minutes"); without it, while the action is in effect (a concurrency
    /// limit: "one rail per plane at once").
    #[serde(default, with = "humantime_serde")]
    pub window: Option<Duration>,
    /// And at most this share of `fleet_size`, in percent.
    #[serde(default)]
    pub max_percent: Option<f64>,
    /// What it is counted over: `fleet`, `plane` (of the action's target)
    /// or `switch`.
    #[serde(default)]
    pub per: Per,
}

/// The budgets when the configuration declares none: cordons 3 per 10
/// minutes and at most 5 % of the fleet; one rail drained per plane at
/// once; at most 4 switch configuration changes in effect per switch.
pub fn default_budgets() -> Vec<BudgetConfig> {
    vec![
        BudgetConfig {
            name: "cordon".into(),
            kinds: vec!["node.cordon".into(), "node.drain".into()],
            max: 3,
            window: Some(Duration::from_secs(600)),
            max_percent: Some(5.0),
            per: Per::Fleet,
        },
        BudgetConfig {
            name: "rail".into(),
            kinds: vec!["rail.*".into()],
            max: 1,
            window: None,
            max_percent: None,
            per: Per::Plane,
        },
        BudgetConfig {
            name: "switch".into(),
            kinds: vec!["pfcwd.*".into(), "ecn.*".into(), "switch.*".into(), "port.*".into()],
            max: 4,
            window: None,
            max_percent: None,
            per: Per::Switch,
        },
    ]
}

/// A budget, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    /// Name.
    pub name: String,
    /// Kinds it counts.
    pub kinds: Vec<String>,
    /// Tokens at most: `max`, lowered by `max_percent` of the fleet.
    pub limit: u32,
    /// How long a token counts; `None`: while in effect.
    pub window: Option<Duration>,
    /// What it is counted over.
    pub per: Per,
}

impl Budget {
    /// Whether it counts `kind`.
    pub fn counts(&self, kind: &str) -> bool {
        self.kinds.iter().any(|p| kind_matches(p, kind))
    }

    /// The part of the budget an action lands in: `all`, `plane=2`,
    /// `switch=leaf-3`. A target whose plane or switch is not known counts
    /// in `plane=unknown` / `switch=unknown`, shared by every such target:
    /// not knowing where an action lands never loosens a limit.
    pub fn cell(&self, impact: &Impact) -> String {
        match self.per {
            Per::Fleet => "all".into(),
            Per::Plane => format!("plane={}", impact.plane.as_deref().unwrap_or("unknown")),
            Per::Switch => format!("switch={}", impact.switch.as_deref().unwrap_or("unknown")),
        }
    }

    /// The budget in words: `3 per 10m`, `1 at once per plane`.
    pub fn describe(&self) -> String {
        let per = match self.per {
            Per::Fleet => "",
            Per::Plane => " per plane",
            Per::Switch => " per switch",
        };
        match self.window {
            Some(w) => format!("{} per {}{per}", self.limit, words(w)),
            None => format!("{} at once{per}", self.limit),
        }
    }
}

/// A window as an operator writes it: `10m`, `1h`, `90s`.
fn words(d: Duration) -> String {
    let s = d.as_secs();
    if d.subsec_nanos() != 0 || s == 0 {
        engine::time::Span(d.as_nanos() as i64).to_string()
    } else if s % 3600 == 0 {
        format!("{}h", s / 3600)
    } else if s % 60 == 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// The `[fleet]` table, checked and with durations parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetSettings {
    /// etcd client URLs.
    pub endpoints: Vec<String>,
    /// This daemon's identity.
    pub identity: String,
    /// Session lease TTL.
    pub lease_ttl: Duration,
    /// Per-call timeout.
    pub request_timeout: Duration,
    /// Key prefix, ending in `/`.
    pub prefix: String,
    /// The budgets.
    pub budgets: Vec<Budget>,
    /// The aggregator election this daemon campaigns in, if any.
    pub aggregator: Option<String>,
    /// The shard group whose switches this aggregator shares, if any.
    pub shard: Option<String>,
}

/// Why a `[fleet]` table was refused. The message names the key as the
/// config writes it (`fleet.lease_ttl = "500ms": …`); [`key`](Self::key)
/// gives it as a path below `[fleet]`, to place the error in the file.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FleetConfigError {
    /// `etcd` lists no endpoint.
    #[error("fleet.etcd: no endpoint; give at least one URL like \"http://127.0.0.1:2379\"")]
    NoEndpoint,
    /// An endpoint is no `http://` or `https://` URL.
    #[error("fleet.etcd: {url:?} is not an http:// or https:// URL")]
    NotHttp {
        /// The endpoint as given.
        url: String,
    },
    /// A duration is zero.
    #[error("fleet.{key} = {:?}: must be more than zero", humantime::format_duration(*.value).to_string())]
    Zero {
        /// The key below `fleet`, e.g. `request_timeout`, `budget "c".window`.
        key: String,
        /// Where it is.
        path: KeyPath,
        /// The duration.
        value: Duration,
    },
    /// The lease is shorter than etcd grants.
    #[error("fleet.lease_ttl = {:?}: etcd leases are whole seconds, at least 2s", humantime::format_duration(*.0).to_string())]
    ShortLease(Duration),
    /// No `identity`, and no host name to take instead.
    #[error("fleet.identity: not set, and the host name could not be read")]
    NoIdentity,
    /// The identity cannot be a key element.
    #[error("fleet.identity = {0:?}: must be non-empty and without '/'")]
    BadIdentity(String),
    /// A budget is refused.
    #[error("fleet.budget {name:?}: {problem}")]
    Budget {
        /// Its name.
        name: String,
        /// Its place in `[[fleet.budget]]`; `None` for a default budget.
        index: Option<usize>,
        /// What is wrong.
        problem: BudgetProblem,
    },
    /// Two budgets have one name.
    #[error("fleet.budget {name:?} is declared twice")]
    BudgetTwice {
        /// The name.
        name: String,
        /// The place of the second in `[[fleet.budget]]`.
        index: usize,
    },
    /// `aggregator` is empty.
    #[error("fleet.aggregator: empty election name")]
    EmptyAggregator,
    /// `shard` cannot be a key element.
    #[error("fleet.shard = {0:?}: a shard group is non-empty and without '/'")]
    BadShard(String),
    /// `shard` and `aggregator` are both set.
    #[error(
        "fleet.shard and fleet.aggregator are both set: aggregators either elect one leader for all their \
         switches (aggregator) or share the switches (shard), not both"
    )]
    ShardAndAggregator,
}

/// What is wrong with one `[[fleet.budget]]`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetProblem {
    /// Its name cannot be a key element.
    #[error("the name must be non-empty and without '/'")]
    Name,
    /// `kinds` is empty.
    #[error("counts no action kind")]
    NoKinds,
    /// `max_percent` is no percentage.
    #[error("max_percent = {0}: expected 0..=100")]
    Percent(f64),
}

impl FleetConfigError {
    /// Where the error is, as a path below the `[fleet]` table: the key it
    /// names, or the budget it is about.
    pub fn key(&self) -> KeyPath {
        let key = |k: &str| KeyPath::default().key(k);
        let budget = |i: Option<usize>| match i {
            Some(i) => key("budget").index(i),
            None => key("budget"),
        };
        match self {
            FleetConfigError::NoEndpoint | FleetConfigError::NotHttp { .. } => key("etcd"),
            FleetConfigError::Zero { path, .. } => path.clone(),
            FleetConfigError::ShortLease(_) => key("lease_ttl"),
            FleetConfigError::NoIdentity | FleetConfigError::BadIdentity(_) => key("identity"),
            FleetConfigError::Budget { index, problem, .. } => match problem {
                BudgetProblem::NoKinds => budget(*index).key("kinds"),
                BudgetProblem::Percent(_) => budget(*index).key("max_percent"),
                BudgetProblem::Name => budget(*index).key("name"),
            },
            FleetConfigError::BudgetTwice { index, .. } => budget(Some(*index)).key("name"),
            FleetConfigError::EmptyAggregator => key("aggregator"),
            FleetConfigError::BadShard(_) | FleetConfigError::ShardAndAggregator => key("shard"),
        }
    }
}

/// `value` of `key` (at `path`), refused when zero.
fn positive(key: impl Into<String>, path: KeyPath, value: Duration) -> Result<Duration, FleetConfigError> {
    if value.is_zero() {
        return Err(FleetConfigError::Zero { key: key.into(), path, value });
    }
    Ok(value)
}

impl FleetSettings {
    /// Checks a `[fleet]` table. Errors name the field.
    pub fn new(config: &FleetConfig) -> Result<FleetSettings, FleetError> {
        Self::check(config).map_err(FleetError::Config)
    }

    fn check(config: &FleetConfig) -> Result<FleetSettings, FleetConfigError> {
        if config.etcd.is_empty() {
            return Err(FleetConfigError::NoEndpoint);
        }
        if let Some(url) = config.etcd.iter().find(|u| !(u.starts_with("http://") || u.starts_with("https://"))) {
            return Err(FleetConfigError::NotHttp { url: url.clone() });
        }
        let lease_ttl = positive("lease_ttl", KeyPath::default().key("lease_ttl"), config.lease_ttl)?;
        if lease_ttl < Duration::from_secs(2) {
            return Err(FleetConfigError::ShortLease(lease_ttl));
        }
        let request_timeout =
            positive("request_timeout", KeyPath::default().key("request_timeout"), config.request_timeout)?;
        let identity = match &config.identity {
            Some(id) => id.clone(),
            None => host_name().ok_or(FleetConfigError::NoIdentity)?,
        };
        if identity.is_empty() || identity.contains('/') {
            return Err(FleetConfigError::BadIdentity(identity));
        }
        let mut prefix = config.prefix.clone();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        let budgets = budgets(config)?;
        check_election(config)?;
        Ok(FleetSettings {
            endpoints: config.etcd.clone(),
            identity,
            lease_ttl,
            request_timeout,
            prefix,
            budgets,
            aggregator: config.aggregator.clone(),
            shard: config.shard.clone(),
        })
    }

    /// The budgets that count `kind`.
    pub fn budgets_for<'a>(&'a self, kind: &'a str) -> impl Iterator<Item = &'a Budget> + 'a {
        self.budgets.iter().filter(move |b| b.counts(kind))
    }
}

/// The declared budgets, or the defaults when none is, checked; names unique.
fn budgets(config: &FleetConfig) -> Result<Vec<Budget>, FleetConfigError> {
    let declared = !config.budget.is_empty();
    let list = if declared { config.budget.clone() } else { default_budgets() };
    let budgets = (list.iter().enumerate())
        .map(|(i, b)| check_budget(b, declared.then_some(i), config.fleet_size))
        .collect::<Result<Vec<_>, _>>()?;
    let mut names = std::collections::BTreeSet::new();
    if let Some((index, b)) = budgets.iter().enumerate().find(|(_, b)| !names.insert(b.name.as_str())) {
        return Err(FleetConfigError::BudgetTwice { name: b.name.clone(), index });
    }
    Ok(budgets)
}

/// `aggregator` and `shard`: plain names, not both.
fn check_election(config: &FleetConfig) -> Result<(), FleetConfigError> {
    if config.aggregator.as_deref() == Some("") {
        return Err(FleetConfigError::EmptyAggregator);
    }
    if let Some(group) = &config.shard {
        if group.is_empty() || group.contains('/') {
            return Err(FleetConfigError::BadShard(group.clone()));
        }
        if config.aggregator.is_some() {
            return Err(FleetConfigError::ShardAndAggregator);
        }
    }
    Ok(())
}

fn check_budget(b: &BudgetConfig, index: Option<usize>, fleet_size: Option<u32>) -> Result<Budget, FleetConfigError> {
    let refused = |problem| FleetConfigError::Budget { name: b.name.clone(), index, problem };
    if b.name.is_empty() || b.name.contains('/') {
        return Err(refused(BudgetProblem::Name));
    }
    if b.kinds.is_empty() {
        return Err(refused(BudgetProblem::NoKinds));
    }
    let window = match b.window {
        Some(w) => {
            let path = match index {
                Some(i) => KeyPath::default().key("budget").index(i).key("window"),
                None => KeyPath::default().key("budget"),
            };
            Some(positive(format!("budget {:?}.window", b.name), path, w)?)
        }
        None => None,
    };
    let mut limit = b.max;
    if let Some(p) = b.max_percent {
        if !(0.0..=100.0).contains(&p) {
            return Err(refused(BudgetProblem::Percent(p)));
        }
        // Without a fleet size the share cannot be computed; `max` alone
        // applies, and `fleet status` says so.
        if let Some(size) = fleet_size {
            limit = limit.min((f64::from(size) * p / 100.0).floor() as u32);
        }
    }
    Ok(Budget { name: b.name.clone(), kinds: b.kinds.clone(), limit, window, per: b.per })
}

fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<FleetSettings, String> {
        #[derive(Deserialize)]
        struct Wrapper {
            fleet: FleetConfig,
        }
        let w: Wrapper = toml::from_str(text).map_err(|e| e.to_string())?;
        FleetSettings::new(&w.fleet).map_err(|e| e.to_string())
    }

    #[test]
    fn defaults_are_the_documented_budgets() {
        let s = parse("[fleet]\netcd = [\"http://127.0.0.1:2379\"]\nidentity = \"n1\"\nfleet_size = 40\n").unwrap();
        assert_eq!(s.lease_ttl, Duration::from_secs(10));
        assert_eq!(s.prefix, "/rocemend/fleet/");
        let cordon = s.budgets_for("node.cordon").next().unwrap();
        // 5 % of 40 is 2, lower than max = 3.
        assert_eq!((cordon.limit, cordon.window), (2, Some(Duration::from_secs(600))));
        assert_eq!(cordon.describe(), "2 per 10m");
        let rail = s.budgets_for("rail.drain").next().unwrap();
        assert_eq!(rail.describe(), "1 at once per plane");
        let impact = Impact { plane: Some("2".into()), ..Default::default() };
        assert_eq!(rail.cell(&impact), "plane=2");
        assert_eq!(rail.cell(&Impact::default()), "plane=unknown");
        assert_eq!(s.budgets_for("link.isolate").count(), 0);
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse("[fleet]\netcd = []\n").unwrap_err();
        assert!(e.contains("fleet.etcd"), "{e}");
        let e = parse("[fleet]\netcd = [\"127.0.0.1:2379\"]\n").unwrap_err();
        assert!(e.contains("not an http"), "{e}");
        let e = parse("[fleet]\netcd = [\"http://a:1\"]\nidentity = \"n\"\nlease_ttl = \"500ms\"\n").unwrap_err();
        assert!(e.contains("lease_ttl"), "{e}");
        let text = "[fleet]\netcd = [\"http://a:1\"]\nidentity = \"n\"\n[[fleet.budget]]\nname = \"c\"\nkinds = [\"node.cordon\"]\nmax = 3\nwindow = \"soon\"\n";
        // A duration that does not parse is refused as the file is read: the
        // error shows the line, the key and the value.
        let e = parse(text).unwrap_err();
        assert!(e.contains("line 8") && e.contains("window = \"soon\""), "{e}");
        assert!(e.contains("invalid value: string \"soon\", expected a duration"), "{e}");
        let e = parse(&text.replace("\"soon\"", "\"0s\"")).unwrap_err();
        assert_eq!(e, "fleet.budget \"c\".window = \"0s\": must be more than zero");
        let e = parse("[fleet]\netcd = [\"http://a:1\"]\nidenity = \"n\"\n").unwrap_err();
        assert!(e.contains("idenity"), "{e}");
    }

    #[test]
    fn an_error_says_where_it_is_below_the_fleet_table() {
        let key = |text: &str| {
            let w: toml::Table = toml::from_str(text).unwrap();
            let config: FleetConfig = w["fleet"].clone().try_into().unwrap();
            FleetSettings::check(&config).unwrap_err().key().to_string()
        };
        let base = "[fleet]\netcd = [\"http://a:1\"]\nidentity = \"n\"\n";
        assert_eq!(key("[fleet]\netcd = []\n"), "etcd");
        assert_eq!(key(&format!("{base}lease_ttl = \"1s\"\n")), "lease_ttl");
        assert_eq!(key(&format!("{base}request_timeout = \"0\"\n")), "request_timeout");
        let budget =
            |name: &str, rest: &str| format!("[[fleet.budget]]\nname = \"{name}\"\nkinds = [\"x.*\"]\nmax = 1\n{rest}");
        let two = format!("{base}{}{}", budget("a", ""), budget("b", "window = \"0s\"\n"));
        assert_eq!(key(&two), "budget[1].window");
        let twice = format!("{base}{}{}", budget("a", ""), budget("a", ""));
        assert_eq!(key(&twice), "budget[1].name");
        assert_eq!(key(&format!("{base}{}", budget("a", "max_percent = 200.0\n"))), "budget[0].max_percent");
        assert_eq!(key(&format!("{base}shard = \"a\"\naggregator = \"b\"\n")), "shard");
    }

    #[test]
    fn a_shard_group_is_a_plain_name_and_excludes_an_election() {
        let base = "[fleet]\netcd = [\"http://a:1\"]\nidentity = \"agg-1\"\n";
        assert_eq!(parse(&format!("{base}shard = \"pod-a\"\n")).unwrap().shard.as_deref(), Some("pod-a"));
        let e = parse(&format!("{base}shard = \"pod/a\"\n")).unwrap_err();
        assert!(e.contains("fleet.shard"), "{e}");
        let e = parse(&format!("{base}shard = \"pod-a\"\naggregator = \"pod-a\"\n")).unwrap_err();
        assert!(e.contains("fleet.shard and fleet.aggregator"), "{e}");
    }
}
