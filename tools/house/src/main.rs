//! `rocemend-house`: the house rules of the workspace, checked from its
//! sources and `cargo metadata` in a few seconds, without building it.
//!
//! ```text
//! cargo run -p rocemend-house               # report every finding; exit 0
//! cargo run -p rocemend-house -- --check    # the same, exit 1 on a finding (CI)
//! cargo run -p rocemend-house -- --write    # redraw the crate graph in docs/architecture.md, then report
//! ```
//!
//! The checks (the names are those of `report_only` in `house.toml`):
//!
//! - `module-cycles` ([`modules`]): no cycle between the top-level modules
//!   of a library crate or a binary, judged from `crate::` and `super::`
//!   paths; each cycle is printed as a chain with one `file:line` per arrow.
//! - `layering` ([`layering`]): no crate depends on one the layout forbids.
//! - `crate-graph` ([`graph_doc`]): the arrows between the workspace's
//!   crates in docs/architecture.md are the ones `cargo metadata` reads.
//! - `long-functions` ([`lengths`]): no function longer than
//!   `max_function_lines` outside the allow-list of measured hot paths.
//! - `test-binaries` ([`test_binaries`]): `cargo test --workspace` links at
//!   most `max_test_binaries`, and a package has one integration-test binary
//!   unless `house.toml` says why a test needs a process of its own.
//!
//! `house.toml`, next to this crate's manifest, holds the limits, the
//! allow-lists with a reason per entry, and which checks only report for
//! now. Exit codes: 0 nothing (enforced) found, 1 findings under
//! `--check`, 2 the tool could not run (bad flag, unreadable file, cargo
//! metadata failing).

mod config;
mod graph_doc;
mod layering;
mod lengths;
mod metadata;
mod modules;
mod sources;
mod test_binaries;

use std::path::Path;
use std::process::ExitCode;

use config::Config;
use metadata::Workspace;

/// What the command line asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Print the findings; exit 0 whatever they are.
    Report,
    /// Print the findings; exit 1 when an enforced check has one.
    Check,
    /// Redraw the crate graph in docs/architecture.md, then report.
    Write,
}

const USAGE: &str = "usage: rocemend-house [--check | --write]
  (no flag)  print what each check finds; exit 0
  --check    the same, and exit 1 when a check not listed in report_only finds something
  --write    redraw the crate graph in docs/architecture.md from cargo metadata, then report";

/// What one check found: its name (as `report_only` spells it) and one
/// message per finding, each possibly several lines.
struct Findings {
    check: &'static str,
    found: Vec<String>,
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => Mode::Report,
        ["--check"] => Mode::Check,
        ["--write"] => Mode::Write,
        ["--help" | "-h"] => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(mode) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("rocemend-house: {error}");
            ExitCode::from(2)
        }
    }
}

/// Runs every check and prints what it finds; the exit code by `mode`.
fn run(mode: Mode) -> Result<ExitCode, String> {
    let config = Config::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("house.toml"))?;
    let workspace = Workspace::read()?;
    if mode == Mode::Write && graph_doc::write(&workspace)? {
        println!("rocemend-house: redrew the crate graph in {}", graph_doc::DOC);
    }
    let sources = sources::Sources::read(&workspace.root)?;
    let all = [
        Findings { check: "module-cycles", found: modules::check(&workspace, &sources)? },
        Findings { check: "layering", found: layering::check(&workspace) },
        Findings { check: "crate-graph", found: graph_doc::check(&workspace)? },
        Findings { check: "long-functions", found: lengths::check(&sources, &config) },
        Findings { check: "test-binaries", found: test_binaries::check(&workspace, &config) },
    ];
    let mut failing = Vec::new();
    for findings in &all {
        let enforced = !config.report_only.iter().any(|c| c == findings.check);
        let note = if enforced { "" } else { " (report only, house.toml)" };
        if findings.found.is_empty() {
            println!("ok   {}", findings.check);
            continue;
        }
        println!("\n{}: {} finding(s){note}", findings.check, findings.found.len());
        for finding in &findings.found {
            println!("{finding}");
        }
        println!();
        if enforced {
            failing.push(findings.check);
        }
    }
    if failing.is_empty() {
        let reported: Vec<&str> = all.iter().filter(|f| !f.found.is_empty()).map(|f| f.check).collect();
        match reported[..] {
            [] => println!("rocemend-house: all checks pass"),
            _ => println!("rocemend-house: nothing fails --check; report only: {}", reported.join(", ")),
        }
        return Ok(ExitCode::SUCCESS);
    }
    if mode == Mode::Check {
        println!("rocemend-house: failing: {}", failing.join(", "));
        return Ok(ExitCode::from(1));
    }
    println!("rocemend-house: --check would fail on: {}", failing.join(", "));
    Ok(ExitCode::SUCCESS)
}
