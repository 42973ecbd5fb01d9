//! The control API: a gRPC service on a unix socket, and its client for the
//! CLI verbs (`status`, `decisions`, `explain`, `approve`, `reject`,
//! `breaker reset`, `mode`, `reload`).

pub mod client;
pub mod server;

/// Code generated from `control.proto`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod pb {
    tonic::include_proto!("rocemend.control.v1");
}
