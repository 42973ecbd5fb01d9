//! The client side of the control API, for the CLI verbs: the unix socket
//! by default, or TCP with TLS and a bearer token (`--addr`); and
//! [`Blocking`], the client of synchronous callers (the verbs, the
//! timeline), on a runtime of its own.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use hyper_util::rt::TokioIo;
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::rustls;
use tonic::metadata::errors::InvalidMetadataValue;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint, Uri};

use engine::dispatch::Decision;
use engine::Nanos;

use super::pb::control_client::ControlClient;
use super::pb::{Event, ListDecisionsRequest, WatchRequest};
use super::{decode, DecodeError};

/// Where `rocemend run` listens unless its config says otherwise, and where
/// the CLI looks unless told with `--socket` or `ROCEMEND_SOCKET`.
pub const DEFAULT_SOCKET: &str = "/var/lib/rocemend/control.sock";

/// Where the daemon's control API is.
#[derive(Debug, Clone)]
pub enum Address {
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

/// Why a call to the daemon failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// Nothing answered on the unix socket.
    #[error("connecting to the daemon at {} (is `rocemend run` running?): {cause}", path.display())]
    Socket {
        /// The socket.
        path: PathBuf,
        /// The innermost cause.
        cause: String,
    },
    /// Nothing answered on TCP, or TLS failed.
    #[error("connecting to the daemon at {addr} over TLS: {cause}")]
    Tcp {
        /// `host:port`.
        addr: String,
        /// The innermost cause.
        cause: String,
    },
    /// `--addr` has no port.
    #[error("--addr {addr:?}: expected host:port")]
    NoPort {
        /// As given.
        addr: String,
    },
    /// `--addr` names no host TLS can check.
    #[error("--addr {addr:?}: {host:?} is not a host name or address")]
    Host {
        /// As given.
        addr: String,
        /// Its host part.
        host: String,
        /// Why.
        source: rustls::pki_types::InvalidDnsNameError,
    },
    /// The CA file cannot be read.
    #[error("CA file {}", path.display())]
    Ca {
        /// The file.
        path: PathBuf,
        /// Why.
        source: rustls::pki_types::pem::Error,
    },
    /// The CA file holds no certificate.
    #[error("CA file {}: no certificate in it", path.display())]
    NoCa {
        /// The file.
        path: PathBuf,
    },
    /// TLS refused the settings.
    #[error(transparent)]
    Tls(#[from] rustls::Error),
    /// The token cannot travel in a header.
    #[error("the token contains characters a header cannot carry")]
    Token(#[source] InvalidMetadataValue),
    /// The channel could not be set up.
    #[error(transparent)]
    Transport(#[from] tonic::transport::Error),
    /// The daemon refused the request as wrongly put (INVALID_ARGUMENT: an
    /// unknown rule, a bad name): a usage error, found by the daemon.
    #[error("{0}")]
    Refused(String),
    /// The daemon answered with an error, in its own words.
    #[error("{0}")]
    Failed(String),
    /// A record of the reply cannot be read.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The client's runtime could not start.
    #[error(transparent)]
    Runtime(std::io::Error),
}

impl From<tonic::Status> for ClientError {
    /// The daemon's refusal in its own words.
    fn from(status: tonic::Status) -> ClientError {
        match status.code() {
            tonic::Code::InvalidArgument => ClientError::Refused(status.message().to_string()),
            _ => ClientError::Failed(status.message().to_string()),
        }
    }
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

/// Connects to the daemon at `address`.
pub async fn connect(address: &Address) -> Result<Client, ClientError> {
    match address {
        Address::Unix(path) => connect_unix(path).await,
        Address::Tcp { addr, ca, token } => connect_tcp(addr, ca, token.as_deref()).await,
    }
}

/// How long the client waits for its connection, and for a PING's answer
/// on it: a socket whose daemon accepts and never answers (hung, or a
/// refusal the kernel queued before the daemon saw it) ends the verb with
/// an error instead of waiting for ever. A live daemon answers PINGs
/// whatever its calls are doing, so a long `watch` is not cut.
const PATIENCE: std::time::Duration = std::time::Duration::from_secs(5);

/// `endpoint` with [`PATIENCE`]: a connect timeout and HTTP/2 keep-alive.
fn patient(endpoint: Endpoint) -> Endpoint {
    endpoint
        .connect_timeout(PATIENCE)
        .http2_keep_alive_interval(PATIENCE)
        .keep_alive_timeout(PATIENCE)
        .keep_alive_while_idle(true)
}

async fn connect_unix(path: &Path) -> Result<Client, ClientError> {
    let socket: PathBuf = path.to_path_buf();
    // The URI is required by the HTTP/2 layer and never resolved: the
    // connector below always dials the socket.
    let channel = patient(Endpoint::try_from("http://rocemend.control")?)
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?)) }
        }))
        .await
        .map_err(|e| ClientError::Socket { path: path.to_path_buf(), cause: root(&e) })?;
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

fn client_tls(ca: &Path) -> Result<Arc<rustls::ClientConfig>, ClientError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let unreadable = |source| ClientError::Ca { path: ca.to_path_buf(), source };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).map_err(unreadable)? {
        roots.add(cert.map_err(unreadable)?)?;
    }
    if roots.is_empty() {
        return Err(ClientError::NoCa { path: ca.to_path_buf() });
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

async fn connect_tcp(addr: &str, ca: &Path, token: Option<&str>) -> Result<Client, ClientError> {
    let addr = addr.strip_prefix("https://").unwrap_or(addr).trim_end_matches('/').to_string();
    let host = match addr.rsplit_once(':') {
        Some((h, _)) => h.trim_start_matches('[').trim_end_matches(']').to_string(),
        None => return Err(ClientError::NoPort { addr }),
    };
    let name = rustls::pki_types::ServerName::try_from(host.clone()).map_err(|source| ClientError::Host {
        addr: addr.clone(),
        host,
        source,
    })?;
    let connector = tokio_rustls::TlsConnector::from(client_tls(ca)?);
    let bearer = match token {
        Some(t) => Some(format!("Bearer {t}").parse().map_err(ClientError::Token)?),
        None => None,
    };
    let dial = addr.clone();
    // TLS is done here rather than by tonic so the same rustls (ring) the
    // rest of the workspace uses serves both ends; the URI is never dialed.
    let channel = patient(Endpoint::try_from(format!("http://{addr}"))?)
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let (dial, name, connector) = (dial.clone(), name.clone(), connector.clone());
            async move {
                let tcp = TcpStream::connect(&dial).await?;
                let tls = connector.connect(name, tcp).await?;
                Ok::<_, std::io::Error>(TokioIo::new(tls))
            }
        }))
        .await
        .map_err(|e| ClientError::Tcp { addr: addr.clone(), cause: root(&e) })?;
    Ok(ControlClient::with_interceptor(channel, Bearer(bearer)))
}

/// Every decision of the daemon's ledger decided since `since` (0: all),
/// oldest first.
pub async fn decisions(address: &Address, since: Nanos) -> Result<Vec<Decision>, ClientError> {
    let mut request = ListDecisionsRequest { since_ns: since, ..ListDecisionsRequest::default() };
    let mut client = connect(address).await?;
    let mut decisions = Vec::new();
    loop {
        let reply = client.list_decisions(request.clone()).await?.into_inner();
        for j in &reply.decisions_json {
            decisions.push(decode::<Decision>(j)?);
        }
        if reply.next_after.is_empty() {
            return Ok(decisions);
        }
        request.after = reply.next_after;
    }
}

/// A tokio runtime for a client called from synchronous code. Two workers:
/// the machine this daemon targets spends its cores on training, not on us.
///
/// Its threads block SIGPIPE. The CLI verbs run with SIGPIPE's default
/// disposition, so that a closed stdout ends them quietly; a daemon that
/// hangs up on a request (it refuses another user's connection) must not
/// kill them the same way before they can say so. A write on a socket raises
/// SIGPIPE in the thread that wrote, and the socket I/O runs on these
/// threads, so there it stays pending and the write fails with EPIPE.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().on_thread_start(block_sigpipe).build()
}

fn block_sigpipe() {
    // SAFETY: the set is initialised by sigemptyset before use, and
    // pthread_sigmask only changes the calling thread's mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// How a `Watch` stream ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchEnd {
    /// Ctrl-C.
    Interrupted,
    /// The daemon closed it: it is shutting down.
    Closed,
}

/// A connected client for synchronous code, with its own [`runtime`].
pub struct Blocking {
    runtime: tokio::runtime::Runtime,
    client: Client,
}

impl Blocking {
    /// Connects to the daemon at `address`.
    pub fn connect(address: &Address) -> Result<Blocking, ClientError> {
        let runtime = runtime().map_err(ClientError::Runtime)?;
        let client = runtime.block_on(connect(address))?;
        Ok(Blocking { runtime, client })
    }

    /// One call, waited for: `daemon.call(async |c| c.status(StatusRequest {}).await)`.
    pub fn call<T>(
        &mut self,
        call: impl AsyncFnOnce(&mut Client) -> Result<tonic::Response<T>, tonic::Status>,
    ) -> Result<T, ClientError> {
        Ok(self.runtime.block_on(call(&mut self.client))?.into_inner())
    }

    /// The daemon's events of `kinds` (all when empty), each handed to
    /// `on_event`, until the daemon closes the stream or Ctrl-C.
    pub fn watch(&mut self, kinds: Vec<String>, mut on_event: impl FnMut(Event)) -> Result<WatchEnd, ClientError> {
        let client = &mut self.client;
        self.runtime.block_on(async {
            let mut stream = client.watch(WatchRequest { kinds }).await?.into_inner();
            loop {
                let next = tokio::select! {
                    next = stream.message() => next?,
                    _ = tokio::signal::ctrl_c() => return Ok(WatchEnd::Interrupted),
                };
                match next {
                    Some(event) => on_event(event),
                    None => return Ok(WatchEnd::Closed),
                }
            }
        })
    }
}
