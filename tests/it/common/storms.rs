//! PFC storms against simulated SONiC leaves, for the tests that attack
//! the action path (tests/it/crash_loop.rs, tests/it/drift.rs): eight leaves
//! served in the test process, a recording of node-01's NICs storming one
//! after the other, and a daemon in enforce mode escalating the leaves'
//! PFC watchdogs over gNMI and undoing them when the storms end.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sim::switch::{self, Model, RunningSwitch};
use sonic::gnmi_front::Backend;

use super::{repo, toml_path};

/// The leaves: rail n's leaf, whose port Ethernet0 faces node-01's NIC n.
pub const LEAVES: usize = 8;
/// How long a daemon's run may take to end after its recording: each change of a leaf takes some
/// 3 s (a read, then two Sets each answered after SONiC's config updater pauses a second), and
/// the changes go one at a time: eight escalations and eight undos.
pub const RUN_ENDS_WITHIN: std::time::Duration = std::time::Duration::from_secs(150);
/// The port the storms hit on every leaf.
pub const PORT: &str = "Ethernet0";

/// A PFC_WD entry as the switch holds it.
pub type Entry = Option<BTreeMap<String, String>>;

/// One simulated leaf and every value its PFC_WD entry took, in order.
pub struct Leaf {
    pub name: String,
    pub model: Model,
    pub server: Option<RunningSwitch>,
    pub history: Arc<Mutex<Vec<Entry>>>,
}

impl Leaf {
    /// The port's PFC_WD entry now.
    pub fn now(&self) -> Entry {
        self.model.config_entry("PFC_WD", PORT)
    }

    /// The gNMI address.
    pub fn address(&self) -> String {
        self.server.as_ref().expect("serving").addr.to_string()
    }

    /// Restarts the switch as a reboot without `config save` would: its
    /// telemetry goes away, CONFIG_DB comes back with the saved values, and
    /// it serves again on the same address.
    pub fn restart(&mut self, rt: &tokio::runtime::Runtime) {
        let server = self.server.take().expect("serving");
        let addr = server.addr;
        rt.block_on(server.stop()).expect("the leaf stops");
        self.model.reboot().expect("the leaf reboots");
        let server = rt
            .block_on(switch::spawn(&self.name, addr, self.model.clone(), switch::Options::default()))
            .expect("the leaf serves again on its address");
        self.server = Some(server);
    }
}

/// Serves the leaves and records every change of their PFC_WD entry.
pub fn leaves(rt: &tokio::runtime::Runtime) -> Vec<Leaf> {
    let mut leaves = Vec::new();
    for rail in 0..LEAVES {
        let name = format!("leaf-rail{rail}");
        let model = Model::new(32);
        let server = rt
            .block_on(switch::spawn(&name, ([127, 0, 0, 1], 0).into(), model.clone(), switch::Options::default()))
            .expect("a simulated leaf serves");
        let history = Arc::new(Mutex::new(vec![model.config_entry("PFC_WD", PORT)]));
        let (watched, seen) = (model.clone(), history.clone());
        let events = rt.block_on(watched.store().watch("CONFIG_DB", &format!("PFC_WD|{PORT}")));
        let mut events = events.expect("the leaf's CONFIG_DB can be watched");
        rt.spawn(async move {
            use futures_util::StreamExt;
            while events.next().await.is_some() {
                let entry = watched.config_entry("PFC_WD", PORT);
                let mut seen = seen.lock().unwrap();
                if seen.last() != Some(&entry) {
                    seen.push(entry);
                }
            }
        });
        leaves.push(Leaf { name, model, server: Some(server), history });
    }
    leaves
}

/// A recording of node-01's NICs pausing on priority 3, a sample every
/// 100 ms for `samples` samples: NIC n storms (90 % paused) during
/// `storm(n)` (ms from the start, half-open); 1 % paused otherwise.
pub fn recording(path: &Path, samples: u64, storm: impl Fn(usize) -> std::ops::Range<u64>) {
    let mut lines = Vec::new();
    for nic in 0..LEAVES {
        lines.push(format!(
            r#"{{"series":{nic},"metric":"ethtool_tx_prio_pause_duration_us","labels":{{"node":"node-01","netdev":"eth{nic}","prio":"3"}},"kind":"counter","bits":64,"overflow":"wrap"}}"#
        ));
    }
    let t0: u64 = 1_700_000_000_000_000_000;
    let mut counters = [0u64; LEAVES];
    for step in 0..samples {
        let at = step * 100;
        for (nic, counter) in counters.iter_mut().enumerate() {
            *counter += if storm(nic).contains(&at) { 90_000 } else { 1_000 };
            lines.push(format!(r#"{{"s":{nic},"t":{},"v":{counter}}}"#, t0 + at * 1_000_000));
        }
    }
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// Writes the rules (the standard PFC storm rule with a 1 s cooldown, so a
/// port storms again in the next run), a playbook escalating the leaves'
/// watchdogs (`verify_every`: the re-verification period), and a daemon
/// config replaying `recording` rebased to now; returns the config's path.
pub fn configure(dir: &Path, leaves: &[Leaf], recording: &str, verify_every: &str) -> PathBuf {
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    let storm = std::fs::read_to_string(repo("rules/pfc_storm.rhai")).unwrap();
    assert!(storm.contains(r#"cooldown: "30s""#), "the standard rule changed; adjust this helper");
    std::fs::write(rules.join("pfc_storm.rhai"), storm.replace(r#"cooldown: "30s""#, r#"cooldown: "1s""#)).unwrap();
    let switches: Vec<String> = leaves.iter().map(|l| format!("{} = \"{}\"", l.name, l.address())).collect();
    std::fs::write(
        dir.join("playbook.toml"),
        format!(
            r#"name = "storms"
mode = "enforce"
rules = {rules}
action_timeout = "5s"
# Every storm is acted on at once: no cooldown between actions on a target.
allow_unsafe = true

[[actuator]]
name = "pfcwd"
type = "pfcwd"
handles = ["pfcwd.*"]
[actuator.gnmi]
switches = {{ {switches} }}
[actuator.levels.1]
action = "drop"
detection_time = 400

[[actuator]]
name = "journal"
type = "log"
handles = ["*"]
like = ["pfcwd", "ecn", "rail", "link", "cordon"]

[target]
cooldown = "0s"
max_per_window = 100000
window = "1h"

[undo]
on_resolve = ["pfcwd.escalate"]

[verify]
every = "{verify_every}"
"#,
            rules = toml_path(&rules),
            switches = switches.join(", "),
        ),
    )
    .unwrap();
    let config = dir.join("rocemend.toml");
    std::fs::write(
        &config,
        format!(
            r#"state_dir = "state"
inventory = {inventory}
playbook = "playbook.toml"
[engine]
clock = "wall"
tick = "50ms"
reload_poll = "0"
exit_when_sensors_end = true
[log]
level = "info"
[control]
socket = {socket}
[[sensor]]
type = "replay"
path = "{recording}"
speed = 1.0
rebase = true
"#,
            inventory = toml_path(&repo("docs/examples/inventory.toml")),
            socket = toml_path(&dir.join("control.sock")),
        ),
    )
    .unwrap();
    config
}

/// The changes in a port's `history`: each is a replace (the entry deleted, then written, as
/// `pfcwd start` does), so the deletes are first halves, not changes of their own; and a kill
/// between the two halves leaves the delete alone, after which the entry found before is
/// written back, which changes nothing.
pub fn changes_of(history: Vec<Entry>, original: &Entry) -> Vec<Entry> {
    let mut changes: Vec<Entry> = Vec::new();
    let mut after_delete = false;
    for entry in history {
        if entry.is_none() && original.is_some() {
            after_delete = true;
            continue;
        }
        let half = after_delete && &entry == original && changes.last() == Some(&entry);
        after_delete = false;
        if !half {
            changes.push(entry);
        }
    }
    changes
}
