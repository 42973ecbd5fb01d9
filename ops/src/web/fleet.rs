//! The fleet section's source, when `[fleet]` is set: what
//! `rocemend fleet status` reads from etcd — the budgets in use, who
//! holds their tokens, the fleet breaker, the live daemons — read with a
//! client of the console's own, so a slow etcd never delays the daemon.

use serde_json::Value;

/// Reads the fleet's state from etcd.
#[derive(Clone)]
pub struct FleetReader {
    #[cfg(feature = "etcd")]
    client: fleet::etcd_client::Client,
    #[cfg(feature = "etcd")]
    settings: fleet::FleetSettings,
}

impl FleetReader {
    /// A reader for `config`'s etcd, if `[fleet]` is set (connecting is
    /// lazy: etcd may be down at start). Without etcd support there is no
    /// fleet to read: such a daemon refuses `[fleet]` at start.
    #[cfg(feature = "etcd")]
    pub async fn connect(config: Option<&fleet::FleetConfig>) -> anyhow::Result<Option<FleetReader>> {
        let Some(config) = config else { return Ok(None) };
        let settings = fleet::FleetSettings::new(config).map_err(|e| anyhow::anyhow!("[fleet]: {e}"))?;
        let client = fleet::connect_client(&settings).await?;
        Ok(Some(FleetReader { client, settings }))
    }

    /// See the feature-enabled variant.
    #[cfg(not(feature = "etcd"))]
    pub async fn connect(_config: Option<&fleet::FleetConfig>) -> anyhow::Result<Option<FleetReader>> {
        Ok(None)
    }

    /// The fleet as etcd has it, as JSON (`fleet::status::FleetStatus`).
    pub async fn read(&self) -> Result<Value, String> {
        #[cfg(feature = "etcd")]
        {
            let elections: Vec<String> = self.settings.aggregator.iter().cloned().collect();
            let status =
                fleet::status::read(&self.client, &self.settings, &elections).await.map_err(|e| e.to_string())?;
            serde_json::to_value(&status).map_err(|e| e.to_string())
        }
        #[cfg(not(feature = "etcd"))]
        Err("this rocemend was built without etcd support".into())
    }
}
