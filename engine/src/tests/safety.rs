//! The safety policy end to end through the engine's public API: rules
//! evaluated on samples, every proposal handed to the [`Dispatcher`] and
//! every resolution to [`Dispatcher::instance_resolved`], the way the run
//! loop forwards them, with [`Knobs`], an actuator whose targets the tests
//! can read and change by hand.

use super::common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::{load, secs, Rig};
use engine::dispatch::{ActuatorRoute, Decision, DispatchConfig, Dispatcher, Mode, Verdict};
use engine::ledger::{Ledger, Retention};
use engine::policy::{BreakerConfig, Limits, PolicySettings, RetryConfig, TargetLimits, UndoConfig};
use engine::testing::Knobs;
use engine::topology::EXAMPLE_INVENTORY;
use engine::{
    ActionKindDecl, CounterSpec, EngineEvent, Helpers, Labels, LimitClass, Nanos, SampleKind, SeriesId, SeriesTable,
    State, Store, Topology,
};

/// The policy knobs a test sets; everything else is the playbook default.
struct Policy {
    limits: Limits,
    trip_after: u32,
    target: TargetLimits,
    undo: Vec<String>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            limits: Limits::default(),
            trip_after: BreakerConfig::default().trip_after,
            target: TargetLimits::default(),
            undo: vec![],
        }
    }
}

/// Knobs standing in for the fabric's actuators: they declare the kinds
/// these rules propose as the cordon and rail actuators do, so the limits
/// count them.
fn knobs() -> Arc<Knobs> {
    Arc::new(Knobs::declaring(vec![
        ActionKindDecl::new("node.cordon", &["node"]).fleet().limited_by(LimitClass::NodeCordon),
        ActionKindDecl::new("rail.drain", &["node", "rail"]).fleet().limited_by(LimitClass::RailDrain),
        ActionKindDecl::new("*", &[]),
    ]))
}

/// A dispatcher in enforce mode sending every kind to `knobs` (destructive),
/// recording to a temporary ledger.
fn dispatcher(policy: Policy, knobs: Arc<Knobs>, topology: Option<Arc<Topology>>) -> Dispatcher {
    let settings = PolicySettings::new(
        &policy.limits,
        &BreakerConfig { trip_after: policy.trip_after, window: std::time::Duration::from_secs(600) },
        &policy.target,
        &[],
        &UndoConfig { on_resolve: policy.undo },
        // One attempt: the knobs never fail, and a retry would hide a second call.
        &RetryConfig { attempts: 1, backoff: std::time::Duration::from_millis(10) },
    )
    .expect("the test policy parses");
    let ledger =
        Ledger::open(&Store::temporary().expect("a temporary sled"), Retention::default()).expect("the ledger opens");
    Dispatcher::new(
        DispatchConfig {
            mode: Mode::Enforce,
            rule_modes: HashMap::new(),
            routes: vec![ActuatorRoute { pattern: "*".into(), actuator: knobs, destructive: true }],
            timeout: Duration::from_secs(1),
            policy: settings,
            topology,
        },
        Some(ledger),
    )
}

/// The evaluator and the dispatcher wired as the run loop wires them.
struct Loop {
    rig: Rig,
    dispatcher: Dispatcher,
    /// Every proposal the rules made, in order.
    proposals: Vec<engine::Proposal>,
}

impl Loop {
    /// Ingests `samples` at `t`, evaluates, and forwards proposals and
    /// resolutions in event order; returns the decisions made.
    async fn step(&mut self, t: Nanos, samples: &[(SeriesId, u64)]) -> Vec<Decision> {
        let mut decisions = Vec::new();
        for event in self.rig.step(t, samples) {
            match event {
                EngineEvent::Proposal(p) => {
                    self.proposals.push(p.clone());
                    decisions.push(self.dispatcher.dispatch(p).await);
                }
                EngineEvent::Transition { rule, subject, from: State::Firing, at, .. } => {
                    decisions.extend(self.dispatcher.instance_resolved(&rule, &subject, at).await);
                }
                _ => {}
            }
        }
        decisions
    }
}

fn held_reason(d: &Decision) -> Option<&str> {
    match &d.verdict {
        Verdict::Held { reason } => Some(reason),
        _ => None,
    }
}

fn is_executed(d: &Decision) -> bool {
    matches!(d.verdict, Verdict::Executed { .. })
}

/// Like the standard `gpu-xid` rule: a critical XID on any GPU cordons the node.
const GPU_XID: &str = r##"
fn fire(w) { w.critical_xids >= 1.0 }
#{
    name: "gpu-xid",
    severity: "critical",
    select: [`gpu_xid{xid=~"48|63|64|74|79|94|95"}`],
    group_by: ["node"],
    windows: #{ critical_xids: count_events("gpu_xid", "5m") },
    cooldown: "30m",
    stale_after: "36500d",
    actions: [ #{ action: "node.cordon", target: #{ node: "{node}" }, params: #{ reason: "xid" } } ],
}
"##;

#[tokio::test]
async fn fifty_simultaneous_node_faults_with_a_limit_of_three_cordons() {
    let rig = Rig::new(&[("gpu_xid.rhai", GPU_XID)]);
    let mut batch: Vec<(SeriesId, u64)> = (0..50)
        .map(|i| (rig.series_of("gpu_xid", &[("node", &format!("node-{i:02}")), ("xid", "79")], SampleKind::Event), 79))
        .collect();
    // An application XID on a 51st node is not the node's fault: no proposal.
    batch.push((rig.series_of("gpu_xid", &[("node", "node-50"), ("xid", "13")], SampleKind::Event), 13));

    let knobs = knobs();
    let policy =
        Policy { limits: Limits { max_cordons: Some(3), ..Limits::default() }, trip_after: 5, ..Policy::default() };
    let mut run = Loop { rig, dispatcher: dispatcher(policy, knobs.clone(), None), proposals: vec![] };
    let decisions = run.step(secs(1), &batch).await;

    assert_eq!(run.proposals.len(), 50, "one proposal per node with a critical XID, all at the same evaluation");
    assert!(run.proposals.iter().all(|p| p.action.kind == "node.cordon" && p.decided_at == secs(1)));
    assert_eq!(decisions.len(), 50);
    assert_eq!(decisions.iter().filter(|d| is_executed(d)).count(), 3, "{decisions:#?}");
    assert_eq!(knobs.executes(), 3, "only three cordons reached the actuator");
    let held: Vec<&str> = decisions.iter().filter_map(held_reason).collect();
    assert_eq!(held.len(), 47, "every other proposal is held: {decisions:#?}");
    assert!(held.iter().all(|r| !r.is_empty()), "{held:?}");
    // Five limit hits trip the breaker; from then on it is the breaker that holds.
    assert!(held[..5].iter().all(|r| r.contains("at most 3 nodes cordoned")), "{held:#?}");
    assert!(held[5..].iter().all(|r| r.starts_with("circuit breaker tripped")), "{held:#?}");
    assert!(run.dispatcher.breaker().tripped_at.is_some());
    // The three that went out are the first three proposed; the ledger has every one.
    assert!(decisions[..3].iter().all(is_executed), "{decisions:#?}");
    assert_eq!(run.dispatcher.ledger().map(Ledger::len), Some(50));
}

/// Like the standard `symbol-errors` rule: a symbol-error burst drains the
/// NIC's rail on that node; `{rail}` comes from the inventory.
const SYMBOL_ERRORS: &str = r##"
fn fire(w) { w.symbol_errors > 50.0 }
fn clear(w) { w.symbol_errors <= 5.0 }
#{
    name: "symbol-errors",
    select: ["ethtool_rx_pcs_symbol_err_phy"],
    group_by: ["node", "netdev"],
    windows: #{ symbol_errors: increase("ethtool_rx_pcs_symbol_err_phy", "10s") },
    cooldown: "10m",
    actions: [ #{ action: "rail.drain", target: #{ node: "{node}", rail: "{rail}", netdev: "{netdev}" } } ],
}
"##;

#[tokio::test]
async fn two_rails_of_one_plane_failing_together_drain_only_one() {
    let topology = Arc::new(Topology::parse(EXAMPLE_INVENTORY, "example inventory").expect("the example parses"));
    let series = SeriesTable::new(Some(topology.clone()), Labels::default());
    let helpers = Helpers::new(Some(series.clone()), Some(topology.clone()));
    let rig = Rig::with(series, load(&[("symbol_errors.rhai", SYMBOL_ERRORS)], helpers), None).unwrap();
    // Rails 1 and 2 are plane 0; rail 5 is plane 1.
    let nics = [("node-04", "eth1"), ("node-01", "eth2"), ("node-02", "eth5")];
    let ids: Vec<SeriesId> = nics
        .iter()
        .map(|(node, netdev)| {
            rig.counter("ethtool_rx_pcs_symbol_err_phy", &[("node", node), ("netdev", netdev)], CounterSpec::U64)
        })
        .collect();

    let knobs = knobs();
    let mut run =
        Loop { rig, dispatcher: dispatcher(Policy::default(), knobs.clone(), Some(topology)), proposals: vec![] };
    let quiet: Vec<(SeriesId, u64)> = ids.iter().map(|id| (*id, 0)).collect();
    assert!(run.step(secs(0), &quiet).await.is_empty());
    let burst: Vec<(SeriesId, u64)> = ids.iter().map(|id| (*id, 500)).collect();
    let decisions = run.step(secs(1), &burst).await;

    let by_rail = |rail: &str| {
        decisions
            .iter()
            .find(|d| d.proposal.action.kind == "rail.drain" && d.proposal.action.target.get("rail") == Some(rail))
            .unwrap_or_else(|| panic!("no rail.drain decision for rail {rail}: {decisions:#?}"))
    };
    assert_eq!(decisions.len(), 3, "{decisions:#?}");
    let (one, two) = (by_rail("1"), by_rail("2"));
    let (drained, held) = match (is_executed(one), is_executed(two)) {
        (true, false) => (one, two),
        (false, true) => (two, one),
        _ => panic!("exactly one of rails 1 and 2 (both plane 0) is drained: {decisions:#?}"),
    };
    let reason = held_reason(held).unwrap_or_else(|| panic!("the other is held: {held:#?}"));
    assert!(reason.contains("plane 0"), "the reason names the plane: {reason}");
    let drained_rail = drained.proposal.action.target.get("rail").unwrap();
    assert!(reason.contains(&format!("rail {drained_rail} already drained")), "and the rail drained: {reason}");
    // The limit is per plane: a rail of plane 1 drains at the same time.
    assert!(is_executed(by_rail("5")), "{decisions:#?}");
    assert_eq!(knobs.executes(), 2);
}

/// Fires while `flap_flag` is 1, clears while it is 0; 30 s cooldown.
const FLAPPING: &str = r##"
fn fire(w) { w.flag >= 1.0 }
fn clear(w) { w.flag < 1.0 }
#{
    name: "flapping",
    select: ["flap_flag"],
    group_by: ["node"],
    windows: #{ flag: last("flap_flag") },
    cooldown: "30s",
    actions: [ #{ action: "ecn.lower", target: #{ node: "{node}" }, params: #{ factor: "0.5" } } ],
}
"##;

#[tokio::test]
async fn a_flapping_rule_produces_at_most_one_action_per_cooldown() {
    // (per-target limits, actions executed, the reason the others are suppressed)
    let cases = [
        // The default: 5 min cooldown per target, so one action in two minutes.
        (TargetLimits::default(), 1, "target cooldown: ecn.lower on {node=\"n1\"}"),
        // A target cooldown no longer than the rule's lets the second through;
        // the per-target rate limit (two per hour) stops the third.
        (
            TargetLimits {
                cooldown: std::time::Duration::from_secs(30),
                max_per_window: 2,
                window: std::time::Duration::from_secs(3600),
            },
            2,
            "rate limit: 2 actions on {node=\"n1\"} within 3600s (at most 2)",
        ),
    ];
    for (target, executed, reason) in cases {
        let what = format!("{target:?}");
        let rig = Rig::new(&[("flapping.rhai", FLAPPING)]);
        let flag = rig.series_of("flap_flag", &[("node", "n1")], SampleKind::Gauge);
        let knobs = knobs();
        let policy = Policy { target, undo: vec!["ecn.*".into()], ..Policy::default() };
        let mut run = Loop { rig, dispatcher: dispatcher(policy, knobs.clone(), None), proposals: vec![] };
        let mut decisions = Vec::new();
        for t in 0..120 {
            decisions.extend(run.step(secs(t), &[(flag, u64::from(t % 2 == 0))]).await);
        }

        // The rule itself: fires at 0 s, resolves at 1 s, and ignores the fault
        // until its cooldown is over (31 s), so it fires again at 32, 64 and 96 s.
        let fired_at: Vec<Nanos> = run.proposals.iter().map(|p| p.decided_at).collect();
        assert_eq!(fired_at, [0, 32, 64, 96].map(secs), "{what}");
        // An action is said again when its outcome is judged: the latest of each counts.
        let mut latest: Vec<&Decision> = Vec::new();
        for d in decisions.iter().filter(|d| d.undo_of.is_none()) {
            match latest.iter_mut().find(|l| l.id == d.id) {
                Some(l) => *l = d,
                None => latest.push(d),
            }
        }
        let actions = latest;
        let done = actions.iter().filter(|d| is_executed(d)).count();
        assert!((1..=4).contains(&done), "{what}: {done} actions in 120 s");
        assert_eq!(done, executed, "{what}: {actions:#?}");
        assert_eq!(knobs.executes(), executed, "{what}");
        for d in actions.iter().filter(|d| !is_executed(d)) {
            assert!(
                matches!(&d.verdict, Verdict::Suppressed { reason: r } if r.starts_with(reason)),
                "{what}: a proposal past the limits is suppressed with {reason:?}: {d:#?}"
            );
        }
        // Each action was undone when its instance resolved; nothing is left changed.
        let undone = decisions.iter().filter(|d| d.undo_of.is_some() && is_executed(d)).count();
        assert_eq!(undone, executed, "{what}: {decisions:#?}");
        assert_eq!(knobs.value(&Labels::from_pairs([("node", "n1")])).as_deref(), Some("default"), "{what}");
    }
}

#[tokio::test]
async fn undo_skips_a_target_changed_by_hand() {
    let rig = Rig::new(&[("flapping.rhai", FLAPPING)]);
    let ours = rig.series_of("flap_flag", &[("node", "a")], SampleKind::Gauge);
    let theirs = rig.series_of("flap_flag", &[("node", "b")], SampleKind::Gauge);
    let knobs = knobs();
    let policy = Policy { undo: vec!["ecn.*".into()], ..Policy::default() };
    let mut run = Loop { rig, dispatcher: dispatcher(policy, knobs.clone(), None), proposals: vec![] };
    let (a, b) = (Labels::from_pairs([("node", "a")]), Labels::from_pairs([("node", "b")]));

    let fired = run.step(secs(0), &[(ours, 1), (theirs, 1)]).await;
    assert_eq!(fired.len(), 2, "{fired:#?}");
    assert!(fired.iter().all(is_executed), "{fired:#?}");
    assert_eq!(knobs.value(&a).as_deref(), Some("ours"));
    // An operator retunes b by hand while the fault is still there.
    knobs.set_by_hand(&b, "set-by-hand");
    assert!(run.step(secs(1), &[(ours, 1), (theirs, 1)]).await.is_empty(), "still firing: nothing new");

    let resolved = run.step(secs(2), &[(ours, 0), (theirs, 0)]).await;
    let undos = resolved.iter().filter(|d| d.undo_of.is_some()).count();
    assert_eq!(undos, 2, "one undo decision per resolved instance: {resolved:#?}");
    // And each action judged effective as its rule cleared, before its undo.
    let effective = resolved
        .iter()
        .filter(|d| d.outcome.as_ref().and_then(|o| o.judged.as_ref()).is_some_and(|j| j.result.name() == "effective"));
    assert_eq!(effective.count(), 2, "{resolved:#?}");
    let undo_of = |node: &Labels| {
        let original = fired.iter().find(|d| &d.proposal.action.target == node).unwrap();
        resolved
            .iter()
            .find(|d| d.undo_of.as_deref() == Some(original.id.as_str()))
            .unwrap_or_else(|| panic!("no undo of {}: {resolved:#?}", original.id))
    };
    match &undo_of(&b).verdict {
        Verdict::Skipped { reason } => {
            assert!(reason.contains("target changed"), "{reason}");
            assert!(reason.contains("value is set-by-hand"), "the reason says what was found: {reason}");
        }
        other => panic!("the hand-changed target is left alone, not {other:?}"),
    }
    assert_eq!(knobs.value(&b).as_deref(), Some("set-by-hand"), "the operator's value stays");
    assert!(
        matches!(&undo_of(&a).verdict, Verdict::Executed { outcome } if outcome.summary == "restored default"),
        "{:#?}",
        undo_of(&a)
    );
    assert_eq!(knobs.value(&a).as_deref(), Some("default"), "the target left alone is restored");
    assert_eq!(knobs.undos(), 1, "only one undo reached the actuator");
}
