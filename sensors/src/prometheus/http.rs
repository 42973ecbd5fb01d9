//! A minimal HTTP/1.1 GET client over a tokio `TcpStream`: enough for
//! scraping an exporter (plain `http://`, `Content-Length`, chunked or
//! close-delimited bodies), nothing more.

use std::fmt;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest response accepted: a node exporter sends ~100 KiB, a DCGM
/// exporter on 8 GPUs about 1 MiB; 32 MiB is a target gone wrong.
pub const MAX_RESPONSE: usize = 32 << 20;

/// A parsed `http://host:port/path` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    /// Host as written (`[::1]` keeps its brackets).
    pub host: String,
    /// Port (80 by default).
    pub port: u16,
    /// Path and query, `/metrics` by default.
    pub path: String,
}

impl Url {
    /// Parses `text`; only `http://` (no TLS in this client).
    pub fn parse(text: &str) -> Result<Url, String> {
        let rest = text.strip_prefix("http://").ok_or_else(|| format!("{text:?}: only http:// URLs are supported"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/metrics"),
        };
        if authority.is_empty() || authority.contains('@') {
            return Err(format!("{text:?}: no host (or credentials in the URL)"));
        }
        let (host, port) = if let Some(end) = authority.strip_prefix('[').and_then(|a| a.find(']')) {
            let host = &authority[..end + 2];
            let port = authority[end + 2..].strip_prefix(':');
            (host, port)
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        let port = match port {
            Some(p) => p.parse::<u16>().map_err(|_| format!("{text:?}: bad port {p:?}"))?,
            None => 80,
        };
        Ok(Url { host: host.to_string(), port, path: path.to_string() })
    }

    fn connect_addr(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

impl fmt::Display for Url {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "http://{}:{}{}", self.host, self.port, self.path)
    }
}

/// Why a GET failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The TCP connection could not be made.
    #[error("connect: {0}")]
    Connect(String),
    /// Reading or writing failed mid-way.
    #[error("io: {0}")]
    Io(String),
    /// The response is not HTTP, or not a 200.
    #[error("http: {0}")]
    Http(String),
}

impl HttpError {
    /// The error kind for health reports.
    pub fn kind(&self) -> &'static str {
        match self {
            HttpError::Connect(_) => "connect",
            HttpError::Io(_) => "io",
            HttpError::Http(_) => "http",
        }
    }
}

/// GETs `url` and returns the body of a 200 response. The caller bounds
/// the time (`tokio::time::timeout`).
pub async fn get(url: &Url) -> Result<Vec<u8>, HttpError> {
    let mut stream = TcpStream::connect(url.connect_addr()).await.map_err(|e| HttpError::Connect(e.to_string()))?;
    let request = format!(
        "GET {} HTTP/1.1\r\nHost: {}:{}\r\nAccept: text/plain;version=0.0.4;q=1,*/*;q=0.1\r\nAccept-Encoding: identity\r\nUser-Agent: rocemend\r\nConnection: close\r\n\r\n",
        url.path, url.host, url.port
    );
    stream.write_all(request.as_bytes()).await.map_err(|e| HttpError::Io(e.to_string()))?;
    let mut response = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut chunk).await.map_err(|e| HttpError::Io(e.to_string()))?;
        if n == 0 {
            break;
        }
        if response.len() + n > MAX_RESPONSE {
            return Err(HttpError::Http(format!("response larger than {MAX_RESPONSE} bytes")));
        }
        response.extend_from_slice(&chunk[..n]);
        // Stop as soon as a Content-Length body is complete, in case the
        // server keeps the connection open despite `Connection: close`.
        if let Some(len) = complete_length(&response) {
            response.truncate(len);
            break;
        }
    }
    body(&response)
}

/// A response's status line and headers.
struct Head<'a> {
    /// Where the body starts.
    body_start: usize,
    /// Header names lowercased, values trimmed.
    headers: Vec<(String, String)>,
    status: &'a [u8],
}

/// The status line and headers, once the header block is complete.
fn head(response: &[u8]) -> Option<Head<'_>> {
    let end = response.windows(4).position(|w| w == b"\r\n\r\n")?;
    let text = std::str::from_utf8(&response[..end]).ok()?;
    let mut lines = text.split("\r\n");
    let status = lines.next()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    Some(Head { body_start: end + 4, headers, status: &response[..status.len()] })
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// The full length of a response with a Content-Length, once it is in.
fn complete_length(response: &[u8]) -> Option<usize> {
    let Head { body_start: start, headers, .. } = head(response)?;
    let len: usize = header(&headers, "content-length")?.parse().ok()?;
    (response.len() >= start + len).then_some(start + len)
}

/// The body of a complete response, checking the status.
pub fn body(response: &[u8]) -> Result<Vec<u8>, HttpError> {
    let Head { body_start: start, headers, status } =
        head(response).ok_or_else(|| HttpError::Http("no HTTP response header".into()))?;
    let status = String::from_utf8_lossy(status).into_owned();
    let mut parts = status.splitn(3, ' ');
    let version = parts.next().unwrap_or("");
    let code = parts.next().unwrap_or("");
    if !version.starts_with("HTTP/1.") {
        return Err(HttpError::Http(format!("not an HTTP/1 response: {status:?}")));
    }
    if code != "200" {
        return Err(HttpError::Http(format!("status {}", status.trim_start_matches(version).trim())));
    }
    if let Some(encoding) = header(&headers, "content-encoding") {
        if !encoding.eq_ignore_ascii_case("identity") {
            return Err(HttpError::Http(format!("unsupported content-encoding {encoding:?}")));
        }
    }
    let raw = &response[start..];
    if header(&headers, "transfer-encoding").is_some_and(|t| t.to_ascii_lowercase().contains("chunked")) {
        return dechunk(raw);
    }
    if let Some(len) = header(&headers, "content-length") {
        let len: usize = len.parse().map_err(|_| HttpError::Http(format!("bad content-length {len:?}")))?;
        if raw.len() < len {
            return Err(HttpError::Io(format!("body cut short: {} of {len} bytes", raw.len())));
        }
        return Ok(raw[..len].to_vec());
    }
    Ok(raw.to_vec())
}

fn dechunk(mut raw: &[u8]) -> Result<Vec<u8>, HttpError> {
    let mut out = Vec::new();
    loop {
        let line_end =
            raw.windows(2).position(|w| w == b"\r\n").ok_or_else(|| HttpError::Io("chunked body cut short".into()))?;
        let size_text = String::from_utf8_lossy(&raw[..line_end]);
        let size_text = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| HttpError::Http(format!("bad chunk size {size_text:?}")))?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if raw.len() < size + 2 {
            return Err(HttpError::Io("chunked body cut short".into()));
        }
        out.extend_from_slice(&raw[..size]);
        raw = &raw[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("http://127.0.0.1:9100/metrics").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("127.0.0.1", 9100, "/metrics"));
        let u = Url::parse("http://[::1]:9400").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("[::1]", 9400, "/metrics"));
        assert_eq!(Url::parse("http://node01/x?y=1").unwrap().port, 80);
        assert!(Url::parse("https://a/").is_err());
        assert!(Url::parse("http://a:99999/").is_err());
    }

    #[test]
    fn bodies() {
        assert_eq!(body(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef").unwrap(), b"abc");
        assert_eq!(
            body(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n").unwrap(),
            b"abcde"
        );
        assert_eq!(body(b"HTTP/1.0 200 OK\r\n\r\nall of it").unwrap(), b"all of it");
        assert_eq!(
            body(b"HTTP/1.1 404 Not Found\r\n\r\n").unwrap_err(),
            HttpError::Http("status 404 Not Found".into())
        );
        assert!(body(b"SSH-2.0-OpenSSH\r\n\r\n").is_err());
        assert!(body(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc").is_err());
    }
}
