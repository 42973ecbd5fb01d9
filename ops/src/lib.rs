//! The operator's tools of rocemend, as a library: the daemon's
//! configuration and the checked plan `check` prints and `run` starts, the
//! control API (server, client, proto), metrics, the web console, and the
//! answers to "what happened?": `why`, the timeline, preview, replay and
//! the reports. The binary parses flags, builds the concrete sensors and
//! actuators, and calls in here.
//!
//! # Brief overview
//!
//! A [`DaemonConfig`] is checked into a [`Blueprint`] by
//! [`Blueprint::build`], with the binary's [`plan::Components`] building
//! what is concrete. A running daemon serves the [`control`] API and
//! [`metrics`], and optionally the [`web`] console; the CLI talks to it
//! through [`control::client`] and prints with [`control::view`]. From
//! what a daemon recorded ([`recorded`]), [`why`] ranks what slowed a job
//! and [`timeline`] draws one page of everything.
//!
//! ```
//! use ops::why::{self, Query};
//!
//! // A recording (JSON lines): one job on one node, its step time slowing.
//! let mut text = String::from(concat!(
//!     r#"{"series":0,"metric":"job_node_info","labels":{"job":"train","node":"n1"},"kind":"gauge"}"#, "\n",
//!     r#"{"series":1,"metric":"job_step_time_seconds","labels":{"job":"train","node":"n1"},"kind":"gauge"}"#, "\n",
//!     r#"{"s":0,"t":0,"v":1}"#, "\n",
//! ));
//! for i in 0..40i64 {
//!     let step = if i < 30 { 1.0 } else { 1.5 };
//!     text.push_str(&format!("{{\"s\":1,\"t\":{},\"v\":{step}}}\n", i * 1_000_000_000));
//! }
//! let recorded = why::series::read(text.as_bytes(), "example").unwrap();
//! let query = Query { job: "train", span: None, threshold: 0.15, topology: None, all_metrics: false };
//! let report = why::analyze(&recorded, &query, &[], |_| String::new()).unwrap();
//! assert!((report.signal.slowdown - 0.5).abs() < 1e-9, "the step time rose 50 %");
//! // The first slow step was pushed when it ended, at 30 s: it began when the one before it ended.
//! assert_eq!(ops::time::rfc3339(report.windows.rise_at), "1970-01-01T00:00:29.000Z");
//! ```
//!
//! # Layout
//!
//! - [`config`]: the daemon's configuration file, as written;
//! - [`plan`]: the config and every file it names, checked into a [`Blueprint`];
//!   what `check` says ([`plan::check`]);
//! - [`control`]: the gRPC control API: server, listeners and tokens, the event
//!   hub, incidents, the client, and the replies as the verbs print them;
//! - [`metrics`]: the daemon's own metrics and its `/metrics`, `/healthz`, `/readyz`;
//! - [`web`]: the operator's console, a live page served by the daemon;
//! - [`remote_write`]: every sample sent on to a Prometheus remote-write receiver;
//! - [`recorded`]: where a daemon's recording, ledger and inventory are;
//! - [`why`]: why a job is slow, in fabric terms;
//! - [`timeline`]: one page of signals, rule states and decisions on one time axis;
//! - [`preview`]: a playbook's whole policy on a recording, nothing sent;
//! - [`replay`]: a rule set on a recording, or two compared;
//! - [`report`]: words and tables for people, and the daemon's log lines;
//! - [`inventory`]: the inventory read from the cluster: a node's NICs, GPUs, PCIe affinity
//!   and LLDP leaves (`discover`), merged with the switches' LLDP tables, its cabling faults;
//! - [`time`]: RFC 3339 and the times `--from` / `--to` take;
//! - [`progress`]: progress bars on stderr for long local runs.
//!
//! Errors are `thiserror` enums, one per area ([`plan::Problems`],
//! [`control::client::ClientError`], [`why::WhyError`],
//! [`timeline::TimelineError`], …); the binary alone turns them into exit
//! codes.

#![deny(missing_docs)]

pub mod config;
pub mod control;
pub mod inventory;
pub mod metrics;
pub mod plan;
pub mod preview;
pub mod progress;
pub mod recorded;
pub mod remote_write;
pub mod replay;
pub mod report;
pub mod time;
pub mod timeline;
pub mod web;
pub mod why;

pub use config::DaemonConfig;
pub use plan::Blueprint;
