//! What a daemon keeps of what it saw and did, and where: its recording
//! (`record =`), its ledger (the sled state directory, or the running
//! daemon that holds it) and its inventory, named by its config or given
//! one by one (copies of a node's files). `why` and the timeline read them.

use std::io::BufRead;
use std::path::{Path, PathBuf};

use engine::config::TomlError;
use engine::dispatch::Decision;
use engine::ledger::{Filter, Ledger, Retention};
use engine::recording::RecordingError;
use engine::store::StoreError;
use engine::Store;

use crate::config::DaemonConfig;
use crate::control::client::{self, Address, ClientError};

/// The files to read: a daemon config, and any of its files given instead.
#[derive(Debug, Clone, Default)]
pub struct Files {
    /// The daemon's configuration file.
    pub config: Option<PathBuf>,
    /// The recording, instead of the config's `record`.
    pub recording: Option<PathBuf>,
    /// The state directory (the ledger), instead of the config's `state_dir`.
    pub state: Option<PathBuf>,
    /// The inventory, instead of the config's.
    pub inventory: Option<PathBuf>,
}

/// [`Files`], each one given or the config's.
#[derive(Debug, Clone)]
pub struct Found {
    /// The config, when one was given.
    pub config: Option<DaemonConfig>,
    /// The recording.
    pub recording: Option<PathBuf>,
    /// The state directory.
    pub state: Option<PathBuf>,
    /// The daemon's control socket, when a config names the daemon.
    pub socket: Option<PathBuf>,
    /// The inventory.
    pub inventory: Option<PathBuf>,
}

impl Files {
    /// Reads the config, if any, and finds each file.
    pub fn resolve(&self) -> Result<Found, TomlError> {
        let config = self.config.as_deref().map(DaemonConfig::load).transpose()?;
        let or_config = |given: &Option<PathBuf>, of: fn(&DaemonConfig) -> Option<PathBuf>| {
            given.clone().or_else(|| config.as_ref().and_then(of))
        };
        Ok(Found {
            recording: or_config(&self.recording, |c| c.record.clone()),
            state: or_config(&self.state, |c| Some(c.state_dir.clone())),
            socket: config.as_ref().map(DaemonConfig::socket),
            inventory: or_config(&self.inventory, |c| c.inventory.clone()),
            config,
        })
    }
}

/// The recording cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// It cannot be opened.
    #[error("cannot read the recording {}", path.display())]
    Open {
        /// The recording.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line of it is malformed.
    #[error(transparent)]
    Malformed(#[from] RecordingError),
}

/// The recording at `path` with its rotated files, oldest first, as one
/// stream (each file starts a segment).
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>, ReadError> {
    let (input, _) = engine::recording::open_with_rotated(path)
        .map_err(|source| ReadError::Open { path: path.to_path_buf(), source })?;
    Ok(input)
}

/// The ledger cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The directory holds no ledger.
    #[error("{}: no ledger here (state.sled is missing); --state names the daemon's state_dir", dir.display())]
    Missing {
        /// The state directory given.
        dir: PathBuf,
    },
    /// The daemon holding the ledger did not answer.
    #[error(
        "the ledger {} is held by a running daemon, and its control socket {} did not answer",
        db.display(),
        socket.display()
    )]
    Daemon {
        /// The ledger.
        db: PathBuf,
        /// The daemon's socket.
        socket: PathBuf,
        /// Why.
        source: ClientError,
    },
    /// The ledger cannot be opened.
    #[error("cannot open the ledger {}", db.display())]
    Open {
        /// The ledger.
        db: PathBuf,
        /// Why.
        source: StoreError,
    },
    /// The ledger cannot be read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The ledger's records, oldest first. sled lets one process open a
/// database: when the daemon that owns `state_dir` is running, they come
/// from it over its control socket (`socket`, by default the state
/// directory's) instead.
pub fn decisions(state_dir: &Path, socket: Option<&Path>) -> Result<Vec<Decision>, LedgerError> {
    let db = state_dir.join("state.sled");
    if !db.is_dir() {
        return Err(LedgerError::Missing { dir: state_dir.to_path_buf() });
    }
    match Store::open(&db) {
        Ok(store) => {
            let ledger = Ledger::open(&store, Retention::default())?;
            Ok(ledger.list(&Filter::default())?)
        }
        Err(e) if format!("{e:?}").contains("WouldBlock") => {
            let socket = socket.map(Path::to_path_buf).unwrap_or_else(|| state_dir.join("control.sock"));
            from_daemon(&socket).map_err(|source| LedgerError::Daemon { db, socket, source })
        }
        Err(source) => Err(LedgerError::Open { db, source }),
    }
}

/// Every decision of the daemon listening on `socket`, oldest first.
fn from_daemon(socket: &Path) -> Result<Vec<Decision>, ClientError> {
    let runtime = client::runtime().map_err(ClientError::Runtime)?;
    runtime.block_on(client::decisions(&Address::Unix(socket.to_path_buf()), 0))
}
