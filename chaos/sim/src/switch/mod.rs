//! A simulated SONiC switch speaking gNMI, for tests, benchmarks and the fabric simulator,
//! as strict as a real one.
//!
//! A [`Model`] keeps the switch's state in SONiC's own shape — CONFIG_DB, COUNTERS_DB,
//! APPL_DB, STATE_DB and ASIC_DB in a [`sonic::gnmi_front::MemoryStore`], keyed as Redis keys
//! them (`PORT|Ethernet0` with its alias, `COUNTERS:oid:0x…` and the name maps, `PFC_WD|…`,
//! `PORT_QOS_MAP`, `MAP_PFC_PRIORITY_TO_QUEUE|AZURE`, `DEVICE_METADATA|localhost`) — over an
//! ASIC whose counters syncd copies there with the counter set of the switch's ASIC family,
//! and an orchagent whose PFC watchdog behaves as orchagent's does. [`serve`] answers gNMI
//! over it with [`sonic::gnmi_front::GnmiFront`], which routes, serves and refuses as
//! sonic-gnmi does, with the image's settings ([`Profile`]):
//!
//! - Subscribe SAMPLE under 1 s is refused ("invalid interval: 200ms. It cannot be less than
//!   1s"); reads by prefix target (`COUNTERS_DB`: the virtual paths `COUNTERS/Ethernet*`,
//!   `…/Queues`, `…/Pfcwd`, keyed by the ports' **aliases**) or by origin `sonic-db`, whose
//!   first two elements (database, instance `localhost`) are always dropped;
//! - writes only as origin `sonic-db` `/CONFIG_DB/localhost/TABLE/KEY/field` with native write
//!   on; "GNMI is in read-only mode", "GNMI native write is disabled", "Translib write is
//!   disabled" otherwise; a Set is applied by the config updater as a difference, so a Set that
//!   deletes and rewrites an entry changes it in place;
//! - the PFC watchdog keeps a started port's action through an in-place change (its times
//!   change); only a deletion and a new entry restart it with the new action;
//! - counters refresh at SONiC's polls (ports 1 s, queues 10 s, watermarks 60 s, the watchdog's
//!   own group every 200 ms), with each ASIC family's PFC counters.
//!
//! ```no_run
//! # async fn example() -> Result<(), sim::switch::SwitchError> {
//! use sim::switch::spawn_many;
//!
//! // Eight switches of 32 ports on loopback ports the OS picks.
//! let switches = spawn_many(8, 32).await?;
//! switches[0].model.inject_pfc_storm("Ethernet8", 3).unwrap();
//! switches[0].model.advance(std::time::Duration::from_millis(600));
//! for switch in switches {
//!     println!("{} at {}", switch.name, switch.addr);
//!     switch.stop().await.unwrap();
//! }
//! # Ok(()) }
//! ```
//!
//! - [`profile`]: the switch's kind (ASIC family, aliases, queues, front settings, polls);
//! - [`model`]: the switch's state and what drives it ([`Model::advance`],
//!   [`Model::inject_pfc_storm`], [`drive`]);
//! - [`asic`]: what the hardware counts; [`syncd`]: the counter groups that copy it into
//!   COUNTERS_DB; [`orchagent`]: CONFIG_DB applied to the ASIC; [`watchdog`]: the PFC
//!   watchdog; [`seed`]: the databases at boot; [`config`]: CONFIG_DB as tables;
//! - [`service`]: the tonic gNMI service (the front, and the container around it).

pub mod asic;
pub mod config;
pub mod model;
pub mod orchagent;
pub mod profile;
pub mod seed;
pub mod service;
pub mod syncd;
pub mod watchdog;

use std::future::Future;
use std::net::SocketAddr;

use gnmi_proto::gnmi::g_nmi_server::GNmiServer;
use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::transport::{Certificate, Identity, Server, ServerTlsConfig};

pub use model::{drive, Clients, Model, ModelError, State};
pub use profile::{Aliases, Polls, Profile};
pub use service::Service;

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
    /// Require `username`/`password` metadata, as SONiC's telemetry does with password
    /// authentication on.
    pub credentials: Option<(String, String)>,
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

/// Serves `model` on `listener` with `options` until `shutdown` resolves. Open subscriptions
/// then end with `UNAVAILABLE`, as when a switch's telemetry container restarts.
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
    let service = Service::new(model, options.credentials.clone(), stop_rx);
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
