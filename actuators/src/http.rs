//! HTTP for the actuators that talk to an HTTP API (Alertmanager and
//! webhooks, the Kubernetes API server): the one client, [`net::http`],
//! with the answer limit these APIs need.

pub use engine::time::rfc3339;
pub use net::http::{Client, HttpError, Request, Response, Url};

/// The largest response body read. Alert lists and Node objects are
/// kilobytes; a pod list of a busy node is a few hundred; past this the
/// answer is not one we can use, and memory stays bounded.
pub const MAX_RESPONSE: usize = 8 * 1024 * 1024;
