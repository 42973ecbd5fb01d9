//! The running `nvml` sensor: loads NVML, polls every GPU, and pushes XIDs
//! from a thread that waits on an NVML event set.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use engine::{Batch, HealthState, Nanos, Sensor, SensorContext, SensorError};
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::Nvml;
use tokio::sync::mpsc;

use super::reading::{GpuReading, NvLinkError, SeriesCache};

/// NVML's `NVML_NVLINK_MAX_LINKS`: links are numbered below it.
const MAX_NVLINKS: u32 = 18;

/// XIDs waiting for the async side. A GPU in trouble may raise a burst of
/// XIDs; 1,024 is far more than a burst, and a full queue makes the thread
/// wait rather than drop (it only delays the next NVML wait).
const XID_QUEUE: usize = 1024;

/// Polls GPUs through NVML; built by [`NvmlConfig::build`](super::NvmlConfig::build).
#[derive(Debug)]
pub struct NvmlSensor {
    name: String,
    poll_interval: Duration,
    xid_wait_ms: u32,
    library: Option<PathBuf>,
    nvlink: bool,
}

/// A GPU as discovered at start.
#[derive(Debug, Clone)]
struct Gpu {
    index: u32,
    pci_bus_id: String,
}

/// What the XID thread reports.
enum XidMessage {
    /// An XID on the GPU with this NVML index.
    Xid { gpu: u32, xid: Option<u64>, ts: Nanos },
    /// Waiting failed, or no GPU supports XID events.
    Failed(String),
}

fn open(library: Option<&PathBuf>) -> Result<Nvml, String> {
    let result = match library {
        Some(path) => Nvml::builder().lib_path(path.as_os_str()).init(),
        None => Nvml::init(),
    };
    result.map_err(|e| match e {
        NvmlError::LibloadingError(e) => format!(
            "cannot load the NVML library {} ({e}); is the NVIDIA driver installed?",
            library.map_or("libnvidia-ml.so".to_string(), |p| p.display().to_string())
        ),
        NvmlError::DriverNotLoaded => "the NVIDIA driver is not loaded".to_string(),
        NvmlError::NoPermission => "no permission to talk to the NVIDIA driver".to_string(),
        e => format!("NVML initialization failed: {e}"),
    })
}

/// The GPUs NVML sees, or why there are none.
fn discover(nvml: &Nvml) -> Result<Vec<Gpu>, String> {
    let count = nvml.device_count().map_err(|e| format!("NVML cannot count GPUs: {e}"))?;
    if count == 0 {
        return Err("NVML found no GPU".to_string());
    }
    let mut gpus = Vec::new();
    for index in 0..count {
        let device = nvml.device_by_index(index).map_err(|e| format!("GPU {index}: {e}"))?;
        let pci_bus_id = device.pci_info().map(|p| p.bus_id).unwrap_or_default();
        gpus.push(Gpu { index, pci_bus_id });
    }
    Ok(gpus)
}

/// An optional NVML value: not supported is `None` quietly, other errors
/// are `None` and noted in `errors`.
fn optional<T>(what: &str, gpu: u32, result: Result<T, NvmlError>, errors: &mut Vec<String>) -> Option<T> {
    match result {
        Ok(v) => Some(v),
        Err(NvmlError::NotSupported) => None,
        Err(e) => {
            errors.push(format!("GPU {gpu} {what}: {e}"));
            None
        }
    }
}

/// One poll of every GPU; readings and the errors met.
fn poll(nvml: &Nvml, gpus: &[Gpu], nvlink: bool) -> (Vec<GpuReading>, Vec<String>) {
    let mut errors = Vec::new();
    let mut readings = Vec::new();
    for gpu in gpus {
        let device = match nvml.device_by_index(gpu.index) {
            Ok(d) => d,
            Err(e) => {
                errors.push(format!("GPU {}: {e}", gpu.index));
                continue;
            }
        };
        let i = gpu.index;
        let utilization = optional("utilization", i, device.utilization_rates(), &mut errors);
        let mut reading = GpuReading {
            gpu: i,
            pci_bus_id: gpu.pci_bus_id.clone(),
            temperature_celsius: optional("temperature", i, device.temperature(TemperatureSensor::Gpu), &mut errors),
            utilization_percent: utilization.as_ref().map(|u| u.gpu),
            memory_utilization_percent: utilization.as_ref().map(|u| u.memory),
            pcie_replay_count: optional("pcie replay counter", i, device.pcie_replay_counter(), &mut errors),
            nvlink_errors: Vec::new(),
        };
        if nvlink {
            for link in 0..MAX_NVLINKS {
                let wrapper = device.link_wrapper_for(link);
                // Not supported (no NVLink) or not active: nothing to count.
                if !matches!(wrapper.is_active(), Ok(true)) {
                    continue;
                }
                for counter in NvLinkError::ALL {
                    let nvml_counter = match counter {
                        NvLinkError::DlReplay => ErrorCounter::DlReplay,
                        NvLinkError::DlRecovery => ErrorCounter::DlRecovery,
                        NvLinkError::DlCrcFlit => ErrorCounter::DlCrcFlit,
                        NvLinkError::DlCrcData => ErrorCounter::DlCrcData,
                    };
                    let what = format!("NVLink {link} {}", counter.metric());
                    if let Some(n) = optional(&what, i, wrapper.error_counter(nvml_counter), &mut errors) {
                        reading.nvlink_errors.push((link, counter, n));
                    }
                }
            }
        }
        readings.push(reading);
    }
    (readings, errors)
}

/// The XID thread: registers every GPU for critical XID events and waits on
/// the set until `stop`, sending what it sees to `tx`.
fn watch_xids(nvml: Arc<Nvml>, gpus: Vec<Gpu>, wait_ms: u32, stop: Arc<AtomicBool>, tx: mpsc::Sender<XidMessage>) {
    let mut set = match nvml.create_event_set() {
        Ok(set) => set,
        Err(e) => {
            let _ = tx.blocking_send(XidMessage::Failed(format!("NVML cannot create an event set: {e}")));
            return;
        }
    };
    let mut registered = 0;
    for gpu in &gpus {
        let device = match nvml.device_by_index(gpu.index) {
            Ok(d) => d,
            Err(e) => {
                tracing::warn!(message = "GPU not watched for XIDs.", gpu = gpu.index, error = %e);
                continue;
            }
        };
        set = match device.register_events(EventTypes::CRITICAL_XID_ERROR, set) {
            Ok(set) => {
                registered += 1;
                set
            }
            Err(e) => {
                // A failed registration may free the set (NVML's Unknown
                // error): start over with a new one for the other GPUs.
                tracing::warn!(message = "GPU not watched for XIDs.", gpu = gpu.index, error = %e.error);
                match nvml.create_event_set() {
                    Ok(set) => set,
                    Err(e) => {
                        let _ = tx.blocking_send(XidMessage::Failed(format!("NVML cannot create an event set: {e}")));
                        return;
                    }
                }
            }
        };
    }
    if registered == 0 {
        let _ = tx.blocking_send(XidMessage::Failed("no GPU supports critical XID events".into()));
        return;
    }
    while !stop.load(Ordering::Relaxed) {
        match set.wait(wait_ms) {
            Ok(event) => {
                let ts = engine::time::wall_clock_now();
                let Ok(gpu) = event.device.index() else { continue };
                let xid = match event.event_data {
                    Some(XidError::Value(code)) => Some(code),
                    _ => None,
                };
                if tx.blocking_send(XidMessage::Xid { gpu, xid, ts }).is_err() {
                    return;
                }
            }
            Err(NvmlError::Timeout) => {}
            Err(e) => {
                if tx.blocking_send(XidMessage::Failed(format!("waiting for XID events: {e}"))).is_err() {
                    return;
                }
                // Do not spin on a persistent error.
                std::thread::sleep(Duration::from_millis(wait_ms as u64));
            }
        }
    }
}

impl NvmlSensor {
    /// A sensor reading every GPU every `poll_interval`.
    pub fn new(
        name: &str,
        poll_interval: Duration,
        xid_wait_ms: u32,
        library: Option<PathBuf>,
        nvlink: bool,
    ) -> NvmlSensor {
        NvmlSensor { name: name.to_string(), poll_interval, xid_wait_ms, library, nvlink }
    }

    /// Reports `reason` as unavailable and idles until shutdown: returning
    /// would make the daemon record the sensor as stopped, losing the reason.
    async fn unavailable(&self, ctx: &SensorContext, reason: &str) -> Result<(), SensorError> {
        tracing::info!(message = "NVML sensor unavailable.", sensor = %self.name, %reason);
        ctx.set_state(HealthState::Unavailable, reason);
        ctx.shutdown().await;
        Ok(())
    }
}

fn blocking_failed(e: tokio::task::JoinError) -> SensorError {
    SensorError::Io { context: "the NVML task ended".into(), source: std::io::Error::other(e.to_string()) }
}

/// The open library and what the sensor keeps between reads.
struct Running {
    name: String,
    nvml: Arc<Nvml>,
    gpus: Vec<Gpu>,
    nvlink: bool,
    cache: SeriesCache,
}

impl Running {
    /// An XID from the event thread: one sample at once.
    async fn xid(&mut self, ctx: &SensorContext, message: XidMessage) -> Result<(), SensorError> {
        match message {
            XidMessage::Xid { gpu, xid, ts } => {
                tracing::warn!(message = "GPU XID.", sensor = %self.name, gpu, xid = ?xid);
                let bus_id =
                    self.gpus.iter().find(|g| g.index == gpu).map(|g| g.pci_bus_id.clone()).unwrap_or_default();
                match self.cache.xid(ctx, gpu, &bus_id, xid, ts) {
                    Ok(sample) => ctx.send(Batch { samples: vec![sample], notes: Vec::new() }).await?,
                    Err(e) => ctx.read_failed("series", &e.to_string()),
                }
            }
            XidMessage::Failed(error) => {
                tracing::warn!(message = "XID events not watched.", sensor = %self.name, %error);
                ctx.read_failed("xid", &error);
            }
        }
        Ok(())
    }

    /// One poll of every GPU, off the async runtime (NVML calls block).
    async fn poll(&mut self, ctx: &SensorContext) -> Result<(), SensorError> {
        let started = Instant::now();
        let (nvml, gpus, nvlink) = (self.nvml.clone(), self.gpus.clone(), self.nvlink);
        let (readings, errors) =
            tokio::task::spawn_blocking(move || poll(&nvml, &gpus, nvlink)).await.map_err(blocking_failed)?;
        let ts = engine::time::wall_clock_now();
        let mut samples = Vec::new();
        for reading in &readings {
            if let Err(e) = self.cache.samples(ctx, reading, ts, &mut samples) {
                ctx.read_failed("series", &e.to_string());
            }
        }
        for error in &errors {
            ctx.read_failed("nvml", error);
        }
        if !samples.is_empty() {
            ctx.send(Batch { samples, notes: Vec::new() }).await?;
        }
        if errors.is_empty() {
            ctx.read_ok(started.elapsed());
        }
        Ok(())
    }
}

#[async_trait]
impl Sensor for NvmlSensor {
    fn name(&self) -> &str {
        &self.name
    }

    async fn run(self: Box<Self>, ctx: SensorContext) -> Result<(), SensorError> {
        let library = self.library.clone();
        let opened = tokio::task::spawn_blocking(move || {
            let nvml = open(library.as_ref())?;
            let gpus = discover(&nvml)?;
            Ok::<_, String>((Arc::new(nvml), gpus))
        })
        .await
        .map_err(blocking_failed)?;
        let (nvml, gpus) = match opened {
            Ok(found) => found,
            Err(reason) => return self.unavailable(&ctx, &reason).await,
        };
        tracing::info!(message = "NVML sensor started.", sensor = %self.name, gpus = gpus.len());
        ctx.set_state(HealthState::Up, &format!("{} GPUs", gpus.len()));

        let stop = Arc::new(AtomicBool::new(false));
        let (tx, mut xids) = mpsc::channel(XID_QUEUE);
        let thread = {
            let (nvml, gpus, stop, wait) = (nvml.clone(), gpus.clone(), stop.clone(), self.xid_wait_ms);
            std::thread::Builder::new()
                .name(format!("{}-xid", self.name))
                .spawn(move || watch_xids(nvml, gpus, wait, stop, tx))
                .map_err(|e| SensorError::Io { context: "starting the XID thread".into(), source: e })?
        };
        let mut running =
            Running { name: self.name.clone(), nvml, gpus, nvlink: self.nvlink, cache: SeriesCache::default() };
        let mut ticker = tokio::time::interval(self.poll_interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut xids_open = true;
        let result = loop {
            let step = tokio::select! {
                biased;
                _ = ctx.shutdown() => break Ok(()),
                message = xids.recv(), if xids_open => match message {
                    Some(message) => running.xid(&ctx, message).await,
                    None => {
                        xids_open = false;
                        Ok(())
                    }
                },
                _ = ticker.tick() => running.poll(&ctx).await,
            };
            if let Err(e) = step {
                break Err(e);
            }
        };
        stop.store(true, Ordering::Relaxed);
        // The thread notices within one wait; do not block the runtime on it.
        drop(xids);
        let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        result
    }
}
