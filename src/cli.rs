//! Flags and verbs.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgGroup, Args, Parser, Subcommand};
use engine::dispatch::Mode;
use engine::Nanos;
use ops::control::client::Address;
use ops::recorded::Files;

mod inventory;
mod recording;

pub use inventory::{InventoryCommand, RailNaming, SwitchViews};
pub use recording::RecordingCommand;

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
        /// Also reach every switch the actuators may change, now: whether it serves SONiC's
        /// databases as configured and can be written (a read-only sonic-gnmi, native write
        /// off), one line each; exit 1 if one cannot be changed.
        #[arg(long)]
        probe: bool,
    },
    /// Run each rule's test cases (`<rule>.test.toml` beside `<rule>.rhai`); exit 1 if a case fails.
    Test {
        /// The rule directory, or one rule file (`rules/pfc_storm.rhai`, tested against
        /// `rules/pfc_storm.test.toml`).
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
        /// A second rule directory: print only the proposals that differ, a summary, and
        /// exit 1 if any differs (0 if none), as `diff` does.
        #[arg(long)]
        diff: Option<PathBuf>,
        /// Inventory to enrich labels with (default: the example inventory).
        #[arg(long)]
        inventory: Option<PathBuf>,
        /// Print JSON instead of text: one object per line, or with --diff one document.
        #[arg(long)]
        json: bool,
    },
    /// Run a recording through a playbook's rules and its whole safety policy (limits,
    /// breaker, approvals, cooldowns, de-duplication, undo) on the recording's clock, with
    /// actuators that only plan: nothing is sent. One line per decision, then a summary.
    Preview {
        /// The playbook to preview (its `rules` resolve as `check` and `run` resolve them).
        #[arg(long)]
        playbook: PathBuf,
        /// The recording (JSON lines, as `replay` reads).
        recording: PathBuf,
        /// An older playbook: print only the decisions that differ, a summary, and exit 1
        /// if any differs (0 if none), as `diff` does.
        #[arg(long, value_name = "OLD")]
        diff: Option<PathBuf>,
        /// Inventory for limits in topology terms (default: the example inventory).
        #[arg(long)]
        inventory: Option<PathBuf>,
        /// A daemon config: its `[fleet]` budgets are counted as if this daemon were the fleet.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Print one JSON object per decision (or per difference), then a summary object.
        #[arg(long)]
        json: bool,
    },
    /// What the configured sensors discover on this node, and the state of each.
    Sensors {
        /// The daemon's configuration file (its `[[sensor]]` sections). Without it:
        /// /etc/rocemend/rocemend.toml if there is one, else this node's own sensors with
        /// their default settings (netlink_link, rdma_sysfs, ethtool, nvml).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// How long to let the sensors read before reporting (0 to 3600).
        #[arg(long, default_value_t = 2.0, value_parser = sensor_seconds)]
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
        #[arg(long, value_name = "DURATION", value_parser = span)]
        since: Option<Span>,
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
    /// Undo an action in effect by hand: the target is verified as we left it, restored and
    /// read back; in dry-run or shadow mode the undo is only recorded.
    Undo {
        /// The decision that put the action in effect (`rocemend status` lists them).
        id: String,
        #[command(flatten)]
        socket: Socket,
        #[command(flatten)]
        by: By,
    },
    /// End an incident by hand, as if its rule had resolved: requests waiting for approval
    /// expire and the kinds `[undo] on_resolve` lists are undone.
    Resolve {
        /// The incident id (`rocemend incidents` lists them).
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
        /// enforce, dry-run, shadow, or off (records only, like shadow).
        #[arg(value_parser = mode())]
        mode: Mode,
        #[command(flatten)]
        by: By,
        #[command(flatten)]
        socket: Socket,
    },
    /// Ask a running daemon to reload its rules, and say what changed or why it refused.
    Reload {
        /// Accept a new rule set that is empty or less than half the running one.
        #[arg(long)]
        allow_shrink: bool,
        #[command(flatten)]
        socket: Socket,
    },
    /// Incidents: one per firing episode of a rule on a subject, with its decisions and state.
    Incidents {
        #[command(flatten)]
        socket: Socket,
        /// Only incidents this recent: a duration ("1h", "30m").
        #[arg(long, value_name = "DURATION", value_parser = span)]
        since: Option<Span>,
        /// Print JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// The rules a running daemon has loaded, with their health and last error.
    Rules {
        #[command(flatten)]
        socket: Socket,
        /// Print JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Rule instances that are not idle (pending, firing, resolved in cooldown).
    Instances {
        #[command(flatten)]
        socket: Socket,
        /// Only instances of this rule.
        #[arg(long)]
        rule: Option<String>,
        /// Print JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Silence a rule, a target, or a rule on a target for a while: its proposals are
    /// recorded as suppressed and nothing is sent. To silence everything, use `rocemend mode shadow`.
    #[command(group(ArgGroup::new("scope").args(["rule", "target"]).required(true).multiple(true)))]
    Silence {
        #[command(flatten)]
        socket: Socket,
        /// Only this rule (one the daemon has loaded).
        #[arg(long)]
        rule: Option<String>,
        /// Only actions whose target contains this text (a node, a switch, a port).
        #[arg(long)]
        target: Option<String>,
        /// How long: "30m", "2h".
        #[arg(long = "for", value_name = "DURATION", value_parser = positive_span)]
        duration: Span,
        /// Why, for the record.
        #[arg(long, default_value = "")]
        reason: String,
        #[command(flatten)]
        by: By,
        /// Print the silence as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Lift a silence before it ends.
    Unsilence {
        /// The silence id (`rocemend status` lists them).
        id: String,
        #[command(flatten)]
        socket: Socket,
    },
    /// Live events of a running daemon: transitions, decisions, notes, reloads; until Ctrl-C.
    Watch {
        #[command(flatten)]
        socket: Socket,
        /// Only these kinds (repeatable); "lagged" (events this client missed) always comes.
        #[arg(long = "kind", value_name = "KIND", value_parser = PossibleValuesParser::new(ops::control::events::KINDS))]
        kinds: Vec<String>,
        /// Print JSON lines.
        #[arg(long)]
        json: bool,
    },
    /// Job signals, for job launchers and training scripts.
    Job {
        #[command(subcommand)]
        command: JobCommand,
    },
    /// Print a shell completion script: `rocemend completions bash > /etc/bash_completion.d/rocemend`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// Fleet coordination in etcd: shared budgets, the fleet breaker, aggregator leaders.
    Fleet {
        #[command(subcommand)]
        command: FleetCommand,
    },
    /// Simulators for tests and game days.
    Sim {
        #[command(subcommand)]
        command: SimCommand,
    },
    /// Replay the built-in recording of a PFC storm, a link flap and a symbol-error burst
    /// through the standard rules and playbooks/demo.toml, against one simulated SONiC
    /// switch per leaf: switch actions are sent over gNMI and read back, the rest is dry-run.
    Demo {
        /// Replay speed relative to recorded time (0: as fast as possible).
        #[arg(long, default_value_t = 10.0, value_parser = measure)]
        speed: f64,
    },
    /// One HTML page with GPU, NCCL, NIC, switch and job signals, rule states, decisions and
    /// actions on one time axis, from what the daemon recorded.
    Timeline(TimelineArgs),
    /// The daemon's recording: export it as JSON lines, import JSON lines, say what it holds.
    Recording {
        #[command(subcommand)]
        command: RecordingCommand,
    },
    /// Why a job is slow, in fabric terms: its regression window, the rails, GPUs, leaf ports and
    /// planes on its path ranked by how much their signals moved, and what rocemend decided.
    Why(WhyArgs),
    /// Chaos scenarios: inject faults, watch the daemon heal them, report recovery times.
    Chaos {
        #[command(subcommand)]
        command: ChaosCommand,
    },
    /// The inventory read from the cluster: discover a node, merge nodes with the switches'
    /// LLDP tables, check the cabling.
    Inventory {
        #[command(subcommand)]
        command: InventoryCommand,
    },
}

/// Every series of the TSDB: `--match`'s default.
pub const DEFAULT_MATCH: &str = "{__name__=~\".+\"}";

/// `rocemend timeline`.
#[derive(Debug, Args)]
pub struct TimelineArgs {
    /// The daemon's configuration file: its recording (`record`), state directory, inventory and rules.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Start: RFC 3339 (2026-12-03T03:00:00Z), "now", or ago ("-30m"). Optional with --incident.
    #[arg(long, allow_hyphen_values = true)]
    pub from: Option<String>,
    /// End, in the same forms (default: now, or the incident's end).
    #[arg(long, allow_hyphen_values = true)]
    pub to: Option<String>,
    /// Only this job's signals and nodes (as its `job push` named them).
    #[arg(long, conflicts_with_all = ["node", "incident"])]
    pub job: Option<String>,
    /// Only this node's series and the switch ports facing its NICs.
    #[arg(long, conflicts_with = "incident")]
    pub node: Option<String>,
    /// One incident (`rocemend incidents`): its time span, padded, and its subject.
    #[arg(long)]
    pub incident: Option<String>,
    /// The recording, instead of the config's `record`.
    #[arg(long)]
    pub recording: Option<PathBuf>,
    /// Read the signals from this Prometheus-compatible TSDB (its base URL, where `[remote_write]`
    /// sent them) instead of the recording: for spans the recording no longer holds.
    #[arg(long, conflicts_with = "recording")]
    pub prometheus: Option<String>,
    /// The series to read from --prometheus: a PromQL selector (narrow it on a shared TSDB).
    #[arg(long = "match", default_value = DEFAULT_MATCH, requires = "prometheus")]
    pub selector: String,
    /// The state directory (a copy of it, while the daemon runs), instead of the config's `state_dir`.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// The rule directory to replay for rule states, instead of the config's.
    #[arg(long)]
    pub rules: Option<PathBuf>,
    /// The inventory, instead of the config's (switch port → node).
    #[arg(long)]
    pub inventory: Option<PathBuf>,
    /// The HTML file to write.
    #[arg(long, default_value = "timeline.html")]
    pub out: PathBuf,
}

impl TimelineArgs {
    /// What the page is asked to show.
    pub fn request(&self) -> ops::timeline::Request {
        ops::timeline::Request {
            files: Files {
                config: self.config.clone(),
                recording: self.recording.clone(),
                state: self.state.clone(),
                inventory: self.inventory.clone(),
            },
            from: self.from.clone(),
            to: self.to.clone(),
            job: self.job.clone(),
            node: self.node.clone(),
            incident: self.incident.clone(),
            rules: self.rules.clone(),
        }
    }
}

/// `rocemend why`.
#[derive(Debug, Args)]
pub struct WhyArgs {
    /// The job (as `job push` named it).
    #[arg(long)]
    pub job: String,
    /// Start of the regression: RFC 3339, "now" or ago ("-30m"); without it, found in the step time.
    #[arg(long, allow_hyphen_values = true, requires = "to")]
    pub from: Option<String>,
    /// End of the regression, in the same forms (the baseline is the equal span before --from).
    #[arg(long, allow_hyphen_values = true, requires = "from")]
    pub to: Option<String>,
    /// Relative rise of the step time that counts as a regression.
    #[arg(long, default_value_t = ops::why::window::DEFAULT_THRESHOLD)]
    pub threshold: f64,
    /// Rank metrics `why` has no row for too (docs/operations.md, "What why ranks"): with no noise
    /// floor of their own, any change of theirs looks significant.
    #[arg(long)]
    pub all_metrics: bool,
    /// One JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// The daemon's configuration file: its recording (`record`), state directory and inventory.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// The recording, instead of the config's `record`.
    #[arg(long)]
    pub recording: Option<PathBuf>,
    /// Read the signals from this Prometheus-compatible TSDB (its base URL, where `[remote_write]`
    /// sent them) instead of the recording: for spans the recording no longer holds.
    #[arg(long, conflicts_with = "recording")]
    pub prometheus: Option<String>,
    /// The series to read from --prometheus: a PromQL selector (narrow it on a shared TSDB).
    #[arg(long = "match", default_value = DEFAULT_MATCH, requires = "prometheus")]
    pub selector: String,
    /// The state directory (decisions), instead of the config's `state_dir`.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// The inventory, instead of the config's.
    #[arg(long)]
    pub inventory: Option<PathBuf>,
}

impl WhyArgs {
    /// What the analysis is asked.
    pub fn request(&self) -> ops::why::Request {
        ops::why::Request {
            job: self.job.clone(),
            from: self.from.clone(),
            to: self.to.clone(),
            threshold: self.threshold,
            all_metrics: self.all_metrics,
            files: Files {
                config: self.config.clone(),
                recording: self.recording.clone(),
                state: self.state.clone(),
                inventory: self.inventory.clone(),
            },
        }
    }
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

/// `rocemend job …`.
#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Report a job's step time, NCCL bandwidth and nodes; they become samples the rules see.
    #[command(group(ArgGroup::new("what").args(["nodes", "step_time", "busbw", "algbw"]).required(true).multiple(true)))]
    Push {
        #[command(flatten)]
        socket: Socket,
        /// The job id (the scheduler's, or a run name).
        #[arg(long, value_parser = job_name)]
        job: String,
        /// A node the job runs on (repeat, or separate with commas).
        #[arg(long = "node", value_delimiter = ',', value_parser = node_name)]
        nodes: Vec<String>,
        /// Wall time of the last training step, in seconds.
        #[arg(long, value_parser = measure)]
        step_time: Option<f64>,
        /// NCCL bus bandwidth, GB/s.
        #[arg(long, value_parser = measure)]
        busbw: Option<f64>,
        /// NCCL algorithm bandwidth, GB/s.
        #[arg(long, value_parser = measure)]
        algbw: Option<f64>,
    },
}

/// Where the daemon's control API is: its unix socket, or its TCP listener
/// (TLS and a bearer token).
#[derive(Debug, Args)]
pub struct Socket {
    /// The daemon's control socket.
    #[arg(long = "socket", env = "ROCEMEND_SOCKET", default_value = ops::control::client::DEFAULT_SOCKET)]
    pub path: PathBuf,
    /// The daemon's TCP control address (host:port) instead of the socket; needs --ca.
    #[arg(long, env = "ROCEMEND_ADDR", requires = "ca")]
    pub addr: Option<String>,
    /// CA certificate (PEM) that signed the daemon's TLS certificate; with --addr.
    #[arg(long, env = "ROCEMEND_CA", requires = "addr")]
    pub ca: Option<PathBuf>,
    /// File holding the bearer token; with --addr.
    #[arg(long, env = "ROCEMEND_TOKEN_FILE", requires = "addr")]
    pub token_file: Option<PathBuf>,
}

impl Socket {
    /// Where the client connects.
    pub fn address(&self) -> anyhow::Result<Address> {
        let Some(addr) = &self.addr else { return Ok(Address::Unix(self.path.clone())) };
        let ca =
            self.ca.clone().ok_or_else(|| anyhow::anyhow!("--addr needs --ca: the daemon's TCP listener is TLS"))?;
        let token = match &self.token_file {
            Some(p) => Some(ops::control::auth::read_token(p)?),
            None => None,
        };
        Ok(Address::Tcp { addr: addr.clone(), ca, token })
    }
}

/// Who is acting, for the record.
#[derive(Debug, Args)]
pub struct By {
    /// Who approves, rejects, undoes, resolves, resets or sets the mode (recorded in the ledger).
    #[arg(long = "by", env = "USER", default_value = "unknown")]
    pub name: String,
}

/// Where `rocemend fleet` finds etcd.
#[derive(Debug, Args)]
pub struct FleetSource {
    /// etcd client URL (repeat for a cluster); overrides the config's `[fleet] etcd`.
    #[arg(long = "etcd")]
    pub etcd: Vec<String>,
    /// A daemon configuration file with a `[fleet]` table (its budgets and prefix).
    #[arg(long, short)]
    pub config: Option<PathBuf>,
}

/// `rocemend fleet …`.
#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Budget in use, who holds tokens, the fleet breaker, live daemons and aggregator leaders.
    Status {
        #[command(flatten)]
        source: FleetSource,
        /// Elections to show the leader of.
        #[arg(long = "election", default_value = "switch-aggregator")]
        elections: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Reset the fleet breaker for every daemon at once.
    ResetBreaker {
        #[command(flatten)]
        source: FleetSource,
        #[command(flatten)]
        by: By,
    },
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
        /// A daemon config: run against its rules, playbook and inventory (the simulated fabric is
        /// built from that inventory), as `rocemend run --config` would use them.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// A rule directory instead of the scenario's (or the config's, or the playbook's).
        #[arg(long)]
        rules: Option<PathBuf>,
        /// A playbook instead of the scenario's (or the config's).
        #[arg(long)]
        playbook: Option<PathBuf>,
        /// Force a rule's mode, RULE=MODE (enforce, dry-run, shadow, off); repeatable. `RULE=dry-run`
        /// switches the rule's mitigation off. RULE must be a rule the scenario runs.
        #[arg(long = "rule-mode", value_parser = chaos::run::parse_rule_mode)]
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
    /// A fleet game day (chaos/scenarios/fleet/*.toml): this executable as a daemon per node and a switch
    /// aggregator, a real etcd cluster, the simulated fabric; exit 1 if an expectation fails. Needs the etcd
    /// feature and etcd, else it says why it is skipped.
    Fleet {
        /// The game file.
        scenario: PathBuf,
        /// Where to write <name>.json and <name>.html.
        #[arg(long, default_value = "chaos-reports")]
        out: PathBuf,
        /// No progress lines.
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

/// A duration as given on the command line, checked: its text (sent to the
/// daemon as typed, so its messages quote the user) and its length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Span {
    /// As typed: "30m".
    pub text: String,
    /// In nanoseconds.
    pub ns: Nanos,
}

/// Parses `--since`: any duration `engine::time::parse_duration` takes.
fn span(text: &str) -> Result<Span, String> {
    let ns = engine::time::parse_duration(text).map_err(|e| e.to_string())?;
    Ok(Span { text: text.to_string(), ns })
}

/// Parses `silence --for`: a duration above 0 (the daemon refuses 0 too;
/// here it is refused before connecting, as a usage error).
fn positive_span(text: &str) -> Result<Span, String> {
    let span = span(text)?;
    if span.ns <= 0 {
        return Err(format!("{text:?}: a silence must last longer than 0"));
    }
    Ok(span)
}

/// The modes `rocemend mode` takes, listed by clap when a word is wrong.
fn mode() -> impl TypedValueParser<Value = Mode> {
    PossibleValuesParser::new(["enforce", "dry-run", "shadow", "off"]).try_map(|word| word.parse::<Mode>())
}

/// `job push --job`: the daemon's own rule for names, checked before connecting.
fn job_name(text: &str) -> Result<String, String> {
    sensors::job::check_name("job", text).map_err(|e| e.to_string())?;
    Ok(text.to_string())
}

/// `job push --node`.
fn node_name(text: &str) -> Result<String, String> {
    sensors::job::check_name("node", text).map_err(|e| e.to_string())?;
    Ok(text.to_string())
}

/// A step time or a bandwidth: a finite number >= 0, as the daemon requires.
fn measure(text: &str) -> Result<f64, String> {
    let v: f64 = text.parse().map_err(|_| format!("{text:?} is not a number"))?;
    if !v.is_finite() || v < 0.0 {
        return Err(format!("{text}: must be a finite number >= 0"));
    }
    Ok(v)
}

/// `sensors --seconds`: a finite wait of at most an hour (a longer look is
/// `sensors watch`), never a negative one.
fn sensor_seconds(text: &str) -> Result<f64, String> {
    let v = measure(text)?;
    if v > 3600.0 {
        return Err(format!("{text}: at most 3600 (an hour); `rocemend sensors watch` looks for longer"));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_flags_are_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn durations_and_measures_are_checked_before_connecting() {
        assert_eq!(span("30m").unwrap().ns, 30 * 60 * 1_000_000_000);
        assert!(span("5x").unwrap_err().contains("unknown unit"), "{:?}", span("5x"));
        assert!(positive_span("0").is_err());
        assert!(measure("-1").is_err() && measure("inf").is_err() && measure("x").is_err());
        assert_eq!(measure("2.5"), Ok(2.5));
        assert!(job_name("has space").unwrap_err().contains("' '"));
    }
}
