//! The fabric simulator's rules of thumb, one by one, on the example
//! inventory (4 nodes × 8 NICs, leaf per rail, two planes).

use std::sync::Arc;

use engine::time::MS;
use engine::Topology;
use sim::fabric::{Effect, Fabric, JobSpec, Selector, StepClock};

const STEP: i64 = 100 * MS;

fn fabric(nodes: &[&str]) -> Fabric {
    let topology = Arc::new(Topology::parse(engine::topology::EXAMPLE_INVENTORY, "inventory.toml").unwrap());
    let nodes: Vec<String> = nodes.iter().map(|n| n.to_string()).collect();
    let job = JobSpec::new("train", &nodes);
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
    let rx_pause = |port: &str| leaf.read().port(port).unwrap().pfc[3].rx_pause_us;
    assert_eq!(rx_pause("Ethernet12"), 100_000, "the stormed port is paused by its host all the step");
    assert_eq!(rx_pause("Ethernet0"), 0, "victims are paused by the leaf (TX), not the other way");
    assert!(leaf.read().port("Ethernet0").unwrap().pfc[3].tx_pause_us >= 90_000);
    // Second hop after 500 ms: the other rails of plane 0, through the spine.
    steps(&mut f, 5);
    assert_eq!(f.nics[nic(&f, "node-01", "eth2")].paused, 0.5);
    assert_eq!(f.nics[nic(&f, "node-01", "eth5")].paused, 0.0, "plane 1 is another spine");
    // The watchdog has declared the storm, but in alert mode it spreads on.
    let stormed = |leaf: &sim::switch::Model| leaf.read().watchdog.queues[&(3, 3)].stormed;
    assert!(stormed(&leaf));
    // An in-place change to drop: orchagent keeps the started watchdog's alert, the spread
    // goes on.
    leaf.set_config("PFC_WD", "Ethernet12", [("action", "drop")]).unwrap();
    let waited = f.nics[victim].counters.xmit_wait;
    steps(&mut f, 2);
    assert!(f.nics[victim].paused > 0.0, "an in-place change does not stop it");
    assert!(f.nics[victim].counters.xmit_wait > waited);
    // Restarted as `pfcwd start` does (deleted, then written): the next detection drops, and
    // the spread stops.
    let entry = leaf.config_entry("PFC_WD", "Ethernet12").unwrap();
    leaf.delete_config("PFC_WD", "Ethernet12").unwrap();
    leaf.set_config("PFC_WD", "Ethernet12", entry).unwrap();
    steps(&mut f, 3);
    assert!(stormed(&leaf), "detected again, now with a drop handler");
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
    let leaf = f.leaf("leaf-rail2").unwrap().model.clone();
    leaf.set_config("PORT", &port, [("admin_status", "down")]).unwrap();
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
    leaf.set_config("PORT", &port, [("admin_status", "up")]).unwrap();
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
    let leaf = f.leaf("leaf-rail4").unwrap().model.clone();
    leaf.set_config("WRED_PROFILE", "AZURE_LOSSLESS", [("green_min_threshold", "524288")]).unwrap();
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
    assert!(leaf.read().port("Ethernet0").unwrap().oper_transitions >= 7);
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
    let healthy = "# TYPE job_step_time_seconds gauge\njob_step_time_seconds{job=\"train\"} 0.5\n";
    assert!(text.contains(healthy), "the job ran before the run began: {text}");
}

#[test]
fn a_step_time_is_the_last_finished_steps_not_the_running_pace() {
    let mut clock = StepClock::default();
    clock.run(400 * MS, 400 * MS, 0.5);
    assert_eq!(clock.last, None, "the first step is still running");
    clock.run(100 * MS, 500 * MS, 0.5);
    assert_eq!(clock.last, Some(0.5));
    // The pace doubles: the step that ran half at each pace ends 0.75 s after it began.
    clock.run(250 * MS, 750 * MS, 0.5);
    clock.run(500 * MS, 1250 * MS, 1.0);
    assert_eq!(clock.last, Some(0.75));
    clock.run(900 * MS, 2150 * MS, 1.0);
    assert_eq!(clock.last, Some(0.75), "the slow step is still running");
    clock.run(100 * MS, 2250 * MS, 1.0);
    assert_eq!(clock.last, Some(1.0));
}

#[test]
fn the_netdev_counters_show_the_storm_the_pause_the_errors_and_the_carrier() {
    let mut f = fabric(&["node-01", "node-02", "node-03"]);
    let storm = nic(&f, "node-04", "eth3");
    let victim = nic(&f, "node-01", "eth3");
    f.start(&Effect::PfcStorm { nic: storm, prio: 3 });
    steps(&mut f, 10);
    // The storming NIC held its port paused the whole second on priority 3, and only there.
    let s = f.nics[storm].netdev_counters;
    assert_eq!(s.tx_pause_us[3], 1_000_000);
    assert_eq!(s.tx_pause_us.iter().sum::<u64>(), 1_000_000);
    assert_eq!(s.tx_pause[3], 20_000, "one frame per 50 us");
    // Its victim on the same leaf was paused 90 % of the time, in the RX direction.
    let v = f.nics[victim].netdev_counters;
    assert_eq!(v.tx_pause_us[3], 0);
    assert!((880_000..=900_000).contains(&v.rx_pause_us[3]), "{}", v.rx_pause_us[3]);
    // The PHY counts the bits on the wire, lit or idle: 400 Gb/s for a second.
    assert_eq!(v.rx_bits_phy, 400_000_000_000);
    // Symbol errors are corrected bits too.
    let errored = nic(&f, "node-02", "eth1");
    f.start(&Effect::Ber { nic: errored, ber: 1e-9 });
    steps(&mut f, 10);
    let e = f.nics[errored].netdev_counters;
    assert!(e.rx_pcs_symbol_err_phy > 300, "{}", e.rx_pcs_symbol_err_phy);
    assert_eq!(e.rx_corrected_bits_phy, e.rx_pcs_symbol_err_phy);
    // Each loss of carrier counts one down and its return one up, as the kernel counts them.
    let flapping = nic(&f, "node-03", "eth5");
    f.start(&Effect::Flap { nic: flapping, period: 700 * MS, down: 150 * MS });
    steps(&mut f, 20);
    let c = f.nics[flapping].netdev_counters;
    assert_eq!(c.carrier_down, 3, "downs in the first 150 ms of each 700 ms: at 0.1, 0.8 and 1.5 s of 2 s");
    assert_eq!(c.carrier_up, 3);
    assert!(c.carrier_on);
    // Taking the NIC down is one more loss of carrier, and no more while it stays down.
    f.set_admin("node-03", "eth5", false);
    steps(&mut f, 10);
    assert_eq!(f.nics[flapping].netdev_counters.carrier_down, 4);
}

#[test]
fn a_gpu_xid_is_an_nvml_event_and_stalls_the_job_until_the_node_is_cordoned() {
    let mut f = fabric(&["node-01", "node-02", "node-03", "node-04"]);
    steps(&mut f, 2);
    f.start(&Effect::GpuXid { node: "node-03".into(), gpu: 5, xid: 79 });
    assert_eq!(f.xid_events.len(), 1);
    assert_eq!((f.xid_events[0].gpu, f.xid_events[0].xid), (5, 79));
    assert_eq!(f.xid_events[0].pci_bus_id, "00000000:AB:00.0");
    steps(&mut f, 1);
    assert_eq!(f.probe("step_time_ratio"), Some(sim::fabric::physics::STALLED));
    f.cordon("node-03", true);
    steps(&mut f, 1);
    assert!((f.probe("step_time_ratio").unwrap() - 1.0).abs() < 1e-6, "the ranks moved off node-03");
}

#[test]
fn a_congested_nic_receives_marked_packets_and_sends_cnps() {
    let mut f = fabric(&["node-01", "node-02", "node-03", "node-04"]);
    let n = nic(&f, "node-02", "eth5");
    steps(&mut f, 10);
    assert_eq!(f.nics[n].counters.np_cnp_sent, 0, "no marks below line rate");
    f.start(&Effect::Congestion { rail: 5, load: 0.8 });
    steps(&mut f, 10);
    let c = f.nics[n].counters;
    // 140 % offered: 40 % of the packets to the NIC marked, a CNP per ten marks.
    assert!(c.np_cnp_sent > 50_000, "over the cnp-storm threshold in a second: {c:?}");
    // One CNP per ten marks, rounded down at each of the ten steps.
    assert!(c.np_cnp_sent <= c.np_ecn_marked / 10 && c.np_cnp_sent + 10 >= c.np_ecn_marked / 10, "{c:?}");
}
