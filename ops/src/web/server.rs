//! The console's listener: HTTP/1.1 over TCP, or over TLS when `[web]`
//! has a certificate. Bound before the daemon reports it started, so a
//! taken port is an error at start.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::watch;
use tokio_rustls::rustls;

use super::routes::Console;
use super::settings::{WebError, WebSettings};

/// A TLS handshake longer than this is dropped: a slow client holds no
/// task for ever.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The console's listener, bound.
pub struct WebSide {
    listener: std::net::TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    /// The token that allows writes (TLS only).
    pub token: Option<String>,
}

impl WebSettings {
    /// Binds the address.
    pub fn bind(self) -> Result<WebSide, WebError> {
        let listener = std::net::TcpListener::bind(&self.addr)
            .map_err(|source| WebError::Listen { addr: self.addr.clone(), source })?;
        listener.set_nonblocking(true)?;
        Ok(WebSide { listener, tls: self.tls, token: self.token })
    }
}

impl WebSide {
    /// Whether it serves HTTPS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// Serves `console` until `shutdown` turns true.
    pub fn serve(self, console: Console, mut shutdown: watch::Receiver<bool>) -> Result<(), WebError> {
        let local = self.listener.local_addr()?;
        let listener = tokio::net::TcpListener::from_std(self.listener)?;
        let acceptor = self.tls.map(tokio_rustls::TlsAcceptor::from);
        tracing::info!(
            message = "Web console listening.",
            addr = %local,
            scheme = if acceptor.is_some() { "https" } else { "http" },
            writes = if acceptor.is_some() && self.token.is_some() { "with the token" } else { "none (read-only)" }
        );
        tokio::spawn(async move {
            loop {
                let (tcp, peer) = tokio::select! {
                    conn = listener.accept() => match conn {
                        Ok(c) => c,
                        Err(error) => {
                            tracing::warn!(message = "Web console: accept failed.", %error);
                            tokio::time::sleep(Duration::from_millis(100)).await;
                            continue;
                        }
                    },
                    _ = shutdown.changed() => return,
                };
                let (console, acceptor, shutdown) = (console.clone(), acceptor.clone(), shutdown.clone());
                tokio::spawn(async move {
                    match acceptor {
                        None => connection(tcp, console, shutdown).await,
                        Some(acceptor) => match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                            Ok(Ok(tls)) => connection(tls, console, shutdown).await,
                            Ok(Err(error)) => {
                                tracing::debug!(message = "Web console: TLS handshake failed.", %peer, %error)
                            }
                            Err(_) => tracing::debug!(message = "Web console: TLS handshake timed out.", %peer),
                        },
                    }
                });
            }
        });
        Ok(())
    }
}

/// One HTTP/1.1 connection, until it ends or the daemon stops (an open
/// event stream would otherwise hold the stop up).
async fn connection<S>(io: S, console: Console, mut shutdown: watch::Receiver<bool>)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| {
        let console = console.clone();
        async move { Ok::<_, Infallible>(console.handle(req).await) }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(Duration::from_secs(10))
        .serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => {
            if let Err(error) = result {
                tracing::debug!(message = "Web console connection ended with an error.", %error);
            }
        }
        _ = shutdown.changed() => {}
    }
}
