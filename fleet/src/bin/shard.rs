//! `rocemend-fleet-shard`: one switch aggregator's share of a shard group,
//! in a process of its own, for the fleet tests (a SIGKILL is then real:
//! no clean-up, the lease lapses on its own).
//!
//! It joins the group and prints its owned set as one JSON line each time
//! it changes (`{"identity": …, "owned": [...], "at_ms": …}`), until killed.
//!
//! ```text
//! rocemend-fleet-shard --etcd http://127.0.0.1:2379 --identity agg-a --group pod-a \
//!     --switches leaf-00,leaf-01,leaf-02 --ttl 2
//! ```

use std::io::Write;
use std::time::Duration;

use fleet::settings::{FleetConfig, FleetSettings};
use fleet::shard::Shard;

struct Args {
    etcd: Vec<String>,
    identity: String,
    group: String,
    switches: Vec<String>,
    ttl: u64,
}

fn args() -> Result<Args, String> {
    let mut a = Args { etcd: vec![], identity: String::new(), group: String::new(), switches: vec![], ttl: 10 };
    for (flag, value) in fleet::probe::flag_values(std::env::args().skip(1)).map_err(|e| e.to_string())? {
        match flag.as_str() {
            "--etcd" => a.etcd = value.split(',').map(str::to_string).collect(),
            "--identity" => a.identity = value,
            "--group" => a.group = value,
            "--switches" => a.switches = value.split(',').map(str::to_string).collect(),
            "--ttl" => a.ttl = value.parse().map_err(|e| format!("--ttl: {e}"))?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.etcd.is_empty() || a.identity.is_empty() || a.group.is_empty() || a.switches.is_empty() {
        return Err(
            "usage: rocemend-fleet-shard --etcd URL[,URL] --identity ID --group GROUP --switches S[,S] [--ttl S]"
                .into(),
        );
    }
    Ok(a)
}

fn fail(e: impl std::fmt::Display, code: i32) -> ! {
    eprintln!("rocemend-fleet-shard: {e}");
    std::process::exit(code)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let a = args().unwrap_or_else(|e| fail(e, 2));
    let config = FleetConfig {
        etcd: a.etcd,
        identity: Some(a.identity.clone()),
        lease_ttl: Duration::from_secs(a.ttl),
        request_timeout: Duration::from_secs(2),
        prefix: "/rocemend/fleet/".into(),
        fleet_size: None,
        budget: vec![],
        aggregator: None,
        shard: None,
    };
    let settings = FleetSettings::new(&config).unwrap_or_else(|e| fail(e, 2));
    let shard = Shard::start(&settings, &a.group, a.switches).await.unwrap_or_else(|e| fail(e, 1));
    if let Err(e) = shard.ready(Duration::from_secs(10)).await {
        fail(e, 1);
    }
    let mut owned = shard.subscribe();
    loop {
        let now: Vec<String> = owned.borrow_and_update().iter().cloned().collect();
        let line = serde_json::json!({ "identity": a.identity, "owned": now, "at_ms": fleet::keys::now_ms() });
        let mut out = std::io::stdout().lock();
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            // The reader is gone: so is the test that started us.
            return;
        }
        drop(out);
        if owned.changed().await.is_err() {
            return;
        }
    }
}
