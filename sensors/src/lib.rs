//! The sensors of rocemend: each module reads one kind of source and feeds
//! the engine through its [`Sensor`] contract.
//!
//! # Brief overview
//!
//! The daemon's config names each sensor by a kind, a name and a table of
//! settings; [`build`] turns those into a boxed [`Sensor`], validating the
//! settings once, so a running sensor never sees raw config. The daemon then
//! hands each sensor a [`SensorContext`](engine::SensorContext): where to
//! register its series, where to send [`Batch`](engine::Batch)es, and when to
//! stop.
//!
//! ```
//! use engine::{Batch, Sensor, SensorContext, SeriesTable};
//! use sensors::ReplaySensor;
//!
//! let recording = concat!(
//!     r#"{"series":0,"metric":"link_carrier_down_count","labels":{"node":"node-01","netdev":"eth0"},"kind":"counter","bits":32,"overflow":"wrap"}"#, "\n",
//!     r#"{"s":0,"t":1700000000000000000,"v":1}"#, "\n",
//!     r#"{"s":0,"t":1700000001000000000,"v":2}"#, "\n",
//! );
//! // Speed 0 plays as fast as possible.
//! let sensor = ReplaySensor::from_bytes("demo", recording.as_bytes().to_vec(), 0.0).unwrap();
//!
//! let (tx, mut rx) = tokio::sync::mpsc::channel::<Batch>(16);
//! let (_stop, shutdown) = tokio::sync::watch::channel(false);
//! let ctx = SensorContext::new(SeriesTable::default(), "demo", 100, tx, shutdown);
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
//! runtime.block_on(Box::new(sensor).run(ctx)).unwrap();
//!
//! let mut batches = Vec::new();
//! while let Ok(batch) = rx.try_recv() {
//!     batches.push(batch);
//! }
//! assert_eq!(batches.len(), 2, "one batch per recorded timestamp");
//!
//! // The daemon builds sensors from its config the same way (a recording
//! // that is not there is refused then, not when the sensor starts):
//! let dir = tempfile::tempdir().unwrap();
//! let path = dir.path().join("incident.jsonl");
//! std::fs::write(&path, recording).unwrap();
//! let settings: toml::Table = toml::from_str(&format!("path = {path:?}")).unwrap();
//! let sensor = sensors::build("replay", "incident", settings).unwrap();
//! assert_eq!(sensor.name(), "incident");
//! assert!(sensors::build("sonar", "x", toml::Table::new()).is_err());
//! ```
//!
//! # Layout
//!
//! - [`replay`]: plays a recording (JSON lines) at recorded or accelerated
//!   speed: [`ReplaySensor`], configured by [`ReplayConfig`];
//! - [`rdma_sysfs`]: RDMA port counters from sysfs: [`RdmaSysfsSensor`],
//!   configured by [`RdmaSysfsConfig`];
//! - [`netlink_link`]: carrier counters and state of network links, pushed
//!   by rtnetlink: [`NetlinkLinkSensor`], configured by [`NetlinkLinkConfig`];
//! - [`nccl_tests`]: follows nccl-tests output into bandwidth gauges:
//!   [`NcclTestsSensor`], configured by [`NcclTestsConfig`];
//! - [`nvml`]: GPU XIDs, NVLink and PCIe errors, temperature and utilization
//!   from NVML (loaded at run time): [`NvmlSensor`], configured by [`NvmlConfig`];
//! - [`gnmi`]: switch telemetry over gNMI Subscribe (SONiC PFC, queues,
//!   PFC watchdog; OpenConfig interfaces): [`GnmiSensor`], configured by
//!   [`GnmiConfig`];
//! - [`ethtool`]: NIC driver statistics through the ethtool ioctls:
//!   [`EthtoolSensor`], configured by [`EthtoolConfig`];
//! - `verbs` (feature `verbs`): RDMA port state from libibverbs: `VerbsSensor`,
//!   configured by `VerbsConfig`;
//! - [`prometheus`]: scrapes Prometheus exporters over HTTP:
//!   [`PrometheusSensor`], configured by [`PrometheusConfig`];
//! - [`sonic_redis`]: a SONiC switch read from its own Redis, on the switch:
//!   [`SonicRedisSensor`], configured by [`SonicRedisConfig`];
//! - [`switch_series`]: SONiC's counters as the switch series both switch
//!   sensors produce;
//! - [`job`]: job signals pushed over the daemon's control API
//!   (`rocemend job push`): [`job::JobSensor`], fed by [`job::channel`];
//! - [`build`]: the one place that knows every sensor kind ([`KINDS`]);
//! - [`SensorConfigError`]: why a sensor's settings were refused, by setting.

#![deny(missing_docs)]

// The tests in `src/tests/` use the crate by its name, as its users do: they
// were an integration-test binary of their own, and joined the crate's unit
// tests so that `cargo test --workspace` links fewer binaries.
#[cfg(test)]
extern crate self as sensors;
#[cfg(test)]
mod tests;

mod error;
pub mod ethtool;
pub mod gnmi;
pub mod job;
pub mod nccl_tests;
pub mod netlink_link;
pub mod nvml;
pub mod prometheus;
pub mod rdma_sysfs;
pub mod replay;
pub mod sonic_redis;
pub mod switch_series;
#[cfg(feature = "verbs")]
pub mod verbs;

pub use error::SensorConfigError;
pub use ethtool::{EthtoolConfig, EthtoolSensor};
pub use gnmi::{GnmiConfig, GnmiSensor};
pub use nccl_tests::{NcclTestsConfig, NcclTestsSensor};
pub use netlink_link::{NetlinkLinkConfig, NetlinkLinkSensor};
pub use nvml::{NvmlConfig, NvmlSensor};
pub use prometheus::{PrometheusConfig, PrometheusSensor};
pub use rdma_sysfs::{RdmaSysfsConfig, RdmaSysfsSensor};
pub use replay::{ReplayConfig, ReplaySensor};
pub use sonic_redis::{SonicRedisConfig, SonicRedisSensor};
#[cfg(feature = "verbs")]
pub use verbs::{VerbsConfig, VerbsSensor};

use engine::{BuildError, Component, Sensor};

/// The sensor kinds [`build`] knows.
pub const KINDS: &[&str] = &[
    "netlink_link",
    "nvml",
    "rdma_sysfs",
    "replay",
    "nccl_tests",
    "gnmi",
    "ethtool",
    "prometheus",
    "sonic_redis",
    #[cfg(feature = "verbs")]
    "verbs",
];

/// The kinds that read the host they run on and label what they read with its `node`: a
/// daemon with one of them is a node's daemon, and its node must be in its inventory.
pub const HOST_KINDS: &[&str] = &["netlink_link", "nvml", "rdma_sysfs", "nccl_tests", "ethtool", "verbs"];

/// Builds the sensor `name` of `kind` from its config `settings` (the
/// sensor's table in the daemon config, without the kind and name).
///
/// The error names the sensor, its kind and what was wrong: an unknown kind,
/// an unknown or mistyped setting (by its key), a value out of range.
pub fn build(kind: &str, name: &str, settings: toml::Table) -> Result<Box<dyn Sensor>, BuildError> {
    build_in(kind, name, settings, None)
}

/// [`build`], with the inventory that says how to reach the switches a
/// `gnmi` sensor names.
pub fn build_in(
    kind: &str,
    name: &str,
    settings: toml::Table,
    inventory: Option<&engine::Topology>,
) -> Result<Box<dyn Sensor>, BuildError> {
    let it = Component { component: "sensor", name, kind };
    match kind {
        "netlink_link" => make(it, settings, |c: NetlinkLinkConfig| c.build(name)),
        "nvml" => make(it, settings, |c: NvmlConfig| c.build(name)),
        "rdma_sysfs" => make(it, settings, |c: RdmaSysfsConfig| c.build(name)),
        "nccl_tests" => make(it, settings, |c: NcclTestsConfig| c.build(name)),
        "gnmi" => make(it, settings, |c: GnmiConfig| c.build_in(name, inventory)),
        "ethtool" => make(it, settings, |c: EthtoolConfig| c.build(name)),
        "prometheus" => make(it, settings, |c: PrometheusConfig| c.build(name)),
        "replay" => make(it, settings, |c: ReplayConfig| c.build(name)),
        "sonic_redis" => make(it, settings, |c: SonicRedisConfig| c.build(name)),
        #[cfg(feature = "verbs")]
        "verbs" => make(it, settings, |c: VerbsConfig| c.build(name)),
        #[cfg(not(feature = "verbs"))]
        "verbs" => Err(it.not_in_build(
            "rocemend was built without the `verbs` feature (rebuild with `--features verbs`, which needs \
             libibverbs-dev, librdmacm-dev and libclang-dev)",
        )),
        _ => Err(it.unknown(KINDS)),
    }
}

/// Reads `settings` as the config `C` and builds its sensor with `build`;
/// either failure is [`BuildError::Invalid`], naming the sensor (and, for a
/// value that does not deserialize, its key).
fn make<C, S>(
    it: Component<'_>,
    settings: toml::Table,
    build: impl FnOnce(C) -> Result<S, SensorConfigError>,
) -> Result<Box<dyn Sensor>, BuildError>
where
    C: serde::de::DeserializeOwned,
    S: Sensor + 'static,
{
    let config: C = it.settings(settings)?;
    let sensor = build(config).map_err(|e| it.invalid(e))?;
    Ok(Box::new(sensor))
}
