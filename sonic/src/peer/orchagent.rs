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
//! Not modelled: the big red switch, warm reboot (APPL_DB `PFC_WD_TABLE` and `bake`),
//! Broadcom's ACL drop rule and DLR (PFC is turned off as for every lossy handler), Cisco's
//! platform, asymmetric PFC, `pfc_stat_history`'s estimates beyond what the Lua scripts do.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::AsyncCommands;
use tokio::sync::oneshot;

use super::dataplane::HwStats;
use super::syncd::{self, Registry};
use super::Shared;
use crate::asic::AsicFamily;
use crate::client::subscribe::Keyspace;
use crate::client::{Db, Entry};
use crate::watchdog::{self, fields, Action, EventKind, Events};

/// orchagent's poll until `PFC_WD|GLOBAL` sets one (`orchdaemon.cpp:27`, `PFC_WD_POLL_MSECS`).
pub const DEFAULT_POLL: Duration = Duration::from_millis(100);
/// How often handlers' counters are committed (`COUNTER_CHECK_POLL_TIMEOUT_SEC`), pending
/// tasks retried, and the PORT counter group polled.
const SECOND: Duration = Duration::from_secs(1);
/// The timer ranges orchagent accepts, ms (`pfcwdorch.h:30-33`).
const DETECTION_MS: (u32, u32) = (100, 5000);
const RESTORATION_MS: (u32, u32) = (100, 60000);
/// Priorities per port (`PFC_WD_TC_MAX`).
const TC_MAX: u32 = 8;
/// The buffer profile a drop handler gives the queue (`ZeroBufferProfile`), as an object id.
const ZERO_PROFILE: &str = "oid:0x19000000000fff";
const PFC_MASK: &str = "SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL";
const QUEUE_PROFILE: &str = "SAI_QUEUE_ATTR_BUFFER_PROFILE_ID";

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

/// Which `PfcWdActionHandler` a storm got.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HandlerKind {
    /// `PfcWdActionHandler`: counters only.
    Alert,
    /// `PfcWdLossyHandler` (and `PfcWdZeroBufferHandler` when `zero_buffer`).
    Lossy { zero_buffer: bool, original_profile: Option<String> },
}

#[derive(Debug, Clone)]
struct Handler {
    kind: HandlerKind,
    /// `m_hwStats`: the hardware counters at the last commit.
    hw: HwStats,
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

/// `PfcWdQueueStats`, as `getQueueStats` reads it.
#[derive(Debug, Clone, Default)]
struct QueueStats {
    detect: u64,
    restore: u64,
    operational: bool,
    tx: u64,
    tx_drop: u64,
    rx: u64,
    rx_drop: u64,
    tx_last: u64,
    tx_drop_last: u64,
    rx_last: u64,
    rx_drop_last: u64,
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
        let (mut detection, mut restoration, mut action, mut history) =
            (0u32, 0u32, Action::Drop, "disable".to_string());
        for (field, value) in data {
            let in_range = |(lo, hi): (u32, u32)| value.trim().parse::<u32>().ok().filter(|v| (lo..=hi).contains(v));
            match field.as_str() {
                "detection_time" => match in_range(DETECTION_MS) {
                    Some(v) => detection = v,
                    None => return TaskStatus::Invalid,
                },
                "restoration_time" => match in_range(RESTORATION_MS) {
                    Some(v) => restoration = v,
                    None => return TaskStatus::Invalid,
                },
                "action" => match Action::parse(value) {
                    Some(a) => action = a,
                    None => return TaskStatus::Invalid,
                },
                "pfc_stat_history" => history = value.clone(),
                // "Unknown attribute": the whole entry is refused.
                _ => return TaskStatus::Invalid,
            }
        }
        if detection == 0 || (history != "enable" && history != "disable") {
            return TaskStatus::Invalid;
        }
        match self.register(key, &port, detection, restoration, action, &history).await {
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
    async fn register(
        &mut self,
        name: &str,
        port: &PortInfo,
        detection: u32,
        restoration: u32,
        action: Action,
        history: &str,
    ) -> Result<bool, String> {
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
            let restoration_us =
                if restoration == 0 { String::new() } else { (u64::from(restoration) * 1000).to_string() };
            let values = [
                (fields::DETECTION_TIME, (u64::from(detection) * 1000).to_string()),
                (fields::RESTORATION_TIME, restoration_us),
                (fields::ACTION, action.as_str().to_string()),
                ("PFC_STAT_HISTORY", history.to_string()),
            ];
            conn.hset_multiple::<_, _, _, ()>(format!("COUNTERS:{queue}"), &values).await.map_err(|e| e.to_string())?;
            self.registry.queues.insert(queue.clone());
            // `m_entryMap.emplace`: a queue already there keeps its entry, action and all.
            self.entries.entry(queue.clone()).or_insert_with(|| QueueEntry {
                action,
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

    /// The handler of the entry's action, constructed (PFC off, zero buffer) and its counters
    /// initialised (`initCounters`).
    async fn make_handler(&self, queue: &str, entry: &QueueEntry) -> Result<Handler, String> {
        let kind = match entry.action {
            Action::Alert => HandlerKind::Alert,
            Action::Forward => HandlerKind::Lossy { zero_buffer: false, original_profile: None },
            // Broadcom's drop handler is the ACL one (PfcWdAclHandler), the others the zero buffer.
            Action::Drop => {
                HandlerKind::Lossy { zero_buffer: self.family != AsicFamily::Broadcom, original_profile: None }
            }
        };
        let kind = match kind {
            HandlerKind::Lossy { zero_buffer, .. } => {
                self.set_pfc_bit(&entry.port_oid, entry.index, false).await?;
                let original_profile =
                    if zero_buffer { self.swap_profile(queue, Some(ZERO_PROFILE.into())).await? } else { None };
                HandlerKind::Lossy { zero_buffer, original_profile }
            }
            alert => alert,
        };
        let mut handler = Handler { kind, hw: HwStats::default() };
        handler.hw = self.hw_stats(queue, &handler);
        let mut stats = self.queue_stats(queue).await?;
        // A storm already counted (before a warm reboot) is not counted twice.
        if stats.detect <= stats.restore {
            stats.detect += 1;
            stats.tx_last = 0;
            stats.tx_drop_last = 0;
            stats.rx_last = 0;
            stats.rx_drop_last = 0;
        }
        stats.operational = false;
        self.update_wd_counters(queue, &stats).await?;
        tracing::info!(message = "SONiC peer: PFC storm handled.", port = %entry.port, priority = entry.index, action = entry.action.as_str());
        Ok(handler)
    }

    /// The handler's destructor: PFC back on, the queue's buffer profile back.
    async fn drop_handler(&self, queue: &str, entry: &QueueEntry, handler: Handler) {
        if let HandlerKind::Lossy { zero_buffer, original_profile } = handler.kind {
            if zero_buffer {
                if let Err(e) = self.swap_profile(queue, original_profile).await {
                    self.note_error(e);
                }
            }
            if let Err(e) = self.set_pfc_bit(&entry.port_oid, entry.index, true).await {
                self.note_error(e);
            }
        }
    }

    /// `getHwCounters`: zeros for an alert handler, the queue's SAI counters for a lossy one.
    fn hw_stats(&self, queue: &str, handler: &Handler) -> HwStats {
        match handler.kind {
            HandlerKind::Alert => HwStats::default(),
            HandlerKind::Lossy { .. } => self.shared.plane.lock().unwrap_or_else(|e| e.into_inner()).hw_stats(queue),
        }
    }

    /// `commitCounters(periodic)`.
    async fn commit_counters(&self, queue: &str, handler: &Handler, periodic: bool) -> Result<HwStats, String> {
        let hw = self.hw_stats(queue, handler);
        let mut stats = self.queue_stats(queue).await?;
        if !periodic {
            stats.restore += 1;
        }
        stats.operational = !periodic;
        let d = |now: u64, then: u64| now.wrapping_sub(then);
        stats.tx_last += d(hw.tx, handler.hw.tx);
        stats.tx_drop_last += d(hw.tx_dropped, handler.hw.tx_dropped);
        stats.rx_last += d(hw.rx, handler.hw.rx);
        stats.rx_drop_last += d(hw.rx_dropped, handler.hw.rx_dropped);
        stats.tx += d(hw.tx, handler.hw.tx);
        stats.tx_drop += d(hw.tx_dropped, handler.hw.tx_dropped);
        stats.rx += d(hw.rx, handler.hw.rx);
        stats.rx_drop += d(hw.rx_dropped, handler.hw.rx_dropped);
        self.update_wd_counters(queue, &stats).await?;
        Ok(hw)
    }

    /// `getQueueStats`.
    async fn queue_stats(&self, queue: &str) -> Result<QueueStats, String> {
        let entry =
            self.counters.hash(&format!("COUNTERS:{queue}")).await.map_err(|e| e.to_string())?.unwrap_or_default();
        let n = |field: &str| entry.get(field).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        Ok(QueueStats {
            detect: n(fields::DETECTED),
            restore: n(fields::RESTORED),
            operational: entry.get(fields::STATUS).is_none_or(|s| s == "operational"),
            tx: n("PFC_WD_QUEUE_STATS_TX_PACKETS"),
            tx_drop: n("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS"),
            rx: n("PFC_WD_QUEUE_STATS_RX_PACKETS"),
            rx_drop: n("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS"),
            tx_last: n("PFC_WD_QUEUE_STATS_TX_PACKETS_LAST"),
            tx_drop_last: n("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS_LAST"),
            rx_last: n("PFC_WD_QUEUE_STATS_RX_PACKETS_LAST"),
            rx_drop_last: n("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS_LAST"),
        })
    }

    /// `initWdCounters`: the counts kept, the status operational.
    async fn init_wd_counters(&self, queue: &str) -> Result<(), String> {
        let stats = self.queue_stats(queue).await?;
        let values = [
            (fields::DETECTED, stats.detect.to_string()),
            (fields::RESTORED, stats.restore.to_string()),
            (fields::STATUS, "operational".to_string()),
        ];
        let mut conn = self.counters.connection();
        conn.hset_multiple::<_, _, _, ()>(format!("COUNTERS:{queue}"), &values).await.map_err(|e| e.to_string())
    }

    /// `updateWdCounters`.
    async fn update_wd_counters(&self, queue: &str, s: &QueueStats) -> Result<(), String> {
        let values = [
            (fields::DETECTED, s.detect),
            (fields::RESTORED, s.restore),
            ("PFC_WD_QUEUE_STATS_TX_PACKETS", s.tx),
            ("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS", s.tx_drop),
            ("PFC_WD_QUEUE_STATS_RX_PACKETS", s.rx),
            ("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS", s.rx_drop),
            ("PFC_WD_QUEUE_STATS_TX_PACKETS_LAST", s.tx_last),
            ("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS_LAST", s.tx_drop_last),
            ("PFC_WD_QUEUE_STATS_RX_PACKETS_LAST", s.rx_last),
            ("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS_LAST", s.rx_drop_last),
        ];
        let mut values: Vec<(&str, String)> = values.iter().map(|(f, v)| (*f, v.to_string())).collect();
        values.push((fields::STATUS, if s.operational { "operational" } else { "stormed" }.to_string()));
        let mut conn = self.counters.connection();
        conn.hset_multiple::<_, _, _, ()>(format!("COUNTERS:{queue}"), &values).await.map_err(|e| e.to_string())
    }

    /// `PortsOrch::setPortPfc` through a handler: one priority's bit of the port's PFC mask in
    /// ASIC_DB.
    async fn set_pfc_bit(&self, port_oid: &str, priority: u8, on: bool) -> Result<(), String> {
        let key = format!("ASIC_STATE:SAI_OBJECT_TYPE_PORT:{port_oid}");
        let mut conn = self.asic.connection();
        let mask: Option<String> = conn.hget(&key, PFC_MASK).await.map_err(|e| e.to_string())?;
        let mask: u8 = mask.and_then(|m| m.parse().ok()).unwrap_or(0);
        let mask = if on { mask | (1 << priority) } else { mask & !(1 << priority) };
        conn.hset::<_, _, _, ()>(&key, PFC_MASK, mask.to_string()).await.map_err(|e| e.to_string())
    }

    /// Sets (or with `None`, removes) the queue's buffer profile in ASIC_DB; returns the old one.
    async fn swap_profile(&self, queue: &str, profile: Option<String>) -> Result<Option<String>, String> {
        let key = format!("ASIC_STATE:SAI_OBJECT_TYPE_QUEUE:{queue}");
        let mut conn = self.asic.connection();
        let old: Option<String> = conn.hget(&key, QUEUE_PROFILE).await.map_err(|e| e.to_string())?;
        match profile {
            Some(p) => conn.hset::<_, _, _, ()>(&key, QUEUE_PROFILE, p).await,
            None => conn.hdel::<_, _, ()>(&key, QUEUE_PROFILE).await,
        }
        .map_err(|e| e.to_string())?;
        Ok(old)
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
