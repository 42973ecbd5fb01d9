//! `rocemend fleet status` and `rocemend fleet reset-breaker`: the fleet's
//! shared state, read from and written to etcd directly (no daemon needed).

use ops::config::DaemonConfig;

use super::Exit;
use crate::cli::FleetSource;

/// The settings to reach etcd with: the config's `[fleet]` table, its
/// endpoints replaced by `--etcd` when given.
fn settings(source: &FleetSource) -> anyhow::Result<fleet::FleetSettings> {
    let mut table = match &source.config {
        Some(path) => {
            DaemonConfig::load(path)?.fleet.ok_or_else(|| anyhow::anyhow!("{}: no [fleet] table", path.display()))?
        }
        None => fleet::FleetConfig {
            etcd: vec![],
            identity: None,
            lease_ttl: std::time::Duration::from_secs(10),
            request_timeout: std::time::Duration::from_secs(2),
            prefix: "/rocemend/fleet/".into(),
            fleet_size: None,
            aggregator: None,
            shard: None,
            budget: vec![],
        },
    };
    if !source.etcd.is_empty() {
        table.etcd = source.etcd.clone();
    }
    if table.etcd.is_empty() {
        anyhow::bail!("where is etcd? give --etcd URL or --config FILE with a [fleet] table");
    }
    // This command holds no tokens; it needs an identity only to be valid.
    table.identity.get_or_insert_with(|| "rocemend-fleet-cli".into());
    fleet::FleetSettings::new(&table).map_err(|e| anyhow::anyhow!("[fleet]: {e}"))
}

#[cfg(feature = "etcd")]
pub fn status(source: &FleetSource, elections: &[String], json: bool) -> anyhow::Result<Exit> {
    let settings = settings(source)?;
    super::runtime()?.block_on(async {
        let client = fleet::connect_client(&settings).await?;
        let status = fleet::status::read(&client, &settings, elections).await?;
        if json {
            println!("{}", serde_json::to_string_pretty(&status)?);
        } else {
            print!("{}", status.render());
        }
        Ok(Exit::Ok)
    })
}

#[cfg(feature = "etcd")]
pub fn reset_breaker(source: &FleetSource, by: &str) -> anyhow::Result<Exit> {
    let settings = settings(source)?;
    super::runtime()?.block_on(async {
        let client = fleet::connect_client(&settings).await?;
        let keys = fleet::keys::Keys::new(&settings.prefix);
        let old = fleet::reset_breaker(&client, &keys, by, settings.request_timeout).await?;
        if old.tripped {
            println!("fleet breaker reset by {by} (it was tripped by {}: {})", old.by, old.reason);
        } else {
            println!("the fleet breaker was not tripped; nothing to reset");
        }
        Ok(Exit::Ok)
    })
}

#[cfg(not(feature = "etcd"))]
fn without_etcd() -> anyhow::Error {
    anyhow::anyhow!("this rocemend was built without etcd support; build it with `cargo build --features etcd`")
}

#[cfg(not(feature = "etcd"))]
pub fn status(source: &FleetSource, _elections: &[String], _json: bool) -> anyhow::Result<Exit> {
    settings(source)?;
    Err(without_etcd())
}

#[cfg(not(feature = "etcd"))]
pub fn reset_breaker(source: &FleetSource, _by: &str) -> anyhow::Result<Exit> {
    settings(source)?;
    Err(without_etcd())
}
