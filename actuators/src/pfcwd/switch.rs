//! The switch side of `pfcwd`: escalating the SONiC PFC watchdog of one port
//! through a gNMI Set on CONFIG_DB `PFC_WD|<port>`.
//!
//! An escalation level (from the playbook) sets some of `action`,
//! `detection_time` and `restoration_time`; the action's parameters may
//! override each. Every value is checked against SONiC's ranges
//! (`pfcwd start`: action drop|forward|alert, detection 100–5000 ms,
//! restoration 100–60000 ms) before anything is sent. The fields' values
//! before the Set are the outcome's prior; undo sets them back, deleting a
//! field that did not exist.

use std::collections::BTreeMap;

use engine::{Action, ActuatorError, Change, Outcome, Prior};
use gnmi_proto::sonic as sonic_schema;
use serde::{Deserialize, Serialize};

use crate::sonic::{self, Fields, Sonic};
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

/// What an escalation reads and records: the watchdog's fields before, and
/// those it sets (JSON `{"before": {field: value|null}, "after": …}`).
pub type WatchdogChange = Change<Fields>;

/// Reads a `pfcwd.escalate` action: its switch, port and the level's fields.
pub fn escalation<'a>(
    action: &'a Action,
    levels: &'a BTreeMap<String, Level>,
) -> Result<Escalation<'a>, ActuatorError> {
    let switch = label(action, "switch")?;
    let port = label(action, "port")?;
    sonic::check_name("port", port)?;
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

/// Reads the fields an escalation sets, as they are and as it sets them.
pub async fn prepare(sonic: &Sonic, e: &Escalation<'_>) -> Result<WatchdogChange, ActuatorError> {
    let fields: Vec<&str> = e.fields.keys().map(String::as_str).collect();
    let before = sonic.get(e.switch, TABLE, e.port, &fields).await?;
    Ok(Change { before, after: e.fields.clone() })
}

/// Sets what `change` says the escalation sets; the outcome records `prior`.
pub async fn escalate(
    sonic: &Sonic,
    e: &Escalation<'_>,
    change: &WatchdogChange,
    prior: &Prior,
) -> Result<Outcome, ActuatorError> {
    let request = sonic.set(e.switch, TABLE, e.port, &change.after).await?;
    Ok(Outcome {
        summary: format!("escalated the PFC watchdog of {} {} to {}", e.switch, e.port, sonic::show(&change.after)),
        requests: vec![request],
        prior: Some(prior.clone()),
    })
}

/// Restores what `change` found; the outcome records the reverse change.
pub async fn restore(sonic: &Sonic, e: &Escalation<'_>, change: WatchdogChange) -> Result<Outcome, ActuatorError> {
    let request = sonic.set(e.switch, TABLE, e.port, &change.before).await?;
    let summary = format!("restored the PFC watchdog of {} {} to {}", e.switch, e.port, sonic::show(&change.before));
    Ok(Outcome { summary, requests: vec![request], prior: Some(Prior::of(&change.reversed())?) })
}
