//! One simulated NIC port: its link state, the impairments on it, and the
//! IB PMA counters the sysfs tree shows for it.

/// The PMA counters of one port, in the units sysfs shows them.
///
/// `port_xmit_data`/`port_rcv_data` count 4-byte words, as the IB spec and
/// mlx5 do; `port_xmit_wait` counts ticks during which the port had data
/// but could not send (the simulator uses one tick per microsecond, so a
/// fully paused port adds 1e6 per second).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// `port_xmit_data`, 4-byte words.
    pub xmit_data: u64,
    /// `port_rcv_data`, 4-byte words.
    pub rcv_data: u64,
    /// `port_xmit_packets`.
    pub xmit_packets: u64,
    /// `port_rcv_packets`.
    pub rcv_packets: u64,
    /// `port_xmit_wait`, ticks (32-bit saturating in sysfs).
    pub xmit_wait: u64,
    /// `symbol_error` (16-bit saturating).
    pub symbol_error: u64,
    /// `link_downed` (8-bit saturating).
    pub link_downed: u64,
    /// `port_rcv_errors` (16-bit saturating).
    pub port_rcv_errors: u64,
}

impl Counters {
    /// The counters as `(sysfs file name, value)`, saturated to the width
    /// the IB spec gives each, as a real HCA shows them.
    pub fn files(&self) -> [(&'static str, u64); 8] {
        [
            ("port_xmit_data", self.xmit_data),
            ("port_rcv_data", self.rcv_data),
            ("port_xmit_packets", self.xmit_packets),
            ("port_rcv_packets", self.rcv_packets),
            ("port_xmit_wait", self.xmit_wait.min(u32::MAX as u64)),
            ("symbol_error", self.symbol_error.min(u16::MAX as u64)),
            ("link_downed", self.link_downed.min(u8::MAX as u64)),
            ("port_rcv_errors", self.port_rcv_errors.min(u16::MAX as u64)),
        ]
    }
}

/// A link flap schedule: the carrier goes down and comes back every
/// `period`, staying down for `down` of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Flap {
    /// Nanoseconds between two losses of carrier.
    pub period: i64,
    /// Nanoseconds the carrier stays down each time.
    pub down: i64,
    /// When the current cycle started (fabric time).
    pub since: i64,
}

/// One NIC port and where it is cabled.
#[derive(Debug, Clone)]
pub struct Nic {
    /// The node.
    pub node: String,
    /// `mlx5_0`, ….
    pub rdma_dev: String,
    /// `eth0`, ….
    pub netdev: String,
    /// Rail (= leaf switch).
    pub rail: u32,
    /// Plane.
    pub plane: u32,
    /// The leaf switch.
    pub switch: String,
    /// The leaf port.
    pub switch_port: String,
    /// Carrier: false while a flap holds the link down.
    pub carrier: bool,
    /// Administratively up; `link.isolate` takes it down.
    pub admin_up: bool,
    /// The leaf port facing it is administratively up (CONFIG_DB
    /// `PORT|<port>` `admin_status`); the switch side of `rail.drain` takes
    /// it down, and the NIC then has no link.
    pub switch_port_up: bool,
    /// The scheduler drained this rail on this node (`rail.drain`).
    pub drained: bool,
    /// Pre-FEC bit error rate of the link.
    pub ber: f64,
    /// Fraction of packets lost on the link.
    pub loss: f64,
    /// Link rate as a fraction of the nominal rate (a degraded link
    /// trained at a lower speed, or lanes down).
    pub rate: f64,
    /// The priority this NIC storms PAUSE frames on, if it does.
    pub storm: Option<u8>,
    /// The flap schedule, if the link flaps.
    pub flap: Option<Flap>,
    /// When the carrier last went down (fabric time).
    pub last_down: Option<i64>,
    /// Load offered to the port in the last step, fraction of line rate.
    pub offered: f64,
    /// Fraction of the last step the port was paused by its leaf.
    pub paused: f64,
    /// Fraction of the offered load delivered in the last step.
    pub delivered: f64,
    /// The counters.
    pub counters: Counters,
}

impl Nic {
    /// Whether the link is lit: carrier, and both ends administratively up.
    pub fn lit(&self) -> bool {
        self.carrier && self.admin_up && self.switch_port_up
    }

    /// Whether the port can carry traffic: lit and not drained.
    pub fn usable(&self) -> bool {
        self.lit() && !self.drained
    }
}
