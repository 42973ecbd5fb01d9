//! The rules of thumb that move the fabric's counters, one step at a time.
//! `docs/simulator.md` gives the reasoning behind each; in short:
//!
//! 1. **Traffic.** A job offers `load` of line rate on every NIC of its
//!    nodes. When some rails of a node are unusable (carrier down, isolated,
//!    drained) the node's traffic moves to the others: each carries
//!    `load × total / usable`.
//! 2. **PFC storm.** A storming NIC pauses its leaf port all the time. The
//!    leaf's buffer for that priority fills and it pauses every port that
//!    feeds it (first hop: the other NICs of the rail, 90 % paused, so
//!    `xmit_wait` rises and the leaf counts TX pause on those ports); after
//!    [`SPREAD_HOP`] the spine of the plane is full too and the other rails
//!    of the plane are paused half the time. Once the leaf's watchdog has
//!    declared the queue stormed *and* handles it with `drop` (or `forward`)
//!    — the action the port's watchdog was started with, which an in-place
//!    change of `PFC_WD` does not change — PFC is off for the priority, the
//!    queue no longer honours the pause and the spread stops.
//! 3. **Congestion** has a direction ([`super::egress`]). A leaf egress
//!    queue offered more than its link carries (a competing job on the
//!    rail, an incast onto one NIC, a congested uplink) fills; it marks the
//!    packets going out of it (their receivers send CNPs) and pauses the
//!    NICs sending into it (their `xmit_wait` rises). DCQCN reacts to the
//!    marks before PFC kicks in, so the senders' waiting scales with that
//!    queue's WRED `green_min_threshold` over its default: a lower threshold
//!    on the congested queue, less waiting; on any other queue, no change.
//! 4. **Errors.** Symbol errors are drawn from the BER over the bits on the
//!    wire (the PHY is lit even when idle); a BER above ~1e-8 costs
//!    retransmissions; packet loss costs go-back-N retransmissions (about
//!    20× the loss) and counts `port_rcv_errors`.
//! 5. **Step time** follows the worst NIC a job uses: the collective part
//!    of a step is slowed by the traffic share each remaining rail carries
//!    and by the worst delivered fraction; a link that lost carrier within
//!    [`FLAP_PENALTY`] stalls collectives on RDMA retry timeouts.

use engine::time::{Nanos, MS, SECOND};

use super::ecmp::{skew, Routes};
use super::egress::Egress;
use super::{Fabric, Job, Nic, LINE_BYTES_PER_S};

/// How long an uncontained storm takes to fill the spine and pause the
/// other rails of its plane.
pub const SPREAD_HOP: Nanos = 500 * MS;
/// Pause fraction of the first-hop victims (same leaf).
pub const FIRST_HOP_PAUSE: f64 = 0.9;
/// Pause fraction of the second-hop victims (same plane, through the spine).
pub const SECOND_HOP_PAUSE: f64 = 0.5;
/// How long a carrier loss keeps stalling collectives over the link.
pub const FLAP_PENALTY: Nanos = SECOND;
/// Slowdown of the collective part while a link flaps.
pub const FLAP_STALL: f64 = 4.0;
/// The largest step-time ratio reported (a stalled job).
pub const STALLED: f64 = 20.0;
/// Bytes per packet (RoCE at 4096 MTU).
pub const PACKET_BYTES: f64 = 4096.0;
/// `port_xmit_wait` ticks per second of waiting. The IB spec leaves the
/// tick to the implementation; the simulator takes 4 ns (a 250 MHz port
/// clock), so a port paused all the time counts 2.5e8 a second and
/// saturates its 32 bits in 17 s, as a real one does under a long storm.
pub const XMIT_WAIT_TICKS_PER_S: f64 = 2.5e8;
/// CNPs a notification point sends per ECN-marked packet it receives: one
/// per flow per `np_min_time_between_cnps`, so marks arriving in bursts
/// share a CNP.
pub const CNPS_PER_MARK: f64 = 0.1;
/// The lossless priority the jobs' RoCE traffic uses.
pub const LOSSLESS_PRIO: usize = 3;
/// Microseconds of pause one PAUSE frame asks for, as a switch refreshing
/// its pause every half quanta counts them.
pub const PAUSE_US_PER_FRAME: f64 = 50.0;

/// The probes a scenario's steady-state hypothesis can bound.
pub const PROBES: &[(&str, &str)] = &[
    ("step_time_ratio", "the worst job's step time over its healthy step time"),
    ("paused_fraction", "the largest fraction of time a NIC that is not storming was paused"),
    ("queue_occupancy_bytes", "the largest lossless-queue occupancy on any leaf port"),
    ("unusable_links", "NIC ports that carry no traffic (carrier down, isolated or drained)"),
    ("errored_traffic", "the fraction of the jobs' links that carry traffic with a BER above 1e-12"),
    ("uplink_skew", "the largest ECMP skew of a leaf: its busiest uplink's load over its uplinks' mean (1: even)"),
];

/// The BER above which a link counts as errored: a thousand times a
/// healthy link's.
pub const ERRORED_BER: f64 = 1e-12;

/// Moves `fabric` by `dt`.
pub fn step(fabric: &mut Fabric, dt: Nanos) {
    let now = fabric.now + dt;
    let secs = dt as f64 / SECOND as f64;
    // The order is the physics': links come up or go down first (switch
    // ports, flaps), since that decides which NICs carry traffic; the NICs
    // then move their traffic, reading the switches as the last step left
    // them (watchdog, WRED); the step times read what the NICs delivered;
    // the switches advance last and count what the NICs did.
    switch_ports(fabric);
    flaps(fabric, now);
    carriers(fabric);
    let storms = storms(fabric);
    let nodes = NodeTraffic::of(fabric);
    let received: Vec<f64> = (0..fabric.nics.len()).map(|i| received(fabric, &nodes, i)).collect();
    let offered: Vec<f64> = fabric.nics.iter().map(|nic| nodes.offered(fabric, nic)).collect();
    let routes = Routes::of(fabric, &offered);
    fabric.ecmp_utilisation.clone_from(&routes.utilisation);
    let egress = Egress::of(fabric, &received, routes);
    // NIC by NIC, in order: each draws its errors from the one generator,
    // and the order of the draws is what a seed replays.
    for (i, &offered) in offered.iter().enumerate() {
        let flow = Flow::of(fabric, i, offered, &egress, &storms);
        count_traffic(fabric, i, &flow, secs);
    }
    job_step_times(fabric, &nodes, dt, now);
    switches(fabric, dt, &egress);
    fabric.now = now;
}

/// A storming NIC's leaf, blocked on the NIC's priority.
struct Storm {
    /// The leaf.
    leaf: String,
    /// Its plane (the spine the storm spreads through).
    plane: u32,
    /// The leaf's watchdog has declared the queue stormed and drops instead
    /// of pausing: the storm does not spread.
    contained: bool,
    /// How long the queue has been stormed, by the leaf's clock.
    age: Nanos,
}

/// The storms: which leaves are blocked, contained or not, since when.
fn storms(fabric: &Fabric) -> Vec<Storm> {
    fabric.nics.iter().filter_map(|nic| storm(fabric, nic)).collect()
}

/// The storm `nic` causes at its leaf, if it storms. It is contained when
/// the leaf's watchdog handles it by turning PFC off for the priority: a
/// `drop` or `forward` handler, which the action *in force* decides (the one
/// the port's watchdog was started with; an in-place change of `PFC_WD`
/// does not change it).
fn storm(fabric: &Fabric, nic: &Nic) -> Option<Storm> {
    // A port with no link receives no pause frames: nothing blocks the leaf.
    let prio = nic.storm.filter(|_| nic.phy_up())?;
    let leaf = fabric.leaves.get(&nic.switch)?;
    let state = leaf.model.read();
    let index = state.index(&nic.switch_port);
    let port = index.map(|i| &state.ports[i]);
    let contained = port.is_some_and(|p| !p.pfc_on(prio as usize));
    let queue = port.and_then(|p| p.queues.get(prio as usize));
    let since = queue.and_then(|q| q.storm_since).map(|d| d.as_nanos() as Nanos).unwrap_or(0);
    let age = state.now.as_nanos() as Nanos - since;
    Some(Storm { leaf: nic.switch.clone(), plane: nic.plane, contained, age })
}

/// Per node (by index): its NICs, those usable, and the load its jobs
/// offer. The usable NICs carry the node's load between them.
struct NodeTraffic {
    usable: Vec<usize>,
    total: Vec<usize>,
    load: Vec<f64>,
}

impl NodeTraffic {
    fn of(fabric: &Fabric) -> NodeTraffic {
        let mut usable = vec![0usize; fabric.nodes.len()];
        let mut total = vec![0usize; fabric.nodes.len()];
        for nic in &fabric.nics {
            let ni = node_index(fabric, nic);
            total[ni] += 1;
            if nic.usable() {
                usable[ni] += 1;
            }
        }
        // A node in several jobs offers the heaviest job's load.
        let mut load = vec![0.0f64; fabric.nodes.len()];
        for job in &fabric.jobs {
            for &ni in &job.nodes {
                load[ni] = load[ni].max(job.spec.load);
            }
        }
        NodeTraffic { usable, total, load }
    }

    /// How much more than its own share each usable NIC of node `ni`
    /// carries (total / usable); `None` when none is usable.
    fn share(&self, ni: usize) -> Option<f64> {
        (self.usable[ni] > 0).then(|| self.total[ni] as f64 / self.usable[ni] as f64)
    }

    /// The load `nic` is offered: its node's, spread over the usable NICs
    /// (drained, isolated or down rails carry nothing).
    fn offered(&self, fabric: &Fabric, nic: &Nic) -> f64 {
        let ni = node_index(fabric, nic);
        let share = self.share(ni).unwrap_or(0.0);
        if nic.usable() {
            self.load[ni] * share
        } else {
            0.0
        }
    }
}

/// The index of `nic`'s node in `fabric.nodes`.
fn node_index(fabric: &Fabric, nic: &Nic) -> usize {
    fabric.nodes.iter().position(|n| *n == nic.node).unwrap_or(0)
}

/// What NIC `i` receives, a fraction of line rate: the job's traffic
/// (collectives are symmetric: it receives what it sends), a competing
/// job's on its rail, and an incast onto it. A dark link receives nothing.
fn received(fabric: &Fabric, nodes: &NodeTraffic, i: usize) -> f64 {
    let nic = &fabric.nics[i];
    if !nic.lit() {
        return 0.0;
    }
    let competing = fabric.congestion.get(&nic.rail).copied().unwrap_or(0.0);
    let incast = fabric.incast.get(&i).copied().unwrap_or(0.0);
    nodes.offered(fabric, nic) + competing + incast
}

/// One NIC's traffic in a step.
struct Flow {
    /// Load offered, fraction of line rate.
    offered: f64,
    /// The link's rate, fraction of line rate (never 0).
    capacity: f64,
    /// Fraction of the time paused.
    paused: f64,
    /// Fraction of the offered traffic that gets through.
    delivered: f64,
    /// Fraction of the packets to the NIC that arrive ECN-marked: those
    /// that went through a queue above its marking threshold.
    marked: f64,
}

impl Flow {
    /// NIC `i`'s traffic when offered `offered`: the egress queues it sends
    /// into make it wait, the one toward it marks what it receives, the
    /// storms pause it; errors and loss cost retransmissions.
    fn of(fabric: &Fabric, i: usize, offered: f64, egress: &Egress, storms: &[Storm]) -> Flow {
        let nic = &fabric.nics[i];
        let capacity = nic.rate.max(0.01);
        let paused = storm_spread(nic, storms, egress.sender_pause(fabric, i));
        // Its own port's queue, or an uplink its flows to other leaves share.
        let u = egress.to_nic[i].utilisation.max(egress.route_utilisation(i));
        Flow { offered, capacity, paused, delivered: delivered(nic, paused, u), marked: egress.marked_to(fabric, i) }
    }
}

/// `paused` raised by the uncontained storms that reach `nic`: its own
/// leaf at once, the other leaves of its plane after [`SPREAD_HOP`]. The
/// storming NIC itself and a dark link are not paused by them.
fn storm_spread(nic: &Nic, storms: &[Storm], mut paused: f64) -> f64 {
    if nic.storm.is_some() || !nic.lit() {
        return paused;
    }
    for storm in storms.iter().filter(|s| !s.contained) {
        if storm.leaf == nic.switch {
            paused = paused.max(FIRST_HOP_PAUSE);
        } else if storm.plane == nic.plane && storm.age >= SPREAD_HOP {
            paused = paused.max(SECOND_HOP_PAUSE);
        }
    }
    paused
}

/// The fraction of `nic`'s traffic delivered, paused `paused` of the time
/// at utilisation `u`; nothing while it storms.
fn delivered(nic: &Nic, paused: f64, u: f64) -> f64 {
    if nic.storm.is_some() {
        return 0.0;
    }
    // A frame (32 kbit) hit by an error is lost, and RoCE's go-back-N
    // resends the ~100 frames in flight behind it.
    let ber_cost = (nic.ber * 3.3e6).min(0.95);
    let loss_cost = (nic.loss * 20.0).min(0.95);
    (1.0 - paused) * (1.0 - ber_cost) * (1.0 - loss_cost) * if u > 1.0 { 1.0 / u } else { 1.0 }
}

/// NIC `i`'s state and host counters after `secs` of `flow`; symbol errors
/// and lost packets are drawn from the fabric's generator, in that order.
fn count_traffic(fabric: &mut Fabric, i: usize, flow: &Flow, secs: f64) {
    let nic = &fabric.nics[i];
    let bytes = flow.offered * flow.delivered * flow.capacity.min(1.0) * LINE_BYTES_PER_S * secs;
    let packets = bytes / PACKET_BYTES;
    // The PHY is lit even when idle: symbol errors come from the bits on
    // the wire, not from the traffic.
    let phy_bits = if nic.lit() { LINE_BYTES_PER_S * 8.0 * nic.rate * secs } else { 0.0 };
    let symbol_mean = nic.ber * phy_bits;
    let loss_mean = packets * nic.loss;
    let symbols = poisson(fabric.rng(), symbol_mean);
    let lost = poisson(fabric.rng(), loss_mean);
    let nic = &mut fabric.nics[i];
    nic.offered = flow.offered;
    nic.paused = if flow.offered > 0.0 { flow.paused } else { 0.0 };
    nic.delivered = if flow.offered > 0.0 { flow.delivered } else { 1.0 };
    let c = &mut nic.counters;
    c.xmit_data += (bytes / 4.0) as u64;
    c.rcv_data += (bytes / 4.0) as u64;
    c.xmit_packets += packets as u64;
    c.rcv_packets += packets as u64;
    c.xmit_wait += (nic.paused * secs * XMIT_WAIT_TICKS_PER_S) as u64;
    c.symbol_error += symbols;
    c.port_rcv_errors += lost;
    let marks = (packets * flow.marked) as u64;
    c.np_ecn_marked += marks;
    c.np_cnp_sent += (marks as f64 * CNPS_PER_MARK) as u64;
    count_netdev(nic, bytes, phy_bits, symbols, secs);
}

/// What `nic`'s driver counts in a step of `secs`: the pause it received
/// (the step's paused fraction, on the lossless priority) and the pause it
/// sent (all the time on its storm's priority, while its PHY is up),
/// bytes, and the PHY's bits and errors (one corrected bit per symbol
/// error).
fn count_netdev(nic: &mut Nic, bytes: f64, phy_bits: f64, symbols: u64, secs: f64) {
    let (lit, storm) = (nic.phy_up(), nic.storm);
    let n = &mut nic.netdev_counters;
    let paused_us = nic.paused * secs * 1e6;
    n.rx_pause_us[LOSSLESS_PRIO] += paused_us as u64;
    n.rx_pause[LOSSLESS_PRIO] += (paused_us / PAUSE_US_PER_FRAME) as u64;
    if let (Some(p), true) = (storm, lit) {
        let us = secs * 1e6;
        n.tx_pause_us[p as usize & 7] += us as u64;
        n.tx_pause[p as usize & 7] += (us / PAUSE_US_PER_FRAME) as u64;
    }
    n.tx_bytes += bytes as u64;
    n.rx_bytes += bytes as u64;
    n.rx_bits_phy += phy_bits as u64;
    n.rx_pcs_symbol_err_phy += symbols;
    n.rx_corrected_bits_phy += symbols;
}

/// Each job's pace over its healthy one, and its steps run at that pace.
fn job_step_times(fabric: &mut Fabric, nodes: &NodeTraffic, dt: Nanos, now: Nanos) {
    for j in 0..fabric.jobs.len() {
        let ratio = job_step_ratio(fabric, &fabric.jobs[j], nodes, now);
        let job = &mut fabric.jobs[j];
        job.step_ratio = ratio;
        job.steps.run(dt, now, job.spec.step_seconds * ratio);
    }
}

/// `job`'s step time over its healthy one: its worst node's. The
/// collective part of a step is slowed by the extra traffic each usable
/// NIC carries and by the node's slowest link; a node with no usable NIC
/// stalls the job.
fn job_step_ratio(fabric: &Fabric, job: &Job, nodes: &NodeTraffic, now: Nanos) -> f64 {
    let mut worst: f64 = 1.0;
    for &ni in &job.nodes {
        let node = &fabric.nodes[ni];
        if fabric.cordoned.contains(node) && fabric.gpu_lost.contains(node) {
            // The scheduler moved the job's ranks off the cordoned node.
            continue;
        }
        if fabric.gpu_lost.contains(node) {
            worst = STALLED;
            continue;
        }
        let Some(share) = nodes.share(ni) else {
            worst = STALLED;
            continue;
        };
        let slowest = slowest_link(fabric, &fabric.nodes[ni], now);
        let comm = job.spec.comm_fraction;
        let ratio = (1.0 - comm) + comm * share.max(1.0) * slowest;
        worst = worst.max(ratio);
    }
    worst.min(STALLED)
}

/// How much `node`'s slowest link slows its collectives: the worst
/// delivered fraction of its usable NICs, or a stall on RDMA retry
/// timeouts while a link flaps.
fn slowest_link(fabric: &Fabric, node: &str, now: Nanos) -> f64 {
    let mut slowest: f64 = 1.0;
    for nic in fabric.nics.iter().filter(|n| n.node == node) {
        if nic.usable() {
            slowest = slowest.max(1.0 / nic.delivered.max(1.0 / STALLED));
        }
        let flapping = nic.admin_up && nic.last_down.is_some_and(|t| now - t < FLAP_PENALTY);
        if flapping {
            slowest = slowest.max(FLAP_STALL);
        }
    }
    slowest
}

/// The leaf ports' administrative state, as CONFIG_DB `PORT` holds it
/// (written by gNMI Set, e.g. the switch side of `rail.drain`). A port
/// taken down drops the NIC's link: the host counts one carrier loss, and
/// no collective stalls on it, since a drain moves the traffic off first.
fn switch_ports(fabric: &mut Fabric) {
    for nic in &mut fabric.nics {
        let Some(leaf) = fabric.leaves.get(&nic.switch) else { continue };
        let up = leaf.model.read().port(&nic.switch_port).is_none_or(|p| p.admin_up);
        if nic.switch_port_up && !up && nic.carrier && nic.admin_up {
            nic.counters.link_downed += 1;
        }
        nic.switch_port_up = up;
    }
}

/// The kernel's carrier counters follow the link: a loss of carrier (a
/// flap, the leaf port taken down, the NIC taken down) counts one down, its
/// return one up.
fn carriers(fabric: &mut Fabric) {
    for nic in &mut fabric.nics {
        let lit = nic.lit();
        nic.netdev_counters.carrier(lit);
    }
}

/// Carrier transitions of flapping links.
fn flaps(fabric: &mut Fabric, now: Nanos) {
    for nic in &mut fabric.nics {
        let Some(flap) = nic.flap else { continue };
        if !nic.admin_up {
            // An isolated port has no carrier to lose.
            nic.carrier = false;
            continue;
        }
        let phase = (now - flap.since).rem_euclid(flap.period.max(1));
        // Down during the first `down` of each period.
        let carrier = phase >= flap.down;
        if nic.carrier && !carrier {
            nic.counters.link_downed += 1;
            nic.last_down = Some(now);
        }
        nic.carrier = carrier;
    }
}

/// The leaves and spines: their own clock (storms, watchdog), then what
/// the NICs did to their ports, what the uplinks carried, and the pauses a
/// stormed leaf sends its spine. Per step, a few loops over the NICs and
/// leaves: split by concern, not by speed.
fn switches(fabric: &mut Fabric, dt: Nanos, egress: &Egress) {
    let d = std::time::Duration::from_nanos(dt.max(0) as u64);
    for leaf in fabric.leaves.values() {
        leaf.model.advance(d);
    }
    for spine in fabric.spines.values() {
        spine.model.advance(d);
    }
    nic_ports(fabric, dt, egress);
    uplinks(fabric, dt, egress);
    spine_pauses(fabric, dt);
}

/// Each NIC's leaf port: carrier, the pauses the leaf sends while the NIC
/// waits, bytes, errors, and the egress queue toward the NIC.
fn nic_ports(fabric: &Fabric, dt: Nanos, egress: &Egress) {
    let secs = dt as f64 / SECOND as f64;
    let us = (dt / 1_000).max(0) as u64;
    for (nic, queue) in fabric.nics.iter().zip(&egress.to_nic) {
        let Some(leaf) = fabric.leaves.get(&nic.switch) else { continue };
        let up = nic.lit();
        // What the egress queue toward the NIC marked: its share of the
        // packets that left it.
        let sent = queue.utilisation.min(1.0) * nic.rate * LINE_BYTES_PER_S * secs / PACKET_BYTES;
        let marks = (sent * queue.marked()) as u64;
        let paused_us = (nic.paused * us as f64) as u64;
        let bytes = (nic.delivered * LINE_BYTES_PER_S * dt as f64 / SECOND as f64) as u64;
        let port = nic.switch_port.clone();
        let errors = nic.counters.port_rcv_errors;
        let symbols = nic.counters.symbol_error;
        let occ = queue.occupancy().map(|o| o as u64);
        leaf.model.write(|s| {
            let Some(i) = s.index(&port) else { return };
            if s.ports[i].link_up != up {
                s.set_link(i, up);
            }
            let p = &mut s.ports[i];
            if !up {
                return;
            }
            // The leaf pauses this port (TX pause) as long as the NIC waits.
            p.pfc[LOSSLESS_PRIO].tx_pkts += (paused_us as f64 / PAUSE_US_PER_FRAME) as u64;
            p.pfc[LOSSLESS_PRIO].tx_pause_us += paused_us;
            p.in_octets += bytes / 1000;
            p.in_errors = errors;
            p.fec_symbol_errors = symbols;
            record_queue(&mut p.queues[LOSSLESS_PRIO], occ, marks);
        });
    }
}

/// The uplinks' queues toward the spines: what each sent (its share of the leaf's NIC ports'
/// width), marked and held.
fn uplinks(fabric: &Fabric, dt: Nanos, egress: &Egress) {
    let secs = dt as f64 / SECOND as f64;
    for (name, queues) in &egress.uplinks {
        let Some(leaf) = fabric.leaves.get(name) else { continue };
        let width = fabric.nics.iter().filter(|n| &n.switch == name).count().max(1) as f64;
        let share = width / leaf.uplinks.len().max(1) as f64;
        for (queue, port) in queues.iter().zip(&leaf.uplinks) {
            let bytes = queue.utilisation.min(1.0) * share * LINE_BYTES_PER_S * secs;
            let (occ, marks) = (queue.occupancy().map(|o| o as u64), (bytes / PACKET_BYTES * queue.marked()) as u64);
            leaf.model.write(|s| {
                if let Some(i) = s.index(port) {
                    let p = &mut s.ports[i];
                    p.out_octets += bytes as u64;
                    record_queue(&mut p.queues[LOSSLESS_PRIO], occ, marks);
                }
            });
        }
    }
}

/// A blocked leaf pauses its spine: RX pause on the spine's port to it,
/// TX pause on the leaf's uplink.
fn spine_pauses(fabric: &Fabric, dt: Nanos) {
    let us = (dt / 1_000).max(0) as u64;
    for leaf in fabric.leaves.values() {
        let stormed = fabric.nics.iter().any(|n| n.switch == leaf.name && n.storm.is_some());
        if !stormed {
            continue;
        }
        let victims = fabric.nics.iter().any(|n| n.switch == leaf.name && n.paused >= FIRST_HOP_PAUSE);
        if let (true, Some(spine), Some(rail)) = (victims, fabric.spines.get(&leaf.plane), leaf.rail) {
            let rails: Vec<u32> =
                fabric.leaves.values().filter(|l| l.plane == leaf.plane).filter_map(|l| l.rail).collect();
            let idx = rails.iter().position(|r| *r == rail).unwrap_or(0);
            spine.model.write(|s| {
                if let Some(p) = s.ports.get_mut(idx) {
                    p.pfc[LOSSLESS_PRIO].rx_pause_us += us;
                    p.pfc[LOSSLESS_PRIO].rx_pkts += us / 50;
                }
            });
            for uplink in &leaf.uplinks {
                leaf.model.write(|s| {
                    if let Some(i) = s.index(uplink) {
                        let p = &mut s.ports[i];
                        p.pfc[LOSSLESS_PRIO].tx_pause_us += us;
                        p.pfc[LOSSLESS_PRIO].tx_pkts += us / 50;
                    }
                });
            }
        }
    }
}

/// Counts what an egress queue held (`occupancy`, while full) and marked in
/// a step: current occupancy, its watermark, the ECN-marked packets.
fn record_queue(q: &mut crate::switch::asic::Queue, occupancy: Option<u64>, marks: u64) {
    if let Some(o) = occupancy {
        q.hold(o);
    }
    q.ecn_marked_packets += marks;
}

/// A Poisson draw with mean `mean` (Knuth's method below 30, a rounded
/// normal approximation above): symbol errors and lost packets are rare
/// independent events.
fn poisson(rng: &mut fastrand::Rng, mean: f64) -> u64 {
    if mean <= 0.0 {
        return 0;
    }
    if mean < 30.0 {
        let limit = (-mean).exp();
        let mut k = 0u64;
        let mut p = rng.f64();
        while p > limit {
            k += 1;
            p *= rng.f64();
        }
        return k;
    }
    // Box-Muller.
    let (u1, u2) = (rng.f64().max(f64::MIN_POSITIVE), rng.f64());
    let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
    (mean + z * mean.sqrt()).round().max(0.0) as u64
}

/// The value of probe `name` (one of [`PROBES`]).
pub fn probe(fabric: &Fabric, name: &str) -> Option<f64> {
    match name {
        "step_time_ratio" => Some(fabric.jobs.iter().map(|j| j.step_ratio).fold(1.0, f64::max)),
        "paused_fraction" => {
            Some(fabric.nics.iter().filter(|n| n.storm.is_none()).map(|n| n.paused).fold(0.0, f64::max))
        }
        "queue_occupancy_bytes" => Some(
            fabric
                .leaves
                .values()
                .flat_map(|l| {
                    let state = l.model.read();
                    state.ports.iter().map(|p| p.queues[LOSSLESS_PRIO].occupancy_bytes).collect::<Vec<_>>()
                })
                .max()
                .unwrap_or(0) as f64,
        ),
        "uplink_skew" => Some(fabric.ecmp_utilisation.values().map(|u| skew(u).0).fold(1.0, f64::max)),
        "unusable_links" => Some(fabric.nics.iter().filter(|n| !n.usable()).count() as f64),
        "errored_traffic" => {
            let carrying: Vec<&super::Nic> = fabric.nics.iter().filter(|n| n.usable() && n.offered > 0.0).collect();
            let errored = carrying.iter().filter(|n| n.ber > ERRORED_BER).count();
            Some(if carrying.is_empty() { 0.0 } else { errored as f64 / carrying.len() as f64 })
        }
        _ => None,
    }
}
