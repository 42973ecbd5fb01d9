//! The mixed client's paths (origin `sonic-db`): `ParseDatabase` and `getDbtablePath`
//! (`mixed_db_client.go:517-900`).
//!
//! The first element is the database, the second the instance; sonic-gnmi **always drops
//! both** (`gnmiFullPath`, `:733-755`) and then reads table, key, field, list index. On a
//! single-ASIC switch the second element is never checked, so a path without the instance
//! (`/COUNTERS_DB/COUNTERS_PORT_NAME_MAP`) loses its table: it reads the whole database, which
//! COUNTERS_DB refuses ("Can not read all tables in COUNTERS_DB"), and `/CONFIG_DB/PFC_WD/
//! Ethernet4` reads table `Ethernet4` ("Failed to find CONFIG_DB Ethernet4 <nil> []"). On a
//! multi-ASIC switch it names the namespace (`localhost` is the default).

use gnmi_proto::gnmi::typed_value::Value as Typed;
use gnmi_proto::gnmi::{Path, TypedValue};
use tonic::Code;

use super::backend::Backend;
use super::errors::GoError;
use super::render::{counters_table_has_keys, Encoding, TablePath};

/// The default namespace's name in paths (`HOSTNAME`, `mixed_db_client.go:55`).
pub const LOCALHOST: &str = "localhost";

/// A value of a Set as the mixed client takes it: JSON_IETF text or proto bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum SetValue {
    /// `json_ietf_val`.
    Json(String),
    /// `proto_bytes`.
    Proto(Vec<u8>),
}

/// One mixed client: its database and namespace, from the request's paths.
#[derive(Debug, Clone)]
pub(crate) struct Mixed {
    pub prefix: Option<Path>,
    pub paths: Vec<Path>,
    /// The database (`CONFIG_DB`).
    pub target: String,
    /// The namespace (`asic0`); empty for the host's (`localhost`) or a single-ASIC switch.
    pub namespace: String,
    pub sep: char,
    pub encoding: Encoding,
}

impl Mixed {
    /// `NewMixedDbClient`: reads the database and namespace from `paths` (`ParseDatabase`).
    pub fn new(
        backend: &dyn Backend,
        namespaces: &[String],
        prefix: Option<&Path>,
        paths: &[Path],
        encoding: Encoding,
    ) -> Result<Mixed, GoError> {
        if paths.is_empty() {
            return Err(GoError::status(Code::Unimplemented, "No valid path"));
        }
        let mut target = String::new();
        let mut instance: Option<String> = None;
        let mut namespace = String::new();
        for path in paths.iter().filter(|p| !p.elem.is_empty()) {
            let elems: Vec<&str> =
                prefix.into_iter().flat_map(|p| p.elem.iter()).chain(&path.elem).map(|e| e.name.as_str()).collect();
            if elems.len() < 2 {
                return Err(GoError::status(Code::Unimplemented, "Invalid elem length"));
            }
            if target.is_empty() {
                target = elems[0].to_string();
            } else if target != elems[0] {
                return Err(GoError::status(Code::Unimplemented, "Target conflict in path"));
            }
            match &instance {
                None => instance = Some(elems[1].to_string()),
                Some(i) if i != elems[1] => {
                    return Err(GoError::status(Code::Unimplemented, "Namespace/container conflict in path"))
                }
                Some(_) => {}
            }
            // Only a multi-ASIC switch reads the second element (`:552-573`).
            if !namespaces.is_empty() {
                namespace = elems[1].to_string();
            }
        }
        if target.is_empty() {
            return Err(GoError::status(Code::Unimplemented, "No target specified in path"));
        }
        if namespace == LOCALHOST {
            namespace.clear();
        }
        let known_ns = namespace.is_empty() || namespaces.contains(&namespace);
        let Some(info) = backend.database(&target).filter(|_| known_ns) else {
            return Err(GoError::status(Code::Unimplemented, format!("Invalid target: ns {namespace}, container ")));
        };
        Ok(Mixed { prefix: prefix.cloned(), paths: paths.to_vec(), target, namespace, sep: info.separator, encoding })
    }

    /// The path's elements after the database and the instance (`gnmiFullPath`).
    pub fn full_elems(&self, path: &Path) -> Result<Vec<gnmi_proto::gnmi::PathElem>, GoError> {
        let elems: Vec<_> = self.prefix.iter().flat_map(|p| p.elem.iter()).chain(&path.elem).cloned().collect();
        if path.elem.is_empty() {
            return Ok(Vec::new());
        }
        if elems.len() < 2 {
            return Err(GoError::plain(format!("Invalid gnmi path: length {}", elems.len())));
        }
        Ok(elems[2..].to_vec())
    }

    /// `getDbtablePath`: where `path` reads or writes; `value` for writes.
    pub async fn table_path(
        &self,
        backend: &dyn Backend,
        path: &Path,
        value: Option<&TypedValue>,
    ) -> Result<(TablePath, Option<SetValue>), GoError> {
        let elems = self.full_elems(path)?;
        let sep = self.sep;
        let mut slice = vec![self.target.clone()];
        let mut db_path = String::new();
        for (i, elem) in elems.iter().enumerate() {
            if i != 0 {
                db_path.push(sep);
            }
            db_path.push_str(&elem.name);
            slice.push(elem.name.clone());
            if let Some(k) = elem.key.get("key") {
                db_path.push_str(k);
                slice.push(k.clone());
            }
        }
        let mut tp = TablePath { db: self.target.clone(), sep, ..TablePath::default() };
        if slice.len() > 1 {
            tp.table = slice[1].clone();
            // COUNTERS_DB's single-hash tables get an empty key inserted (`:789-800`).
            if tp.db == "COUNTERS_DB" && !counters_table_has_keys(&tp.table) {
                slice.insert(2, String::new());
            }
        }
        let set_value = value.map(set_value).transpose()?;
        let removing = set_value.is_none();
        let db = self.target.as_str();
        let entry_key = |k: &str| format!("{}{sep}{k}", tp.table);
        match slice.len() {
            1 => {}
            2 => {
                if removing {
                    let found = backend.keys(db, &format!("{}*", tp.table)).await;
                    match found {
                        Ok(keys) if !keys.is_empty() => {}
                        Ok(keys) => {
                            return Err(GoError::plain(format!(
                                "Failed to find {} {db_path} <nil> [{}]",
                                self.target,
                                keys.join(" ")
                            )))
                        }
                        Err(e) => {
                            return Err(GoError::plain(format!("Failed to find {} {db_path} {e} []", self.target)))
                        }
                    }
                }
            }
            3..=5 => {
                if removing {
                    backend
                        .exists(db, &entry_key(&slice[2]))
                        .await
                        .map_err(|_| GoError::plain(format!("redis Exists op failed for {db_path}")))?;
                }
                tp.key = slice[2].clone();
                if slice.len() >= 4 {
                    tp.field = slice[3].clone();
                }
                if slice.len() == 5 {
                    let index =
                        slice[4].parse::<i64>().map_err(|_| GoError::plain(format!("Invalid index {}", slice[4])))?;
                    // A negative index reads as no index (`tblPath.index >= 0`).
                    tp.index = usize::try_from(index).ok();
                }
            }
            _ => return Err(GoError::plain(format!("Invalid db table Path {db_path}"))),
        }
        Ok((tp, set_value))
    }
}

/// A Set's value as the mixed client takes it: JSON_IETF or proto bytes only.
fn set_value(v: &TypedValue) -> Result<SetValue, GoError> {
    match &v.value {
        Some(Typed::JsonIetfVal(j)) => Ok(SetValue::Json(String::from_utf8_lossy(j).into_owned())),
        Some(Typed::ProtoBytes(p)) => Ok(SetValue::Proto(p.clone())),
        other => Err(GoError::plain(format!("Unsupported TypedValue: {}", typed_text(other.as_ref())))),
    }
}

/// Go's `%v` of a `*gnmipb.TypedValue` for the few kinds a client may send.
fn typed_text(value: Option<&Typed>) -> String {
    match value {
        None => "<nil>".into(),
        Some(Typed::StringVal(s)) => format!("string_val:{s:?}"),
        Some(Typed::IntVal(n)) => format!("int_val:{n}"),
        Some(Typed::UintVal(n)) => format!("uint_val:{n}"),
        Some(Typed::BoolVal(b)) => format!("bool_val:{b}"),
        Some(Typed::JsonVal(j)) => format!("json_val:{:?}", String::from_utf8_lossy(j)),
        Some(Typed::AsciiVal(s)) => format!("ascii_val:{s:?}"),
        Some(other) => format!("{other:?}"),
    }
}
