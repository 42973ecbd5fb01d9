//! A replay at full speed (`speed = 0`) that makes decisions faster than
//! the dispatcher settles them: 800 flapping gauges over two periods. The
//! daemon makes every decision, `status` answers while it does, and
//! SIGTERM ends it within its shutdown timeout. Before, it stopped at about
//! a thousand decisions, `status` never answered and SIGTERM was ignored.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{log_playbook, toml_path, Daemon};

const PORTS: usize = 800;
const PERIODS: usize = 2;

const FLAP: &str = r#"
fn fire(w) { w.level > 0.5 }
fn clear(w) { w.level <= 0.5 }
#{
    name: "flap",
    select: ["flap_gauge"],
    group_by: ["node", "netdev"],
    stale_after: "1h",
    windows: #{ level: last("flap_gauge") },
    actions: [ #{ action: "link.isolate", target: #{ node: "{node}", netdev: "{netdev}" } } ],
}
"#;

/// 800 gauges on 100 nodes, each period reading 0, 1, 1, 0, 0 a second apart.
fn recording(path: &Path) {
    let mut lines = Vec::new();
    for i in 0..PORTS {
        lines.push(format!(
            r#"{{"series":{i},"metric":"flap_gauge","labels":{{"node":"gpu{:03}","netdev":"eth{}"}},"kind":"gauge"}}"#,
            i / 8,
            i % 8
        ));
    }
    let mut t: u64 = 1_700_000_000_000_000_000;
    for _ in 0..PERIODS {
        for level in [0, 1, 1, 0, 0] {
            lines.extend((0..PORTS).map(|i| format!(r#"{{"s":{i},"t":{t},"v":{level}}}"#)));
            t += 1_000_000_000;
        }
    }
    std::fs::write(path, lines.join("\n") + "\n").unwrap();
}

/// The daemon's config: the recording at full speed, every isolation undone
/// when its instance resolves, no cooldown or rate limit in the way, a 5 s
/// shutdown timeout.
fn config(dir: &Path) -> PathBuf {
    let rules = dir.join("rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(rules.join("flap.rhai"), FLAP).unwrap();
    let playbook = log_playbook(dir, "flood", Some("enforce"), &rules);
    let mut text = std::fs::read_to_string(&playbook).unwrap();
    text.insert_str(0, "allow_unsafe = true\n");
    text.push_str("[target]\ncooldown = \"0s\"\nmax_per_window = 100000\nwindow = \"1h\"\n[undo]\non_resolve = [\"link.isolate\"]\n");
    std::fs::write(&playbook, text).unwrap();
    recording(&dir.join("flood.jsonl"));
    let config = dir.join("rocemend.toml");
    std::fs::write(
        &config,
        format!(
            "state_dir = \"state\"\nplaybook = {}\n[engine]\nclock = \"samples\"\nreload_poll = \"0\"\nshutdown_timeout = \"5s\"\n\
             [log]\nlevel = \"info\"\n[control]\nsocket = {}\n\
             [[sensor]]\ntype = \"replay\"\npath = {}\nspeed = 0.0\n",
            toml_path(&playbook),
            toml_path(&dir.join("control.sock")),
            toml_path(&dir.join("flood.jsonl")),
        ),
    )
    .unwrap();
    config
}

#[test]
fn a_full_speed_replay_of_800_flapping_gauges_decides_everything_answers_status_and_stops_on_sigterm() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let config = config(dir);
    let mut daemon = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    daemon.wait_ready();
    let samples = (PORTS * PERIODS * 5) as u64;
    daemon.wait_for("every sample ingested and every decision in the ledger", |d| {
        let status = d.status();
        let ingested: u64 = status["sensors"].as_array()?.iter().filter_map(|s| s["samples"].as_u64()).sum();
        let records = status["ledger_records"].as_u64()?;
        (ingested >= samples && records >= (4 * PORTS) as u64).then_some(())
    });
    let asked = Instant::now();
    assert!(daemon.stop().success(), "a clean stop:\n{}", daemon.log());
    let took = asked.elapsed();
    assert!(took < Duration::from_secs(5), "stopped within its shutdown timeout: {took:?}");
    let log = daemon.log();
    let stopped = log.lines().find(|l| l.contains("Stopped.")).unwrap_or_else(|| panic!("no \"Stopped.\":\n{log}"));
    // Each isolation is said again when its outcome check finds its port recovered.
    let said = 4 * PORTS + PERIODS * PORTS;
    assert!(stopped.contains(&format!("decisions={said}")), "every isolation and undo decided: {stopped}");
}
