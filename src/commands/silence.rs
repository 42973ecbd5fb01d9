//! `rocemend silence` and `rocemend unsilence`: no action for a rule or a
//! target for a while, set and lifted over the control API.

use super::control::{decode, status_error};
use crate::control::client::{connect, Target};
use crate::control::pb;
use crate::report::rfc3339;
use crate::Exit;

/// What `rocemend silence` asks for.
pub struct SilenceArgs {
    /// Only this rule.
    pub rule: Option<String>,
    /// Only targets containing this text.
    pub target: Option<String>,
    /// How long.
    pub duration: crate::cli::Span,
    /// Why.
    pub reason: String,
    /// Who.
    pub by: String,
}

/// `rocemend silence`.
pub fn silence(target: &Target, args: SilenceArgs, as_json: bool) -> anyhow::Result<Exit> {
    let reply = super::runtime()?.block_on(async {
        let request = pb::SilenceRequest {
            rule: args.rule.unwrap_or_default(),
            target: args.target.unwrap_or_default(),
            duration: args.duration.text,
            by: args.by,
            reason: args.reason,
        };
        connect(target).await?.silence(request).await.map_err(status_error)
    })?;
    let text = reply.into_inner().silence_json;
    if as_json {
        println!("{text}");
        return Ok(Exit::Ok);
    }
    let s: engine::dispatch::Silence = decode(&text)?;
    println!("{}  silenced {} (lift early: rocemend unsilence {})", s.id, scope(&s), s.id);
    Ok(Exit::Ok)
}

/// What a silence holds and for how long: `rule R  target T  until U`.
pub fn scope(s: &engine::dispatch::Silence) -> String {
    let (rule, target) = (s.rule.as_deref().unwrap_or("*"), s.target.as_deref().unwrap_or("*"));
    format!("rule {rule}  target {target}  until {}", rfc3339(s.until))
}

/// `rocemend unsilence ID`.
pub fn unsilence(target: &Target, id: &str) -> anyhow::Result<Exit> {
    super::runtime()?.block_on(async {
        connect(target).await?.unsilence(pb::UnsilenceRequest { id: id.to_string() }).await.map_err(status_error)
    })?;
    println!("{id} lifted");
    Ok(Exit::Ok)
}
