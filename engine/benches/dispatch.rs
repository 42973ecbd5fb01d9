//! The cost the safety policy and the ledger add between a proposal and its
//! dispatch: policy checks, the intent written and flushed to disk, the
//! actuator call (a no-op here), the outcome written. Target: p99 at most 1 ms.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use criterion::{criterion_group, criterion_main, Criterion};
use engine::dispatch::{ActuatorRoute, DispatchConfig, Dispatcher, Mode};
use engine::ledger::{Ledger, Retention};
use engine::policy::{BreakerConfig, Limits, PolicySettings, RetryConfig, TargetLimits, UndoConfig};
use engine::{
    Action, ActionKindDecl, Actuator, ActuatorError, Labels, LimitClass, Outcome, Proposal, RequestPlan, Severity,
    Store,
};

/// Changes nothing; declares `node.cordon` as the cordon actuator does, so
/// the cordon limit is counted as in the daemon.
struct Noop(Vec<ActionKindDecl>);

impl Noop {
    fn new() -> Noop {
        Noop(vec![ActionKindDecl::new("node.cordon", &["node"]).fleet().limited_by(LimitClass::NodeCordon)])
    }
}

#[async_trait]
impl Actuator for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn kinds(&self) -> &[ActionKindDecl] {
        &self.0
    }
    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        Ok(RequestPlan { actuator: "noop".into(), requests: vec![action.to_string()] })
    }
    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        Ok(Outcome { summary: "ok".into(), requests: vec![action.to_string()], prior: None })
    }
}

fn proposal(i: u64) -> Proposal {
    let node = format!("node-{i:06}");
    Proposal {
        id: format!("p{i}"),
        rule: "gpu-xid".into(),
        rule_hash: "ab".repeat(32),
        rule_mode: Mode::Enforce,
        severity: Severity::Critical,
        subject: Labels::from_pairs([("node", node.as_str())]),
        action: Action {
            kind: "ecn.lower".into(),
            target: Labels::from_pairs([("switch", "leaf-rail3"), ("port", node.as_str())]),
            params: BTreeMap::from([("factor".into(), "0.5".into())]),
        },
        jobs: Vec::new(),
        values: vec![("xids".into(), 1.0)],
        active_at: i as i64,
        sample_at: i as i64,
        decided_at: i as i64 * 1_000_000,
        restored: false,
    }
}

fn dispatcher(dir: &std::path::Path) -> Dispatcher {
    let store = Store::open(dir).expect("store");
    let ledger = Ledger::open(&store, Retention::default()).expect("ledger");
    let limits = Limits {
        max_cordons: Some(3),
        per_kind: BTreeMap::from([("ecn.lower".into(), u32::MAX)]),
        ..Limits::default()
    };
    let policy = PolicySettings::new(
        &limits,
        &BreakerConfig::default(),
        &TargetLimits::default(),
        &[],
        &UndoConfig::default(),
        &RetryConfig::default(),
    )
    .expect("policy");
    Dispatcher::new(
        DispatchConfig {
            mode: Mode::Enforce,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute { pattern: "*".into(), actuator: Arc::new(Noop::new()), destructive: true }],
            timeout: Duration::from_secs(1),
            policy,
            topology: None,
        },
        Some(ledger),
    )
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut d = dispatcher(&dir.path().join("state.sled"));

    // Percentiles of single dispatches, each a distinct target so every one
    // is executed: policy checks + intent flush + call + outcome flush.
    let n = 2_000u64;
    let mut times: Vec<Duration> = Vec::with_capacity(n as usize);
    for i in 0..n {
        let p = proposal(i);
        let start = Instant::now();
        let decision = rt.block_on(d.dispatch(p));
        times.push(start.elapsed());
        assert_eq!(decision.verdict.name(), "executed");
    }
    times.sort();
    let pct = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)];
    eprintln!(
        "dispatch (policy checks + intent flushed + outcome written) over {n} proposals: p50 {:?}  p90 {:?}  p99 {:?}  max {:?}",
        pct(0.50),
        pct(0.90),
        pct(0.99),
        times[times.len() - 1]
    );

    let mut i = 1_000_000u64;
    c.bench_function("dispatch_enforce_with_ledger", |b| {
        b.iter(|| {
            i += 1;
            rt.block_on(d.dispatch(proposal(i)))
        })
    });
    // A held proposal: policy only, the record buffered (no flush).
    let mut held = dispatcher(&dir.path().join("held.sled"));
    let mut j = 0u64;
    c.bench_function("dispatch_held_by_limit", |b| {
        b.iter(|| {
            j += 1;
            let mut p = proposal(j);
            p.action.kind = "node.cordon".into();
            p.action.target = Labels::from_pairs([("node", format!("n{j}").as_str())]);
            rt.block_on(held.dispatch(p))
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
