//! `rocemend test`: run every rule's test cases, like `promtool test rules`.

use std::path::Path;

use crate::Exit;

pub fn test(dir: &Path) -> anyhow::Result<Exit> {
    let report = engine::rule_test::run_dir(dir)?;
    println!("{report}");
    Ok(if report.passed() { Exit::Ok } else { Exit::Findings })
}
