//! A real `redis-server`, configured as SONiC's `database` container runs it (no persistence,
//! keyspace notifications `AKE`), on a unix socket in a temp dir, killed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::PeerError;

/// How long a fresh redis-server may take to open its socket. It takes milliseconds; five
/// seconds covers a loaded CI machine without hiding a server that will never come up.
const STARTUP: Duration = Duration::from_secs(5);

/// A running redis-server; killed (and its temp dir removed) when dropped.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    socket: PathBuf,
    // Removed after the child is killed (`Drop` runs before the fields drop), so the socket's
    // directory outlives the server.
    dir: tempfile::TempDir,
}

impl RedisServer {
    /// Starts `binary` and waits until its socket answers `PING`.
    pub async fn start(binary: &Path) -> Result<Self, PeerError> {
        let dir = tempfile::Builder::new().prefix("sonic-peer").tempdir().map_err(PeerError::Io)?;
        let socket = dir.path().join("redis.sock");
        let child = Command::new(binary)
            .arg("--port")
            .arg("0")
            .arg("--unixsocket")
            .arg(&socket)
            .args(["--unixsocketperm", "700"])
            // SONiC's database container: nothing on disk, every keyspace event on.
            .args(["--save", "", "--appendonly", "no"])
            .args(["--notify-keyspace-events", "AKE"])
            // The layout numbers databases up to 20 (BMP_STATE_DB).
            .args(["--databases", "32"])
            .arg("--dir")
            .arg(dir.path())
            .args(["--logfile", "redis.log"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| PeerError::Start(format!("{}: {e}", binary.display())))?;
        let server = RedisServer { child, socket, dir };
        server.wait_ready().await?;
        Ok(server)
    }

    async fn wait_ready(&self) -> Result<(), PeerError> {
        let deadline = tokio::time::Instant::now() + STARTUP;
        let client = redis::Client::open(redis::ConnectionAddr::Unix(self.socket.clone()))
            .map_err(|e| PeerError::Start(e.to_string()))?;
        loop {
            if let Ok(mut conn) = client.get_multiplexed_async_connection().await {
                if redis::cmd("PING").query_async::<String>(&mut conn).await.is_ok() {
                    return Ok(());
                }
            }
            if tokio::time::Instant::now() > deadline {
                let log = std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default();
                return Err(PeerError::Start(format!(
                    "redis-server did not answer on {} within {STARTUP:?}; its log:\n{log}",
                    self.socket.display()
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The server's unix socket.
    pub fn socket(&self) -> &Path {
        &self.socket
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // Only our own child, by its handle.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
