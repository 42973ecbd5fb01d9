//! `rocemend`: the command line. Parses flags, calls the crates, and maps
//! every result to an exit code in one place: 0 ok, 1 findings (a failed
//! rule test, a fault the demo did not catch), 2 usage or configuration error.

mod cli;
mod commands;
mod config;
mod control;
mod embedded;
mod metrics;
mod report;
mod timeline;
mod wiring;

use std::process::ExitCode;

use clap::Parser;

/// What a command found, beyond "it ran".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything as expected.
    Ok,
    /// The command ran and found something wrong (exit 1).
    Findings,
}

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(Exit::Ok) => ExitCode::SUCCESS,
        Ok(Exit::Findings) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
