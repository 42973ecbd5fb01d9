//! `rocemend explain ID`: one decision with its evidence and every step.

use super::control::{decode, status_error};
use crate::control::client::{connect, Target};
use crate::control::pb;
use crate::report::explain_text;
use crate::Exit;
use engine::dispatch::Decision;

/// `rocemend explain ID`.
pub fn explain(target: &Target, id: &str, json: bool) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        connect(target).await?.explain(pb::ExplainRequest { id: id.to_string() }).await.map_err(status_error)
    })?;
    let chain = reply.into_inner().decisions_json;
    if json {
        for line in &chain {
            println!("{line}");
        }
        return Ok(Exit::Ok);
    }
    for (i, text) in chain.iter().enumerate() {
        let d: Decision = decode(text)?;
        if i > 0 {
            println!();
        }
        print!("{}", explain_text(&d));
    }
    Ok(Exit::Ok)
}
