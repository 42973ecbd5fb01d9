//! The leaves' lossless egress queues, and which way congestion in them
//! travels.
//!
//! A queue fills at the egress that has more arriving than it can send:
//! the leaf port toward a NIC that too many senders target (an incast, or a
//! competing job on the rail), or the leaf's uplink toward the spine. What
//! that queue does is directional:
//!
//! - **ECN marks** the packets *in* it, so the NICs they are going to
//!   receive them marked and send CNPs (`np_cnp_sent`): the receivers of
//!   the congested egress, not its senders.
//! - **PFC pauses** the leaf's ingress ports that feed it, so the NICs
//!   *sending* into it wait (`xmit_wait`, RX pause): upstream, toward the
//!   senders. Their own leaf port may be idle.
//! - **DCQCN** reacts to the marks before the queue reaches the pause
//!   threshold, so how long the senders wait scales with that queue's
//!   marking threshold (Kmin, `green_min_threshold` of the WRED profile
//!   bound to it). Lowering Kmin on another queue changes nothing.

use std::collections::BTreeMap;

use super::ecmp::Routes;
use super::Fabric;
use crate::switch::Model;

/// Default WRED `green_min_threshold` (bytes), against which lowered
/// thresholds are measured.
pub const DEFAULT_KMIN: f64 = 1_048_576.0;

/// The lossless queue the jobs' RoCE traffic uses.
pub const LOSSLESS_QUEUE: usize = 3;
/// The share of a NIC's traffic that crosses the spine when a leaf's uplink
/// is congested (the rest stays on the rail): marks on the uplink reach the
/// other leaves' NICs diluted by it.
pub const CROSS_SHARE: f64 = 0.5;

/// One egress queue: how loaded, and its marking threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Queue {
    /// Arriving over what it can send.
    pub utilisation: f64,
    /// Kmin, bytes.
    pub kmin: f64,
}

impl Queue {
    /// An idle queue with the default threshold.
    pub const IDLE: Queue = Queue { utilisation: 0.0, kmin: DEFAULT_KMIN };

    /// The fraction of time the senders into it wait: DCQCN backs off on
    /// marks before PFC pauses, so a lower threshold means less waiting.
    pub fn pause(&self) -> f64 {
        let u = self.utilisation;
        if u > 1.0 {
            ((u - 1.0) / u) * (self.kmin / DEFAULT_KMIN).clamp(0.05, 1.0)
        } else {
            0.0
        }
    }

    /// The fraction of the packets leaving it that carry a CE mark.
    pub fn marked(&self) -> f64 {
        if self.utilisation > 1.0 {
            (self.utilisation - 1.0).min(1.0)
        } else {
            0.0
        }
    }

    /// Its occupancy in bytes, while it is over-subscribed.
    pub fn occupancy(&self) -> Option<f64> {
        (self.utilisation > 1.0).then(|| self.kmin * self.utilisation.min(2.0))
    }
}

/// Kmin of `port`'s lossless queue on `model`: the `green_min_threshold` of
/// the WRED profile qosorch bound to `QUEUE|<port>|3` (SONiC's default when unbound).
pub fn kmin(model: &Model, port: &str) -> f64 {
    let state = model.read();
    let queue = state.port(port).and_then(|p| p.queues.get(LOSSLESS_QUEUE));
    queue.and_then(|q| q.wred_green_min).unwrap_or(DEFAULT_KMIN)
}

/// Every lossless egress queue of the leaves in one step.
#[derive(Debug, Clone)]
pub struct Egress {
    /// Per NIC, in fabric order: its leaf port's queue toward it.
    pub to_nic: Vec<Queue>,
    /// Per leaf: each uplink's queue toward the spines, in the order of its uplinks: what a
    /// fault on the leaf's uplinks offers them, plus the jobs' flows ECMP put on each.
    pub uplinks: BTreeMap<String, Vec<Queue>>,
    /// Per leaf: what an uplink fault alone (a spine link down, cross-rail traffic) does to
    /// its uplinks, which every NIC of the leaf sends part of its traffic through.
    fault: BTreeMap<String, Queue>,
    /// The jobs' flows between leaves.
    routes: Routes,
}

impl Egress {
    /// The queues, given what each NIC receives (`received`, a fraction of line rate, in
    /// fabric order), the uplinks' offered load and the jobs' flows between leaves.
    pub fn of(fabric: &Fabric, received: &[f64], routes: Routes) -> Egress {
        let to_nic = fabric
            .nics
            .iter()
            .zip(received)
            .map(|(nic, r)| {
                let Some(leaf) = fabric.leaves.get(&nic.switch) else { return Queue::IDLE };
                Queue { utilisation: r / nic.rate.max(0.01), kmin: kmin(&leaf.model, &nic.switch_port) }
            })
            .collect();
        let mut uplinks = BTreeMap::new();
        let mut fault = BTreeMap::new();
        for leaf in fabric.leaves.values() {
            let Some(first) = leaf.uplink() else { continue };
            let load = fabric.uplink_load.get(&leaf.name).copied().unwrap_or(0.0);
            fault.insert(leaf.name.clone(), Queue { utilisation: load, kmin: kmin(&leaf.model, first) });
            let flows = routes.utilisation.get(&leaf.name);
            let queues = leaf
                .uplinks
                .iter()
                .enumerate()
                .map(|(m, port)| {
                    let carried = flows.and_then(|f| f.get(m)).copied().unwrap_or(0.0);
                    Queue { utilisation: load + carried, kmin: kmin(&leaf.model, port) }
                })
                .collect();
            uplinks.insert(leaf.name.clone(), queues);
        }
        Egress { to_nic, uplinks, fault, routes }
    }

    /// The queue of uplink `member` of `leaf`.
    fn member(&self, leaf: &str, member: usize) -> Option<&Queue> {
        self.uplinks.get(leaf).and_then(|q| q.get(member))
    }

    /// How much of the time NIC `i` waits to send: the worst queue it sends into, its
    /// rail-mates' ports on its leaf, its leaf's faulted uplinks, and the uplinks its flows to
    /// other leaves leave by.
    pub fn sender_pause(&self, fabric: &Fabric, i: usize) -> f64 {
        let me = &fabric.nics[i];
        if !me.lit() {
            return 0.0;
        }
        let rail = fabric
            .nics
            .iter()
            .zip(&self.to_nic)
            .enumerate()
            .filter(|(j, (n, _))| *j != i && n.switch == me.switch && n.lit())
            .map(|(_, (_, q))| q.pause())
            .fold(0.0, f64::max);
        let fault = self.fault.get(&me.switch).map(Queue::pause).unwrap_or(0.0);
        let flows = self.routes.out[i].iter().filter_map(|(l, m)| self.member(l, *m)).map(Queue::pause);
        flows.fold(rail.max(fault), f64::max)
    }

    /// The most over-subscribed uplink NIC `i`'s flows leave by (1 when none is): the share of
    /// its traffic that gets through is one over it, as on its own port's queue.
    pub fn route_utilisation(&self, i: usize) -> f64 {
        let worst = self.routes.out[i].iter().filter_map(|(l, m)| self.member(l, *m)).map(|q| q.utilisation);
        worst.fold(1.0, f64::max)
    }

    /// The fraction of the packets to NIC `i` that arrive marked: its own leaf port's queue,
    /// the faulted uplinks of the other leaves of its plane for the share of its traffic that
    /// crossed the spine, and the uplinks its flows from other leaves went through.
    pub fn marked_to(&self, fabric: &Fabric, i: usize) -> f64 {
        let me = &fabric.nics[i];
        let own = self.to_nic[i].marked();
        let crossed = fabric
            .leaves
            .values()
            .filter(|l| l.name != me.switch && l.plane == me.plane)
            .filter_map(|l| self.fault.get(&l.name))
            .map(|q| q.marked() * CROSS_SHARE)
            .fold(0.0, f64::max);
        let flows = self.routes.into[i].iter().filter_map(|(l, m)| self.member(l, *m)).map(Queue::marked);
        flows.fold(own.max(crossed), f64::max)
    }

    /// The occupied queues: (leaf, port, bytes).
    pub fn occupancy(&self, fabric: &Fabric) -> Vec<(String, String, f64)> {
        let mut out: Vec<(String, String, f64)> = fabric
            .nics
            .iter()
            .zip(&self.to_nic)
            .filter_map(|(n, q)| Some((n.switch.clone(), n.switch_port.clone(), q.occupancy()?)))
            .collect();
        for (leaf, queues) in &self.uplinks {
            let Some(ports) = fabric.leaves.get(leaf).map(|l| &l.uplinks) else { continue };
            for (q, port) in queues.iter().zip(ports) {
                if let Some(bytes) = q.occupancy() {
                    out.push((leaf.clone(), port.clone(), bytes));
                }
            }
        }
        out
    }
}
