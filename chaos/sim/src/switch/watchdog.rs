//! orchagent's PFC watchdog (`PfcWdSwOrch`) and its Lua detectors, on the model's clock: the
//! same rules as `sonic::peer`'s watchdog over a real redis-server, kept in memory so a
//! simulated fabric runs many seconds in milliseconds.
//!
//! - A SET of `PFC_WD|<port>` (`pfcwdorch.cpp:193-338`): fields parsed and ranges checked (an
//!   unknown field, an action not drop/forward/alert, a time out of range, no detection time:
//!   the entry is dropped); the watched priorities are the port's `pfcwd_sw_enable` (none:
//!   retried every second); each watched queue gets `PFC_WD_DETECTION_TIME`,
//!   `…_RESTORATION_TIME` (µs), `PFC_WD_ACTION` and `PFC_STAT_HISTORY` in COUNTERS_DB, its
//!   status reset to `operational`, and an entry in the watchdog's map **with `emplace`**: a
//!   queue already watched keeps the action it was started with (`pfcwdsworch.cpp:268`). The
//!   detectors read the times from COUNTERS_DB, so those change in place; the action a storm
//!   gets does not.
//! - A DEL (`pfcwdsworch.cpp:319-350`): each queue's handler committed and dropped, its entry
//!   erased, its four fields deleted, its APPL_DB storm field deleted. A DEL then a SET is
//!   what restarts a port's watchdog with a new action (`pfcwd start`).
//! - Every poll (`PFC_WD|GLOBAL` `POLL_INTERVAL`): syncd's PFC_WD counter group (the watched
//!   priorities' port counters of the family, the watched queues' packets and occupancy, and on
//!   Broadcom the queue's pause status), then `pfc_detect_<family>.lua` and `pfc_restore.lua`
//!   ([`AsicFamily::storming`] is the one-poll test of each detector).
//! - A storm gets a handler of the entry's action (`pfcactionhandler.cpp`): alert records it;
//!   drop and forward turn PFC off for the priority (ASIC_DB's port PFC mask shows it), so the
//!   pause is no longer honoured — drop also drops what the queue holds. `PFC_WD_STATUS`
//!   `stormed`, the detected count, APPL_DB `PFC_WD_TABLE_INSTORM:<port>`; a restore undoes it.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use sonic::gnmi_front::Entry;
use sonic::watchdog::{fields, Action, PortEntry};
use sonic::{AsicFamily, StormSample};

use super::asic::QUANTA_PER_US;
use super::model::State;

/// Priorities per port (`PFC_WD_TC_MAX`).
const TC_MAX: u8 = 8;

/// A started port's `PFC_WD` entry, as its last SET wrote it into COUNTERS_DB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConfig {
    /// `PFC_WD_DETECTION_TIME`, µs.
    pub detection_us: u64,
    /// `PFC_WD_RESTORATION_TIME`, µs (none configured: never restored by time).
    pub restoration_us: Option<u64>,
    /// `PFC_WD_ACTION`: the entry's action at the last SET (what the detectors read; not
    /// necessarily what a storm gets, see [`Watched::in_force`]).
    pub action: Action,
}

/// One watched queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    /// The action a storm gets: the entry's when the watchdog was started on the port.
    pub in_force: Action,
    /// The handler of the storm in progress, if any (its action).
    pub handler: Option<Action>,
    /// `PFC_WD_STATUS` is `stormed`.
    pub stormed: bool,
    /// `PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED`.
    pub detected: u64,
    /// `PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED`.
    pub restored: u64,
    /// `PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS`: what a drop handler dropped, as committed.
    pub tx_dropped: u64,
    /// The queue's dropped packets at the handler's last commit.
    hw_dropped: u64,
    detection_left: Option<i64>,
    restoration_left: Option<i64>,
    last: Option<StormSample>,
    /// `SAI_PORT_STAT_PFC_n_RX_PKTS_last`, which the restore script also keeps.
    rx_last: Option<u64>,
}

impl Watched {
    fn new(in_force: Action) -> Self {
        Watched {
            in_force,
            handler: None,
            stormed: false,
            detected: 0,
            restored: 0,
            tx_dropped: 0,
            hw_dropped: 0,
            detection_left: None,
            restoration_left: None,
            last: None,
            rx_last: None,
        }
    }
}

/// A CONFIG_DB change as orchagent's consumer hands it over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Task {
    /// The entry with every field it has now.
    Set(Entry),
    /// The entry is gone.
    Del,
}

/// The watchdog's state.
#[derive(Debug, Clone, Default)]
pub struct Watchdog {
    /// The poll (`PFC_WD|GLOBAL` `POLL_INTERVAL`).
    pub poll: Duration,
    /// Started ports, by index.
    pub ports: BTreeMap<usize, PortConfig>,
    /// Watched queues, by port index and priority.
    pub queues: BTreeMap<(usize, u8), Watched>,
    /// Tasks waiting for a retry (a port without watched priorities yet), by key.
    pub pending: BTreeMap<String, Task>,
}

impl Watchdog {
    /// The priorities of port `index` a drop handler holds: their queues drop.
    pub fn dropping(&self, index: usize) -> u8 {
        self.queues
            .range((index, 0)..(index, TC_MAX))
            .filter(|(_, w)| w.handler == Some(Action::Drop))
            .fold(0, |m, ((_, p), _)| m | (1 << p))
    }
}

/// What a task did (`task_process_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Success,
    NeedRetry,
    Invalid,
}

/// Runs a `PFC_WD|<key>` task (a retry waits for the next second).
pub fn task(state: &mut State, key: &str, task: Task) {
    state.watchdog.pending.remove(key);
    let status = match &task {
        Task::Set(fields) => create(state, key, fields),
        Task::Del => delete(state, key),
    };
    match status {
        Status::NeedRetry => {
            state.watchdog.pending.insert(key.to_string(), task);
        }
        Status::Invalid => tracing::debug!(message = "Simulated orchagent dropped a PFC_WD entry.", key),
        Status::Success => {}
    }
}

/// Retries what waits (every second, as orchagent's timer does).
pub fn retry(state: &mut State) {
    for (key, t) in std::mem::take(&mut state.watchdog.pending) {
        task(state, &key, t);
    }
}

fn create(state: &mut State, key: &str, data: &Entry) -> Status {
    if key == "GLOBAL" {
        if let Some(ms) = data.get("POLL_INTERVAL").and_then(|v| v.trim().parse::<u64>().ok()).filter(|ms| *ms > 0) {
            state.watchdog.poll = Duration::from_millis(ms);
        }
        return Status::Success;
    }
    let Some(index) = state.index(key) else { return Status::Invalid };
    // An entry orchagent refuses ("Unknown attribute", a time out of range): dropped whole.
    let Some(entry) = PortEntry::parse(data) else { return Status::Invalid };
    let lossless = watched_priorities(state, key);
    if lossless.is_empty() {
        return Status::NeedRetry;
    }
    let (detection_us, action) = (u64::from(entry.detection_ms) * 1000, entry.action);
    let restoration_us = entry.restoration_ms.map(|ms| u64::from(ms) * 1000);
    state.watchdog.ports.insert(index, PortConfig { detection_us, restoration_us, action });
    for p in lossless {
        let oid = state.queue_oid(index, usize::from(p));
        state.counters_hset(&oid, entry.counters());
        // `m_entryMap.emplace`: a queue already watched keeps its entry, action and all.
        let watched = state.watchdog.queues.entry((index, p)).or_insert_with(|| Watched::new(action));
        // `initWdCounters`: the counts kept, the status operational (even under a handler).
        watched.stormed = false;
        let (detected, restored) = (watched.detected, watched.restored);
        state.counters_hset(
            &oid,
            [
                (fields::DETECTED, detected.to_string()),
                (fields::RESTORED, restored.to_string()),
                (fields::STATUS, "operational".to_string()),
            ],
        );
    }
    Status::Success
}

/// The port's `pfcwd_sw_enable` priorities, as qosorch applied them.
fn watched_priorities(state: &State, port: &str) -> BTreeSet<u8> {
    let qos = state.store.get("CONFIG_DB", &format!("PORT_QOS_MAP|{port}")).unwrap_or_default();
    let Some(list) = qos.get("pfcwd_sw_enable") else { return BTreeSet::new() };
    sonic::qos::priority_list(&format!("PORT_QOS_MAP|{port}"), "pfcwd_sw_enable", list).unwrap_or_default()
}

fn delete(state: &mut State, key: &str) -> Status {
    if key == "GLOBAL" {
        return Status::Success;
    }
    let Some(index) = state.index(key) else { return Status::Invalid };
    state.watchdog.ports.remove(&index);
    for p in 0..TC_MAX {
        let Some(mut watched) = state.watchdog.queues.remove(&(index, p)) else { continue };
        if watched.handler.is_some() {
            commit(state, index, p, &mut watched, false);
            drop_handler(state, index, p);
        }
        let oid = state.queue_oid(index, usize::from(p));
        let gone = [fields::DETECTION_TIME, fields::RESTORATION_TIME, fields::ACTION, fields::STATUS];
        let _ = state.store.hdel("COUNTERS_DB", &format!("COUNTERS:{oid}"), gone);
        let _ = state.store.hdel("APPL_DB", &format!("PFC_WD_TABLE_INSTORM:{key}"), [p.to_string()]);
    }
    Status::Success
}

/// One poll's sample of what the family's detector reads for priority `p` of port `index`.
fn sample(state: &State, index: usize, p: u8) -> StormSample {
    let port = &state.ports[index];
    let i = usize::from(p);
    let (pfc, queue) = (&port.pfc[i], &port.queues[i]);
    let family = state.profile.asic;
    let duration = match family.pause_duration_counter(p) {
        None => None,
        Some(name) if name.ends_with("_US") => Some(pfc.rx_pause_us),
        Some(_) => Some((pfc.rx_pause_us as f64 * QUANTA_PER_US) as u64),
    };
    StormSample {
        pfc_rx_pkts: Some(pfc.rx_pkts),
        on2off_rx_pkts: family.on2off_counter(p).map(|_| pfc.on2off_rx_pkts),
        pause_duration: duration,
        queue_paused: (family == AsicFamily::Broadcom).then(|| port.paused(i)),
        queue_tx_pkts: Some(queue.packets),
        queue_occupancy_bytes: Some(queue.occupancy_bytes),
    }
}

/// An event of the detectors (the `PFC_WD_ACTION` channel).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Event {
    Storm,
    Restore,
}

/// One watchdog poll: syncd's PFC_WD group, the detector, the restore script, then orchagent
/// handling what they published.
pub fn poll(state: &mut State) {
    let watched: Vec<(usize, u8)> = state.watchdog.queues.keys().copied().collect();
    if watched.is_empty() || !state.group_enabled("PFCWD") {
        return;
    }
    super::syncd::pfcwd_group(state, &watched);
    let poll_us = state.watchdog.poll.as_micros() as i64;
    let mut events = Vec::new();
    for &(index, p) in &watched {
        if let Some(event) = detect(state, index, p, poll_us) {
            events.push((index, p, event));
        }
    }
    for &(index, p) in &watched {
        if restore_due(state, index, p, poll_us) {
            events.push((index, p, Event::Restore));
        }
    }
    for (index, p, event) in events {
        handle(state, index, p, event);
    }
}

/// `pfc_detect_<family>.lua` for one queue.
fn detect(state: &mut State, index: usize, p: u8, poll_us: i64) -> Option<Event> {
    let config = state.watchdog.ports.get(&index)?.clone();
    let family = state.profile.asic;
    let now = sample(state, index, p);
    let oid = state.queue_oid(index, usize::from(p));
    let w = state.watchdog.queues.get_mut(&(index, p))?;
    if w.stormed && config.action != Action::Alert {
        return None;
    }
    let detection = config.detection_us as i64;
    let mut time_left = w.detection_left.unwrap_or(detection);
    let mut event = None;
    let mut keep_last = true;
    if let Some(last) = &w.last {
        match family.storming(last, &now, state.watchdog.poll) {
            Some(true) => {
                // Mellanox allows 1 % of the detection time; the others count down to a poll.
                let due = if family == AsicFamily::Mellanox {
                    (detection - time_left + poll_us) as f64 > detection as f64 * 0.99
                } else {
                    time_left <= poll_us
                };
                if due {
                    event = Some(Event::Storm);
                    time_left = detection;
                    keep_last = family != AsicFamily::Mellanox;
                } else {
                    time_left -= poll_us;
                }
            }
            Some(false) => {
                if config.action == Action::Alert && w.stormed {
                    event = Some(Event::Restore);
                }
                time_left = detection;
            }
            None => {}
        }
    }
    w.detection_left = Some(time_left);
    w.rx_last = now.pfc_rx_pkts;
    w.last = keep_last.then_some(now);
    state.counters_hset(&oid, [(fields::DETECTION_TIME_LEFT, time_left.to_string())]);
    event
}

/// `pfc_restore.lua` for one queue: a handled storm whose PFC frames stopped for the
/// restoration time.
fn restore_due(state: &mut State, index: usize, p: u8, poll_us: i64) -> bool {
    let Some(config) = state.watchdog.ports.get(&index).cloned() else { return false };
    let rx = state.ports[index].pfc[usize::from(p)].rx_pkts;
    let oid = state.queue_oid(index, usize::from(p));
    let Some(w) = state.watchdog.queues.get_mut(&(index, p)) else { return false };
    let Some(restoration) = config.restoration_us.map(|r| r as i64) else { return false };
    if !w.stormed || config.action == Action::Alert {
        return false;
    }
    let mut time_left = w.restoration_left.unwrap_or(restoration);
    let mut due = false;
    if let Some(last) = w.rx_last {
        if rx == last {
            if time_left <= poll_us {
                due = true;
                time_left = restoration;
            } else {
                time_left -= poll_us;
            }
        } else {
            time_left = restoration;
        }
    }
    w.restoration_left = Some(time_left);
    w.rx_last = Some(rx);
    state.counters_hset(&oid, [(fields::RESTORATION_TIME_LEFT, time_left.to_string())]);
    due
}

/// `startWdActionOnQueue`.
fn handle(state: &mut State, index: usize, p: u8, event: Event) {
    let port = state.ports[index].name.clone();
    let instorm = format!("PFC_WD_TABLE_INSTORM:{port}");
    let Some(mut w) = state.watchdog.queues.get(&(index, p)).cloned() else { return };
    match event {
        Event::Storm => {
            if w.handler.is_some() {
                return;
            }
            w.handler = Some(w.in_force);
            if w.in_force != Action::Alert {
                set_pfc(state, index, p, false);
            }
            // A storm already counted is not counted twice.
            if w.detected <= w.restored {
                w.detected += 1;
            }
            w.stormed = true;
            w.hw_dropped = state.ports[index].queues[usize::from(p)].dropped_packets;
            write_stats(state, index, p, &w);
            let _ = state.store.hset("APPL_DB", &instorm, [(p.to_string(), "storm")]);
            tracing::debug!(message = "Simulated PFC storm handled.", port, priority = p, action = w.in_force.as_str());
        }
        Event::Restore => {
            if w.handler.is_none() {
                return;
            }
            commit(state, index, p, &mut w, false);
            drop_handler(state, index, p);
            w.handler = None;
            let _ = state.store.hdel("APPL_DB", &instorm, [p.to_string()]);
        }
    }
    state.watchdog.queues.insert((index, p), w);
}

/// `commitCounters(periodic)`: what the handler dropped since its last commit; at the end of
/// a storm, the restored count and the status.
pub fn commit(state: &mut State, index: usize, p: u8, w: &mut Watched, periodic: bool) {
    let hw = state.ports[index].queues[usize::from(p)].dropped_packets;
    if w.handler == Some(Action::Drop) {
        w.tx_dropped += hw.saturating_sub(w.hw_dropped);
    }
    w.hw_dropped = hw;
    if !periodic {
        w.restored += 1;
        w.stormed = false;
    }
    write_stats(state, index, p, w);
}

/// Every second: the handlers' counters committed.
pub fn every_second(state: &mut State) {
    let handled: Vec<(usize, u8)> =
        state.watchdog.queues.iter().filter(|(_, w)| w.handler.is_some()).map(|(k, _)| *k).collect();
    for (index, p) in handled {
        if let Some(mut w) = state.watchdog.queues.get(&(index, p)).cloned() {
            commit(state, index, p, &mut w, true);
            state.watchdog.queues.insert((index, p), w);
        }
    }
    retry(state);
}

fn write_stats(state: &State, index: usize, p: u8, w: &Watched) {
    let oid = state.queue_oid(index, usize::from(p));
    state.counters_hset(
        &oid,
        [
            (fields::DETECTED, w.detected.to_string()),
            (fields::RESTORED, w.restored.to_string()),
            (fields::TX_DROPPED, w.tx_dropped.to_string()),
            ("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS", "0".to_string()),
            (fields::STATUS, if w.stormed { "stormed" } else { "operational" }.to_string()),
        ],
    );
}

/// The handler's destructor: PFC back on for the priority.
fn drop_handler(state: &mut State, index: usize, p: u8) {
    set_pfc(state, index, p, true);
}

/// One priority's PFC on or off, in the ASIC and in ASIC_DB's port object.
fn set_pfc(state: &mut State, index: usize, p: u8, on: bool) {
    let port = &mut state.ports[index];
    if on {
        port.pfc_off &= !(1 << p);
    } else {
        port.pfc_off |= 1 << p;
    }
    let mask = super::seed::pfc_mask(&state.profile.lossless) & !port.pfc_off;
    let key = format!("ASIC_STATE:SAI_OBJECT_TYPE_PORT:{}", port.oid);
    let _ = state.store.hset("ASIC_DB", &key, [("SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL", mask.to_string())]);
}
