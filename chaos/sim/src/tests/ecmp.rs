//! ECMP on the fabric: a job whose ring crosses between two scalable units hashes its flows
//! onto its leaves' uplinks, collisions slow it, and more QPs or a wider hash spread it.

use std::sync::Arc;

use engine::time::MS;
use engine::topology::{Inventory, Nic, Node, Switch, SwitchRole};
use engine::Topology;
use sim::fabric::{Fabric, JobSpec};

const STEP: i64 = 100 * MS;

/// Two scalable units of 4 nodes, 2 rails: leaf-su<u>-rail<r>, each with 4 NICs and so 4
/// uplinks toward its plane's spine.
fn two_units() -> Arc<Topology> {
    let mut inv = Inventory::default();
    for u in 0..2 {
        for r in 0..2u32 {
            let mut leaf = Switch::new(format!("leaf-su{u}-rail{r}"), SwitchRole::Leaf);
            (leaf.rail, leaf.plane) = (Some(r), Some(0));
            inv.switch.push(leaf);
        }
    }
    let mut spine = Switch::new("spine-0", SwitchRole::Spine);
    spine.plane = Some(0);
    inv.switch.push(spine);
    for n in 0..8usize {
        let u = n / 4;
        let nic = (0..2u32)
            .map(|r| Nic {
                rdma_dev: format!("mlx5_{r}"),
                netdev: format!("eth{r}"),
                port: 1,
                gpu: None,
                rail: r,
                plane: 0,
                switch: Some(format!("leaf-su{u}-rail{r}")),
                switch_port: Some(format!("Ethernet{}", 4 * (n % 4))),
            })
            .collect();
        let pod = Some(format!("su{u}"));
        inv.node.push(Node { name: format!("node-{n}"), rack: None, pod, zone: None, gpu: vec![], nic });
    }
    Arc::new(Topology::from_inventory(inv).unwrap())
}

/// A job on all 8 nodes whose ring alternates between the units (ranks placed round-robin):
/// every hop of the ring crosses the spine.
fn job(qps: u32) -> JobSpec {
    let order = [0, 4, 1, 5, 2, 6, 3, 7].map(|n| format!("node-{n}"));
    JobSpec { qps_per_connection: qps, load: 0.6, ..JobSpec::new("train", &order) }
}

fn run(fabric: &mut Fabric, steps: usize) -> f64 {
    for _ in 0..steps {
        fabric.step(STEP).unwrap();
    }
    fabric.jobs[0].step_ratio
}

/// Each uplink's bytes sent by leaf `leaf` so far.
fn uplink_bytes(fabric: &Fabric, leaf: &str) -> Vec<u64> {
    let leaf = fabric.leaf(leaf).unwrap();
    leaf.uplinks.iter().map(|p| leaf.model.read().port(p).unwrap().out_octets).collect()
}

fn set_hash(fabric: &Fabric, fields: &str) {
    for leaf in fabric.leaves.values() {
        leaf.model.set_config("SWITCH_HASH", "GLOBAL", [("ecmp_hash@", fields)]).unwrap();
    }
}

#[test]
fn a_ring_across_units_collides_on_some_seeds_and_eight_qps_spread_it() {
    let topology = two_units();
    let (mut collided, mut spread) = (0, 0);
    for seed in 0..20 {
        let mut one = Fabric::new(topology.clone(), &[job(1)], seed, 0).unwrap();
        assert_eq!(one.leaf("leaf-su0-rail0").unwrap().uplinks.len(), 4, "a non-blocking leaf");
        let slow = run(&mut one, 10);
        if slow > 1.05 {
            collided += 1;
            // Some leaf's uplinks: two flows on one, none (only the switch's own traffic) on another.
            let leaves: Vec<Vec<u64>> = one.leaves.keys().map(|l| uplink_bytes(&one, l)).collect();
            let idle_beside_busy = |b: &Vec<u64>| b.iter().max() > Some(&(100 * b.iter().min().unwrap()));
            assert!(leaves.iter().any(idle_beside_busy), "{leaves:?}");
        }
        let mut eight = Fabric::new(topology.clone(), &[job(8)], seed, 0).unwrap();
        if run(&mut eight, 10) < 1.02 {
            spread += 1;
        }
    }
    eprintln!("one QP: {collided} of 20 seeds collided; eight QPs: {spread} of 20 at full speed");
    // Four flows on four uplinks all apart: 4!/4⁴ ≈ 9 % of placements, per leaf.
    assert!(collided >= 15, "one QP a connection collided on {collided} of 20 seeds");
    assert!(spread >= 18, "eight QPs ran at full speed on {spread} of 20 seeds");
}

#[test]
fn without_the_source_port_in_the_hash_qps_do_not_help_and_adding_it_does() {
    let topology = two_units();
    let seed = (0..20)
        .find(|&s| run(&mut Fabric::new(topology.clone(), &[job(1)], s, 0).unwrap(), 5) > 1.05)
        .expect("a seed that collides");
    let mut fabric = Fabric::new(topology, &[job(8)], seed, 0).unwrap();
    set_hash(&fabric, "SRC_IP,DST_IP,IP_PROTOCOL,L4_DST_PORT");
    let narrow = run(&mut fabric, 10);
    assert!(narrow > 1.05, "every QP of a connection hashes alike: {narrow}");
    // switchorch applies a field list the ASIC can hash on, and refuses one it cannot.
    set_hash(&fabric, "SRC_IP,DST_IP,IP_PROTOCOL,L4_DST_PORT,RDMA_BTH_DEST_QP");
    assert_eq!(fabric.leaf("leaf-su0-rail0").unwrap().model.read().ecmp_hash.refused, 1);
    assert!(run(&mut fabric, 10) > 1.05, "the refused list changed nothing");
    set_hash(&fabric, "SRC_IP,DST_IP,IP_PROTOCOL,L4_DST_PORT,L4_SRC_PORT");
    let wide = run(&mut fabric, 10);
    assert!(wide < narrow && wide < 1.05, "{narrow} → {wide}");
}

#[test]
fn new_communicators_draw_new_qp_numbers_and_so_new_paths() {
    let topology = two_units();
    let mut fabric = Fabric::new(topology, &[job(1)], 3, 0).unwrap();
    let before = fabric.jobs[0].connections.clone();
    fabric.jobs[0].spec.qps_per_connection = 4;
    fabric.create_communicators(0);
    let after = &fabric.jobs[0].connections;
    assert_eq!(after.len(), before.len(), "one connection per hop of each rail's ring: 8 × 2");
    assert_eq!(after.len(), 16);
    assert!(after.iter().all(|c| c.qps.qps_per_connection == 4));
    assert_ne!(after.iter().map(|c| c.qpn).collect::<Vec<_>>(), before.iter().map(|c| c.qpn).collect::<Vec<_>>());
}

#[test]
fn a_relaunch_takes_the_settings_written_for_the_next_launch_and_sixteen_qps_spread_every_seed() {
    let topology = two_units();
    let mut worst = 1.0f64;
    for seed in 0..20 {
        let spec = JobSpec { relaunch_seconds: vec![1.0], ..job(1) };
        let mut fabric = Fabric::new(topology.clone(), &[spec], seed, 0).unwrap();
        let collided = run(&mut fabric, 5);
        assert!(collided > 1.05, "seed {seed}: one QP a connection: {collided}");
        fabric.jobs[0].next_launch.qps_per_connection = 16;
        assert!(run(&mut fabric, 4) > 1.05, "seed {seed}: written, not yet launched");
        let spread = run(&mut fabric, 5);
        assert_eq!((fabric.jobs[0].relaunched, fabric.jobs[0].spec.qps_per_connection), (1, 16));
        worst = worst.max(spread);
    }
    assert!(worst < 1.05, "sixteen QPs a connection, worst seed at {worst}");
}
