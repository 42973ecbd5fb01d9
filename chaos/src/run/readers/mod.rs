//! The daemon's ordinary sensors, pointed at the simulated fabric and
//! driven by the lockstep loop with the step's timestamp. Each signal goes
//! through the production sensor's own decoding, fed at that sensor's
//! boundary with the kernel, the driver or the peer:
//!
//! - [`node::NodeReader`]: one node's host sensors: `rdma_sysfs` on the
//!   node's sysfs tree, `ethtool` on a simulated driver (the ioctls'
//!   names and values), `netlink_link` on the `RTM_NEWLINK` messages the
//!   kernel would send, and `nvml`'s XID events;
//! - [`switch::SwitchReader`]: the gNMI sensor's paths on one leaf, read
//!   through the simulated switch's data tree and mapped by the gNMI
//!   sensor's own update mapping;
//! - [`prom::PromReader`]: the jobs' step time as Prometheus text through
//!   the Prometheus sensor's parser.

pub mod node;
pub mod prom;
pub mod switch;

use engine::{Batch, SensorContext, SeriesTable};
use tokio::sync::{mpsc, watch};

pub use node::NodeReader;
pub use prom::PromReader;
pub use switch::SwitchReader;

/// Series a reader may register: a node has 8 NICs × (8 PMA + 3 driver +
/// 37 ethtool + 3 link) counters and a few GPU events; a leaf a few ports
/// × (32 PFC + 48 queue + 32 watchdog + 4 interface) series.
const MAX_SERIES: usize = 10_000;

/// A context for a reader that is driven, not run: nothing is sent on its
/// channel and shutdown is never asked.
fn context(table: &SeriesTable, name: &str) -> SensorContext {
    let (tx, _rx) = mpsc::channel::<Batch>(1);
    let (_stop, shutdown) = watch::channel(false);
    SensorContext::new(table.clone(), name, MAX_SERIES, tx, shutdown)
}
