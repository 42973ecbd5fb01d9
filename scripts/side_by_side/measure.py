#!/usr/bin/env python3
"""rocemend and Prometheus side by side against the same exporter (scripts/side-by-side.sh).

For each scale and value mode, one exporter (exporter.py) is scraped every second by a real
Prometheus and by `rocemend run` with a prometheus sensor, for the same time; each process's CPU
time (utime + stime from /proc) is divided by the samples it took in (Prometheus: the sum of its
scrape_samples_scraped over the window; rocemend: rocemend_samples_ingested_total). Then,
at a 100 ms interval for both, the exporter's fault flag is raised N times; the time from the
raise to Prometheus's alert (its activeAt) and to rocemend's decision (its dispatched_at) is
collected, and the percentiles printed. Standard library only.
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import datetime

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")


def free_port():
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def metric(text, name):
    """The sum of every sample of `name` in a text-format page."""
    total = None
    for line in text.splitlines():
        if line.startswith(name) and (len(line) == len(name) or line[len(name)] in " {"):
            total = (total or 0.0) + float(line.rsplit(" ", 1)[1])
    return total


def wait_for(what, probe, within=60.0, every=0.1):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            value = probe()
            if value:
                return value
        except Exception:
            pass
        time.sleep(every)
    raise SystemExit(f"side-by-side: gave up waiting for {what}")


class Run:
    """The exporter, Prometheus and rocemend, started in `work`; stopped by stop()."""

    def __init__(self, args, work, series, changing, interval_ms):
        self.procs = []
        self.work = work
        os.makedirs(work, exist_ok=True)
        cmd = [sys.executable, os.path.join(HERE, "exporter.py"), "--series", str(series)]
        if changing:
            cmd.append("--changing")
        self.exporter = self.spawn(cmd, "exporter.log", stdout=subprocess.PIPE)
        self.exporter_port = int(self.exporter.stdout.readline())
        self.exporter_url = f"http://127.0.0.1:{self.exporter_port}"
        interval = f"{interval_ms}ms"
        self.prom_port = free_port()
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            f.write(
                f"global:\n  scrape_interval: {interval}\n  evaluation_interval: {interval}\n"
                f"  scrape_timeout: {interval}\n"
                f"rule_files: ['{os.path.join(HERE, 'alerts.yml')}']\n"
                "scrape_configs:\n  - job_name: exporter\n"
                f"    static_configs:\n      - targets: ['127.0.0.1:{self.exporter_port}']\n"
            )
        self.prometheus = self.spawn(
            [
                args.prometheus,
                f"--config.file={os.path.join(work, 'prometheus.yml')}",
                f"--storage.tsdb.path={os.path.join(work, 'tsdb')}",
                f"--web.listen-address=127.0.0.1:{self.prom_port}",
                "--log.level=warn",
            ],
            "prometheus.log",
        )
        self.metrics_port = free_port()
        self.socket = os.path.join(work, "control.sock")
        config = os.path.join(work, "rocemend.toml")
        with open(config, "w") as f:
            f.write(
                f'node = "side-by-side"\nstate_dir = "{os.path.join(work, "state")}"\n'
                f'playbook = "{os.path.join(HERE, "playbook.toml")}"\n'
                f'[engine]\nreload_poll = "0"\n[log]\nformat = "json"\nlevel = "warn"\n'
                f'[control]\nsocket = "{self.socket}"\n[metrics]\nlisten = "127.0.0.1:{self.metrics_port}"\n'
                f'[[sensor]]\ntype = "prometheus"\nmax_series = {series * 2 + 100}\n'
                f'[[sensor.targets]]\nurl = "{self.exporter_url}/metrics"\ninterval_ms = {interval_ms}\n'
                f"timeout_ms = {interval_ms}\n"
            )
        self.rocemend = self.spawn([args.rocemend, "run", "--config", config], "rocemend.log")
        wait_for("Prometheus", lambda: "Prometheus" in get(f"http://127.0.0.1:{self.prom_port}/-/ready"))
        wait_for("rocemend's metrics", lambda: self.rocemend_samples() is not None)

    def spawn(self, cmd, log, stdout=None):
        out = open(os.path.join(self.work, log), "w")
        p = subprocess.Popen(cmd, stdout=stdout or out, stderr=out, text=True, start_new_session=True)
        self.procs.append(p)
        return p

    def rocemend_samples(self):
        return metric(get(f"http://127.0.0.1:{self.metrics_port}/metrics"), "rocemend_samples_ingested_total")

    def prometheus_samples(self, seconds):
        """Samples Prometheus scraped from the exporter over the last `seconds`, by its own
        `scrape_samples_scraped` series (2.42 exports no appended-samples counter)."""
        query = urllib.parse.quote(f'sum(sum_over_time(scrape_samples_scraped{{job="exporter"}}[{int(seconds)}s]))')
        answer = json.loads(get(f"http://127.0.0.1:{self.prom_port}/api/v1/query?query={query}"))
        result = answer["data"]["result"]
        return float(result[0]["value"][1]) if result else None

    def stop(self):
        for p in reversed(self.procs):
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in self.procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)


def cost(args, root, series, changing):
    """CPU µs per sample and RSS MiB of both, over `args.seconds` of scraping every second."""
    mode = "changing" if changing else "static"
    run = Run(args, os.path.join(root, f"cost-{series}-{mode}"), series, changing, 1000)
    try:
        # Let both register every series before counting.
        time.sleep(args.settle)
        before = {
            "rocemend": (cpu_seconds(run.rocemend.pid), run.rocemend_samples()),
            "prometheus": (cpu_seconds(run.prometheus.pid), 0.0),
        }
        time.sleep(args.seconds)
        after = {
            "rocemend": (cpu_seconds(run.rocemend.pid), run.rocemend_samples()),
            "prometheus": (cpu_seconds(run.prometheus.pid), run.prometheus_samples(args.seconds)),
        }
        rss = {"rocemend": rss_mib(run.rocemend.pid), "prometheus": rss_mib(run.prometheus.pid)}
    finally:
        run.stop()
    out = {}
    for who in ("rocemend", "prometheus"):
        cpu = after[who][0] - before[who][0]
        samples = after[who][1] - before[who][1]
        out[who] = (1e6 * cpu / samples if samples else float("nan"), samples, rss[who])
    return out


def rfc3339_ns(text):
    """Prometheus's activeAt (RFC 3339, up to nanoseconds) as nanoseconds."""
    head, _, frac = text.rstrip("Z").partition(".")
    tz = 0
    for sign in "+-":
        if sign in frac:
            frac, _, zone = frac.partition(sign)
            hours, minutes = zone.split(":")
            tz = (int(hours) * 3600 + int(minutes) * 60) * (1 if sign == "+" else -1)
    base = datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=None)
    epoch = (base - datetime(1970, 1, 1)).total_seconds() - tz
    return int(epoch) * 10**9 + int((frac + "000000000")[:9])


def latency(args, root):
    """Fault raised → Prometheus alert and → rocemend decision, ms, over `args.trials` trials."""
    run = Run(args, os.path.join(root, "latency"), args.latency_series, False, 100)
    prom, roce = [], []
    try:
        time.sleep(3)
        seen = set()
        for _ in range(args.trials):
            raised = int(get(f"{run.exporter_url}/fault?on=1"))
            got_prom = got_roce = None
            deadline = time.monotonic() + 5
            while (got_prom is None or got_roce is None) and time.monotonic() < deadline:
                if got_prom is None:
                    alerts = json.loads(get(f"http://127.0.0.1:{run.prom_port}/api/v1/alerts"))["data"]["alerts"]
                    for a in alerts:
                        if a["labels"].get("alertname") == "SideBySideFault" and a["state"] == "firing":
                            got_prom = rfc3339_ns(a["activeAt"])
                if got_roce is None:
                    out = subprocess.run(
                        [args.rocemend, "decisions", "--json", "--socket", run.socket],
                        capture_output=True,
                        text=True,
                    ).stdout
                    for line in out.splitlines():
                        d = json.loads(line)
                        if d["proposal"]["rule"] == "side-by-side-fault" and d["id"] not in seen:
                            seen.add(d["id"])
                            got_roce = d["dispatched_at"]
                time.sleep(0.01)
            if got_prom is not None:
                prom.append((got_prom - raised) / 1e6)
            if got_roce is not None:
                roce.append((got_roce - raised) / 1e6)
            get(f"{run.exporter_url}/fault?on=0")
            # Both clear before the next raise (Prometheus's alert leaves the list at its next
            # evaluation, rocemend's instance resolves when the flag reads 0), and the next raise
            # lands at a random point of the scrape and evaluation cycles.
            wait_for(
                "Prometheus's alert to clear",
                lambda: not any(
                    a["labels"].get("alertname") == "SideBySideFault"
                    for a in json.loads(get(f"http://127.0.0.1:{run.prom_port}/api/v1/alerts"))["data"]["alerts"]
                ),
                within=10,
                every=0.05,
            )
            time.sleep(1.0 + random.random() * 0.1)
    finally:
        run.stop()
    return prom, roce


def pct(values, p):
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(-(-p * len(s) // 100)) - 1))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rocemend", required=True, help="the rocemend binary (a release build)")
    parser.add_argument("--prometheus", default=shutil.which("prometheus") or "prometheus")
    parser.add_argument("--scales", default="10000,100000", help="series counts, comma-separated")
    parser.add_argument("--seconds", type=float, default=60.0, help="how long each cost run counts")
    parser.add_argument("--settle", type=float, default=10.0, help="scraping before counting starts")
    parser.add_argument("--trials", type=int, default=40, help="fault raises for the latency")
    parser.add_argument("--latency-series", type=int, default=1000, help="series beside the fault flag")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()

    root = tempfile.mkdtemp(prefix="side-by-side-")
    lines = []

    def say(line=""):
        print(line, flush=True)
        lines.append(line)

    try:
        load = open("/proc/loadavg").read().split()[:3]
        say(f"side by side, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {' '.join(load)}")
        say(f"rocemend {args.rocemend}; {subprocess.run([args.prometheus, '--version'], capture_output=True, text=True).stdout.splitlines()[0]}")
        say()
        say("| series | values | rocemend µs/sample | Prometheus µs/sample | rocemend ÷ Prometheus | RSS rocemend / Prometheus |")
        say("|---|---|---|---|---|---|")
        for series in [int(s) for s in args.scales.split(",")]:
            for changing in (False, True):
                c = cost(args, root, series, changing)
                r, p = c["rocemend"], c["prometheus"]
                say(
                    f"| {series:,} | {'changing' if changing else 'static'} | {r[0]:.3f} | {p[0]:.3f} | "
                    f"{r[0] / p[0]:.2f} | {r[2]:.0f} / {p[2]:.0f} MiB |"
                )
        prom, roce = latency(args, root)
        say()
        say(f"detection at a 100 ms interval, {args.trials} trials (ms from the fault's raise):")
        say()
        say("| | detected | p50 | p90 | p99 | max |")
        say("|---|---|---|---|---|---|")
        for who, v in (("rocemend decision", roce), ("Prometheus alert (activeAt)", prom)):
            say(
                f"| {who} | {len(v)} | {pct(v, 50):.0f} | {pct(v, 90):.0f} | {pct(v, 99):.0f} | "
                f"{max(v) if v else float('nan'):.0f} |"
            )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
