//! The switches, as the aggregator's `gnmi` sensor writes them: SONiC's
//! COUNTERS_DB sampled over gNMI (`{switch, port}`, `prio` for PFC counters,
//! `queue` and `prio` for queue counters) and the ports' operational state
//! subscribed ON_CHANGE.
//!
//! SONiC's counters are copies: syncd's flex counters copy the ASIC's port
//! counters into COUNTERS_DB every second and its queue counters (packets,
//! ECN-marked packets, watermarks) every 10 s, each switch at a phase of its
//! own; gNMI sends whatever the copy holds at each sample, so a queue
//! counter repeats for ten samples and then jumps. Broadcom's SAI has no PFC
//! pause-duration counters: it counts pause frames, XON frames
//! (`ON2OFF`) and reads a queue's pause status instead; Mellanox's counts
//! pause time in µs. A switch's own uptime sets its counters' start.
//!
//! To keep a case within its sample budget, spine ports are subscribed
//! without their carrier counter and queue 0 (a spine's links never lose
//! carrier in these cases, and best-effort traffic says nothing here).

use std::io;

use engine::CounterSpec;

use super::inventory::{
    leaf_name, node_port, spine_name, spine_port, unit_of, uplink_port, uplink_spine, RAILS, RAILS_PER_PLANE, SPINES,
    UPLINKS,
};
use super::noise::{log_uniform, normal, poisson, rng_for, stream, uniform};
use super::series::{Out, Source, Ticker};
use super::state::World;
use super::world::{PORT_REFRESH, QUEUE_REFRESH, ROCE_FRAME};

/// Series of a port, in the order they are sampled.
const PFC_RX: usize = 0;
const PFC_TX: usize = 1;
/// Mellanox: rx pause µs; Broadcom: XON frames received.
const ASIC_A: usize = 2;
/// Mellanox: tx pause µs; Broadcom: queue 3's pause status (a gauge).
const ASIC_B: usize = 3;
const TX_BYTES: usize = 4;
const CARRIER: usize = 5;
const Q0_PKTS: usize = 6;
const Q3_PKTS: usize = 7;
const Q3_ECN: usize = 8;
const Q3_WM: usize = 9;
const OPER: usize = 10;
/// An id for a series a port does not record.
const NONE: u32 = u32::MAX;

/// A port to subscribe: its name, the directions it sends and receives on,
/// the NIC at its far end.
struct PortSpec {
    name: String,
    egress: usize,
    ingress: usize,
    nic: Option<(usize, usize)>,
}

struct Port {
    /// The direction this port sends on, and the one it receives.
    egress: usize,
    ingress: usize,
    /// The NIC at its far end (a leaf's node port).
    nic: Option<(usize, usize)>,
    ids: [u32; 11],
    /// Running counts, as the ASIC has them.
    acc: [f64; 9],
    /// What COUNTERS_DB holds: the ASIC's counts at the last refresh.
    copy: [f64; 10],
}

/// One switch's gNMI subscription.
pub(super) struct SwitchSensor {
    ticker: Ticker,
    port_phase: f64,
    queue_phase: f64,
    port_at: f64,
    queue_at: f64,
    ports: Vec<Port>,
    /// Oper-status changes: (time, port, up).
    changes: Vec<(f64, usize, bool)>,
    next_change: usize,
    synced: bool,
    broadcom: bool,
    rng: fastrand::Rng,
    end: f64,
}

/// The recorded switches: every leaf of the job's units and every spine.
pub(super) fn switches(w: &World, out: &mut Out) -> Vec<SwitchSensor> {
    let mut all = Vec::new();
    for &unit in &w.sc.units {
        for rail in 0..RAILS {
            let name = leaf_name(unit, rail);
            let mut ports = Vec::new();
            for k in w.sc.ported().into_iter().filter(|&k| unit_of(k) == unit) {
                if let Some((up, dn)) = w.fabric.access(k, rail) {
                    ports.push(PortSpec { name: node_port(k), egress: dn, ingress: up, nic: Some((k, rail)) });
                }
            }
            for m in 0..UPLINKS {
                let (up, dn) = w.fabric.link(unit, rail, m);
                ports.push(PortSpec { name: uplink_port(m), egress: up, ingress: dn, nic: None });
            }
            all.push(SwitchSensor::new(w, out, &name, all.len(), ports));
        }
    }
    for spine in 0..SPINES {
        let mut ports = Vec::new();
        for &unit in &w.sc.units {
            for r in 0..RAILS_PER_PLANE {
                let rail = (spine / 4) * RAILS_PER_PLANE + r;
                for link in 0..2 {
                    let m = (spine % 4) * 2 + link;
                    debug_assert_eq!(uplink_spine(rail, m), spine);
                    let (up, dn) = w.fabric.link(unit, rail, m);
                    ports.push(PortSpec { name: spine_port(unit, rail, m), egress: dn, ingress: up, nic: None });
                }
            }
        }
        ports.sort_by_key(|p| p.name[8..].parse::<usize>().unwrap_or(0));
        all.push(SwitchSensor::new(w, out, &spine_name(spine), all.len(), ports));
    }
    all
}

impl SwitchSensor {
    fn new(w: &World, out: &mut Out, name: &str, index: usize, ports: Vec<PortSpec>) -> SwitchSensor {
        let mut rng = rng_for(w.sc.seed, stream(40, index, 0, 0));
        let uptime = log_uniform(&mut rng, 10.0, 300.0) * 86400.0;
        let broadcom = w.sc.broadcom;
        let mut changes = Vec::new();
        let ports: Vec<Port> = ports
            .into_iter()
            .enumerate()
            .map(|(i, spec)| {
                for &(down, up) in spec.nic.and_then(|n| w.flaps.get(&n)).into_iter().flatten() {
                    // portsorch sees the port go down and up a little after the NIC.
                    changes.push((down + uniform(&mut rng, 0.01, 0.08), i, false));
                    changes.push((up + uniform(&mut rng, 0.05, 0.4), i, true));
                }
                let spine = name.starts_with("spine");
                new_port(out, name, &spec, (broadcom, spine), uptime, &mut rng)
            })
            .collect();
        changes.sort_by(|a, b| a.0.total_cmp(&b.0));
        let gnmi = w.sc.plan.gnmi;
        let ticker = Ticker::new(gnmi, uniform(&mut rng, 0.0, gnmi), 0.01, rng_for(w.sc.seed, stream(41, index, 0, 0)));
        let (port_phase, queue_phase) = (uniform(&mut rng, 0.0, PORT_REFRESH), uniform(&mut rng, 0.0, QUEUE_REFRESH));
        SwitchSensor {
            ticker,
            port_phase,
            queue_phase,
            port_at: 0.0,
            queue_at: 0.0,
            ports,
            changes,
            next_change: 0,
            synced: false,
            broadcom,
            rng,
            end: w.sc.duration,
        }
    }
}

fn new_port(
    out: &mut Out,
    switch: &str,
    spec: &PortSpec,
    (broadcom, spine): (bool, bool),
    uptime: f64,
    rng: &mut fastrand::Rng,
) -> Port {
    let sp = [("switch", switch), ("port", spec.name.as_str())];
    let pfc = [sp[0], sp[1], ("prio", "3")];
    let q = |queue: &'static str| [sp[0], sp[1], ("queue", queue), ("prio", queue)];
    let c = CounterSpec::U64.refreshed_every((PORT_REFRESH * 1000.0) as u32);
    let (asic_a, asic_b) = if broadcom {
        (out.counter("switch_pfc_on2off_rx_pkts", &pfc, c), out.gauge("switch_pfc_queue_paused", &q("3")))
    } else {
        (
            out.counter("switch_pfc_rx_pause_duration_us", &pfc, c),
            out.counter("switch_pfc_tx_pause_duration_us", &pfc, c),
        )
    };
    let mut ids = [
        out.counter("switch_pfc_rx_pkts", &pfc, c),
        out.counter("switch_pfc_tx_pkts", &pfc, c),
        asic_a,
        asic_b,
        out.counter("switch_port_tx_bytes", &sp, c),
        out.counter("switch_carrier_transitions", &sp, c),
        out.counter("switch_queue_packets", &q("0"), c),
        out.counter("switch_queue_packets", &q("3"), c),
        out.counter("switch_queue_ecn_marked_packets", &q("3"), c),
        out.gauge("switch_queue_watermark_bytes", &q("3")),
        out.gauge("switch_oper_up", &sp),
    ];
    if spine {
        ids[CARRIER] = NONE;
        ids[Q0_PKTS] = NONE;
    }
    let bytes = uptime * log_uniform(rng, 2e9, 2e10);
    let pfc_frames = uptime * log_uniform(rng, 0.5, 80.0);
    let acc = [
        pfc_frames,
        pfc_frames * uniform(rng, 0.5, 3.0),
        if broadcom { pfc_frames * uniform(rng, 0.5, 0.9) } else { pfc_frames * uniform(rng, 20.0, 60.0) },
        pfc_frames * uniform(rng, 20.0, 60.0),
        bytes,
        2.0 * rng.usize(1..=6) as f64,
        uptime * log_uniform(rng, 1e3, 5e4),
        bytes / ROCE_FRAME,
        uptime * log_uniform(rng, 1.0, 300.0),
    ];
    let mut copy = [0.0; 10];
    copy[..9].copy_from_slice(&acc);
    if broadcom {
        copy[ASIC_B] = 0.0;
    }
    Port { egress: spec.egress, ingress: spec.ingress, nic: spec.nic, ids, acc, copy }
}

impl SwitchSensor {
    /// The last flex-counter refresh at or before `t` of a poll of `every`
    /// seconds at `phase`.
    fn refreshed(t: f64, phase: f64, every: f64) -> f64 {
        if t < phase {
            0.0
        } else {
            phase + ((t - phase) / every).floor() * every
        }
    }

    /// The ports' counters as syncd copies them at `at`.
    fn refresh_ports(&mut self, w: &World, at: f64) {
        let (a, b) = (self.port_at, at);
        for p in &mut self.ports {
            let rng = &mut self.rng;
            let live = p.nic.map_or(1.0, |n| 1.0 - w.down_share(n, a, b));
            let (got, sent) = (w.paused(p.egress, a, b), w.paused(p.ingress, a, b));
            let (roce, best_effort) = w.dir_bytes(p.egress, a, b);
            p.acc[PFC_RX] += poisson(rng, got.frames) as f64;
            p.acc[PFC_TX] += poisson(rng, sent.frames) as f64;
            if self.broadcom {
                p.acc[ASIC_A] += poisson(rng, got.xon) as f64;
            } else {
                p.acc[ASIC_A] += got.seconds * 1e6;
                p.acc[ASIC_B] += sent.seconds * 1e6;
            }
            p.acc[TX_BYTES] += (roce + best_effort) * live;
            if let Some(spans) = p.nic.and_then(|n| w.flaps.get(&n)) {
                let edges = spans.iter().flat_map(|s| [s.0, s.1]).filter(|&e| e > a && e <= b).count();
                p.acc[CARRIER] += edges as f64;
            }
            for i in [PFC_RX, PFC_TX, ASIC_A, TX_BYTES, CARRIER] {
                p.copy[i] = p.acc[i];
            }
            p.copy[ASIC_B] = if self.broadcom {
                f64::from(u8::from(rng.f64() < w.pause_duty_at(p.egress, b)))
            } else {
                p.acc[ASIC_B]
            };
        }
        self.port_at = at;
    }

    /// The queues' counters as syncd copies them at `at`; the watermark is
    /// the queue's high-water mark since the last copy (read and cleared).
    fn refresh_queues(&mut self, w: &World, at: f64) {
        let (a, b) = (self.queue_at, at);
        for p in &mut self.ports {
            let rng = &mut self.rng;
            let live = p.nic.map_or(1.0, |n| 1.0 - w.down_share(n, a, b));
            let (roce, best_effort) = w.dir_bytes(p.egress, a, b);
            let packets = roce * live / ROCE_FRAME;
            p.acc[Q0_PKTS] += best_effort * live / 900.0;
            p.acc[Q3_PKTS] += packets;
            p.acc[Q3_ECN] += poisson(rng, packets * w.mark_prob(p.egress, a, b)) as f64;
            let burst = if packets > 0.0 {
                uniform(rng, 6e4, 4.5e5) * (1.0 + 0.3 * normal(rng)).max(0.2)
            } else {
                uniform(rng, 0.0, 2e4)
            };
            let held = w.peak_congestion(p.egress, a, b) * uniform(rng, 2.5e6, 4e6);
            p.copy[Q3_WM] = ((burst + held).min(1.2e7) / 256.0).round() * 256.0;
            for i in [Q0_PKTS, Q3_PKTS, Q3_ECN] {
                p.copy[i] = p.acc[i];
            }
        }
        self.queue_at = at;
    }

    fn change_due(&self) -> Option<(f64, usize, bool)> {
        self.changes.get(self.next_change).copied().filter(|c| c.0 <= self.ticker.now())
    }

    fn sample(&mut self, w: &World, out: &mut Out, t: f64) -> io::Result<()> {
        let port_at = SwitchSensor::refreshed(t, self.port_phase, PORT_REFRESH);
        if port_at > self.port_at {
            self.refresh_ports(w, port_at);
        }
        let queue_at = SwitchSensor::refreshed(t, self.queue_phase, QUEUE_REFRESH);
        if queue_at > self.queue_at {
            self.refresh_queues(w, queue_at);
        }
        for p in &self.ports {
            for i in (0..OPER).filter(|&i| p.ids[i] != NONE) {
                if i == Q3_WM || (i == ASIC_B && self.broadcom) {
                    out.real(p.ids[i], t, p.copy[i])?;
                } else {
                    out.count(p.ids[i], t, p.copy[i] as u64)?;
                }
            }
            if !self.synced {
                // ON_CHANGE: the first update carries the current state.
                let up = p.nic.is_none_or(|n| w.is_up(n, t));
                out.real(p.ids[OPER], t, if up { 1.0 } else { 0.0 })?;
            }
        }
        self.synced = true;
        Ok(())
    }
}

impl Source for SwitchSensor {
    fn next(&self) -> Option<f64> {
        let t = self.change_due().map_or(self.ticker.now(), |c| c.0);
        Some(t).filter(|&t| t <= self.end)
    }

    fn poll(&mut self, w: &World, out: &mut Out) -> io::Result<()> {
        if let Some((t, port, up)) = self.change_due() {
            self.next_change += 1;
            if self.synced {
                out.real(self.ports[port].ids[OPER], t, if up { 1.0 } else { 0.0 })?;
            }
            return Ok(());
        }
        let t = self.ticker.now();
        self.sample(w, out, t)?;
        self.ticker.advance();
        Ok(())
    }
}
