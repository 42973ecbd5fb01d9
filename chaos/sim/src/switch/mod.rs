//! A simulated SONiC switch speaking gNMI, for tests, benchmarks and the
//! fabric simulator.
//!
//! A [`Model`] holds one switch: ports `Ethernet0`, `Ethernet4`, … with 8
//! queues each, PFC counters per priority, queue counters and watermarks,
//! the PFC watchdog's status and stats per queue, oper-status, and the
//! CONFIG_DB tables `PFC_WD`, `WRED_PROFILE`, `PORT` and `QUEUE`. [`serve`] runs the gNMI
//! service over it (Capabilities, Get, Set, Subscribe in STREAM — SAMPLE
//! and ON_CHANGE —, ONCE and POLL modes) at the paths sonic-gnmi uses; see
//! [`tree`] for the path table. The database comes from the request
//! prefix's target or from origin `sonic-db` with the database as the first
//! element ([`Options::styles`]); a target outside the prefix is ignored, as
//! the gNMI specification says. Set (CONFIG_DB only) validates like SONiC
//! and answers `INVALID_ARGUMENT` for bad values, `NOT_FOUND` for unknown
//! paths.
//!
//! ```no_run
//! # async fn example() -> Result<(), sim::switch::SwitchError> {
//! use sim::switch::spawn_many;
//!
//! // Eight switches of 32 ports on loopback ports the OS picks.
//! let switches = spawn_many(8, 32).await?;
//! switches[0].model.inject_pfc_storm("Ethernet8", 3).unwrap();
//! switches[0].model.advance(std::time::Duration::from_millis(300));
//! for switch in switches {
//!     println!("{} at {}", switch.name, switch.addr);
//!     switch.stop().await.unwrap();
//! }
//! # Ok(()) }
//! ```
//!
//! - [`model`]: the switch's state and what drives it ([`Model::advance`],
//!   [`Model::inject_pfc_storm`], [`drive`]);
//! - [`config`]: CONFIG_DB defaults and SONiC's validation;
//! - [`counters`]: COUNTERS_DB: OIDs, name maps, sonic-gnmi's virtual paths;
//! - [`tree`]: gNMI paths → values, and Set;
//! - [`service`]: the tonic gNMI service.

pub mod config;
pub mod counters;
pub mod model;
mod reply;
pub mod service;
pub mod tree;

use std::future::Future;
use std::net::SocketAddr;

use gnmi_proto::gnmi::g_nmi_server::GNmiServer;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

pub use model::{drive, Clients, Model, ModelError, QUEUES};
pub use service::Service;
pub use tree::Style;

/// Largest message the switch accepts: a Set of a few hundred fields is a
/// few kilobytes; 4 MiB (gRPC's default) leaves room and bounds memory.
const MAX_REQUEST_BYTES: usize = 4 << 20;

/// TLS for the switch, PEM-encoded.
#[derive(Debug, Clone)]
pub struct ServerTls {
    /// The switch's certificate chain.
    pub cert_pem: Vec<u8>,
    /// Its private key.
    pub key_pem: Vec<u8>,
    /// When given, clients must present a certificate signed by this CA.
    pub client_ca_pem: Option<Vec<u8>>,
}

/// How the switch serves.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// TLS, or plain HTTP/2 when `None`.
    pub tls: Option<ServerTls>,
    /// Require `username`/`password` metadata, as SONiC's telemetry does
    /// with password authentication on.
    pub credentials: Option<(String, String)>,
    /// Which ways of naming a database the switch takes ([`tree::Style`]):
    /// both, as a recent sonic-gnmi does, or one, as older releases (prefix
    /// target only) and write-only setups do, so clients' `auto` can be
    /// tested.
    pub styles: Styles,
    /// Ignore a subscription's `heartbeat_interval`, as targets that do not
    /// implement it do: ON_CHANGE then sends on change only.
    pub ignore_heartbeat_interval: bool,
}

/// The ways of naming a SONiC database a switch takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Styles {
    /// The prefix's target and origin `sonic-db`.
    #[default]
    Both,
    /// Only the prefix's target (classic SONiC telemetry).
    PrefixTargetOnly,
    /// Only origin `sonic-db` with the database as the first element.
    SonicDbOriginOnly,
}

impl Styles {
    /// Whether `style` is taken.
    pub fn serves(self, style: tree::Style) -> bool {
        match self {
            Styles::Both => true,
            Styles::PrefixTargetOnly => style == tree::Style::PrefixTarget,
            Styles::SonicDbOriginOnly => style == tree::Style::SonicDbOrigin,
        }
    }
}

/// The switch could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SwitchError {
    /// The TLS settings were refused.
    #[error("TLS: {0}")]
    Tls(String),
    /// The server failed.
    #[error("gNMI server: {0}")]
    Transport(String),
    /// Binding the listener failed.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The error.
        source: std::io::Error,
    },
}

/// Serves `model` on `listener` in plain text until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    model: Model,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), SwitchError> {
    serve_with(listener, model, Options::default(), shutdown).await
}

/// Serves `model` on `listener` with `options` until `shutdown` resolves.
/// Open subscriptions then end with `UNAVAILABLE`, as when a switch's
/// telemetry container restarts.
pub async fn serve_with(
    listener: TcpListener,
    model: Model,
    options: Options,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), SwitchError> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut builder = Server::builder();
    if let Some(tls) = &options.tls {
        let mut config = ServerTlsConfig::new().identity(Identity::from_pem(&tls.cert_pem, &tls.key_pem));
        if let Some(ca) = &tls.client_ca_pem {
            config = config.client_ca_root(Certificate::from_pem(ca));
        }
        builder = builder.tls_config(config).map_err(|e| SwitchError::Tls(e.to_string()))?;
    }
    let service = Service::new(model, options.credentials.clone(), stop_rx)
        .with_styles(options.styles)
        .with_heartbeat_interval(!options.ignore_heartbeat_interval);
    let shutdown = async move {
        shutdown.await;
        let _ = stop_tx.send(true);
    };
    builder
        .add_service(GNmiServer::new(service).max_decoding_message_size(MAX_REQUEST_BYTES))
        .serve_with_incoming_shutdown(TcpListenerStream::new(listener), shutdown)
        .await
        .map_err(|e| SwitchError::Transport(e.to_string()))
}

/// A switch serving in the background.
#[derive(Debug)]
pub struct RunningSwitch {
    /// Its name (`sw00`, …).
    pub name: String,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its model, to drive.
    pub model: Model,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), SwitchError>>,
}

impl RunningSwitch {
    /// Stops serving and waits until it has.
    pub async fn stop(self) -> Result<(), SwitchError> {
        let _ = self.stop.send(());
        match self.task.await {
            Ok(result) => result,
            Err(e) => Err(SwitchError::Transport(format!("the server task failed: {e}"))),
        }
    }
}

/// Serves `model` on `addr` (port 0 picks one) in the background.
pub async fn spawn(name: &str, addr: SocketAddr, model: Model, options: Options) -> Result<RunningSwitch, SwitchError> {
    let listener = TcpListener::bind(addr).await.map_err(|source| SwitchError::Bind { addr, source })?;
    let addr = listener.local_addr().map_err(|source| SwitchError::Bind { addr, source })?;
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(serve_with(listener, model.clone(), options, async move {
        let _ = stopped.await;
    }));
    Ok(RunningSwitch { name: name.to_string(), addr, model, stop, task })
}

/// `n` switches of `ports` ports each, named `sw00`, `sw01`, …, in plain
/// text on loopback ports the OS picks.
pub async fn spawn_many(n: usize, ports: usize) -> Result<Vec<RunningSwitch>, SwitchError> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let addr: SocketAddr = ([127, 0, 0, 1], 0).into();
        out.push(spawn(&format!("sw{i:02}"), addr, Model::new(ports), Options::default()).await?);
    }
    Ok(out)
}
