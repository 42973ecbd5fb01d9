//! The action path under SIGKILL: a daemon in enforce mode escalating the
//! PFC watchdog of eight simulated SONiC switches (one storm per switch,
//! staggered, each ending 0.8 s later) is killed at a random moment
//! between 0.2 and 4 s after each start, again and again, on the same state
//! directory, and finally left to finish. Kills land in every window: before
//! the intent, between the intent and the Set, between the Set and the
//! outcome, and inside undos.
//!
//! What the switches say, read from their own state (not from the ledger):
//!
//! - after every kill, a port that holds other values than its original
//!   holds exactly what a live record of the ledger (an intent, or an action
//!   in effect) says the daemon set there: no change without its record;
//! - no port is ever set to the escalation while it already holds it (each
//!   escalation is followed by a restore before the next): nothing applied twice;
//! - every prior in the ledger is the port's true original;
//! - at the end, every port holds its original values: no undo lost.
//!
//! `ROCEMEND_KILL_CYCLES` sets the number of kills (default 100; the
//! 1,000-cycle figures of docs/safety.md come from `scripts/kill-loop.sh`),
//! `ROCEMEND_KILL_SEED` the seed (printed, to replay a failure).

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::storms::{self, Entry, Leaf, PORT};
use common::Daemon;
use engine::dispatch::{Decision, Phase, Verdict};
use engine::ledger::{Filter, Ledger, Retention};
use engine::Store;

/// Recorded time: a sample every 100 ms for 4.5 s.
const SAMPLES: u64 = 45;

/// node-01's NIC n storms from 0.3 + 0.2·n s for 0.8 s. The last storm ends
/// at 2.5 s and resolves (1 s of quiet after the 300 ms window) by 3.9 s.
fn storm(nic: usize) -> std::ops::Range<u64> {
    let start = 300 + 200 * nic as u64;
    start..start + 800
}

/// A small deterministic generator (xorshift64*): the kill moments.
struct Moments(u64);

impl Moments {
    fn next_ms(&mut self, from: u64, to: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        from + self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % (to - from)
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every decision of the ledger in `state` (read from a copy, so the next
/// daemon finds its state directory free).
fn ledger_of(state: &Path, scratch: &Path) -> Vec<Decision> {
    let db = state.join("state.sled");
    if !db.exists() {
        return Vec::new();
    }
    let _ = std::fs::remove_dir_all(scratch);
    copy_dir(&db, scratch);
    let store = Store::open(scratch).expect("the copied state opens");
    let ledger = Ledger::open(&store, Retention::default()).expect("the ledger opens");
    ledger.list(&Filter::default()).expect("the ledger reads")
}

fn switch_of(d: &Decision) -> &str {
    d.proposal.action.target.get("switch").unwrap_or("")
}

/// The fields a prior says the action set (or found), as the switch shows them.
fn fields(prior: Option<&engine::Prior>, which: &str) -> BTreeMap<String, Option<String>> {
    // pfcwd records the port's whole entry: `{"before": {"port": …, "entry": {…}|null}, "after": …}`.
    let side = prior.and_then(|p| p.as_json().get(which));
    let object = side.and_then(|v| v.get("entry")).and_then(|v| v.as_object()).cloned().unwrap_or_default();
    object.into_iter().map(|(k, v)| (k, v.as_str().map(str::to_string))).collect()
}

fn holds(entry: &Entry, wanted: &BTreeMap<String, Option<String>>) -> bool {
    wanted.iter().all(|(k, v)| entry.as_ref().and_then(|e| e.get(k)).cloned() == *v)
}

/// After a kill: every port that differs from its original holds what a
/// live record (an intent, or an action in effect) of its switch set there.
fn check_changes_have_records(leaves: &[Leaf], originals: &[Entry], decisions: &[Decision], cycle: usize) {
    for (leaf, original) in leaves.iter().zip(originals) {
        let now = leaf.now();
        if &now == original {
            continue;
        }
        let live = decisions.iter().filter(|d| switch_of(d) == leaf.name && engine::ledger::is_live(d));
        let explained = live.into_iter().any(|d| {
            let prior = match &d.verdict {
                Verdict::Executed { outcome } => outcome.prior.as_ref().or(d.prior.as_ref()),
                _ if d.phase == Phase::Intent => d.prior.as_ref(),
                _ => None,
            };
            let set = if d.undo_of.is_some() { fields(prior, "before") } else { fields(prior, "after") };
            // A kill between the two Sets of a replace (the entry deleted, not yet written)
            // leaves no entry: the middle of this record's own change.
            let mid_replace =
                now.is_none() && !fields(prior, "before").is_empty() && !fields(prior, "after").is_empty();
            mid_replace || (!set.is_empty() && holds(&now, &set))
        });
        let records: Vec<String> = decisions
            .iter()
            .filter(|d| switch_of(d) == leaf.name)
            .map(|d| format!("{} {} {:?} undo_of={:?} prior={:?}", d.id, d.verdict.name(), d.phase, d.undo_of, d.prior))
            .collect();
        assert!(
            explained,
            "cycle {cycle}: {} {PORT} holds {now:?} (original {original:?}) with no live record of it; its records:\n{}",
            leaf.name,
            records.join("\n")
        );
    }
}

/// Kill figures for the log and docs/safety.md.
#[derive(Default, Debug)]
struct Figures {
    kills: usize,
    escalations_sent: usize,
    restores_sent: usize,
}

#[test]
fn sigkill_at_random_points_loses_no_undo_applies_nothing_twice_and_leaves_nothing_changed() {
    let cycles: usize = std::env::var("ROCEMEND_KILL_CYCLES").ok().and_then(|v| v.parse().ok()).unwrap_or(100);
    let seed: u64 = std::env::var("ROCEMEND_KILL_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0x5eed_2026);
    println!("kill loop: {cycles} cycles, seed {seed} (ROCEMEND_KILL_SEED to replay)");
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let leaves = storms::leaves(&rt);
    let originals: Vec<Entry> = leaves.iter().map(Leaf::now).collect();

    let dir = tempfile::tempdir().unwrap();
    storms::recording(&dir.path().join("storms.jsonl"), SAMPLES, storm);
    let config = storms::configure(dir.path(), &leaves, "storms.jsonl", "1s");
    let (state, scratch, log) =
        (dir.path().join("state"), dir.path().join("state-copy"), dir.path().join("daemon.log"));
    let socket = dir.path().join("control.sock");
    let mut moments = Moments(seed | 1);
    let started = Instant::now();
    for cycle in 0..cycles {
        let mut daemon = Daemon::start(&config, &socket, &log);
        std::thread::sleep(Duration::from_millis(moments.next_ms(200, 4000)));
        daemon.kill();
        let decisions = ledger_of(&state, &scratch);
        check_changes_have_records(&leaves, &originals, &decisions, cycle);
    }
    // The last run finishes: every storm ends, every instance resolves, every escalation is undone.
    let mut daemon = Daemon::start(&config, &socket, &log);
    assert!(daemon.wait_exit(storms::RUN_ENDS_WITHIN), "the last run ends with its recording:\n{}", daemon.log());
    let decisions = ledger_of(&state, &scratch);

    let mut figures = Figures { kills: cycles, ..Figures::default() };
    for (leaf, original) in leaves.iter().zip(&originals) {
        if &leaf.now() != original {
            let records: Vec<String> = decisions
                .iter()
                .filter(|d| switch_of(d) == leaf.name)
                .map(|d| {
                    format!("{} {} {:?} undo_of={:?} steps={:?}", d.id, d.verdict.name(), d.phase, d.undo_of, d.steps)
                })
                .collect();
            let log = daemon.log();
            let tail: Vec<&str> = log.lines().rev().take(60).collect();
            panic!(
                "{} {PORT} was left changed; history {:?}\nrecords:\n{}\nlog (last lines, newest first):\n{}",
                leaf.name,
                leaf.history,
                records.join("\n"),
                tail.join("\n")
            );
        }
        let history = leaf.history.lock().unwrap().clone();
        let history = storms::changes_of(history, original);
        // Every change alternates: escalated, restored, escalated, ...
        for (i, entry) in history.iter().enumerate() {
            let escalated = entry != original;
            assert_eq!(escalated, i % 2 == 1, "{}: change {i} {entry:?} of {history:?}", leaf.name);
        }
        figures.escalations_sent += history.len() / 2;
        figures.restores_sent += history.len() / 2;
        for d in decisions.iter().filter(|d| switch_of(d) == leaf.name && d.undo_of.is_none()) {
            let prior = match &d.verdict {
                Verdict::Executed { outcome } => outcome.prior.as_ref().or(d.prior.as_ref()),
                _ => d.prior.as_ref(),
            };
            if prior.is_some() {
                let before = fields(prior, "before");
                assert!(holds(original, &before), "{}: a prior {before:?} is not the original {original:?}", d.id);
            }
        }
    }
    let live: Vec<&Decision> = decisions.iter().filter(|d| engine::ledger::is_live(d)).collect();
    assert!(live.is_empty(), "records still live at the end: {live:#?}");
    println!(
        "kill loop: {} kills in {:.0} s; {} escalations and {} restores reached the switches; \
         0 undos lost, 0 ports left changed, 0 double applies",
        figures.kills,
        started.elapsed().as_secs_f64(),
        figures.escalations_sent,
        figures.restores_sent
    );
    assert!(figures.escalations_sent > 0, "the storms were escalated at least once");
}
