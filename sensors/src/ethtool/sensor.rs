//! The running `ethtool` sensor.

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine::{
    CounterSpec, HealthState, Labels, Nanos, Sample, SampleKind, Sensor, SensorContext, SensorError, SeriesId,
    SeriesSpec, Value,
};
use tokio::time::MissedTickBehavior;

use super::config::{EthtoolConfig, Filter};
use super::names::map;
use super::source::StatsSource;
use net::ethtool::EthtoolSocket;

/// One interface's statistics layout.
#[derive(Debug, Default)]
struct Iface {
    /// The series of each statistic index, `None` where filtered out.
    series: Vec<Option<SeriesId>>,
    /// Indexes of `rx_corrected_bits_phy` and `rx_bits_phy`, and the BER gauge.
    ber: Option<(usize, usize, SeriesId)>,
    /// The previous (corrected, bits) readings.
    ber_prev: Option<(u64, u64)>,
    values: Vec<u64>,
}

/// Pre-FEC bit error ratio between two (corrected bits, received bits)
/// readings: Δcorrected / Δbits. `None` when no bits arrived, or when a
/// counter went backwards (driver reload): no BER that once rather than a
/// negative or absurd one. Public for the fuzz target `sysfs_ethtool`.
pub fn pre_fec_ber(prev: (u64, u64), now: (u64, u64)) -> Option<f64> {
    if now.0 < prev.0 || now.1 <= prev.1 {
        return None;
    }
    Some((now.0 - prev.0) as f64 / (now.1 - prev.1) as f64)
}

/// Why an interface gave no statistics this poll.
#[derive(Debug)]
enum Problem {
    /// Its driver has no ethtool statistics.
    Unsupported(String),
    /// It does not exist (any more).
    Gone(String),
    /// Another error.
    Io(String),
}

/// Reads ethtool statistics; [`EthtoolPoller::poll`] is one poll.
pub struct EthtoolPoller {
    config: EthtoolConfig,
    filter: Filter,
    ctx: SensorContext,
    source: Option<Box<dyn StatsSource>>,
    ifaces: BTreeMap<String, Iface>,
    polls_since_scan: u32,
    scanned: bool,
    reported: Option<(HealthState, String)>,
}

impl EthtoolPoller {
    /// A poller for `config`, registering through `ctx`. The socket is
    /// opened at the first poll, in the network namespace of the calling
    /// thread.
    pub fn new(config: EthtoolConfig, filter: Filter, ctx: SensorContext) -> EthtoolPoller {
        EthtoolPoller {
            config,
            filter,
            ctx,
            source: None,
            ifaces: BTreeMap::new(),
            polls_since_scan: 0,
            scanned: false,
            reported: None,
        }
    }

    /// A poller reading `source` instead of the ioctls (the chaos runner's
    /// simulated NICs).
    pub fn with_source(
        config: EthtoolConfig,
        filter: Filter,
        ctx: SensorContext,
        source: Box<dyn StatsSource>,
    ) -> EthtoolPoller {
        EthtoolPoller { source: Some(source), ..EthtoolPoller::new(config, filter, ctx) }
    }

    fn targets(&self, source: &dyn StatsSource) -> io::Result<Vec<String>> {
        if !self.config.interfaces.is_empty() {
            return Ok(self.config.interfaces.clone());
        }
        source.interfaces()
    }

    /// Reads the names of `netdev`'s statistics and registers their series.
    fn layout(&self, netdev: &str, names: &[String]) -> Iface {
        let mut iface = Iface { series: Vec::with_capacity(names.len()), ..Iface::default() };
        let mut seen = HashSet::new();
        let (mut corrected, mut bits) = (None, None);
        for (i, name) in names.iter().enumerate() {
            match name.as_str() {
                "rx_corrected_bits_phy" => corrected = Some(i),
                "rx_bits_phy" => bits = Some(i),
                _ => {}
            }
            if !self.filter.keeps(name) {
                iface.series.push(None);
                continue;
            }
            let mapped = map(name);
            let mut labels = Labels::from_pairs([("netdev", netdev)]);
            if let Some(p) = mapped.prio {
                labels.insert("prio", p.to_string());
            }
            // Two names that sanitize to the same series: the first wins.
            if !seen.insert((mapped.metric.clone(), mapped.prio)) {
                iface.series.push(None);
                continue;
            }
            let spec = SeriesSpec { metric: mapped.metric, labels, kind: SampleKind::Counter(CounterSpec::U64) };
            match self.ctx.register(&spec) {
                Ok(id) => iface.series.push(Some(id)),
                Err(error) => {
                    self.ctx.read_failed("series", &error.to_string());
                    iface.series.push(None);
                }
            }
        }
        if let (Some(c), Some(b)) = (corrected, bits) {
            let spec = SeriesSpec {
                metric: "ethtool_pre_fec_ber".into(),
                labels: Labels::from_pairs([("netdev", netdev)]),
                kind: SampleKind::Gauge,
            };
            match self.ctx.register(&spec) {
                Ok(id) => iface.ber = Some((c, b, id)),
                Err(error) => self.ctx.read_failed("series", &error.to_string()),
            }
        }
        iface
    }

    fn read(
        &mut self,
        source: &dyn StatsSource,
        netdev: &str,
        ts: Nanos,
        out: &mut Vec<Sample>,
    ) -> Result<(), Problem> {
        let classify = |e: io::Error| match e.raw_os_error() {
            Some(libc::EOPNOTSUPP) => Problem::Unsupported(format!("{netdev}: no ethtool statistics ({e})")),
            Some(libc::ENODEV) => Problem::Gone(format!("{netdev}: no such interface")),
            _ => Problem::Io(format!("{netdev}: {e}")),
        };
        let count = source.stats_count(netdev).map_err(classify)?;
        if count == 0 {
            return Err(Problem::Unsupported(format!("{netdev}: no ethtool statistics (the driver reports none)")));
        }
        let mut iface = self.ifaces.remove(netdev).unwrap_or_default();
        if iface.series.len() != count {
            let names = source.stat_names(netdev, count).map_err(classify)?;
            iface = self.layout(netdev, &names);
        }
        let result = source.stat_values(netdev, count, &mut iface.values).map_err(classify);
        if result.is_ok() && iface.values.len() == iface.series.len() {
            out.extend(
                iface
                    .series
                    .iter()
                    .zip(&iface.values)
                    .filter_map(|(s, v)| s.map(|series| Sample { series, ts, value: Value::Count(*v) })),
            );
            if let Some((c, b, gauge)) = iface.ber {
                let now = (iface.values[c], iface.values[b]);
                if let Some(ber) = iface.ber_prev.and_then(|prev| pre_fec_ber(prev, now)) {
                    out.push(Sample { series: gauge, ts, value: Value::Real(ber) });
                }
                iface.ber_prev = Some(now);
            }
        } else if result.is_ok() {
            // The driver changed its statistics between the calls: re-read
            // the names at the next poll.
            iface.series.clear();
        }
        self.ifaces.insert(netdev.to_string(), iface);
        result
    }

    /// Reads every interface once, stamping the samples `ts`.
    pub fn poll(&mut self, ts: Nanos) -> Vec<Sample> {
        let start = Instant::now();
        let source = match self.source.take() {
            Some(source) => source,
            None => match EthtoolSocket::open() {
                Ok(socket) => Box::new(socket) as Box<dyn StatsSource>,
                Err(error) => {
                    self.ctx.read_failed("io", &format!("opening an AF_INET socket: {error}"));
                    self.report(HealthState::Unavailable, format!("no socket for ethtool ioctls: {error}"));
                    return Vec::new();
                }
            },
        };
        self.rescan_if_due(source.as_ref());
        self.polls_since_scan += 1;
        let mut samples = Vec::new();
        let (mut read, mut problems) = (0usize, Vec::new());
        let names: Vec<String> = self.ifaces.keys().cloned().collect();
        for netdev in &names {
            match self.read(source.as_ref(), netdev, ts, &mut samples) {
                Ok(()) => read += 1,
                Err(problem) => problems.push(problem),
            }
        }
        self.source = Some(source);
        self.judge(read, &problems, start);
        samples
    }

    /// Lists the interfaces again at the first poll and every
    /// `rescan_every` polls: new ones are read from now on, gone ones
    /// forgotten.
    fn rescan_if_due(&mut self, source: &dyn StatsSource) {
        if !self.scanned || self.polls_since_scan >= self.config.rescan_every {
            match self.targets(source) {
                Ok(targets) => {
                    self.ifaces.retain(|name, _| targets.contains(name));
                    for t in targets {
                        self.ifaces.entry(t).or_default();
                    }
                }
                Err(error) => self.ctx.read_failed("io", &format!("listing interfaces: {error}")),
            }
            self.scanned = true;
            self.polls_since_scan = 0;
        }
    }

    /// Reports the poll: `read` interfaces read, `problems` with the others.
    /// Interfaces listed automatically that have no statistics (a bridge,
    /// a dummy) are not trouble; listed by name, they are.
    fn judge(&mut self, read: usize, problems: &[Problem], start: Instant) {
        let explicit = !self.config.interfaces.is_empty();
        let mut trouble = Vec::new();
        for problem in problems {
            match problem {
                // Listed automatically, an interface without statistics (a
                // bridge, a dummy) is simply not one to read.
                Problem::Unsupported(_) | Problem::Gone(_) if !explicit => {}
                Problem::Unsupported(e) => {
                    self.ctx.read_failed("unsupported", e);
                    trouble.push(e.clone());
                }
                Problem::Gone(e) => {
                    self.ctx.read_failed("gone", e);
                    trouble.push(e.clone());
                }
                Problem::Io(e) => {
                    self.ctx.read_failed("io", e);
                    trouble.push(e.clone());
                }
            }
        }
        if read > 0 {
            self.ctx.read_ok(start.elapsed());
        }
        if read == 0 {
            let detail = if explicit {
                trouble.join("; ")
            } else {
                let all: Vec<&str> = problems
                    .iter()
                    .map(|p| match p {
                        Problem::Unsupported(e) | Problem::Gone(e) | Problem::Io(e) => e.as_str(),
                    })
                    .collect();
                format!("no non-loopback interface with ethtool statistics ({})", all.join("; "))
            };
            self.report(HealthState::Unavailable, detail);
        } else if !trouble.is_empty() {
            self.report(HealthState::Degraded, trouble.join("; "));
        } else {
            self.report(HealthState::Up, format!("{read} interfaces"));
        }
    }

    fn report(&mut self, state: HealthState, detail: String) {
        if self.reported.as_ref().map(|(s, d)| (*s, d.as_str())) != Some((state, detail.as_str())) {
            self.ctx.set_state(state, &detail);
            self.reported = Some((state, detail));
        }
    }
}

impl std::fmt::Debug for EthtoolPoller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EthtoolPoller")
            .field("config", &self.config)
            .field("interfaces", &self.ifaces.keys().collect::<Vec<_>>())
            .field("reported", &self.reported)
            .finish()
    }
}

/// Polls ethtool statistics at a fixed interval.
#[derive(Debug, Clone)]
pub struct EthtoolSensor {
    name: String,
    config: EthtoolConfig,
    filter: Filter,
}

impl EthtoolSensor {
    /// A sensor `name` with validated settings (see [`EthtoolConfig::build`]).
    pub fn new(name: &str, config: EthtoolConfig, filter: Filter) -> EthtoolSensor {
        EthtoolSensor { name: name.to_string(), config, filter }
    }
}

#[async_trait]
impl Sensor for EthtoolSensor {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let mut poller = EthtoolPoller::new(self.config.clone(), self.filter.clone(), ctx.clone());
        let mut tick = tokio::time::interval(Duration::from_millis(self.config.interval_ms));
        tick.set_missed_tick_behavior(MissedTickBehavior::Skip);
        loop {
            if !ctx.next_tick(&mut tick).await {
                return Ok(());
            }
            // The ioctls run here, not on the blocking pool: they are short
            // copies out of the driver, and the socket and interface list
            // belong to this thread's network namespace.
            let samples = poller.poll(engine::time::wall_clock_now());
            if !ctx.send_samples(samples).await? {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pre_fec_ber_is_the_ratio_of_the_increases() {
        assert_eq!(pre_fec_ber((100, 1_000_000_000), (150, 1_000_000_000 + 10_000_000_000)), Some(5e-9));
        assert_eq!(pre_fec_ber((100, 5), (100, 5)), None, "no bits received");
        assert_eq!(pre_fec_ber((100, 5), (10, 50)), None, "corrected bits went backwards");
        assert_eq!(pre_fec_ber((100, 500), (200, 50)), None, "received bits went backwards");
    }
}
