//! Recording a case: every sensor of every recorded node, the switches'
//! subscriptions and the jobs' pushes, merged in time order into one
//! recording of JSON lines, as the node daemons and the switch aggregator
//! would have written it between them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;

use super::gpu::{DcgmSensor, NvmlSensor, XidSensor};
use super::inventory::node_name;
use super::nic::{EthtoolSensor, NetlinkSensor, RdmaSensor};
use super::noise::{rng_for, stream, uniform};
use super::series::{ns, Out, Source, Ticker};
use super::state::World;
use super::switch::switches;
use super::world::INFO_EVERY;
use super::FieldCase;

/// A job's pushes of `job_node_info` (every 10 s, one per node) and of
/// `job_step_time_seconds` (one per step, at its end).
struct JobSensor {
    info: Ticker,
    info_ids: Vec<u32>,
    steps: Vec<(f64, f64)>,
    next_step: usize,
    step_id: u32,
    end: f64,
}

impl JobSensor {
    fn new(
        out: &mut Out,
        seed: u64,
        index: usize,
        name: &str,
        nodes: &[usize],
        steps: Vec<(f64, f64)>,
        end: f64,
    ) -> JobSensor {
        let mut rng = rng_for(seed, stream(50, index, 0, 0));
        let info_ids = nodes
            .iter()
            .map(|&k| out.gauge("job_node_info", &[("job", name), ("node", node_name(k).as_str())]))
            .collect();
        let info = Ticker::new(INFO_EVERY, uniform(&mut rng, 0.0, INFO_EVERY), 0.05, rng);
        JobSensor {
            info,
            info_ids,
            steps,
            next_step: 0,
            step_id: out.gauge("job_step_time_seconds", &[("job", name)]),
            end,
        }
    }

    fn step_due(&self) -> Option<(f64, f64)> {
        self.steps.get(self.next_step).copied().filter(|s| s.0 <= self.info.now())
    }
}

impl Source for JobSensor {
    fn next(&self) -> Option<f64> {
        let t = self.step_due().map_or(self.info.now(), |s| s.0);
        Some(t).filter(|&t| t <= self.end)
    }

    fn poll(&mut self, _: &World, out: &mut Out) -> io::Result<()> {
        if let Some((t, seconds)) = self.step_due() {
            self.next_step += 1;
            return out.real(self.step_id, t, seconds);
        }
        let t = self.info.now();
        for &id in &self.info_ids {
            out.real(id, t, 1.0)?;
        }
        self.info.advance();
        Ok(())
    }
}

/// Every source of the case's recording, its series registered in `out`.
fn sources(w: &World, out: &mut Out) -> Vec<Box<dyn Source>> {
    let sc = w.sc;
    let mut all: Vec<Box<dyn Source>> = Vec::new();
    for &k in &sc.recorded {
        all.push(Box::new(RdmaSensor::new(w, out, k)));
        all.push(Box::new(EthtoolSensor::new(w, out, k)));
        all.push(Box::new(NetlinkSensor::new(w, out, k)));
        all.push(Box::new(NvmlSensor::new(w, out, k)));
        all.push(Box::new(DcgmSensor::new(w, out, k)));
    }
    all.push(Box::new(XidSensor::new(w, out)));
    for s in switches(w, out) {
        all.push(Box::new(s));
    }
    let mut nodes = sc.job.nodes();
    nodes.sort_unstable();
    let pushes = w.job.sched.pushes(sc.duration);
    all.push(Box::new(JobSensor::new(out, sc.seed, 0, &sc.job.name, &nodes, pushes, sc.duration)));
    for (j, tenant) in sc.tenants.iter().enumerate() {
        let mut nodes = tenant.nodes();
        nodes.sort_unstable();
        let pushes = w.tenants[j].sched.pushes(sc.duration);
        all.push(Box::new(JobSensor::new(out, sc.seed, j + 1, &tenant.name, &nodes, pushes, sc.duration)));
    }
    all
}

/// Polls every source in time order (ties by source), until all are done.
fn run(w: &World, out: &mut Out) -> io::Result<()> {
    let mut all = sources(w, out);
    let mut heap = BinaryHeap::with_capacity(all.len());
    for (i, s) in all.iter().enumerate() {
        if let Some(t) = s.next() {
            heap.push(Reverse((ns(t), i)));
        }
    }
    while let Some(Reverse((_, i))) = heap.pop() {
        let source = &mut all[i];
        source.poll(w, out)?;
        if let Some(t) = source.next() {
            heap.push(Reverse((ns(t), i)));
        }
    }
    Ok(())
}

/// The recording of `case`, and how many samples it holds.
pub(super) fn record(case: &FieldCase) -> (Vec<u8>, usize) {
    let world = World::build(&case.scenario, &case.fabric, &case.pace);
    let mut buf = Vec::with_capacity(48 << 20);
    let mut out = Out::new(&mut buf);
    // Writing into memory cannot fail; should it ever, the recording ends
    // where it failed, which a reader takes as its end.
    let _ = run(&world, &mut out);
    let samples = out.samples;
    drop(out);
    (buf, samples)
}
