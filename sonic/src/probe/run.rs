//! The probe's steps (the module doc of [`super`] lists them).

use std::time::Instant;

use gnmi_proto::sonic::PathStyle;
use gnmi_proto::GnmiClient;

use super::{ProbeError, ProbeTarget, Served, StyleSetting, SwitchProfile, WriteAccess};
use crate::asic::{AsicFamily, Recognition};
use crate::client::Change;
use crate::gnmi::{transport, write, GnmiError, SwitchGnmi};
use crate::layout::db::{CONFIG_DB, COUNTERS_DB};
use crate::names::ports::{ALIAS, PORT};
use crate::names::queues::PORT_NAME_MAP;
use crate::names::PortNames;

/// The `PFC_WD` key the write check deletes: never a port's name (ports are not named in
/// capitals with underscores), so the delete never finds an entry.
pub const WRITE_PROBE_KEY: &str = "ROCEMEND_WRITE_PROBE";

/// Probes `target` (see [`super`]).
pub async fn probe(target: &ProbeTarget) -> Result<SwitchProfile, ProbeError> {
    let switch = target.switch.clone();
    let address = target.client.address.clone();
    let tls = target.client.tls.is_some();
    let unreachable = |source| ProbeError::Unreachable { switch: switch.clone(), source: Box::new(source) };
    let mut client = match GnmiClient::connect(&target.client).await {
        Ok(client) => client,
        Err(source) => {
            let hint = transport::diagnose(&address, tls, &source).await;
            return Err(unreachable(GnmiError::Call { what: "connect".into(), source, hint }));
        }
    };
    let models = match client.capabilities().await {
        Ok(caps) => caps.supported_models.into_iter().map(|m| m.name).collect::<Vec<_>>(),
        Err(source) => {
            let hint = transport::diagnose(&address, tls, &source).await;
            return Err(unreachable(GnmiError::Call { what: "Capabilities".into(), source, hint }));
        }
    };
    let sonic_db_listed = models.iter().any(|m| m == gnmi_proto::sonic::SONIC_DB_ORIGIN);
    let served = served(&client, target, sonic_db_listed).await.map_err(unreachable)?;
    let reads = choose(target, &served)?;
    let mut gnmi = SwitchGnmi::new(client, tls, reads.clone(), target.instance.clone());
    let ports = ports(&mut gnmi, &switch).await?;
    let asic = asic(&mut gnmi).await;
    let writes = if target.check_writes { writes(&mut gnmi, &switch).await? } else { WriteAccess::Unchecked };
    let profile = SwitchProfile {
        switch,
        address,
        tls,
        reads,
        instance: target.instance.clone(),
        served,
        writes,
        ports,
        asic,
        models,
        probed_at: Instant::now(),
    };
    tracing::info!(message = "Switch probed.", profile = %profile.summary());
    Ok(profile)
}

/// Which styles answer a Get of `COUNTERS_PORT_NAME_MAP`. A refusal is kept as the style's
/// reason; a switch that stops answering fails the probe.
async fn served(client: &GnmiClient, target: &ProbeTarget, sonic_db_listed: bool) -> Result<Served, GnmiError> {
    let tls = target.client.tls.is_some();
    let sonic_db_style = PathStyle::SonicDbOrigin { namespace: Some(target.instance.clone()) };
    let try_style = |style: PathStyle| {
        let mut gnmi = SwitchGnmi::new(client.clone(), tls, style, target.instance.clone());
        async move {
            match gnmi.hash(COUNTERS_DB, PORT_NAME_MAP).await {
                Ok(_) => Ok(Ok(())),
                Err(e) if e.is_transport() => Err(e),
                Err(e) => Ok(Err(e.to_string())),
            }
        }
    };
    let sonic_db = if sonic_db_listed {
        try_style(sonic_db_style).await?
    } else {
        Err("its Capabilities do not list the sonic-db model".to_string())
    };
    let prefix_target = try_style(PathStyle::PrefixTarget).await?;
    Ok(Served { prefix_target, sonic_db })
}

/// The read style: the configured one if served, else (auto) origin `sonic-db` first.
fn choose(target: &ProbeTarget, served: &Served) -> Result<PathStyle, ProbeError> {
    let sonic_db = PathStyle::SonicDbOrigin { namespace: Some(target.instance.clone()) };
    let not_served = |style: &'static str, why: &String| ProbeError::NotServed {
        switch: target.switch.clone(),
        style,
        why: why.clone(),
    };
    match (target.style, &served.sonic_db, &served.prefix_target) {
        (StyleSetting::SonicDb | StyleSetting::Auto, Ok(()), _) => Ok(sonic_db),
        (StyleSetting::SonicDb, Err(why), _) => Err(not_served("sonic-db-origin", why)),
        (StyleSetting::PrefixTarget | StyleSetting::Auto, _, Ok(())) => Ok(PathStyle::PrefixTarget),
        (StyleSetting::PrefixTarget, _, Err(why)) => Err(not_served("prefix-target", why)),
        (StyleSetting::Auto, Err(sonic_db), Err(prefix_target)) => Err(ProbeError::NoStyle {
            switch: target.switch.clone(),
            sonic_db: sonic_db.clone(),
            prefix_target: prefix_target.clone(),
        }),
    }
}

/// Every `PORT|<name>` and its alias.
async fn ports(gnmi: &mut SwitchGnmi, switch: &str) -> Result<PortNames, ProbeError> {
    let read = |problem: String| ProbeError::Read { switch: switch.to_string(), problem };
    let table = match gnmi.table(CONFIG_DB, PORT).await {
        Ok(table) => table,
        Err(e) if e.is_transport() => {
            return Err(ProbeError::Unreachable { switch: switch.into(), source: Box::new(e) })
        }
        Err(e) => return Err(read(format!("reading its ports: {e}"))),
    };
    if table.is_empty() {
        return Err(read("CONFIG_DB has no PORT entries: the switch is not configured yet".into()));
    }
    PortNames::new(table.into_iter().map(|(name, entry)| (name, entry.get(ALIAS).cloned())))
        .map_err(|e| read(format!("its ports: {e}")))
}

/// The ASIC family from `DEVICE_METADATA|localhost` and the first port's counters.
async fn asic(gnmi: &mut SwitchGnmi) -> Result<Recognition, String> {
    let metadata = gnmi.entry(CONFIG_DB, "DEVICE_METADATA", "localhost").await.map_err(|e| e.to_string())?;
    let map = gnmi.hash(COUNTERS_DB, PORT_NAME_MAP).await.map_err(|e| e.to_string())?;
    let Some(oid) = map.as_ref().and_then(|m| m.values().next()).cloned() else {
        return Err("COUNTERS_DB has no COUNTERS_PORT_NAME_MAP yet".into());
    };
    let counters = gnmi.entry(COUNTERS_DB, crate::names::queues::COUNTERS, &oid).await.map_err(|e| e.to_string())?;
    let counters = counters.ok_or_else(|| format!("port {oid} has no counters yet"))?;
    AsicFamily::recognise(&counters, metadata.as_ref()).map_err(|e| e.to_string())
}

/// The write check: a delete of `PFC_WD|ROCEMEND_WRITE_PROBE`, which never exists.
async fn writes(gnmi: &mut SwitchGnmi, switch: &str) -> Result<WriteAccess, ProbeError> {
    let probe = Change::Delete { table: crate::watchdog::PFC_WD.into(), key: WRITE_PROBE_KEY.into() };
    let sets = write::sets(gnmi.instance(), &[probe])
        .map_err(|e| ProbeError::Read { switch: switch.into(), problem: e.to_string() })?;
    for set in &sets {
        match gnmi.set(set).await {
            Ok(()) => {}
            Err(e) if e.is_transport() => {
                return Err(ProbeError::Unreachable { switch: switch.into(), source: Box::new(e) })
            }
            Err(e) => match e.write_gate() {
                Some(gate) => return Ok(WriteAccess::Refused(gate)),
                // A target that refuses to delete what is not there has let the write through
                // its gates: that is all the check asks.
                None if e.code() == Some(tonic::Code::NotFound) => {}
                None => {
                    return Err(ProbeError::Read { switch: switch.into(), problem: format!("checking writes: {e}") })
                }
            },
        }
    }
    Ok(WriteAccess::Native)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(style: StyleSetting) -> ProbeTarget {
        ProbeTarget::new("leaf", gnmi_proto::ClientConfig::plain("127.0.0.1:1")).style(style).instance("asic0")
    }

    #[test]
    fn auto_prefers_origin_sonic_db_and_a_configured_style_must_be_served() {
        let both = Served { prefix_target: Ok(()), sonic_db: Ok(()) };
        let sonic_db = PathStyle::SonicDbOrigin { namespace: Some("asic0".into()) };
        assert_eq!(choose(&target(StyleSetting::Auto), &both).unwrap(), sonic_db);
        assert_eq!(choose(&target(StyleSetting::PrefixTarget), &both).unwrap(), PathStyle::PrefixTarget);
        let old = Served { prefix_target: Ok(()), sonic_db: Err("no sonic-db model".into()) };
        assert_eq!(choose(&target(StyleSetting::Auto), &old).unwrap(), PathStyle::PrefixTarget);
        let e = choose(&target(StyleSetting::SonicDb), &old).unwrap_err().to_string();
        assert_eq!(e, "switch leaf does not serve path_style = \"sonic-db-origin\": no sonic-db model");
        let none = Served { prefix_target: Err("a".into()), sonic_db: Err("b".into()) };
        assert!(matches!(choose(&target(StyleSetting::Auto), &none), Err(ProbeError::NoStyle { .. })));
    }
}
