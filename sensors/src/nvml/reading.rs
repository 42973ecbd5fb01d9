//! One poll of one GPU, and the samples it becomes. No NVML here, so the
//! mapping is tested without a GPU.

use std::collections::HashMap;

use engine::{CounterSpec, Labels, Nanos, Sample, SampleKind, SensorContext, SensorError, SeriesId, SeriesSpec, Value};

/// The NVLink data-link error counters NVML keeps per link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NvLinkError {
    /// `NVML_NVLINK_ERROR_DL_REPLAY`: transmit replays.
    DlReplay,
    /// `NVML_NVLINK_ERROR_DL_RECOVERY`: link recoveries.
    DlRecovery,
    /// `NVML_NVLINK_ERROR_DL_CRC_FLIT`: flow-control digit CRC errors.
    DlCrcFlit,
    /// `NVML_NVLINK_ERROR_DL_CRC_DATA`: data CRC errors.
    DlCrcData,
}

impl NvLinkError {
    /// Every counter, in NVML's order.
    pub const ALL: [NvLinkError; 4] =
        [NvLinkError::DlReplay, NvLinkError::DlRecovery, NvLinkError::DlCrcFlit, NvLinkError::DlCrcData];

    /// The metric name, `gpu_nvlink_<kind>_errors`.
    pub fn metric(self) -> &'static str {
        match self {
            NvLinkError::DlReplay => "gpu_nvlink_dl_replay_errors",
            NvLinkError::DlRecovery => "gpu_nvlink_dl_recovery_errors",
            NvLinkError::DlCrcFlit => "gpu_nvlink_dl_crc_flit_errors",
            NvLinkError::DlCrcData => "gpu_nvlink_dl_crc_data_errors",
        }
    }
}

/// What one poll read from one GPU; `None` where NVML said not supported
/// or failed (the failure is reported separately).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GpuReading {
    /// NVML index.
    pub gpu: u32,
    /// PCI bus id, `00000000:3B:00.0`.
    pub pci_bus_id: String,
    /// Die temperature, °C.
    pub temperature_celsius: Option<u32>,
    /// Percent of time a kernel ran, over NVML's sample period.
    pub utilization_percent: Option<u32>,
    /// Percent of time device memory was read or written.
    pub memory_utilization_percent: Option<u32>,
    /// `nvmlDeviceGetPcieReplayCounter`.
    pub pcie_replay_count: Option<u32>,
    /// `(link, counter, value)` for each active NVLink.
    pub nvlink_errors: Vec<(u32, NvLinkError, u64)>,
}

/// The value NVML's XID events carry when it does not know the XID.
pub const UNKNOWN_XID: u64 = 999;

/// Series ids by metric and labels, registered on first use.
#[derive(Debug, Default)]
pub struct SeriesCache {
    ids: HashMap<(&'static str, Labels), SeriesId>,
}

impl SeriesCache {
    fn id(
        &mut self,
        ctx: &SensorContext,
        metric: &'static str,
        labels: Labels,
        kind: SampleKind,
    ) -> Result<SeriesId, SensorError> {
        if let Some(id) = self.ids.get(&(metric, labels.clone())) {
            return Ok(*id);
        }
        let id = ctx.register(&SeriesSpec { metric: metric.into(), labels: labels.clone(), kind })?;
        self.ids.insert((metric, labels), id);
        Ok(id)
    }

    /// The samples of `reading` at `ts`, appended to `out`.
    pub fn samples(
        &mut self,
        ctx: &SensorContext,
        reading: &GpuReading,
        ts: Nanos,
        out: &mut Vec<Sample>,
    ) -> Result<(), SensorError> {
        let gpu = reading.gpu.to_string();
        let base = Labels::from_pairs([("gpu", gpu.as_str()), ("pci_bus_id", reading.pci_bus_id.as_str())]);
        let gauges = [
            ("gpu_temperature_celsius", reading.temperature_celsius),
            ("gpu_utilization_percent", reading.utilization_percent),
            ("gpu_memory_utilization_percent", reading.memory_utilization_percent),
        ];
        for (metric, value) in gauges {
            if let Some(v) = value {
                let series = self.id(ctx, metric, base.clone(), SampleKind::Gauge)?;
                out.push(Sample { series, ts, value: Value::Real(v as f64) });
            }
        }
        if let Some(n) = reading.pcie_replay_count {
            let kind = SampleKind::Counter(CounterSpec::U32_WRAP);
            let series = self.id(ctx, "gpu_pcie_replay_count", base.clone(), kind)?;
            out.push(Sample { series, ts, value: Value::Count(n as u64) });
        }
        for &(link, counter, n) in &reading.nvlink_errors {
            let mut labels = base.clone();
            labels.insert("link", link.to_string());
            let series = self.id(ctx, counter.metric(), labels, SampleKind::Counter(CounterSpec::U64))?;
            out.push(Sample { series, ts, value: Value::Count(n) });
        }
        Ok(())
    }

    /// The `gpu_xid` event of XID `xid` (`None`: unknown) on `gpu`.
    pub fn xid(
        &mut self,
        ctx: &SensorContext,
        gpu: u32,
        pci_bus_id: &str,
        xid: Option<u64>,
        ts: Nanos,
    ) -> Result<Sample, SensorError> {
        let xid = xid.unwrap_or(UNKNOWN_XID);
        let (gpu, code) = (gpu.to_string(), xid.to_string());
        let labels = Labels::from_pairs([("gpu", gpu.as_str()), ("pci_bus_id", pci_bus_id), ("xid", code.as_str())]);
        let series = self.id(ctx, "gpu_xid", labels, SampleKind::Event)?;
        Ok(Sample { series, ts, value: Value::Real(xid as f64) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::SeriesTable;
    use tokio::sync::{mpsc, watch};

    fn ctx(table: &SeriesTable) -> SensorContext {
        let (tx, _rx) = mpsc::channel(1);
        let (_stop, shutdown) = watch::channel(false);
        SensorContext::new(table.clone(), "nvml", 100, tx, shutdown)
    }

    #[test]
    fn a_reading_becomes_gauges_and_counters_with_gpu_labels() {
        let table = SeriesTable::default();
        let ctx = ctx(&table);
        let reading = GpuReading {
            gpu: 3,
            pci_bus_id: "00000000:3B:00.0".into(),
            temperature_celsius: Some(61),
            utilization_percent: Some(97),
            memory_utilization_percent: None,
            pcie_replay_count: Some(12),
            nvlink_errors: vec![(5, NvLinkError::DlCrcFlit, 1 << 40)],
        };
        let mut cache = SeriesCache::default();
        let mut out = Vec::new();
        cache.samples(&ctx, &reading, 7, &mut out).unwrap();
        let reg = table.read();
        let got: Vec<(String, Value)> = out.iter().map(|s| (reg.metric_name(s.series).to_string(), s.value)).collect();
        assert_eq!(
            got,
            vec![
                ("gpu_temperature_celsius".into(), Value::Real(61.0)),
                ("gpu_utilization_percent".into(), Value::Real(97.0)),
                ("gpu_pcie_replay_count".into(), Value::Count(12)),
                ("gpu_nvlink_dl_crc_flit_errors".into(), Value::Count(1 << 40)),
            ]
        );
        assert_eq!(reg.info(out[2].series).kind, SampleKind::Counter(CounterSpec::U32_WRAP));
        // Registered with the bound its name implies: errors count at most packets.
        let bounded = CounterSpec::U64.bounded(engine::RateBound::Packets);
        assert_eq!(reg.info(out[3].series).kind, SampleKind::Counter(bounded));
        assert_eq!(
            reg.labels(out[3].series),
            Labels::from_pairs([("gpu", "3"), ("pci_bus_id", "00000000:3B:00.0"), ("link", "5")])
        );
    }

    #[test]
    fn an_xid_is_an_event_labelled_and_valued_with_its_code() {
        let table = SeriesTable::default();
        let ctx = ctx(&table);
        let mut cache = SeriesCache::default();
        let s79 = cache.xid(&ctx, 0, "00000000:18:00.0", Some(79), 5).unwrap();
        let unknown = cache.xid(&ctx, 0, "00000000:18:00.0", None, 6).unwrap();
        let again = cache.xid(&ctx, 0, "00000000:18:00.0", Some(79), 7).unwrap();
        let reg = table.read();
        assert_eq!(reg.metric_name(s79.series), "gpu_xid");
        assert_eq!(reg.info(s79.series).kind, SampleKind::Event);
        assert_eq!(reg.labels(s79.series).get("xid"), Some("79"));
        assert_eq!(s79.value, Value::Real(79.0));
        assert_eq!(reg.labels(unknown.series).get("xid"), Some("999"));
        assert_eq!(again.series, s79.series);
        assert_ne!(unknown.series, s79.series);
    }
}
