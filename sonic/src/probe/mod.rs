//! One probe per switch, shared by the gNMI sensor and the switch actuators: what the switch's
//! sonic-gnmi accepts, found at start (and again on reconnect), so that both address it the
//! same way, name its ports the same way, and know before a storm whether it can be written.
//!
//! ```no_run
//! # async fn demo() -> Result<(), sonic::probe::ProbeError> {
//! use sonic::probe::{ProbeTarget, ProfileCache, StyleSetting};
//!
//! let target = ProbeTarget::new("leaf-rail0", gnmi_proto::ClientConfig::plain("10.0.0.10:8080"))
//!     .style(StyleSetting::Auto)
//!     .check_writes(true);
//! // Probed once, then cached (re-probed after `max_age`, or when asked: on a reconnect).
//! let profile = ProfileCache::global().profile(&target).await?;
//! let reads = &profile.reads; // read COUNTERS_DB and CONFIG_DB this way
//! let port = profile.port("Ethernet4").expect("a SONiC name"); // `etp2` is refused, naming Ethernet4
//! profile.writable().expect("native write on");
//! # let _ = (reads, port); Ok(()) }
//! ```
//!
//! What a probe sends ([`probe`]), all reads but the last:
//!
//! 1. Capabilities: whether the `sonic-db` model is listed (sonic-gnmi always lists it, with or
//!    without native write, `server.go:1275-1317`);
//! 2. Get `COUNTERS_PORT_NAME_MAP` in each style — origin `sonic-db`
//!    `/COUNTERS_DB/<instance>/…` and prefix target `COUNTERS_DB` — to learn which it serves
//!    ([`Served`]); the style used for reads ([`SwitchProfile::reads`]) is the configured one,
//!    or with `auto` origin `sonic-db` when served (the style writes must use, with SONiC's
//!    names as keys and an instance for multi-ASIC switches), else prefix target;
//! 3. Get CONFIG_DB `PORT`: every port's SONiC name and alias ([`PortNames`]), since
//!    sonic-gnmi's virtual paths key ports by alias (`virtual_db.go:90-108`);
//! 4. Get `DEVICE_METADATA|localhost` and one port's counters: the ASIC family, where visible;
//! 5. with [`ProbeTarget::check_writes`], a Set that deletes
//!    `/CONFIG_DB/<instance>/PFC_WD/ROCEMEND_WRITE_PROBE`, an entry that never exists: sonic-gnmi
//!    refuses it at its write gates ("GNMI is in read-only mode", "GNMI native write is
//!    disabled") before looking at it, and otherwise skips the delete of a path that is not
//!    there and applies nothing (`mixed_db_client.go`, `SetIncrementalConfig`: a failed remove
//!    is skipped, an empty patch is not applied). CONFIG_DB is not changed either way.
//!
//! - [`ProbeTarget`], [`StyleSetting`]: what to probe and how it is configured;
//! - [`SwitchProfile`], [`Served`], [`WriteAccess`]: what was found;
//! - [`ProfileCache`]: one profile per switch, [`ProfileCache::global`] for the process;
//! - [`ProbeError`]: why there is no profile (transient or not, [`ProbeError::is_transient`]).

mod cache;
mod run;

use std::time::Instant;

use gnmi_proto::sonic::PathStyle;
use gnmi_proto::ClientConfig;

pub use cache::ProfileCache;
pub use run::{probe, WRITE_PROBE_KEY};

use crate::asic::Recognition;
use crate::gnmi::{GnmiError, WriteGate};
use crate::names::PortNames;

/// The instance element of origin `sonic-db` on a single-ASIC switch (`mixed_db_client.go:55`).
pub const LOCALHOST: &str = "localhost";

/// How a switch's reads are configured to be addressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum StyleSetting {
    /// Whatever the switch serves, origin `sonic-db` first.
    #[default]
    Auto,
    /// Prefix target (`COUNTERS_DB`), sonic-gnmi's DB client and its virtual paths.
    PrefixTarget,
    /// Origin `sonic-db` with the instance element.
    SonicDb,
}

/// What to probe: a switch, how to reach it, how it is configured.
#[derive(Clone)]
pub struct ProbeTarget {
    /// The switch's name (its `switch` label).
    pub switch: String,
    /// How to reach its gNMI server.
    pub client: ClientConfig,
    /// How reads are to be addressed.
    pub style: StyleSetting,
    /// The instance element of origin `sonic-db` (`localhost`; `asicN` on a multi-ASIC switch).
    pub instance: String,
    /// Whether to learn if the switch can be written (a Set that changes nothing; see the
    /// module doc). A sensor that never writes may skip it.
    pub check_writes: bool,
}

impl std::fmt::Debug for ProbeTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the password.
        f.debug_struct("ProbeTarget")
            .field("switch", &self.switch)
            .field("address", &self.client.address)
            .field("tls", &self.client.tls.is_some())
            .field("style", &self.style)
            .field("instance", &self.instance)
            .field("check_writes", &self.check_writes)
            .finish()
    }
}

impl ProbeTarget {
    /// Switch `switch` at `client`, style `auto`, instance `localhost`, writes not checked.
    pub fn new(switch: impl Into<String>, client: ClientConfig) -> Self {
        ProbeTarget {
            switch: switch.into(),
            client,
            style: StyleSetting::Auto,
            instance: LOCALHOST.into(),
            check_writes: false,
        }
    }

    /// With reads addressed as `style`.
    pub fn style(mut self, style: StyleSetting) -> Self {
        self.style = style;
        self
    }

    /// With instance element `instance`.
    pub fn instance(mut self, instance: impl Into<String>) -> Self {
        self.instance = instance.into();
        self
    }

    /// Checking writes, or not.
    pub fn check_writes(mut self, on: bool) -> Self {
        self.check_writes = on;
        self
    }
}

/// Which read styles the switch served, each with sonic-gnmi's refusal when it did not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    /// Prefix target `COUNTERS_DB`.
    pub prefix_target: Result<(), String>,
    /// Origin `sonic-db` with the instance element.
    pub sonic_db: Result<(), String>,
}

/// Whether the switch takes CONFIG_DB writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteAccess {
    /// Origin `sonic-db` Sets pass its gates.
    Native,
    /// Refused at a gate, in sonic-gnmi's words.
    Refused(WriteGate),
    /// Not checked ([`ProbeTarget::check_writes`] off).
    Unchecked,
}

/// What one switch's sonic-gnmi accepts, as probed.
#[derive(Debug, Clone)]
pub struct SwitchProfile {
    /// The switch's name.
    pub switch: String,
    /// Its address.
    pub address: String,
    /// Whether it was reached over TLS.
    pub tls: bool,
    /// How to address reads (COUNTERS_DB, CONFIG_DB, APPL_DB, STATE_DB): prefix target, or origin
    /// `sonic-db` with the instance element. Writes are always origin `sonic-db`
    /// ([`crate::gnmi::write`]).
    pub reads: PathStyle,
    /// The instance element of origin `sonic-db` paths.
    pub instance: String,
    /// Which styles it served.
    pub served: Served,
    /// Whether it takes writes.
    pub writes: WriteAccess,
    /// Its ports: SONiC names and aliases.
    pub ports: PortNames,
    /// Its ASIC family, or why it could not be told.
    pub asic: Result<Recognition, String>,
    /// The models its Capabilities list.
    pub models: Vec<String>,
    /// When it was probed.
    pub probed_at: Instant,
}

/// A port name a switch does not know by that name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PortError {
    /// It is a port's alias: ports are named by their SONiC name everywhere in rocemend.
    #[error(
        "port {given:?} on {switch} is the alias of {name}; actions and labels name ports by their SONiC name ({name})"
    )]
    Alias {
        /// The switch.
        switch: String,
        /// The text given.
        given: String,
        /// The port's SONiC name.
        name: String,
    },
    /// No port has that name.
    #[error("switch {switch} has no port {given:?} (CONFIG_DB PORT|{given} does not exist)")]
    Unknown {
        /// The switch.
        switch: String,
        /// The text given.
        given: String,
    },
}

impl SwitchProfile {
    /// `given` when it is one of the switch's SONiC port names. An alias is refused, naming
    /// the port it is the alias of, rather than quietly mapped: a label holding an alias is a
    /// fault upstream, and counting it as another port would break the per-port limits.
    pub fn port<'a>(&self, given: &'a str) -> Result<&'a str, PortError> {
        if self.ports.contains(given) {
            return Ok(given);
        }
        match self.ports.name_of_alias(given) {
            Some(name) => Err(PortError::Alias { switch: self.switch.clone(), given: given.into(), name: name.into() }),
            None => Err(PortError::Unknown { switch: self.switch.clone(), given: given.into() }),
        }
    }

    /// Whether CONFIG_DB writes pass the switch's gates; the gate's refusal when they do not.
    /// Unchecked counts as writable (the Set itself then says).
    pub fn writable(&self) -> Result<(), WriteGate> {
        match self.writes {
            WriteAccess::Refused(gate) => Err(gate),
            WriteAccess::Native | WriteAccess::Unchecked => Ok(()),
        }
    }

    /// One line for logs and `check --probe`: `leaf-rail0 (10.0.0.10:8080): reads
    /// sonic-db-origin (localhost), writes native, 32 ports (32 with aliases), ASIC mellanox`.
    pub fn summary(&self) -> String {
        let reads = match &self.reads {
            PathStyle::PrefixTarget => "prefix-target".to_string(),
            PathStyle::SonicDbOrigin { .. } => format!("sonic-db-origin ({})", self.instance),
        };
        let writes = match self.writes {
            WriteAccess::Native => "native".to_string(),
            WriteAccess::Refused(gate) => format!("refused (\"{}\")", gate.text()),
            WriteAccess::Unchecked => "not checked".to_string(),
        };
        let names: Vec<&str> = self.ports.names().collect();
        let aliased = names.iter().filter(|n| self.ports.alias(n).is_some()).count();
        let asic = match &self.asic {
            Ok(r) => r.family.to_string(),
            Err(why) => format!("unknown ({why})"),
        };
        format!(
            "{} ({}): reads {reads}, writes {writes}, {} ports ({aliased} with aliases), ASIC {asic}",
            self.switch,
            self.address,
            names.len()
        )
    }
}

/// Why a switch has no profile.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// It could not be reached, or stopped answering during the probe.
    #[error("switch {switch}: {source}")]
    Unreachable {
        /// The switch.
        switch: String,
        /// What failed (boxed: a client error is large, and this is the rare path).
        source: Box<GnmiError>,
    },
    /// It does not serve the configured style.
    #[error("switch {switch} does not serve path_style = \"{style}\": {why}")]
    NotServed {
        /// The switch.
        switch: String,
        /// The configured style.
        style: &'static str,
        /// sonic-gnmi's refusal.
        why: String,
    },
    /// It serves neither style (`auto`).
    #[error(
        "switch {switch} serves SONiC's databases in neither style: origin sonic-db: {sonic_db}; prefix target: {prefix_target}"
    )]
    NoStyle {
        /// The switch.
        switch: String,
        /// Why origin `sonic-db` failed.
        sonic_db: String,
        /// Why prefix target failed.
        prefix_target: String,
    },
    /// A read the profile needs failed or did not read (the port table, its aliases).
    #[error("switch {switch}: {problem}")]
    Read {
        /// The switch.
        switch: String,
        /// What failed.
        problem: String,
    },
}

impl ProbeError {
    /// Whether probing again later can help: an unreachable switch can come back; a switch
    /// that refuses a style or holds unreadable ports does not change by waiting.
    pub fn is_transient(&self) -> bool {
        matches!(self, ProbeError::Unreachable { .. })
    }
}
