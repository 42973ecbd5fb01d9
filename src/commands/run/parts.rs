//! The daemon's parts, from its checked [`Blueprint`]: state store and ledger,
//! evaluator, dispatcher, sensors (the job sensor of the control API among
//! them), clock and the control sockets.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use engine::ledger::{Ledger, Retention};
use engine::playbook::Playbook;
use engine::runtime::{Daemon, SensorSlot};
use engine::{Evaluator, HealthBoard, Store};
use ops::config::DaemonConfig;
use ops::control;
use ops::plan::{Blueprint, DaemonSettings};
use ops::web::server::WebSide;
use sensors::job::JobPush;
use tokio::sync::mpsc;

use super::state_lock::StateLock;
use crate::wiring;

/// Everything `run` needs, built and checked before anything starts.
pub(super) struct Parts {
    pub daemon: Daemon,
    /// The state directory's lock, held until the daemon ends.
    pub state_lock: StateLock,
    pub ledger: Ledger,
    /// Where the control API's `PushJob` goes (none in a replay).
    pub job_tx: Option<mpsc::Sender<JobPush>>,
    pub health: HealthBoard,
    pub rules_dir: PathBuf,
    pub playbook: Playbook,
    pub settings: DaemonSettings,
    pub config: DaemonConfig,
    /// This daemon's node: the `node` label of series that have none.
    pub node: String,
    pub tcp: Option<control::serve::TcpSide>,
    pub web: Option<WebSide>,
    /// The actuators, each once: their targets are checked (and logged) at start.
    pub actuators: Vec<Arc<dyn engine::Actuator>>,
}

impl Parts {
    /// Opens the state and binds the sockets of a checked plan: what is
    /// left to fail here is the machine (a taken port, a locked store).
    pub fn build(plan: Blueprint) -> anyhow::Result<Parts> {
        let Blueprint { config, settings, node, topology, series, part, mut sensors, tcp, web } = plan;
        let state_dir = &config.state_dir;
        std::fs::create_dir_all(state_dir)
            .with_context(|| format!("creating state directory {}", state_dir.display()))?;
        let state_lock = StateLock::take(state_dir)?;
        let store = Store::open(&state_dir.join("state.sled"))?;
        let ledger = Ledger::open(&store, Retention::default())?;
        let engine = &settings.engine;
        let mut evaluator = Evaluator::new(series, part.rules, Some(store))?;
        evaluator.set_cost_budget(engine.rule_cost_budget);
        let actuators = crate::commands::check::distinct(part.routes.iter().map(|r| r.actuator.clone()));
        let dispatch = actuators::registry::dispatch_config(&part.playbook, part.routes, part.policy, topology);
        let dispatcher = engine::dispatch::Dispatcher::new(dispatch, Some(ledger.clone()));
        // Job signals pushed over the control API enter as one more sensor;
        // not in a replay that exits when its sensors end, since this one
        // never does.
        let job_tx = if engine.exit_when_sensors_end {
            None
        } else {
            let (tx, job_sensor) = sensors::job::channel();
            sensors.push(SensorSlot { sensor: Box::new(job_sensor), max_series: engine.max_series_per_sensor });
            Some(tx)
        };
        let health = HealthBoard::default();
        let tcp = tcp.map(control::serve::TcpSettings::bind).transpose()?;
        let web = web.map(ops::web::WebSettings::bind).transpose()?;
        let (loader_dir, loader_playbook) = (part.rules_dir.clone(), part.playbook.clone());
        let daemon = Daemon {
            evaluator,
            dispatcher,
            sensors,
            loader: Some(Arc::new(move |helpers| wiring::load_rules(&loader_dir, helpers, &loader_playbook))),
            clock: engine.clock,
            max_ahead: engine.max_ahead,
            tick: engine.tick,
            record: settings.record.clone(),
            sink: None,
            stop_when_sensors_end: engine.exit_when_sensors_end,
            health: health.clone(),
            shutdown_grace: engine.shutdown_timeout / 2,
        };
        Ok(Parts {
            daemon,
            state_lock,
            ledger,
            job_tx,
            health,
            rules_dir: part.rules_dir,
            playbook: part.playbook,
            settings,
            config,
            node,
            tcp,
            web,
            actuators,
        })
    }
}
