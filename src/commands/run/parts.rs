//! The daemon's parts, built from its configuration: inventory, rules,
//! state store and ledger, evaluator, dispatcher, sensors (the job sensor
//! of the control API among them), clock and the control sockets.

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::Arc;

use anyhow::Context;
use engine::recording::Rotation;
use engine::runtime::Recording;
use engine::ledger::{Ledger, Retention};
use engine::playbook::Playbook;
use engine::rule::Helpers;
use engine::runtime::{ClockMode, Daemon, SensorSlot};
use engine::time::parse_duration;
use engine::{Evaluator, HealthBoard, Labels, SeriesTable, Store};
use sensors::job::JobPush;
use tokio::sync::mpsc;

use crate::config::DaemonConfig;
use crate::control;
use crate::wiring;

/// Everything `run` needs, built and checked before anything starts.
pub(super) struct Parts {
    pub daemon: Daemon,
    pub ledger: Ledger,
    /// Where the control API's `PushJob` goes (none in a replay).
    pub job_tx: Option<mpsc::Sender<JobPush>>,
    pub health: HealthBoard,
    pub rules_dir: PathBuf,
    pub playbook: Playbook,
    pub socket: PathBuf,
    pub tcp: Option<control::serve::TcpSide>,
    /// How often the rule directory is checked for changes (0: never).
    pub reload_poll: i64,
}

impl Parts {
    pub fn build(config: &DaemonConfig, config_path: &Path) -> anyhow::Result<Parts> {
        let topology = wiring::topology(config.inventory.as_deref())?;
        let mut playbook = Playbook::load(&config.playbook)?;
        let node = wiring::node(config)?;
        wiring::one_node(&mut playbook, &node).map_err(|errors| anyhow::anyhow!(errors.join("\n")))?;
        let rules_dir = wiring::rules_dir(config, &playbook)?;
        let default_labels = Labels::from_pairs([("node", node.as_str())]);
        let series = SeriesTable::new(topology.clone(), default_labels);
        let helpers = Helpers::new(Some(series.clone()), topology.clone());
        let rules = wiring::load_rules(&rules_dir, helpers, &playbook)?;
        std::fs::create_dir_all(&config.state_dir)
            .with_context(|| format!("creating state directory {}", config.state_dir.display()))?;
        let store = Store::open(&config.state_dir.join("state.sled"))?;
        let ledger = Ledger::open(&store, Retention::default())?;
        let mut evaluator = Evaluator::new(series, rules, Some(store))?;
        let budget = config.engine.rule_cost_budget;
        if !(budget > 0.0 && budget <= 1.0) {
            anyhow::bail!("{}: engine.rule_cost_budget = {budget}: expected a share of a core, above 0 and at most 1", config_path.display());
        }
        evaluator.set_cost_budget(budget);
        let dispatcher = actuators::registry::dispatcher(&playbook, topology.clone(), Some(ledger.clone()))?;
        let mut sensors = wiring::sensors(config)?;
        // Job signals pushed over the control API enter as one more sensor;
        // not in a replay that exits when its sensors end, since this one
        // never does.
        let job_tx = if config.engine.exit_when_sensors_end {
            None
        } else {
            let (tx, job_sensor) = sensors::job::channel();
            sensors.push(SensorSlot { sensor: Box::new(job_sensor), max_series: config.engine.max_series_per_sensor });
            Some(tx)
        };
        let health = HealthBoard::default();
        let tcp = control::serve::tcp_side(&config.control)?;
        let clock = match config.engine.clock.as_str() {
            "wall" => ClockMode::Wall,
            "samples" => ClockMode::Samples,
            other => anyhow::bail!("{}: engine.clock {other:?}: expected wall or samples", config_path.display()),
        };
        let tick = Duration::from_nanos(parse_duration(&config.engine.tick)?.max(1_000_000) as u64);
        let reload_poll = parse_duration(&config.engine.reload_poll)?;
        let max_ahead = parse_duration(&config.engine.max_ahead)
            .with_context(|| format!("{}: engine.max_ahead", config_path.display()))?;
        let socket = config.control.socket.clone().unwrap_or_else(|| config.state_dir.join("control.sock"));
        let (loader_dir, loader_playbook) = (rules_dir.clone(), playbook.clone());
        let daemon = Daemon {
            evaluator,
            dispatcher,
            sensors,
            loader: Some(Arc::new(move |helpers| wiring::load_rules(&loader_dir, helpers, &loader_playbook))),
            clock,
            max_ahead,
            tick,
            record: config.record.clone().map(|path| Recording {
                path,
                rotation: Rotation { max_bytes: config.record_max_mib.max(1) << 20, keep: config.record_keep },
            }),
            stop_when_sensors_end: config.engine.exit_when_sensors_end,
            health: health.clone(),
        };
        Ok(Parts { daemon, ledger, job_tx, health, rules_dir, playbook, socket, tcp, reload_poll })
    }
}
