//! Which of sonic-gnmi's clients answers a request: the DB client (prefix target a database
//! name), the mixed client (origin `sonic-db`), or translib (anything else), decided as
//! `server.go` (Get `:1019-1045`, Set `:1176-1210`) and `client_subscribe.go` (`:193-228`)
//! decide it. Get and Subscribe look at the target; Set never does.

use gnmi_proto::gnmi::Path;
use tonic::Code;

use super::errors::{status, GoError};

/// The origin of sonic-gnmi's native database paths (`IsNativeOrigin`, `server.go:957-959`).
pub const SONIC_DB: &str = "sonic-db";

/// The targets sonic-gnmi knows as databases (`proto/sonic.proto`, `enum Target`).
pub const TARGET_DBS: [&str; 9] = [
    "APPL_DB",
    "ASIC_DB",
    "COUNTERS_DB",
    "CONFIG_DB",
    "PFC_WD_DB",
    "FLEX_COUNTER_DB",
    "STATE_DB",
    "CHASSIS_STATE_DB",
    "OTHERS",
];

/// A prefix target read as `IsTargetDb` reads it (`db_client.go:567-593`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TargetDb {
    /// The database (the part before `/`).
    pub name: String,
    /// Whether it names one of [`TARGET_DBS`] (in at most two parts).
    pub valid: bool,
    /// The namespace (`asic0`); empty for the default.
    pub namespace: String,
    /// Whether the target named one: only on a multi-ASIC switch, else the part after `/`
    /// is ignored.
    pub namespace_given: bool,
}

/// Reads `target` (`COUNTERS_DB`, `COUNTERS_DB/asic0`) as sonic-gnmi does; `multi_asic`:
/// whether the switch has namespaces.
pub(crate) fn target_db(target: &str, multi_asic: bool) -> TargetDb {
    let parts: Vec<&str> = target.split('/').collect();
    let name = parts[0].to_string();
    let mut db = TargetDb { name, valid: false, namespace: String::new(), namespace_given: false };
    if parts.len() > 2 {
        return db;
    }
    if multi_asic && parts.len() > 1 {
        db.namespace = parts[1].to_string();
        db.namespace_given = true;
    }
    db.valid = TARGET_DBS.contains(&db.name.as_str());
    db
}

/// The one origin of `paths` (`ParseOrigin`, `server.go:940-955`).
pub(crate) fn parse_origin<'a>(paths: impl IntoIterator<Item = &'a Path>) -> Result<String, tonic::Status> {
    let mut origin: Option<&str> = None;
    for path in paths {
        match origin {
            None => origin = Some(&path.origin),
            Some(o) if o != path.origin => return Err(status(Code::Unimplemented, "Origin conflict in path")),
            Some(_) => {}
        }
    }
    Ok(origin.unwrap_or_default().to_string())
}

/// What a request routed to translib gets: sonic-gnmi would hand it to sonic-mgmt-common's
/// YANG applications, which this front does not reproduce.
pub(crate) fn translib_not_served(paths: &[Path]) -> GoError {
    let shown: Vec<String> = paths.iter().map(gnmi_proto::path_to_string).collect();
    GoError::status(
        Code::Unimplemented,
        format!(
            "translib (YANG models) is not served by this SONiC front; only COUNTERS_DB virtual paths, \
             prefix-target databases and origin sonic-db are: {}",
            shown.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_read_as_sonic_gnmi_reads_them() {
        let t = target_db("COUNTERS_DB", false);
        assert!(t.valid && !t.namespace_given);
        // On a single-ASIC switch the namespace part is ignored.
        let t = target_db("COUNTERS_DB/asic0", false);
        assert!(t.valid && !t.namespace_given && t.namespace.is_empty());
        let t = target_db("COUNTERS_DB/asic0", true);
        assert!(t.valid && t.namespace_given && t.namespace == "asic0");
        assert!(!target_db("COUNTERS_DB/a/b", true).valid);
        assert!(!target_db("OC-YANG", false).valid);
        assert!(!target_db("", false).valid);
    }

    #[test]
    fn paths_of_two_origins_conflict() {
        let a = gnmi_proto::parse_path("sonic-db:/CONFIG_DB").unwrap();
        let b = gnmi_proto::parse_path("/CONFIG_DB").unwrap();
        assert_eq!(parse_origin([&a, &a]).unwrap(), "sonic-db");
        let e = parse_origin([&a, &b]).unwrap_err();
        assert_eq!((e.code(), e.message()), (Code::Unimplemented, "Origin conflict in path"));
    }
}
