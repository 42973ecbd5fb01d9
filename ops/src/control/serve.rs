//! Starting the control API's listeners: the unix socket always, TCP with
//! TLS and tokens when `[control] listen` is set. Both are bound before
//! the daemon reports it started, so a taken port or a bad certificate is
//! an error at start, not a silent absence.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_rustls::rustls;

use super::auth::{TokenError, Tokens};
use super::listen::{bind_unix, owner_only, server_tls, tls_incoming, TlsError};
use super::pb::control_server::ControlServer;
use super::server::ControlService;
use super::socket::SocketError;
use crate::config::ControlSection;

/// Why the control API cannot listen or stopped serving.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// `[control] listen` without the files TCP needs.
    #[error("control.listen = {addr:?} needs control.{what}: TCP is served only with TLS and a bearer token")]
    Needs {
        /// The address.
        addr: String,
        /// The missing key.
        what: &'static str,
    },
    /// The TLS files.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The token files.
    #[error(transparent)]
    Token(#[from] TokenError),
    /// The TCP address cannot be resolved or bound.
    #[error("control.listen {addr}")]
    Listen {
        /// The address (quoted when it did not resolve).
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The unix socket cannot be bound (another daemon serves it, among others).
    #[error(transparent)]
    Socket(#[from] SocketError),
    /// A listener failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A server stopped on an error.
    #[error("control API")]
    Serve(#[source] tonic::transport::Error),
}

/// The TCP side, ready to serve.
pub struct TcpSide {
    listener: std::net::TcpListener,
    tls: Arc<rustls::ServerConfig>,
    tokens: Tokens,
}

/// The TCP side, checked (TLS loaded, tokens read), not yet bound.
pub struct TcpSettings {
    addr: String,
    tls: Arc<rustls::ServerConfig>,
    tokens: Tokens,
}

/// Reads the TLS and token files, if `[control] listen` is set: what `run`
/// would refuse is refused here, for `check` too.
pub fn tcp_settings(control: &ControlSection) -> Result<Option<TcpSettings>, ServeError> {
    let Some(addr) = &control.listen else { return Ok(None) };
    let need = |what: &'static str, p: &Option<PathBuf>| {
        p.clone().ok_or_else(|| ServeError::Needs { addr: addr.clone(), what })
    };
    let cert = need("tls_cert", &control.tls_cert)?;
    let key = need("tls_key", &control.tls_key)?;
    let token = need("token_file", &control.token_file)?;
    let tls = server_tls(&cert, &key)?;
    let tokens = Tokens::load(&token, control.read_token_file.as_deref())?;
    std::net::ToSocketAddrs::to_socket_addrs(addr.as_str())
        .map_err(|source| ServeError::Listen { addr: format!("{addr:?}"), source })?;
    Ok(Some(TcpSettings { addr: addr.clone(), tls, tokens }))
}

impl TcpSettings {
    /// Binds the TCP address.
    pub fn bind(self) -> Result<TcpSide, ServeError> {
        let listener = std::net::TcpListener::bind(&self.addr)
            .map_err(|source| ServeError::Listen { addr: self.addr.clone(), source })?;
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
) -> Result<JoinHandle<Result<(), ServeError>>, ServeError> {
    let (unix, owned) = bind_unix(&socket)?;
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
        owned.remove();
        result.map_err(ServeError::Serve)
    }))
}
