//! What a NOT_FOUND from a switch means. The path styles themselves (the
//! database as the prefix target, or origin `sonic-db` with the database
//! and instance as the first elements) are [`gnmi_proto::sonic::PathStyle`],
//! shared with the gnmi sensor and the simulated switch.

use gnmi_proto::sonic::PathStyle;
use sonic::gnmi::texts;
use sonic::layout::db::CONFIG_DB;

/// Whether a NOT_FOUND `message` to a Get of CONFIG_DB `table|key` in `style` says that very
/// entry is absent: only sonic-gnmi's own words for it, compared whole ("No valid entry found on
/// CONFIG_DB with key PFC_WD|Ethernet9" from the prefix-target client, "No valid entry found for
/// path …" with the path asked from the origin `sonic-db` one). Anything else — another key
/// named, "redis: nil", a table the switch does not serve, a text that merely contains "not
/// found" — is not an answer about the entry, and an action must not go ahead on it.
pub fn entry_absent(message: &str, style: &PathStyle, table: &str, key: &str) -> bool {
    match style {
        PathStyle::PrefixTarget => message == texts::no_entry_on(CONFIG_DB, &format!("{table}|{key}")),
        PathStyle::SonicDbOrigin { .. } => {
            let (_, path) = style.request(CONFIG_DB, &[table, key]);
            message == texts::no_entry_for_path(&path)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_sonic_gnmis_own_words_for_that_key_mean_absent() {
        let prefix = PathStyle::PrefixTarget;
        let mixed = PathStyle::SonicDbOrigin { namespace: Some("localhost".into()) };
        let on = "No valid entry found on CONFIG_DB with key PFC_WD|Ethernet9";
        assert!(entry_absent(on, &prefix, "PFC_WD", "Ethernet9"));
        let for_path = "No valid entry found for path origin:\"sonic-db\" elem:{name:\"CONFIG_DB\"} \
                        elem:{name:\"localhost\"} elem:{name:\"PFC_WD\"} elem:{name:\"Ethernet9\"}";
        assert!(entry_absent(for_path, &mixed, "PFC_WD", "Ethernet9"));
        for (message, style, why) in [
            (on, &mixed, "the other client's words: not what this style answers"),
            ("No valid entry found on CONFIG_DB with key PFC_WD|Ethernet99", &prefix, "another key"),
            ("redis: nil", &prefix, "a missing field, or a broken read"),
            ("CONFIG_DB PFC_WD|Ethernet9 not found", &prefix, "someone else's words"),
            ("table PFC_WD is not served", &prefix, "a refusal"),
            ("Set is only allowed on CONFIG_DB", &prefix, "a refusal"),
            ("Empty target data not supported", &prefix, "a refusal"),
        ] {
            assert!(!entry_absent(message, style, "PFC_WD", "Ethernet9"), "{message:?}: {why}");
        }
    }
}
