//! The `rdma_sysfs` sensor: the RDMA port counters of every device under
//! `<root>/class/infiniband`.
//!
//! Each `<dev>/ports/<port>/counters/*` (IB PMA PortCounters) and
//! `hw_counters/*` (driver counters; on mlx5 the Q-counters and the
//! congestion counters) becomes a counter series `rdma_<counter>` labelled
//! `rdma_dev`, `rdma_port` and, when the device has one, `netdev`. The width
//! and overflow of each counter come from its name ([`counters`]): PMA
//! counters saturate at 4/8/16/32 bits, mlx5 Q-counters wrap at 32 bits, the
//! congestion counters and the extended data counters are 64 bits wide, and
//! `port_xmit_data`/`port_rcv_data` count 4-byte words, so they are emitted
//! ×4 as `rdma_port_xmit_data_bytes`/`rdma_port_rcv_data_bytes`.
//!
//! Files stay open and are re-read at offset 0 with `pread`, so a poll costs
//! one system call per counter and no path lookups. A read that fails (the
//! device was unplugged, the driver reloaded) is reported and triggers a
//! rescan; a periodic rescan notices files that went away and devices that
//! came (back).
//!
//! - [`config`]: [`RdmaSysfsConfig`], the user's settings;
//! - [`counters`]: counter name → metric, kind and scale;
//! - [`poller`]: [`Poller`], discovery and one synchronous poll (used by the
//!   sensor and by the benchmark);
//! - [`sensor`]: [`RdmaSysfsSensor`], the async loop.

pub mod config;
pub mod counters;
pub mod poller;
pub mod sensor;

pub use config::RdmaSysfsConfig;
pub use poller::Poller;
pub use sensor::RdmaSysfsSensor;
