//! The gNMI service of the simulated switch: Capabilities, Get, Set and
//! Subscribe (STREAM with SAMPLE and ON_CHANGE, ONCE, POLL) over the
//! [`Model`].

// tonic's `Status` is the gRPC error these functions end in; boxing it at
// every internal call only to unbox it at the RPC boundary buys nothing.
#![allow(clippy::result_large_err)]

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use gnmi_proto::gnmi::g_nmi_server::GNmi;
use gnmi_proto::gnmi::subscribe_request::Request as SubRequest;
use gnmi_proto::gnmi::subscribe_response::Response as SubResponse;
use gnmi_proto::gnmi::subscription_list::Mode as ListMode;
use gnmi_proto::gnmi::{
    CapabilityRequest, CapabilityResponse, Encoding, GetRequest, GetResponse, ModelData, Notification, Path,
    SetRequest, SetResponse, SubscribeRequest, SubscribeResponse, Subscription, SubscriptionList, SubscriptionMode,
    TypedValue, Update,
};
use gnmi_proto::path::path_to_string;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::metadata::MetadataMap;
use tonic::{Request, Response, Status, Streaming};

use super::model::Model;
use super::tree::{self, Tree};
use super::Styles;

/// Responses a subscription may have queued for a slow client. A full
/// queue makes the sampler wait, so a slow client slows its own stream and
/// never grows the switch's memory.
const RESPONSE_QUEUE: usize = 64;
/// The fastest sample interval honoured: a client asking for 0 or 1 ns
/// must not turn the switch into a busy loop. SONiC's floor is similar.
const MIN_SAMPLE_INTERVAL: Duration = Duration::from_millis(10);
/// The interval of SAMPLE (and TARGET_DEFINED counters) when none is given.
const DEFAULT_SAMPLE_INTERVAL: Duration = Duration::from_secs(1);

/// The gNMI service over one model.
#[derive(Debug, Clone)]
pub struct Service {
    model: Model,
    credentials: Option<(String, String)>,
    stop: watch::Receiver<bool>,
    styles: Styles,
    heartbeat_interval: bool,
}

impl Service {
    /// A service over `model`, requiring `credentials` when given; open
    /// subscriptions end with `UNAVAILABLE` when `stop` turns true. It takes
    /// both ways of naming a database and honours `heartbeat_interval`.
    pub fn new(model: Model, credentials: Option<(String, String)>, stop: watch::Receiver<bool>) -> Service {
        Service { model, credentials, stop, styles: Styles::Both, heartbeat_interval: true }
    }

    /// Takes only the ways of naming a database that `styles` allows.
    pub fn with_styles(mut self, styles: Styles) -> Service {
        self.styles = styles;
        self
    }

    /// Honours a subscription's `heartbeat_interval` (or, when `false`,
    /// ignores it as some targets do).
    pub fn with_heartbeat_interval(mut self, honour: bool) -> Service {
        self.heartbeat_interval = honour;
        self
    }

    /// A request's path as this switch reads it ([`tree::request_path`]),
    /// checked to point somewhere in a style this switch takes.
    fn resolve(&self, prefix: Option<&Path>, path: &Path) -> Result<Path, Status> {
        let full = tree::request_path(prefix, path);
        match tree::locate(&full) {
            Ok(at) => match at.style {
                Some(style) if !self.styles.serves(style) => Err(Status::not_found(format!(
                    "{}: this switch does not take the database in the {} style",
                    path_to_string(&full),
                    style.name()
                ))),
                _ => Ok(full),
            },
            // Say why a target the client put in the path did not count.
            Err(status) if !path.target.is_empty() && full.target.is_empty() => Err(Status::new(
                status.code(),
                format!(
                    "{}; the target {:?} in the path is ignored: a gNMI target is read in the prefix only",
                    status.message(),
                    path.target
                ),
            )),
            Err(status) => Err(status),
        }
    }

    fn authorize(&self, metadata: &MetadataMap) -> Result<(), Status> {
        if self.model.read().silent {
            return Err(Status::unavailable("the switch's telemetry server is not answering"));
        }
        let Some((user, password)) = &self.credentials else { return Ok(()) };
        let get = |k: &str| metadata.get(k).and_then(|v| v.to_str().ok());
        if get("username") == Some(user.as_str()) && get("password") == Some(password.as_str()) {
            Ok(())
        } else {
            Err(Status::unauthenticated("username/password metadata missing or wrong"))
        }
    }
}

fn encoding_of(raw: i32) -> Result<Encoding, Status> {
    match Encoding::try_from(raw) {
        Ok(e @ (Encoding::Json | Encoding::JsonIetf)) => Ok(e),
        _ => Err(Status::invalid_argument(format!("encoding {raw} is not supported (JSON and JSON_IETF are)"))),
    }
}

fn now_ns() -> i64 {
    engine::time::wall_clock_now()
}

/// The update's path relative to `prefix` when it starts with it, else the
/// whole path; never a target (it is the prefix's), and the origin only
/// when the prefix does not carry it.
fn relative(prefix: Option<&Path>, full: Path) -> Path {
    let Some(prefix) = prefix else { return Path { target: String::new(), ..full } };
    let origin = if prefix.origin == full.origin { String::new() } else { full.origin };
    if full.elem.starts_with(&prefix.elem) {
        Path { elem: full.elem[prefix.elem.len()..].to_vec(), origin, ..Path::default() }
    } else {
        Path { elem: full.elem, origin, ..Path::default() }
    }
}

fn notification(prefix: Option<&Path>, values: Vec<(Path, TypedValue)>) -> Notification {
    Notification {
        timestamp: now_ns(),
        prefix: prefix.cloned(),
        update: values
            .into_iter()
            .map(|(path, val)| Update { path: Some(relative(prefix, path)), val: Some(val), ..Default::default() })
            .collect(),
        ..Default::default()
    }
}

#[tonic::async_trait]
impl GNmi for Service {
    async fn capabilities(&self, request: Request<CapabilityRequest>) -> Result<Response<CapabilityResponse>, Status> {
        self.authorize(request.metadata())?;
        let model = |name: &str, organization: &str, version: &str| ModelData {
            name: name.into(),
            organization: organization.into(),
            version: version.into(),
        };
        Ok(Response::new(CapabilityResponse {
            supported_models: vec![
                model("openconfig-interfaces", "OpenConfig working group", "2.4.3"),
                model("sonic-db", "SONiC", "0.1.0"),
            ],
            supported_encodings: vec![Encoding::Json as i32, Encoding::JsonIetf as i32],
            g_nmi_version: gnmi_proto::GNMI_VERSION.into(),
            extension: vec![],
        }))
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        self.authorize(request.metadata())?;
        let request = request.into_inner();
        let encoding = encoding_of(request.encoding)?;
        let prefix = request.prefix.as_ref();
        let state = self.model.read();
        let mut notifications = Vec::with_capacity(request.path.len());
        for path in &request.path {
            let values = tree::read(&state, &self.resolve(prefix, path)?, encoding)?;
            notifications.push(notification(prefix, values));
        }
        Ok(Response::new(GetResponse { notification: notifications, ..Default::default() }))
    }

    async fn set(&self, request: Request<SetRequest>) -> Result<Response<SetResponse>, Status> {
        self.authorize(request.metadata())?;
        let request = request.into_inner();
        let prefix = request.prefix.as_ref();
        let paths =
            request.delete.iter().chain(request.replace.iter().chain(&request.update).filter_map(|u| u.path.as_ref()));
        for path in paths {
            self.resolve(prefix, path)?;
        }
        let results = self.model.write(|state| tree::set(state, &request))?;
        self.model.clients().sets.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(message = "Set applied.", operations = results.len());
        Ok(Response::new(SetResponse {
            prefix: request.prefix,
            response: results,
            timestamp: now_ns(),
            ..Default::default()
        }))
    }

    type SubscribeStream = ReceiverStream<Result<SubscribeResponse, Status>>;

    async fn subscribe(
        &self,
        request: Request<Streaming<SubscribeRequest>>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        self.authorize(request.metadata())?;
        let mut requests = request.into_inner();
        let first = requests.message().await?;
        let Some(SubscribeRequest { request: Some(SubRequest::Subscribe(list)), .. }) = first else {
            return Err(Status::invalid_argument("the first SubscribeRequest must carry a SubscriptionList"));
        };
        let encoding = encoding_of(list.encoding)?;
        let subs = self.plan(&list, encoding)?;
        let (tx, rx) = mpsc::channel(RESPONSE_QUEUE);
        let run = Run { model: self.model.clone(), list, encoding, subs, tx, stop: self.stop.clone() };
        tokio::spawn(run.run(requests));
        Ok(Response::new(ReceiverStream::new(rx)))
    }
}

/// One subscription of a list, as the sampler runs it.
#[derive(Debug)]
struct Sub {
    /// Joined with the list's prefix.
    full: Path,
    /// Send when the value changes.
    on_change: bool,
    /// Send every `interval` (SAMPLE), or at least that often (heartbeat).
    interval: Option<Duration>,
    /// SAMPLE with `suppress_redundant`: send only what changed, except at
    /// the heartbeat.
    suppress: bool,
    heartbeat: Option<Duration>,
    next: Instant,
    next_heartbeat: Option<Instant>,
    /// The last value sent per concrete path, for ON_CHANGE and suppression.
    last: HashMap<String, TypedValue>,
}

impl Service {
    fn plan(&self, list: &SubscriptionList, encoding: Encoding) -> Result<Vec<Sub>, Status> {
        if list.subscription.is_empty() {
            return Err(Status::invalid_argument("the SubscriptionList has no subscription"));
        }
        let state = self.model.read();
        let now = Instant::now();
        let mut subs = Vec::new();
        for Subscription { path, mode, sample_interval, suppress_redundant, heartbeat_interval } in &list.subscription {
            let full = self.resolve(list.prefix.as_ref(), &path.clone().unwrap_or_default())?;
            // Unknown paths fail the RPC now, not silently later.
            tree::read(&state, &full, encoding)?;
            let (tree_kind, _) = tree::classify(&full)?;
            let sample = |ns: u64| {
                if ns == 0 {
                    DEFAULT_SAMPLE_INTERVAL
                } else {
                    Duration::from_nanos(ns).max(MIN_SAMPLE_INTERVAL)
                }
            };
            let heartbeat = (self.heartbeat_interval && *heartbeat_interval > 0)
                .then(|| Duration::from_nanos(*heartbeat_interval).max(MIN_SAMPLE_INTERVAL));
            let mode = SubscriptionMode::try_from(*mode)
                .map_err(|_| Status::invalid_argument(format!("subscription mode {mode} is unknown")))?;
            let on_change = match mode {
                SubscriptionMode::OnChange => true,
                SubscriptionMode::Sample => false,
                // Configuration and oper-status change rarely; counters always.
                SubscriptionMode::TargetDefined => tree_kind == Tree::Config,
            };
            let interval = if on_change { None } else { Some(sample(*sample_interval)) };
            subs.push(Sub {
                full,
                on_change,
                interval,
                suppress: *suppress_redundant,
                heartbeat,
                next: now + interval.unwrap_or_default(),
                next_heartbeat: heartbeat.map(|h| now + h),
                last: HashMap::new(),
            });
        }
        Ok(subs)
    }
}

/// A running Subscribe RPC.
struct Run {
    model: Model,
    list: SubscriptionList,
    encoding: Encoding,
    subs: Vec<Sub>,
    tx: mpsc::Sender<Result<SubscribeResponse, Status>>,
    stop: watch::Receiver<bool>,
}

/// Resolves when the switch stops (or its stop signal is dropped).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

/// The client is gone, or the switch stops.
struct Ended;

impl Run {
    async fn send(&self, response: SubscribeResponse) -> Result<(), Ended> {
        self.tx.send(Ok(response)).await.map_err(|_| Ended)
    }

    async fn sync(&self) -> Result<(), Ended> {
        self.send(SubscribeResponse { response: Some(SubResponse::SyncResponse(true)), extension: vec![] }).await
    }

    /// Reads sub `i` and sends its values: all of them when `all`, else
    /// those that changed since last sent.
    async fn emit(&mut self, i: usize, all: bool) -> Result<(), Ended> {
        let read = {
            let state = self.model.read();
            tree::read(&state, &self.subs[i].full, self.encoding)
        };
        let values = {
            match read {
                Ok(values) => values,
                // A path that vanished (a deleted CONFIG_DB entry): report
                // the delete, keep the stream.
                Err(status) if status.code() == tonic::Code::NotFound => Vec::new(),
                Err(status) => {
                    let _ = self.tx.send(Err(status)).await;
                    return Err(Ended);
                }
            }
        };
        let sub = &mut self.subs[i];
        let mut send = Vec::with_capacity(values.len());
        let mut seen = std::collections::HashSet::with_capacity(values.len());
        for (path, value) in values {
            let key = path_to_string(&path);
            let changed = sub.last.get(&key) != Some(&value);
            seen.insert(key.clone());
            if all || changed {
                sub.last.insert(key, value.clone());
                send.push((path, value));
            }
        }
        let deleted: Vec<String> = sub.last.keys().filter(|k| !seen.contains(*k)).cloned().collect();
        let mut gone = Vec::new();
        for key in deleted {
            sub.last.remove(&key);
            if let Ok(path) = gnmi_proto::parse_path(&key) {
                gone.push(relative(self.list.prefix.as_ref(), path));
            }
        }
        if send.is_empty() && gone.is_empty() {
            return Ok(());
        }
        let mut note = notification(self.list.prefix.as_ref(), send);
        note.delete = gone;
        self.send(SubscribeResponse { response: Some(SubResponse::Update(note)), extension: vec![] }).await
    }

    /// Every value of every subscription, then (when `sync`) sync_response.
    async fn snapshot(&mut self, send_values: bool) -> Result<(), Ended> {
        for i in 0..self.subs.len() {
            if send_values {
                self.emit(i, true).await?;
            } else {
                // updates_only: remember the current values so later
                // changes are told apart from the initial state.
                let values = {
                    let state = self.model.read();
                    tree::read(&state, &self.subs[i].full, self.encoding).unwrap_or_default()
                };
                self.subs[i].last = values.into_iter().map(|(p, v)| (path_to_string(&p), v)).collect();
            }
        }
        self.sync().await
    }

    async fn run(mut self, mut requests: Streaming<SubscribeRequest>) {
        let clients = self.model.clients();
        clients.subscribed.fetch_add(1, Ordering::Relaxed);
        clients.streaming.fetch_add(1, Ordering::Relaxed);
        let mode = ListMode::try_from(self.list.mode).unwrap_or(ListMode::Stream);
        let _ = match mode {
            ListMode::Once => self.snapshot(!self.list.updates_only).await,
            ListMode::Poll => self.poll(&mut requests).await,
            ListMode::Stream => self.stream(&mut requests).await,
        };
        self.model.clients().streaming.fetch_sub(1, Ordering::Relaxed);
    }

    async fn poll(&mut self, requests: &mut Streaming<SubscribeRequest>) -> Result<(), Ended> {
        self.snapshot(!self.list.updates_only).await?;
        loop {
            let mut stop = self.stop.clone();
            tokio::select! {
                _ = stopped(&mut stop) => return self.stopping().await,
                message = requests.message() => match message {
                    Ok(Some(SubscribeRequest { request: Some(SubRequest::Poll(_)), .. })) => self.snapshot(true).await?,
                    Ok(Some(_)) => {
                        let _ = self.tx.send(Err(Status::invalid_argument("only Poll may follow the SubscriptionList in POLL mode"))).await;
                        return Err(Ended);
                    }
                    Ok(None) | Err(_) => return Ok(()),
                },
            }
        }
    }

    async fn stopping(&self) -> Result<(), Ended> {
        let _ = self.tx.send(Err(Status::unavailable("the switch is shutting down"))).await;
        Err(Ended)
    }

    async fn stream(&mut self, requests: &mut Streaming<SubscribeRequest>) -> Result<(), Ended> {
        let mut changes = self.model.changes();
        changes.borrow_and_update();
        self.snapshot(!self.list.updates_only).await?;
        let mut client_open = true;
        loop {
            let now = Instant::now();
            let due = self
                .subs
                .iter()
                .flat_map(|s| [s.interval.map(|_| s.next), s.next_heartbeat])
                .flatten()
                .min()
                .unwrap_or(now + Duration::from_secs(3600));
            let mut stop = self.stop.clone();
            let tx = self.tx.clone();
            tokio::select! {
                _ = stopped(&mut stop) => return self.stopping().await,
                _ = tx.closed() => return Err(Ended),
                changed = changes.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                    for i in 0..self.subs.len() {
                        if self.subs[i].on_change {
                            self.emit(i, false).await?;
                        }
                    }
                }
                _ = tokio::time::sleep_until(due) => {
                    let now = Instant::now();
                    for i in 0..self.subs.len() {
                        let heartbeat = self.subs[i].next_heartbeat.is_some_and(|t| t <= now);
                        let sample = self.subs[i].interval.is_some() && self.subs[i].next <= now;
                        if heartbeat {
                            let h = self.subs[i].heartbeat.unwrap_or(DEFAULT_SAMPLE_INTERVAL);
                            self.subs[i].next_heartbeat = Some(now + h);
                        }
                        if sample {
                            let interval = self.subs[i].interval.unwrap_or(DEFAULT_SAMPLE_INTERVAL);
                            // Fixed cadence; a late tick does not pile up.
                            let mut next = self.subs[i].next + interval;
                            if next <= now {
                                next = now + interval;
                            }
                            self.subs[i].next = next;
                        }
                        if heartbeat || sample {
                            let all = heartbeat || !self.subs[i].suppress;
                            self.emit(i, all).await?;
                        }
                    }
                }
                message = requests.message(), if client_open => match message {
                    // A client may half-close after its list; the stream goes on.
                    Ok(None) => client_open = false,
                    Ok(Some(_)) => {
                        let _ = self.tx.send(Err(Status::invalid_argument("nothing may follow the SubscriptionList in STREAM mode"))).await;
                        return Err(Ended);
                    }
                    Err(_) => return Err(Ended),
                },
            }
        }
    }
}
