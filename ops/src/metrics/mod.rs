//! The daemon's own metrics, in the OpenMetrics or the Prometheus text
//! format (prometheus-client, see [`Format`]), served with `/healthz` and
//! `/readyz` by [`http`].
//!
//! Two sources: events, counted as they happen on the run loop (rule
//! transitions, decisions, actuator outcomes, the three latency
//! histograms), and a snapshot taken at each scrape (samples, series, rule evaluations and their cost,
//! instances by state, ledger size, sensor health), so a scrape costs one
//! round trip to the loop and nothing between scrapes.
//!
//! The latency histograms are the ones an SRE asks about first: how long
//! from the sample that showed the fault to the decision
//! (`rocemend_fault_to_decision_seconds`), from the decision to the
//! finished action (`rocemend_decision_to_action_seconds`), and from the
//! finished action to the fault clearing (`rocemend_action_to_recovery_seconds`).

pub mod http;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use engine::contracts::{HealthBoard, HealthState};
use engine::dispatch::Verdict;
use engine::ledger::Ledger;
use engine::runtime::{DaemonEvent, DispatchStatus, EngineView};
use engine::{EngineEvent, Nanos, RuleHealth, State};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

type Labels = Vec<(String, String)>;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Latencies longer than this are not observed: they come from a replay on
/// its own clock, or a clock step, not from the daemon.
const MAX_LATENCY: Nanos = 86_400 * engine::SECOND;

/// Decision ids remembered so an approval (the same decision, decided
/// again) is not counted as a second fault→decision latency.
const SEEN_IDS: usize = 100_000;

/// Every metric the daemon exports, in groups registered in the order
/// they are exposed.
pub struct Metrics {
    registry: Registry,
    intake: Intake,
    dispatch: DispatchMetrics,
    evaluation: Evaluation,
    decisions: Decisions,
    sensors: SensorHealth,
    latency: Latency,
    state: Mutex<Tracking>,
}

/// What the engine took in, from the loop's snapshot.
struct Intake {
    samples: Counter,
    out_of_order: Counter,
    steps_back: Counter,
    refused: Family<Labels, Counter>,
}

impl Intake {
    fn register(r: &mut Registry) -> Intake {
        Intake {
            samples: registered(r, "samples_ingested", "Samples the engine ingested", Counter::default()),
            out_of_order: registered(
                r,
                "samples_out_of_order",
                "Samples dropped as a little older than their series' last (reordered on the way)",
                Counter::default(),
            ),
            steps_back: registered(
                r,
                "series_clock_steps_back",
                "Samples far older than their series' last: its clock stepped back, the series resynchronized",
                Counter::default(),
            ),
            refused: registered(
                r,
                "samples_refused",
                "Samples not believed, by reason (bad_counter, implausible, future, bad_label)",
                Family::default(),
            ),
        }
    }
}

/// The dispatcher's state: actions in effect, drifts, the breaker.
struct DispatchMetrics {
    actions_in_effect: Gauge,
    actions_drifted: Family<Labels, Counter>,
    breaker_tripped: Gauge,
    ledger_writable: Gauge,
    repeat_offenders: Gauge,
}

impl DispatchMetrics {
    fn register(r: &mut Registry) -> DispatchMetrics {
        DispatchMetrics {
            actions_in_effect: registered(
                r,
                "actions_in_effect",
                "Actions this daemon has in effect",
                Gauge::default(),
            ),
            actions_drifted: registered(
                r,
                "actions_drifted",
                "Actions in effect found changed on their target, by kind (reverted, changed)",
                Family::default(),
            ),
            breaker_tripped: registered(
                r,
                "breaker_tripped",
                "1 while the circuit breaker is tripped",
                Gauge::default(),
            ),
            repeat_offenders: registered(
                r,
                "repeat_offenders",
                "Subjects whose next incident starts at the ladder's rung that worked (repeat offenders now)",
                Gauge::default(),
            ),
            ledger_writable: registered(
                r,
                "ledger_writable",
                "0 while the ledger cannot be written (a full disk): no action or undo is sent",
                // Writable until the dispatcher says otherwise: 0 at start
                // would raise the alert on every daemon that just started.
                {
                    let g = Gauge::default();
                    g.set(1);
                    g
                },
            ),
        }
    }
}

/// The rules: series, evaluation passes and their cost, rule health, instances, transitions.
struct Evaluation {
    series: Gauge,
    evaluations: Counter,
    evaluation_seconds: Counter<f64, AtomicU64>,
    script_calls: Counter,
    cache_hits: Counter,
    rules: Family<Labels, Gauge>,
    instances: Family<Labels, Gauge>,
    transitions: Family<Labels, Counter>,
}

impl Evaluation {
    fn register(r: &mut Registry) -> Evaluation {
        Evaluation {
            series: registered(r, "series", "Series registered", Gauge::default()),
            evaluations: registered(r, "rule_evaluations", "Evaluation passes over the rules", Counter::default()),
            evaluation_seconds: registered(
                r,
                "rule_evaluation_seconds",
                "Wall time spent evaluating rules",
                Counter::default(),
            ),
            script_calls: registered(r, "rule_script_calls", "Rule script calls", Counter::default()),
            cache_hits: registered(r, "rule_cache_hits", "Evaluations answered from the cache", Counter::default()),
            rules: registered(r, "rules", "Rules loaded, by health (ok, quarantined)", Family::default()),
            instances: registered(r, "instances", "Rule instances by state", Family::default()),
            transitions: registered(
                r,
                "rule_transitions",
                "Rule instance state changes, by rule and new state (to=firing counts detections)",
                Family::default(),
            ),
        }
    }
}

/// Decisions, actuator outcomes, the ledger's size.
struct Decisions {
    decisions: Family<Labels, Counter>,
    actuator: Family<Labels, Counter>,
    ledger_records: Gauge,
    /// Outcome checks judged, by rule and outcome.
    outcomes: Family<Labels, Counter>,
    /// From an effective action to its rule clearing.
    time_to_effect: Histogram,
}

impl Decisions {
    fn register(r: &mut Registry) -> Decisions {
        Decisions {
            decisions: registered(r, "decisions", "Decisions by verdict and mode", Family::default()),
            actuator: registered(r, "actuator_outcomes", "Actuator calls by actuator and outcome", Family::default()),
            ledger_records: registered(r, "ledger_records", "Records in the decision ledger", Gauge::default()),
            outcomes: registered(
                r,
                "action_outcomes",
                "Outcome checks of executed actions, by rule and outcome (effective, ineffective, harmful, unread)",
                Family::default(),
            ),
            time_to_effect: registered(
                r,
                "time_to_effect_seconds",
                "From an effective action to its rule clearing",
                // Doubling from 100 ms (to 55 min).
                Histogram::new(exponential_buckets(0.1, 2.0, 16)),
            ),
        }
    }
}

/// Each sensor's state, reads and errors.
struct SensorHealth {
    sensor_state: Family<Labels, Gauge>,
    sensor_reads: Family<Labels, Counter>,
    sensor_errors: Family<Labels, Counter>,
}

impl SensorHealth {
    fn register(r: &mut Registry) -> SensorHealth {
        SensorHealth {
            sensor_state: registered(
                r,
                "sensor_state",
                "1 for each sensor's current state, 0 for the others",
                Family::default(),
            ),
            sensor_reads: registered(r, "sensor_reads", "Successful sensor reads", Family::default()),
            sensor_errors: registered(r, "sensor_errors", "Failed sensor reads, by kind", Family::default()),
        }
    }
}

/// The three latency histograms of an incident.
struct Latency {
    fault_to_decision: Histogram,
    decision_to_action: Histogram,
    action_to_recovery: Histogram,
}

impl Latency {
    fn register(r: &mut Registry) -> Latency {
        // Buckets doubling from 1 ms (to 2 min) and from 100 ms (to 55 min).
        let histogram = |start, buckets| Histogram::new(exponential_buckets(start, 2.0, buckets));
        Latency {
            fault_to_decision: registered(
                r,
                "fault_to_decision_seconds",
                "From the sample that showed the fault to the decision",
                histogram(0.001, 18),
            ),
            decision_to_action: registered(
                r,
                "decision_to_action_seconds",
                "From the decision to the finished actuator call",
                histogram(0.001, 18),
            ),
            action_to_recovery: registered(
                r,
                "action_to_recovery_seconds",
                "From the finished action to the fault clearing",
                histogram(0.1, 16),
            ),
        }
    }
}

#[derive(Default)]
struct Tracking {
    seen: HashSet<String>,
    /// (rule, subject) → when its action finished, waiting for recovery.
    acted: HashMap<(String, String), Nanos>,
    last_evaluation_ns: u64,
}

fn latency(from: Nanos, to: Nanos) -> Option<f64> {
    let d = to.checked_sub(from)?;
    (0..=MAX_LATENCY).contains(&d).then(|| d as f64 / 1e9)
}

/// `metric`, registered in `r` as `name` with `help`: each metric is named
/// where it is made.
fn registered<M: prometheus_client::registry::Metric + Clone>(
    r: &mut Registry,
    name: &str,
    help: &str,
    metric: M,
) -> M {
    r.register(name, help, metric.clone());
    metric
}

impl Default for Metrics {
    fn default() -> Metrics {
        Metrics::new()
    }
}

impl Metrics {
    /// The metrics, registered in the order they are exposed.
    pub fn new() -> Metrics {
        let mut r = Registry::with_prefix("rocemend");
        Metrics {
            intake: Intake::register(&mut r),
            dispatch: DispatchMetrics::register(&mut r),
            evaluation: Evaluation::register(&mut r),
            decisions: Decisions::register(&mut r),
            sensors: SensorHealth::register(&mut r),
            latency: Latency::register(&mut r),
            state: Mutex::default(),
            registry: r,
        }
    }

    /// Registers the remote-write sender's metrics (`[remote_write]`), after
    /// the others; only a daemon that sends has them.
    pub fn register_remote_write(&mut self) -> crate::remote_write::RemoteWriteMetrics {
        crate::remote_write::RemoteWriteMetrics::register(&mut self.registry)
    }

    /// A decision emitted again: its outcome check's judgement, counted once.
    fn outcome_judged(&self, d: &engine::dispatch::Decision, t: &mut Tracking) {
        let Some(judged) = d.outcome.as_ref().and_then(|o| o.judged.as_ref()) else { return };
        if !t.seen.insert(format!("{}/outcome", d.id)) {
            return;
        }
        let result = judged.result.name();
        self.decisions.outcomes.get_or_create(&labels(&[("rule", &d.proposal.rule), ("outcome", result)])).inc();
        if judged.result == engine::contracts::OutcomeResult::Effective {
            self.decisions.time_to_effect.observe(judged.after_ns.max(0) as f64 / 1e9);
        }
    }

    /// Counts one event of the run loop. Called on the loop task: only
    /// atomic increments and a short lock.
    pub fn observe(&self, event: &DaemonEvent) {
        match event {
            DaemonEvent::Decision(d) => {
                let verdict = d.verdict.name();
                let mut t = self.state.lock().unwrap_or_else(|p| p.into_inner());
                if t.seen.len() >= SEEN_IDS {
                    t.seen.clear();
                }
                // A decision is emitted again when a canary or an outcome check
                // judges it: counted once per verdict.
                if !t.seen.insert(format!("{}#{verdict}", d.id)) {
                    self.outcome_judged(d, &mut t);
                    return;
                }
                self.decisions
                    .decisions
                    .get_or_create(&labels(&[("verdict", verdict), ("mode", d.mode.as_str())]))
                    .inc();
                let outcome = match &d.verdict {
                    Verdict::Executed { .. } => Some("success"),
                    Verdict::Failed { .. } => Some("failure"),
                    Verdict::Interrupted { .. } => Some("interrupted"),
                    Verdict::Skipped { .. } => Some("skipped"),
                    _ => None,
                };
                if let (Some(outcome), Some(actuator)) = (outcome, &d.actuator) {
                    self.decisions
                        .actuator
                        .get_or_create(&labels(&[("actuator", actuator), ("outcome", outcome)]))
                        .inc();
                }
                let first = t.seen.insert(d.id.clone());
                if first && d.undo_of.is_none() {
                    if let Some(s) = latency(d.proposal.sample_at, d.dispatched_at) {
                        self.latency.fault_to_decision.observe(s);
                    }
                }
                let first_execution =
                    matches!(d.verdict, Verdict::Executed { .. }) && t.seen.insert(format!("{}/executed", d.id));
                if first_execution && d.undo_of.is_none() {
                    if let Some(s) = latency(d.dispatched_at, d.finished_at) {
                        self.latency.decision_to_action.observe(s);
                    }
                    t.acted.insert((d.proposal.rule.clone(), d.proposal.subject.to_string()), d.finished_at);
                }
            }
            DaemonEvent::Engine(EngineEvent::Transition { rule, subject, from, to, at, .. }) => {
                self.evaluation.transitions.get_or_create(&labels(&[("rule", rule), ("to", to.as_str())])).inc();
                if *from == State::Firing {
                    self.recovered(rule, subject, *at);
                }
            }
            _ => {}
        }
    }

    /// An instance of `rule` on `subject` left `firing` at `at`: the end of
    /// the action → recovery latency, if this daemon acted on it.
    fn recovered(&self, rule: &str, subject: &engine::Labels, at: Nanos) {
        let mut t = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(acted) = t.acted.remove(&(rule.to_string(), subject.to_string())) {
            if let Some(s) = latency(acted, at) {
                self.latency.action_to_recovery.observe(s);
            }
        }
    }

    /// Updates the snapshot metrics from the loop's view, the ledger and the
    /// sensors' health board.
    pub fn refresh(&self, view: &EngineView, ledger: Option<&Ledger>, health: &HealthBoard) {
        self.intake.samples.inner().store(view.stats.samples, Ordering::Relaxed);
        self.intake.out_of_order.inner().store(view.stats.out_of_order, Ordering::Relaxed);
        self.intake.steps_back.inner().store(view.stats.steps_back, Ordering::Relaxed);
        let refused = view.stats.refused;
        for (reason, n) in [
            ("bad_counter", refused.bad_counter),
            ("implausible", refused.implausible),
            ("future", refused.future),
            ("bad_label", refused.bad_label),
        ] {
            self.intake.refused.get_or_create(&labels(&[("reason", reason)])).inner().store(n, Ordering::Relaxed);
        }
        self.evaluation.series.set(view.series as i64);
        self.evaluation.evaluations.inner().store(view.evaluations, Ordering::Relaxed);
        self.evaluation.script_calls.inner().store(view.stats.script_calls, Ordering::Relaxed);
        self.evaluation.cache_hits.inner().store(view.stats.cache_hits, Ordering::Relaxed);
        {
            let mut t = self.state.lock().unwrap_or_else(|p| p.into_inner());
            let delta = view.evaluation_ns.saturating_sub(t.last_evaluation_ns);
            t.last_evaluation_ns = view.evaluation_ns;
            self.evaluation.evaluation_seconds.inc_by(delta as f64 / 1e9);
        }
        let quarantined = view.rules.iter().filter(|(_, h)| matches!(h, RuleHealth::Quarantined { .. })).count();
        self.evaluation.rules.get_or_create(&labels(&[("health", "ok")])).set((view.rules.len() - quarantined) as i64);
        self.evaluation.rules.get_or_create(&labels(&[("health", "quarantined")])).set(quarantined as i64);
        for state in [State::Pending, State::Firing, State::Resolved] {
            let n = view.instances.iter().filter(|i| i.instance.state == state).count();
            self.evaluation.instances.get_or_create(&labels(&[("state", state.as_str())])).set(n as i64);
        }
        if let Some(ledger) = ledger {
            self.decisions.ledger_records.set(ledger.len() as i64);
        }
        const STATES: [(HealthState, &str); 5] = [
            (HealthState::Starting, "starting"),
            (HealthState::Up, "up"),
            (HealthState::Degraded, "degraded"),
            (HealthState::Unavailable, "unavailable"),
            (HealthState::Stopped, "stopped"),
        ];
        for h in health.snapshot() {
            for (state, name) in STATES {
                let g = self.sensors.sensor_state.get_or_create(&labels(&[("sensor", &h.name), ("state", name)]));
                g.set(i64::from(h.state == state));
            }
            self.sensors
                .sensor_reads
                .get_or_create(&labels(&[("sensor", &h.name)]))
                .inner()
                .store(h.reads, Ordering::Relaxed);
            for (kind, n) in &h.errors {
                self.sensors
                    .sensor_errors
                    .get_or_create(&labels(&[("sensor", &h.name), ("kind", kind)]))
                    .inner()
                    .store(*n, Ordering::Relaxed);
            }
        }
    }

    /// Updates the dispatcher's metrics: actions in effect, drifts, the breaker.
    pub fn refresh_dispatch(&self, status: &DispatchStatus) {
        self.dispatch.actions_in_effect.set(status.in_effect.len() as i64);
        let (reverted, changed) = status.drift_counts;
        for (kind, n) in [("reverted", reverted), ("changed", changed)] {
            self.dispatch.actions_drifted.get_or_create(&labels(&[("kind", kind)])).inner().store(n, Ordering::Relaxed);
        }
        self.dispatch.breaker_tripped.set(i64::from(status.breaker.tripped_at.is_some()));
        self.dispatch.ledger_writable.set(i64::from(status.ledger.as_ref().is_none_or(|h| h.writable)));
        self.dispatch.repeat_offenders.set(status.offenders.iter().filter(|o| o.repeat_offender).count() as i64);
    }

    /// The exposition text in `format`.
    pub fn encode_as(&self, format: Format) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = match format {
            Format::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &self.registry),
            Format::Prometheus => prometheus_client::encoding::prometheus_text::encode(&mut out, &self.registry),
        };
        out
    }
}

/// The two exposition formats `/metrics` speaks.
///
/// They differ where tools trip: OpenMetrics names a counter's family
/// without `_total` (`# HELP rocemend_decisions`, sample
/// `rocemend_decisions_total`), which the Prometheus text parser of
/// `promtool check metrics` reads as a family with no help text; the
/// Prometheus text format names both `rocemend_decisions_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// OpenMetrics 1.0.0, for a scraper that asks for it.
    OpenMetrics,
    /// The Prometheus text format 0.0.4, for everyone else.
    Prometheus,
}

const OPENMETRICS: &str = "application/openmetrics-text";

impl Format {
    /// The format an `Accept` header asks for: OpenMetrics when it offers
    /// `application/openmetrics-text` at least as much as `text/plain` (as
    /// Prometheus' scrape does), else the Prometheus text format, the one
    /// an `Accept`-less `curl` or client_golang's default gets.
    pub fn negotiate(accept: Option<&hyper::header::HeaderValue>) -> Format {
        let Some(accept) = accept.and_then(|a| a.to_str().ok()) else {
            return Format::Prometheus;
        };
        let (mut openmetrics, mut text) = (0.0_f64, 0.0_f64);
        for range in accept.split(',') {
            let (media, q) = media_range(range);
            if media.eq_ignore_ascii_case(OPENMETRICS) {
                openmetrics = openmetrics.max(q);
            } else if media.eq_ignore_ascii_case("text/plain") {
                text = text.max(q);
            }
        }
        if openmetrics > 0.0 && openmetrics >= text {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    /// The `Content-Type` of an exposition in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
            Format::Prometheus => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
        }
    }
}

/// A media range of an `Accept` header: its type and its `q` (1 when absent
/// or unreadable, as RFC 9110 defaults it).
fn media_range(range: &str) -> (&str, f64) {
    let mut parts = range.split(';').map(str::trim);
    let media = parts.next().unwrap_or_default();
    let q = parts
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("q"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(1.0);
    (media, q)
}

#[cfg(test)]
mod tests;
