//! The `verbs` sensor: RDMA port state from libibverbs, polled. Built only
//! with the `verbs` feature (it links libibverbs through `rdma-sys`).
//!
//! Every interval it lists the devices (`ibv_get_device_list`), opens each
//! (`ibv_open_device`), and queries every port (`ibv_query_port`), emitting
//! gauges labelled `rdma_dev` and `rdma_port`:
//!
//! - `rdma_port_state`: `enum ibv_port_state` (4 = ACTIVE, 1 = DOWN, 2 = INIT,
//!   3 = ARMED, 5 = ACTIVE_DEFER);
//! - `rdma_port_phys_state`: the IB PortPhysicalState (5 = LinkUp,
//!   3 = Disabled, 2 = Polling);
//! - `rdma_port_active_speed`: the verbs speed code (1 SDR, 2 DDR, 4 QDR,
//!   8 FDR10, 16 FDR, 32 EDR, 64 HDR, 128 NDR);
//! - `rdma_port_active_width`: the verbs width code (1 = 1x, 2 = 4x,
//!   4 = 8x, 8 = 12x, 16 = 2x).
//!
//! With no device the sensor reports unavailable and idles until shutdown.
//!
//! - [`config`]: [`VerbsConfig`], the user's settings;
//! - [`sensor`]: [`VerbsSensor`] and [`PortReading`].

pub mod config;
pub mod sensor;

pub use config::VerbsConfig;
pub use sensor::{PortReading, VerbsSensor};
