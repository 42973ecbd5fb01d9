//! Redis data → gNMI values, as sonic-gnmi renders them: a table path's entries as one JSON
//! object (`TableData2Msi`, `db_client.go:963-1043`; the mixed client's variant,
//! `mixed_db_client.go:955-1050`), a field as a string.

use std::collections::BTreeMap;

use gnmi_proto::gnmi::typed_value::Value as Typed;
use gnmi_proto::gnmi::TypedValue;
use serde_json::Value as Json;

use super::backend::{Backend, Entry};
use super::errors::{go_value, GoError};

/// The JSON object being built (`map[string]interface{}`; Go's encoder sorts keys, a
/// `BTreeMap` does too).
pub(crate) type Msi = BTreeMap<String, Json>;

/// The tables of COUNTERS_DB stored under per-object keys; the others (`COUNTERS_PORT_NAME_MAP`,
/// …) are single hashes whose Redis key is the table's name (`db_client.go:508-510`).
pub(crate) fn counters_table_has_keys(table: &str) -> bool {
    table == "COUNTERS" || table == "PORT_PHY_ATTR"
}

/// A resolved path: where in Redis a gNMI path reads (sonic-gnmi's `tablePath`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TablePath {
    /// The database.
    pub db: String,
    /// The table (empty: the whole database, the mixed client only).
    pub table: String,
    /// The entry key (empty: the whole table).
    pub key: String,
    /// The database's separator.
    pub sep: char,
    /// One field (empty: the whole entry).
    pub field: String,
    /// The JSON key the entry goes under instead of its Redis key (virtual paths: the port's
    /// alias, `<alias>:<queue>`).
    pub json_table_key: String,
    /// The JSON field a virtual wildcard's field goes under.
    pub json_field: String,
    /// A virtual path's (never checked for existence).
    pub is_virtual: bool,
    /// A list index (the mixed client's fifth element).
    pub index: Option<usize>,
}

impl TablePath {
    /// The Redis key of the entry (`table<sep>key`), or the table's name when there is no key.
    pub fn redis_key(&self) -> String {
        if self.key.is_empty() {
            self.table.clone()
        } else {
            format!("{}{}{}", self.table, self.sep, self.key)
        }
    }

    /// The `KEYS` pattern of a table path: the table's own key for COUNTERS_DB's single-hash
    /// tables, else `table<sep>*`.
    pub fn table_pattern(&self) -> String {
        if self.db == "COUNTERS_DB" && !counters_table_has_keys(&self.table) {
            self.table.clone()
        } else {
            format!("{}{}*", self.table, self.sep)
        }
    }
}

/// Which client renders: the DB client (prefix target) or the mixed client (origin
/// `sonic-db`, which drops `NULL` fields, reads `field@` as a list, and encodes as asked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// `DbClient`.
    Db,
    /// `MixedDbClient` with the request's encoding.
    Mixed(Encoding),
}

/// The encodings the mixed client renders (`mixed_db_client.go:1052-1076`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    /// JSON_IETF.
    JsonIetf,
    /// PROTO: the entry's `pb` field as bytes.
    Proto,
    /// Anything else: refused when rendered, with the encoding's name.
    Other(&'static str),
}

pub(crate) fn redis_error(e: impl std::fmt::Display) -> GoError {
    GoError::plain(e.to_string())
}

fn object(fields: &Entry) -> Json {
    Json::Object(fields.iter().map(|(k, v)| (k.clone(), Json::String(v.clone()))).collect())
}

/// The mixed client's `makeJSON_redis`: `NULL` fields dropped, `name@` fields as lists.
fn mixed_object(fields: &Entry) -> serde_json::Map<String, Json> {
    let mut out = serde_json::Map::new();
    for (f, v) in fields {
        if f == "NULL" {
            continue;
        }
        match f.strip_suffix('@') {
            Some(name) => {
                out.insert(name.to_string(), Json::Array(v.split(',').map(|s| Json::String(s.into())).collect()));
            }
            None => {
                out.insert(f.clone(), Json::String(v.clone()));
            }
        }
    }
    out
}

/// `TableData2Msi`: the entries of `tp` into `msi`.
pub(crate) async fn table_data_to_msi(
    backend: &dyn Backend,
    tp: &TablePath,
    use_key: bool,
    flavor: Flavor,
    msi: &mut Msi,
) -> Result<(), GoError> {
    let db = tp.db.as_str();
    if tp.table.is_empty() {
        // Only the mixed client gets here (a path of the database alone).
        if db == "COUNTERS_DB" {
            return Err(GoError::plain("Can not read all tables in COUNTERS_DB"));
        }
        let pattern = format!("*{}*", tp.sep);
        for dbkey in backend.keys(db, &pattern).await.map_err(redis_error)? {
            let fv = backend.hgetall(db, &dbkey).await.map_err(redis_error)?;
            let Some((table, key)) = dbkey.split_once(tp.sep) else { continue };
            let table_obj = msi.entry(table.to_string()).or_insert_with(|| Json::Object(Default::default()));
            if let Json::Object(t) = table_obj {
                t.insert(key.to_string(), Json::Object(mixed_object(&fv)));
            }
        }
        return Ok(());
    }
    let dbkeys = if tp.key.is_empty() {
        backend.keys(db, &tp.table_pattern()).await.map_err(redis_error)?
    } else {
        vec![tp.redis_key()]
    };
    if flavor == Flavor::Db && !tp.json_field.is_empty() && !tp.json_table_key.is_empty() {
        // A virtual wildcard's field: a missing field is skipped (`db_client.go:1000-1006`).
        if let Some(first) = dbkeys.first() {
            if let Some(val) = backend.hget(db, first, &tp.field).await.map_err(redis_error)? {
                let fv = Entry::from([(tp.json_field.clone(), val)]);
                msi.insert(tp.json_table_key.clone(), object(&fv));
            }
        }
        return Ok(());
    }
    for dbkey in dbkeys {
        let fv = backend.hgetall(db, &dbkey).await.map_err(redis_error)?;
        match flavor {
            Flavor::Db => {
                if fv.is_empty() {
                    continue;
                }
                if !tp.json_table_key.is_empty() {
                    msi.insert(tp.json_table_key.clone(), object(&fv));
                } else if (!tp.key.is_empty() && !use_key) || tp.table == dbkey {
                    msi.extend(fv.into_iter().map(|(k, v)| (k, Json::String(v))));
                } else {
                    let Some((_, key)) = dbkey.split_once(tp.sep) else {
                        return Err(GoError::plain(format!("dbkey: {dbkey}, failed split from delimitor {}", tp.sep)));
                    };
                    msi.insert(key.to_string(), object(&fv));
                }
            }
            Flavor::Mixed(encoding) => {
                if (!tp.key.is_empty() && !use_key) || tp.table == dbkey {
                    match encoding {
                        Encoding::Proto => match fv.get("pb") {
                            Some(pb) => {
                                msi.insert("pb".into(), Json::String(pb.clone()));
                            }
                            None => {
                                let shown = go_value(&object(&fv));
                                return Err(GoError::plain(format!("No proto bytes found in redis {shown}")));
                            }
                        },
                        _ => msi.extend(mixed_object(&fv)),
                    }
                } else {
                    let key = dbkey.split_once(tp.sep).map_or("", |(_, k)| k);
                    msi.insert(key.to_string(), Json::Object(mixed_object(&fv)));
                }
            }
        }
    }
    Ok(())
}

/// The JSON object as a `json_ietf_val` (`Msi2TypedValue`).
pub(crate) fn json_value(msi: &Msi) -> TypedValue {
    // A map of strings and objects always serializes.
    let bytes = serde_json::to_vec(msi).unwrap_or_default();
    TypedValue { value: Some(Typed::JsonIetfVal(bytes)) }
}

/// A string value.
pub(crate) fn string_value(text: impl Into<String>) -> TypedValue {
    TypedValue { value: Some(Typed::StringVal(text.into())) }
}

/// The mixed client's rendering of the whole object in its encoding (`msi2TypedValue`).
pub(crate) fn mixed_value(msi: &Msi, encoding: Encoding) -> Result<TypedValue, GoError> {
    match encoding {
        Encoding::JsonIetf => Ok(json_value(msi)),
        Encoding::Proto => match msi.get("pb") {
            Some(Json::String(pb)) => Ok(TypedValue { value: Some(Typed::ProtoBytes(pb.clone().into_bytes())) }),
            _ => Err(GoError::plain(format!(
                "No proto bytes found in msi {}",
                go_value(&Json::Object(msi.clone().into_iter().collect()))
            ))),
        },
        Encoding::Other(name) => Err(GoError::plain(format!("Unknown encoding {name}"))),
    }
}

/// The DB client's Get of one path (`tableData2TypedValue`, `db_client.go:1063-1098`): a
/// field path is its value as a string, an error when the field is missing (`redis: nil`).
pub(crate) async fn db_get_value(backend: &dyn Backend, tps: &[TablePath]) -> Result<TypedValue, GoError> {
    let mut msi = Msi::new();
    for tp in tps {
        if tp.json_field.is_empty() && !tp.field.is_empty() {
            return match backend.hget(&tp.db, &tp.redis_key(), &tp.field).await.map_err(redis_error)? {
                Some(val) => Ok(string_value(val)),
                None => Err(GoError::plain("redis: nil")),
            };
        }
        table_data_to_msi(backend, tp, false, Flavor::Db, &mut msi).await?;
    }
    Ok(json_value(&msi))
}

/// The DB client's read for POLL and ONCE (`subscribeTableData2TypedValue`,
/// `db_client.go:1103-1147`): a missing field is skipped; `None` when nothing was found.
pub(crate) async fn db_poll_value(backend: &dyn Backend, tps: &[TablePath]) -> Result<Option<TypedValue>, GoError> {
    let mut msi = Msi::new();
    let mut received = false;
    for tp in tps {
        if tp.json_field.is_empty() && !tp.field.is_empty() {
            match backend.hget(&tp.db, &tp.redis_key(), &tp.field).await.map_err(redis_error)? {
                Some(val) => return Ok(Some(string_value(val))),
                None => continue,
            }
        }
        table_data_to_msi(backend, tp, false, Flavor::Db, &mut msi).await?;
        received |= !msi.is_empty();
    }
    Ok(received.then(|| json_value(&msi)))
}

/// The mixed client's read of one path (`tableData2TypedValue`, `mixed_db_client.go:1079-1163`):
/// a field as a quoted JSON string (not escaped: sonic-gnmi writes `"` + value + `"`), a
/// `field@` list as a JSON list; `None` when nothing was found.
pub(crate) async fn mixed_read(
    backend: &dyn Backend,
    tps: &[TablePath],
    encoding: Encoding,
) -> Result<Option<TypedValue>, GoError> {
    let ietf = |bytes: Vec<u8>| TypedValue { value: Some(Typed::JsonIetfVal(bytes)) };
    let mut msi = Msi::new();
    let mut received = false;
    for tp in tps {
        if tp.json_field.is_empty() && !tp.field.is_empty() {
            let key = tp.redis_key();
            if let Some(index) = tp.index {
                let list_field = format!("{}@", tp.field);
                let Some(val) = backend.hget(&tp.db, &key, &list_field).await.map_err(redis_error)? else {
                    continue;
                };
                let items: Vec<&str> = val.split(',').collect();
                let Some(item) = items.get(index) else {
                    return Err(GoError::plain(format!("Invalid index {index} for [{}]", items.join(" "))));
                };
                return Ok(Some(ietf(format!("\"{item}\"").into_bytes())));
            }
            if let Some(val) = backend.hget(&tp.db, &key, &tp.field).await.map_err(redis_error)? {
                return Ok(Some(ietf(format!("\"{val}\"").into_bytes())));
            }
            if let Some(val) = backend.hget(&tp.db, &key, &format!("{}@", tp.field)).await.map_err(redis_error)? {
                let items: Vec<&str> = val.split(',').collect();
                return Ok(Some(ietf(serde_json::to_vec(&items).unwrap_or_default())));
            }
            continue;
        }
        table_data_to_msi(backend, tp, false, Flavor::Mixed(encoding), &mut msi).await?;
        received |= !msi.is_empty();
    }
    if !received {
        return Ok(None);
    }
    mixed_value(&msi, encoding).map(Some)
}
