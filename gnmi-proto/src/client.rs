//! [`GnmiClient`]: a tonic gNMI client with TLS, credentials and timeouts.
//!
//! - **TLS**: a CA to trust and, for mutual TLS, a client certificate and
//!   key, all PEM ([`TlsConfig`]), through tonic's rustls (ring) support.
//! - **Credentials**: SONiC's telemetry server and Arista EOS take
//!   `username` and `password` as request metadata; every call carries them
//!   when configured.
//! - **Timeouts**: connecting is bounded by `connect_timeout`; each unary
//!   call (Capabilities, Get, Set) and the start of a Subscribe by
//!   `timeout`. A subscription's stream itself is unbounded: it is meant to
//!   last; its reader decides how long silence may be.
//! - **Set**: every operation of the request must come back as an
//!   `UpdateResult` with its path and operation; [`ClientError::SetResult`]
//!   names each one that did not.
//! - **Prefixes**: Get takes a prefix, [`SetOps`] has one, and a
//!   [`SubscriptionList`] carries its own; a target belongs there and only
//!   there (gNMI 2.2.2.1). [`crate::path::split_target`] moves one parsed
//!   from `target@` into a prefix, [`crate::sonic::PathStyle`] builds SONiC's.

// `ClientError::Status` carries tonic's `Status` whole, so callers can read
// its code, message and details; it is large, and errors are rare.
#![allow(clippy::result_large_err)]

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::AsciiMetadataValue;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};
use tonic::{Request, Status, Streaming};

use crate::gnmi::g_nmi_client::GNmiClient;
use crate::gnmi::update_result::Operation;
use crate::gnmi::{
    CapabilityRequest, CapabilityResponse, Encoding, GetRequest, GetResponse, Path, Poll, SetRequest, SetResponse,
    SubscribeRequest, SubscribeResponse, SubscriptionList, Update,
};
use crate::path::{join, path_to_string};

/// Poll and subscription requests a client may queue before it waits: a
/// subscription sends one list and then a poll at a time.
const REQUEST_QUEUE: usize = 4;

/// TLS settings, PEM-encoded.
#[derive(Debug, Clone, Default)]
pub struct TlsConfig {
    /// The CA that signed the target's certificate; the system roots when
    /// `None` (tonic's rustls has none built in, so give it).
    pub ca_pem: Option<Vec<u8>>,
    /// Client certificate and key, for mutual TLS.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
    /// The name to check the target's certificate against, when it is not
    /// the host in the address.
    pub domain: Option<String>,
}

impl TlsConfig {
    /// Reads the PEM files of a switch's TLS settings, as every config
    /// spells them (the inventory's `tls = { ca_file, cert_file, key_file,
    /// domain }`): the CA to trust, and for mutual TLS the client
    /// certificate and its key, which go together.
    pub fn from_files(
        ca_file: &std::path::Path,
        cert_file: Option<&std::path::Path>,
        key_file: Option<&std::path::Path>,
        domain: Option<String>,
    ) -> Result<TlsConfig, TlsFileError> {
        let read = |field: &'static str, path: &std::path::Path| {
            std::fs::read(path).map_err(|source| TlsFileError::Read { field, path: path.to_path_buf(), source })
        };
        let identity = match (cert_file, key_file) {
            (Some(cert), Some(key)) => Some((read("cert_file", cert)?, read("key_file", key)?)),
            (None, None) => None,
            _ => return Err(TlsFileError::Unpaired),
        };
        Ok(TlsConfig { ca_pem: Some(read("ca_file", ca_file)?), identity, domain })
    }
}

/// Whether `status` says a call's deadline passed: the server's DeadlineExceeded, or the
/// Cancelled that tonic's client gives a call whose `grpc-timeout` ran out before an answer.
fn deadline_passed(status: &Status) -> bool {
    match status.code() {
        tonic::Code::DeadlineExceeded => true,
        tonic::Code::Cancelled => status.message() == "Timeout expired",
        _ => false,
    }
}

/// Why a switch's TLS settings could not be read ([`TlsConfig::from_files`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsFileError {
    /// A PEM file cannot be read.
    #[error("{field} {}: {source}", path.display())]
    Read {
        /// The setting that names it: `ca_file`, `cert_file` or `key_file`.
        field: &'static str,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A client certificate without its key, or a key without its
    /// certificate.
    #[error("cert_file and key_file go together")]
    Unpaired,
}

/// How to reach one target.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// `host:port`, or a URI (`http://…`, `https://…`).
    pub address: String,
    /// TLS, or plain HTTP/2 when `None`.
    pub tls: Option<TlsConfig>,
    /// Username and password sent as `username`/`password` metadata.
    pub credentials: Option<(String, String)>,
    /// Bound on establishing the connection.
    pub connect_timeout: Duration,
    /// Bound on each unary call and on starting a subscription.
    pub timeout: Duration,
}

impl ClientConfig {
    /// A plain-text target at `address` with 5 s / 10 s timeouts.
    pub fn plain(address: impl Into<String>) -> ClientConfig {
        ClientConfig {
            address: address.into(),
            tls: None,
            credentials: None,
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(10),
        }
    }
}

/// A gNMI call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The address is not a valid URI.
    #[error("invalid address {address:?}: {problem}")]
    Address {
        /// The address.
        address: String,
        /// What is wrong.
        problem: String,
    },
    /// The TLS settings were refused.
    #[error("TLS settings for {address}: {problem}")]
    Tls {
        /// The address.
        address: String,
        /// What is wrong.
        problem: String,
    },
    /// The username or password cannot be sent as metadata.
    #[error("credentials: {0}")]
    Credentials(String),
    /// The connection could not be established.
    #[error("connecting to {address}: {problem}")]
    Connect {
        /// The address.
        address: String,
        /// The transport's error, with its causes.
        problem: String,
        /// The peer refused the connection (nothing listens on the port,
        /// e.g. a telemetry server restarting): the host is up and answers
        /// at once, so retrying soon is cheap and likely to help.
        refused: bool,
    },
    /// A call did not finish in time.
    #[error("{call} to {address} timed out after {after:?}")]
    Timeout {
        /// Which call.
        call: &'static str,
        /// The address.
        address: String,
        /// The bound.
        after: Duration,
    },
    /// The target answered with an error status.
    #[error("{call} to {address}: {} ({:?})", status_text(status), status.code())]
    Status {
        /// Which call.
        call: &'static str,
        /// The address.
        address: String,
        /// The status.
        status: Status,
    },
    /// A Set succeeded but its results do not match the request.
    #[error("Set to {address}: {}", problems.join("; "))]
    SetResult {
        /// The address.
        address: String,
        /// One line per path that is missing, unexpected or of the wrong operation.
        problems: Vec<String>,
    },
    /// The subscription's request stream was closed.
    #[error("the subscription to {0} is closed")]
    Closed(String),
}

impl ClientError {
    /// The gRPC status code, when the target sent one.
    pub fn code(&self) -> Option<tonic::Code> {
        match self {
            ClientError::Status { status, .. } => Some(status.code()),
            _ => None,
        }
    }

    /// Whether the peer refused the connection ([`ClientError::Connect`]'s
    /// `refused`).
    pub fn is_refused(&self) -> bool {
        matches!(self, ClientError::Connect { refused: true, .. })
    }
}

/// The operations of one Set, applied in the order delete, replace, update
/// (gNMI spec 3.4.3).
#[derive(Debug, Clone, Default)]
pub struct SetOps {
    /// Prefix of every path.
    pub prefix: Option<Path>,
    /// Paths to delete.
    pub delete: Vec<Path>,
    /// Paths to replace with a value.
    pub replace: Vec<Update>,
    /// Paths to update with a value.
    pub update: Vec<Update>,
}

/// A gNMI client of one target.
#[derive(Debug, Clone)]
pub struct GnmiClient {
    inner: GNmiClient<Channel>,
    address: String,
    credentials: Option<(AsciiMetadataValue, AsciiMetadataValue)>,
    timeout: Duration,
}

/// A running subscription: the responses, and a way to poll (POLL mode).
#[derive(Debug)]
pub struct Subscription {
    requests: mpsc::Sender<SubscribeRequest>,
    responses: Streaming<SubscribeResponse>,
    address: String,
}

impl Subscription {
    /// The next response; `Ok(None)` when the target ended the stream.
    pub async fn message(&mut self) -> Result<Option<SubscribeResponse>, ClientError> {
        self.responses.message().await.map_err(|status| ClientError::Status {
            call: "Subscribe",
            address: self.address.clone(),
            status,
        })
    }

    /// Asks a POLL subscription for its values.
    pub async fn poll(&self) -> Result<(), ClientError> {
        let poll = SubscribeRequest {
            request: Some(crate::gnmi::subscribe_request::Request::Poll(Poll {})),
            extension: vec![],
        };
        self.requests.send(poll).await.map_err(|_| ClientError::Closed(self.address.clone()))
    }

    /// The responses as a stream, ending when the target ends it. The
    /// request side stays open as long as the stream lives: a STREAM
    /// subscription whose client half-closes may be ended by some targets.
    pub fn into_stream(self) -> SubscriptionStream {
        SubscriptionStream { _requests: self.requests, responses: self.responses, address: self.address }
    }
}

/// A [`Subscription`]'s responses as a [`tokio_stream::Stream`] (see
/// [`Subscription::into_stream`]).
#[derive(Debug)]
pub struct SubscriptionStream {
    /// Kept, unused, so the request stream is not half-closed.
    _requests: mpsc::Sender<SubscribeRequest>,
    responses: Streaming<SubscribeResponse>,
    address: String,
}

impl tokio_stream::Stream for SubscriptionStream {
    type Item = Result<SubscribeResponse, ClientError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let this = &mut *self;
        std::pin::Pin::new(&mut this.responses).poll_next(cx).map(|next| {
            next.map(|r| {
                r.map_err(|status| ClientError::Status { call: "Subscribe", address: this.address.clone(), status })
            })
        })
    }
}

impl GnmiClient {
    /// Connects to the target.
    pub async fn connect(config: &ClientConfig) -> Result<GnmiClient, ClientError> {
        let address = config.address.clone();
        let uri = if address.contains("://") {
            address.clone()
        } else if config.tls.is_some() {
            format!("https://{address}")
        } else {
            format!("http://{address}")
        };
        let mut endpoint = Endpoint::from_shared(uri)
            .map_err(|e| ClientError::Address { address: address.clone(), problem: e.to_string() })?
            .connect_timeout(config.connect_timeout)
            .tcp_nodelay(true)
            // A silent peer is noticed by HTTP/2 pings, not only by TCP.
            .http2_keep_alive_interval(Duration::from_secs(10))
            .keep_alive_timeout(Duration::from_secs(10));
        if let Some(tls) = &config.tls {
            let mut settings = ClientTlsConfig::new();
            if let Some(ca) = &tls.ca_pem {
                settings = settings.ca_certificate(Certificate::from_pem(ca));
            }
            if let Some((cert, key)) = &tls.identity {
                settings = settings.identity(Identity::from_pem(cert, key));
            }
            if let Some(domain) = &tls.domain {
                settings = settings.domain_name(domain.clone());
            }
            endpoint = endpoint
                .tls_config(settings)
                .map_err(|e| ClientError::Tls { address: address.clone(), problem: error_chain(&e) })?;
        }
        let credentials = match &config.credentials {
            None => None,
            Some((user, password)) => {
                let user = AsciiMetadataValue::try_from(user.as_str())
                    .map_err(|_| ClientError::Credentials("the username is not printable ASCII".into()))?;
                let password = AsciiMetadataValue::try_from(password.as_str())
                    .map_err(|_| ClientError::Credentials("the password is not printable ASCII".into()))?;
                Some((user, password))
            }
        };
        // The connect timeout bounds TCP; the TLS and HTTP/2 handshakes of a
        // target that accepts and never speaks are bounded here.
        let channel = match tokio::time::timeout(config.connect_timeout, endpoint.connect()).await {
            Err(_) => {
                return Err(ClientError::Timeout { call: "connect", address, after: config.connect_timeout });
            }
            Ok(Err(e)) => {
                return Err(ClientError::Connect { address, problem: error_chain(&e), refused: is_refused(&e) });
            }
            Ok(Ok(channel)) => channel,
        };
        Ok(GnmiClient {
            inner: GNmiClient::new(channel).max_decoding_message_size(64 << 20),
            address,
            credentials,
            timeout: config.timeout,
        })
    }

    /// The target's address as configured.
    pub fn address(&self) -> &str {
        &self.address
    }

    fn request<T>(&self, message: T) -> Request<T> {
        let mut request = Request::new(message);
        if let Some((user, password)) = &self.credentials {
            request.metadata_mut().insert("username", user.clone());
            request.metadata_mut().insert("password", password.clone());
        }
        request.set_timeout(self.timeout);
        request
    }

    async fn bounded<T>(
        &self,
        call: &'static str,
        fut: impl std::future::Future<Output = Result<tonic::Response<T>, Status>>,
    ) -> Result<T, ClientError> {
        match tokio::time::timeout(self.timeout, fut).await {
            Err(_) => Err(ClientError::Timeout { call, address: self.address.clone(), after: self.timeout }),
            // The request's own deadline (`set_timeout`) runs out at the same moment as ours:
            // the server says DeadlineExceeded, or tonic's client cancels the call with
            // "Timeout expired" first. Either way it is this call's timeout, not a refusal.
            Ok(Err(status)) if deadline_passed(&status) => {
                Err(ClientError::Timeout { call, address: self.address.clone(), after: self.timeout })
            }
            Ok(Err(status)) => Err(ClientError::Status { call, address: self.address.clone(), status }),
            Ok(Ok(response)) => Ok(response.into_inner()),
        }
    }

    /// Capabilities: the target's models, encodings and gNMI version.
    pub async fn capabilities(&mut self) -> Result<CapabilityResponse, ClientError> {
        let request = self.request(CapabilityRequest::default());
        let mut inner = self.inner.clone();
        self.bounded("Capabilities", inner.capabilities(request)).await
    }

    /// Get `paths` under `prefix` in `encoding`.
    pub async fn get(
        &mut self,
        prefix: Option<Path>,
        paths: Vec<Path>,
        encoding: Encoding,
    ) -> Result<GetResponse, ClientError> {
        let request = self.request(GetRequest { prefix, path: paths, encoding: encoding as i32, ..Default::default() });
        let mut inner = self.inner.clone();
        self.bounded("Get", inner.get(request)).await
    }

    /// Set, then check that every operation came back with its path and
    /// operation.
    pub async fn set(&mut self, ops: SetOps) -> Result<SetResponse, ClientError> {
        let request = SetRequest {
            prefix: ops.prefix.clone(),
            delete: ops.delete.clone(),
            replace: ops.replace.clone(),
            update: ops.update.clone(),
            extension: vec![],
        };
        let request = self.request(request);
        let mut inner = self.inner.clone();
        let response = self.bounded("Set", inner.set(request)).await?;
        let problems = check_set_results(&ops, &response);
        if problems.is_empty() {
            Ok(response)
        } else {
            Err(ClientError::SetResult { address: self.address.clone(), problems })
        }
    }

    /// Starts a subscription with `list`.
    pub async fn subscribe(&mut self, list: SubscriptionList) -> Result<Subscription, ClientError> {
        let (requests, rx) = mpsc::channel(REQUEST_QUEUE);
        let first = SubscribeRequest {
            request: Some(crate::gnmi::subscribe_request::Request::Subscribe(list)),
            extension: vec![],
        };
        requests.send(first).await.map_err(|_| ClientError::Closed(self.address.clone()))?;
        let mut request = Request::new(ReceiverStream::new(rx));
        if let Some((user, password)) = &self.credentials {
            request.metadata_mut().insert("username", user.clone());
            request.metadata_mut().insert("password", password.clone());
        }
        let mut inner = self.inner.clone();
        let responses = self.bounded("Subscribe", inner.subscribe(request)).await?;
        Ok(Subscription { requests, responses, address: self.address.clone() })
    }
}

/// Every operation of `ops` must appear in the response, with its path
/// (joined with the prefixes) and operation, and nothing else may.
pub fn check_set_results(ops: &SetOps, response: &SetResponse) -> Vec<String> {
    let mut expected: Vec<(String, Operation)> = Vec::new();
    let full = |p: &Path| path_to_string(&join(ops.prefix.as_ref(), p));
    expected.extend(ops.delete.iter().map(|p| (full(p), Operation::Delete)));
    for (updates, op) in [(&ops.replace, Operation::Replace), (&ops.update, Operation::Update)] {
        expected.extend(updates.iter().map(|u| (full(&u.path.clone().unwrap_or_default()), op)));
    }
    let mut got: Vec<(String, Operation)> = response
        .response
        .iter()
        .map(|r| {
            let path = path_to_string(&join(response.prefix.as_ref(), &r.path.clone().unwrap_or_default()));
            (path, Operation::try_from(r.op).unwrap_or(Operation::Invalid))
        })
        .collect();
    let mut problems = Vec::new();
    for (path, op) in expected {
        if let Some(i) = got.iter().position(|(p, o)| *p == path && *o == op) {
            got.remove(i);
        } else if let Some(i) = got.iter().position(|(p, _)| *p == path) {
            let (_, other) = got.remove(i);
            problems.push(format!(
                "{path}: asked for {}, the target reports {}",
                op.as_str_name(),
                other.as_str_name()
            ));
        } else {
            problems.push(format!("{path}: {} has no result", op.as_str_name()));
        }
    }
    for (path, op) in got {
        problems.push(format!("{path}: unexpected {} result", op.as_str_name()));
    }
    problems
}

/// Whether an I/O error in `error`'s chain is a refused connection.
fn is_refused(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut source = Some(error);
    while let Some(e) = source {
        if e.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused) {
            return true;
        }
        source = e.source();
    }
    false
}

/// An error with its sources, so "transport error" says what failed.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        text.push_str(": ");
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// A status's message, or what an empty one means: sonic-gnmi refuses a wrong username or
/// password with UNAUTHENTICATED and no text at all (`basicAuth.go`).
fn status_text(status: &Status) -> String {
    match (status.code(), status.message()) {
        (tonic::Code::Unauthenticated, "") => "the username/password were refused".to_string(),
        (_, message) => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deadline_that_passed_is_a_timeout_whoever_saw_it_first() {
        assert!(deadline_passed(&Status::deadline_exceeded("context deadline exceeded")));
        assert!(deadline_passed(&Status::cancelled("Timeout expired")));
        assert!(!deadline_passed(&Status::cancelled("the client went away")), "another cancel is not a timeout");
        assert!(!deadline_passed(&Status::not_found("Timeout expired")), "only tonic's Cancelled says it");
    }
    use crate::gnmi::UpdateResult;
    use crate::path::parse_path;

    fn result(path: &str, op: Operation) -> UpdateResult {
        UpdateResult { path: Some(parse_path(path).unwrap()), op: op as i32, ..Default::default() }
    }

    #[test]
    fn tls_files_are_read_and_a_certificate_goes_with_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let (ca, cert, key) = (dir.path().join("ca.pem"), dir.path().join("c.pem"), dir.path().join("k.pem"));
        for (path, text) in [(&ca, "CA"), (&cert, "CERT"), (&key, "KEY")] {
            std::fs::write(path, text).unwrap();
        }
        let tls = TlsConfig::from_files(&ca, Some(&cert), Some(&key), Some("leaf01.test".into())).unwrap();
        assert_eq!(tls.ca_pem.as_deref(), Some(&b"CA"[..]));
        assert_eq!(tls.identity, Some((b"CERT".to_vec(), b"KEY".to_vec())));
        assert_eq!(tls.domain.as_deref(), Some("leaf01.test"));
        assert!(TlsConfig::from_files(&ca, None, None, None).unwrap().identity.is_none());
        let unpaired = TlsConfig::from_files(&ca, Some(&cert), None, None).unwrap_err();
        assert_eq!(unpaired.to_string(), "cert_file and key_file go together");
        let missing = dir.path().join("none.pem");
        let err = TlsConfig::from_files(&ca, Some(&cert), Some(&missing), None).unwrap_err();
        assert!(matches!(&err, TlsFileError::Read { field: "key_file", .. }), "{err:?}");
        assert!(err.to_string().starts_with(&format!("key_file {}: ", missing.display())), "{err}");
    }

    #[test]
    fn set_results_are_matched_per_path_and_operation() {
        let ops = SetOps {
            prefix: Some(parse_path("sonic-db:/CONFIG_DB").unwrap()),
            delete: vec![parse_path("/PFC_WD/Ethernet0/action").unwrap()],
            update: vec![Update {
                path: Some(parse_path("/WRED_PROFILE/P/ecn").unwrap()),
                val: Some(crate::value::string("ecn_all")),
                ..Default::default()
            }],
            ..Default::default()
        };
        let ok = SetResponse {
            prefix: Some(parse_path("sonic-db:/CONFIG_DB").unwrap()),
            response: vec![
                result("/PFC_WD/Ethernet0/action", Operation::Delete),
                result("/WRED_PROFILE/P/ecn", Operation::Update),
            ],
            ..Default::default()
        };
        assert!(check_set_results(&ops, &ok).is_empty());

        let wrong = SetResponse {
            prefix: None,
            response: vec![
                result("sonic-db:/CONFIG_DB/PFC_WD/Ethernet0/action", Operation::Replace),
                result("sonic-db:/CONFIG_DB/WRED_PROFILE/Q/ecn", Operation::Update),
            ],
            ..Default::default()
        };
        assert_eq!(
            check_set_results(&ops, &wrong),
            [
                "sonic-db:/CONFIG_DB/PFC_WD/Ethernet0/action: asked for DELETE, the target reports REPLACE",
                "sonic-db:/CONFIG_DB/WRED_PROFILE/P/ecn: UPDATE has no result",
                "sonic-db:/CONFIG_DB/WRED_PROFILE/Q/ecn: unexpected UPDATE result",
            ]
        );
    }
}
