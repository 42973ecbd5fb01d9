//! Flags and verbs.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

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
    /// What the configured sensors discover on this node, and the state of each.
    Sensors {
        /// The daemon's configuration file (its `[[sensor]]` sections).
        #[arg(long, short)]
        config: PathBuf,
        /// How long to let the sensors read before reporting.
        #[arg(long, default_value_t = 2.0)]
        seconds: f64,
        #[command(subcommand)]
        command: Option<SensorsCommand>,
    },
    /// A running daemon's mode, circuit breaker, requests awaiting approval and actions in effect.
    Status {
        #[command(flatten)]
        socket: Socket,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Decisions from a running daemon's ledger, oldest first.
    Decisions {
        #[command(flatten)]
        socket: Socket,
        /// Only decisions this recent: a duration ("1h", "30m").
        #[arg(long)]
        since: Option<String>,
        /// Only decisions of this rule.
        #[arg(long)]
        rule: Option<String>,
        /// Only decisions whose target contains this text (a node, a switch).
        #[arg(long)]
        target: Option<String>,
        /// Print JSON lines (the ledger's records).
        #[arg(long)]
        json: bool,
    },
    /// The whole chain of one decision: evidence, rule version, policy verdict, outcome, undo.
    Explain {
        /// The decision id.
        id: String,
        #[command(flatten)]
        socket: Socket,
        /// Print JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Approve an action waiting for approval (the policy checks run again first).
    Approve {
        /// The decision id.
        id: String,
        #[command(flatten)]
        socket: Socket,
        #[command(flatten)]
        by: By,
    },
    /// Reject an action waiting for approval.
    Reject {
        /// The decision id.
        id: String,
        #[command(flatten)]
        socket: Socket,
        #[command(flatten)]
        by: By,
    },
    /// The circuit breaker.
    Breaker {
        #[command(subcommand)]
        command: BreakerCommand,
    },
    /// Switch a running daemon's global mode.
    Mode {
        /// enforce, dry-run or shadow.
        mode: String,
        #[command(flatten)]
        socket: Socket,
    },
    /// Ask a running daemon to reload its rules.
    Reload {
        #[command(flatten)]
        socket: Socket,
    },
    /// Simulators for tests and game days.
    Sim {
        #[command(subcommand)]
        command: SimCommand,
    },
    /// Replay the built-in recording of a PFC storm, a link flap and a symbol-error burst
    /// through the standard rules and the default playbook (dry-run).
    Demo {
        /// Replay speed relative to recorded time (0: as fast as possible).
        #[arg(long, default_value_t = 10.0)]
        speed: f64,
    },
    /// Chaos scenarios: inject faults, watch the daemon heal them, report recovery times.
    Chaos {
        #[command(subcommand)]
        command: ChaosCommand,
    },
}

/// `rocemend breaker …`.
#[derive(Debug, Subcommand)]
pub enum BreakerCommand {
    /// Reset a tripped circuit breaker: destructive actions may go out again.
    Reset {
        #[command(flatten)]
        socket: Socket,
        #[command(flatten)]
        by: By,
    },
}

/// Where the daemon's control socket is.
#[derive(Debug, Args)]
pub struct Socket {
    /// The daemon's control socket.
    #[arg(long = "socket", env = "ROCEMEND_SOCKET", default_value = crate::control::client::DEFAULT_SOCKET)]
    pub path: PathBuf,
}

/// Who is acting, for the record.
#[derive(Debug, Args)]
pub struct By {
    /// Who approves, rejects or resets (recorded in the ledger).
    #[arg(long = "by", env = "USER", default_value = "unknown")]
    pub name: String,
}

/// `rocemend sensors …`.
#[derive(Debug, Subcommand)]
pub enum SensorsCommand {
    /// Live samples: a table of the newest value of every series, redrawn each second.
    Watch {
        /// Only metrics whose name contains this text.
        #[arg(long)]
        filter: Option<String>,
    },
}

/// `rocemend sim …`.
#[derive(Debug, Subcommand)]
pub enum SimCommand {
    /// A simulated SONiC switch serving gNMI (Capabilities, Get, Set, Subscribe).
    Switch {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:57400")]
        listen: String,
        /// Number of ports (Ethernet0, Ethernet4, …).
        #[arg(long, default_value_t = 32)]
        ports: usize,
        /// How often the model's counters advance, in milliseconds.
        #[arg(long, default_value_t = 100)]
        tick_ms: u64,
    },
}

/// `rocemend chaos …`.
#[derive(Debug, Subcommand)]
pub enum ChaosCommand {
    /// Run scenarios (chaos/scenarios/*.toml); exit 1 if an expectation fails in any run.
    Run {
        /// The scenario files.
        #[arg(required = true)]
        scenarios: Vec<PathBuf>,
        /// Runs per scenario, instead of the scenario's `runs`.
        #[arg(long)]
        runs: Option<u32>,
        /// Seed of the first run, instead of the scenario's `seed` (run i uses seed + i).
        #[arg(long)]
        seed: Option<u64>,
        /// A playbook instead of the scenario's.
        #[arg(long)]
        playbook: Option<PathBuf>,
        /// Force a rule's mode, RULE=MODE (enforce, dry-run, shadow); repeatable. `RULE=dry-run`
        /// switches the rule's mitigation off.
        #[arg(long = "rule-mode", value_parser = crate::chaos::parse_rule_mode)]
        rule_modes: Vec<(String, engine::dispatch::Mode)>,
        /// Attach to a running daemon's control socket (wall-clock scenarios: a game day).
        #[arg(long)]
        daemon: Option<PathBuf>,
        /// Where to write <scenario>.json and <scenario>.html.
        #[arg(long, default_value = "chaos-reports")]
        out: PathBuf,
        /// No progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Render a JSON report (from `chaos run`) as HTML again.
    Report {
        /// The JSON report.
        json: PathBuf,
        /// The HTML file (default: beside the JSON).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}
