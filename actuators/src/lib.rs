//! The actuators of rocemend: each module carries out actions on one kind of
//! target, behind the engine's [`Actuator`] contract.
//!
//! # Brief overview
//!
//! A playbook names actuators by a kind, a name and a table of settings;
//! [`build`] turns those into a shared [`Actuator`], validating the settings
//! once. Every actuator answers [`Actuator::dry_run`] with exactly what
//! [`Actuator::execute`] would send, request by request, so a dry run or a
//! shadow-mode decision records the real command. Likewise
//! [`Actuator::dry_run_undo`] shows what [`Actuator::undo`] would send, and
//! [`Actuator::verify`] reads the target back so the engine undoes only what
//! is still in effect, and never repeats what already took.
//!
//! ```
//! use std::collections::BTreeMap;
//! use engine::{Action, Actuator, Labels, Outcome};
//!
//! let settings: toml::Table = toml::from_str(r#"
//!     argv = ["/usr/local/sbin/drain-rail", "--node", "{target.node}", "--rail={target.rail}"]
//!     timeout = "30s"
//!     undo_argv = ["/usr/local/sbin/undrain-rail", "--node", "{target.node}", "--rail={target.rail}"]
//! "#).unwrap();
//! let drain = actuators::build("exec", "drain-rail", settings).unwrap();
//!
//! let action = Action {
//!     kind: "rail.drain".into(),
//!     target: Labels::from_pairs([("node", "node-02"), ("rail", "3")]),
//!     params: BTreeMap::new(),
//! };
//! let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let plan = runtime.block_on(drain.dry_run(&action)).unwrap();
//! assert_eq!(plan.requests, ["/usr/local/sbin/drain-rail --node node-02 --rail=3"]);
//!
//! let applied = Outcome { summary: "drained".into(), requests: plan.requests, prior: None };
//! let undo = runtime.block_on(drain.dry_run_undo(&action, &applied)).unwrap();
//! assert_eq!(undo.requests, ["/usr/local/sbin/undrain-rail --node node-02 --rail=3"]);
//!
//! // A label value that could smuggle a shell word or an option never reaches argv.
//! let evil = Action { target: Labels::from_pairs([("node", "$(reboot)"), ("rail", "3")]), ..action };
//! assert!(runtime.block_on(drain.dry_run(&evil)).is_err());
//! ```
//!
//! # Layout
//!
//! - [`log`]: [`LogActuator`] logs each action and remembers, in memory,
//!   which ones are in effect; for trying playbooks out;
//! - [`exec`]: [`ExecActuator`] runs a configured command (argv, never a
//!   shell), with placeholders validated before they reach argv, and
//!   optional commands to verify and to undo;
//! - [`cordon`]: [`CordonActuator`] drains a node in Slurm or cordons it in
//!   Kubernetes, and resumes it only while the cordon is still its own;
//! - [`link`]: [`LinkActuator`] takes a host link down through rtnetlink
//!   and back up only if it was up before;
//! - [`webhook`]: [`WebhookActuator`] raises an Alertmanager alert (resolved
//!   by undo) or posts the action as JSON;
//! - [`pfcwd`]: [`PfcwdActuator`] escalates a switch port's PFC watchdog
//!   (gNMI) and sets a NIC's PFC storm prevention (ethtool tunable);
//! - [`ecn`]: [`EcnActuator`] lowers a switch queue's ECN thresholds (a
//!   copy of its WRED profile bound to it, gNMI) and sets a NIC's DCQCN
//!   knobs (sysfs);
//! - [`rail`]: [`RailActuator`] drains a rail: switch port admin-down, the
//!   NCCL environment file, Slurm features, a Kubernetes label and taint;
//! - [`ecmp`]: [`EcmpActuator`] widens a leaf's ECMP hash with the fields
//!   that spread RoCE flows (the UDP source port, the destination QP);
//! - [`nccl`]: [`NcclActuator`] raises a job's NCCL queue pairs per
//!   connection for its next communicators (its environment file);
//! - [`node_condition`]: not an actuator: the Kubernetes node condition
//!   `RoceFabricHealthy` kept from the incidents firing on this node, for
//!   the tools that read node conditions;
//! - [`sonic`]: the CONFIG_DB client over gNMI the switch actuators share;
//! - [`http`]: the minimal HTTP/1.1 client they share;
//! - [`declare`]: how a generic actuator (`exec`, `webhook`, `log`) says
//!   how the safety policy counts the action kinds it carries out; the
//!   others declare their own ([`declared`]);
//! - [`ActuatorConfigError`], [`LabelError`], [`ParseError`]: why settings, a name
//!   or a tool's output were refused, by setting and value;
//! - [`build`]: the one place that knows every actuator kind ([`KINDS`]).

#![deny(missing_docs)]

pub mod cordon;
pub mod declare;
pub mod ecmp;
pub mod ecn;
mod env_file;
mod error;
pub mod exec;
pub mod http;
pub mod kube;
pub mod link;
pub mod log;
pub mod nccl;
pub mod node_condition;
pub mod pfcwd;
pub mod rail;
pub mod registry;
pub mod sonic;
mod target;
pub mod webhook;

pub use cordon::{CordonActuator, CordonConfig};
pub use ecmp::{EcmpActuator, EcmpConfig};
pub use ecn::{EcnActuator, EcnConfig};
pub use error::{ActuatorConfigError, LabelError, ParseError};
pub use exec::{ExecActuator, ExecConfig};
pub use link::{LinkActuator, LinkConfig};
pub use log::{LogActuator, LogConfig};
pub use nccl::{NcclActuator, NcclConfig};
pub use pfcwd::{PfcwdActuator, PfcwdConfig};
pub use rail::{RailActuator, RailConfig};
pub use webhook::{WebhookActuator, WebhookConfig};

use std::sync::Arc;

use engine::{ActionKindDecl, Actuator, BuildError, Component};

/// The actuator kinds [`build`] knows.
pub const KINDS: &[&str] = &["log", "exec", "cordon", "link", "webhook", "pfcwd", "ecn", "rail", "nccl", "ecmp"];

/// Builds the actuator `name` of `kind` from its config `settings` (its
/// table in the playbook, without the kind and name).
///
/// The error names the actuator, its kind and what was wrong: an unknown
/// kind, an unknown or mistyped setting, an unusable value.
pub fn build(kind: &str, name: &str, settings: toml::Table) -> Result<Arc<dyn Actuator>, BuildError> {
    build_in(kind, name, settings, None)
}

/// [`build`], with the inventory that names the switches of the switch
/// actuators' `[gnmi]`.
pub fn build_in(
    kind: &str,
    name: &str,
    settings: toml::Table,
    inventory: Option<&engine::Topology>,
) -> Result<Arc<dyn Actuator>, BuildError> {
    fn shared<A: Actuator + 'static>(actuator: A) -> Arc<dyn Actuator> {
        Arc::new(actuator)
    }
    let it = Component { component: "actuator", name, kind };
    match kind {
        "log" => it.build(settings, |c: LogConfig| c.build(name)).map(shared),
        "exec" => it.build(settings, |c: ExecConfig| c.build(name)).map(shared),
        "cordon" => it.build(settings, |c: CordonConfig| c.build(name)).map(shared),
        "link" => it.build(settings, |c: LinkConfig| c.build(name)).map(shared),
        "webhook" => it.build(settings, |c: WebhookConfig| c.build(name)).map(shared),
        "pfcwd" => it.build(settings, |c: PfcwdConfig| c.build_in(name, inventory)).map(shared),
        "ecn" => it.build(settings, |c: EcnConfig| c.build_in(name, inventory)).map(shared),
        "rail" => it.build(settings, |c: RailConfig| c.build_in(name, inventory)).map(shared),
        "nccl" => it.build(settings, |c: NcclConfig| c.build(name)).map(shared),
        "ecmp" => it.build(settings, |c: EcmpConfig| c.build_in(name, inventory)).map(shared),
        _ => Err(it.unknown(KINDS)),
    }
}

/// The action kinds the actuators of type `kind` carry out, each as they
/// declare it, for the types whose kinds are their own (`cordon`, `link`,
/// `pfcwd`, `ecn`, `rail`, `nccl`, `ecmp`); `None` for the generic ones, whose settings
/// declare theirs ([`declare`]).
pub fn declared(kind: &str) -> Option<Vec<ActionKindDecl>> {
    match kind {
        "cordon" => Some(cordon::kinds()),
        "link" => Some(link::kinds()),
        "pfcwd" => Some(pfcwd::kinds()),
        "ecn" => Some(ecn::kinds()),
        "rail" => Some(rail::kinds()),
        "nccl" => Some(nccl::kinds()),
        "ecmp" => Some(ecmp::kinds()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn builds_each_known_kind_under_its_name() {
        assert_eq!(build("log", "audit", toml::Table::new()).unwrap().name(), "audit");
        assert_eq!(build("exec", "drain", table("argv = [\"/bin/true\"]")).unwrap().name(), "drain");
        assert_eq!(build("cordon", "slurm", table("scheduler = \"slurm\"")).unwrap().name(), "slurm");
        assert_eq!(build("link", "isolate", table("node = \"gpu-07\"")).unwrap().name(), "isolate");
        let webhook = table("format = \"alertmanager\"\nurl = \"http://127.0.0.1:9093\"");
        assert_eq!(build("webhook", "page", webhook).unwrap().name(), "page");
        let gnmi = "[gnmi]\nswitches = { leaf-rail0 = \"127.0.0.1:57400\" }";
        assert_eq!(build("pfcwd", "wd", table(gnmi)).unwrap().name(), "wd");
        assert_eq!(build("ecn", "ecn", table(gnmi)).unwrap().name(), "ecn");
        assert_eq!(build("rail", "rail", table(gnmi)).unwrap().name(), "rail");
        let err = build("rail", "rail", toml::Table::new()).err().unwrap().to_string();
        assert!(err.contains("no step is configured"), "{err}");
    }

    #[test]
    fn an_unknown_kind_lists_the_known_ones() {
        let err = build("teleport", "t", toml::Table::new()).err().unwrap().to_string();
        assert_eq!(err, format!("actuator \"t\": unknown kind \"teleport\" (known kinds: {})", KINDS.join(", ")));
        assert!(KINDS.starts_with(&["log", "exec"]));
    }

    #[test]
    fn bad_settings_name_the_actuator_and_the_setting() {
        let err = build("log", "audit", table("level = \"debug\"")).err().unwrap().to_string();
        assert!(err.starts_with("actuator \"audit\" (kind \"log\"): unknown field `level`"), "{err}");
        let err = build("exec", "drain", table("argv = [\"/bin/true\"]\ntimeout = 5")).err().unwrap().to_string();
        assert!(err.starts_with("actuator \"drain\" (kind \"exec\"): timeout: invalid type: integer `5`"), "{err}");
        let err = build("exec", "drain", table("argv = [\"true\"]")).err().unwrap();
        assert!(
            err.to_string().starts_with("actuator \"drain\" (kind \"exec\"): argv[0] \"true\" is not an absolute path"),
            "{err}"
        );
        // The actuator's own error, kept as it is.
        let refused = err.source_as::<ActuatorConfigError>();
        assert!(
            matches!(refused, Some(ActuatorConfigError::Invalid { setting, .. }) if setting == "argv[0]"),
            "{err:?}"
        );
    }
}
