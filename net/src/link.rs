//! Links read and set administratively up or down through rtnetlink: the
//! `RTM_GETLINK` and `RTM_SETLINK` requests `ip link` sends, without
//! starting a process.
//!
//! A netlink socket lives in the network namespace of the thread that opened
//! it: [`connect`] on a thread that entered a namespace
//! ([`crate::netns::enter`]) acts in that namespace.

use futures_util::TryStreamExt;
use rtnetlink::packet_route::link::{LinkAttribute, LinkFlags, LinkMessage, State};
use rtnetlink::LinkUnspec;

/// A netlink request handle, from [`connect`].
pub use rtnetlink::Handle;

use crate::NetError;

/// A link as netlink shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkState {
    /// Its index.
    pub index: u32,
    /// Whether `IFF_UP` is set (administratively up).
    pub admin_up: bool,
    /// Whether `IFLA_OPERSTATE` is `UP`.
    pub oper_up: bool,
}

/// Opens a netlink socket and spawns its connection task on the current
/// runtime; the task ends when the returned handle and its clones are gone.
pub fn connect() -> Result<Handle, NetError> {
    let (connection, handle, _) =
        rtnetlink::new_connection().map_err(|e| NetError::io("opening the netlink socket", e))?;
    tokio::spawn(connection);
    Ok(handle)
}

/// Reads the link `name`; `None` if there is no such link.
pub async fn read(handle: &Handle, name: &str) -> Result<Option<LinkState>, NetError> {
    let mut links = handle.link().get().match_name(name.to_string()).execute();
    match links.try_next().await {
        Ok(Some(message)) => Ok(Some(state(&message))),
        Ok(None) => Ok(None),
        // The kernel answers ENODEV for a name it does not know.
        Err(rtnetlink::Error::NetlinkError(e)) if e.raw_code() == -libc::ENODEV => Ok(None),
        Err(source) => Err(NetError::Netlink { what: format!("reading link {name}"), source }),
    }
}

/// Sets the link of index `index` administratively up or down.
pub async fn set_index(handle: &Handle, index: u32, up: bool) -> Result<(), NetError> {
    let message = LinkUnspec::new_with_index(index);
    let message = if up { message.up() } else { message.down() }.build();
    handle
        .link()
        .set(message)
        .execute()
        .await
        .map_err(|source| NetError::Netlink { what: format!("RTM_SETLINK {index} {}", updown(up)), source })
}

/// Sets the link `name` administratively up or down; returns its state
/// before the change.
pub async fn set(handle: &Handle, name: &str, up: bool) -> Result<LinkState, NetError> {
    let before = read(handle, name).await?.ok_or_else(|| NetError::NoLink(name.to_string()))?;
    set_index(handle, before.index, up).await.map_err(|e| match e {
        NetError::Netlink { source, .. } => {
            NetError::Netlink { what: format!("setting {name} {}", updown(up)), source }
        }
        other => other,
    })?;
    Ok(before)
}

fn updown(up: bool) -> &'static str {
    if up {
        "up"
    } else {
        "down"
    }
}

fn state(message: &LinkMessage) -> LinkState {
    let oper_up = message.attributes.iter().any(|a| matches!(a, LinkAttribute::OperState(State::Up)));
    LinkState { index: message.header.index, admin_up: message.header.flags.contains(LinkFlags::Up), oper_up }
}

/// Sets links up and down from blocking code, on one netlink socket and a
/// runtime of its own: the chaos harness times flaps on a plain thread.
pub struct BlockingLinks {
    runtime: tokio::runtime::Runtime,
    handle: Handle,
}

impl BlockingLinks {
    /// Opens the socket in the calling thread's network namespace.
    pub fn open() -> Result<BlockingLinks, NetError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| NetError::io("starting a runtime for netlink", e))?;
        // The connection task is driven whenever a request is awaited.
        let handle = runtime.block_on(async { connect() })?;
        Ok(BlockingLinks { runtime, handle })
    }

    /// The index of the link `name`.
    pub fn index(&self, name: &str) -> Result<u32, NetError> {
        let state = self.runtime.block_on(read(&self.handle, name))?;
        state.map(|s| s.index).ok_or_else(|| NetError::NoLink(name.to_string()))
    }

    /// Sets the link of index `index` up or down.
    pub fn set(&self, index: u32, up: bool) -> Result<(), NetError> {
        self.runtime.block_on(set_index(&self.handle, index, up))
    }
}
