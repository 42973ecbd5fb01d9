//! CONFIG_DB of the simulated switch: the `PFC_WD`, `WRED_PROFILE` and
//! `PORT` tables and their factory defaults. What SONiC accepts in them is
//! [`gnmi_proto::sonic`], the same schema the actuators check against.

use std::collections::BTreeMap;
use std::time::Duration;

/// Table → key → field → value, as redis holds it (every value a string).
pub type ConfigDb = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

/// The tables this switch knows: those of the shared schema.
pub use gnmi_proto::sonic::TABLES;

/// The factory config: the watchdog on every port with SONiC's defaults
/// (drop, 200 ms, 200 ms), every port admin-up, and the AZURE_LOSSLESS profile.
pub fn defaults<'a>(ports: impl Iterator<Item = &'a str>) -> ConfigDb {
    let entry = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let mut db = ConfigDb::new();
    for port in ports {
        db.entry("PFC_WD".into()).or_default().insert(
            port.to_string(),
            entry(&[("action", "drop"), ("detection_time", "200"), ("restoration_time", "200")]),
        );
        db.entry("PORT".into()).or_default().insert(port.to_string(), entry(&[("admin_status", "up")]));
    }
    db.entry("WRED_PROFILE".into()).or_default().insert(
        "AZURE_LOSSLESS".into(),
        entry(&[
            ("green_min_threshold", "1048576"),
            ("green_max_threshold", "2097152"),
            ("green_drop_probability", "5"),
            ("wred_green_enable", "true"),
            ("ecn", "ecn_all"),
        ]),
    );
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
}
