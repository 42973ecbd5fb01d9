//! gNMI updates → metric readings: which path and field is which metric,
//! with which labels.
//!
//! | path (and JSON field) | metric | kind | labels |
//! |---|---|---|---|
//! | `COUNTERS/<port>` `SAI_PORT_STAT_PFC_<p>_RX_PKTS` | `switch_pfc_rx_pkts` | counter 64 | `port`, `prio` |
//! | … `_TX_PKTS` | `switch_pfc_tx_pkts` | counter 64 | `port`, `prio` |
//! | … `_RX_PAUSE_DURATION_US` | `switch_pfc_rx_pause_duration_us` | counter 64 | `port`, `prio` |
//! | … `_TX_PAUSE_DURATION_US` | `switch_pfc_tx_pause_duration_us` | counter 64 | `port`, `prio` |
//! | … `_RX_PAUSE_DURATION`, `_TX_PAUSE_DURATION` (Marvell, µs as SONiC's detector reads them) | the same two | counter 64 | `port`, `prio` |
//! | … `_ON2OFF_RX_PKTS` (Broadcom's XON frames) | `switch_pfc_on2off_rx_pkts` | counter 64 | `port`, `prio` |
//! | `COUNTERS/<port>` `SAI_PORT_STAT_IF_OUT_OCTETS` | `switch_port_tx_bytes` (an ECMP group's uplinks: how evenly they carry) | counter 64 | `port` |
//! | `COUNTERS/<port>/Queues` `<port>:<q>` `SAI_QUEUE_STAT_PACKETS`, `_BYTES`, `_DROPPED_PACKETS`, `_DROPPED_BYTES` | `switch_queue_packets`, `…_bytes`, `…_dropped_packets`, `…_dropped_bytes` | counter 64 | `port`, `queue`, `prio` |
//! | … `SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS` (SONiC's `WRED_ECN_QUEUE` flex counter group) | `switch_queue_ecn_marked_packets` | counter 64 | `port`, `queue`, `prio` |
//! | … `SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES`, `_CURR_OCCUPANCY_BYTES` | `switch_queue_watermark_bytes`, `switch_queue_occupancy_bytes` | gauge | `port`, `queue`, `prio` |
//! | … `SAI_QUEUE_ATTR_PAUSE_STATUS` (Broadcom) | `switch_pfc_queue_paused` (1 paused) | gauge | `port`, `queue`, `prio`: one series per lossless priority whose unicast queue it is ([`OidNames::view`]) |
//! | `COUNTERS/<port>/Pfcwd` `<port>:<q>` `PFC_WD_STATUS` | `switch_pfcwd_stormed` (1 stormed, 0 operational) | gauge | `port`, `queue`, `prio` |
//! | … `PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED`, `_RESTORED`, `_TX_DROPPED_PACKETS`, `_RX_DROPPED_PACKETS` | `switch_pfcwd_deadlock_detected`, `…_restored`, `…_tx_dropped_packets`, `…_rx_dropped_packets` | counter 64 | `port`, `queue`, `prio` |
//! | APPL_DB `PORT_TABLE[/<port>]` `oper_status` | `switch_oper_up` (1 when `up`) | gauge | `port` |
//! | … `flap_count` (portsorch: one more at every oper status change) | `switch_carrier_transitions` | counter 64 | `port` |
//! | `/interfaces/interface[name=X]/state/oper-status` | `switch_oper_up` (1 when `UP`) | gauge | `port` |
//! | `…/state/counters/in-errors`, `in-fcs-errors`, `carrier-transitions` | `switch_in_errors`, `switch_in_fcs_errors`, `switch_carrier_transitions` | counter 64 | `port` |
//!
//! The sensor adds `switch`, the target's name. The path is the
//! notification's prefix joined with the update's path, so the same tables
//! are recognised whichever way the request named the database
//! (`COUNTERS/…` under prefix target `COUNTERS_DB`, or
//! `sonic-db:/COUNTERS_DB[/localhost]/COUNTERS/…`).
//!
//! Values come as SONiC sends them: `json_ietf_val` or `json_val` objects
//! of string values, a `string_val` (a counter, or an object's JSON text),
//! or numbers. A value SONiC has not got (`"None"`, `"N/A"`, empty, JSON
//! `null`) is absent: no reading, and no error. Fields of a known table
//! that are not in the table (SONiC has hundreds of `SAI_PORT_STAT_*`) are
//! skipped; a path of no known shape, or a value that does not parse, is an
//! error the sensor counts and logs. One bad field is one error: the
//! update's other fields are still mapped into `out` (the first error is
//! returned), so a storm in the next field is not lost with it.

use std::collections::HashMap;

use compact_str::CompactString;
use engine::{CounterSpec, Labels, SampleKind, SeriesSpec};
use gnmi_proto::gnmi::{Path, TypedValue};
use gnmi_proto::value;
use serde_json::Value as Json;
use smallvec::SmallVec;

use super::queues::{self, Streamed};
use crate::switch_series::reading::COUNTERS_REFRESH_MS;
use crate::switch_series::{fields, SwitchView};

/// Broadcom's queue pause status (a queue attribute its watchdog reads), in the queue tables.
pub const PAUSE_STATUS: &str = "SAI_QUEUE_ATTR_PAUSE_STATUS";
/// Its series: 1 while the queue is paused, one per lossless priority whose queue it is.
const PAUSED: &str = "switch_pfc_queue_paused";

/// Counter or gauge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadingKind {
    /// A 64-bit counter.
    Counter,
    /// A gauge.
    Gauge,
}

/// One reading out of an update.
#[derive(Debug, Clone, PartialEq)]
pub struct Reading {
    /// Metric name.
    pub metric: &'static str,
    /// Counter or gauge.
    pub kind: ReadingKind,
    /// The port. Inline up to 24 bytes (every port name of SONiC and
    /// OpenConfig), so a reading allocates nothing.
    pub port: CompactString,
    /// The queue (also the priority, unless `prio` says otherwise), for queue and PFC
    /// metrics.
    pub queue: Option<u8>,
    /// The priority without a queue (port PFC counters).
    pub prio: Option<u8>,
    /// A counter's reading.
    pub count: u64,
    /// A gauge's level.
    pub level: f64,
}

impl Reading {
    /// The series of this reading on switch `switch`: labelled `switch` and
    /// `port`, with `queue` and `prio` (a queue's priority is its index) or
    /// `prio` alone; counters are 64-bit copies refreshed every
    /// [`COUNTERS_REFRESH_MS`] (a switch's own poll, not the read).
    pub fn spec(&self, switch: &str) -> SeriesSpec {
        let mut labels = Labels::from_pairs([("switch", switch), ("port", self.port.as_str())]);
        if let Some(q) = self.queue {
            labels.insert("queue", q.to_string());
            labels.insert("prio", self.prio.unwrap_or(q).to_string());
        } else if let Some(p) = self.prio {
            labels.insert("prio", p.to_string());
        }
        let kind = match self.kind {
            ReadingKind::Counter => SampleKind::Counter(CounterSpec::U64.refreshed_every(COUNTERS_REFRESH_MS)),
            ReadingKind::Gauge => SampleKind::Gauge,
        };
        SeriesSpec { metric: self.metric.to_string(), labels, kind }
    }
}

/// An update could not be mapped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MapError {
    /// No mapping knows the path.
    #[error("unknown path {0}")]
    UnknownPath(String),
    /// The value does not parse.
    #[error("{path}: {problem}")]
    BadValue {
        /// The path (and field).
        path: String,
        /// What is wrong.
        problem: String,
    },
}

/// Each ASIC family's PFC counters (sonic-swss `orchdaemon.cpp`): Mellanox and VS count pause
/// time in µs (`_US`), Marvell without the suffix (µs as SONiC's own Marvell detector reads it;
/// no family has both), Broadcom no time at all but XON frames (`ON2OFF`).
const PFC_SUFFIXES: [(&str, &str); 7] = [
    ("RX_PKTS", "switch_pfc_rx_pkts"),
    ("TX_PKTS", "switch_pfc_tx_pkts"),
    ("ON2OFF_RX_PKTS", "switch_pfc_on2off_rx_pkts"),
    ("RX_PAUSE_DURATION_US", "switch_pfc_rx_pause_duration_us"),
    ("TX_PAUSE_DURATION_US", "switch_pfc_tx_pause_duration_us"),
    ("RX_PAUSE_DURATION", "switch_pfc_rx_pause_duration_us"),
    ("TX_PAUSE_DURATION", "switch_pfc_tx_pause_duration_us"),
];

pub(super) const QUEUE_FIELDS: [(&str, &str, ReadingKind); 7] = [
    ("SAI_QUEUE_STAT_PACKETS", "switch_queue_packets", ReadingKind::Counter),
    ("SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", "switch_queue_ecn_marked_packets", ReadingKind::Counter),
    ("SAI_QUEUE_STAT_BYTES", "switch_queue_bytes", ReadingKind::Counter),
    ("SAI_QUEUE_STAT_DROPPED_PACKETS", "switch_queue_dropped_packets", ReadingKind::Counter),
    ("SAI_QUEUE_STAT_DROPPED_BYTES", "switch_queue_dropped_bytes", ReadingKind::Counter),
    ("SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES", "switch_queue_watermark_bytes", ReadingKind::Gauge),
    ("SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES", "switch_queue_occupancy_bytes", ReadingKind::Gauge),
];

const PFCWD_FIELDS: [(&str, &str); 4] = [
    ("PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED", "switch_pfcwd_deadlock_detected"),
    ("PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED", "switch_pfcwd_deadlock_restored"),
    ("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS", "switch_pfcwd_tx_dropped_packets"),
    ("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS", "switch_pfcwd_rx_dropped_packets"),
];

const OC_COUNTERS: [(&str, &str); 3] = [
    ("in-errors", "switch_in_errors"),
    ("in-fcs-errors", "switch_in_fcs_errors"),
    ("carrier-transitions", "switch_carrier_transitions"),
];

fn counter(metric: &'static str, port: &str, queue: Option<u8>, prio: Option<u8>, count: u64) -> Reading {
    Reading { metric, kind: ReadingKind::Counter, port: CompactString::from(port), queue, prio, count, level: 0.0 }
}

fn gauge(metric: &'static str, port: &str, queue: Option<u8>, level: f64) -> Reading {
    Reading { metric, kind: ReadingKind::Gauge, port: CompactString::from(port), queue, prio: None, count: 0, level }
}

/// Queue `q`'s `metric` of `kind` on `port`, read as `n`.
pub(super) fn queue_reading(metric: &'static str, kind: ReadingKind, port: &str, q: u8, n: u64) -> Reading {
    match kind {
        ReadingKind::Counter => counter(metric, port, Some(q), None, n),
        ReadingKind::Gauge => gauge(metric, port, Some(q), n as f64),
    }
}

/// The words SONiC uses for a value it has not got: Python's `None` printed
/// into redis, the CLI's `N/A`, or nothing.
pub(super) fn absent_text(s: &str) -> bool {
    matches!(s.trim(), "" | "None" | "N/A")
}

/// A JSON value that stands for "no value".
fn absent_json(v: &Json) -> bool {
    match v {
        Json::Null => true,
        Json::String(s) => absent_text(s),
        _ => false,
    }
}

/// Whether a whole update's value is "no value".
pub fn is_absent(val: &TypedValue) -> bool {
    use gnmi_proto::gnmi::typed_value::Value as V;
    match &val.value {
        None => true,
        Some(V::StringVal(s)) | Some(V::AsciiVal(s)) => absent_text(s),
        Some(V::JsonVal(b)) | Some(V::JsonIetfVal(b)) => match b.iter().find(|c| !c.is_ascii_whitespace()) {
            None => true,
            // An object or an array is a value: no need to parse it (a
            // queue table is most of what a large aggregator reads).
            Some(b'{' | b'[') => false,
            Some(_) => serde_json::from_slice::<Json>(b).is_ok_and(|j| absent_json(&j)),
        },
        _ => false,
    }
}

/// A JSON scalar as a counter (SONiC sends numbers as strings); `None` when
/// SONiC has no value.
fn json_u64(path: &str, field: &str, v: &Json) -> Result<Option<u64>, MapError> {
    if absent_json(v) {
        return Ok(None);
    }
    let n = match v {
        Json::String(s) => s.trim().parse().ok(),
        Json::Number(n) => n.as_u64(),
        _ => None,
    };
    match n {
        Some(n) => Ok(Some(n)),
        None => Err(MapError::BadValue { path: format!("{path} {field}"), problem: format!("{v} is not a counter") }),
    }
}

/// Keeps the first of an update's errors, so that one bad field is one error and the update's
/// other fields are still mapped (a storm in the next field must not be lost with it).
fn keep_first(first: &mut Option<MapError>, result: Result<(), MapError>) {
    if let Err(e) = result {
        first.get_or_insert(e);
    }
}

/// `Err` with the first error kept, else `Ok`.
fn first_error(first: Option<MapError>) -> Result<(), MapError> {
    first.map_or(Ok(()), Err)
}

/// A port's `SAI_PORT_STAT_*` field, if it is one we map.
fn port_field(path: &str, port: &str, field: &str, v: &Json, out: &mut Vec<Reading>) -> Result<(), MapError> {
    if field == "SAI_PORT_STAT_IF_OUT_OCTETS" {
        if let Some(n) = json_u64(path, field, v)? {
            out.push(counter("switch_port_tx_bytes", port, None, None, n));
        }
        return Ok(());
    }
    let Some(rest) = field.strip_prefix("SAI_PORT_STAT_PFC_") else { return Ok(()) };
    let Some((p, suffix)) = rest.split_once('_') else { return Ok(()) };
    let Some(prio) = p.parse::<u8>().ok().filter(|n| *n < 8 && p.len() == 1) else { return Ok(()) };
    if let Some((_, metric)) = PFC_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        if let Some(n) = json_u64(path, field, v)? {
            out.push(counter(metric, port, None, Some(prio), n));
        }
    }
    Ok(())
}

/// `Ethernet0:3` → (`Ethernet0`, 3).
pub(super) fn port_queue(key: &str) -> Option<(&str, u8)> {
    let (port, q) = key.rsplit_once(':')?;
    Some((port, q.parse().ok()?))
}

fn object<'a>(path: &str, json: &'a Json) -> Result<&'a serde_json::Map<String, Json>, MapError> {
    json.as_object().ok_or_else(|| MapError::BadValue {
        path: path.to_string(),
        problem: format!("expected a JSON object, got {json}"),
    })
}

/// Which of a queue's fields to map: its counters (`sonic_queues`), its
/// watchdog's (`sonic_pfcwd`), or both (one hash holds both in COUNTERS_DB).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueFields {
    /// `SAI_QUEUE_STAT_*`.
    pub counters: bool,
    /// `PFC_WD_*`.
    pub watchdog: bool,
}

/// The fields of one queue `port`:`q` (`key` names it in errors).
fn queue_entry(
    path: &str,
    key: &str,
    port: &str,
    q: u8,
    fields: &Json,
    which: QueueFields,
    out: &mut Vec<Reading>,
) -> Result<(), MapError> {
    if absent_json(fields) {
        return Ok(());
    }
    let mut first = None;
    for (field, v) in object(path, fields)? {
        if absent_json(v) {
            continue;
        }
        if which.watchdog && field == "PFC_WD_STATUS" {
            match v.as_str() {
                Some("stormed") => out.push(gauge("switch_pfcwd_stormed", port, Some(q), 1.0)),
                Some("operational") => out.push(gauge("switch_pfcwd_stormed", port, Some(q), 0.0)),
                _ => keep_first(
                    &mut first,
                    Err(MapError::BadValue {
                        path: format!("{path} {key} {field}"),
                        problem: format!("{v} is neither stormed nor operational"),
                    }),
                ),
            }
        } else if which.counters && field == PAUSE_STATUS {
            match v.as_str() {
                // The priorities it holds back are named in `map_update_with`.
                Some("true") => out.push(gauge(PAUSED, port, Some(q), 1.0)),
                Some("false") => out.push(gauge(PAUSED, port, Some(q), 0.0)),
                _ => keep_first(
                    &mut first,
                    Err(MapError::BadValue {
                        path: format!("{path} {key} {field}"),
                        problem: format!("{v} is neither true nor false"),
                    }),
                ),
            }
        } else if let Some((_, metric)) = PFCWD_FIELDS.iter().find(|(f, _)| f == field).filter(|_| which.watchdog) {
            match json_u64(path, field, v) {
                Ok(Some(n)) => out.push(counter(metric, port, Some(q), None, n)),
                Ok(None) => {}
                Err(e) => keep_first(&mut first, Err(e)),
            }
        } else if let Some((_, metric, kind)) =
            QUEUE_FIELDS.iter().find(|(f, _, _)| f == field).filter(|_| which.counters)
        {
            match json_u64(path, field, v) {
                Ok(Some(n)) => out.push(queue_reading(metric, *kind, port, q, n)),
                Ok(None) => {}
                Err(e) => keep_first(&mut first, Err(e)),
            }
        }
    }
    first_error(first)
}

pub(super) fn queue_table(path: &str, json: &Json, which: QueueFields, out: &mut Vec<Reading>) -> Result<(), MapError> {
    let mut first = None;
    for (key, fields) in object(path, json)? {
        // SONiC keeps the periodic watermarks beside the queue's own entry
        // (`Ethernet0:3:periodic`); the entry has the watermark already.
        if key.ends_with(":periodic") {
            continue;
        }
        let Some((port, q)) = port_queue(key) else {
            keep_first(
                &mut first,
                Err(MapError::BadValue {
                    path: path.to_string(),
                    problem: format!("key {key:?} is not <port>:<queue>"),
                }),
            );
            continue;
        };
        keep_first(&mut first, queue_entry(path, key, port, q, fields, which, out));
    }
    first_error(first)
}

/// What the OIDs of COUNTERS_DB stand for. sonic-gnmi's port-name paths
/// (`COUNTERS/Ethernet0`, `…/Queues`, `…/Pfcwd`) are virtual paths of the
/// prefix-target style; with origin `sonic-db` the `COUNTERS` keys are the
/// SAI OIDs, named by `COUNTERS_PORT_NAME_MAP` and `COUNTERS_QUEUE_NAME_MAP`.
#[derive(Debug, Clone, Default)]
pub struct OidNames {
    /// Port OID → port name.
    pub ports: HashMap<String, String>,
    /// Queue OID → (port, queue).
    pub queues: HashMap<String, (String, u8)>,
    /// Which fields of a queue's hash to map.
    pub queue_fields: QueueFields,
    /// Port alias → SONiC name (CONFIG_DB `PORT|<name>` `alias`): sonic-gnmi keys its virtual
    /// paths by alias, and every series is labelled with the name. Empty: keys are names.
    pub aliases: HashMap<String, String>,
    /// The switch's QoS and queue maps, when read: which lossless priorities a paused queue
    /// holds back (`None`: queue *q* below 8 is priority *q*, the image's `AZURE` map).
    pub view: Option<std::sync::Arc<SwitchView>>,
}

impl OidNames {
    /// Reads `COUNTERS_PORT_NAME_MAP` (`{"Ethernet0": "oid:…"}`) into the
    /// port OIDs.
    pub fn add_ports(&mut self, map: &Json) -> Result<(), MapError> {
        for (name, oid) in object("COUNTERS_PORT_NAME_MAP", map)? {
            let Some(oid) = oid.as_str() else { continue };
            self.ports.insert(oid.to_string(), name.clone());
        }
        Ok(())
    }

    /// Reads CONFIG_DB `PORT` (`{"Ethernet0": {"alias": "etp1", …}}`) into the aliases. Two
    /// ports with one alias leave every key as it is (which port would it be?), and say so.
    pub fn add_aliases(&mut self, ports: &Json) -> Result<(), MapError> {
        let pairs = object("CONFIG_DB PORT", ports)?
            .iter()
            .map(|(name, fields)| (name.clone(), fields.get("alias").and_then(Json::as_str).map(str::to_string)));
        let names = sonic::PortNames::new(pairs)
            .map_err(|e| MapError::BadValue { path: "CONFIG_DB PORT".into(), problem: e.to_string() })?;
        self.aliases = names
            .names()
            .filter_map(|name| Some((names.alias(name)?.to_string(), name.to_string())))
            .filter(|(alias, name)| alias != name)
            .collect();
        Ok(())
    }

    /// Reads `COUNTERS_QUEUE_NAME_MAP` (`{"Ethernet0:3": "oid:…"}`) into
    /// the queue OIDs.
    pub fn add_queues(&mut self, map: &Json) -> Result<(), MapError> {
        for (name, oid) in object("COUNTERS_QUEUE_NAME_MAP", map)? {
            let (Some(oid), Some((port, q))) = (oid.as_str(), port_queue(name)) else { continue };
            self.queues.insert(oid.to_string(), (port.to_string(), q));
        }
        Ok(())
    }
}

fn bad(path: &str, e: value::ValueError) -> MapError {
    MapError::BadValue { path: path.to_string(), problem: e.to_string() }
}

/// An object-valued update's JSON: `json_val`/`json_ietf_val`, or a
/// `string_val` holding JSON text (some SONiC releases send that).
fn json_of(path: &str, val: &TypedValue) -> Result<Json, MapError> {
    use gnmi_proto::gnmi::typed_value::Value as V;
    match (&val.value, value::to_json(val)) {
        (_, Some(r)) => r.map_err(|e| bad(path, e)),
        (Some(V::StringVal(s)) | Some(V::AsciiVal(s)), None) if s.trim_start().starts_with('{') => {
            serde_json::from_str(s).map_err(|e| MapError::BadValue {
                path: path.to_string(),
                problem: format!("{} is not valid JSON: {e}", value::describe(val)),
            })
        }
        _ => Err(MapError::BadValue {
            path: path.to_string(),
            problem: format!("expected a JSON object, got {}", value::describe(val)),
        }),
    }
}

/// Maps one update at `path`: the notification's prefix joined with the
/// update's path (prefix elements first). An absent value (`"None"`, empty,
/// `null`) maps to nothing and is no error.
pub fn map_update(path: &Path, val: &TypedValue, out: &mut Vec<Reading>) -> Result<(), MapError> {
    map_update_with(path, val, &OidNames::default(), out)
}

/// [`map_update`], with `COUNTERS/<oid>` named by `oids`, and ports keyed by alias named by
/// their SONiC name.
pub fn map_update_with(path: &Path, val: &TypedValue, oids: &OidNames, out: &mut Vec<Reading>) -> Result<(), MapError> {
    let before = out.len();
    let result = map_keyed(path, val, oids, out);
    if !oids.aliases.is_empty() {
        // A port's readings come together (its counters, its queues' in a row): its name is
        // looked up once per run of them, not once per reading.
        let mut last: Option<(CompactString, CompactString)> = None;
        for r in &mut out[before..] {
            match &last {
                Some((alias, name)) if *alias == r.port => r.port = name.clone(),
                _ => {
                    if let Some(name) = oids.aliases.get(r.port.as_str()) {
                        let name = CompactString::from(name.as_str());
                        last = Some((std::mem::replace(&mut r.port, name.clone()), name));
                    }
                }
            }
        }
    }
    if out[before..].iter().any(|r| r.metric == PAUSED && r.prio.is_none()) {
        let mapped = out.split_off(before);
        let unnamed = SwitchView::unnamed();
        let view = oids.view.as_deref().unwrap_or(&unnamed);
        for r in mapped {
            match (r.metric, r.queue, r.prio) {
                (PAUSED, Some(q), None) => {
                    for p in view.paused_priorities(&r.port, q) {
                        out.push(Reading { prio: Some(p), ..r.clone() });
                    }
                }
                _ => out.push(r),
            }
        }
    }
    result
}

/// [`map_update_with`] before aliases are named.
fn map_keyed(path: &Path, val: &TypedValue, oids: &OidNames, out: &mut Vec<Reading>) -> Result<(), MapError> {
    // On the stack for every path of SONiC's and OpenConfig's shapes.
    let names: SmallVec<[&str; 8]> = path.elem.iter().map(|e| e.name.as_str()).collect();
    let known = names.contains(&"COUNTERS")
        || names.contains(&PORT_TABLE)
        || matches!(names[..], ["interfaces", "interface", "state", ..]);
    if known && is_absent(val) {
        return Ok(());
    }
    if let Some(i) = names.iter().position(|n| *n == "COUNTERS") {
        return map_counters(path, &names[i + 1..], val, oids, out);
    }
    if let Some(i) = names.iter().position(|n| *n == PORT_TABLE) {
        return map_port_table(path, &names[i + 1..], val, out);
    }
    if let ["interfaces", "interface", "state", leaf @ ..] = &names[..] {
        return map_openconfig(path, leaf, val, out);
    }
    Err(MapError::UnknownPath(gnmi_proto::path_to_string(path)))
}

/// SONiC's `COUNTERS/…`: `rest` is what follows `COUNTERS` in the path.
fn map_counters(
    path: &Path,
    rest: &[&str],
    val: &TypedValue,
    oids: &OidNames,
    out: &mut Vec<Reading>,
) -> Result<(), MapError> {
    let text = || gnmi_proto::path_to_string(path);
    let json = || json_of(&text(), val);
    match rest {
        [oid, fields @ ..] if oid.starts_with("oid:") => return map_oid(&text(), oid, fields, val, oids, out),
        [port] if port.contains('*') => {
            // sonic-gnmi's wildcard answer: one object keyed by port.
            let path = text();
            let mut first = None;
            for (port, fields) in object(&path, &json()?)? {
                if absent_json(fields) {
                    continue;
                }
                match object(&path, fields) {
                    Ok(fields) => {
                        fields.iter().for_each(|(f, v)| keep_first(&mut first, port_field(&path, port, f, v, out)))
                    }
                    Err(e) => keep_first(&mut first, Err(e)),
                }
            }
            return first_error(first);
        }
        [port] => {
            let path = text();
            let mut first = None;
            for (field, v) in object(&path, &json()?)? {
                keep_first(&mut first, port_field(&path, port, field, v, out));
            }
            return first_error(first);
        }
        [_, "Queues"] => {
            use gnmi_proto::gnmi::typed_value::Value as V;
            if let Some(V::JsonVal(bytes) | V::JsonIetfVal(bytes)) = &val.value {
                if queues::queue_counters(bytes, out) == Streamed::Mapped {
                    return Ok(());
                }
            }
            return queue_table(&text(), &json()?, QueueFields { counters: true, watchdog: false }, out);
        }
        [_, "Pfcwd"] => return queue_table(&text(), &json()?, QueueFields { counters: false, watchdog: true }, out),
        [port, field] if field.starts_with("SAI_PORT_STAT_PFC_") => {
            let n = match value::to_json(val) {
                Some(Ok(j)) if absent_json(&j) => return Ok(()),
                _ => value::to_u64(val).map_err(|e| bad(&text(), e))?,
            };
            let before = out.len();
            port_field(&text(), port, field, &Json::from(n), out)?;
            if out.len() > before {
                return Ok(());
            }
        }
        _ => {}
    }
    Err(MapError::UnknownPath(text()))
}

/// `COUNTERS/<oid>[/<field>]` (the `sonic-db-origin` style): the port or
/// queue the OID name maps give it.
fn map_oid(
    path: &str,
    oid: &str,
    fields: &[&str],
    val: &TypedValue,
    oids: &OidNames,
    out: &mut Vec<Reading>,
) -> Result<(), MapError> {
    if let Some(port) = oids.ports.get(oid) {
        return match fields {
            [] => {
                let mut first = None;
                for (field, v) in object(path, &json_of(path, val)?)? {
                    keep_first(&mut first, port_field(path, port, field, v, out));
                }
                first_error(first)
            }
            [field] => {
                let n = value::to_u64(val).map_err(|e| bad(path, e))?;
                port_field(path, port, field, &Json::from(n), out)
            }
            _ => Err(MapError::UnknownPath(path.to_string())),
        };
    }
    if let (Some((port, q)), []) = (oids.queues.get(oid), fields) {
        return queue_entry(path, oid, port, *q, &json_of(path, val)?, oids.queue_fields, out);
    }
    Err(MapError::UnknownPath(format!("{path} (an OID not in COUNTERS_PORT_NAME_MAP or COUNTERS_QUEUE_NAME_MAP)")))
}

/// APPL_DB's port table (the `sonic_ports` preset).
const PORT_TABLE: &str = "PORT_TABLE";

/// APPL_DB `PORT_TABLE` (`rest` is what follows it: nothing, the table keyed by port; or one
/// port), read as the `sonic_redis` sensor reads it ([`fields::port_status_entry`]: the link's
/// state and portsorch's count of its changes). APPL_DB keys are SONiC names, never aliases.
fn map_port_table(path: &Path, rest: &[&str], val: &TypedValue, out: &mut Vec<Reading>) -> Result<(), MapError> {
    let text = gnmi_proto::path_to_string(path);
    let json = json_of(&text, val)?;
    let entries: Vec<(&str, &Json)> = match rest {
        [] => object(&text, &json)?.iter().map(|(port, fields)| (port.as_str(), fields)).collect(),
        [port] => vec![(*port, &json)],
        _ => return Err(MapError::UnknownPath(text)),
    };
    let (mut readings, mut errors, mut first) = (Vec::new(), Vec::new(), None);
    for (port, fields) in entries.into_iter().filter(|(_, fields)| !absent_json(fields)) {
        match object(&text, fields) {
            Ok(fields) => fields::port_status_entry(port, fields, &mut readings, &mut errors),
            Err(e) => keep_first(&mut first, Err(e)),
        }
        for e in errors.drain(..) {
            let path = format!("{text} {port} {}", e.field);
            keep_first(&mut first, Err(MapError::BadValue { path, problem: e.problem }));
        }
    }
    // Port readings (no queue, no priority) label their series alike in both reading types.
    out.extend(readings.into_iter().map(|r| Reading {
        metric: r.metric,
        kind: match r.kind {
            crate::switch_series::ReadingKind::Counter => ReadingKind::Counter,
            crate::switch_series::ReadingKind::Gauge => ReadingKind::Gauge,
        },
        port: r.port,
        queue: r.queue,
        prio: r.prio,
        count: r.count,
        level: r.level,
    }));
    first_error(first)
}

/// OpenConfig `interfaces/interface[name=…]/state/<leaf>`.
fn map_openconfig(path: &Path, leaf: &[&str], val: &TypedValue, out: &mut Vec<Reading>) -> Result<(), MapError> {
    let text = || gnmi_proto::path_to_string(path);
    let Some(port) = path.elem[1].key.get("name") else { return Err(MapError::UnknownPath(text())) };
    match leaf {
        ["oper-status"] => {
            let status = value::to_text(val).map_err(|e| bad(&text(), e))?;
            out.push(gauge("switch_oper_up", port, None, if status == "UP" { 1.0 } else { 0.0 }));
            Ok(())
        }
        ["counters", name] => {
            if let Some((_, metric)) = OC_COUNTERS.iter().find(|(n, _)| n == name) {
                out.push(counter(metric, port, None, None, value::to_u64(val).map_err(|e| bad(&text(), e))?));
            }
            // Other OpenConfig counters (octets, discards) are not ours.
            Ok(())
        }
        ["name"] => Ok(()),
        _ => Err(MapError::UnknownPath(text())),
    }
}

impl MapError {
    /// The path (and field) the error is about.
    pub fn path(&self) -> &str {
        match self {
            MapError::UnknownPath(path) | MapError::BadValue { path, .. } => path,
        }
    }
}

#[cfg(test)]
mod tests;
