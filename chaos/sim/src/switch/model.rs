//! The model of one simulated SONiC switch: ports, queues, PFC counters,
//! the PFC watchdog, oper-status, and the CONFIG_DB tables the daemon may
//! change (`PFC_WD`, `WRED_PROFILE`, `PORT`, and `QUEUE`, which binds each
//! lossless queue to its WRED profile: [`config::queue_green_min`]).
//!
//! A port is operationally up when it is administratively up (CONFIG_DB
//! `PORT|<port>` `admin_status`) and its link is up ([`Model::set_oper_up`]
//! plays the link); admin-down forces it down whatever the link does.
//!
//! Every mutation bumps a generation number on a `watch` channel, so
//! ON_CHANGE subscriptions re-read their paths and send what differs.
//! Time is the caller's: [`Model::advance`] moves the model's clock, and
//! with it traffic and any PFC storm, so tests step through a storm
//! deterministically.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::watch;

use super::config::{self, ConfigDb};

/// Queues (and PFC priorities) per port, as on every SONiC platform.
pub const QUEUES: usize = 8;

/// The queue counters each queue has, in the order of [`Queue::stats`].
pub const QUEUE_STATS: [&str; 7] = [
    "SAI_QUEUE_STAT_PACKETS",
    "SAI_QUEUE_STAT_BYTES",
    "SAI_QUEUE_STAT_DROPPED_PACKETS",
    "SAI_QUEUE_STAT_DROPPED_BYTES",
    "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES",
    "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES",
    "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS",
];

/// The per-priority PFC counters of a port, `SAI_PORT_STAT_PFC_<p>_<suffix>`.
pub const PFC_STATS: [&str; 4] = ["RX_PKTS", "TX_PKTS", "RX_PAUSE_DURATION_US", "TX_PAUSE_DURATION_US"];

/// Port counters other than PFC.
pub const PORT_STATS: [&str; 4] = [
    "SAI_PORT_STAT_IF_IN_OCTETS",
    "SAI_PORT_STAT_IF_OUT_OCTETS",
    "SAI_PORT_STAT_IF_IN_ERRORS",
    "SAI_PORT_STAT_IF_IN_FCS_ERRORS",
];

/// Packets per second each queue carries when the model's clock advances:
/// enough that counters visibly move, small enough to stay readable.
const BASELINE_PPS: u64 = 1_000;
/// Bytes per packet of the baseline traffic.
const PACKET_BYTES: u64 = 1_024;
/// PAUSE frames per second a storming peer sends (one per ~quanta refresh
/// at 100G, order of magnitude).
const STORM_PAUSE_PPS: u64 = 20_000;

/// A model operation named something that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// No such port.
    #[error("no port {0:?} on this switch")]
    UnknownPort(String),
    /// No such queue.
    #[error("no queue {queue} on {port} (queues are 0..{QUEUES})")]
    UnknownQueue {
        /// The port.
        port: String,
        /// The queue.
        queue: usize,
    },
    /// No such counter.
    #[error("no counter {0:?}")]
    UnknownCounter(String),
}

/// One queue's counters and watchdog state.
#[derive(Debug, Clone, Default)]
pub struct Queue {
    /// Counters in the order of [`QUEUE_STATS`].
    pub stats: [u64; 7],
    /// When a PFC storm on this queue started (model time), if one runs.
    pub storm_since: Option<Duration>,
    /// When the storm ended (model time), while the watchdog waits to restore.
    pub storm_ended: Option<Duration>,
    /// Whether the watchdog declared the queue stormed.
    pub stormed: bool,
    /// Storms detected.
    pub deadlock_detected: u64,
    /// Storms restored.
    pub deadlock_restored: u64,
    /// Packets the watchdog dropped on transmit.
    pub wd_tx_dropped: u64,
    /// Packets the watchdog dropped on receive.
    pub wd_rx_dropped: u64,
}

/// One port.
#[derive(Debug, Clone)]
pub struct Port {
    /// `EthernetN`.
    pub name: String,
    /// Oper-status: admin-up and the link up.
    pub oper_up: bool,
    /// Administratively up (CONFIG_DB `admin_status`).
    pub admin_up: bool,
    /// The physical link (carrier), as a fault or a peer leaves it.
    pub link_up: bool,
    /// OpenConfig `carrier-transitions`.
    pub carrier_transitions: u64,
    /// [`PORT_STATS`] in order.
    pub stats: [u64; 4],
    /// Per priority: [`PFC_STATS`] in order.
    pub pfc: [[u64; 4]; QUEUES],
    /// The queues.
    pub queues: [Queue; QUEUES],
}

impl Port {
    /// The port's COUNTERS_DB fields (`SAI_PORT_STAT_*`) as SONiC names them.
    pub fn counter_fields(&self) -> Vec<(String, u64)> {
        let mut out = Vec::with_capacity(QUEUES * 4 + 4);
        for (p, row) in self.pfc.iter().enumerate() {
            for (i, suffix) in PFC_STATS.iter().enumerate() {
                out.push((format!("SAI_PORT_STAT_PFC_{p}_{suffix}"), row[i]));
            }
        }
        for (i, name) in PORT_STATS.iter().enumerate() {
            out.push((name.to_string(), self.stats[i]));
        }
        out
    }

    /// One `SAI_PORT_STAT_*` field.
    pub fn counter(&self, field: &str) -> Option<u64> {
        if let Some(i) = PORT_STATS.iter().position(|n| *n == field) {
            return Some(self.stats[i]);
        }
        let rest = field.strip_prefix("SAI_PORT_STAT_PFC_")?;
        let (p, suffix) = rest.split_once('_')?;
        let p: usize = p.parse().ok().filter(|p| *p < QUEUES)?;
        let i = PFC_STATS.iter().position(|s| *s == suffix)?;
        Some(self.pfc[p][i])
    }

    /// Recomputes oper-status from admin-status and the link; a change
    /// counts a carrier transition.
    pub fn update_oper(&mut self) {
        let up = self.admin_up && self.link_up;
        if self.oper_up != up {
            self.oper_up = up;
            self.carrier_transitions += 1;
        }
    }

    fn counter_mut(&mut self, field: &str) -> Option<&mut u64> {
        if let Some(i) = PORT_STATS.iter().position(|n| *n == field) {
            return Some(&mut self.stats[i]);
        }
        let rest = field.strip_prefix("SAI_PORT_STAT_PFC_")?;
        let (p, suffix) = rest.split_once('_')?;
        let p: usize = p.parse().ok().filter(|p| *p < QUEUES)?;
        let i = PFC_STATS.iter().position(|s| *s == suffix)?;
        Some(&mut self.pfc[p][i])
    }
}

/// Everything the model holds; read it through [`Model::read`].
#[derive(Debug)]
pub struct State {
    /// The ports, Ethernet0, Ethernet4, ….
    pub ports: Vec<Port>,
    /// CONFIG_DB.
    pub config: ConfigDb,
    /// The model's clock: how far [`Model::advance`] has moved it.
    pub now: Duration,
    /// The telemetry server has stopped answering (a hung container):
    /// every gNMI call fails with `UNAVAILABLE`.
    pub silent: bool,
}

impl State {
    /// The port called `name`.
    pub fn port(&self, name: &str) -> Option<&Port> {
        // Ports are Ethernet0, 4, 8…: the index is the number over four.
        let i = name.strip_prefix("Ethernet")?.parse::<usize>().ok()?;
        self.ports.get(i / 4).filter(|p| p.name == name)
    }

    /// Applies CONFIG_DB `PORT|<port>` `admin_status` to every port (after a Set).
    pub fn apply_admin_status(&mut self) {
        for port in &mut self.ports {
            let admin = self.config.get("PORT").and_then(|t| t.get(&port.name)).and_then(|e| e.get("admin_status"));
            // SONiC's default for a port without the field is down; this
            // switch's ports all start with it set to up.
            port.admin_up = admin.map(String::as_str) == Some("up");
            port.update_oper();
        }
    }

    fn port_mut(&mut self, name: &str) -> Result<&mut Port, ModelError> {
        let i = name.strip_prefix("Ethernet").and_then(|n| n.parse::<usize>().ok());
        i.and_then(|i| self.ports.get_mut(i / 4))
            .filter(|p| p.name == name)
            .ok_or_else(|| ModelError::UnknownPort(name.to_string()))
    }
}

/// A shared handle on one simulated switch. Clones share the switch.
#[derive(Debug, Clone)]
pub struct Model {
    state: Arc<Mutex<State>>,
    generation: Arc<watch::Sender<u64>>,
    clients: Arc<Clients>,
}

/// What clients of the switch's gNMI service did: tests check who reads a
/// switch and how often it was changed.
#[derive(Debug, Default)]
pub struct Clients {
    /// Subscriptions started (STREAM, POLL and ONCE).
    pub subscribed: AtomicUsize,
    /// Subscriptions running now.
    pub streaming: AtomicUsize,
    /// SetRequests applied.
    pub sets: AtomicUsize,
}

impl Model {
    /// A switch with `ports` ports (Ethernet0, Ethernet4, …), all up, the
    /// default watchdog on every port and the AZURE_LOSSLESS WRED profile,
    /// bound to queues 3 and 4 of every port ([`config::defaults`]).
    pub fn new(ports: usize) -> Model {
        let ports: Vec<Port> = (0..ports)
            .map(|i| Port {
                name: format!("Ethernet{}", i * 4),
                oper_up: true,
                admin_up: true,
                link_up: true,
                carrier_transitions: 0,
                stats: [0; 4],
                pfc: [[0; 4]; QUEUES],
                queues: Default::default(),
            })
            .collect();
        let config = config::defaults(ports.iter().map(|p| p.name.as_str()));
        let state = State { ports, config, now: Duration::ZERO, silent: false };
        Model {
            state: Arc::new(Mutex::new(state)),
            generation: Arc::new(watch::channel(0).0),
            clients: Arc::new(Clients::default()),
        }
    }

    /// Reads the state.
    pub fn read(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes the state and tells the subscribers.
    pub fn write<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let out = f(&mut self.read());
        self.generation.send_modify(|g| *g += 1);
        out
    }

    /// What the switch's clients did so far.
    pub fn clients(&self) -> &Clients {
        &self.clients
    }

    /// A receiver that wakes on every change.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation.subscribe()
    }

    /// The port names, in order.
    pub fn port_names(&self) -> Vec<String> {
        self.read().ports.iter().map(|p| p.name.clone()).collect()
    }

    /// Sets a port counter (`SAI_PORT_STAT_PFC_3_RX_PKTS`, `SAI_PORT_STAT_IF_IN_ERRORS`, …).
    pub fn set_port_counter(&self, port: &str, field: &str, value: u64) -> Result<(), ModelError> {
        self.try_write(|s| {
            let counter =
                s.port_mut(port)?.counter_mut(field).ok_or_else(|| ModelError::UnknownCounter(field.to_string()))?;
            *counter = value;
            Ok(())
        })
    }

    /// Sets a queue counter (one of [`QUEUE_STATS`]).
    pub fn set_queue_counter(&self, port: &str, queue: usize, field: &str, value: u64) -> Result<(), ModelError> {
        let i = QUEUE_STATS.iter().position(|n| *n == field).ok_or_else(|| ModelError::UnknownCounter(field.into()))?;
        self.try_write(|s| {
            let p = s.port_mut(port)?;
            let q = p.queues.get_mut(queue).ok_or(ModelError::UnknownQueue { port: port.into(), queue })?;
            q.stats[i] = value;
            Ok(())
        })
    }

    /// Sets the port's link up or down; oper-status follows unless the port
    /// is admin-down. A change of oper-status counts a carrier transition.
    pub fn set_oper_up(&self, port: &str, up: bool) -> Result<(), ModelError> {
        self.try_write(|s| {
            let p = s.port_mut(port)?;
            p.link_up = up;
            p.update_oper();
            Ok(())
        })
    }

    /// Starts a PFC storm on `port`'s priority `queue`: the peer pauses it
    /// without end. The watchdog declares it after the port's
    /// `detection_time` of model time.
    pub fn inject_pfc_storm(&self, port: &str, queue: usize) -> Result<(), ModelError> {
        self.try_write(|s| {
            let now = s.now;
            let p = s.port_mut(port)?;
            let q = p.queues.get_mut(queue).ok_or(ModelError::UnknownQueue { port: port.into(), queue })?;
            q.storm_since.get_or_insert(now);
            q.storm_ended = None;
            Ok(())
        })
    }

    /// Ends a PFC storm; the watchdog restores after `restoration_time`.
    pub fn clear_pfc_storm(&self, port: &str, queue: usize) -> Result<(), ModelError> {
        self.try_write(|s| {
            let now = s.now;
            let p = s.port_mut(port)?;
            let q = p.queues.get_mut(queue).ok_or(ModelError::UnknownQueue { port: port.into(), queue })?;
            if q.storm_since.take().is_some() {
                q.storm_ended = Some(now);
            }
            Ok(())
        })
    }

    /// Moves the model's clock by `dt`: baseline traffic on every up port,
    /// pause counters of storming queues, and the watchdog.
    pub fn advance(&self, dt: Duration) {
        self.write(|s| {
            s.now += dt;
            let now = s.now;
            let us = dt.as_micros() as u64;
            let pkts = BASELINE_PPS * dt.as_millis() as u64 / 1000;
            for port in &mut s.ports {
                let wd = config::watchdog(&s.config, &port.name);
                if port.oper_up {
                    port.stats[0] += pkts * PACKET_BYTES * QUEUES as u64;
                    port.stats[1] += pkts * PACKET_BYTES * QUEUES as u64;
                }
                for (qi, q) in port.queues.iter_mut().enumerate() {
                    if port.oper_up && q.storm_since.is_none() {
                        q.stats[0] += pkts;
                        q.stats[1] += pkts * PACKET_BYTES;
                        q.stats[5] = 0;
                    }
                    if let Some(since) = q.storm_since {
                        // Paused by the peer: nothing leaves, PAUSE frames arrive.
                        port.pfc[qi][0] += STORM_PAUSE_PPS * dt.as_millis() as u64 / 1000;
                        port.pfc[qi][2] += us;
                        q.stats[5] = q.stats[5].max(PACKET_BYTES * 1024);
                        q.stats[4] = q.stats[4].max(q.stats[5]);
                        if !q.stormed && now.saturating_sub(since) >= wd.detection {
                            q.stormed = true;
                            q.deadlock_detected += 1;
                        }
                        if q.stormed && wd.action == "drop" {
                            q.wd_tx_dropped += pkts;
                            q.stats[2] += pkts;
                            q.stats[3] += pkts * PACKET_BYTES;
                        }
                    } else if let Some(ended) = q.storm_ended {
                        if now.saturating_sub(ended) >= wd.restoration {
                            q.storm_ended = None;
                            if q.stormed {
                                q.stormed = false;
                                q.deadlock_restored += 1;
                            }
                        }
                    }
                }
            }
        });
    }

    /// The model's clock.
    pub fn now(&self) -> Duration {
        self.read().now
    }

    /// A CONFIG_DB entry (`PFC_WD`, `Ethernet0`), if it exists.
    pub fn config_entry(&self, table: &str, key: &str) -> Option<BTreeMap<String, String>> {
        self.read().config.get(table).and_then(|t| t.get(key)).cloned()
    }

    fn try_write<T>(&self, f: impl FnOnce(&mut State) -> Result<T, ModelError>) -> Result<T, ModelError> {
        let out = f(&mut self.read());
        if out.is_ok() {
            self.generation.send_modify(|g| *g += 1);
        }
        out
    }
}

/// Advances `model` by `period` every `period` of real time until
/// `shutdown` resolves: a switch that lives on its own, for `rocemend sim
/// switch`.
pub async fn drive(model: Model, period: Duration, shutdown: impl std::future::Future<Output = ()>) {
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => return,
            _ = tick.tick() => model.advance(period),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_step_by_four() {
        let model = Model::new(3);
        assert_eq!(model.port_names(), ["Ethernet0", "Ethernet4", "Ethernet8"]);
        assert!(model.read().port("Ethernet8").is_some());
        assert!(model.read().port("Ethernet9").is_none());
        assert!(model.read().port("Ethernet12").is_none());
    }

    #[test]
    fn counters_are_set_by_their_sonic_names() {
        let model = Model::new(2);
        model.set_port_counter("Ethernet4", "SAI_PORT_STAT_PFC_3_RX_PKTS", 77).unwrap();
        assert_eq!(model.read().port("Ethernet4").unwrap().counter("SAI_PORT_STAT_PFC_3_RX_PKTS"), Some(77));
        assert_eq!(model.read().port("Ethernet4").unwrap().pfc[3][0], 77);
        assert_eq!(
            model.set_port_counter("Ethernet4", "SAI_PORT_STAT_PFC_8_RX_PKTS", 1),
            Err(ModelError::UnknownCounter("SAI_PORT_STAT_PFC_8_RX_PKTS".into()))
        );
        assert_eq!(model.set_oper_up("Ethernet5", false), Err(ModelError::UnknownPort("Ethernet5".into())));
    }

    #[test]
    fn a_storm_is_detected_after_the_detection_time_and_restored_after_the_restoration_time() {
        let model = Model::new(1);
        model.inject_pfc_storm("Ethernet0", 3).unwrap();
        model.advance(Duration::from_millis(100));
        assert!(!model.read().ports[0].queues[3].stormed, "detection_time is 200 ms");
        model.advance(Duration::from_millis(100));
        let s = model.read().ports[0].clone();
        assert!(s.queues[3].stormed);
        assert_eq!(s.queues[3].deadlock_detected, 1);
        assert_eq!(s.pfc[3][2], 200_000, "paused for 200 ms");
        assert_eq!(s.pfc[4][2], 0);
        model.clear_pfc_storm("Ethernet0", 3).unwrap();
        model.advance(Duration::from_millis(200));
        let q = model.read().ports[0].queues[3].clone();
        assert!(!q.stormed);
        assert_eq!(q.deadlock_restored, 1);
    }

    #[test]
    fn oper_status_changes_count_carrier_transitions() {
        let model = Model::new(1);
        model.set_oper_up("Ethernet0", false).unwrap();
        model.set_oper_up("Ethernet0", false).unwrap();
        model.set_oper_up("Ethernet0", true).unwrap();
        assert_eq!(model.read().ports[0].carrier_transitions, 2);
    }
}
