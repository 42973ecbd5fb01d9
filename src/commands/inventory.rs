//! `rocemend inventory discover | merge | check`: reads the flags, calls the `inventory` crate
//! and prints what it returns; findings exit 1, unusable input 2.

use std::path::{Path, PathBuf};

use anyhow::Context;
use engine::topology::Inventory;
use ops::inventory::discover::{self, LldpSource, Options};
use ops::inventory::gpus::GpuSource;
use ops::inventory::naming::Naming;
use ops::inventory::switch_view::{self, SwitchView};

use super::Exit;
use crate::cli::{InventoryCommand, RailNaming, SwitchViews};

/// Runs the verb.
pub fn run(command: InventoryCommand) -> anyhow::Result<Exit> {
    match command {
        InventoryCommand::Discover {
            node,
            sysfs_root,
            gpus,
            nvml_lib,
            lldp_socket,
            lldpcli,
            lldp_json,
            lldp,
            lldp_wait,
            naming,
            out,
        } => {
            let gpus = match gpus.as_str() {
                "nvml" => GpuSource::Nvml(nvml_lib),
                "sysfs" => GpuSource::Sysfs,
                _ => GpuSource::Auto,
            };
            let lldp = match (lldp_json, lldp.as_str()) {
                (Some(path), _) => LldpSource::File(path),
                (None, "lldpd") => LldpSource::Lldpcli { program: lldpcli, socket: lldp_socket },
                (None, "raw") => LldpSource::Raw { wait: lldp_wait },
                (None, _) => LldpSource::Auto { program: lldpcli, socket: lldp_socket, wait: lldp_wait },
            };
            let node = match node {
                Some(node) => node,
                None => hostname()?,
            };
            let options = Options { node, sysfs_root, gpus, lldp, naming: naming_of(&naming)? };
            let found = discover::discover(&options)?;
            write(out.as_deref(), &found.to_toml())?;
            for warning in &found.warnings {
                eprintln!("warning: {warning}");
            }
            Ok(if found.warnings.is_empty() { Exit::Ok } else { Exit::Findings })
        }
        InventoryCommand::Merge { fragments, views, out } => merge(&fragments, &views, out.as_deref()),
        InventoryCommand::Check { file, views } => check(&file, &views),
    }
}

fn naming_of(n: &RailNaming) -> anyhow::Result<Naming> {
    Ok(Naming::new(&n.rail_pattern, n.plane_pattern.as_deref(), n.plane_of_rail.as_deref())?)
}

fn hostname() -> anyhow::Result<String> {
    let path = "/proc/sys/kernel/hostname";
    let name = std::fs::read_to_string(path).with_context(|| format!("reading {path} (or say --node)"))?;
    Ok(name.trim().to_string())
}

fn write(out: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match out {
        Some(path) => std::fs::write(path, text).with_context(|| format!("writing {}", path.display())),
        None => {
            print!("{text}");
            Ok(())
        }
    }
}

fn merge(fragments: &[PathBuf], views: &SwitchViews, out: Option<&Path>) -> anyhow::Result<Exit> {
    let mut parsed = Vec::new();
    for path in fragments {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        // Each fragment must load on its own, as the daemon would load it.
        engine::Topology::parse(&text, &path.display().to_string())?;
        let inventory: Inventory = toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
        parsed.push((path.clone(), inventory));
    }
    let views = read_views(views, None)?;
    let merged = ops::inventory::merge::merge(&parsed, &views)?;
    let names: Vec<String> = fragments.iter().map(|p| p.display().to_string()).collect();
    let mut header = vec![format!("Merged by `rocemend inventory merge` from {}.", names.join(", "))];
    if !views.is_empty() {
        let sources: Vec<String> = views.iter().map(|v| format!("{} ({})", v.switch, v.source)).collect();
        header.push(format!("Compared with the LLDP tables of {}.", sources.join(", ")));
    }
    write(out, &merged.to_toml(&header))?;
    for fault in &merged.faults {
        eprintln!("{}: {}", fault.at, fault.message);
    }
    Ok(if merged.faults.is_empty() { Exit::Ok } else { Exit::Findings })
}

fn check(file: &Path, views: &SwitchViews) -> anyhow::Result<Exit> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let views = read_views(views, Some(file))?;
    let faults = ops::inventory::audit::check(&text, &file.display().to_string(), &views)?;
    for fault in &faults {
        println!("{fault}");
    }
    if faults.is_empty() {
        println!("{}: no cabling fault found", file.display());
        return Ok(Exit::Ok);
    }
    println!("{} fault(s)", faults.len());
    Ok(Exit::Findings)
}

/// `SWITCH=VALUE`.
fn split(flag: &str, arg: &str) -> anyhow::Result<(String, String)> {
    match arg.split_once('=') {
        Some((sw, value)) if !sw.is_empty() && !value.is_empty() => Ok((sw.to_string(), value.to_string())),
        _ => anyhow::bail!("{flag} {arg:?}: write SWITCH=VALUE"),
    }
}

/// The switches' views; `--gnmi` logs in as `--gnmi-settings`, else `inventory`'s `[gnmi]`.
fn read_views(views: &SwitchViews, inventory: Option<&Path>) -> anyhow::Result<Vec<SwitchView>> {
    let settings = views.gnmi_settings.as_deref().or(inventory);
    let mut out = Vec::new();
    for arg in &views.lldp_table {
        let (sw, file) = split("--lldp-table", arg)?;
        out.push(switch_view::from_dump(&sw, Path::new(&file))?);
    }
    if !views.redis.is_empty() || !views.gnmi.is_empty() {
        let _quiet = PipeIgnored::new();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        for arg in &views.redis {
            let (sw, address) = split("--redis", arg)?;
            out.push(runtime.block_on(switch_view::from_redis(&sw, &address))?);
        }
        for arg in &views.gnmi {
            let (sw, address) = split("--gnmi", arg)?;
            let config = switch_view::gnmi_login(&address, settings)?;
            out.push(runtime.block_on(switch_view::from_gnmi(&sw, &config))?);
        }
    }
    Ok(out)
}

/// SIGPIPE ignored while switches are read: main restores its default so that `| head` ends
/// the command quietly, but a switch that closes its socket mid-write (a TLS port answering
/// plain text) must be an error that names it, not the process killed without a word.
struct PipeIgnored;

impl PipeIgnored {
    fn new() -> PipeIgnored {
        // SAFETY: changing a signal's disposition; no handler runs Rust code.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
        PipeIgnored
    }
}

impl Drop for PipeIgnored {
    fn drop(&mut self) {
        // SAFETY: as in `new`: back to main's default before the results are printed.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
}
