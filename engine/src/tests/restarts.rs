//! Restarts: a firing instance kept in the store survives the process,
//! proposes again once (marked restored) and is not resolved on the empty
//! windows of the new process's first samples.

use super::common;

use common::{load, pause_counter, proposals, secs, storm, storm_with, transitions, Rig, HEALTHY, STORMING};
use engine::{EngineEvent, Helpers, SeriesTable, State, Store};

/// Opens the store again after the first "process" dropped it. sled
/// releases its file lock from its flusher thread, a moment after the drop,
/// so a reopen in the same process may have to wait for it.
fn reopen(path: &std::path::Path) -> Store {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        match Store::open(path) {
            Ok(store) => return store,
            Err(e) if std::time::Instant::now() < deadline && format!("{e:?}").contains("WouldBlock") => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            Err(e) => panic!("reopen the store: {e:?}"),
        }
    }
}

/// Fires `rule` for n1/eth0 in one process with a store in a temporary
/// directory, then starts a second process (new series table, same rules,
/// same directory) and steps it: the first sample after the restart has no
/// increase, then storming (the instance must still be firing, with its
/// episode from before the restart), then healthy for two seconds.
/// Returns that process's events by second, from t=30.
fn fire_then_restart(rule: &str) -> (Rig, Vec<Vec<EngineEvent>>) {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let store = Store::open(dir.path()).expect("open the store");
        let rules = load(&[("pfc-storm.rhai", rule)], Helpers::default());
        let mut rig = Rig::with(SeriesTable::default(), rules, Some(store)).expect("an empty store");
        let mut eth0 = pause_counter(&rig, "n1", "eth0");
        rig.step(secs(0), &[eth0.add(0)]);
        assert_eq!(proposals(&rig.step(secs(1), &[eth0.add(STORMING)])).len(), 1);
        // Dropped here, as on shutdown, without an explicit flush.
    }
    let store = reopen(dir.path());
    let rules = load(&[("pfc-storm.rhai", rule)], Helpers::default());
    let mut rig = Rig::with(SeriesTable::default(), rules, Some(store)).expect("restore");
    let mut eth0 = pause_counter(&rig, "n1", "eth0");
    eth0.reading = 1_800_000;
    assert_eq!(rig.state("pfc-storm", &[("netdev", "eth0")]), None, "not seen yet in this process");
    // The instance found firing in the store proposes again once, marked as
    // restored, so a proposal a crash lost is not lost (the dispatcher drops
    // it when its ledger shows it decided). Nothing else may come out of it.
    let mut first = rig.step(secs(30), &[eth0.add(0)]);
    let is_restored = |e: &EngineEvent| matches!(e, EngineEvent::Proposal(p) if p.restored);
    let restored: Vec<&EngineEvent> = first.iter().filter(|e| is_restored(e)).collect();
    assert_eq!(restored.len(), 1, "one restored proposal: {first:?}");
    assert!(matches!(restored[0], EngineEvent::Proposal(p) if p.active_at == secs(1)), "{restored:?}");
    first.retain(|e| !is_restored(e));
    let mut events = vec![first];
    events.push(rig.step(secs(31), &[eth0.add(STORMING)]));
    assert_eq!(rig.state("pfc-storm", &[("netdev", "eth0")]), Some(State::Firing));
    assert_eq!(rig.ev.instances()[0].instance.active_at, secs(1), "the episode from before the restart");
    events.push(rig.step(secs(32), &[eth0.add(HEALTHY)]));
    events.push(rig.step(secs(33), &[eth0.add(HEALTHY)]));
    (rig, events)
}

#[test]
fn a_firing_instance_survives_a_restart_without_a_second_proposal() {
    // max_over is NaN until the first rate is known, so the first sample
    // after the restart (which has no increase) decides nothing by itself;
    // the test below covers `rate`, whose empty window reads 0.
    let (_, events) = fire_then_restart(&storm_with("max_over", "2s", ""));
    assert!(events[0].is_empty() && events[1].is_empty(), "no second proposal, no transition: {events:?}");
    assert!(events[2].is_empty(), "the storm is still inside the 2 s window: {:?}", events[2]);
    assert_eq!(transitions(&events[3]), vec![(State::Firing, State::Resolved)]);
}

/// Regression: an empty `rate` window reads 0, so `clear(w)` held on the
/// first sample after a restart and the instance resolved (and would have
/// been undone) on no data.
#[test]
fn a_restored_firing_instance_is_not_resolved_by_the_empty_window_of_its_first_sample() {
    let (_, events) = fire_then_restart(&storm(""));
    assert!(events[0].is_empty(), "resolved before any data was seen: {:?}", events[0]);
    assert!(events[1].is_empty(), "{:?}", events[1]);
    assert_eq!(transitions(&events[2]), vec![(State::Firing, State::Resolved)]);
}

/// The node condition starts from what fires on its node: an instance
/// restored firing emits no transition until it ends, so a consumer that
/// only counted transitions would call the node healthy after a restart.
#[test]
fn an_instance_restored_firing_is_listed_for_its_node_before_any_sample() {
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let store = Store::open(dir.path()).expect("open the store");
        let rules = load(&[("pfc-storm.rhai", &storm(""))], Helpers::default());
        let mut rig = Rig::with(SeriesTable::default(), rules, Some(store)).expect("an empty store");
        let mut eth0 = pause_counter(&rig, "n1", "eth0");
        rig.step(secs(0), &[eth0.add(0)]);
        assert_eq!(proposals(&rig.step(secs(1), &[eth0.add(STORMING)])).len(), 1);
    }
    let store = reopen(dir.path());
    let rules = load(&[("pfc-storm.rhai", &storm(""))], Helpers::default());
    let rig = Rig::with(SeriesTable::default(), rules, Some(store)).expect("restore");
    let severity = rig.ev.rules().next().expect("one rule").0.severity;
    assert_eq!(rig.ev.instances(), vec![], "not seen yet in this process");
    assert_eq!(
        rig.ev.firing_where("node", "n1"),
        vec![("pfc-storm".to_string(), severity, "node=n1,netdev=eth0".to_string())]
    );
    assert_eq!(rig.ev.firing_where("node", "n2"), vec![], "another node's");
    assert_eq!(rig.ev.firing_where("netdev", "eth0").len(), 1, "any label of the rule's group_by");
}
