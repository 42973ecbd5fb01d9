//! Scenario files: the library resolves, errors name file:line:col, and
//! the check of a run record says what failed — for the scenario, for each
//! of its faults, and for the jobs' step time.

use std::collections::BTreeMap;
use std::path::Path;

use chaos::report::{DecisionRecord, FaultRecord, ProbeSeries, RunOutcome, RunRecord, TransitionRecord};
use chaos::scenario::plan::ScenarioPlan;
use chaos::scenario::{check, parse};
use chaos::spec::ScenarioError;

fn err(text: &str) -> ScenarioError {
    parse(text, Path::new("s.toml")).unwrap_err()
}

#[test]
fn every_library_scenario_resolves() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let loaded = chaos::scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
            assert!(!loaded.plan.faults.is_empty(), "{}", path.display());
            let files = loaded.plan.playbook.as_ref().is_none_or(|p| p.exists())
                && loaded.plan.rules_dir.as_ref().is_none_or(|d| d.is_dir());
            assert!(files, "{}", path.display());
            names.push(loaded.plan.name);
        }
    }
    names.sort();
    for want in ["link_flap_storm", "many_faults", "pfc_storm", "rail_failure", "sensor_outage", "symbol_errors"] {
        assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
    }
}

#[test]
fn errors_say_where() {
    let e = err("name = \"x\"\nduration = \"1s\"\n[[fault]]\nkind = \"pfc_strom\"\nat = \"1s\"\n");
    assert_eq!((e.path.as_str(), e.line, e.column), ("s.toml", 4, 8), "{e}");
    assert!(e.message.contains("unknown variant `pfc_strom`"), "{e}");
    let e = err("name = \"x\"\nduration = \"1s\"\n[[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-99\" }\nat = \"1s\"\n");
    assert_eq!((e.line, e.column), (5, 10), "{e}");
    assert!(e.message.contains("matches no NIC"), "{e}");
    let e = err("name = \"x\"\nduration = \"1s\"\n[[fault]]\nkind = \"netem\"\nlink = \"v0\"\nat = \"1s\"\n");
    assert!(e.message.contains("needs real links: set clock = \"wall\""), "{e}");
    let e = err("name = \"x\"\nduration = \"1s\"\n[expect]\nrecover_within = \"soon\"\n");
    assert!(e.to_string().starts_with("s.toml:4:18: recover_within: invalid duration \"soon\""), "{e}");
}

fn record(probe: &[(i64, f64)], decisions: Vec<DecisionRecord>) -> RunRecord {
    RunRecord {
        run: 0,
        seed: 1,
        start: 0,
        end: 3_000,
        faults: vec![FaultRecord { label: "f".into(), nodes: vec!["node-01".into()], start: 1_000, end: None }],
        transitions: vec![TransitionRecord {
            at: 1_200,
            rule: "r".into(),
            subject: Default::default(),
            from: "inactive".into(),
            to: "firing".into(),
        }],
        decisions,
        probes: vec![ProbeSeries { name: "step_time_ratio".into(), points: probe.to_vec() }],
        outcome: Default::default(),
    }
}

fn decision(at: i64, action: &str, node: &str, verdict: &str) -> DecisionRecord {
    DecisionRecord {
        at,
        id: format!("d{at}"),
        rule: "r".into(),
        action: action.into(),
        target: [("node".to_string(), node.to_string())].into(),
        verdict: verdict.into(),
        reason: None,
        undo_of: None,
        canary: None,
        outcome: None,
        judgement: None,
        requests: Vec::new(),
    }
}

#[test]
fn a_record_is_checked_against_every_expectation() {
    // One literal per line: a string continued with `\` hides its braces
    // from tools that read the source line by line.
    let text = concat!(
        "name = \"x\"\nduration = \"3s\"\n[steady_state]\nhold = \"500ns\"\n[[steady_state.probe]]\nname = \"step_time_ratio\"\nmax = 1.5\n",
        "[[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-01\", netdev = \"eth0\" }\nat = \"1s\"\n",
        "[expect]\ndetect = { rule = \"r\", within = \"300ns\" }\nmitigate = { action = \"pfcwd.*\", within = \"100ns\" }\nrecover_within = \"1us\"\nmust_not = [{ action = \"node.cordon\" }]\n",
    );
    let plan = parse(text, Path::new("s.toml")).unwrap().plan;
    let points = [(500, 1.0), (1_100, 4.0), (1_300, 4.0), (1_400, 1.0), (2_000, 1.0), (2_900, 1.0)];
    let good = record(&points, vec![decision(1_250, "pfcwd.escalate", "", "executed")]);
    let o = check(&plan, &good);
    assert!(!o.passed);
    assert_eq!(o.failures, ["pfcwd.* executed 0 ms after the fault; expected within 0 ms"]);
    assert_eq!((o.moments.ttd(), o.moments.ttm(), o.moments.ttr()), (Some(200), Some(250), Some(400)));
    let bad = record(&[(500, 2.0), (2_900, 3.0)], vec![decision(1_100, "node.cordon", "node-02", "executed")]);
    let o = check(&plan, &bad);
    let text = o.failures.join("\n");
    assert!(text.contains("steady state did not hold before the fault: step_time_ratio = 2.000 at +0 ms"), "{text}");
    assert!(text.contains("pfcwd.* was never executed"), "{text}");
    assert!(text.contains("the steady state never held again"), "{text}");
    assert!(text.contains("node.cordon {} (executed) must not happen; decision d1100 did"), "{text}");
    assert!(text.contains("healthy node node-02 cordoned"), "{text}");
}

#[test]
fn every_wall_clock_scenario_resolves_with_explicit_peers() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/wall");
    let mut links = BTreeMap::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            let loaded = chaos::scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
            for f in &loaded.plan.faults {
                assert!(f.peer.is_some(), "{}: {} has no peer", path.display(), f.label);
                links.insert((loaded.plan.name.clone(), f.link.clone().unwrap()), f.peer.clone().unwrap());
            }
        }
    }
    let two = |link: &str| links.get(&("veth_two_links".to_string(), link.to_string())).cloned();
    assert_eq!((two("rcv0"), two("rcv1")), (Some("rcv0p".into()), Some("rcv1-far".into())));
}

/// A wall-clock scenario with `fault` (TOML lines) on `rcv0`.
fn wall(fault: &str) -> String {
    format!("name = \"w\"\nclock = \"wall\"\nduration = \"1s\"\n[[fault]]\nkind = \"veth_flap\"\nat = \"0s\"\n{fault}")
}

#[test]
fn veth_names_are_checked_at_load_with_their_place() {
    let e = err(&wall("link = \"rcv0\"\npeer = \"a-peer-of-sixteen\"\n"));
    assert_eq!((e.line, e.column), (8, 8), "{e}");
    assert!(e.message.contains("peer \"a-peer-of-sixteen\" is 17 bytes long; an interface name has at most 15"), "{e}");
    let e = err(&wall("link = \"rc/v0\"\n"));
    assert_eq!((e.line, e.column), (7, 8), "{e}");
    assert!(e.message.contains("contains '/'"), "{e}");
    let e = err(&wall("link = \"rcv0\"\npeer = \"rcv 0\"\n"));
    assert!(e.message.contains("contains ' '"), "{e}");
    let e = err(&wall("link = \"fifteen-bytes-x\"\n"));
    assert_eq!((e.line, e.column), (7, 8), "{e}");
    assert!(e.message.contains("the default peer \"fifteen-bytes-xp\" of link \"fifteen-bytes-x\" is 16 bytes"), "{e}");
    assert!(e.message.contains("name the peer with `peer = "), "{e}");
    let e = err(&wall("link = \"rcv0\"\npeer = \"rcv0\"\n"));
    assert!(e.message.contains("peer \"rcv0\" is the link itself"), "{e}");
    // Two faults on one link must agree on its peer; one name is one end.
    let two = format!(
        "{}[[fault]]\nkind = \"veth_flap\"\nat = \"0s\"\nlink = \"rcv0\"\npeer = \"other\"\n",
        wall("link = \"rcv0\"\npeer = \"rcv0p\"\n")
    );
    let e = err(&two);
    assert_eq!((e.line, e.column), (13, 8), "{e}");
    assert!(e.message.contains("link \"rcv0\" has peer \"rcv0p\" in fault 0 but \"other\" here"), "{e}");
    let clash = format!(
        "{}[[fault]]\nkind = \"veth_flap\"\nat = \"0s\"\nlink = \"rcv1\"\npeer = \"rcv0\"\n",
        wall("link = \"rcv0\"\n")
    );
    assert!(
        err(&clash).message.contains("peer \"rcv0\" of link \"rcv1\" is already a faulted link"),
        "{}",
        err(&clash)
    );
    // A simulator fault has no veth.
    let e = err("name = \"x\"\nduration = \"1s\"\n[[fault]]\nkind = \"pfc_storm\"\nat = \"1s\"\npeer = \"p\"\n");
    assert_eq!((e.line, e.column), (6, 8), "{e}");
    assert!(e.message.contains("`peer` is for the real-link faults"), "{e}");
    // A fabric fault on the wall clock has no fabric to act on.
    let e = err("name = \"x\"\nclock = \"wall\"\nduration = \"1s\"\n[[fault]]\nkind = \"pfc_storm\"\nat = \"1s\"\n");
    assert_eq!((e.line, e.column), (6, 6), "{e}");
    assert!(e.message.contains("fault PfcStorm is a simulator fault: it needs clock = \"virtual\""), "{e}");
    // Without `peer`, the documented default.
    let plan = parse(&wall("link = \"rcv0\"\n"), Path::new("s.toml")).unwrap().plan;
    assert_eq!(plan.faults[0].peer.as_deref(), Some("rcv0p"));
}

#[test]
fn qdiscs_that_may_overlap_on_one_link_are_refused() {
    let text = "name = \"q\"\nclock = \"wall\"\nduration = \"2s\"\n\
        [[fault]]\nkind = \"netem\"\nlink = \"v0\"\nat = \"0s\"\nduration = \"1s\"\n\
        [[fault]]\nkind = \"tbf\"\nlink = \"v0\"\nat = \"900ms\"\n";
    let e = err(text);
    assert_eq!((e.line, e.column), (12, 6), "{e}");
    assert!(e.message.contains("may be in force with fault 0 on link \"v0\""), "{e}");
    assert!(parse(&text.replace("900ms", "1s"), Path::new("s.toml")).is_ok(), "one after the other is fine");
}

// --- Per-fault recovery -------------------------------------------------

const MS: i64 = 1_000_000;

/// A storm on node-04 eth3 (leaf-rail3 Ethernet12) at 1 s, and a flap of
/// node-03 eth5 (leaf-rail5 Ethernet8) from 2 s, under a job.
const TWO_FAULTS: &str = "name = \"two\"\nduration = \"8s\"\n\
    [[job]]\nname = \"train-a\"\nnodes = [\"node-01\", \"node-02\", \"node-03\"]\n\
    [steady_state]\nhold = \"500ms\"\n[[steady_state.probe]]\nname = \"paused_fraction\"\nmax = 0.1\n\
    [[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-04\", netdev = \"eth3\" }\nat = \"1s\"\nduration = \"2s\"\n\
    [[fault]]\nkind = \"link_flap\"\nselect = { node = \"node-03\", netdev = \"eth5\" }\nat = \"2s\"\n\
    [expect]\ndetect = { rule = \"switch-pfc-storm\", within = \"1s\" }\n";

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn firing(at_ms: i64, rule: &str, subject: &[(&str, &str)]) -> TransitionRecord {
    TransitionRecord {
        at: at_ms * MS,
        rule: rule.into(),
        subject: labels(subject),
        from: "pending".into(),
        to: "firing".into(),
    }
}

fn executed(at_ms: i64, action: &str, target: &[(&str, &str)]) -> DecisionRecord {
    DecisionRecord {
        at: at_ms * MS,
        id: format!("d{at_ms}"),
        rule: "r".into(),
        action: action.into(),
        target: labels(target),
        verdict: "executed".into(),
        reason: None,
        undo_of: None,
        canary: None,
        outcome: None,
        judgement: None,
        requests: Vec::new(),
    }
}

/// An occurrence of fault `index` of `plan`, labelled as the runner labels it.
fn occurrence(plan: &ScenarioPlan, index: usize, start_ms: i64, end_ms: Option<i64>) -> FaultRecord {
    FaultRecord {
        label: plan.faults[index].label.clone(),
        nodes: Vec::new(),
        start: start_ms * MS,
        end: end_ms.map(|e| e * MS),
    }
}

/// Probe points every 100 ms over 8 s, `value(ms)`.
fn series(name: &str, value: impl Fn(i64) -> f64) -> ProbeSeries {
    ProbeSeries { name: name.into(), points: (1..=80).map(|i| (i * 100 * MS, value(i * 100))).collect() }
}

fn run_record(
    faults: Vec<FaultRecord>,
    transitions: Vec<TransitionRecord>,
    decisions: Vec<DecisionRecord>,
    probes: Vec<ProbeSeries>,
) -> RunRecord {
    RunRecord {
        run: 0,
        seed: 1,
        start: 0,
        end: 8_000 * MS,
        faults,
        transitions,
        decisions,
        probes,
        outcome: RunOutcome::default(),
    }
}

#[test]
fn each_fault_is_detected_mitigated_and_recovered_on_its_own_location() {
    let plan = parse(TWO_FAULTS, Path::new("s.toml")).unwrap().plan;
    assert_eq!(plan.faults[0].label, "pfc_storm {node=node-04, netdev=eth3}");
    let faults = vec![
        occurrence(&plan, 0, 1_000, Some(3_000)),
        occurrence(&plan, 1, 2_000, Some(2_150)),
        occurrence(&plan, 1, 2_700, Some(2_850)),
        occurrence(&plan, 1, 3_400, Some(3_550)),
    ];
    let transitions = vec![
        // Elsewhere: attributed to neither fault.
        firing(1_100, "symbol-errors", &[("node", "node-01"), ("netdev", "eth0")]),
        firing(1_250, "switch-pfc-storm", &[("switch", "leaf-rail3"), ("port", "Ethernet12"), ("prio", "3")]),
        // The storm's leaf, another port: not the storm's.
        firing(1_300, "switch-pfc-storm", &[("switch", "leaf-rail3"), ("port", "Ethernet8"), ("prio", "3")]),
        firing(3_450, "link-flap", &[("node", "node-03"), ("netdev", "eth5")]),
    ];
    let decisions = vec![
        executed(1_200, "rail.drain", &[("node", "node-01"), ("rail", "0")]),
        executed(1_400, "pfcwd.escalate", &[("switch", "leaf-rail3"), ("port", "Ethernet12"), ("queue", "3")]),
        executed(3_500, "link.isolate", &[("node", "node-03"), ("netdev", "eth5")]),
    ];
    // Paused from the storm's start until 1.6 s, then from the flaps' 2 s to 3.7 s.
    let paused =
        series(
            "paused_fraction",
            |t| if (1_000..1_600).contains(&t) || (2_000..3_700).contains(&t) { 0.5 } else { 0.0 },
        );
    let record = run_record(faults, transitions, decisions, vec![paused]);
    let o = check(&plan, &record);
    assert_eq!(o.faults.len(), 2);
    let (storm, flap) = (&o.faults[0], &o.faults[1]);
    assert_eq!(storm.moments.ttd(), Some(250 * MS), "{storm:?}");
    assert_eq!(storm.detected_by.as_deref(), Some("switch-pfc-storm {port=Ethernet12, prio=3, switch=leaf-rail3}"));
    assert_eq!(storm.moments.ttm(), Some(400 * MS), "the drain on node-01 is not the storm's");
    // The storm ended at 3 s, after the flap had begun: its window runs to
    // the end, and the flap's damage delays its recovery too.
    assert_eq!(storm.moments.ttr(), Some(2_700 * MS), "{storm:?}");
    assert_eq!((flap.occurrences, flap.moments.fault_at, flap.ended_at), (3, Some(2_000 * MS), Some(3_550 * MS)));
    assert_eq!(flap.moments.ttd(), Some(1_450 * MS));
    assert_eq!(flap.moments.trigger_ttd(), Some(50 * MS), "from the third flap");
    assert_eq!(flap.moments.ttm(), Some(1_500 * MS));
    assert_eq!(flap.mitigated_by.as_deref(), Some("link.isolate {netdev=eth5, node=node-03}"));
    assert_eq!(flap.moments.ttr(), Some(1_700 * MS));
    // The scenario as a whole keeps its meaning: from the first fault, by the [expect] rule.
    assert_eq!((o.moments.ttd(), o.moments.ttr()), (Some(250 * MS), Some(2_700 * MS)));
    assert!(o.passed, "{:?}", o.failures);
}

#[test]
fn a_fault_that_ended_is_judged_until_the_next_one_starts() {
    // The storm ends at 1.5 s and the flap starts at 4 s: the storm
    // recovered (at 1.8 s) before the flap's damage, which is the flap's.
    let text = TWO_FAULTS.replace("duration = \"2s\"", "duration = \"500ms\"").replace("at = \"2s\"", "at = \"4s\"");
    let plan = parse(&text, Path::new("s.toml")).unwrap().plan;
    let faults = vec![occurrence(&plan, 0, 1_000, Some(1_500)), occurrence(&plan, 1, 4_000, None)];
    let paused =
        series(
            "paused_fraction",
            |t| if (1_000..1_800).contains(&t) || (4_000..5_000).contains(&t) { 0.5 } else { 0.0 },
        );
    let o = check(&plan, &run_record(faults, Vec::new(), Vec::new(), vec![paused]));
    assert_eq!(o.faults[0].moments.ttr(), Some(800 * MS));
    assert_eq!(o.faults[1].moments.ttr(), Some(1_000 * MS));
    assert_eq!(o.moments.ttr(), Some(4_000 * MS), "the scenario recovers after its last damage");
}

#[test]
fn a_scenario_without_a_steady_state_has_no_time_to_recover_not_zero() {
    let text = "name = \"x\"\nduration = \"8s\"\n[[job]]\nname = \"j\"\nnodes = [\"node-01\"]\n\
        [[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-04\", netdev = \"eth3\" }\nat = \"1s\"\n";
    let plan = parse(text, Path::new("s.toml")).unwrap().plan;
    // The job's step time is recorded, bounds or not.
    assert!(plan.probes.iter().any(|b| b.probe == "step_time_ratio" && b.min.is_none() && b.max.is_none()));
    let faults = vec![occurrence(&plan, 0, 1_000, None)];
    let o = check(&plan, &run_record(faults, Vec::new(), Vec::new(), vec![series("step_time_ratio", |_| 1.0)]));
    assert_eq!((o.moments.recovered_at, o.moments.ttr()), (None, None));
    assert_eq!(o.faults[0].moments.ttr(), None);
    assert!(o.passed, "{:?}", o.failures);
    // And a deadline on a recovery nothing can measure is refused at load.
    let e = err(&format!("{text}[expect]\nrecover_within = \"1s\"\n"));
    assert_eq!((e.line, e.column), (11, 18), "{e}");
    assert!(e.message.contains("recover_within needs a [[steady_state.probe]] with `min` or `max`"), "{e}");
}

#[test]
fn two_faults_written_alike_keep_their_own_occurrences() {
    let text = "name = \"x\"\nduration = \"8s\"\n\
        [[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-04\", netdev = \"eth3\" }\nat = \"1s\"\nduration = \"1s\"\n\
        [[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-04\", netdev = \"eth3\" }\nat = \"5s\"\n";
    let plan = parse(text, Path::new("s.toml")).unwrap().plan;
    assert_eq!(plan.faults[1].label, "pfc_storm {node=node-04, netdev=eth3} (2)");
    let storm = [("switch", "leaf-rail3"), ("port", "Ethernet12"), ("prio", "3")];
    let record = run_record(
        vec![occurrence(&plan, 0, 1_000, Some(2_000)), occurrence(&plan, 1, 5_000, None)],
        vec![firing(1_300, "switch-pfc-storm", &storm), firing(5_200, "switch-pfc-storm", &storm)],
        Vec::new(),
        Vec::new(),
    );
    let o = check(&plan, &record);
    assert_eq!((o.faults[0].moments.ttd(), o.faults[1].moments.ttd()), (Some(300 * MS), Some(200 * MS)));
}

// --- The jobs' step time ------------------------------------------------

/// A storm from 1 s to 2 s under a job, the step time back within 5 % of
/// its baseline within `after` of the storm's end.
fn step_plan(after: &str) -> ScenarioPlan {
    let text = format!(
        "{}{}[expect]\nstep_time = {{ within = 0.05, after = \"{after}\" }}\n",
        "name = \"x\"\nduration = \"8s\"\n[[job]]\nname = \"j\"\nnodes = [\"node-01\"]\n",
        "[[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-04\", netdev = \"eth3\" }\nat = \"1s\"\nduration = \"1s\"\n",
    );
    parse(&text, Path::new("s.toml")).unwrap().plan
}

/// The step time: 1.0 before the storm, 3.0 during it, and `back` from
/// `back_ms` on (1.5 before that).
fn step_record(plan: &ScenarioPlan, back_ms: i64, back: f64) -> RunRecord {
    let ratio = series("step_time_ratio", |t| match t {
        t if t < 1_000 => 1.0,
        t if t < 2_000 => 3.0,
        t if t < back_ms => 1.5,
        _ => back,
    });
    run_record(vec![occurrence(plan, 0, 1_000, Some(2_000))], Vec::new(), Vec::new(), vec![ratio])
}

#[test]
fn the_step_time_must_come_back_near_its_baseline_after_the_fault() {
    let plan = step_plan("1s");
    let o = check(&plan, &step_record(&plan, 2_500, 1.04));
    let s = o.step_time.clone().unwrap();
    assert_eq!(
        (s.baseline, s.worst, s.worst_at, s.back_at),
        (Some(1.0), Some(3.0), Some(1_000 * MS), Some(2_500 * MS))
    );
    assert_eq!(
        (o.step_back(), o.faults[0].step_back(), o.faults[0].step_worst),
        (Some(1_500 * MS), Some(1_500 * MS), Some(3.0))
    );
    assert!(o.passed, "{:?}", o.failures);

    let o = check(&plan, &step_record(&plan, 3_500, 1.0));
    assert!(!o.passed);
    assert_eq!(
        o.failures,
        ["step time after pfc_storm {node=node-04, netdev=eth3}: back within 5 % of its baseline 1.000 1500 ms after the fault's end; expected within 1000 ms"]
    );

    // 1.06 is 6 % off: never back.
    let o = check(&plan, &step_record(&plan, 2_500, 1.06));
    assert_eq!(o.step_back(), None);
    assert!(
        o.failures[0]
            .contains("not back within 5 % of its baseline 1.000 before the next fault or the run's end (worst 3.000)"),
        "{:?}",
        o.failures
    );
    assert!(check(&step_plan("2s"), &step_record(&plan, 3_500, 1.0)).passed, "a later deadline");
}

#[test]
fn a_fault_that_does_not_end_counts_from_its_mitigation() {
    let text = concat!(
        "name = \"x\"\nduration = \"8s\"\n[[job]]\nname = \"j\"\nnodes = [\"node-01\"]\n",
        "[[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-04\", netdev = \"eth3\" }\nat = \"1s\"\n",
        "[expect]\nstep_time = { after = \"500ms\" }\n",
    );
    let plan = parse(text, Path::new("s.toml")).unwrap().plan;
    let ratio = series("step_time_ratio", |t| if (1_000..3_000).contains(&t) { 2.0 } else { 1.0 });
    let escalate = executed(2_700, "pfcwd.escalate", &[("switch", "leaf-rail3"), ("port", "Ethernet12")]);
    let record = run_record(vec![occurrence(&plan, 0, 1_000, None)], Vec::new(), vec![escalate], vec![ratio.clone()]);
    let o = check(&plan, &record);
    assert!(o.passed, "back 300 ms after the escalation: {:?}", o.failures);
    let record = run_record(vec![occurrence(&plan, 0, 1_000, None)], Vec::new(), Vec::new(), vec![ratio]);
    let o = check(&plan, &record);
    assert_eq!(
        o.failures,
        ["step time after pfc_storm {node=node-04, netdev=eth3}: back within 5 % of its baseline 1.000 2000 ms after its start (it neither ended nor was mitigated); expected within 500 ms"]
    );
}

#[test]
fn step_time_mistakes_are_refused_with_their_place() {
    let storm = "[[fault]]\nkind = \"pfc_storm\"\nselect = { node = \"node-04\", netdev = \"eth3\" }\nat = \"1s\"\n";
    let job = "[[job]]\nname = \"j\"\nnodes = [\"node-01\"]\n";
    let e = err(&format!("name = \"x\"\nduration = \"8s\"\n{storm}[expect]\nstep_time = {{ after = \"1s\" }}\n"));
    assert_eq!((e.line, e.column), (8, 13), "{e}");
    assert!(e.message.contains("step_time needs a [[job]]"), "{e}");
    let e = err(&format!(
        "name = \"x\"\nduration = \"8s\"\n{job}{storm}[expect]\nstep_time = {{ within = 1.5, after = \"1s\" }}\n"
    ));
    assert_eq!((e.line, e.column), (11, 24), "{e}");
    assert!(e.message.contains("step_time.within 1.5 is not a fraction in (0, 1]"), "{e}");
    let e =
        err(&format!("name = \"x\"\nduration = \"8s\"\n{job}{storm}[expect]\nstep_time = {{ after = \"soon\" }}\n"));
    assert_eq!((e.line, e.column), (11, 23), "{e}");
    assert!(e.message.contains("step_time.after: invalid duration \"soon\""), "{e}");
    let e = err(&format!(
        "name = \"x\"\nduration = \"8s\"\n{job}{storm}[expect]\nstep_time = {{ within = 0.1, afer = \"1s\" }}\n"
    ));
    assert_eq!(e.line, 11, "{e}");
    assert!(e.message.contains("unknown field `afer`"), "{e}");
    // The first point is taken at the end of the first step (100 ms).
    let at = |at: &str| {
        let storm = storm.replace("at = \"1s\"", &format!("at = \"{at}\""));
        parse(
            &format!("name = \"x\"\nduration = \"8s\"\n{job}{storm}[expect]\nstep_time = {{ after = \"1s\" }}\n"),
            Path::new("s.toml"),
        )
    };
    let e = at("100ms").unwrap_err();
    assert_eq!((e.line, e.column), (9, 6), "{e}");
    assert!(e.message.contains("step_time needs a baseline before the first fault, which starts at 100 ms"), "{e}");
    assert!(at("150ms").is_ok());
}

/// The closed loop on the virtual clock: the library's PFC storm with a
/// step-time expectation. The job's step time is recorded without being
/// asked for, the storm hurts it, and the escalation brings it back long
/// before the storm's end.
#[tokio::test(flavor = "current_thread")]
async fn the_step_time_of_a_real_run_is_recorded_and_comes_back() {
    let (path, text) = chaos::library::SCENARIOS.iter().find(|(p, _)| p.ends_with("/pfc_storm.toml")).unwrap();
    let text = text.replace("[expect]\n", "[expect]\nstep_time = { within = 0.05, after = \"2s\" }\n");
    let loaded = parse(&text, Path::new(path)).unwrap();
    let options = chaos::run::Options { runs: Some(1), ..chaos::run::Options::default() };
    let report = chaos::run::run_scenario(&loaded, &chaos::library::sources().unwrap(), &options).await.unwrap();
    let run = &report.runs[0];
    assert!(run.probes.iter().any(|p| p.name == "step_time_ratio" && !p.points.is_empty()));
    let o = &run.outcome;
    assert!(o.passed, "{:?}", o.failures);
    let step = o.step_time.clone().unwrap();
    assert!((step.baseline.unwrap() - 1.0).abs() < 1e-6, "{step:?}");
    assert!(step.worst.unwrap() > 1.2, "the storm slows the job: {step:?}");
    let back = o.faults[0].step_back_at.unwrap();
    assert!(back < o.faults[0].ended_at.unwrap(), "back before the storm ends: {:?}", o.faults[0]);
    assert!(report.summary.step_time.as_ref().is_some_and(|s| s.back.count == 1));
}
