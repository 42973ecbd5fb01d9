//! The one build step: a daemon config and every file it names, read,
//! typed and checked into a [`Blueprint`]. `rocemend check` builds it and
//! prints what it found ([`check`]); `rocemend run` builds the same
//! blueprint and starts it. So `check` passes exactly the configs `run`
//! accepts, and both report every problem of every file at once, each at
//! `file:line:col`.
//!
//! The concrete sensors and actuators are not this crate's: the binary
//! knows them and builds them through [`Components`], which this step
//! calls and checks.
//!
//! - [`daemon`]: the config's own settings (engine, log, metrics, state);
//! - [`routing`]: every action a loaded rule can propose reaches exactly one
//!   actuator that can carry it out; `[rule.NAME]` names a rule;
//! - [`check`]: what `check` says it checked;
//! - [`taken`]: a control socket or listen address already in use;
//! - [`salvage`]: the files a file that does not parse names, checked all the same.

pub mod check;
pub mod daemon;
pub mod routing;
pub mod salvage;
pub mod taken;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use engine::config::{Key, KeyPath, Locator, TomlError};
use engine::dispatch::{ActuatorRoute, DispatchConfig};
use engine::playbook::Playbook;
use engine::policy::PolicySettings;
use engine::rule::{Helpers, RuleSet};
use engine::runtime::SensorSlot;
use engine::{BuildError, Errors, Labels, SeriesTable, Topology};

use crate::config::{DaemonConfig, Overrides};
use crate::control::serve::{tcp_settings, TcpSettings};
use crate::report::chain;
use crate::web::WebSettings;
pub use daemon::{DaemonSettings, LogFormat};

/// What the binary builds from configuration: the sensors and actuators
/// it knows, and what each kind of actuator needs to know of the host.
pub trait Components {
    /// This host's short name, for a config without `node`.
    fn local_node(&self) -> std::io::Result<String>;

    /// Gives every actuator of `playbook` that acts on this host the
    /// daemon's `node`; an actuator naming another node is a problem, placed
    /// in the playbook.
    fn one_node(&self, playbook: &mut Playbook, node: &str) -> Vec<TomlError>;

    /// The configured sensors, built; the switches a sensor names are looked
    /// up in `inventory`.
    fn sensors(
        &self,
        config: &DaemonConfig,
        inventory: Option<&Topology>,
    ) -> Result<Vec<SensorSlot>, Errors<BuildError>>;

    /// The playbook's actuators, built, one route per pattern they handle,
    /// in the playbook's order; each problem placed in the playbook.
    fn routes(&self, playbook: &Playbook, inventory: Option<&Topology>) -> Result<Vec<ActuatorRoute>, Vec<TomlError>>;

    /// Checks the playbook's `[kubernetes_condition]` as `run` builds its
    /// reporter (the API server's URL, the token and CA files, the Node's
    /// name); each problem placed at its key.
    fn node_condition(&self, playbook: &Playbook) -> Vec<TomlError>;

    /// The dispatcher's settings for `playbook` with `routes`.
    fn dispatch_config(
        &self,
        playbook: &Playbook,
        routes: Vec<ActuatorRoute>,
        policy: PolicySettings,
        topology: Option<Arc<Topology>>,
    ) -> DispatchConfig;
}

/// Every problem found, one per line, each `file:line:col: message`.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
pub struct Problems(pub Vec<TomlError>);

/// A daemon, built and checked, ready to start.
pub struct Blueprint {
    /// The config as written (fleet settings, sensors' raw tables).
    pub config: DaemonConfig,
    /// Its own settings, typed.
    pub settings: DaemonSettings,
    /// This daemon's node.
    pub node: String,
    /// The inventory.
    pub topology: Option<Arc<Topology>>,
    /// The series table the rules and sensors share.
    pub series: SeriesTable,
    /// The playbook, its rules and actuators.
    pub part: PlaybookPart,
    /// The configured sensors, built.
    pub sensors: Vec<SensorSlot>,
    /// The control API's TCP side, checked, if configured.
    pub tcp: Option<TcpSettings>,
    /// The web console's listener, checked, if configured.
    pub web: Option<WebSettings>,
}

impl Blueprint {
    /// Reads the config at `config_path` and every file it names (or the
    /// `overrides`), and checks all of it, building its parts with
    /// `components`; every problem at once.
    pub fn build(
        config_path: &Path,
        overrides: &Overrides,
        components: &dyn Components,
    ) -> Result<Blueprint, Problems> {
        let text = engine::config::read_text(config_path).map_err(|e| Problems(vec![e]))?;
        let mut config = match DaemonConfig::parse(&text, config_path) {
            Ok(config) => config,
            Err(e) => return Err(Problems(salvaged(e, &text, config_path, overrides, components))),
        };
        config.apply(overrides);
        let at = Locator::new(&text, &config_path.display().to_string());
        let mut errors = Vec::new();
        let settings = daemon::settings(&config, &at, &mut errors);
        let tcp = tcp_settings(&config.control)
            .map_err(|e| errors.push(at.error(&["control".into(), "listen".into()], chain(&e))))
            .ok()
            .flatten();
        let web = crate::web::settings(&config.web)
            .map_err(|e| errors.push(at.error(&["web".into(), "listen".into()], chain(&e))))
            .ok()
            .flatten();
        let node = node(&config, components).map_err(|e| errors.push(at.error(&["node".into()], e))).ok();
        let topology = match &config.inventory {
            // A file the config names but that is not there is the config's mistake.
            Some(path) if overrides.inventory.is_none() && !path.exists() => {
                errors.push(at.error(&["inventory".into()], format!("inventory {}: no such file", path.display())));
                None
            }
            path => inventory(path.as_deref(), &mut errors),
        };
        check_node_listed(&config, node.as_deref(), topology.as_deref(), &at, &mut errors);
        let node_label = node.clone().unwrap_or_default();
        let series = SeriesTable::new(topology.clone(), Labels::from_pairs([("node", node_label.as_str())]));
        let sensors = sensors(&config, topology.as_deref(), components, &at, &mut errors);
        check_fleet(&config, &sensors, &at, &mut errors);
        let inputs = PlaybookInputs {
            path: config.playbook.clone(),
            rules: config.rules.clone(),
            node: node.clone(),
            topology: topology.clone(),
            series: series.clone(),
        };
        // A playbook the config names but that is not there is the config's mistake.
        let part = if overrides.playbook.is_none() && !config.playbook.exists() {
            let missing = format!("playbook {}: no such file", config.playbook.display());
            errors.push(at.error(&["playbook".into()], missing));
            None
        } else {
            PlaybookPart::build(inputs, components, &mut errors)
        };
        let (Some(settings), Some(node), Some(part), true) = (settings, node, part, errors.is_empty()) else {
            return Err(Problems(errors));
        };
        Ok(Blueprint { config, settings, node, topology, series, part, sensors, tcp, web })
    }
}

/// A config that does not parse, `e`, and the problems of the files its
/// text still names (the playbook, its rules, the inventory), checked as
/// `check` checks them without a config: every stage's mistakes in one run.
fn salvaged(
    e: TomlError,
    text: &str,
    config_path: &Path,
    overrides: &Overrides,
    components: &dyn Components,
) -> Vec<TomlError> {
    let named = |key: &str| salvage::named_path(text, config_path, key).filter(|p| p.exists());
    let files = Overrides {
        playbook: overrides.playbook.clone().or_else(|| named("playbook")),
        rules: overrides.rules.clone().or_else(|| named("rules")),
        inventory: overrides.inventory.clone().or_else(|| named("inventory")),
    };
    let mut errors = vec![e];
    errors.extend(check::Checked::files(files, components).errors);
    errors
}

/// This daemon's node: the config's `node`, else this host's short name.
fn node(config: &DaemonConfig, components: &dyn Components) -> Result<String, String> {
    match &config.node {
        Some(node) => Ok(node.clone()),
        None => components
            .local_node()
            .map_err(|e| format!("the config has no `node`, and this host's name cannot be read (set `node`): {e}")),
    }
}

/// A node's daemon (one with a sensor that reads its host) must be in the inventory it reads:
/// its samples get their rail, plane and far end there, and its actions their targets. A daemon
/// that reads only switches, a Prometheus or a recording is no node's, and an inventory without
/// nodes (switches only) lists none.
fn check_node_listed(
    config: &DaemonConfig,
    node: Option<&str>,
    topology: Option<&Topology>,
    at: &Locator,
    errors: &mut Vec<TomlError>,
) {
    let (Some(node), Some(topology)) = (node, topology) else { return };
    let reads_host = config.sensor.iter().any(|s| sensors::HOST_KINDS.contains(&s.kind.as_str()));
    if !reads_host || topology.node_count() == 0 || topology.has_node(node) {
        return;
    }
    let names = topology.inventory().node.iter().map(|n| n.name.as_str());
    let whose = if config.node.is_some() { "" } else { " (this host's name: the config sets no `node`)" };
    errors.push(at.error(
        &["node".into()],
        format!(
            "node {node:?}{whose} is not in the inventory ({} node{} listed): its samples would get no rail, \
             plane or far end, and its actions no target{}",
            topology.node_count(),
            if topology.node_count() == 1 { "" } else { "s" },
            engine::names::did_you_mean(node, names)
        ),
    ));
}

/// The inventory at `path`, if one is named.
pub fn inventory(path: Option<&Path>, errors: &mut Vec<TomlError>) -> Option<Arc<Topology>> {
    let path = path?;
    Topology::load(path).map(Arc::new).map_err(|e| errors.extend(e.problems())).ok()
}

/// The `[fleet]` table, checked as `run` reads it: its settings, a build
/// that can coordinate at all, and for `shard`, sensors that read switches
/// to share.
fn check_fleet(config: &DaemonConfig, sensors: &[SensorSlot], at: &Locator, errors: &mut Vec<TomlError>) {
    let Some(table) = &config.fleet else { return };
    let settings = match fleet::FleetSettings::new(table) {
        Ok(settings) => settings,
        Err(e) => {
            // Placed at the key the error is about, below `[fleet]`.
            let key = match &e {
                fleet::FleetError::Config(config) => KeyPath::default().key("fleet").extend(&config.key()),
                _ => KeyPath::default().key("fleet"),
            };
            errors.push(at.error(&key.keys(), e.to_string()));
            return;
        }
    };
    if settings.shard.is_some() && sensors.iter().all(|slot| slot.sensor.switches().is_empty()) {
        errors.push(at.error(
            &["fleet".into(), "shard".into()],
            "fleet.shard shares the switches the gnmi sensors read, and no [[sensor]] reads switches",
        ));
    }
    if !cfg!(feature = "etcd") {
        errors.push(at.error(
            &["fleet".into()],
            "[fleet] is configured, but this rocemend was built without etcd support; build it with \
             `cargo build --features etcd`, or remove [fleet] to run standalone",
        ));
    }
}

/// The configured sensors, built; each one refused is placed at its
/// `[[sensor]]`.
fn sensors(
    config: &DaemonConfig,
    inventory: Option<&Topology>,
    components: &dyn Components,
    at: &Locator,
    errors: &mut Vec<TomlError>,
) -> Vec<SensorSlot> {
    components.sensors(config, inventory).unwrap_or_else(|problems| {
        errors.extend(problems.into_iter().map(|e| {
            let path: Vec<Key<'_>> = match config.sensor.iter().position(|s| s.name() == e.name()) {
                Some(i) => vec!["sensor".into(), i.into()],
                None => vec!["sensor".into()],
            };
            at.error(&path, e.to_string())
        }));
        Vec::new()
    })
}

/// What a playbook is checked with.
pub struct PlaybookInputs {
    /// The playbook file.
    pub path: PathBuf,
    /// The rule directory, when not the playbook's own.
    pub rules: Option<PathBuf>,
    /// The daemon's node, when a daemon config is checked: the playbook's
    /// host actuators act on it.
    pub node: Option<String>,
    /// The inventory.
    pub topology: Option<Arc<Topology>>,
    /// The series table the rules read.
    pub series: SeriesTable,
}

/// The playbook with what hangs off it: its policy, its rules, its
/// actuators, checked against each other.
pub struct PlaybookPart {
    /// The playbook.
    pub playbook: Playbook,
    /// Its file.
    pub path: PathBuf,
    /// Its policy.
    pub policy: PolicySettings,
    /// Its rule directory.
    pub rules_dir: PathBuf,
    /// The rules, the playbook's `off` rules left out.
    pub rules: RuleSet,
    /// How many rules the directory holds, `off` ones included.
    pub rules_in_dir: usize,
    /// The actuators, built, by the kinds they handle.
    pub routes: Vec<ActuatorRoute>,
    /// Unsafe settings `allow_unsafe` lets through.
    pub allowed_unsafe: Vec<TomlError>,
}

impl PlaybookPart {
    /// Loads and checks a playbook and its rules, building its actuators
    /// with `components`; `None` when they have problems (pushed to
    /// `errors`).
    pub fn build(
        inputs: PlaybookInputs,
        components: &dyn Components,
        errors: &mut Vec<TomlError>,
    ) -> Option<PlaybookPart> {
        let before = errors.len();
        let PlaybookInputs { path, rules, node, topology, series } = inputs;
        let mut playbook = match Playbook::load(&path) {
            Ok(playbook) => playbook,
            Err(e) => {
                errors.extend(e);
                // The rules are checked all the same, from the directory the
                // playbook's text names.
                let text = engine::config::read_text(&path).unwrap_or_default();
                let dir = rules.or_else(|| salvage::named_path(&text, &path, "rules")).filter(|d| d.is_dir());
                if let Some(dir) = dir {
                    let loaded = engine::rule::load_dir(&dir, Helpers::new(Some(series), topology));
                    errors.extend(loaded.err().into_iter().flatten().map(rule_error));
                }
                return None;
            }
        };
        if let Some(node) = &node {
            errors.extend(components.one_node(&mut playbook, node));
        }
        let Some(rules_dir) = rules.or_else(|| playbook.rules_dir(&path)) else {
            errors.push(playbook.error(&[], "no rule directory: set `rules` in the playbook or the daemon config"));
            return None;
        };
        let all = engine::rule::load_dir(&rules_dir, Helpers::new(Some(series), topology.clone()))
            .map_err(|e| errors.extend(e.into_iter().map(rule_error)))
            .ok();
        let routes = components.routes(&playbook, topology.as_deref()).map_err(|e| errors.extend(e)).ok();
        errors.extend(components.node_condition(&playbook));
        let policy = playbook.policy().map_err(|e| errors.push(playbook.error(&[], e.to_string()))).ok();
        let rules_in_dir = all.as_ref().map_or(0, |set| set.rules.len());
        let rules = all.map(|all| {
            let set = all.clone().without_disabled(&playbook.disabled_rules());
            if let Some(routes) = &routes {
                errors.extend(routing::check(&playbook, &set, &routing::RuleDirectory::of(&all), routes));
            }
            set
        });
        let mut allowed_unsafe = playbook.allowed_unsafe();
        if let Some(routes) = &routes {
            let harmless = declared_harmless(&playbook, routes);
            if playbook.allow_unsafe {
                allowed_unsafe.extend(harmless);
            } else {
                errors.extend(harmless.into_iter().map(|mut e| {
                    e.message.push_str(engine::playbook::ALLOW_UNSAFE_HINT);
                    e
                }));
            }
        }
        if errors.len() > before {
            return None;
        }
        Some(PlaybookPart {
            playbook,
            path,
            policy: policy?,
            rules_dir,
            rules: rules?,
            rules_in_dir,
            routes: routes?,
            allowed_unsafe,
        })
    }
}

/// Actuators the playbook marks `destructive = false` that carry out a kind
/// their type declares destructive (a cordon, a rail drain): the blast-radius
/// limits and the breaker would not count them. Unsafe: refused unless
/// `allow_unsafe`. A generic actuator's patterns (`*`, `node.*` of `log` or
/// `exec`) declare nothing of the kinds they take, so only named kinds count.
fn declared_harmless(playbook: &Playbook, routes: &[ActuatorRoute]) -> Vec<TomlError> {
    let mut out = Vec::new();
    for (i, entry) in playbook.actuator.iter().enumerate().filter(|(_, e)| !e.destructive) {
        let declared = routes.iter().filter(|r| r.actuator.name() == entry.name).flat_map(|r| r.actuator.kinds());
        let mut destructive: Vec<&str> = declared
            .filter(|d| d.destructive && !d.kind.contains('*'))
            .filter(|d| entry.handles.iter().any(|h| engine::playbook::covers(h, &d.kind)))
            .map(|d| d.kind.as_str())
            .collect();
        destructive.dedup();
        if let Some(kinds) = (!destructive.is_empty()).then(|| destructive.join(", ")) {
            out.push(playbook.error(
                &["actuator".into(), i.into(), "destructive".into()],
                format!(
                    "actuator {:?}: destructive = false, but its type declares {kinds} destructive: the blast-radius \
                     limits and the breaker would let every such action through",
                    entry.name
                ),
            ));
        }
    }
    out
}

/// A rule's error as a config problem (it names its own file and place).
pub fn rule_error(e: engine::RuleError) -> TomlError {
    TomlError { path: e.path, line: e.line, column: e.column, message: e.message }
}
