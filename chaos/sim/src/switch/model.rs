//! One simulated SONiC switch: its ASIC ([`super::asic`]) and its databases, kept in SONiC's
//! own shape in a [`MemoryStore`] (CONFIG_DB, COUNTERS_DB, APPL_DB, STATE_DB, ASIC_DB, keyed as
//! Redis keys them), with the daemons between the two:
//!
//! - what CONFIG_DB says reaches the ASIC through [`super::orchagent`] (ports, QoS, the PFC
//!   watchdog, counter polls), as each write lands;
//! - what the ASIC counts reaches COUNTERS_DB through syncd's counter groups
//!   ([`super::syncd`]) at their polls, on the model's clock;
//! - the PFC watchdog ([`super::watchdog`]) polls, detects and handles storms on that clock.
//!
//! Time is the caller's: [`Model::advance`] moves the clock, and with it traffic, storms, the
//! watchdog and the counter polls, so tests step through a storm deterministically.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use sonic::gnmi_front::{Backend, BackendError, Entry, MemoryStore, WriteOp};
use sonic::hash::HashField;
use sonic::DatabaseLayout;

use super::asic::{self, Port};
use super::config::ConfigDb;
use super::profile::{Polls, Profile};
use super::watchdog::{Task, Watchdog};
use super::{orchagent, seed, syncd, watchdog};

/// A model operation named something that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    /// No such port.
    #[error("no port {0:?} on this switch")]
    UnknownPort(String),
    /// No such queue.
    #[error("no queue {queue} on {port} (queues are 0..{count})")]
    UnknownQueue {
        /// The port.
        port: String,
        /// The queue.
        queue: usize,
        /// Queues per port.
        count: usize,
    },
    /// No such counter.
    #[error("no counter {0:?}")]
    UnknownCounter(String),
    /// The switch's ASIC family does not report the counter.
    #[error("{asic} does not report {field} (each ASIC family has its own PFC counters)")]
    NotReported {
        /// The counter.
        field: String,
        /// The family.
        asic: String,
    },
    /// A database refused a write.
    #[error("{0}")]
    Store(String),
}

/// The flex counter groups as flexcounterorch last applied them.
#[derive(Debug, Clone)]
pub struct Flex {
    /// The groups' polls.
    pub polls: Polls,
    /// `WRED_ECN_QUEUE`'s poll.
    pub wred: Duration,
    /// Groups whose `FLEX_COUNTER_STATUS` is `disable`.
    pub disabled: BTreeSet<String>,
}

/// The ECMP hash as the ASIC runs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EcmpHashState {
    /// The fields hashed.
    pub fields: Vec<HashField>,
    /// The hash seed (the platform's; SONiC does not set it).
    pub seed: u32,
    /// Writes switchorch refused: a field the ASIC cannot hash on, a field or the entry removed.
    pub refused: u64,
}

/// When each periodic job runs next (model time).
#[derive(Debug, Clone, Default)]
struct Timers {
    pfcwd: Duration,
    port: Duration,
    queue: Duration,
    wred: Duration,
    watermark: Duration,
    second: Duration,
}

/// Everything the model holds; read it through [`Model::read`].
#[derive(Debug)]
pub struct State {
    /// The ports, Ethernet0, Ethernet4, ….
    pub ports: Vec<Port>,
    /// The model's clock: how far [`Model::advance`] has moved it.
    pub now: Duration,
    /// The telemetry server has stopped answering (a hung container): every gNMI call fails
    /// with `UNAVAILABLE`.
    pub silent: bool,
    /// The PFC watchdog.
    pub watchdog: Watchdog,
    /// The counter groups.
    pub flex: Flex,
    /// The ECMP hash in force: the fields switchorch last applied, and the ASIC's seed.
    pub ecmp_hash: EcmpHashState,
    pub(super) store: MemoryStore,
    pub(super) profile: Arc<Profile>,
    by_name: HashMap<String, usize>,
    next: Timers,
}

/// The shortest period a job runs at: a zero poll must not stall the clock.
const MIN_PERIOD: Duration = Duration::from_millis(1);

impl State {
    /// The port called `name`.
    pub fn port(&self, name: &str) -> Option<&Port> {
        self.by_name.get(name).map(|&i| &self.ports[i])
    }

    /// The index of the port called `name`.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    pub(super) fn port_mut(&mut self, name: &str) -> Result<&mut Port, ModelError> {
        let i = self.index(name).ok_or_else(|| ModelError::UnknownPort(name.to_string()))?;
        Ok(&mut self.ports[i])
    }

    /// The object id of queue `q` of the port at `index`.
    pub fn queue_oid(&self, index: usize, q: usize) -> String {
        asic::queue_oid(index, q)
    }

    /// Sets fields of `COUNTERS:<oid>` in COUNTERS_DB.
    pub(super) fn counters_hset<K: Into<String>, V: Into<String>>(
        &self,
        oid: &str,
        fields: impl IntoIterator<Item = (K, V)>,
    ) {
        // The store knows COUNTERS_DB: a write there cannot fail.
        let _ = self.store.hset("COUNTERS_DB", &format!("COUNTERS:{oid}"), fields);
    }

    /// Whether flex counter group `group` polls.
    pub(super) fn group_enabled(&self, group: &str) -> bool {
        !self.flex.disabled.contains(group)
    }

    /// CONFIG_DB as tables.
    pub fn config(&self) -> ConfigDb {
        super::config::tables(self.store.entries_with_prefix("CONFIG_DB", ""))
    }

    /// APPL_DB and STATE_DB `PORT_TABLE` of the port at `index`, as portsorch keeps them.
    pub(super) fn publish_port_state(&self, index: usize) {
        let port = &self.ports[index];
        let _ = self.store.hset("APPL_DB", &format!("PORT_TABLE:{}", port.name), seed::appl_port(port, index));
        let _ = self.store.hset("STATE_DB", &format!("PORT_TABLE|{}", port.name), seed::state_port(port));
    }

    /// The physical link of the port at `index` up or down (a peer, a cable); oper-status
    /// follows unless the port is admin-down, and portsorch records the change.
    pub fn set_link(&mut self, index: usize, up: bool) {
        let port = &mut self.ports[index];
        port.link_up = up;
        if port.update_oper() {
            self.publish_port_state(index);
        }
    }

    fn next_due(&self) -> Duration {
        let n = &self.next;
        [n.pfcwd, n.port, n.queue, n.wred, n.watermark, n.second].into_iter().min().unwrap_or(self.now)
    }

    /// Runs every job due now, in the order a switch's would interleave within one instant:
    /// the watchdog's poll, then the counter groups, then the once-a-second work.
    fn run_due(&mut self) {
        let now = self.now;
        if self.next.pfcwd <= now {
            watchdog::poll(self);
            self.next.pfcwd = now + self.watchdog.poll.max(MIN_PERIOD);
        }
        self.next.port = self.run_group(self.next.port, "PORT", |s| syncd::port_group(s), self.flex.polls.port);
        self.next.queue = self.run_group(self.next.queue, "QUEUE", |s| syncd::queue_group(s), self.flex.polls.queue);
        self.next.wred = self.run_group(self.next.wred, "WRED_ECN_QUEUE", |s| syncd::wred_group(s), self.flex.wred);
        let watermark = self.flex.polls.watermark;
        self.next.watermark = self.run_group(self.next.watermark, "QUEUE_WATERMARK", syncd::watermark_group, watermark);
        if self.next.second <= now {
            watchdog::every_second(self);
            self.next.second = now + Duration::from_secs(1);
        }
    }

    /// Runs flex counter group `group` if it is due (`next`) and enabled; returns when it is due
    /// again.
    fn run_group(&mut self, next: Duration, group: &str, run: fn(&mut State), period: Duration) -> Duration {
        if next > self.now {
            return next;
        }
        if self.group_enabled(group) {
            run(self);
        }
        self.now + period.max(MIN_PERIOD)
    }

    /// Moves the clock by `dt`, stopping at every job due on the way.
    fn advance(&mut self, dt: Duration) {
        let target = self.now + dt;
        loop {
            let next = self.next_due().min(target);
            let step = next.saturating_sub(self.now);
            if !step.is_zero() {
                for i in 0..self.ports.len() {
                    let dropping = self.watchdog.dropping(i);
                    asic::advance_port(&mut self.ports[i], step, dropping);
                }
            }
            self.now = next;
            self.run_due();
            if self.now >= target {
                return;
            }
        }
    }
}

/// A shared handle on one simulated switch. Clones share the switch.
#[derive(Debug, Clone)]
pub struct Model {
    state: Arc<Mutex<State>>,
    store: MemoryStore,
    profile: Arc<Profile>,
    clients: Arc<Clients>,
}

/// What clients of the switch's gNMI service did: tests check who reads a switch and how
/// often it was changed.
#[derive(Debug, Default)]
pub struct Clients {
    /// Subscriptions started (STREAM, POLL and ONCE).
    pub subscribed: AtomicUsize,
    /// Subscriptions running now.
    pub streaming: AtomicUsize,
    /// SetRequests applied.
    pub sets: AtomicUsize,
}

fn new_port(index: usize, profile: &Profile) -> Port {
    let (unicast, multicast) = (usize::from(profile.unicast_queues), usize::from(profile.multicast_queues));
    Port::new(index, profile.aliases.alias(index), unicast, multicast)
}

impl Model {
    /// A switch of `ports` ports (Ethernet0, Ethernet4, …, aliased `etp1`, …) with the image's
    /// defaults on an NVIDIA Spectrum ASIC ([`Profile::default`]).
    pub fn new(ports: usize) -> Model {
        Model::with_profile(ports, Profile::default())
    }

    /// A switch of `ports` ports of kind `profile`: its databases seeded as a booted image
    /// holds them, the watchdog started on every port from `PFC_WD`, the counters polled once.
    pub fn with_profile(ports: usize, profile: Profile) -> Model {
        let ports: Vec<Port> = (0..ports).map(|i| new_port(i, &profile)).collect();
        let store = MemoryStore::new(DatabaseLayout::standard());
        let (appl, state_db, asic_db) = seed::port_tables(&ports, &profile);
        for (db, tables) in [
            ("CONFIG_DB", seed::config_db(&ports, &profile)),
            ("COUNTERS_DB", seed::counters_db(&ports, &profile)),
            ("APPL_DB", appl),
            ("STATE_DB", state_db),
            ("ASIC_DB", asic_db),
        ] {
            // The standard layout has these databases.
            let _ = store.load(db, tables);
        }
        let by_name = ports.iter().enumerate().map(|(i, p)| (p.name.clone(), i)).collect();
        let profile = Arc::new(profile);
        let watchdog = Watchdog { poll: profile.polls.pfcwd, ..Watchdog::default() };
        let flex = Flex { polls: profile.polls, wred: profile.polls.queue, disabled: BTreeSet::new() };
        let ecmp_hash = EcmpHashState { fields: profile.ecmp_hash.clone(), seed: profile.hash_seed, refused: 0 };
        let mut state = State {
            ports,
            now: Duration::ZERO,
            silent: false,
            watchdog,
            flex,
            ecmp_hash,
            store: store.clone(),
            profile: profile.clone(),
            by_name,
            next: Timers::default(),
        };
        // orchagent at start: the watchdog table as it is, then the QoS.
        for (key, fields) in store.entries_with_prefix("CONFIG_DB", "PFC_WD|") {
            watchdog::task(&mut state, &key["PFC_WD|".len()..], Task::Set(fields));
        }
        orchagent::apply_wred(&mut state);
        // syncd's first polls, at time zero; the watchdog's first a poll later.
        state.next.pfcwd = state.watchdog.poll;
        state.run_due();
        Model { state: Arc::new(Mutex::new(state)), store, profile, clients: Arc::new(Clients::default()) }
    }

    /// What kind of switch this is.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The switch's databases, as Redis would hold them.
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }

    /// The databases as sonic-gnmi reaches them: reads from the store, CONFIG_DB writes handed
    /// to orchagent as they land.
    pub fn backend(&self) -> Arc<dyn Backend> {
        Arc::new(SimBackend { model: self.clone() })
    }

    /// Reads the state.
    pub fn read(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Changes the state (the ASIC: what the fabric's physics counts).
    pub fn write<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.read())
    }

    /// What the switch's clients did so far.
    pub fn clients(&self) -> &Clients {
        &self.clients
    }

    /// The port names, in order.
    pub fn port_names(&self) -> Vec<String> {
        self.read().ports.iter().map(|p| p.name.clone()).collect()
    }

    /// The alias of port `name` (`PORT|<name>` `alias`).
    pub fn alias(&self, name: &str) -> Option<String> {
        self.read().port(name).map(|p| p.alias.clone())
    }

    /// Sets a port counter by its SAI name (`SAI_PORT_STAT_PFC_3_RX_PKTS`) and writes it to
    /// COUNTERS_DB at once, as if syncd had just polled: a test's hand on the counter. A
    /// counter the ASIC family does not report is refused.
    pub fn set_port_counter(&self, port: &str, field: &str, value: u64) -> Result<(), ModelError> {
        let family = self.profile.asic;
        if !syncd::reports(family, field) {
            return Err(if asic::is_port_counter(field) {
                ModelError::NotReported { field: field.into(), asic: family.name().into() }
            } else {
                ModelError::UnknownCounter(field.into())
            });
        }
        self.write(|s| {
            let p = s.port_mut(port)?;
            *p.counter_mut(field).ok_or_else(|| ModelError::UnknownCounter(field.into()))? = value;
            let oid = p.oid.clone();
            s.counters_hset(&oid, [(field, value.to_string())]);
            Ok(())
        })
    }

    /// Sets a queue counter by its SAI name and writes it to COUNTERS_DB at once.
    pub fn set_queue_counter(&self, port: &str, queue: usize, field: &str, value: u64) -> Result<(), ModelError> {
        self.write(|s| {
            let index = s.index(port).ok_or_else(|| ModelError::UnknownPort(port.into()))?;
            let count = s.ports[index].queues.len();
            let q = s.ports[index].queues.get_mut(queue).ok_or(ModelError::UnknownQueue {
                port: port.into(),
                queue,
                count,
            })?;
            *q.counter_mut(field).ok_or_else(|| ModelError::UnknownCounter(field.into()))? = value;
            let oid = s.queue_oid(index, queue);
            s.counters_hset(&oid, [(field, value.to_string())]);
            Ok(())
        })
    }

    /// Sets the port's link up or down; oper-status follows unless the port is admin-down,
    /// and APPL_DB's `PORT_TABLE` records it (`oper_status`, `flap_count`).
    pub fn set_oper_up(&self, port: &str, up: bool) -> Result<(), ModelError> {
        self.write(|s| {
            let index = s.index(port).ok_or_else(|| ModelError::UnknownPort(port.into()))?;
            s.set_link(index, up);
            Ok(())
        })
    }

    /// Starts a PFC storm on `port`'s priority `priority`: the peer pauses it without end.
    /// The watchdog declares it once its detector has seen a storm for the detection time.
    pub fn inject_pfc_storm(&self, port: &str, priority: usize) -> Result<(), ModelError> {
        self.storm(port, priority, true)
    }

    /// Ends a PFC storm; the watchdog restores once the frames have stopped for the
    /// restoration time.
    pub fn clear_pfc_storm(&self, port: &str, priority: usize) -> Result<(), ModelError> {
        self.storm(port, priority, false)
    }

    fn storm(&self, port: &str, priority: usize, on: bool) -> Result<(), ModelError> {
        self.write(|s| {
            let now = s.now;
            let p = s.port_mut(port)?;
            let count = asic::PRIORITIES;
            let q = p.queues.get_mut(priority).filter(|_| priority < count).ok_or(ModelError::UnknownQueue {
                port: port.into(),
                queue: priority,
                count,
            })?;
            q.storm_since = if on { Some(q.storm_since.unwrap_or(now)) } else { None };
            Ok(())
        })
    }

    /// Moves the model's clock by `dt`: traffic, storms, the watchdog, the counter polls.
    pub fn advance(&self, dt: Duration) {
        self.write(|s| s.advance(dt));
    }

    /// The model's clock.
    pub fn now(&self) -> Duration {
        self.read().now
    }

    /// A CONFIG_DB entry (`PFC_WD`, `Ethernet0`), if it exists.
    pub fn config_entry(&self, table: &str, key: &str) -> Option<Entry> {
        self.store.get("CONFIG_DB", &format!("{table}|{key}"))
    }

    /// CONFIG_DB as tables.
    pub fn config(&self) -> ConfigDb {
        self.read().config()
    }

    /// `HSET` of a CONFIG_DB entry's fields, as `sonic-db-cli CONFIG_DB hset` would: no
    /// validation, and orchagent sees it as any write.
    pub fn set_config<K: Into<String>, V: Into<String>>(
        &self,
        table: &str,
        key: &str,
        fields: impl IntoIterator<Item = (K, V)>,
    ) -> Result<(), ModelError> {
        let fields: Entry = fields.into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        self.config_write(&[WriteOp::HSet { key: format!("{table}|{key}"), fields }])
    }

    /// `HDEL` of fields of a CONFIG_DB entry.
    pub fn delete_config_fields(&self, table: &str, key: &str, fields: &[&str]) -> Result<(), ModelError> {
        let fields = fields.iter().map(|f| f.to_string()).collect();
        self.config_write(&[WriteOp::HDel { key: format!("{table}|{key}"), fields }])
    }

    /// `DEL` of a CONFIG_DB entry.
    pub fn delete_config(&self, table: &str, key: &str) -> Result<(), ModelError> {
        self.config_write(&[WriteOp::Del { key: format!("{table}|{key}") }])
    }

    /// Reboots the switch without `config save`: CONFIG_DB back to what it booted with, which
    /// orchagent applies as it would at start (every entry deleted, then written as seeded, so
    /// the watchdog restarts with the saved values).
    pub fn reboot(&self) -> Result<(), ModelError> {
        let seed = {
            let s = self.read();
            seed::config_db(&s.ports, &s.profile)
        };
        let keys = self.store.keys_now("CONFIG_DB", "*").map_err(|e| ModelError::Store(e.to_string()))?;
        let mut ops: Vec<WriteOp> = keys.into_iter().map(|key| WriteOp::Del { key }).collect();
        ops.extend(seed.into_iter().map(|(key, fields)| WriteOp::HSet { key, fields }));
        self.config_write(&ops)
    }

    fn config_write(&self, ops: &[WriteOp]) -> Result<(), ModelError> {
        self.store.write_now("CONFIG_DB", ops).map_err(|e| ModelError::Store(e.to_string()))?;
        self.write(|s| orchagent::config_written(s, ops));
        Ok(())
    }

    /// A COUNTERS_DB hash by its Redis key (`COUNTERS:oid:0x…`).
    pub fn counters(&self, key: &str) -> Option<Entry> {
        self.store.get("COUNTERS_DB", key)
    }

    /// The COUNTERS_DB hash of port `name`, found through `COUNTERS_PORT_NAME_MAP`.
    pub fn port_counters(&self, name: &str) -> Option<Entry> {
        let oid = self.store.get("COUNTERS_DB", "COUNTERS_PORT_NAME_MAP")?.get(name)?.clone();
        self.counters(&format!("COUNTERS:{oid}"))
    }

    /// The COUNTERS_DB hash of queue `queue` of port `name`, found through
    /// `COUNTERS_QUEUE_NAME_MAP`.
    pub fn queue_counters(&self, name: &str, queue: usize) -> Option<Entry> {
        let oid = self.store.get("COUNTERS_DB", "COUNTERS_QUEUE_NAME_MAP")?.get(&format!("{name}:{queue}"))?.clone();
        self.counters(&format!("COUNTERS:{oid}"))
    }
}

/// The databases as the gNMI front reaches them: the store, with CONFIG_DB writes applied by
/// orchagent before the write returns.
#[derive(Debug)]
struct SimBackend {
    model: Model,
}

#[async_trait::async_trait]
impl Backend for SimBackend {
    fn database(&self, name: &str) -> Option<sonic::gnmi_front::DbInfo> {
        self.model.store.database(name)
    }

    async fn hgetall(&self, db: &str, key: &str) -> Result<Entry, BackendError> {
        self.model.store.hgetall(db, key).await
    }

    async fn hget(&self, db: &str, key: &str, field: &str) -> Result<Option<String>, BackendError> {
        self.model.store.hget(db, key, field).await
    }

    async fn exists(&self, db: &str, key: &str) -> Result<bool, BackendError> {
        self.model.store.exists(db, key).await
    }

    async fn keys(&self, db: &str, pattern: &str) -> Result<Vec<String>, BackendError> {
        self.model.store.keys_now(db, pattern)
    }

    async fn write(&self, db: &str, ops: &[WriteOp]) -> Result<(), BackendError> {
        self.model.store.write_now(db, ops)?;
        if db == "CONFIG_DB" {
            self.model.write(|s| orchagent::config_written(s, ops));
        }
        Ok(())
    }

    async fn watch(&self, db: &str, pattern: &str) -> Result<sonic::gnmi_front::Watch, BackendError> {
        self.model.store.watch(db, pattern).await
    }
}

/// Advances `model` by `period` every `period` of real time until `shutdown` resolves: a
/// switch that lives on its own, for `rocemend sim switch`.
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
