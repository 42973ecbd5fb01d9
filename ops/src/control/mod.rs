//! The control API: a gRPC service (`control.proto`) on a unix socket, and
//! on TCP with TLS and bearer tokens when configured; its client for the
//! CLI verbs; the event hub behind `Watch`. The sensor behind `PushJob` is
//! `sensors::job`.

pub mod auth;
pub mod client;
pub mod events;
pub mod incidents;
pub mod listen;
pub mod serve;
pub mod server;

/// Code generated from `control.proto`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("rocemend.control.v1");
}
