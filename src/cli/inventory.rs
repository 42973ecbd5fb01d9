//! The flags of `rocemend inventory discover | merge | check` (docs/inventory.md, "Discovering
//! the inventory").

use std::path::PathBuf;

use clap::{Args, Subcommand};

/// `rocemend inventory …` (docs/inventory.md, "Discovering the inventory").
#[derive(Debug, Subcommand)]
pub enum InventoryCommand {
    /// This node as an inventory fragment: its RDMA NICs and GPUs (sysfs, NVML), each NIC's
    /// nearest GPU (PCIe tree) and leaf port (LLDP), rails from leaf names; each fact with
    /// its source in a comment. Exit 1 if a NIC had to be left out.
    Discover {
        /// The node's name (default: the host name).
        #[arg(long)]
        node: Option<String>,
        /// The root sysfs is under (a fake tree in tests).
        #[arg(long, default_value = "/")]
        sysfs_root: PathBuf,
        /// Where GPUs come from: auto (NVML, else sysfs; sysfs under another --sysfs-root), nvml, sysfs.
        #[arg(long, default_value = "auto", value_parser = ["auto", "nvml", "sysfs"])]
        gpus: String,
        /// The NVML library, when not the default libnvidia-ml.so.1 (with --gpus nvml).
        #[arg(long)]
        nvml_lib: Option<PathBuf>,
        /// lldpd's control socket (lldpcli -u).
        #[arg(long, short = 'u')]
        lldp_socket: Option<PathBuf>,
        /// The lldpcli program.
        #[arg(long, default_value = "lldpcli")]
        lldpcli: String,
        /// A saved `lldpcli -f json show neighbors` to read instead of asking lldpd.
        #[arg(long, conflicts_with = "lldp_socket")]
        lldp_json: Option<PathBuf>,
        /// Where neighbours come from: auto (lldpd, else raw LLDP frames), lldpd, raw (an
        /// AF_PACKET socket on each NIC; needs CAP_NET_RAW).
        #[arg(long, default_value = "auto", value_parser = ["auto", "lldpd", "raw"], conflicts_with = "lldp_json")]
        lldp: String,
        /// How long to listen for raw LLDP frames at most (seconds, or `1m`); a switch sends
        /// every 30 s by default.
        #[arg(long, value_name = "DURATION", default_value = "35", value_parser = lldp_wait)]
        lldp_wait: std::time::Duration,
        #[command(flatten)]
        naming: RailNaming,
        /// Write the fragment here instead of stdout.
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Join node fragments into one inventory, and compare them with the switches' own LLDP
    /// tables; disagreements on stderr, by element (exit 1 if any).
    Merge {
        /// The node fragments.
        #[arg(required = true)]
        fragments: Vec<PathBuf>,
        #[command(flatten)]
        views: SwitchViews,
        /// Write the inventory here instead of stdout.
        #[arg(long, short)]
        out: Option<PathBuf>,
    },
    /// Print the cabling faults of an inventory by element: the daemon's checks, a GPU on
    /// another rail than the same GPU of the other nodes, LLDP disagreements with the
    /// switches given. Exit 1 on a fault, 2 on input that cannot be checked.
    Check {
        /// The inventory.
        file: PathBuf,
        #[command(flatten)]
        views: SwitchViews,
    },
}

/// How rails and planes are read from leaf names.
#[derive(Debug, Args)]
pub struct RailNaming {
    /// A regex with a group named `rail`, matched against each leaf's name.
    #[arg(long, default_value = ops::inventory::naming::DEFAULT_RAIL_PATTERN)]
    pub rail_pattern: String,
    /// A regex with a group named `plane` (default: --plane-of-rail, else plane 0).
    #[arg(long)]
    pub plane_pattern: Option<String>,
    /// Planes by rail: `0-3=0,4-7=1`.
    #[arg(long, value_name = "RAILS=PLANE,…")]
    pub plane_of_rail: Option<String>,
}

/// The switches' LLDP tables (APPL_DB LLDP_ENTRY_TABLE).
#[derive(Debug, Args)]
pub struct SwitchViews {
    /// A switch's Redis: `SWITCH=HOST:PORT` (repeatable).
    #[arg(long, value_name = "SWITCH=HOST:PORT")]
    pub redis: Vec<String>,
    /// A switch's gNMI, origin sonic-db: `SWITCH=HOST:PORT` (repeatable); TLS and login as
    /// `--gnmi-settings` says, else plain text and no login.
    #[arg(long, value_name = "SWITCH=HOST:PORT")]
    pub gnmi: Vec<String>,
    /// A TOML file whose `[gnmi]` (`credentials_file`, `tls = { ca_file, cert_file, key_file,
    /// domain }`, as the inventory spells it) says how to reach every `--gnmi`; `check`
    /// defaults to the checked inventory's own.
    #[arg(long, value_name = "FILE")]
    pub gnmi_settings: Option<PathBuf>,
    /// A JSON dump of a switch's LLDP_ENTRY_TABLE (`sonic-db-dump -n APPL_DB -k 'LLDP_ENTRY_TABLE:*'`): `SWITCH=FILE` (repeatable).
    #[arg(long, value_name = "SWITCH=FILE")]
    pub lldp_table: Vec<String>,
}

/// Parses `inventory discover --lldp-wait`: whole seconds, or a duration with its unit.
fn lldp_wait(text: &str) -> Result<std::time::Duration, String> {
    if let Ok(secs) = text.parse::<u64>() {
        return Ok(std::time::Duration::from_secs(secs));
    }
    let ns = engine::time::parse_duration(text).map_err(|e| e.to_string())?;
    u64::try_from(ns).map(std::time::Duration::from_nanos).map_err(|_| format!("{text:?}: a wait cannot be negative"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_is_whole_seconds_or_a_duration_with_its_unit() {
        let secs = std::time::Duration::from_secs;
        assert_eq!(
            (lldp_wait("35"), lldp_wait("1m"), lldp_wait("500ms")),
            (Ok(secs(35)), Ok(secs(60)), Ok(secs(1) / 2))
        );
        assert!(lldp_wait("-1s").is_err() && lldp_wait("ten").is_err());
    }
}
