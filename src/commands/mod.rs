//! One module per verb.

mod check;
mod control;
mod demo;
mod replay;
mod run;
mod sensors;
mod sim;
mod test;

use crate::cli::{BreakerCommand, ChaosCommand, Cli, Command, SensorsCommand, SimCommand};
use crate::Outcome;

/// Runs the verb.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    match cli.command {
        Command::Run { config } => run::run(&config),
        Command::Check { config, rules, playbook, inventory } => {
            check::check(config.as_deref(), rules.as_deref(), playbook.as_deref(), inventory.as_deref())
        }
        Command::Test { dir } => test::test(&dir),
        Command::Replay { recording, rules, diff, inventory, json } => {
            replay::replay(&recording, &rules, diff.as_deref(), inventory.as_deref(), json)
        }
        Command::Demo { speed } => demo::demo(speed),
        Command::Sensors { config, seconds, command: None } => sensors::list(&config, seconds),
        Command::Sensors { config, command: Some(SensorsCommand::Watch { filter }), .. } => {
            sensors::watch(&config, filter)
        }
        Command::Sim { command: SimCommand::Switch { listen, ports, tick_ms } } => sim::switch(&listen, ports, tick_ms),
        Command::Status { socket, json } => control::status(&socket.path, json),
        Command::Decisions { socket, since, rule, target, json } => {
            let since = match since {
                Some(text) => Some(engine::time::wall_clock_now() - engine::time::parse_duration(&text)?),
                None => None,
            };
            control::decisions(&socket.path, since, rule, target, json)
        }
        Command::Explain { id, socket, json } => control::explain(&socket.path, &id, json),
        Command::Approve { id, socket, by } => control::approve(&socket.path, &id, &by.name, true),
        Command::Reject { id, socket, by } => control::approve(&socket.path, &id, &by.name, false),
        Command::Breaker { command: BreakerCommand::Reset { socket, by } } => {
            control::breaker_reset(&socket.path, &by.name)
        }
        Command::Mode { mode, socket } => control::set_mode(&socket.path, &mode),
        Command::Reload { socket } => control::reload(&socket.path),
        Command::Chaos {
            command: ChaosCommand::Run { scenarios, runs, seed, playbook, rule_modes, daemon, out, quiet },
        } => {
            let options = crate::chaos::Options { runs, seed, playbook, rule_modes, daemon, progress: !quiet };
            crate::chaos::run_command(&scenarios, &options, &out)
        }
        Command::Chaos { command: ChaosCommand::Report { json, out } } => {
            crate::chaos::report_command(&json, out.as_deref())
        }
    }
}

/// A tokio runtime for the verbs that need one. Two workers: the machine
/// this daemon targets spends its cores on training, not on us.
pub(crate) fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?)
}
