//! A minimal HTTP/1.1 client over a tokio `TcpStream`, for the actuators
//! that talk to an HTTP API (Alertmanager, webhooks, the Kubernetes API
//! server).
//!
//! Why not a crate: each actuator sends a handful of small requests per
//! incident, one connection each (`Connection: close`), so pooling, HTTP/2
//! and streaming buy nothing, while a full client adds minutes to a cold
//! build. This one writes one request and reads one bounded response,
//! decoding `Content-Length` and `chunked` bodies, all under one timeout.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest response read, head and body. Alert lists and Node objects
/// are kilobytes; a pod list of a busy node is a few hundred; past this the
/// answer is not one we can use, and memory stays bounded.
pub const MAX_RESPONSE: usize = 8 * 1024 * 1024;

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
    /// Parses `text`; only `http` and `https`, no user info, no fragment.
    pub fn parse(text: &str) -> Result<Url, String> {
        let (https, rest) = if let Some(rest) = text.strip_prefix("http://") {
            (false, rest)
        } else if let Some(rest) = text.strip_prefix("https://") {
            (true, rest)
        } else {
            return Err(format!("URL {text:?} does not start with http:// or https://"));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.contains('@') || path.contains('#') || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!("URL {text:?} has user info, a fragment or white space"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(|| format!("URL {text:?}: unclosed '['"))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(format!("URL {text:?} has no host"));
        }
        let port = match port {
            Some(p) => p.parse().map_err(|_| format!("URL {text:?}: port {p:?} is not a number from 0 to 65535"))?,
            None if https => 443,
            None => 80,
        };
        let path = if path.len() > 1 { path.trim_end_matches('/') } else { path };
        Ok(Url { https, host: host.to_string(), port, path: path.to_string() })
    }

    /// This URL with `suffix` (starting with `/`) appended to its path.
    pub fn join(&self, suffix: &str) -> Url {
        let base = if self.path == "/" { "" } else { &self.path };
        Url { path: format!("{base}{suffix}"), ..self.clone() }
    }

    fn authority(&self) -> String {
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

/// An answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The body, decoded from `chunked` if it was.
    pub body: Vec<u8>,
}

impl Response {
    /// Whether the status is 2xx.
    pub fn ok(&self) -> bool {
        (200..300).contains(&self.status)
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
    /// The connection or the exchange failed.
    #[error("{0}")]
    Io(String),
    /// No complete answer within the timeout.
    #[error("no answer within {0:?}")]
    Timeout(Duration),
    /// The answer is not HTTP/1.x as this client reads it.
    #[error("malformed response: {0}")]
    Malformed(String),
}

/// One request: method, URL, extra headers, body.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// `GET`, `POST`, `PATCH`, …
    pub method: &'a str,
    /// Where.
    pub url: &'a Url,
    /// Headers besides `Host`, `Content-Length` and `Connection`.
    pub headers: Vec<(&'a str, String)>,
    /// The body; empty for none.
    pub body: &'a [u8],
}

impl Request<'_> {
    /// The bytes on the wire.
    pub fn encode(&self) -> Vec<u8> {
        let mut head = format!("{} {} HTTP/1.1\r\nHost: {}\r\n", self.method, self.url.path, self.url.authority());
        for (name, value) in &self.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !self.body.is_empty() || matches!(self.method, "POST" | "PUT" | "PATCH") {
            head.push_str(&format!("Content-Length: {}\r\n", self.body.len()));
        }
        head.push_str("Connection: close\r\n\r\n");
        let mut bytes = head.into_bytes();
        bytes.extend_from_slice(self.body);
        bytes
    }
}

/// Sends `request` over plain TCP and reads the answer, all within `timeout`.
pub async fn send(request: &Request<'_>, timeout: Duration) -> Result<Response, HttpError> {
    send_with(request, timeout, None).await
}

/// Sends `request`, over TLS with `tls` for an `https` URL, and reads the
/// answer, all within `timeout`.
pub async fn send_with(
    request: &Request<'_>,
    timeout: Duration,
    tls: Option<&tokio_rustls::TlsConnector>,
) -> Result<Response, HttpError> {
    let url = request.url;
    let exchange = async {
        let stream = TcpStream::connect((url.host.as_str(), url.port))
            .await
            .map_err(|e| HttpError::Io(format!("connecting to {}:{}: {e}", url.host, url.port)))?;
        if !url.https {
            return exchange(stream, request).await;
        }
        let tls = tls.ok_or_else(|| HttpError::Io(format!("{url}: https needs a CA to check the server against")))?;
        let name = tokio_rustls::rustls::pki_types::ServerName::try_from(url.host.clone())
            .map_err(|e| HttpError::Io(format!("{url}: {e}")))?;
        let stream =
            tls.connect(name, stream).await.map_err(|e| HttpError::Io(format!("TLS handshake with {url}: {e}")))?;
        exchange(stream, request).await
    };
    tokio::time::timeout(timeout, exchange).await.map_err(|_| HttpError::Timeout(timeout))?
}

/// A TLS connector that trusts only the CA certificates in the PEM file `ca`.
pub fn tls_connector(ca: &std::path::Path) -> Result<tokio_rustls::TlsConnector, String> {
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::{ClientConfig, RootCertStore};
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).map_err(|e| format!("{}: {e}", ca.display()))? {
        let cert = cert.map_err(|e| format!("{}: {e}", ca.display()))?;
        roots.add(cert).map_err(|e| format!("{}: {e}", ca.display()))?;
    }
    if roots.is_empty() {
        return Err(format!("{} holds no certificate", ca.display()));
    }
    let provider = std::sync::Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(std::sync::Arc::new(config)))
}

/// Writes `request` to `stream` and reads the answer to its end.
pub async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    request: &Request<'_>,
) -> Result<Response, HttpError> {
    let io = |e: std::io::Error| HttpError::Io(format!("{} {}: {e}", request.method, request.url));
    stream.write_all(&request.encode()).await.map_err(io)?;
    stream.flush().await.map_err(io)?;
    let mut raw = Vec::new();
    let mut limited = (&mut stream).take(MAX_RESPONSE as u64 + 1);
    // A server may reset the connection right after a complete answer
    // (TLS close_notify missing, for one); what was read is still parsed.
    if let Err(e) = limited.read_to_end(&mut raw).await {
        if raw.is_empty() {
            return Err(io(e));
        }
    }
    if raw.len() > MAX_RESPONSE {
        return Err(HttpError::Malformed(format!("the response is above {MAX_RESPONSE} bytes")));
    }
    parse_response(&raw)
}

/// Parses a whole HTTP/1.x response.
pub fn parse_response(raw: &[u8]) -> Result<Response, HttpError> {
    let malformed = |m: &str| HttpError::Malformed(m.to_string());
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n").ok_or_else(|| malformed("no end of headers"))?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| malformed("headers are not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let (version, code) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::Malformed(format!("status line {status_line:?}")));
    }
    let status = code.parse().map_err(|_| HttpError::Malformed(format!("status line {status_line:?}")))?;
    let (mut chunked, mut length) = (false, None);
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") && value.to_ascii_lowercase().contains("chunked") {
            chunked = true;
        } else if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| malformed("bad Content-Length"))?);
        }
    }
    let rest = &raw[end + 4..];
    let body = if chunked {
        dechunk(rest)?
    } else if let Some(length) = length {
        rest.get(..length).ok_or_else(|| malformed("the body is shorter than its Content-Length"))?.to_vec()
    } else {
        rest.to_vec()
    };
    Ok(Response { status, body })
}

fn dechunk(mut rest: &[u8]) -> Result<Vec<u8>, HttpError> {
    let malformed = |m: &str| HttpError::Malformed(m.to_string());
    let mut body = Vec::new();
    loop {
        let line_end = rest.windows(2).position(|w| w == b"\r\n").ok_or_else(|| malformed("truncated chunk"))?;
        let size_text = std::str::from_utf8(&rest[..line_end]).map_err(|_| malformed("bad chunk size"))?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| malformed("bad chunk size"))?;
        rest = &rest[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        let chunk = rest.get(..size).ok_or_else(|| malformed("truncated chunk"))?;
        body.extend_from_slice(chunk);
        rest = rest.get(size + 2..).ok_or_else(|| malformed("truncated chunk"))?;
    }
}

pub use engine::time::rfc3339;

#[cfg(test)]
mod tests {
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
    }

    #[test]
    fn responses_decode_length_and_chunked_bodies() {
        let r = parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]extra").unwrap();
        assert_eq!(r, Response { status: 200, body: b"[]".to_vec() });
        let r = parse_response(
            b"HTTP/1.1 429 Too Many\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!((r.status, r.body.as_slice()), (429, b"abcde".as_slice()));
        assert!(parse_response(b"SSH-2.0\r\n\r\n").is_err());
        assert!(parse_response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nab").is_err());
    }

    #[test]
    fn the_request_carries_host_length_and_close() {
        let url = Url::parse("http://am:9093/api/v2/alerts").unwrap();
        let request = Request {
            method: "POST",
            url: &url,
            headers: vec![("Content-Type", "application/json".into())],
            body: b"[]",
        };
        assert_eq!(
            String::from_utf8(request.encode()).unwrap(),
            "POST /api/v2/alerts HTTP/1.1\r\nHost: am:9093\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n[]"
        );
    }
}
