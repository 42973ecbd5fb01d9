//! The fleet game day (`rocemend chaos fleet`): 16 node daemons and a
//! switch aggregator as real processes of this binary, a real 3-member etcd,
//! the simulated fabric. The game is played once and its report checked
//! figure by figure: the fleet budget held exactly, before and after etcd
//! lost its leader; a SIGKILLed token holder's token came back within its
//! lease TTL and a margin; the storm was contained by the aggregator alone.
//!
//! It needs the `etcd` feature (every daemon of the game is this binary)
//! and etcd's `etcd` and `etcdctl`; without them it says why it is skipped.
//! `.ci/run` runs it with both.

use crate::common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::etcd_here;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rocemend(args: &[&str], out: &std::path::Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rocemend"))
        .args(args)
        .arg("--out")
        .arg(out)
        .current_dir(root())
        .output()
        .expect("running rocemend")
}

fn fault<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["fleet"]["faults"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["name"] == name))
        .unwrap_or_else(|| panic!("no fault {name} in the report"))
}

fn cell<'a>(report: &'a Value, budget: &str, cell: &str) -> &'a Value {
    report["fleet"]["budgets"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["budget"] == budget && c["cell"] == cell))
        .unwrap_or_else(|| panic!("budget {budget} {cell} never held a token"))
}

#[test]
fn the_fleet_budget_holds_through_a_plane_failure_an_etcd_leader_loss_and_a_dead_token_holder() {
    if !etcd_here() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let run = rocemend(&["chaos", "fleet", "chaos/scenarios/fleet/spine_fault.toml", "--quiet"], out.path());
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = String::from_utf8_lossy(&run.stderr);
    eprintln!("{stderr}{stdout}");
    assert_eq!(run.status.code(), Some(0), "the game failed");
    let report: Value = serde_json::from_slice(&std::fs::read(out.path().join("spine_fault.json")).unwrap()).unwrap();
    let fleet = &report["fleet"];

    // The budget, from etcd: no cell ever held more tokens than its limit.
    assert_eq!(fleet["over_budget"], 0, "{}", fleet["budgets"]);
    for c in fleet["budgets"].as_array().unwrap() {
        assert!(c["max_concurrent"].as_u64() <= c["limit"].as_u64(), "{c}");
    }

    // Plane 0: every node proposed a drain of each errored NIC; exactly one
    // went through, and the 63 others were held, by the budget in etcd or
    // by the winner's own one-rail-per-plane limit.
    let p0 = fault(&report, "plane-0");
    assert_eq!((p0["deciders"].as_u64(), p0["proposals"].as_u64()), (Some(16), Some(64)), "{p0}");
    assert_eq!(p0["executed"], 1, "{p0}");
    let held = ["held_fleet_budget", "held_local_limit", "held_unavailable"].map(|k| p0[k].as_u64().unwrap());
    assert_eq!(held.iter().sum::<u64>(), 63, "{p0}");
    assert!(held[0] >= 48, "at least the 15 losers' 4 proposals each are the budget's: {p0}");
    assert_eq!(p0["token_holders"].as_array().unwrap().len(), 1, "the executed drain held a token: {p0}");
    assert_eq!(cell(&report, "rail", "plane=0")["max_concurrent"], 1);

    // The storm: the aggregator alone escalated the port, without a token.
    let storm = fault(&report, "storm");
    assert_eq!(storm["executed"], 1, "{storm}");
    assert!(storm["mitigated_by"].as_str().unwrap().contains("pfcwd.escalate"), "{storm}");
    assert!(storm["mitigated_by"].as_str().unwrap().ends_with("by aggregator"), "{storm}");
    assert!(storm["ttm_ms"].as_f64().unwrap() > 0.0);

    // etcd lost its leader, another member leads, and the next plane
    // failure again got exactly one drain.
    let lk = &fleet["leader_kills"][0];
    assert!(lk["elected"].is_string() && lk["elected"] != lk["killed"], "{lk}");
    assert!(lk["terms"][1].as_u64() > lk["terms"][0].as_u64(), "a new term: {lk}");
    assert!(lk["elected_after_ms"].as_f64().unwrap() <= lk["within_ms"].as_f64().unwrap(), "{lk}");
    // A daemon whose request went to the dead member sent it again to a
    // live one: nothing was held for want of etcd (2 to 9 of 16 were, when
    // the coordinator gave up on the first failed connect).
    assert_eq!(lk["held_unavailable_after"], 0, "{lk}");
    let p1 = fault(&report, "plane-1");
    assert_eq!(p1["executed"], 1, "the budget still held exactly after the leader change: {p1}");
    assert_eq!(p1["held_fleet_budget"], 15, "{p1}");
    assert_eq!(cell(&report, "rail", "plane=1")["max_concurrent"], 1);

    // The holder of plane 1's token was SIGKILLed: its tokens were gone from
    // etcd within its lease TTL + 2 s — by the lease's expiry, not at once
    // (a lease is refreshed every third of its TTL, so it lapses two thirds
    // of a TTL after the kill at the soonest; a third, for a late refresh
    // on a loaded machine).
    let dk = &fleet["daemon_kills"][0];
    assert!(dk["problem"].is_null(), "{dk}");
    let tokens: Vec<&str> = dk["tokens"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(tokens.iter().any(|k| k.contains("/budget/rail/plane=1/token/")), "plane 1's token among them: {dk}");
    let ttl = dk["lease_ttl_ms"].as_f64().unwrap();
    let returned = dk["returned_after_ms"].as_f64().unwrap_or_else(|| panic!("the token never came back: {dk}"));
    assert!(returned <= ttl + 2000.0, "{returned} ms for a {ttl} ms lease: {dk}");
    assert!(returned >= ttl / 3.0, "gone before its lease could lapse: {dk}");
    assert!(p1["executed_by"][0].as_str().unwrap().starts_with(dk["daemon"].as_str().unwrap()), "{p1} {dk}");

    // The fleet breaker: reported as it was (this game expects it clear).
    assert_eq!(fleet["breaker"]["tripped"], false, "{}", fleet["breaker"]);
    assert!(stdout.contains("drains over budget: 0"), "{stdout}");
    assert!(std::fs::read_to_string(out.path().join("spine_fault.html")).unwrap().contains("id=\"fleet-budget\""));
}

#[test]
fn a_daemon_tripping_its_own_breaker_trips_the_fleet_breaker_and_holds_every_daemon() {
    if !etcd_here() {
        return;
    }
    let out = tempfile::tempdir().unwrap();
    let run = rocemend(&["chaos", "fleet", "chaos/scenarios/fleet/breaker_trip.toml", "--quiet"], out.path());
    let stdout = String::from_utf8_lossy(&run.stdout);
    eprintln!("{}{stdout}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(run.status.code(), Some(0), "the game failed");
    let report: Value = serde_json::from_slice(&std::fs::read(out.path().join("breaker_trip.json")).unwrap()).unwrap();
    let fleet = &report["fleet"];
    assert_eq!(fleet["over_budget"], 0, "{}", fleet["budgets"]);

    // node-03's eight NICs: one drain per plane (its own limit and the
    // fleet's), five holds by its own limit, and the fifth tripped its
    // breaker; the last proposal met the tripped breaker.
    let node = fault(&report, "node-03");
    assert_eq!((node["deciders"].as_u64(), node["proposals"].as_u64()), (Some(1), Some(8)), "{node}");
    assert_eq!(node["executed"], 2, "{node}");
    assert_eq!(node["held_local_limit"], 5, "{node}");
    assert_eq!(node["held_breaker"], 1, "{node}");
    let daemon = fleet["daemons"].as_array().unwrap().iter().find(|d| d["name"] == "node-03").unwrap();
    assert_eq!(daemon["breaker_tripped"], true, "{daemon}");

    // The fleet breaker in etcd names node-03 and its reason.
    let breaker = &fleet["breaker"];
    assert_eq!(breaker["tripped"], true, "{breaker}");
    assert_eq!(breaker["by"], "node-03", "{breaker}");
    assert!(breaker["reason"].as_str().unwrap().starts_with("5 limit hits within 600s"), "{breaker}");

    // Another daemon, the aggregator, detected the storm that came after,
    // and held its escalation: the fleet breaker, not its own limits.
    let storm = fault(&report, "storm");
    assert_eq!((storm["proposals"].as_u64(), storm["executed"].as_u64()), (Some(1), Some(0)), "{storm}");
    assert_eq!(storm["held_breaker"], 1, "{storm}");
    let held = report["runs"][0]["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["id"].as_str().unwrap().starts_with("aggregator/"))
        .expect("the aggregator's decision");
    assert_eq!(held["verdict"], "held", "{held}");
    let reason = held["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("fleet circuit breaker tripped by node-03: "), "{held}");
    assert!(stdout.contains("fleet breaker: tripped by node-03"), "{stdout}");
}

#[test]
fn a_wrong_game_file_is_refused_with_where_it_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(root().join("chaos/scenarios/fleet/spine_fault.toml"))
        .unwrap()
        .replace("do = \"kill-etcd-leader\"", "do = \"kill-etcd-leaders\"")
        .replace("\"inventory.toml\"", "\"chaos/scenarios/fleet/inventory.toml\"")
        .replace("\"aggregator.toml\"", "\"chaos/scenarios/fleet/aggregator.toml\"")
        .replace("\"../../../playbooks/chaos.toml\"", "\"playbooks/chaos.toml\"");
    let game = dir.path().join("bad.toml");
    std::fs::write(&game, &text).unwrap();
    let line = text.lines().position(|l| l.contains("kill-etcd-leaders")).unwrap() + 1;
    let run = rocemend(&["chaos", "fleet", game.to_str().unwrap()], dir.path());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("bad.toml:{line}:")) && stderr.contains("expected start, settle"), "{stderr}");
}

#[cfg(not(feature = "etcd"))]
#[test]
fn without_etcd_support_the_game_says_it_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let run = rocemend(&["chaos", "fleet", "chaos/scenarios/fleet/spine_fault.toml"], dir.path());
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("skipped: this rocemend was built without etcd support"), "{stderr}");
    assert!(!dir.path().join("spine_fault.json").exists(), "a skipped game writes no report");
}
