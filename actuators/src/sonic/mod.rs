//! A SONiC CONFIG_DB client shared by the switch actuators (`pfcwd`, `ecn`, `rail`): read one
//! entry, apply a list of [`Change`]s, and restore what was there before — over the switch's
//! gNMI as sonic-gnmi serves it, or over its own Redis when rocemend runs on the switch
//! ([`transport`]).
//!
//! Over gNMI every switch is probed once ([`sonic::probe`], shared with the gNMI sensor): its
//! read style, its ports and aliases, and whether it can be written, so a switch whose
//! sonic-gnmi is read-only (or has native write off) is known at start
//! ([`Sonic::check_switches`], `rocemend check --probe`), not during a storm. Writes are
//! origin `sonic-db` `/CONFIG_DB/<instance>/TABLE/KEY[/field]` only, the one route sonic-gnmi
//! writes CONFIG_DB by; a [`Change::Replace`] is two Sets (the entry deleted, then written),
//! since sonic-gnmi's config updater writes the difference and one Set that deletes and
//! rewrites an entry reaches CONFIG_DB as an in-place change.
//!
//! A read says "absent" only when the switch positively says so (sonic-gnmi's own "No valid
//! entry found" for that key, Redis's `EXISTS 0`): an empty answer, a NOT_FOUND for another
//! reason, a refusal are errors, never an all-absent prior.
//!
//! Outcomes, as the engine needs them:
//! - a switch not in the allow-list, or a key or value refused before sending:
//!   [`ActuatorError::Invalid`], never sent;
//! - the switch cannot be written (read-only, native write off) or does not serve SONiC's
//!   databases as configured: [`ActuatorError::NotSupported`], saying which setting to change;
//! - the switch refused the value (`INVALID_ARGUMENT`) or the path (`NOT_FOUND`): `Invalid`,
//!   not retried, since the same value is refused again;
//! - unreachable, timed out, or any other status: [`ActuatorError::Failed`] with the reason,
//!   which the dispatcher retries.
//!
//! - [`config`]: [`SonicConfig`], the `[gnmi]` settings (and `[gnmi.redis]` on the switch);
//! - [`transport`]: [`Transport`], [`GnmiTransport`], [`RedisTransport`];
//! - [`style`]: what a NOT_FOUND means.

pub mod config;
pub mod style;
pub mod transport;

pub use config::SonicConfig;
pub use engine::topology::PathStyleSetting;
pub use gnmi_proto::sonic::PathStyle;
pub use transport::{GnmiTransport, QueueRecord, RedisTransport, Transport};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use engine::{ActuatorError, Verification};
use gnmi_proto::sonic as sonic_schema;

/// Field → value of one CONFIG_DB entry; `None` for a field the entry does
/// not have (so a restore deletes it rather than inventing a value).
pub type Fields = BTreeMap<String, Option<String>>;

/// Every field of one CONFIG_DB entry, as the switch holds it.
pub type Entry = BTreeMap<String, String>;

/// One entry's part of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Set these fields of an existing `table|key` (a field set to `None` is deleted).
    Fields {
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// The fields.
        fields: Fields,
    },
    /// Create `table|key` with these fields (it does not exist yet): over gNMI the entry
    /// written whole, the way sonic-gnmi's config updater takes a new entry.
    Create {
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// The fields; at least one.
        fields: Entry,
    },
    /// Delete the entry and write it again with exactly these fields, as `pfcwd start` does, so
    /// SONiC's daemons see it deleted and created (orchagent restarts the port's watchdog).
    Replace {
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// The fields; at least one.
        fields: Entry,
    },
    /// Delete the whole entry `table|key`.
    Delete {
        /// The table.
        table: String,
        /// The key.
        key: String,
    },
}

impl Change {
    fn table_key(&self) -> (&str, &str) {
        match self {
            Change::Fields { table, key, .. }
            | Change::Create { table, key, .. }
            | Change::Replace { table, key, .. }
            | Change::Delete { table, key } => (table, key),
        }
    }

    /// The same change in `sonic`'s terms: fields set and fields deleted apart.
    fn lower(&self, out: &mut Vec<sonic::Change>) {
        let (table, key) = (self.table_key().0.to_string(), self.table_key().1.to_string());
        match self {
            Change::Fields { fields, .. } => {
                let set: Entry = fields.iter().filter_map(|(f, v)| Some((f.clone(), v.clone()?))).collect();
                let gone: Vec<String> = fields.iter().filter(|(_, v)| v.is_none()).map(|(f, _)| f.clone()).collect();
                if !gone.is_empty() {
                    out.push(sonic::Change::DeleteFields { table: table.clone(), key: key.clone(), fields: gone });
                }
                if !set.is_empty() {
                    out.push(sonic::Change::Set { table, key, fields: set });
                }
            }
            Change::Create { fields, .. } => out.push(sonic::Change::Create { table, key, fields: fields.clone() }),
            Change::Replace { fields, .. } => out.push(sonic::Change::Replace { table, key, fields: fields.clone() }),
            Change::Delete { .. } => out.push(sonic::Change::Delete { table, key }),
        }
    }
}

/// The switches one actuator may change, and how each is reached.
#[derive(Clone, Debug)]
pub struct Sonic {
    switches: BTreeMap<String, Arc<dyn Transport>>,
    timeout: Duration,
}

/// Checks a CONFIG_DB key or field name before it becomes a path element:
/// 1 to 64 bytes of `A-Z a-z 0-9 _ - . :`, so no `/`, `[`, `]` or `|` can
/// reach another table or entry.
pub fn check_name(what: &str, name: &str) -> Result<(), ActuatorError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':'));
    if ok {
        Ok(())
    } else {
        Err(ActuatorError::Invalid(format!(
            "{what} {name:?} is refused: 1 to 64 characters of A-Z a-z 0-9 _ - . : are allowed"
        )))
    }
}

/// Checks a port name: as [`check_name`], and `/` too (SONiC names such as `Ethernet1/1`: a
/// gNMI path element holds it whole, and it is escaped in the JSON pointer sonic-gnmi makes).
pub fn check_port(port: &str) -> Result<(), ActuatorError> {
    check_name("port", &port.replace('/', "_")).map_err(|_| {
        ActuatorError::Invalid(format!(
            "port {port:?} is refused: 1 to 64 characters of A-Z a-z 0-9 _ - . : / are allowed"
        ))
    })
}

/// Checks a key of `table` before it becomes a path element: each part
/// as [`check_name`] (a `QUEUE` key has two, `Ethernet0|3`, joined by `|` as
/// redis and sonic-gnmi write it; every other table's has one; a port may hold `/`), then as
/// the table's YANG list does ([`sonic_schema::check_key`]).
pub fn check_key(table: &str, key: &str) -> Result<(), ActuatorError> {
    let parts = if table == sonic_schema::QUEUE { 2 } else { 1 };
    let split: Vec<&str> = key.split(sonic_schema::KEY_SEPARATOR).collect();
    if split.len() != parts {
        // One part too many or too few: the whole key, named as refused.
        check_name("key", key)?;
    }
    let ports = matches!(table, sonic_schema::QUEUE | sonic_schema::PFC_WD | sonic_schema::PORT);
    for (n, part) in split.iter().enumerate() {
        if ports && n == 0 && part.contains('/') {
            check_port(part)?;
        } else {
            check_name("key", part)?;
        }
    }
    sonic_schema::check_key(table, key).map_err(|e| ActuatorError::Invalid(e.to_string()))
}

impl Sonic {
    pub(crate) fn new(switches: BTreeMap<String, Arc<dyn Transport>>, timeout: Duration) -> Sonic {
        Sonic { switches, timeout }
    }

    /// Where `switch` is reached; invalid when it is not in the allow-list.
    pub fn address(&self, switch: &str) -> Result<&str, ActuatorError> {
        self.transport(switch).map(|t| t.address())
    }

    /// How `switch` is reached; invalid when it is not in the allow-list.
    pub fn transport(&self, switch: &str) -> Result<&dyn Transport, ActuatorError> {
        self.switches.get(switch).map(|t| t.as_ref()).ok_or_else(|| {
            ActuatorError::Invalid(format!(
                "switch {switch:?} is not one this actuator may change (gnmi.switches: {})",
                self.switches.keys().cloned().collect::<Vec<_>>().join(", ")
            ))
        })
    }

    /// How long connecting and each call may take.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Probes every switch now (over gNMI; opens its Redis otherwise), logging what each is:
    /// one line per switch, `Ok` with its summary, or why it cannot be changed (read-only,
    /// native write off, unreachable). What `rocemend check --probe` prints and the daemon
    /// logs at start.
    pub async fn check_switches(&self) -> Vec<(String, Result<String, ActuatorError>)> {
        let mut out = Vec::with_capacity(self.switches.len());
        for (name, transport) in &self.switches {
            let found = transport.check().await;
            match &found {
                Ok(summary) => tracing::info!(message = "Switch can be changed.", switch = %name, %summary),
                Err(error) => tracing::warn!(message = "Switch cannot be changed.", switch = %name, %error),
            }
            out.push((name.clone(), found));
        }
        out
    }

    /// The SONiC name of `port` on `switch` (an alias mapped to its port).
    pub async fn port_name(&self, switch: &str, port: &str) -> Result<String, ActuatorError> {
        check_port(port)?;
        self.transport(switch)?.port_name(port).await
    }

    /// Reads `fields` of `table|key` on `switch`. An entry the switch says
    /// is absent reads as every field absent; any other answer that is not the entry is an
    /// error.
    pub async fn get(&self, switch: &str, table: &str, key: &str, fields: &[&str]) -> Result<Fields, ActuatorError> {
        let entry = self.get_entry(switch, table, key).await?.unwrap_or_default();
        Ok(fields.iter().map(|f| (f.to_string(), entry.get(*f).cloned())).collect())
    }

    /// Reads every field of `table|key` on `switch`; `None` only when the switch says the entry
    /// is absent.
    pub async fn get_entry(&self, switch: &str, table: &str, key: &str) -> Result<Option<Entry>, ActuatorError> {
        check_key(table, key)?;
        self.transport(switch)?.entry(table, key).await
    }

    /// Reads every field of STATE_DB `table|key` on `switch`; `None` only when the switch says
    /// the entry is absent.
    pub async fn state_entry(&self, switch: &str, table: &str, key: &str) -> Result<Option<Entry>, ActuatorError> {
        check_key(table, key)?;
        self.transport(switch)?.state_entry(table, key).await
    }

    /// The keys of CONFIG_DB `table` on `switch` (empty: the table has no entries).
    pub async fn table_keys(&self, switch: &str, table: &str) -> Result<Vec<String>, ActuatorError> {
        check_name("table", table)?;
        self.transport(switch)?.table_keys(table).await
    }

    /// The queues of `port` on `switch` in COUNTERS_DB, with their counters.
    pub async fn queues(&self, switch: &str, port: &str) -> Result<Vec<QueueRecord>, ActuatorError> {
        check_port(port)?;
        self.transport(switch)?.queues(port).await
    }

    /// The text of what makes `table|key` hold `changes` (fields set to `None` are deleted):
    /// what [`Sonic::set`] sends, for plans.
    pub fn describe(&self, switch: &str, table: &str, key: &str, changes: &Fields) -> Result<String, ActuatorError> {
        self.describe_changes(switch, &[fields_change(table, key, changes)])
    }

    /// The text of what carries `changes`, in their order: what [`Sonic::set_changes`] sends,
    /// for plans (two Sets over gNMI when a replace is among them, joined by `; then `).
    pub fn describe_changes(&self, switch: &str, changes: &[Change]) -> Result<String, ActuatorError> {
        let lowered = checked(switch, changes)?;
        Ok(self.transport(switch)?.describe(&lowered)?.join("; then "))
    }

    /// Sets `changes` on `table|key`; the request's text (as [`Sonic::describe`] gives it).
    pub async fn set(&self, switch: &str, table: &str, key: &str, changes: &Fields) -> Result<String, ActuatorError> {
        self.set_changes(switch, &[fields_change(table, key, changes)]).await
    }

    /// Applies `changes` (one Set, or a delete Set then a write Set for a replace; one Redis
    /// transaction); the request's text (as [`Sonic::describe_changes`]).
    pub async fn set_changes(&self, switch: &str, changes: &[Change]) -> Result<String, ActuatorError> {
        let lowered = checked(switch, changes)?;
        Ok(self.transport(switch)?.apply(&lowered).await?.join("; then "))
    }
}

/// `changes` checked (keys, field names) and in `sonic`'s terms; refused when empty.
fn checked(switch: &str, changes: &[Change]) -> Result<Vec<sonic::Change>, ActuatorError> {
    let mut lowered = Vec::with_capacity(changes.len());
    for change in changes {
        let (table, key) = change.table_key();
        check_key(table, key)?;
        let names: Vec<&String> = match change {
            Change::Fields { fields, .. } => fields.keys().collect(),
            Change::Create { fields, .. } | Change::Replace { fields, .. } => {
                if fields.is_empty() {
                    return Err(ActuatorError::Invalid(format!("{table}|{key}: a write needs fields")));
                }
                fields.keys().collect()
            }
            Change::Delete { .. } => Vec::new(),
        };
        for field in names {
            check_name("field", field.strip_suffix('@').unwrap_or(field))?;
        }
        change.lower(&mut lowered);
    }
    if lowered.is_empty() {
        return Err(ActuatorError::Invalid(format!("nothing to set on {switch}")));
    }
    Ok(lowered)
}

fn fields_change(table: &str, key: &str, fields: &Fields) -> Change {
    Change::Fields { table: table.to_string(), key: key.to_string(), fields: fields.clone() }
}

/// Whether `now` (read back) holds every value `wanted` names.
pub fn holds(now: &Fields, wanted: &Fields) -> bool {
    wanted.iter().all(|(k, v)| now.get(k).cloned().flatten() == *v)
}

/// `action=drop, detection_time=200`.
pub fn show(fields: &Fields) -> String {
    let parts: Vec<String> =
        fields.iter().map(|(k, v)| format!("{k}={}", v.as_deref().unwrap_or("(absent)"))).collect();
    parts.join(", ")
}

/// Reads the fields back: in effect when they hold what was set, not in
/// effect when they hold what was there before, someone else's otherwise.
pub async fn verify(
    sonic: &Sonic,
    table: &str,
    switch: &str,
    key: &str,
    wanted: &Fields,
    before: Option<&Fields>,
) -> Result<Verification, ActuatorError> {
    let fields: Vec<&str> = wanted.keys().map(String::as_str).collect();
    let now = sonic.get(switch, table, key, &fields).await?;
    Ok(if holds(&now, wanted) {
        Verification::InEffect
    } else if before.is_none_or(|b| holds(&now, b)) {
        Verification::NotInEffect
    } else {
        Verification::Changed(format!("{table}|{key} on {switch} now holds {}", show(&now)))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_reach_another_entry_are_refused() {
        for bad in ["", "a/b", "a|b", "a[b]", "a b", &"x".repeat(65)] {
            assert!(check_name("key", bad).is_err(), "{bad:?}");
        }
        assert!(check_name("key", "Ethernet8").is_ok());
        assert!(check_name("key", "AZURE_LOSSLESS").is_ok());
    }

    #[test]
    fn a_queue_key_has_exactly_two_parts_and_others_one() {
        assert_eq!(check_key("QUEUE", "Ethernet12|3"), Ok(()));
        assert_eq!(check_key("PFC_WD", "Ethernet1/1"), Ok(()), "SONiC names may hold /");
        for (table, bad, expected) in [
            ("QUEUE", "Ethernet12", "QUEUE key \"Ethernet12\" is refused"),
            ("QUEUE", "Ethernet12|3|4", "key \"Ethernet12|3|4\" is refused"),
            ("QUEUE", "Ethernet12|9", "queue indices are 0 to 7"),
            ("QUEUE", "Eth 12|3", "key \"Eth 12\" is refused"),
            ("QUEUE", "Eth/1[2]|3", "port \"Eth/1[2]\" is refused"),
            ("PFC_WD", "Ethernet12|3", "key \"Ethernet12|3\" is refused"),
            ("WRED_PROFILE", "A.B", "not a WRED profile name"),
        ] {
            let err = check_key(table, bad).unwrap_err();
            assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains(expected)), "{bad}: {err:?}");
        }
    }

    #[test]
    fn changes_are_described_as_origin_sonic_db_sets_and_a_replace_as_two() {
        let gnmi = GnmiTransport::new(
            "leaf",
            "127.0.0.1:1",
            None,
            None,
            PathStyleSetting::PrefixTarget,
            "localhost",
            Duration::from_secs(1),
        );
        let sonic =
            Sonic::new([("leaf".to_string(), Arc::new(gnmi) as Arc<dyn Transport>)].into(), Duration::from_secs(1));
        let changes = [
            Change::Delete { table: "WRED_PROFILE".into(), key: "ROCEMEND_Ethernet12_3".into() },
            Change::Fields {
                table: "QUEUE".into(),
                key: "Ethernet12|3".into(),
                fields: [("wred_profile".to_string(), Some("AZURE_LOSSLESS".to_string()))].into(),
            },
        ];
        assert_eq!(
            sonic.describe_changes("leaf", &changes).unwrap(),
            "gNMI Set to leaf (127.0.0.1:1): delete sonic-db:/CONFIG_DB/localhost/WRED_PROFILE/ROCEMEND_Ethernet12_3, \
             update sonic-db:/CONFIG_DB/localhost/QUEUE/Ethernet12|3/wred_profile = \"AZURE_LOSSLESS\""
        );
        let replace = Change::Replace {
            table: "PFC_WD".into(),
            key: "Ethernet1/1".into(),
            fields: [("action".to_string(), "drop".to_string())].into(),
        };
        assert_eq!(
            sonic.describe_changes("leaf", &[replace]).unwrap(),
            "gNMI Set to leaf (127.0.0.1:1): delete sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet1~11; \
             then gNMI Set to leaf (127.0.0.1:1): update sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet1~11 = {\"action\":\"drop\"}"
        );
        assert!(sonic.describe_changes("leaf", &[]).is_err(), "an empty Set is nothing to send");
    }

    #[test]
    fn fields_round_trip_through_json_and_compare() {
        let fields: Fields = [("action".to_string(), Some("drop".to_string())), ("x".to_string(), None)].into();
        let json = serde_json::to_value(&fields).unwrap();
        assert_eq!(json, serde_json::json!({ "action": "drop", "x": null }), "absent fields are null in a prior");
        assert_eq!(serde_json::from_value::<Fields>(json).unwrap(), fields);
        assert!(holds(&fields, &[("action".to_string(), Some("drop".to_string()))].into()));
        assert!(!holds(&fields, &[("action".to_string(), Some("alert".to_string()))].into()));
    }
}
