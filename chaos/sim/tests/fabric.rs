//! The fabric simulator's rules of thumb, one by one, on the example
//! inventory (4 nodes × 8 NICs, leaf per rail, two planes).

use std::sync::Arc;

use engine::time::MS;
use engine::Topology;
use gnmi_proto::gnmi::{SetRequest, Update};
use sim::fabric::{Effect, Fabric, JobSpec, Selector};
use sim::switch::tree;

const STEP: i64 = 100 * MS;

fn fabric(nodes: &[&str]) -> Fabric {
    let topology = Arc::new(Topology::parse(engine::topology::EXAMPLE_INVENTORY, "inventory.toml").unwrap());
    let job = JobSpec {
        name: "train".into(),
        nodes: nodes.iter().map(|n| n.to_string()).collect(),
        load: 0.6,
        comm_fraction: 0.3,
        step_seconds: 0.5,
    };
    Fabric::new(topology, &[job], 7, 0).unwrap()
}

fn nic(f: &Fabric, node: &str, netdev: &str) -> usize {
    f.nic_index(node, netdev).unwrap()
}

fn steps(f: &mut Fabric, n: usize) {
    for _ in 0..n {
        f.step(STEP).unwrap();
    }
}

fn set(f: &Fabric, switch: &str, path: &str, value: &str) {
    let request = SetRequest {
        update: vec![Update {
            path: Some(gnmi_proto::path::parse_path(path).unwrap()),
            val: Some(gnmi_proto::value::string(value)),
            ..Default::default()
        }],
        ..Default::default()
    };
    f.leaf(switch).unwrap().model.write(|s| tree::set(s, &request)).unwrap();
}

#[test]
fn a_storm_spreads_hop_by_hop_until_the_watchdog_drops() {
    let mut f = fabric(&["node-01", "node-02", "node-03"]);
    steps(&mut f, 3);
    assert!((f.probe("step_time_ratio").unwrap() - 1.0).abs() < 1e-6, "healthy");
    let storm = nic(&f, "node-04", "eth3");
    f.start(&Effect::PfcStorm { nic: storm, prio: 3 });
    steps(&mut f, 1);
    // First hop: the other NICs of rail 3 are paused by their leaf.
    let victim = nic(&f, "node-01", "eth3");
    assert!(f.nics[victim].paused >= 0.9);
    assert_eq!(f.nics[nic(&f, "node-01", "eth2")].paused, 0.0, "rail 2 not yet");
    assert!(f.probe("step_time_ratio").unwrap() > 3.0);
    let leaf = f.leaf("leaf-rail3").unwrap().model.clone();
    let rx_pause = |port: &str| leaf.read().port(port).unwrap().pfc[3][2];
    assert_eq!(rx_pause("Ethernet12"), 100_000, "the stormed port is paused by its host all the step");
    assert_eq!(rx_pause("Ethernet0"), 0, "victims are paused by the leaf (TX), not the other way");
    assert!(leaf.read().port("Ethernet0").unwrap().pfc[3][3] >= 90_000);
    // Second hop after 500 ms: the other rails of plane 0, through the spine.
    steps(&mut f, 5);
    assert_eq!(f.nics[nic(&f, "node-01", "eth2")].paused, 0.5);
    assert_eq!(f.nics[nic(&f, "node-01", "eth5")].paused, 0.0, "plane 1 is another spine");
    // The watchdog has declared the storm, but in alert mode it spreads on.
    assert!(leaf.read().port("Ethernet12").unwrap().queues[3].stormed);
    // drop: the spread stops at the next step.
    set(&f, "leaf-rail3", "/sonic-db:CONFIG_DB/PFC_WD/Ethernet12/action", "drop");
    let waited = f.nics[victim].counters.xmit_wait;
    steps(&mut f, 1);
    assert_eq!(f.nics[victim].paused, 0.0);
    assert_eq!(f.probe("paused_fraction"), Some(0.0));
    assert_eq!(f.nics[victim].counters.xmit_wait, waited, "xmit_wait stops rising");
    assert!((f.probe("step_time_ratio").unwrap() - 1.0).abs() < 1e-6);
}

#[test]
fn a_drained_rail_carries_nothing_and_the_others_carry_more() {
    let mut f = fabric(&["node-01", "node-02"]);
    steps(&mut f, 1);
    let before = f.nics[nic(&f, "node-01", "eth1")].counters.xmit_data;
    assert_eq!(f.drain("node-01", 2, true), 1);
    let drained = f.nics[nic(&f, "node-01", "eth2")].counters.xmit_data;
    steps(&mut f, 1);
    assert_eq!(f.nics[nic(&f, "node-01", "eth2")].counters.xmit_data, drained);
    let after = f.nics[nic(&f, "node-01", "eth1")].counters.xmit_data;
    let per_step_before = before as f64;
    let per_step_after = (after - before) as f64;
    assert!((per_step_after / per_step_before - 8.0 / 7.0).abs() < 0.01, "{per_step_after} vs {per_step_before}");
    let ratio = f.probe("step_time_ratio").unwrap();
    assert!((ratio - (0.7 + 0.3 * 8.0 / 7.0)).abs() < 1e-6, "{ratio}");
    assert_eq!(f.probe("unusable_links"), Some(1.0));
}

#[test]
fn a_leaf_port_set_admin_down_in_config_db_takes_the_nic_off_the_fabric() {
    let mut f = fabric(&["node-01", "node-02"]);
    steps(&mut f, 1);
    let i = nic(&f, "node-02", "eth2");
    let port = f.nics[i].switch_port.clone();
    // What the switch side of `rail.drain` writes.
    set(&f, "leaf-rail2", &format!("/sonic-db:CONFIG_DB/PORT/{port}/admin_status"), "down");
    steps(&mut f, 1);
    let stopped = f.nics[i].counters.xmit_data;
    assert_eq!(f.nics[i].counters.link_downed, 1, "the host sees the link go");
    steps(&mut f, 2);
    assert_eq!(f.nics[i].counters.xmit_data, stopped, "no traffic over an admin-down leaf port");
    assert!(!f.leaf("leaf-rail2").unwrap().model.read().port(&port).unwrap().oper_up);
    assert_eq!(f.probe("unusable_links"), Some(1.0));
    // The traffic moved to the node's other rails, as with a scheduler drain.
    let ratio = f.probe("step_time_ratio").unwrap();
    assert!((ratio - (0.7 + 0.3 * 8.0 / 7.0)).abs() < 1e-6, "{ratio}");
    set(&f, "leaf-rail2", &format!("/sonic-db:CONFIG_DB/PORT/{port}/admin_status"), "up");
    steps(&mut f, 1);
    assert!(f.nics[i].usable());
    assert_eq!(f.probe("unusable_links"), Some(0.0));
}

#[tokio::test]
async fn a_silent_leaf_answers_no_gnmi_call_until_it_speaks_again() {
    let mut f = fabric(&["node-01"]);
    let leaf = f.leaf("leaf-rail1").unwrap().model.clone();
    let server = sim::switch::spawn("leaf-rail1", ([127, 0, 0, 1], 0).into(), leaf, sim::switch::Options::default())
        .await
        .unwrap();
    let mut client =
        gnmi_proto::GnmiClient::connect(&gnmi_proto::ClientConfig::plain(server.addr.to_string())).await.unwrap();
    assert!(client.capabilities().await.is_ok());
    f.start(&Effect::GnmiSilent { switch: "leaf-rail1".into() });
    let err = client.capabilities().await.unwrap_err();
    assert_eq!(err.code(), Some(tonic::Code::Unavailable), "{err}");
    f.stop(&Effect::GnmiSilent { switch: "leaf-rail1".into() });
    assert!(client.capabilities().await.is_ok());
    server.stop().await.unwrap();
}

#[test]
fn lower_ecn_thresholds_reduce_waiting_under_congestion() {
    let mut f = fabric(&["node-01", "node-02"]);
    f.start(&Effect::Congestion { rail: 4, load: 0.8 });
    steps(&mut f, 2);
    let victim = nic(&f, "node-01", "eth4");
    let paused = f.nics[victim].paused;
    assert!(paused > 0.25, "{paused}");
    let occupancy = f.probe("queue_occupancy_bytes").unwrap();
    set(&f, "leaf-rail4", "/sonic-db:CONFIG_DB/WRED_PROFILE/AZURE_LOSSLESS/green_min_threshold", "524288");
    steps(&mut f, 1);
    assert!((f.nics[victim].paused - paused / 2.0).abs() < 1e-6);
    assert!(f.probe("queue_occupancy_bytes").unwrap() < occupancy);
    assert_eq!(f.nics[nic(&f, "node-01", "eth3")].paused, 0.0, "other rails are not congested");
}

#[test]
fn symbol_errors_follow_the_ber_and_a_flapping_link_counts_its_downs() {
    let mut f = fabric(&["node-01"]);
    let bad = nic(&f, "node-02", "eth1");
    f.start(&Effect::Ber { nic: bad, ber: 1e-9 });
    steps(&mut f, 10);
    // 400 Gb/s × 1e-9 = 400 errors a second.
    let errors = f.nics[bad].counters.symbol_error;
    assert!((300..500).contains(&errors), "{errors}");
    assert_eq!(f.nics[nic(&f, "node-02", "eth2")].counters.symbol_error, 0);
    f.stop(&Effect::Ber { nic: bad, ber: 1e-9 });
    let flapping = nic(&f, "node-01", "eth5");
    f.start(&Effect::Flap { nic: flapping, period: 500 * MS, down: 100 * MS });
    steps(&mut f, 20);
    assert_eq!(f.nics[flapping].counters.link_downed, 4);
    assert!(f.probe("step_time_ratio").unwrap() > 1.5, "collectives stall on each flap");
    let leaf = f.leaf("leaf-rail5").unwrap().model.clone();
    assert!(leaf.read().port("Ethernet0").unwrap().carrier_transitions >= 7);
    // Isolated: no carrier to lose, traffic on the other rails.
    f.set_admin("node-01", "eth5", false);
    steps(&mut f, 20);
    assert_eq!(f.nics[flapping].counters.link_downed, 4);
    assert!(f.probe("step_time_ratio").unwrap() < 1.1);
}

#[test]
fn the_sysfs_tree_has_the_kernel_layout_and_fixed_width_counters() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = fabric(&["node-01"]);
    f.export_sysfs(dir.path()).unwrap();
    steps(&mut f, 2);
    let dev = dir.path().join("node-01/class/infiniband/mlx5_3");
    assert!(dev.join("device/net/eth3").is_dir());
    let text = std::fs::read_to_string(dev.join("ports/1/counters/port_xmit_data")).unwrap();
    assert_eq!(text.len(), 21, "{text:?}");
    let words: u64 = text.trim().parse().unwrap();
    assert_eq!(words, f.nics[nic(&f, "node-01", "eth3")].counters.xmit_data);
    assert_eq!(std::fs::read_to_string(dev.join("ports/1/counters/link_downed")).unwrap().trim(), "0");
}

#[test]
fn selectors_match_and_say_what_matched_nothing() {
    let f = fabric(&["node-01"]);
    assert_eq!(f.select(&Selector { switch: Some("leaf-rail2".into()), ..Default::default() }).unwrap().len(), 4);
    assert_eq!(f.select(&Selector { plane: Some(1), ..Default::default() }).unwrap().len(), 16);
    let err = f.select(&Selector { node: Some("node-09".into()), ..Default::default() }).unwrap_err();
    assert_eq!(err.to_string(), "selector {node=node-09} matches no NIC of the inventory");
}

#[test]
fn the_jobs_step_time_reads_as_prometheus_text() {
    let mut f = fabric(&["node-01"]);
    steps(&mut f, 1);
    let text = sim::fabric::prom::render(&f);
    assert!(text.contains("# TYPE chaos_job_step_seconds gauge\nchaos_job_step_seconds{job=\"train\"} 0.5"), "{text}");
}
