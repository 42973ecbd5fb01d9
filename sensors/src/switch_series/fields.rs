//! SONiC's fields → readings: which field of a port's, a queue's or a port table's hash is which
//! metric, with which labels. One table for both switch sensors, so a series means the same
//! whichever way it was read.
//!
//! | hash and field | metric | kind | labels |
//! |---|---|---|---|
//! | port counters `SAI_PORT_STAT_PFC_<p>_RX_PKTS`, `_TX_PKTS` | `switch_pfc_rx_pkts`, `switch_pfc_tx_pkts` | counter | `port`, `prio` |
//! | … `_ON2OFF_RX_PKTS` (Broadcom) | `switch_pfc_on2off_rx_pkts` | counter | `port`, `prio` |
//! | … `_RX_PAUSE_DURATION_US`, `_TX_PAUSE_DURATION_US` (Mellanox, VS) | `switch_pfc_rx_pause_duration_us`, `switch_pfc_tx_pause_duration_us` | counter | `port`, `prio` |
//! | … `_RX_PAUSE_DURATION`, `_TX_PAUSE_DURATION` (Marvell; read as [`PauseUnit`] says, skipped where the `_US` twin is there) | the same | counter | `port`, `prio` |
//! | queue counters `SAI_QUEUE_STAT_*` ([`QUEUE_FIELDS`]) | `switch_queue_*` | counter or gauge | `port`, `queue`, `prio` (of a unicast queue one priority maps to) |
//! | … `SAI_QUEUE_ATTR_PAUSE_STATUS` (Broadcom) | `switch_pfc_queue_paused` (1 paused) | gauge | `port`, `queue`, `prio`: one series per lossless priority that pauses the queue |
//! | … `PFC_WD_STATUS` | `switch_pfcwd_stormed` (1 stormed, 0 operational) | gauge | `port`, `queue`, `prio` (= queue, the watchdog's own pairing) |
//! | … `PFC_WD_QUEUE_STATS_*` ([`PFCWD_FIELDS`]) | `switch_pfcwd_*` | counter | `port`, `queue`, `prio` |
//! | port counters `SAI_PORT_STAT_IF_OUT_OCTETS` | `switch_port_tx_bytes` (an ECMP group's uplinks: how evenly they carry) | counter | `port` |
//! | APPL_DB `PORT_TABLE` `oper_status` | `switch_oper_up` (1 up) | gauge | `port` |
//! | … `flap_count` (portsorch: one more at every oper status change, either way) | `switch_carrier_transitions` | counter | `port` |
//!
//! A value SONiC has not got (`"None"`, `"N/A"`, empty, JSON `null`) is no reading and no
//! error. A value that does not read is one [`FieldError`]: the entry's other fields still
//! count (one bad field must not hide a storm in the next one).

use std::collections::BTreeMap;

use serde_json::Value as Json;
use smallvec::SmallVec;

use super::reading::{Reading, ReadingKind};
use super::view::SwitchView;

/// A field's value as the switch sent it.
#[derive(Debug, Clone, Copy)]
pub enum Scalar<'a> {
    /// Text (SONiC writes every value of its databases as text).
    Text(&'a str),
    /// A JSON number.
    Count(u64),
    /// JSON `null`.
    Absent,
    /// Anything else (a negative or fractional number, a boolean, a list, an object).
    Other(&'a Json),
}

impl Scalar<'_> {
    /// The value as an error shows it.
    fn shown(&self) -> String {
        match self {
            Scalar::Text(s) => format!("{s:?}"),
            Scalar::Count(n) => n.to_string(),
            Scalar::Absent => "null".into(),
            Scalar::Other(j) => j.to_string(),
        }
    }

    /// Whether SONiC has no value: `"None"` (Python's, printed into Redis), `"N/A"`, empty, or
    /// `null`.
    pub fn is_absent(&self) -> bool {
        match self {
            Scalar::Text(s) => absent_text(s),
            Scalar::Absent => true,
            _ => false,
        }
    }

    /// The value as a counter; `None` when SONiC has none.
    fn count(&self) -> Result<Option<u64>, String> {
        match self {
            _ if self.is_absent() => Ok(None),
            Scalar::Text(s) => s.trim().parse().map(Some).map_err(|_| format!("{} is not a counter", self.shown())),
            Scalar::Count(n) => Ok(Some(*n)),
            _ => Err(format!("{} is not a counter", self.shown())),
        }
    }
}

/// The words SONiC uses for a value it has not got.
pub fn absent_text(s: &str) -> bool {
    matches!(s.trim(), "" | "None" | "N/A")
}

/// A JSON value as a [`Scalar`].
pub fn json_scalar(v: &Json) -> Scalar<'_> {
    match v {
        Json::String(s) => Scalar::Text(s),
        Json::Null => Scalar::Absent,
        Json::Number(n) => n.as_u64().map_or(Scalar::Other(v), Scalar::Count),
        other => Scalar::Other(other),
    }
}

/// The fields of one hash, however it arrived: a JSON object (gNMI) or Redis's fields.
pub trait Fields {
    /// Calls `f` with every field and its value.
    fn each(&self, f: &mut dyn FnMut(&str, Scalar<'_>));
    /// Whether the hash has `field`.
    fn has(&self, field: &str) -> bool;
}

impl Fields for serde_json::Map<String, Json> {
    fn each(&self, f: &mut dyn FnMut(&str, Scalar<'_>)) {
        for (k, v) in self {
            f(k, json_scalar(v));
        }
    }
    fn has(&self, field: &str) -> bool {
        self.contains_key(field)
    }
}

impl Fields for BTreeMap<String, String> {
    fn each(&self, f: &mut dyn FnMut(&str, Scalar<'_>)) {
        for (k, v) in self {
            f(k, Scalar::Text(v));
        }
    }
    fn has(&self, field: &str) -> bool {
        self.contains_key(field)
    }
}

/// A field that does not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field.
    pub field: String,
    /// What is wrong with its value.
    pub problem: String,
}

/// A port PFC field: its metric, and whether it is a duration without `_US`.
struct PfcField {
    suffix: &'static str,
    metric: &'static str,
    /// `…_PAUSE_DURATION` without `_US`: read as [`PauseUnit`](super::PauseUnit) says, and
    /// left out where the `_US` twin is in the same hash.
    unitless: bool,
}

const PFC_FIELDS: [PfcField; 7] = [
    PfcField { suffix: "RX_PKTS", metric: "switch_pfc_rx_pkts", unitless: false },
    PfcField { suffix: "TX_PKTS", metric: "switch_pfc_tx_pkts", unitless: false },
    PfcField { suffix: "ON2OFF_RX_PKTS", metric: "switch_pfc_on2off_rx_pkts", unitless: false },
    PfcField { suffix: "RX_PAUSE_DURATION_US", metric: "switch_pfc_rx_pause_duration_us", unitless: false },
    PfcField { suffix: "TX_PAUSE_DURATION_US", metric: "switch_pfc_tx_pause_duration_us", unitless: false },
    PfcField { suffix: "RX_PAUSE_DURATION", metric: "switch_pfc_rx_pause_duration_us", unitless: true },
    PfcField { suffix: "TX_PAUSE_DURATION", metric: "switch_pfc_tx_pause_duration_us", unitless: true },
];

/// The queue counters mapped, with their metric and kind.
pub const QUEUE_FIELDS: [(&str, &str, ReadingKind); 7] = [
    ("SAI_QUEUE_STAT_PACKETS", "switch_queue_packets", ReadingKind::Counter),
    ("SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", "switch_queue_ecn_marked_packets", ReadingKind::Counter),
    ("SAI_QUEUE_STAT_BYTES", "switch_queue_bytes", ReadingKind::Counter),
    ("SAI_QUEUE_STAT_DROPPED_PACKETS", "switch_queue_dropped_packets", ReadingKind::Counter),
    ("SAI_QUEUE_STAT_DROPPED_BYTES", "switch_queue_dropped_bytes", ReadingKind::Counter),
    ("SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES", "switch_queue_watermark_bytes", ReadingKind::Gauge),
    ("SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES", "switch_queue_occupancy_bytes", ReadingKind::Gauge),
];

/// The watchdog's per-queue counters mapped.
pub const PFCWD_FIELDS: [(&str, &str); 4] = [
    ("PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED", "switch_pfcwd_deadlock_detected"),
    ("PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED", "switch_pfcwd_deadlock_restored"),
    ("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS", "switch_pfcwd_tx_dropped_packets"),
    ("PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS", "switch_pfcwd_rx_dropped_packets"),
];

/// The watchdog's status of a queue.
pub const PFCWD_STATUS: &str = "PFC_WD_STATUS";
/// Broadcom's queue pause status (a queue attribute its watchdog polls).
pub const PAUSE_STATUS: &str = "SAI_QUEUE_ATTR_PAUSE_STATUS";
/// A port's operational status in APPL_DB `PORT_TABLE`.
pub const OPER_STATUS: &str = "oper_status";
/// Its changes so far (`updateDbPortFlapCount`, sonic-swss `portsorch.cpp:3982-4009`).
pub const FLAP_COUNT: &str = "flap_count";

/// Which fields of a queue's hash to map: its counters (`sonic_queues`), its watchdog's
/// (`sonic_pfcwd`), its pause status. One hash holds all of them in COUNTERS_DB; a sensor
/// reading it twice (two subscriptions) maps each field from one of them only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct QueueFields {
    /// `SAI_QUEUE_STAT_*`.
    pub counters: bool,
    /// `PFC_WD_*`.
    pub watchdog: bool,
    /// `SAI_QUEUE_ATTR_PAUSE_STATUS`, per paused priority.
    pub paused: bool,
}

/// `SAI_PORT_STAT_PFC_<p>_<suffix>` → (priority, its field), if it is one of ours.
fn pfc_field(field: &str) -> Option<(u8, &'static PfcField)> {
    let rest = field.strip_prefix("SAI_PORT_STAT_PFC_")?;
    let (p, suffix) = rest.split_once('_')?;
    // One digit: `SAI_PORT_STAT_PFC_03_…` is no field of SAI's.
    let prio = p.parse::<u8>().ok().filter(|n| *n < 8 && p.len() == 1)?;
    PFC_FIELDS.iter().find(|f| f.suffix == suffix).map(|f| (prio, f))
}

/// Whether `field` is a port PFC field this table maps (a path naming one field).
pub fn is_pfc_field(field: &str) -> bool {
    pfc_field(field).is_some()
}

/// One port PFC field of `port` into `out` (or `errors`); `has` tells whether the hash also
/// holds a field (the `_US` twin of a duration without it).
pub fn port_field(
    view: &SwitchView,
    port: &str,
    (field, value): (&str, Scalar<'_>),
    has: &dyn Fn(&str) -> bool,
    out: &mut Vec<Reading>,
    errors: &mut Vec<FieldError>,
) {
    if field == TX_OCTETS {
        match value.count() {
            Ok(Some(n)) => out.push(Reading::counter("switch_port_tx_bytes", port, None, None, n)),
            Ok(None) => {}
            Err(problem) => errors.push(FieldError { field: field.to_string(), problem }),
        }
        return;
    }
    let Some((prio, pfc)) = pfc_field(field) else { return };
    if pfc.unitless && has(&format!("{field}_US")) {
        return;
    }
    let error = |problem: String| FieldError { field: field.to_string(), problem };
    let n = match value.count() {
        Ok(Some(n)) => n,
        Ok(None) => return,
        Err(problem) => return errors.push(error(problem)),
    };
    let n = if pfc.unitless {
        match view.pause_us(port, n) {
            Ok(us) => us,
            Err(problem) => return errors.push(error(problem)),
        }
    } else {
        n
    };
    out.push(Reading::counter(pfc.metric, port, None, Some(prio), n));
}

/// The bytes a port sent.
const TX_OCTETS: &str = "SAI_PORT_STAT_IF_OUT_OCTETS";

/// A port's counters hash.
pub fn port_entry(
    view: &SwitchView,
    port: &str,
    fields: &dyn Fields,
    out: &mut Vec<Reading>,
    errors: &mut Vec<FieldError>,
) {
    fields.each(&mut |field, value| port_field(view, port, (field, value), &|f| fields.has(f), out, errors));
}

/// A queue's hash: the queue at `position` of `port`, mapping what `which` asks for.
pub fn queue_entry(
    view: &SwitchView,
    (port, position): (&str, u8),
    fields: &dyn Fields,
    which: QueueFields,
    out: &mut Vec<Reading>,
    errors: &mut Vec<FieldError>,
) {
    let prio = view.queue_prio(port, position);
    fields.each(&mut |field, value| {
        if value.is_absent() {
            return;
        }
        let error = |problem: String| FieldError { field: field.to_string(), problem };
        if field == PFCWD_STATUS && which.watchdog {
            match value {
                Scalar::Text("stormed") => {
                    out.push(Reading::gauge("switch_pfcwd_stormed", port, Some(position), Some(position), 1.0))
                }
                Scalar::Text("operational") => {
                    out.push(Reading::gauge("switch_pfcwd_stormed", port, Some(position), Some(position), 0.0))
                }
                _ => errors.push(error(format!("{} is neither stormed nor operational", value.shown()))),
            }
        } else if field == PAUSE_STATUS && which.paused {
            let level = match value {
                Scalar::Text("true") => 1.0,
                Scalar::Text("false") => 0.0,
                _ => return errors.push(error(format!("{} is neither true nor false", value.shown()))),
            };
            let priorities: SmallVec<[u8; 2]> = view.paused_priorities(port, position);
            for p in priorities {
                out.push(Reading::gauge("switch_pfc_queue_paused", port, Some(position), Some(p), level));
            }
        } else if let Some((_, metric)) = PFCWD_FIELDS.iter().find(|(f, _)| *f == field).filter(|_| which.watchdog) {
            match value.count() {
                Ok(Some(n)) => out.push(Reading::counter(metric, port, Some(position), Some(position), n)),
                Ok(None) => {}
                Err(problem) => errors.push(error(problem)),
            }
        } else if let Some((_, metric, kind)) =
            QUEUE_FIELDS.iter().find(|(f, _, _)| *f == field).filter(|_| which.counters)
        {
            match value.count() {
                Ok(Some(n)) => out.push(queue_reading(metric, *kind, port, position, prio, n)),
                Ok(None) => {}
                Err(problem) => errors.push(error(problem)),
            }
        }
    });
}

/// Queue `position`'s `metric` of `kind` on `port`, read as `n`.
pub fn queue_reading(
    metric: &'static str,
    kind: ReadingKind,
    port: &str,
    position: u8,
    prio: Option<u8>,
    n: u64,
) -> Reading {
    match kind {
        ReadingKind::Counter => Reading::counter(metric, port, Some(position), prio, n),
        ReadingKind::Gauge => Reading::gauge(metric, port, Some(position), prio, n as f64),
    }
}

/// A port's APPL_DB `PORT_TABLE` entry: its operational status and how often it changed.
pub fn port_status_entry(port: &str, fields: &dyn Fields, out: &mut Vec<Reading>, errors: &mut Vec<FieldError>) {
    fields.each(&mut |field, value| {
        if value.is_absent() {
            return;
        }
        let problem = match (field, value) {
            (OPER_STATUS, Scalar::Text("up")) => {
                return out.push(Reading::gauge("switch_oper_up", port, None, None, 1.0));
            }
            (OPER_STATUS, Scalar::Text("down")) => {
                return out.push(Reading::gauge("switch_oper_up", port, None, None, 0.0));
            }
            (OPER_STATUS, _) => format!("{} is neither up nor down", value.shown()),
            (FLAP_COUNT, _) => match value.count() {
                Ok(Some(n)) => return out.push(Reading::counter("switch_carrier_transitions", port, None, None, n)),
                Ok(None) => return,
                Err(problem) => problem,
            },
            _ => return,
        };
        errors.push(FieldError { field: field.to_string(), problem });
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::switch_series::view::{PauseUnit, ViewTables};

    fn entry(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn port(view: &SwitchView, fields: &dyn Fields) -> (Vec<Reading>, Vec<FieldError>) {
        let (mut out, mut errors) = (Vec::new(), Vec::new());
        port_entry(view, "Ethernet4", fields, &mut out, &mut errors);
        (out, errors)
    }

    #[test]
    fn one_bad_field_is_one_error_and_the_rest_of_the_hash_counts() {
        let fields = entry(&[
            ("SAI_PORT_STAT_PFC_3_RX_PKTS", "lots"),
            ("SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US", "990000"),
            ("SAI_PORT_STAT_PFC_4_RX_PKTS", "None"),
            ("SAI_PORT_STAT_PFC_3_RX_PKTS_last", "9"),
            ("SAI_PORT_STAT_IF_IN_OCTETS", "1"),
        ]);
        let (out, errors) = port(&SwitchView::unnamed(), &fields);
        assert_eq!(out, [Reading::counter("switch_pfc_rx_pause_duration_us", "Ethernet4", None, Some(3), 990_000)]);
        assert_eq!(
            errors,
            [FieldError { field: "SAI_PORT_STAT_PFC_3_RX_PKTS".into(), problem: "\"lots\" is not a counter".into() }]
        );
    }

    #[test]
    fn a_ports_bytes_sent_are_switch_port_tx_bytes() {
        let (out, errors) = port(&SwitchView::unnamed(), &entry(&[("SAI_PORT_STAT_IF_OUT_OCTETS", "77")]));
        assert_eq!(
            (out, errors),
            (vec![Reading::counter("switch_port_tx_bytes", "Ethernet4", None, None, 77)], vec![])
        );
        let (out, errors) = port(&SwitchView::unnamed(), &entry(&[("SAI_PORT_STAT_IF_OUT_OCTETS", "x")]));
        assert!(out.is_empty() && errors.len() == 1);
    }

    #[test]
    fn each_familys_pfc_counters_have_their_series() {
        let broadcom = entry(&[("SAI_PORT_STAT_PFC_3_RX_PKTS", "7"), ("SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS", "2")]);
        let (out, _) = port(&SwitchView::unnamed(), &broadcom);
        let metrics: Vec<&str> = out.iter().map(|r| r.metric).collect();
        assert_eq!(metrics, ["switch_pfc_on2off_rx_pkts", "switch_pfc_rx_pkts"]);
        // Marvell's duration without `_US`, as µs; left out where the `_US` twin is there.
        let marvell = entry(&[("SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION", "200000")]);
        let (out, _) = port(&SwitchView::unnamed(), &marvell);
        assert_eq!(out, [Reading::counter("switch_pfc_rx_pause_duration_us", "Ethernet4", None, Some(3), 200_000)]);
        let both =
            entry(&[("SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION", "1"), ("SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US", "5")]);
        let (out, _) = port(&SwitchView::unnamed(), &both);
        assert_eq!(out, [Reading::counter("switch_pfc_rx_pause_duration_us", "Ethernet4", None, Some(3), 5)]);
        // As quanta at the port's speed when told so.
        let tables = ViewTables {
            ports: Some(BTreeMap::from([("Ethernet4".to_string(), entry(&[("speed", "100000")]))])),
            ..ViewTables::default()
        };
        let (quanta, _) = SwitchView::build(&tables, PauseUnit::Quanta).unwrap();
        let (out, _) = port(&quanta, &marvell);
        assert_eq!(out[0].count, 1024, "200,000 quanta of 5.12 ns");
    }

    #[test]
    fn queue_hashes_map_counters_the_watchdog_and_the_pause_status_as_asked() {
        let fields = entry(&[
            ("SAI_QUEUE_STAT_PACKETS", "5"),
            ("PFC_WD_STATUS", "stormed"),
            ("PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED", "2"),
            ("SAI_QUEUE_ATTR_PAUSE_STATUS", "true"),
            ("SAI_QUEUE_ATTR_PAUSE_STATUS_last", "true"),
        ]);
        let map = |which| {
            let (mut out, mut errors) = (Vec::new(), Vec::new());
            queue_entry(&SwitchView::unnamed(), ("Ethernet4", 3), &fields, which, &mut out, &mut errors);
            assert!(errors.is_empty(), "{errors:?}");
            out
        };
        let all = QueueFields { counters: true, watchdog: true, paused: true };
        assert_eq!(
            map(all),
            [
                Reading::counter("switch_pfcwd_deadlock_detected", "Ethernet4", Some(3), Some(3), 2),
                Reading::gauge("switch_pfcwd_stormed", "Ethernet4", Some(3), Some(3), 1.0),
                Reading::gauge("switch_pfc_queue_paused", "Ethernet4", Some(3), Some(3), 1.0),
                Reading::counter("switch_queue_packets", "Ethernet4", Some(3), Some(3), 5),
            ]
        );
        assert_eq!(map(QueueFields { counters: true, ..QueueFields::default() }).len(), 1);
        let bad = entry(&[("PFC_WD_STATUS", "on fire"), ("SAI_QUEUE_STAT_PACKETS", "5")]);
        let (mut out, mut errors) = (Vec::new(), Vec::new());
        queue_entry(&SwitchView::unnamed(), ("Ethernet4", 3), &bad, all, &mut out, &mut errors);
        assert_eq!(out.len(), 1, "the counter still counts");
        assert_eq!(errors[0].problem, "\"on fire\" is neither stormed nor operational");
    }

    #[test]
    fn oper_status_is_up_or_down_and_each_change_is_a_carrier_transition() {
        let (mut out, mut errors) = (Vec::new(), Vec::new());
        let down = entry(&[("oper_status", "down"), ("alias", "etp1"), ("flap_count", "3"), ("last_down_time", "x")]);
        port_status_entry("Ethernet1/1", &down, &mut out, &mut errors);
        port_status_entry(
            "Ethernet4",
            &entry(&[("oper_status", "sideways"), ("flap_count", "2")]),
            &mut out,
            &mut errors,
        );
        port_status_entry("Ethernet8", &entry(&[("oper_status", "up"), ("flap_count", "many")]), &mut out, &mut errors);
        assert_eq!(
            out,
            [
                Reading::counter("switch_carrier_transitions", "Ethernet1/1", None, None, 3),
                Reading::gauge("switch_oper_up", "Ethernet1/1", None, None, 0.0),
                Reading::counter("switch_carrier_transitions", "Ethernet4", None, None, 2),
                Reading::gauge("switch_oper_up", "Ethernet8", None, None, 1.0),
            ],
            "one bad field is one error: the entry's other field still reads"
        );
        let problems: Vec<_> = errors.iter().map(|e| e.problem.as_str()).collect();
        assert_eq!(problems, ["\"sideways\" is neither up nor down", "\"many\" is not a counter"]);
    }
}
