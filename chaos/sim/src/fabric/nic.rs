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
    /// `hw_counters/np_cnp_sent`: CNPs this NIC sent as notification point,
    /// for ECN-marked packets it received.
    pub np_cnp_sent: u64,
    /// `hw_counters/np_ecn_marked_roce_packets`: ECN-marked packets received.
    pub np_ecn_marked: u64,
    /// `hw_counters/rp_cnp_handled`: CNPs this NIC handled as reaction point.
    pub rp_cnp_handled: u64,
}

/// What the NIC's driver and the kernel count for the netdev: the ethtool
/// statistics (`ethtool -S`, mlx5 names) and the carrier counters netlink
/// reports. Per-priority arrays are indexed by priority.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NetdevCounters {
    /// `tx_prio<p>_pause`: PAUSE frames sent (the NIC asks its leaf port to stop).
    pub tx_pause: [u64; 8],
    /// `tx_prio<p>_pause_duration`: microseconds the NIC held its leaf port paused.
    pub tx_pause_us: [u64; 8],
    /// `rx_prio<p>_pause`: PAUSE frames received from the leaf port.
    pub rx_pause: [u64; 8],
    /// `rx_prio<p>_pause_duration`: microseconds the leaf port held the NIC paused.
    pub rx_pause_us: [u64; 8],
    /// `rx_bits_phy`: bits the PHY received.
    pub rx_bits_phy: u64,
    /// `rx_corrected_bits_phy`: bits the FEC corrected.
    pub rx_corrected_bits_phy: u64,
    /// `rx_pcs_symbol_err_phy`: symbol errors the PCS counted.
    pub rx_pcs_symbol_err_phy: u64,
    /// `tx_bytes` / `rx_bytes` (`vport` RDMA bytes included).
    pub tx_bytes: u64,
    /// `rx_bytes`.
    pub rx_bytes: u64,
    /// The kernel's `IFLA_CARRIER_UP_COUNT` (32-bit).
    pub carrier_up: u32,
    /// The kernel's `IFLA_CARRIER_DOWN_COUNT` (32-bit).
    pub carrier_down: u32,
    /// The carrier as the kernel last reported it.
    pub carrier_on: bool,
}

impl NetdevCounters {
    /// The names of the ethtool statistics, in the order a mlx5 driver
    /// lists them (a subset: the byte counters, the per-priority pause
    /// counters and the PHY counters the standard rules read).
    pub fn stat_names() -> Vec<String> {
        let mut out = vec!["rx_bytes".to_string(), "tx_bytes".to_string()];
        for p in 0..8 {
            out.push(format!("rx_prio{p}_pause"));
            out.push(format!("rx_prio{p}_pause_duration"));
            out.push(format!("tx_prio{p}_pause"));
            out.push(format!("tx_prio{p}_pause_duration"));
        }
        out.extend(["rx_pcs_symbol_err_phy", "rx_corrected_bits_phy", "rx_bits_phy"].map(String::from));
        out
    }

    /// The values of the statistics of [`Self::stat_names`], in its order,
    /// into `out` (cleared first).
    pub fn stat_values(&self, out: &mut Vec<u64>) {
        out.clear();
        out.extend([self.rx_bytes, self.tx_bytes]);
        for p in 0..8 {
            out.extend([self.rx_pause[p], self.rx_pause_us[p], self.tx_pause[p], self.tx_pause_us[p]]);
        }
        out.extend([self.rx_pcs_symbol_err_phy, self.rx_corrected_bits_phy, self.rx_bits_phy]);
    }

    /// Counts a carrier change to `on` (nothing when it did not change),
    /// as the kernel's `netif_carrier_on`/`off` do; true when it changed.
    pub fn carrier(&mut self, on: bool) -> bool {
        if on == self.carrier_on {
            return false;
        }
        if on {
            self.carrier_up = self.carrier_up.wrapping_add(1);
        } else {
            self.carrier_down = self.carrier_down.wrapping_add(1);
        }
        self.carrier_on = on;
        true
    }
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

    /// The driver counters of `hw_counters`, `(file name, value)`: 64-bit,
    /// as mlx5 shows its congestion counters.
    pub fn hw_files(&self) -> [(&'static str, u64); 3] {
        [
            ("np_cnp_sent", self.np_cnp_sent),
            ("np_ecn_marked_roce_packets", self.np_ecn_marked),
            ("rp_cnp_handled", self.rp_cnp_handled),
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
    /// Its firmware no longer answers: the port stays lit when the host
    /// takes the netdev down (the `wedged_nic` fault).
    pub wedged: bool,
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
    /// The netdev's ethtool and carrier counters.
    pub netdev_counters: NetdevCounters,
}

impl Nic {
    /// Whether the link is lit: carrier, and both ends administratively up.
    pub fn lit(&self) -> bool {
        self.carrier && self.admin_up && self.switch_port_up
    }

    /// Whether the port's PHY is up, whatever the host asked: a wedged NIC
    /// keeps it up after `ip link set down`; the switch side still takes it down.
    pub fn phy_up(&self) -> bool {
        self.carrier && self.switch_port_up && (self.admin_up || self.wedged)
    }

    /// Whether the port can carry traffic: lit and not drained.
    pub fn usable(&self) -> bool {
        self.lit() && !self.drained
    }
}
