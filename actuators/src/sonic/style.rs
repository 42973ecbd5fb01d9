//! What a NOT_FOUND from a switch means. The path styles themselves (the
//! database as the prefix target, or origin `sonic-db` with the database
//! and namespace as the first elements) are [`gnmi_proto::sonic::PathStyle`],
//! shared with the gnmi sensor and the simulated switch.

/// What a NOT_FOUND to a Get of a CONFIG_DB entry means: the entry is
/// absent (the key is not there: a prior of "every field absent", which
/// undo restores by deleting them), or the switch does not serve what was
/// asked the way it was asked (another path style, a table it lacks): the
/// action must not go ahead on a guess.
pub fn entry_absent(message: &str, key: &str) -> bool {
    let m = message.to_ascii_lowercase();
    // sonic-gnmi: "No valid entry found on CONFIG_DB with key PFC_WD|Ethernet9",
    // "No valid entry found for path …"; a missing field: "redis: nil".
    let sonic = m.contains("no valid entry found") || m.contains("redis: nil");
    // Targets that name the key: "PFC_WD|Ethernet9 not found", "key … not found".
    let named = m.contains("not found") && m.contains(&key.to_ascii_lowercase()) && !m.contains("not served");
    sonic || named
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_absent_key_is_told_from_a_path_the_switch_does_not_serve() {
        assert!(entry_absent("No valid entry found on CONFIG_DB with key PFC_WD|Ethernet9", "Ethernet9"));
        assert!(entry_absent("redis: nil", "Ethernet9"));
        assert!(entry_absent("CONFIG_DB PFC_WD|Ethernet9 not found", "Ethernet9"));
        assert!(!entry_absent("table PFC_WD is not served", "Ethernet9"));
        assert!(!entry_absent("Set is only allowed on CONFIG_DB", "Ethernet9"));
        assert!(!entry_absent("Empty target data not supported", "Ethernet9"));
    }
}
