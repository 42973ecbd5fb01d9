//! `rocemend demo`: the daemon replaying a built-in recording of three
//! faults against simulated switches, printing what it detects, what it
//! does, and how long after each fault's first sample it decided.
//!
//! It starts one simulated SONiC switch per leaf of the example inventory
//! ([`super::demo_switches`]) and runs `playbooks/demo.toml`: the switch
//! actuators (pfcwd, ecn, rail's switch side) send real gNMI Sets to those
//! switches, and each is read back over gNMI; host and scheduler actions
//! stay dry-run.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use engine::dispatch::{Decision, Verdict};
use engine::ledger::{Ledger, Retention};
use engine::playbook::Playbook;
use engine::recording::{Event, Reader};
use engine::rule::{self, Helpers};
use engine::runtime::{self, ClockMode, Daemon, DaemonEvent, SensorSlot};
use engine::{EngineEvent, Evaluator, Labels, Nanos, Note, SeriesTable, Store, Topology};
use tokio::sync::{mpsc, watch};

use super::demo_switches::{DemoFabric, ReadBack};
use crate::embedded;

use crate::report::{ms, offset, short, verdict};
use crate::{wiring, Outcome};

pub fn demo(speed: f64) -> anyhow::Result<Outcome> {
    let started = Instant::now();
    let state = tempfile::Builder::new().prefix("rocemend-demo-").tempdir()?;
    let topology = Arc::new(Topology::parse(embedded::INVENTORY, "docs/examples/inventory.toml")?);
    let series = SeriesTable::new(Some(topology.clone()), Labels::default());
    let helpers = Helpers::new(Some(series.clone()), Some(topology.clone()));
    let mut playbook = Playbook::parse(embedded::DEMO_PLAYBOOK, "playbooks/demo.toml")?;
    let rt = super::runtime()?;
    let fabric = rt.block_on(DemoFabric::start(&topology))?;
    fabric.point(&mut playbook);
    let sources: Vec<(String, String)> = embedded::RULES.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect();
    let rules = rule::load_sources(&sources, helpers)
        .map_err(|errors| anyhow::anyhow!(errors.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n")))?;
    let rules = wiring::without_disabled(rules, &playbook);
    let rule_count = rules.rules.len();
    let store = Store::open(&state.path().join("state.sled"))?;
    let ledger = Ledger::open(&store, Retention::default())?;
    let evaluator = Evaluator::new(series, rules, Some(store))?;
    let dispatcher = wiring::dispatcher(&playbook, Some(topology.clone()), Some(ledger))
        .map_err(|e| anyhow::anyhow!(e.join("\n")))?;
    let routes = wiring::routes(&playbook).map_err(|e| anyhow::anyhow!(e.join("\n")))?;
    let readback = ReadBack::new(routes, fabric.client()?);
    let sensor = sensors::replay::ReplaySensor::from_bytes("replay", embedded::RECORDING.to_vec(), speed)
        .context("the embedded recording")?;
    let t0 = first_timestamp(embedded::RECORDING)?;
    let inv = topology.inventory();
    println!("rocemend demo: the daemon replaying a built-in recording against simulated switches");
    println!(
        "  inventory  {} nodes x {} GPUs x {} NICs, {} switches ({})",
        inv.node.len(),
        inv.node.first().map_or(0, |n| n.gpu.len()),
        inv.node.first().map_or(0, |n| n.nic.len()),
        inv.switch.len(),
        inv.cluster.as_deref().unwrap_or("unnamed")
    );
    println!("  rules      {rule_count} standard rules from rules/");
    println!(
        "  playbook   {} (mode {}): pfcwd, ecn and rail (switch side) send gNMI Sets; link and cordon are dry-run",
        playbook.name,
        playbook.mode.as_str()
    );
    println!(
        "  switches   {} simulated SONiC switches over gNMI on loopback ({})",
        fabric.addresses.len(),
        fabric.addresses.iter().map(|(n, a)| format!("{n}={a}")).collect::<Vec<_>>().join(" ")
    );
    println!("  state      {} (sled)", state.path().display());
    println!("  replay     chaos/data/demo.jsonl at {speed}x recorded speed");
    println!();

    let daemon = Daemon {
        evaluator,
        dispatcher,
        sensors: vec![SensorSlot { sensor: Box::new(sensor), max_series: 100_000 }],
        loader: None,
        clock: ClockMode::Samples,
        tick: Duration::from_millis(50),
        record: None,
        stop_when_sensors_end: true,
        health: engine::HealthBoard::default(),
    };
    let printer = Arc::new(Mutex::new(Printer {
        t0,
        faults: Vec::new(),
        first_decision: BTreeMap::new(),
        readback,
        handle: rt.handle().clone(),
        executed: 0,
    }));
    let observer = printer.clone();
    let summary = rt.block_on(async move {
        let (_shutdown_tx, shutdown_rx) = watch::channel(false);
        let (_command_tx, command_rx) = mpsc::channel(1);
        runtime::run(daemon, shutdown_rx, command_rx, move |event| {
            observer.lock().unwrap_or_else(|p| p.into_inner()).print(event)
        })
        .await
    })?;
    rt.block_on(fabric.stop());
    let printer = printer.lock().unwrap_or_else(|p| p.into_inner());
    println!();
    println!("{:<82} {:<14} {:>24}", "fault", "decided by", "first sample -> decision");
    let mut missed = 0;
    for (i, fault) in printer.faults.iter().enumerate() {
        match printer.first_decision.get(&i) {
            Some((rule, at)) => println!("{:<82} {:<14} {:>24}", fault.text, rule, ms(at - fault.ts)),
            None => {
                missed += 1;
                println!("{:<82} {:<14} {:>24}", fault.text, "-", "NOT DETECTED")
            }
        }
    }
    println!();
    println!(
        "{} samples, {} decisions ({} sent to the switches), {} rule evaluations ({} answered from cache), {:.1}s wall time",
        summary.stats.samples,
        summary.decisions,
        printer.executed,
        summary.stats.script_calls,
        summary.stats.cache_hits,
        started.elapsed().as_secs_f64()
    );
    // The closed loop: the same daemon healing the simulated fabric.
    let healed = crate::chaos::embedded::demo(3)?;
    Ok(if missed == 0 && !printer.faults.is_empty() && healed { Outcome::Ok } else { Outcome::Findings })
}

fn first_timestamp(recording: &[u8]) -> anyhow::Result<Nanos> {
    let mut reader = Reader::new(recording, "demo recording");
    while let Some(event) = reader.next_event()? {
        match event {
            Event::Sample { t, .. } => return Ok(t),
            Event::Note(n) => return Ok(n.ts),
            Event::Series(..) => {}
        }
    }
    anyhow::bail!("the demo recording has no samples")
}

struct Printer {
    t0: Nanos,
    faults: Vec<Note>,
    /// Fault index → (rule, decision time) of the first decision about it.
    first_decision: BTreeMap<usize, (String, Nanos)>,
    /// Reads switch actions back.
    readback: Arc<ReadBack>,
    /// The runtime, to read back from inside the synchronous observer.
    handle: tokio::runtime::Handle,
    /// Actions (and undos) executed.
    executed: usize,
}

impl Printer {
    fn print(&mut self, event: &DaemonEvent) {
        match event {
            DaemonEvent::Note(n) if n.kind == "fault" => {
                println!("{}  FAULT     {}", offset(n.ts, self.t0), n.text);
                self.faults.push(n.clone());
            }
            DaemonEvent::Note(n) => println!("{}  {:<9} {}", offset(n.ts, self.t0), n.kind, n.text),
            DaemonEvent::Engine(EngineEvent::Transition { rule, subject, to, at, values, .. })
                if crate::report::is_notable(*to) =>
            {
                let values: Vec<String> = values.iter().map(|(k, v)| format!("{k}={}", compact(*v))).collect();
                println!(
                    "{}  {:<9} {rule} {}  {}",
                    offset(*at, self.t0),
                    to.as_str(),
                    short(subject),
                    values.join(" ")
                );
            }
            DaemonEvent::Engine(EngineEvent::SensorStale { rule, subject, at, .. }) => {
                println!("{}  stale     {rule} {}: no action on missing data", offset(*at, self.t0), short(subject));
            }
            DaemonEvent::Engine(EngineEvent::Quarantined { rule, error, at }) => {
                println!("{}  QUARANTINED {rule}: {error}", offset(*at, self.t0));
            }
            DaemonEvent::Decision(d) => self.decision(d),
            DaemonEvent::SensorExited { sensor, error: Some(error) } => println!("sensor {sensor} stopped: {error}"),
            _ => {}
        }
    }

    fn decision(&mut self, d: &Decision) {
        let p = &d.proposal;
        let what = if d.undo_of.is_some() { "undo    " } else { "decide  " };
        println!("{}  {what}  {} [{}] {}", offset(p.decided_at, self.t0), p.action, d.mode.as_str(), verdict(d));
        if let Verdict::Executed { outcome } = &d.verdict {
            self.executed += 1;
            for request in &outcome.requests {
                println!("           sent {request}");
            }
            // The observer is synchronous; the read-back is a gNMI Get on
            // this runtime, so it waits here, off the runtime's workers.
            let (readback, handle) = (self.readback.clone(), self.handle.clone());
            // An action is verified against its outcome; after an undo the
            // values are shown as they are.
            let applied = if d.undo_of.is_some() { None } else { Some(outcome) };
            let line = tokio::task::block_in_place(|| handle.block_on(readback.line(&p.action, applied)));
            if let Some(line) = line {
                println!("           {line}");
            }
        }
        if d.undo_of.is_some() {
            return;
        }
        let fault = self
            .faults
            .iter()
            .enumerate()
            .rev()
            .find(|(_, f)| p.subject.contains_all(&f.labels) && f.ts <= p.decided_at);
        if let Some((i, f)) = fault {
            self.first_decision.entry(i).or_insert_with(|| {
                println!("           detected {} after the fault's first sample", ms(p.decided_at - f.ts));
                (p.rule.clone(), p.decided_at)
            });
        }
    }
}

fn compact(v: f64) -> String {
    if v.is_nan() {
        "-".into()
    } else if v != 0.0 && (v.abs() >= 1e5 || v.abs() < 1e-3) {
        format!("{v:.2e}")
    } else {
        format!("{v:.3}")
    }
}
