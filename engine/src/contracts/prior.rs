//! What an actuator reads from a target before acting, in a small envelope
//! the engine understands ([`Prepared`]) around a record only the actuator
//! reads ([`Prior`]).
//!
//! The record is the actuator's own serde type; most keep the target's
//! values before the action and the values it sets ([`Change`]). The engine
//! writes it into the intent before the change, carries it in the outcome,
//! hands it back for verification and undo, and shows it as JSON. It never
//! reads inside it: whether the target already holds the change is the
//! actuator's answer ([`Prepared::holds_already`]), not a comparison of
//! JSON fields.
//!
//! The record is stored as the JSON of its type, unchanged from what
//! ledgers written before this envelope hold (`{"before": …, "after": …}`
//! for a [`Change`]), so the ledger of an upgraded daemon reads as before.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::actuator::ActuatorError;

/// An actuator's record of a target, as the JSON of the actuator's own type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Prior(serde_json::Value);

impl Prior {
    /// The record of `value`.
    pub fn of<T: Serialize>(value: &T) -> Result<Prior, ActuatorError> {
        serde_json::to_value(value)
            .map(Prior)
            .map_err(|e| ActuatorError::Failed(format!("the target's state cannot be recorded: {e}")))
    }

    /// A record as JSON, as a ledger holds it.
    pub fn from_json(value: serde_json::Value) -> Prior {
        Prior(value)
    }

    /// Reads the record back as the actuator's type `T`. The error says
    /// that the record is not one of `T`: written by another actuator under
    /// the same name, or damaged.
    pub fn read<T: DeserializeOwned>(&self) -> Result<T, ActuatorError> {
        T::deserialize(&self.0).map_err(|e| {
            ActuatorError::Invalid(format!("the recorded prior {} is not what this actuator records: {e}", self.0))
        })
    }

    /// The record as JSON, to show.
    pub fn as_json(&self) -> &serde_json::Value {
        &self.0
    }
}

/// The record most actuators keep: what the target held before the action
/// and what the action sets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change<T> {
    /// The target's values before.
    pub before: T,
    /// The values the action sets.
    pub after: T,
}

impl<T: Serialize + PartialEq> Change<T> {
    /// What preparing an action found: it holds already when the target's
    /// values are the ones the action sets.
    pub fn prepared(&self) -> Result<Prepared, ActuatorError> {
        Prepared::from_record(self, &self.before, &self.after)
    }
}

impl<T> Change<T> {
    /// The change an undo makes: back from `after` to `before`.
    pub fn reversed(self) -> Change<T> {
        Change { before: self.after, after: self.before }
    }
}

/// What an actuator read from the target before acting.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    /// The target already holds what the action sets (someone else's doing,
    /// or ours from before a crash): nothing is sent, nothing recorded as ours.
    pub holds_already: bool,
    /// What the action sets, for people (`action="drop", detection_time="200"`):
    /// what an `already-held` decision says the target holds.
    pub sets: String,
    /// The actuator's record of the target, for the intent.
    pub prior: Prior,
}

impl Prepared {
    /// What preparing an action found, from the actuator's `record` of the
    /// target and the two sides it keeps: it holds already when `before` is
    /// `after`, and `sets` shows `after`.
    pub fn from_record<R, T>(record: &R, before: &T, after: &T) -> Result<Prepared, ActuatorError>
    where
        R: Serialize,
        T: Serialize + PartialEq,
    {
        let sets = serde_json::to_value(after)
            .map_err(|e| ActuatorError::Failed(format!("the values to set cannot be recorded: {e}")))?;
        Ok(Prepared { holds_already: before == after, sets: describe(&sets), prior: Prior::of(record)? })
    }
}

/// Values for people: a map as `name=value, …` (values as JSON), anything
/// else as its JSON.
fn describe(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(fields) => {
            fields.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", ")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn a_change_keeps_the_json_shape_of_older_ledgers() {
        let change = Change {
            before: BTreeMap::from([("action".to_string(), Some("alert".to_string()))]),
            after: BTreeMap::from([("action".to_string(), Some("drop".to_string()))]),
        };
        let prepared = change.prepared().unwrap();
        assert!(!prepared.holds_already);
        assert_eq!(prepared.sets, "action=\"drop\"");
        assert_eq!(
            prepared.prior.as_json(),
            &serde_json::json!({ "before": { "action": "alert" }, "after": { "action": "drop" } })
        );
        let back: Change<BTreeMap<String, Option<String>>> = prepared.prior.read().unwrap();
        assert_eq!(back, change);
        assert_eq!(
            serde_json::to_string(&prepared.prior).unwrap(),
            serde_json::to_string(prepared.prior.as_json()).unwrap()
        );
    }

    #[test]
    fn a_target_holding_the_change_already_says_so() {
        let prepared = Change { before: "ours".to_string(), after: "ours".to_string() }.prepared().unwrap();
        assert!(prepared.holds_already);
        assert_eq!(prepared.sets, "\"ours\"");
    }

    #[test]
    fn a_record_of_another_type_is_refused_with_what_it_holds() {
        let err = Prior::from_json(serde_json::json!({ "steps": [] })).read::<Change<String>>().unwrap_err();
        assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains("{\"steps\":[]}")), "{err:?}");
    }
}
