//! `[kubernetes_condition]`: the node condition `RoceFabricHealthy`, written
//! by a task of its own from the incidents of this daemon's node
//! ([`actuators::node_condition`]).

use engine::playbook::Playbook;
use engine::runtime::Daemon;
use tokio::sync::watch;

use actuators::node_condition::{self, Feed, Incidents};

/// With `[kubernetes_condition]`: the reporter started, and the feed the
/// engine loop's observer hands each event to. It starts from the
/// incidents already firing on `node` (restored from the state store, they
/// end with a transition but begin with none).
pub(super) fn start(
    playbook: &Playbook,
    node: &str,
    daemon: &Daemon,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<Option<Feed>> {
    let Some(config) = &playbook.kubernetes_condition else { return Ok(None) };
    // Checked with the playbook; what can fail here failed in `check` too.
    let reporter = node_condition::build(config, node).map_err(|e| anyhow::anyhow!("[kubernetes_condition]: {e}"))?;
    let now = engine::time::wall_clock_now();
    let mut seed = Incidents::default();
    for (rule, severity, subject) in daemon.evaluator.firing_where("node", node) {
        seed.restored(&rule, &subject, severity, now);
    }
    tracing::info!(
        message = "Keeping the node condition RoceFabricHealthy.",
        api_server = %config.api_server,
        heartbeat = %engine::config::duration::show(config.heartbeat),
        severity = ?config.severity
    );
    let (feed, incidents) = Feed::new(node, seed);
    tokio::spawn(reporter.run(incidents, shutdown));
    Ok(Some(feed))
}
