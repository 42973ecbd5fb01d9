//! The daemon config's own settings, typed: durations parsed, enums
//! chosen, addresses resolved, files and directories checked, each problem
//! placed at its line and column. What `run` would refuse at start is
//! refused here, so `check` says it first.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use engine::config::{Key, Locator, TomlError};
use engine::recording::{Rotation, Thinning};
use engine::runtime::{ClockMode, Recording};
use engine::time::Nanos;

use crate::config::DaemonConfig;

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Lines for people.
    Human,
    /// One JSON object a line.
    Json,
}

/// The `[engine]` settings, typed.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Which clock rules run on.
    pub clock: ClockMode,
    /// The evaluation tick (at least 1 ms).
    pub tick: Duration,
    /// How often the rule directory is polled; `None`: never.
    pub reload_poll: Option<Duration>,
    /// How far ahead of the clock a sample may be stamped.
    pub max_ahead: Nanos,
    /// The share of a core one rule may spend.
    pub rule_cost_budget: f64,
    /// The default cap on series per sensor.
    pub max_series_per_sensor: usize,
    /// Stop once every sensor has ended.
    pub exit_when_sensors_end: bool,
    /// How long stopping may take (1 s to 10 min).
    pub shutdown_timeout: Duration,
}

/// The daemon's own settings, checked.
#[derive(Debug, Clone)]
pub struct DaemonSettings {
    /// The engine.
    pub engine: EngineSettings,
    /// The log format.
    pub log_format: LogFormat,
    /// The log filter, checked.
    pub log_level: String,
    /// The control socket.
    pub socket: PathBuf,
    /// The metrics listener, resolved.
    pub metrics_listen: Option<SocketAddr>,
    /// The recording, if one is kept.
    pub record: Option<Recording>,
    /// Where samples are sent on (`[remote_write]`), if anywhere.
    pub remote_write: Option<crate::remote_write::RemoteWrite>,
}

/// Checks the daemon config's own settings (not the files it names).
pub fn settings(config: &DaemonConfig, at: &Locator, errors: &mut Vec<TomlError>) -> Option<DaemonSettings> {
    let before = errors.len();
    let engine = engine_settings(config, at, errors);
    let log_format = match config.log.format.as_str() {
        "human" => LogFormat::Human,
        "json" => LogFormat::Json,
        other => {
            errors.push(
                at.error(&["log".into(), "format".into()], format!("log.format {other:?}: expected human or json")),
            );
            LogFormat::Human
        }
    };
    if let Err(e) = log_filter(&config.log.level) {
        let level = &config.log.level;
        errors.push(at.error(&["log".into(), "level".into()], format!("log.level {level:?}: {e}")));
    }
    let metrics_listen = config.metrics.listen.as_deref().and_then(|addr| {
        resolve(addr)
            .map_err(|e| {
                errors.push(at.error(&["metrics".into(), "listen".into()], format!("metrics.listen {addr:?}: {e}")))
            })
            .ok()
    });
    if let Err(why) = creatable_dir(&config.state_dir) {
        errors.push(at.error(&["state_dir".into()], format!("state_dir {}: {why}", config.state_dir.display())));
    }
    let record = config.record.clone().map(|path| recording(config, path, at, errors));
    for (i, sensor) in config.sensor.iter().enumerate() {
        if sensor.max_series == Some(0) {
            let message =
                format!("sensor {:?}: max_series = 0: it could keep no series; expected at least 1", sensor.name());
            errors.push(at.error(&["sensor".into(), i.into(), "max_series".into()], message));
        }
    }
    let socket = config.control.socket.clone().unwrap_or_else(|| config.state_dir.join("control.sock"));
    let remote_write = config.remote_write.as_ref().and_then(|rw| crate::remote_write::settings(rw, at, errors));
    (errors.len() == before).then(|| DaemonSettings {
        engine: engine.expect("no error means every engine setting was read"),
        log_format,
        log_level: config.log.level.clone(),
        socket,
        metrics_listen,
        record,
        remote_write,
    })
}

/// The recording at `path` and its rotation, from the `record_*` settings.
fn recording(config: &DaemonConfig, path: PathBuf, at: &Locator, errors: &mut Vec<TomlError>) -> Recording {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if let Err(why) = creatable_dir(dir) {
        errors.push(
            at.error(&["record".into()], format!("record {}: its directory {}: {why}", path.display(), dir.display())),
        );
    } else if path.is_dir() {
        errors.push(at.error(
            &["record".into()],
            format!("record {}: is a directory; name the file to record to", path.display()),
        ));
    } else if path.exists() && !access(&path, libc::W_OK) {
        errors.push(at.error(
            &["record".into()],
            format!("record {}: is not writable by this user (the daemon appends to it)", path.display()),
        ));
    }
    for (key, value) in [("record_max_mib", config.record_max_mib), ("record_keep", u64::from(config.record_keep))] {
        if value == 0 {
            errors.push(at.error(&[key.into()], format!("{key} = 0: expected at least 1")));
        }
    }
    if config.record_thin_to.is_zero() {
        errors.push(at.error(&["record_thin_to".into()], "record_thin_to = 0: expected a resolution, e.g. \"1s\""));
    }
    let thin_to = Nanos::try_from(config.record_thin_to.as_nanos()).unwrap_or(Nanos::MAX);
    let rotation = Rotation {
        max_bytes: config.record_max_mib.max(1) << 20,
        keep: config.record_keep,
        keep_for: Some(config.record_keep_for).filter(|d| !d.is_zero()),
        thin: Some(Thinning { after: config.record_thin_after, to: thin_to.max(1) })
            .filter(|_| !config.record_thin_after.is_zero()),
    };
    Recording { path, rotation }
}

fn engine_settings(config: &DaemonConfig, at: &Locator, errors: &mut Vec<TomlError>) -> Option<EngineSettings> {
    let e = &config.engine;
    let before = errors.len();
    let clock = match e.clock.as_str() {
        "wall" => ClockMode::Wall,
        "samples" => ClockMode::Samples,
        other => {
            errors.push(at.error(
                &["engine".into(), "clock".into()],
                format!("engine.clock {other:?}: expected wall or samples"),
            ));
            ClockMode::Wall
        }
    };
    let mut out_of_range = |key: &str, value: String, expected: &str| {
        errors
            .push(at.error(&["engine".into(), Key::Name(key)], format!("engine.{key} = {value}: expected {expected}")))
    };
    if !(Duration::from_millis(1)..=Duration::from_secs(60)).contains(&e.tick) {
        out_of_range("tick", format!("{:?}", humantime::format_duration(e.tick).to_string()), "1ms to 60s");
    }
    if !(e.rule_cost_budget > 0.0 && e.rule_cost_budget <= 1.0) {
        out_of_range("rule_cost_budget", e.rule_cost_budget.to_string(), "a share of a core, above 0 and at most 1");
    }
    if !(Duration::from_secs(1)..=Duration::from_secs(600)).contains(&e.shutdown_timeout) {
        let shown = format!("{:?}", humantime::format_duration(e.shutdown_timeout).to_string());
        out_of_range("shutdown_timeout", shown, "1s to 10m");
    }
    if e.max_series_per_sensor == 0 {
        out_of_range("max_series_per_sensor", "0".into(), "at least 1");
    }
    (errors.len() == before).then(|| EngineSettings {
        clock,
        tick: e.tick,
        reload_poll: (!e.reload_poll.is_zero()).then_some(e.reload_poll),
        max_ahead: Nanos::try_from(e.max_ahead.as_nanos()).unwrap_or(Nanos::MAX),
        rule_cost_budget: e.rule_cost_budget,
        max_series_per_sensor: e.max_series_per_sensor,
        exit_when_sensors_end: e.exit_when_sensors_end,
        shutdown_timeout: e.shutdown_timeout,
    })
}

/// The levels a log filter directive may name.
const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// Checks a log filter: comma-separated `LEVEL` or `target=LEVEL`
/// directives. Stricter than the tracing filter, which takes a lone word
/// (`verbose`) as a target to log everything of: a typo must not silently
/// turn logging into something else.
fn log_filter(text: &str) -> Result<(), String> {
    for directive in text.split(',').map(str::trim) {
        let level = match directive.rsplit_once('=') {
            Some((target, level)) if !target.is_empty() => level,
            Some(_) => return Err(format!("{directive:?} names no target before `=`")),
            None => directive,
        };
        if !LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return Err(format!("{level:?} is not a level (expected one of {}, or target=LEVEL)", LEVELS.join(", ")));
        }
    }
    tracing_subscriber::EnvFilter::try_new(text).map(drop).map_err(|e| e.to_string())
}

/// `host:port` to an address, refusing what cannot be bound to.
fn resolve(addr: &str) -> Result<SocketAddr, String> {
    addr.to_socket_addrs().map_err(|e| e.to_string())?.next().ok_or_else(|| "resolves to no address".into())
}

/// A directory the daemon writes (the state, the recording) must be one it
/// can write: created at start if missing, so then its nearest existing
/// parent must be writable. Nothing is created here (`check` changes
/// nothing).
fn creatable_dir(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        return match (dir.is_dir(), writable(dir)) {
            (false, _) => Err("is not a directory".into()),
            (true, false) => Err("is not writable by this user".into()),
            (true, true) => Ok(()),
        };
    }
    let parents = dir.ancestors().skip(1).map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
    match parents.into_iter().find(|p| p.exists()) {
        Some(parent) if parent.is_dir() && writable(parent) => Ok(()),
        Some(parent) => {
            Err(format!("does not exist and cannot be created: {} is not a writable directory", parent.display()))
        }
        None => Err("does not exist and has no existing parent".into()),
    }
}

/// Whether this process may create files in `dir`.
fn writable(dir: &Path) -> bool {
    access(dir, libc::W_OK | libc::X_OK)
}

/// Whether this process's real user may access `path` as `mode` says.
fn access(path: &Path, mode: libc::c_int) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else { return false };
    // SAFETY: `path` is a valid NUL-terminated string that outlives the call.
    unsafe { libc::access(path.as_ptr(), mode) == 0 }
}
