//! `house.toml`: the limits, the allow-lists (each entry with its reason)
//! and the checks that only report for now.

use std::path::Path;

use serde::Deserialize;

/// The names of the checks, as `report_only` spells them.
pub const CHECKS: [&str; 5] = ["module-cycles", "layering", "crate-graph", "long-functions", "test-binaries"];

/// The tool's configuration.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Checks whose findings are printed but do not fail `--check`.
    #[serde(default)]
    pub report_only: Vec<String>,
    /// The longest a function may be, from `fn` to its closing brace.
    pub max_function_lines: usize,
    /// How many test binaries `cargo test --workspace` may link.
    pub max_test_binaries: usize,
    /// Functions allowed past `max_function_lines`.
    #[serde(default)]
    pub long_function: Vec<LongFunction>,
    /// Integration-test targets a package may have beyond its one.
    #[serde(default)]
    pub own_process: Vec<OwnProcess>,
}

/// A function allowed to be long: a measured hot path.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LongFunction {
    /// Its file, relative to the workspace root.
    pub file: String,
    /// Its name (a method's own name, without its type).
    pub name: String,
    /// The measurement that keeps it one function.
    pub reason: String,
}

/// An integration-test target that needs a process of its own.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OwnProcess {
    /// The package, as Cargo names it (`rocemend-engine`).
    pub package: String,
    /// The test target's name.
    pub test: String,
    /// Why its tests cannot share the package's test binary.
    pub reason: String,
}

impl Config {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Config::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses the text of `house.toml`; every allow-list entry must say why.
    pub fn parse(text: &str) -> Result<Config, String> {
        let config: Config = toml::from_str(text).map_err(|e| e.to_string())?;
        if let Some(unknown) = config.report_only.iter().find(|c| !CHECKS.contains(&c.as_str())) {
            return Err(format!("report_only names {unknown:?}, which is none of {}", CHECKS.join(", ")));
        }
        let reasons = config.long_function.iter().map(|f| (&f.reason, format!("{}::{}", f.file, f.name)));
        let reasons =
            reasons.chain(config.own_process.iter().map(|o| (&o.reason, format!("{}/{}", o.package, o.test))));
        for (reason, what) in reasons {
            if reason.trim().is_empty() {
                return Err(format!("{what} is allowed without a reason"));
            }
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_config_parses() {
        Config::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("house.toml")).unwrap();
    }

    #[test]
    fn an_unknown_check_and_an_entry_without_a_reason_are_refused() {
        let base = "max_function_lines = 80\nmax_test_binaries = 15\n";
        let err = Config::parse(&format!("report_only = [\"cycles\"]\n{base}")).unwrap_err();
        assert!(err.contains("\"cycles\"") && err.contains("module-cycles"), "{err}");
        let entry = "[[long_function]]\nfile = \"a.rs\"\nname = \"f\"\nreason = \" \"\n";
        let err = Config::parse(&format!("{base}{entry}")).unwrap_err();
        assert_eq!(err, "a.rs::f is allowed without a reason");
    }
}
