//! A node's NIC sensors, as the daemon's `rdma_sysfs`, `ethtool` and
//! `netlink_link` sensors write them: RDMA port and driver counters
//! (`{node, rdma_dev, rdma_port, netdev}`), ethtool statistics
//! (`{node, netdev}`, `prio` for per-priority ones), and the carrier
//! counters and transitions (`{node, netdev}`).
//!
//! Counters start where a node's uptime left them, at the widths the driver
//! gives them: IB PMA counters saturate (`link_downed` at 8 bits), mlx5
//! Q-counters wrap at 32 bits, the rest are 64 bits wide. `port_xmit_data` counts 4-byte words, so its bytes are a
//! multiple of 4.

use std::io;

use engine::CounterSpec;

use super::inventory::{netdev, node_name, rdma_dev, RAILS};
use super::noise::{log_uniform, normal, poisson, rng_for, stream, uniform};
use super::series::{Out, Source, Ticker};
use super::state::{bursts_in, World};
use super::world::{Cause, Incident, HEARTBEAT, LINK_BYTES, PHY_BITS};

/// The RDMA counters recorded, and how the sensor reads each.
const RDMA: [(&str, CounterSpec); 8] = [
    ("rdma_port_xmit_data_bytes", CounterSpec::U64),
    ("rdma_port_rcv_data_bytes", CounterSpec::U64),
    ("rdma_link_downed", CounterSpec::saturating(8)),
    ("rdma_rx_write_requests", CounterSpec::U32_WRAP),
    ("rdma_np_cnp_sent", CounterSpec::U64),
    ("rdma_rp_cnp_handled", CounterSpec::U64),
    ("rdma_out_of_sequence", CounterSpec::U32_WRAP),
    ("rdma_packet_seq_err", CounterSpec::U32_WRAP),
];

/// The ethtool counters recorded (all 64 bits); those with a priority are
/// read for priority 3, RoCE's lossless class.
const ETHTOOL: [(&str, bool); 7] = [
    ("ethtool_rx_prio_pause", true),
    ("ethtool_tx_prio_pause", true),
    ("ethtool_rx_prio_pause_duration_us", true),
    ("ethtool_tx_prio_pause_duration_us", true),
    ("ethtool_rx_pcs_symbol_err_phy", false),
    ("ethtool_rx_corrected_bits_phy", false),
    ("ethtool_rx_bits_phy", false),
];

/// Seconds a node has been up, for the counters' starting values.
fn uptime(seed: u64, node: usize) -> f64 {
    uniform(&mut rng_for(seed, stream(20, node, 0, 0)), 1.0, 60.0) * 86400.0
}

/// Link losses since boot of a NIC (the same for every counter of it).
fn past_downs(seed: u64, node: usize, rail: usize) -> f64 {
    rng_for(seed, stream(21, node, rail, 0)).usize(0..=3) as f64
}

fn wrap(spec: CounterSpec, v: f64) -> u64 {
    let v = v.max(0.0) as u64;
    match spec.overflow {
        engine::Overflow::Saturate => v.min(spec.max()),
        engine::Overflow::Wrap if spec.bits < 64 => v & spec.max(),
        engine::Overflow::Wrap => v,
    }
}

struct RdmaNic {
    rail: usize,
    ids: [u32; 8],
    acc: [f64; 8],
    cnp_ratio: f64,
    /// Healthy rates of out-of-sequence packets and NAKs a second: a few
    /// losses and reorderings happen in any fabric.
    healthy: (f64, f64),
    /// Share of the BER NIC's received traffic this NIC sends.
    ber_share: f64,
}

/// The `rdma_sysfs` sensor of one node.
pub(super) struct RdmaSensor {
    node: usize,
    ticker: Ticker,
    last: f64,
    nics: Vec<RdmaNic>,
    msg: f64,
    rng: fastrand::Rng,
    end: f64,
}

impl RdmaSensor {
    /// Node `node`'s sensor, its series registered in `out`.
    pub(super) fn new(w: &World, out: &mut Out, node: usize) -> RdmaSensor {
        let sc = w.sc;
        let mut rng = rng_for(sc.seed, stream(22, node, 0, 0));
        let up = uptime(sc.seed, node);
        let name = node_name(node);
        let ber_nic = match sc.fault.cause {
            Cause::Ber { node, rail, .. } => Some((node, rail)),
            _ => None,
        };
        let nics = (0..RAILS)
            .map(|rail| {
                let (dev, nd) = (rdma_dev(rail), netdev(rail));
                let labels =
                    [("node", name.as_str()), ("rdma_dev", dev.as_str()), ("rdma_port", "1"), ("netdev", nd.as_str())];
                let ids = RDMA.map(|(metric, spec)| out.counter(metric, &labels, spec));
                let bytes = up * uniform(&mut rng, 2e9, 1.5e10);
                let acc = [
                    bytes,
                    bytes * uniform(&mut rng, 0.95, 1.05),
                    past_downs(sc.seed, node, rail),
                    bytes / w.timeline_of(node).1.msg,
                    up * log_uniform(&mut rng, 5.0, 500.0),
                    up * log_uniform(&mut rng, 5.0, 500.0),
                    up * log_uniform(&mut rng, 1e-3, 5e-2),
                    up * log_uniform(&mut rng, 1e-4, 1e-2),
                ];
                let healthy = (log_uniform(&mut rng, 2e-3, 5e-2), log_uniform(&mut rng, 1e-3, 2e-2));
                let ber_share = ber_share(w, (node, rail), ber_nic);
                RdmaNic { rail, ids, acc, cnp_ratio: uniform(&mut rng, 0.3, 0.8), healthy, ber_share }
            })
            .collect();
        let interval = sc.plan.rdma;
        let ticker =
            Ticker::new(interval, uniform(&mut rng, 0.0, interval), 0.003, rng_for(sc.seed, stream(23, node, 0, 0)));
        RdmaSensor { node, ticker, last: 0.0, nics, msg: w.timeline_of(node).1.msg, rng, end: sc.duration }
    }
}

/// The share of `ber_nic`'s received queue pairs that `nic` sends.
fn ber_share(w: &World, nic: (usize, usize), ber_nic: Option<(usize, usize)>) -> f64 {
    let Some(ber_nic) = ber_nic.filter(|b| *b != nic) else { return 0.0 };
    let inbound = w.fabric.inbound.get(&ber_nic).map_or(&[][..], |v| v.as_slice());
    let from = inbound.iter().filter(|&&f| w.fabric.flows[f].from == Some(nic)).count();
    from as f64 / inbound.len().max(1) as f64
}

/// Frames the BER NIC loses over `[a, b]`: uncorrectable codewords that hit
/// a frame, more of them the busier the link.
fn ber_drops(w: &World, a: f64, b: f64) -> f64 {
    let Cause::Ber { node, rail, errors, .. } = w.sc.fault.cause else { return 0.0 };
    let Some((_, dn)) = w.fabric.access(node, rail) else { return 0.0 };
    let busy = (w.dir_bytes(dn, a, b).0 / ((b - a).max(1e-3) * LINK_BYTES)).min(1.0);
    errors * 0.6 * w.fault.integral(a, b) * busy
}

impl Source for RdmaSensor {
    fn next(&self) -> Option<f64> {
        Some(self.ticker.now()).filter(|&t| t <= self.end)
    }

    fn poll(&mut self, w: &World, out: &mut Out) -> io::Result<()> {
        let (a, b) = (self.last, self.ticker.now());
        let drops = ber_drops(w, a, b);
        for nic in &mut self.nics {
            let key = (self.node, nic.rail);
            let Some((up, dn)) = w.fabric.access(self.node, nic.rail) else { continue };
            let live = 1.0 - w.down_share(key, a, b);
            let (tx, tx0) = w.dir_bytes(up, a, b);
            let (rx, rx0) = w.dir_bytes(dn, a, b);
            let rng = &mut self.rng;
            nic.acc[0] += (tx + tx0) * live;
            nic.acc[1] += (rx + rx0) * live;
            nic.acc[2] += w.downs_in(key, a, b) as f64;
            nic.acc[3] += rx * live / self.msg;
            nic.acc[4] += poisson(rng, w.nic_marks(key, true, a, b) * nic.cnp_ratio) as f64;
            nic.acc[5] += poisson(rng, w.nic_marks(key, false, a, b) * nic.cnp_ratio) as f64;
            let own_drops = if w.fault_nic() == Some(key) { drops } else { 0.0 };
            let oos = nic.healthy.0 * (b - a) + bursts_in(w.oos.get(&key), a, b) + own_drops * uniform(rng, 3.0, 10.0);
            nic.acc[6] += poisson(rng, oos) as f64;
            let naks = nic.healthy.1 * (b - a) + bursts_in(w.naks.get(&key), a, b) + drops * nic.ber_share;
            nic.acc[7] += poisson(rng, naks) as f64;
            for (i, (_, spec)) in RDMA.iter().enumerate() {
                let mut v = wrap(*spec, nic.acc[i]);
                if i < 2 {
                    v &= !3;
                }
                out.count(nic.ids[i], b, v)?;
            }
        }
        self.last = b;
        self.ticker.advance();
        Ok(())
    }
}

struct EthNic {
    rail: usize,
    ids: [u32; 7],
    ber_id: u32,
    acc: [f64; 7],
    prev: Option<(u64, u64)>,
    healthy_ber: f64,
}

/// The `ethtool` sensor of one node.
pub(super) struct EthtoolSensor {
    node: usize,
    ticker: Ticker,
    last: f64,
    nics: Vec<EthNic>,
    rng: fastrand::Rng,
    end: f64,
}

impl EthtoolSensor {
    /// Node `node`'s sensor, its series registered in `out`.
    pub(super) fn new(w: &World, out: &mut Out, node: usize) -> EthtoolSensor {
        let sc = w.sc;
        let mut rng = rng_for(sc.seed, stream(24, node, 0, 0));
        let up = uptime(sc.seed, node);
        let name = node_name(node);
        let nics = (0..RAILS)
            .map(|rail| {
                let nd = netdev(rail);
                let ids = ETHTOOL.map(|(metric, prio)| {
                    let mut labels = vec![("node", name.as_str()), ("netdev", nd.as_str())];
                    if prio {
                        labels.push(("prio", "3"));
                    }
                    out.counter(metric, &labels, CounterSpec::U64)
                });
                let ber_id = out.gauge("ethtool_pre_fec_ber", &[("node", name.as_str()), ("netdev", nd.as_str())]);
                let healthy_ber = log_uniform(&mut rng, 5e-9, 2e-7);
                let bits = up * PHY_BITS;
                let pauses = up * log_uniform(&mut rng, 1.0, 200.0);
                let acc = [
                    pauses,
                    pauses * uniform(&mut rng, 0.001, 0.05),
                    pauses * uniform(&mut rng, 20.0, 60.0),
                    pauses * uniform(&mut rng, 0.02, 1.0),
                    up * log_uniform(&mut rng, 1e-7, 1e-5),
                    bits * healthy_ber,
                    bits,
                ];
                EthNic { rail, ids, ber_id, acc, prev: None, healthy_ber }
            })
            .collect();
        let interval = sc.plan.ethtool;
        let ticker =
            Ticker::new(interval, uniform(&mut rng, 0.0, interval), 0.004, rng_for(sc.seed, stream(25, node, 0, 0)));
        EthtoolSensor { node, ticker, last: 0.0, nics, rng, end: sc.duration }
    }
}

/// Pre-FEC BER and uncorrectable symbol errors a second of NIC `nic` over
/// `[a, b]`, beyond its healthy floor: the cause's, and the incidents'.
fn link_errors(w: &World, nic: (usize, usize), a: f64, b: f64) -> (f64, f64) {
    let (mut ber, mut symbols) = (0.0, 0.0);
    if let Cause::Ber { node, rail, ber: fault_ber, errors, .. } = w.sc.fault.cause {
        if (node, rail) == nic {
            let on = w.fault.integral(a, b);
            ber += fault_ber * on / (b - a).max(1e-9);
            symbols += errors * on;
        }
    }
    for (i, inc) in w.sc.incidents.iter().enumerate() {
        if let Incident::Symbols { node, rail, rate, .. } = *inc {
            if (node, rail) == nic {
                let on = w.incidents.get(i).map_or(0.0, |p| p.integral(a, b));
                symbols += rate * on;
                ber += 2e-6 * on / (b - a).max(1e-9);
            }
        }
    }
    (ber, symbols)
}

impl Source for EthtoolSensor {
    fn next(&self) -> Option<f64> {
        Some(self.ticker.now()).filter(|&t| t <= self.end)
    }

    fn poll(&mut self, w: &World, out: &mut Out) -> io::Result<()> {
        let (a, b) = (self.last, self.ticker.now());
        for nic in &mut self.nics {
            let key = (self.node, nic.rail);
            let Some((up, dn)) = w.fabric.access(self.node, nic.rail) else { continue };
            let rng = &mut self.rng;
            let (got, sent) = (w.paused(up, a, b), w.paused(dn, a, b));
            let live = (1.0 - w.down_share(key, a, b)) * (b - a);
            let (ber, symbols) = link_errors(w, key, a, b);
            let bits = PHY_BITS * live;
            nic.acc[0] += poisson(rng, got.frames) as f64;
            nic.acc[1] += poisson(rng, sent.frames) as f64;
            nic.acc[2] += got.seconds * 1e6;
            nic.acc[3] += sent.seconds * 1e6;
            nic.acc[4] += poisson(rng, symbols * (live / (b - a).max(1e-9)) + 1e-6 * (b - a)) as f64;
            // A link's BER wanders with its optics' temperature.
            let wander = (0.15 * normal(rng)).exp();
            nic.acc[5] += poisson(rng, bits * (nic.healthy_ber * wander + ber)) as f64;
            nic.acc[6] += bits;
            for i in 0..ETHTOOL.len() {
                out.count(nic.ids[i], b, nic.acc[i] as u64)?;
            }
            // The sensor derives the pre-FEC BER from two polls in a row.
            let now = (nic.acc[5] as u64, nic.acc[6] as u64);
            if let Some(prev) = nic.prev.filter(|p| now.1 > p.1) {
                out.real(nic.ber_id, b, (now.0 - prev.0) as f64 / (now.1 - prev.1) as f64)?;
            }
            nic.prev = Some(now);
        }
        self.last = b;
        self.ticker.advance();
        Ok(())
    }
}

/// The `netlink_link` sensor of one node: a beat every second, and a message
/// at once for each carrier change.
pub(super) struct NetlinkSensor {
    beat: Ticker,
    /// (time, rail, up after it).
    events: Vec<(f64, usize, bool)>,
    next_event: usize,
    ids: Vec<[u32; 5]>,
    /// Carrier downs since boot, per rail.
    past: Vec<f64>,
    node: usize,
    end: f64,
}

impl NetlinkSensor {
    /// Node `node`'s sensor, its series registered in `out`.
    pub(super) fn new(w: &World, out: &mut Out, node: usize) -> NetlinkSensor {
        let sc = w.sc;
        let mut rng = rng_for(sc.seed, stream(26, node, 0, 0));
        let name = node_name(node);
        let ids = (0..RAILS)
            .map(|rail| {
                let nd = netdev(rail);
                let l = [("node", name.as_str()), ("netdev", nd.as_str())];
                [
                    out.counter("link_carrier_down_count", &l, CounterSpec::U32_WRAP),
                    out.counter("link_carrier_up_count", &l, CounterSpec::U32_WRAP),
                    out.gauge("link_oper_up", &l),
                    out.series("link_transition", &[l[0], l[1], ("to", "down")], engine::SampleKind::Event),
                    out.series("link_transition", &[l[0], l[1], ("to", "up")], engine::SampleKind::Event),
                ]
            })
            .collect();
        let mut events = Vec::new();
        for rail in 0..RAILS {
            for &(down, up) in w.flaps.get(&(node, rail)).into_iter().flatten() {
                // The kernel's message reaches the sensor a few ms later.
                events.push((down + uniform(&mut rng, 0.002, 0.012), rail, false));
                events.push((up + uniform(&mut rng, 0.002, 0.012), rail, true));
            }
        }
        events.sort_by(|a, b| a.0.total_cmp(&b.0));
        let past = (0..RAILS).map(|rail| past_downs(sc.seed, node, rail)).collect();
        let beat =
            Ticker::new(HEARTBEAT, uniform(&mut rng, 0.0, HEARTBEAT), 0.002, rng_for(sc.seed, stream(27, node, 0, 0)));
        NetlinkSensor { beat, events, next_event: 0, ids, past, node, end: sc.duration }
    }

    fn event_due(&self) -> Option<(f64, usize, bool)> {
        self.events.get(self.next_event).copied().filter(|e| e.0 <= self.beat.now())
    }

    fn link(&self, w: &World, out: &mut Out, rail: usize, t: f64) -> io::Result<()> {
        let key = (self.node, rail);
        let downs = self.past[rail] + w.downs_in(key, 0.0, t) as f64;
        let ups = self.past[rail] + 1.0 + w.flaps.get(&key).map_or(0, |s| s.iter().filter(|x| x.1 <= t).count()) as f64;
        let ids = self.ids[rail];
        out.count(ids[0], t, downs as u64)?;
        out.count(ids[1], t, ups as u64)?;
        out.real(ids[2], t, if w.is_up(key, t) { 1.0 } else { 0.0 })
    }
}

impl Source for NetlinkSensor {
    fn next(&self) -> Option<f64> {
        let t = self.event_due().map_or(self.beat.now(), |e| e.0);
        Some(t).filter(|&t| t <= self.end)
    }

    fn poll(&mut self, w: &World, out: &mut Out) -> io::Result<()> {
        if let Some((t, rail, up)) = self.event_due() {
            self.link(w, out, rail, t)?;
            let id = self.ids[rail][if up { 4 } else { 3 }];
            out.real(id, t, if up { 1.0 } else { 0.0 })?;
            self.next_event += 1;
            return Ok(());
        }
        let t = self.beat.now();
        for rail in 0..RAILS {
            self.link(w, out, rail, t)?;
        }
        self.beat.advance();
        Ok(())
    }
}
