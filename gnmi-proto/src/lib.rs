//! gNMI for rocemend: the protobufs of the gRPC Network Management Interface,
//! path and value helpers, and a small client.
//!
//! # Brief overview
//!
//! - [`gnmi`] and [`gnmi_ext`]: the messages and the tonic client and server
//!   of the gNMI specification (openconfig/gnmi, service version 0.7.0),
//!   compiled from `proto/` with protox, so no `protoc` is needed;
//! - [`path`]: gNMI path strings ⇄ [`gnmi::Path`], with keys, an origin
//!   (`openconfig:/…` or SONiC's `/sonic-db:CONFIG_DB/…`) and a target;
//!   [`path::split_target`] and [`path::split_at`] move a parsed target (and
//!   origin, and leading elements) into a request prefix, the only place a
//!   gNMI target is read;
//! - [`value`]: [`gnmi::TypedValue`] → `u64`, `f64`, text;
//! - [`client`]: [`GnmiClient`], a tonic client with TLS, username/password
//!   metadata and per-call timeouts; Get, Set (each result checked against
//!   the request) and Subscribe;
//! - [`credentials`]: the username and password a client sends, from a
//!   file of mode 0600;
//! - [`sonic`]: how a request names a SONiC database
//!   ([`sonic::PathStyle`]: the prefix's target, or origin `sonic-db` with
//!   the database as first element), the CONFIG_DB tables rocemend writes
//!   and the values SONiC accepts in them, shared by the sensors, the
//!   actuators and the simulated switch.
//!
//! ```
//! use gnmi_proto::path::{parse_path, path_to_string};
//!
//! let path = parse_path("openconfig:/interfaces/interface[name=Ethernet0]/state/counters").unwrap();
//! assert_eq!(path.origin, "openconfig");
//! assert_eq!(path.elem[1].name, "interface");
//! assert_eq!(path.elem[1].key["name"], "Ethernet0");
//! assert_eq!(path_to_string(&path), "openconfig:/interfaces/interface[name=Ethernet0]/state/counters");
//!
//! let value = gnmi_proto::gnmi::TypedValue {
//!     value: Some(gnmi_proto::gnmi::typed_value::Value::StringVal("42".into())),
//! };
//! assert_eq!(gnmi_proto::value::to_u64(&value), Ok(42));
//! ```

#![deny(missing_docs)]

/// The gNMI messages and service (package `gnmi`).
#[allow(missing_docs, clippy::all)]
pub mod gnmi {
    tonic::include_proto!("gnmi");
}

/// The gNMI extension messages (package `gnmi_ext`).
#[allow(missing_docs, clippy::all)]
pub mod gnmi_ext {
    tonic::include_proto!("gnmi_ext");
}

pub mod client;
pub mod credentials;
pub mod path;
pub mod sonic;
pub mod value;

pub use client::{
    ClientConfig, ClientError, GnmiClient, SetOps, Subscription, SubscriptionStream, TlsConfig, TlsFileError,
};
pub use path::{parse_path, path_to_string, PathError};
/// The gRPC status codes [`ClientError::code`] returns, for callers that do
/// not depend on tonic themselves.
pub use tonic::Code;
pub use value::ValueError;

/// The gNMI version this crate speaks, as Capabilities reports it.
pub const GNMI_VERSION: &str = "0.7.0";
