//! Flags and verbs.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// rocemend watches a RoCE GPU fabric, evaluates rules written in Rhai, and heals what it finds.
#[derive(Debug, Parser)]
#[command(name = "rocemend", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The verbs.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon.
    Run {
        /// The daemon's configuration file.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Check a configuration, inventory, playbook and rule directory; print every error (exit 2 if any).
    Check {
        /// A daemon configuration file (checks its inventory, playbook, rules and sensors too).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// A rule directory.
        #[arg(long)]
        rules: Option<PathBuf>,
        /// A playbook.
        #[arg(long)]
        playbook: Option<PathBuf>,
        /// An inventory.
        #[arg(long)]
        inventory: Option<PathBuf>,
    },
    /// Run each rule's test cases (`<rule>.test.toml` beside `<rule>.rhai`); exit 1 if a case fails.
    Test {
        /// The rule directory.
        #[arg(default_value = "rules")]
        dir: PathBuf,
    },
    /// Run a recording through a rule set and print what it would have done.
    Replay {
        /// The recording (JSON lines).
        recording: PathBuf,
        /// The rule directory.
        #[arg(long, default_value = "rules")]
        rules: PathBuf,
        /// A second rule directory: print how its decisions differ.
        #[arg(long)]
        diff: Option<PathBuf>,
        /// Inventory to enrich labels with (default: the example inventory).
        #[arg(long)]
        inventory: Option<PathBuf>,
        /// Print machine-readable JSON lines instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Replay the built-in recording of a PFC storm, a link flap and a symbol-error burst
    /// through the standard rules and the default playbook (dry-run).
    Demo {
        /// Replay speed relative to recorded time (0: as fast as possible).
        #[arg(long, default_value_t = 10.0)]
        speed: f64,
    },
}
