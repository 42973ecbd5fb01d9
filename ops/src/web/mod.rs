//! The operator's console: a live page served by the daemon (`[web]`).
//!
//! On-call engineers would rather look than read. The page shows what the
//! control API knows — incidents and their rule states, decisions with
//! their evidence, actions in effect and their drift, requests awaiting
//! approval, silences, sensor health, the breaker and the fleet — rendered
//! on the server, and follows the daemon live over Server-Sent Events from
//! the same event hub as `rocemend watch`. Nothing is fetched from the
//! network: the script and the style are served by the daemon.
//!
//! Anyone who reaches the listener may read. Approve and reject need the
//! full token as a bearer header, and are refused over plain HTTP, where
//! the token would travel in the clear: a header, not a cookie, so another
//! site cannot make a visitor's browser approve.
//!
//! - [`settings`]: `[web]` checked (TLS, token), as `check` and `run` share;
//! - [`server`]: the listener, HTTP/1.1 over TCP or TLS;
//! - [`routes`]: what each path answers, and who may write;
//! - [`page`]: the HTML of the sections;
//! - [`fleet`]: the fleet section's etcd read, when `[fleet]` is set;
//! - [`sse`]: the event stream.

pub mod fleet;
pub mod page;
pub mod routes;
pub mod server;
pub mod settings;
pub mod sse;

pub use settings::{settings, WebError, WebSettings};
