//! The switch's data tree: which gNMI paths exist, what they read, and how
//! a Set changes CONFIG_DB.
//!
//! Three trees, told apart by target or origin the way sonic-gnmi does:
//!
//! | path | reads |
//! |---|---|
//! | target `COUNTERS_DB`: `COUNTERS/<port>` | the port's `SAI_PORT_STAT_*` as JSON, values as strings |
//! | `COUNTERS/<port>/<SAI_PORT_STAT_…>` | one counter, `string_val` |
//! | `COUNTERS/<port>/Queues` | `{"Ethernet0:3": {"SAI_QUEUE_STAT_PACKETS": "…", …}, …}` |
//! | `COUNTERS/<port>/Pfcwd` | `{"Ethernet0:3": {"PFC_WD_STATUS": "operational", …}, …}` |
//! | origin `sonic-db`: `CONFIG_DB/<table>[/<key>[/<field>]]` | JSON of the table or entry, or the field's `string_val` (tables `PFC_WD`, `WRED_PROFILE`, `PORT`) |
//! | origin `openconfig` (or none): `/interfaces/interface[name=X]/state/…` | `oper-status`, `counters/{in-errors,in-fcs-errors,carrier-transitions,…}` |
//!
//! `<port>` may be a glob (`Ethernet*`, `*`); a wildcard is expanded into
//! one update per port. A target `COUNTERS_DB`/`CONFIG_DB` and an origin
//! `sonic-db` with the database as the first element are the same thing.

// tonic's `Status` is the gRPC error these functions end in; boxing it at
// every internal call only to unbox it at the RPC boundary buys nothing.
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, HashMap};

use gnmi_proto::gnmi::typed_value::Value as TV;
use gnmi_proto::gnmi::update_result::Operation;
use gnmi_proto::gnmi::{Encoding, Path, PathElem, SetRequest, TypedValue, UpdateResult};
use gnmi_proto::path::{join, path_to_string};
use gnmi_proto::sonic;
use serde_json::{json, Map, Value as Json};
use tonic::Status;

use super::config::{self, ConfigDb};
use super::model::{State, QUEUE_STATS};

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

/// The tree of `path` and its elements below the database name.
pub fn classify(path: &Path) -> Result<(Tree, &[PathElem]), Status> {
    let first = path.elem.first().map(|e| e.name.as_str());
    match (path.target.as_str(), path.origin.as_str(), first) {
        ("COUNTERS_DB", _, _) => Ok((Tree::Counters, &path.elem[..])),
        ("CONFIG_DB", _, _) => Ok((Tree::Config, &path.elem[..])),
        (_, "sonic-db", Some("COUNTERS_DB")) => Ok((Tree::Counters, &path.elem[1..])),
        (_, "sonic-db", Some("CONFIG_DB")) => Ok((Tree::Config, &path.elem[1..])),
        (_, origin, Some("interfaces")) if origin.is_empty() || origin.starts_with("openconfig") => {
            Ok((Tree::OpenConfig, &path.elem[..]))
        }
        _ => Err(not_found(path, "no such tree (COUNTERS_DB, sonic-db:CONFIG_DB or openconfig:/interfaces)")),
    }
}

fn not_found(path: &Path, why: &str) -> Status {
    Status::not_found(format!("{}: {why}", path_to_string(path)))
}

fn invalid(path: &Path, why: &str) -> Status {
    Status::invalid_argument(format!("{}: {why}", path_to_string(path)))
}

/// `*`-globs, as sonic-gnmi matches port names.
fn glob(pattern: &str, name: &str) -> bool {
    let Some((head, tail)) = pattern.split_once('*') else { return pattern == name };
    let Some(rest) = name.strip_prefix(head) else { return false };
    tail.is_empty() || (0..=rest.len()).filter(|i| rest.is_char_boundary(*i)).any(|i| glob(tail, &rest[i..]))
}

fn concrete(query: &Path, elems: Vec<PathElem>) -> Path {
    Path { origin: query.origin.clone(), target: query.target.clone(), elem: elems, ..Path::default() }
}

fn elem(name: &str) -> PathElem {
    PathElem { name: name.to_string(), key: HashMap::new() }
}

fn json_value(json: &Json, encoding: Encoding) -> TypedValue {
    let bytes = json.to_string().into_bytes();
    let value = if encoding == Encoding::Json { TV::JsonVal(bytes) } else { TV::JsonIetfVal(bytes) };
    TypedValue { value: Some(value) }
}

fn string(s: String) -> TypedValue {
    TypedValue { value: Some(TV::StringVal(s)) }
}

/// Reads `path` (already joined with its prefix): the concrete paths and
/// their values. An unknown path is NotFound.
pub fn read(state: &State, path: &Path, encoding: Encoding) -> Result<Vec<(Path, TypedValue)>, Status> {
    let (tree, elems) = classify(path)?;
    // The elements before `elems` (the database name), kept in the output.
    let head: Vec<PathElem> = path.elem[..path.elem.len() - elems.len()].to_vec();
    match tree {
        Tree::Counters => read_counters(state, path, head, elems, encoding),
        Tree::Config => read_config(&state.config, path, head, elems, encoding),
        Tree::OpenConfig => read_openconfig(state, path, elems),
    }
}

fn read_counters(
    state: &State,
    path: &Path,
    head: Vec<PathElem>,
    elems: &[PathElem],
    encoding: Encoding,
) -> Result<Vec<(Path, TypedValue)>, Status> {
    if elems.first().map(|e| e.name.as_str()) != Some("COUNTERS") || elems.len() < 2 || elems.len() > 3 {
        return Err(not_found(path, "COUNTERS_DB paths are COUNTERS/<port>[/Queues|/Pfcwd|/<counter>]"));
    }
    let pattern = &elems[1].name;
    let ports: Vec<_> = state.ports.iter().filter(|p| glob(pattern, &p.name)).collect();
    if ports.is_empty() {
        return Err(not_found(path, &format!("no port matches {pattern:?}")));
    }
    let mut out = Vec::with_capacity(ports.len());
    for port in ports {
        let mut elems_out = head.clone();
        elems_out.extend([elem("COUNTERS"), elem(&port.name)]);
        let value = match elems.get(2).map(|e| e.name.as_str()) {
            None => {
                let fields: Map<String, Json> =
                    port.counter_fields().into_iter().map(|(k, v)| (k, Json::String(v.to_string()))).collect();
                json_value(&Json::Object(fields), encoding)
            }
            Some("Queues") => {
                let mut queues = Map::new();
                for (q, queue) in port.queues.iter().enumerate() {
                    let stats: Map<String, Json> = QUEUE_STATS
                        .iter()
                        .zip(queue.stats)
                        .map(|(k, v)| (k.to_string(), Json::String(v.to_string())))
                        .collect();
                    queues.insert(format!("{}:{q}", port.name), Json::Object(stats));
                }
                elems_out.push(elem("Queues"));
                json_value(&Json::Object(queues), encoding)
            }
            Some("Pfcwd") => {
                let wd = config::watchdog(&state.config, &port.name);
                let mut queues = Map::new();
                for (q, queue) in port.queues.iter().enumerate() {
                    let status = if queue.stormed { "stormed" } else { "operational" };
                    queues.insert(
                        format!("{}:{q}", port.name),
                        json!({
                            "PFC_WD_STATUS": status,
                            "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": queue.deadlock_detected.to_string(),
                            "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED": queue.deadlock_restored.to_string(),
                            "PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS": queue.wd_tx_dropped.to_string(),
                            "PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS": queue.wd_rx_dropped.to_string(),
                            "PFC_WD_DETECTION_TIME": wd.detection.as_millis().to_string(),
                            "PFC_WD_RESTORATION_TIME": wd.restoration.as_millis().to_string(),
                            "PFC_WD_ACTION": wd.action,
                        }),
                    );
                }
                elems_out.push(elem("Pfcwd"));
                json_value(&Json::Object(queues), encoding)
            }
            Some(field) => {
                let Some(n) = port.counter(field) else {
                    return Err(not_found(path, &format!("{} has no counter {field:?}", port.name)));
                };
                elems_out.push(elem(field));
                string(n.to_string())
            }
        };
        out.push((concrete(path, elems_out), value));
    }
    Ok(out)
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
            return Err(not_found(path, &format!("CONFIG_DB has no table {table:?} here")));
        }
        [table] => {
            let entries = db.get(table).map(|e| e.iter().map(|(k, v)| (k.clone(), entry_json(v))).collect());
            json_value(&Json::Object(entries.unwrap_or_default()), encoding)
        }
        [table, key] => match db.get(table).and_then(|t| t.get(key)) {
            Some(entry) => json_value(&entry_json(entry), encoding),
            None => return Err(not_found(path, &format!("no entry {table}|{key}"))),
        },
        [table, key, field] => match db.get(table).and_then(|t| t.get(key)).and_then(|e| e.get(field)) {
            Some(v) => string(v.clone()),
            None => return Err(not_found(path, &format!("no field {field:?} in {table}|{key}"))),
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
    let mut touched = Vec::new();
    let mut results = Vec::new();
    let prefix = request.prefix.as_ref();
    let mut locate = |path: &Path| -> Result<(Path, Vec<String>), Status> {
        let full = join(prefix, path);
        let (tree, elems) = classify(&full)?;
        if tree != Tree::Config {
            return Err(invalid(&full, "read-only state; only CONFIG_DB can be set"));
        }
        let names: Vec<String> = elems.iter().map(|e| e.name.clone()).collect();
        match names.first() {
            None => return Err(invalid(&full, "name a CONFIG_DB table entry or field")),
            Some(t) if !config::TABLES.contains(&t.as_str()) => {
                return Err(not_found(&full, &format!("CONFIG_DB has no table {t:?} here")));
            }
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
        let per_port = (names[0] == "PFC_WD" && names[1] != "GLOBAL") || names[0] == "PORT";
        if per_port && state.port(&names[1]).is_none() {
            return Err(not_found(&full, &format!("no port {:?}", names[1])));
        }
        touched.push((names[0].clone(), names[1].clone(), full.clone()));
        Ok((full, names))
    };
    for path in &request.delete {
        let (_, names) = locate(path)?;
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
        results.push(UpdateResult { path: Some(path.clone()), op: Operation::Delete as i32, ..Default::default() });
    }
    for (updates, op) in [(&request.replace, Operation::Replace), (&request.update, Operation::Update)] {
        for update in updates {
            let path = update.path.clone().unwrap_or_default();
            let (full, names) = locate(&path)?;
            let table = db.entry(names[0].clone()).or_default();
            match names.get(2) {
                None => {
                    let fields = entry_value(&full, update.val.as_ref())?;
                    if op == Operation::Replace {
                        table.insert(names[1].clone(), fields);
                    } else {
                        table.entry(names[1].clone()).or_default().extend(fields);
                    }
                }
                Some(field) => {
                    let value = field_value(&full, update.val.as_ref())?;
                    sonic::check_field(&names[0], field, &value).map_err(|e| invalid(&full, &e.to_string()))?;
                    table.entry(names[1].clone()).or_default().insert(field.clone(), value);
                }
            }
            results.push(UpdateResult { path: Some(path.clone()), op: op as i32, ..Default::default() });
        }
    }
    for (table, key, full) in touched {
        if let Some(entry) = db.get(&table).and_then(|t| t.get(&key)) {
            sonic::check_entry(&table, entry).map_err(|e| invalid(&full, &format!("{table}|{key}: {e}")))?;
        }
    }
    state.config = db;
    state.apply_admin_status();
    Ok(results)
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
