//! `rocemend`: the command line. Parses flags, calls the crates, and maps
//! every result to an exit code in one place: 0 ok, 1 findings (a failed
//! rule test, a fault the demo did not catch), 2 usage or configuration error.

mod cli;
mod commands;
mod embedded;
mod wiring;

use std::process::ExitCode;

use clap::Parser;
use commands::Exit;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // A closed pipe (`rocemend decisions | head -1`) ends a command quietly,
    // as it ends `ls` or `cat`, instead of a panic on the next write. Not the
    // verbs that serve sockets (the daemon, the simulated switches of `sim`,
    // `demo` and `chaos`): a client that hangs up must cost them one failed
    // write, not their life (Rust ignores SIGPIPE, so the write fails).
    let serves = matches!(
        cli.command,
        cli::Command::Run { .. } | cli::Command::Sim { .. } | cli::Command::Demo { .. } | cli::Command::Chaos { .. }
    );
    if !serves {
        // SAFETY: restoring a signal's default disposition at start, before
        // any thread exists; no handler runs Rust code.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    match commands::run(cli) {
        Ok(Exit::Ok) => ExitCode::SUCCESS,
        Ok(Exit::Findings) => ExitCode::from(1),
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
