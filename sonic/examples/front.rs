//! A SONiC switch to poke at by hand: the redis-server peer (sonic-utilities' databases, SONiC's
//! Lua detectors as the watchdog) behind the gNMI front, with the image's write flags.
//!
//! ```text
//! cargo run -p rocemend-sonic --features gnmi-server,test-peer --example front -- 127.0.0.1:50051 mellanox
//! ```
//!
//! Then, for instance with pygnmi:
//!
//! ```text
//! from pygnmi.client import gNMIclient
//! with gNMIclient(target=("127.0.0.1", 50051), insecure=True) as gc:
//!     print(gc.get(prefix="/", target="COUNTERS_DB", path=["COUNTERS/Ethernet*"], encoding="json_ietf"))
//!     print(gc.set(update=[("/sonic-db:CONFIG_DB/localhost/PFC_WD/Ethernet4",
//!                            {"action": "drop", "detection_time": "200", "restoration_time": "200"})],
//!                  encoding="json_ietf"))
//! ```
//!
//! A storm starts on Ethernet4 priority 3 after `--storm` (the detectors then declare it).
//! Stops on Ctrl-C.

use std::sync::Arc;

use sonic::gnmi_front::{serve, FrontConfig, GnmiFront, RedisBackend};
use sonic::peer::{self, SonicPeer};
use sonic::AsicFamily;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let address = args.first().cloned().unwrap_or_else(|| "127.0.0.1:50051".into());
    let family = match args.get(1).map(String::as_str).unwrap_or("mellanox") {
        "broadcom" => AsicFamily::Broadcom,
        "marvell" => AsicFamily::MarvellTeralynx,
        "vs" => AsicFamily::Vs,
        _ => AsicFamily::Mellanox,
    };
    let Some(prereq) = peer::prerequisites("the front example") else {
        return Err("the peer's prerequisites are missing (see above)".into());
    };
    let switch = SonicPeer::builder(family).only_ports(["Ethernet0", "Ethernet4", "Ethernet8"]).start(&prereq).await?;
    if args.iter().any(|a| a == "--storm") {
        switch.start_storm("Ethernet4", 3)?;
    }
    let listener = tokio::net::TcpListener::bind(&address).await?;
    println!("gNMI on {} ({family:?}, native write on, translib write off); Ctrl-C stops", listener.local_addr()?);
    let front = GnmiFront::new(Arc::new(RedisBackend::new(switch.switch().clone())), FrontConfig::default());
    serve(front, listener, None, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    Ok(())
}
