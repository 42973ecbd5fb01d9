//! CONFIG_DB as tables, for what reads it whole: the WRED profile bound to a queue (qosorch's
//! view, which the fabric's physics uses), and tests.

use std::collections::BTreeMap;

use gnmi_proto::sonic;

/// Table → key → field → value, as Redis holds it (every value a string; a `QUEUE` key is
/// `<port>|<queue>`).
pub type ConfigDb = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

/// The factory profile every lossless queue uses, as in SONiC's QoS templates.
pub use super::seed::LOSSLESS_PROFILE;

/// CONFIG_DB's entries (Redis key → fields) as tables.
pub fn tables(entries: impl IntoIterator<Item = (String, BTreeMap<String, String>)>) -> ConfigDb {
    let mut db = ConfigDb::new();
    for (key, fields) in entries {
        let Some((table, rest)) = key.split_once('|') else { continue };
        db.entry(table.to_string()).or_default().insert(rest.to_string(), fields);
    }
    db
}

/// The WRED profile bound to `port`'s `queue`: `QUEUE|<port>|<queue>`, or else a range key
/// that covers the queue (`QUEUE|<port>|3-4`), as SONiC's QoS orchagent applies either; `None`
/// when the queue has no binding.
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

/// The `green_min_threshold` (bytes) of the WRED profile bound to `port`'s `queue` — where
/// ECN marking starts on that queue; `None` when the queue is unbound (or its profile has no
/// such threshold).
pub fn queue_green_min(db: &ConfigDb, port: &str, queue: usize) -> Option<f64> {
    let profile = queue_profile(db, port, queue)?;
    db.get(sonic::WRED_PROFILE)?.get(profile)?.get("green_min_threshold")?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> ConfigDb {
        let entry = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        tables([
            ("QUEUE|Ethernet0|3".to_string(), entry(&[("wred_profile", LOSSLESS_PROFILE)])),
            ("QUEUE|Ethernet4|3".to_string(), entry(&[("wred_profile", "MINE")])),
            ("QUEUE|Ethernet0|5-6".to_string(), entry(&[("wred_profile", "MINE")])),
            ("WRED_PROFILE|AZURE_LOSSLESS".to_string(), entry(&[("green_min_threshold", "1048576")])),
            ("WRED_PROFILE|MINE".to_string(), entry(&[("green_min_threshold", "262144")])),
        ])
    }

    #[test]
    fn a_queue_reads_the_threshold_of_the_profile_bound_to_it() {
        let db = db();
        assert_eq!(queue_profile(&db, "Ethernet0", 3), Some(LOSSLESS_PROFILE));
        assert_eq!(queue_green_min(&db, "Ethernet0", 3), Some(1048576.0));
        assert_eq!(queue_green_min(&db, "Ethernet4", 3), Some(262144.0), "its own profile");
        assert_eq!(queue_green_min(&db, "Ethernet0", 6), Some(262144.0), "a range key binds what it covers");
        assert_eq!(queue_green_min(&db, "Ethernet0", 7), None);
        assert_eq!(queue_green_min(&db, "Ethernet8", 3), None, "no such port");
    }
}
