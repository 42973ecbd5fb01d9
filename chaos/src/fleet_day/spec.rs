//! The schema of a fleet game day file (`chaos/scenarios/fleet/*.toml`,
//! `docs/chaos.md`, "Fleet game day"), as written. [`super::plan`] checks
//! it and resolves it into what the runner needs.
//!
//! A game is a script: `[[phase]]` tables run in order, each one a `do`
//! (start faults, wait until the daemons have decided on them, pause, kill
//! etcd's leader, kill the daemon holding a token). The phases are one flat
//! table resolved into an enum by the plan, because `toml::Spanned` (which
//! every error's `file:line:col` comes from) does not survive serde's
//! buffering of internally tagged enums.

use std::ops::Range;

use serde::de::{DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use toml::Spanned;

use fleet::settings::BudgetConfig;
use sim::fabric::Selector;

use crate::scenario::FaultKind;

/// A duration as written (`"300ms"`), with where it was written.
pub type Dur = Spanned<String>;

/// A fleet game day file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetScenario {
    /// Its name: the report's file names.
    pub name: String,
    /// What it shows.
    #[serde(default)]
    pub description: String,
    /// The inventory (one node daemon per node): from this file's folder,
    /// then from the current directory.
    pub inventory: Spanned<String>,
    /// The node daemons' playbook.
    pub playbook: Spanned<String>,
    /// A rule directory for every daemon instead of each playbook's.
    #[serde(default)]
    pub rules: Option<Spanned<String>>,
    /// The fabric's step on the wall clock, and the node daemons' sysfs
    /// poll interval (default 100 ms).
    #[serde(default)]
    pub step: Option<Dur>,
    /// Seed of the fabric's randomness (symbol errors are drawn from it).
    #[serde(default = "one")]
    pub seed: u64,
    /// How long the daemons may take to start, all of them (default 60 s).
    #[serde(default)]
    pub startup_within: Option<Dur>,
    /// The etcd cluster.
    #[serde(default)]
    pub etcd: EtcdSpec,
    /// Every daemon's `[fleet]` table, less what the runner fills in
    /// (`etcd`, `identity`, `fleet_size`, `aggregator`).
    pub fleet: FleetSpec,
    /// The switch aggregator.
    pub aggregator: AggregatorSpec,
    /// The faults, started by `start` phases.
    #[serde(default)]
    pub fault: Vec<FaultSpec>,
    /// The script, in order.
    #[serde(default)]
    pub phase: Vec<PhaseSpec>,
    /// Expectations about the whole game.
    #[serde(default)]
    pub expect: ExpectSpec,
}

fn one() -> u64 {
    1
}

/// The etcd cluster: real `etcd` members on loopback ports.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtcdSpec {
    /// Members (default 3: one may die and the cluster keeps its quorum).
    #[serde(default)]
    pub members: Option<Spanned<usize>>,
    /// Raft heartbeat interval (default 50 ms).
    #[serde(default)]
    pub heartbeat: Option<Dur>,
    /// Raft election timeout (default 500 ms): how long followers wait for
    /// a dead leader before electing another.
    #[serde(default)]
    pub election_timeout: Option<Dur>,
}

/// What every daemon's `[fleet]` table says (the keys of
/// `fleet::FleetConfig` a game chooses).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FleetSpec {
    /// Session lease TTL: a dead daemon's tokens free after this.
    pub lease_ttl: Dur,
    /// How long one etcd call may take (default 2 s).
    #[serde(default)]
    pub request_timeout: Option<Dur>,
    /// The budgets, given to every daemon as its `[[fleet.budget]]`, and
    /// what the game checks the tokens in etcd against.
    #[serde(default)]
    pub budget: Vec<BudgetSpec>,
}

/// One `[[fleet.budget]]`: the daemons' own schema, with where its name
/// was written for the plan's errors.
pub type BudgetSpec = Named<BudgetConfig>;

/// The switch aggregator: one daemon reading every leaf over gNMI.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AggregatorSpec {
    /// Its playbook.
    pub playbook: Spanned<String>,
    /// The aggregator election it campaigns in (`[fleet] aggregator`).
    #[serde(default)]
    pub election: Option<String>,
    /// The gNMI sensor's presets (default `["sonic_pfc"]`).
    #[serde(default)]
    pub presets: Option<Vec<String>>,
    /// The gNMI sensor's sample interval (default 1 s, as SONiC refreshes).
    #[serde(default)]
    pub sample_interval: Option<Dur>,
}

/// Which daemons decide about a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum By {
    /// The node daemon of each NIC the fault hits.
    Nodes,
    /// The switch aggregator, for the leaf port of each NIC.
    Aggregator,
}

/// One fault.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// Its name, for phases and the report.
    pub name: Spanned<String>,
    /// What (`symbol_errors`, `pfc_storm`).
    pub kind: Spanned<FaultKind>,
    /// The NICs it hits; every NIC when absent.
    #[serde(default)]
    pub select: Option<Spanned<Selector>>,
    /// Bit error rate (`symbol_errors`, default 1e-9).
    #[serde(default)]
    pub ber: Option<f64>,
    /// PFC priority (`pfc_storm`, default 3).
    #[serde(default)]
    pub prio: Option<u8>,
    /// What the daemons must do about it.
    pub expect: FaultExpectSpec,
}

/// What the daemons must do about one fault.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultExpectSpec {
    /// The action kind the daemons propose for it (`rail.drain`).
    pub action: Spanned<String>,
    /// Who proposes it.
    pub by: By,
    /// Exactly this many executed, across every daemon (the budget held:
    /// not fewer, the daemons worked; not more, no token was spent twice).
    #[serde(default)]
    pub executed: Option<usize>,
    /// The first daemon detects it within this long of its start.
    #[serde(default)]
    pub detect_within: Option<Dur>,
    /// Its first action is executed within this long of its start.
    #[serde(default)]
    pub mitigate_within: Option<Dur>,
}

/// One `[[phase]]`, as written: `do` says which keys apply.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhaseSpec {
    /// `start`, `settle`, `pause`, `kill-etcd-leader` or
    /// `kill-token-holder`.
    #[serde(rename = "do")]
    pub action: Spanned<String>,
    /// `start`, `settle`: the faults.
    #[serde(default)]
    pub faults: Option<Spanned<Vec<String>>>,
    /// `settle`: at most this long (default 20 s).
    #[serde(default)]
    pub within: Option<Dur>,
    /// `pause`: how long.
    #[serde(default, rename = "for")]
    pub for_: Option<Dur>,
    /// `kill-etcd-leader`: another member leads within this long (default
    /// 5 s).
    #[serde(default)]
    pub elect_within: Option<Dur>,
    /// `kill-token-holder`: the fault whose executed action's daemon is
    /// killed.
    #[serde(default)]
    pub fault: Option<Spanned<String>>,
    /// `kill-token-holder`: its tokens are gone from etcd within this long
    /// of the kill (default the lease TTL + 2 s).
    #[serde(default)]
    pub return_within: Option<Dur>,
}

/// Whether the fleet breaker must trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BreakerExpect {
    /// It must stay clear.
    Clear,
    /// It must trip.
    Tripped,
}

/// Expectations about the whole game. The fleet budget is always checked:
/// no budget cell ever holds more tokens than its limit.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectSpec {
    /// The fleet breaker's state at the end; unchecked (only reported)
    /// when absent.
    #[serde(default)]
    pub fleet_breaker: Option<BreakerExpect>,
}

/// A table read as `T` (another crate's schema, `deny_unknown_fields` and
/// all), with where its `name` key's value was written: the plan's errors
/// about it point there. `Spanned<T>` would point at the table's header,
/// and flattening `T` beside a `Spanned<String>` name cannot work (serde
/// would keep `name` from `T`, and buffering loses the spans).
#[derive(Debug, Clone)]
pub struct Named<T> {
    /// The table.
    pub value: T,
    /// Where its name was written (`0..0` without one: `T` then refuses
    /// the table for its missing name anyway).
    pub name_span: Range<usize>,
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Named<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_map(NamedVisitor(std::marker::PhantomData))
    }
}

struct NamedVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> Visitor<'de> for NamedVisitor<T> {
    type Value = Named<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a table")
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Named<T>, A::Error> {
        let mut name_span = None;
        let tapped = NameTap { inner: map, span: &mut name_span, at_name: false };
        let value = T::deserialize(serde::de::value::MapAccessDeserializer::new(tapped))?;
        Ok(Named { value, name_span: name_span.unwrap_or(0..0) })
    }
}

/// Hands a table's entries on to `T` unchanged, noting the span of the
/// `name` value on the way. Every other key and value is read straight
/// from the TOML deserializer, so their errors keep their own positions.
struct NameTap<'a, A> {
    inner: A,
    span: &'a mut Option<Range<usize>>,
    /// The key just read was `name`.
    at_name: bool,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for NameTap<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        self.inner.next_key_seed(KeyTap { seed, is_name: &mut self.at_name })
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        if !self.at_name {
            return self.inner.next_value_seed(seed);
        }
        let name: Spanned<String> = self.inner.next_value()?;
        *self.span = Some(name.span());
        seed.deserialize(name.into_inner().into_deserializer())
    }
}

/// Reads a key as a string, notes whether it is `name`, and gives it to
/// `T`'s key seed inside the TOML deserializer's own call, so that an
/// unknown key is still reported at its position.
struct KeyTap<'a, K> {
    seed: K,
    is_name: &'a mut bool,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for KeyTap<'_, K> {
    type Value = K::Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<K::Value, D::Error> {
        let key = String::deserialize(d)?;
        *self.is_name = key == "name";
        self.seed.deserialize(key.into_deserializer())
    }
}
