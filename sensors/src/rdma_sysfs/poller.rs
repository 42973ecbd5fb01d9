//! Discovery of RDMA devices and one synchronous poll of their counters.
//!
//! [`Poller`] is the sensor without its clock: [`Poller::poll`] reads every
//! open counter file once and returns the samples, reporting health through
//! the [`SensorContext`]. The async sensor calls it on the blocking pool;
//! tests and the benchmark call it directly.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

use engine::{HealthState, Labels, Nanos, Sample, SampleKind, SensorContext, SeriesId, SeriesSpec, Value};

use super::config::RdmaSysfsConfig;
use super::counters::{meaning, CounterDir};

/// The most RDMA devices read. A node has a handful of NICs; with SR-IOV
/// virtual functions exposed on the host it can be a few dozen. 256 keeps a
/// runaway directory (a bad `root`) from opening thousands of files.
pub const MAX_DEVICES: usize = 256;

/// The most ports per device: HCAs have one or two; 16 leaves room for
/// switches' management ports without letting a bogus tree fan out.
pub const MAX_PORTS: usize = 16;

/// The most counter files read per directory: mlx5 `hw_counters` has about
/// 70, `counters` about 20.
pub const MAX_FILES_PER_DIR: usize = 512;

/// The most counter paths remembered as expected (to notice when one goes
/// missing): every file of every port of every device at the caps above
/// would be more, but past this many the node is misconfigured anyway.
const MAX_EXPECTED: usize = 65_536;

/// The most netdevs looked at under `<dev>/device/net`.
const MAX_NETDEVS: usize = 64;

/// A sysfs counter holds at most 20 decimal digits and a newline; 64 bytes
/// leaves room for padding some drivers add.
const READ_BUF: usize = 64;

/// One open counter file.
#[derive(Debug)]
struct CounterFile {
    path: PathBuf,
    file: File,
    /// (device, inode) of the open file: a rescan keeps the file open only
    /// while the path still names it.
    id: (u64, u64),
    series: SeriesId,
    scale: u64,
    /// A read failed: reopen at the next rescan.
    stale: bool,
}

/// Reads RDMA counters from sysfs.
#[derive(Debug)]
pub struct Poller {
    root: PathBuf,
    devices: Vec<String>,
    rescan_every: u32,
    ctx: SensorContext,
    files: Vec<CounterFile>,
    /// Every counter path seen so far; a path here but not on disk at a
    /// rescan is missing (its device is gone).
    expected: HashSet<PathBuf>,
    missing: usize,
    polls_since_scan: u32,
    rescan_now: bool,
    reported: Option<(HealthState, String)>,
}

/// Sorted entry names of `dir`, at most `cap`; empty when it cannot be read.
fn entries(dir: &Path, cap: usize) -> Vec<String> {
    let Ok(read) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut names: Vec<String> = read.filter_map(|e| e.ok()).filter_map(|e| e.file_name().into_string().ok()).collect();
    names.sort();
    names.truncate(cap);
    names
}

/// Parses a sysfs counter: decimal digits with surrounding whitespace.
/// Public for the fuzz target `sysfs_ethtool`.
pub fn parse(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

fn read_value(file: &File, buf: &mut [u8; READ_BUF]) -> Result<u64, String> {
    let n = file.read_at(buf, 0).map_err(|e| e.to_string())?;
    parse(&buf[..n]).ok_or_else(|| format!("not a counter: {:?}", String::from_utf8_lossy(&buf[..n]).trim()))
}

impl Poller {
    /// A poller of the devices `config` names, registering its series
    /// through `ctx`. Discovery happens at the first poll.
    pub fn new(config: &RdmaSysfsConfig, ctx: SensorContext) -> Poller {
        Poller {
            root: config.root.clone(),
            devices: config.devices.clone(),
            rescan_every: config.rescan_every.max(1),
            ctx,
            files: Vec::new(),
            expected: HashSet::new(),
            missing: 0,
            polls_since_scan: 0,
            rescan_now: true,
            reported: None,
        }
    }

    /// How many counter files are open.
    pub fn open_files(&self) -> usize {
        self.files.len()
    }

    fn class_dir(&self) -> PathBuf {
        self.root.join("class/infiniband")
    }

    /// Walks the tree again. Files still open on the same inode are kept
    /// (opening and registering is what makes a rescan cost more than a
    /// poll); new ones are opened, gone ones dropped.
    fn rescan(&mut self) {
        let mut open: HashMap<PathBuf, CounterFile> =
            std::mem::take(&mut self.files).into_iter().filter(|f| !f.stale).map(|f| (f.path.clone(), f)).collect();
        let mut files = Vec::new();
        let class = self.class_dir();
        let mut buf = [0u8; READ_BUF];
        for dev in entries(&class, MAX_DEVICES) {
            if !self.devices.is_empty() && !self.devices.contains(&dev) {
                continue;
            }
            let dev_dir = class.join(&dev);
            let netdevs = entries(&dev_dir.join("device/net"), MAX_NETDEVS);
            for port in entries(&dev_dir.join("ports"), MAX_PORTS) {
                let mut labels = Labels::from_pairs([("rdma_dev", dev.as_str()), ("rdma_port", port.as_str())]);
                // One netdev per device on mlx5 RoCE; with several (a
                // multi-port HCA) port N is the Nth in name order.
                let index = port.parse::<usize>().unwrap_or(1).saturating_sub(1);
                if let Some(netdev) = netdevs.get(index).or(netdevs.first()) {
                    labels.insert("netdev", netdev.as_str());
                }
                let port_dir = dev_dir.join("ports").join(&port);
                for dir in [CounterDir::Pma, CounterDir::Hw] {
                    let counter_dir = port_dir.join(dir.dir_name());
                    for name in entries(&counter_dir, MAX_FILES_PER_DIR) {
                        let Some(m) = meaning(dir, &name) else { continue };
                        let path = counter_dir.join(&name);
                        if let Some(kept) = open.remove(&path) {
                            let same = std::fs::metadata(&path).is_ok_and(|m| (m.dev(), m.ino()) == kept.id);
                            if same {
                                files.push(kept);
                                continue;
                            }
                        }
                        let Ok(file) = File::open(&path) else { continue };
                        let Ok(meta) = file.metadata() else { continue };
                        // A file that does not hold a number (a driver's
                        // "N/A") is not a counter; skip it rather than
                        // failing it on every poll.
                        if read_value(&file, &mut buf).is_err() {
                            continue;
                        }
                        let spec =
                            SeriesSpec { metric: m.metric, labels: labels.clone(), kind: SampleKind::Counter(m.spec) };
                        match self.ctx.register(&spec) {
                            Ok(series) => files.push(CounterFile {
                                path,
                                file,
                                id: (meta.dev(), meta.ino()),
                                series,
                                scale: m.scale,
                                stale: false,
                            }),
                            Err(error) => self.ctx.read_failed("series", &error.to_string()),
                        }
                    }
                }
            }
        }
        let found: HashSet<&Path> = files.iter().map(|f| f.path.as_path()).collect();
        let gone: Vec<&PathBuf> = self.expected.iter().filter(|p| !found.contains(p.as_path())).collect();
        self.missing = gone.len();
        // The smallest path, so the message is the same at every rescan.
        if let Some(first) = gone.iter().min() {
            let error = format!("{} counter files are gone (device unplugged?), e.g. {}", gone.len(), first.display());
            tracing::warn!(message = "RDMA counter files gone.", sensor = %self.ctx.name(), count = gone.len(), example = %first.display());
            self.ctx.read_failed("gone", &error);
        }
        for f in &files {
            if self.expected.len() >= MAX_EXPECTED {
                break;
            }
            if !self.expected.contains(&f.path) {
                self.expected.insert(f.path.clone());
            }
        }
        self.files = files;
        self.polls_since_scan = 0;
        self.rescan_now = false;
    }

    /// Reads every counter once, stamping the samples `ts`.
    pub fn poll(&mut self, ts: Nanos) -> Vec<Sample> {
        let start = Instant::now();
        if self.rescan_now || self.polls_since_scan >= self.rescan_every {
            self.rescan();
        }
        self.polls_since_scan += 1;
        let mut samples = Vec::with_capacity(self.files.len());
        let mut buf = [0u8; READ_BUF];
        let mut failed = 0usize;
        let mut first_error = None;
        for f in &mut self.files {
            match read_value(&f.file, &mut buf) {
                Ok(raw) => {
                    samples.push(Sample { series: f.series, ts, value: Value::Count(raw.wrapping_mul(f.scale)) })
                }
                Err(error) => {
                    f.stale = true;
                    failed += 1;
                    let error = format!("reading {}: {error}", f.path.display());
                    self.ctx.read_failed("io", &error);
                    first_error.get_or_insert(error);
                }
            }
        }
        if failed > 0 {
            // The device is likely gone or back with new files: look again
            // at the next poll rather than failing every poll until the
            // periodic rescan.
            self.rescan_now = true;
        }
        if !samples.is_empty() {
            self.ctx.read_ok(start.elapsed());
        }
        let (state, detail) = if self.files.is_empty() && self.expected.is_empty() {
            (HealthState::Unavailable, format!("no RDMA devices under {}", self.class_dir().display()))
        } else if let Some(error) = first_error {
            (HealthState::Degraded, format!("{failed} counter reads failed, e.g. {error}"))
        } else if self.missing > 0 {
            (HealthState::Degraded, format!("{} counter files gone", self.missing))
        } else {
            (HealthState::Up, format!("{} counters", self.files.len()))
        };
        if self.reported.as_ref().map(|(s, d)| (*s, d.as_str())) != Some((state, detail.as_str())) {
            self.ctx.set_state(state, &detail);
            self.reported = Some((state, detail));
        }
        samples
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_parse_with_whitespace_and_refuse_text() {
        assert_eq!(parse(b"12345\n"), Some(12345));
        assert_eq!(parse(b"  18446744073709551615\n"), Some(u64::MAX));
        assert_eq!(parse(b"N/A\n"), None);
        assert_eq!(parse(b""), None);
    }
}
