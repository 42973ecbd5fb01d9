//! The typed plan of a `gnmi` sensor: per target, the connection, how the
//! switch wants its SONiC databases named, and the Subscribe requests in
//! each path style the target may need. Built once by
//! [`GnmiConfig::build`](super::GnmiConfig::build); the running sensor only
//! reads it.
//!
//! gNMI reads a target only in a request's prefix (spec 2.2.2.1), and one
//! `SubscriptionList` has one prefix (and, for sonic-gnmi, one origin), so
//! subscriptions are grouped into one list (one Subscribe stream, on the
//! target's one connection) per prefix and path origin: the SONiC presets
//! under prefix target `COUNTERS_DB`, the OpenConfig preset under the
//! target's `target`, the user's subscriptions under the user's `prefix`.
//!
//! The SONiC presets read sonic-gnmi's port-name *virtual* paths
//! (`COUNTERS/Ethernet*`, `…/Queues`, `…/Pfcwd`), which exist in the
//! prefix-target style only. With origin `sonic-db` the `COUNTERS` keys are
//! SAI OIDs, so in that style the presets become an [`OidPlan`]: the session
//! reads `COUNTERS_PORT_NAME_MAP` and `COUNTERS_QUEUE_NAME_MAP` and
//! subscribes to `COUNTERS/<oid>` of each port or queue.

use std::time::Duration;

use gnmi_proto::gnmi::subscription_list::Mode as ListMode;
use gnmi_proto::gnmi::{Encoding, Path, Subscription, SubscriptionList, SubscriptionMode};
use gnmi_proto::path::{join, path_to_string};
use gnmi_proto::sonic::{PathStyle, COUNTERS_DB};
use gnmi_proto::ClientConfig;

use super::mapping::{OidNames, QueueFields};

/// Reconnection delays: `initial`, doubling to `max`, each drawn from ±20 %
/// of itself so targets that failed together do not retry in lockstep. A
/// refused connection is retried after `initial` without doubling.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The first delay.
    pub initial: Duration,
    /// The longest delay.
    pub max: Duration,
}

impl Backoff {
    /// The delays of one outage, before jitter: `initial`, doubling up to
    /// `max`, without end. backon's own jitter adds up to one more delay;
    /// the sensor draws ±20 % instead ([`Backoff`]).
    pub fn delays(self) -> backon::ExponentialBackoff {
        use backon::BackoffBuilder;
        backon::ExponentialBuilder::new()
            .with_min_delay(self.initial)
            .with_max_delay(self.max)
            .without_max_times()
            .build()
    }
}

/// Which path style a target gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StyleChoice {
    /// The configured one.
    Fixed(PathStyle),
    /// Found out at the first connection (Capabilities, then a probing
    /// Get in each style), then kept.
    Auto {
        /// The namespace element for the `sonic-db-origin` style.
        namespace: Option<String>,
    },
}

/// One Subscribe stream: its request, and which of its subscriptions are
/// ON_CHANGE (their values are re-sent on the sensor's heartbeat).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamPlan {
    /// The request.
    pub list: SubscriptionList,
    /// The ON_CHANGE subscriptions' paths, joined with the prefix: an
    /// update at or below one of these is an ON_CHANGE value.
    pub on_change: Vec<Path>,
}

impl StreamPlan {
    /// Whether an update at `path` (joined with its notification's prefix)
    /// belongs to an ON_CHANGE subscription of this stream.
    pub fn is_on_change(&self, path: &Path) -> bool {
        self.on_change.iter().any(|p| gnmi_proto::path::matches(p, path))
    }
}

/// The SONiC presets in the `sonic-db-origin` style: which OIDs to
/// subscribe to, found at each session from the name maps.
#[derive(Debug, Clone, PartialEq)]
pub struct OidPlan {
    /// The ports' sample interval (`sonic_pfc`), if their hashes are wanted.
    pub ports: Option<u64>,
    /// The queues' sample interval (`sonic_queues`, `sonic_pfcwd`), if wanted.
    pub queues: Option<u64>,
    /// Which fields of a queue's hash are mapped.
    pub queue_fields: QueueFields,
    /// The queues are followed ON_CHANGE (`sonic_pfcwd`: the watchdog's
    /// storm state as soon as its detector writes it), with this heartbeat
    /// asked of the switch. The entry's counters then come with each change
    /// of it, at the switch's own refresh, instead of every `queues`.
    pub queues_on_change: Option<u64>,
}

impl OidPlan {
    /// The Subscribe stream of the OIDs `names` knows, in `style`: one
    /// subscription per port (SAMPLE), then per queue (SAMPLE, or ON_CHANGE
    /// for the watchdog), in name order.
    pub fn stream(&self, names: &OidNames, style: &PathStyle, updates_only: bool) -> Option<StreamPlan> {
        let mut subs: Vec<(&str, &str, Mode)> = Vec::new();
        if let Some(interval) = self.ports {
            subs.extend(names.ports.iter().map(|(oid, name)| (name.as_str(), oid.as_str(), Mode::Sample(interval))));
        }
        if let Some(interval) = self.queues {
            let mode = self.queues_on_change.map_or(Mode::Sample(interval), Mode::OnChange);
            subs.extend(names.queues.iter().map(|(oid, (port, _))| (port.as_str(), oid.as_str(), mode)));
        }
        if subs.is_empty() {
            return None;
        }
        subs.sort();
        let mut list = SubscriptionList {
            prefix: style.prefix(COUNTERS_DB),
            mode: ListMode::Stream as i32,
            encoding: Encoding::JsonIetf as i32,
            updates_only,
            ..Default::default()
        };
        let mut on_change = Vec::new();
        for (_, oid, mode) in subs {
            let path = style.path(COUNTERS_DB, &["COUNTERS", oid]);
            let sub = match mode {
                Mode::Sample(interval) => Subscription {
                    mode: SubscriptionMode::Sample as i32,
                    sample_interval: interval,
                    ..Default::default()
                },
                Mode::OnChange(heartbeat) => {
                    on_change.push(join(list.prefix.as_ref(), &path));
                    Subscription {
                        mode: SubscriptionMode::OnChange as i32,
                        heartbeat_interval: heartbeat,
                        ..Default::default()
                    }
                }
            };
            list.subscription.push(Subscription { path: Some(path), ..sub });
        }
        Some(StreamPlan { list, on_change })
    }
}

/// How one OID is subscribed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Mode {
    /// SAMPLE, every so many nanoseconds.
    Sample(u64),
    /// ON_CHANGE, with this heartbeat asked of the switch.
    OnChange(u64),
}

/// One target, ready to run.
#[derive(Debug, Clone)]
pub struct TargetPlan {
    /// The `switch` label.
    pub name: String,
    /// How to reach it.
    pub client: ClientConfig,
    /// Its path style, or `auto`.
    pub style: StyleChoice,
    /// The streams in the `prefix-target` style (empty when the target
    /// cannot use it).
    pub prefix_target: Vec<StreamPlan>,
    /// The streams in the `sonic-db-origin` style (empty when the target
    /// cannot use it), besides the OIDs'.
    pub sonic_db_origin: Vec<StreamPlan>,
    /// The SONiC presets in the `sonic-db-origin` style, if any.
    pub oids: Option<OidPlan>,
}

impl TargetPlan {
    /// Whether the target's streams read queue counters (`sonic_queues`), where Broadcom's
    /// queue pause status is.
    pub fn reads_queues(&self) -> bool {
        let queues = |plan: &StreamPlan| {
            plan.list
                .subscription
                .iter()
                .any(|s| s.path.as_ref().is_some_and(|p| p.elem.iter().any(|e| e.name == "Queues")))
        };
        self.prefix_target.iter().any(queues) || self.oids.as_ref().is_some_and(|o| o.queue_fields.counters)
    }

    /// The streams of `style`.
    pub fn streams(&self, style: &PathStyle) -> &[StreamPlan] {
        match style {
            PathStyle::PrefixTarget => &self.prefix_target,
            PathStyle::SonicDbOrigin { .. } => &self.sonic_db_origin,
        }
    }
}

/// Which virtual COUNTERS path a SONiC preset reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Virtual {
    /// `COUNTERS/Ethernet*`: the ports' hashes.
    Ports,
    /// `COUNTERS/Ethernet*/Queues`: the queues' counters.
    Queues,
    /// `COUNTERS/Ethernet*/Pfcwd`: the queues' watchdog fields.
    Pfcwd,
}

/// Where a subscription points, before a path style names its database.
#[derive(Debug, Clone, PartialEq)]
pub enum Place {
    /// A SONiC database and the path below it (`COUNTERS_DB`,
    /// `/COUNTERS/Ethernet*`): the style names the database. A virtual
    /// path becomes OIDs in the `sonic-db-origin` style ([`OidPlan`]).
    Sonic {
        /// The database.
        db: &'static str,
        /// The path below it.
        below: Path,
        /// The virtual path it is, if it is one.
        virtual_path: Option<Virtual>,
    },
    /// Any other path under `prefix`, sent as it is in every style; the
    /// target's `target` fills a prefix without one.
    Plain {
        /// The prefix (the user's `prefix`, with the path's `target@`).
        prefix: Option<Path>,
        /// The path, without a target.
        path: Path,
    },
}

/// One subscription, before a style names its database.
#[derive(Debug, Clone, PartialEq)]
pub struct SubSpec {
    /// Where it points.
    pub place: Place,
    /// SAMPLE or ON_CHANGE.
    pub mode: SubscriptionMode,
    /// SAMPLE: nanoseconds between samples.
    pub sample_interval: u64,
    /// ON_CHANGE: nanoseconds a target may stay silent (gNMI
    /// `heartbeat_interval`), 0 for none.
    pub heartbeat_interval: u64,
}

/// The request prefix and path of `spec` in `style`.
fn place(spec: &SubSpec, style: &PathStyle, target: Option<&str>) -> (Option<Path>, Path) {
    match &spec.place {
        Place::Sonic { db, below, .. } => {
            let names: Vec<&str> = below.elem.iter().map(|e| e.name.as_str()).collect();
            let (prefix, mut path) = style.request(db, &names);
            // Keys, if a preset ever has them, survive the rebuild.
            let skip = path.elem.len() - below.elem.len();
            for (elem, given) in path.elem[skip..].iter_mut().zip(&below.elem) {
                elem.key = given.key.clone();
            }
            (prefix, path)
        }
        Place::Plain { prefix, path } => {
            let mut prefix = prefix.clone().unwrap_or_default();
            if prefix.target.is_empty() {
                prefix.target = target.unwrap_or_default().to_string();
            }
            let prefix = (prefix != Path::default()).then_some(prefix);
            (prefix, path.clone())
        }
    }
}

/// The SONiC presets' OIDs for the `sonic-db-origin` style, if any preset
/// reads a virtual path.
pub fn oid_plan(specs: &[SubSpec]) -> Option<OidPlan> {
    let mut plan = OidPlan { ports: None, queues: None, queue_fields: QueueFields::default(), queues_on_change: None };
    for spec in specs {
        let Place::Sonic { virtual_path: Some(v), .. } = &spec.place else { continue };
        let interval = spec.sample_interval;
        let shortest = |now: Option<u64>| Some(now.map_or(interval, |n| n.min(interval)));
        match v {
            Virtual::Ports => plan.ports = shortest(plan.ports),
            Virtual::Queues | Virtual::Pfcwd => {
                plan.queues = shortest(plan.queues);
                plan.queue_fields.counters |= *v == Virtual::Queues;
                plan.queue_fields.watchdog |= *v == Virtual::Pfcwd;
                if spec.mode == SubscriptionMode::OnChange {
                    plan.queues_on_change = Some(spec.heartbeat_interval);
                }
            }
        }
    }
    (plan.ports.is_some() || plan.queues.is_some()).then_some(plan)
}

/// The Subscribe streams of `specs` in `style`: one per prefix and origin,
/// in the order their first subscription appears.
pub fn streams(specs: &[SubSpec], style: &PathStyle, target: Option<&str>, updates_only: bool) -> Vec<StreamPlan> {
    let mut keys: Vec<(String, String)> = Vec::new();
    let mut out: Vec<StreamPlan> = Vec::new();
    for spec in specs {
        if let (PathStyle::SonicDbOrigin { .. }, Place::Sonic { virtual_path: Some(_), .. }) = (style, &spec.place) {
            continue; // OIDs in this style: see `oid_plan`
        }
        let (prefix, path) = place(spec, style, target);
        let key = (prefix.as_ref().map(path_to_string).unwrap_or_default(), path.origin.clone());
        let i = match keys.iter().position(|k| *k == key) {
            Some(i) => i,
            None => {
                keys.push(key);
                out.push(StreamPlan {
                    list: SubscriptionList {
                        prefix: prefix.clone(),
                        mode: ListMode::Stream as i32,
                        encoding: Encoding::JsonIetf as i32,
                        updates_only,
                        ..Default::default()
                    },
                    on_change: Vec::new(),
                });
                out.len() - 1
            }
        };
        let on_change = spec.mode == SubscriptionMode::OnChange;
        if on_change {
            out[i].on_change.push(join(prefix.as_ref(), &path));
        }
        out[i].list.subscription.push(Subscription {
            path: Some(path),
            mode: spec.mode as i32,
            sample_interval: if on_change { 0 } else { spec.sample_interval },
            heartbeat_interval: if on_change { spec.heartbeat_interval } else { 0 },
            ..Default::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use gnmi_proto::parse_path;

    fn names() -> OidNames {
        let mut names = OidNames::default();
        names.add_ports(&serde_json::json!({"Ethernet0": "oid:0x1", "Ethernet4": "oid:0x2"})).unwrap();
        names.add_queues(&serde_json::json!({"Ethernet0:3": "oid:0x153"})).unwrap();
        names
    }

    #[test]
    fn the_delays_double_from_the_first_to_the_longest_and_stay_there() {
        let backoff = Backoff { initial: Duration::from_millis(100), max: Duration::from_secs(1) };
        let ms: Vec<u128> = backoff.delays().take(7).map(|d| d.as_millis()).collect();
        assert_eq!(ms, [100, 200, 400, 800, 1000, 1000, 1000]);
    }

    fn preset(v: Virtual, below: &str, interval: u64) -> SubSpec {
        SubSpec {
            place: Place::Sonic { db: COUNTERS_DB, below: parse_path(below).unwrap(), virtual_path: Some(v) },
            mode: SubscriptionMode::Sample,
            sample_interval: interval,
            heartbeat_interval: 0,
        }
    }

    #[test]
    fn virtual_paths_become_oid_subscriptions_in_the_sonic_db_style() {
        let specs = [
            preset(Virtual::Ports, "/COUNTERS/Ethernet*", 1000),
            preset(Virtual::Pfcwd, "/COUNTERS/Ethernet*/Pfcwd", 500),
        ];
        let style = PathStyle::SonicDbOrigin { namespace: Some("localhost".into()) };
        assert!(streams(&specs, &style, None, false).is_empty(), "no virtual path in this style");
        assert_eq!(streams(&specs, &PathStyle::PrefixTarget, None, false)[0].list.subscription.len(), 2);
        let plan = oid_plan(&specs).unwrap();
        assert_eq!((plan.ports, plan.queues), (Some(1000), Some(500)));
        assert_eq!(plan.queue_fields, QueueFields { counters: false, watchdog: true });
        let stream = plan.stream(&names(), &style, false).unwrap();
        assert_eq!(stream.list.prefix, None);
        let paths: Vec<_> = stream.list.subscription.iter().map(|s| path_to_string(s.path.as_ref().unwrap())).collect();
        assert_eq!(
            paths,
            [
                "sonic-db:/COUNTERS_DB/localhost/COUNTERS/oid:0x1",
                "sonic-db:/COUNTERS_DB/localhost/COUNTERS/oid:0x153",
                "sonic-db:/COUNTERS_DB/localhost/COUNTERS/oid:0x2",
            ]
        );
        assert_eq!(stream.list.subscription[1].sample_interval, 500);
        assert_eq!(oid_plan(&[]), None);
    }

    #[test]
    fn the_watchdog_preset_follows_the_queues_on_change_in_the_sonic_db_style() {
        let mut pfcwd = preset(Virtual::Pfcwd, "/COUNTERS/Ethernet*/Pfcwd", 1000);
        (pfcwd.mode, pfcwd.heartbeat_interval) = (SubscriptionMode::OnChange, 1_000_000_000);
        let specs = [preset(Virtual::Ports, "/COUNTERS/Ethernet*", 1000), pfcwd];
        let style = PathStyle::SonicDbOrigin { namespace: Some("localhost".into()) };
        let plan = oid_plan(&specs).unwrap();
        assert_eq!(plan.queues_on_change, Some(1_000_000_000));
        let stream = plan.stream(&names(), &style, false).unwrap();
        let modes: Vec<_> = stream.list.subscription.iter().map(|s| (s.mode, s.heartbeat_interval)).collect();
        let (sample, on_change) = (SubscriptionMode::Sample as i32, SubscriptionMode::OnChange as i32);
        assert_eq!(modes, [(sample, 0), (on_change, 1_000_000_000), (sample, 0)], "ports sampled, the queue followed");
        let queue = stream.list.subscription[1].path.as_ref().unwrap();
        assert!(stream.is_on_change(queue) && !stream.is_on_change(stream.list.subscription[0].path.as_ref().unwrap()));
        // The prefix-target style sends the virtual path itself ON_CHANGE.
        let prefix_target = streams(&specs, &PathStyle::PrefixTarget, None, false);
        assert_eq!(prefix_target[0].list.subscription[1].mode, on_change);
        assert_eq!(path_to_string(&prefix_target[0].on_change[0]), "COUNTERS_DB@/COUNTERS/Ethernet*/Pfcwd");
    }

    #[test]
    fn a_users_path_is_sent_as_written_under_its_prefix() {
        let spec = SubSpec {
            place: Place::Plain {
                prefix: Some(parse_path("COUNTERS_DB@/COUNTERS").unwrap()),
                path: parse_path("/Ethernet0/Queues").unwrap(),
            },
            mode: SubscriptionMode::Sample,
            sample_interval: 1,
            heartbeat_interval: 0,
        };
        let style = PathStyle::SonicDbOrigin { namespace: None };
        for style in [style, PathStyle::PrefixTarget] {
            let (prefix, path) = place(&spec, &style, Some("ignored"));
            assert_eq!(path_to_string(&prefix.unwrap()), "COUNTERS_DB@/COUNTERS");
            assert_eq!(path_to_string(&path), "/Ethernet0/Queues");
        }
    }
}
