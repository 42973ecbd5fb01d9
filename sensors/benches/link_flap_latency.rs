//! Push latency of the `netlink_link` sensor: how long after a link goes
//! down (or up) its `link_transition` event reaches the sensor's channel.
//!
//! A veth in a private network namespace is flipped 1,000 times each way
//! with rtnetlink `RTM_SETLINK` requests; for every flip the bench times
//! from the request returning (and, as an upper bound, from it being sent)
//! to the batch carrying the transition arriving at the receiving end of the
//! channel, on another thread. Prints p50/p99/max; the target is p99 ≤ 10 ms.
//!
//! `cargo bench -p rocemend-sensors --bench link_flap_latency`; needs root
//! and `ip`, prints "skipped: <reason>" otherwise.

#[path = "../src/tests/netlink_link_util/mod.rs"]
mod netlink_link_util;

use std::time::{Duration, Instant};

use engine::{Batch, SeriesTable};
use futures_util::TryStreamExt;
use netlink_link_util::{Netns, Running};
use rtnetlink::LinkUnspec;
use sensors::NetlinkLinkConfig;

const FLAPS: usize = 1000;
/// Unmeasured flaps first: socket buffers, allocator and series warm up.
const WARMUP: usize = 20;
/// A flip whose event takes longer is a lost event: the bench fails.
const LOST: Duration = Duration::from_secs(5);
const TARGET_P99: Duration = Duration::from_millis(10);

fn main() {
    let ns = match Netns::create("bench") {
        Ok(ns) => ns,
        Err(reason) => return println!("skipped: {reason}"),
    };
    let config = NetlinkLinkConfig { include: vec!["veth0".into()], ..NetlinkLinkConfig::default() };
    let running = ns.run_sensor(Box::new(config.build("netlink_link").unwrap()), SeriesTable::default());
    let driver = ns.spawn_in(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(drive(running))
    });
    let (from_return, from_send) = match driver.join().unwrap() {
        Ok(times) => times,
        Err(e) => {
            eprintln!("link_flap_latency failed: {e}");
            std::process::exit(1);
        }
    };
    println!("netlink_link push latency over {} transitions ({FLAPS} down, {FLAPS} up):", from_return.len());
    report("from RTM_SETLINK returning", from_return.clone());
    report("from RTM_SETLINK sent     ", from_send);
    let p99 = percentile(&sorted(from_return), 0.99);
    println!("target p99 <= {TARGET_P99:?}: {}", if p99 <= TARGET_P99 { "met" } else { "MISSED" });
}

/// Flips veth0 and times each transition; (from return, from send).
async fn drive(mut running: Running) -> Result<(Vec<Duration>, Vec<Duration>), String> {
    let (connection, handle, _) = rtnetlink::new_connection().map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    let link = handle.link().get().match_name("veth0").execute().try_next().await.map_err(|e| e.to_string())?;
    let index = link.ok_or("veth0 not found")?.header.index;
    running.next(LOST).await.ok_or("no initial dump")?;

    let (mut from_return, mut from_send) = (Vec::new(), Vec::new());
    for i in 0..WARMUP + FLAPS {
        for to in ["down", "up"] {
            let builder = LinkUnspec::new_with_index(index);
            let message = if to == "down" { builder.down().build() } else { builder.up().build() };
            let sent = Instant::now();
            handle.link().set(message).execute().await.map_err(|e| format!("set veth0 {to}: {e}"))?;
            let returned = Instant::now();
            let arrived = wait_for(&mut running, to).await.ok_or(format!("flap {i}: no {to} event within {LOST:?}"))?;
            if i >= WARMUP {
                from_return.push(arrived.saturating_duration_since(returned));
                from_send.push(arrived - sent);
            }
        }
    }
    running.finish()?;
    Ok((from_return, from_send))
}

/// When the batch with a `link_transition{to}` arrived.
async fn wait_for(running: &mut Running, to: &str) -> Option<Instant> {
    loop {
        let batch: Batch = running.next(LOST).await?;
        let arrived = Instant::now();
        let reg = running.series.read();
        if batch
            .samples
            .iter()
            .any(|s| reg.metric_name(s.series) == "link_transition" && reg.labels(s.series).get("to") == Some(to))
        {
            return Some(arrived);
        }
    }
}

fn sorted(mut v: Vec<Duration>) -> Vec<Duration> {
    v.sort();
    v
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

fn report(what: &str, times: Vec<Duration>) {
    let s = sorted(times);
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "  {what}: p50 {:>8.1} µs  p90 {:>8.1} µs  p99 {:>8.1} µs  max {:>8.1} µs",
        us(percentile(&s, 0.5)),
        us(percentile(&s, 0.9)),
        us(percentile(&s, 0.99)),
        us(*s.last().unwrap())
    );
}
