//! Subscribe, as `client_subscribe.go` and the DB and mixed clients run it
//! (`db_client.go:218-420`, `:1153-1610`; `mixed_db_client.go:1791-2360`).
//!
//! - Routing looks at the origin first (`openconfig` → translib, `sonic-db` → mixed client,
//!   another → Unimplemented "Unsupported origin: X"), then the target (none → Unimplemented
//!   "Empty target data not supported", a database → DB client, anything else → translib).
//! - STREAM: SAMPLE under 1 s ends the stream with InvalidArgument "invalid interval: 200ms.
//!   It cannot be less than 1s" (0 means 1 s); ON_CHANGE is supported; TARGET_DEFINED is not
//!   ("unsupported subscription mode, TARGET_DEFINED"). A table or entry path sends its data at
//!   once (`{}` when there is none yet: a path with no data is not an error), then follows it by
//!   keyspace notifications: ON_CHANGE sends what changed, SAMPLE resends the whole cached
//!   object every interval (a deleted entry's old fields stay in it: deletions of a keyed path
//!   are not applied). A field path is read every interval (ON_CHANGE: every 200 ms, sent when
//!   it changed), as a string. After every path's first update: `sync_response`.
//! - POLL: each poll reads every path and ends with `sync_response`; a path whose data went
//!   away gets a delete. ONCE: one read and `sync_response`. A path with no data sends nothing.
//!   Either ends with InvalidArgument "queue: disposed" once the client closes its side.
//! - Every stream ends with InvalidArgument and the cause's text (`client_subscribe.go:264`).
//! - One client address, one stream (`ClientKey`, stream multiplexing off by default): a new
//!   Subscribe from the address of a running one ends the running one ("queue: disposed").

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use gnmi_proto::gnmi::subscribe_request::Request as ReqKind;
use gnmi_proto::gnmi::subscribe_response::Response;
use gnmi_proto::gnmi::subscription_list::Mode as ListMode;
use gnmi_proto::gnmi::{
    Notification, Path, SubscribeRequest, SubscribeResponse, Subscription, SubscriptionMode, TypedValue, Update,
};
use serde_json::Value as Json;
use tokio::sync::{mpsc, watch};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Status, Streaming};

use super::backend::{glob_match, Backend, Watch};
use super::errors::{go_duration, status, GoError};
use super::get::now_ns;
use super::mixed::Mixed;
use super::render::{
    db_poll_value, json_value, mixed_read, mixed_value, string_value, table_data_to_msi, Encoding, Flavor, Msi,
    TablePath,
};
use super::routing::{parse_origin, target_db, translib_not_served, SONIC_DB};
use super::Shared;

/// The shortest sample interval (`MinSampleInterval`, `db_client.go:83-85`).
pub const MIN_SAMPLE_INTERVAL: Duration = Duration::from_secs(1);
/// How often an ON_CHANGE field is read (`db_client.go:262-268`).
const FIELD_POLL: Duration = Duration::from_millis(200);
/// Responses queued for a slow client before the sending task waits (sonic-gnmi's queue is
/// unbounded; a bound keeps a stuck client from holding the switch's memory).
const QUEUE: usize = 1024;

/// The responses of one Subscribe.
pub type ResponseStream = Pin<Box<dyn Stream<Item = Result<SubscribeResponse, Status>> + Send>>;

/// Which client reads the paths.
#[derive(Debug, Clone)]
enum Client {
    Db,
    Mixed(Mixed),
}

impl Client {
    fn flavor(&self) -> Flavor {
        match self {
            Client::Db => Flavor::Db,
            Client::Mixed(_) => Flavor::Mixed(Encoding::JsonIetf),
        }
    }
}

/// One subscription's ongoing work after its first update.
enum Work {
    /// A table or entry path, followed by keyspace notifications (`dbTableKeySubscribe`).
    Table {
        path: Path,
        tps: Vec<TablePath>,
        interval: Option<Duration>,
        updates_only: bool,
        msi_all: Msi,
        watches: Vec<Watch>,
    },
    /// One field, read every interval (`dbFieldSubscribe`).
    Field { path: Path, tp: TablePath, on_change: bool, interval: Duration, last: String },
    /// A field of many entries (`dbFieldMultiSubscribe`).
    FieldMulti {
        path: Path,
        tps: Vec<TablePath>,
        on_change: bool,
        updates_only: bool,
        interval: Duration,
        seen: Vec<Option<String>>,
    },
}

/// What a Subscribe shares with its tasks.
#[derive(Clone)]
struct Ctx {
    shared: Arc<Shared>,
    prefix: Option<Path>,
    tx: mpsc::Sender<Result<SubscribeResponse, Status>>,
    stop: watch::Receiver<bool>,
    flavor: Flavor,
    /// The namespace whose databases the paths read (empty: the host's).
    namespace: String,
}

impl Ctx {
    fn backend(&self) -> &dyn Backend {
        self.shared.backend_of(&self.namespace)
    }

    fn update(&self, path: &Path, val: TypedValue) -> SubscribeResponse {
        SubscribeResponse {
            response: Some(Response::Update(Notification {
                timestamp: now_ns(),
                prefix: self.prefix.clone(),
                update: vec![Update { path: Some(path.clone()), val: Some(val), ..Default::default() }],
                ..Default::default()
            })),
            ..Default::default()
        }
    }

    async fn send(&self, response: SubscribeResponse) -> bool {
        self.tx.send(Ok(response)).await.is_ok()
    }

    /// A fatal error: the stream ends with it.
    async fn fatal(&self, e: impl ToString) {
        let _ = self.tx.send(Err(status(Code::InvalidArgument, e.to_string()))).await;
    }

    /// Sends `msi` as an update of `path`; false when the stream is over (closed, or ended by
    /// the value's error).
    async fn send_msi(&self, path: &Path, msi: &Msi) -> bool {
        match self.msi_value(msi) {
            Ok(val) => self.send(self.update(path, val)).await,
            Err(e) => {
                self.fatal(e.text()).await;
                false
            }
        }
    }

    fn msi_value(&self, msi: &Msi) -> Result<TypedValue, GoError> {
        match self.flavor {
            Flavor::Db => Ok(json_value(msi)),
            Flavor::Mixed(encoding) => mixed_value(msi, encoding),
        }
    }
}

fn sync() -> SubscribeResponse {
    SubscribeResponse { response: Some(Response::SyncResponse(true)), ..Default::default() }
}

/// `validateSampleInterval`.
fn sample_interval(sub: &Subscription) -> Result<Duration, GoError> {
    match Duration::from_nanos(sub.sample_interval) {
        d if d.is_zero() => Ok(MIN_SAMPLE_INTERVAL),
        d if d < MIN_SAMPLE_INTERVAL => Err(GoError::plain(format!(
            "invalid interval: {}. It cannot be less than {}",
            go_duration(d),
            go_duration(MIN_SAMPLE_INTERVAL)
        ))),
        d => Ok(d),
    }
}

pub(crate) async fn subscribe(
    shared: Arc<Shared>,
    remote: Option<SocketAddr>,
    mut requests: Streaming<SubscribeRequest>,
) -> Result<ResponseStream, Status> {
    let Some(remote) = remote else {
        return Err(status(Code::InvalidArgument, "failed to get peer address"));
    };
    // Registered before the first message is read, as `Server.Subscribe` does: a new stream
    // from this address ends the one running.
    let (stop_tx, stop) = watch::channel(false);
    let id = shared.register(remote, stop_tx);
    let registration = Registration { shared: shared.clone(), remote, id };
    let first = match requests.message().await {
        Ok(Some(first)) => first,
        Ok(None) => return Err(status(Code::Aborted, "stream EOF received before init")),
        Err(e) => return Err(status(e.code(), "received error from client")),
    };
    let Some(ReqKind::Subscribe(list)) = first.request.clone() else {
        return Err(status(Code::InvalidArgument, format!("first message must be SubscriptionList: {first:?}")));
    };
    if list.subscription.is_empty() {
        return Err(status(Code::NotFound, format!("Invalid subscription path: No Subscription {first:?}")));
    }
    let paths: Vec<Path> = list.subscription.iter().map(|s| s.path.clone().unwrap_or_default()).collect();
    let prefix = list.prefix.clone();
    let mode = ListMode::try_from(list.mode);
    let client = route(&shared, prefix.as_ref(), &paths, mode)?;
    // The paths, resolved (`NewDbClient` fails the Subscribe with NOT_FOUND; keys need not exist).
    let mut resolved: Vec<Vec<TablePath>> = Vec::new();
    let namespace = match &client {
        Client::Mixed(mixed) => mixed.namespace.clone(),
        Client::Db => {
            let target = prefix.as_ref().map(|p| p.target.as_str()).unwrap_or_default();
            target_db(target, !shared.config.namespaces.is_empty()).namespace
        }
    };
    if let Client::Db = client {
        let resolver = shared.resolver(&namespace);
        for path in &paths {
            resolved.push(resolver.resolve(prefix.as_ref(), path).await.map_err(|e| e.wrapped(Code::NotFound))?);
        }
    }
    let (tx, rx) = mpsc::channel(QUEUE);
    let ctx = Ctx { shared: shared.clone(), prefix, tx, stop, flavor: client.flavor(), namespace };
    let mode = match mode {
        Ok(m) => m,
        Err(_) => return Err(status(Code::InvalidArgument, format!("Unkown subscription mode: {first:?}"))),
    };
    match mode {
        ListMode::Stream => {
            let first = start_all(&ctx, &client, &list, &resolved).await?;
            tokio::spawn(send_then_run(ctx.clone(), first));
            tokio::spawn(watch_requests(ctx.clone(), requests, ListMode::Stream, None, registration));
        }
        ListMode::Once => {
            let values = read_all(&ctx, &client, &paths, &resolved).await;
            tokio::spawn(send_once(ctx.clone(), paths, values));
            tokio::spawn(watch_requests(ctx.clone(), requests, ListMode::Once, None, registration));
        }
        ListMode::Poll => {
            let (poll_tx, poll_rx) = mpsc::channel(1);
            let _ = poll_tx.try_send(());
            tokio::spawn(poll(ctx.clone(), client, paths, resolved, poll_rx));
            tokio::spawn(watch_requests(ctx.clone(), requests, ListMode::Poll, Some(poll_tx), registration));
        }
    }
    Ok(Box::pin(ReceiverStream::new(rx)))
}

/// Which client serves the subscription (`Server.Subscribe`'s routing by origin and target), or
/// sonic-gnmi's refusal.
fn route(
    shared: &Shared,
    prefix: Option<&Path>,
    paths: &[Path],
    mode: Result<ListMode, impl Sized>,
) -> Result<Client, Status> {
    let o = parse_origin(paths)?;
    let mut origin = prefix.map(|p| p.origin.clone()).unwrap_or_default();
    if origin.is_empty() {
        origin = o;
    } else if !o.is_empty() && o != origin {
        return Err(status(Code::InvalidArgument, "Origin conflict between prefix and paths"));
    }
    let target = prefix.map(|p| p.target.clone()).unwrap_or_default();
    let backend = shared.backend.as_ref();
    // An image without the mixed DB client hands origin sonic-db to translib too.
    if origin == "openconfig" || (origin == SONIC_DB && !shared.config.mixed_db) {
        Err(translib_not_served(paths).passed_or(Code::NotFound))
    } else if origin == SONIC_DB {
        let mixed = Mixed::new(backend, &shared.config.namespaces, prefix, paths, Encoding::JsonIetf)
            .map_err(|e| e.wrapped(Code::NotFound))?;
        Ok(Client::Mixed(mixed))
    } else if !origin.is_empty() {
        Err(status(Code::Unimplemented, format!("Unsupported origin: {origin}")))
    } else if target.is_empty() {
        Err(status(Code::Unimplemented, "Empty target data not supported"))
    } else if target == "SHOW" {
        Err(status(Code::Unimplemented, "SHOW does not support subscribe operations"))
    } else if target == "OTHERS" || (target == "EVENTS" && matches!(mode, Ok(ListMode::Stream))) {
        Err(status(Code::Unimplemented, format!("target {target} is not reproduced by this front")))
    } else if target_db(&target, !shared.config.namespaces.is_empty()).valid {
        Ok(Client::Db)
    } else {
        Err(translib_not_served(paths).passed_or(Code::NotFound))
    }
}

/// Starts every subscription of a STREAM list: each one's first update and its work.
/// Everything that fails before the first update is the stream's only answer.
async fn start_all(
    ctx: &Ctx,
    client: &Client,
    list: &gnmi_proto::gnmi::SubscriptionList,
    resolved: &[Vec<TablePath>],
) -> Result<Vec<(SubscribeResponse, Work)>, Status> {
    let mut out = Vec::new();
    for (i, sub) in list.subscription.iter().enumerate() {
        let started = start(ctx, client, sub, resolved.get(i), list.updates_only)
            .await
            .map_err(|e| status(Code::InvalidArgument, e.text()))?;
        out.push(started);
    }
    Ok(out)
}

/// Sends the first updates, then the sync, then runs each subscription's work.
async fn send_then_run(ctx: Ctx, started: Vec<(SubscribeResponse, Work)>) {
    let (first, works): (Vec<_>, Vec<_>) = started.into_iter().unzip();
    for update in first {
        if !ctx.send(update).await {
            return;
        }
    }
    if !ctx.send(sync()).await {
        return;
    }
    for work in works {
        tokio::spawn(run(ctx.clone(), work));
    }
}

/// A ONCE list's answer: each path's value, then the sync; or the error that ends it.
async fn send_once(ctx: Ctx, paths: Vec<Path>, values: Result<Vec<Option<TypedValue>>, GoError>) {
    match values {
        Err(e) => ctx.fatal(format!("OnceRun error: {}", e.text())).await,
        Ok(values) => {
            for (path, value) in paths.iter().zip(values) {
                if let Some(val) = value {
                    if !ctx.send(ctx.update(path, val)).await {
                        return;
                    }
                }
            }
            ctx.send(sync()).await;
        }
    }
}

/// Removes the client's registration when its stream ends.
struct Registration {
    shared: Arc<Shared>,
    remote: SocketAddr,
    id: u64,
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.shared.unregister(self.remote, self.id);
    }
}

/// The client's side of the stream (`Client.recv`), and the end of the stream when the client
/// is closed: by its side closing (ONCE, POLL), a message a POLL stream does not take, or a
/// newer stream from its address.
async fn watch_requests(
    ctx: Ctx,
    mut requests: Streaming<SubscribeRequest>,
    mode: ListMode,
    polls: Option<mpsc::Sender<()>>,
    _registration: Registration,
) {
    let mut stop = ctx.stop.clone();
    let mut open = true;
    loop {
        tokio::select! {
            _ = stop.changed() => break,
            _ = ctx.tx.closed() => return,
            message = requests.message(), if open => match message {
                Ok(Some(request)) => {
                    if mode == ListMode::Poll {
                        if !matches!(request.request, Some(ReqKind::Poll(_))) {
                            break;
                        }
                        if let Some(polls) = &polls {
                            // A poll while one is pending waits, as Go's channel of one does.
                            if polls.send(()).await.is_err() {
                                continue;
                            }
                        }
                    }
                }
                // A STREAM client may close its side and keep listening (`client_subscribe.go:312-322`).
                Ok(None) if mode == ListMode::Stream => open = false,
                Ok(None) | Err(_) => break,
            },
        }
    }
    ctx.fatal("queue: disposed").await;
}

/// The first update of one STREAM subscription, and the work that follows it.
async fn start(
    ctx: &Ctx,
    client: &Client,
    sub: &Subscription,
    resolved: Option<&Vec<TablePath>>,
    updates_only: bool,
) -> Result<(SubscribeResponse, Work), GoError> {
    let path = sub.path.clone().unwrap_or_default();
    let mode = SubscriptionMode::try_from(sub.mode);
    let (on_change, interval) = match mode {
        Ok(SubscriptionMode::Sample) => (false, sample_interval(sub)?),
        Ok(SubscriptionMode::OnChange) => (true, Duration::ZERO),
        _ => {
            let name = mode.map_or_else(|_| sub.mode.to_string(), |m| m.as_str_name().to_string());
            return Err(GoError::plain(format!("unsupported subscription mode, {name}")));
        }
    };
    let tps = match (client, resolved) {
        (Client::Db, Some(tps)) => tps.clone(),
        (Client::Mixed(mixed), _) => {
            let (tp, _) = mixed.table_path(ctx.backend(), &path, None).await.map_err(|e| {
                if on_change {
                    GoError::plain(format!("streamOnChangeSubscription error:  {}", e.text()))
                } else {
                    e
                }
            })?;
            vec![tp]
        }
        (Client::Db, None) => Vec::new(),
    };
    let field_path = tps.first().is_some_and(|t| !t.field.is_empty());
    let field_interval = if on_change { FIELD_POLL } else { interval };
    if field_path && tps.len() > 1 && matches!(client, Client::Db) {
        let mut work = Work::FieldMulti {
            path: path.clone(),
            tps,
            on_change,
            updates_only,
            interval: field_interval,
            seen: Vec::new(),
        };
        let msi = read_field_multi(ctx, &mut work).await?;
        let val = ctx.msi_value(&msi)?;
        return Ok((ctx.update(&path, val), work));
    }
    if field_path {
        let tp = tps[0].clone();
        let last = read_field(ctx, &tp).await;
        let update = ctx.update(&path, string_value(last.clone()));
        return Ok((update, Work::Field { path, tp, on_change, interval: field_interval, last }));
    }
    // Subscribed before the first read, so nothing falls between.
    let mut watches = Vec::new();
    let mut patterns: Vec<String> = tps.iter().map(watch_pattern).collect();
    patterns.sort();
    patterns.dedup();
    for pattern in patterns {
        let db = tps.first().map(|t| t.db.clone()).unwrap_or_default();
        let w = ctx.backend().watch(&db, &pattern).await.map_err(|_| {
            let id = ctx.backend().database(&db).map_or(0, |d| d.id);
            GoError::plain(format!("psubscribe to __keyspace@{id}__:{pattern} failed"))
        })?;
        watches.push(w);
    }
    let mut msi_all = Msi::new();
    for tp in &tps {
        table_data_to_msi(ctx.backend(), tp, false, ctx.flavor, &mut msi_all).await?;
    }
    let val = ctx.msi_value(&msi_all)?;
    if updates_only {
        msi_all.clear();
    }
    let interval = (!on_change).then_some(interval);
    Ok((ctx.update(&path, val), Work::Table { path, tps, interval, updates_only, msi_all, watches }))
}

/// The keyspace pattern a table path is followed by: its table (sonic-gnmi subscribes each
/// entry; one subscription per table carries the same notifications).
fn watch_pattern(tp: &TablePath) -> String {
    if tp.key.is_empty() {
        return tp.table_pattern();
    }
    let exact = tp.table_pattern();
    if exact == tp.table {
        exact
    } else {
        format!("{}{}*", crate::client::escape_glob(&tp.table), tp.sep)
    }
}

/// Whether a notification of `key` is about `tp`, and the entry key it names.
fn about<'a>(tp: &TablePath, key: &'a str) -> Option<&'a str> {
    if !tp.key.is_empty() {
        return (key == tp.redis_key()).then_some("");
    }
    if !glob_match(&tp.table_pattern(), key) {
        return None;
    }
    Some(key.strip_prefix(&tp.table).map_or("", |rest| rest.strip_prefix(tp.sep).unwrap_or(rest)))
}

async fn read_field(ctx: &Ctx, tp: &TablePath) -> String {
    // A missing field, or an error, reads as "" (`db_client.go:1275-1284`).
    ctx.backend().hget(&tp.db, &tp.redis_key(), &tp.field).await.ok().flatten().unwrap_or_default()
}

async fn read_field_multi(ctx: &Ctx, work: &mut Work) -> Result<Msi, GoError> {
    let Work::FieldMulti { tps, on_change, updates_only, seen, .. } = work else { return Ok(Msi::new()) };
    if seen.len() != tps.len() {
        *seen = vec![None; tps.len()];
    }
    let mut msi = Msi::new();
    for (i, tp) in tps.iter().enumerate() {
        let val = match ctx.backend().hget(&tp.db, &tp.redis_key(), &tp.field).await {
            Ok(Some(v)) => v,
            Ok(None) if !tp.json_field.is_empty() => continue,
            _ => String::new(),
        };
        if (*on_change || *updates_only) && seen[i].as_deref() == Some(val.as_str()) {
            continue;
        }
        seen[i] = Some(val.clone());
        let fv = serde_json::Map::from_iter([(tp.json_field.clone(), Json::String(val))]);
        msi.insert(tp.json_table_key.clone(), Json::Object(fv));
    }
    Ok(msi)
}

/// The ongoing part of one STREAM subscription, until the stream ends.
async fn run(ctx: Ctx, work: Work) {
    match work {
        Work::Field { path, tp, on_change, interval, last } => {
            run_field(ctx, path, tp, on_change, interval, last).await
        }
        work @ Work::FieldMulti { .. } => run_field_multi(ctx, work).await,
        Work::Table { path, tps, interval, updates_only, msi_all, watches } => {
            run_table(ctx, path, tps, interval, updates_only, msi_all, watches).await
        }
    }
}

/// One field, read every interval, sent when it changed (or always, SAMPLE).
async fn run_field(ctx: Ctx, path: Path, tp: TablePath, on_change: bool, interval: Duration, mut last: String) {
    let mut stop = ctx.stop.clone();
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        let val = read_field(&ctx, &tp).await;
        if !on_change || val != last {
            if !ctx.send(ctx.update(&path, string_value(val.clone()))).await {
                return;
            }
            last = val;
        }
    }
}

/// A field of many entries, read every interval.
async fn run_field_multi(ctx: Ctx, mut work: Work) {
    let mut stop = ctx.stop.clone();
    loop {
        let (interval, on_change, path) = match &work {
            Work::FieldMulti { interval, on_change, path, .. } => (*interval, *on_change, path.clone()),
            _ => return,
        };
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(interval) => {}
        }
        let msi = match read_field_multi(&ctx, &mut work).await {
            Ok(msi) => msi,
            Err(e) => return ctx.fatal(e.text()).await,
        };
        if (!on_change || !msi.is_empty()) && !ctx.send_msi(&path, &msi).await {
            return;
        }
    }
}

/// A table or entry followed by its keyspace notifications: each change sent as it comes
/// (ON_CHANGE), or gathered and sent every interval (SAMPLE).
async fn run_table(
    ctx: Ctx,
    path: Path,
    tps: Vec<TablePath>,
    interval: Option<Duration>,
    updates_only: bool,
    mut msi_all: Msi,
    watches: Vec<Watch>,
) {
    let mut stop = ctx.stop.clone();
    let mut events = futures_util::stream::select_all(watches);
    let mut last: Vec<Msi> = vec![Msi::new(); tps.len()];
    let tick = |i: Option<Duration>| async move {
        match i {
            Some(i) => tokio::time::sleep(i).await,
            None => std::future::pending().await,
        }
    };
    let mut next_tick = Box::pin(tick(interval));
    loop {
        tokio::select! {
            _ = stop.changed() => return,
            _ = &mut next_tick => {
                if !ctx.send_msi(&path, &msi_all).await {
                    return;
                }
                if updates_only {
                    msi_all.clear();
                }
                next_tick = Box::pin(tick(interval));
            }
            event = events.next() => {
                // The subscriptions ended (the switch's Redis went away): sonic-gnmi keeps the
                // stream open and silent.
                let Some(event) = event else {
                    let _ = stop.changed().await;
                    return;
                };
                let changes = match table_event(&ctx, &tps, &mut last, &event).await {
                    Ok(changes) => changes,
                    Err(e) => return ctx.fatal(e.text()).await,
                };
                for new in changes {
                    if interval.is_some() {
                        msi_all.extend(new);
                    } else if !ctx.send_msi(&path, &new).await {
                        return;
                    }
                }
            }
        }
    }
}

/// What one keyspace notification changes, per table path it is about: a deleted entry as an
/// empty object (a table path), an entry written as it now reads (when it differs from the
/// last sent).
async fn table_event(
    ctx: &Ctx,
    tps: &[TablePath],
    last: &mut [Msi],
    event: &super::backend::KeyEvent,
) -> Result<Vec<Msi>, GoError> {
    let mut out = Vec::new();
    for (i, tp) in tps.iter().enumerate() {
        let Some(entry) = about(tp, &event.key) else { continue };
        let mut new = Msi::new();
        match event.event.as_str() {
            "del" | "hdel" if tp.key.is_empty() => {
                new.insert(entry.to_string(), Json::Object(Default::default()));
            }
            "hset" => {
                if tp.key.is_empty() {
                    let one = TablePath { key: entry.to_string(), ..tp.clone() };
                    table_data_to_msi(ctx.backend(), &one, true, ctx.flavor, &mut new).await?;
                } else {
                    table_data_to_msi(ctx.backend(), tp, false, ctx.flavor, &mut new).await?;
                }
                if new == last[i] {
                    continue;
                }
                last[i] = new.clone();
            }
            _ => continue,
        }
        if !new.is_empty() {
            out.push(new);
        }
    }
    Ok(out)
}

/// One read of every path, for ONCE and POLL: `None` where nothing was found.
async fn read_all(
    ctx: &Ctx,
    client: &Client,
    paths: &[Path],
    resolved: &[Vec<TablePath>],
) -> Result<Vec<Option<TypedValue>>, GoError> {
    let mut out = Vec::new();
    for (i, path) in paths.iter().enumerate() {
        out.push(match client {
            Client::Db => db_poll_value(ctx.backend(), resolved.get(i).map(Vec::as_slice).unwrap_or_default()).await?,
            Client::Mixed(mixed) => {
                let (tp, _) = mixed.table_path(ctx.backend(), path, None).await?;
                mixed_read(ctx.backend(), &[tp], Encoding::JsonIetf).await?
            }
        });
    }
    Ok(out)
}

/// `PollRun`: a read of every path per poll, a delete for a path whose data went away.
async fn poll(
    ctx: Ctx,
    client: Client,
    paths: Vec<Path>,
    resolved: Vec<Vec<TablePath>>,
    mut polls: mpsc::Receiver<()>,
) {
    let mut had: BTreeMap<usize, bool> = BTreeMap::new();
    while polls.recv().await.is_some() {
        // An error ends the polling silently (`db_client.go:352-354`): later polls get nothing.
        let Ok(values) = read_all(&ctx, &client, &paths, &resolved).await else { return };
        for (i, (path, value)) in paths.iter().zip(values).enumerate() {
            let response = match value {
                Some(val) => {
                    had.insert(i, true);
                    ctx.update(path, val)
                }
                None if had.get(&i) == Some(&true) => {
                    had.insert(i, false);
                    SubscribeResponse {
                        response: Some(Response::Update(Notification {
                            timestamp: now_ns(),
                            prefix: ctx.prefix.clone(),
                            delete: vec![path.clone()],
                            ..Default::default()
                        })),
                        ..Default::default()
                    }
                }
                None => continue,
            };
            if !ctx.send(response).await {
                return;
            }
        }
        if !ctx.send(sync()).await {
            return;
        }
    }
}
