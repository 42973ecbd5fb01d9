//! A small SONiC CONFIG_DB client over gNMI, shared by the switch actuators
//! (`pfcwd`, `ecn`, `rail`): read some fields (or all) of one table entry,
//! set fields of one or more entries, or delete entries, in one SetRequest
//! ([`Change`]), and restore what was there before.
//!
//! Paths follow the switch's `path_style` ([`style`]): the database as the
//! prefix target, or origin `sonic-db` with the database and its namespace
//! as the first elements. Values are JSON strings (`json_ietf_val`; CONFIG_DB
//! holds every value as a string). A Set is atomic on SONiC (one
//! transaction), so an action changes all of its fields or none.
//!
//! A read that comes back NOT_FOUND means "this entry is absent" only when
//! the switch says so (sonic-gnmi: "No valid entry found …"); any other
//! refusal means the switch does not serve CONFIG_DB the way it was asked,
//! and the action is refused with a message that names `path_style`, never
//! sent on a guess.
//!
//! Outcomes, as the engine needs them:
//! - a switch not in the `[gnmi]` allow-list, or a key or value refused
//!   before sending: [`ActuatorError::Invalid`], never sent;
//! - the switch refused the value (`INVALID_ARGUMENT`) or the path
//!   (`NOT_FOUND`): `Invalid`, not retried, since the same value is refused again;
//! - unreachable, timed out, or any other status: [`ActuatorError::Failed`]
//!   with the reason, which the dispatcher retries; nothing is applied.
//!
//! - [`config`]: [`SonicConfig`], the `[gnmi]` settings.

pub mod config;
pub mod style;

pub use config::SonicConfig;
pub use engine::topology::PathStyleSetting;
pub use gnmi_proto::sonic::PathStyle;

use std::collections::BTreeMap;
use std::time::Duration;

use engine::{ActuatorError, Verification};
use gnmi_proto::gnmi::{Encoding, Update};
use gnmi_proto::sonic::{self as sonic_schema, CONFIG_DB};
use gnmi_proto::{ClientConfig, ClientError, GnmiClient, SetOps, TlsConfig};

/// Field → value of one CONFIG_DB entry; `None` for a field the entry does
/// not have (so a restore deletes it rather than inventing a value).
pub type Fields = BTreeMap<String, Option<String>>;

/// Every field of one CONFIG_DB entry, as the switch holds it.
pub type Entry = BTreeMap<String, String>;

/// One entry's part of a SetRequest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Set these fields of `table|key` (a field set to `None` is deleted);
    /// an entry that does not exist yet is created.
    Fields {
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// The fields.
        fields: Fields,
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
            Change::Fields { table, key, .. } | Change::Delete { table, key } => (table, key),
        }
    }
}

/// How to reach one switch.
#[derive(Clone)]
pub(crate) struct Endpoint {
    /// `host:port`.
    pub address: String,
    /// Username and password, sent as metadata.
    pub credentials: Option<(String, String)>,
    /// TLS, its files read.
    pub tls: Option<TlsConfig>,
    /// How it names its databases.
    pub style: PathStyleSetting,
    /// The namespace element of the `sonic-db-origin` style.
    pub namespace: String,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        f.debug_struct("Endpoint")
            .field("address", &self.address)
            .field("username", &self.credentials.as_ref().map(|(user, _)| user))
            .field("tls", &self.tls.is_some())
            .field("path_style", &self.style)
            .field("namespace", &self.namespace)
            .finish()
    }
}

/// The switches one actuator may change, and how to reach each.
#[derive(Clone, Debug)]
pub struct Sonic {
    switches: BTreeMap<String, Endpoint>,
    timeout: Duration,
    /// The style each switch was found to want (`auto`), once asked.
    resolved: std::sync::Arc<std::sync::Mutex<BTreeMap<String, PathStyle>>>,
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

/// Checks a key of `table` before it becomes a path element: each part
/// as [`check_name`] (a `QUEUE` key has two, `Ethernet0|3`, joined by `|` as
/// redis and sonic-gnmi write it; every other table's has one), then as the
/// table's YANG list does ([`sonic_schema::check_key`]).
pub fn check_key(table: &str, key: &str) -> Result<(), ActuatorError> {
    let parts = if table == sonic_schema::QUEUE { 2 } else { 1 };
    let split: Vec<&str> = key.split(sonic_schema::KEY_SEPARATOR).collect();
    if split.len() != parts {
        // One part too many or too few: the whole key, named as refused.
        check_name("key", key)?;
    }
    for part in split {
        check_name("key", part)?;
    }
    sonic_schema::check_key(table, key).map_err(|e| ActuatorError::Invalid(e.to_string()))
}

impl Sonic {
    pub(crate) fn new(switches: BTreeMap<String, Endpoint>, timeout: Duration) -> Sonic {
        Sonic { switches, timeout, resolved: Default::default() }
    }

    /// The address of `switch`; invalid when it is not in the allow-list.
    pub fn address(&self, switch: &str) -> Result<&str, ActuatorError> {
        self.endpoint(switch).map(|e| e.address.as_str())
    }

    /// How to reach `switch`; invalid when it is not in the allow-list.
    fn endpoint(&self, switch: &str) -> Result<&Endpoint, ActuatorError> {
        self.switches.get(switch).ok_or_else(|| {
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

    /// A fresh connection per call: actions are rare (a few per incident),
    /// and a cached channel would outlive a restart of the switch's
    /// telemetry container and fail the next action for nothing.
    async fn connect(&self, switch: &str) -> Result<GnmiClient, ActuatorError> {
        let endpoint = self.endpoint(switch)?;
        let config = ClientConfig {
            address: endpoint.address.clone(),
            tls: endpoint.tls.clone(),
            credentials: endpoint.credentials.clone(),
            connect_timeout: self.timeout,
            timeout: self.timeout,
        };
        GnmiClient::connect(&config).await.map_err(|e| outcome(switch, e))
    }

    /// How requests to `switch` are addressed: as configured, or (`auto`)
    /// as its Capabilities say, asked once.
    async fn addressing(&self, switch: &str, client: &mut GnmiClient) -> Result<PathStyle, ActuatorError> {
        let endpoint = self.endpoint(switch)?;
        let namespace = Some(endpoint.namespace.clone());
        match endpoint.style {
            PathStyleSetting::PrefixTarget => return Ok(PathStyle::PrefixTarget),
            PathStyleSetting::SonicDbOrigin => return Ok(PathStyle::SonicDbOrigin { namespace }),
            PathStyleSetting::Auto => {}
        }
        if let Some(known) = self.resolved.lock().unwrap_or_else(|p| p.into_inner()).get(switch) {
            return Ok(known.clone());
        }
        let caps = client.capabilities().await.map_err(|e| outcome(switch, e))?;
        let mixed = caps.supported_models.iter().any(|m| m.name == "sonic-db");
        let found = if mixed { PathStyle::SonicDbOrigin { namespace } } else { PathStyle::PrefixTarget };
        tracing::info!(message = "gNMI path style chosen.", %switch, path_style = found.name());
        self.resolved.lock().unwrap_or_else(|p| p.into_inner()).insert(switch.to_string(), found.clone());
        Ok(found)
    }

    /// The addressing `describe` shows: the configured one, or, for `auto`,
    /// the one found (prefix-target until the switch was asked).
    fn shown_addressing(&self, switch: &str) -> PathStyle {
        let Ok(endpoint) = self.endpoint(switch) else { return PathStyle::PrefixTarget };
        match endpoint.style {
            PathStyleSetting::SonicDbOrigin => PathStyle::SonicDbOrigin { namespace: Some(endpoint.namespace.clone()) },
            PathStyleSetting::PrefixTarget => PathStyle::PrefixTarget,
            PathStyleSetting::Auto => self
                .resolved
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(switch)
                .cloned()
                .unwrap_or(PathStyle::PrefixTarget),
        }
    }

    /// Reads `fields` of `table|key` on `switch`. An entry the switch says
    /// is absent reads as every field absent; any other refusal is not a
    /// read, and says which `path_style` was used.
    pub async fn get(&self, switch: &str, table: &str, key: &str, fields: &[&str]) -> Result<Fields, ActuatorError> {
        let entry = self.get_entry(switch, table, key).await?.unwrap_or_default();
        Ok(fields.iter().map(|f| (f.to_string(), entry.get(*f).cloned())).collect())
    }

    /// Reads every field of `table|key` on `switch`; `None` when the switch
    /// says the entry is absent (as [`Sonic::get`]). Values that are not
    /// JSON strings are kept as their JSON text.
    pub async fn get_entry(&self, switch: &str, table: &str, key: &str) -> Result<Option<Entry>, ActuatorError> {
        check_key(table, key)?;
        let mut client = self.connect(switch).await?;
        let addressing = self.addressing(switch, &mut client).await?;
        let (prefix, entry) = addressing.request(CONFIG_DB, &[table, key]);
        let json = match client.get(prefix, vec![entry], Encoding::JsonIetf).await {
            Ok(response) => {
                let value = response.notification.first().and_then(|n| n.update.first()).and_then(|u| u.val.clone());
                match value {
                    // sonic-gnmi answers a Get of an empty entry with no notification.
                    None => serde_json::Value::Null,
                    Some(value) => gnmi_proto::value::to_json(&value)
                        .and_then(Result::ok)
                        .ok_or_else(|| ActuatorError::Failed(format!("switch {switch}: {table}|{key} is not JSON")))?,
                }
            }
            Err(e) if e.code() == Some(tonic::Code::NotFound) && style::entry_absent(&e.to_string(), key) => {
                serde_json::Value::Null
            }
            Err(e) => return Err(not_served(switch, table, key, &addressing, e)),
        };
        match json {
            serde_json::Value::Null => Ok(None),
            serde_json::Value::Object(fields) => Ok(Some(
                fields
                    .into_iter()
                    .map(|(f, v)| (f, v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())))
                    .collect(),
            )),
            other => Err(ActuatorError::Failed(format!("switch {switch}: {table}|{key} is {other}, not an entry"))),
        }
    }

    /// The text of the Set that makes `table|key` hold `changes` (fields
    /// set to `None` are deleted): what [`Sonic::set`] sends, for plans.
    pub fn describe(&self, switch: &str, table: &str, key: &str, changes: &Fields) -> Result<String, ActuatorError> {
        self.describe_changes(switch, &[fields_change(table, key, changes)])
    }

    /// The text of the one SetRequest that carries `changes`, in their
    /// order: what [`Sonic::set_changes`] sends, for plans. (A switch
    /// applies a Set's deletes before its updates, whatever the order;
    /// callers list them that way so the text reads as it is applied.)
    pub fn describe_changes(&self, switch: &str, changes: &[Change]) -> Result<String, ActuatorError> {
        let address = self.address(switch)?;
        let addressing = self.shown_addressing(switch);
        let mut ops = Vec::new();
        for change in changes {
            let (table, key) = change.table_key();
            check_key(table, key)?;
            match change {
                Change::Delete { .. } => ops.push(format!("delete {}", addressing.describe(CONFIG_DB, &[table, key]))),
                Change::Fields { fields, .. } => {
                    for (field, value) in fields {
                        check_name("field", field)?;
                        let path = addressing.describe(CONFIG_DB, &[table, key, field]);
                        ops.push(match value {
                            Some(v) => format!("update {path} = {v:?}"),
                            None => format!("delete {path}"),
                        });
                    }
                }
            }
        }
        if ops.is_empty() {
            return Err(ActuatorError::Invalid(format!("nothing to set on {switch}")));
        }
        Ok(format!("gNMI Set to {switch} ({address}): {}", ops.join(", ")))
    }

    /// Sets `changes` on `table|key` in one SetRequest; the request's text
    /// (as [`Sonic::describe`] gives it).
    pub async fn set(&self, switch: &str, table: &str, key: &str, changes: &Fields) -> Result<String, ActuatorError> {
        self.set_changes(switch, &[fields_change(table, key, changes)]).await
    }

    /// Sends `changes` in one SetRequest, one transaction on SONiC: all of
    /// them or none; the request's text (as [`Sonic::describe_changes`]).
    pub async fn set_changes(&self, switch: &str, changes: &[Change]) -> Result<String, ActuatorError> {
        self.describe_changes(switch, changes)?;
        let mut client = self.connect(switch).await?;
        let addressing = self.addressing(switch, &mut client).await?;
        let text = self.describe_changes(switch, changes)?;
        let mut ops = SetOps { prefix: addressing.prefix(CONFIG_DB), ..SetOps::default() };
        for change in changes {
            match change {
                Change::Delete { table, key } => ops.delete.push(addressing.path(CONFIG_DB, &[table, key])),
                Change::Fields { table, key, fields } => {
                    for (field, value) in fields {
                        let path = addressing.path(CONFIG_DB, &[table, key, field]);
                        match value {
                            Some(v) => ops.update.push(Update {
                                path: Some(path),
                                val: Some(gnmi_proto::value::json_ietf(&serde_json::Value::String(v.clone()))),
                                ..Default::default()
                            }),
                            None => ops.delete.push(path),
                        }
                    }
                }
            }
        }
        tracing::info!(message = "Sending gNMI Set.", request = %text);
        client.set(ops).await.map_err(|e| outcome(switch, e))?;
        Ok(text)
    }
}

fn fields_change(table: &str, key: &str, fields: &Fields) -> Change {
    Change::Fields { table: table.to_string(), key: key.to_string(), fields: fields.clone() }
}

/// The switch did not serve `table|key` as `addressing` asked: the action
/// is refused (not retried), saying what to check.
fn not_served(switch: &str, table: &str, key: &str, addressing: &PathStyle, error: ClientError) -> ActuatorError {
    match error.code() {
        Some(tonic::Code::NotFound | tonic::Code::Unimplemented | tonic::Code::InvalidArgument) => {
            ActuatorError::NotSupported(format!(
                "switch {switch} does not serve {} ({table}|{key}) with path_style = \"{}\": {error}; \
                 check the switch's gNMI server and the actuator's `path_style` (prefix-target, sonic-db-origin or auto)",
                addressing.describe(CONFIG_DB, &[table, key]),
                addressing.name()
            ))
        }
        _ => outcome(switch, error),
    }
}

/// A gNMI error as the engine should treat it: refused values are invalid
/// (not retried); anything else fails with its reason, to be retried.
fn outcome(switch: &str, error: ClientError) -> ActuatorError {
    match error.code() {
        Some(tonic::Code::InvalidArgument) | Some(tonic::Code::NotFound) => {
            ActuatorError::Invalid(format!("switch {switch} refused it: {error}"))
        }
        _ => match error {
            ClientError::Connect { .. } | ClientError::Timeout { .. } => {
                ActuatorError::Failed(format!("switch {switch} is unreachable: {error}; nothing was changed"))
            }
            e => ActuatorError::Failed(format!("switch {switch}: {e}")),
        },
    }
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
        for (table, bad, expected) in [
            ("QUEUE", "Ethernet12", "QUEUE key \"Ethernet12\" is refused"),
            ("QUEUE", "Ethernet12|3|4", "key \"Ethernet12|3|4\" is refused"),
            ("QUEUE", "Ethernet12|9", "queue indices are 0 to 7"),
            ("QUEUE", "Eth/12|3", "key \"Eth/12\" is refused"),
            ("PFC_WD", "Ethernet12|3", "key \"Ethernet12|3\" is refused"),
            ("WRED_PROFILE", "A.B", "not a WRED profile name"),
        ] {
            let err = check_key(table, bad).unwrap_err();
            assert!(matches!(&err, ActuatorError::Invalid(m) if m.contains(expected)), "{bad}: {err:?}");
        }
    }

    #[test]
    fn changes_of_several_entries_are_described_as_one_set() {
        let endpoint = Endpoint {
            address: "127.0.0.1:1".into(),
            credentials: None,
            tls: None,
            style: PathStyleSetting::PrefixTarget,
            namespace: "localhost".into(),
        };
        let sonic = Sonic::new([("leaf".to_string(), endpoint)].into(), Duration::from_secs(1));
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
            "gNMI Set to leaf (127.0.0.1:1): delete CONFIG_DB@/WRED_PROFILE/ROCEMEND_Ethernet12_3, \
             update CONFIG_DB@/QUEUE/Ethernet12|3/wred_profile = \"AZURE_LOSSLESS\""
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
