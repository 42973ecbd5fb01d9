//! `rocemend chaos run` on the scenario library, on the virtual clock: each
//! scenario passes, and fails when its mitigation is switched off — the
//! harness tells healed from not healed.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn scenario(name: &str) -> PathBuf {
    root().join("chaos/scenarios").join(format!("{name}.toml"))
}

/// Runs `chaos run` with `args`; returns the exit code and the report.
fn run(path: &Path, runs: u32, extra: &[&str]) -> (i32, Value) {
    run_in(&root(), path, runs, extra)
}

/// [`run`] from the directory `cwd`.
fn run_in(cwd: &Path, path: &Path, runs: u32, extra: &[&str]) -> (i32, Value) {
    let out = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_rocemend"))
        .current_dir(cwd)
        .args(["chaos", "run", "--quiet", "--runs", &runs.to_string(), "--out"])
        .arg(out.path())
        .arg(path)
        .args(extra)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    let code = output.status.code().unwrap_or(-1);
    let name = path.file_stem().unwrap().to_str().unwrap();
    let json = out.path().join(format!("{name}.json"));
    let report = match std::fs::read(&json) {
        Ok(bytes) => serde_json::from_slice(&bytes).unwrap(),
        Err(e) => panic!("no report {} (exit {code}): {e}\n{stderr}", json.display()),
    };
    (code, report)
}

fn failures(report: &Value) -> String {
    report["runs"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["outcome"]["failures"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_string()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The executed actions of `action` in the first run, each once (a decision is recorded again
/// when its canary or its outcome check is judged).
fn executed(report: &Value, action: &str) -> Vec<Value> {
    let mut seen = std::collections::HashSet::new();
    report["runs"][0]["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["action"] == action && d["verdict"] == "executed" && d["undo_of"].is_null())
        .filter(|d| seen.insert(d["id"].as_str().unwrap_or_default().to_string()))
        .cloned()
        .collect()
}

fn passes(name: &str, runs: u32) -> Value {
    let (code, report) = run(&scenario(name), runs, &[]);
    assert_eq!(code, 0, "{name} failed:\n{}", failures(&report));
    assert_eq!(report["failed"], 0);
    assert_eq!(report["passed"], runs);
    report
}

/// `name` fails, saying `expected`, with `rules` in dry-run.
fn fails_without(name: &str, rules: &[&str], expected: &str) {
    let modes: Vec<String> = rules.iter().map(|r| format!("{r}=dry-run")).collect();
    let args: Vec<&str> = modes.iter().flat_map(|m| ["--rule-mode", m.as_str()]).collect();
    let (code, report) = run(&scenario(name), 1, &args);
    assert_eq!(code, 1, "{name} with {rules:?} in dry-run must fail");
    let why = failures(&report);
    assert!(why.contains(expected), "{name} without {rules:?}: expected {expected:?} among:\n{why}");
}

#[test]
fn pfc_storm_is_contained_within_300_ms_and_not_without_the_watchdog_escalation() {
    let report = passes("pfc_storm", 3);
    let escalations = executed(&report, "pfcwd.escalate");
    assert_eq!(escalations.len(), 1);
    assert_eq!(escalations[0]["target"]["switch"], "leaf-rail3");
    assert_eq!(escalations[0]["target"]["port"], "Ethernet12");
    // The storm ends at 4 s: the escalation is undone once the rule resolves.
    let undone = report["runs"][0]["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| !d["undo_of"].is_null() && d["verdict"] == "executed");
    assert!(undone, "the escalation is undone after the storm");
    let p99 = report["summary"]["detect"]["p99"].as_f64().unwrap();
    assert!(p99 <= 300.0, "detection p99 {p99} ms");
    // The real pfcwd actuator sent it, over gNMI, to the simulated leaf.
    let sent = requests(&escalations[0]);
    assert!(
        sent.contains("gNMI Set to leaf-rail3 (simulated leaf on loopback)")
            && sent.contains("delete sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet12; then")
            && sent.contains("update sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet12 = {\"action\":\"drop\""),
        "{sent}"
    );
    // The host's view (ethtool) and the switch's (gNMI) both see the storm.
    let fired: Vec<&str> = report["runs"][0]["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["to"] == "firing")
        .map(|t| t["rule"].as_str().unwrap())
        .collect();
    assert!(fired.contains(&"pfc-storm"), "{fired:?}");
    fails_without("pfc_storm", &["pfc-storm", "switch-pfc-storm"], "pfcwd.escalate was never executed");
}

/// What an executed decision sent, one request per line.
fn requests(decision: &Value) -> String {
    let list = decision["requests"].as_array().unwrap_or_else(|| panic!("no requests in {decision}"));
    list.iter().map(|r| r.as_str().unwrap()).collect::<Vec<_>>().join("\n")
}

#[test]
fn congestion_lowers_ecn_on_each_full_egress_queue_and_not_without_the_switch_rule() {
    let report = passes("congestion", 2);
    let lowered = executed(&report, "ecn.lower");
    // One lowering per full queue, each on its own queue: the actuator binds a
    // copy of the profile to that queue, so no port is lowered twice.
    let mut ports: Vec<&str> = lowered.iter().map(|d| d["target"]["port"].as_str().unwrap()).collect();
    ports.sort();
    assert_eq!(ports, ["Ethernet0", "Ethernet12", "Ethernet4", "Ethernet8"], "{lowered:?}");
    assert!(lowered.iter().all(|d| d["target"]["switch"] == "leaf-rail5" && d["rule"] == "switch-egress-congestion"));
    let sent = requests(&lowered[0]);
    assert!(sent.contains("gNMI Set to leaf-rail5 (simulated leaf on loopback)"), "{sent}");
    // The NIC-side rules only alert.
    let alerts = executed(&report, "webhook.notify");
    assert!(
        alerts.iter().any(|d| d["rule"] == "cnp-storm") && alerts.iter().any(|d| d["rule"] == "xmit-wait-congestion")
    );
    fails_without("congestion", &["switch-egress-congestion"], "ecn.lower was never executed");
}

#[test]
fn an_incast_is_fixed_at_the_receivers_egress_and_the_old_fix_at_the_senders_ports_does_not_help() {
    let report = passes("incast", 2);
    let lowered = executed(&report, "ecn.lower");
    assert_eq!(lowered.len(), 1, "{lowered:?}");
    assert_eq!(lowered[0]["target"]["port"], "Ethernet4", "node-02 eth5, the receiver");
    // The rules before the congestion rewrite: xmit-wait-congestion lowered ECN on the
    // port facing each waiting NIC, and no rule looked at the switch's queues.
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(root().join("rules")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        if !name.ends_with(".rhai") || name == "switch_egress_congestion.rhai" {
            continue;
        }
        let mut text = std::fs::read_to_string(&path).unwrap();
        if name == "xmit_wait.rhai" {
            let start = text.find("    actions: [").unwrap();
            text.replace_range(
                start..,
                "    actions: [#{ action: \"ecn.lower\", target: #{ \"switch\": \"{switch}\", port: \"{switch_port}\" }, params: #{ factor: \"0.5\" } }],\n}\n",
            );
        }
        std::fs::write(dir.path().join(&name), text).unwrap();
    }
    let (code, report) = run(&scenario("incast"), 1, &["--rules", dir.path().to_str().unwrap()]);
    assert_eq!(code, 1, "lowering ECN at the senders' ports must not pass");
    let wrong: Vec<String> =
        executed(&report, "ecn.lower").iter().map(|d| d["target"]["port"].as_str().unwrap().to_string()).collect();
    assert!(!wrong.is_empty() && !wrong.iter().any(|p| p == "Ethernet4"), "the old rule lowered {wrong:?}");
    // The senders wait as long as the incast lasts: the steady state is back only
    // when it ends, 40 s after it began, not within the 23 s the scenario gives.
    let why = failures(&report);
    assert!(why.contains("steady state back 40") && why.contains("expected within 23000 ms"), "{why}");
}

#[test]
fn an_ecmp_collision_gets_more_qps_at_the_jobs_next_launch_and_stays_slow_without_them() {
    let report = passes("ecmp_collision", 2);
    let raised = executed(&report, "nccl.qps");
    assert_eq!(raised.len(), 1, "one job behind four colliding leaves, raised once: {raised:?}");
    assert_eq!(raised[0]["target"]["job"], "train-a");
    assert_eq!(raised[0]["rule"], "ecmp-imbalance");
    let request = raised[0]["requests"][0].as_str().unwrap();
    assert!(request.contains("NCCL_IB_QPS_PER_CONNECTION=16") && request.contains("next launch"), "{request}");
    fails_without("ecmp_collision", &["ecmp-imbalance"], "not back within 5 %");
}

#[test]
fn the_switch_hash_is_widened_on_a_canary_leaf_first_and_on_the_rest_of_its_plane_once_it_cleared() {
    let report = passes("ecmp_hash", 2);
    for run in report["runs"].as_array().unwrap() {
        let widened: Vec<&Value> = run["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["action"] == "ecmp.widen_hash" && d["verdict"] == "executed")
            .collect();
        // The canary's decision is recorded when made, when judged, and when its outcome is.
        let mut ids = std::collections::HashSet::new();
        let judged: Vec<&&Value> =
            widened.iter().filter(|d| d["canary"] == "promoted" && ids.insert(d["id"].clone())).collect();
        assert_eq!(judged.len(), 1, "one canary for the one plane: {widened:?}");
        let (canary, promoted_at) = (judged[0]["id"].as_str().unwrap(), judged[0]["at"].as_i64().unwrap());
        let opened = widened.iter().find(|d| d["id"] == canary && d["canary"] == "open").expect("made a canary");
        assert!(promoted_at - opened["at"].as_i64().unwrap() >= 45_000_000_000, "judged 45 s after it was made");
        let rest: Vec<&&Value> = widened.iter().filter(|d| d["id"] != canary).collect();
        assert!(!rest.is_empty(), "the other colliding leaves follow: {widened:?}");
        assert!(rest.iter().all(|d| d["at"].as_i64().unwrap() >= promoted_at), "none before the promotion: {rest:?}");
        let request = opened["requests"][0].as_str().unwrap();
        assert!(request.contains("L4_SRC_PORT"), "{request}");
    }
    fails_without("ecmp_hash", &["ecmp-imbalance"], "not back within 5 %");
}

#[test]
fn a_congested_spine_uplink_is_fixed_at_the_uplink() {
    let report = passes("uplink_congestion", 2);
    let lowered = executed(&report, "ecn.lower");
    assert_eq!(lowered.len(), 1, "{lowered:?}");
    assert_eq!(
        (lowered[0]["target"]["switch"].as_str(), lowered[0]["target"]["port"].as_str()),
        (Some("leaf-rail2"), Some("Ethernet16"))
    );
}

#[test]
fn a_gpu_xid_is_read_through_nvml_and_its_cordon_held_by_the_fleet_limit() {
    let report = passes("gpu_xid", 2);
    let decisions = report["runs"][0]["decisions"].as_array().unwrap();
    assert_eq!(decisions.len(), 1, "{decisions:?}");
    assert_eq!(decisions[0]["rule"], "gpu-xid");
    assert_eq!(decisions[0]["verdict"], "held");
    assert!(decisions[0]["reason"].as_str().unwrap().contains("10% of the fleet"), "{}", decisions[0]);
    let p99 = report["summary"]["detect"]["p99"].as_f64().unwrap();
    assert!(p99 <= 100.0, "the XID is read at the next poll: {p99} ms");
}

#[test]
fn symbol_errors_drain_the_rail_and_not_without_it() {
    let report = passes("symbol_errors", 2);
    let drains = executed(&report, "rail.drain");
    assert_eq!(drains.len(), 1);
    assert_eq!(drains[0]["target"]["node"], "node-02");
    fails_without("symbol_errors", &["symbol-errors"], "the steady state never held again");
}

#[test]
fn a_link_flap_storm_isolates_the_link_and_not_without_it() {
    let report = passes("link_flap_storm", 2);
    assert_eq!(executed(&report, "link.isolate").len(), 1);
    fails_without("link_flap_storm", &["link-flap"], "link.isolate was never executed");
}

#[test]
fn a_rail_failure_drains_the_rail_on_every_node_and_not_without_it() {
    let report = passes("rail_failure", 2);
    let drains = executed(&report, "rail.drain");
    assert_eq!(drains.len(), 4, "rail 2 on each of the four nodes");
    assert!(drains.iter().all(|d| d["target"]["rail"] == "2"));
    // The real rail actuator's switch side: the leaf port facing each NIC admin-down.
    let sent: Vec<String> = drains.iter().map(requests).collect();
    assert!(
        sent.iter().all(|s| s.contains("gNMI Set to leaf-rail2") && s.contains("admin_status = \"down\"")),
        "{sent:?}"
    );
    fails_without("rail_failure", &["symbol-errors"], "rail.drain was never executed");
}

#[test]
fn many_faults_hit_the_blast_radius_limit_and_fail_without_it() {
    let report = passes("many_faults", 2);
    let held: Vec<&Value> =
        report["runs"][0]["decisions"].as_array().unwrap().iter().filter(|d| d["verdict"] == "held").collect();
    assert!(!held.is_empty());
    assert!(held[0]["reason"].as_str().unwrap().contains("rail"), "{}", held[0]["reason"]);
    // The same scenario with a playbook that allows two rails of a plane: the
    // second rail is drained, which the scenario forbids.
    let text = std::fs::read_to_string(root().join("playbooks/chaos.toml")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let loose = dir.path().join("loose.toml");
    let rules = format!("rules = {:?}", root().join("rules").to_str().unwrap());
    let text =
        text.replace("max_rails_per_plane = 1", "max_rails_per_plane = 4").replace("rules = \"../rules\"", &rules);
    std::fs::write(&loose, text).unwrap();
    let (code, report) = run(&scenario("many_faults"), 1, &["--playbook", loose.to_str().unwrap()]);
    assert_eq!(code, 1);
    let why = failures(&report);
    assert!(why.contains("plane 0: rails 0, 1 drained"), "{why}");
}

#[test]
fn a_sensor_outage_causes_no_action_and_a_real_fault_would_be_seen() {
    let report = passes("sensor_outage", 2);
    assert!(executed(&report, "rail.drain").is_empty());
    // The harness would see an action: the same outage with a storm in it.
    let text = std::fs::read_to_string(scenario("sensor_outage")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sensor_outage.toml");
    let text = text
        .replace("inventory = \"example\"", "inventory = \"example\"\nrules = \"RULES\"\nplaybook = \"PLAYBOOK\"")
        .replace("RULES", root().join("rules").to_str().unwrap())
        .replace("PLAYBOOK", root().join("playbooks/chaos.toml").to_str().unwrap())
        + "\n[[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-04\", netdev = \"eth0\" }\nat = \"2s\"\n";
    // `[[fault]]` after `[expect]` is still a fault array entry.
    std::fs::write(&path, text).unwrap();
    let (code, report) = run(&path, 1, &[]);
    assert_eq!(code, 1);
    assert!(failures(&report).contains("action(s) executed, at most 0 expected"), "{}", failures(&report));
}

#[test]
fn a_scenario_copied_out_of_the_repository_runs_from_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("pfc_storm.toml");
    std::fs::copy(scenario("pfc_storm"), &copy).unwrap();
    // From the repository: `playbooks/chaos.toml` is found from the current directory.
    let (code, report) = run_in(&root(), &copy, 1, &[]);
    assert_eq!(code, 0, "{}", failures(&report));
    // From anywhere else: the built-in chaos playbook and standard rules.
    let (code, report) = run_in(dir.path(), &copy, 1, &[]);
    assert_eq!(code, 0, "{}", failures(&report));
    // A playbook the scenario names but nobody has is an error at its place.
    std::fs::write(
        &copy,
        std::fs::read_to_string(scenario("pfc_storm"))
            .unwrap()
            .replace("inventory = \"example\"", "inventory = \"example\"\nplaybook = \"nope.toml\""),
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_rocemend"))
        .current_dir(dir.path())
        .args(["chaos", "run"])
        .arg(&copy)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("pfc_storm.toml:") && stderr.contains("playbook \"nope.toml\": neither"), "{stderr}");
}

#[test]
fn a_daemon_config_gives_the_scenario_its_rules_playbook_and_inventory() {
    let dir = tempfile::tempdir().unwrap();
    // The site's rules: the standard ones with the storm rules' mitigation off.
    let rules = dir.path().join("rules");
    std::fs::create_dir(&rules).unwrap();
    for entry in std::fs::read_dir(root().join("rules")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "rhai") {
            let text = std::fs::read_to_string(&path).unwrap().replace("\"pfcwd.escalate\"", "\"webhook.notify\"");
            std::fs::write(rules.join(path.file_name().unwrap()), text).unwrap();
        }
    }
    let inventory = dir.path().join("inventory.toml");
    std::fs::write(&inventory, engine::topology::EXAMPLE_INVENTORY).unwrap();
    let config = dir.path().join("rocemend.toml");
    std::fs::write(
        &config,
        format!(
            "state_dir = {:?}\ninventory = {:?}\nplaybook = {:?}\nrules = {:?}\n",
            dir.path().join("state").to_str().unwrap(),
            inventory.to_str().unwrap(),
            root().join("playbooks/chaos.toml").to_str().unwrap(),
            rules.to_str().unwrap()
        ),
    )
    .unwrap();
    let (code, report) = run(&scenario("pfc_storm"), 1, &["--config", config.to_str().unwrap()]);
    assert_eq!(code, 1, "the site's rules do not escalate the watchdog");
    assert!(failures(&report).contains("pfcwd.escalate was never executed"), "{}", failures(&report));
    // --rules overrides the config's.
    let standard = root().join("rules");
    let (code, report) =
        run(&scenario("pfc_storm"), 1, &["--config", config.to_str().unwrap(), "--rules", standard.to_str().unwrap()]);
    assert_eq!(code, 0, "{}", failures(&report));
}

#[test]
fn a_seed_replays_a_run_exactly() {
    let (_, a) = run(&scenario("pfc_storm"), 2, &["--seed", "42"]);
    let (_, b) = run(&scenario("pfc_storm"), 2, &["--seed", "42"]);
    let strip = |v: &Value| {
        let mut runs = v["runs"].clone();
        for r in runs.as_array_mut().unwrap() {
            // Decision ids come from the ledger's clock; everything else is virtual.
            for d in r["decisions"].as_array_mut().unwrap() {
                d.as_object_mut().unwrap().remove("id");
            }
        }
        runs
    };
    assert_eq!(strip(&a), strip(&b));
    let (_, c) = run(&scenario("pfc_storm"), 1, &["--seed", "43"]);
    assert_ne!(a["runs"][0]["faults"], c["runs"][0]["faults"], "another seed, another jitter");
}

#[test]
fn scenario_errors_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "name = \"bad\"\nduration = \"5s\"\n\n[[steady_state.probe]]\nname = \"step_time\"\nmax = 1\n",
    )
    .unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_rocemend")).args(["chaos", "run"]).arg(&path).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("{}:5:8: unknown probe \"step_time\"", path.display())), "{stderr}");
    std::fs::write(&path, "name = \"bad\"\nduration = \"5 parsecs\"\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_rocemend")).args(["chaos", "run"]).arg(&path).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("{}:2:12: duration", path.display())), "{stderr}");
}

#[test]
fn a_report_renders_again_from_its_json() {
    let out = tempfile::tempdir().unwrap();
    let status = Command::new(env!("CARGO_BIN_EXE_rocemend"))
        .args(["chaos", "run", "--quiet", "--runs", "1", "--out"])
        .arg(out.path())
        .arg(scenario("link_flap_storm"))
        .status()
        .unwrap();
    assert!(status.success());
    let page = out.path().join("again.html");
    let output = Command::new(env!("CARGO_BIN_EXE_rocemend"))
        .args(["chaos", "report"])
        .arg(out.path().join("link_flap_storm.json"))
        .arg("--out")
        .arg(&page)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html, std::fs::read_to_string(out.path().join("link_flap_storm.html")).unwrap());
    assert!(html.contains("<svg") && html.contains(r#"class="mark executed""#));
}
