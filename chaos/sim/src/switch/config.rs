//! CONFIG_DB of the simulated switch: the `PFC_WD`, `WRED_PROFILE`, `PORT`
//! and `QUEUE` tables and their factory defaults. What SONiC accepts in them
//! is [`gnmi_proto::sonic`], the same schema the actuators check against;
//! the references between them (a queue's `wred_profile` names a
//! `WRED_PROFILE` entry) are checked by [`dangling`] after every Set.

use std::collections::BTreeMap;
use std::time::Duration;

use gnmi_proto::sonic::{self, SchemaError};

/// Table → key → field → value, as redis holds it (every value a string).
pub type ConfigDb = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

/// The tables this switch knows: those of the shared schema.
pub use gnmi_proto::sonic::TABLES;

/// The factory profile every lossless queue uses, as in SONiC's QoS templates.
pub const LOSSLESS_PROFILE: &str = "AZURE_LOSSLESS";

/// The lossless queues of every port (RoCE's priorities 3 and 4).
pub const LOSSLESS_QUEUES: [u64; 2] = [3, 4];

/// The factory config: the watchdog on every port with SONiC's defaults
/// (drop, 200 ms, 200 ms), every port admin-up, the AZURE_LOSSLESS profile,
/// and queues 3 and 4 of every port bound to it (`QUEUE|<port>|3`,
/// `QUEUE|<port>|4`), as SONiC's QoS templates bind them: one profile
/// shared by every lossless queue of the switch.
pub fn defaults<'a>(ports: impl Iterator<Item = &'a str>) -> ConfigDb {
    let entry = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut db = ConfigDb::new();
    for port in ports {
        db.entry("PFC_WD".into()).or_default().insert(
            port.to_string(),
            entry(&[("action", "drop"), ("detection_time", "200"), ("restoration_time", "200")]),
        );
        db.entry("PORT".into()).or_default().insert(port.to_string(), entry(&[("admin_status", "up")]));
        for queue in LOSSLESS_QUEUES {
            db.entry(sonic::QUEUE.into())
                .or_default()
                .insert(sonic::queue_key(port, queue), entry(&[(sonic::WRED_PROFILE_FIELD, LOSSLESS_PROFILE)]));
        }
    }
    db.entry("WRED_PROFILE".into()).or_default().insert(LOSSLESS_PROFILE.into(), entry(&sonic::LOSSLESS_WRED));
    db
}

/// The watchdog settings of one port, as the model's storm logic uses them.
#[derive(Debug, Clone, PartialEq)]
pub struct Watchdog {
    /// `action`.
    pub action: String,
    /// `detection_time`.
    pub detection: Duration,
    /// `restoration_time`.
    pub restoration: Duration,
}

/// The port's watchdog; SONiC's defaults for what is missing.
pub fn watchdog(db: &ConfigDb, port: &str) -> Watchdog {
    let entry = db.get("PFC_WD").and_then(|t| t.get(port));
    let ms = |field: &str, default: u64| {
        Duration::from_millis(entry.and_then(|e| e.get(field)).and_then(|v| v.parse().ok()).unwrap_or(default))
    };
    Watchdog {
        action: entry.and_then(|e| e.get("action")).cloned().unwrap_or_else(|| "drop".into()),
        detection: ms("detection_time", 200),
        restoration: ms("restoration_time", 200),
    }
}

/// The WRED profile bound to `port`'s `queue`: `QUEUE|<port>|<queue>`, or
/// else a range key that covers the queue (`QUEUE|<port>|3-4`), as SONiC's
/// QoS orchagent applies either; `None` when the queue has no binding.
pub fn queue_profile<'a>(db: &'a ConfigDb, port: &str, queue: usize) -> Option<&'a str> {
    let table = db.get(sonic::QUEUE)?;
    let queue = queue as u64;
    let bound = |entry: &'a BTreeMap<String, String>| entry.get(sonic::WRED_PROFILE_FIELD).map(String::as_str);
    if let Some(entry) = table.get(&sonic::queue_key(port, queue)) {
        return bound(entry);
    }
    table
        .iter()
        .filter(|(key, _)| sonic::parse_queue_key(key).is_some_and(|(p, range)| p == port && range.contains(&queue)))
        .find_map(|(_, entry)| bound(entry))
}

/// The `green_min_threshold` (bytes) of the WRED profile bound to `port`'s
/// `queue` — where ECN marking starts on that queue; `None` when the queue
/// is unbound (or its profile has no such threshold).
pub fn queue_green_min(db: &ConfigDb, port: &str, queue: usize) -> Option<f64> {
    let profile = queue_profile(db, port, queue)?;
    db.get(sonic::WRED_PROFILE)?.get(profile)?.get("green_min_threshold")?.parse().ok()
}

/// The leafrefs ([`sonic::LEAFREFS`]) a change from `before` to `after`
/// leaves dangling: an entry of `touched` (table, key) that names a missing
/// entry, or any entry whose target the change removed. A reference that
/// dangled already and that the change did not write is not the change's
/// doing and is left for whoever made it (SONiC's own YANG check of a whole
/// config would name it; a Set of an unrelated field should not fail on it).
pub fn dangling(before: &ConfigDb, after: &ConfigDb, touched: &[(String, String)]) -> Result<(), SchemaError> {
    let exists = |db: &ConfigDb, table: &str, key: &str| db.get(table).is_some_and(|t| t.contains_key(key));
    for leafref in sonic::LEAFREFS {
        let Some(entries) = after.get(leafref.table) else { continue };
        let mut removed: BTreeMap<&str, Vec<String>> = BTreeMap::new();
        for (key, entry) in entries {
            let Some(value) = entry.get(leafref.field) else { continue };
            if exists(after, leafref.target, value) {
                continue;
            }
            let wrote = touched.iter().any(|(t, k)| t == leafref.table && k == key);
            if wrote {
                return Err(SchemaError::Dangling {
                    table: leafref.table.into(),
                    key: key.clone(),
                    field: leafref.field.into(),
                    value: value.clone(),
                    target: leafref.target.into(),
                });
            }
            if exists(before, leafref.target, value) {
                removed.entry(value.as_str()).or_default().push(format!("{}|{key}", leafref.table));
            }
        }
        if let Some((key, users)) = removed.into_iter().next() {
            // Bounded: a switch has at most a few hundred queues; name a few.
            const SHOWN: usize = 4;
            let more = users.len().saturating_sub(SHOWN);
            let mut by = users.into_iter().take(SHOWN).collect::<Vec<_>>().join(", ");
            if more > 0 {
                by.push_str(&format!(" and {more} more"));
            }
            return Err(SchemaError::InUse {
                table: leafref.target.into(),
                key: key.to_string(),
                by: format!("{by} ({})", leafref.field),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use gnmi_proto::sonic;

    #[test]
    fn the_factory_profile_passes_the_schema() {
        let db = defaults(["Ethernet0"].into_iter());
        for (table, entries) in &db {
            for entry in entries.values() {
                assert_eq!(sonic::check_entry(table, entry), Ok(()), "{table}");
            }
        }
        assert_eq!(watchdog(&db, "Ethernet0").detection, Duration::from_millis(200));
    }

    #[test]
    fn lossless_queues_are_bound_to_the_shared_profile() {
        let mut db = defaults(["Ethernet0", "Ethernet4"].into_iter());
        assert_eq!(queue_profile(&db, "Ethernet4", 3), Some(LOSSLESS_PROFILE));
        assert_eq!(queue_profile(&db, "Ethernet4", 4), Some(LOSSLESS_PROFILE));
        assert_eq!(queue_green_min(&db, "Ethernet0", 3), Some(1048576.0));
        assert_eq!(queue_green_min(&db, "Ethernet0", 0), None, "a lossy queue has no profile");
        assert_eq!(queue_green_min(&db, "Ethernet8", 3), None, "no such port");
        // A queue bound to its own profile reads that profile's threshold.
        let mut own = db["WRED_PROFILE"][LOSSLESS_PROFILE].clone();
        own.insert("green_min_threshold".into(), "262144".into());
        db.get_mut("WRED_PROFILE").unwrap().insert("MINE".into(), own);
        let binding = |p: &str| [(sonic::WRED_PROFILE_FIELD.to_string(), p.to_string())].into();
        db.get_mut("QUEUE").unwrap().insert("Ethernet4|3".into(), binding("MINE"));
        assert_eq!(queue_green_min(&db, "Ethernet4", 3), Some(262144.0));
        assert_eq!(queue_green_min(&db, "Ethernet0", 3), Some(1048576.0), "other ports keep theirs");
        // A range key binds every queue it covers.
        db.get_mut("QUEUE").unwrap().insert("Ethernet0|5-6".into(), binding("MINE"));
        assert_eq!(queue_green_min(&db, "Ethernet0", 6), Some(262144.0));
        assert_eq!(queue_green_min(&db, "Ethernet0", 7), None);
    }

    #[test]
    fn a_dangling_binding_and_a_profile_still_bound_are_refused() {
        let before = defaults(["Ethernet0", "Ethernet4"].into_iter());
        let touched = |t: &str, k: &str| vec![(t.to_string(), k.to_string())];
        let mut after = before.clone();
        after.get_mut("QUEUE").unwrap().get_mut("Ethernet4|3").unwrap().insert("wred_profile".into(), "NOPE".into());
        assert_eq!(
            dangling(&before, &after, &touched("QUEUE", "Ethernet4|3")).unwrap_err().to_string(),
            "QUEUE|Ethernet4|3 wred_profile \"NOPE\": no such WRED_PROFILE entry (a leafref to WRED_PROFILE)"
        );
        let mut after = before.clone();
        after.get_mut("WRED_PROFILE").unwrap().remove(LOSSLESS_PROFILE);
        assert_eq!(
            dangling(&before, &after, &touched("WRED_PROFILE", LOSSLESS_PROFILE)).unwrap_err().to_string(),
            "WRED_PROFILE|AZURE_LOSSLESS is still in use by QUEUE|Ethernet0|3, QUEUE|Ethernet0|4, QUEUE|Ethernet4|3, \
             QUEUE|Ethernet4|4 (wred_profile); re-bind those first"
        );
        // A dangling binding from before, which this change did not write, is not this change's.
        let mut broken = before.clone();
        broken.get_mut("QUEUE").unwrap().get_mut("Ethernet0|4").unwrap().insert("wred_profile".into(), "GONE".into());
        assert_eq!(dangling(&broken, &broken, &touched("PORT", "Ethernet0")), Ok(()));
    }
}
