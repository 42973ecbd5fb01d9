//! Lists the standard rules from this folder, so that a rule added here is
//! embedded without another edit: every `<name>.rhai` with its
//! `<name>.test.toml`, in name order, written to `$OUT_DIR` as the two
//! arrays `src/lib.rs` includes. A rule without its tests, or tests without
//! their rule, fails the build and names the file.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const RULE: &str = ".rhai";
const TESTS: &str = ".test.toml";

fn main() -> ExitCode {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // A directory is scanned whole: a file added, removed or edited runs this again.
    println!("cargo::rerun-if-changed={}", dir.display());
    match listed(&dir).and_then(|names| write(&dir, &out, &names)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("rocemend-rules: {error}");
            ExitCode::FAILURE
        }
    }
}

/// The stems of the rules in `dir`, sorted; an error names a rule without
/// its tests, tests without their rule, or a name that is not UTF-8.
fn listed(dir: &Path) -> Result<BTreeSet<String>, String> {
    let (mut rules, mut tests) = (BTreeSet::new(), BTreeSet::new());
    let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for entry in entries {
        let name = entry.map_err(|e| format!("{}: {e}", dir.display()))?.file_name();
        let Some(name) = name.to_str() else {
            return Err(format!("{}: a file name that is not UTF-8: {name:?}", dir.display()));
        };
        if let Some(stem) = name.strip_suffix(TESTS) {
            tests.insert(stem.to_string());
        } else if let Some(stem) = name.strip_suffix(RULE) {
            rules.insert(stem.to_string());
        }
    }
    if let Some(stem) = rules.difference(&tests).next() {
        return Err(format!("rules/{stem}{RULE} has no tests: every standard rule comes with rules/{stem}{TESTS}"));
    }
    if let Some(stem) = tests.difference(&rules).next() {
        return Err(format!("rules/{stem}{TESTS} tests no rule: rules/{stem}{RULE} is missing"));
    }
    Ok(rules)
}

/// Writes `rules.rs` and `tests.rs` into `out`: each an array of `(path as
/// written from the repository's root, include_str!(file))`.
fn write(dir: &Path, out: &Path, names: &BTreeSet<String>) -> Result<(), String> {
    for (file, suffix) in [("rules.rs", RULE), ("tests.rs", TESTS)] {
        let mut text = String::from("&[\n");
        for name in names {
            let path = dir.join(format!("{name}{suffix}"));
            let path = path.to_str().ok_or_else(|| format!("{}: not UTF-8", path.display()))?;
            text.push_str(&format!("    ({:?}, include_str!({path:?})),\n", format!("rules/{name}{suffix}")));
        }
        text.push(']');
        let target = out.join(file);
        std::fs::write(&target, text).map_err(|e| format!("{}: {e}", target.display()))?;
    }
    Ok(())
}
