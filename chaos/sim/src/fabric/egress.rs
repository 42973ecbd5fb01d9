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
    /// Per leaf: its uplink's queue toward the spine.
    pub uplink: BTreeMap<String, Queue>,
}

impl Egress {
    /// The queues, given what each NIC receives (`received`, a fraction of
    /// line rate, in fabric order) and the uplinks' offered load.
    pub fn of(fabric: &Fabric, received: &[f64]) -> Egress {
        let to_nic = fabric
            .nics
            .iter()
            .zip(received)
            .map(|(nic, r)| {
                let Some(leaf) = fabric.leaves.get(&nic.switch) else { return Queue::IDLE };
                Queue { utilisation: r / nic.rate.max(0.01), kmin: kmin(&leaf.model, &nic.switch_port) }
            })
            .collect();
        let uplink = fabric
            .leaves
            .values()
            .filter_map(|leaf| {
                let port = leaf.uplink.as_ref()?;
                let load = fabric.uplink_load.get(&leaf.name).copied().unwrap_or(0.0);
                Some((leaf.name.clone(), Queue { utilisation: load, kmin: kmin(&leaf.model, port) }))
            })
            .collect();
        Egress { to_nic, uplink }
    }

    /// How much of the time NIC `i` waits to send: the worst queue it
    /// sends into, its rail-mates' ports on its leaf and the leaf's uplink.
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
        let up = self.uplink.get(&me.switch).map(Queue::pause).unwrap_or(0.0);
        rail.max(up)
    }

    /// The fraction of the packets to NIC `i` that arrive marked: its own
    /// leaf port's queue, and the congested uplinks of the other leaves of
    /// its plane for the share of its traffic that crossed the spine.
    pub fn marked_to(&self, fabric: &Fabric, i: usize) -> f64 {
        let me = &fabric.nics[i];
        let own = self.to_nic[i].marked();
        let crossed = fabric
            .leaves
            .values()
            .filter(|l| l.name != me.switch && l.plane == me.plane)
            .filter_map(|l| self.uplink.get(&l.name))
            .map(|q| q.marked() * CROSS_SHARE)
            .fold(0.0, f64::max);
        own.max(crossed)
    }

    /// The occupied queues: (leaf, port, bytes).
    pub fn occupancy(&self, fabric: &Fabric) -> Vec<(String, String, f64)> {
        let mut out: Vec<(String, String, f64)> = fabric
            .nics
            .iter()
            .zip(&self.to_nic)
            .filter_map(|(n, q)| Some((n.switch.clone(), n.switch_port.clone(), q.occupancy()?)))
            .collect();
        for (leaf, q) in &self.uplink {
            if let (Some(bytes), Some(port)) = (q.occupancy(), fabric.leaves.get(leaf).and_then(|l| l.uplink.clone())) {
                out.push((leaf.clone(), port, bytes));
            }
        }
        out
    }
}
