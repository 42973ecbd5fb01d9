//! The jobs a proposal carries: those its action's target touches, not its subject's
//! (`rule::Helpers::jobs_touched`), as `[limits] max_jobs_touched` counts them.

use super::common;

use std::sync::Arc;

use common::{load, proposals_of, secs, Rig};
use engine::topology::EXAMPLE_INVENTORY;
use engine::{CounterSpec, Helpers, Labels, SeriesTable, Topology};

/// One switch port's subject proposing three actions that reach three sets of nodes.
const PORT_ACTIONS: &str = r#"
fn fire(w) { true }
#{
    name: "port-actions",
    select: ["switch_port_rx_pause"],
    group_by: ["switch", "port"],
    windows: #{ pauses: rate("switch_port_rx_pause", "1s") },
    actions: [
        #{ action: "ecn.lower", target: #{ "switch": "{switch}", port: "{port}", queue: "3" } },
        #{ action: "ecmp.widen_hash", target: #{ "switch": "{switch}" } },
        #{ action: "node.cordon", target: #{ node: "{peer_node}" } },
        #{ action: "notify.page", target: #{ team: "fabric" } },
    ],
}
"#;

#[test]
fn a_proposal_carries_the_jobs_of_its_actions_target_not_of_its_subject() {
    let topology = Arc::new(Topology::parse(EXAMPLE_INVENTORY, "inventory.toml").expect("example inventory"));
    let series = SeriesTable::new(Some(topology.clone()), Labels::default());
    let helpers = Helpers::new(Some(series.clone()), Some(topology));
    // Port Ethernet4 of every leaf faces node-02 in the example inventory; every node faces every leaf.
    for (job, node) in [("train-a", "node-02"), ("train-a", "node-03"), ("eval-b", "node-02"), ("serve-c", "node-04")] {
        helpers.add_job_node(job, node);
    }
    let rules = load(&[("port-actions.rhai", PORT_ACTIONS)], helpers);
    let mut rig = Rig::with(series, rules, None).unwrap();
    let port =
        rig.counter("switch_port_rx_pause", &[("switch", "leaf-rail5"), ("port", "Ethernet4")], CounterSpec::U64);

    let events = rig.step(secs(0), &[(port, 0)]);
    let jobs_of = |kind: &str| -> Vec<String> {
        let proposals = proposals_of(&events, "port-actions");
        let p = proposals.iter().find(|p| p.action.kind == kind).unwrap_or_else(|| panic!("no {kind}: {events:?}"));
        p.jobs.clone()
    };
    assert_eq!(jobs_of("ecn.lower"), ["eval-b", "train-a"], "the port's node, not the whole leaf");
    assert_eq!(jobs_of("node.cordon"), ["eval-b", "train-a"]);
    assert_eq!(jobs_of("ecmp.widen_hash"), ["eval-b", "serve-c", "train-a"], "every node behind the leaf");
    assert_eq!(jobs_of("notify.page"), Vec::<String>::new());
}

#[test]
fn a_proposal_carries_its_jobs_step_time_and_an_outcome_check_reads_only_later_steps() {
    use engine::{ObserveRequest, Sample, SampleKind, Value, STEP_TIME};
    let topology = Arc::new(Topology::parse(EXAMPLE_INVENTORY, "inventory.toml").expect("example inventory"));
    let series = SeriesTable::new(Some(topology.clone()), Labels::default());
    let helpers = Helpers::new(Some(series.clone()), Some(topology));
    for (job, node) in [("train-a", "node-02"), ("eval-b", "node-02"), ("serve-c", "node-04")] {
        helpers.add_job_node(job, node);
    }
    let rules = load(&[("port-actions.rhai", PORT_ACTIONS)], helpers);
    let mut rig = Rig::with(series, rules, None).unwrap();
    let step_of = |job: &str| rig.series_of("job_step_time_seconds", &[("job", job)], SampleKind::Gauge);
    let (train, eval, serve) = (step_of("train-a"), step_of("eval-b"), step_of("serve-c"));
    let steps = |t: i64, seconds: [f64; 3]| -> Vec<Sample> {
        let ids = [train, eval, serve];
        ids.iter().zip(seconds).map(|(id, s)| Sample { series: *id, ts: secs(t), value: Value::Real(s) }).collect()
    };
    rig.ev.ingest(&steps(0, [0.5, 0.25, 9.0]));
    let port =
        rig.counter("switch_port_rx_pause", &[("switch", "leaf-rail5"), ("port", "Ethernet4")], CounterSpec::U64);

    let events = rig.step(secs(1), &[(port, 0)]);
    let proposals = proposals_of(&events, "port-actions");
    let ecn = proposals.iter().find(|p| p.action.kind == "ecn.lower").unwrap();
    assert_eq!(ecn.jobs, ["eval-b", "train-a"]);
    let step = ecn.values.iter().find(|(n, _)| n == STEP_TIME).map(|(_, v)| *v);
    assert_eq!(step, Some(0.5), "the slowest of the jobs it touches, not serve-c's: {:?}", ecn.values);
    let page = proposals.iter().find(|p| p.action.kind == "notify.page").unwrap();
    assert!(page.values.iter().all(|(n, _)| n != STEP_TIME), "no job touched, no step time");

    let jobs = ecn.jobs.clone();
    let names = [STEP_TIME.to_string(), "pauses".to_string()];
    let subject = ecn.subject.clone();
    let request = ObserveRequest {
        rule: "port-actions",
        subject: &subject,
        names: &names,
        jobs: &jobs,
        jobs_read_after: secs(3),
    };
    let seen = rig.ev.observe(&request, secs(2)).expect("the subject is known");
    assert!(seen.values[0].is_nan(), "a step read before the settling time does not count: {seen:?}");
    rig.ev.ingest(&steps(4, [0.6, 0.3, 9.0]));
    let seen = rig.ev.observe(&request, secs(4)).unwrap();
    assert_eq!(seen.values[0], 0.6, "{seen:?}");
    assert!(rig.ev.job_signal(STEP_TIME, &["nobody".to_string()], 0).is_nan(), "a job with no step time reads nothing");
}
