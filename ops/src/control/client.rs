//! The client side of the control API, for the CLI verbs: the unix socket
//! by default, or TCP with TLS and a bearer token (`--addr`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::rustls;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint, Uri};

use super::pb::control_client::ControlClient;

/// Where `rocemend run` listens unless its config says otherwise, and where
/// the CLI looks unless told with `--socket` or `ROCEMEND_SOCKET`.
pub const DEFAULT_SOCKET: &str = "/var/lib/rocemend/control.sock";

/// Where the daemon is.
#[derive(Debug, Clone)]
pub enum Target {
    /// Its unix socket.
    Unix(PathBuf),
    /// Its TCP listener.
    Tcp {
        /// `host:port`.
        addr: String,
        /// PEM CA certificate(s) to trust for the daemon's certificate.
        ca: PathBuf,
        /// The bearer token, if one is given.
        token: Option<String>,
    },
}

/// Adds `authorization: Bearer …` to every call when there is a token.
#[derive(Clone)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl tonic::service::Interceptor for Bearer {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(v) = &self.0 {
            request.metadata_mut().insert("authorization", v.clone());
        }
        Ok(request)
    }
}

/// A connected client.
pub type Client = ControlClient<InterceptedService<Channel, Bearer>>;

/// Connects to the daemon at `target`.
pub async fn connect(target: &Target) -> anyhow::Result<Client> {
    match target {
        Target::Unix(path) => connect_unix(path).await,
        Target::Tcp { addr, ca, token } => connect_tcp(addr, ca, token.as_deref()).await,
    }
}

async fn connect_unix(path: &Path) -> anyhow::Result<Client> {
    let socket: PathBuf = path.to_path_buf();
    // The URI is required by the HTTP/2 layer and never resolved: the
    // connector below always dials the socket.
    let channel = Endpoint::try_from("http://rocemend.control")?
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?)) }
        }))
        .await
        .map_err(|e| {
            anyhow::anyhow!("connecting to the daemon at {} (is `rocemend run` running?): {}", path.display(), root(&e))
        })?;
    Ok(ControlClient::with_interceptor(channel, Bearer(None)))
}

/// What went wrong, once. tonic's transport error says "transport error"
/// and wraps the connector's error, which shows the `io::Error` it wraps
/// and then has it as its source too: printed as a chain, the OS error
/// came twice. The innermost source alone names the cause.
fn root(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

fn client_tls(ca: &Path) -> anyhow::Result<Arc<rustls::ClientConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).with_context(|| format!("CA file {}", ca.display()))? {
        roots.add(cert.with_context(|| format!("CA file {}", ca.display()))?)?;
    }
    if roots.is_empty() {
        anyhow::bail!("CA file {}: no certificate in it", ca.display());
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

async fn connect_tcp(addr: &str, ca: &Path, token: Option<&str>) -> anyhow::Result<Client> {
    let addr = addr.strip_prefix("https://").unwrap_or(addr).trim_end_matches('/').to_string();
    let host = match addr.rsplit_once(':') {
        Some((h, _)) => h.trim_start_matches('[').trim_end_matches(']').to_string(),
        None => anyhow::bail!("--addr {addr:?}: expected host:port"),
    };
    let name = rustls::pki_types::ServerName::try_from(host.clone())
        .with_context(|| format!("--addr {addr:?}: {host:?} is not a host name or address"))?;
    let connector = tokio_rustls::TlsConnector::from(client_tls(ca)?);
    let bearer = match token {
        Some(t) => Some(format!("Bearer {t}").parse().context("the token contains characters a header cannot carry")?),
        None => None,
    };
    let dial = addr.clone();
    // TLS is done here rather than by tonic so the same rustls (ring) the
    // rest of the workspace uses serves both ends; the URI is never dialed.
    let channel = Endpoint::try_from(format!("http://{addr}"))?
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let (dial, name, connector) = (dial.clone(), name.clone(), connector.clone());
            async move {
                let tcp = TcpStream::connect(&dial).await?;
                let tls = connector.connect(name, tcp).await?;
                Ok::<_, std::io::Error>(TokioIo::new(tls))
            }
        }))
        .await
        .map_err(|e| anyhow::anyhow!("connecting to the daemon at {addr} over TLS: {}", root(&e)))?;
    Ok(ControlClient::with_interceptor(channel, Bearer(bearer)))
}
