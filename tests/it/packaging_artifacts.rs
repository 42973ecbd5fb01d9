//! The artifacts operators load next to the daemon, checked against a real
//! one: `promtool check metrics` on a scrape of its `/metrics`, the alerting
//! rules (packaging/prometheus/rocemend-alerts.yml) and every query of the
//! Grafana dashboard (packaging/grafana/rocemend.json) parsed by promtool,
//! and every metric they name exported by that scrape, so a renamed metric
//! cannot leave a dashboard panel empty or an alert silent.
//!
//! Skipped, with the reason printed, where `promtool` (Debian package
//! `prometheus`) is not installed.

use crate::common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use common::{daemon_config, log_playbook, repo, text, toml_path, Daemon};

const ALERTS: &str = "packaging/prometheus/rocemend-alerts.yml";
const DASHBOARD: &str = "packaging/grafana/rocemend.json";

/// Names a query may use that no daemon exports: Prometheus makes `up`
/// for every target it scrapes.
const FROM_PROMETHEUS: &[&str] = &["up"];

fn have_promtool() -> bool {
    let found = Command::new("promtool").arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok();
    if !found {
        test_peers::missing("promtool is not on PATH (Debian package prometheus)");
    }
    found
}

/// Runs `promtool ARGS`, with `stdin` on its standard input.
fn promtool(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new("promtool")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool starts");
    child.stdin.take().expect("promtool's stdin").write_all(stdin.as_bytes()).expect("promtool reads its stdin");
    child.wait_with_output().expect("promtool finishes")
}

/// A plain GET, as `curl` sends it (no `Accept`): status code and body.
fn get(addr: &str, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    Ok((code, body.to_string()))
}

/// A TCP port nothing listens on (bound, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A daemon replaying the demo recording through the standard rules in
/// enforce mode (so it detects, decides and acts, and the histograms have
/// data), plus a Prometheus sensor whose target refuses connections, so
/// the sensor error series exist too; metrics on a port of its choosing.
fn start_daemon(dir: &Path) -> Daemon {
    let playbook = log_playbook(dir, "artifacts", Some("enforce"), &repo("rules"));
    let config = daemon_config(dir, &playbook, Some(&repo("chaos/sim/data/demo.jsonl")));
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[[sensor]]\ntype = \"prometheus\"\n[[sensor.targets]]\nurl = {}\ninterval_ms = 200\ntimeout_ms = 100\n\
         [metrics]\nlisten = \"127.0.0.1:0\"\n",
        toml_path(Path::new(&format!("http://127.0.0.1:{}/metrics", closed_port())))
    ));
    std::fs::write(&config, text).unwrap();
    let mut d = Daemon::start(&config, &dir.join("control.sock"), &dir.join("daemon.log"));
    d.wait_ready();
    d
}

/// The address the metrics endpoint logged it listens on.
fn metrics_addr(d: &mut Daemon) -> String {
    d.wait_for("the metrics endpoint's address in the log", |d| {
        let log = d.log();
        let line = log.lines().find(|l| l.contains("Metrics endpoint listening."))?;
        let rest = &line[line.find("addr=")? + 5..];
        Some(rest.split_whitespace().next()?.trim_matches('"').to_string())
    })
}

/// A scrape once the daemon has decided, acted and counted a sensor error.
fn scrape(d: &mut Daemon, addr: &str) -> String {
    d.wait_for("decisions, transitions and sensor errors in /metrics", |_| {
        let (code, body) = get(addr, "/metrics").ok()?;
        let wanted = ["rocemend_decisions_total{", "rocemend_rule_transitions_total{", "rocemend_sensor_errors_total{"];
        (code == 200 && wanted.iter().all(|w| body.contains(w))).then_some(body)
    })
}

/// Every name a scrape exports: its samples' names (`_bucket`, `_sum`,
/// `_count` of the histograms included) and its families' names.
fn exported(scrape: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in scrape.lines() {
        let name = match line.strip_prefix("# TYPE ") {
            Some(rest) => rest.split(' ').next(),
            None if line.starts_with('#') => None,
            None => line.split(['{', ' ']).next(),
        };
        names.extend(name.filter(|n| !n.is_empty()).map(str::to_string));
    }
    names
}

/// PromQL words that are not metric names: aggregations (written
/// `sum by (x) (…)`, so not always followed by `(`), keywords and the
/// literals a query may hold.
const PROMQL_WORDS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "atan2",
    "inf",
    "nan",
];

/// Words followed by a list of label names, not metric names.
const LABEL_LISTS: &[&str] = &["by", "without", "on", "ignoring", "group_left", "group_right"];

/// Removes what lies between `open` and `close` (strings, label matchers,
/// ranges): label names and durations are not metric names.
fn strip_between(expr: &str, open: char, close: char) -> String {
    let mut out = String::new();
    let mut inside = false;
    for c in expr.chars() {
        match c {
            _ if inside && c == close => inside = false,
            _ if inside => {}
            _ if c == open => inside = true,
            _ => out.push(c),
        }
    }
    out
}

/// The metric names a PromQL expression selects.
fn metric_names(expr: &str) -> Vec<String> {
    let mut bare = expr.to_string();
    for (open, close) in [('"', '"'), ('\'', '\''), ('`', '`'), ('{', '}'), ('[', ']')] {
        bare = strip_between(&bare, open, close);
    }
    let chars: Vec<char> = bare.chars().collect();
    let mut names = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_digit() || c == '.' {
            // A number (0.99, 1e3) or a duration after `offset`.
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                i += 1;
            }
            continue;
        }
        if !(c.is_ascii_alphabetic() || c == '_' || c == ':') {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':') {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let mut next = i;
        while next < chars.len() && chars[next].is_whitespace() {
            next += 1;
        }
        let call = chars.get(next) == Some(&'(');
        if LABEL_LISTS.contains(&word.as_str()) && call {
            // Skip the label list.
            while i < chars.len() && chars[i] != ')' {
                i += 1;
            }
        } else if !call && !PROMQL_WORDS.contains(&word.as_str()) {
            names.push(word);
        }
    }
    names
}

/// The names of `expr` that neither the scrape nor Prometheus provides.
fn unknown_names(expr: &str, exported: &BTreeSet<String>) -> Vec<String> {
    metric_names(expr).into_iter().filter(|n| !exported.contains(n) && !FROM_PROMETHEUS.contains(&n.as_str())).collect()
}

/// A dashboard query as Prometheus would receive it: Grafana's variables
/// replaced by values it could send.
fn substitute(expr: &str) -> String {
    let mut out = expr.to_string();
    for (var, value) in [
        ("${__rate_interval}", "1m"),
        ("$__rate_interval", "1m"),
        ("${__interval}", "1m"),
        ("$__interval", "1m"),
        ("${__range}", "1h"),
        ("$__range", "1h"),
        ("${instance}", ".*"),
        ("$instance", ".*"),
    ] {
        out = out.replace(var, value);
    }
    out
}

/// Every (panel title, query) of the dashboard, rows' panels included.
fn dashboard_queries(panels: &serde_json::Value, out: &mut Vec<(String, String)>) {
    for panel in panels.as_array().into_iter().flatten() {
        let title = panel["title"].as_str().unwrap_or("?").to_string();
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_else(|| panic!("a target of {title:?} has no expr"));
            out.push((title.clone(), expr.to_string()));
        }
        dashboard_queries(&panel["panels"], out);
    }
}

/// `queries` as recording rules, the one way promtool parses PromQL offline.
fn as_rules_file(queries: &[String]) -> String {
    let mut yaml = String::from("groups:\n  - name: dashboard\n    rules:\n");
    for (i, q) in queries.iter().enumerate() {
        // A JSON string is a valid YAML double-quoted scalar.
        yaml.push_str(&format!("      - record: dashboard:query_{i}\n        expr: {}\n", serde_json::json!(q)));
    }
    yaml
}

/// `promtool check rules FILE`; fails the test with its output unless it exits 0.
fn check_rules(file: &Path) {
    let out = promtool(&["check", "rules", &file.display().to_string()], "");
    assert_eq!(out.status.code(), Some(0), "promtool check rules {}:\n{}", file.display(), text(&out));
}

fn check_metrics(scrape: &str) {
    let out = promtool(&["check", "metrics"], scrape);
    assert_eq!(
        out.status.code(),
        Some(0),
        "promtool check metrics on /metrics:\n{}\n--- scrape ---\n{scrape}",
        text(&out)
    );
}

fn check_alerts(exported: &BTreeSet<String>) {
    let path = repo(ALERTS);
    check_rules(&path);
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut alerts = 0;
    for group in doc["groups"].as_sequence().expect("groups") {
        for rule in group["rules"].as_sequence().expect("rules") {
            let name = rule["alert"].as_str().expect("every rule is an alert");
            let expr = rule["expr"].as_str().unwrap_or_else(|| panic!("{name} has no expr"));
            assert!(rule["for"].as_str().is_some(), "{name} has no `for`");
            assert!(rule["labels"]["severity"].as_str().is_some(), "{name} has no severity label");
            for annotation in ["summary", "description"] {
                assert!(rule["annotations"][annotation].as_str().is_some(), "{name} has no {annotation}");
            }
            let unknown = unknown_names(expr, exported);
            assert!(unknown.is_empty(), "alert {name} uses {unknown:?}, which /metrics does not export: {expr}");
            alerts += 1;
        }
    }
    assert!(alerts >= 6, "only {alerts} alerts in {ALERTS}");
}

/// The dashboard's template variables: a Prometheus data source and
/// `instance`, whose values come from a metric the daemon exports.
fn check_variables(dashboard: &serde_json::Value, exported: &BTreeSet<String>) {
    let vars = dashboard["templating"]["list"].as_array().expect("templating.list");
    let var = |name: &str| vars.iter().find(|v| v["name"] == name).unwrap_or_else(|| panic!("no variable {name}"));
    assert_eq!(var("datasource")["type"], "datasource");
    assert_eq!(var("datasource")["query"], "prometheus");
    let instance = var("instance")["definition"].as_str().expect("instance has a definition");
    let metric = instance
        .strip_prefix("label_values(")
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("instance is not label_values(metric, instance): {instance}"));
    assert!(exported.contains(metric.trim()), "the instance variable reads {metric}, not exported");
}

fn check_dashboard(dir: &Path, exported: &BTreeSet<String>) {
    let dashboard: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(repo(DASHBOARD)).unwrap())
        .unwrap_or_else(|e| panic!("{DASHBOARD} is not JSON: {e}"));
    check_variables(&dashboard, exported);
    let mut queries = Vec::new();
    dashboard_queries(&dashboard["panels"], &mut queries);
    assert!(queries.len() >= 10, "only {} queries in {DASHBOARD}", queries.len());
    let mut substituted = Vec::new();
    for (title, expr) in &queries {
        let query = substitute(expr);
        assert!(!query.contains('$'), "panel {title:?} uses a variable the test does not know: {expr}");
        let unknown = unknown_names(&query, exported);
        assert!(unknown.is_empty(), "panel {title:?} queries {unknown:?}, which /metrics does not export: {expr}");
        substituted.push(query);
    }
    let rules = dir.join("dashboard-queries.yml");
    std::fs::write(&rules, as_rules_file(&substituted)).unwrap();
    check_rules(&rules);
}

#[test]
fn the_name_check_finds_metric_names_and_only_them() {
    let expr = r#"histogram_quantile(0.99, sum by (le, instance) (rate(rocemend_x_seconds_bucket{instance=~".*", le!="1"}[5m] offset 1h)))
        / on (instance) group_left (sensor) max without (state) (rocemend_y == bool 1) or absent(up{job="rocemend"})"#;
    assert_eq!(metric_names(expr), ["rocemend_x_seconds_bucket", "rocemend_y", "up"]);
    let exported: BTreeSet<String> = ["rocemend_y".to_string()].into();
    assert_eq!(unknown_names(expr, &exported), ["rocemend_x_seconds_bucket"]);
    assert_eq!(substitute(r#"rate(a{instance=~"$instance"}[$__rate_interval])"#), r#"rate(a{instance=~".*"}[1m])"#);
}

#[test]
fn promtool_accepts_the_scrape_the_alerts_and_the_dashboard() {
    if !have_promtool() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let mut d = start_daemon(tmp.path());
    let addr = metrics_addr(&mut d);
    let scrape = scrape(&mut d, &addr);
    check_metrics(&scrape);
    let exported = exported(&scrape);
    check_alerts(&exported);
    check_dashboard(tmp.path(), &exported);
    assert!(d.stop().success(), "{}", d.log());
}
