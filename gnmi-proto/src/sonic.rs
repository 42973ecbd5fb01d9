//! SONiC facts that both sides of a gNMI request must agree on: how a
//! request names a database ([`PathStyle`]), the CONFIG_DB tables rocemend
//! writes (`PFC_WD`, `WRED_PROFILE`, `PORT`, `QUEUE`), their keys and
//! fields, the values SONiC accepts for each, and the references between
//! them ([`LEAFREFS`]).
//!
//! SONiC's telemetry serves its redis databases in two ways, and a switch
//! may speak either or both (`shared/REFERENCE.md` §4):
//!
//! - [`PathStyle::PrefixTarget`]: the database is the target of the
//!   request's prefix (`gnmi_get -xpath_target COUNTERS_DB -xpath
//!   COUNTERS/Ethernet0`), the paths start at the table;
//! - [`PathStyle::SonicDbOrigin`]: origin `sonic-db`, the database as the
//!   path's first element, then the namespace when there is one
//!   (`/sonic-db:CONFIG_DB/localhost/PFC_WD/Ethernet0`), no target.
//!
//! ```
//! use gnmi_proto::path::{join, path_to_string};
//! use gnmi_proto::sonic::PathStyle;
//!
//! let (prefix, path) = PathStyle::PrefixTarget.request("CONFIG_DB", &["PFC_WD", "Ethernet0"]);
//! assert_eq!(prefix.as_ref().unwrap().target, "CONFIG_DB");
//! assert_eq!(path_to_string(&path), "/PFC_WD/Ethernet0");
//!
//! let style = PathStyle::SonicDbOrigin { namespace: Some("localhost".into()) };
//! let (prefix, path) = style.request("CONFIG_DB", &["PFC_WD", "Ethernet0"]);
//! assert!(prefix.is_none());
//! assert_eq!(path_to_string(&path), "sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet0");
//! ```
//!
//! The actuators check what they are about to send against these; the
//! simulated switch refuses what breaks them, as SONiC does. One copy, so the
//! two can never drift apart. Ranges are those of `sonic-utilities`
//! (`pfcwd start`), `sonic-wred-profile.yang`, `sonic-queue.yang` and
//! `sonic-port.yang` (`shared/REFERENCE.md` §1).
//!
//! ```
//! use gnmi_proto::sonic::{self, SchemaError};
//!
//! assert!(sonic::check_field("PFC_WD", "detection_time", "200").is_ok());
//! assert_eq!(
//!     sonic::check_field("PFC_WD", "detection_time", "99").unwrap_err().to_string(),
//!     "detection_time 99 is out of range 100..5000 ms"
//! );
//! assert!(matches!(sonic::check_field("PORT", "speed", "1"), Err(SchemaError::UnknownField { .. })));
//! // A queue names its WRED profile; the name must be one SONiC accepts.
//! assert!(sonic::check_key("QUEUE", "Ethernet12|3").is_ok());
//! assert!(sonic::check_field("QUEUE", "wred_profile", "ROCEMEND_Ethernet12_3").is_ok());
//! assert!(sonic::check_field("QUEUE", "wred_profile", "a.b").is_err());
//! ```

use std::collections::BTreeMap;

use crate::gnmi::Path;
use crate::path::elems;

/// The origin sonic-gnmi gives its native database paths.
pub const SONIC_DB_ORIGIN: &str = "sonic-db";
/// The database of counters (and sonic-gnmi's virtual `COUNTERS/<port>` paths).
pub const COUNTERS_DB: &str = "COUNTERS_DB";
/// The database of configuration.
pub const CONFIG_DB: &str = "CONFIG_DB";

/// How a request names the SONiC database it is about (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum PathStyle {
    /// The database is the prefix's target; paths start at the table.
    #[default]
    PrefixTarget,
    /// Origin `sonic-db` on the path, the database its first element, then
    /// the namespace when given (`localhost`, `asic0` on multi-ASIC
    /// switches); no target.
    SonicDbOrigin {
        /// The namespace element after the database, if the switch wants one.
        namespace: Option<String>,
    },
}

impl PathStyle {
    /// The style's name as configs spell it: `prefix-target`, `sonic-db-origin`.
    pub fn name(&self) -> &'static str {
        match self {
            PathStyle::PrefixTarget => "prefix-target",
            PathStyle::SonicDbOrigin { .. } => "sonic-db-origin",
        }
    }

    /// The request prefix for database `db`: a prefix with target `db`, or
    /// none (the database is in each path).
    pub fn prefix(&self, db: &str) -> Option<Path> {
        match self {
            PathStyle::PrefixTarget => Some(Path { target: db.to_string(), ..Path::default() }),
            PathStyle::SonicDbOrigin { .. } => None,
        }
    }

    /// The path of `elements` (table, key, field, …) in database `db`, to
    /// send under [`PathStyle::prefix`].
    pub fn path(&self, db: &str, elements: &[&str]) -> Path {
        match self {
            PathStyle::PrefixTarget => elems(elements),
            PathStyle::SonicDbOrigin { namespace } => {
                let mut names = vec![db];
                names.extend(namespace.as_deref());
                names.extend_from_slice(elements);
                Path { origin: SONIC_DB_ORIGIN.to_string(), ..elems(&names) }
            }
        }
    }

    /// [`PathStyle::prefix`] and [`PathStyle::path`] together: what a Get
    /// of `elements` in `db` sends.
    pub fn request(&self, db: &str, elements: &[&str]) -> (Option<Path>, Path) {
        (self.prefix(db), self.path(db, elements))
    }

    /// The text of [`PathStyle::request`], for plans and logs:
    /// `CONFIG_DB@/PFC_WD/Ethernet0/action` (the prefix's target, then the
    /// path) or `sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet0/action`.
    pub fn describe(&self, db: &str, elements: &[&str]) -> String {
        let (prefix, path) = self.request(db, elements);
        let target = prefix.map(|p| format!("{}@", p.target)).unwrap_or_default();
        format!("{target}{}", crate::path::path_to_string(&path))
    }
}

/// The CONFIG_DB table of the PFC watchdog, keyed by port.
pub const PFC_WD: &str = "PFC_WD";
/// The CONFIG_DB table of WRED/ECN profiles, keyed by profile name.
pub const WRED_PROFILE: &str = "WRED_PROFILE";
/// The CONFIG_DB table of ports, keyed by port.
pub const PORT: &str = "PORT";
/// The CONFIG_DB table of egress queues, keyed `<port>|<queue>`
/// (`sonic-queue.yang`): which WRED profile each queue uses (`wred_profile`).
pub const QUEUE: &str = "QUEUE";

/// The tables rocemend reads and writes.
pub const TABLES: [&str; 4] = [PFC_WD, WRED_PROFILE, PORT, QUEUE];

/// The separator of a multi-part CONFIG_DB key (`QUEUE|Ethernet0|3` is
/// table `QUEUE`, key `Ethernet0|3`), as redis and sonic-gnmi's paths
/// write it.
pub const KEY_SEPARATOR: char = '|';

/// Queues per port on SONiC's physical ports: indices `0..QUEUES`.
pub const QUEUES: u64 = 8;

/// The `QUEUE` field naming the queue's WRED profile.
pub const WRED_PROFILE_FIELD: &str = "wred_profile";

/// The lossless WRED profile SONiC's QoS templates ship (`AZURE_LOSSLESS`):
/// ECN marking from 1 MiB of queue, 5 % at 2 MiB. The simulated switch's
/// factory config, and what tests of the ECN actuator can start from.
pub const LOSSLESS_WRED: [(&str, &str); 5] = [
    ("green_min_threshold", "1048576"),
    ("green_max_threshold", "2097152"),
    ("green_drop_probability", "5"),
    ("wred_green_enable", "true"),
    ("ecn", "ecn_all"),
];

/// The longest WRED profile name (`sonic-wred-profile.yang`: `length 1..32`).
pub const PROFILE_NAME_MAX: usize = 32;

/// The longest port name (`sonic-port.yang`: `length 1..128`).
pub const PORT_NAME_MAX: usize = 128;

/// A leafref between tables (`sonic-queue.yang`): the field of the
/// referring table must name an existing key of the target table. SONiC
/// refuses a change that leaves one dangling, both a binding to a missing
/// entry and the deletion of an entry still referred to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Leafref {
    /// The referring table.
    pub table: &'static str,
    /// Its field.
    pub field: &'static str,
    /// The table whose keys the field names.
    pub target: &'static str,
}

/// The leafrefs among [`TABLES`].
pub const LEAFREFS: [Leafref; 1] = [Leafref { table: QUEUE, field: WRED_PROFILE_FIELD, target: WRED_PROFILE }];

/// The key of `QUEUE|<port>|<queue>`.
pub fn queue_key(port: &str, queue: u64) -> String {
    format!("{port}{KEY_SEPARATOR}{queue}")
}

/// A `QUEUE` key's port and queue range: `Ethernet0|3` → (`Ethernet0`,
/// 3..=3), `Ethernet0|3-4` → (`Ethernet0`, 3..=4); `None` when it is
/// neither.
pub fn parse_queue_key(key: &str) -> Option<(&str, std::ops::RangeInclusive<u64>)> {
    let (port, index) = key.split_once(KEY_SEPARATOR)?;
    let number = |s: &str| -> Option<u64> {
        (!s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit())).then(|| s.parse().ok()).flatten()
    };
    let (lo, hi) = match index.split_once('-') {
        Some((lo, hi)) => (number(lo)?, number(hi)?),
        None => (number(index)?, number(index)?),
    };
    (lo <= hi).then_some((port, lo..=hi))
}

/// The `PFC_WD` `action` values `pfcwd start` allows.
pub const PFCWD_ACTIONS: [&str; 3] = ["drop", "forward", "alert"];
/// `PFC_WD` `detection_time`, in milliseconds.
pub const PFCWD_DETECTION_MS: (u64, u64) = (100, 5000);
/// `PFC_WD` `restoration_time`, in milliseconds.
pub const PFCWD_RESTORATION_MS: (u64, u64) = (100, 60000);

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

/// The packet colours a WRED profile has thresholds for.
pub const COLORS: [&str; 3] = ["green", "yellow", "red"];

/// A value SONiC would refuse, or a field it does not have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The table has no such field.
    #[error("{table} has no field {field:?}")]
    UnknownField {
        /// The table.
        table: String,
        /// The field asked for.
        field: String,
    },
    /// The value is not one of the allowed words.
    #[error("{field} {value:?} is not one of {}", allowed.join(", "))]
    NotOneOf {
        /// The field.
        field: String,
        /// The value given.
        value: String,
        /// What the field allows.
        allowed: Vec<&'static str>,
    },
    /// The value is not a whole number.
    #[error("{field} {value:?} is not an integer")]
    NotAnInteger {
        /// The field.
        field: String,
        /// The value given.
        value: String,
    },
    /// A whole number outside the field's range.
    #[error("{field} {value} is out of range {lo}..{hi}{unit}")]
    OutOfRange {
        /// The field.
        field: String,
        /// The value given.
        value: u64,
        /// The lowest allowed.
        lo: u64,
        /// The highest allowed.
        hi: u64,
        /// The unit, with a leading space (` ms`), or empty.
        unit: &'static str,
    },
    /// A WRED profile whose maximum threshold is below its minimum.
    #[error("{color}_max_threshold {max} is below {color}_min_threshold {min}")]
    MaxBelowMin {
        /// The colour.
        color: &'static str,
        /// The minimum threshold, in bytes.
        min: u64,
        /// The maximum threshold, in bytes.
        max: u64,
    },
    /// A key the table's YANG list does not accept.
    #[error("{table} key {key:?} is refused: {reason}")]
    BadKey {
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// What the key must look like.
        reason: &'static str,
    },
    /// A WRED profile name `sonic-wred-profile.yang` does not accept.
    #[error(
        "{field} {value:?} is not a WRED profile name: 1 to 32 characters of A-Z a-z 0-9 _ -, \
         starting with a letter or digit"
    )]
    BadProfileName {
        /// The field (or key) that holds it.
        field: String,
        /// The name.
        value: String,
    },
    /// A leafref that names no entry (`sonic-queue.yang`'s `wred_profile`).
    #[error("{table}|{key} {field} {value:?}: no such {target} entry (a leafref to {target})")]
    Dangling {
        /// The referring table.
        table: String,
        /// Its key.
        key: String,
        /// The referring field.
        field: String,
        /// The name it holds.
        value: String,
        /// The table it must name a key of.
        target: String,
    },
    /// An entry deleted while others still refer to it.
    #[error("{table}|{key} is still in use by {by}; re-bind those first")]
    InUse {
        /// The table.
        table: String,
        /// The key.
        key: String,
        /// Who refers to it (`QUEUE|Ethernet0|3 wred_profile`, …).
        by: String,
    },
}

/// Parses `value` as a whole number in `lo..=hi`.
pub fn integer(field: &str, value: &str, lo: u64, hi: u64, unit: &'static str) -> Result<u64, SchemaError> {
    match value.trim().parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        Ok(n) => Err(SchemaError::OutOfRange { field: field.to_string(), value: n, lo, hi, unit }),
        Err(_) => Err(SchemaError::NotAnInteger { field: field.to_string(), value: value.to_string() }),
    }
}

fn one_of(field: &str, value: &str, allowed: &[&'static str]) -> Result<(), SchemaError> {
    if allowed.contains(&value) {
        Ok(())
    } else {
        Err(SchemaError::NotOneOf { field: field.to_string(), value: value.to_string(), allowed: allowed.to_vec() })
    }
}

fn per_color(field: &str, suffix: &str) -> bool {
    COLORS.iter().any(|c| field.strip_prefix(c).and_then(|rest| rest.strip_prefix('_')) == Some(suffix))
}

/// Checks a WRED profile name as `sonic-wred-profile.yang` does:
/// `[a-zA-Z0-9][-a-zA-Z0-9_]{0,31}`.
pub fn check_profile_name(field: &str, name: &str) -> Result<(), SchemaError> {
    let mut chars = name.chars();
    let first = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let rest = chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if first && rest && name.len() <= PROFILE_NAME_MAX {
        Ok(())
    } else {
        Err(SchemaError::BadProfileName { field: field.to_string(), value: name.to_string() })
    }
}

/// Checks a key of `table` as its YANG list does: a port name (1 to 128
/// characters, no `|`) for `PFC_WD` (or `GLOBAL`) and `PORT`, a profile name
/// for `WRED_PROFILE`, `<port>|<queue>` for `QUEUE` with the queue an index
/// `0`–`7` or a range `3-4`.
pub fn check_key(table: &str, key: &str) -> Result<(), SchemaError> {
    let bad = |reason| Err(SchemaError::BadKey { table: table.to_string(), key: key.to_string(), reason });
    let port_ok = |p: &str| !p.is_empty() && p.len() <= PORT_NAME_MAX && !p.contains(KEY_SEPARATOR);
    match table {
        WRED_PROFILE => check_profile_name("WRED_PROFILE key", key),
        QUEUE => match parse_queue_key(key) {
            Some((port, range)) if port_ok(port) && *range.end() < QUEUES => Ok(()),
            Some((port, _)) if port_ok(port) => bad("queue indices are 0 to 7"),
            _ => bad("a QUEUE key is <port>|<queue>, the queue 0 to 7 or a range such as 3-4"),
        },
        PFC_WD | PORT if port_ok(key) => Ok(()),
        PFC_WD | PORT => bad("a port name is 1 to 128 characters without |"),
        _ => Ok(()),
    }
}

/// Checks one field's value as SONiC would.
pub fn check_field(table: &str, field: &str, value: &str) -> Result<(), SchemaError> {
    let (detect_lo, detect_hi) = PFCWD_DETECTION_MS;
    let (restore_lo, restore_hi) = PFCWD_RESTORATION_MS;
    match (table, field) {
        (PFC_WD, "action") => one_of(field, value, &PFCWD_ACTIONS),
        (PFC_WD, "detection_time") => integer(field, value, detect_lo, detect_hi, " ms").map(drop),
        (PFC_WD, "restoration_time") => integer(field, value, restore_lo, restore_hi, " ms").map(drop),
        (PFC_WD, "pfc_stat_history") => one_of(field, value, &["enable", "disable"]),
        (PORT, "admin_status") => one_of(field, value, &["up", "down"]),
        (QUEUE, WRED_PROFILE_FIELD) => check_profile_name(field, value),
        (WRED_PROFILE, "ecn") => one_of(field, value, &ECN_MODES),
        (WRED_PROFILE, f) if per_color(f, "min_threshold") || per_color(f, "max_threshold") => {
            integer(field, value, 0, u64::MAX, " bytes").map(drop)
        }
        (WRED_PROFILE, f) if per_color(f, "drop_probability") => integer(field, value, 0, 100, " percent").map(drop),
        (WRED_PROFILE, f) if COLORS.iter().any(|c| f == format!("wred_{c}_enable")) => {
            one_of(field, value, &["true", "false"])
        }
        _ => Err(SchemaError::UnknownField { table: table.to_string(), field: field.to_string() }),
    }
}

/// Whether `table` has `field` (an unknown field is a path that does not
/// exist; a bad value for a known one is an invalid argument).
pub fn known_field(table: &str, field: &str) -> bool {
    !matches!(check_field(table, field, ""), Err(SchemaError::UnknownField { .. }))
}

/// Checks a whole entry: every field, and each colour's maximum threshold
/// against its minimum.
pub fn check_entry(table: &str, entry: &BTreeMap<String, String>) -> Result<(), SchemaError> {
    for (field, value) in entry {
        check_field(table, field, value)?;
    }
    if table == WRED_PROFILE {
        for color in COLORS {
            let get = |f: String| entry.get(&f).and_then(|v| v.parse::<u64>().ok());
            if let (Some(min), Some(max)) =
                (get(format!("{color}_min_threshold")), get(format!("{color}_max_threshold")))
            {
                if max < min {
                    return Err(SchemaError::MaxBelowMin { color, min, max });
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(table: &str, field: &str, value: &str) -> String {
        check_field(table, field, value).unwrap_err().to_string()
    }

    #[test]
    fn a_request_is_described_as_it_is_sent() {
        let fields = ["PFC_WD", "Ethernet0", "action"];
        assert_eq!(PathStyle::PrefixTarget.describe(CONFIG_DB, &fields), "CONFIG_DB@/PFC_WD/Ethernet0/action");
        let origin = PathStyle::SonicDbOrigin { namespace: Some("localhost".into()) };
        assert_eq!(origin.describe(CONFIG_DB, &fields), "sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet0/action");
        let (prefix, path) = PathStyle::PrefixTarget.request(CONFIG_DB, &fields);
        assert_eq!(prefix.map(|p| p.target).as_deref(), Some(CONFIG_DB));
        assert!(path.target.is_empty(), "a target is only valid in the prefix (gNMI 2.2.2.1)");
    }

    #[test]
    fn sonic_ranges_are_enforced() {
        assert!(check_field(PFC_WD, "detection_time", "100").is_ok());
        assert_eq!(error(PFC_WD, "detection_time", "99"), "detection_time 99 is out of range 100..5000 ms");
        assert!(check_field(PFC_WD, "restoration_time", "60000").is_ok());
        assert!(check_field(PFC_WD, "restoration_time", "60001").is_err());
        assert_eq!(error(PFC_WD, "action", "shout"), "action \"shout\" is not one of drop, forward, alert");
        assert!(check_field(WRED_PROFILE, "green_drop_probability", "101").is_err());
        assert!(check_field(WRED_PROFILE, "ecn", "ecn_green_red").is_ok());
        assert!(check_field(WRED_PROFILE, "ecn", "ecn_purple").is_err());
        assert!(!known_field(WRED_PROFILE, "blue_min_threshold"));
        assert!(check_field(PORT, "admin_status", "down").is_ok());
        assert_eq!(error(PORT, "admin_status", "off"), "admin_status \"off\" is not one of up, down");
        assert!(!known_field(PORT, "speed"));
        assert!(known_field(WRED_PROFILE, "red_max_threshold"));
        assert_eq!(error(PFC_WD, "detection_time", "soon"), "detection_time \"soon\" is not an integer");
    }

    #[test]
    fn both_path_styles_name_the_database() {
        use crate::path::{join, path_to_string};
        let full = |style: &PathStyle| {
            let (prefix, path) = style.request(CONFIG_DB, &["PFC_WD", "Ethernet0", "action"]);
            assert_eq!(path.target, "", "a target outside the prefix is ignored by targets");
            path_to_string(&join(prefix.as_ref(), &path))
        };
        assert_eq!(full(&PathStyle::PrefixTarget), "CONFIG_DB@/PFC_WD/Ethernet0/action");
        assert_eq!(full(&PathStyle::SonicDbOrigin { namespace: None }), "sonic-db:/CONFIG_DB/PFC_WD/Ethernet0/action");
        let multi = PathStyle::SonicDbOrigin { namespace: Some("asic0".into()) };
        assert_eq!(full(&multi), "sonic-db:/CONFIG_DB/asic0/PFC_WD/Ethernet0/action");
        assert_eq!((PathStyle::default().name(), multi.name()), ("prefix-target", "sonic-db-origin"));
    }

    #[test]
    fn keys_and_profile_names_follow_the_yang_lists() {
        assert!(check_key(QUEUE, "Ethernet12|3").is_ok());
        assert!(check_key(QUEUE, "Ethernet12|3-4").is_ok());
        assert_eq!(parse_queue_key("Ethernet12|3-4"), Some(("Ethernet12", 3..=4)));
        assert_eq!(parse_queue_key("Ethernet12|7"), Some(("Ethernet12", 7..=7)));
        assert_eq!(queue_key("Ethernet12", 3), "Ethernet12|3");
        for bad in ["Ethernet12", "Ethernet12|", "|3", "Ethernet12|4-3", "Ethernet12|x", "Ethernet12|3|4", "a|+3"] {
            assert!(check_key(QUEUE, bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            check_key(QUEUE, "Ethernet12|8").unwrap_err().to_string(),
            "QUEUE key \"Ethernet12|8\" is refused: queue indices are 0 to 7"
        );
        assert!(check_key(PORT, "Ethernet0").is_ok());
        assert!(check_key(PORT, "Ethernet0|3").is_err());
        assert!(check_key(PORT, &"E".repeat(129)).is_err());
        assert!(check_key(WRED_PROFILE, "AZURE_LOSSLESS").is_ok());
        assert!(check_profile_name("p", &"P".repeat(32)).is_ok());
        for bad in ["", "_X", "-X", "A.B", "A:B", "A|B", "A B", &"P".repeat(33)] {
            assert!(check_key(WRED_PROFILE, bad).is_err(), "{bad:?}");
            assert!(check_field(QUEUE, WRED_PROFILE_FIELD, bad).is_err(), "{bad:?}");
        }
        assert!(!known_field(QUEUE, "scheduler"), "a leafref to a table this schema does not have");
    }

    #[test]
    fn max_below_min_is_refused() {
        let mut entry: BTreeMap<String, String> =
            [("green_min_threshold", "1048576"), ("green_max_threshold", "2097152")]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        assert!(check_entry(WRED_PROFILE, &entry).is_ok());
        entry.insert("green_max_threshold".into(), "1000".into());
        assert_eq!(
            check_entry(WRED_PROFILE, &entry).unwrap_err().to_string(),
            "green_max_threshold 1000 is below green_min_threshold 1048576"
        );
    }
}
