//! One module per verb.

mod check;
mod demo;
mod replay;
mod run;
mod test;

use crate::cli::{Cli, Command};
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
    }
}

/// A tokio runtime for the verbs that need one. Two workers: the machine
/// this daemon targets spends its cores on training, not on us.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?)
}
