//! The switch's Redis, as SONiC's own daemons use it: one connection per database of the
//! [`DatabaseLayout`](crate::layout::DatabaseLayout), over the instance's unix socket (or TCP),
//! with the password of builds that set one.
//!
//! - [`Switch`]: the layout and the password; [`Switch::database`] opens one database;
//! - [`Db`]: reads of one database ([`Db::entry`], [`Db::field`], [`Db::hash`], [`Db::keys`]);
//!   a read that finds nothing says so only when Redis answered `EXISTS 0`, never on an error;
//! - [`ConfigDb`]: CONFIG_DB, the one database rocemend writes, each [`Change`] list in one
//!   `MULTI`/`EXEC` ([`ConfigDb::apply`]), including [`Change::Replace`] (`DEL` then `HSET`, the
//!   way `pfcwd start` rewrites an entry so that orchagent restarts the watchdog);
//! - [`subscribe`]: keyspace notifications (`__keyspace@<db>__:<key>`) for ON_CHANGE reads, and
//!   SONiC's channels such as `PFC_WD_ACTION`.
//!
//! Every command has a deadline ([`Switch::with_timeout`]): a switch whose Redis stops answering
//! is an error after it, never a hang.

mod db;
mod error;
pub mod subscribe;
mod write;

pub use db::{escape_glob, Db, Entry, FieldRead, Switch, COUNTERS, DEFAULT_TIMEOUT};
pub use error::DbError;
pub use write::{Change, ConfigDb};
