//! A gNMI front that serves SONiC's databases and refuses what sonic-gnmi refuses, as
//! sonic-gnmi's own source does (cited per behaviour as `file:line` of sonic-gnmi 5ec1c20
//! unless another project is named), over a [`Backend`]: the switch's Redis
//! ([`RedisBackend`]) or an in-memory store keyed the same way ([`MemoryStore`]).
//!
//! It exists so that rocemend's gNMI sensor and actuators meet, in tests, a switch no
//! friendlier than a real one: the 1 s sampling floor, alias-keyed virtual paths, the write
//! flags, the instance element of origin `sonic-db`, NOT_FOUND texts, and CONFIG_DB writes that
//! change entries in place.
//!
//! # Layout
//!
//! - [`FrontConfig`]: the image's switches (native write on, translib write off, stream
//!   multiplexing off), multi-ASIC namespaces, the config updater's pause;
//! - [`GnmiFront`]: the tonic service; [`serve`] runs it on a listener until shutdown;
//! - `routing`: which of sonic-gnmi's clients answers;
//! - `virtual_paths`: `COUNTERS/Ethernet*`, `…/Queues`, `…/Pfcwd` and the name maps they read;
//! - `db_paths` (prefix target) and `mixed` (origin `sonic-db`): path → Redis key;
//! - `render`: Redis data → JSON and string values;
//! - `get`, `set`, `subscribe`: the RPCs; `errors`: sonic-gnmi's texts;
//! - [`backend`]: the [`Backend`] trait; `redis_backend`, `memory`: its two implementations.
//!
//! ```no_run
//! # async fn demo(switch: sonic::Switch) -> std::io::Result<()> {
//! use std::sync::Arc;
//! use sonic::gnmi_front::{serve, FrontConfig, GnmiFront, RedisBackend};
//!
//! let front = GnmiFront::new(Arc::new(RedisBackend::new(switch)), FrontConfig::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! serve(front, listener, None, std::future::pending()).await.expect("serves");
//! # Ok(()) }
//! ```
//!
//! Not reproduced (each answered with Unimplemented saying so): translib (YANG models, so no
//! OpenConfig paths), the OTHERS/SHOW/EVENTS/OPERATIONAL targets, the virtual paths of fabric
//! ports, VoQs, priority groups, switch drops, SRv6 and ACL rules, APPL_DB writes, whole
//! configuration Sets; authentication, gNOI and gNSI; the virtual paths of a multi-ASIC switch
//! whose namespaces have backends of their own ([`GnmiFront::multi_asic`]: each namespace's
//! databases are its own; its origin `sonic-db` paths and prefix targets `DB/asicN` read them).

pub mod backend;
mod db_paths;
mod errors;
mod get;
mod memory;
mod mixed;
mod redis_backend;
mod render;
mod routing;
mod set;
mod subscribe;
mod virtual_paths;

#[cfg(all(test, feature = "test-peer"))]
mod tests;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use gnmi_proto::gnmi::g_nmi_server::{GNmi, GNmiServer};
use gnmi_proto::gnmi::{
    CapabilityRequest, CapabilityResponse, GetRequest, GetResponse, ModelData, SetRequest, SetResponse,
    SubscribeRequest,
};
use tokio::sync::watch;
use tonic::{Request, Response, Status, Streaming};

pub use backend::{Backend, BackendError, DbInfo, Entry, KeyEvent, Watch, WriteOp};
pub use errors::{go_duration, GoError};
pub use memory::MemoryStore;
pub use mixed::LOCALHOST;
pub use redis_backend::RedisBackend;
pub use routing::{SONIC_DB, TARGET_DBS};
pub use subscribe::{ResponseStream, MIN_SAMPLE_INTERVAL};

/// The front's settings; [`Default`] is a SONiC image's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontConfig {
    /// Writes as origin `sonic-db` (`ENABLE_NATIVE_WRITE`; on in the image, sonic-buildimage
    /// `rules/config:233-234`).
    pub native_write: bool,
    /// Writes through translib (`ENABLE_TRANSLIB_WRITE`; off in the image).
    pub translib_write: bool,
    /// Origin `sonic-db` is served (sonic-gnmi's mixed DB client, in the images since 202305).
    /// Off, the front is an older image's: origin `sonic-db` is routed to translib like any
    /// other origin, and the Capabilities do not list the `sonic-db` model; only the
    /// prefix-target databases read.
    pub mixed_db: bool,
    /// Several Subscribe streams from one client address (`enable_stream_multiplexing`, off by
    /// default, `telemetry.go:213`): off, a new stream ends the address's running one.
    pub stream_multiplexing: bool,
    /// The namespaces of a multi-ASIC switch (`asic0`, …); empty on a single-ASIC one.
    pub namespaces: Vec<String>,
    /// How long the config updater pauses after applying a change (`change_applier.py:166`:
    /// one second); a CONFIG_DB Set answers after it.
    pub gcu_step: Duration,
}

impl Default for FrontConfig {
    fn default() -> Self {
        FrontConfig {
            native_write: true,
            translib_write: false,
            mixed_db: true,
            stream_multiplexing: false,
            namespaces: Vec::new(),
            gcu_step: Duration::from_secs(1),
        }
    }
}

/// What the RPCs share.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The host's databases (the default namespace, `localhost`).
    backend: Arc<dyn Backend>,
    /// Each ASIC's databases, by namespace, on a multi-ASIC switch whose namespaces have their
    /// own (empty: every namespace reads `backend`).
    asics: std::collections::BTreeMap<String, Arc<dyn Backend>>,
    config: FrontConfig,
    maps: virtual_paths::MapsCache,
    /// Running Subscribe streams by client address (with multiplexing off).
    clients: Mutex<HashMap<SocketAddr, (u64, watch::Sender<bool>)>>,
    next_id: AtomicU64,
}

impl Shared {
    /// The databases of `namespace` (empty: the host's).
    fn backend_of(&self, namespace: &str) -> &dyn Backend {
        self.asics.get(namespace).unwrap_or(&self.backend).as_ref()
    }

    /// Path resolution of the DB client (prefix target a database) in `namespace`.
    fn resolver(&self, namespace: &str) -> db_paths::Resolver<'_> {
        db_paths::Resolver {
            backend: self.backend_of(namespace),
            maps: &self.maps,
            namespaces: &self.config.namespaces,
            per_asic: !self.asics.is_empty(),
        }
    }

    /// Registers a stream from `remote`, ending the one it replaces; returns its id.
    fn register(&self, remote: SocketAddr, stop: watch::Sender<bool>) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if self.config.stream_multiplexing {
            return id;
        }
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, old)) = clients.insert(remote, (id, stop)) {
            let _ = old.send(true);
        }
        id
    }

    fn unregister(&self, remote: SocketAddr, id: u64) {
        let mut clients = self.clients.lock().unwrap_or_else(|e| e.into_inner());
        if clients.get(&remote).is_some_and(|(i, _)| *i == id) {
            clients.remove(&remote);
        }
    }
}

/// The gNMI service (`gnmi.gNMI`), answering as sonic-gnmi does.
#[derive(Debug, Clone)]
pub struct GnmiFront {
    shared: Arc<Shared>,
}

impl GnmiFront {
    /// A front of `backend` with `config`.
    pub fn new(backend: Arc<dyn Backend>, config: FrontConfig) -> Self {
        Self::with_asics(backend, Default::default(), config)
    }

    /// A front of a multi-ASIC switch: the host's databases, and each ASIC's by its namespace
    /// (`asic0`, …), which become `config.namespaces`. Origin `sonic-db` paths with the
    /// instance element `asicN`, and prefix targets `DB/asicN`, read and write that ASIC's.
    pub fn multi_asic(host: Arc<dyn Backend>, asics: Vec<(String, Arc<dyn Backend>)>, config: FrontConfig) -> Self {
        let asics: std::collections::BTreeMap<_, _> = asics.into_iter().collect();
        let config = FrontConfig { namespaces: asics.keys().cloned().collect(), ..config };
        Self::with_asics(host, asics, config)
    }

    fn with_asics(
        backend: Arc<dyn Backend>,
        asics: std::collections::BTreeMap<String, Arc<dyn Backend>>,
        config: FrontConfig,
    ) -> Self {
        GnmiFront {
            shared: Arc::new(Shared {
                backend,
                asics,
                config,
                maps: virtual_paths::MapsCache::default(),
                clients: Mutex::default(),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// The settings.
    pub fn config(&self) -> &FrontConfig {
        &self.shared.config
    }

    /// The tonic service, to add to a server of one's own.
    pub fn into_service(self) -> GNmiServer<GnmiFront> {
        GNmiServer::new(self).max_decoding_message_size(64 << 20)
    }
}

/// The model sonic-gnmi's mixed client declares (`mixed_db_client.go:62-69`).
pub fn sonic_db_model() -> ModelData {
    ModelData { name: "sonic-db".into(), organization: "SONiC".into(), version: "0.1.0".into() }
}

#[tonic::async_trait]
impl GNmi for GnmiFront {
    /// `server.go:1275-1317`: the `sonic-db` model on an image with the mixed client (whether
    /// native write is on or not), encodings JSON, JSON_IETF, PROTO, gNMI 0.7.0. sonic-gnmi also lists translib's YANG
    /// models and a bundle-version extension; this front serves neither.
    async fn capabilities(&self, _: Request<CapabilityRequest>) -> Result<Response<CapabilityResponse>, Status> {
        Ok(Response::new(CapabilityResponse {
            supported_models: if self.shared.config.mixed_db { vec![sonic_db_model()] } else { vec![] },
            supported_encodings: get::SUPPORTED.iter().map(|e| *e as i32).collect(),
            g_nmi_version: "0.7.0".into(),
            extension: vec![],
        }))
    }

    async fn get(&self, request: Request<GetRequest>) -> Result<Response<GetResponse>, Status> {
        get::get(&self.shared, request.into_inner()).await.map(Response::new)
    }

    async fn set(&self, request: Request<SetRequest>) -> Result<Response<SetResponse>, Status> {
        set::set(&self.shared, request.into_inner()).await.map(Response::new)
    }

    type SubscribeStream = ResponseStream;

    async fn subscribe(
        &self,
        request: Request<Streaming<SubscribeRequest>>,
    ) -> Result<Response<Self::SubscribeStream>, Status> {
        let remote = request.remote_addr();
        subscribe::subscribe(self.shared.clone(), remote, request.into_inner()).await.map(Response::new)
    }
}

/// TLS for the front: the server's certificate chain and key, PEM.
#[derive(Debug, Clone)]
pub struct FrontTls {
    /// The certificate chain.
    pub cert_pem: Vec<u8>,
    /// The private key.
    pub key_pem: Vec<u8>,
}

/// The front could not serve.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The TLS settings were refused.
    #[error("TLS settings: {0}")]
    Tls(tonic::transport::Error),
    /// The server failed.
    #[error("serving gNMI: {0}")]
    Transport(tonic::transport::Error),
}

/// Serves `front` on `listener` (plaintext, or TLS when given) until `shutdown` completes.
///
/// A plaintext client against a TLS front fails to connect at the HTTP/2 handshake (the
/// server answers its preface with a TLS alert): a connection error naming the transport, no
/// gRPC status.
pub async fn serve(
    front: GnmiFront,
    listener: tokio::net::TcpListener,
    tls: Option<FrontTls>,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), ServeError> {
    let mut server = tonic::transport::Server::builder();
    if let Some(tls) = tls {
        let identity = tonic::transport::Identity::from_pem(tls.cert_pem, tls.key_pem);
        server =
            server.tls_config(tonic::transport::ServerTlsConfig::new().identity(identity)).map_err(ServeError::Tls)?;
    }
    let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
    server
        .add_service(front.into_service())
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await
        .map_err(ServeError::Transport)
}
