//! The standard rules of rocemend, compiled in: the `.rhai` files of this
//! folder and their `.test.toml` tests, for whatever runs them without the
//! repository at hand (`rocemend demo` on a fresh machine, the chaos
//! library's built-in sources).
//!
//! The files themselves stay where the daemon, `rocemend test rules` and
//! the playbooks read them; `build.rs` lists them from the folder, so a
//! rule added there is embedded with no other edit, and a rule without its
//! `.test.toml` fails the build.
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

/// The standard rules, `(path, source)`, the path as written from the
/// repository's root (`rules/pfc_storm.rhai`), in name order.
pub const RULES: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/rules.rs"));

/// Each rule's tests, `(path, text)`, in the same order as [`RULES`].
pub const TESTS: &[(&str, &str)] = include!(concat!(env!("OUT_DIR"), "/tests.rs"));

/// The standard rules as owned `(path, source)` pairs.
pub fn sources() -> Vec<(String, String)> {
    RULES.iter().map(|(path, source)| (path.to_string(), source.to_string())).collect()
}
