//! What the ledger costs on disk: decisions written as the daemon writes
//! them, then the sled directory measured.
//!
//! `cargo run --release -p rocemend-engine --example ledger_size [RECORDS] [DIR]`
//! (default 100,000 records, in a temp dir). The decisions go through a real
//! [`Dispatcher`] and its ledger, so each is written as often as the daemon
//! writes it: a PFC watchdog escalation reads its port, writes its intent
//! (flushed), then its outcome (flushed); its undo when the storm ends writes
//! its intent and outcome (flushed) and marks the escalation undone
//! (flushed); a proposal held by a limit is written once. Of every ten
//! records four are escalations, four their undos and two held proposals.
//! The retention bound is the default (100,000 records), so a run of more
//! shows compaction while running.
//!
//! Prints the records kept, the bytes of the directory (as `du` counts them:
//! blocks allocated), the bytes per record, and the same after the ledger is
//! closed and opened again.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine::contracts::{
    ActionKindDecl, Actuator, ActuatorError, Change, Outcome, Prepared, Prior, RequestPlan, Verification,
};
use engine::dispatch::{ActuatorRoute, DispatchConfig, Dispatcher, Mode};
use engine::ledger::{Ledger, Retention};
use engine::policy::PolicySettings;
use engine::{Action, Labels, Nanos, Proposal, Severity, Store, SECOND};

type Fields = BTreeMap<String, String>;

/// A PFC watchdog per port, as the `pfcwd` actuator reads and writes it.
#[derive(Default)]
struct Watchdogs {
    ports: Mutex<HashMap<String, Fields>>,
    kinds: Vec<ActionKindDecl>,
}

fn fields(action: &str, detection: &str) -> Fields {
    [("action", action), ("detection_time", detection), ("restoration_time", "200")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Watchdogs {
    fn read(&self, action: &Action) -> Fields {
        let ports = self.ports.lock().unwrap_or_else(|p| p.into_inner());
        ports.get(&action.target.to_string()).cloned().unwrap_or_else(|| fields("alert", "200"))
    }

    fn write(&self, action: &Action, value: Fields) {
        self.ports.lock().unwrap_or_else(|p| p.into_inner()).insert(action.target.to_string(), value);
    }

    fn set_request(action: &Action, value: &Fields) -> String {
        let switch = action.target.get("switch").unwrap_or("");
        let port = action.target.get("port").unwrap_or("");
        let sets: Vec<String> = value.iter().map(|(k, v)| format!("PFC_WD/{port}/{k} = {v:?}")).collect();
        format!("gNMI Set {switch} origin sonic-db CONFIG_DB: {}", sets.join(", "))
    }
}

#[async_trait]
impl Actuator for Watchdogs {
    fn name(&self) -> &str {
        "pfcwd"
    }

    fn kinds(&self) -> &[ActionKindDecl] {
        &self.kinds
    }

    async fn dry_run(&self, action: &Action) -> Result<RequestPlan, ActuatorError> {
        Ok(RequestPlan { actuator: "pfcwd".into(), requests: vec![Self::set_request(action, &fields("drop", "400"))] })
    }

    async fn execute(&self, action: &Action) -> Result<Outcome, ActuatorError> {
        let prepared = self.prepare(action).await?.expect("the watchdog is read");
        self.apply(action, &prepared.prior).await
    }

    async fn prepare(&self, action: &Action) -> Result<Option<Prepared>, ActuatorError> {
        Change { before: self.read(action), after: fields("drop", "400") }.prepared().map(Some)
    }

    async fn apply(&self, action: &Action, prior: &Prior) -> Result<Outcome, ActuatorError> {
        let after = fields("drop", "400");
        self.write(action, after.clone());
        let request = Self::set_request(action, &after);
        Ok(Outcome { summary: request.clone(), requests: vec![request], prior: Some(prior.clone()) })
    }

    async fn verify(&self, action: &Action, applied: Option<&Outcome>) -> Result<Verification, ActuatorError> {
        let now = self.read(action);
        let change = applied.and_then(|o| o.prior.as_ref()).and_then(|p| p.read::<Change<Fields>>().ok());
        Ok(match change {
            Some(c) if now == c.after => Verification::InEffect,
            Some(c) if now == c.before => Verification::NotInEffect,
            Some(_) => Verification::Changed(format!("{now:?}")),
            None => Verification::Unknown,
        })
    }

    async fn dry_run_undo(&self, action: &Action, _applied: &Outcome) -> Result<RequestPlan, ActuatorError> {
        Ok(RequestPlan { actuator: "pfcwd".into(), requests: vec![Self::set_request(action, &fields("alert", "200"))] })
    }

    async fn undo(&self, action: &Action, applied: &Outcome) -> Result<Outcome, ActuatorError> {
        let change = applied.prior.as_ref().and_then(|p| p.read::<Change<Fields>>().ok());
        let before = change.map(|c| c.before).unwrap_or_else(|| fields("alert", "200"));
        self.write(action, before.clone());
        let request = Self::set_request(action, &before);
        Ok(Outcome { summary: request.clone(), requests: vec![request], prior: None })
    }
}

/// A storm on `port` of `leaf`, as the standard `pfc-storm` rule proposes it.
fn storm(n: usize, at: Nanos, kind: &str) -> Proposal {
    let (leaf, port) = (format!("leaf-rail{}", n % 8), format!("Ethernet{}", (n / 8) % 32 * 4));
    let node = format!("node-{:03}", (n / 8) % 32);
    let netdev = format!("eth{}", n % 8);
    Proposal {
        id: format!("p{n}"),
        rule: "pfc-storm".into(),
        rule_hash: "4f0c2e6b9a1d7c3e5f8a0b2d4c6e8f1a3b5d7e9f0a2c4e6b8d0f1a3c5e7b9d2f".into(),
        rule_mode: Mode::Enforce,
        severity: Severity::Critical,
        subject: Labels::from_pairs([("node", node.as_str()), ("netdev", netdev.as_str()), ("prio", "3")]),
        action: Action {
            kind: kind.into(),
            target: Labels::from_pairs([("switch", leaf.as_str()), ("port", port.as_str()), ("queue", "3")]),
            params: BTreeMap::from([("level".to_string(), "1".to_string())]),
        },
        jobs: Vec::new(),
        values: vec![("paused_us_per_s".into(), 912_345.678), ("moving_samples".into(), 3.0)],
        active_at: at - 300_000_000,
        sample_at: at,
        decided_at: at,
        restored: false,
    }
}

fn dispatcher(ledger: Ledger) -> Dispatcher {
    let mut policy = PolicySettings::defaults();
    policy.target_cooldown = 0;
    policy.target_max = u32::MAX;
    policy.undo_on_resolve = vec!["pfcwd.escalate".into()];
    // Every `ecn.lower` is held by its limit, and the breaker never trips.
    policy.limits.per_kind.insert("ecn.lower".into(), 0);
    policy.trip_after = 0;
    let watchdogs = Watchdogs { kinds: vec![ActionKindDecl::new("*", &[])], ..Watchdogs::default() };
    let routes = vec![ActuatorRoute { pattern: "*".into(), actuator: Arc::new(watchdogs), destructive: true }];
    let config = DispatchConfig {
        mode: Mode::Enforce,
        rule_modes: HashMap::new(),
        routes,
        timeout: Duration::from_secs(1),
        policy,
        topology: None,
    };
    Dispatcher::new(config, Some(ledger)).with_clock(Arc::new(|| 1_700_000_000 * SECOND))
}

/// Bytes allocated to the files under `dir`, as `du` counts them.
fn du(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    for entry in std::fs::read_dir(dir).expect("the directory reads") {
        let entry = entry.expect("an entry");
        let meta = entry.metadata().expect("its metadata");
        total += if meta.is_dir() { du(&entry.path()) } else { meta.blocks() * 512 };
    }
    total
}

fn report(what: &str, dir: &Path, records: usize) {
    let bytes = du(dir);
    println!(
        "{what}: {records} records, {:.1} MiB, {} bytes/record",
        bytes as f64 / (1 << 20) as f64,
        bytes / records.max(1) as u64
    );
}

async fn write(dir: &Path, records: usize) -> usize {
    let store = Store::open(dir).expect("the store opens");
    let ledger = Ledger::open(&store, Retention::default()).expect("the ledger opens");
    let mut d = dispatcher(ledger.clone());
    let t0 = 1_700_000_000 * SECOND;
    let started = Instant::now();
    let mut written = 0;
    let mut n = 0;
    while written < records {
        let at = t0 + n as Nanos * SECOND;
        let p = storm(n, at, "pfcwd.escalate");
        let (rule, subject) = (p.rule.clone(), p.subject.clone());
        d.dispatch(p).await;
        written += 1;
        if n % 2 == 0 {
            // A proposal over a limit: held, written once.
            let mut held = storm(n, at, "pfcwd.escalate");
            held.action.kind = "ecn.lower".into();
            d.dispatch(held).await;
            written += 1;
        }
        written += d.instance_resolved(&rule, &subject, at + SECOND).await.len();
        d.keep_ledger(at + SECOND).await;
        d.maintain(at + SECOND);
        n += 1;
    }
    println!("wrote {written} decisions in {:.1} s", started.elapsed().as_secs_f64());
    store.flush().expect("flush");
    ledger.len()
}

fn main() {
    let records: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let temp = tempfile::tempdir().expect("a temp dir");
    let dir = std::env::args().nth(2).map(Into::into).unwrap_or_else(|| temp.path().join("state.sled"));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    let kept = runtime.block_on(write(&dir, records));
    // sled lets go of its files from its flusher thread.
    std::thread::sleep(Duration::from_millis(600));
    report("while running", &dir, kept);
    let store = Store::open(&dir).expect("the store opens again");
    let ledger = Ledger::open(&store, Retention::default()).expect("the ledger opens again");
    let kept = ledger.len();
    let all = ledger.list(&Default::default()).expect("list");
    let json: usize = all.iter().map(|d| serde_json::to_vec(d).unwrap().len()).sum();
    println!("JSON: {} bytes/record", json / all.len().max(1));
    drop(ledger);
    store.flush().expect("flush");
    drop(store);
    std::thread::sleep(Duration::from_millis(600));
    report("after reopening", &dir, kept);
}
