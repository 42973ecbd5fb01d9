//! The one HTTP client of rocemend: hyper's HTTP/1.1 client connection
//! over a tokio `TcpStream`, or over rustls for `https`, behind a small API
//! that says what the callers need — one request, one bounded answer, all
//! under one timeout.
//!
//! Who uses it: the Prometheus sensor's scrapes, the actuators that talk
//! to an HTTP API (Alertmanager and webhooks, the Kubernetes API server),
//! and the remote-write sender (`ops::remote_write`, a request every
//! `batch_send_deadline` or 2000 samples). Each sends a few requests per
//! interval or per incident, one connection each (`Connection: close`), so pooling and HTTP/2 buy
//! nothing; hyper does the wire format (chunked bodies, keep-alive
//! refusal, header limits), this module the limits and the errors.
//! Header names go out in title case (`Content-Type`), as curl and most
//! clients write them.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderMap, HeaderName, HeaderValue};
use hyper::http::uri::InvalidUri;
use hyper::Uri;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio_rustls::rustls;
use tokio_rustls::TlsConnector;

/// A parsed `http://` or `https://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// Whether it is `https`.
    pub https: bool,
    /// The host (a name or an address; IPv6 without brackets).
    pub host: String,
    /// The port (80 or 443 when not given).
    pub port: u16,
    /// The path and query, starting with `/`, without a trailing `/` unless it is `/`.
    pub path: String,
}

impl Url {
    /// Parses `text` with [`hyper::Uri`]; only `http` and `https`, no user
    /// info, no fragment (which `Uri` would accept or drop silently), and a
    /// port that is a number when a `:` says one is given.
    pub fn parse(text: &str) -> Result<Url, UrlError> {
        let url = || text.to_string();
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) || text.contains('#') {
            return Err(UrlError::Unsupported { url: url() });
        }
        let uri: Uri =
            text.parse().map_err(|e: InvalidUri| UrlError::Malformed { url: url(), reason: e.to_string() })?;
        let https = match uri.scheme_str() {
            Some("http") => false,
            Some("https") => true,
            _ => return Err(UrlError::NotHttp { url: url() }),
        };
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
        if authority.contains('@') {
            return Err(UrlError::Unsupported { url: url() });
        }
        // `Uri` keeps IPv6 hosts in brackets, and reads a port that is no
        // u16 ("h:99999", "h:") as none: what follows the host says.
        let bracketed = uri.host().unwrap_or_default();
        let host = bracketed.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(bracketed);
        if host.is_empty() {
            return Err(UrlError::NoHost { url: url() });
        }
        let port = match authority.get(bracketed.len()..).and_then(|rest| rest.strip_prefix(':')) {
            Some(p) => p.parse().map_err(|_| UrlError::Port { url: url(), port: p.to_string() })?,
            None if https => 443,
            None => 80,
        };
        let path = match uri.path_and_query().map(|p| p.as_str()).unwrap_or("/") {
            p if p.starts_with('/') => p.to_string(),
            query => format!("/{query}"),
        };
        let path = if path.len() > 1 { path.trim_end_matches('/').to_string() } else { path };
        Ok(Url { https, host: host.to_string(), port, path })
    }

    /// This URL with `suffix` (starting with `/`) appended to its path.
    pub fn join(&self, suffix: &str) -> Url {
        let base = if self.path == "/" { "" } else { &self.path };
        Url { path: format!("{base}{suffix}"), ..self.clone() }
    }

    /// `host[:port]` as the `Host` header carries it: the port only when it
    /// is not the scheme's default, IPv6 in brackets.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        match (self.https, self.port) {
            (false, 80) | (true, 443) => host,
            _ => format!("{host}:{}", self.port),
        }
    }
}

impl std::fmt::Display for Url {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}://{}{}", if self.https { "https" } else { "http" }, self.authority(), self.path)
    }
}

/// A URL this client cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    /// Not `http://` or `https://`.
    #[error("URL {url:?} does not start with http:// or https://")]
    NotHttp {
        /// The URL as given.
        url: String,
    },
    /// User info, a fragment or white space: nothing a request sends.
    #[error("URL {url:?} has user info, a fragment or white space")]
    Unsupported {
        /// The URL as given.
        url: String,
    },
    /// No host to connect to.
    #[error("URL {url:?} has no host")]
    NoHost {
        /// The URL as given.
        url: String,
    },
    /// A port is given that is no port.
    #[error("URL {url:?}: port {port:?} is not a number from 0 to 65535")]
    Port {
        /// The URL as given.
        url: String,
        /// The port as given.
        port: String,
    },
    /// Not a URI at all ([`hyper::Uri`] refused it).
    #[error("URL {url:?}: {reason}")]
    Malformed {
        /// The URL as given.
        url: String,
        /// What `Uri` found wrong.
        reason: String,
    },
}

/// A CA file that cannot be trusted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The file cannot be read, or a certificate in it is not PEM.
    #[error("{}: {reason}", path.display())]
    Read {
        /// The CA file.
        path: PathBuf,
        /// The I/O or PEM error.
        reason: String,
    },
    /// The file holds no certificate.
    #[error("{} holds no certificate", path.display())]
    Empty {
        /// The CA file.
        path: PathBuf,
    },
    /// rustls refused a certificate, or has no protocol version to offer.
    #[error("{}: {source}", path.display())]
    Rustls {
        /// The CA file.
        path: PathBuf,
        /// Why.
        source: rustls::Error,
    },
}

/// One request: method, URL, extra headers, body.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `GET`, `POST`, `PATCH`, …
    pub method: &'a str,
    /// Where.
    pub url: &'a Url,
    /// Headers besides `Host`, `Content-Length` and `Connection`, in order.
    pub headers: Vec<(&'a str, String)>,
    /// The body; empty for none.
    pub body: &'a [u8],
}

/// An answer's status and headers, when its body went to a caller's
/// buffer ([`Client::send_into`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
}

impl Head {
    /// The value of header `name`, if it is there and is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_text(&self.headers, name)
    }
}

fn header_text<'h>(headers: &'h HeaderMap, name: &str) -> Option<&'h str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The capacity a reused body buffer keeps however small the answers get
/// ([`Client::send_into`]).
const KEPT_BODY: usize = 64 << 10;

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, decoded from `chunked` if it was.
    pub body: Vec<u8>,
}

impl Response {
    /// Whether the status is 2xx.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The value of header `name`, if it is there and is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_text(&self.headers, name)
    }

    /// The start of the body as text, for error messages.
    pub fn snippet(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let text = text.trim();
        let mut end = text.len().min(300);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text[..end].to_string()
    }
}

/// Why a request got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HttpError {
    /// The TCP connection or the TLS handshake could not be made.
    #[error("{0}")]
    Connect(String),
    /// The exchange failed mid-way, or the answer is not HTTP/1.x.
    #[error("{0}")]
    Io(String),
    /// No complete answer within the timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The answer's body is larger than the client accepts.
    #[error("the response is above {0} bytes")]
    TooLarge(usize),
    /// The request itself cannot be sent (a bad header, say).
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl HttpError {
    /// A short name of the kind, for health reports and metrics labels.
    pub fn kind(&self) -> &'static str {
        match self {
            HttpError::Connect(_) => "connect",
            HttpError::Io(_) => "io",
            HttpError::Timeout(_) => "timeout",
            HttpError::TooLarge(_) | HttpError::Invalid(_) => "http",
        }
    }
}

/// A client: how `https` is checked, and how large an answer may be.
#[derive(Clone)]
pub struct Client {
    tls: Option<TlsConnector>,
    max_response: usize,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client").field("tls", &self.tls.is_some()).field("max_response", &self.max_response).finish()
    }
}

impl Client {
    /// A client of plain `http://` URLs, reading answers of at most
    /// `max_response` bytes of body.
    pub fn plain(max_response: usize) -> Client {
        Client { tls: None, max_response }
    }

    /// A client that also speaks `https`, trusting only the CA certificates
    /// in the PEM file `ca`.
    pub fn with_ca(ca: &Path, max_response: usize) -> Result<Client, TlsError> {
        Ok(Client { tls: Some(tls_connector(ca)?), max_response })
    }

    /// Sends `request` and reads the answer, all within `timeout`.
    pub async fn send(&self, request: &Request<'_>, timeout: Duration) -> Result<Response, HttpError> {
        let mut body = Vec::new();
        let Head { status, headers } = self.send_into(request, timeout, &mut body).await?;
        Ok(Response { status, headers, body })
    }

    /// Sends `request` and reads the answer's body into `body` (cleared
    /// first), all within `timeout`. For callers that repeat a large GET
    /// (a scrape of a 100k-series page is ~5 MB): the buffer is kept and
    /// refilled in place, one copy from the socket's buffer and no fresh
    /// pages for the kernel to fault in on every request. A buffer that
    /// grew for one large answer is given back when a later one is less
    /// than half its size. On an error `body` holds what was read so far.
    pub async fn send_into(
        &self,
        request: &Request<'_>,
        timeout: Duration,
        body: &mut Vec<u8>,
    ) -> Result<Head, HttpError> {
        body.clear();
        let result = tokio::time::timeout(timeout, self.exchange(request, body))
            .await
            .map_err(|_| HttpError::Timeout(timeout))?;
        if body.capacity() > 2 * body.len().max(KEPT_BODY) {
            body.shrink_to(body.len().max(KEPT_BODY));
        }
        result
    }

    async fn exchange(&self, request: &Request<'_>, body: &mut Vec<u8>) -> Result<Head, HttpError> {
        let url = request.url;
        let stream = TcpStream::connect((url.host.as_str(), url.port))
            .await
            .map_err(|e| HttpError::Connect(format!("connecting to {}:{}: {e}", url.host, url.port)))?;
        if !url.https {
            return self.over(TokioIo::new(stream), request, body).await;
        }
        let tls = self
            .tls
            .as_ref()
            .ok_or_else(|| HttpError::Connect(format!("{url}: https needs a CA to check the server against")))?;
        let name = rustls::pki_types::ServerName::try_from(url.host.clone())
            .map_err(|e| HttpError::Connect(format!("{url}: {e}")))?;
        let stream = tls
            .connect(name, stream)
            .await
            .map_err(|e| HttpError::Connect(format!("TLS handshake with {url}: {e}")))?;
        self.over(TokioIo::new(stream), request, body).await
    }

    async fn over<S>(&self, io: S, request: &Request<'_>, body: &mut Vec<u8>) -> Result<Head, HttpError>
    where
        S: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    {
        let what = || format!("{} {}", request.method, request.url);
        let (mut sender, connection) = hyper::client::conn::http1::Builder::new()
            .title_case_headers(true)
            .handshake(io)
            .await
            .map_err(|e| HttpError::Io(format!("{}: {e}", what())))?;
        // The connection is driven beside the request; with `Connection:
        // close` it ends after the answer.
        let driver = tokio::spawn(connection);
        let result = async {
            let response = sender
                .send_request(hyper_request(request)?)
                .await
                .map_err(|e| HttpError::Io(format!("{}: {e}", what())))?;
            let status = response.status().as_u16();
            let (parts, mut incoming) = response.into_parts();
            let too_large = HttpError::TooLarge(self.max_response);
            // A declared length is checked before anything is read, and
            // room for it is made at once instead of by doubling.
            let declared = parts.headers.get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok());
            if let Some(length) = declared.and_then(|v| v.parse::<usize>().ok()) {
                if length > self.max_response {
                    return Err(too_large);
                }
                body.reserve(length);
            }
            while let Some(frame) = incoming.frame().await {
                let frame = frame.map_err(|e| HttpError::Io(format!("{}: reading the body: {e}", what())))?;
                let Ok(data) = frame.into_data() else { continue }; // trailers
                if body.len() + data.len() > self.max_response {
                    return Err(too_large);
                }
                body.extend_from_slice(&data);
            }
            Ok(Head { status, headers: parts.headers })
        }
        .await;
        driver.abort();
        result
    }
}

/// `request` as hyper sends it: `Host` first, then the caller's headers,
/// `Content-Length` for a body (or a method that takes one), `Connection:
/// close`.
fn hyper_request(request: &Request<'_>) -> Result<hyper::Request<Full<Bytes>>, HttpError> {
    let invalid = |e: String| HttpError::Invalid(e);
    let mut headers = HeaderMap::new();
    let mut put = |name: &str, value: &str| -> Result<(), HttpError> {
        let name = HeaderName::try_from(name).map_err(|e| invalid(format!("header {name:?}: {e}")))?;
        let value = HeaderValue::try_from(value).map_err(|e| invalid(format!("header {name}: {e}")))?;
        headers.append(name, value);
        Ok(())
    };
    put("host", &request.url.authority())?;
    for (name, value) in &request.headers {
        put(name, value)?;
    }
    if !request.body.is_empty() || matches!(request.method, "POST" | "PUT" | "PATCH") {
        put("content-length", &request.body.len().to_string())?;
    }
    put("connection", "close")?;
    let mut out = hyper::Request::builder()
        .method(request.method)
        .uri(request.url.path.as_str())
        .body(Full::new(Bytes::copy_from_slice(request.body)))
        .map_err(|e| invalid(e.to_string()))?;
    *out.headers_mut() = headers;
    Ok(out)
}

/// A TLS connector that trusts only the CA certificates in the PEM file `ca`.
pub fn tls_connector(ca: &Path) -> Result<TlsConnector, TlsError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let read = |e: &dyn std::fmt::Display| TlsError::Read { path: ca.to_path_buf(), reason: e.to_string() };
    let refused = |source| TlsError::Rustls { path: ca.to_path_buf(), source };
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).map_err(|e| read(&e))? {
        roots.add(cert.map_err(|e| read(&e))?).map_err(refused)?;
    }
    if roots.is_empty() {
        return Err(TlsError::Empty { path: ca.to_path_buf() });
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(refused)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(TlsConnector::from(Arc::new(config)))
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[test]
    fn urls_parse_with_default_ports_and_join_paths() {
        let url = Url::parse("http://127.0.0.1:9093/").unwrap();
        assert_eq!(url, Url { https: false, host: "127.0.0.1".into(), port: 9093, path: "/".into() });
        assert_eq!(url.join("/api/v2/alerts").to_string(), "http://127.0.0.1:9093/api/v2/alerts");
        let url = Url::parse("https://k8s.example/prefix/").unwrap();
        assert_eq!((url.port, url.path.as_str()), (443, "/prefix"));
        assert_eq!(url.join("/api/v1/nodes/n1").to_string(), "https://k8s.example/prefix/api/v1/nodes/n1");
        assert_eq!(Url::parse("http://[::1]:80/x").unwrap().to_string(), "http://[::1]/x");
        for bad in ["ftp://x", "http://", "http://u@h/", "http://h:99999/", "http://h/a b"] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
        // What `Uri` alone would let through: a fragment it drops, a port
        // that is no u16, a port left empty, no host.
        let url = |url: &str| url.to_string();
        assert_eq!(Url::parse("http://h/a#f"), Err(UrlError::Unsupported { url: url("http://h/a#f") }));
        let port = |u: &str, p: &str| Err(UrlError::Port { url: url(u), port: p.into() });
        assert_eq!(Url::parse("http://h:99999/"), port("http://h:99999/", "99999"));
        assert_eq!(Url::parse("http://h:/x"), port("http://h:/x", ""));
        assert_eq!(Url::parse("http://h:8a/"), port("http://h:8a/", "8a"));
        assert_eq!(Url::parse("http://:80/"), Err(UrlError::NoHost { url: url("http://:80/") }));
        assert_eq!(Url::parse("ftp://x"), Err(UrlError::NotHttp { url: url("ftp://x") }));
        assert_eq!(
            Url::parse("http://u@h/").unwrap_err().to_string(),
            "URL \"http://u@h/\" has user info, a fragment or white space"
        );
        // A query stays in the path; a trailing '/' goes.
        assert_eq!(Url::parse("http://h:9100/x/?y=1").unwrap().path, "/x/?y=1");
        assert_eq!(Url::parse("http://h//x//").unwrap().path, "//x");
        assert_eq!(Url::parse("https://[fe80::1]:8443").unwrap().authority(), "[fe80::1]:8443");
    }

    /// Serves one connection with `answer` and hands back the raw request.
    async fn serve_once(answer: &'static [u8]) -> (Url, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = Url::parse(&format!("http://{}/api/v2/alerts", listener.local_addr().unwrap())).unwrap();
        let task = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut raw = Vec::new();
            let mut buf = [0u8; 4096];
            while !raw.windows(4).any(|w| w == b"\r\n\r\n") || !raw.ends_with(b"[]") {
                let n = socket.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                raw.extend_from_slice(&buf[..n]);
            }
            socket.write_all(answer).await.unwrap();
            raw
        });
        (url, task)
    }

    #[tokio::test]
    async fn the_request_on_the_wire_carries_host_length_and_close() {
        let (url, server) = serve_once(b"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok").await;
        let request = Request {
            method: "POST",
            url: &url,
            headers: vec![("Content-Type", "application/json".into())],
            body: b"[]",
        };
        let response = Client::plain(1024).send(&request, Duration::from_secs(5)).await.unwrap();
        assert_eq!((response.status, response.body.as_slice()), (202, b"ok".as_slice()));
        let raw = String::from_utf8(server.await.unwrap()).unwrap();
        assert_eq!(
            raw,
            format!(
                "POST /api/v2/alerts HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n[]",
                url.authority()
            )
        );
    }

    #[tokio::test]
    async fn chunked_bodies_decode_and_large_ones_are_refused() {
        let chunked =
            b"HTTP/1.1 429 Too Many\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n";
        let (url, _server) = serve_once(chunked).await;
        let request = Request { method: "POST", url: &url, headers: Vec::new(), body: b"[]" };
        let response = Client::plain(1024).send(&request, Duration::from_secs(5)).await.unwrap();
        assert_eq!((response.status, response.body.as_slice()), (429, b"abcde".as_slice()));
        let (url, _server) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789").await;
        let request = Request { method: "POST", url: &url, headers: Vec::new(), body: b"[]" };
        assert_eq!(Client::plain(4).send(&request, Duration::from_secs(5)).await, Err(HttpError::TooLarge(4)));
    }

    #[tokio::test]
    async fn send_into_refills_one_buffer_and_limits_undeclared_lengths() {
        let client = Client::plain(1 << 20);
        let mut body = b"left from before".to_vec();
        let (url, _server) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello").await;
        let request = Request { method: "POST", url: &url, headers: Vec::new(), body: b"[]" };
        let head = client.send_into(&request, Duration::from_secs(5), &mut body).await.unwrap();
        assert_eq!((head.status, head.header("x-a"), body.as_slice()), (200, Some("b"), b"hello".as_slice()));
        // A chunked answer declares no length: the limit holds as it arrives.
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n";
        let (url, _server) = serve_once(chunked).await;
        let request = Request { method: "POST", url: &url, headers: Vec::new(), body: b"[]" };
        let small = Client::plain(4);
        assert_eq!(small.send_into(&request, Duration::from_secs(5), &mut body).await, Err(HttpError::TooLarge(4)));
        assert!(body.len() <= 4, "{body:?}");
        // A buffer grown far past what it holds is given back.
        let mut grown = Vec::with_capacity(8 * KEPT_BODY);
        let (url, _server) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
        let request = Request { method: "POST", url: &url, headers: Vec::new(), body: b"[]" };
        client.send_into(&request, Duration::from_secs(5), &mut grown).await.unwrap();
        assert_eq!(grown, b"ok");
        assert!(grown.capacity() <= 2 * KEPT_BODY, "{}", grown.capacity());
    }

    #[tokio::test]
    async fn not_http_and_no_answer_are_errors_not_hangs() {
        let (url, _server) = serve_once(b"SSH-2.0-OpenSSH\r\n\r\n").await;
        let request = Request { method: "POST", url: &url, headers: Vec::new(), body: b"[]" };
        let error = Client::plain(1024).send(&request, Duration::from_secs(5)).await.unwrap_err();
        assert_eq!(error.kind(), "io", "{error}");
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = Url::parse(&format!("http://{}/", silent.local_addr().unwrap())).unwrap();
        let request = Request { method: "GET", url: &url, headers: Vec::new(), body: b"" };
        let timeout = Duration::from_millis(100);
        assert_eq!(Client::plain(1024).send(&request, timeout).await, Err(HttpError::Timeout(timeout)));
    }
}
