//! The fleet section's source, when `[fleet]` is set: what
//! `rocemend fleet status` reads from etcd — the budgets in use, who
//! holds their tokens, the fleet breaker, the live daemons — read with a
//! client of the console's own, so a slow etcd never delays the daemon.

use serde_json::Value;

/// The fleet's state cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FleetReadError {
    /// `[fleet]` is wrong.
    #[error("[fleet]: {0}")]
    Settings(fleet::FleetError),
    /// etcd did not answer, or refused.
    #[error(transparent)]
    Fleet(#[from] fleet::FleetError),
    /// The status could not be put as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// This build cannot read etcd.
    #[error("this rocemend was built without etcd support")]
    WithoutEtcd,
}

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
    pub async fn connect(config: Option<&fleet::FleetConfig>) -> Result<Option<FleetReader>, FleetReadError> {
        let Some(config) = config else { return Ok(None) };
        let settings = fleet::FleetSettings::new(config).map_err(FleetReadError::Settings)?;
        let client = fleet::connect_client(&settings).await?;
        Ok(Some(FleetReader { client, settings }))
    }

    /// See the feature-enabled variant.
    #[cfg(not(feature = "etcd"))]
    pub async fn connect(_config: Option<&fleet::FleetConfig>) -> Result<Option<FleetReader>, FleetReadError> {
        Ok(None)
    }

    /// The fleet as etcd has it, as JSON (`fleet::status::FleetStatus`).
    pub async fn read(&self) -> Result<Value, FleetReadError> {
        #[cfg(feature = "etcd")]
        {
            let elections: Vec<String> = self.settings.aggregator.iter().cloned().collect();
            let status = fleet::status::read(&self.client, &self.settings, &elections).await?;
            Ok(serde_json::to_value(&status)?)
        }
        #[cfg(not(feature = "etcd"))]
        Err(FleetReadError::WithoutEtcd)
    }
}
