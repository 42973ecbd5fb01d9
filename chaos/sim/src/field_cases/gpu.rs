//! A node's GPUs, as the daemon's `nvml` sensor (`gpu_temperature_celsius`,
//! `gpu_utilization_percent`, `gpu_memory_utilization_percent`, labelled
//! `{node, gpu, pci_bus_id}`; XIDs as `gpu_xid` events) and the DCGM
//! exporter scraped by the `prometheus` sensor (`dcgm_DCGM_FI_DEV_*`,
//! labelled `{node, gpu}`) report them.
//!
//! Each GPU's busy share comes from its job's steps. NVML's utilization is a
//! one-second average; the exporter's is a sixth of a second, so it jumps
//! between 0 and 100 with the step's phases. Temperature follows power with
//! a lag of tens of seconds. A busy GPU runs at its boost clock, dithering
//! at its power cap (throttle bit 0x4, harmless), an idle one at a low clock
//! (bit 0x1). A GPU losing its cooling heats up, then its clock drops and
//! the thermal bits (0x20 software, 0x40 hardware thermal slowdown, 0x8
//! hardware slowdown) rise. A GPU that fell off the bus (XID 79) is read no
//! more, by either.

use std::io;

use super::inventory::{node_name, pci_bus_id, RAILS};
use super::noise::{normal, rng_for, stream, uniform};
use super::profile::Profile;
use super::series::{Out, Source, Ticker};
use super::state::{is_special, World};
use super::world::Cause;

/// The boost clock, MHz.
const BOOST: f64 = 1980.0;
/// The board's power limit, W.
const POWER_CAP: f64 = 700.0;

struct Gpu {
    gpu: usize,
    ids: Vec<u32>,
    idle_temp: f64,
    idle_power: f64,
    power: f64,
    mem_frac: f64,
    /// (compute slowdown at full throttle, temperature rise) of a GPU losing
    /// its cooling.
    thermal: Option<(f64, f64)>,
}

impl Gpu {
    fn new(w: &World, node: usize, gpu: usize, rng: &mut fastrand::Rng) -> Gpu {
        let thermal = match w.sc.fault.cause {
            Cause::GpuThermal { node: n, gpu: g, slow, rise } if n == node && g == gpu => Some((slow, rise)),
            _ => None,
        };
        Gpu {
            gpu,
            ids: Vec::new(),
            idle_temp: uniform(rng, 28.0, 36.0) + uniform(rng, -3.0, 4.0),
            idle_power: uniform(rng, 65.0, 90.0),
            power: w.timeline_of(node).1.power * uniform(rng, 0.93, 1.05),
            mem_frac: uniform(rng, 0.3, 0.6),
            thermal,
        }
    }

    fn busy<'w>(&self, w: &'w World, node: usize) -> &'w Profile {
        let (timeline, _) = w.timeline_of(node);
        match &timeline.special {
            Some(special) if w.sc.in_job(node) && is_special(w.sc, node, self.gpu) => special,
            _ => &timeline.busy,
        }
    }

    /// How far the cooling loss has throttled the GPU at `t` (0–1), lagging
    /// the cause as the die heats.
    fn throttle(&self, w: &World, t: f64) -> f64 {
        if self.thermal.is_some() {
            w.fault.mean(t - 30.0, t)
        } else {
            0.0
        }
    }

    fn temperature(&self, w: &World, node: usize, t: f64) -> f64 {
        // The die follows its power over the last ~40 s (the job was running
        // before the recording began: its first seconds stand for that).
        let from = (t - 40.0).max(0.0);
        let warm = self.busy(w, node).mean(from, t.max(from + 1.0));
        let rise = self.thermal.map_or(0.0, |(_, rise)| rise * self.throttle(w, t));
        self.idle_temp + self.power * 0.055 * warm + rise
    }

    fn clock(&self, busy: f64, throttle: f64, rng: &mut fastrand::Rng) -> f64 {
        if busy < 0.5 {
            return 345.0 - 15.0 * rng.usize(0..3) as f64;
        }
        let mut mhz = if rng.f64() < 0.4 { BOOST - 15.0 * rng.usize(1..12) as f64 } else { BOOST };
        if let Some((slow, _)) = self.thermal {
            mhz = mhz.min(BOOST / (1.0 + (slow - 1.0) / 0.85 * throttle));
        }
        (mhz / 15.0).round() * 15.0
    }

    fn watts(&self, busy: f64, mhz: f64) -> f64 {
        self.idle_power + (self.power - self.idle_power) * busy * (mhz / BOOST).min(1.0).powf(1.5)
    }

    fn gone(&self, w: &World, node: usize, t: f64) -> bool {
        w.gone.get(&(node, self.gpu)).is_some_and(|&at| t >= at)
    }
}

/// The `nvml` sensor's gauges of one node.
pub(super) struct NvmlSensor {
    node: usize,
    ticker: Ticker,
    gpus: Vec<Gpu>,
    rng: fastrand::Rng,
    end: f64,
}

impl NvmlSensor {
    /// Node `node`'s sensor, its series registered in `out`.
    pub(super) fn new(w: &World, out: &mut Out, node: usize) -> NvmlSensor {
        let mut rng = rng_for(w.sc.seed, stream(30, node, 0, 0));
        let name = node_name(node);
        let gpus = (0..RAILS)
            .map(|g| {
                let mut gpu = Gpu::new(w, node, g, &mut rng_for(w.sc.seed, stream(31, node, g, 0)));
                let (index, bus) = (g.to_string(), pci_bus_id(g));
                let labels = [("node", name.as_str()), ("gpu", index.as_str()), ("pci_bus_id", bus.as_str())];
                gpu.ids = ["gpu_temperature_celsius", "gpu_utilization_percent", "gpu_memory_utilization_percent"]
                    .iter()
                    .map(|m| out.gauge(m, &labels))
                    .collect();
                gpu
            })
            .collect();
        let interval = w.sc.plan.nvml;
        let ticker =
            Ticker::new(interval, uniform(&mut rng, 0.0, interval), 0.02, rng_for(w.sc.seed, stream(32, node, 0, 0)));
        NvmlSensor { node, ticker, gpus, rng, end: w.sc.duration }
    }
}

impl Source for NvmlSensor {
    fn next(&self) -> Option<f64> {
        Some(self.ticker.now()).filter(|&t| t <= self.end)
    }

    fn poll(&mut self, w: &World, out: &mut Out) -> io::Result<()> {
        let t = self.ticker.now();
        for gpu in &self.gpus {
            if gpu.gone(w, self.node, t) {
                continue;
            }
            let util =
                (gpu.busy(w, self.node).mean(t - 1.0, t) * 100.0 + 2.0 * normal(&mut self.rng)).clamp(0.0, 100.0);
            let mem = (util * gpu.mem_frac + 3.0 * normal(&mut self.rng)).clamp(0.0, 100.0);
            let temp = gpu.temperature(w, self.node, t) + 0.4 * normal(&mut self.rng);
            out.real(gpu.ids[0], t, temp.round())?;
            out.real(gpu.ids[1], t, util.round())?;
            out.real(gpu.ids[2], t, mem.round())?;
        }
        self.ticker.advance();
        Ok(())
    }
}

/// The DCGM exporter's fields of one node, scraped by the `prometheus`
/// sensor with prefix `dcgm_` and labels mapped to `node` and `gpu`.
pub(super) struct DcgmSensor {
    node: usize,
    ticker: Ticker,
    gpus: Vec<Gpu>,
    rng: fastrand::Rng,
    end: f64,
}

/// The exporter's fields, in the order [`DcgmSensor::poll`] writes them.
const DCGM: [&str; 6] = [
    "dcgm_DCGM_FI_DEV_GPU_TEMP",
    "dcgm_DCGM_FI_DEV_SM_CLOCK",
    "dcgm_DCGM_FI_DEV_POWER_USAGE",
    "dcgm_DCGM_FI_DEV_GPU_UTIL",
    "dcgm_DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "dcgm_DCGM_FI_DEV_XID_ERRORS",
];

impl DcgmSensor {
    /// Node `node`'s scrape, its series registered in `out`.
    pub(super) fn new(w: &World, out: &mut Out, node: usize) -> DcgmSensor {
        let mut rng = rng_for(w.sc.seed, stream(33, node, 0, 0));
        let name = node_name(node);
        let gpus = (0..RAILS)
            .map(|g| {
                // The same GPU as NVML's: its constants come from the same stream.
                let mut gpu = Gpu::new(w, node, g, &mut rng_for(w.sc.seed, stream(31, node, g, 0)));
                let index = g.to_string();
                gpu.ids =
                    DCGM.iter().map(|m| out.gauge(m, &[("node", name.as_str()), ("gpu", index.as_str())])).collect();
                gpu
            })
            .collect();
        let interval = w.sc.plan.dcgm;
        let ticker =
            Ticker::new(interval, uniform(&mut rng, 0.0, interval), 0.05, rng_for(w.sc.seed, stream(34, node, 0, 0)));
        DcgmSensor { node, ticker, gpus, rng, end: w.sc.duration }
    }

    fn mask(gpu: &Gpu, busy: f64, watts: f64, throttle: f64, rng: &mut fastrand::Rng) -> f64 {
        let mut mask = 0u32;
        if busy < 0.2 {
            mask |= 0x1;
        }
        if busy >= 0.5 && (watts > 0.93 * POWER_CAP || rng.f64() < 0.45) {
            mask |= 0x4;
        }
        if gpu.thermal.is_some() {
            if throttle > 0.1 {
                mask |= 0x20;
            }
            if throttle > 0.5 {
                mask |= 0x40;
            }
            if throttle > 0.7 && rng.bool() {
                mask |= 0x8;
            }
        }
        f64::from(mask)
    }
}

impl Source for DcgmSensor {
    fn next(&self) -> Option<f64> {
        Some(self.ticker.now()).filter(|&t| t <= self.end)
    }

    fn poll(&mut self, w: &World, out: &mut Out) -> io::Result<()> {
        let t = self.ticker.now();
        for gpu in &self.gpus {
            if gpu.gone(w, self.node, t) {
                continue;
            }
            let rng = &mut self.rng;
            let busy = gpu.busy(w, self.node).mean(t - 1.0 / 6.0, t);
            let throttle = gpu.throttle(w, t);
            let mhz = gpu.clock(busy, throttle, rng);
            let watts = gpu.watts(busy, mhz) * uniform(rng, 0.85, 1.15);
            let util = (busy * 100.0 + 3.0 * normal(rng)).clamp(0.0, 100.0).round();
            let xid = w.xids.iter().rev().find(|x| x.0 <= t && x.1 == self.node && x.2 == gpu.gpu).map_or(0, |x| x.3);
            let values = [
                (gpu.temperature(w, self.node, t) + 0.5 * normal(rng)).round(),
                mhz,
                (watts * 1000.0).round() / 1000.0,
                util,
                DcgmSensor::mask(gpu, busy, watts, throttle, rng),
                f64::from(xid),
            ];
            for (id, v) in gpu.ids.iter().zip(values) {
                out.real(*id, t, v)?;
            }
        }
        self.ticker.advance();
        Ok(())
    }
}

/// NVML's XID events of the recorded GPUs, as they happen.
pub(super) struct XidSensor {
    events: Vec<(f64, u32, f64)>,
    next: usize,
}

impl XidSensor {
    /// Every XID of the world on a recorded node, its series registered.
    pub(super) fn new(w: &World, out: &mut Out) -> XidSensor {
        let mut events = Vec::new();
        for &(at, node, gpu, xid) in w.xids.iter().filter(|x| w.sc.recorded.contains(&x.1)) {
            let (name, index, bus, code) = (node_name(node), gpu.to_string(), pci_bus_id(gpu), xid.to_string());
            let labels = [
                ("node", name.as_str()),
                ("gpu", index.as_str()),
                ("xid", code.as_str()),
                ("pci_bus_id", bus.as_str()),
            ];
            let id = out.shared("gpu_xid", &labels, engine::SampleKind::Event);
            // The event reaches the sensor's wait on the event set a moment later.
            events.push((at + 0.003, id, f64::from(xid)));
        }
        XidSensor { events, next: 0 }
    }
}

impl Source for XidSensor {
    fn next(&self) -> Option<f64> {
        self.events.get(self.next).map(|e| e.0)
    }

    fn poll(&mut self, _: &World, out: &mut Out) -> io::Result<()> {
        if let Some(&(t, id, code)) = self.events.get(self.next) {
            out.real(id, t, code)?;
        }
        self.next += 1;
        Ok(())
    }
}
