//! The PFC watchdog's effect, read where orchagent records it, so a change can be verified by
//! what the watchdog then does and not only by reading CONFIG_DB back.
//!
//! orchagent writes, per watched queue, into COUNTERS_DB `COUNTERS:<queue oid>`
//! (`pfcwdsworch.cpp:236-273`, `pfcactionhandler.cpp:182-221`):
//!
//! - at start, from the `PFC_WD|<port>` entry: `PFC_WD_DETECTION_TIME` and
//!   `PFC_WD_RESTORATION_TIME` (µs; the restoration time empty when not configured),
//!   `PFC_WD_ACTION`, `PFC_STAT_HISTORY`; then `PFC_WD_STATUS` `operational` and the storm counts;
//! - on a storm, `PFC_WD_STATUS` `stormed`, `PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED` + 1, and
//!   APPL_DB `PFC_WD_TABLE_INSTORM:<port>` field `<priority>` = `storm`; on restore the
//!   reverse and `…_DEADLOCK_RESTORED` + 1;
//! - at stop (`PFC_WD|<port>` deleted), the four config fields and the status are deleted.
//!
//! **What COUNTERS_DB cannot show.** orchagent rewrites those fields on *every* SET of the
//! entry, but keeps the action of a port it already watches (`pfcwdsworch.cpp:268`, the map's
//! `emplace` is a no-op for an existing queue). After an in-place change `PFC_WD_ACTION` shows
//! the new action while a storm would still get the old one; the times, which the Lua detectors
//! read from these fields, do change. So:
//!
//! - the action a storm actually got shows in the switch's SAI state ([`InForce`], from the
//!   port's PFC mask in ASIC_DB: a drop or forward handler turns PFC off for the priority,
//!   `pfcactionhandler.cpp:541-568`; alert leaves it on);
//! - that the watchdog restarted with the new entry shows as orchagent's `HDEL` of the fields
//!   followed by their `HSET` ([`RestartWatch`]), which only a DEL of the entry causes.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::client::subscribe::{Channel, Keyspace};
use crate::client::{Db, DbError, Entry, Switch};
use crate::layout::db as dbs;
use crate::names::queues::COUNTERS;
use crate::names::Queue;

/// The CONFIG_DB table of the watchdog, keyed by port (and `GLOBAL`).
pub const PFC_WD: &str = "PFC_WD";
/// The key of the switch-wide settings (`POLL_INTERVAL`, `BIG_RED_SWITCH`).
pub const GLOBAL: &str = "GLOBAL";
/// The channel the detectors publish storms and restores on.
pub const ACTION_CHANNEL: &str = "PFC_WD_ACTION";
/// The APPL_DB table of queues in storm, keyed by port, one field per priority.
pub const INSTORM_TABLE: &str = "PFC_WD_TABLE_INSTORM";

/// The COUNTERS_DB fields orchagent and the detectors write per queue.
pub mod fields {
    /// `operational` or `stormed`.
    pub const STATUS: &str = "PFC_WD_STATUS";
    /// Detection time in µs.
    pub const DETECTION_TIME: &str = "PFC_WD_DETECTION_TIME";
    /// Restoration time in µs (empty: none configured).
    pub const RESTORATION_TIME: &str = "PFC_WD_RESTORATION_TIME";
    /// The action, as the entry said at the last SET.
    pub const ACTION: &str = "PFC_WD_ACTION";
    /// Storms detected.
    pub const DETECTED: &str = "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED";
    /// Storms restored.
    pub const RESTORED: &str = "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED";
    /// Packets the queue sent while handled.
    pub const TX_PACKETS: &str = "PFC_WD_QUEUE_STATS_TX_PACKETS";
    /// Packets the queue dropped while handled (only a drop or forward handler counts them).
    pub const TX_DROPPED: &str = "PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS";
    /// The detector's countdown to a storm, in µs.
    pub const DETECTION_TIME_LEFT: &str = "PFC_WD_DETECTION_TIME_LEFT";
    /// The restore script's countdown, in µs.
    pub const RESTORATION_TIME_LEFT: &str = "PFC_WD_RESTORATION_TIME_LEFT";
}

/// A watchdog action (`PfcWdAction`, `pfcwdorch.h:35-41`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Drop the queue's packets and ignore PFC on it.
    Drop,
    /// Ignore PFC on it, forwarding.
    Forward,
    /// Record the storm only.
    Alert,
}

impl Action {
    /// Parses `drop`, `forward`, `alert`.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "drop" => Some(Action::Drop),
            "forward" => Some(Action::Forward),
            "alert" => Some(Action::Alert),
            _ => None,
        }
    }

    /// The word SONiC uses.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Drop => "drop",
            Action::Forward => "forward",
            Action::Alert => "alert",
        }
    }
}

/// A port's `PFC_WD|<port>` entry as orchagent takes it (`PfcWdBaseOrch::createEntry`,
/// `pfcwdorch.cpp:193-338`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortEntry {
    /// `detection_time`, ms (100..=5000).
    pub detection_ms: u32,
    /// `restoration_time`, ms (100..=60000), when configured.
    pub restoration_ms: Option<u32>,
    /// `action` (drop when absent).
    pub action: Action,
    /// `pfc_stat_history`: `enable` or `disable`.
    pub history: String,
}

/// The timer ranges orchagent accepts, ms (`pfcwdorch.h:30-33`).
const DETECTION_MS: (u32, u32) = (100, 5000);
const RESTORATION_MS: (u32, u32) = (100, 60000);

impl PortEntry {
    /// The entry, or `None` when orchagent refuses it whole: an unknown field ("Unknown
    /// attribute"), an action not drop/forward/alert, a time out of range, no detection time, a
    /// history neither `enable` nor `disable`.
    pub fn parse(fields: &Entry) -> Option<PortEntry> {
        let mut entry =
            PortEntry { detection_ms: 0, restoration_ms: None, action: Action::Drop, history: "disable".into() };
        for (field, value) in fields {
            let in_range = |(lo, hi): (u32, u32)| value.trim().parse::<u32>().ok().filter(|v| (lo..=hi).contains(v));
            match field.as_str() {
                "detection_time" => entry.detection_ms = in_range(DETECTION_MS)?,
                "restoration_time" => entry.restoration_ms = Some(in_range(RESTORATION_MS)?),
                "action" => entry.action = Action::parse(value)?,
                "pfc_stat_history" => entry.history = value.clone(),
                _ => return None,
            }
        }
        let history_known = entry.history == "enable" || entry.history == "disable";
        (entry.detection_ms > 0 && history_known).then_some(entry)
    }

    /// What orchagent writes into each watched queue's COUNTERS_DB hash at a SET
    /// (`pfcwdsworch.cpp:236-273`): the times in µs (an unconfigured restoration time empty),
    /// the action, the history setting.
    pub fn counters(&self) -> [(&'static str, String); 4] {
        [
            (fields::DETECTION_TIME, (u64::from(self.detection_ms) * 1000).to_string()),
            (
                fields::RESTORATION_TIME,
                self.restoration_ms.map(|ms| (u64::from(ms) * 1000).to_string()).unwrap_or_default(),
            ),
            (fields::ACTION, self.action.as_str().to_string()),
            ("PFC_STAT_HISTORY", self.history.clone()),
        ]
    }
}

/// A queue's `PFC_WD_STATUS`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Watched, no storm.
    Operational,
    /// In a storm, handled.
    Stormed,
}

/// One watched queue's record in COUNTERS_DB.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct QueueState {
    /// The queue's object id.
    pub oid: String,
    /// `PFC_WD_STATUS`.
    pub status: Option<Status>,
    /// `PFC_WD_ACTION`: the entry's action at the last SET (see the module doc for why this is
    /// not always the action a storm gets).
    pub action: Option<Action>,
    /// `PFC_WD_DETECTION_TIME`.
    pub detection_time: Option<Duration>,
    /// `PFC_WD_RESTORATION_TIME` (`None` also when empty: not configured).
    pub restoration_time: Option<Duration>,
    /// Storms detected.
    pub detected: u64,
    /// Storms restored.
    pub restored: u64,
    /// Packets dropped while a drop or forward handler held the queue.
    pub tx_dropped: u64,
}

impl QueueState {
    /// Reads orchagent's fields from a queue's counters hash; `key` names it in errors. A field
    /// that is there but does not read is an error (the whole record is then in doubt); one that
    /// is absent is `None` (or 0 for the counts).
    pub fn from_counters(oid: &str, key: &str, counters: &Entry) -> Result<Self, DbError> {
        let bad = |field: &str, value: &str| DbError::Malformed {
            database: dbs::COUNTERS_DB.into(),
            key: key.to_string(),
            problem: format!("{field} {value:?} is not what orchagent writes"),
        };
        let micros = |field: &str| -> Result<Option<Duration>, DbError> {
            match counters.get(field).map(String::as_str) {
                None | Some("") => Ok(None),
                Some(v) => v.parse::<u64>().map(|us| Some(Duration::from_micros(us))).map_err(|_| bad(field, v)),
            }
        };
        let count = |field: &str| -> Result<u64, DbError> {
            counters.get(field).map_or(Ok(0), |v| v.parse::<u64>().map_err(|_| bad(field, v)))
        };
        let status = match counters.get(fields::STATUS).map(String::as_str) {
            None => None,
            Some("operational") => Some(Status::Operational),
            Some("stormed") => Some(Status::Stormed),
            Some(v) => return Err(bad(fields::STATUS, v)),
        };
        let action = match counters.get(fields::ACTION) {
            None => None,
            Some(v) => Some(Action::parse(v).ok_or_else(|| bad(fields::ACTION, v))?),
        };
        Ok(QueueState {
            oid: oid.to_string(),
            status,
            action,
            detection_time: micros(fields::DETECTION_TIME)?,
            restoration_time: micros(fields::RESTORATION_TIME)?,
            detected: count(fields::DETECTED)?,
            restored: count(fields::RESTORED)?,
            tx_dropped: count(fields::TX_DROPPED)?,
        })
    }

    /// Whether the watchdog watches the queue (orchagent wrote its detection time, which only
    /// a stop deletes).
    pub fn is_watched(&self) -> bool {
        self.detection_time.is_some()
    }
}

/// What a storm got, as the switch's SAI state shows it. Read from the port's PFC mask, which
/// every drop and forward handler clears for the priority — except on Broadcom with PFC DLR
/// init and on Cisco 8000, whose handlers leave the mask (`pfcactionhandler.cpp:548-553`) and
/// so read as [`InForce::Alert`] here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InForce {
    /// PFC is still on for the priority: an alert handler.
    Alert,
    /// PFC is off for the priority: a drop or forward handler (`PfcWdLossyHandler`).
    Lossy,
}

/// One port's watchdog as orchagent recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PortState {
    /// The port's SONiC name.
    pub port: String,
    /// Each watched priority's queue record (absent: COUNTERS_DB has no hash for the queue).
    pub queues: BTreeMap<u8, QueueState>,
    /// The priorities APPL_DB `PFC_WD_TABLE_INSTORM:<port>` lists as in storm.
    pub in_storm: BTreeSet<u8>,
    /// The port's PFC mask in ASIC_DB (`SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL`, or `…_TX` when PFC
    /// is asymmetric), when read.
    pub pfc_mask: Option<u8>,
}

impl PortState {
    /// What the storm on `priority` got, while it lasts: `None` when the priority is not in a
    /// storm (before a storm the action in force cannot be seen) or the PFC mask was not read.
    pub fn in_force(&self, priority: u8) -> Option<InForce> {
        let stormed = self.queues.get(&priority).is_some_and(|q| q.status == Some(Status::Stormed))
            || self.in_storm.contains(&priority);
        let mask = self.pfc_mask?;
        stormed.then(|| if mask & (1 << priority) != 0 { InForce::Alert } else { InForce::Lossy })
    }
}

/// The port attribute holding the PFC mask, and its asymmetric variant.
const PFC_MASK_ATTRS: [&str; 2] = ["SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL", "SAI_PORT_ATTR_PRIORITY_FLOW_CONTROL_TX"];

/// Reads [`PortState`]s: COUNTERS_DB, APPL_DB and (for [`InForce`]) ASIC_DB.
#[derive(Debug, Clone)]
pub struct WatchdogReader {
    counters: Db,
    appl: Db,
    asic: Option<Db>,
}

impl WatchdogReader {
    /// Opens the databases. ASIC_DB is optional: a layout without it leaves
    /// [`PortState::pfc_mask`] `None` (the action in force then cannot be told); a layout with
    /// it that cannot be reached is an error like the others.
    pub async fn open(switch: &Switch) -> Result<Self, DbError> {
        let asic = match switch.layout().database(dbs::ASIC_DB) {
            Ok(_) => Some(switch.database(dbs::ASIC_DB).await?),
            Err(_) => None,
        };
        Ok(WatchdogReader {
            counters: switch.database(dbs::COUNTERS_DB).await?,
            appl: switch.database(dbs::APPL_DB).await?,
            asic,
        })
    }

    /// The record of one queue; `None` when COUNTERS_DB has no hash for it.
    pub async fn queue(&self, oid: &str) -> Result<Option<QueueState>, DbError> {
        let key = self.counters.key(COUNTERS, oid);
        match self.counters.hash(&key).await? {
            None => Ok(None),
            Some(entry) => QueueState::from_counters(oid, &key, &entry).map(Some),
        }
    }

    /// Port `port`'s record, for its watched `queues` (priority, queue: what
    /// [`Qos::watchdog_queues`](crate::qos::Qos::watchdog_queues) gives) and, for the PFC
    /// mask, its object id.
    pub async fn port(
        &self,
        port: &str,
        queues: &[(u8, &Queue)],
        port_oid: Option<&str>,
    ) -> Result<PortState, DbError> {
        let mut state = PortState { port: port.to_string(), ..PortState::default() };
        for (priority, queue) in queues {
            if let Some(q) = self.queue(&queue.oid).await? {
                state.queues.insert(*priority, q);
            }
        }
        let instorm_key = self.appl.key(INSTORM_TABLE, port);
        for (field, value) in self.appl.hash(&instorm_key).await?.unwrap_or_default() {
            let priority = field.parse::<u8>().ok().filter(|_| value == "storm").ok_or_else(|| DbError::Malformed {
                database: self.appl.name().into(),
                key: instorm_key.clone(),
                problem: format!("field {field:?} = {value:?}; orchagent writes <priority> = storm"),
            })?;
            state.in_storm.insert(priority);
        }
        if let (Some(asic), Some(oid)) = (&self.asic, port_oid) {
            let key = format!("ASIC_STATE:SAI_OBJECT_TYPE_PORT:{oid}");
            if let Some(attrs) = asic.hash(&key).await? {
                if let Some(v) = PFC_MASK_ATTRS.iter().find_map(|a| attrs.get(*a)) {
                    state.pfc_mask = Some(v.parse::<u8>().map_err(|_| DbError::Malformed {
                        database: asic.name().into(),
                        key,
                        problem: format!("PFC mask {v:?} is not a number 0-255"),
                    })?);
                }
            }
        }
        Ok(state)
    }
}

/// What a detector published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventKind {
    /// A storm on the queue.
    Storm,
    /// The storm is over.
    Restore,
    /// Another word (orchagent logs and ignores it).
    Other(String),
}

/// One message on [`ACTION_CHANNEL`]: `["<queue oid>","storm"|"restore", field, value, …]`
/// (the JSON list swss-common's `NotificationConsumer` pops as op, data, field-value pairs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchdogEvent {
    /// The queue's object id.
    pub queue: String,
    /// Storm or restore.
    pub kind: EventKind,
    /// The detector's extra details (Mellanox's: occupancy, packets, durations, timestamps).
    pub info: Vec<(String, String)>,
}

impl WatchdogEvent {
    /// Parses a message's text.
    pub fn parse(text: &str) -> Result<Self, DbError> {
        let bad = |problem: String| DbError::Malformed {
            database: dbs::COUNTERS_DB.into(),
            key: ACTION_CHANNEL.into(),
            problem,
        };
        let items: Vec<String> =
            serde_json::from_str(text).map_err(|e| bad(format!("{text:?} is not a JSON list of strings: {e}")))?;
        if items.len() < 2 || items.len() % 2 != 0 {
            return Err(bad(format!("{text:?}: expected [queue, event, field, value, …]")));
        }
        let kind = match items[1].as_str() {
            "storm" => EventKind::Storm,
            "restore" => EventKind::Restore,
            other => EventKind::Other(other.to_string()),
        };
        let info = items[2..].chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect();
        Ok(WatchdogEvent { queue: items[0].clone(), kind, info })
    }
}

/// The detectors' storms and restores as they are published.
#[derive(Debug)]
pub struct Events {
    channel: Channel,
}

impl Events {
    /// Subscribes to [`ACTION_CHANNEL`] on `counters`' instance.
    pub async fn subscribe(counters: &Db) -> Result<Self, DbError> {
        Ok(Events { channel: counters.subscribe(ACTION_CHANNEL).await? })
    }

    /// The next event; `None` when the subscription ended (events since are lost). A message
    /// that does not parse is an error item; the stream goes on.
    pub async fn next(&mut self) -> Option<Result<WatchdogEvent, DbError>> {
        let text = match self.channel.next().await? {
            Ok(text) => text,
            Err(e) => return Some(Err(e)),
        };
        Some(WatchdogEvent::parse(&text))
    }
}

/// Watches for orchagent restarting the watchdog on some queues: an `hdel` of the queue's
/// counters hash (the stop deleting its fields, `pfcwdsworch.cpp:340`) followed by an `hset`
/// (the start writing them again). Start it *before* the change.
///
/// A queue whose fields were absent before (a port never watched) shows no `hdel` (Redis
/// notifies only a deletion that deleted something): such a queue counts as restarted at its
/// first `hset`, if [`RestartWatch::start`] found it unwatched.
#[derive(Debug)]
pub struct RestartWatch {
    counters: Db,
    keyspace: Keyspace,
    /// Queue key → whether its stop has been seen.
    stopped: BTreeMap<String, bool>,
    restarted: BTreeSet<String>,
}

impl RestartWatch {
    /// Subscribes to the counters hashes of `queues` (oids) and notes which are unwatched now.
    pub async fn start(counters: &Db, queues: &[String]) -> Result<Self, DbError> {
        let keys: Vec<String> = queues.iter().map(|oid| counters.key(COUNTERS, oid)).collect();
        let patterns: Vec<String> = keys.iter().map(|k| crate::client::escape_glob(k)).collect();
        let keyspace = counters.watch_patterns(&patterns).await?;
        let mut stopped = BTreeMap::new();
        for key in keys {
            let watched = matches!(counters.hash(&key).await?, Some(e) if e.contains_key(fields::DETECTION_TIME));
            stopped.insert(key, !watched);
        }
        Ok(RestartWatch { counters: counters.clone(), keyspace, stopped, restarted: BTreeSet::new() })
    }

    /// Waits until every queue was restarted, or `timeout`. Returns the queue keys not
    /// restarted (empty: all were).
    pub async fn wait(&mut self, timeout: Duration) -> Result<Vec<String>, DbError> {
        let deadline = tokio::time::Instant::now() + timeout;
        while self.restarted.len() < self.stopped.len() {
            let event = match tokio::time::timeout_at(deadline, self.keyspace.next()).await {
                Err(_) => break,
                Ok(None) => {
                    return Err(DbError::SubscriptionEnded {
                        database: self.counters.name().into(),
                        subscription: format!("the counters of {} queues", self.stopped.len()),
                    })
                }
                Ok(Some(event)) => event?,
            };
            let Some(stopped) = self.stopped.get_mut(&event.key) else { continue };
            match event.event.as_str() {
                "hdel" | "del" => *stopped = true,
                // The detectors write their countdowns into the same hash every poll: only an
                // hset after which the start's own field is back is the start.
                "hset" if *stopped => {
                    let started = self.counters.hash(&event.key).await?;
                    if started.is_some_and(|e| e.contains_key(fields::DETECTION_TIME)) {
                        self.restarted.insert(event.key);
                    }
                }
                _ => {}
            }
        }
        Ok(self.stopped.keys().filter(|k| !self.restarted.contains(*k)).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pairs: &[(&str, &str)]) -> Entry {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_port_entry_is_taken_as_orchagent_takes_it_or_refused_whole() {
        let taken = PortEntry::parse(&entry(&[("action", "alert"), ("detection_time", "400")])).unwrap();
        assert_eq!((taken.detection_ms, taken.restoration_ms, taken.action), (400, None, Action::Alert));
        assert_eq!(taken.counters()[1], (fields::RESTORATION_TIME, String::new()), "unconfigured: empty");
        assert_eq!(taken.counters()[0], (fields::DETECTION_TIME, "400000".to_string()), "µs");
        for refused in [
            entry(&[("action", "alert")]),
            entry(&[("detection_time", "50")]),
            entry(&[("detection_time", "200"), ("restoration_time", "60001")]),
            entry(&[("detection_time", "200"), ("action", "explode")]),
            entry(&[("detection_time", "200"), ("pfc_stat_history", "maybe")]),
            entry(&[("detection_time", "200"), ("colour", "red")]),
        ] {
            assert_eq!(PortEntry::parse(&refused), None, "{refused:?}");
        }
    }

    #[test]
    fn a_queue_record_reads_as_orchagent_writes_it() {
        let counters = entry(&[
            ("PFC_WD_STATUS", "stormed"),
            ("PFC_WD_ACTION", "drop"),
            ("PFC_WD_DETECTION_TIME", "200000"),
            ("PFC_WD_RESTORATION_TIME", ""),
            ("PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED", "2"),
            ("PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED", "1"),
        ]);
        let q = QueueState::from_counters("oid:0x1", "COUNTERS:oid:0x1", &counters).unwrap();
        assert_eq!(q.status, Some(Status::Stormed));
        assert_eq!(q.action, Some(Action::Drop));
        assert_eq!(q.detection_time, Some(Duration::from_millis(200)));
        assert_eq!(q.restoration_time, None, "empty: no restoration time configured");
        assert_eq!((q.detected, q.restored, q.tx_dropped), (2, 1, 0));
        assert!(q.is_watched());
        let bad = entry(&[("PFC_WD_STATUS", "on fire")]);
        assert_eq!(
            QueueState::from_counters("oid:0x1", "COUNTERS:oid:0x1", &bad).unwrap_err().to_string(),
            "COUNTERS_DB: COUNTERS:oid:0x1: PFC_WD_STATUS \"on fire\" is not what orchagent writes"
        );
    }

    #[test]
    fn the_action_in_force_shows_only_during_a_storm() {
        let stormed = QueueState { status: Some(Status::Stormed), ..QueueState::default() };
        let mut port =
            PortState { queues: BTreeMap::from([(3, stormed)]), pfc_mask: Some(0b0001_1000), ..PortState::default() };
        assert_eq!(port.in_force(3), Some(InForce::Alert));
        port.pfc_mask = Some(0b0001_0000);
        assert_eq!(port.in_force(3), Some(InForce::Lossy));
        assert_eq!(port.in_force(4), None, "priority 4 is not in a storm");
    }

    #[test]
    fn detector_messages_parse() {
        let e = WatchdogEvent::parse(r#"["oid:0x15000000000382","storm","occupancy","100"]"#).unwrap();
        assert_eq!(e.queue, "oid:0x15000000000382");
        assert_eq!(e.kind, EventKind::Storm);
        assert_eq!(e.info, vec![("occupancy".to_string(), "100".to_string())]);
        assert_eq!(WatchdogEvent::parse(r#"["oid:0x1","restore"]"#).unwrap().kind, EventKind::Restore);
        assert!(WatchdogEvent::parse(r#"["oid:0x1"]"#).is_err());
        assert!(WatchdogEvent::parse("storm").is_err());
        assert_eq!(Action::parse("alert").map(Action::as_str), Some("alert"));
        assert_eq!(Action::parse("shout"), None);
    }
}
