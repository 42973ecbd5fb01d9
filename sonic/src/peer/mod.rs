//! A SONiC switch for tests: a real `redis-server` holding the databases sonic-utilities tests
//! against (captured from real switches), and an orchagent-like PFC watchdog that runs SONiC's
//! own Lua detectors on it, so an escalation changes what SONiC's own code then does.
//!
//! ```no_run
//! # async fn demo() -> Result<(), sonic::peer::PeerError> {
//! use sonic::peer::{self, ExtraPort, SonicPeer};
//! use sonic::AsicFamily;
//!
//! let Some(prereq) = peer::prerequisites("demo") else { return Ok(()) };
//! let switch = SonicPeer::builder(AsicFamily::Broadcom)
//!     .only_ports(["Ethernet4"])
//!     .add_port(ExtraPort::new("Ethernet1/1").alias("etp1/1").lossless("3,4"))
//!     .config("PFC_WD|GLOBAL", &[("POLL_INTERVAL", "100")])
//!     .start(&prereq)
//!     .await?;
//! switch.start_storm("Ethernet4", 3)?; // the counters Broadcom's detector reads now move
//! # Ok(()) }
//! ```
//!
//! - [`prereq`]: [`prerequisites`], the one place a test skips when `redis-server` or SONiC's
//!   files (`shared/peers/sonic`) are missing;
//! - `server`: the `redis-server` process (unix socket in a temp dir, no persistence,
//!   `notify-keyspace-events AKE`), killed on drop;
//! - `seed`: sonic-utilities' `config_db.json`, `counters_db.json`, `appl_db.json`,
//!   `state_db.json` into CONFIG_DB, COUNTERS_DB, APPL_DB, STATE_DB (numbers from its
//!   `database_config.json`), cut to some ports or with ports added, brought to what a booted
//!   image holds ([`PeerBuilder::image_defaults`]), with the chosen family's counters;
//! - `dataplane`: the counters the detectors read and the storms tests inject
//!   ([`SonicPeer::start_storm`]);
//! - `syncd`: the flex counter groups writing them and running the Lua plugins;
//! - `orchagent`: the watchdog reacting to CONFIG_DB and to the detectors, as its source does.
//!
//! Everything runs on the wall clock (the Lua scripts read Redis's `TIME`): tests wait for
//! effects with deadlines, and [`SonicPeer::wait_polls`] waits for detector runs.

mod dataplane;
mod orchagent;
pub mod prereq;
mod seed;
mod server;
mod syncd;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

pub use prereq::{prerequisites, Prerequisites};
pub use server::RedisServer;

use self::dataplane::{DataPlane, PortModel, QueueModel};
use self::orchagent::{Orchagent, PortInfo};
use self::seed::{Seed, Tables};
use crate::asic::AsicFamily;
use crate::client::{ConfigDb, DbError, Entry, Switch};
use crate::layout::{db as dbs, DatabaseLayout, Instance};
use crate::names::queues::{PORT_NAME_MAP, QUEUE_INDEX_MAP, QUEUE_NAME_MAP, QUEUE_PORT_MAP};
use crate::names::{NameMaps, Queues};
use crate::qos::Qos;
use crate::watchdog::{self, Events};

pub use self::orchagent::DEFAULT_POLL;

/// How long the watchdog may take to process the configuration it starts with (a few hundred
/// keys to clean and a handful of entries: milliseconds).
const STARTUP: Duration = Duration::from_secs(10);

/// A peer that could not be set up or driven.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PeerError {
    /// A file or temp dir.
    #[error("{0}")]
    Io(std::io::Error),
    /// redis-server did not start.
    #[error("starting redis-server: {0}")]
    Start(String),
    /// The seed data could not be read or shaped as asked.
    #[error("seeding the peer: {0}")]
    Seed(String),
    /// The peer's Redis.
    #[error(transparent)]
    Db(#[from] DbError),
    /// The database layout file.
    #[error(transparent)]
    Layout(#[from] crate::layout::LayoutError),
    /// A Lua script of the watchdog is missing or Redis refused it.
    #[error("watchdog script: {0}")]
    Script(String),
    /// The name maps or QoS maps the peer holds could not be read as SONiC's.
    #[error(transparent)]
    Names(#[from] crate::names::NameError),
    /// No such port on the peer.
    #[error("the peer has no port {0}")]
    UnknownPort(String),
    /// A priority outside 0–7.
    #[error("PFC priority {0} is not one of 0-7")]
    BadPriority(u8),
}

/// A port to add to the peer's databases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtraPort {
    /// Its SONiC name (any text, `/` included: `Ethernet1/1`).
    pub name: String,
    /// Its alias (`PORT|<name>` `alias`).
    pub alias: Option<String>,
    /// Its `PORT_QOS_MAP` `pfc_enable` (`3,4`; empty: PFC off, no entry).
    pub pfc_enable: String,
    /// Its `PFC_WD` entry, if any.
    pub pfc_wd: Option<Entry>,
}

impl ExtraPort {
    /// A port named `name`, without alias, PFC or watchdog.
    pub fn new(name: &str) -> Self {
        ExtraPort { name: name.to_string(), alias: None, pfc_enable: String::new(), pfc_wd: None }
    }

    /// With alias `alias`.
    pub fn alias(mut self, alias: &str) -> Self {
        self.alias = Some(alias.to_string());
        self
    }

    /// With PFC on `priorities` (`3,4`).
    pub fn lossless(mut self, priorities: &str) -> Self {
        self.pfc_enable = priorities.to_string();
        self
    }

    /// With a `PFC_WD` entry: `action`, detection and restoration times in ms.
    pub fn watchdog(mut self, action: &str, detection_ms: u32, restoration_ms: u32) -> Self {
        self.pfc_wd = Some(Entry::from([
            ("action".to_string(), action.to_string()),
            ("detection_time".to_string(), detection_ms.to_string()),
            ("restoration_time".to_string(), restoration_ms.to_string()),
        ]));
        self
    }
}

/// How to build a peer ([`SonicPeer::builder`]).
#[derive(Debug, Clone)]
pub struct PeerBuilder {
    family: AsicFamily,
    keep: Option<BTreeSet<String>>,
    extra: Vec<ExtraPort>,
    image_defaults: bool,
    config: Vec<(String, Entry)>,
}

impl PeerBuilder {
    /// Keep only these ports of sonic-utilities' databases (the others are removed from every
    /// database, with their queues and counters).
    pub fn only_ports<S: AsRef<str>>(mut self, ports: impl IntoIterator<Item = S>) -> Self {
        self.keep = Some(ports.into_iter().map(|p| p.as_ref().to_string()).collect());
        self
    }

    /// Add a port.
    pub fn add_port(mut self, port: ExtraPort) -> Self {
        self.extra.push(port);
        self
    }

    /// Whether to bring the mock to what a booted image holds (default: yes): db_migrator's
    /// `pfcwd_sw_enable` beside each `pfc_enable`, and the QoS template's
    /// `MAP_PFC_PRIORITY_TO_QUEUE|AZURE` bound as `pfc_to_queue_map`. Without them orchagent's
    /// watchdog watches no queue of the mock's ports.
    pub fn image_defaults(mut self, on: bool) -> Self {
        self.image_defaults = on;
        self
    }

    /// Set fields of CONFIG_DB key `key` (`PFC_WD|GLOBAL`) before the watchdog starts.
    pub fn config(mut self, key: &str, fields: &[(&str, &str)]) -> Self {
        let entry = fields.iter().map(|(f, v)| (f.to_string(), v.to_string())).collect();
        self.config.push((key.to_string(), entry));
        self
    }

    /// sonic-utilities' databases shaped as asked, written into `switch`'s Redis.
    async fn seed(&self, prereq: &Prerequisites, switch: &Switch) -> Result<Seed, PeerError> {
        let mut seed = Seed::load(prereq)?;
        if let Some(keep) = &self.keep {
            seed.keep_ports(keep)?;
        }
        for (n, port) in self.extra.iter().enumerate() {
            seed.add_port(port, n)?;
        }
        if self.image_defaults {
            seed.image_defaults();
        }
        for (key, fields) in &self.config {
            seed.config.entry(key.clone()).or_default().extend(fields.clone());
        }
        seed.family_counters(self.family);
        seed.asic_state()?;
        for (name, tables) in [
            (dbs::CONFIG_DB, &seed.config),
            (dbs::COUNTERS_DB, &seed.counters),
            (dbs::APPL_DB, &seed.appl),
            (dbs::STATE_DB, &seed.state),
            (dbs::ASIC_DB, &seed.asic),
        ] {
            write_tables(switch, name, tables).await?;
        }
        Ok(seed)
    }

    /// Starts redis-server, seeds it, and starts the watchdog.
    pub async fn start(self, prereq: &Prerequisites) -> Result<SonicPeer, PeerError> {
        let server = RedisServer::start(&prereq.redis_server).await?;
        let instance = Instance {
            name: "redis".into(),
            hostname: "127.0.0.1".into(),
            port: 0,
            unix_socket_path: Some(server.socket().to_path_buf()),
        };
        let layout =
            DatabaseLayout::load(&prereq.utilities_file("database_config.json"))?.with_instance("redis", instance);
        let switch = Switch::new(layout, None);

        let seed = self.seed(prereq, &switch).await?;

        let (plane, ports) = model(&seed.counters);
        let shared = Arc::new(Shared { plane: Mutex::new(plane), errors: Mutex::default(), polls: AtomicU64::new(0) });
        let counters = switch.database(dbs::COUNTERS_DB).await?;
        let detect_sha = load_script(prereq, &counters, &self.family.detector_script()).await?;
        let restore_sha = load_script(prereq, &counters, "pfc_restore.lua").await?;
        let config = switch.database(dbs::CONFIG_DB).await?;
        // Subscribed before the watchdog reads the table, so no change falls between.
        let config_events = config.watch_table(watchdog::PFC_WD).await?;
        let events = Events::subscribe(&counters).await?;
        let orchagent = Orchagent::new(
            self.family,
            (config, counters, switch.database(dbs::APPL_DB).await?, switch.database(dbs::ASIC_DB).await?),
            (detect_sha, restore_sha),
            ports,
            shared.clone(),
        );
        let (stop, shutdown) = oneshot::channel();
        let (ready, started) = oneshot::channel();
        let task = tokio::spawn(orchagent.run(ready, shutdown, config_events, events));
        let peer = SonicPeer { family: self.family, switch, shared, stop: Some(stop), task: Some(task), server };
        // Returned once the watchdog has taken in the configuration it found, as a switch that
        // has booted has.
        match tokio::time::timeout(STARTUP, started).await {
            Ok(Ok(())) => Ok(peer),
            _ => Err(PeerError::Start(format!(
                "the watchdog did not take in CONFIG_DB within {STARTUP:?}: {:?}",
                peer.errors()
            ))),
        }
    }
}

/// Loads SONiC's Lua script `name` into the peer's Redis; its SHA.
async fn load_script(prereq: &Prerequisites, counters: &crate::client::Db, name: &str) -> Result<String, PeerError> {
    let path = prereq.swss_file(name);
    let text = std::fs::read_to_string(&path).map_err(|e| PeerError::Script(format!("{}: {e}", path.display())))?;
    let mut conn = counters.connection();
    redis::cmd("SCRIPT")
        .arg("LOAD")
        .arg(text)
        .query_async::<String>(&mut conn)
        .await
        .map_err(|e| PeerError::Script(format!("{name}: {e}")))
}

/// What the watchdog task and the test's handle share.
#[derive(Debug)]
pub(crate) struct Shared {
    pub plane: Mutex<DataPlane>,
    pub errors: Mutex<Vec<String>>,
    pub polls: AtomicU64,
}

/// A running SONiC switch: its Redis, seeded, and its watchdog. Dropping it stops both.
#[derive(Debug)]
pub struct SonicPeer {
    family: AsicFamily,
    switch: Switch,
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    server: RedisServer,
}

impl SonicPeer {
    /// A peer of ASIC `family`, to configure and [`PeerBuilder::start`].
    pub fn builder(family: AsicFamily) -> PeerBuilder {
        PeerBuilder { family, keep: None, extra: Vec::new(), image_defaults: true, config: Vec::new() }
    }

    /// The switch's Redis, as code under test reaches it.
    pub fn switch(&self) -> &Switch {
        &self.switch
    }

    /// The peer's ASIC family.
    pub fn family(&self) -> AsicFamily {
        self.family
    }

    /// CONFIG_DB, to change the switch's configuration as an operator would.
    pub async fn config_db(&self) -> Result<ConfigDb, DbError> {
        self.switch.config_db().await
    }

    /// Starts a PFC storm on `port`'s `priority` now: at each poll from the next on, the
    /// counters the family's detector reads move as a storm moves them, from this instant
    /// (see `dataplane`).
    pub fn start_storm(&self, port: &str, priority: u8) -> Result<(), PeerError> {
        self.set_storm(port, priority, true)
    }

    /// Ends the storm: the pause frames stop, the queue sends again.
    pub fn stop_storm(&self, port: &str, priority: u8) -> Result<(), PeerError> {
        self.set_storm(port, priority, false)
    }

    /// The link of `port` goes up or down, as portsorch records it (`updatePortOperStatus`,
    /// sonic-swss `portsorch.cpp:10034-10052`): APPL_DB `PORT_TABLE:<port>` `oper_status`, then
    /// `flap_count` one higher (every change, either way) with `last_down_time` or
    /// `last_up_time`, in two writes as portsorch makes them. A status it already has changes
    /// nothing.
    pub async fn set_link(&self, port: &str, up: bool) -> Result<(), PeerError> {
        use redis::AsyncCommands;
        let appl = self.switch.database(dbs::APPL_DB).await?;
        let key = appl.key("PORT_TABLE", port);
        let Some(entry) = appl.hash(&key).await? else { return Err(PeerError::UnknownPort(port.into())) };
        let status = if up { "up" } else { "down" };
        if entry.get("oper_status").map(String::as_str) == Some(status) {
            return Ok(());
        }
        let flaps = entry.get("flap_count").and_then(|n| n.parse::<u64>().ok()).unwrap_or(0) + 1;
        let when = if up { "last_up_time" } else { "last_down_time" };
        // portsorch's format, `%a %b %d %H:%M:%S %Y` in UTC; the day does not matter here.
        let stamp = "Sun Dec 06 08:00:00 2026".to_string();
        let mut conn = appl.connection();
        let write = async {
            conn.hset::<_, _, _, ()>(&key, "oper_status", status).await?;
            conn.hset_multiple::<_, _, _, ()>(&key, &[("flap_count", flaps.to_string()), (when, stamp)]).await
        };
        write.await.map_err(|source| {
            PeerError::Db(DbError::Command { database: dbs::APPL_DB.into(), operation: "HSET", key, source })
        })
    }

    fn set_storm(&self, port: &str, priority: u8, on: bool) -> Result<(), PeerError> {
        if priority > 7 {
            return Err(PeerError::BadPriority(priority));
        }
        let mut plane = self.shared.plane.lock().unwrap_or_else(|e| e.into_inner());
        let model =
            plane.ports.values_mut().find(|p| p.name == port).ok_or_else(|| PeerError::UnknownPort(port.into()))?;
        let since = &mut model.storm_since[usize::from(priority)];
        match (on, *since) {
            (true, None) => *since = Some(std::time::Instant::now()),
            (false, _) => *since = None,
            (true, Some(_)) => {} // already storming: it started then
        }
        Ok(())
    }

    /// How many polls the watchdog has run its detectors in.
    pub fn polls(&self) -> u64 {
        self.shared.polls.load(Ordering::SeqCst)
    }

    /// Waits until the detectors have run `n` more times, or `timeout` passed (returns whether
    /// they did).
    pub async fn wait_polls(&self, n: u64, timeout: Duration) -> bool {
        let target = self.polls() + n;
        let deadline = tokio::time::Instant::now() + timeout;
        while self.polls() < target {
            if tokio::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }

    /// Every hash of database `name` (`CONFIG_DB`), by Redis key: what a test compares before
    /// and after a change to show nothing else changed.
    pub async fn dump(&self, name: &str) -> Result<BTreeMap<String, Entry>, PeerError> {
        let db = self.switch.database(name).await?;
        let keys = db.scan("*").await?;
        let hashes = db.hashes(&keys).await?;
        Ok(keys.into_iter().zip(hashes).filter_map(|(k, h)| Some((k, h?))).collect())
    }

    /// `port`'s watchdog as orchagent recorded it in COUNTERS_DB and APPL_DB, for the queues
    /// its lossless priorities map to: what a test reads to see SONiC's own detector at work.
    pub async fn watchdog(&self, port: &str) -> Result<watchdog::PortState, PeerError> {
        let counters = self.switch.database(dbs::COUNTERS_DB).await?;
        let maps = NameMaps::read(&counters).await?;
        let queues = Queues::from_maps(&maps)?;
        let config = self.switch.config_db().await?;
        let qos = Qos::read(&config).await?;
        let reader = watchdog::WatchdogReader::open(&self.switch).await?;
        let watched = qos.watchdog_queues(&queues, port);
        Ok(reader.port(port, &watched, maps.ports.get(port).map(String::as_str)).await?)
    }

    /// SONiC's own `database_config.json` (from `prereq`) with every instance on this peer's
    /// socket, written into `dir`: what a rocemend running on the switch is pointed at. Its
    /// path.
    pub fn write_database_config(&self, prereq: &Prerequisites, dir: &Path) -> Result<PathBuf, PeerError> {
        let source = prereq.utilities_file("database_config.json");
        let text = std::fs::read_to_string(&source).map_err(PeerError::Io)?;
        let mut json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| PeerError::Seed(format!("{}: {e}", source.display())))?;
        let socket = self.server.socket().display().to_string();
        for instance in json["INSTANCES"].as_object_mut().into_iter().flat_map(|i| i.values_mut()) {
            instance["unix_socket_path"] = serde_json::Value::String(socket.clone());
        }
        let path = dir.join("database_config.json");
        std::fs::write(&path, json.to_string()).map_err(PeerError::Io)?;
        Ok(path)
    }

    /// What went wrong inside the watchdog so far (Redis errors, scripts refused): a test that
    /// expects a healthy switch asserts this is empty.
    pub fn errors(&self) -> Vec<String> {
        self.shared.errors.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for SonicPeer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Writes every key of `tables` into database `name`, in pipelines of bounded size (a few
/// hundred keys each, so no single reply grows large).
async fn write_tables(switch: &Switch, name: &str, tables: &Tables) -> Result<(), PeerError> {
    const CHUNK: usize = 200;
    let db = switch.database(name).await?;
    let keys: Vec<(&String, &Entry)> = tables.iter().filter(|(_, f)| !f.is_empty()).collect();
    for chunk in keys.chunks(CHUNK) {
        let mut pipe = redis::pipe();
        for (key, fields) in chunk {
            let pairs: Vec<(&String, &String)> = fields.iter().collect();
            pipe.hset_multiple(*key, &pairs).ignore();
        }
        let mut conn = db.connection();
        db.run("HSET (seed)", name, pipe.query_async::<()>(&mut conn)).await?;
    }
    Ok(())
}

/// The data plane and portsorch's ports, from the seeded COUNTERS_DB. Read here from the seed
/// itself rather than through the library's [`Queues`](crate::names::Queues): the switch must
/// not share the client's reading of its own maps, or a fault there would hide on both sides.
fn model(counters: &Tables) -> (DataPlane, BTreeMap<String, PortInfo>) {
    let empty = Entry::new();
    let map = |name: &str| counters.get(name).unwrap_or(&empty);
    let number = |hash: &Entry, field: &str| hash.get(field).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    let mut ports = BTreeMap::new();
    let mut infos = BTreeMap::new();
    for (name, oid) in map(PORT_NAME_MAP) {
        let hash = counters.get(&format!("COUNTERS:{oid}")).unwrap_or(&empty);
        let mut port = PortModel { name: name.clone(), ..PortModel::default() };
        for p in 0..8u8 {
            let i = usize::from(p);
            port.rx[i] = number(hash, &AsicFamily::pfc_rx_counter(p));
            for family in AsicFamily::ALL {
                if let Some(f) = family.pause_duration_counter(p) {
                    port.duration[i] = port.duration[i].max(number(hash, &f));
                }
                if let Some(f) = family.on2off_counter(p) {
                    port.on2off[i] = number(hash, &f);
                }
            }
        }
        ports.insert(oid.clone(), port);
        infos.insert(name.clone(), PortInfo { oid: oid.clone(), queues: BTreeMap::new() });
    }
    let mut queues = BTreeMap::new();
    let port_of_oid: BTreeMap<&String, &String> = map(PORT_NAME_MAP).iter().map(|(n, o)| (o, n)).collect();
    for (name, oid) in map(QUEUE_NAME_MAP) {
        let Some((port, position)) = name.rsplit_once(':').and_then(|(p, n)| Some((p, n.parse::<u32>().ok()?))) else {
            continue;
        };
        if let Some(info) = infos.get_mut(port) {
            info.queues.insert(position, oid.clone());
        }
        let port_oid = map(QUEUE_PORT_MAP).get(oid).cloned().or_else(|| infos.get(port).map(|i| i.oid.clone()));
        let Some(port_oid) = port_oid.filter(|o| port_of_oid.contains_key(o)) else { continue };
        let index = map(QUEUE_INDEX_MAP).get(oid).and_then(|i| i.parse().ok()).unwrap_or(position);
        let hash = counters.get(&format!("COUNTERS:{oid}")).unwrap_or(&empty);
        queues.insert(
            oid.clone(),
            QueueModel {
                port_oid,
                index,
                tx: number(hash, "SAI_QUEUE_STAT_PACKETS"),
                dropped: number(hash, "SAI_QUEUE_STAT_DROPPED_PACKETS"),
                occupancy: 0,
                paused: false,
            },
        );
    }
    (DataPlane::new(ports, queues), infos)
}
