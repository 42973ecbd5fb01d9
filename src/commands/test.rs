//! `rocemend test`: run every rule's test cases, like `promtool test rules`.

use std::path::Path;

use super::Exit;

/// `rocemend test [rules/ | rules/RULE.rhai]`.
pub fn test(path: &Path) -> anyhow::Result<Exit> {
    let report = engine::rule_test::run_path(path)?;
    println!("{report}");
    Ok(if report.passed() { Exit::Ok } else { Exit::Findings })
}
