//! CONFIG_DB of the simulated switch: the `PFC_WD`, `WRED_PROFILE` and
//! `PORT` tables, their defaults and the validation SONiC applies to them.
//!
//! Ranges are those of `sonic-utilities` (`pfcwd start`),
//! `sonic-wred-profile.yang` and `sonic-port.yang` (`admin_status` up or
//! down; see `shared/REFERENCE.md` §1).

use std::collections::BTreeMap;
use std::time::Duration;

/// Table → key → field → value, as redis holds it (every value a string).
pub type ConfigDb = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

/// The tables this switch knows.
pub const TABLES: [&str; 3] = ["PFC_WD", "WRED_PROFILE", "PORT"];

/// The `ecn` values `sonic-wred-profile.yang` allows.
pub const ECN_MODES: [&str; 8] = [
    "ecn_none",
    "ecn_green",
    "ecn_yellow",
    "ecn_red",
    "ecn_green_yellow",
    "ecn_green_red",
    "ecn_yellow_red",
    "ecn_all",
];

const COLORS: [&str; 3] = ["green", "yellow", "red"];

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

fn integer(field: &str, value: &str, lo: u64, hi: u64, unit: &str) -> Result<(), String> {
    match value.parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(()),
        Ok(n) => Err(format!("{field} {n} is out of range {lo}..{hi}{unit}")),
        Err(_) => Err(format!("{field} {value:?} is not an integer")),
    }
}

/// Checks one field's value; the error says what is wrong with it.
pub fn validate_field(table: &str, field: &str, value: &str) -> Result<(), String> {
    match (table, field) {
        ("PFC_WD", "action") => match value {
            "drop" | "forward" | "alert" => Ok(()),
            _ => Err(format!("action {value:?} is not one of drop, forward, alert")),
        },
        ("PFC_WD", "detection_time") => integer(field, value, 100, 5000, " ms"),
        ("PFC_WD", "restoration_time") => integer(field, value, 100, 60000, " ms"),
        ("PFC_WD", "pfc_stat_history") => match value {
            "enable" | "disable" => Ok(()),
            _ => Err(format!("pfc_stat_history {value:?} is not enable or disable")),
        },
        ("PORT", "admin_status") => match value {
            "up" | "down" => Ok(()),
            _ => Err(format!("admin_status {value:?} is not up or down")),
        },
        ("WRED_PROFILE", "ecn") => {
            if ECN_MODES.contains(&value) {
                Ok(())
            } else {
                Err(format!("ecn {value:?} is not one of {}", ECN_MODES.join(", ")))
            }
        }
        ("WRED_PROFILE", f)
            if COLORS.iter().any(|c| f == format!("{c}_min_threshold") || f == format!("{c}_max_threshold")) =>
        {
            integer(field, value, 0, u64::MAX, " bytes")
        }
        ("WRED_PROFILE", f) if COLORS.iter().any(|c| f == format!("{c}_drop_probability")) => {
            integer(field, value, 0, 100, " percent")
        }
        ("WRED_PROFILE", f) if COLORS.iter().any(|c| f == format!("wred_{c}_enable")) => match value {
            "true" | "false" => Ok(()),
            _ => Err(format!("{field} {value:?} is not true or false")),
        },
        _ => Err(format!("{table} has no field {field:?}")),
    }
}

/// Whether `field` exists in `table` (an unknown field is a NotFound path,
/// a bad value an InvalidArgument).
pub fn known_field(table: &str, field: &str) -> bool {
    match validate_field(table, field, "") {
        Ok(()) => true,
        Err(e) => !e.starts_with(&format!("{table} has no field")),
    }
}

/// Checks a whole entry after a change: every field, and each colour's
/// `max_threshold ≥ min_threshold`.
pub fn validate_entry(table: &str, key: &str, entry: &BTreeMap<String, String>) -> Result<(), String> {
    for (field, value) in entry {
        validate_field(table, field, value).map_err(|e| format!("{table}|{key}: {e}"))?;
    }
    if table == "WRED_PROFILE" {
        for color in COLORS {
            let get = |f: String| entry.get(&f).and_then(|v| v.parse::<u64>().ok());
            if let (Some(min), Some(max)) =
                (get(format!("{color}_min_threshold")), get(format!("{color}_max_threshold")))
            {
                if max < min {
                    return Err(format!(
                        "{table}|{key}: {color}_max_threshold {max} is below {color}_min_threshold {min}"
                    ));
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonic_ranges_are_enforced() {
        assert!(validate_field("PFC_WD", "detection_time", "100").is_ok());
        assert_eq!(
            validate_field("PFC_WD", "detection_time", "99").unwrap_err(),
            "detection_time 99 is out of range 100..5000 ms"
        );
        assert!(validate_field("PFC_WD", "restoration_time", "60000").is_ok());
        assert!(validate_field("PFC_WD", "restoration_time", "60001").is_err());
        assert!(validate_field("PFC_WD", "action", "shout").is_err());
        assert!(validate_field("WRED_PROFILE", "green_drop_probability", "101").is_err());
        assert!(validate_field("WRED_PROFILE", "ecn", "ecn_green_red").is_ok());
        assert!(validate_field("WRED_PROFILE", "ecn", "ecn_purple").is_err());
        assert!(!known_field("WRED_PROFILE", "blue_min_threshold"));
        assert!(validate_field("PORT", "admin_status", "down").is_ok());
        assert_eq!(
            validate_field("PORT", "admin_status", "off").unwrap_err(),
            "admin_status \"off\" is not up or down"
        );
        assert!(!known_field("PORT", "speed"));
        assert!(known_field("WRED_PROFILE", "red_max_threshold"));
    }

    #[test]
    fn max_below_min_is_refused() {
        let mut entry = defaults(std::iter::empty())["WRED_PROFILE"]["AZURE_LOSSLESS"].clone();
        assert!(validate_entry("WRED_PROFILE", "AZURE_LOSSLESS", &entry).is_ok());
        entry.insert("green_max_threshold".into(), "1000".into());
        assert_eq!(
            validate_entry("WRED_PROFILE", "AZURE_LOSSLESS", &entry).unwrap_err(),
            "WRED_PROFILE|AZURE_LOSSLESS: green_max_threshold 1000 is below green_min_threshold 1048576"
        );
    }
}
