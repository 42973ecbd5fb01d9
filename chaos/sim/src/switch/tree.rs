//! The switch's data tree: which gNMI paths exist, what they read, and how
//! a Set changes CONFIG_DB.
//!
//! Three trees. A SONiC database is named in one of two ways
//! ([`Style`]), as SONiC's telemetry does (`shared/REFERENCE.md` §4):
//!
//! - **prefix target**: the request prefix's target is the database
//!   (`COUNTERS_DB`, `CONFIG_DB`), the paths start at the table;
//! - **origin `sonic-db`**: the database is the first element, then
//!   optionally the namespace `localhost` (`/sonic-db:CONFIG_DB/localhost/PFC_WD/Ethernet0`).
//!
//! A target anywhere but in the prefix is ignored (gNMI 2.2.2.1): a request
//! that names its database only there has none, and is refused with
//! `NOT_FOUND` naming the missing prefix target. [`request_path`] is how the
//! service reads a request's path; [`read`] takes the result.
//!
//! | path below the database | reads |
//! |---|---|
//! | `COUNTERS_DB`: `COUNTERS/<port>` | the port's `SAI_PORT_STAT_*` as JSON, values as strings |
//! | `COUNTERS/<port>/<SAI_PORT_STAT_…>` | one counter, `string_val` |
//! | `COUNTERS/<port>/Queues` | `{"Ethernet0:3": {"SAI_QUEUE_STAT_PACKETS": "…", …}, …}` |
//! | `COUNTERS/<port>/Pfcwd` | `{"Ethernet0:3": {"PFC_WD_STATUS": "operational", …}, …}` |
//! | `COUNTERS_PORT_NAME_MAP`, `COUNTERS_QUEUE_NAME_MAP` | `{"Ethernet0": "oid:0x1000000000001", …}`, `{"Ethernet0:3": "oid:0x15000000000003", …}` |
//! | `COUNTERS[/<oid>[/<field>]]` | the hash of a port's or a queue's OID (a queue's holds its `PFC_WD_*` fields too), or one field |
//! | `CONFIG_DB`: `<table>[/<key>[/<field>]]` | JSON of the table or entry, or the field's `string_val` (tables `PFC_WD`, `WRED_PROFILE`, `PORT`, `QUEUE`; a `QUEUE` key is one element, `Ethernet0\|3`, as redis writes it) |
//! | origin `openconfig` (or none): `/interfaces/interface[name=X]/state/…` | `oper-status`, `counters/{in-errors,in-fcs-errors,carrier-transitions,…}` |
//!
//! The port-name paths (`COUNTERS/<port>…`) are sonic-gnmi's virtual paths,
//! served with a prefix target only; with origin `sonic-db` the `COUNTERS`
//! keys are OIDs, as redis holds them. `<port>` may be a glob (`Ethernet*`,
//! `*`); a wildcard is expanded into one update per port. A missing CONFIG_DB key or field is `NOT_FOUND`
//! saying "not found"; a table or database this switch does not have is
//! `NOT_FOUND` saying "not served".
//!
//! A Set is one transaction, validated as a whole once every operation is
//! applied (deletes, then replaces, then updates, as gNMI orders them):
//! each field against the schema, each entry touched (a WRED profile's
//! max ≥ min), and the leafrefs ([`config::dangling`]): a queue bound to a
//! profile that does not exist when the Set is done is refused, and so is
//! deleting a profile a queue still uses. A profile created by the same
//! Set counts, wherever it comes in the request; a profile deleted by it
//! and re-bound away from in the same Set is no conflict.

// tonic's `Status` is the gRPC error these functions end in; boxing it at
// every internal call only to unbox it at the RPC boundary buys nothing.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, HashMap};

use gnmi_proto::gnmi::typed_value::Value as TV;
use gnmi_proto::gnmi::update_result::Operation;
use gnmi_proto::gnmi::{Encoding, Path, PathElem, SetRequest, TypedValue, UpdateResult};
use gnmi_proto::path::{join, path_to_string};
use gnmi_proto::sonic;
use serde_json::{Map, Value as Json};
use tonic::Status;

use super::config::{self, ConfigDb};
use super::counters;
use super::model::State;
use super::reply::{concrete, elem, glob, json_value, not_found, string};

/// Which tree a path is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tree {
    /// SONiC COUNTERS_DB virtual paths.
    Counters,
    /// SONiC CONFIG_DB.
    Config,
    /// OpenConfig interfaces.
    OpenConfig,
}

/// How a request named its SONiC database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// The prefix's target.
    PrefixTarget,
    /// Origin `sonic-db` and the database as the first element.
    SonicDbOrigin,
}

impl Style {
    /// As configs spell it.
    pub fn name(self) -> &'static str {
        match self {
            Style::PrefixTarget => "prefix-target",
            Style::SonicDbOrigin => "sonic-db-origin",
        }
    }
}

/// Where a path points: the tree, how it named its database (none for
/// OpenConfig), and how many leading elements name the database (and
/// namespace) rather than the data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// The tree.
    pub tree: Tree,
    /// How the database was named.
    pub style: Option<Style>,
    /// Elements before the data (`CONFIG_DB`, `localhost`).
    pub head: usize,
}

/// The databases of a SONiC switch this one does not serve.
const OTHER_DBS: [&str; 7] =
    ["APPL_DB", "ASIC_DB", "STATE_DB", "LOGLEVEL_DB", "FLEX_COUNTER_DB", "SNMP_OVERLAY_DB", "APPL_STATE_DB"];

/// The one namespace of this (single-ASIC) switch, as sonic-gnmi names it.
pub const NAMESPACE: &str = "localhost";

fn tree_of_db(path: &Path, db: &str) -> Result<Tree, Status> {
    match db {
        "COUNTERS_DB" => Ok(Tree::Counters),
        "CONFIG_DB" => Ok(Tree::Config),
        other if OTHER_DBS.contains(&other) => {
            Err(not_found(path, &format!("database {other} is not served by this switch (COUNTERS_DB, CONFIG_DB are)")))
        }
        other => {
            Err(not_found(path, &format!("{other:?} is not a database this switch serves (COUNTERS_DB, CONFIG_DB)")))
        }
    }
}

/// A request path as this switch reads it: the prefix's elements then the
/// path's, the path's origin or else the prefix's, and the prefix's target
/// only: a target elsewhere is ignored (gNMI 2.2.2.1).
pub fn request_path(prefix: Option<&Path>, path: &Path) -> Path {
    let path = Path { target: String::new(), ..path.clone() };
    let mut full = join(prefix, &path);
    full.target = prefix.map(|p| p.target.clone()).unwrap_or_default();
    full
}

/// Where `path` (as [`request_path`] makes it) points.
pub fn locate(path: &Path) -> Result<Location, Status> {
    let first = path.elem.first().map(|e| e.name.as_str());
    if !path.target.is_empty() && path.target != "OC-YANG" {
        if path.origin == "sonic-db" {
            // Two ways of naming the database at once: sonic-gnmi refuses it.
            return Err(invalid(path, "the prefix target and origin sonic-db both name a database: use one"));
        }
        let tree = tree_of_db(path, &path.target)?;
        return Ok(Location { tree, style: Some(Style::PrefixTarget), head: 0 });
    }
    match (path.origin.as_str(), first) {
        ("sonic-db", Some(db)) => {
            let tree = tree_of_db(path, db)?;
            let second = path.elem.get(1).map(|e| e.name.as_str());
            let head = match second {
                Some(NAMESPACE) => 2,
                Some(ns) if ns.starts_with("asic") && ns[4..].parse::<u32>().is_ok() => {
                    return Err(not_found(
                        path,
                        &format!("namespace {ns} is not served (this switch has one namespace, {NAMESPACE})"),
                    ));
                }
                _ => 1,
            };
            Ok(Location { tree, style: Some(Style::SonicDbOrigin), head })
        }
        ("sonic-db", None) => Err(not_found(path, "origin sonic-db needs the database as the first element")),
        (origin, Some("interfaces")) if origin.is_empty() || origin.starts_with("openconfig") => {
            Ok(Location { tree: Tree::OpenConfig, style: None, head: 0 })
        }
        (_, first) => {
            // SONiC data without a database: say which prefix target is missing.
            let db = match first {
                Some("COUNTERS") | Some("COUNTERS_PORT_NAME_MAP") => "COUNTERS_DB",
                Some(t) if config::TABLES.contains(&t) => "CONFIG_DB",
                _ => "COUNTERS_DB or CONFIG_DB",
            };
            Err(not_found(
                path,
                &format!(
                    "no database: missing prefix target {db} (or origin sonic-db with the database as the first \
                     element); a target outside the prefix is ignored"
                ),
            ))
        }
    }
}

/// The tree of `path` and its elements below the database name.
pub fn classify(path: &Path) -> Result<(Tree, &[PathElem]), Status> {
    let at = locate(path)?;
    Ok((at.tree, &path.elem[at.head..]))
}

/// A CONFIG_DB table this switch does not have.
fn not_served(path: &Path, table: &str) -> Status {
    not_found(path, &format!("CONFIG_DB table {table:?} is not served by this switch ({})", config::TABLES.join(", ")))
}

fn invalid(path: &Path, why: &str) -> Status {
    Status::invalid_argument(format!("{}: {why}", path_to_string(path)))
}

/// Reads `path` (a request's path as [`request_path`] makes it, its target
/// the prefix's): the concrete paths and their values. An unknown path is
/// NotFound.
pub fn read(state: &State, path: &Path, encoding: Encoding) -> Result<Vec<(Path, TypedValue)>, Status> {
    let at = locate(path)?;
    let elems = &path.elem[at.head..];
    // The elements before `elems` (the database name and namespace), kept
    // in the output.
    let head: Vec<PathElem> = path.elem[..at.head].to_vec();
    match at.tree {
        Tree::Counters => {
            let virtual_paths = at.style == Some(Style::PrefixTarget);
            counters::read(state, path, head, elems, encoding, virtual_paths)
        }
        Tree::Config => read_config(&state.config, path, head, elems, encoding),
        Tree::OpenConfig => read_openconfig(state, path, elems),
    }
}

fn entry_json(entry: &BTreeMap<String, String>) -> Json {
    Json::Object(entry.iter().map(|(k, v)| (k.clone(), Json::String(v.clone()))).collect())
}

fn read_config(
    db: &ConfigDb,
    path: &Path,
    head: Vec<PathElem>,
    elems: &[PathElem],
    encoding: Encoding,
) -> Result<Vec<(Path, TypedValue)>, Status> {
    let names: Vec<&str> = elems.iter().map(|e| e.name.as_str()).collect();
    let value = match names[..] {
        [] => {
            let tables: Map<String, Json> = config::TABLES
                .iter()
                .map(|t| {
                    let entries = db.get(*t).map(|e| e.iter().map(|(k, v)| (k.clone(), entry_json(v))).collect());
                    (t.to_string(), Json::Object(entries.unwrap_or_default()))
                })
                .collect();
            json_value(&Json::Object(tables), encoding)
        }
        [table, ..] if !config::TABLES.contains(&table) => {
            return Err(not_served(path, table));
        }
        [table] => {
            let entries = db.get(table).map(|e| e.iter().map(|(k, v)| (k.clone(), entry_json(v))).collect());
            json_value(&Json::Object(entries.unwrap_or_default()), encoding)
        }
        [table, key] => match db.get(table).and_then(|t| t.get(key)) {
            Some(entry) => json_value(&entry_json(entry), encoding),
            // sonic-gnmi's own words, which are what a client may take as "absent".
            None if path.origin == "sonic-db" => {
                let text = format!("No valid entry found for path {}", gnmi_proto::path::go_path(path));
                return Err(Status::not_found(text));
            }
            None => return Err(Status::not_found(format!("No valid entry found on CONFIG_DB with key {table}|{key}"))),
        },
        [table, key, field] => match db.get(table).and_then(|t| t.get(key)).and_then(|e| e.get(field)) {
            Some(v) => string(v.clone()),
            None => return Err(not_found(path, &format!("field {field:?} of {table}|{key} not found in CONFIG_DB"))),
        },
        _ => return Err(not_found(path, "CONFIG_DB paths are CONFIG_DB/<table>/<key>/<field>")),
    };
    let mut elems_out = head;
    elems_out.extend(elems.iter().map(|e| elem(&e.name)));
    Ok(vec![(concrete(path, elems_out), value)])
}

fn read_openconfig(state: &State, path: &Path, elems: &[PathElem]) -> Result<Vec<(Path, TypedValue)>, Status> {
    let wanted = elems.get(1).map(|e| (e.name.as_str(), e.key.get("name").map(String::as_str).unwrap_or("*")));
    if let Some((name, _)) = wanted {
        if name != "interface" {
            return Err(not_found(path, "OpenConfig paths here are /interfaces/interface[name=X]/state/…"));
        }
    }
    let pattern = wanted.map(|(_, n)| n).unwrap_or("*");
    let rest: Vec<&str> = elems.iter().skip(2).map(|e| e.name.as_str()).collect();
    let mut out = Vec::new();
    for port in state.ports.iter().filter(|p| glob(pattern, &p.name)) {
        let leaves: [(&[&str], TypedValue); 7] = [
            (&["state", "name"], string(port.name.clone())),
            (&["state", "oper-status"], string(if port.oper_up { "UP" } else { "DOWN" }.into())),
            (&["state", "counters", "in-octets"], gnmi_proto::value::uint(port.stats[0])),
            (&["state", "counters", "out-octets"], gnmi_proto::value::uint(port.stats[1])),
            (&["state", "counters", "in-errors"], gnmi_proto::value::uint(port.stats[2])),
            (&["state", "counters", "in-fcs-errors"], gnmi_proto::value::uint(port.stats[3])),
            (&["state", "counters", "carrier-transitions"], gnmi_proto::value::uint(port.carrier_transitions)),
        ];
        for (leaf, value) in leaves {
            if rest.len() <= leaf.len() && leaf[..rest.len()] == rest[..] {
                let mut key = HashMap::new();
                key.insert("name".to_string(), port.name.clone());
                let mut elems_out = vec![elem("interfaces"), PathElem { name: "interface".into(), key }];
                elems_out.extend(leaf.iter().map(|n| elem(n)));
                out.push((concrete(path, elems_out), value));
            }
        }
    }
    if out.is_empty() {
        return Err(not_found(path, "no such interface or leaf"));
    }
    Ok(out)
}

/// A CONFIG_DB value from a Set: strings, numbers, booleans, or JSON
/// holding one of them.
fn field_value(path: &Path, value: Option<&TypedValue>) -> Result<String, Status> {
    let wrong = |what: String| invalid(path, &format!("{what} is not a string, number, boolean or JSON scalar"));
    let value = value.ok_or_else(|| invalid(path, "the update has no value"))?;
    match &value.value {
        Some(TV::StringVal(s)) | Some(TV::AsciiVal(s)) => Ok(s.clone()),
        Some(TV::UintVal(n)) => Ok(n.to_string()),
        Some(TV::IntVal(n)) => Ok(n.to_string()),
        Some(TV::BoolVal(b)) => Ok(b.to_string()),
        Some(TV::JsonVal(b)) | Some(TV::JsonIetfVal(b)) => match serde_json::from_slice::<Json>(b) {
            Ok(Json::String(s)) => Ok(s),
            Ok(Json::Number(n)) => Ok(n.to_string()),
            Ok(Json::Bool(b)) => Ok(b.to_string()),
            _ => Err(wrong(gnmi_proto::value::describe(value))),
        },
        _ => Err(wrong(gnmi_proto::value::describe(value))),
    }
}

/// A whole entry from a Set at `<table>/<key>`: a JSON object of scalars.
fn entry_value(path: &Path, value: Option<&TypedValue>) -> Result<BTreeMap<String, String>, Status> {
    let value = value.ok_or_else(|| invalid(path, "the update has no value"))?;
    let json = match &value.value {
        Some(TV::JsonVal(b)) | Some(TV::JsonIetfVal(b)) => serde_json::from_slice::<Json>(b).ok(),
        _ => None,
    };
    let Some(Json::Object(fields)) = json else {
        return Err(invalid(
            path,
            &format!("an entry is set with a JSON object, not {}", gnmi_proto::value::describe(value)),
        ));
    };
    fields
        .into_iter()
        .map(|(k, v)| match v {
            Json::String(s) => Ok((k, s)),
            Json::Number(n) => Ok((k, n.to_string())),
            Json::Bool(b) => Ok((k, b.to_string())),
            other => Err(invalid(path, &format!("field {k:?} is {other}, not a scalar"))),
        })
        .collect()
}

/// Applies a SetRequest to CONFIG_DB as one transaction: all of it or
/// nothing. Returns the results, one per operation, in request order.
pub fn set(state: &mut State, request: &SetRequest) -> Result<Vec<UpdateResult>, Status> {
    let mut db = state.config.clone();
    // (table, key, full path) of every entry the request writes.
    let mut touched: Vec<(String, String, Path)> = Vec::new();
    let mut results = Vec::new();
    let prefix = request.prefix.as_ref();
    let mut target = |path: &Path| -> Result<(Path, Vec<String>), Status> {
        let (full, names) = config_target(state, prefix, path)?;
        touched.push((names[0].clone(), names[1].clone(), full.clone()));
        Ok((full, names))
    };
    for path in &request.delete {
        let (_, names) = target(path)?;
        delete(&mut db, &names);
        results.push(UpdateResult { path: Some(path.clone()), op: Operation::Delete as i32, ..Default::default() });
    }
    for (updates, op) in [(&request.replace, Operation::Replace), (&request.update, Operation::Update)] {
        for update in updates {
            let path = update.path.clone().unwrap_or_default();
            let (full, names) = target(&path)?;
            write(&mut db, &full, &names, update.val.as_ref(), op)?;
            results.push(UpdateResult { path: Some(path.clone()), op: op as i32, ..Default::default() });
        }
    }
    check_written(&state.config, &db, &touched)?;
    state.config = db;
    state.apply_admin_status();
    Ok(results)
}

/// The full path of a Set's `path` under `prefix`, and its elements'
/// names (`[table, key]` or `[table, key, field]`), checked: CONFIG_DB
/// only, a table this switch serves, an entry or a field (never a whole
/// table), a field the table has, a port that exists, a key of the
/// table's shape.
fn config_target(state: &State, prefix: Option<&Path>, path: &Path) -> Result<(Path, Vec<String>), Status> {
    let full = request_path(prefix, path);
    let (tree, elems) = classify(&full)?;
    if tree != Tree::Config {
        return Err(invalid(&full, "read-only state; only CONFIG_DB can be set"));
    }
    let names: Vec<String> = elems.iter().map(|e| e.name.clone()).collect();
    match names.first() {
        None => return Err(invalid(&full, "name a CONFIG_DB table entry or field")),
        Some(t) if !config::TABLES.contains(&t.as_str()) => return Err(not_served(&full, t)),
        _ => {}
    }
    if names.len() == 1 {
        return Err(invalid(&full, "a whole table cannot be set; name an entry or a field"));
    }
    if names.len() > 3 {
        return Err(not_found(&full, "CONFIG_DB paths are CONFIG_DB/<table>/<key>/<field>"));
    }
    if names.len() == 3 && !sonic::known_field(&names[0], &names[2]) {
        return Err(not_found(&full, &format!("{} has no field {:?}", names[0], names[2])));
    }
    let port = match names[0].as_str() {
        "PFC_WD" if names[1] != "GLOBAL" => Some(names[1].as_str()),
        "PORT" => Some(names[1].as_str()),
        // A queue's port is a leafref to PORT (`sonic-queue.yang`).
        sonic::QUEUE => sonic::parse_queue_key(&names[1]).map(|(port, _)| port),
        _ => None,
    };
    if let Some(port) = port.filter(|p| state.port(p).is_none()) {
        return Err(not_found(&full, &format!("no port {port:?}")));
    }
    sonic::check_key(&names[0], &names[1]).map_err(|e| invalid(&full, &e.to_string()))?;
    Ok((full, names))
}

/// Deletes the entry or the field `names` locates from `db`.
fn delete(db: &mut config::ConfigDb, names: &[String]) {
    let table = db.entry(names[0].clone()).or_default();
    match names.get(2) {
        None => {
            table.remove(&names[1]);
        }
        Some(field) => {
            if let Some(entry) = table.get_mut(&names[1]) {
                entry.remove(field);
            }
        }
    }
}

/// Writes `value` at the entry or field `names` locates (`full`): a whole
/// entry replaced or merged as `op` says, a field checked against the
/// schema.
fn write(
    db: &mut config::ConfigDb,
    full: &Path,
    names: &[String],
    value: Option<&TypedValue>,
    op: Operation,
) -> Result<(), Status> {
    let table = db.entry(names[0].clone()).or_default();
    match names.get(2) {
        None => {
            let fields = entry_value(full, value)?;
            if op == Operation::Replace {
                table.insert(names[1].clone(), fields);
            } else {
                table.entry(names[1].clone()).or_default().extend(fields);
            }
        }
        Some(field) => {
            let value = field_value(full, value)?;
            sonic::check_field(&names[0], field, &value).map_err(|e| invalid(full, &e.to_string()))?;
            table.entry(names[1].clone()).or_default().insert(field.clone(), value);
        }
    }
    Ok(())
}

/// Every entry the request wrote (`touched`) as a whole, and the
/// references between tables from `before` to `after`; an error is named
/// at the operation that wrote the entry it is about.
fn check_written(
    before: &config::ConfigDb,
    after: &config::ConfigDb,
    touched: &[(String, String, Path)],
) -> Result<(), Status> {
    for (table, key, full) in touched {
        if let Some(entry) = after.get(table).and_then(|t| t.get(key)) {
            sonic::check_entry(table, entry).map_err(|e| invalid(full, &format!("{table}|{key}: {e}")))?;
        }
    }
    let keys: Vec<(String, String)> = touched.iter().map(|(t, k, _)| (t.clone(), k.clone())).collect();
    if let Err(e) = config::dangling(before, after, &keys) {
        let about = match &e {
            sonic::SchemaError::Dangling { table, key, .. } | sonic::SchemaError::InUse { table, key, .. } => {
                touched.iter().find(|(t, k, _)| t == table && k == key)
            }
            _ => None,
        };
        let path = about.or(touched.first()).map(|(_, _, full)| full.clone()).unwrap_or_default();
        return Err(invalid(&path, &e.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::Model;
    use gnmi_proto::parse_path;

    #[test]
    fn globs_match_port_names() {
        assert!(glob("Ethernet*", "Ethernet12"));
        assert!(glob("*", "Ethernet0"));
        assert!(glob("Ethernet0", "Ethernet0"));
        assert!(!glob("Ethernet0", "Ethernet04"));
        assert!(glob("Eth*4", "Ethernet124"));
        assert!(!glob("Eth*4", "Ethernet8"));
    }

    #[test]
    fn a_wildcard_port_expands_into_one_update_per_port() {
        let model = Model::new(3);
        let state = model.read();
        let out =
            read(&state, &parse_path("COUNTERS_DB@/COUNTERS/Ethernet*/Queues").unwrap(), Encoding::JsonIetf).unwrap();
        let paths: Vec<_> = out.iter().map(|(p, _)| path_to_string(p)).collect();
        assert_eq!(
            paths,
            [
                "COUNTERS_DB@/COUNTERS/Ethernet0/Queues",
                "COUNTERS_DB@/COUNTERS/Ethernet4/Queues",
                "COUNTERS_DB@/COUNTERS/Ethernet8/Queues"
            ]
        );
        let json = gnmi_proto::value::to_json(&out[2].1).unwrap().unwrap();
        assert_eq!(json["Ethernet8:7"]["SAI_QUEUE_STAT_PACKETS"], "0");
    }

    #[test]
    fn unknown_paths_are_not_found() {
        let model = Model::new(1);
        let state = model.read();
        for path in [
            "COUNTERS_DB@/COUNTERS/Ethernet4",
            "COUNTERS_DB@/COUNTERS/Ethernet0/SAI_PORT_STAT_PFC_9_RX_PKTS",
            "/sonic-db:CONFIG_DB/ACL_TABLE",
            "/sonic-db:CONFIG_DB/PFC_WD/Ethernet0/colour",
            "openconfig:/interfaces/interface[name=Ethernet8]/state",
            "/system/state",
        ] {
            let err = read(&state, &parse_path(path).unwrap(), Encoding::JsonIetf).unwrap_err();
            assert_eq!(err.code(), tonic::Code::NotFound, "{path}: {err:?}");
        }
    }

    fn message(path: &Path) -> String {
        let model = Model::new(1);
        let state = model.read();
        let err = read(&state, path, Encoding::JsonIetf).unwrap_err();
        assert_eq!(err.code(), tonic::Code::NotFound, "{err:?}");
        err.message().to_string()
    }

    #[test]
    fn a_target_outside_the_prefix_names_no_database() {
        let in_path = parse_path("COUNTERS_DB@/COUNTERS/Ethernet0").unwrap();
        let full = request_path(None, &in_path);
        assert_eq!(full.target, "");
        assert!(message(&full).contains("missing prefix target COUNTERS_DB"), "{}", message(&full));
        let prefix = parse_path("COUNTERS_DB@/").unwrap();
        let full = request_path(Some(&prefix), &parse_path("/COUNTERS/Ethernet0").unwrap());
        let model = Model::new(1);
        assert_eq!(read(&model.read(), &full, Encoding::JsonIetf).unwrap().len(), 1);
        let full = request_path(None, &parse_path("CONFIG_DB@/PFC_WD/Ethernet0").unwrap());
        assert!(message(&full).contains("missing prefix target CONFIG_DB"));
    }

    #[test]
    fn both_styles_and_the_namespace_reach_the_same_data() {
        let model = Model::new(1);
        let state = model.read();
        let value = |prefix: Option<&str>, path: &str| {
            let prefix = prefix.map(|p| parse_path(p).unwrap());
            let full = request_path(prefix.as_ref(), &parse_path(path).unwrap());
            let at = locate(&full).unwrap();
            let out = read(&state, &full, Encoding::JsonIetf).unwrap();
            (at.style, gnmi_proto::value::to_text(&out[0].1).unwrap())
        };
        let field = "/PFC_WD/Ethernet0/action";
        assert_eq!(value(Some("CONFIG_DB@/"), field), (Some(Style::PrefixTarget), "drop".to_string()));
        let origin = Some(Style::SonicDbOrigin);
        assert_eq!(value(None, &format!("/sonic-db:CONFIG_DB{field}")), (origin, "drop".to_string()));
        assert_eq!(value(None, &format!("/sonic-db:CONFIG_DB/localhost{field}")), (origin, "drop".to_string()));
        assert_eq!(value(Some("sonic-db:/CONFIG_DB"), field), (origin, "drop".to_string()));
        let (_, map) = value(Some("COUNTERS_DB@/"), "/COUNTERS_PORT_NAME_MAP");
        assert_eq!(map, r#"{"Ethernet0":"oid:0x1000000000001"}"#);
        // With origin sonic-db, COUNTERS is keyed by OID: the port-name paths are virtual, prefix-target only.
        let (_, hash) = value(None, "/sonic-db:COUNTERS_DB/localhost/COUNTERS/oid:0x1000000000001");
        assert!(hash.contains("SAI_PORT_STAT_PFC_3_RX_PKTS"), "{hash}");
        let (_, hash) = value(Some("COUNTERS_DB@/"), "/COUNTERS/oid:0x15000000000003");
        assert!(hash.contains("PFC_WD_STATUS") && hash.contains("SAI_QUEUE_STAT_PACKETS"), "{hash}");
        let virtual_path = parse_path("/sonic-db:COUNTERS_DB/COUNTERS/Ethernet0").unwrap();
        assert!(message(&virtual_path).contains("virtual paths of the prefix-target style only"));
        assert!(message(&parse_path("/sonic-db:CONFIG_DB/asic1/PFC_WD").unwrap()).contains("namespace asic1"));
    }

    #[test]
    fn a_missing_key_is_not_found_and_an_unserved_table_not_served() {
        let missing = message(&parse_path("CONFIG_DB@/PFC_WD/Ethernet400").unwrap());
        assert_eq!(missing, "No valid entry found on CONFIG_DB with key PFC_WD|Ethernet400", "sonic-gnmi's words");
        assert!(!missing.contains("not served"), "{missing}");
        let unserved = message(&parse_path("CONFIG_DB@/ACL_TABLE/x").unwrap());
        assert!(unserved.contains("not served") && !unserved.contains("not found"), "{unserved}");
        let db = message(&parse_path("APPL_DB@/PORT_TABLE").unwrap());
        assert!(db.contains("not served"), "{db}");
        let both = locate(&parse_path("CONFIG_DB@sonic-db:/CONFIG_DB/PFC_WD").unwrap()).unwrap_err();
        assert_eq!(both.code(), tonic::Code::InvalidArgument, "{both:?}");
    }

    #[test]
    fn a_failed_set_changes_nothing() {
        let model = Model::new(1);
        let ok = gnmi_proto::gnmi::Update {
            path: Some(parse_path("/sonic-db:CONFIG_DB/PFC_WD/Ethernet0/action").unwrap()),
            val: Some(gnmi_proto::value::string("alert")),
            ..Default::default()
        };
        let bad = gnmi_proto::gnmi::Update {
            path: Some(parse_path("/sonic-db:CONFIG_DB/PFC_WD/Ethernet0/detection_time").unwrap()),
            val: Some(gnmi_proto::value::uint(50)),
            ..Default::default()
        };
        let request = SetRequest { update: vec![ok, bad], ..Default::default() };
        let err = model.write(|s| set(s, &request)).unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert!(err.message().contains("detection_time 50 is out of range 100..5000 ms"), "{}", err.message());
        assert_eq!(model.config_entry("PFC_WD", "Ethernet0").unwrap()["action"], "drop");
    }

    fn admin_status(model: &Model, port: &str, value: &str) -> Result<Vec<UpdateResult>, Status> {
        let update = gnmi_proto::gnmi::Update {
            path: Some(parse_path(&format!("/sonic-db:CONFIG_DB/PORT/{port}/admin_status")).unwrap()),
            val: Some(gnmi_proto::value::string(value)),
            ..Default::default()
        };
        model.write(|s| set(s, &SetRequest { update: vec![update], ..Default::default() }))
    }

    #[test]
    fn admin_down_forces_oper_down_and_admin_up_restores_only_a_live_link() {
        let model = Model::new(2);
        let oper = |m: &Model| m.read().port("Ethernet4").unwrap().oper_up;
        admin_status(&model, "Ethernet4", "down").unwrap();
        assert!(!oper(&model));
        assert_eq!(model.config_entry("PORT", "Ethernet4").unwrap()["admin_status"], "down");
        // The link coming back does not raise an admin-down port.
        model.set_oper_up("Ethernet4", true).unwrap();
        assert!(!oper(&model));
        model.set_oper_up("Ethernet4", false).unwrap();
        admin_status(&model, "Ethernet4", "up").unwrap();
        assert!(!oper(&model), "admin-up over a dead link stays down");
        model.set_oper_up("Ethernet4", true).unwrap();
        assert!(oper(&model));
        assert!(model.read().port("Ethernet0").unwrap().oper_up, "other ports are untouched");
        let err = admin_status(&model, "Ethernet4", "sideways").unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert_eq!(admin_status(&model, "Ethernet8", "down").unwrap_err().code(), tonic::Code::NotFound);
    }
}
