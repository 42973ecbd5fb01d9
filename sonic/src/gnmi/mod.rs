//! SONiC's databases over gNMI, from a client's side, as sonic-gnmi serves them: reads in the
//! style the switch was probed to take ([`crate::probe`]), writes only as origin `sonic-db`
//! `/CONFIG_DB/<instance>/TABLE/KEY[/field]` with JSON_IETF strings, and "absent" only from
//! sonic-gnmi's own words.
//!
//! - [`SwitchGnmi`]: one switch's gNMI client with its read style and instance element:
//!   [`SwitchGnmi::entry`] (`None` only on "No valid entry found …" for that very key),
//!   [`SwitchGnmi::table`], [`SwitchGnmi::hash`], [`SwitchGnmi::set`];
//! - [`write`]: a list of [`Change`](crate::Change)s as the Sets sonic-gnmi applies as asked
//!   ([`write::sets`]): a [`Change::Replace`](crate::Change::Replace) is two Sets, since one
//!   Set that deletes and rewrites an entry reaches CONFIG_DB as an in-place change (the
//!   config updater writes the difference);
//! - [`texts`]: sonic-gnmi's refusals and absence texts;
//! - [`transport`]: naming a TLS mismatch instead of "operation was canceled".
//!
//! What the answers mean, and what they do not:
//!
//! | answer | meaning here |
//! |---|---|
//! | an entry's fields | the entry |
//! | NOT_FOUND with [`texts::no_entry_on`] / [`texts::no_entry_for_path`] of the key asked | absent |
//! | any other NOT_FOUND, a refusal, an empty answer to an entry Get | an error, never absent |

pub mod texts;
pub mod transport;
pub mod write;

use std::collections::BTreeMap;

use gnmi_proto::gnmi::{Encoding, GetResponse, Path};
use gnmi_proto::sonic::PathStyle;
use gnmi_proto::{ClientError, GnmiClient};
use serde_json::Value as Json;

use crate::client::Entry;
use crate::layout::DatabaseLayout;

pub use texts::WriteGate;
pub use write::WriteSet;

/// A gNMI call to a SONiC switch that did not give what was asked. None of these means
/// "absent".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GnmiError {
    /// The call failed: unreachable, timed out, or refused with a status.
    #[error("{what}: {source}{}", hint.as_ref().map(|h| format!("; {h}")).unwrap_or_default())]
    Call {
        /// What was asked (`Get of sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4`).
        what: String,
        /// The client's error.
        source: ClientError,
        /// What the transport itself says is wrong (a TLS mismatch), when known.
        hint: Option<String>,
    },
    /// An answer sonic-gnmi never gives for it (no notification for an entry, not JSON).
    #[error("{what}: {problem}")]
    Unexpected {
        /// What was asked.
        what: String,
        /// What is wrong with the answer.
        problem: String,
    },
}

impl GnmiError {
    /// The status code, when the switch sent one.
    pub fn code(&self) -> Option<tonic::Code> {
        match self {
            GnmiError::Call { source, .. } => source.code(),
            GnmiError::Unexpected { .. } => None,
        }
    }

    /// The status message, when the switch sent one.
    pub fn message(&self) -> Option<&str> {
        match self {
            GnmiError::Call { source: ClientError::Status { status, .. }, .. } => Some(status.message()),
            _ => None,
        }
    }

    /// The write gate a Set's refusal names ([`WriteGate::of`]).
    pub fn write_gate(&self) -> Option<WriteGate> {
        (self.code() == Some(tonic::Code::Unimplemented)).then(|| self.message().and_then(WriteGate::of)).flatten()
    }

    /// Whether the switch's config updater refused the write's result ([`texts::PATCH_INVALID`],
    /// inside the UNKNOWN sonic-gnmi sends for every native-write error): the same write would be
    /// refused again.
    pub fn config_refused(&self) -> bool {
        self.code() == Some(tonic::Code::Unknown) && self.message().is_some_and(|m| m.contains(texts::PATCH_INVALID))
    }

    /// Whether the switch never answered (unreachable, timed out, or the connection broke):
    /// trying again later can help, and nothing can be concluded about the switch's data.
    pub fn is_transport(&self) -> bool {
        match self {
            GnmiError::Call { source, .. } => match source {
                ClientError::Connect { .. } | ClientError::Timeout { .. } => true,
                ClientError::Status { status, .. } => matches!(
                    status.code(),
                    tonic::Code::Unavailable | tonic::Code::Cancelled | tonic::Code::DeadlineExceeded
                ),
                _ => false,
            },
            GnmiError::Unexpected { .. } => false,
        }
    }
}

/// One switch's gNMI, read in its probed style and written as origin `sonic-db`.
#[derive(Debug, Clone)]
pub struct SwitchGnmi {
    client: GnmiClient,
    tls: bool,
    reads: PathStyle,
    instance: String,
    layout: DatabaseLayout,
}

impl SwitchGnmi {
    /// `client` (connected with TLS or not, `tls`: what a transport error is diagnosed
    /// against), reading in `reads` (from the switch's profile) and writing under `instance`
    /// (`localhost`, or `asicN` on a multi-ASIC switch).
    pub fn new(client: GnmiClient, tls: bool, reads: PathStyle, instance: impl Into<String>) -> Self {
        SwitchGnmi { client, tls, reads, instance: instance.into(), layout: DatabaseLayout::standard() }
    }

    /// How reads are addressed.
    pub fn reads(&self) -> &PathStyle {
        &self.reads
    }

    /// The instance element of writes.
    pub fn instance(&self) -> &str {
        &self.instance
    }

    /// The client, for calls of one's own.
    pub fn client(&mut self) -> &mut GnmiClient {
        &mut self.client
    }

    /// The Get of `elements` under `db` in the read style, with its text for messages.
    fn request(&self, db: &str, elements: &[&str]) -> (Option<Path>, Path, String) {
        let (prefix, path) = self.reads.request(db, elements);
        (prefix, path, format!("Get of {}", self.reads.describe(db, elements)))
    }

    async fn get(&mut self, prefix: Option<Path>, path: Path, what: &str) -> Result<GetResponse, GnmiError> {
        let address = self.client.address().to_string();
        match self.client.get(prefix, vec![path], Encoding::JsonIetf).await {
            Ok(response) => Ok(response),
            Err(source) => {
                let hint = transport::diagnose(&address, self.tls, &source).await;
                Err(GnmiError::Call { what: what.to_string(), source, hint })
            }
        }
    }

    /// Every field of `db`'s entry `table|key`; `None` only when sonic-gnmi says that very key
    /// has no entry ([`texts`]). An answer without a notification is an error: sonic-gnmi
    /// answers an entry Get with its fields or with "No valid entry found".
    pub async fn entry(&mut self, db: &str, table: &str, key: &str) -> Result<Option<Entry>, GnmiError> {
        let (prefix, path, what) = self.request(db, &[table, key]);
        let absent = match &self.reads {
            PathStyle::PrefixTarget => {
                let separator = self.layout.database(db).map_or('|', |d| d.separator);
                texts::no_entry_on(db, &format!("{table}{separator}{key}"))
            }
            PathStyle::SonicDbOrigin { .. } => texts::no_entry_for_path(&path),
        };
        match self.get(prefix, path, &what).await {
            Ok(response) => match first_json(&response, &what)? {
                Some(json) => entry_of(&json, &what).map(Some),
                None => Err(GnmiError::Unexpected {
                    what,
                    problem: "no notification: sonic-gnmi answers an entry Get with its fields or NOT_FOUND \
                              \"No valid entry found …\", so this is not an answer about the entry"
                        .into(),
                }),
            },
            Err(e) if e.code() == Some(tonic::Code::NotFound) && e.message() == Some(absent.as_str()) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Every entry of `db`'s table `table`, by key. A table with no entries is empty (sonic-gnmi
    /// answers it with an empty object, or no notification from origin `sonic-db`).
    pub async fn table(&mut self, db: &str, table: &str) -> Result<BTreeMap<String, Entry>, GnmiError> {
        let (prefix, path, what) = self.request(db, &[table]);
        let response = self.get(prefix, path, &what).await?;
        let Some(json) = first_json(&response, &what)? else { return Ok(BTreeMap::new()) };
        let Json::Object(entries) = json else {
            return Err(GnmiError::Unexpected { what, problem: format!("{json} is not an object of entries") });
        };
        entries.into_iter().map(|(key, fields)| Ok((key, entry_of(&fields, &what)?))).collect()
    }

    /// The single hash `name` of `db` (COUNTERS_DB's name maps, `COUNTERS_QUEUE_NAME_MAP`):
    /// `None` when sonic-gnmi has no data for it (orchagent has not written it).
    pub async fn hash(&mut self, db: &str, name: &str) -> Result<Option<Entry>, GnmiError> {
        let (prefix, path, what) = self.request(db, &[name]);
        let response = self.get(prefix, path, &what).await?;
        match first_json(&response, &what)? {
            None => Ok(None),
            Some(json) => entry_of(&json, &what).map(|e| Some(e).filter(|e| !e.is_empty())),
        }
    }

    /// Sends one Set ([`write::sets`] makes them).
    pub async fn set(&mut self, set: &WriteSet) -> Result<(), GnmiError> {
        let address = self.client.address().to_string();
        match self.client.set(set.ops.clone()).await {
            Ok(_) => Ok(()),
            Err(source) => {
                let hint = transport::diagnose(&address, self.tls, &source).await;
                Err(GnmiError::Call { what: format!("Set ({})", set.text), source, hint })
            }
        }
    }
}

/// The first update's value of `response` as JSON; `None` when there is no notification or
/// no update.
fn first_json(response: &GetResponse, what: &str) -> Result<Option<Json>, GnmiError> {
    let value = response.notification.first().and_then(|n| n.update.first()).and_then(|u| u.val.as_ref());
    let Some(value) = value else { return Ok(None) };
    match gnmi_proto::value::to_json(value) {
        Some(Ok(json)) => Ok(Some(json)),
        _ => Err(GnmiError::Unexpected {
            what: what.to_string(),
            problem: format!("{} is not JSON", gnmi_proto::value::describe(value)),
        }),
    }
}

/// A JSON object of fields as Redis holds them: strings as they are, a list (the mixed
/// client's rendering of a `name@` field) back as `name@` = `a,b`.
fn entry_of(json: &Json, what: &str) -> Result<Entry, GnmiError> {
    let bad = |problem: String| GnmiError::Unexpected { what: what.to_string(), problem };
    let Json::Object(fields) = json else { return Err(bad(format!("{json} is not an object of fields"))) };
    let mut entry = Entry::new();
    for (field, value) in fields {
        match value {
            Json::String(s) => {
                entry.insert(field.clone(), s.clone());
            }
            Json::Array(items) => {
                let items: Option<Vec<&str>> = items.iter().map(Json::as_str).collect();
                let items = items.ok_or_else(|| bad(format!("field {field}: {value} is not a list of strings")))?;
                entry.insert(format!("{field}@"), items.join(","));
            }
            other => return Err(bad(format!("field {field}: {other} is not a string"))),
        }
    }
    Ok(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_read_as_redis_holds_them_and_odd_values_are_errors() {
        let json = serde_json::json!({"action": "drop", "ports": ["Ethernet0", "Ethernet4"]});
        let entry = entry_of(&json, "Get").unwrap();
        assert_eq!(entry["action"], "drop");
        assert_eq!(entry["ports@"], "Ethernet0,Ethernet4", "a list is a name@ field");
        assert!(entry_of(&serde_json::json!({"x": 1}), "Get").is_err());
        assert!(entry_of(&serde_json::json!("drop"), "Get").is_err());
    }
}
