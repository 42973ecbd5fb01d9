//! What a switch sensor knows of one SONiC switch to name what it reads.
//!
//! - **Ports** by their SONiC name (`Ethernet4`, the key of `PORT|Ethernet4`), never by the
//!   vendor alias sonic-gnmi keys its virtual paths by (`etp2`, `Ethernet1/1`): CONFIG_DB `PORT`
//!   `alias` maps one to the other ([`sonic::PortNames`]).
//! - **Queues** by their position in the port's queue list (`<port>:<position>` in
//!   `COUNTERS_QUEUE_NAME_MAP`), with their SAI index and type ([`sonic::Queues`]).
//! - **Priorities**: the queue a PFC priority pauses, through `PORT_QOS_MAP` and
//!   `MAP_PFC_PRIORITY_TO_QUEUE` ([`sonic::Qos`]); a multicast queue is never a priority's.
//! - **Object ids** of the `sonic-db-origin` style, where `COUNTERS` is keyed by them.
//! - **The ASIC family**, from one port's counters and `DEVICE_METADATA`
//!   ([`sonic::AsicFamily::recognise`]), and the **port speeds** that turn pause quanta into
//!   microseconds ([`PauseUnit`]).
//!
//! [`SwitchView::build`] reads all of it from the raw tables, however the sensor got them (gNMI
//! Gets or the switch's Redis). What cannot be known is left unknown and answered "no": a
//! queue whose type was not read gets no priority, rather than a guessed one.
//! [`SwitchView::unnamed`] is the view of a reader that has no tables (the simulator's own
//! readers): keys are names, queue *q* is priority *q*.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use smallvec::SmallVec;
use sonic::asic::Recognition;
use sonic::client::Entry;
use sonic::names::QueueKind;
use sonic::{AsicFamily, NameMaps, PortNames, Qos, Queues};

/// The highest PFC priority.
const MAX_PRIORITY: u8 = 7;

/// How to read `SAI_PORT_STAT_PFC_<p>_{RX,TX}_PAUSE_DURATION` (without `_US`; Marvell's
/// counters). SAI defines it as the sum of the pause quanta of the frames (`saiport.h`: "the
/// duration quanta in ingress pause frame"); SONiC's own Marvell Teralynx detector compares its
/// growth with the poll time in microseconds (`pfc_detect_marvell-teralynx.lua`: `> poll_time *
/// 0.8`), so what the switch's SAI writes there is what its watchdog takes for microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PauseUnit {
    /// Microseconds, as SONiC's detector reads it (the default).
    #[default]
    Us,
    /// Pause quanta (512 bit times each), as SAI defines it: converted to microseconds with the
    /// port's speed (CONFIG_DB `PORT|<port>` `speed`, Mb/s).
    Quanta,
}

/// The tables a view is built from, as read; `None` for a table that could not be read.
#[derive(Debug, Clone, Default)]
pub struct ViewTables {
    /// CONFIG_DB `PORT`: SONiC name → fields (`alias`, `speed`).
    pub ports: Option<BTreeMap<String, Entry>>,
    /// CONFIG_DB `PORT_QOS_MAP`: key → fields.
    pub port_qos: Option<BTreeMap<String, Entry>>,
    /// CONFIG_DB `MAP_PFC_PRIORITY_TO_QUEUE`: map name → priority → queue index.
    pub pfc_maps: Option<BTreeMap<String, Entry>>,
    /// CONFIG_DB `DEVICE_METADATA|localhost`.
    pub metadata: Option<Entry>,
    /// COUNTERS_DB's name maps (`ports` and `queues` required, the rest may be empty).
    pub name_maps: Option<NameMaps>,
    /// One port's counters hash (`COUNTERS:<port oid>`), to tell the ASIC family.
    pub port_counters: Option<Entry>,
}

/// What a view could not make of its tables: each costs only its part (a QoS map that does not
/// read leaves priorities unknown; ports are still named).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// The ports cannot be named (two ports share an alias): nothing keyed by alias can be
    /// mapped.
    #[error("CONFIG_DB PORT: {0}")]
    Ports(String),
    /// The queue name maps do not read: queues get no priority.
    #[error("COUNTERS_DB queue maps: {0}")]
    Queues(String),
    /// `PORT_QOS_MAP` or `MAP_PFC_PRIORITY_TO_QUEUE` does not read: queues get no priority.
    #[error("CONFIG_DB QoS maps: {0}")]
    Qos(String),
    /// A port's speed is not a number: its pause quanta cannot be converted.
    #[error("CONFIG_DB PORT|{port} speed {value:?} is not a number of Mb/s")]
    Speed {
        /// The port.
        port: String,
        /// The value.
        value: String,
    },
    /// The ASIC family cannot be told.
    #[error("{0}")]
    Family(String),
}

/// One switch, as far as naming its readings goes (see the module doc).
#[derive(Debug, Clone, Default)]
pub struct SwitchView {
    /// `None`: an unnamed view, keys taken as they come.
    ports: Option<PortNames>,
    speeds: HashMap<String, u64>,
    queues: Option<Queues>,
    qos: Option<Qos>,
    port_oids: HashMap<String, String>,
    queue_oids: HashMap<String, (String, u8)>,
    family: Option<Recognition>,
    unit: PauseUnit,
}

impl SwitchView {
    /// The view of a reader without tables: keys are SONiC names, queue *q* (below 8) is
    /// priority *q*, pause durations are microseconds.
    pub fn unnamed() -> SwitchView {
        SwitchView::default()
    }

    /// A view of `tables`, reading pause quanta as `unit` says; the problems of the parts that
    /// could not be built (each left unknown). A duplicate alias is the one error that leaves
    /// no view: ports cannot be named.
    pub fn build(tables: &ViewTables, unit: PauseUnit) -> Result<(SwitchView, Vec<ViewError>), ViewError> {
        let mut problems = Vec::new();
        let port_table = tables.ports.clone().unwrap_or_default();
        let pairs = port_table.iter().map(|(name, fields)| (name.clone(), fields.get("alias").cloned()));
        let ports = PortNames::new(pairs).map_err(|e| ViewError::Ports(e.to_string()))?;
        let mut speeds = HashMap::new();
        for (name, fields) in &port_table {
            let Some(value) = fields.get("speed") else { continue };
            match value.trim().parse::<u64>() {
                Ok(mbps) if mbps > 0 => {
                    speeds.insert(name.clone(), mbps);
                }
                _ => problems.push(ViewError::Speed { port: name.clone(), value: value.clone() }),
            }
        }
        let mut view = SwitchView { ports: Some(ports), speeds, unit, ..SwitchView::default() };
        if let Some(maps) = &tables.name_maps {
            view.oids(maps);
            match Queues::from_maps(maps) {
                Ok(queues) => view.queues = Some(queues),
                Err(e) => problems.push(ViewError::Queues(e.to_string())),
            }
        }
        if let (Some(port_qos), Some(pfc_maps)) = (&tables.port_qos, &tables.pfc_maps) {
            match Qos::from_entries(port_qos, pfc_maps) {
                Ok(qos) => view.qos = Some(qos),
                Err(e) => problems.push(ViewError::Qos(e.to_string())),
            }
        }
        if tables.port_counters.is_some() || tables.metadata.is_some() {
            let empty = Entry::new();
            let counters = tables.port_counters.as_ref().unwrap_or(&empty);
            match AsicFamily::recognise(counters, tables.metadata.as_ref()) {
                Ok(recognition) => view.family = Some(recognition),
                Err(e) => problems.push(ViewError::Family(e.to_string())),
            }
        }
        Ok((view, problems))
    }

    /// The object id tables of the `sonic-db-origin` style.
    fn oids(&mut self, maps: &NameMaps) {
        self.port_oids = maps.ports.iter().map(|(name, oid)| (oid.clone(), name.clone())).collect();
        self.queue_oids = maps
            .queues
            .iter()
            .filter_map(|(name, oid)| {
                let (port, position) = name.rsplit_once(':')?;
                Some((oid.clone(), (port.to_string(), position.parse::<u8>().ok()?)))
            })
            .collect();
    }

    /// Whether the view names ports from CONFIG_DB (false: [`SwitchView::unnamed`]).
    pub fn is_named(&self) -> bool {
        self.ports.is_some()
    }

    /// How the ASIC family was recognised, if it was.
    pub fn family(&self) -> Option<&Recognition> {
        self.family.as_ref()
    }

    /// The port names, if read.
    pub fn ports(&self) -> Option<&PortNames> {
        self.ports.as_ref()
    }

    /// The SONiC name of the port a switch keyed `key`: by its alias first (sonic-gnmi keys its
    /// virtual paths by alias), else by its name. An unnamed view takes `key` as the name.
    pub fn port<'a>(&'a self, key: &'a str) -> Result<&'a str, String> {
        let Some(names) = &self.ports else { return Ok(key) };
        if let Some(name) = names.name_of_alias(key) {
            return Ok(name);
        }
        if names.contains(key) {
            return Ok(key);
        }
        Err(format!("port {key:?} is neither the alias nor the name of a port of CONFIG_DB PORT"))
    }

    /// The port of a port object id (`COUNTERS_PORT_NAME_MAP`).
    pub fn port_of_oid(&self, oid: &str) -> Option<&str> {
        self.port_oids.get(oid).map(String::as_str)
    }

    /// The port and position of a queue object id (`COUNTERS_QUEUE_NAME_MAP`).
    pub fn queue_of_oid(&self, oid: &str) -> Option<(&str, u8)> {
        self.queue_oids.get(oid).map(|(port, position)| (port.as_str(), *position))
    }

    /// The object ids of every port, by name order: what the `sonic-db-origin` style
    /// subscribes to.
    pub fn port_oids(&self) -> Vec<(&str, &str)> {
        let mut oids: Vec<(&str, &str)> = self.port_oids.iter().map(|(o, n)| (n.as_str(), o.as_str())).collect();
        oids.sort_unstable();
        oids
    }

    /// The object ids of every queue, by (port, position) order.
    pub fn queue_oids(&self) -> Vec<((&str, u8), &str)> {
        let mut oids: Vec<((&str, u8), &str)> =
            self.queue_oids.iter().map(|(o, (p, q))| ((p.as_str(), *q), o.as_str())).collect();
        oids.sort_unstable();
        oids
    }

    /// The queue at `position` of `port`, when the maps were read and know it.
    fn queue(&self, port: &str, position: u8) -> Option<&sonic::Queue> {
        self.queues.as_ref()?.at(port, u32::from(position))
    }

    /// The priority a queue's series is labelled with: the one priority whose unicast queue it
    /// is (a lossless one first, when several priorities share the queue). `None` for a
    /// multicast queue, a queue of unknown type, or one no single priority maps to. An unnamed
    /// view: queue *q* below 8 is priority *q*.
    pub fn queue_prio(&self, port: &str, position: u8) -> Option<u8> {
        if !self.is_named() {
            return (position <= MAX_PRIORITY).then_some(position);
        }
        let (queues, qos) = (self.queues.as_ref()?, self.qos.as_ref()?);
        let queue = self.queue(port, position)?;
        if !matches!(queue.kind, Some(QueueKind::Unicast | QueueKind::All)) {
            return None;
        }
        let mapped: SmallVec<[u8; 8]> = (0..=MAX_PRIORITY)
            .filter(|&p| qos.queue(queues, port, p).is_ok_and(|pq| pq.queue.oid == queue.oid))
            .collect();
        let lossless = qos.port(port).map(|q| &q.pfc_enable);
        let lossless: SmallVec<[u8; 8]> =
            mapped.iter().copied().filter(|p| lossless.is_some_and(|l| l.contains(p))).collect();
        match (lossless.as_slice(), mapped.as_slice()) {
            ([p], _) | ([], [p]) => Some(*p),
            _ => None,
        }
    }

    /// The lossless priorities (`pfc_enable`) whose unicast queue is the one at `position`:
    /// what the queue's pause status says for them. An unnamed view: queue *q* below 8 is
    /// priority *q*.
    pub fn paused_priorities(&self, port: &str, position: u8) -> SmallVec<[u8; 2]> {
        if !self.is_named() {
            return (position <= MAX_PRIORITY).then_some(position).into_iter().collect();
        }
        let (Some(queues), Some(qos)) = (self.queues.as_ref(), self.qos.as_ref()) else { return SmallVec::new() };
        let Some(settings) = qos.port(port) else { return SmallVec::new() };
        settings
            .pfc_enable
            .iter()
            .copied()
            .filter(|&p| qos.queue(queues, port, p).is_ok_and(|pq| pq.queue.position == u32::from(position)))
            .collect()
    }

    /// A pause duration counter without `_US` (`raw`, of `port`) in microseconds, as
    /// [`PauseUnit`] says to read it.
    pub fn pause_us(&self, port: &str, raw: u64) -> Result<u64, String> {
        match self.unit {
            PauseUnit::Us => Ok(raw),
            PauseUnit::Quanta => {
                let Some(&mbps) = self.speeds.get(port) else {
                    return Err(format!(
                        "port {port} has no speed in CONFIG_DB PORT: its pause quanta cannot be turned into µs"
                    ));
                };
                // A quantum is 512 bit times; Mb/s is bits per µs.
                Ok((u128::from(raw) * 512 / u128::from(mbps)).min(u128::from(u64::MAX)) as u64)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pairs: &[(&str, &str)]) -> Entry {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    /// Two ports, one with a slash in its alias; ten unicast and two multicast queues each
    /// (the multicast ones share SAI indices 3 and 4, as on Broadcom); priorities 3 and 4
    /// lossless, priority 3 mapped to queue 5.
    fn tables() -> ViewTables {
        let mut maps = NameMaps::default();
        for (n, port) in ["Ethernet0", "Ethernet4"].iter().enumerate() {
            maps.ports.insert(port.to_string(), format!("oid:0x{n}"));
            for position in 0..12u32 {
                let oid = format!("oid:0x1{n}{position:02}");
                maps.queues.insert(format!("{port}:{position}"), oid.clone());
                let (index, kind) = if position < 10 { (position, "UNICAST") } else { (position - 7, "MULTICAST") };
                maps.queue_index.insert(oid.clone(), index.to_string());
                maps.queue_type.insert(oid, format!("SAI_QUEUE_TYPE_{kind}"));
            }
        }
        let qos = entry(&[("pfc_enable", "3,4"), ("pfc_to_queue_map", "AZURE")]);
        let azure: Entry = (0..8).map(|p| (p.to_string(), if p == 3 { "5".into() } else { p.to_string() })).collect();
        ViewTables {
            ports: Some(BTreeMap::from([
                ("Ethernet0".to_string(), entry(&[("alias", "Ethernet1/1"), ("speed", "400000")])),
                ("Ethernet4".to_string(), entry(&[("alias", "etp2"), ("speed", "100000")])),
            ])),
            port_qos: Some(BTreeMap::from([("Ethernet0,Ethernet4".to_string(), qos)])),
            pfc_maps: Some(BTreeMap::from([("AZURE".to_string(), azure)])),
            metadata: Some(entry(&[("platform", "x86_64-mlnx_msn3800-r0")])),
            name_maps: Some(maps),
            port_counters: Some(entry(&[("SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS", "0")])),
        }
    }

    #[test]
    fn aliases_name_ports_and_slashes_are_fine() {
        let (view, problems) = SwitchView::build(&tables(), PauseUnit::Us).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(view.port("Ethernet1/1").unwrap(), "Ethernet0");
        assert_eq!(view.port("etp2").unwrap(), "Ethernet4");
        assert_eq!(view.port("Ethernet4").unwrap(), "Ethernet4", "a name is a name");
        assert!(view.port("etp9").unwrap_err().contains("\"etp9\" is neither"));
        assert_eq!(view.port_of_oid("oid:0x1"), Some("Ethernet4"));
        assert_eq!(view.queue_of_oid("oid:0x1003"), Some(("Ethernet0", 3)));
        assert_eq!(SwitchView::unnamed().port("etp2").unwrap(), "etp2");
        // Counters decide the family; the Mellanox platform is a conflict worth a log line.
        let family = view.family().unwrap();
        assert_eq!(family.family, AsicFamily::Broadcom);
        assert!(family.conflict.is_some());
    }

    #[test]
    fn priorities_go_to_unicast_queues_through_the_map_and_never_to_multicast_ones() {
        let (view, _) = SwitchView::build(&tables(), PauseUnit::Us).unwrap();
        // Priority 3 pauses queue 5, not queue 3.
        assert_eq!(view.paused_priorities("Ethernet0", 5).as_slice(), &[3]);
        assert_eq!(view.paused_priorities("Ethernet0", 4).as_slice(), &[4]);
        assert!(view.paused_priorities("Ethernet0", 3).is_empty(), "no priority maps to queue 3");
        assert_eq!(view.queue_prio("Ethernet0", 5), Some(3));
        assert_eq!(view.queue_prio("Ethernet0", 0), Some(0), "a lossy priority of its own");
        // Position 10 is multicast with SAI index 3, position 11 with index 4: never a priority's.
        assert_eq!(view.queue_prio("Ethernet0", 10), None);
        assert_eq!(view.queue_prio("Ethernet0", 11), None);
        assert!(view.paused_priorities("Ethernet0", 11).is_empty());
        // Without the maps nothing is guessed; an unnamed view keeps queue q = priority q.
        let mut partial = tables();
        partial.name_maps.as_mut().unwrap().queue_type.clear();
        let (view, _) = SwitchView::build(&partial, PauseUnit::Us).unwrap();
        assert_eq!(view.queue_prio("Ethernet0", 4), None);
        assert_eq!(SwitchView::unnamed().queue_prio("Ethernet0", 4), Some(4));
        assert_eq!(SwitchView::unnamed().queue_prio("Ethernet0", 13), None);
    }

    #[test]
    fn pause_quanta_become_microseconds_at_the_ports_speed() {
        let (us, _) = SwitchView::build(&tables(), PauseUnit::Us).unwrap();
        assert_eq!(us.pause_us("Ethernet0", 1_000_000).unwrap(), 1_000_000);
        let (quanta, _) = SwitchView::build(&tables(), PauseUnit::Quanta).unwrap();
        // A quantum is 1.28 ns at 400 Gb/s and 5.12 ns at 100 Gb/s.
        assert_eq!(quanta.pause_us("Ethernet0", 1_000_000).unwrap(), 1_280);
        assert_eq!(quanta.pause_us("Ethernet4", 1_000_000).unwrap(), 5_120);
        assert!(quanta.pause_us("Ethernet8", 1).unwrap_err().contains("has no speed"));
    }

    #[test]
    fn a_part_that_does_not_read_costs_only_itself() {
        let mut bad = tables();
        bad.port_qos.as_mut().unwrap().insert("Ethernet8".into(), entry(&[("pfc_enable", "3,9")]));
        bad.ports.as_mut().unwrap().get_mut("Ethernet4").unwrap().insert("speed".into(), "fast".into());
        let (view, problems) = SwitchView::build(&bad, PauseUnit::Us).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems.iter().any(|p| matches!(p, ViewError::Qos(_))), "{problems:?}");
        assert_eq!(view.port("etp2").unwrap(), "Ethernet4", "ports are still named");
        assert_eq!(view.queue_prio("Ethernet0", 5), None, "no QoS, no priority");
        let mut twice = tables();
        twice.ports.as_mut().unwrap().get_mut("Ethernet4").unwrap().insert("alias".into(), "Ethernet1/1".into());
        let e = SwitchView::build(&twice, PauseUnit::Us).unwrap_err();
        assert_eq!(e.to_string(), "CONFIG_DB PORT: ports Ethernet0 and Ethernet4 both have alias \"Ethernet1/1\"");
    }
}
