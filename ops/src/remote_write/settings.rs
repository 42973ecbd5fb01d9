//! `[remote_write]` checked into [`RemoteWrite`]: the URL parsed, the
//! client built, the bounds in order, the credential files read, the
//! headers and labels valid. `check` and `run` both go through
//! [`settings`], so both refuse the same values at the same line and column.

use std::time::Duration;

use base64::Engine as _;
use engine::config::{Key, Locator, TomlError};
use net::http::{Client, Url};

use crate::config::RemoteWriteSection;

/// The largest answer body read from a receiver: its error text, for the log.
const MAX_RESPONSE: usize = 64 << 10;

/// Headers the protocol sets itself; a `headers` entry may not replace them.
const RESERVED_HEADERS: [&str; 7] = [
    "host",
    "content-length",
    "content-encoding",
    "content-type",
    "connection",
    "user-agent",
    "x-prometheus-remote-write-version",
];

/// Where and how samples are sent, checked.
#[derive(Debug, Clone)]
pub struct RemoteWrite {
    /// The receiver's endpoint.
    pub url: Url,
    /// The HTTP client (with the CA for `https`).
    pub client: Client,
    /// One request's timeout.
    pub timeout: Duration,
    /// Samples kept waiting at most.
    pub queue_capacity: usize,
    /// Samples in one request at most.
    pub max_samples_per_send: usize,
    /// The longest a sample waits for its request to fill.
    pub batch_send_deadline: Duration,
    /// The first retry's wait.
    pub min_backoff: Duration,
    /// The longest retry wait.
    pub max_backoff: Duration,
    /// Headers besides the protocol's, the authorization among them.
    pub headers: Vec<(String, String)>,
    /// Labels added to every series, sorted by name.
    pub external_labels: Vec<(String, String)>,
}

/// Checks `[remote_write]`; `None` when it is absent or any value is refused
/// (each refusal pushed to `errors`, placed at its key).
pub fn settings(section: &RemoteWriteSection, at: &Locator, errors: &mut Vec<TomlError>) -> Option<RemoteWrite> {
    let before = errors.len();
    let mut refuse = |key: &[Key<'_>], message: String| {
        let mut path = vec![Key::Name("remote_write")];
        path.extend_from_slice(key);
        errors.push(at.error(&path, message));
    };
    let url = Url::parse(&section.url).map_err(|e| refuse(&["url".into()], format!("remote_write.url: {e}"))).ok();
    let client = match (&url, &section.ca_file) {
        (_, Some(ca)) => Client::with_ca(ca, MAX_RESPONSE)
            .map_err(|e| refuse(&["ca_file".into()], format!("remote_write.ca_file: {e}")))
            .ok(),
        (Some(u), None) if u.https => {
            refuse(&["url".into()], format!("remote_write.url {}: https needs ca_file to check the receiver", u));
            None
        }
        _ => Some(Client::plain(MAX_RESPONSE)),
    };
    bounds(section, &mut refuse);
    let mut headers = Vec::new();
    for (name, value) in &section.headers {
        let lower = name.to_ascii_lowercase();
        let key = [Key::Name("headers"), Key::Name(name)];
        if RESERVED_HEADERS.contains(&lower.as_str()) {
            refuse(&key, format!("remote_write.headers.{name}: the protocol sets this header itself"));
        } else if hyper::header::HeaderName::try_from(name.as_str()).is_err()
            || hyper::header::HeaderValue::try_from(value.as_str()).is_err()
        {
            refuse(&key, format!("remote_write.headers.{name} = {value:?}: not a valid HTTP header"));
        } else {
            headers.push((name.clone(), value.clone()));
        }
    }
    if let Some(auth) = authorization(section, &mut refuse) {
        if section.headers.keys().any(|k| k.eq_ignore_ascii_case("authorization")) {
            refuse(&["headers".into()], "remote_write.headers: Authorization is also set by the credentials".into());
        }
        headers.push(("Authorization".into(), auth));
    }
    let mut external_labels = Vec::new();
    for (name, value) in &section.external_labels {
        if !label_name(name) || name.starts_with("__") {
            let key = [Key::Name("external_labels"), Key::Name(name)];
            refuse(
                &key,
                format!(
                    "remote_write.external_labels.{name}: not a label name ([a-zA-Z_][a-zA-Z0-9_]*, no leading __)"
                ),
            );
        } else if value.is_empty() {
            let key = [Key::Name("external_labels"), Key::Name(name)];
            refuse(&key, format!("remote_write.external_labels.{name}: empty (an empty label is no label)"));
        }
        external_labels.push((name.clone(), value.clone()));
    }
    (errors.len() == before).then(|| RemoteWrite {
        url: url.expect("no error means the URL parsed"),
        client: client.expect("no error means the client was built"),
        timeout: section.timeout,
        queue_capacity: section.queue_capacity,
        max_samples_per_send: section.max_samples_per_send,
        batch_send_deadline: section.batch_send_deadline,
        min_backoff: section.min_backoff,
        max_backoff: section.max_backoff,
        headers,
        external_labels,
    })
}

/// The numbers and durations, each in range and in order with the others.
fn bounds(s: &RemoteWriteSection, refuse: &mut impl FnMut(&[Key<'_>], String)) {
    let shown = |d: Duration| format!("{:?}", humantime::format_duration(d).to_string());
    let ms = Duration::from_millis(1);
    if s.timeout < ms {
        refuse(&["timeout".into()], format!("remote_write.timeout = {}: expected at least 1ms", shown(s.timeout)));
    }
    if s.max_samples_per_send == 0 {
        refuse(&["max_samples_per_send".into()], "remote_write.max_samples_per_send = 0: expected at least 1".into());
    }
    if s.queue_capacity < s.max_samples_per_send.max(1) {
        let message = format!(
            "remote_write.queue_capacity = {}: expected at least max_samples_per_send ({})",
            s.queue_capacity, s.max_samples_per_send
        );
        refuse(&["queue_capacity".into()], message);
    }
    if s.batch_send_deadline < ms {
        let message =
            format!("remote_write.batch_send_deadline = {}: expected at least 1ms", shown(s.batch_send_deadline));
        refuse(&["batch_send_deadline".into()], message);
    }
    if s.min_backoff < ms {
        refuse(
            &["min_backoff".into()],
            format!("remote_write.min_backoff = {}: expected at least 1ms", shown(s.min_backoff)),
        );
    }
    if s.max_backoff < s.min_backoff {
        let message = format!(
            "remote_write.max_backoff = {}: expected at least min_backoff ({})",
            shown(s.max_backoff),
            shown(s.min_backoff)
        );
        refuse(&["max_backoff".into()], message);
    }
}

/// The `Authorization` header the credentials give, if any; the files are
/// read here, so a missing one is refused by `check`.
fn authorization(s: &RemoteWriteSection, refuse: &mut impl FnMut(&[Key<'_>], String)) -> Option<String> {
    let read = |path: &std::path::Path| -> Result<String, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let text = text.trim_end_matches(['\n', '\r']).to_string();
        if text.is_empty() {
            return Err(format!("{} is empty", path.display()));
        }
        Ok(text)
    };
    match (&s.bearer_token_file, &s.basic_auth) {
        (Some(_), Some(_)) => {
            refuse(
                &["basic_auth".into()],
                "remote_write: bearer_token_file and basic_auth are both set; keep one".into(),
            );
            None
        }
        (Some(file), None) => match read(file) {
            Ok(token) => Some(format!("Bearer {token}")),
            Err(e) => {
                refuse(&["bearer_token_file".into()], format!("remote_write.bearer_token_file: {e}"));
                None
            }
        },
        (None, Some(basic)) => match read(&basic.password_file) {
            Ok(password) => {
                let pair = format!("{}:{password}", basic.username);
                Some(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair)))
            }
            Err(e) => {
                let key = [Key::Name("basic_auth"), Key::Name("password_file")];
                refuse(&key, format!("remote_write.basic_auth.password_file: {e}"));
                None
            }
        },
        (None, None) => None,
    }
}

/// Whether `name` is a Prometheus label name.
fn label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
