//! The reporter: one PATCH of the Node's status per change of the condition
//! and per heartbeat, on a task of its own, fed by the engine's loop through
//! a [`Feed`] that never waits.

use std::sync::Arc;
use std::time::Duration;

use engine::runtime::DaemonEvent;
use engine::{EngineEvent, Nanos, Severity};
use tokio::sync::watch;
use tokio::time::Instant;

use super::condition::{Condition, Incidents};
use crate::http::{HttpError, Url};
use crate::kube::KubeApi;

/// The content type of a strategic merge patch: a Node's conditions merge
/// by `type`, so the PATCH replaces ours and leaves the kubelet's and other
/// reporters' alone (node-problem-detector patches the same way).
const STRATEGIC_MERGE: &str = "application/strategic-merge-patch+json";

/// The least time between two writes a change starts: a burst of
/// transitions (a leaf losing every port) becomes one write with the whole
/// burst in it, not one per instance sent to every watcher of Nodes.
pub const MIN_GAP: Duration = Duration::from_secs(1);

/// What the reporter reads the time from (the wall clock; a test's own).
pub type Clock = Arc<dyn Fn() -> Nanos + Send + Sync>;

/// Why a write of the condition failed; the next heartbeat writes again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// The API server could not be reached, or did not answer in time.
    #[error("PATCH {url}: {source}")]
    Http {
        /// The Node's status.
        url: String,
        /// Why.
        source: HttpError,
    },
    /// The API server refused the PATCH (no such node, no RBAC for
    /// `patch` on `nodes/status`, …).
    #[error("PATCH {url} answered {status}: {answer}")]
    Refused {
        /// The Node's status.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of its answer.
        answer: String,
    },
}

/// Keeps the condition `RoceFabricHealthy` on one Node.
pub struct Reporter {
    api: KubeApi,
    /// The Node object's name.
    node: String,
    /// The `node` label of this daemon's subjects, named in the message.
    daemon_node: String,
    severity: Severity,
    heartbeat: Duration,
    clock: Clock,
    /// The status believed and since when: a status that changes while the
    /// API server is down still has the time it changed, once written.
    status: Option<(bool, Nanos)>,
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter").field("api", &self.api).field("node", &self.node).finish_non_exhaustive()
    }
}

impl Reporter {
    pub(super) fn new(
        api: KubeApi,
        node: String,
        daemon_node: String,
        severity: Severity,
        heartbeat: Duration,
    ) -> Self {
        Reporter {
            api,
            node,
            daemon_node,
            severity,
            heartbeat,
            clock: Arc::new(engine::time::wall_clock_now),
            status: None,
        }
    }

    /// The same reporter reading the time from `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Reporter {
        self.clock = clock;
        self
    }

    /// The heartbeat.
    pub fn heartbeat(&self) -> Duration {
        self.heartbeat
    }

    /// The `node` label whose incidents count.
    pub fn daemon_node(&self) -> &str {
        &self.daemon_node
    }

    fn status_url(&self) -> Url {
        self.api.base().join(&format!("/api/v1/nodes/{}/status", self.node))
    }

    /// The condition `incidents` make.
    pub fn judge(&self, incidents: &Incidents) -> Condition {
        Condition::judge(incidents, &self.daemon_node, self.severity)
    }

    /// Writes the condition `incidents` make, with the heartbeat now and
    /// the transition when its status last changed (now, at the first
    /// write); the condition written.
    pub async fn report(&mut self, incidents: &Incidents) -> Result<Condition, ReportError> {
        let now = (self.clock)();
        let condition = self.judge(incidents);
        let since = match self.status {
            Some((healthy, since)) if healthy == condition.healthy => since,
            _ => now,
        };
        self.status = Some((condition.healthy, since));
        let url = self.status_url();
        let body = condition.patch(now, since);
        let response = self
            .api
            .call("PATCH", &url, Some((STRATEGIC_MERGE, &body)))
            .await
            .map_err(|source| ReportError::Http { url: url.to_string(), source })?;
        if !response.ok() {
            return Err(ReportError::Refused {
                url: url.to_string(),
                status: response.status,
                answer: response.snippet(),
            });
        }
        Ok(condition)
    }

    /// Writes the condition at once, then on each change of `incidents`
    /// (at most once per [`MIN_GAP`]) and each `heartbeat` after the last
    /// write, until `shutdown` turns true or the feed is gone. A failed
    /// write is logged; the next heartbeat writes again. A request that
    /// hangs ends at the client's timeout, below the heartbeat.
    pub async fn run(mut self, mut incidents: watch::Receiver<Incidents>, mut shutdown: watch::Receiver<bool>) {
        let mut written: Option<Condition> = None;
        let mut next_beat = Instant::now();
        let mut last_write: Option<Instant> = None;
        let mut failures = 0u64;
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(next_beat) => {}
                changed = incidents.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    if written.as_ref() == Some(&self.judge(&incidents.borrow())) {
                        continue;
                    }
                    if let Some(at) = last_write {
                        tokio::time::sleep_until(at + MIN_GAP).await;
                    }
                }
                // The guard `wait_for` returns is not `Send`: dropped inside.
                _ = async { shutdown.wait_for(|stop| *stop).await.is_ok() } => return,
            }
            let snapshot = incidents.borrow_and_update().clone();
            last_write = Some(Instant::now());
            match self.report(&snapshot).await {
                Ok(condition) => {
                    if failures > 0 || written.as_ref().map(|w| w.healthy) != Some(condition.healthy) {
                        tracing::info!(
                            message = "Node condition written.",
                            node = %self.node,
                            status = condition.status(),
                            reason = %condition.reason,
                            after_failures = failures
                        );
                    }
                    failures = 0;
                    written = Some(condition);
                }
                Err(error) => {
                    failures += 1;
                    written = None;
                    tracing::warn!(
                        message = "Cannot write the node condition; trying again at the next heartbeat.",
                        %error,
                        node = %self.node,
                        failures
                    );
                }
            }
            next_beat = Instant::now() + self.heartbeat;
        }
    }
}

/// The engine loop's side: takes each event in and, when this node's
/// incidents change, hands the new set to the reporter. Never waits: the
/// set is replaced in a watch channel, which keeps only the latest.
#[derive(Debug)]
pub struct Feed {
    node: String,
    incidents: watch::Sender<Incidents>,
}

impl Feed {
    /// A feed of the incidents on `node` (the `node` label), starting from
    /// `seed`, and the reporter's end of it.
    pub fn new(node: &str, seed: Incidents) -> (Feed, watch::Receiver<Incidents>) {
        let (incidents, rx) = watch::channel(seed);
        (Feed { node: node.to_string(), incidents }, rx)
    }

    /// Takes `event` in: a transition of this node's subject, or a reload
    /// that removed rules.
    pub fn observe(&self, event: &DaemonEvent) {
        match event {
            DaemonEvent::Engine(EngineEvent::Transition { rule, subject, to, at, severity, .. }) => {
                self.incidents.send_if_modified(|i| i.transition(&self.node, rule, subject, *to, *at, *severity));
            }
            DaemonEvent::Reloaded(report) if !report.removed.is_empty() => {
                self.incidents.send_if_modified(|i| i.rules_removed(&report.removed));
            }
            _ => {}
        }
    }
}
