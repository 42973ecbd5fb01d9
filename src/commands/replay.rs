//! `rocemend replay`: backtest a rule set on a recording, or diff two.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use engine::backtest::{self, Backtest, DiffLine};
use engine::rule::{self, Helpers};
use engine::{EngineEvent, Topology};

use crate::report::{offset, short};
use crate::Exit;

fn backtest_one(recording: &Path, rules_dir: &Path, topology: Option<Arc<Topology>>) -> anyhow::Result<Backtest> {
    let rules = rule::load_dir(rules_dir, Helpers::new(None, topology.clone()))?;
    let file = File::open(recording).with_context(|| format!("opening {}", recording.display()))?;
    Ok(backtest::run(BufReader::new(file), &recording.display().to_string(), rules, topology)?)
}

pub fn replay(
    recording: &Path,
    rules_dir: &Path,
    diff: Option<&Path>,
    inventory: Option<&Path>,
    json: bool,
) -> anyhow::Result<Exit> {
    let topology = match inventory {
        Some(p) => Arc::new(Topology::load(p)?),
        None => Arc::new(Topology::parse(engine::topology::EXAMPLE_INVENTORY, "example inventory")?),
    };
    let a = backtest_one(recording, rules_dir, Some(topology.clone()))?;
    let t0 = a.span.0;
    match diff {
        None => {
            for event in &a.events {
                print_event(event, t0, json);
            }
            if !json {
                println!(
                    "{} samples over {:.1}s; {} proposals",
                    a.samples,
                    (a.span.1 - a.span.0) as f64 / 1e9,
                    a.proposals().count()
                );
            }
        }
        Some(other) => {
            let b = backtest_one(recording, other, Some(topology))?;
            println!("A = {}   B = {}", rules_dir.display(), other.display());
            for line in backtest::diff(&a, &b) {
                match line {
                    DiffLine::Both { key, a, b } if a == b => println!("  both  {}  {key}", offset(a, t0)),
                    DiffLine::Both { key, a, b } => {
                        println!(
                            "  both  A {} B {} (B {:+.3}s)  {key}",
                            offset(a, t0),
                            offset(b, t0),
                            (b - a) as f64 / 1e9
                        )
                    }
                    DiffLine::OnlyA { key, at } => println!("  A     {}  {key}", offset(at, t0)),
                    DiffLine::OnlyB { key, at } => println!("  B     {}  {key}", offset(at, t0)),
                }
            }
        }
    }
    Ok(Exit::Ok)
}

fn print_event(event: &EngineEvent, t0: i64, json: bool) {
    match event {
        EngineEvent::Transition { rule, subject, from, to, at, values } => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"event": "transition", "rule": rule, "subject": subject, "from": from, "to": to, "at": at, "values": values})
                );
            } else {
                let values: Vec<String> = values.iter().map(|(k, v)| format!("{k}={v:.4}")).collect();
                println!(
                    "{}  {:<9} {rule} {}  {}",
                    offset(*at, t0),
                    format!("{}→{}", from.as_str(), to.as_str()),
                    short(subject),
                    values.join(" ")
                );
            }
        }
        EngineEvent::Proposal(p) => {
            if json {
                println!("{}", serde_json::json!({"event": "proposal", "proposal": p}));
            } else {
                println!("{}  would     {}", offset(p.decided_at, t0), p.action);
            }
        }
        EngineEvent::SensorStale { rule, subject, at, .. } => {
            if json {
                println!(
                    "{}",
                    serde_json::json!({"event": "sensor-stale", "rule": rule, "subject": subject, "at": at})
                );
            } else {
                println!("{}  stale     {rule} {}", offset(*at, t0), short(subject));
            }
        }
        other => {
            if json {
                println!("{}", serde_json::json!({"event": format!("{other:?}")}));
            } else {
                println!("           {other:?}");
            }
        }
    }
}
