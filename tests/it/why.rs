//! `rocemend why` on recordings of the simulated fabric: a job slowed by
//! each fault kind of the chaos library (`chaos/scenarios/*.toml`, read
//! for their place and strength), and by randomized faults with jitter and
//! a second small fault. `why` must name the faulty element first.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use engine::{Nanos, Topology, SECOND};
use ops::why;
use sim::fabric::Selector;
use sim::why_cases::{self, Case, CaseKind, Fault};

fn example() -> Arc<Topology> {
    Arc::new(Topology::parse(engine::topology::EXAMPLE_INVENTORY, "example").unwrap())
}

/// The elements that count as naming the fault: its NIC's rail, its GPU,
/// its leaf's plane, or (a rail-wide congestion) that rail on any node.
fn truth(fault: &Fault, topology: &Topology) -> Vec<String> {
    let inv = topology.inventory();
    let nics = |s: &Selector| -> Vec<String> {
        inv.node
            .iter()
            .flat_map(|n| n.nic.iter().map(move |c| (n, c)))
            .filter(|(n, c)| {
                s.node.as_ref().is_none_or(|x| *x == n.name)
                    && s.netdev.as_ref().is_none_or(|x| *x == c.netdev)
                    && s.switch.as_ref().is_none_or(|x| Some(x) == c.switch.as_ref())
                    && s.rail.is_none_or(|r| r == c.rail)
            })
            .map(|(n, c)| format!("rail {} of {}", c.rail, n.name))
            .collect()
    };
    match fault.kind {
        CaseKind::GpuXid => {
            vec![format!("GPU {} of {}", fault.params["gpu"] as u32, fault.select.node.as_deref().unwrap_or_default())]
        }
        CaseKind::UplinkCongestion => {
            let leaf = inv.switch.iter().find(|s| Some(&s.name) == fault.select.switch.as_ref()).unwrap();
            vec![format!("spine/plane {}", leaf.plane.unwrap_or(0))]
        }
        _ => nics(&fault.select),
    }
}

/// The analysis of a recorded case: the ranked element names.
fn ranked(case: &Case, topology: &Arc<Topology>, span: Option<(Nanos, Nanos)>) -> Result<Vec<String>, String> {
    let bytes = why_cases::record(case, topology.clone());
    let rec = why::series::read(&bytes[..], "case").map_err(|e| e.to_string())?;
    let q = why::Query {
        job: &case.job,
        span,
        threshold: why::window::DEFAULT_THRESHOLD,
        topology: Some(topology),
        all_metrics: false,
    };
    let report = why::analyze(&rec, &q, &[], |_| String::new()).map_err(|e| e.to_string())?;
    // An answer of "not the fabric" names no element first.
    let first = (!report.answer.fabric).then(|| "not the fabric".to_string());
    Ok(first.into_iter().chain(report.ranking.iter().map(|r| r.element.to_string())).collect())
}

fn duration(v: Option<&toml::Value>) -> Option<Nanos> {
    v.and_then(|v| v.as_str()).map(|s| engine::time::parse_duration(s).unwrap())
}

/// The library scenario of `kind`: its job and first fault, as a case
/// starting 20 s into a healthy run (the library's faults start at 1 s,
/// too early for a baseline).
fn library_case(file: &str) -> Option<Case> {
    let text = std::fs::read_to_string(common::repo(&format!("chaos/scenarios/{file}"))).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let fault = doc.get("fault")?.as_array()?.first()?;
    let kind = CaseKind::parse(fault.get("kind")?.as_str()?)?;
    let select: Selector = fault.get("select")?.clone().try_into().unwrap();
    let mut params = BTreeMap::new();
    for key in ["prio", "ber", "load", "gpu", "xid"] {
        if let Some(v) = fault.get(key) {
            params.insert(key.to_string(), v.as_float().or_else(|| v.as_integer().map(|i| i as f64)).unwrap());
        }
    }
    for key in ["period", "down"] {
        if let Some(d) = duration(fault.get(key)) {
            params.insert(key.to_string(), d as f64 / SECOND as f64);
        }
    }
    let job = &doc["job"].as_array()?[0];
    let nodes = job["nodes"].as_array()?.iter().map(|n| n.as_str().unwrap().to_string()).collect();
    let at = 20 * SECOND;
    let lasts = duration(fault.get("duration"));
    Some(Case {
        job: job["name"].as_str()?.to_string(),
        nodes,
        fault: Fault { kind, select, at, duration: lasts, params },
        distractor: None,
        length: at + lasts.unwrap_or(12 * SECOND).min(12 * SECOND) + 6 * SECOND,
        seed: 1,
        qps_per_connection: 1,
    })
}

#[test]
fn each_library_fault_kind_is_named_first() {
    let topology = example();
    let mut seen = Vec::new();
    let mut files: Vec<String> = std::fs::read_dir(common::repo("chaos/scenarios"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|f| f.ends_with(".toml"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    for file in files {
        let Some(case) = library_case(&file) else { continue };
        // A job the fault does not slow (symbol errors at a BER of 1e-9
        // cost it 0.3 %) has no regression to find: the SRE points at the
        // fault's span instead.
        let span = (case.fault.kind == CaseKind::SymbolErrors)
            .then(|| (why_cases::START + case.fault.at, why_cases::START + case.length));
        let want = truth(&case.fault, &topology);
        let got = ranked(&case, &topology, span);
        println!("{file}: {:?} → {:?}", case.fault.kind, got.as_ref().map(|g| g.iter().take(3).collect::<Vec<_>>()));
        match got {
            Ok(g) if g.first().is_some_and(|top| want.contains(top)) => {}
            other => failures.push(format!("{file}: want one of {want:?}, got {other:?}")),
        }
        seen.push(case.fault.kind);
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen, CaseKind::ALL, "every kind of the library has a scenario");
    assert!(failures.is_empty(), "top-1 must be 100 % on the library: {failures:#?}");
}

/// top-1 and top-3 accuracy over `n` random cases from seed 1000.
fn accuracy(n: u64) -> (f64, f64, Vec<String>) {
    let topology = example();
    let (mut top1, mut top3, mut misses) = (0, 0, Vec::new());
    for seed in 1000..1000 + n {
        let case = why_cases::random_case(&topology, seed);
        let want = truth(&case.fault, &topology);
        let got = ranked(&case, &topology, None).unwrap_or_else(|e| vec![format!("error: {e}")]);
        if got.first().is_some_and(|g| want.contains(g)) {
            top1 += 1;
        } else {
            misses.push(format!(
                "seed {seed} {:?} {}: want {want:?}, got {:?}",
                case.fault.kind,
                case.fault.select,
                &got[..got.len().min(3)]
            ));
        }
        if got.iter().take(3).any(|g| want.contains(g)) {
            top3 += 1;
        }
    }
    (top1 as f64 / n as f64, top3 as f64 / n as f64, misses)
}

#[test]
fn randomized_faults_are_named_first_at_least_nine_times_in_ten() {
    let (top1, top3, misses) = accuracy(40);
    println!("40 random cases: top-1 {:.1} %, top-3 {:.1} %", top1 * 100.0, top3 * 100.0);
    assert!(top1 >= 0.9, "top-1 {top1}: {misses:#?}");
}

/// The full set: `cargo test --release --test it -- why:: --ignored --nocapture`.
#[test]
#[ignore = "200 simulated hour-scale cases take 6 min in a debug build; the 40-case test above runs in CI"]
fn two_hundred_randomized_faults() {
    let (top1, top3, misses) = accuracy(200);
    println!("200 random cases: top-1 {:.1} %, top-3 {:.1} %", top1 * 100.0, top3 * 100.0);
    for m in &misses {
        println!("miss: {m}");
    }
    assert!(top1 >= 0.9, "top-1 {top1}");
}

/// The verb end to end, on what a real daemon recorded and decided: the
/// library's PFC storm is replayed through the standard rules by a daemon
/// that records what it sees and logs its actions; `rocemend why` on its
/// config names the storming NIC, the daemon's decisions and the timeline
/// commands, in text and in JSON.
#[test]
fn the_verb_names_the_storm_and_the_daemons_decisions() {
    use std::process::{Command, Stdio};
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let case = library_case("pfc_storm.toml").unwrap();
    let input = dir.join("input.jsonl");
    std::fs::write(&input, why_cases::record(&case, example())).unwrap();
    let playbook = common::log_playbook(dir, "why", Some("enforce"), &common::repo("rules"));
    let config = common::daemon_config(dir, &playbook, Some(&input));
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("state_dir = \"state\"\n", "state_dir = \"state\"\nrecord = \"daemon.jsonl\"\n")
        .replace("[engine]\n", "[engine]\nexit_when_sensors_end = true\n");
    std::fs::write(&config, text).unwrap();
    let run = Command::new(common::bin())
        .args(["run", "--config"])
        .arg(&config)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", common::text(&run));

    let why = |extra: &[&str]| {
        let out = Command::new(common::bin())
            .args(["why", "--config", config.to_str().unwrap(), "--job", "train-a"])
            .args(extra)
            .current_dir(dir)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", common::text(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let text = why(&[]);
    println!("{text}");
    let verdict = text.lines().find(|l| l.starts_with("verdict: ")).expect("a verdict line");
    assert!(verdict.starts_with("verdict: rail 3 of node-04 (mlx5_3/eth3 ↔ leaf-rail3 Ethernet12)"), "{verdict}");
    assert!(text.contains("pfcwd.escalate"), "the daemon escalated the watchdog: {text}");
    assert!(text.contains("rocemend timeline --incident inc-"), "{text}");
    assert!(text.contains("rocemend timeline --job train-a --from"), "{text}");

    let doc: serde_json::Value = serde_json::from_str(&why(&["--json"])).unwrap();
    assert_eq!(doc["ranking"][0]["name"], "rail 3 of node-04 (mlx5_3/eth3 ↔ leaf-rail3 Ethernet12)");
    assert_eq!(doc["ranking"][0]["element"], serde_json::json!({"kind": "rail", "node": "node-04", "rail": "3"}));
    assert!(doc["decisions"].as_array().unwrap().iter().any(|d| d["action"] == "pfcwd.escalate"), "{doc:#}");
    assert!(doc["signal"]["slowdown"].as_f64().unwrap() > 0.15);
    assert_eq!(doc["answer"]["fabric"], true, "{doc:#}");
    assert!(doc["answer"]["confidence"].as_f64().unwrap() > 0.9, "{doc:#}");
    assert!(doc["answer"]["evidence"][0].as_str().unwrap().starts_with("ethtool_tx_prio_pause_duration_us"), "{doc:#}");
    assert!(verdict.contains("(confidence "), "{verdict}");

    // Errors exit 2 and say what is wrong.
    let bad = Command::new(common::bin())
        .args(["why", "--config", config.to_str().unwrap(), "--job", "nope"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(common::text(&bad).contains("unknown job nope"), "{}", common::text(&bad));
}

/// The job and the resubmission of `chaos/scenarios/ecmp_collision.toml` on its inventory, as a
/// case starting 20 s into a healthy run, with seed `seed`.
fn ecmp_case(seed: u64) -> (Case, Arc<Topology>) {
    let text = std::fs::read_to_string(common::repo("chaos/scenarios/ecmp_collision.toml")).unwrap();
    let doc: toml::Value = toml::from_str(&text).unwrap();
    let inventory = common::repo(&format!("chaos/scenarios/{}", doc["inventory"].as_str().unwrap()));
    let topology = Arc::new(Topology::load(&inventory).unwrap());
    let job = &doc["job"].as_array().unwrap()[0];
    let fault = &doc["fault"].as_array().unwrap()[0];
    assert_eq!(fault["kind"].as_str(), Some("job_relaunch"));
    let qps = fault["qps"].as_integer().unwrap() as f64;
    let at = 20 * SECOND;
    let case = Case {
        job: job["name"].as_str().unwrap().to_string(),
        nodes: job["nodes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_string()).collect(),
        fault: Fault {
            kind: CaseKind::JobRelaunch,
            select: Selector::default(),
            at,
            duration: None,
            params: [("qps".to_string(), qps)].into(),
        },
        distractor: None,
        length: at + 20 * SECOND,
        seed,
        qps_per_connection: job["qps_per_connection"].as_integer().unwrap() as u32,
    };
    (case, topology)
}

#[test]
fn the_ecmp_scenarios_collision_is_named_with_its_leaf_and_its_uplinks() {
    for seed in 1..=10 {
        let (case, topology) = ecmp_case(seed);
        let bytes = why_cases::record(&case, topology.clone());
        let rec = why::series::read(&bytes[..], "case").unwrap();
        let q = why::Query {
            job: &case.job,
            span: None,
            threshold: why::window::DEFAULT_THRESHOLD,
            topology: Some(&topology),
            all_metrics: false,
        };
        // A placement that puts two flows on one uplink of a leaf whose others carry one costs
        // the job less than 15 %: no regression to find (`why` compares with peers alone then),
        // and the SRE points at the span since the resubmission instead, as for symbol errors above.
        let span = (why_cases::START + case.fault.at, why_cases::START + case.length);
        let found = why::analyze(&rec, &q, &[], |_| String::new()).ok().filter(|r| !r.windows.peers_only);
        let report = found
            .map(Ok)
            .unwrap_or_else(|| why::analyze(&rec, &why::Query { span: Some(span), ..q }, &[], |_| String::new()))
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let verdict = why::render::verdict(&report);
        let top = report.ranking.first().map(|r| r.element.to_string());
        println!("seed {seed}: {verdict}");
        let collision = report.ecmp.first().unwrap_or_else(|| panic!("seed {seed}: no collision found: {verdict}"));
        assert!(collision.switch.starts_with("leaf-su"), "{collision}");
        assert!(collision.hot < collision.uplinks && collision.share > 0.5, "{collision}");
        assert!(collision.baseline_skew.is_some_and(|b| b < collision.skew), "{collision}");
        assert!(verdict.starts_with("ECMP collision: "), "seed {seed}: top {top:?}: {verdict}");
        // The leaf named is the one whose hot uplink marks at the top of the ranking.
        let leaf = verdict.split(" uplinks of ").nth(1).and_then(|v| v.split(' ').next()).unwrap();
        let strongest = &report.ranking[0].signals[0];
        assert!(strongest.labels.contains(&format!("switch=\"{leaf}\"")), "seed {seed}: {leaf} vs {strongest:?}");
        assert_eq!(top.as_deref(), Some("spine/plane 0"), "seed {seed}: the uplinks are the plane's");
        let json = why::render::json(&report);
        assert!(json["ecmp"][0]["text"].as_str().unwrap().starts_with("ECMP collision: "), "{json}");
    }
}

/// Healthy fabrics under a job slowed by its own input pipeline, with the small distractors of
/// the randomized cases: "not the fabric" for at least 9 in 10, and a confident fabric answer
/// (confidence over 50 %) for at most 1 in 10.
#[test]
fn a_job_slowed_by_its_own_loader_is_not_the_fabric() {
    let topology = example();
    let (mut not_fabric, mut confident_wrong, n) = (0, 0, 30);
    for seed in 2000..2000 + n {
        let case = why_cases::not_the_fabric(&topology, seed);
        let r = report_of(&case, &topology).unwrap();
        if !r.answer.fabric {
            not_fabric += 1;
        } else if r.answer.confidence > 0.5 {
            confident_wrong += 1;
        }
    }
    println!("{n} negative controls: not the fabric {not_fabric}, confident fabric answers {confident_wrong}");
    assert!(not_fabric * 10 >= n * 9, "not the fabric in {not_fabric} of {n}");
    assert!(confident_wrong * 10 <= n, "confident wrong answers: {confident_wrong} of {n}");
}

/// The analysis of a recorded case, whole.
fn report_of(case: &Case, topology: &Arc<Topology>) -> Result<why::Report, String> {
    let bytes = why_cases::record(case, topology.clone());
    let rec = why::series::read(&bytes[..], "case").map_err(|e| e.to_string())?;
    let q = why::Query {
        job: &case.job,
        span: None,
        threshold: why::window::DEFAULT_THRESHOLD,
        topology: Some(topology),
        all_metrics: false,
    };
    why::analyze(&rec, &q, &[], |_| String::new()).map_err(|e| e.to_string())
}

/// Scores of right and wrong answers, for choosing where "not the fabric" starts:
/// `cargo test --release --test it -- why::scores --ignored --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn scores_of_right_answers_and_of_negative_controls() {
    let topology = example();
    for seed in 1000..1100 {
        let case = why_cases::random_case(&topology, seed);
        let want = truth(&case.fault, &topology);
        let Ok(r) = report_of(&case, &topology) else { continue };
        let s = |i: usize| r.ranking.get(i).map_or(0.0, |e| e.score);
        let right = r.ranking.first().is_some_and(|e| want.contains(&e.element.to_string()));
        println!("fault {:?} right={right} top={:.2} second={:.2}", case.fault.kind, s(0), s(1));
    }
    for seed in 2000..2060 {
        let case = why_cases::not_the_fabric(&topology, seed);
        match report_of(&case, &topology) {
            Ok(r) => {
                let s = |i: usize| r.ranking.get(i).map_or(0.0, |e| e.score);
                let top = r.ranking.first().map(|e| e.element.to_string()).unwrap_or_default();
                println!(
                    "control top={:.2} second={:.2} {top} {:?}",
                    s(0),
                    s(1),
                    case.distractor.as_ref().map(|d| d.kind)
                );
            }
            Err(e) => println!("control error {e}"),
        }
    }
}
