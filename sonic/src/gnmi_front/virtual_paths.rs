//! sonic-gnmi's virtual paths of COUNTERS_DB (`virtual_db.go`): `COUNTERS/Ethernet*`,
//! `COUNTERS/<port>`, `…/<field>`, `…/Queues`, `…/Pfcwd`, `INTERFACE_COUNTERS`,
//! `RATES/Ethernet*`, `PORT_PHY_ATTR/Ethernet*`, translated into the `COUNTERS:<oid>` keys they
//! stand for, with the JSON keyed by the port's alias.
//!
//! What sonic-gnmi does here, reproduced:
//!
//! - The name maps are read **once**, at the first COUNTERS_DB request, and never again
//!   (`sync.Once` per map, `virtual_db.go:163-330`): ports or `PFC_WD` entries added later are
//!   not seen. A map whose reading fails fails that first request only; later ones see it empty.
//! - The alias map reads `alias` of every `PORT|<name>` (`GetAliasMap`, `:479-515`); one port
//!   without an alias fails the read (`redis: nil`).
//! - The Pfcwd map (`GetPfcwdMap`, `:377-475`) takes the ports of `PFC_WD|*` (not `GLOBAL`),
//!   the `pfc_enable` of the **first** `PORT_QOS_MAP*` key Redis lists (for every port), and
//!   `MAP_PFC_PRIORITY_TO_QUEUE|AZURE` (never the port's own `pfc_to_queue_map`); a queue
//!   missing from `COUNTERS_QUEUE_NAME_MAP` empties the whole map (logged, not returned).
//! - The trie matches `Ethernet*` as "starts with `Ethernet`" (`trie.go:133-170`): a port
//!   asked for by an alias that does not start with `Ethernet` (`etp1`) is not a virtual path;
//!   it is read as the plain key `COUNTERS:etp1`.
//! - A single port's `Queues` and `Pfcwd` are keyed by the name **as asked**
//!   (`<asked>:<queue>`, `:913-929`, `:991-1012`); wildcards by alias.
//! - `Queues` lists every queue of `COUNTERS_QUEUE_NAME_MAP`, multicast included, each with a
//!   `<port>:<queue>:periodic` entry from `PERIODIC_WATERMARKS` when that hash has
//!   `SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES` (`:944-1010`).

use std::collections::{BTreeMap, BTreeSet};

use tokio::sync::Mutex;

use super::backend::Backend;
use super::errors::GoError;
use super::render::{redis_error, TablePath};

/// The PERIODIC_WATERMARKS field the Queues path adds per queue.
const WATERMARK: &str = "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES";

/// Which virtual path a request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Virtual {
    /// `COUNTERS/Ethernet*`, `COUNTERS/<port>`, `RATES/Ethernet*` (`v2rEthPortStats`).
    Ports,
    /// `…/<port>/<field>` (`v2rEthPortFieldStats`).
    PortField,
    /// `COUNTERS/<port>/Queues` (`v2rEthPortQueStats`).
    Queues,
    /// `COUNTERS/<port>/Pfcwd` (`v2rEthPortPfcwdStats`).
    Pfcwd,
    /// `INTERFACE_COUNTERS` (`v2rInterfaceCountersStats`), keyed by SONiC name.
    InterfaceCounters,
    /// `PORT_PHY_ATTR/Ethernet*` (no alias).
    PhyAttr,
    /// `PORT_PHY_ATTR/<port>/<field>`.
    PhyAttrField,
    /// A virtual path sonic-gnmi has that this front does not reproduce (fabric ports, VoQs,
    /// priority groups, switch drops, SRv6, ACL rules).
    NotReproduced(&'static str),
}

/// sonic-gnmi's table of virtual paths (`pathTransFuncTbl`, `virtual_db.go:86-143`).
const PATHS: &[(&[&str], Virtual)] = &[
    (&["COUNTERS_DB", "COUNTERS", "Ethernet*"], Virtual::Ports),
    (&["COUNTERS_DB", "INTERFACE_COUNTERS"], Virtual::InterfaceCounters),
    (&["COUNTERS_DB", "COUNTERS", "Ethernet*", "*"], Virtual::PortField),
    (&["COUNTERS_DB", "COUNTERS", "Ethernet*", "Queues"], Virtual::Queues),
    (&["COUNTERS_DB", "COUNTERS", "*", "VoQs"], Virtual::NotReproduced("VoQs")),
    (&["COUNTERS_DB", "COUNTERS", "Ethernet*", "Pfcwd"], Virtual::Pfcwd),
    (&["COUNTERS_DB", "COUNTERS", "PORT*"], Virtual::NotReproduced("fabric ports")),
    (&["COUNTERS_DB", "PERIODIC_WATERMARKS", "Ethernet*", "PriorityGroups"], Virtual::NotReproduced("PriorityGroups")),
    (&["COUNTERS_DB", "RATES", "Ethernet*"], Virtual::Ports),
    (&["COUNTERS_DB", "RATES", "Ethernet*", "*"], Virtual::PortField),
    (&["COUNTERS_DB", "COUNTERS", "SWITCH*"], Virtual::NotReproduced("switch drop counters")),
    (&["COUNTERS_DB", "COUNTERS", "SID*"], Virtual::NotReproduced("SRv6 SIDs")),
    (&["COUNTERS_DB", "COUNTERS", "ACL_RULE*"], Virtual::NotReproduced("ACL rules")),
    (&["COUNTERS_DB", "PORT_PHY_ATTR", "Ethernet*"], Virtual::PhyAttr),
    (&["COUNTERS_DB", "PORT_PHY_ATTR", "Ethernet*", "*"], Virtual::PhyAttrField),
];

/// The virtual path `elems` (database first) is, if any: the trie walk of `trie.go:133-170`,
/// an exact element before a wildcard (`X*` matches what starts with `X`), backtracking.
pub(crate) fn lookup(elems: &[String]) -> Option<Virtual> {
    fn walk(candidates: Vec<(&[&str], Virtual)>, elems: &[String]) -> Option<Virtual> {
        let Some((first, rest)) = elems.split_first() else {
            return candidates.iter().find(|(p, _)| p.is_empty()).map(|(_, v)| *v);
        };
        let step = |keep: &dyn Fn(&str) -> bool| -> Vec<(&[&str], Virtual)> {
            candidates.iter().filter(|(p, _)| p.first().is_some_and(|e| keep(e))).map(|(p, v)| (&p[1..], *v)).collect()
        };
        let exact = step(&|e| e == first);
        if let Some(found) = walk(exact, rest) {
            return Some(found);
        }
        // Wildcards, the longest prefix first (Go tries them in map order).
        let mut wildcards: Vec<&str> = candidates
            .iter()
            .filter_map(|(p, _)| p.first().copied())
            .filter(|e| e.ends_with('*') && first.starts_with(&e[..e.len() - 1]))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        wildcards.sort_by_key(|w| std::cmp::Reverse(w.len()));
        wildcards.into_iter().find_map(|w| walk(step(&|e| e == w), rest))
    }
    walk(PATHS.iter().map(|(p, v)| (*p, *v)).collect(), elems)
}

/// The maps the virtual paths read, as loaded once.
#[derive(Debug, Clone, Default)]
pub(crate) struct NameMaps {
    /// `COUNTERS_PORT_NAME_MAP`.
    pub port: BTreeMap<String, String>,
    /// `COUNTERS_QUEUE_NAME_MAP`.
    pub queue: BTreeMap<String, String>,
    /// alias → name.
    pub alias_to_name: BTreeMap<String, String>,
    /// name → alias.
    pub name_to_alias: BTreeMap<String, String>,
    /// The ports of CONFIG_DB `PORT|*` (sonic-gnmi's port → namespace map; one namespace here).
    pub port_ns: BTreeSet<String>,
    /// port → `<port>:<queue>` → queue oid, of the ports the watchdog is configured on.
    pub pfcwd: BTreeMap<String, BTreeMap<String, String>>,
}

/// Which maps have been loaded (each once, `sync.Once`).
#[derive(Debug, Default)]
struct Loaded {
    maps: NameMaps,
    port: bool,
    queue: bool,
    alias: bool,
    pfcwd: bool,
}

/// The name maps, loaded on first use as sonic-gnmi loads them.
#[derive(Debug, Default)]
pub(crate) struct MapsCache {
    loaded: Mutex<Loaded>,
}

impl MapsCache {
    /// The maps; the first call loads them in sonic-gnmi's order (port, queue, alias, then
    /// Pfcwd), returning the first failure (`db_client.go:674-700`). A map that failed stays
    /// empty, and is not read again.
    pub async fn get(&self, backend: &dyn Backend) -> Result<NameMaps, GoError> {
        let mut l = self.loaded.lock().await;
        if !l.port {
            l.port = true;
            l.maps.port = backend.hgetall("COUNTERS_DB", "COUNTERS_PORT_NAME_MAP").await.map_err(redis_error)?;
        }
        if !l.queue {
            l.queue = true;
            l.maps.queue = backend.hgetall("COUNTERS_DB", "COUNTERS_QUEUE_NAME_MAP").await.map_err(redis_error)?;
        }
        if !l.alias {
            l.alias = true;
            let (a2n, n2a, ns) = alias_maps(backend).await?;
            (l.maps.alias_to_name, l.maps.name_to_alias, l.maps.port_ns) = (a2n, n2a, ns);
        }
        if !l.pfcwd {
            l.pfcwd = true;
            // Logged, not returned, by sonic-gnmi (`db_client.go:701-704`).
            l.maps.pfcwd = pfcwd_map(backend, &l.maps.queue).await.unwrap_or_default();
        }
        Ok(l.maps.clone())
    }
}

type AliasMaps = (BTreeMap<String, String>, BTreeMap<String, String>, BTreeSet<String>);

async fn alias_maps(backend: &dyn Backend) -> Result<AliasMaps, GoError> {
    let sep = backend.database("CONFIG_DB").map_or('|', |d| d.separator);
    let (mut a2n, mut n2a, mut ns) = AliasMaps::default();
    for key in backend.keys("CONFIG_DB", &format!("PORT{sep}*")).await.map_err(redis_error)? {
        let Some(alias) = backend.hget("CONFIG_DB", &key, "alias").await.map_err(redis_error)? else {
            return Err(GoError::plain("redis: nil"));
        };
        // `key[5:]`: the text after `PORT|`.
        let name = key.get(5..).unwrap_or_default().to_string();
        a2n.insert(alias.clone(), name.clone());
        n2a.insert(name.clone(), alias);
        ns.insert(name);
    }
    Ok((a2n, n2a, ns))
}

async fn pfcwd_map(
    backend: &dyn Backend,
    queues: &BTreeMap<String, String>,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, GoError> {
    let sep = backend.database("CONFIG_DB").map_or('|', |d| d.separator);
    let mut map: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    let pattern = format!("PFC_WD{sep}*");
    let keys = backend.keys("CONFIG_DB", &pattern).await.map_err(redis_error)?;
    if keys.is_empty() {
        return Ok(map);
    }
    for key in keys.iter().filter(|k| !k.contains("GLOBAL") && !k.contains("global")) {
        map.insert(key[pattern.len() - 1..].to_string(), BTreeMap::new());
    }
    let qos = backend.keys("CONFIG_DB", "PORT_QOS_MAP*").await.map_err(redis_error)?;
    if qos.is_empty() {
        return Ok(BTreeMap::new());
    }
    // The first key that is not GLOBAL, in the order Redis lists them; an empty key when all
    // are GLOBAL, whose HGET then fails.
    let qos_key = qos.iter().find(|k| !k.contains("GLOBAL") && !k.contains("global")).cloned().unwrap_or_default();
    let priorities = backend
        .hget("CONFIG_DB", &qos_key, "pfc_enable")
        .await
        .map_err(redis_error)?
        .ok_or(GoError::plain("redis: nil"))?;
    let azure =
        backend.hgetall("CONFIG_DB", &format!("MAP_PFC_PRIORITY_TO_QUEUE{sep}AZURE")).await.map_err(redis_error)?;
    let indices: Vec<&String> = priorities.split(',').filter_map(|p| azure.get(p)).collect();
    if queues.is_empty() {
        return Ok(BTreeMap::new());
    }
    for (port, entries) in map.iter_mut() {
        for index in &indices {
            let queue_key = format!("{port}:{index}");
            let oid = queues
                .get(&queue_key)
                .ok_or_else(|| GoError::plain(format!("key {queue_key} not exists in COUNTERS_QUEUE_NAME_MAP")))?;
            entries.insert(queue_key, oid.clone());
        }
    }
    Ok(map)
}

/// Translates virtual path `kind` of `elems` (database, table, key, field) into table paths
/// (`v2r*`, `virtual_db.go:730-1030`). Errors are sonic-gnmi's texts.
pub(crate) fn translate(
    kind: Virtual,
    elems: &[String],
    maps: &NameMaps,
    sep: char,
) -> Result<Vec<TablePath>, GoError> {
    let key = elems.get(2).cloned().unwrap_or_default();
    let asked = Asked {
        maps,
        sep,
        base: TablePath {
            db: elems[0].clone(),
            table: elems[1].clone(),
            sep,
            is_virtual: true,
            ..TablePath::default()
        },
        wildcard: key.ends_with('*'),
        key,
        field: elems.get(3).cloned().unwrap_or_default(),
    };
    match kind {
        Virtual::NotReproduced(what) => Err(GoError::status(
            tonic::Code::Unimplemented,
            format!("sonic-gnmi's virtual path of {what} is not reproduced by this front"),
        )),
        Virtual::Ports | Virtual::PortField | Virtual::PhyAttr | Virtual::PhyAttrField => asked.ports(kind),
        Virtual::InterfaceCounters => asked.interface_counters(),
        Virtual::Queues => asked.queues(),
        Virtual::Pfcwd => asked.pfcwd(),
    }
}

/// One virtual path asked: its key (a port, an alias, or a `*` glob) and field, the maps it is
/// translated by, and the table path its translations start from.
struct Asked<'a> {
    maps: &'a NameMaps,
    sep: char,
    base: TablePath,
    key: String,
    field: String,
    wildcard: bool,
}

impl Asked<'_> {
    fn no_ns(port: &str) -> GoError {
        GoError::plain(format!("{port} does not have namespace associated"))
    }

    /// `port` unless it has no namespace.
    fn in_namespace(&self, port: &str) -> Result<(), GoError> {
        if self.maps.port_ns.contains(port) {
            Ok(())
        } else {
            Err(Self::no_ns(port))
        }
    }

    /// How a port is keyed in the answer: its alias when it has one.
    fn alias_or_name(&self, port: &str) -> String {
        self.maps.name_to_alias.get(port).cloned().unwrap_or_else(|| port.to_string())
    }

    /// The port an asked name means: the port whose alias it is, else itself.
    fn name_of(&self, asked: &str) -> String {
        self.maps.alias_to_name.get(asked).cloned().unwrap_or_else(|| asked.to_string())
    }

    /// `COUNTERS/Ethernet*` (and a field of it), `COUNTERS/Ethernet*/Phy…`.
    fn ports(&self, kind: Virtual) -> Result<Vec<TablePath>, GoError> {
        let with_field = matches!(kind, Virtual::PortField | Virtual::PhyAttrField);
        let aliased = matches!(kind, Virtual::Ports | Virtual::PortField);
        let mut out = Vec::new();
        if self.wildcard {
            for (port, oid) in &self.maps.port {
                self.in_namespace(port)?;
                let json_key = if aliased { self.alias_or_name(port) } else { port.clone() };
                let mut tp = TablePath { key: oid.clone(), json_table_key: json_key, ..self.base.clone() };
                if with_field {
                    (tp.field, tp.json_field) = (self.field.clone(), self.field.clone());
                }
                out.push(tp);
            }
            return Ok(out);
        }
        let key = &self.key;
        let name = if aliased { self.name_of(key) } else { key.clone() };
        let Some(oid) = self.maps.port.get(&name) else {
            return Err(GoError::plain(match kind {
                Virtual::Ports => format!("{name} not a valid sonic interface. Vendor alias is {key}"),
                Virtual::PortField => format!(" {name} not a valid sonic interface. Vendor alias is {key} "),
                _ => format!("{name} not a valid sonic interface"),
            }));
        };
        self.in_namespace(&name)?;
        let mut tp = TablePath { key: oid.clone(), ..self.base.clone() };
        if with_field {
            tp.field = self.field.clone();
        }
        out.push(tp);
        Ok(out)
    }

    /// Every port's counters, keyed by SONiC name.
    fn interface_counters(&self) -> Result<Vec<TablePath>, GoError> {
        let mut out = Vec::new();
        for (port, oid) in &self.maps.port {
            self.in_namespace(port)?;
            out.push(TablePath {
                table: "COUNTERS".into(),
                key: oid.clone(),
                json_table_key: port.clone(),
                ..self.base.clone()
            });
        }
        Ok(out)
    }

    /// `COUNTERS/<port>/Queues`: every queue of the port (multicast ones too), with its
    /// periodic watermark.
    fn queues(&self) -> Result<Vec<TablePath>, GoError> {
        let sep = self.sep;
        let name = if self.wildcard { None } else { Some(self.name_of(&self.key)) };
        if let Some(name) = &name {
            self.in_namespace(name)?;
        }
        let mut out = Vec::new();
        for (que, oid) in &self.maps.queue {
            let names: Vec<&str> = que.split(sep).collect();
            let (Some(port), Some(index)) = (names.first(), names.get(1)) else { continue };
            let shown = match &name {
                None => {
                    self.in_namespace(port)?;
                    self.alias_or_name(port)
                }
                Some(n) if n == port => self.key.clone(),
                Some(_) => continue,
            };
            let json_key = format!("{shown}{sep}{index}");
            out.push(TablePath { key: oid.clone(), json_table_key: json_key.clone(), ..self.base.clone() });
            out.push(TablePath {
                table: "PERIODIC_WATERMARKS".into(),
                key: oid.clone(),
                field: WATERMARK.into(),
                json_table_key: format!("{json_key}{sep}periodic"),
                json_field: WATERMARK.into(),
                ..self.base.clone()
            });
        }
        Ok(out)
    }

    /// `COUNTERS/<port>/Pfcwd`: the port's watched queues (priority → queue mapped).
    fn pfcwd(&self) -> Result<Vec<TablePath>, GoError> {
        let sep = self.sep;
        let mut out = Vec::new();
        if self.wildcard {
            for (port, queues) in &self.maps.pfcwd {
                self.in_namespace(port)?;
                for (que, oid) in queues {
                    let index = que.split(sep).nth(1).unwrap_or_default();
                    let json_key =
                        format!("{}{sep}{index}", self.alias_or_name(que.split(sep).next().unwrap_or_default()));
                    out.push(TablePath { key: oid.clone(), json_table_key: json_key, ..self.base.clone() });
                }
            }
            return Ok(out);
        }
        let key = &self.key;
        let name = self.name_of(key);
        self.in_namespace(&name)?;
        if !self.maps.port.contains_key(&name) {
            return Err(GoError::plain(format!("{name} not a valid SONiC interface. Vendor alias is {key}")));
        }
        for (que, oid) in self.maps.pfcwd.get(&name).into_iter().flatten() {
            let index = que.split(sep).nth(1).unwrap_or_default();
            out.push(TablePath { key: oid.clone(), json_table_key: format!("{key}{sep}{index}"), ..self.base.clone() });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_trie_matches_as_sonic_gnmis_does() {
        assert_eq!(lookup(&path(&["COUNTERS_DB", "COUNTERS", "Ethernet*"])), Some(Virtual::Ports));
        assert_eq!(lookup(&path(&["COUNTERS_DB", "COUNTERS", "Ethernet4"])), Some(Virtual::Ports));
        assert_eq!(lookup(&path(&["COUNTERS_DB", "COUNTERS", "Ethernet1/1", "Queues"])), Some(Virtual::Queues));
        assert_eq!(lookup(&path(&["COUNTERS_DB", "COUNTERS", "Ethernet4", "Pfcwd"])), Some(Virtual::Pfcwd));
        assert_eq!(
            lookup(&path(&["COUNTERS_DB", "COUNTERS", "Ethernet4", "SAI_PORT_STAT_PFC_3_RX_PKTS"])),
            Some(Virtual::PortField)
        );
        // An alias that does not start with "Ethernet" is no virtual path: a plain key.
        assert_eq!(lookup(&path(&["COUNTERS_DB", "COUNTERS", "etp1"])), None);
        assert_eq!(lookup(&path(&["COUNTERS_DB", "COUNTERS", "etp1", "Queues"])), None);
        assert_eq!(lookup(&path(&["COUNTERS_DB", "COUNTERS_PORT_NAME_MAP"])), None);
        assert_eq!(lookup(&path(&["CONFIG_DB", "COUNTERS", "Ethernet4"])), None);
        assert_eq!(lookup(&path(&["COUNTERS_DB", "INTERFACE_COUNTERS"])), Some(Virtual::InterfaceCounters));
    }
}
