//! Link messages in, samples out: the part of the sensor without I/O.
//!
//! The tracker keeps, per link index, the last carrier counters seen. A
//! message's counters minus the previous ones is the number of carrier
//! changes since, which become that many `link_transition` events: the
//! kernel counts every carrier change, so this catches flaps between two
//! messages (coalesced by linkwatch, or dropped on a receive-buffer overrun).
//!
//! It also keeps each link's last state, so [`LinkTracker::heartbeat`] can
//! send it again while nothing changes.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashSet};

use engine::{CounterSpec, Labels, Nanos, Sample, SampleKind, SensorContext, SensorError, SeriesId, SeriesSpec, Value};
use rtnetlink::packet_route::link::{LinkAttribute, LinkMessage, State};

use super::config::NameFilter;

/// At most this many transition events per direction from one message. A
/// link does not flap thousands of times between two messages; a bigger
/// jump means the counters were read across a long gap (or a driver bug),
/// and the counter series still carries the exact count for rules.
pub const MAX_EVENTS_PER_MESSAGE: u32 = 1024;

/// What one `RTM_NEWLINK` says about a link.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkReading {
    /// The interface index (stable for the life of the link).
    pub index: u32,
    /// `IFLA_IFNAME`.
    pub name: Option<String>,
    /// `IFLA_OPERSTATE` is UP.
    pub oper_up: Option<bool>,
    /// `IFLA_CARRIER` is on.
    pub carrier: Option<bool>,
    /// `IFLA_CARRIER_UP_COUNT`.
    pub up_count: Option<u32>,
    /// `IFLA_CARRIER_DOWN_COUNT`.
    pub down_count: Option<u32>,
}

impl LinkReading {
    /// The attributes the sensor reads from `message`.
    pub fn from_message(message: &LinkMessage) -> LinkReading {
        let mut reading = LinkReading { index: message.header.index, ..LinkReading::default() };
        for attribute in &message.attributes {
            match attribute {
                LinkAttribute::IfName(name) => reading.name = Some(name.clone()),
                LinkAttribute::OperState(state) => reading.oper_up = Some(*state == State::Up),
                LinkAttribute::Carrier(on) => reading.carrier = Some(*on != 0),
                LinkAttribute::CarrierUpCount(n) => reading.up_count = Some(*n),
                LinkAttribute::CarrierDownCount(n) => reading.down_count = Some(*n),
                _ => {}
            }
        }
        reading
    }
}

/// The series of one link.
#[derive(Debug, Clone, Copy)]
struct Ids {
    down_count: SeriesId,
    up_count: SeriesId,
    oper_up: SeriesId,
    to_up: SeriesId,
    to_down: SeriesId,
}

impl Ids {
    fn register(ctx: &SensorContext, netdev: &str) -> Result<Ids, SensorError> {
        let counter = SampleKind::Counter(CounterSpec::U32_WRAP);
        let spec = |metric: &str, kind: SampleKind, to: Option<&str>| {
            let mut labels = Labels::from_pairs([("netdev", netdev)]);
            if let Some(to) = to {
                labels.insert("to", to);
            }
            SeriesSpec { metric: metric.into(), labels, kind }
        };
        Ok(Ids {
            down_count: ctx.register(&spec("link_carrier_down_count", counter, None))?,
            up_count: ctx.register(&spec("link_carrier_up_count", counter, None))?,
            oper_up: ctx.register(&spec("link_oper_up", SampleKind::Gauge, None))?,
            to_up: ctx.register(&spec("link_transition", SampleKind::Event, Some("up")))?,
            to_down: ctx.register(&spec("link_transition", SampleKind::Event, Some("down")))?,
        })
    }
}

/// What the tracker keeps about one watched link.
#[derive(Debug, Clone)]
struct Link {
    name: String,
    ids: Ids,
    up_count: Option<u32>,
    down_count: Option<u32>,
    /// `IFLA_OPERSTATE` is UP, as of the last message.
    oper_up: Option<bool>,
    /// The carrier after the last message: orders the events of the next.
    carrier: Option<bool>,
}

/// Per-link counter state and series; see the module doc.
#[derive(Debug, Default)]
pub struct LinkTracker {
    filter: NameFilter,
    /// By interface index; ordered, so a heartbeat lists links in a stable order.
    links: BTreeMap<u32, Link>,
}

/// The increase of a 32-bit counter from `prev` to `now`, or `None` when
/// `now` is older than `prev` (a dump reply overtaken by a notification):
/// counters that move backwards by less than half the range did not wrap.
fn increase(prev: u32, now: u32) -> Option<u32> {
    let d = now.wrapping_sub(prev);
    (d <= u32::MAX / 2).then_some(d)
}

/// `link_oper_up`'s value: 1 when the operstate is UP, else 0.
fn oper_value(up: bool) -> Value {
    Value::Real(if up { 1.0 } else { 0.0 })
}

impl LinkTracker {
    /// A tracker of the links `filter` lets through.
    pub fn new(filter: NameFilter) -> LinkTracker {
        LinkTracker { filter, links: BTreeMap::new() }
    }

    /// How many links are watched.
    pub fn len(&self) -> usize {
        self.links.len()
    }

    /// Whether no link is watched.
    pub fn is_empty(&self) -> bool {
        self.links.is_empty()
    }

    /// The names of the watched links, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.links.values().map(|l| l.name.clone()).collect();
        names.sort();
        names
    }

    /// A link was deleted (`RTM_DELLINK`): forget it, so a new link that
    /// reuses its name starts from its own counters.
    pub fn remove(&mut self, index: u32) {
        self.links.remove(&index);
    }

    /// A full dump: every reading, then forgetting the links it lacks
    /// (deleted while the sensor was not listening).
    pub fn resync(
        &mut self,
        ctx: &SensorContext,
        readings: &[LinkReading],
        ts: Nanos,
        out: &mut Vec<Sample>,
    ) -> Result<(), SensorError> {
        let present: HashSet<u32> = readings.iter().map(|r| r.index).collect();
        self.links.retain(|index, _| present.contains(index));
        let mut first_error = None;
        for reading in readings {
            if let Err(e) = self.observe(ctx, reading, ts, out) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// The state of every watched link as of its last message, stamped
    /// `ts`: its counters and operstate, as [`observe`](Self::observe)
    /// last sent them, appended to `out`. No `link_transition` events: the
    /// counters say nothing changed, which is what a heartbeat reports.
    pub fn heartbeat(&self, ts: Nanos, out: &mut Vec<Sample>) {
        for link in self.links.values() {
            let sample = |series: SeriesId, value: Value| Sample { series, ts, value };
            if let Some(n) = link.down_count {
                out.push(sample(link.ids.down_count, Value::Count(n as u64)));
            }
            if let Some(n) = link.up_count {
                out.push(sample(link.ids.up_count, Value::Count(n as u64)));
            }
            if let Some(up) = link.oper_up {
                out.push(sample(link.ids.oper_up, oper_value(up)));
            }
        }
    }

    /// One `RTM_NEWLINK` received at `ts`: appends its samples to `out`.
    ///
    /// The first reading of a link is its baseline: counters and state, no
    /// events (its past carrier changes were not seen). Later readings add
    /// one `link_transition` event per counted change.
    pub fn observe(
        &mut self,
        ctx: &SensorContext,
        reading: &LinkReading,
        ts: Nanos,
        out: &mut Vec<Sample>,
    ) -> Result<(), SensorError> {
        if let Some(link) = self.watched(ctx, reading)? {
            link.update(reading, ts, out);
        }
        Ok(())
    }

    /// The link `reading` is about, its series registered at first sight
    /// and again under a new name; `None` for a link with no name yet, or
    /// one the filter leaves out (forgotten, in case it was renamed out).
    fn watched(&mut self, ctx: &SensorContext, reading: &LinkReading) -> Result<Option<&mut Link>, SensorError> {
        let known_name = self.links.get(&reading.index).map(|l| l.name.clone());
        let Some(name) = reading.name.clone().or(known_name) else {
            return Ok(None);
        };
        if !self.filter.matches(&name) {
            self.links.remove(&reading.index);
            return Ok(None);
        }
        let link = match self.links.entry(reading.index) {
            Entry::Occupied(known) => {
                let link = known.into_mut();
                if link.name != name {
                    // Renamed: the same link under new series; keep its counters.
                    link.ids = Ids::register(ctx, &name)?;
                    link.name = name;
                }
                link
            }
            Entry::Vacant(new) => {
                let ids = Ids::register(ctx, &name)?;
                new.insert(Link { name, ids, up_count: None, down_count: None, oper_up: None, carrier: None })
            }
        };
        Ok(Some(link))
    }
}

impl Link {
    /// Takes `reading`, received at `ts`: its counters and operstate, then
    /// one `link_transition` per carrier change they count, into `out`. A
    /// reading older than what was already seen is dropped.
    fn update(&mut self, reading: &LinkReading, ts: Nanos, out: &mut Vec<Sample>) {
        let since = |prev: Option<u32>, now: Option<u32>| match (prev, now) {
            (Some(prev), Some(now)) => increase(prev, now),
            _ => Some(0),
        };
        let (Some(ups), Some(downs)) =
            (since(self.up_count, reading.up_count), since(self.down_count, reading.down_count))
        else {
            // Older than what was already seen: nothing in it is news.
            return;
        };
        let sample = |series: SeriesId, value: Value| Sample { series, ts, value };
        if let Some(n) = reading.down_count {
            out.push(sample(self.ids.down_count, Value::Count(n as u64)));
            self.down_count = Some(n);
        }
        if let Some(n) = reading.up_count {
            out.push(sample(self.ids.up_count, Value::Count(n as u64)));
            self.up_count = Some(n);
        }
        if let Some(up) = reading.oper_up {
            out.push(sample(self.ids.oper_up, oper_value(up)));
            self.oper_up = Some(up);
        }
        self.transitions(ups, downs, ts, out);
        if let Some(carrier) = reading.carrier {
            self.carrier = Some(carrier);
        } else if let (Some(up), Some(down)) = (self.up_count, self.down_count) {
            self.carrier = Some(up > down);
        }
    }

    /// `ups` and `downs` carrier changes as `link_transition` events, in
    /// the order they happened, at most [`MAX_EVENTS_PER_MESSAGE`] of each.
    ///
    /// Carrier changes alternate, so the order follows from the state
    /// before them: a carrier that was up went down first. The value of
    /// each event is the carrier after it (1 up, 0 down).
    fn transitions(&self, ups: u32, downs: u32, ts: Nanos, out: &mut Vec<Sample>) {
        let (mut ups, mut downs) = (ups.min(MAX_EVENTS_PER_MESSAGE), downs.min(MAX_EVENTS_PER_MESSAGE));
        let mut next_down = self.carrier.unwrap_or(downs >= ups);
        while ups + downs > 0 {
            if (next_down && downs > 0) || ups == 0 {
                out.push(Sample { series: self.ids.to_down, ts, value: Value::Real(0.0) });
                downs -= 1;
                next_down = false;
            } else {
                out.push(Sample { series: self.ids.to_up, ts, value: Value::Real(1.0) });
                ups -= 1;
                next_down = true;
            }
        }
    }
}

#[cfg(test)]
impl LinkReading {
    /// A reading that says everything: link `index` named `name`, its
    /// carrier and operstate both `carrier`, its counters `up` and `down`.
    pub(super) fn full(index: u32, name: &str, carrier: bool, up: u32, down: u32) -> LinkReading {
        LinkReading {
            index,
            name: Some(name.into()),
            oper_up: Some(carrier),
            carrier: Some(carrier),
            up_count: Some(up),
            down_count: Some(down),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::SeriesTable;
    use tokio::sync::{mpsc, watch};

    fn ctx(table: &SeriesTable) -> SensorContext {
        let (tx, _rx) = mpsc::channel(1);
        let (_stop, shutdown) = watch::channel(false);
        SensorContext::new(table.clone(), "netlink_link", 100, tx, shutdown)
    }

    /// The samples as `(metric, to label, value)`.
    fn shape(table: &SeriesTable, samples: &[Sample]) -> Vec<(String, String, f64)> {
        let reg = table.read();
        samples
            .iter()
            .map(|s| {
                let to = reg.labels(s.series).get("to").unwrap_or("").to_string();
                (reg.metric_name(s.series).to_string(), to, s.value.as_f64())
            })
            .collect()
    }

    fn transitions(table: &SeriesTable, samples: &[Sample]) -> Vec<String> {
        shape(table, samples).into_iter().filter(|(m, ..)| m == "link_transition").map(|(_, to, _)| to).collect()
    }

    /// A tracker with its series table and the samples of the last step.
    struct Fixture {
        table: SeriesTable,
        ctx: SensorContext,
        tracker: LinkTracker,
        out: Vec<Sample>,
    }

    impl Fixture {
        fn new(tracker: LinkTracker) -> Fixture {
            let table = SeriesTable::default();
            Fixture { ctx: ctx(&table), table, tracker, out: Vec::new() }
        }

        /// A default tracker that has seen `first` as its baseline.
        fn after(first: LinkReading) -> Fixture {
            let mut f = Fixture::new(LinkTracker::default());
            f.observe(&first, 0);
            f
        }

        /// Observes `r` at `t`; returns the transitions it produced.
        fn observe(&mut self, r: &LinkReading, t: Nanos) -> Vec<String> {
            self.out.clear();
            self.tracker.observe(&self.ctx, r, t, &mut self.out).unwrap();
            transitions(&self.table, &self.out)
        }
    }

    #[test]
    fn the_first_reading_is_a_baseline_without_events() {
        let mut f = Fixture::new(LinkTracker::default());
        f.observe(&LinkReading::full(2, "eth0", true, 7, 6), 10);
        assert_eq!(
            shape(&f.table, &f.out),
            vec![
                ("link_carrier_down_count".into(), "".into(), 6.0),
                ("link_carrier_up_count".into(), "".into(), 7.0),
                ("link_oper_up".into(), "".into(), 1.0),
            ]
        );
        assert!(f.out.iter().all(|s| s.ts == 10));
        assert_eq!(f.table.read().labels(f.out[0].series), Labels::from_pairs([("netdev", "eth0")]));
    }

    #[test]
    fn three_downs_between_two_messages_are_three_down_events() {
        let mut f = Fixture::after(LinkReading::full(2, "eth0", true, 1, 0));
        // Up, then three flaps, ending down: 3 downs and 2 ups, down first.
        assert_eq!(f.observe(&LinkReading::full(2, "eth0", false, 3, 3), 1), ["down", "up", "down", "up", "down"]);
        let oper: Vec<f64> =
            shape(&f.table, &f.out).into_iter().filter(|(m, ..)| m == "link_oper_up").map(|t| t.2).collect();
        assert_eq!(oper, [0.0]);
    }

    #[test]
    fn a_counter_wrap_is_one_change_not_four_billion() {
        let mut f = Fixture::after(LinkReading::full(2, "eth0", true, u32::MAX, u32::MAX));
        assert_eq!(f.observe(&LinkReading::full(2, "eth0", false, u32::MAX, 0), 1), ["down"]);
    }

    #[test]
    fn a_stale_reading_is_ignored() {
        let mut f = Fixture::after(LinkReading::full(2, "eth0", true, 5, 4));
        f.observe(&LinkReading::full(2, "eth0", true, 4, 3), 1);
        assert!(f.out.is_empty(), "{:?}", shape(&f.table, &f.out));
        // And the next fresh one counts from 5/4, not from the stale 4/3.
        assert_eq!(f.observe(&LinkReading::full(2, "eth0", false, 5, 5), 2), ["down"]);
    }

    #[test]
    fn a_huge_jump_is_bounded() {
        let mut f = Fixture::after(LinkReading::full(2, "eth0", false, 0, 0));
        let t = f.observe(&LinkReading::full(2, "eth0", false, 100_000, 100_000), 1);
        assert_eq!(t.len(), 2 * MAX_EVENTS_PER_MESSAGE as usize);
        assert_eq!(t[0], "up", "a link that was down came up first");
    }

    #[test]
    fn excluded_and_nameless_links_are_not_watched() {
        let mut f = Fixture::new(LinkTracker::new(NameFilter::default()));
        f.observe(&LinkReading::full(1, "lo", true, 0, 0), 0);
        assert!(f.out.is_empty());
        f.observe(&LinkReading { index: 3, ..LinkReading::default() }, 0);
        assert!(f.out.is_empty());
        assert!(f.tracker.is_empty());
    }

    #[test]
    fn a_resync_forgets_deleted_links_and_counts_the_gap() {
        let mut f = Fixture::new(LinkTracker::default());
        let both = [LinkReading::full(2, "eth0", true, 1, 0), LinkReading::full(3, "eth1", true, 1, 0)];
        f.tracker.resync(&f.ctx, &both, 0, &mut f.out).unwrap();
        assert_eq!(f.tracker.names(), ["eth0", "eth1"]);
        f.out.clear();
        f.tracker.resync(&f.ctx, &[LinkReading::full(2, "eth0", true, 3, 2)], 1, &mut f.out).unwrap();
        assert_eq!(f.tracker.names(), ["eth0"]);
        assert_eq!(transitions(&f.table, &f.out), ["down", "up", "down", "up"]);
    }

    #[test]
    fn a_heartbeat_repeats_the_last_state_of_every_link_without_events() {
        let mut f = Fixture::new(LinkTracker::default());
        f.tracker
            .resync(
                &f.ctx,
                &[LinkReading::full(3, "eth1", true, 1, 0), LinkReading::full(2, "eth0", true, 4, 3)],
                0,
                &mut f.out,
            )
            .unwrap();
        // eth0 flaps down: its counters and state move, eth1's do not.
        f.observe(&LinkReading::full(2, "eth0", false, 4, 4), 5);
        f.out.clear();
        f.tracker.heartbeat(9, &mut f.out);
        let got: Vec<(String, String, f64)> = {
            let reg = f.table.read();
            let netdev = |s: &Sample| reg.labels(s.series).get("netdev").unwrap().to_string();
            f.out.iter().map(|s| (netdev(s), reg.metric_name(s.series).to_string(), s.value.as_f64())).collect()
        };
        let row = |netdev: &str, metric: &str, v: f64| (netdev.to_string(), metric.to_string(), v);
        assert_eq!(
            got,
            [
                row("eth0", "link_carrier_down_count", 4.0),
                row("eth0", "link_carrier_up_count", 4.0),
                row("eth0", "link_oper_up", 0.0),
                row("eth1", "link_carrier_down_count", 0.0),
                row("eth1", "link_carrier_up_count", 1.0),
                row("eth1", "link_oper_up", 1.0),
            ]
        );
        assert!(f.out.iter().all(|s| s.ts == 9), "stamped with the beat's time");
        // The same series as the messages', so the engine sees one series per link.
        f.out.clear();
        f.observe(&LinkReading::full(2, "eth0", false, 4, 4), 10);
        let from_message: HashSet<SeriesId> = f.out.iter().map(|s| s.series).collect();
        f.out.clear();
        f.tracker.heartbeat(11, &mut f.out);
        let from_beat: HashSet<SeriesId> = f.out.iter().map(|s| s.series).collect();
        assert!(from_message.is_subset(&from_beat), "{from_message:?} {from_beat:?}");
    }

    #[test]
    fn a_deleted_or_excluded_link_is_not_in_the_heartbeat() {
        let mut f = Fixture::new(LinkTracker::default());
        f.tracker
            .resync(
                &f.ctx,
                &[
                    LinkReading::full(1, "lo", true, 0, 0),
                    LinkReading::full(2, "eth0", true, 1, 0),
                    LinkReading::full(3, "eth1", true, 1, 0),
                ],
                0,
                &mut f.out,
            )
            .unwrap();
        f.tracker.remove(3);
        f.out.clear();
        f.tracker.heartbeat(1, &mut f.out);
        let reg = f.table.read();
        let netdevs: HashSet<String> =
            f.out.iter().map(|s| reg.labels(s.series).get("netdev").unwrap().to_string()).collect();
        assert_eq!(netdevs, HashSet::from(["eth0".to_string()]));
        assert_eq!(f.out.len(), 3);
    }

    #[test]
    fn a_renamed_link_moves_to_new_series() {
        let mut f = Fixture::after(LinkReading::full(2, "eth0", true, 1, 0));
        assert_eq!(f.observe(&LinkReading::full(2, "rail0", false, 1, 1), 1), ["down"]);
        assert_eq!(f.table.read().labels(f.out[0].series).get("netdev"), Some("rail0"));
    }
}
