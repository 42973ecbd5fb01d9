//! A scrape: one GET of an exporter's page over the one HTTP client
//! ([`net::http`]), its status and encoding checked, its size bounded.

use std::time::Duration;

pub use net::http::Url;
use net::http::{Client, HttpError, Request};

/// The largest page accepted: a node exporter sends ~100 KiB, a DCGM
/// exporter on 8 GPUs about 1 MiB; 32 MiB is a target gone wrong.
pub const MAX_RESPONSE: usize = 32 << 20;

/// What the GET asks for: the text format, uncompressed.
const ACCEPT: &str = "text/plain;version=0.0.4;q=1,*/*;q=0.1";

// Kept beside the config error it is a source of, which every sensor
// module reaches: this module uses it, not the other way round.
pub use crate::error::TargetUrlError;

/// Parses a target URL: `http://` only (a scrape has no TLS settings yet),
/// `/metrics` when no path is given.
pub fn parse_url(text: &str) -> Result<Url, TargetUrlError> {
    if !text.starts_with("http://") {
        return Err(TargetUrlError::NotHttp { url: text.to_string() });
    }
    let mut url = Url::parse(text)?;
    let has_path = text["http://".len()..].contains('/');
    if !has_path {
        url.path = "/metrics".into();
    }
    Ok(url)
}

/// Why a scrape got no page.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScrapeError {
    /// The exchange failed (connect, I/O, not HTTP, too large, timeout).
    #[error("{kind}: {0}", kind = .0.kind())]
    Http(HttpError),
    /// The answer is not a 200, or is encoded in a way not asked for.
    #[error("http: {0}")]
    Refused(String),
}

impl ScrapeError {
    /// The error kind for health reports: `connect`, `io`, `timeout` or `http`.
    pub fn kind(&self) -> &'static str {
        match self {
            ScrapeError::Http(e) => e.kind(),
            ScrapeError::Refused(_) => "http",
        }
    }
}

/// GETs `url` within `timeout` and reads the body of a 200 answer into
/// `body`, whose capacity is kept from one scrape to the next.
pub async fn get(client: &Client, url: &Url, timeout: Duration, body: &mut Vec<u8>) -> Result<(), ScrapeError> {
    let headers = vec![
        ("Accept", ACCEPT.to_string()),
        ("Accept-Encoding", "identity".to_string()),
        ("User-Agent", "rocemend".to_string()),
    ];
    let request = Request { method: "GET", url, headers, body: b"" };
    let response = client.send_into(&request, timeout, body).await.map_err(ScrapeError::Http)?;
    if response.status != 200 {
        return Err(ScrapeError::Refused(format!("status {}", response.status)));
    }
    if let Some(encoding) = response.header("content-encoding") {
        if !encoding.eq_ignore_ascii_case("identity") {
            return Err(ScrapeError::Refused(format!("unsupported content-encoding {encoding:?}")));
        }
    }
    Ok(())
}

/// The client scrapes go through.
pub fn client() -> Client {
    Client::plain(MAX_RESPONSE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = parse_url("http://127.0.0.1:9100/metrics").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("127.0.0.1", 9100, "/metrics"));
        let u = parse_url("http://[::1]:9400").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("::1", 9400, "/metrics"));
        assert_eq!(parse_url("http://node01/x?y=1").unwrap().port, 80);
        assert_eq!(parse_url("https://a/"), Err(TargetUrlError::NotHttp { url: "https://a/".into() }));
        assert!(matches!(parse_url("http://a:99999/"), Err(TargetUrlError::Malformed(_))));
    }
}
