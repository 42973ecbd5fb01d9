//! One module per verb, or per family of verbs: each reads its flags,
//! calls the crates and prints what they return.

mod chaos;
mod chaos_fleet;
mod check;
mod control;
mod demo;
mod fleet;
mod history;
mod inventory;
mod preview;
mod recording;
mod replay;
mod run;
mod sensors;
mod sim;
mod test;
mod timeline;
mod why;

use ops::control::client::ClientError;

use crate::cli::{BreakerCommand, ChaosCommand, Cli, Command, FleetCommand, JobCommand, SensorsCommand, SimCommand};

/// What a command found, beyond "it ran".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything as expected.
    Ok,
    /// The command ran and found something wrong (exit 1).
    Findings,
}

/// Runs the verb.
pub fn run(cli: Cli) -> anyhow::Result<Exit> {
    match cli.command {
        Command::Run { config } => run::run(&config),
        Command::Check { config, rules, playbook, inventory, probe } => {
            let exit = check::check(config.as_deref(), rules.as_deref(), playbook.as_deref(), inventory.as_deref())?;
            if probe {
                check::probe(config.as_deref())
            } else {
                Ok(exit)
            }
        }
        Command::Test { dir } => test::test(&dir),
        Command::Replay { recording, rules, diff, inventory, json } => {
            replay::replay(&recording, &rules, diff.as_deref(), inventory.as_deref(), json)
        }
        Command::Preview { playbook, recording, diff, inventory, config, json } => {
            preview::preview(&ops::preview::Request {
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
        Command::Timeline(args) => timeline::run(&args),
        Command::Recording { command } => recording::run(command),
        Command::Why(args) => why::run(&args),
        Command::Inventory { command } => inventory::run(command),
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

/// The verbs that talk to a running daemon. Their failures (no daemon, an
/// unknown id, a refused reload) are failures of the request, not of its
/// spelling: exit 1, leaving 2 to usage errors, which clap finds before
/// connecting, or the daemon finds and says so ([`ClientError::Refused`]:
/// a request the daemon refused as wrongly put, INVALID_ARGUMENT: an
/// unknown rule, a bad name, found only then because only the daemon knows
/// what it has loaded).
fn talk(verb: Command) -> anyhow::Result<Exit> {
    match talk_inner(verb) {
        Ok(outcome) => Ok(outcome),
        Err(error) if matches!(error.downcast_ref::<ClientError>(), Some(ClientError::Refused(_))) => Err(error),
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
        Command::Status { socket, json } => control::status(&socket.address()?, json),
        Command::Decisions { socket, since: s, rule, target, json } => {
            control::decisions(&socket.address()?, since(s), rule, target, json)
        }
        Command::Explain { id, socket, json } => control::explain(&socket.address()?, &id, json),
        Command::Approve { id, socket, by } => control::approve(&socket.address()?, &id, &by.name, true),
        Command::Reject { id, socket, by } => control::approve(&socket.address()?, &id, &by.name, false),
        Command::Undo { id, socket, by } => control::undo(&socket.address()?, &id, &by.name),
        Command::Resolve { id, socket, by } => control::resolve(&socket.address()?, &id, &by.name),
        Command::Breaker { command: BreakerCommand::Reset { socket, by } } => {
            control::breaker_reset(&socket.address()?, &by.name)
        }
        Command::Mode { mode, by, socket } => control::set_mode(&socket.address()?, mode, &by.name),
        Command::Reload { allow_shrink, socket } => control::reload(&socket.address()?, allow_shrink),
        Command::Incidents { socket, since: s, json } => control::incidents(&socket.address()?, since(s), json),
        Command::Rules { socket, json } => control::rules(&socket.address()?, json),
        Command::Instances { socket, rule, json } => control::instances(&socket.address()?, rule, json),
        Command::Silence { socket, rule, target, duration, reason, by, json } => {
            let request = ops::control::pb::SilenceRequest {
                rule: rule.unwrap_or_default(),
                target: target.unwrap_or_default(),
                duration: duration.text,
                by: by.name,
                reason,
            };
            control::silence(&socket.address()?, request, json)
        }
        Command::Unsilence { id, socket } => control::unsilence(&socket.address()?, &id),
        Command::Watch { socket, kinds, json } => control::watch(&socket.address()?, kinds, json),
        Command::Job { command: JobCommand::Push { socket, job, nodes, step_time, busbw, algbw } } => {
            let request = ops::control::pb::PushJobRequest {
                job,
                nodes,
                at_ns: 0,
                step_time_seconds: step_time,
                busbw_gbps: busbw,
                algbw_gbps: algbw,
            };
            control::job_push(&socket.address()?, request)
        }
        other => anyhow::bail!("internal: {other:?} is not a control verb"),
    }
}

/// The runtime of the verbs that run async parts here: the control
/// client's ([`ops::control::client::runtime`]).
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(ops::control::client::runtime()?)
}
