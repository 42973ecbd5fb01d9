//! `rocemend-fleet-probe`: one daemon's dispatcher with the etcd
//! coordinator, in a process of its own, for the fleet tests.
//!
//! It sees one fault (a cordon of its node, as every daemon under a failed
//! spine does), dispatches it in enforce mode through the real dispatcher
//! and policy, prints the decision as one JSON line, then keeps its session
//! (and any token it took) for `--hold` seconds, or until killed.
//!
//! ```text
//! rocemend-fleet-probe --etcd http://127.0.0.1:2379 --identity n07 --node n07 \
//!     --max 3 --window 10m --ttl 2 --hold 30
//! ```

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use engine::contracts::Coordinator;
use fleet::settings::FleetSettings;
use fleet::{probe, EtcdCoordinator};

struct Args {
    etcd: Vec<String>,
    identity: String,
    node: String,
    max: u32,
    window: Option<Duration>,
    ttl: u64,
    hold: u64,
}

fn args() -> Result<Args, String> {
    let mut a =
        Args { etcd: vec![], identity: String::new(), node: String::new(), max: 3, window: None, ttl: 10, hold: 0 };
    for (flag, value) in probe::flag_values(std::env::args().skip(1)).map_err(|e| e.to_string())? {
        match flag.as_str() {
            "--etcd" => a.etcd = value.split(',').map(str::to_string).collect(),
            "--identity" => a.identity = value,
            "--node" => a.node = value,
            "--max" => a.max = value.parse().map_err(|e| format!("--max: {e}"))?,
            "--window" => a.window = Some(humantime::parse_duration(&value).map_err(|e| format!("--window: {e}"))?),
            "--ttl" => a.ttl = value.parse().map_err(|e| format!("--ttl: {e}"))?,
            "--hold" => a.hold = value.parse().map_err(|e| format!("--hold: {e}"))?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.etcd.is_empty() || a.identity.is_empty() || a.node.is_empty() {
        return Err("usage: rocemend-fleet-probe --etcd URL[,URL] --identity ID --node NODE [--max N] [--window D] [--ttl S] [--hold S]".into());
    }
    Ok(a)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let a = match args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("rocemend-fleet-probe: {e}");
            std::process::exit(2);
        }
    };
    let config = probe::cordon_budget(&a.etcd, &a.identity, a.max, a.window, a.ttl);
    let settings = FleetSettings::new(&config).unwrap_or_else(|e| {
        eprintln!("rocemend-fleet-probe: {e}");
        std::process::exit(2)
    });
    let coordinator = Arc::new(EtcdCoordinator::start(settings).await.unwrap_or_else(|e| {
        eprintln!("rocemend-fleet-probe: {e}");
        std::process::exit(1)
    }));
    if let Err(e) = coordinator.ready(Duration::from_secs(10)).await {
        eprintln!("rocemend-fleet-probe: {e}");
        std::process::exit(1);
    }
    let mut d = probe::dispatcher(Arc::new(probe::Counting::default()), coordinator.clone() as Arc<dyn Coordinator>);
    let mut proposal = probe::proposal("node.cordon", &a.node, engine::time::wall_clock_now());
    proposal.id = format!("p-{}", a.identity);
    let decision = d.dispatch(proposal).await;
    let line = serde_json::json!({
        "identity": a.identity,
        "verdict": decision.verdict.name(),
        "reason": decision.verdict.reason(),
        "held_keys": coordinator.held(),
    });
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
    drop(out);
    tokio::time::sleep(Duration::from_secs(a.hold)).await;
}
