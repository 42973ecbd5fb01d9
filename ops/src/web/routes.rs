//! What each path of the console answers, and who may write.
//!
//! | path | answer |
//! |---|---|
//! | `GET /` | the page |
//! | `GET /sections` | its sections, for the script to swap in |
//! | `GET /events` | the daemon's events, as Server-Sent Events |
//! | `GET /decisions/ID` | the decision as `rocemend explain` prints it |
//! | `GET /incidents/ID/timeline` | the incident's timeline page |
//! | `GET /why?job=J` | why the job is slow, as `rocemend why --job J` says it |
//! | `POST /decisions/ID/approve`, `…/reject` | the request decided: TLS and the full token |
//! | `POST /decisions/ID/undo` | the action in effect undone, as `rocemend undo`: the same |
//! | `GET /console.js`, `/console.css` | the script and the style |
//!
//! Everything is read through the control service itself, in process, so
//! the page shows exactly what the CLI shows.

use std::convert::Infallible;
use std::path::PathBuf;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full, StreamBody};
use hyper::header::{HeaderMap, HeaderValue, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use tonic::Request as Call;

use super::page::{self, Access, Snapshot};
use crate::control::auth::same;
use crate::control::pb::control_server::Control;
use crate::control::pb::{
    DecisionRequest, ExplainRequest, ListDecisionsRequest, ListIncidentsRequest, ListInstancesRequest, StatusRequest,
    WatchRequest,
};
use crate::control::server::ControlService;
use crate::recorded::Files;
use crate::report::chain;
use crate::{timeline, why};

/// A response body: a whole text, or the event stream.
pub type Body = BoxBody<Bytes, Infallible>;

/// Decisions older than this are not listed on the page (the CLI has them).
const DECISIONS_SINCE: i64 = 24 * 3600 * 1_000_000_000;

/// Longest `X-Rocemend-By` kept: a name, not a document.
const MAX_BY: usize = 64;

/// The console's state: the control service (its unix-socket flavour:
/// this module does its own authorisation) and what it needs for writes
/// and timelines.
#[derive(Clone)]
pub struct Console {
    service: ControlService,
    /// The full token, when writes are possible at all.
    token: Option<String>,
    /// Whether this listener is TLS.
    tls: bool,
    /// The daemon's config file, for incident timelines.
    config: PathBuf,
    /// etcd, when `[fleet]` is set.
    fleet: Option<super::fleet::FleetReader>,
}

impl Console {
    /// A console reading through `service`.
    pub fn new(service: ControlService, token: Option<String>, tls: bool, config: PathBuf) -> Console {
        Console { service, token, tls, config, fleet: None }
    }

    /// And the fleet's state from etcd.
    pub fn with_fleet(mut self, fleet: Option<super::fleet::FleetReader>) -> Console {
        self.fleet = fleet;
        self
    }

    fn access(&self) -> Access {
        if self.tls && self.token.is_some() {
            Access::Writable
        } else {
            Access::ReadOnly
        }
    }

    /// Answers one request.
    pub async fn handle(&self, req: Request<hyper::body::Incoming>) -> Response<Body> {
        let path = req.uri().path().to_string();
        let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
        match (req.method().clone(), parts.as_slice()) {
            (Method::GET, [""]) => html(StatusCode::OK, page::full(&self.snapshot().await, self.access())),
            (Method::GET, ["sections"]) => html(StatusCode::OK, page::sections(&self.snapshot().await, self.access())),
            (Method::GET, ["events"]) => self.events().await,
            (Method::GET, ["console.js"]) => asset("text/javascript", include_str!("assets/console.js")),
            (Method::GET, ["console.css"]) => asset("text/css", include_str!("assets/console.css")),
            (Method::GET, ["decisions", id]) => self.explain(id).await,
            (Method::GET, ["incidents", id, "timeline"]) => self.timeline(id).await,
            (Method::GET, ["why"]) => match query_value(req.uri().query().unwrap_or(""), "job") {
                Some(job) => self.why(job).await,
                None => plain(StatusCode::BAD_REQUEST, "which job? /why?job=NAME\n".into()),
            },
            (Method::POST, ["decisions", id, verb @ ("approve" | "reject" | "undo")]) => {
                match self.authorize(req.headers()) {
                    Ok(()) => self.write(id, verb, by(req.headers())).await,
                    Err((status, why)) => plain(status, why),
                }
            }
            (Method::GET | Method::POST, _) => plain(StatusCode::NOT_FOUND, format!("nothing at {path}\n")),
            _ => plain(StatusCode::METHOD_NOT_ALLOWED, "only GET, and POST to approve, reject or undo\n".into()),
        }
    }

    /// Reads everything the page shows. A part that cannot be read is
    /// named on the page, not left out in silence.
    pub async fn snapshot(&self) -> Snapshot {
        let s = &self.service;
        let mut snap = Snapshot::default();
        let problem = |what: &str, e: tonic::Status| format!("{what}: {}", e.message());
        let mut problems = Vec::new();
        match s.status(Call::new(StatusRequest {})).await {
            Ok(r) => snap.status = r.into_inner(),
            Err(e) => problems.push(problem("status", e)),
        }
        match s.list_incidents(Call::new(ListIncidentsRequest { since_ns: 0 })).await {
            Ok(r) => {
                snap.incidents = r.into_inner().incidents;
                snap.incidents.sort_by_key(|i| std::cmp::Reverse(i.started_ns));
            }
            Err(e) => problems.push(problem("incidents", e)),
        }
        match s.list_instances(Call::new(ListInstancesRequest { rule: String::new() })).await {
            Ok(r) => snap.instances = r.into_inner().instances,
            Err(e) => problems.push(problem("rule states", e)),
        }
        let since = engine::time::wall_clock_now() - DECISIONS_SINCE;
        match decisions_since(s, since).await {
            Ok(decisions) => {
                snap.decisions = decisions;
                snap.decisions.sort_by_key(|d| std::cmp::Reverse(d.proposal.decided_at));
            }
            Err(e) => problems.push(problem("decisions", e)),
        }
        if let Some(fleet) = &self.fleet {
            snap.fleet = Some(fleet.read().await);
        }
        snap.problems = problems;
        snap
    }

    async fn events(&self) -> Response<Body> {
        match self.service.watch(Call::new(WatchRequest { kinds: vec![] })).await {
            Ok(stream) => {
                let body = StreamBody::new(super::sse::body(stream.into_inner())).boxed();
                let mut r = Response::new(body);
                let h = r.headers_mut();
                h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
                h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
                r
            }
            Err(e) => plain(StatusCode::SERVICE_UNAVAILABLE, format!("{}\n", e.message())),
        }
    }

    async fn explain(&self, id: &str) -> Response<Body> {
        match self.service.explain(Call::new(ExplainRequest { id: id.to_string() })).await {
            Ok(r) => {
                let r = r.into_inner();
                let chain: Vec<engine::dispatch::Decision> =
                    r.decisions_json.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
                let offender: Option<engine::ledger::Offender> = serde_json::from_str(&r.offender_json).ok();
                html(StatusCode::OK, page::explain(&chain, offender.as_ref()))
            }
            Err(e) => plain(StatusCode::NOT_FOUND, format!("{}\n", e.message())),
        }
    }

    /// The incident's timeline, as `rocemend timeline --incident ID`
    /// draws it. It reads the recording and asks this daemon for its
    /// decisions over the control socket: blocking work, on a thread of
    /// its own (it starts a runtime of its own).
    async fn timeline(&self, id: &str) -> Response<Body> {
        let request =
            timeline::Request { files: self.files(), incident: Some(id.to_string()), ..timeline::Request::default() };
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = tx.send(timeline::render(&request, engine::time::wall_clock_now(), false));
        });
        match rx.await {
            Ok(Ok(drawn)) => {
                let mut r = Response::new(full(drawn.html));
                r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
                r
            }
            Ok(Err(e)) => plain(StatusCode::NOT_FOUND, format!("{}\n", chain(&e))),
            Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "the timeline could not be drawn\n".into()),
        }
    }

    /// Why `job` is slow, as `rocemend why --job` answers from the daemon's
    /// recording and ledger: blocking work, on a thread of its own.
    async fn why(&self, job: String) -> Response<Body> {
        if let Err(e) = sensors::job::check_name("job", &job) {
            return plain(StatusCode::BAD_REQUEST, format!("{e}\n"));
        }
        let request = why::Request {
            job,
            from: None,
            to: None,
            threshold: why::window::DEFAULT_THRESHOLD,
            files: self.files(),
            all_metrics: false,
        };
        let (tx, rx) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let answer = why::answer(&request, engine::time::wall_clock_now());
            let _ = tx.send(answer.map(|(r, _)| why::render::text(&r)));
        });
        match rx.await {
            Ok(Ok(text)) => html(StatusCode::OK, page::why(&text)),
            Ok(Err(e)) => plain(StatusCode::NOT_FOUND, format!("{}\n", chain(&e))),
            Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "the analysis could not run\n".into()),
        }
    }

    /// The daemon's files, as its config names them.
    fn files(&self) -> Files {
        Files { config: Some(self.config.clone()), ..Files::default() }
    }

    /// Whether this request may write: over TLS, with the full token.
    fn authorize(&self, headers: &HeaderMap) -> Result<(), (StatusCode, String)> {
        if !self.tls {
            return Err((
                StatusCode::FORBIDDEN,
                "refused: this console is served over plain HTTP, where a token would travel in the clear; \
                 approve with `rocemend approve`, or serve the console with web.tls_cert, web.tls_key and web.token_file\n"
                    .into(),
            ));
        }
        let Some(token) = &self.token else {
            return Err((
                StatusCode::FORBIDDEN,
                "refused: this console is read-only (web.token_file is not set)\n".into(),
            ));
        };
        let presented = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        match presented {
            None => Err((
                StatusCode::UNAUTHORIZED,
                "refused: approve and reject need `Authorization: Bearer <token>`\n".into(),
            )),
            Some(p) if same(p, token) => Ok(()),
            Some(_) => Err((StatusCode::UNAUTHORIZED, "refused: wrong token\n".into())),
        }
    }

    /// Approve, reject or undo `id`, through the control service.
    async fn write(&self, id: &str, verb: &str, by: String) -> Response<Body> {
        let request = Call::new(DecisionRequest { id: id.to_string(), by });
        let result = match verb {
            "approve" => self.service.approve(request).await,
            "reject" => self.service.reject(request).await,
            _ => self.service.undo(request).await,
        };
        match result {
            Ok(r) => {
                let mut resp = Response::new(full(r.into_inner().decision_json));
                resp.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                resp
            }
            Err(e) => {
                let status = match e.code() {
                    tonic::Code::NotFound | tonic::Code::InvalidArgument => StatusCode::CONFLICT,
                    tonic::Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
                    _ => StatusCode::INTERNAL_SERVER_ERROR,
                };
                plain(status, format!("{}\n", e.message()))
            }
        }
    }
}

/// The value of `key` in a query string, percent-decoded.
fn query_value(query: &str, key: &str) -> Option<String> {
    let raw = query.split('&').find_map(|pair| pair.strip_prefix(key)?.strip_prefix('='))?;
    let mut out = Vec::with_capacity(raw.len());
    let bytes = raw.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok().filter(|s| !s.is_empty())
}

/// Who decided, as recorded: the name the visitor gave (printable, short)
/// and where it came from.
fn by(headers: &HeaderMap) -> String {
    let name: String = headers
        .get("x-rocemend-by")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_BY)
        .collect();
    let name = name.trim();
    if name.is_empty() {
        "web console".into()
    } else {
        format!("{name} (web console)")
    }
}

fn full(text: String) -> Body {
    Full::new(Bytes::from(text)).boxed()
}

fn plain(status: StatusCode, text: String) -> Response<Body> {
    let mut r = Response::new(full(text));
    *r.status_mut() = status;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// A page of the console: only its own script and style may run or load.
fn html(status: StatusCode, text: String) -> Response<Body> {
    let mut r = plain(status, text);
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    h.insert(
        "content-security-policy",
        HeaderValue::from_static("default-src 'self'; script-src 'self'; style-src 'self'; frame-ancestors 'none'"),
    );
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn asset(content_type: &'static str, text: &'static str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// The page's decisions: every page of the ledger's listing since `since`
/// (one reply is bounded; the day's decisions may fill several).
async fn decisions_since(s: &ControlService, since: i64) -> Result<Vec<engine::dispatch::Decision>, tonic::Status> {
    let mut request = ListDecisionsRequest { since_ns: since, ..ListDecisionsRequest::default() };
    let mut decisions = Vec::new();
    loop {
        let reply = s.list_decisions(Call::new(request.clone())).await?.into_inner();
        decisions.extend(reply.decisions_json.iter().filter_map(|l| serde_json::from_str(l).ok()));
        if reply.next_after.is_empty() {
            return Ok(decisions);
        }
        request.after = reply.next_after;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_value_is_found_and_percent_decoded() {
        assert_eq!(query_value("job=train-7", "job").as_deref(), Some("train-7"));
        assert_eq!(query_value("x=1&job=a%2Fb", "job").as_deref(), Some("a/b"));
        assert_eq!(query_value("jobs=a", "job"), None);
        assert_eq!(query_value("job=", "job"), None);
        assert_eq!(query_value("job=%zz", "job"), None);
        assert_eq!(query_value("job=%4", "job"), None);
    }

    #[test]
    fn the_name_of_who_decided_is_kept_short_and_printable() {
        let mut h = HeaderMap::new();
        assert_eq!(by(&h), "web console");
        h.insert("x-rocemend-by", HeaderValue::from_static("alice"));
        assert_eq!(by(&h), "alice (web console)");
        h.insert("x-rocemend-by", HeaderValue::from_str(&"a".repeat(500)).unwrap());
        assert_eq!(by(&h), format!("{} (web console)", "a".repeat(MAX_BY)));
    }
}
