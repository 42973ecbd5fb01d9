//! The sensors' cadences, and the sample budget that bounds them.
//!
//! Real daemons poll at cadences of their own: `rdma_sysfs` every 100 ms by
//! default, `ethtool` every 100 ms to 1 s, NVML every second, the DCGM
//! exporter scraped every 10 s, gNMI sampled every second. A real node
//! records about 2,000 series; a case records far fewer (a chosen set per
//! NIC, GPU and switch port, queues 0 and 3 only), and is still bounded by
//! [`BUDGET`] samples so that hundreds of cases can be analysed in a test.
//! When the drawn cadences would pass it, the case is recorded as a site
//! that polls less often would record it: first the fastest node sensors
//! slow down to 1 s, then fewer tenants are recorded, then the case is
//! shortened (never below 150 s, nor the time its window needs), and only
//! then do the cadences go to 2 s and 5 s: the node sensors first, then
//! NVML, then gNMI.

use super::inventory::{RAILS, UPLINKS};
use super::world::{Plan, HEARTBEAT, INFO_EVERY};

/// The most samples a case should hold. At the sensors' default cadences a
/// 16-node job across both units, with 6 tenants, would hold about 6.6 M in
/// 300 s: hence the fitting below. Raise it to keep more of the drawn
/// cadences (recording costs about 0.1 µs a sample in a release build).
pub(super) const BUDGET: f64 = 600_000.0;

/// Counters the `rdma_sysfs` sensor records per NIC.
pub(super) const RDMA_SERIES: f64 = 8.0;
/// Series the `ethtool` sensor records per NIC (with `pre_fec_ber`).
pub(super) const ETHTOOL_SERIES: f64 = 8.0;
/// Series the netlink sensor beats per NIC.
pub(super) const NETLINK_SERIES: f64 = 3.0;
/// NVML gauges per GPU.
pub(super) const NVML_SERIES: f64 = 3.0;
/// DCGM fields per GPU.
pub(super) const DCGM_SERIES: f64 = 6.0;
/// Series sampled per leaf port.
pub(super) const PORT_SERIES: f64 = 10.0;
/// Series sampled per spine port (no carrier, no queue 0: see `switch`).
pub(super) const SPINE_PORT_SERIES: f64 = 8.0;

/// What a case records, for the estimate.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shape {
    /// Recorded nodes.
    pub nodes: usize,
    /// Nodes recorded only at their leaf ports.
    pub ports_only: usize,
    /// Units whose leaves are recorded.
    pub units: usize,
    /// Seconds.
    pub duration: f64,
}

impl Shape {
    /// Samples per second of the switches: every recorded node's port on
    /// each leaf of its unit, every uplink, and the spines' ports toward
    /// those leaves.
    fn switch_series(&self) -> f64 {
        let leaf_ports = (RAILS * (self.nodes + self.ports_only) + RAILS * UPLINKS * self.units) as f64;
        let spine_ports = (RAILS * UPLINKS * self.units) as f64;
        leaf_ports * PORT_SERIES + spine_ports * SPINE_PORT_SERIES
    }
}

/// Samples a case of `shape` recorded at `plan` holds, about.
pub(super) fn estimate(plan: &Plan, shape: &Shape) -> f64 {
    let rails = RAILS as f64;
    let per_nic = RDMA_SERIES / plan.rdma + ETHTOOL_SERIES / plan.ethtool + NETLINK_SERIES / HEARTBEAT;
    let per_gpu = NVML_SERIES / plan.nvml + DCGM_SERIES / plan.dcgm;
    let per_node = rails * (per_nic + per_gpu) + 1.0 / INFO_EVERY;
    let switches = shape.switch_series() / plan.gnmi;
    (shape.nodes as f64 * per_node + switches) * shape.duration
}

/// The cadences drawn for a case, before the budget.
pub(super) fn draw(rng: &mut fastrand::Rng) -> Plan {
    Plan {
        rdma: [0.1, 0.1, 0.2, 0.25][rng.usize(0..4)],
        ethtool: [0.1, 0.2, 0.25, 0.5, 1.0][rng.usize(0..5)],
        nvml: 1.0,
        dcgm: 10.0,
        gnmi: 1.0,
    }
}

/// Fits `plan`, the tenants recorded and the duration to [`BUDGET`]:
/// returns the plan, the tenant count (at least `min_tenants`) and the
/// duration (at least `min_duration`).
pub(super) fn fit(
    mut plan: Plan,
    mut tenants: usize,
    mut shape: Shape,
    min_tenants: usize,
    min_duration: f64,
) -> (Plan, usize, f64) {
    let job_nodes = shape.nodes - tenants;
    let over = |plan: &Plan, shape: &Shape| estimate(plan, shape) > BUDGET;
    for step in [0.2, 0.25, 0.5, 1.0] {
        if !over(&plan, &shape) {
            return (plan, tenants, shape.duration);
        }
        plan.rdma = plan.rdma.max(step);
        plan.ethtool = plan.ethtool.max(step);
    }
    while over(&plan, &shape) && tenants > min_tenants {
        tenants -= 1;
        shape.nodes = job_nodes + tenants;
    }
    if over(&plan, &shape) {
        let per_second = estimate(&plan, &shape) / shape.duration;
        shape.duration = (BUDGET / per_second).max(min_duration).min(shape.duration);
    }
    // Then each sensor in turn, NVML before gNMI (its own default is 10 s;
    // the switches' 1 s samples against their 10 s queue refresh matter
    // more).
    for slow in [2.0, 5.0] {
        for knob in 0..3 {
            if !over(&plan, &shape) {
                break;
            }
            match knob {
                0 => {
                    plan.rdma = plan.rdma.max(slow);
                    plan.ethtool = plan.ethtool.max(slow);
                }
                1 => plan.nvml = plan.nvml.max(slow),
                _ => plan.gnmi = plan.gnmi.max(slow),
            }
        }
    }
    (plan, tenants, shape.duration)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_case_fits_the_budget_and_a_small_one_keeps_its_cadences() {
        let plan = Plan { rdma: 0.1, ethtool: 0.1, nvml: 1.0, dcgm: 10.0, gnmi: 1.0 };
        let big = Shape { nodes: 22, ports_only: 3, units: 2, duration: 300.0 };
        let (fitted, tenants, duration) = fit(plan, 6, big, 2, 150.0);
        let shape = Shape { nodes: 16 + tenants, ports_only: 3, units: 2, duration };
        assert!(estimate(&fitted, &shape) <= BUDGET * 1.05, "{fitted:?} {tenants} {duration}");
        let small = Shape { nodes: 4, ports_only: 1, units: 1, duration: 60.0 };
        assert_eq!(fit(plan, 2, small, 2, 60.0).0, plan);
    }
}
