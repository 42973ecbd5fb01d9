//! Connecting to etcd: the options every client of the crate asks for, and
//! the two kinds of client (with a per-request timeout, and without one for
//! elections). Below the coordinator, the shards and the elections, which
//! all connect through it.

use std::time::Duration;

use etcd_client::{Client, ConnectOptions};

use crate::settings::FleetSettings;
use crate::FleetError;

/// Connects a client to the configured endpoints. Connecting is lazy: a
/// daemon starts while etcd is down and holds fleet actions until it is up.
pub async fn connect_client(settings: &FleetSettings) -> Result<Client, FleetError> {
    connect(settings, connect_options(settings).with_timeout(settings.request_timeout)).await
}

/// What every client of ours asks of its connection: keep-alives, and a
/// leader — a member cut off from its quorum refuses at once instead of
/// answering from a stale state.
fn connect_options(settings: &FleetSettings) -> ConnectOptions {
    ConnectOptions::new()
        .with_connect_timeout(settings.request_timeout)
        .with_keep_alive(Duration::from_secs(1), settings.request_timeout)
        .with_keep_alive_while_idle(true)
        .with_require_leader(true)
}

async fn connect(settings: &FleetSettings, options: ConnectOptions) -> Result<Client, FleetError> {
    Client::connect(&settings.endpoints, Some(options))
        .await
        .map_err(|e| FleetError::Etcd { endpoints: settings.endpoints.join(","), error: e.to_string() })
}

/// A client for elections: as [`connect_client`] but with no per-request
/// timeout, since a standby's campaign blocks until the leader goes. (A
/// campaign the client cuts off is cleaned up by etcd, and that clean-up can
/// delete the key of the next campaign of the same lease.)
pub async fn connect_election_client(settings: &FleetSettings) -> Result<Client, FleetError> {
    connect(settings, connect_options(settings)).await
}
