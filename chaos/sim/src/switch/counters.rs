//! COUNTERS_DB of the simulated switch, as SONiC's redis holds it and as
//! sonic-gnmi serves it.
//!
//! Redis keys the counters by SAI object id: `COUNTERS:<oid>` is a port's
//! or a queue's hash (a watched queue's hash also holds the watchdog's
//! `PFC_WD_*` fields), and `COUNTERS_PORT_NAME_MAP` / `COUNTERS_QUEUE_NAME_MAP`
//! name the OIDs. sonic-gnmi adds *virtual* paths that hide the OIDs —
//! `COUNTERS/<port>`, `COUNTERS/<port>/<field>`, `COUNTERS/<port>/Queues`,
//! `COUNTERS/<port>/Pfcwd`, with `*` globs over port names — in its
//! prefix-target client only; with origin `sonic-db` a path reaches redis
//! as it is, OIDs and all.

// tonic's `Status` is the gRPC error these functions end in.
#![allow(clippy::result_large_err)]

use gnmi_proto::gnmi::{Encoding, Path, PathElem, TypedValue};
use serde_json::{json, Map, Value as Json};
use tonic::Status;

use super::config;
use super::model::{Port, State, QUEUE_STATS};
use super::reply::{concrete, elem, glob, json_value, not_found, string};

/// A port's OID: SAI's port object type in the top bits, as on a real
/// switch (`oid:0x1000000000001` for the first port).
pub fn port_oid(index: usize) -> String {
    format!("oid:0x{:x}", 0x1000000000001u64 + index as u64)
}

/// A queue's OID: SAI's queue object type (0x15) in the top bits.
pub fn queue_oid(index: usize, queue: usize) -> String {
    format!("oid:0x{:x}", 0x15000000000000u64 + index as u64 * 0x100 + queue as u64)
}

/// What an OID names: a port (by index) or a queue of one.
fn owner(state: &State, oid: &str) -> Option<(usize, Option<usize>)> {
    let n = u64::from_str_radix(oid.strip_prefix("oid:0x")?, 16).ok()?;
    let (index, queue) = if n >= 0x15000000000000 {
        let rest = n - 0x15000000000000;
        ((rest / 0x100) as usize, Some((rest % 0x100) as usize))
    } else {
        ((n.checked_sub(0x1000000000001)?) as usize, None)
    };
    let ok = index < state.ports.len() && queue.is_none_or(|q| q < super::QUEUES);
    // Only the canonical spelling names the object.
    let canonical = match queue {
        None => port_oid(index),
        Some(q) => queue_oid(index, q),
    };
    (ok && canonical == oid).then_some((index, queue))
}

fn strings(fields: Vec<(String, u64)>) -> Map<String, Json> {
    fields.into_iter().map(|(k, v)| (k, Json::String(v.to_string()))).collect()
}

/// A port's hash: its `SAI_PORT_STAT_*`.
fn port_hash(port: &Port) -> Map<String, Json> {
    strings(port.counter_fields())
}

/// A queue's hash: its counters, and the watchdog's fields (the simulated
/// watchdog watches every queue).
fn queue_hash(state: &State, port: &Port, q: usize) -> Map<String, Json> {
    let queue = &port.queues[q];
    let mut hash: Map<String, Json> =
        QUEUE_STATS.iter().zip(queue.stats).map(|(k, v)| (k.to_string(), Json::String(v.to_string()))).collect();
    let wd = config::watchdog(&state.config, &port.name);
    // orchagent writes the restoration time only when the entry sets one (empty otherwise).
    let entry = state.config.get("PFC_WD").and_then(|t| t.get(&port.name));
    let restoration = match entry.and_then(|e| e.get("restoration_time")) {
        Some(_) => wd.restoration.as_micros().to_string(),
        None => String::new(),
    };
    let watchdog = json!({
        "PFC_WD_STATUS": if queue.stormed { "stormed" } else { "operational" },
        "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": queue.deadlock_detected.to_string(),
        "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED": queue.deadlock_restored.to_string(),
        "PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS": queue.wd_tx_dropped.to_string(),
        "PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS": queue.wd_rx_dropped.to_string(),
        // In µs, as orchagent writes them (`pfcwdsworch.cpp`).
        "PFC_WD_DETECTION_TIME": wd.detection.as_micros().to_string(),
        "PFC_WD_RESTORATION_TIME": restoration,
        "PFC_WD_ACTION": wd.action,
    });
    if let Json::Object(fields) = watchdog {
        hash.extend(fields);
    }
    hash
}

/// The watchdog's view of a queue (the `Pfcwd` virtual path): its fields
/// of the queue's hash.
fn pfcwd_fields(state: &State, port: &Port, q: usize) -> Map<String, Json> {
    queue_hash(state, port, q).into_iter().filter(|(k, _)| k.starts_with("PFC_WD_")).collect()
}

/// Reads `elems`, the path below `COUNTERS_DB` (and its namespace), whose
/// leading elements `head` are kept in the answer's paths.
/// `virtual_paths`: the request named the database by its prefix target,
/// so sonic-gnmi's port-name paths exist.
pub fn read(
    state: &State,
    path: &Path,
    head: Vec<PathElem>,
    elems: &[PathElem],
    encoding: Encoding,
    virtual_paths: bool,
) -> Result<Vec<(Path, TypedValue)>, Status> {
    let names: Vec<&str> = elems.iter().map(|e| e.name.as_str()).collect();
    let answer = |below: &[&str], value: TypedValue| {
        let mut out = head.clone();
        out.extend(below.iter().map(|n| elem(n)));
        (concrete(path, out), value)
    };
    match names[..] {
        ["COUNTERS_PORT_NAME_MAP", ref rest @ ..] => {
            let map: Map<String, Json> =
                state.ports.iter().enumerate().map(|(i, p)| (p.name.clone(), Json::String(port_oid(i)))).collect();
            name_map(path, "COUNTERS_PORT_NAME_MAP", map, rest, encoding).map(|v| vec![answer(&names, v)])
        }
        ["COUNTERS_QUEUE_NAME_MAP", ref rest @ ..] => {
            let map: Map<String, Json> = (0..state.ports.len())
                .flat_map(|i| (0..super::QUEUES).map(move |q| (i, q)))
                .map(|(i, q)| (format!("{}:{q}", state.ports[i].name), Json::String(queue_oid(i, q))))
                .collect();
            name_map(path, "COUNTERS_QUEUE_NAME_MAP", map, rest, encoding).map(|v| vec![answer(&names, v)])
        }
        ["COUNTERS"] => {
            let mut table = Map::new();
            for (i, port) in state.ports.iter().enumerate() {
                table.insert(port_oid(i), Json::Object(port_hash(port)));
                for q in 0..super::QUEUES {
                    table.insert(queue_oid(i, q), Json::Object(queue_hash(state, port, q)));
                }
            }
            Ok(vec![answer(&names, json_value(&Json::Object(table), encoding))])
        }
        ["COUNTERS", key, ref rest @ ..] if key.starts_with("oid:") => {
            let Some((i, queue)) = owner(state, key) else {
                return Err(not_found(path, &format!("no entry COUNTERS:{key} in COUNTERS_DB")));
            };
            let port = &state.ports[i];
            let hash = match queue {
                None => port_hash(port),
                Some(q) => queue_hash(state, port, q),
            };
            match rest {
                [] => Ok(vec![answer(&names, json_value(&Json::Object(hash), encoding))]),
                [field] => match hash.get(*field).and_then(Json::as_str) {
                    Some(v) => Ok(vec![answer(&names, string(v.to_string()))]),
                    None => Err(not_found(path, &format!("COUNTERS:{key} has no field {field:?}"))),
                },
                _ => Err(not_found(path, "COUNTERS paths are COUNTERS/<oid>[/<field>]")),
            }
        }
        ["COUNTERS", _, ..] if !virtual_paths => Err(not_found(
            path,
            "COUNTERS keys are OIDs (see COUNTERS_PORT_NAME_MAP); port-name paths such as COUNTERS/Ethernet0 \
             are virtual paths of the prefix-target style only",
        )),
        ["COUNTERS", _] | ["COUNTERS", _, _] => read_virtual(state, path, head, elems, encoding),
        [table, ..] => Err(not_found(
            path,
            &format!(
                "COUNTERS_DB table {table:?} is not served by this switch (COUNTERS, COUNTERS_PORT_NAME_MAP, \
                 COUNTERS_QUEUE_NAME_MAP)"
            ),
        )),
        [] => Err(not_found(path, "name a COUNTERS_DB table")),
    }
}

/// A name map, or one name of it.
fn name_map(
    path: &Path,
    table: &str,
    map: Map<String, Json>,
    rest: &[&str],
    encoding: Encoding,
) -> Result<TypedValue, Status> {
    match rest {
        [] => Ok(json_value(&Json::Object(map), encoding)),
        [name] => match map.get(*name).and_then(Json::as_str) {
            Some(oid) => Ok(string(oid.to_string())),
            None => Err(not_found(path, &format!("{table} has no field {name:?}"))),
        },
        _ => Err(not_found(path, &format!("{table} is one hash: {table}[/<name>]"))),
    }
}

/// sonic-gnmi's virtual paths: `COUNTERS/<port>[/Queues|/Pfcwd|/<counter>]`.
fn read_virtual(
    state: &State,
    path: &Path,
    head: Vec<PathElem>,
    elems: &[PathElem],
    encoding: Encoding,
) -> Result<Vec<(Path, TypedValue)>, Status> {
    let pattern = &elems[1].name;
    let ports: Vec<_> = state.ports.iter().filter(|p| glob(pattern, &p.name)).collect();
    if ports.is_empty() {
        return Err(not_found(path, &format!("no port matches {pattern:?}")));
    }
    let mut out = Vec::with_capacity(ports.len());
    for port in ports {
        let mut elems_out = head.clone();
        elems_out.extend([elem("COUNTERS"), elem(&port.name)]);
        let per_queue = |fields: &dyn Fn(usize) -> Map<String, Json>| {
            let queues: Map<String, Json> =
                (0..super::QUEUES).map(|q| (format!("{}:{q}", port.name), Json::Object(fields(q)))).collect();
            json_value(&Json::Object(queues), encoding)
        };
        let value = match elems.get(2).map(|e| e.name.as_str()) {
            None => json_value(&Json::Object(port_hash(port)), encoding),
            Some("Queues") => {
                elems_out.push(elem("Queues"));
                per_queue(&|q| {
                    let mut hash = queue_hash(state, port, q);
                    hash.retain(|k, _| !k.starts_with("PFC_WD_"));
                    hash
                })
            }
            Some("Pfcwd") => {
                elems_out.push(elem("Pfcwd"));
                per_queue(&|q| pfcwd_fields(state, port, q))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch::Model;

    #[test]
    fn oids_name_ports_and_queues_and_only_their_canonical_spelling() {
        let model = Model::new(2);
        let state = model.read();
        assert_eq!(port_oid(0), "oid:0x1000000000001");
        assert_eq!(queue_oid(1, 3), "oid:0x15000000000103");
        assert_eq!(owner(&state, &port_oid(1)), Some((1, None)));
        assert_eq!(owner(&state, &queue_oid(1, 7)), Some((1, Some(7))));
        assert_eq!(owner(&state, &port_oid(2)), None, "no third port");
        assert_eq!(owner(&state, "oid:0x01000000000001"), None);
        assert_eq!(owner(&state, &queue_oid(0, 8)), None);
    }
}
