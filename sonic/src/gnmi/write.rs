//! CONFIG_DB changes as the Sets sonic-gnmi applies as meant.
//!
//! sonic-gnmi routes a Set by its origin alone: only origin `sonic-db` reaches CONFIG_DB
//! (`server.go:1170-1208`), and its mixed client drops the path's first two elements, the
//! database and the instance (`mixed_db_client.go:733-755`), so every path is
//! `/CONFIG_DB/<instance>/TABLE/KEY[/field]`. A key holding `/` (a port `Ethernet1/1`) is sent
//! with it escaped as `~1`: the client joins the names into a JSON pointer unescaped, and
//! unescapes `~1` in the key again (`json_client.go:124-131`). Values are JSON_IETF: a field
//! as a JSON string (a `name@` field as a list under `name`), a new entry as one object.
//!
//! The config updater behind it writes the *difference* from the running configuration, so a
//! Set that deletes an entry and writes it again reaches CONFIG_DB as an in-place change,
//! which orchagent's watchdog does not act on. A [`Change::Replace`] is therefore two Sets: the
//! entry deleted, then written ([`sets`]). Each Set takes the updater's step (≥ 1 s).

use gnmi_proto::gnmi::{Path, Update};
use gnmi_proto::sonic::SONIC_DB_ORIGIN;
use gnmi_proto::SetOps;
use serde_json::{Map, Value as Json};

use crate::client::{Change, Entry};
use crate::layout::db::CONFIG_DB;

/// One Set and its text (`delete sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4, update …`).
#[derive(Debug, Clone)]
pub struct WriteSet {
    /// The operations.
    pub ops: SetOps,
    /// What they are, for plans and logs.
    pub text: String,
}

/// A change refused before it became a Set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("refused before sending: {0}")]
pub struct WriteError(pub String);

/// The path of `table|key` (and `field`) in CONFIG_DB under `instance`, origin `sonic-db`.
pub fn config_path(instance: &str, table: &str, key: &str, field: Option<&str>) -> Path {
    let key = key.replace('/', "~1");
    let mut names = vec![CONFIG_DB, instance, table, key.as_str()];
    names.extend(field);
    Path { origin: SONIC_DB_ORIGIN.to_string(), ..gnmi_proto::path::elems(&names) }
}

/// The Sets that make CONFIG_DB under `instance` hold `changes`, in order: one Set, or, when
/// a [`Change::Replace`] is among them, a first Set deleting each replaced entry and a second
/// carrying everything (the replaced entries written whole). Checked before anything is
/// made: names non-empty, no `~` in a key (it would read as an escape), fields on every write.
pub fn sets(instance: &str, changes: &[Change]) -> Result<Vec<WriteSet>, WriteError> {
    let mut first = Builder::default();
    let mut second = Builder::default();
    for change in changes {
        let (table, key) = change.table_key();
        if table.is_empty() || key.is_empty() || key.contains('~') || table.contains('/') {
            return Err(WriteError(format!(
                "table {table:?} key {key:?}: a table is a name without /, a key a non-empty name without ~"
            )));
        }
        let entry = |field: Option<&str>| config_path(instance, table, key, field);
        match change {
            Change::Set { fields, .. } => {
                nonempty(table, key, fields)?;
                for (field, value) in fields {
                    let (name, value) = field_value(field, value);
                    second.update(entry(Some(name)), value);
                }
            }
            Change::DeleteFields { fields, .. } => {
                if fields.is_empty() {
                    return Err(WriteError(format!("{table}|{key}: no fields to delete")));
                }
                for field in fields {
                    second.delete(entry(Some(field.strip_suffix('@').unwrap_or(field))));
                }
            }
            Change::Delete { .. } => second.delete(entry(None)),
            Change::Create { fields, .. } => {
                nonempty(table, key, fields)?;
                second.update(entry(None), object(fields));
            }
            Change::Replace { fields, .. } => {
                nonempty(table, key, fields)?;
                first.delete(entry(None));
                second.update(entry(None), object(fields));
            }
        }
    }
    Ok([first, second].into_iter().filter(|b| !b.texts.is_empty()).map(Builder::finish).collect())
}

fn nonempty(table: &str, key: &str, fields: &Entry) -> Result<(), WriteError> {
    if fields.is_empty() || fields.keys().any(String::is_empty) {
        return Err(WriteError(format!("{table}|{key}: a write needs fields, each with a name")));
    }
    Ok(())
}

/// A field's name and JSON value: `name@` as a list under `name`, anything else a string.
fn field_value<'a>(field: &'a str, value: &str) -> (&'a str, Json) {
    match field.strip_suffix('@') {
        Some(name) => (name, Json::Array(value.split(',').map(|s| Json::String(s.into())).collect())),
        None => (field, Json::String(value.to_string())),
    }
}

/// A whole entry as one JSON object.
fn object(fields: &Entry) -> Json {
    let map: Map<String, Json> = fields
        .iter()
        .map(|(f, v)| {
            let (name, value) = field_value(f, v);
            (name.to_string(), value)
        })
        .collect();
    Json::Object(map)
}

#[derive(Default)]
struct Builder {
    ops: SetOps,
    texts: Vec<String>,
}

impl Builder {
    fn delete(&mut self, path: Path) {
        self.texts.push(format!("delete {}", gnmi_proto::path_to_string(&path)));
        self.ops.delete.push(path);
    }

    fn update(&mut self, path: Path, value: Json) {
        self.texts.push(format!("update {} = {value}", gnmi_proto::path_to_string(&path)));
        self.ops.update.push(Update {
            path: Some(path),
            val: Some(gnmi_proto::value::json_ietf(&value)),
            ..Default::default()
        });
    }

    fn finish(self) -> WriteSet {
        WriteSet { ops: self.ops, text: self.texts.join(", ") }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pairs: &[(&str, &str)]) -> Entry {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_replace_is_two_sets_and_everything_else_one() {
        let replace = Change::Replace {
            table: "PFC_WD".into(),
            key: "Ethernet4".into(),
            fields: entry(&[("action", "drop"), ("detection_time", "200")]),
        };
        let two = sets("localhost", &[replace]).unwrap();
        let texts: Vec<&str> = two.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "delete sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4",
                r#"update sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4 = {"action":"drop","detection_time":"200"}"#
            ]
        );
        let set =
            Change::Set { table: "PORT".into(), key: "Ethernet4".into(), fields: entry(&[("admin_status", "down")]) };
        let gone = Change::DeleteFields { table: "PORT".into(), key: "Ethernet4".into(), fields: vec!["x".into()] };
        let one = sets("asic0", &[set, gone]).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(
            one[0].text,
            "update sonic-db:/CONFIG_DB/asic0/PORT/Ethernet4/admin_status = \"down\", \
             delete sonic-db:/CONFIG_DB/asic0/PORT/Ethernet4/x"
        );
    }

    #[test]
    fn a_key_with_a_slash_is_escaped_as_sonic_gnmi_unescapes_it() {
        let path = config_path("localhost", "PFC_WD", "Ethernet1/1", None);
        assert_eq!(path.elem[3].name, "Ethernet1~11");
        let bad = Change::Delete { table: "PFC_WD".into(), key: "a~b".into() };
        assert!(sets("localhost", &[bad]).is_err(), "a ~ would read as an escape");
        let empty = Change::Create { table: "PFC_WD".into(), key: "Ethernet4".into(), fields: Entry::new() };
        assert!(sets("localhost", &[empty]).is_err());
    }
}
