//! Starting the control API's listeners: the unix socket always, TCP with
//! TLS and tokens when `[control] listen` is set. Both are bound before
//! the daemon reports it started, so a taken port or a bad certificate is
//! an error at start, not a silent absence.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::rustls;

use super::auth::Tokens;
use super::listen::{bind_unix, owner_only, server_tls, tls_incoming};
use super::pb::control_server::ControlServer;
use super::server::ControlService;
use crate::config::ControlSection;

/// The TCP side, ready to serve.
pub struct TcpSide {
    listener: std::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    tokens: Tokens,
}

/// The TCP side, checked (TLS loaded, tokens read), not yet bound.
pub struct TcpPlan {
    addr: String,
    tls: Arc<rustls::ServerConfig>,
    tokens: Tokens,
}

/// Reads the TLS and token files, if `[control] listen` is set: what `run`
/// would refuse is refused here, for `check` too.
pub fn tcp_plan(control: &ControlSection) -> anyhow::Result<Option<TcpPlan>> {
    let Some(addr) = &control.listen else { return Ok(None) };
    let need = |what: &str, p: &Option<PathBuf>| -> anyhow::Result<PathBuf> {
        p.clone().with_context(|| {
            format!("control.listen = {addr:?} needs control.{what}: TCP is served only with TLS and a bearer token")
        })
    };
    let cert = need("tls_cert", &control.tls_cert)?;
    let key = need("tls_key", &control.tls_key)?;
    let token = need("token_file", &control.token_file)?;
    let tls = server_tls(&cert, &key)?;
    let tokens = Tokens::load(&token, control.read_token_file.as_deref())?;
    std::net::ToSocketAddrs::to_socket_addrs(addr.as_str()).with_context(|| format!("control.listen {addr:?}"))?;
    Ok(Some(TcpPlan { addr: addr.clone(), tls, tokens }))
}

impl TcpPlan {
    /// Binds the TCP address.
    pub fn bind(self) -> anyhow::Result<TcpSide> {
        let listener =
            std::net::TcpListener::bind(&self.addr).with_context(|| format!("control.listen {}", self.addr))?;
        listener.set_nonblocking(true)?;
        Ok(TcpSide { listener, tls: self.tls, tokens: self.tokens })
    }
}

impl TcpSide {
    /// The address actually bound (port 0 picks one).
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }
}

async fn stopped(mut rx: watch::Receiver<bool>) {
    while !*rx.borrow() {
        if rx.changed().await.is_err() {
            break;
        }
    }
}

/// Binds the unix socket and serves both sides until `shutdown` turns true.
pub fn start(
    socket: PathBuf,
    tcp: Option<TcpSide>,
    service: ControlService,
    shutdown: watch::Receiver<bool>,
) -> anyhow::Result<JoinHandle<anyhow::Result<()>>> {
    let unix = bind_unix(&socket).with_context(|| format!("control socket {}", socket.display()))?;
    tracing::info!(message = "Control API listening.", socket = %socket.display());
    let unix_server = tonic::transport::Server::builder()
        .add_service(ControlServer::new(service.clone()))
        .serve_with_incoming_shutdown(owner_only(unix), stopped(shutdown.clone()));
    let tcp_server = match tcp {
        Some(side) => {
            let addr = side.local_addr()?;
            let listener = tokio::net::TcpListener::from_std(side.listener)?;
            tracing::info!(message = "Control API listening on TCP (TLS, bearer token).", %addr);
            let service = service.with_tokens(side.tokens);
            Some(
                tonic::transport::Server::builder()
                    .add_service(ControlServer::new(service))
                    .serve_with_incoming_shutdown(tls_incoming(listener, side.tls), stopped(shutdown)),
            )
        }
        None => None,
    };
    Ok(tokio::spawn(async move {
        let result = match tcp_server {
            Some(tcp) => {
                let (a, b) = tokio::join!(unix_server, tcp);
                a.and(b)
            }
            None => unix_server.await,
        };
        let _ = std::fs::remove_file(&socket);
        result.context("control API")
    }))
}
