//! The Linux and network interfaces rocemend talks to, wrapped once: what
//! the sensors, the actuators and the chaos harness share of the kernel and
//! of HTTP.
//!
//! - [`ethtool`]: the `SIOCETHTOOL` statistics ioctls (`ethtool -S`) and the
//!   interface list; read by the `ethtool` sensor and the host side of the
//!   `pfcwd` actuator.
//! - [`link`]: links read and set administratively up or down through
//!   rtnetlink (`RTM_GETLINK`, `RTM_SETLINK`); the `link` actuator and the
//!   chaos harness's flaps.
//! - [`netns`]: network namespaces with veth pairs, entered per thread;
//!   the wall-clock chaos scenarios and the tests that need real links.
//! - [`http`]: the one HTTP client (hyper over TCP or rustls): Prometheus
//!   scrapes, webhooks and Alertmanager, the Kubernetes API server, remote write.
//!
//! Nothing here knows rules, samples or actions: this crate depends on no
//! other crate of the workspace.

#![deny(missing_docs)]

pub mod ethtool;
pub mod http;
pub mod link;
pub mod netns;

/// A Linux interface failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// A system call or a file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// A netlink request failed.
    #[error("{what}: {source}")]
    Netlink {
        /// What was being done.
        what: String,
        /// The error.
        source: rtnetlink::Error,
    },
    /// There is no link of that name.
    #[error("there is no link {0:?}")]
    NoLink(String),
    /// A tool (`ip`, `tc`) exited with an error.
    #[error("{command}: {stderr}")]
    Tool {
        /// The command line.
        command: String,
        /// What it wrote to stderr.
        stderr: String,
    },
}

impl NetError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> NetError {
        NetError::Io { what: what.into(), source }
    }
}
