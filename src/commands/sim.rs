//! `rocemend sim switch`: a simulated SONiC switch speaking gNMI, to point
//! the daemon (or any gNMI client) at.

use std::time::Duration;

use anyhow::Context;
use sim::switch::{self, Model};

use super::Exit;

pub fn switch(listen: &str, ports: usize, tick_ms: u64) -> anyhow::Result<Exit> {
    if ports == 0 || ports > 512 {
        anyhow::bail!("--ports {ports}: expected 1..=512");
    }
    super::runtime()?.block_on(async {
        let listener = tokio::net::TcpListener::bind(listen).await.with_context(|| format!("binding {listen}"))?;
        let addr = listener.local_addr()?;
        let model = Model::new(ports);
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let stopped = |mut rx: tokio::sync::watch::Receiver<bool>| async move {
            while !*rx.borrow() {
                if rx.changed().await.is_err() {
                    break;
                }
            }
        };
        tokio::spawn(switch::drive(model.clone(), Duration::from_millis(tick_ms.max(10)), stopped(stop_rx.clone())));
        eprintln!(
            "simulated SONiC switch: {ports} ports (Ethernet0, Ethernet4, …) serving gNMI on {addr}; Ctrl-C stops it"
        );
        let serve = tokio::spawn(switch::serve(listener, model, stopped(stop_rx)));
        tokio::signal::ctrl_c().await?;
        let _ = stop_tx.send(true);
        serve.await??;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(Exit::Ok)
}
