//! Restart time with a long history: the daemon opens its state, restores
//! what is in effect and waiting for approval, settles interrupted intents,
//! and handles its first sample. With 100,000 ledger records (the default
//! retention bound) this must take at most 1 s: the live records come from
//! the ledger's index, not from a scan of the history.
//!
//! The first bench measures the whole path to the first decided sample; the
//! second only opening the ledger and building the dispatcher, the part
//! that grows with the history; the third what reading the whole history
//! costs, as restarts did before the ledger's live index.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use engine::contracts::Outcome;
use engine::dispatch::{ActuatorRoute, Decision, DispatchConfig, Dispatcher, Mode, Phase, Step, Verdict};
use engine::evaluator::EngineEvent;
use engine::ledger::{Ledger, Retention};
use engine::policy::PolicySettings;
use engine::testing::Knobs;
use engine::{rule, Action, CounterSpec, Evaluator, Helpers, Labels, Proposal, Sample, SampleKind, SeriesSpec};
use engine::{SeriesTable, Severity, Store, Value, SECOND};

/// Records in the ledger: the default retention bound.
const RECORDS: usize = 100_000;
/// Of which still in effect (an action per port of a large incident).
const IN_EFFECT: usize = 200;

fn proposal(i: usize) -> Proposal {
    let node = format!("node-{:05}", i % 4096);
    Proposal {
        id: format!("p{i}"),
        rule: "pfc-storm".into(),
        rule_hash: "ab".repeat(32),
        rule_mode: Mode::Enforce,
        severity: Severity::Critical,
        subject: Labels::from_pairs([("node", node.as_str()), ("netdev", "eth3")]),
        action: Action {
            kind: "node.isolate".into(),
            target: Labels::from_pairs([("node", node.as_str()), ("netdev", format!("eth{}", i % 8).as_str())]),
            params: Default::default(),
        },
        jobs: Vec::new(),
        values: vec![("paused_us_per_s".into(), 900_000.0)],
        active_at: i as i64 * SECOND,
        sample_at: i as i64 * SECOND,
        decided_at: i as i64 * SECOND,
        restored: false,
    }
}

/// A state directory holding `RECORDS` decisions: most decided long ago
/// (held, suppressed, undone), `IN_EFFECT` still in effect.
fn history(dir: &Path) {
    let store = Store::open(dir).expect("store");
    let ledger = Ledger::open(&store, Retention::default()).expect("ledger");
    for i in 0..RECORDS {
        let mut d = Decision::new(
            ledger.next_id().expect("id"),
            proposal(i),
            Mode::Enforce,
            Step { at: i as i64 * SECOND, what: "proposed".into() },
            i as i64 * SECOND,
        );
        d.phase = Phase::Done;
        d.verdict = if i >= RECORDS - IN_EFFECT {
            let prior = engine::Prior::from_json(serde_json::json!({ "before": "default", "after": "ours" }));
            Verdict::Executed { outcome: Outcome { summary: "set".into(), requests: vec![], prior: Some(prior) } }
        } else {
            Verdict::Held { reason: "limit: at most 3 per 10m".into() }
        };
        ledger.put(&d).expect("put");
    }
    store.flush().expect("flush");
}

fn dispatcher(ledger: Ledger) -> Dispatcher {
    Dispatcher::new(
        DispatchConfig {
            mode: Mode::Enforce,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute {
                pattern: "*".into(),
                actuator: Arc::new(Knobs::default()),
                destructive: true,
            }],
            timeout: Duration::from_secs(1),
            policy: PolicySettings::defaults(),
            topology: None,
        },
        Some(ledger),
    )
}

const RULE: &str = r#"
fn fire(w) { w.paused > 500000.0 }
#{
    name: "pfc-storm",
    select: ["ethtool_tx_prio_pause_duration_us"],
    group_by: ["node", "netdev"],
    windows: #{ paused: rate("ethtool_tx_prio_pause_duration_us", "1s") },
    actions: [ #{ action: "node.isolate", target: #{ node: "{node}", netdev: "{netdev}" } } ],
}
"#;

/// Opens the store, waiting for the previous iteration's handle to let go
/// of its file lock (sled releases it from its flusher thread).
fn open(dir: &Path) -> Store {
    loop {
        match Store::open(dir) {
            Ok(store) => return store,
            Err(e) if format!("{e:?}").contains("WouldBlock") => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => panic!("open the store: {e:?}"),
        }
    }
}

/// Everything a restart does before its first sample is handled.
fn restart_to_first_sample(dir: &Path, runtime: &tokio::runtime::Runtime) {
    let store = open(dir);
    let ledger = Ledger::open(&store, Retention::default()).expect("ledger");
    let mut dispatcher = dispatcher(ledger);
    runtime.block_on(dispatcher.reconcile(0));
    let series = SeriesTable::default();
    let rules = rule::load_sources(&[("pfc-storm.rhai".into(), RULE.into())], Helpers::default()).expect("rules");
    let mut evaluator = Evaluator::new(series.clone(), rules, Some(store)).expect("evaluator");
    let sensor = series.add_sensor("ethtool", 100);
    let spec = SeriesSpec {
        metric: "ethtool_tx_prio_pause_duration_us".into(),
        labels: Labels::from_pairs([("node", "node-00001"), ("netdev", "eth3")]),
        kind: SampleKind::Counter(CounterSpec::U64),
    };
    let id = series.register(sensor, &spec).expect("series");
    evaluator.ingest(&[Sample { series: id, ts: SECOND, value: Value::Count(0) }]);
    let mut events: Vec<EngineEvent> = Vec::new();
    evaluator.evaluate(SECOND, &mut events);
    assert!(dispatcher.policy().in_effect().count() == IN_EFFECT);
}

fn restart(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    history(dir.path());
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let mut group = c.benchmark_group("restart");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("to_first_sample_100k_ledger_records", |b| {
        b.iter(|| restart_to_first_sample(dir.path(), &runtime))
    });
    group.bench_function("dispatcher_from_100k_ledger_records", |b| {
        b.iter(|| {
            let store = open(dir.path());
            let ledger = Ledger::open(&store, Retention::default()).expect("ledger");
            dispatcher(ledger).policy().in_effect().count()
        })
    });
    // What a restart cost when it read the whole history (before the live
    // index): every record decoded.
    group.bench_function("scan_of_100k_ledger_records", |b| {
        b.iter(|| {
            let store = open(dir.path());
            let ledger = Ledger::open(&store, Retention::default()).expect("ledger");
            ledger.list(&engine::ledger::Filter::default()).expect("list").len()
        })
    });
    group.finish();
}

criterion_group!(benches, restart);
criterion_main!(benches);
