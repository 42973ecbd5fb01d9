//! Where the control API listens: the unix socket (owner only: mode 0600
//! and SO_PEERCRED) and, when configured, TCP with TLS (rustls).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::mpsc;
use tokio_rustls::rustls;
use tokio_stream::wrappers::{ReceiverStream, UnixListenerStream};
use tokio_stream::{Stream, StreamExt};

use super::socket::{claim, OwnedSocket, SocketError};

/// How long a TLS handshake may take before the connection is dropped, so
/// half-open connections cannot pile up.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Binds the unix socket: parent directory created, a live socket refused
/// and a dead one replaced ([`claim`]), mode 0600 from the first moment.
/// Returns the listener and the file it bound, which is all the daemon
/// removes at exit.
pub fn bind_unix(path: &Path) -> Result<(UnixListener, OwnedSocket), SocketError> {
    let io = |source| SocketError::Io { path: path.to_path_buf(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    claim(path)?;
    // The socket is created with the umask's permissions: tighten the umask
    // around the bind so it is never open to others, not even for a moment.
    // SAFETY: umask only swaps the process's file-creation mask.
    let old = unsafe { libc::umask(0o177) };
    let bound = UnixListener::bind(path);
    // SAFETY: as above; restores the previous mask.
    unsafe { libc::umask(old) };
    let listener = bound.map_err(io)?;
    let owned = OwnedSocket::bound(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    Ok((listener, owned))
}

/// Connections on the unix socket from the daemon's own user only. The mode
/// 0600 already keeps others out, but a directory with looser permissions,
/// a socket passed by a supervisor or root changing the mode would not:
/// the kernel's word on the peer (SO_PEERCRED) is checked on every accept.
pub fn owner_only(listener: UnixListener) -> impl Stream<Item = std::io::Result<UnixStream>> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    let owner = unsafe { libc::geteuid() };
    UnixListenerStream::new(listener).filter(move |conn| match conn {
        Ok(stream) => match stream.peer_cred() {
            Ok(cred) if cred.uid() == owner => true,
            Ok(cred) => {
                tracing::warn!(message = "Control connection refused: not the daemon's user.", uid = cred.uid());
                false
            }
            Err(error) => {
                tracing::warn!(message = "Control connection refused: no peer credentials.", %error);
                false
            }
        },
        Err(_) => true,
    })
}

/// A TLS certificate or key that cannot serve; errors name the section
/// (`control`, `web`) whose files they are.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The certificate file cannot be read.
    #[error("{section} TLS certificate {}", path.display())]
    Certificate {
        /// `control` or `web`.
        section: String,
        /// The file.
        path: PathBuf,
        /// Why.
        source: rustls::pki_types::pem::Error,
    },
    /// The certificate file holds no certificate.
    #[error("{section} TLS certificate {}: no certificate in the file", path.display())]
    NoCertificate {
        /// `control` or `web`.
        section: String,
        /// The file.
        path: PathBuf,
    },
    /// The key file cannot be read.
    #[error("{section} TLS key {}", path.display())]
    Key {
        /// `control` or `web`.
        section: String,
        /// The file.
        path: PathBuf,
        /// Why.
        source: rustls::pki_types::pem::Error,
    },
    /// The key is not the certificate's.
    #[error("{section} TLS: certificate and key do not match")]
    Mismatch {
        /// `control` or `web`.
        section: String,
        /// Why.
        source: rustls::Error,
    },
    /// TLS refused the settings.
    #[error(transparent)]
    Rustls(#[from] rustls::Error),
}

/// The server's TLS settings from a PEM certificate chain and key, for
/// gRPC (ALPN h2).
pub fn server_tls(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let mut config = server_tls_config(cert, key, "control")?;
    // gRPC is HTTP/2; clients such as grpcurl insist on ALPN saying so.
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// TLS settings from a PEM certificate chain and key, without ALPN; errors
/// name the `section` (`control`, `web`) whose files they are.
pub fn server_tls_config(cert: &Path, key: &Path, section: &str) -> Result<rustls::ServerConfig, TlsError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let section = section.to_string();
    let unreadable = |source| TlsError::Certificate { section: section.clone(), path: cert.to_path_buf(), source };
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_file_iter(cert).map_err(unreadable)?.collect::<Result<_, _>>().map_err(unreadable)?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate { section, path: cert.to_path_buf() });
    }
    let key = PrivateKeyDer::from_pem_file(key).map_err(|source| TlsError::Key {
        section: section.clone(),
        path: key.to_path_buf(),
        source,
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|source| TlsError::Mismatch { section, source })
}

/// A TLS connection accepted on the TCP listener.
pub struct TlsConn {
    inner: tokio_rustls::server::TlsStream<TcpStream>,
    peer: Option<std::net::SocketAddr>,
}

impl tonic::transport::server::Connected for TlsConn {
    type ConnectInfo = Option<std::net::SocketAddr>;
    fn connect_info(&self) -> Self::ConnectInfo {
        self.peer
    }
}

impl AsyncRead for TlsConn {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for TlsConn {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Accepts TCP connections and completes their TLS handshakes off the
/// accept loop (a slow client cannot block others), yielding the ones that
/// succeed.
pub fn tls_incoming(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
) -> impl Stream<Item = std::io::Result<TlsConn>> {
    let acceptor = tokio_rustls::TlsAcceptor::from(tls);
    let (tx, rx) = mpsc::channel(64);
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = match listener.accept().await {
                Ok(conn) => conn,
                Err(error) => {
                    tracing::warn!(message = "Control API: accept failed.", %error);
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            if tx.is_closed() {
                return;
            }
            let acceptor = acceptor.clone();
            let tx = tx.clone();
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                    Ok(Ok(inner)) => {
                        let _ = tx.send(Ok(TlsConn { inner, peer: Some(peer) })).await;
                    }
                    Ok(Err(error)) => tracing::warn!(message = "Control API: TLS handshake failed.", %peer, %error),
                    Err(_) => tracing::warn!(message = "Control API: TLS handshake timed out.", %peer),
                }
            });
        }
    });
    ReceiverStream::new(rx)
}
