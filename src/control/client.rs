//! The client side of the control API, for the CLI verbs.

use std::path::{Path, PathBuf};

use anyhow::Context;
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;
use tonic::transport::{Channel, Endpoint, Uri};

use super::pb::control_client::ControlClient;

/// Where `rocemend run` listens unless its config says otherwise, and where
/// the CLI looks unless told with `--socket` or `ROCEMEND_SOCKET`.
pub const DEFAULT_SOCKET: &str = "/var/lib/rocemend/control.sock";

/// Connects to the daemon listening on `path`.
pub async fn connect(path: &Path) -> anyhow::Result<ControlClient<Channel>> {
    let socket: PathBuf = path.to_path_buf();
    // The URI is required by the HTTP/2 layer and never resolved: the
    // connector below always dials the socket.
    let channel = Endpoint::try_from("http://rocemend.control")?
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let socket = socket.clone();
            async move { Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(socket).await?)) }
        }))
        .await
        .with_context(|| format!("connecting to the daemon at {} (is `rocemend run` running?)", path.display()))?;
    Ok(ControlClient::new(channel))
}
