//! The switch side of `pfcwd`: escalating the SONiC PFC watchdog of one port by rewriting
//! CONFIG_DB `PFC_WD|<port>` the way `pfcwd start` does, and checking that the watchdog took it.
//!
//! An escalation level (from the playbook) sets some of `action`, `detection_time` and
//! `restoration_time`; the action's parameters may override each. Every value is checked
//! against SONiC's ranges (`pfcwd start`: action drop|forward|alert, detection 100–5000 ms,
//! restoration 100–60000 ms) before anything is sent.
//!
//! - The port is named by its SONiC name: an alias (`etp2`, `Ethernet1/1`) is mapped to its
//!   port through CONFIG_DB `PORT|<name>` `alias`, so the escalation lands on `PFC_WD|Ethernet4`.
//! - The entry is *replaced* (deleted, then written with the level's fields on top of what it
//!   held): orchagent keeps the action of a port it already watches when the entry is changed in
//!   place (`pfcwdsworch.cpp:268`), and restarts the watchdog only after a delete. Over gNMI that
//!   is two Sets, over the switch's Redis one `DEL`+`HSET` transaction.
//! - The change counts only once in effect: COUNTERS_DB shows every watched queue of the port
//!   with the new `PFC_WD_ACTION`, `PFC_WD_DETECTION_TIME` and `PFC_WD_RESTORATION_TIME` and a
//!   `PFC_WD_STATUS` ([`effect`]). A change CONFIG_DB holds but the watchdog does not show is an
//!   error, not "executed".
//! - The prior is the whole entry before (or that there was none, on the switch's positive
//!   word); undo writes it back the same way (or deletes the entry), and checks the effect too.

use std::collections::BTreeMap;

use engine::{Action, ActuatorError, Change, Outcome, Prior, Verification};
use gnmi_proto::sonic as sonic_schema;
use serde::{Deserialize, Serialize};

use crate::sonic::{self, Entry, Fields, QueueRecord, Sonic};
use crate::target::label;

/// The CONFIG_DB table of the PFC watchdog.
pub const TABLE: &str = sonic_schema::PFC_WD;

/// The fields an escalation may set.
pub const FIELDS: [&str; 3] = ["action", "detection_time", "restoration_time"];

/// One escalation level.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level {
    /// `drop`, `forward` or `alert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Milliseconds, 100 to 5000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detection_time: Option<u64>,
    /// Milliseconds, 100 to 60000.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restoration_time: Option<u64>,
}

/// Checks one PFC_WD field's value against SONiC's ranges (the schema the
/// simulated switch enforces too).
pub fn check(field: &str, value: &str) -> Result<(), ActuatorError> {
    if !FIELDS.contains(&field) {
        return Err(ActuatorError::Invalid(format!("PFC_WD has no field {field:?} an escalation may set")));
    }
    sonic_schema::check_field(TABLE, field, value).map_err(|e| ActuatorError::Invalid(e.to_string()))
}

impl Level {
    /// The fields this level sets, with `params` overriding them, checked.
    pub fn fields(&self, params: &BTreeMap<String, String>) -> Result<Fields, ActuatorError> {
        let mut fields = Fields::new();
        let mine = [
            ("action", self.action.clone()),
            ("detection_time", self.detection_time.map(|n| n.to_string())),
            ("restoration_time", self.restoration_time.map(|n| n.to_string())),
        ];
        for (field, value) in mine {
            if let Some(value) = params.get(field).cloned().or(value) {
                check(field, &value)?;
                fields.insert(field.to_string(), Some(value));
            }
        }
        if fields.is_empty() {
            return Err(ActuatorError::Invalid(
                "the escalation sets none of action, detection_time, restoration_time".into(),
            ));
        }
        Ok(fields)
    }
}

/// A `pfcwd.escalate` action, parsed once: where the escalation goes, which
/// level it takes and the fields that level (with the action's parameters
/// on top) sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Escalation<'a> {
    /// The switch.
    pub switch: &'a str,
    /// The port (`EthernetN`).
    pub port: &'a str,
    /// The queue, as the target names it (informative: SONiC's watchdog is
    /// configured per port).
    pub queue: Option<&'a str>,
    /// The level's name.
    pub level: &'a str,
    /// The fields to set.
    pub fields: Fields,
}

/// A port's `PFC_WD` entry as found or written: `None` when the port has none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watchdog {
    /// The port's SONiC name (an alias in the action mapped to it).
    pub port: String,
    /// The entry's fields.
    pub entry: Option<Entry>,
}

/// What an escalation reads and records: the port's entry before, and the entry it writes
/// (JSON `{"before": {"port": "Ethernet4", "entry": {…}|null}, "after": …}`).
pub type WatchdogChange = Change<Watchdog>;

/// Reads a `pfcwd.escalate` action: its switch, port and the level's fields.
pub fn escalation<'a>(
    action: &'a Action,
    levels: &'a BTreeMap<String, Level>,
) -> Result<Escalation<'a>, ActuatorError> {
    let switch = label(action, "switch")?;
    let port = label(action, "port")?;
    sonic::check_port(port)?;
    let (level, settings) = match action.params.get("level") {
        Some(name) => levels.get_key_value(name).ok_or_else(|| {
            ActuatorError::Invalid(format!(
                "escalation level {name:?} is not defined (levels: {})",
                levels.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })?,
        // Without a level, the lowest one, with the parameters on top.
        None => levels.iter().next().ok_or_else(|| ActuatorError::Invalid("no escalation level is defined".into()))?,
    };
    Ok(Escalation {
        switch,
        port,
        queue: action.target.get("queue"),
        level: level.as_str(),
        fields: settings.fields(&action.params)?,
    })
}

/// Reads the port's entry as it is, and makes the one the escalation writes: the level's
/// fields on top of it.
pub async fn prepare(sonic: &Sonic, e: &Escalation<'_>) -> Result<WatchdogChange, ActuatorError> {
    let port = sonic.port_name(e.switch, e.port).await?;
    let before = sonic.get_entry(e.switch, TABLE, &port).await?;
    let mut after = before.clone().unwrap_or_default();
    after.extend(e.fields.iter().filter_map(|(f, v)| Some((f.clone(), v.clone()?))));
    Ok(Change { before: Watchdog { port: port.clone(), entry: before }, after: Watchdog { port, entry: Some(after) } })
}

/// The change that makes the port's entry `to`: replaced as `pfcwd start` does, or deleted.
fn rewrite(to: &Watchdog) -> sonic::Change {
    match &to.entry {
        Some(fields) => sonic::Change::Replace { table: TABLE.into(), key: to.port.clone(), fields: fields.clone() },
        None => sonic::Change::Delete { table: TABLE.into(), key: to.port.clone() },
    }
}

/// The plan of an escalation, before the switch is read: the level's fields written as a
/// replace of the port's entry (the fields the entry holds besides them are kept).
pub fn describe(sonic: &Sonic, e: &Escalation<'_>) -> Result<String, ActuatorError> {
    let fields: Entry = e.fields.iter().filter_map(|(f, v)| Some((f.clone(), v.clone()?))).collect();
    let to = Watchdog { port: e.port.to_string(), entry: Some(fields) };
    sonic.describe_changes(e.switch, &[rewrite(&to)])
}

/// The plan of an undo: the entry found written back (or deleted).
pub fn describe_undo(sonic: &Sonic, e: &Escalation<'_>, change: &WatchdogChange) -> Result<String, ActuatorError> {
    sonic.describe_changes(e.switch, &[rewrite(&change.before)])
}

/// Writes what `change` says the escalation writes and waits for the watchdog to take it; the
/// outcome records `prior`.
pub async fn escalate(
    sonic: &Sonic,
    e: &Escalation<'_>,
    change: &WatchdogChange,
    prior: &Prior,
) -> Result<Outcome, ActuatorError> {
    let request = sonic.set_changes(e.switch, &[rewrite(&change.after)]).await?;
    let shown = effect::wait(sonic, e.switch, &change.after).await?;
    Ok(Outcome {
        summary: format!(
            "escalated the PFC watchdog of {} {} to {} ({shown})",
            e.switch,
            change.after.port,
            show(&change.after)
        ),
        requests: vec![request],
        prior: Some(prior.clone()),
    })
}

/// Restores what `change` found (and waits for the watchdog to take it); the outcome records
/// the reverse change.
pub async fn restore(sonic: &Sonic, e: &Escalation<'_>, change: WatchdogChange) -> Result<Outcome, ActuatorError> {
    let request = sonic.set_changes(e.switch, &[rewrite(&change.before)]).await?;
    let shown = effect::wait(sonic, e.switch, &change.before).await?;
    let summary = format!(
        "restored the PFC watchdog of {} {} to {} ({shown})",
        e.switch,
        change.before.port,
        show(&change.before)
    );
    Ok(Outcome { summary, requests: vec![request], prior: Some(Prior::of(&change.reversed())?) })
}

/// Whether the switch holds `wanted` now, in CONFIG_DB and in the watchdog's record: in effect
/// when both do; not in effect when CONFIG_DB holds `before` (or the watchdog has not taken
/// the entry); someone else's otherwise.
pub async fn verify(
    sonic: &Sonic,
    switch: &str,
    wanted: &Watchdog,
    before: Option<&Watchdog>,
) -> Result<Verification, ActuatorError> {
    let now = sonic.get_entry(switch, TABLE, &wanted.port).await?;
    if now.is_none() && wanted.entry.is_some() && before.is_some_and(|b| b.entry.is_some()) {
        // The middle of our own replace (the entry deleted, not yet written): a restart between
        // the two Sets leaves it so. Counted as ours and in effect, so that the undo (or its
        // reconciliation after the restart) writes the entry found before back: "not in effect"
        // would leave the port's watchdog off for good.
        tracing::warn!(message = "PFC_WD entry absent between the two Sets of a replace.", %switch, port = %wanted.port);
        return Ok(Verification::InEffect);
    }
    if now != wanted.entry {
        let theirs = before.is_some_and(|b| b.entry != now);
        return Ok(if theirs {
            let now = Watchdog { port: wanted.port.clone(), entry: now };
            Verification::Changed(format!("PFC_WD|{} on {switch} now holds {}", wanted.port, show(&now)))
        } else {
            Verification::NotInEffect
        });
    }
    let queues = sonic.queues(switch, &wanted.port).await?;
    Ok(match effect::shown(&queues, wanted) {
        Ok(_) => Verification::InEffect,
        Err(why) => {
            tracing::warn!(message = "PFC_WD entry written but not in effect.", %switch, port = %wanted.port, %why);
            Verification::NotInEffect
        }
    })
}

/// `action=drop, detection_time=200, restoration_time=2000`, or `no entry`.
pub fn show(w: &Watchdog) -> String {
    match &w.entry {
        None => "no entry (watchdog off)".into(),
        Some(entry) => entry.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "),
    }
}

pub mod effect {
    //! The watchdog's effect, from COUNTERS_DB: what orchagent writes per watched queue when it
    //! starts the watchdog of a port (`PFC_WD_DETECTION_TIME`, `PFC_WD_RESTORATION_TIME` in µs,
    //! `PFC_WD_ACTION`, `PFC_WD_STATUS`) and deletes when it stops it.

    use std::time::Duration;

    use engine::ActuatorError;
    use sonic::watchdog::{Action, QueueState};

    use super::{QueueRecord, Watchdog};
    use crate::sonic::Sonic;

    /// How often the record is read while waiting: orchagent takes a CONFIG_DB change within
    /// milliseconds; a few reads a second cost the switch nothing.
    const POLL: Duration = Duration::from_millis(250);

    /// Whether `queues` show `w` in effect: for an entry, every watched queue with its action
    /// and times, and at least one watched; for no entry, none watched. The text says what was
    /// seen (`2 queues: drop, 200 ms, 2000 ms`), the error what is not as it should be.
    pub fn shown(queues: &[QueueRecord], w: &Watchdog) -> Result<String, String> {
        let mut watched = Vec::new();
        for q in queues {
            let key = format!("COUNTERS:{}", q.oid);
            let state = QueueState::from_counters(&q.oid, &key, &q.counters).map_err(|e| e.to_string())?;
            if state.is_watched() || state.status.is_some() {
                watched.push((q.name.as_str(), state));
            }
        }
        let Some(entry) = &w.entry else {
            return match watched.first() {
                None => Ok("the watchdog watches none of its queues".into()),
                Some((name, _)) => Err(format!("queue {name} is still watched: the watchdog has not stopped")),
            };
        };
        if watched.is_empty() {
            return Err(format!(
                "COUNTERS_DB shows no queue of {} watched (no PFC_WD_STATUS): the watchdog has not started on it",
                w.port
            ));
        }
        let ms = |field: &str| entry.get(field).and_then(|v| v.parse::<u64>().ok()).map(Duration::from_millis);
        let action = entry.get("action").and_then(|a| Action::parse(a));
        let (detection, restoration) = (ms("detection_time"), ms("restoration_time"));
        for (name, q) in &watched {
            let seen = (q.action, q.detection_time, q.restoration_time);
            if seen != (action, detection, restoration) || q.status.is_none() {
                return Err(format!(
                    "queue {name}: the watchdog holds action {}, detection {}, restoration {}, status {}; \
                     the entry says {}",
                    q.action.map_or("(none)", Action::as_str),
                    millis(q.detection_time),
                    millis(q.restoration_time),
                    if q.status.is_some() { "set" } else { "(none)" },
                    super::show(w)
                ));
            }
        }
        Ok(format!(
            "in effect on {} queue(s): {}, detection {}, restoration {}",
            watched.len(),
            action.map_or("(none)", Action::as_str),
            millis(detection),
            millis(restoration)
        ))
    }

    fn millis(d: Option<Duration>) -> String {
        d.map_or_else(|| "(none)".into(), |d| format!("{} ms", d.as_millis()))
    }

    /// Reads the port's queues until they show `w` in effect, for up to the actuator's timeout
    /// (twice: the Sets themselves took up to one); an error saying what the watchdog holds
    /// when they do not.
    pub async fn wait(sonic: &Sonic, switch: &str, w: &Watchdog) -> Result<String, ActuatorError> {
        let deadline = tokio::time::Instant::now() + sonic.timeout() * 2;
        loop {
            let queues = sonic.queues(switch, &w.port).await?;
            match shown(&queues, w) {
                Ok(text) => return Ok(text),
                Err(why) if tokio::time::Instant::now() >= deadline => {
                    return Err(ActuatorError::Failed(format!(
                        "switch {switch}: PFC_WD|{} was written but is not in effect after {:?}: {why}",
                        w.port,
                        sonic.timeout() * 2
                    )))
                }
                Err(_) => tokio::time::sleep(POLL).await,
            }
        }
    }
}
