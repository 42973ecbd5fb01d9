//! One module per verb.

mod chaos;
mod chaos_fleet;
mod check;
mod control;
mod demo;
mod explain;
mod fleet;
mod job;
mod ops;
mod preview;
mod replay;
mod run;
mod sensors;
mod silence;
mod sim;
mod status;
mod test;
mod undo;
pub(crate) mod why;

use crate::cli::{BreakerCommand, ChaosCommand, Cli, Command, FleetCommand, JobCommand, SensorsCommand, SimCommand};
use crate::Exit;

/// Runs the verb.
pub fn run(cli: Cli) -> anyhow::Result<Exit> {
    match cli.command {
        Command::Run { config } => run::run(&config),
        Command::Check { config, rules, playbook, inventory } => {
            check::check(config.as_deref(), rules.as_deref(), playbook.as_deref(), inventory.as_deref())
        }
        Command::Test { dir } => test::test(&dir),
        Command::Replay { recording, rules, diff, inventory, json } => {
            replay::replay(&recording, &rules, diff.as_deref(), inventory.as_deref(), json)
        }
        Command::Preview { playbook, recording, diff, inventory, config, json } => {
            preview::preview(&preview::PreviewArgs {
                playbook: &playbook,
                recording: &recording,
                diff: diff.as_deref(),
                inventory: inventory.as_deref(),
                config: config.as_deref(),
                json,
            })
        }
        Command::Demo { speed } => demo::demo(speed),
        Command::Sensors { config, seconds, command: None } => sensors::list(config.as_deref(), seconds),
        Command::Sensors { config, command: Some(SensorsCommand::Watch { filter }), .. } => {
            sensors::watch(config.as_deref(), filter)
        }
        Command::Sim { command: SimCommand::Switch { listen, ports, tick_ms } } => sim::switch(&listen, ports, tick_ms),
        Command::Fleet { command: FleetCommand::Status { source, elections, json } } => {
            fleet::status(&source, &elections, json)
        }
        Command::Fleet { command: FleetCommand::ResetBreaker { source, by } } => {
            fleet::reset_breaker(&source, &by.name)
        }
        Command::Chaos {
            command:
                ChaosCommand::Run { scenarios, runs, seed, config, rules, playbook, rule_modes, daemon, out, quiet },
        } => chaos::run(
            &scenarios,
            chaos::RunArgs { runs, seed, config, rules, playbook, rule_modes, daemon, quiet },
            &out,
        ),
        Command::Chaos { command: ChaosCommand::Report { json, out } } => chaos::report(&json, out.as_deref()),
        Command::Chaos { command: ChaosCommand::Fleet { scenario, out, quiet } } => {
            chaos_fleet::run(&scenario, &out, quiet)
        }
        Command::Timeline(args) => crate::timeline::run(&args),
        Command::Why(args) => why::run(&args),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "rocemend", &mut std::io::stdout());
            Ok(Exit::Ok)
        }
        // Listed, not `_`: a new verb must be routed here, or the build says so.
        verb @ (Command::Status { .. }
        | Command::Decisions { .. }
        | Command::Explain { .. }
        | Command::Approve { .. }
        | Command::Reject { .. }
        | Command::Undo { .. }
        | Command::Resolve { .. }
        | Command::Breaker { .. }
        | Command::Mode { .. }
        | Command::Reload { .. }
        | Command::Incidents { .. }
        | Command::Rules { .. }
        | Command::Instances { .. }
        | Command::Silence { .. }
        | Command::Unsilence { .. }
        | Command::Watch { .. }
        | Command::Job { .. }) => talk(verb),
    }
}

/// A request the daemon refused as wrongly put (gRPC INVALID_ARGUMENT: an
/// unknown rule, a bad name): a usage error like those clap finds, exit 2,
/// only found later because only the daemon knows what it has loaded.
#[derive(Debug)]
pub(crate) struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}

/// The verbs that talk to a running daemon. Their failures (no daemon, an
/// unknown id, a refused reload) are failures of the request, not of its
/// spelling: exit 1, leaving 2 to usage errors, which clap finds before
/// connecting, or the daemon finds and says so ([`Refused`]).
fn talk(verb: Command) -> anyhow::Result<Exit> {
    match talk_inner(verb) {
        Ok(outcome) => Ok(outcome),
        Err(error) if error.downcast_ref::<Refused>().is_some() => Err(error),
        Err(error) => {
            eprintln!("error: {error:#}");
            Ok(Exit::Findings)
        }
    }
}

/// `--since`: the time that long ago.
fn since(span: Option<crate::cli::Span>) -> Option<i64> {
    span.map(|s| engine::time::wall_clock_now() - s.ns)
}

fn talk_inner(verb: Command) -> anyhow::Result<Exit> {
    match verb {
        Command::Status { socket, json } => status::status(&socket.target()?, json),
        Command::Decisions { socket, since: s, rule, target, json } => {
            control::decisions(&socket.target()?, since(s), rule, target, json)
        }
        Command::Explain { id, socket, json } => explain::explain(&socket.target()?, &id, json),
        Command::Approve { id, socket, by } => control::approve(&socket.target()?, &id, &by.name, true),
        Command::Reject { id, socket, by } => control::approve(&socket.target()?, &id, &by.name, false),
        Command::Undo { id, socket, by } => undo::undo(&socket.target()?, &id, &by.name),
        Command::Resolve { id, socket, by } => undo::resolve(&socket.target()?, &id, &by.name),
        Command::Breaker { command: BreakerCommand::Reset { socket, by } } => {
            control::breaker_reset(&socket.target()?, &by.name)
        }
        Command::Mode { mode, by, socket } => control::set_mode(&socket.target()?, mode, &by.name),
        Command::Reload { allow_shrink, socket } => control::reload(&socket.target()?, allow_shrink),
        Command::Incidents { socket, since: s, json } => ops::incidents(&socket.target()?, since(s), json),
        Command::Rules { socket, json } => ops::rules(&socket.target()?, json),
        Command::Instances { socket, rule, json } => ops::instances(&socket.target()?, rule, json),
        Command::Silence { socket, rule, target, duration, reason, by, json } => {
            let args = silence::SilenceArgs { rule, target, duration, reason, by: by.name };
            silence::silence(&socket.target()?, args, json)
        }
        Command::Unsilence { id, socket } => silence::unsilence(&socket.target()?, &id),
        Command::Watch { socket, kinds, json } => ops::watch(&socket.target()?, kinds, json),
        Command::Job { command: JobCommand::Push { socket, job, nodes, step_time, busbw, algbw } } => {
            job::job_push(&socket.target()?, job::JobArgs { job, nodes, step_time, busbw, algbw })
        }
        other => anyhow::bail!("internal: {other:?} is not a control verb"),
    }
}

/// A tokio runtime for the verbs that need one. Two workers: the machine
/// this daemon targets spends its cores on training, not on us.
///
/// Its threads block SIGPIPE. `main` gives the CLI verbs SIGPIPE's default
/// disposition so that a closed stdout ends them quietly; a daemon that
/// hangs up on a request (it refuses another user's connection) must not
/// kill them the same way before they can say so. A write on a socket raises
/// SIGPIPE in the thread that wrote, and the socket I/O runs on these
/// threads, so there it stays pending and the write fails with EPIPE.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .on_thread_start(block_sigpipe)
        .build()?)
}

fn block_sigpipe() {
    // SAFETY: the set is initialised by sigemptyset before use, and
    // pthread_sigmask only changes the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}
