//! SONiC's counters as rocemend's switch series: the one model both switch sensors map into, so
//! a rule reads the same series whether the switch was read over gNMI ([`crate::gnmi`]) or
//! through its own Redis ([`crate::sonic_redis`]).
//!
//! - [`reading`]: [`Reading`], one metric of a port (of a queue, of a priority), and its series;
//! - [`fields`]: which field of which hash is which metric ([`fields::port_entry`],
//!   [`fields::queue_entry`], [`fields::port_status_entry`]); one bad field is one
//!   [`FieldError`], the rest of the hash still counts;
//! - [`view`]: [`SwitchView`], what names the readings: aliases back to SONiC names, queues to
//!   the priorities that pause them, object ids, the ASIC family, pause quanta ([`PauseUnit`]);
//! - [`series`]: [`SwitchSeries`], the engine series of one switch's readings.

pub mod fields;
pub mod reading;
pub mod series;
pub mod view;

pub use fields::{FieldError, Fields, QueueFields, Scalar};
pub use reading::{Reading, ReadingKind};
pub use series::SwitchSeries;
pub use view::{PauseUnit, SwitchView, ViewError, ViewTables};
