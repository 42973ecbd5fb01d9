//! orchagent's PFC watchdog (`PfcWdSwOrch`), as its source behaves, against the peer's Redis.
//!
//! - CONFIG_DB `PFC_WD|<key>` reaches it as swss-common's `SubscriberStateTable` delivers it
//!   (`subscriberstatetable.cpp:95-160`): a `del` notification is a DEL, any other a SET carrying
//!   every field the entry has when the notification is read; pending tasks merge as
//!   `Consumer::addToSync` merges them (`orch.cpp:332-405`: a DEL replaces what is pending, a
//!   SET after a DEL is kept after it, a SET after a SET merges fields) and run in key order.
//! - A SET of a port (`pfcwdorch.cpp:193-338`): fields parsed and ranges checked (an unknown
//!   field, an action that is not drop/forward/alert, a time out of range, no detection time:
//!   the entry is dropped); the watched priorities are the port's `pfcwd_sw_enable` (none: the
//!   task waits and is retried); for each, the queue at that position gets its COUNTERS fields
//!   written (`pfcwdsworch.cpp:236-273`) and an entry in the watchdog's map — with `emplace`,
//!   so a port already watched keeps its old action (`:268`) while its fields, which the
//!   detectors read, are rewritten.
//! - A DEL (`pfcwdsworch.cpp:319-350`): each of the port's eight queue positions' handler is
//!   committed and dropped, its entry erased, its four fields deleted, its APPL_DB storm field
//!   deleted.
//! - `PFC_WD|GLOBAL` `POLL_INTERVAL` sets the poll (`pfcwdsworch.cpp:37-54`); the default,
//!   until set, is orchagent's `PFC_WD_POLL_MSECS`, 100 ms (`orchdaemon.cpp:27`).
//! - A detector's `storm` (`pfcwdsworch.cpp:612-706`): a handler for the entry's action (alert:
//!   counters only; drop and forward: PFC off for the priority, `pfcactionhandler.cpp:541-568`,
//!   and on Mellanox/Marvell a drop also swaps the queue's buffer profile for a zero one,
//!   `:660-727`), `PFC_WD_STATUS` `stormed`, the detected count, APPL_DB
//!   `PFC_WD_TABLE_INSTORM:<port>` `<priority>` = `storm`; `restore` undoes it.
//! - Every second, each handler's counters are committed (`pfcwdsworch.cpp:597-609`).
//!
//! - At start, `bake` (`pfcwdsworch.cpp:708-735`): every `*_last` and `*_LEFT` counter field
//!   deleted, so the detectors start from nothing.
//!
//! Not modelled: the big red switch, warm reboot's replay of APPL_DB `PFC_WD_TABLE`,
//! Broadcom's ACL drop rule and DLR (PFC is turned off as for every lossy handler), Cisco's
//! platform, asymmetric PFC, `pfc_stat_history`'s estimates beyond what the Lua scripts do.

mod handler;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::AsyncCommands;
use tokio::sync::oneshot;

use crate::asic::AsicFamily;
use crate::client::subscribe::Keyspace;
use crate::client::{Db, Entry};
use crate::peer::syncd::{self, Registry};
use crate::peer::Shared;
use crate::watchdog::{self, fields, Action, EventKind, Events, PortEntry};
use handler::{Handler, HandlerKind};

/// orchagent's poll until `PFC_WD|GLOBAL` sets one (`orchdaemon.cpp:27`, `PFC_WD_POLL_MSECS`).
pub const DEFAULT_POLL: Duration = Duration::from_millis(100);
/// How often handlers' counters are committed (`COUNTER_CHECK_POLL_TIMEOUT_SEC`), pending
/// tasks retried, and the PORT counter group polled.
const SECOND: Duration = Duration::from_secs(1);
/// Priorities per port (`PFC_WD_TC_MAX`).
const TC_MAX: u32 = 8;

/// A port as portsorch knows it: its object id and its queues by position (`m_queue_ids`).
#[derive(Debug, Clone)]
pub(crate) struct PortInfo {
    pub oid: String,
    pub queues: BTreeMap<u32, String>,
}

/// What one task did (`task_process_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TaskStatus {
    Success,
    NeedRetry,
    Invalid,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Task {
    Set(Entry),
    Del,
}

/// `Consumer::m_toSync`: at most a DEL then a SET per key.
#[derive(Debug, Default)]
struct ToSync(BTreeMap<String, Vec<Task>>);

impl ToSync {
    fn add(&mut self, key: String, task: Task) {
        let pending = self.0.entry(key).or_default();
        match task {
            Task::Del => *pending = vec![Task::Del],
            Task::Set(fields) => match pending.iter_mut().find_map(|t| match t {
                Task::Set(existing) => Some(existing),
                Task::Del => None,
            }) {
                Some(existing) => existing.extend(fields),
                None => pending.push(Task::Set(fields)),
            },
        }
    }
}

/// `PfcWdQueueEntry`.
#[derive(Debug, Clone)]
struct QueueEntry {
    action: Action,
    port: String,
    port_oid: String,
    index: u8,
    handler: Option<Handler>,
}

/// The watchdog.
pub(crate) struct Orchagent {
    pub family: AsicFamily,
    pub config: Db,
    pub counters: Db,
    pub appl: Db,
    pub asic: Db,
    pub detect_sha: String,
    pub restore_sha: String,
    pub ports: BTreeMap<String, PortInfo>,
    pub shared: Arc<Shared>,
    pub poll: Duration,
    entries: BTreeMap<String, QueueEntry>,
    registry: Registry,
    to_sync: ToSync,
}

impl Orchagent {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        family: AsicFamily,
        (config, counters, appl, asic): (Db, Db, Db, Db),
        (detect_sha, restore_sha): (String, String),
        ports: BTreeMap<String, PortInfo>,
        shared: Arc<Shared>,
    ) -> Self {
        Orchagent {
            family,
            config,
            counters,
            appl,
            asic,
            detect_sha,
            restore_sha,
            ports,
            shared,
            poll: DEFAULT_POLL,
            entries: BTreeMap::new(),
            registry: Registry::default(),
            to_sync: ToSync::default(),
        }
    }

    fn note_error(&self, what: impl std::fmt::Display) {
        tracing::warn!(message = "SONiC peer: watchdog error.", error = %what);
        self.shared.errors.lock().unwrap_or_else(|e| e.into_inner()).push(what.to_string());
    }

    /// Runs until `shutdown`, or until the Redis subscriptions end (the server is gone).
    /// `ready` is sent once the existing `PFC_WD` entries have been processed.
    pub async fn run(
        mut self,
        ready: oneshot::Sender<()>,
        mut shutdown: oneshot::Receiver<()>,
        mut config_events: Keyspace,
        mut events: Events,
    ) {
        if let Err(e) = self.bake().await {
            self.note_error(e);
        }
        // The table as it is now, as SubscriberStateTable reads it at construction; the
        // subscription is already on, so nothing falls between.
        match self.config.keys(watchdog::PFC_WD).await {
            Ok(keys) => {
                for key in keys {
                    self.read_set(&key).await;
                }
            }
            Err(e) => self.note_error(e),
        }
        self.do_task().await;
        let _ = ready.send(());
        let mut poll = tokio::time::interval(self.poll);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut second = tokio::time::interval(SECOND);
        second.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let current_poll = self.poll;
            tokio::select! {
                _ = &mut shutdown => return,
                event = config_events.next() => match event {
                    None => return,
                    Some(Err(e)) => self.note_error(e),
                    Some(Ok(event)) => {
                        if event.is_removal() {
                            self.to_sync.add(event.entry, Task::Del);
                        } else {
                            self.read_set(&event.entry).await;
                        }
                        self.do_task().await;
                    }
                },
                event = events.next() => match event {
                    None => return,
                    Some(Err(e)) => self.note_error(e),
                    Some(Ok(event)) => {
                        if !self.start_action(&event.kind, &event.queue).await {
                            self.note_error(format!("failed to start PFC watchdog {:?} action on queue {}", event.kind, event.queue));
                        }
                    }
                },
                _ = poll.tick() => self.poll_once().await,
                _ = second.tick() => self.every_second().await,
            }
            if self.poll != current_poll {
                poll = tokio::time::interval(self.poll);
                poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            }
        }
    }

    /// `bake`: every `*_last` and `*_LEFT` field of the counters is deleted, so the detectors
    /// start from nothing as after a cold boot (`pfcwdsworch.cpp:708-735`; sonic-utilities'
    /// capture carries a switch's leftovers).
    async fn bake(&self) -> Result<(), String> {
        let mut conn = self.counters.connection();
        for oid in self.counters.keys(crate::names::queues::COUNTERS).await.map_err(|e| e.to_string())? {
            let key = self.counters.key(crate::names::queues::COUNTERS, &oid);
            let fields: Vec<String> = conn.hkeys(&key).await.map_err(|e| e.to_string())?;
            let stale: Vec<&String> = fields.iter().filter(|f| f.contains("_last") || f.contains("_LEFT")).collect();
            if !stale.is_empty() {
                conn.hdel::<_, _, ()>(&key, stale).await.map_err(|e| e.to_string())?;
            }
        }
        Ok(())
    }

    /// A SET task for `key` with the fields the entry has now; none if it is gone ("Miss table
    /// key, possibly outdated").
    async fn read_set(&mut self, key: &str) {
        match self.config.entry(watchdog::PFC_WD, key).await {
            Ok(Some(fields)) => self.to_sync.add(key.to_string(), Task::Set(fields)),
            Ok(None) => {}
            Err(e) => self.note_error(e),
        }
    }

    /// `PfcWdBaseOrch::doTask(Consumer&)`.
    async fn do_task(&mut self) {
        let pending = std::mem::take(&mut self.to_sync.0);
        for (key, tasks) in pending {
            for task in tasks {
                let status = match &task {
                    Task::Set(fields) => self.create_entry(&key, fields).await,
                    Task::Del => self.delete_entry(&key).await,
                };
                if status == TaskStatus::NeedRetry {
                    self.to_sync.add(key.clone(), task);
                }
            }
        }
    }

    /// `PfcWdSwOrch::createEntry` and `PfcWdBaseOrch::createEntry`.
    async fn create_entry(&mut self, key: &str, data: &Entry) -> TaskStatus {
        if key == watchdog::GLOBAL {
            for (field, value) in data {
                match field.as_str() {
                    "POLL_INTERVAL" => match value.trim().parse::<u64>() {
                        Ok(ms) if ms > 0 => self.poll = Duration::from_millis(ms),
                        _ => self.note_error(format!("PFC_WD|GLOBAL POLL_INTERVAL {value:?} is not a number")),
                    },
                    "BIG_RED_SWITCH" => tracing::warn!(message = "SONiC peer: BIG_RED_SWITCH is not modelled."),
                    _ => {}
                }
            }
            return TaskStatus::Success;
        }
        let Some(port) = self.ports.get(key).cloned() else {
            tracing::info!(message = "SONiC peer: invalid port interface.", port = key);
            return TaskStatus::Invalid;
        };
        // An entry orchagent refuses ("Unknown attribute", a time out of range): dropped whole.
        let Some(entry) = PortEntry::parse(data) else { return TaskStatus::Invalid };
        match self.register(key, &port, &entry).await {
            Ok(true) => TaskStatus::Success,
            Ok(false) => TaskStatus::NeedRetry,
            Err(e) => {
                self.note_error(e);
                TaskStatus::NeedRetry
            }
        }
    }

    /// The port's `pfcwd_sw_enable` priorities, as qosorch applied them.
    async fn lossless(&self, port: &str) -> Result<BTreeSet<u8>, String> {
        let qos = self.config.entry(crate::qos::PORT_QOS_MAP, port).await.map_err(|e| e.to_string())?;
        let Some(list) = qos.as_ref().and_then(|q| q.get("pfcwd_sw_enable")) else { return Ok(BTreeSet::new()) };
        crate::qos::priority_list(&format!("PORT_QOS_MAP|{port}"), "pfcwd_sw_enable", list).map_err(|e| e.to_string())
    }

    /// `registerInWdDb`: false when the port has no watched priority (the task is retried).
    async fn register(&mut self, name: &str, port: &PortInfo, entry: &PortEntry) -> Result<bool, String> {
        let lossless = self.lossless(name).await?;
        if lossless.is_empty() {
            return Ok(false);
        }
        self.registry.ports.insert(port.oid.clone(), lossless.clone());
        let mut conn = self.counters.connection();
        for &i in &lossless {
            let Some(queue) = port.queues.get(&u32::from(i)).cloned() else {
                return Err(format!("port {name} has no queue at position {i}"));
            };
            let values = entry.counters();
            conn.hset_multiple::<_, _, _, ()>(format!("COUNTERS:{queue}"), &values).await.map_err(|e| e.to_string())?;
            self.registry.queues.insert(queue.clone());
            // `m_entryMap.emplace`: a queue already there keeps its entry, action and all.
            self.entries.entry(queue.clone()).or_insert_with(|| QueueEntry {
                action: entry.action,
                port: name.to_string(),
                port_oid: port.oid.clone(),
                index: i,
                handler: None,
            });
            self.init_wd_counters(&queue).await?;
        }
        Ok(true)
    }

    /// `PfcWdBaseOrch::deleteEntry` and `unregisterFromWdDb`.
    async fn delete_entry(&mut self, key: &str) -> TaskStatus {
        if key == watchdog::GLOBAL {
            return TaskStatus::Success;
        }
        let Some(port) = self.ports.get(key).cloned() else { return TaskStatus::Invalid };
        self.registry.ports.remove(&port.oid);
        for i in 0..TC_MAX {
            let Some(queue) = port.queues.get(&i).cloned() else { continue };
            self.registry.queues.remove(&queue);
            if let Some(mut entry) = self.entries.remove(&queue) {
                if let Some(handler) = entry.handler.take() {
                    let result = self.commit_counters(&queue, &handler, false).await;
                    self.drop_handler(&queue, &entry, handler).await;
                    if let Err(e) = result {
                        self.note_error(e);
                    }
                }
            }
            let mut conn = self.counters.connection();
            let gone = [fields::DETECTION_TIME, fields::RESTORATION_TIME, fields::ACTION, fields::STATUS];
            if let Err(e) = conn.hdel::<_, _, ()>(format!("COUNTERS:{queue}"), &gone).await {
                self.note_error(e);
            }
            let mut appl = self.appl.connection();
            if let Err(e) = appl.hdel::<_, _, ()>(format!("{}:{key}", watchdog::INSTORM_TABLE), i.to_string()).await {
                self.note_error(e);
            }
        }
        TaskStatus::Success
    }

    /// `startWdActionOnQueue`.
    async fn start_action(&mut self, event: &EventKind, queue: &str) -> bool {
        let Some(entry) = self.entries.get(queue).cloned() else {
            tracing::info!(message = "SONiC peer: queue is not registered.", queue);
            return false;
        };
        let instorm = format!("{}:{}", watchdog::INSTORM_TABLE, entry.port);
        let mut appl = self.appl.connection();
        match event {
            EventKind::Storm => {
                if entry.handler.is_some() {
                    return true;
                }
                let handler = match self.make_handler(queue, &entry).await {
                    Ok(handler) => handler,
                    Err(e) => {
                        self.note_error(e);
                        return false;
                    }
                };
                if let Some(e) = self.entries.get_mut(queue) {
                    e.handler = Some(handler);
                }
                if let Err(e) = appl.hset::<_, _, _, ()>(&instorm, entry.index.to_string(), "storm").await {
                    self.note_error(e);
                }
                true
            }
            EventKind::Restore => {
                let Some(handler) = self.entries.get_mut(queue).and_then(|e| e.handler.take()) else { return true };
                if let Err(e) = self.commit_counters(queue, &handler, false).await {
                    self.note_error(e);
                }
                self.drop_handler(queue, &entry, handler).await;
                if let Err(e) = appl.hdel::<_, _, ()>(&instorm, entry.index.to_string()).await {
                    self.note_error(e);
                }
                true
            }
            EventKind::Other(_) => false,
        }
    }

    /// One watchdog poll: syncd's counters, then the detector and the restore script.
    async fn poll_once(&mut self) {
        let mut conn = self.counters.connection();
        // `pfcwd counter_poll disable` turns the group off (flexcounterorch.cpp:80).
        let mut config = self.config.connection();
        let status: Option<String> =
            config.hget("FLEX_COUNTER_TABLE|PFCWD", "FLEX_COUNTER_STATUS").await.unwrap_or(None);
        if status.as_deref() == Some("disable") || self.registry.queues.is_empty() {
            return;
        }
        let now = Instant::now();
        let written = self.advance_plane(now);
        if let Err(e) = syncd::write_pfc_wd_group(&mut conn, self.family, &written, &self.registry, now).await {
            self.note_error(e);
            return;
        }
        let keys = self.registry.keys();
        let db = self.counters.database().id;
        for sha in [&self.detect_sha, &self.restore_sha] {
            if let Err(e) = syncd::run_plugin(&mut conn, sha, &keys, db, self.poll.as_millis()).await {
                self.note_error(format!("EVALSHA: {e}"));
            }
        }
        self.shared.polls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    /// Moves the data plane to `now` (PFC off where a drop or forward handler holds a queue)
    /// and returns a copy to write from (a std lock is not held across an await).
    fn advance_plane(&self, now: Instant) -> super::dataplane::DataPlane {
        let handled: BTreeMap<String, Action> = self
            .entries
            .iter()
            .filter(|(_, e)| matches!(e.handler, Some(Handler { kind: HandlerKind::Lossy { .. }, .. })))
            .map(|(q, e)| (q.clone(), e.action))
            .collect();
        let mut plane = self.shared.plane.lock().unwrap_or_else(|e| e.into_inner());
        plane.advance(now, &handled);
        plane.clone()
    }

    /// Every second: handlers' periodic commits, pending tasks retried, the PORT group polled.
    async fn every_second(&mut self) {
        let active: Vec<(String, Handler)> =
            self.entries.iter().filter_map(|(q, e)| Some((q.clone(), e.handler.clone()?))).collect();
        for (queue, handler) in active {
            match self.commit_counters(&queue, &handler, true).await {
                Ok(hw) => {
                    if let Some(Handler { hw: last, .. }) =
                        self.entries.get_mut(&queue).and_then(|e| e.handler.as_mut())
                    {
                        *last = hw;
                    }
                }
                Err(e) => self.note_error(e),
            }
        }
        if !self.to_sync.0.is_empty() {
            self.do_task().await;
        }
        // The data plane moves whether or not the watchdog polls.
        let plane = self.advance_plane(Instant::now());
        let mut conn = self.counters.connection();
        if let Err(e) = syncd::write_port_group(&mut conn, self.family, &plane).await {
            self.note_error(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> Task {
        Task::Set(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    #[test]
    fn pending_tasks_merge_as_orchagents_consumer_merges_them() {
        let mut to_sync = ToSync::default();
        to_sync.add("Ethernet4".into(), set(&[("action", "alert")]));
        to_sync.add("Ethernet4".into(), set(&[("detection_time", "200")]));
        assert_eq!(to_sync.0["Ethernet4"], vec![set(&[("action", "alert"), ("detection_time", "200")])]);
        // A DEL replaces what is pending; a SET after it stays after it.
        to_sync.add("Ethernet4".into(), Task::Del);
        to_sync.add("Ethernet4".into(), set(&[("action", "drop")]));
        assert_eq!(to_sync.0["Ethernet4"], vec![Task::Del, set(&[("action", "drop")])]);
        to_sync.add("Ethernet4".into(), set(&[("restoration_time", "2000")]));
        assert_eq!(to_sync.0["Ethernet4"], vec![Task::Del, set(&[("action", "drop"), ("restoration_time", "2000")])]);
    }
}
