//! One module per verb.

mod check;
mod control;
mod demo;
mod fleet;
mod replay;
mod run;
mod sensors;
mod sim;
mod test;

use crate::cli::{BreakerCommand, Cli, Command, FleetCommand, SensorsCommand, SimCommand};
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
        Command::Fleet { command: FleetCommand::Status { source, elections, json } } => {
            fleet::status(&source, &elections, json)
        }
        Command::Fleet { command: FleetCommand::ResetBreaker { source, by } } => {
            fleet::reset_breaker(&source, &by.name)
        }
    }
}

/// A tokio runtime for the verbs that need one. Two workers: the machine
/// this daemon targets spends its cores on training, not on us.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?)
}
