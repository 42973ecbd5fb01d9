//! `rocemend demo`: the daemon replaying a built-in recording of three
//! faults against simulated switches, printing what it detects, what it
//! does, and how long after each fault's first sample it decided.
//!
//! It starts one simulated SONiC switch per leaf of the example inventory
//! ([`sim::leaves`]) and runs `playbooks/demo.toml`: the switch
//! actuators (pfcwd, ecn, rail's switch side) send real gNMI Sets to those
//! switches, and each is read back over gNMI; host and scheduler actions
//! stay dry-run.

/// `println!` for the demo's output: a reader that has gone (`rocemend demo
/// | head -1`) ends the demo quietly, with exit 0, as it ends `cat`. The
/// demo keeps Rust's ignored SIGPIPE (its simulated switches serve sockets),
/// so a closed stdout is a write error here, and `println!` would panic on it.
macro_rules! say {
    () => { say!("") };
    ($($arg:tt)*) => { $crate::commands::demo::say(format_args!($($arg)*)) };
}

mod printer;
mod readback;
mod summary;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use engine::ledger::{Ledger, Retention};
use engine::playbook::Playbook;
use engine::recording::{Event, Reader};
use engine::rule::{self, Helpers};
use engine::runtime::{self, ClockMode, Daemon, SensorSlot};
use engine::{Evaluator, Labels, Nanos, SeriesTable, Store, Topology};
use sim::leaves::LeafServers;
use tokio::sync::{mpsc, watch};

use self::printer::Printer;
use self::readback::ReadBack;
use self::summary::{closed_loop, detections, header};
use super::Exit;
use crate::embedded;

/// `rocemend demo`.
pub fn demo(speed: f64) -> anyhow::Result<Exit> {
    let started = Instant::now();
    let state = tempfile::Builder::new().prefix("rocemend-demo-").tempdir()?;
    let topology = Arc::new(Topology::parse(embedded::INVENTORY, "docs/examples/inventory.toml")?);
    let series = SeriesTable::new(Some(topology.clone()), Labels::default());
    let helpers = Helpers::new(Some(series.clone()), Some(topology.clone()));
    let playbook = Playbook::parse(embedded::DEMO_PLAYBOOK, "playbooks/demo.toml")?;
    let rt = super::runtime()?;
    let leaves = rt.block_on(LeafServers::fresh(&topology))?;
    // The playbook names the leaves; this inventory says where they are served.
    let served = Arc::new(leaves.inventory(&topology));
    let sources: Vec<(String, String)> = embedded::RULES.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect();
    let rules = rule::load_sources(&sources, helpers)?.without_disabled(&playbook.disabled_rules());
    let rule_count = rules.rules.len();
    let store = Store::open(&state.path().join("state.sled"))?;
    let ledger = Ledger::open(&store, Retention::default())?;
    let evaluator = Evaluator::new(series, rules, Some(store))?;
    let dispatcher = actuators::registry::dispatcher(&playbook, Some(served.clone()), Some(ledger))?;
    let readback = ReadBack::new(actuators::registry::routes(&playbook, Some(&served))?, ReadBack::client(&served)?);
    let sensor = sensors::replay::ReplaySensor::from_bytes("replay", embedded::RECORDING.to_vec(), speed)
        .context("the embedded recording")?;
    let t0 = first_timestamp(embedded::RECORDING)?;
    header(&topology, rule_count, &playbook, &leaves, state.path(), speed);

    let daemon = Daemon {
        evaluator,
        dispatcher,
        sensors: vec![SensorSlot { sensor: Box::new(sensor), max_series: 100_000 }],
        loader: None,
        clock: ClockMode::Samples,
        max_ahead: engine::runtime::DEFAULT_MAX_AHEAD,
        tick: Duration::from_millis(50),
        record: None,
        sink: None,
        stop_when_sensors_end: true,
        shutdown_grace: engine::runtime::DEFAULT_SHUTDOWN_GRACE,
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
    rt.block_on(leaves.stop());
    let printer = printer.lock().unwrap_or_else(|p| p.into_inner());
    let missed = detections(&printer);
    say!(
        "{} samples, {} decisions ({} sent to the switches), {} rule evaluations ({} answered from cache), {:.1}s wall time",
        summary.stats.samples,
        summary.decisions,
        printer.executed,
        summary.stats.script_calls,
        summary.stats.cache_hits,
        started.elapsed().as_secs_f64()
    );
    let healed = closed_loop(&rt, 3)?;
    Ok(if missed == 0 && !printer.faults.is_empty() && healed { Exit::Ok } else { Exit::Findings })
}

/// One line of the demo's output (see [`say!`]); other write errors are
/// reported on stderr once, and the demo goes on.
pub(crate) fn say(line: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    if let Err(e) = writeln!(std::io::stdout().lock(), "{line}") {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        static TOLD: std::sync::Once = std::sync::Once::new();
        TOLD.call_once(|| eprintln!("rocemend demo: writing to stdout: {e}"));
    }
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
