//! The HTTP endpoint: `/metrics`, `/healthz`, `/readyz` (HTTP/1.1, hyper).
//!
//! - `/metrics`: takes a snapshot from the run loop, then encodes it in
//!   OpenMetrics for a scraper that asks for it (Prometheus does), else in
//!   the Prometheus text format, which `curl` and `promtool check metrics`
//!   read.
//! - `/healthz` (liveness): 200 while the run loop answers within
//!   [`LOOP_TIMEOUT`]; a loop stuck that long is worth a restart.
//! - `/readyz` (readiness): live, and every sensor has delivered a sample
//!   or declared that what it reads does not exist here (`unavailable`),
//!   so a rollout waits until the daemon actually sees the fabric.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use engine::contracts::{HealthBoard, HealthState};
use engine::ledger::Ledger;
use engine::runtime::{Command, DispatchCommand, DispatchStatus, EngineCommand, EngineView};
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::sync::{mpsc, oneshot, watch};

use super::{Format, Metrics};

/// How long the run loop may take to answer before it is called stuck.
pub const LOOP_TIMEOUT: Duration = Duration::from_secs(5);

fn state_name(state: HealthState) -> &'static str {
    match state {
        HealthState::Starting => "starting",
        HealthState::Up => "up",
        HealthState::Degraded => "degraded",
        HealthState::Unavailable => "unavailable",
        HealthState::Stopped => "stopped",
    }
}

/// How long a scrape waits for the dispatcher's figures: it may be in the
/// middle of an actuator call of several seconds, and a scrape must not be.
pub const DISPATCHER_TIMEOUT: Duration = Duration::from_millis(250);

/// What the endpoint reads.
#[derive(Clone)]
pub struct Endpoint {
    /// The metrics.
    pub metrics: Arc<Metrics>,
    /// The run loop.
    pub commands: mpsc::Sender<Command>,
    /// The ledger, for its size.
    pub ledger: Option<Ledger>,
    /// The sensors' health.
    pub health: HealthBoard,
}

impl Endpoint {
    /// Asks the run loop (`who`, for the error) the command `make` builds
    /// around a reply channel, waiting at most `limit`.
    async fn ask<T>(
        &self,
        who: &str,
        limit: Duration,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, String> {
        let (tx, rx) = oneshot::channel();
        let ask = async {
            self.commands.send(make(tx)).await.map_err(|_| "the run loop has stopped".to_string())?;
            rx.await.map_err(|_| format!("the {who} has stopped"))
        };
        match tokio::time::timeout(limit, ask).await {
            Ok(r) => r,
            Err(_) => Err(format!("the {who} did not answer within {limit:?}")),
        }
    }

    async fn dispatch_status(&self) -> Result<DispatchStatus, String> {
        self.ask("dispatcher", DISPATCHER_TIMEOUT, |reply| DispatchCommand::Status { reply }.into()).await
    }

    async fn view(&self) -> Result<EngineView, String> {
        self.ask("run loop", LOOP_TIMEOUT, |reply| EngineCommand::View { reply }.into()).await
    }

    async fn handle(&self, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "only GET\n".into());
        }
        match req.uri().path() {
            "/metrics" => match self.view().await {
                Ok(view) => {
                    self.metrics.refresh(&view, self.ledger.as_ref(), &self.health);
                    // A dispatcher busy with a slow actuator answers late: the
                    // metrics keep its last figures rather than fail the scrape.
                    if let Ok(status) = self.dispatch_status().await {
                        self.metrics.refresh_dispatch(&status);
                    }
                    let format = Format::negotiate(req.headers().get(hyper::header::ACCEPT));
                    reply(StatusCode::OK, format.content_type(), self.metrics.encode_as(format))
                }
                Err(e) => reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", format!("{e}\n")),
            },
            "/healthz" => match self.view().await {
                Ok(_) => reply(StatusCode::OK, "text/plain", "ok\n".into()),
                Err(e) => reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", format!("{e}\n")),
            },
            "/readyz" => {
                if let Err(e) = self.view().await {
                    return reply(StatusCode::SERVICE_UNAVAILABLE, "text/plain", format!("{e}\n"));
                }
                // Ready once every sensor has delivered a sample (or said that
                // what it reads does not exist here): a daemon that sees
                // nothing is not one to roll out.
                let starting: Vec<String> = self
                    .health
                    .not_ready()
                    .into_iter()
                    .map(|h| match h.last_error {
                        Some(e) => format!("{} ({}: {e})", h.name, state_name(h.state)),
                        None => format!("{} ({})", h.name, state_name(h.state)),
                    })
                    .collect();
                if starting.is_empty() {
                    reply(StatusCode::OK, "text/plain", "ready\n".into())
                } else {
                    reply(
                        StatusCode::SERVICE_UNAVAILABLE,
                        "text/plain",
                        format!("no sample yet from: {}\n", starting.join("; ")),
                    )
                }
            }
            _ => reply(StatusCode::NOT_FOUND, "text/plain", "try /metrics, /healthz or /readyz\n".into()),
        }
    }
}

fn reply(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    r
}

/// The metrics endpoint cannot listen.
#[derive(Debug, thiserror::Error)]
#[error("metrics.listen {addr}")]
pub struct BindError {
    /// The address.
    pub addr: String,
    /// Why.
    pub source: std::io::Error,
}

/// Binds `addr` now (so a taken port fails the start) and returns the bound
/// address and the future that serves until `shutdown` turns true.
pub fn bind(
    addr: &str,
    endpoint: Endpoint,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(std::net::SocketAddr, impl std::future::Future<Output = ()>), BindError> {
    let failed = |source| BindError { addr: addr.to_string(), source };
    let std_listener = std::net::TcpListener::bind(addr).map_err(failed)?;
    std_listener.set_nonblocking(true).map_err(failed)?;
    let local = std_listener.local_addr().map_err(failed)?;
    let serve = async move {
        let listener = match tokio::net::TcpListener::from_std(std_listener) {
            Ok(l) => l,
            Err(error) => {
                tracing::error!(message = "Metrics endpoint failed.", %error);
                return;
            }
        };
        tracing::info!(message = "Metrics endpoint listening.", addr = %local);
        loop {
            let (tcp, _) = tokio::select! {
                conn = listener.accept() => match conn {
                    Ok(c) => c,
                    Err(error) => {
                        tracing::warn!(message = "Metrics endpoint: accept failed.", %error);
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                _ = shutdown.changed() => return,
            };
            let endpoint = endpoint.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let endpoint = endpoint.clone();
                    async move { Ok::<_, Infallible>(endpoint.handle(req).await) }
                });
                let conn = hyper::server::conn::http1::Builder::new()
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(Duration::from_secs(10))
                    .serve_connection(TokioIo::new(tcp), service);
                if let Err(error) = conn.await {
                    tracing::debug!(message = "Metrics connection ended with an error.", %error);
                }
            });
        }
    };
    Ok((local, serve))
}
