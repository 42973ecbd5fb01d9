//! The running `verbs` sensor and its libibverbs calls.

use std::collections::HashMap;
use std::ffi::CStr;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine::{
    HealthState, Labels, Sample, SampleKind, Sensor, SensorContext, SensorError, SeriesId, SeriesSpec, Value,
};

/// One port as `ibv_query_port` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortReading {
    /// The device name (`mlx5_0`).
    pub rdma_dev: String,
    /// The port number, from 1.
    pub rdma_port: u8,
    /// `ibv_port_attr.state`.
    pub state: u32,
    /// `ibv_port_attr.phys_state`.
    pub phys_state: u8,
    /// `ibv_port_attr.active_speed`.
    pub active_speed: u8,
    /// `ibv_port_attr.active_width`.
    pub active_width: u8,
}

/// The gauges of a port, in [`PortReading`] field order.
const METRICS: [&str; 4] =
    ["rdma_port_state", "rdma_port_phys_state", "rdma_port_active_speed", "rdma_port_active_width"];

/// A read of every device: the ports, and the devices that failed.
#[derive(Debug, Default)]
struct Read {
    /// Devices listed (even if opening them failed).
    devices: usize,
    ports: Vec<PortReading>,
    errors: Vec<String>,
}

/// Lists every device and queries every port. Blocking (driver calls).
fn read_ports() -> Read {
    use rdma_sys::*;
    let mut read = Read::default();
    let mut count: std::os::raw::c_int = 0;
    // SAFETY: ibv_get_device_list writes the count and returns an array of
    // `count` device pointers (or NULL), freed below with ibv_free_device_list.
    let list = unsafe { ibv_get_device_list(&mut count) };
    if list.is_null() {
        return read;
    }
    read.devices = count.max(0) as usize;
    for i in 0..read.devices {
        // SAFETY: i < count, inside the array the library returned.
        let device = unsafe { *list.add(i) };
        if device.is_null() {
            continue;
        }
        // SAFETY: a device of the list; the name is a NUL-terminated string it owns.
        let name = unsafe { CStr::from_ptr(ibv_get_device_name(device)) }.to_string_lossy().into_owned();
        // SAFETY: a device of the list, opened once and closed below.
        let context = unsafe { ibv_open_device(device) };
        if context.is_null() {
            read.errors.push(format!("{name}: ibv_open_device: {}", std::io::Error::last_os_error()));
            continue;
        }
        // SAFETY: zeroed is a valid ibv_device_attr (plain integers and arrays).
        let mut attr: ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: an open context and a struct the call fills.
        let rc = unsafe { ibv_query_device(context, &mut attr) };
        if rc != 0 {
            read.errors.push(format!("{name}: ibv_query_device: {}", std::io::Error::from_raw_os_error(rc)));
        } else {
            for port in 1..=attr.phys_port_cnt {
                // SAFETY: zeroed is a valid ibv_port_attr.
                let mut pa: ibv_port_attr = unsafe { std::mem::zeroed() };
                // SAFETY: an open context, a port number the device reported,
                // and a struct the call fills (`ibv_query_port` is this
                // inline function in verbs.h).
                let rc = unsafe { ___ibv_query_port(context, port, &mut pa) };
                if rc != 0 {
                    read.errors
                        .push(format!("{name} port {port}: ibv_query_port: {}", std::io::Error::from_raw_os_error(rc)));
                    continue;
                }
                read.ports.push(PortReading {
                    rdma_dev: name.clone(),
                    rdma_port: port,
                    state: pa.state as u32,
                    phys_state: pa.phys_state,
                    active_speed: pa.active_speed,
                    active_width: pa.active_width,
                });
            }
        }
        // SAFETY: the context opened above, closed once.
        unsafe { ibv_close_device(context) };
    }
    // SAFETY: the list returned above, freed once, after its last use.
    unsafe { ibv_free_device_list(list) };
    read
}

/// Polls port state through libibverbs; built by
/// [`VerbsConfig::build`](super::VerbsConfig::build).
#[derive(Debug)]
pub struct VerbsSensor {
    name: String,
    poll_interval: Duration,
}

/// Series ids by (device, port, metric), registered on first use.
#[derive(Debug, Default)]
struct Series(HashMap<(String, u8, usize), SeriesId>);

impl Series {
    fn samples(
        &mut self,
        ctx: &SensorContext,
        port: &PortReading,
        ts: i64,
        out: &mut Vec<Sample>,
    ) -> Result<(), SensorError> {
        let values = [port.state as f64, port.phys_state as f64, port.active_speed as f64, port.active_width as f64];
        for (m, value) in values.into_iter().enumerate() {
            let key = (port.rdma_dev.clone(), port.rdma_port, m);
            let series = match self.0.get(&key) {
                Some(id) => *id,
                None => {
                    let p = port.rdma_port.to_string();
                    let labels = Labels::from_pairs([("rdma_dev", port.rdma_dev.as_str()), ("rdma_port", p.as_str())]);
                    let id =
                        ctx.register(&SeriesSpec { metric: METRICS[m].into(), labels, kind: SampleKind::Gauge })?;
                    *self.0.entry(key).or_insert(id)
                }
            };
            out.push(Sample { series, ts, value: Value::Real(value) });
        }
        Ok(())
    }
}

impl VerbsSensor {
    /// A sensor reading every port every `poll_interval`.
    pub fn new(name: &str, poll_interval: Duration) -> VerbsSensor {
        VerbsSensor { name: name.to_string(), poll_interval }
    }
}

#[async_trait]
impl Sensor for VerbsSensor {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let mut series = Series::default();
        let mut ticker = tokio::time::interval(self.poll_interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            if !ctx.next_tick(&mut ticker).await {
                return Ok(());
            }
            let started = Instant::now();
            let read = tokio::task::spawn_blocking(read_ports).await.map_err(|e| SensorError::Io {
                context: "the verbs read task ended".into(),
                source: std::io::Error::other(e.to_string()),
            })?;
            if read.devices == 0 {
                // Devices do not appear at run time often enough to poll for
                // them: idle until shutdown, keeping the reason visible.
                let reason = "libibverbs lists no RDMA device";
                tracing::info!(message = "Verbs sensor unavailable.", sensor = %self.name, %reason);
                ctx.set_state(HealthState::Unavailable, reason);
                ctx.shutdown().await;
                return Ok(());
            }
            let ts = engine::time::wall_clock_now();
            let mut samples = Vec::new();
            for port in &read.ports {
                if let Err(e) = series.samples(&ctx, port, ts, &mut samples) {
                    ctx.read_failed("series", &e.to_string());
                }
            }
            for error in &read.errors {
                tracing::warn!(message = "RDMA device read failed.", sensor = %self.name, %error);
                ctx.read_failed("verbs", error);
            }
            if read.errors.is_empty() {
                ctx.read_ok(started.elapsed());
            }
            if !ctx.send_samples(samples).await? {
                return Ok(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::SeriesTable;
    use tokio::sync::{mpsc, watch};

    #[test]
    fn a_port_becomes_four_gauges_with_device_and_port_labels() {
        let table = SeriesTable::default();
        let (tx, _rx) = mpsc::channel(1);
        let (_stop, shutdown) = watch::channel(false);
        let ctx = SensorContext::new(table.clone(), "verbs", 100, tx, shutdown);
        let port = PortReading {
            rdma_dev: "mlx5_0".into(),
            rdma_port: 1,
            state: 4,
            phys_state: 5,
            active_speed: 64,
            active_width: 2,
        };
        let mut out = Vec::new();
        Series::default().samples(&ctx, &port, 9, &mut out).unwrap();
        let reg = table.read();
        let got: Vec<(&str, f64)> = out.iter().map(|s| (reg.metric_name(s.series), s.value.as_f64())).collect();
        assert_eq!(
            got,
            [
                ("rdma_port_state", 4.0),
                ("rdma_port_phys_state", 5.0),
                ("rdma_port_active_speed", 64.0),
                ("rdma_port_active_width", 2.0)
            ]
        );
        assert_eq!(reg.labels(out[0].series), Labels::from_pairs([("rdma_dev", "mlx5_0"), ("rdma_port", "1")]));
    }
}
