#!/usr/bin/env python3
"""rocemend and Prometheus side by side against the same exporter (scripts/side-by-side.sh).

For each scale and value mode, one exporter (exporter.py) is scraped every second by a real
Prometheus and by `rocemend run` with a prometheus sensor, for the same time; each process's CPU
time (utime + stime from /proc) is divided by the samples it took in over that time, read from
each before and after: Prometheus's prometheus_tsdb_head_samples_appended_total, rocemend's
rocemend_samples_ingested_total. Then, at a 100 ms interval for both, the exporter's fault flag
is raised N times; the time from the raise (stamped by the exporter) to Prometheus's alert (its
activeAt, and when a 10 ms poll of /api/v1/alerts first saw it) and to rocemend's decision (its
dispatched_at) is collected, and the percentiles printed. rocemend's playbook (playbook.toml) lets
every raise be acted on: each trial's decision should be `executed`; how many were, and how many
were decided otherwise (`duplicate`, `suppressed`, `held`, ...), is printed, and only the executed
ones are timed. Standard library only.
"""

import argparse
import ctypes
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")

# Every process started, so that every way out (normal end, an error, a signal) stops them.
PROCS = []


def die_with_parent():
    """In the child before exec: SIGTERM when this script dies, even by SIGKILL."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def stop_all():
    while PROCS:
        p = PROCS.pop()
        try:
            os.killpg(p.pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def on_signal(signum, _frame):
    # One signal is enough: a second one (the wrapper forwarding Ctrl-C) must not cut the cleanup.
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, signal.SIG_IGN)
    raise SystemExit(f"side-by-side: stopped by signal {signum}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, timeout=2.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def cpu_seconds(pid):
    """(user, system) CPU seconds of a process, all its threads, from /proc/PID/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICK, int(fields[12]) / TICK


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def metric(text, name, match=""):
    """The sum of the samples of `name` in a text-format page whose labels contain `match`."""
    total = None
    for line in text.splitlines():
        if line.startswith(name) and (len(line) == len(name) or line[len(name)] in " {") and match in line:
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
    """The exporter, Prometheus and rocemend, started in `work`; stopped by stop_all()."""

    def __init__(self, args, work, series, changing, interval_ms, record=False):
        self.work = work
        self.recording = os.path.join(work, "recording") if record else None
        os.makedirs(work, exist_ok=True)
        cmd = [sys.executable, os.path.join(HERE, "exporter.py"), "--series", str(series)]
        if changing:
            cmd.append("--changing")
        self.exporter = self.spawn(cmd, "exporter.log", stdout=subprocess.PIPE)
        line = self.exporter.stdout.readline()
        if not line.strip().isdigit():
            raise SystemExit(f"side-by-side: the exporter did not start (see {work}/exporter.log)")
        self.exporter_url = f"http://127.0.0.1:{int(line)}"
        interval = f"{interval_ms}ms"
        self.prom_port = free_port()
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            f.write(
                f"global:\n  scrape_interval: {interval}\n  evaluation_interval: {interval}\n"
                f"  scrape_timeout: {interval}\n"
                f"rule_files: ['{os.path.join(HERE, 'alerts.yml')}']\n"
                "scrape_configs:\n  - job_name: exporter\n"
                f"    static_configs:\n      - targets: ['{self.exporter_url[len('http://'):]}']\n"
            )
        self.prometheus = self.spawn(
            [
                args.prometheus,
                f"--config.file={os.path.join(work, 'prometheus.yml')}",
                f"--storage.tsdb.path={os.path.join(work, 'tsdb')}",
                f"--web.listen-address=127.0.0.1:{self.prom_port}",
                # The snapshot API writes the head to a block: its bytes a sample, in the same run.
                "--web.enable-admin-api",
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
                + (f'record = "{self.recording}"\n' if self.recording else "")
                + f'[engine]\nreload_poll = "0"\n[log]\nformat = "json"\nlevel = "warn"\n'
                f'[control]\nsocket = "{self.socket}"\n[metrics]\nlisten = "127.0.0.1:{self.metrics_port}"\n'
                f'[[sensor]]\ntype = "prometheus"\nmax_series = {series * 2 + 100}\n'
                f'[[sensor.targets]]\nurl = "{self.exporter_url}/metrics"\ninterval_ms = {interval_ms}\n'
                f"timeout_ms = {interval_ms}\n"
            )
        self.rocemend = self.spawn([args.rocemend, "run", "--config", config], "rocemend.log")
        wait_for("Prometheus", lambda: "Prometheus" in get(f"http://127.0.0.1:{self.prom_port}/-/ready"))
        wait_for("rocemend's metrics", lambda: self.rocemend_counts()[0] is not None)
        for who, p in (("exporter", self.exporter), ("prometheus", self.prometheus), ("rocemend", self.rocemend)):
            if p.poll() is not None:
                raise SystemExit(f"side-by-side: {who} exited with {p.returncode} (see {work}/{who}.log)")

    def spawn(self, cmd, log, stdout=None):
        out = open(os.path.join(self.work, log), "w")
        p = subprocess.Popen(
            cmd,
            stdout=stdout or out,
            stderr=out,
            text=True,
            start_new_session=True,
            preexec_fn=die_with_parent,
        )
        PROCS.append(p)
        return p

    def rocemend_counts(self):
        """(samples ingested, successful scrapes) from rocemend's /metrics."""
        page = get(f"http://127.0.0.1:{self.metrics_port}/metrics")
        return (
            metric(page, "rocemend_samples_ingested_total"),
            metric(page, "rocemend_sensor_reads_total", 'sensor="prometheus"'),
        )

    def prometheus_counts(self):
        """(samples appended to the head, scrapes of the exporter) from Prometheus's /metrics."""
        page = get(f"http://127.0.0.1:{self.prom_port}/metrics")
        return (
            metric(page, "prometheus_tsdb_head_samples_appended_total", 'type="float"'),
            metric(page, "prometheus_target_interval_length_seconds_count"),
        )

    def recording_bytes(self):
        """Bytes of rocemend's recording and its rotated files."""
        return sum(
            os.path.getsize(os.path.join(self.work, f)) for f in os.listdir(self.work) if f.startswith("recording")
        )

    def stop_rocemend(self):
        """Stops rocemend as systemd would (SIGTERM): it writes the block it was filling."""
        self.rocemend.terminate()
        self.rocemend.wait(timeout=30)

    def prometheus_block(self):
        """(bytes, bytes of its chunks, samples) of Prometheus's head written as a block by a snapshot."""
        url = f"http://127.0.0.1:{self.prom_port}/api/v1/admin/tsdb/snapshot?skip_head=false"
        with urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=120) as r:
            name = json.loads(r.read())["data"]["name"]
        snap = os.path.join(self.work, "tsdb", "snapshots", name)
        total = chunks = samples = 0
        for block in os.listdir(snap):
            path = os.path.join(snap, block)
            if not os.path.isdir(path):
                continue
            with open(os.path.join(path, "meta.json")) as f:
                samples += json.load(f)["stats"]["numSamples"]
            for dirpath, _, files in os.walk(path):
                size = sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
                total += size
                if os.path.basename(dirpath) == "chunks":
                    chunks += size
        return total, chunks, samples

    def query(self, promql):
        answer = json.loads(get(f"http://127.0.0.1:{self.prom_port}/api/v1/query?query={urllib.parse.quote(promql)}"))
        result = answer["data"]["result"]
        return float(result[0]["value"][1]) if result else 0.0


def cost(args, root, series, changing, record=False):
    """CPU µs per sample and RSS MiB of both, over `args.seconds` of scraping every second; with
    `record`, rocemend records (`record =`), and the bytes a sample of its recording and of
    Prometheus's block are measured over the whole run."""
    mode = ("changing" if changing else "static") + ("-recorded" if record else "")
    run = Run(args, os.path.join(root, f"cost-{series}-{mode}"), series, changing, 1000, record)
    try:
        # Let both register every series before counting. Prometheus shows its counters only
        # once it has appended and timed a second scrape.
        wait_for("Prometheus's scrape counters", lambda: None not in run.prometheus_counts())
        time.sleep(args.settle)
        before = {
            "rocemend": (cpu_seconds(run.rocemend.pid), *run.rocemend_counts()),
            "prometheus": (cpu_seconds(run.prometheus.pid), *run.prometheus_counts()),
        }
        time.sleep(args.seconds)
        after = {
            "rocemend": (cpu_seconds(run.rocemend.pid), *run.rocemend_counts()),
            "prometheus": (cpu_seconds(run.prometheus.pid), *run.prometheus_counts()),
        }
        rss = {"rocemend": rss_mib(run.rocemend.pid), "prometheus": rss_mib(run.prometheus.pid)}
        window = f'up{{job="exporter"}}[{int(args.seconds)}s]'
        failed = run.query(f"count_over_time({window}) - sum_over_time({window})")
        stored = None
        if record:
            block = run.prometheus_block()
            ingested = run.rocemend_counts()[0]
            run.stop_rocemend()
            stored = {"rocemend": (run.recording_bytes(), ingested), "prometheus": block}
    finally:
        stop_all()
    out = {}
    for who in ("rocemend", "prometheus"):
        user = after[who][0][0] - before[who][0][0]
        system = after[who][0][1] - before[who][0][1]
        cpu = user + system
        samples = after[who][1] - before[who][1]
        scrapes = after[who][2] - before[who][2]
        out[who] = {
            "us": 1e6 * cpu / samples if samples else float("nan"),
            "cpu": cpu,
            "user": user,
            "system": system,
            "samples": samples,
            "scrapes": scrapes,
            "rss": rss[who],
        }
    out["prometheus"]["failed"] = failed
    out["stored"] = stored
    return out


def rfc3339_ns(text):
    """Prometheus's activeAt (RFC 3339 in UTC, up to nanoseconds) as nanoseconds."""
    head, _, frac = text.rstrip("Z").partition(".")
    tz = 0
    for sign in "+-":
        if sign in frac:
            frac, _, zone = frac.partition(sign)
            hours, minutes = zone.split(":")
            tz = (int(hours) * 3600 + int(minutes) * 60) * (1 if sign == "+" else -1)
    base = datetime.strptime(head, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    return (int(base.timestamp()) - tz) * 10**9 + int((frac + "000000000")[:9])


def firing(run):
    alerts = json.loads(get(f"http://127.0.0.1:{run.prom_port}/api/v1/alerts"))["data"]["alerts"]
    return [a for a in alerts if a["labels"].get("alertname") == "SideBySideFault" and a["state"] == "firing"]


def decisions(args, run):
    """The fault rule's decisions so far, undos left out."""
    out = subprocess.run(
        [args.rocemend, "decisions", "--json", "--rule", "side-by-side-fault", "--socket", run.socket],
        capture_output=True,
        text=True,
    ).stdout
    found = [json.loads(line) for line in out.splitlines() if line.strip()]
    return [d for d in found if d.get("undo_of") is None]


def verdict(decision):
    """A decision's verdict by name: `executed`, `duplicate`, `held`, ..."""
    v = decision.get("verdict")
    return v.get("verdict", "?") if isinstance(v, dict) else str(v)


def latency(args, root):
    """Fault raised → Prometheus alert and → rocemend's executed decision, ms, over `args.trials`
    trials; also each trial's verdict (a trial rocemend decided nothing about counts as `none`)."""
    run = Run(args, os.path.join(root, "latency"), args.latency_series, False, 100)
    prom, polled, roce, verdicts = [], [], [], []
    try:
        # Prometheus's discovery hands targets to its scrapers about 5 s after start; a fault
        # raised before that waits for the first scrape. Both scrape steadily before the first
        # raise (20 scrapes of 100 ms each).
        wait_for(
            "both to scrape every 100 ms",
            lambda: (run.prometheus_counts()[1] or 0) >= 20 and (run.rocemend_counts()[1] or 0) >= 20,
            every=0.2,
        )
        seen = {d["id"] for d in decisions(args, run)}
        for _ in range(args.trials):
            raised = int(get(f"{run.exporter_url}/fault?on=1"))
            got_prom = got_poll = got_roce = None
            got_verdict = "none"
            deadline = time.monotonic() + 5
            while (got_prom is None or got_roce is None) and time.monotonic() < deadline:
                if got_prom is None:
                    for a in firing(run):
                        got_prom, got_poll = rfc3339_ns(a["activeAt"]), time.time_ns()
                # Both stamps are the daemons' own, so reading rocemend's late changes nothing; it
                # is read only once Prometheus has fired (or 300 ms have gone), sparing the
                # machine a `rocemend decisions` process every 10 ms while Prometheus is timed.
                if got_roce is None and (got_prom is not None or time.time_ns() - raised > 300_000_000):
                    for d in decisions(args, run):
                        if d["id"] not in seen:
                            seen.add(d["id"])
                            if got_roce is None:
                                got_roce, got_verdict = d["dispatched_at"], verdict(d)
                time.sleep(0.01)
            if got_prom is not None:
                prom.append((got_prom - raised) / 1e6)
                polled.append((got_poll - raised) / 1e6)
            verdicts.append(got_verdict)
            if got_roce is not None and got_verdict == "executed":
                roce.append((got_roce - raised) / 1e6)
            get(f"{run.exporter_url}/fault?on=0")
            # Both clear before the next raise (Prometheus's alert leaves the list at its next
            # evaluation, rocemend's instance resolves when the flag reads 0), and the next raise
            # lands at a random point of the scrape and evaluation cycles.
            wait_for("Prometheus's alert to clear", lambda: not firing(run), within=10, every=0.05)
            time.sleep(1.0 + random.random() * 0.1)
        failed = run.query('count_over_time(up{job="exporter"}[1h]) - sum_over_time(up{job="exporter"}[1h])')
        roce_failed = metric(get(f"http://127.0.0.1:{run.metrics_port}/metrics"), "rocemend_sensor_errors_total")
    finally:
        stop_all()
    return prom, polled, roce, verdicts, failed, roce_failed or 0.0


def verdict_counts(verdicts):
    """`40 executed` or `38 executed, 2 duplicate`: executed first, the others by name."""
    counts = {v: verdicts.count(v) for v in sorted(set(verdicts))}
    executed = counts.pop("executed", 0)
    return ", ".join([f"{executed} executed"] + [f"{n} {v}" for v, n in counts.items()])


def pct(values, p):
    """The nearest-rank percentile."""
    if not values:
        return float("nan")
    s = sorted(values)
    return s[min(len(s) - 1, max(0, -(-p * len(s) // 100) - 1))]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


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
    parser.add_argument("--work", help="an empty directory for the runs' files (default: a new temporary one)")
    args = parser.parse_args()
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, on_signal)

    root = args.work or tempfile.mkdtemp(prefix="side-by-side-")
    lines, notes = [], []

    def say(line=""):
        print(line, flush=True)
        lines.append(line)

    try:
        version = subprocess.run([args.prometheus, "--version"], capture_output=True, text=True).stdout
        say(
            f"side by side, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
            f"{os.cpu_count()} CPUs, load average at the start {loadavg()}"
        )
        say(f"rocemend {args.rocemend}; {version.splitlines()[0]}")
        say(f"cost: scraped every 1 s by both, {args.seconds:g} s counted after {args.settle:g} s of settling")
        say()
        say("| series | values | rocemend µs/sample | Prometheus µs/sample | rocemend ÷ Prometheus | RSS rocemend / Prometheus |")
        say("|---|---|---|---|---|---|")
        stored = []
        for series in [int(s) for s in args.scales.split(",")]:
            for changing, record in ((False, False), (True, False), (True, True)):
                c = cost(args, root, series, changing, record)
                r, p = c["rocemend"], c["prometheus"]
                mode = ("changing" if changing else "static") + (", rocemend recording" if record else "")
                say(
                    f"| {series:,} | {mode} | {r['us']:.3f} | {p['us']:.3f} | "
                    f"{r['us'] / p['us']:.2f} | {r['rss']:.0f} / {p['rss']:.0f} MiB |"
                )
                if c["stored"]:
                    stored.append((series, c["stored"]))
                notes.append(
                    f"- {series:,} {mode}: rocemend {r['cpu']:.2f} s CPU "
                    f"({r['user']:.2f} user + {r['system']:.2f} system), {r['scrapes']:.0f} scrapes, "
                    f"{r['samples']:,.0f} samples; Prometheus {p['cpu']:.2f} s CPU ({p['user']:.2f} + "
                    f"{p['system']:.2f}), {p['scrapes']:.0f} scrapes ({p['failed']:.0f} failed), "
                    f"{p['samples']:,.0f} samples appended"
                )
        say()
        for n in notes:
            say(n)
        say()
        say("what is kept on disk, over the whole recorded run (changing values, same run):")
        say()
        say("| series | rocemend's recording | bytes a sample | Prometheus's block (snapshot of its head) | bytes a sample (chunks alone) |")
        say("|---|---|---|---|---|")
        for series, st in stored:
            (rb, rs), (pb, pc, ps) = st["rocemend"], st["prometheus"]
            say(
                f"| {series:,} | {rb:,} B / {rs:,.0f} samples | {rb / rs:.3f} | {pb:,} B / {ps:,} samples | "
                f"{pb / ps:.3f} ({pc / ps:.3f}) |"
            )
        prom, polled, roce, verdicts, failed, roce_failed = latency(args, root)
        say()
        say(
            f"detection at a 100 ms interval, {args.trials} trials, {args.latency_series:,} series beside the "
            f"fault flag (ms from the fault's raise):"
        )
        say()
        say("| | detected | p50 | p90 | p99 | max |")
        say("|---|---|---|---|---|---|")
        for who, v in (
            ("rocemend executed decision (dispatched_at)", roce),
            ("Prometheus alert (activeAt)", prom),
            ("Prometheus alert (first seen by a 10 ms poll)", polled),
        ):
            say(
                f"| {who} | {len(v)} | {pct(v, 50):.0f} | {pct(v, 90):.0f} | {pct(v, 99):.0f} | "
                f"{max(v) if v else float('nan'):.0f} |"
            )
        say()
        say(f"rocemend's decisions, one per trial: {verdict_counts(verdicts)}")
        say(f"failed scrapes during the latency run: Prometheus {failed:.0f}, rocemend {roce_failed:.0f}")
        say(f"rocemend, each trial: {' '.join(f'{x:.0f}' for x in roce)}")
        say(f"Prometheus activeAt, each trial: {' '.join(f'{x:.0f}' for x in prom)}")
        say(f"load average at the end {loadavg()}")
    finally:
        stop_all()
        if not args.work:
            shutil.rmtree(root, ignore_errors=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
