//! `[remote_write]` against a real Prometheus (Debian's `prometheus`, its
//! remote-write receiver on loopback with a temp storage): what the daemon
//! replays is queryable with the same values, millisecond timestamps and
//! labels; samples taken while Prometheus is down arrive once it is back,
//! none twice. And against receivers written here, sharing nothing with the
//! sender: a 400 drops the request and counts it, a 503 is sent again.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::http::get;
use common::{daemon_config, slow_step_playbook, Daemon};
use engine::labels::Labels;
use engine::recording::Writer;
use engine::series::{SampleKind, SeriesSpec};
use engine::{CounterSpec, Value};

/// Prometheus replays its WAL at a restart; a loaded CI machine is slow.
const PROMETHEUS_WAIT: Duration = Duration::from_secs(60);

fn prometheus_here() -> bool {
    let found = Command::new("prometheus").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status();
    if found.is_err() {
        test_peers::missing("prometheus is not installed (Debian package prometheus)");
    }
    found.is_ok()
}

/// A Prometheus with its remote-write receiver on `addr`, storing in `dir/tsdb`.
struct Prometheus {
    child: Option<Child>,
    dir: PathBuf,
    addr: String,
}

impl Prometheus {
    fn start(dir: &Path, addr: &str) -> Prometheus {
        std::fs::write(dir.join("prometheus.yml"), "global:\n  scrape_interval: 15s\n").unwrap();
        let mut p = Prometheus { child: None, dir: dir.to_path_buf(), addr: addr.to_string() };
        p.restart();
        p
    }

    /// Starts it (again, on the same port and storage) and waits until it is ready.
    fn restart(&mut self) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", self.dir.join("prometheus.yml").display()))
            .arg(format!("--storage.tsdb.path={}", self.dir.join("tsdb").display()))
            .arg(format!("--web.listen-address={}", self.addr))
            .arg("--web.enable-remote-write-receiver")
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .expect("prometheus starts");
        self.child = Some(child);
        let deadline = Instant::now() + PROMETHEUS_WAIT;
        while get(&self.addr, "/-/ready").ok().map(|(code, _)| code) != Some(200) {
            assert!(Instant::now() < deadline, "Prometheus never got ready\n{}", self.log());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGTERM, and waits for it to exit (its head is in the WAL then).
    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
            child.wait().unwrap();
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    /// The raw samples of `selector` over the last `range` before `at`
    /// (ms), as (timestamp ms, value) per series, with the labels.
    fn raw(&self, selector: &str, range: &str, at_ms: i64) -> Vec<(serde_json::Value, Vec<(i64, f64)>)> {
        let query = format!("{selector}[{range}]");
        let path = format!("/api/v1/query?query={}&time={}", encode(&query), seconds(at_ms));
        let Ok((200, body)) = get(&self.addr, &path) else { return Vec::new() };
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        v["data"]["result"].as_array().unwrap().iter().map(|s| (s["metric"].clone(), points(&s["values"]))).collect()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `[[t, "v"], …]` of the query API as (ms, value).
fn points(values: &serde_json::Value) -> Vec<(i64, f64)> {
    let point = |p: &serde_json::Value| {
        let ms = (p[0].as_f64().unwrap() * 1000.0).round() as i64;
        (ms, p[1].as_str().unwrap().parse::<f64>().unwrap())
    };
    values.as_array().map(|a| a.iter().map(point).collect()).unwrap_or_default()
}

fn seconds(ms: i64) -> String {
    format!("{}.{:03}", ms.div_euclid(1000), ms.rem_euclid(1000))
}

/// Percent-encodes what a PromQL query holds that a query string cannot.
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

/// The two series the recordings hold: a gauge and a counter past 2^32.
fn specs() -> [SeriesSpec; 2] {
    [
        SeriesSpec {
            metric: "rw_test_temperature_celsius".into(),
            labels: Labels::from_pairs([("node", "rw-node"), ("gpu", "0")]),
            kind: SampleKind::Gauge,
        },
        SeriesSpec {
            metric: "rw_test_rx_bytes".into(),
            labels: Labels::from_pairs([("node", "rw-node"), ("netdev", "eth0")]),
            kind: SampleKind::Counter(CounterSpec::U64),
        },
    ]
}

/// Sample `i` of series `s` at `ms`: (its value as the recording holds it, as Prometheus returns it).
fn value(s: usize, i: i64) -> (Value, f64) {
    match s {
        0 => (Value::Real(40.0 + i as f64 * 0.25), 40.0 + i as f64 * 0.25),
        _ => (Value::Count(5_000_000_000 + i as u64 * 1_000_003), (5_000_000_000 + i as u64 * 1_000_003) as f64),
    }
}

/// A recording of `n` samples per series every `step_ms` from `first_ms`,
/// each stamped 456 789 ns into its millisecond (which the sender drops).
fn recording(dir: &Path, first_ms: i64, n: i64, step_ms: i64) -> PathBuf {
    let path = dir.join("rw.jsonl");
    let mut w = Writer::new(std::fs::File::create(&path).unwrap());
    for (id, spec) in specs().iter().enumerate() {
        w.declare(id as u32, spec).unwrap();
    }
    for i in 0..n {
        for s in 0..2 {
            let ts = (first_ms + i * step_ms) * 1_000_000 + 456_789;
            w.write_raw_sample(s as u32, ts, value(s, i).0).unwrap();
        }
    }
    w.flush().unwrap();
    path
}

/// A daemon replaying `recording` at `speed` (or none), its metrics on
/// loopback, sending to `url` with short deadlines and backoffs.
fn daemon(dir: &Path, recording: Option<&Path>, speed: &str, url: &str) -> (Daemon, String) {
    let playbook = slow_step_playbook(dir);
    let config = daemon_config(dir, &playbook, recording);
    let metrics = format!("127.0.0.1:{}", test_peers::free_ports::<1>()[0]);
    let mut text = std::fs::read_to_string(&config).unwrap().replace("speed = 0.0", &format!("speed = {speed}"));
    text.push_str(&format!(
        "[metrics]\nlisten = \"{metrics}\"\n\
         [remote_write]\nurl = \"{url}\"\nbatch_send_deadline = \"100ms\"\nmin_backoff = \"50ms\"\nmax_backoff = \"400ms\"\ntimeout = \"2s\"\n\
         [remote_write.external_labels]\ncluster = \"it\"\n"
    ));
    std::fs::write(&config, text).unwrap();
    let mut d = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    d.wait_ready();
    (d, metrics)
}

/// The value of the sample `name` (with its labels, as written) on `/metrics`; 0 if absent.
fn metric(addr: &str, name: &str) -> f64 {
    let (_, body) = get(addr, "/metrics").unwrap();
    body.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|rest| rest.strip_prefix(' ')))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0.0)
}

/// Polls until `probe` gives a value, at most [`PROMETHEUS_WAIT`].
fn wait<T>(what: &str, context: impl Fn() -> String, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + PROMETHEUS_WAIT;
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "gave up waiting for {what}\n{}", context());
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn prometheus_returns_the_replayed_values_timestamps_and_labels() {
    if !prometheus_here() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prom = Prometheus::start(dir, &format!("127.0.0.1:{}", test_peers::free_ports::<1>()[0]));
    let n = 30;
    let first = (now_ms() / 1000 - 60) * 1000 + 123;
    let rec = recording(dir, first, n, 1000);
    let (d, metrics) = daemon(dir, Some(&rec), "0.0", &format!("http://{}/api/v1/write", prom.addr));
    let last = first + (n - 1) * 1000;
    let context = || format!("--- daemon ---\n{}\n--- prometheus ---\n{}", d.log(), prom.log());
    for (s, spec) in specs().iter().enumerate() {
        let got = wait(&format!("{} samples of {}", n, spec.metric), context, || {
            let found = prom.raw(&spec.metric, "5m", last + 1);
            (found.len() == 1 && found[0].1.len() == n as usize).then(|| found.into_iter().next().unwrap())
        });
        let want: Vec<(i64, f64)> = (0..n).map(|i| (first + i * 1000, value(s, i).1)).collect();
        assert_eq!(got.1, want, "{}: the samples as sent, to the millisecond", spec.metric);
        let labels = &got.0;
        assert_eq!(labels["__name__"], spec.metric.as_str(), "{labels}");
        assert_eq!(labels["cluster"], "it", "the external label: {labels}");
        for (k, v) in &spec.labels.0 {
            assert_eq!(labels[k.as_str()], v.as_str(), "{labels}");
        }
        // The same through query_range, on steps that fall on the samples.
        let path =
            format!("/api/v1/query_range?query={}&start={}&end={}&step=1", spec.metric, seconds(first), seconds(last));
        let (code, body) = get(&prom.addr, &path).unwrap();
        assert_eq!(code, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(points(&v["data"]["result"][0]["values"]), want, "{body}");
    }
    assert_eq!(metric(&metrics, "rocemend_remote_write_samples_sent_total"), 2.0 * n as f64);
    assert_eq!(metric(&metrics, "rocemend_remote_write_samples_failed_total"), 0.0);
    assert_eq!(metric(&metrics, "rocemend_remote_write_samples_pending"), 0.0);
    history_reads_back_what_was_written(&prom.addr, first, last, n);
    let page = dir.join("history.html");
    let out = Command::new(common::bin())
        .args(["timeline", "--prometheus", &format!("http://{}", prom.addr), "--match", "{__name__=~\"rw_test_.*\"}"])
        .args(["--from", &rfc3339(first - 1000), "--to", &rfc3339(last + 1000), "--config"])
        .arg(dir.join("rocemend.toml"))
        .arg("--out")
        .arg(&page)
        .output()
        .unwrap();
    assert!(out.status.success(), "timeline --prometheus: {}", common::text(&out));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("rw_test_temperature_celsius"),
        "the page draws the series read back:\n{}",
        common::text(&out)
    );
}

/// `ms` as RFC 3339, as `--from` takes it.
fn rfc3339(ms: i64) -> String {
    ops::time::rfc3339(ms * 1_000_000)
}

/// The way back (`ops::remote_write::history`): the series read from
/// Prometheus as a recording's events are the ones replayed, to the ms.
fn history_reads_back_what_was_written(addr: &str, first: i64, last: i64, n: i64) {
    use engine::recording::Event;
    use ops::remote_write::history;
    let base = net::http::Url::parse(&format!("http://{addr}")).unwrap();
    let client = net::http::Client::plain(history::MAX_ANSWER);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let (from, to) = (first * 1_000_000, last * 1_000_000);
    let events = runtime
        .block_on(history::fetch(&client, &base, "{__name__=~\"rw_test_.*\"}", from, to, Duration::from_secs(10)))
        .unwrap();
    let mut names = std::collections::HashMap::new();
    let mut got: Vec<Vec<(i64, f64)>> = vec![Vec::new(); 2];
    for event in &events {
        match event {
            Event::Series(id, spec) => {
                let s = specs().iter().position(|w| w.metric == spec.metric).expect("one of the replayed series");
                assert_eq!(spec.labels.get("cluster"), Some("it"), "{spec:?}");
                assert!(spec.labels.contains_all(&specs()[s].labels), "{spec:?}");
                names.insert(*id, s);
            }
            Event::Sample { id, t, value } => got[names[id]].push((t / 1_000_000, value.as_f64())),
            Event::Note(_) => panic!("Prometheus holds no notes"),
        }
    }
    for (s, got) in got.iter().enumerate() {
        let want: Vec<(i64, f64)> = (0..n).map(|i| (first + i * 1000, value(s, i).1)).collect();
        assert_eq!(got, &want, "{} read back from Prometheus", specs()[s].metric);
    }
    let times: Vec<i64> =
        events.iter().filter_map(|e| if let Event::Sample { t, .. } = e { Some(*t) } else { None }).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "samples come in time order, as a recording's do");
}

#[test]
fn samples_taken_while_prometheus_is_down_arrive_once_it_is_back_none_twice() {
    if !prometheus_here() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut prom = Prometheus::start(dir, &format!("127.0.0.1:{}", test_peers::free_ports::<1>()[0]));
    // 20 s of samples every 500 ms, played in real time from about now.
    let (n, step) = (40, 500);
    let first = now_ms() + 500;
    let rec = recording(dir, first, n, step);
    let (d, metrics) = daemon(dir, Some(&rec), "1.0", &format!("http://{}/api/v1/write", prom.addr));
    let last = first + (n - 1) * step;
    let gauge = &specs()[0].metric;
    let prom_log = dir.join("prometheus.log");
    let context = || {
        let prom = std::fs::read_to_string(&prom_log).unwrap_or_default();
        format!("--- daemon ---\n{}\n--- prometheus ---\n{prom}", d.log())
    };
    let before = wait("a few samples before the outage", context, || {
        let found = prom.raw(gauge, "5m", now_ms());
        found.first().map(|s| s.1.len()).filter(|&k| k >= 4)
    });
    prom.stop();
    let stopped = now_ms();
    std::thread::sleep(Duration::from_secs(5));
    let retried = metric(&metrics, "rocemend_remote_write_samples_retried_total");
    assert!(retried > 0.0, "requests were sent again while Prometheus was down\n{}", context());
    prom.restart();
    for (s, spec) in specs().iter().enumerate() {
        let got = wait(&format!("all {n} samples of {}", spec.metric), context, || {
            let found = prom.raw(&spec.metric, "5m", last + 1);
            found.first().filter(|f| f.1.last().map(|p| p.0) == Some(last)).map(|f| f.1.clone())
        });
        let want: Vec<(i64, f64)> = (0..n).map(|i| (first + i * step, value(s, i).1)).collect();
        assert_eq!(got, want, "{}: every sample once, those of the outage included", spec.metric);
    }
    let outage: Vec<i64> = (0..n).map(|i| first + i * step).filter(|&t| t > stopped && t < stopped + 4000).collect();
    assert!(outage.len() >= 6, "samples were taken during the outage: {outage:?} ({before} before it)");
    assert_eq!(metric(&metrics, "rocemend_remote_write_samples_sent_total"), 2.0 * n as f64, "{}", context());
    assert_eq!(metric(&metrics, "rocemend_remote_write_samples_failed_total"), 0.0);
}

/// A request as a receiver here saw it.
struct Seen {
    at: Instant,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// A receiver written here: answers the `i`th request with `answer(i)`
/// (status and extra header lines), keeps every request.
fn receiver(answer: fn(usize) -> (u16, &'static str)) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/receive", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let keep = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let Some(request) = read_request(&stream) else { continue };
            let i = {
                let mut seen = keep.lock().unwrap();
                seen.push(request);
                seen.len() - 1
            };
            let (status, extra) = answer(i);
            let mut stream = stream;
            let _ = write!(stream, "HTTP/1.1 {status} X\r\n{extra}Content-Length: 2\r\nConnection: close\r\n\r\nno");
        }
    });
    (url, seen)
}

fn read_request(stream: &TcpStream) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut headers = Vec::new();
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    assert!(line.starts_with("POST /receive HTTP/1.1"), "{line}");
    loop {
        line.clear();
        reader.read_line(&mut line).ok()?;
        let Some((name, value)) = line.trim_end().split_once(':') else { break };
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let length: usize = headers.iter().find(|(n, _)| n == "content-length")?.1.parse().ok()?;
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen { at: Instant::now(), headers, body })
}

/// Samples in a request's body, decoded here with `snap` and `prost`
/// through the sender's own proto (its encoding is tested against a real
/// Prometheus above).
fn samples_in(body: &[u8]) -> usize {
    let request = ops::remote_write::proto::decode(body).unwrap();
    request.timeseries.iter().map(|t| t.samples.len()).sum()
}

#[test]
fn a_receiver_answering_400_drops_and_counts_and_one_answering_503_is_retried() {
    let n = 10;
    for (case, answer) in [
        ("400", (|_| (400, "")) as fn(usize) -> (u16, &'static str)),
        ("429 then 503 then 204", |i| match i {
            0 => (429, "Retry-After: 1\r\n"),
            1 => (503, ""),
            _ => (204, ""),
        }),
    ] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let (url, seen) = receiver(answer);
        let rec = recording(dir, now_ms() - 30_000, n, 1000);
        let (d, metrics) = daemon(dir, Some(&rec), "0.0", &url);
        let settled = |name: &str| metric(&metrics, name) >= 2.0 * n as f64;
        let counter = if case == "400" { "failed" } else { "sent" };
        wait(
            &format!("{case}: samples counted as {counter}"),
            || d.log(),
            || settled(&format!("rocemend_remote_write_samples_{counter}_total")).then_some(()),
        );
        let seen = seen.lock().unwrap();
        let header = |k: &str| seen[0].headers.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(header("content-encoding"), Some("snappy"));
        assert_eq!(header("content-type"), Some("application/x-protobuf"));
        assert_eq!(header("x-prometheus-remote-write-version"), Some("0.1.0"));
        assert!(header("user-agent").is_some_and(|u| u.starts_with("rocemend/")), "{:?}", header("user-agent"));
        let sent: usize = seen.iter().map(|s| samples_in(&s.body)).sum();
        let dropped = "rocemend_remote_write_samples_dropped_total{reason=\"rejected\"}";
        if case == "400" {
            assert_eq!(sent, 2 * n as usize, "each refused request was sent once");
            assert_eq!(metric(&metrics, dropped), 2.0 * n as f64);
            assert_eq!(metric(&metrics, "rocemend_remote_write_samples_sent_total"), 0.0);
            assert_eq!(metric(&metrics, "rocemend_remote_write_samples_retried_total"), 0.0);
        } else {
            let first = samples_in(&seen[0].body);
            assert!(seen[0].body == seen[1].body && seen[1].body == seen[2].body, "the same request, sent again");
            assert!(seen[1].at - seen[0].at >= Duration::from_secs(1), "Retry-After: 1 was honoured");
            assert!(seen[2].at - seen[1].at >= Duration::from_millis(50), "min_backoff was waited");
            assert_eq!(sent, 2 * n as usize + 2 * first, "the retried request twice more, the rest once");
            assert_eq!(metric(&metrics, "rocemend_remote_write_samples_retried_total"), 2.0 * first as f64);
            assert_eq!(metric(&metrics, dropped), 0.0);
        }
    }
}

/// The round trip of a sample, from the moment `rocemend job push` is run
/// (the daemon stamps it on receipt) to the moment Prometheus's query API
/// returns it, with `batch_send_deadline = "100ms"`. Printed, not asserted:
/// docs/performance.md quotes it (`--nocapture`). Then `why --prometheus`
/// reads those step times back.
#[test]
fn round_trip_from_a_pushed_sample_to_a_prometheus_query() {
    if !prometheus_here() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let prom = Prometheus::start(dir, &format!("127.0.0.1:{}", test_peers::free_ports::<1>()[0]));
    let (d, _) = daemon(dir, None, "0.0", &format!("http://{}/api/v1/write", prom.addr));
    let mut trips = Vec::new();
    for k in 0..20 {
        // 1.00 to 1.19 s, each once, in no order: each push is told apart, and the job has no trend.
        let step = format!("{}", 1.0 + f64::from((k * 7) % 20) / 100.0);
        let started = Instant::now();
        d.cli_ok(&["job", "push", "--job", "rt", "--node", "gpu-01", "--step-time", &step]);
        let query = format!("/api/v1/query?query={}", encode("job_step_time_seconds{job=\"rt\"}"));
        // Polled every 2 ms, not at `wait`'s 100 ms, which would round the figure up.
        loop {
            let (_, body) = get(&prom.addr, &query).unwrap();
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            if v["data"]["result"][0]["value"][1].as_str() == Some(step.as_str()) {
                break;
            }
            assert!(started.elapsed() < PROMETHEUS_WAIT, "step {step} never reached Prometheus\n{}", d.log());
            std::thread::sleep(Duration::from_millis(2));
        }
        trips.push(started.elapsed());
    }
    trips.sort();
    eprintln!(
        "remote write round trip over {} samples: min {:?}, median {:?}, max {:?}",
        trips.len(),
        trips[0],
        trips[trips.len() / 2],
        trips[trips.len() - 1]
    );
    assert_eq!(trips.len(), 20);
    let out = Command::new(common::bin())
        .args(["why", "--job", "rt", "--json", "--prometheus", &format!("http://{}", prom.addr), "--config"])
        .arg(dir.join("rocemend.toml"))
        .args(["--match", "{job=\"rt\"}"])
        .output()
        .unwrap();
    // The 20 step times have no trend, never 15 % above their first quarter
    // (nor their pace): `why` read them from Prometheus (the config records
    // nothing) and says so in its own words.
    let said = common::text(&out);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("no regression: the job signal never stayed above"), "{said}");
}
