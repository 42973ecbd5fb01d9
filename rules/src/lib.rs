//! The standard rules of rocemend, compiled in: the `.rhai` files of this
//! folder and their `.test.toml` tests, for whatever runs them without the
//! repository at hand (`rocemend demo` on a fresh machine, the chaos
//! library's built-in sources).
//!
//! The files themselves stay where the daemon, `rocemend test rules` and
//! the playbooks read them; each is listed once, below, and a test checks
//! the list against the folder.
//!
//! - [`RULES`]: `(path, source)` of every rule, as the engine loads them;
//! - [`TESTS`]: `(path, text)` of every rule's tests;
//! - [`sources`]: the rules as owned `(path, source)` pairs, the form
//!   `engine::rule::load_sources` and the chaos runner take.
//!
//! ```
//! assert!(rules::RULES.iter().any(|(path, _)| *path == "rules/pfc_storm.rhai"));
//! assert_eq!(rules::sources().len(), rules::TESTS.len(), "every rule has its tests");
//! ```

#![deny(missing_docs)]

/// Lists each rule once by its file stem: its source and its tests.
macro_rules! standard {
    ($($name:literal),* $(,)?) => {
        /// The standard rules, `(path, source)`, the path as written from the
        /// repository's root (`rules/pfc_storm.rhai`), in name order.
        pub const RULES: &[(&str, &str)] =
            &[$((concat!("rules/", $name, ".rhai"), include_str!(concat!("../", $name, ".rhai")))),*];

        /// Each rule's tests, `(path, text)`, in the same order as [`RULES`].
        pub const TESTS: &[(&str, &str)] =
            &[$((concat!("rules/", $name, ".test.toml"), include_str!(concat!("../", $name, ".test.toml")))),*];
    };
}

standard!(
    "cnp_storm",
    "gpu_xid",
    "link_flap",
    "pfc_storm",
    "switch_egress_congestion",
    "switch_pfc_storm",
    "switch_pfcwd_stormed",
    "switch_port_flap",
    "switch_queue_congestion",
    "symbol_errors",
    "xmit_wait",
);

/// The standard rules as owned `(path, source)` pairs.
pub fn sources() -> Vec<(String, String)> {
    RULES.iter().map(|(path, source)| (path.to_string(), source.to_string())).collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The files of this folder whose names end with `suffix`, as
    /// `rules/<name>`, sorted.
    fn listed(suffix: &str) -> Vec<String> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|name| name.ends_with(suffix))
            .map(|name| format!("rules/{name}"))
            .collect();
        names.sort();
        names
    }

    #[test]
    fn every_rule_file_and_its_tests_are_embedded() {
        let paths = |list: &[(&str, &str)]| list.iter().map(|(p, _)| p.to_string()).collect::<Vec<_>>();
        assert_eq!(paths(super::RULES), listed(".rhai"));
        assert_eq!(paths(super::TESTS), listed(".test.toml"));
    }
}
