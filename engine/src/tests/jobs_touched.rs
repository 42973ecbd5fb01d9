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
