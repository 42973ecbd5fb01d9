//! sonic-gnmi's own words: the refusals of its Set gates and the two texts that say an entry
//! is absent. rocemend decides "absent" only from these, compared whole, and names a refusal
//! by them (sonic-gnmi 5ec1c20, `gnmi_server/server.go`, `sonic_data_client/*.go`).

use gnmi_proto::gnmi::Path;

/// Neither write flag is on (`server.go:1117`, Unimplemented).
pub const READ_ONLY: &str = "GNMI is in read-only mode";
/// Origin `sonic-db` without native write (`server.go:1176`, Unimplemented).
pub const NATIVE_WRITE_DISABLED: &str = "GNMI native write is disabled";
/// Any other origin without translib write (`server.go:1202`, Unimplemented).
pub const TRANSLIB_WRITE_DISABLED: &str = "Translib write is disabled";
/// The generic config updater's refusal of a patch whose result SONiC's YANG refuses (a range,
/// a leafref; sonic-utilities `generic_config_updater`), which sonic-gnmi hands back inside an
/// UNKNOWN status for a native write.
pub const PATCH_INVALID: &str = "Given patch will produce invalid config";

/// The DB client's (prefix target) answer to a Get of a key that does not exist
/// (`db_client.go`, `ensureKeysExistInRedis`): `No valid entry found on CONFIG_DB with key
/// PFC_WD|Ethernet9`.
pub fn no_entry_on(db: &str, redis_key: &str) -> String {
    format!("No valid entry found on {db} with key {redis_key}")
}

/// The mixed client's (origin `sonic-db`) answer to a Get of a key or field with no data
/// (`mixed_db_client.go:1764-1775`), the path printed as Go prints a `*gnmipb.Path`.
pub fn no_entry_for_path(path: &Path) -> String {
    format!("No valid entry found for path {}", go_path(path))
}

/// Go's `%v` of a `*gnmipb.Path` ([`gnmi_proto::path::go_path`]).
pub fn go_path(path: &Path) -> String {
    gnmi_proto::path::go_path(path)
}

/// Why sonic-gnmi refuses writes, from a Set's status message; `None` for any other text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WriteGate {
    /// [`READ_ONLY`].
    ReadOnly,
    /// [`NATIVE_WRITE_DISABLED`]: translib write may be on, which CONFIG_DB writes cannot use.
    NativeWriteDisabled,
    /// [`TRANSLIB_WRITE_DISABLED`]: the Set was not origin `sonic-db`.
    TranslibWriteDisabled,
}

impl WriteGate {
    /// The gate a refusal's text names, compared whole.
    pub fn of(message: &str) -> Option<WriteGate> {
        match message {
            READ_ONLY => Some(WriteGate::ReadOnly),
            NATIVE_WRITE_DISABLED => Some(WriteGate::NativeWriteDisabled),
            TRANSLIB_WRITE_DISABLED => Some(WriteGate::TranslibWriteDisabled),
            _ => None,
        }
    }

    /// sonic-gnmi's text.
    pub fn text(self) -> &'static str {
        match self {
            WriteGate::ReadOnly => READ_ONLY,
            WriteGate::NativeWriteDisabled => NATIVE_WRITE_DISABLED,
            WriteGate::TranslibWriteDisabled => TRANSLIB_WRITE_DISABLED,
        }
    }

    /// What the switch's operator changes to open it (sonic-buildimage: the telemetry
    /// container's flags, set from CONFIG_DB `GNMI|gnmi`).
    pub fn remedy(self) -> &'static str {
        match self {
            WriteGate::ReadOnly | WriteGate::NativeWriteDisabled => {
                "turn native write on in the switch's gNMI server (sonic-gnmi --enable_native_write; on in SONiC images by default)"
            }
            WriteGate::TranslibWriteDisabled => "send CONFIG_DB writes as origin sonic-db (rocemend always does)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_absence_texts_are_sonic_gnmis() {
        assert_eq!(
            no_entry_on("CONFIG_DB", "PFC_WD|Ethernet9"),
            "No valid entry found on CONFIG_DB with key PFC_WD|Ethernet9"
        );
        let path = gnmi_proto::parse_path("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet9").unwrap();
        assert_eq!(
            no_entry_for_path(&path),
            r#"No valid entry found for path origin:"sonic-db" elem:{name:"CONFIG_DB"} elem:{name:"localhost"} elem:{name:"PFC_WD"} elem:{name:"Ethernet9"}"#
        );
        assert_eq!(WriteGate::of("GNMI is in read-only mode"), Some(WriteGate::ReadOnly));
        assert_eq!(WriteGate::of("GNMI is in read-only mode "), None, "compared whole");
    }
}
