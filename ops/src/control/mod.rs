//! The control API: a gRPC service (`control.proto`) on a unix socket, and
//! on TCP with TLS and bearer tokens when configured; its client for the
//! CLI verbs; the event hub behind `Watch`. The sensor behind `PushJob` is
//! `sensors::job`.
//!
//! - [`server`]: the service, served by `rocemend run`;
//! - [`serve`], [`listen`], [`auth`]: where it listens and who may call;
//! - [`socket`]: one daemon per control socket;
//! - [`events`]: the run loop's events, broadcast to `Watch`;
//! - [`incidents`]: decisions and instances grouped into incidents;
//! - [`client`]: the CLI's side, over the socket or TCP;
//! - [`view`]: the replies as the verbs print them.

pub mod auth;
pub mod client;
pub mod events;
pub mod incidents;
pub mod listen;
pub mod serve;
pub mod server;
pub mod socket;
pub mod view;

/// Code generated from `control.proto`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("rocemend.control.v1");
}

/// A record the daemon sent (a decision, an effect, a silence, as JSON)
/// that this version cannot read.
#[derive(Debug, thiserror::Error)]
#[error("the daemon sent a record this version cannot read")]
pub struct DecodeError(#[from] serde_json::Error);

/// Reads one record of a reply.
pub fn decode<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, DecodeError> {
    Ok(serde_json::from_str(text)?)
}
