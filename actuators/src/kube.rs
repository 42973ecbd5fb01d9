//! The Kubernetes API server, as the `cordon` and `rail` actuators talk to
//! it: its REST API directly, over the one HTTP client ([`net::http`]),
//! with a bearer token and the cluster's CA.
//!
//! Why not kube-rs: an actuator makes a handful of requests per incident
//! (GET and PATCH a Node, list and evict pods); kube-rs with its client
//! stack, k8s-openapi and their generated types adds minutes to a cold
//! build for no behaviour we need.
//!
//! Tokens rotate. A pod's projected service-account token is replaced by
//! the kubelet well before it expires (by default within the hour), so a
//! token read once at start makes every request of a long-running daemon
//! fail with 401 later. As client-go does, the token file is read again
//! whenever it changes (its modification time or length; the kubelet swaps
//! the file through a symlink), and once more when the server answers 401.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::http::{Client, HttpError, Request, Response, Url, MAX_RESPONSE};
use crate::ActuatorConfigError;

/// Where the bearer token comes from.
enum Token {
    /// No token (a proxy that authenticates, or a test server).
    None,
    /// Given in the config.
    Literal(String),
    /// Read from a file, again when it changes; `setting` names it in
    /// errors.
    File { path: PathBuf, setting: String, cached: Mutex<FileToken> },
}

/// The token last read from a file, and what the file looked like then.
struct FileToken {
    stamp: (Option<SystemTime>, u64),
    token: String,
}

/// One API server: its URL, credentials and trust.
pub struct KubeApi {
    base: Url,
    token: Token,
    client: Client,
    timeout: Duration,
}

impl std::fmt::Debug for KubeApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token itself.
        let token = match &self.token {
            Token::None => "none".to_string(),
            Token::Literal(_) => "<set>".to_string(),
            Token::File { path, .. } => format!("<from {}>", path.display()),
        };
        f.debug_struct("KubeApi").field("base", &self.base.to_string()).field("token", &token).finish_non_exhaustive()
    }
}

/// What a `[kubernetes]` table gives to reach an API server.
#[derive(Debug, Clone, Copy)]
pub struct KubeSettings<'a> {
    /// The table the settings come from (`kubernetes`,
    /// `kubernetes_condition`), to name them in errors.
    pub table: &'a str,
    /// `api_server`: `https://…` (or `http://` for a local proxy).
    pub api_server: &'a str,
    /// `token`: a bearer token.
    pub token: Option<&'a str>,
    /// `token_file`: a file holding one, read again when it changes.
    pub token_file: Option<&'a Path>,
    /// `ca_file`: the CA to check an `https` server against.
    pub ca_file: Option<&'a Path>,
}

/// Refuses a token that is empty or could break the `Authorization`
/// header; the error names `setting`, never the token.
fn check_token(setting: &str, token: &str) -> Result<(), ActuatorConfigError> {
    if token.is_empty() || token.chars().any(|c| c.is_control() || c == ' ') {
        return Err(ActuatorConfigError::Secret {
            setting: setting.into(),
            reason: "the token is empty or holds spaces or control characters",
        });
    }
    Ok(())
}

fn stamp(path: &Path) -> std::io::Result<(Option<SystemTime>, u64)> {
    let meta = std::fs::metadata(path)?;
    Ok((meta.modified().ok(), meta.len()))
}

fn read_token(path: &Path, setting: &str) -> Result<FileToken, ActuatorConfigError> {
    let why = |source| ActuatorConfigError::Read { setting: setting.into(), path: path.to_path_buf(), source };
    let stamp = stamp(path).map_err(why)?;
    let token = std::fs::read_to_string(path).map_err(why)?.trim().to_string();
    check_token(setting, &token)?;
    Ok(FileToken { stamp, token })
}

impl KubeApi {
    /// Checks the settings; reads the token file once, so a missing or
    /// unreadable file is refused at start.
    pub fn new(settings: KubeSettings<'_>, timeout: Duration) -> Result<KubeApi, ActuatorConfigError> {
        let table = settings.table;
        let base = Url::parse(settings.api_server)
            .map_err(|source| ActuatorConfigError::Url { setting: format!("{table}.api_server"), source })?;
        let token = match (settings.token, settings.token_file) {
            (Some(_), Some(_)) => {
                return Err(ActuatorConfigError::Conflict {
                    setting: table.into(),
                    reason: "give token or token_file, not both",
                })
            }
            (Some(token), None) => {
                check_token(&format!("{table}.token"), token.trim())?;
                Token::Literal(token.trim().to_string())
            }
            (None, Some(path)) => {
                let setting = format!("{table}.token_file");
                let cached = Mutex::new(read_token(path, &setting)?);
                Token::File { path: path.to_path_buf(), setting, cached }
            }
            (None, None) => Token::None,
        };
        let client = match (settings.ca_file, base.https) {
            (Some(ca), true) => Client::with_ca(ca, MAX_RESPONSE)
                .map_err(|source| ActuatorConfigError::Tls { setting: format!("{table}.ca_file"), source })?,
            (None, true) => {
                return Err(ActuatorConfigError::Missing {
                    setting: format!("{table}.ca_file"),
                    reason: "an https api_server needs ca_file",
                })
            }
            (_, false) => Client::plain(MAX_RESPONSE),
        };
        Ok(KubeApi { base, token, client, timeout })
    }

    /// The API server's URL.
    pub fn base(&self) -> &Url {
        &self.base
    }

    /// The URL of the Node object `node`.
    pub fn node_url(&self, node: &str) -> Url {
        self.base.join(&format!("/api/v1/nodes/{node}"))
    }

    /// The timeout of one request.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The bearer token to send now: the file's, read again if it changed
    /// (or always, with `force`). A file that cannot be read keeps the
    /// token last read: the server says whether it still holds.
    fn bearer(&self, force: bool) -> Option<String> {
        match &self.token {
            Token::None => None,
            Token::Literal(token) => Some(token.clone()),
            Token::File { path, setting, cached } => {
                let mut cached = cached.lock().unwrap_or_else(|p| p.into_inner());
                let changed = stamp(path).map(|s| s != cached.stamp).unwrap_or(false);
                if force || changed {
                    match read_token(path, setting) {
                        Ok(fresh) => *cached = fresh,
                        Err(error) => tracing::warn!(message = "Cannot re-read the Kubernetes token.", %error),
                    }
                }
                Some(cached.token.clone())
            }
        }
    }

    /// Sends `method url` with an optional `(content type, JSON body)`. On
    /// a 401 the token file is read again and, if the token changed, the
    /// request is sent once more.
    pub async fn call(&self, method: &str, url: &Url, body: Option<(&str, &Value)>) -> Result<Response, HttpError> {
        let bytes = body.map(|(_, b)| b.to_string().into_bytes()).unwrap_or_default();
        let token = self.bearer(false);
        let response = self.send(method, url, body.map(|(t, _)| t), &bytes, token.as_deref()).await?;
        if response.status != 401 || !matches!(self.token, Token::File { .. }) {
            return Ok(response);
        }
        let fresh = self.bearer(true);
        if fresh == token {
            return Ok(response);
        }
        tracing::info!(message = "The Kubernetes token changed; sending again.", %url);
        self.send(method, url, body.map(|(t, _)| t), &bytes, fresh.as_deref()).await
    }

    async fn send(
        &self,
        method: &str,
        url: &Url,
        content_type: Option<&str>,
        body: &[u8],
        token: Option<&str>,
    ) -> Result<Response, HttpError> {
        let mut headers: Vec<(&str, String)> = vec![("Accept", "application/json".into())];
        if let Some(token) = token {
            headers.push(("Authorization", format!("Bearer {token}")));
        }
        if let Some(content_type) = content_type {
            headers.push(("Content-Type", content_type.to_string()));
        }
        self.client.send(&Request { method, url, headers, body }, self.timeout).await
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    #[test]
    fn a_changed_token_file_is_read_again_and_a_broken_one_keeps_the_last() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "first\n").unwrap();
        let settings = KubeSettings {
            table: "kubernetes",
            api_server: "http://127.0.0.1:1",
            token: None,
            token_file: Some(&path),
            ca_file: None,
        };
        let api = KubeApi::new(settings, Duration::from_secs(1)).unwrap();
        assert_eq!(api.bearer(false).as_deref(), Some("first"));
        // A rotation writes a new file (another length, another mtime).
        let next = dir.path().join("token.new");
        std::fs::File::create(&next).unwrap().write_all(b"second-token").unwrap();
        std::fs::rename(&next, &path).unwrap();
        assert_eq!(api.bearer(false).as_deref(), Some("second-token"));
        std::fs::write(&path, "has space").unwrap();
        assert_eq!(api.bearer(true).as_deref(), Some("second-token"), "a bad file keeps the last good token");
        assert!(format!("{api:?}").contains("<from"), "the token never shows in Debug");
    }

    /// Reads one request's head from `socket`; returns its bearer token.
    async fn bearer_of(socket: &mut tokio::net::TcpStream) -> String {
        use tokio::io::AsyncReadExt;
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = socket.read(&mut buf).await.unwrap();
            assert!(n > 0, "the client closed early");
            raw.extend_from_slice(&buf[..n]);
        }
        let text = String::from_utf8(raw).unwrap();
        text.lines().find_map(|l| l.strip_prefix("Authorization: Bearer ")).unwrap_or_default().to_string()
    }

    #[tokio::test]
    async fn a_401_after_a_rotation_is_sent_again_with_the_new_token() {
        use tokio::io::AsyncWriteExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "old").unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api_server = format!("http://{}", listener.local_addr().unwrap());
        let rotate = path.clone();
        // The token rotates while the first request is in flight: the
        // server refuses the old one, accepts the new.
        let server = tokio::spawn(async move {
            let mut seen = Vec::new();
            for _ in 0..2 {
                let (mut socket, _) = listener.accept().await.unwrap();
                let token = bearer_of(&mut socket).await;
                std::fs::write(&rotate, "new-token").unwrap();
                let answer: &[u8] = if token == "new-token" {
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"
                } else {
                    b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\n\r\n"
                };
                socket.write_all(answer).await.unwrap();
                seen.push(token);
            }
            seen
        });
        let settings = KubeSettings {
            table: "kubernetes",
            api_server: &api_server,
            token: None,
            token_file: Some(&path),
            ca_file: None,
        };
        let api = KubeApi::new(settings, Duration::from_secs(5)).unwrap();
        let response = api.call("GET", &api.node_url("n1"), None).await.unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(server.await.unwrap(), ["old", "new-token"]);
    }

    #[test]
    fn settings_are_checked() {
        let s = |api_server, token, ca_file| KubeSettings {
            table: "kubernetes",
            api_server,
            token,
            token_file: None,
            ca_file,
        };
        let err = |settings| KubeApi::new(settings, Duration::from_secs(1)).unwrap_err();
        let https = err(s("https://k8s:6443", Some("t"), None));
        assert!(
            matches!(&https, ActuatorConfigError::Missing { setting, .. } if setting == "kubernetes.ca_file"),
            "{https:?}"
        );
        assert!(https.to_string().contains("ca_file"));
        let spaced = err(s("http://k8s", Some("a b"), None));
        assert!(matches!(&spaced, ActuatorConfigError::Secret { setting, .. } if setting == "kubernetes.token"));
        assert!(spaced.to_string().contains("spaces"));
        assert!(!format!("{spaced} {spaced:?}").contains("a b"), "the token never shows in the error");
        let missing = KubeSettings { token_file: Some(Path::new("/nonexistent/token")), ..s("http://k8s", None, None) };
        let missing = err(missing);
        assert!(matches!(&missing, ActuatorConfigError::Read { path, .. } if path == Path::new("/nonexistent/token")));
        assert!(missing.to_string().contains("/nonexistent/token"));
    }
}
