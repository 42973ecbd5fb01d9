//! Where a session's links come from: [`Rtnetlink`], one subscription to
//! the kernel, behind [`LinkSource`], so the session's loop (dump,
//! notifications, heartbeat) runs the same against a script in the tests.

use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use rtnetlink::packet_core::{NetlinkMessage, NetlinkPayload};
use rtnetlink::packet_route::RouteNetlinkMessage;
use rtnetlink::sys::{AsyncSocket, SocketAddr};
use rtnetlink::{Handle, MulticastGroup};

use super::tracker::LinkReading;

/// One notification, as the session acts on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Notice {
    /// `RTM_NEWLINK`: a link was added or changed.
    Link(LinkReading),
    /// `RTM_DELLINK`: the link with this index is gone.
    Deleted(u32),
    /// The kernel dropped notifications: its receive buffer was full.
    Overrun,
    /// Anything else on the socket; ignored.
    Other,
}

/// Why a link source failed.
#[derive(Debug, thiserror::Error)]
pub(super) enum SourceError {
    /// The netlink socket could not be opened.
    #[error("opening the netlink socket: {0}")]
    Open(std::io::Error),
    /// The dump of every link failed.
    #[error("dumping links: {0}")]
    Dump(rtnetlink::Error),
}

/// A subscription to link changes.
///
/// Private, and used through generics only (never `dyn`), so an `async fn`
/// suffices: the daemon's source is [`Rtnetlink`], whose futures are `Send`.
pub(super) trait LinkSource {
    /// Every link now (an `RTM_GETLINK` dump), or why it failed.
    async fn dump(&mut self) -> Result<Vec<LinkReading>, SourceError>;
    /// The next notification; `None` once the socket has failed.
    async fn next(&mut self) -> Option<Notice>;
}

/// Aborts the connection task when the source is dropped, however the
/// session ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A netlink socket subscribed to `RTNLGRP_LINK`, with its connection task.
pub(super) struct Rtnetlink {
    handle: Handle,
    messages: BoxStream<'static, (NetlinkMessage<RouteNetlinkMessage>, SocketAddr)>,
    _connection: AbortOnDrop,
}

impl Rtnetlink {
    /// Opens the socket with a receive buffer of `receive_buffer_bytes` and
    /// subscribes; `Err` says why it could not. Subscribed before the
    /// session dumps: a change between the two shows up as a notification,
    /// and the counters make a repeat harmless.
    pub(super) fn open(sensor: &str, receive_buffer_bytes: usize) -> Result<Rtnetlink, SourceError> {
        let (mut connection, handle, messages) =
            rtnetlink::new_multicast_connection(&[MulticastGroup::Link]).map_err(SourceError::Open)?;
        if let Err(e) = connection.socket_mut().socket_mut().set_rx_buf_sz(receive_buffer_bytes) {
            // Not fatal: the default buffer works, it only overruns sooner.
            tracing::warn!(message = "Could not size the netlink receive buffer.", %sensor, bytes = receive_buffer_bytes, error = %e);
        }
        let connection = AbortOnDrop(tokio::spawn(connection));
        Ok(Rtnetlink { handle, messages: messages.boxed(), _connection: connection })
    }
}

impl LinkSource for Rtnetlink {
    async fn dump(&mut self) -> Result<Vec<LinkReading>, SourceError> {
        let mut links = self.handle.link().get().execute();
        let mut readings = Vec::new();
        while let Some(link) = links.next().await {
            let message = link.map_err(SourceError::Dump)?;
            readings.push(LinkReading::from_message(&message));
        }
        Ok(readings)
    }

    async fn next(&mut self) -> Option<Notice> {
        let (NetlinkMessage { payload, .. }, _) = self.messages.next().await?;
        Some(match payload {
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::NewLink(link)) => {
                Notice::Link(LinkReading::from_message(&link))
            }
            NetlinkPayload::InnerMessage(RouteNetlinkMessage::DelLink(link)) => Notice::Deleted(link.header.index),
            NetlinkPayload::Overrun(_) => Notice::Overrun,
            _ => Notice::Other,
        })
    }
}
