//! `rocemend test`: run every rule's test cases, like `promtool test rules`.

use std::path::Path;

use crate::Outcome;

pub fn test(dir: &Path) -> anyhow::Result<Outcome> {
    let report = engine::rule_test::run_dir(dir)?;
    println!("{report}");
    Ok(if report.passed() { Outcome::Ok } else { Outcome::Findings })
}
