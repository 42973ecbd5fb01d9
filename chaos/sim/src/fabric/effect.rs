//! The impairments a fault puts in force on the fabric ([`Effect`]), each
//! on the NIC, rail, switch, node or job it hits.

use engine::time::Nanos;

/// One impairment in effect, on what.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// The NIC's firmware no longer answers its driver: `ip link set down`
    /// takes the netdev down but the port stays lit (as a NIC with SR-IOV
    /// virtual functions in use keeps its physical link), so what it sends
    /// goes on until the switch takes the port down.
    Wedged {
        /// NIC index.
        nic: usize,
    },
    /// The NIC sends PAUSE frames on `prio` without end (a hung host).
    PfcStorm {
        /// NIC index.
        nic: usize,
        /// Priority.
        prio: u8,
    },
    /// The link's pre-FEC BER.
    Ber {
        /// NIC index.
        nic: usize,
        /// Bit error rate.
        ber: f64,
    },
    /// The carrier goes down every `period` for `down`.
    Flap {
        /// NIC index.
        nic: usize,
        /// Nanoseconds between losses.
        period: Nanos,
        /// Nanoseconds down each time.
        down: Nanos,
    },
    /// The link runs at `rate` of its nominal speed.
    Degraded {
        /// NIC index.
        nic: usize,
        /// Fraction of the line rate.
        rate: f64,
    },
    /// A fraction of packets is lost.
    Loss {
        /// NIC index.
        nic: usize,
        /// Fraction lost.
        loss: f64,
    },
    /// Another job offers `load` (fraction of line rate) on every port of a
    /// rail, congesting it.
    Congestion {
        /// The rail.
        rail: u32,
        /// Extra load per port.
        load: f64,
    },
    /// The other NICs of the NIC's rail send it `load` more (a fraction of
    /// its line rate) than the job does: an incast. Its leaf port's egress
    /// queue fills; the senders wait, the NIC receives marked packets.
    Incast {
        /// The receiving NIC's index.
        nic: usize,
        /// Extra load toward it.
        load: f64,
    },
    /// The leaf's uplink toward the spine is offered `load` times what it
    /// can carry (a spine link down, cross-rail traffic): its egress queue
    /// fills; every NIC of the leaf waits, the plane's other NICs receive
    /// marked packets.
    UplinkCongestion {
        /// The leaf.
        switch: String,
        /// Offered over capacity.
        load: f64,
    },
    /// The node's sensors see nothing new: its data goes stale.
    SensorOutage {
        /// The node.
        node: String,
    },
    /// The switch stops answering gNMI.
    GnmiSilent {
        /// The switch.
        switch: String,
    },
    /// A GPU of the node raises XID `xid` (NVML's critical-error event) and
    /// is lost until the fault ends (a GPU reset): the node's jobs stall
    /// until the node is cordoned and the scheduler places them elsewhere.
    GpuXid {
        /// The node.
        node: String,
        /// The GPU's NVML index.
        gpu: u32,
        /// The XID.
        xid: u64,
    },
    /// Job `job` (by index) is relaunched: it creates its communicators afresh from its next
    /// launch's settings, which the launch sets to `qps` queue pairs per connection when
    /// given. A launch has no end: stopping the effect changes nothing.
    JobRelaunch {
        /// The job's index.
        job: usize,
        /// The QPs per connection the launch's environment sets, if it sets them.
        qps: Option<u32>,
    },
    /// A configuration push writes the leaf's ECMP hash fields to CONFIG_DB,
    /// and switchorch applies them as it applies ours. A push has no end.
    HashChange {
        /// The leaf.
        switch: String,
        /// The fields.
        fields: Vec<sonic::hash::HashField>,
    },
}
