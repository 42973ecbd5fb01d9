//! Fleet coordination for rocemend: one safety budget across every daemon,
//! kept in etcd v3.
//!
//! One daemon runs per node, more next to the switches. Limits such as "at
//! most 3 nodes cordoned per 10 minutes", "at most 5 % of the fleet" or
//! "never two rails of one plane drained" are fleet-wide, yet each daemon
//! sees only itself; when a spine fails, every daemon in its blast radius
//! sees the fault at once. This crate keeps the budget in etcd, an existing
//! distributed store, rather than in a protocol of our own:
//!
//! - [`settings`]: the `[fleet]` table and its budgets (always compiled);
//! - [`keys`]: the key layout in etcd and the values stored (always);
//! - `client` (feature `etcd`): `connect_client` and
//!   `connect_election_client`, the etcd connections every part below uses;
//! - `coordinator` (feature `etcd`): [`EtcdCoordinator`], the
//!   [`engine::contracts::Coordinator`] the dispatcher consults for
//!   fleet-scoped actions: a token per action, taken in one transaction,
//!   under the daemon's lease; the fleet breaker, watched;
//! - `retry` (feature `etcd`): a request that never reached a member (a
//!   dead one the client still picks) is sent again within its timeout;
//! - `session` (feature `etcd`): the lease, its keep-alive, health and the
//!   breaker watch, in the background;
//! - `election` (feature `etcd`): leader election for switch aggregators;
//! - `shard` (feature `etcd`): switch ownership sharded between several
//!   aggregators: rendezvous hashing over the live members, each switch
//!   claimed by exactly one under its lease;
//! - `handover` (feature `etcd`): what a sharing aggregator left in effect
//!   on a switch, recorded for the switch's next owner, who adopts it;
//! - `status` (feature `etcd`): what `rocemend fleet status` shows;
//! - `probe` (feature `etcd`): one daemon's fleet-scoped dispatch, reduced
//!   to what `rocemend-fleet-probe`, the fleet tests and the bench share.
//!
//! The `etcd` feature is off by default because `etcd-client` compiles its
//! protos with `protoc`; without it, the daemon runs standalone.

#![deny(missing_docs)]

pub mod keys;
pub mod settings;

#[cfg(feature = "etcd")]
mod client;
#[cfg(feature = "etcd")]
mod coordinator;
#[cfg(feature = "etcd")]
pub mod election;
#[cfg(feature = "etcd")]
pub mod handover;
#[cfg(feature = "etcd")]
pub mod probe;
#[cfg(feature = "etcd")]
mod retry;
#[cfg(feature = "etcd")]
mod session;
#[cfg(feature = "etcd")]
pub mod shard;
#[cfg(feature = "etcd")]
pub mod status;

#[cfg(feature = "etcd")]
pub use client::{connect_client, connect_election_client};
#[cfg(feature = "etcd")]
pub use coordinator::{reset_breaker, EtcdCoordinator};
#[cfg(feature = "etcd")]
pub use etcd_client;
pub use settings::{FleetConfig, FleetConfigError, FleetSettings};

/// Fleet coordination failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetError {
    /// etcd could not be reached or refused a request.
    #[error("etcd at {endpoints}: {error}")]
    Etcd {
        /// The endpoints.
        endpoints: String,
        /// What failed.
        error: String,
    },
    /// The `[fleet]` table is refused.
    #[error(transparent)]
    Config(#[from] settings::FleetConfigError),
    /// A shard group's name cannot be a key element.
    #[error("shard group {0:?}: must be non-empty and without '/'")]
    ShardGroup(String),
    /// A shard's switch list names an empty switch.
    #[error("shard: a switch name is empty")]
    EmptySwitchName,
}
