#!/usr/bin/env python3
"""A SONiC-like gNMI target for interop tests, written on the PyPI `gnmi-pb` stubs.

It shares no code with rocemend: the Rust gNMI client, sensor and actuators
are tested against it, and `test_target.py` checks it with pygnmi. It answers
as SONiC's telemetry container (sonic-gnmi) does for the paths below, learnt
from sonic-gnmi's source (`gnmi_server/server.go`, `client_subscribe.go`,
`sonic_data_client/{db_client,mixed_db_client,virtual_db}.go`), and is strict
wherever the gNMI specification is.

    python3 sonic_target.py --port 0 --control-port 0
    # prints "gnmi 127.0.0.1:PORT" and "control 127.0.0.1:PORT", then serves

What it serves
- COUNTERS_DB: `COUNTERS/EthernetN` and `COUNTERS/Ethernet*` (SAI port stats,
  virtual paths that hide the OIDs), `.../<field>`, `.../Queues` (keys
  `Ethernet0:3`, plus `Ethernet0:3:periodic` watermark entries as SONiC adds),
  `.../Pfcwd` (the queues under the watchdog), `COUNTERS/oid:0x...`,
  `COUNTERS_PORT_NAME_MAP`, `COUNTERS_QUEUE_NAME_MAP`. Every value is a string.
- CONFIG_DB: PORT, PORT_QOS_MAP, PFC_WD, WRED_PROFILE, QUEUE, validated as
  sonic-port/-pfcwd/-wred-profile/-queue YANG would (ranges, enums, max >= min,
  leafrefs, GLOBAL-only fields). APPL_DB: PORT_TABLE (`oper_status` up/down).
  Startup CONFIG_DB: every port up, pfc_enable 3,4, PFC_WD action alert
  (--pfcwd-action), detection_time and restoration_time 400, GLOBAL
  POLL_INTERVAL 200, WRED_PROFILE AZURE_LOSSLESS (1048576/2097152/5, ecn_all)
  bound to queues 3 and 4 of every port.
- With origin sonic-db, COUNTERS keys are OIDs, as in sonic-gnmi: the
  port-name virtual paths exist only with a prefix target.
- Counters move every 100 ms; a PFC storm from the control endpoint drives
  pause counters and the watchdog's state (see `Switch.tick`).

Spec and SONiC rules it enforces
- Database selection (gNMI 2.2.2.1): `target` counts only in a request's
  prefix; a target inside a path is ignored. Two styles, each can be switched
  off with `--styles`: prefix target = a database name (classic SONiC
  telemetry), or origin `sonic-db` with the database as the first element and
  an optional instance element (`localhost`) after it (sonic-gnmi's mixed
  schema). A prefix target that names a database wins, as in sonic-gnmi.
- No database determinable: Get/Set NOT_FOUND, Subscribe UNIMPLEMENTED
  "Empty target data not supported" (sonic-gnmi's words), with a hint when a
  path carried its own target. A style switched off: UNIMPLEMENTED.
- Leaves read with a prefix target come back as `string_val` (sonic-gnmi's
  DbClient); with origin sonic-db as `json_ietf_val` of a JSON string; entries,
  tables and wildcards as one `json_ietf_val` object per requested path.
- Get: type must be ALL, encoding JSON or JSON_IETF (sonic-db: JSON_IETF only);
  a missing key or field is NOT_FOUND "No valid entry found ..."; a table or
  database this target does not serve is NOT_FOUND "... is not served ...".
- Set: CONFIG_DB only ("Set RPC does not support COUNTERS_DB"); deletes, then
  replaces, then updates, validated as a whole, then applied all at once or not
  at all; deleting what is not there is accepted (gNMI 3.4.6). Values are
  `json_ietf_val`/`json_val` (must parse as JSON) or `string_val`. A refused
  Set is INVALID_ARGUMENT, or UNKNOWN with --error-codes sonic-gnmi (what
  sonic-gnmi really sends for its write backend's errors).
- Subscribe: STREAM (SAMPLE, ON_CHANGE; TARGET_DEFINED refused as sonic-gnmi
  does), ONCE, POLL; sync_response after the first full set of updates and
  after each poll; the request prefix echoed in every notification; ON_CHANGE
  sends a `delete` when an entry goes away; a sample_interval below the
  minimum refused, 0 meaning the minimum; a path that does not exist yet is
  accepted (it may appear), a table or port that cannot exist refuses the
  stream.
- Optional username/password metadata (UNAUTHENTICATED "Unauthenticated").

Control endpoint (HTTP/1.0 JSON, --control-port)
- POST /storm {"port": "Ethernet4", "prio": 3, "on": true}
- POST /link {"port": "Ethernet4", "up": false}
- POST /restart {"down_ms": 0, "keep_counters": false}: a reboot without
  `config save`: CONFIG_DB back to the startup config, counters from zero, the
  gRPC server closed (every stream ends) and reopened on the same port.
- POST /save: `config save` (the startup config becomes the running one).
- GET /state: {"config_db", "appl_db", "sets", "refused", "storms", "restarts"}.
"""

import argparse
import copy
import http.server
import json
import queue
import random
import re
import signal
import sys
import threading
import time
from concurrent import futures

try:
    import grpc
    from gnmi_pb import gnmi_pb2 as pb
    from gnmi_pb import gnmi_pb2_grpc as pb_grpc
except ImportError as error:  # the Rust helper checks this import before starting us
    sys.exit(f"sonic_target: no grpc or gNMI stubs ({error}); pip install -r tests/interop/requirements.txt")

C = grpc.StatusCode
PREFIX_TARGET, SONIC_DB = "prefix-target", "sonic-db-origin"
# The database names of SONiC's database_config.json: a prefix target naming
# one of these selects a database, even one this target does not serve.
SONIC_DBS = ("APPL_DB", "ASIC_DB", "COUNTERS_DB", "LOGLEVEL_DB", "CONFIG_DB", "PFC_WD_DB",
             "FLEX_COUNTER_DB", "STATE_DB", "SNMP_OVERLAY_DB", "RESTAPI_DB", "GB_ASIC_DB",
             "GB_COUNTERS_DB", "GB_FLEX_COUNTER_DB", "APPL_STATE_DB", "DPU_APPL_DB")
SERVED_DBS = ("APPL_DB", "COUNTERS_DB", "CONFIG_DB")
COUNTERS_TABLES = ("COUNTERS", "COUNTERS_PORT_NAME_MAP", "COUNTERS_QUEUE_NAME_MAP")
APPL_TABLES = ("PORT_TABLE",)
QUEUES = range(8)
TICK = 0.1  # seconds between counter updates and ON_CHANGE checks
# One worker per RPC; a Subscribe holds its worker for its whole life. The
# tests open a handful of streams; 64 leaves room without letting a leaking
# client exhaust the machine (more are refused with RESOURCE_EXHAUSTED).
MAX_RPCS = 64

PORT_STATS = ["SAI_PORT_STAT_IF_IN_OCTETS", "SAI_PORT_STAT_IF_OUT_OCTETS",
              "SAI_PORT_STAT_IF_IN_UCAST_PKTS", "SAI_PORT_STAT_IF_OUT_UCAST_PKTS",
              "SAI_PORT_STAT_IF_IN_ERRORS", "SAI_PORT_STAT_IF_OUT_ERRORS",
              "SAI_PORT_STAT_IF_IN_DISCARDS", "SAI_PORT_STAT_IF_OUT_DISCARDS"] + [
    f"SAI_PORT_STAT_PFC_{p}_{what}" for p in QUEUES
    for what in ("RX_PKTS", "TX_PKTS", "RX_PAUSE_DURATION_US", "TX_PAUSE_DURATION_US")]
QUEUE_STATS = ["SAI_QUEUE_STAT_PACKETS", "SAI_QUEUE_STAT_BYTES", "SAI_QUEUE_STAT_DROPPED_PACKETS",
               "SAI_QUEUE_STAT_DROPPED_BYTES", "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES",
               "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"]
WATERMARK = "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"
PAUSE_STATUS = "SAI_QUEUE_ATTR_PAUSE_STATUS"
# The pause counters each ASIC family's syncd writes (sonic-swss `orchagent/pfc_detect_*.lua`
# read them): Mellanox the duration in microseconds, Marvell in 512-bit-time quanta,
# Broadcom none (its detector reads PFC packets, ON2OFF transitions and the queue's pause
# status instead).
ASIC_PFC_COUNTERS = {"mellanox": ("_RX_PAUSE_DURATION_US", "_TX_PAUSE_DURATION_US"),
                     "marvell": ("_RX_PAUSE_DURATION", "_TX_PAUSE_DURATION"),
                     "broadcom": ("_ON2OFF_RX_PKTS",)}
QUANTA_PER_US = 400_000 / 512  # at 400 Gb/s
# Rates per second. A healthy port carries traffic and a little PFC on its
# lossless priorities; errors and discards stay flat so a rule sees nothing.
OCTETS_PER_S, PKTS_PER_S, QUEUE_PKTS_PER_S = 5_000_000_000, 4_000_000, 50_000
BACKGROUND_PFC_PER_S, BACKGROUND_PAUSE_US_PER_S = 20, 200
STORM_PFC_PER_S, STORM_PAUSE_US_PER_S = 15_000, 900_000
ECN_MARKS_PER_S = 20


class GnmiError(Exception):
    """A refusal: a gRPC status code and a message naming what was wrong.
    `missing` marks data that is absent now but may appear later, which a
    Subscribe accepts and a Get does not."""

    def __init__(self, code, message, missing=False):
        super().__init__(message)
        self.code, self.message, self.missing = code, message, missing


def not_served(db, table, served):
    return GnmiError(C.NOT_FOUND, f"table {table} is not served by this target on {db} "
                                  f"(served: {', '.join(served)})")


def invalid_path(db, elems, why):
    return GnmiError(C.NOT_FOUND, f"Invalid db table Path {[db] + list(elems)}: {why}")


# ---------------------------------------------------------------- CONFIG_DB model

def enum(*values):
    return lambda v: None if v in values else f"is not one of {'|'.join(values)}"


def uint(lo, hi):
    def check(v):
        if not re.fullmatch(r"[0-9]+", v):
            return "is not an unsigned integer"
        return None if lo <= int(v) <= hi else f"is out of range {lo}..{hi}"
    return check


def text(v):
    return None if 0 < len(v) <= 255 else "must be 1 to 255 characters"


def prio_list(v):
    ok = re.fullmatch(r"[0-7](,[0-7])*", v)
    return None if ok else "is not a comma-separated list of priorities 0..7"


BOOL = enum("true", "false")
UINT64 = uint(0, 2**64 - 1)
PERCENT = uint(0, 100)
WRED_FIELDS = {"ecn": enum("ecn_none", "ecn_green", "ecn_yellow", "ecn_red", "ecn_green_yellow",
                           "ecn_green_red", "ecn_yellow_red", "ecn_all")}
for color in ("green", "yellow", "red"):
    WRED_FIELDS.update({f"{color}_min_threshold": UINT64, f"{color}_max_threshold": UINT64,
                        f"{color}_drop_probability": PERCENT, f"wred_{color}_enable": BOOL,
                        f"ecn_{color}_min_threshold": UINT64, f"ecn_{color}_max_threshold": UINT64,
                        f"ecn_{color}_mark_probability": PERCENT})
# table -> (YANG module, fields, parts of the key). Only these tables are served.
CONFIG_SCHEMA = {
    "PORT": ("sonic-port", {"admin_status": enum("up", "down"), "mtu": uint(68, 9216),
                            "speed": uint(1, 1_600_000), "alias": text, "lanes": text,
                            "fec": enum("none", "rs", "fc", "auto"), "description": text,
                            "index": uint(0, 1024)}, 1),
    "PORT_QOS_MAP": ("sonic-port-qos-map", {"pfc_enable": prio_list}, 1),
    "PFC_WD": ("sonic-pfcwd", {"action": enum("drop", "forward", "alert"),
                               "detection_time": uint(100, 5000), "restoration_time": uint(100, 60000),
                               "pfc_stat_history": enum("enable", "disable"),
                               "POLL_INTERVAL": uint(100, 1000),
                               "BIG_RED_SWITCH": enum("enable", "disable")}, 1),
    "WRED_PROFILE": ("sonic-wred-profile", WRED_FIELDS, 1),
    "QUEUE": ("sonic-queue", {"wred_profile": text}, 2),
}
GLOBAL_ONLY = {"POLL_INTERVAL", "BIG_RED_SWITCH"}


def startup_config(ports, pfcwd_action):
    cfg = {table: {} for table in CONFIG_SCHEMA}
    for i, port in enumerate(ports):
        lanes = ",".join(str(8 * i + n) for n in range(1, 9))
        cfg["PORT"][port] = {"admin_status": "up", "mtu": "9100", "speed": "400000",
                             "alias": f"etp{i + 1}", "lanes": lanes, "index": str(i)}
        cfg["PORT_QOS_MAP"][port] = {"pfc_enable": "3,4"}
        cfg["PFC_WD"][port] = {"action": pfcwd_action, "detection_time": "400",
                               "restoration_time": "400"}
        for q in (3, 4):
            cfg["QUEUE"][f"{port}|{q}"] = {"wred_profile": "AZURE_LOSSLESS"}
    cfg["PFC_WD"]["GLOBAL"] = {"POLL_INTERVAL": "200"}
    cfg["WRED_PROFILE"]["AZURE_LOSSLESS"] = {
        "ecn": "ecn_all", "wred_green_enable": "true", "wred_yellow_enable": "true",
        "wred_red_enable": "true", **{f"{c}_{f}": v for c in ("green", "yellow", "red") for f, v in
                                      (("min_threshold", "1048576"), ("max_threshold", "2097152"),
                                       ("drop_probability", "5"))}}
    return cfg


def validate_config(cfg, ports):
    """Every way `cfg` breaks the YANG models, as messages; empty when valid."""
    errors = []
    present = set(cfg.get("PORT", {}))
    errors += [f"PORT|{p}: a port of this switch cannot be removed" for p in ports if p not in present]
    errors += [f"PORT|{p}: not a port of this switch ({ports[0]}..{ports[-1]})"
               for p in sorted(present - set(ports))]
    wd_global = cfg.get("PFC_WD", {}).get("GLOBAL", {})
    for table, entries in cfg.items():
        model, fields, _ = CONFIG_SCHEMA[table]
        for key, entry in entries.items():
            where = f"{table}|{key}"
            for field, value in entry.items():
                check = fields.get(field)
                problem = f"field {field} is not in {model} (as served here)" if check is None else check(value)
                if problem:
                    errors.append(f"{where}: {field} {value!r} {problem}" if check else f"{where}: {problem}")
            errors += [f"{where}: {m}" for m in check_entry(table, key, entry, cfg, present, wd_global)]
    return errors


def check_entry(table, key, entry, cfg, ports, wd_global):
    """The rules of one entry beyond its fields' types: keys, leafrefs, must."""
    if table in ("PORT_QOS_MAP",) and key not in ports:
        return [f"{key} is not a port (leafref to PORT)"]
    if table == "PFC_WD":
        if key != "GLOBAL" and key not in ports:
            return [f"{key} is neither a port (leafref to PORT) nor GLOBAL"]
        wrong = [f for f in entry if (f in GLOBAL_ONLY) != (key == "GLOBAL")]
        if wrong:
            return [f"{', '.join(wrong)} not allowed on {'GLOBAL' if key == 'GLOBAL' else 'a port'}"]
        poll = wd_global.get("POLL_INTERVAL", "")
        return [f"{f} must be greater than or equal to POLL_INTERVAL ({poll})"
                for f in ("detection_time", "restoration_time")
                if poll.isdigit() and entry.get(f, "").isdigit() and int(entry[f]) < int(poll)]
    if table == "WRED_PROFILE":
        out = []
        for color in ("green", "yellow", "red"):
            for pre in ("", "ecn_"):
                lo, hi = entry.get(f"{pre}{color}_min_threshold"), entry.get(f"{pre}{color}_max_threshold")
                if lo and hi and lo.isdigit() and hi.isdigit() and int(hi) < int(lo):
                    out.append(f"{pre}{color}_max_threshold {hi} is below {pre}{color}_min_threshold {lo}")
        return out
    if table == "QUEUE":
        port, _, qindex = key.partition("|")
        out = [] if port in ports else [f"{port} is not a port (leafref to PORT)"]
        m = re.fullmatch(r"([0-9]+)(?:-([0-9]+))?", qindex)
        if not m or int(m.group(m.lastindex)) >= len(QUEUES):
            out.append(f"queue index {qindex!r} is not 0..{len(QUEUES) - 1} or a range of them")
        profile = entry.get("wred_profile")
        if profile is not None and profile not in cfg.get("WRED_PROFILE", {}):
            out.append(f"wred_profile {profile!r} does not exist (leafref to WRED_PROFILE)")
        return out
    return []


# ---------------------------------------------------------------- the switch

class Switch:
    """The databases and the physics behind them. One lock guards all state;
    readers copy out under it."""

    def __init__(self, n_ports, pfcwd_action, seed, save_on_set, asic="mellanox"):
        self.lock = threading.RLock()
        self.asic = asic
        self.ports = [f"Ethernet{4 * i}" for i in range(n_ports)]
        self.port_oid = {p: f"oid:0x{0x1000000000001 + i:x}" for i, p in enumerate(self.ports)}
        self.queue_oid = {(p, q): f"oid:0x{0x15000000000000 + i * 0x100 + q:x}"
                          for i, p in enumerate(self.ports) for q in QUEUES}
        self.by_oid = {o: ("port", p) for p, o in self.port_oid.items()}
        self.by_oid.update({o: ("queue", pq) for pq, o in self.queue_oid.items()})
        self.startup = startup_config(self.ports, pfcwd_action)
        self.config = copy.deepcopy(self.startup)
        self.save_on_set = save_on_set
        self.rng = random.Random(seed)
        self.link_up = {p: True for p in self.ports}
        self.storms = {}  # (port, prio) -> monotonic time the storm started
        self.sets, self.refused, self.restarts = [], [], 0
        self.reset_counters()

    def reset_counters(self):
        self.port_stats = {p: dict.fromkeys(PORT_STATS, 0.0) for p in self.ports}
        self.queue_stats = {pq: dict.fromkeys(QUEUE_STATS, 0.0) for pq in self.queue_oid}
        self.on2off = {pq: 0.0 for pq in self.queue_oid}
        self.paused = {}
        # (port, queue) -> watchdog state, for the queues the watchdog watches
        self.watchdog = {}
        self.last_tick = time.monotonic()

    # -- physics

    def oper_up(self, port):
        return self.link_up[port] and self.config["PORT"].get(port, {}).get("admin_status") == "up"

    def lossless(self, port):
        enabled = self.config["PORT_QOS_MAP"].get(port, {}).get("pfc_enable", "")
        return {int(p) for p in enabled.split(",") if p.isdigit()}

    def ecn_marking(self, port, q):
        name = self.config["QUEUE"].get(f"{port}|{q}", {}).get("wred_profile")
        profile = self.config["WRED_PROFILE"].get(name, {})
        return profile.get("ecn", "ecn_none") != "ecn_none" and "true" in (
            profile.get(f"wred_{c}_enable") for c in ("green", "yellow", "red"))

    def tick(self, now=None):
        """Advances every counter to `now`. A storm on (port, prio) pauses the
        queue: RX PFC frames and pause time grow, the queue stops sending and
        its watermark climbs. The watchdog (when PFC_WD has the port and the
        priority is lossless) declares the queue stormed after detection_time
        and, with action drop, drops it: the pause no longer counts and the
        queue's packets are dropped. restoration_time after the storm ends the
        queue is operational again."""
        with self.lock:
            now = time.monotonic() if now is None else now
            dt, self.last_tick = max(0.0, now - self.last_tick), now
            for port in self.ports:
                self._tick_port(port, now, dt)

    def _tick_port(self, port, now, dt):
        up, ps, lossless = self.oper_up(port), self.port_stats[port], self.lossless(port)
        wd_cfg = self.config["PFC_WD"].get(port)
        if up:
            for d in ("IN", "OUT"):
                ps[f"SAI_PORT_STAT_IF_{d}_OCTETS"] += OCTETS_PER_S * dt
                ps[f"SAI_PORT_STAT_IF_{d}_UCAST_PKTS"] += PKTS_PER_S * dt
        for q in QUEUES:
            qs, pfc = self.queue_stats[(port, q)], f"SAI_PORT_STAT_PFC_{q}"
            storm = self.storms.get((port, q)) if up else None
            wd = None
            if wd_cfg is not None and q in lossless:
                # orchagent keeps a started queue's action through an in-place change of the entry
                # (`emplace`, pfcwdsworch.cpp); only a DEL then a SET starts it with a new one.
                wd = self.watchdog.setdefault((port, q), {"stormed": False, "since": now, "quiet": None,
                                                          "detected": 0, "restored": 0, "dropped": 0.0,
                                                          "action": wd_cfg.get("action", "drop")})
                self._watchdog_step(wd, wd_cfg, storm, now)
            else:
                self.watchdog.pop((port, q), None)
            dropping = wd is not None and wd["stormed"] and wd["action"] == "drop"
            paused = storm is not None and not dropping
            self.paused[(port, q)] = paused
            if up and q in lossless and storm is None:
                self.on2off[(port, q)] += BACKGROUND_PFC_PER_S * dt / 2
            if storm is not None:
                ps[f"{pfc}_RX_PKTS"] += STORM_PFC_PER_S * dt
            elif up and q in lossless:
                ps[f"{pfc}_RX_PKTS"] += BACKGROUND_PFC_PER_S * dt
            if paused:
                ps[f"{pfc}_RX_PAUSE_DURATION_US"] += STORM_PAUSE_US_PER_S * dt
            elif storm is None and up and q in lossless:
                ps[f"{pfc}_RX_PAUSE_DURATION_US"] += BACKGROUND_PAUSE_US_PER_S * dt
            if up and q in lossless:
                ps[f"{pfc}_TX_PKTS"] += BACKGROUND_PFC_PER_S * dt
                ps[f"{pfc}_TX_PAUSE_DURATION_US"] += BACKGROUND_PAUSE_US_PER_S * dt
            rate = QUEUE_PKTS_PER_S if q in (0, 3, 4) else QUEUE_PKTS_PER_S // 50
            if dropping:
                qs["SAI_QUEUE_STAT_DROPPED_PACKETS"] += rate * dt
                qs["SAI_QUEUE_STAT_DROPPED_BYTES"] += rate * 1000 * dt
                wd["dropped"] += rate * dt
            elif not paused and up:
                qs["SAI_QUEUE_STAT_PACKETS"] += rate * dt
                qs["SAI_QUEUE_STAT_BYTES"] += rate * 1000 * dt
                if self.ecn_marking(port, q):
                    qs["SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"] += ECN_MARKS_PER_S * dt
            # A paused queue fills the shared buffer; otherwise it stays shallow.
            qs[WATERMARK] = (self.rng.randint(24, 32) * 262144 if paused
                             else self.rng.randint(0, 256) * 256 if up else 0)

    @staticmethod
    def _watchdog_step(wd, cfg, storm, now):
        if storm is not None:
            wd["quiet"] = None
            detection = int(cfg.get("detection_time", "200")) / 1000
            if not wd["stormed"] and now - max(storm, wd["since"]) >= detection:
                wd["stormed"], wd["detected"] = True, wd["detected"] + 1
        elif wd["stormed"]:
            wd["quiet"] = now if wd["quiet"] is None else wd["quiet"]
            if now - wd["quiet"] >= int(cfg.get("restoration_time", "200")) / 1000:
                wd["stormed"], wd["restored"], wd["quiet"] = False, wd["restored"] + 1, None

    # -- views: COUNTERS_DB and APPL_DB as the telemetry container reads them

    def port_hash(self, port):
        """The port's COUNTERS_DB hash, with the PFC counters of the switch's ASIC family."""
        out = {}
        for f, v in self.port_stats[port].items():
            if "_PAUSE_DURATION_US" not in f:
                out[f] = str(int(v))
            elif self.asic == "mellanox":
                out[f] = str(int(v))
            elif self.asic == "marvell":
                out[f[:-len("_US")]] = str(int(v * QUANTA_PER_US))
        if self.asic == "broadcom":
            # A storm holds XOFF: the on-to-off transitions do not move while it lasts.
            for q in QUEUES:
                out[f"SAI_PORT_STAT_PFC_{q}_ON2OFF_RX_PKTS"] = str(int(self.on2off[(port, q)]))
        return out

    def queue_hash(self, port, q):
        out = {f: str(int(v)) for f, v in self.queue_stats[(port, q)].items()}
        if self.asic == "broadcom":
            out[PAUSE_STATUS] = "true" if self.paused.get((port, q)) else "false"
        wd, cfg = self.watchdog.get((port, q)), self.config["PFC_WD"].get(port, {})
        if wd is not None:  # orchagent adds these to the queue's hash while it watches the queue
            out.update({"PFC_WD_STATUS": "stormed" if wd["stormed"] else "operational",
                        "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": str(wd["detected"]),
                        "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED": str(wd["restored"]),
                        "PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS": str(int(wd["dropped"])),
                        "PFC_WD_ACTION": cfg.get("action", "drop"),
                        # orchagent writes the times in microseconds (pfcwdorch.cpp: ms * 1000),
                        # the unit SONiC's Lua detectors read them in.
                        "PFC_WD_DETECTION_TIME": str(int(cfg.get("detection_time", "200")) * 1000),
                        "PFC_WD_RESTORATION_TIME": str(int(cfg.get("restoration_time", "200")) * 1000)})
        return out

    def oid_hash(self, oid):
        kind, what = self.by_oid[oid]
        return self.port_hash(what) if kind == "port" else self.queue_hash(*what)

    def appl_db(self):
        table = {}
        for port in self.ports:
            cfg = self.config["PORT"][port]
            table[port] = {"admin_status": cfg.get("admin_status", "down"),
                           "oper_status": "up" if self.oper_up(port) else "down",
                           **{f: cfg[f] for f in ("mtu", "speed", "alias", "lanes") if f in cfg}}
        return {"PORT_TABLE": table}

    def read(self, db, style, elems):
        """(True, str) for a leaf or (False, dict) for an entry, table or
        wildcard at `elems` (the path after the database)."""
        with self.lock:
            if db == "COUNTERS_DB":
                return self._read_counters(style, elems)
            tables = self.config if db == "CONFIG_DB" else self.appl_db()
            served = tuple(CONFIG_SCHEMA) if db == "CONFIG_DB" else APPL_TABLES
            if not elems:
                raise invalid_path(db, elems, f"name a table of {db} ({', '.join(served)})")
            table = elems[0]
            if table not in served:
                raise not_served(db, table, served)
            if len(elems) == 1:
                return False, copy.deepcopy(tables.get(table, {}))
            key, field = split_key(db, table, elems, style)
            sep = "|" if db == "CONFIG_DB" else ":"
            entry = tables.get(table, {}).get(key)
            if entry is None:
                raise GnmiError(C.NOT_FOUND, f"No valid entry found on {db} with key {table}{sep}{key}", True)
            if field is None:
                return False, dict(entry)
            if field not in entry:
                raise GnmiError(C.NOT_FOUND, f"No valid entry found on {db}: {table}{sep}{key} has no field {field}",
                                True)
            return True, entry[field]

    def _read_counters(self, style, elems):
        if not elems:
            raise invalid_path("COUNTERS_DB", elems, f"name a table ({', '.join(COUNTERS_TABLES)})")
        table, rest = elems[0], elems[1:]
        if table in ("COUNTERS_PORT_NAME_MAP", "COUNTERS_QUEUE_NAME_MAP"):
            names = (self.port_oid if table == "COUNTERS_PORT_NAME_MAP"
                     else {f"{p}:{q}": o for (p, q), o in self.queue_oid.items()})
            if not rest:
                return False, dict(names)
            if len(rest) == 1 and rest[0] in names:
                return True, names[rest[0]]
            if len(rest) == 1:
                raise GnmiError(C.NOT_FOUND, f"No valid entry found on COUNTERS_DB: {table} has no field {rest[0]}",
                                True)
            raise invalid_path("COUNTERS_DB", elems, f"{table} is one hash: {table}[/NAME]")
        if table != "COUNTERS":
            raise not_served("COUNTERS_DB", table, COUNTERS_TABLES)
        if not rest:
            return False, {oid: self.oid_hash(oid) for oid in self.by_oid}
        key = rest[0]
        if key in self.by_oid:
            values = self.oid_hash(key)
            if len(rest) == 1:
                return False, values
            if len(rest) == 2 and rest[1] in values:
                return True, values[rest[1]]
            if len(rest) == 2:
                raise GnmiError(C.NOT_FOUND, f"No valid entry found on COUNTERS_DB: COUNTERS:{key} has no field "
                                             f"{rest[1]}", True)
            raise invalid_path("COUNTERS_DB", elems, "at most COUNTERS/OID/FIELD")
        if key.startswith("Ethernet"):
            if style == PREFIX_TARGET:
                return self._read_virtual(key, rest[1:], elems)
            raise GnmiError(C.NOT_FOUND, f"No valid entry found for path COUNTERS/{'/'.join(rest)}: COUNTERS keys "
                                         "are OIDs (see COUNTERS_PORT_NAME_MAP); port-name paths such as "
                                         "COUNTERS/Ethernet0 are virtual paths of the prefix-target style only")
        raise GnmiError(C.NOT_FOUND, f"No valid entry found on COUNTERS_DB with key COUNTERS:{key}", True)

    def _read_virtual(self, key, rest, elems):
        """sonic-gnmi's virtual paths: ports by their aliases (CONFIG_DB `PORT|<name>` `alias`,
        as sonic-gnmi's `countersPortNameMap` keys them) instead of OIDs, and the Queues and
        Pfcwd groupings. A key ending in * means every port."""
        alias = {p: self.config["PORT"].get(p, {}).get("alias", p) for p in self.ports}
        by_alias = {a: p for p, a in alias.items()}
        wildcard = key.endswith("*")
        if not wildcard and key not in by_alias:
            raise GnmiError(C.NOT_FOUND, f"{key} not a valid sonic interface. Vendor alias is {key}")
        ports = self.ports if wildcard else [by_alias[key]]
        if not rest:
            return False, ({alias[p]: self.port_hash(p) for p in ports} if wildcard
                           else self.port_hash(ports[0]))
        if len(rest) > 1:
            raise invalid_path("COUNTERS_DB", elems, "at most COUNTERS/PORT/FIELD|Queues|Pfcwd")
        what = rest[0]
        if what == "Queues":
            out = {}
            for p in ports:
                for q in QUEUES:
                    out[f"{alias[p]}:{q}"] = self.queue_hash(p, q)
                    out[f"{alias[p]}:{q}:periodic"] = {WATERMARK: str(int(self.queue_stats[(p, q)][WATERMARK]))}
            return False, out
        if what == "Pfcwd":
            return False, {f"{alias[p]}:{q}": self.queue_hash(p, q) for p in ports for q in QUEUES
                           if (p, q) in self.watchdog}
        if wildcard:  # ports without the field are left out, as sonic-gnmi does
            return False, {alias[p]: {what: h[what]} for p in ports for h in [self.port_hash(p)] if what in h}
        values = self.port_hash(ports[0])
        if what not in values:
            raise GnmiError(C.NOT_FOUND, f"No valid entry found on COUNTERS_DB: COUNTERS:{self.port_oid[ports[0]]} "
                                         f"({key}) has no field {what}", True)
        return True, values[what]

    # -- writes

    def apply(self, ops, log):
        """Applies [(op, table, key, field, value)] to a copy of CONFIG_DB,
        validates the whole result, then swaps it in: all or nothing."""
        with self.lock:
            new = copy.deepcopy(self.config)
            for op, table, key, field, value in ops:
                apply_op(new, op, table, key, field, value)
            for table in new:
                new[table] = {k: e for k, e in new[table].items() if e}  # an empty hash does not exist
            errors = validate_config(new, self.ports)
            if errors:
                shown = "; ".join(errors[:5]) + (f"; and {len(errors) - 5} more" if len(errors) > 5 else "")
                # The generic config updater's words (sonic-utilities `generic_updater`), which
                # sonic-gnmi hands back for a native write.
                raise GnmiError(C.INVALID_ARGUMENT, "Failed to apply patch due to: Given patch will produce "
                                                    f"invalid config, nothing applied. Error: {shown}")
            for port in [p for p in self.config.get("PFC_WD", {}) if p not in new.get("PFC_WD", {})]:
                # A DEL: orchagent stops the port's watchdog at once (its handlers end).
                for pq in [pq for pq in self.watchdog if pq[0] == port]:
                    del self.watchdog[pq]
            self.config = new
            self.sets.append(log)
            if self.save_on_set:
                self.startup = copy.deepcopy(new)

    def restart(self, keep_counters):
        with self.lock:
            self.config = copy.deepcopy(self.startup)
            self.restarts += 1
            if keep_counters:
                self.watchdog = {}
            else:
                self.reset_counters()

    def state(self):
        with self.lock:
            return {"config_db": copy.deepcopy(self.config), "appl_db": self.appl_db(),
                    "sets": copy.deepcopy(self.sets), "refused": copy.deepcopy(self.refused),
                    "storms": [{"port": p, "prio": q} for p, q in sorted(self.storms)],
                    "restarts": self.restarts}


def split_key(db, table, elems, style):
    """(key, field or None) of TABLE/KEY[/FIELD]. With a prefix target a
    two-part key may also come as two elements (QUEUE/Ethernet0/3), as
    sonic-gnmi's DbClient tries; with origin sonic-db the key is one element."""
    rest = elems[1:]
    parts = CONFIG_SCHEMA[table][2] if db == "CONFIG_DB" else 1
    if style == PREFIX_TARGET and parts > 1 and "|" not in rest[0] and len(rest) >= parts:
        key, rest = "|".join(rest[:parts]), rest[parts:]
    else:
        key, rest = rest[0], rest[1:]
    if parts > 1 and key.count("|") != parts - 1:
        raise invalid_path(db, elems, f"{table} keys have {parts} parts, such as Ethernet0|3")
    if len(rest) > 1:
        raise invalid_path(db, elems, "at most TABLE/KEY/FIELD")
    return key, (rest[0] if rest else None)


def scalar(value, where):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return str(int(value))
    if isinstance(value, (str, float)):
        return str(value)
    raise GnmiError(C.INVALID_ARGUMENT, f"{where}: a field takes a string or number, not {json.dumps(value)}")


def entry_fields(value, where):
    if not isinstance(value, dict):
        raise GnmiError(C.INVALID_ARGUMENT, f"{where}: an entry takes a JSON object of fields, not "
                                            f"{json.dumps(value)}")
    return {f: scalar(v, f"{where}/{f}") for f, v in value.items()}


def apply_op(cfg, op, table, key, field, value):
    tbl, where = cfg.setdefault(table, {}), "/".join(x for x in ("CONFIG_DB", table, key, field) if x)
    if op == "delete":
        if key is None:
            tbl.clear()
        elif field is None:
            tbl.pop(key, None)
        else:
            tbl.get(key, {}).pop(field, None)
    elif key is None:
        if not isinstance(value, dict):
            raise GnmiError(C.INVALID_ARGUMENT, f"{where}: a table takes a JSON object of entries")
        entries = {k: entry_fields(v, f"{where}/{k}") for k, v in value.items()}
        if op == "replace":
            tbl.clear()
        for k, fields in entries.items():
            tbl.setdefault(k, {}).update(fields)
    elif field is None:
        fields = entry_fields(value, where)
        if op == "replace":
            tbl[key] = fields
        else:
            tbl.setdefault(key, {}).update(fields)
    else:
        tbl.setdefault(key, {})[field] = scalar(value, where)


# ---------------------------------------------------------------- gNMI service

def names(path):
    """The element names of a path; sonic-gnmi turns a {key: V} selector into
    one more element V and takes no other keys."""
    if not path.elem:
        return list(path.element)  # the deprecated string form
    out = []
    for e in path.elem:
        out.append(e.name)
        keys = dict(e.key)
        if keys and set(keys) != {"key"}:
            raise GnmiError(C.INVALID_ARGUMENT, f"path element {e.name} has keys {keys}: SONiC DB paths take "
                                                "none (or only {key: NAME})")
        if keys:
            out.append(keys["key"])
    return out


def go_path(path):
    """Go's %v of a *gnmipb.Path, as sonic-gnmi prints one in its errors:
    origin, each element with its keys sorted, target."""
    quote = json.dumps
    parts = [f"origin:{quote(path.origin)}"] if path.origin else []
    for e in path.elem:
        inner = [f"name:{quote(e.name)}"] + [f"key:{{key:{quote(k)} value:{quote(v)}}}" for k, v in sorted(e.key.items())]
        parts.append("elem:{" + " ".join(inner) + "}")
    if path.target:
        parts.append(f"target:{quote(path.target)}")
    return " ".join(parts)


def echo(path):
    """A request's path as it goes back in a response: a target belongs only
    in a prefix (gNMI 2.2.2.1)."""
    out = pb.Path()
    out.CopyFrom(path)
    out.target = ""
    return out


def go_duration(ns):
    """How Go prints a time.Duration, as sonic-gnmi's messages do."""
    for unit, size in (("s", 10**9), ("ms", 10**6), ("µs", 10**3)):
        if ns >= size:
            return f"{ns / size:g}{unit}"
    return f"{ns}ns"


class Route:
    def __init__(self, style, db, elems):
        self.style, self.db, self.elems = style, db, elems


class Sub:
    def __init__(self, path, elems, mode, interval, heartbeat, suppress):
        self.path, self.elems, self.mode = path, elems, mode
        self.interval, self.heartbeat, self.suppress = interval, heartbeat, suppress
        self.last, self.last_sent, self.due = None, 0.0, 0.0


class Gnmi(pb_grpc.gNMIServicer):
    def __init__(self, switch, args):
        self.switch, self.styles = switch, set(args.styles)
        self.instance, self.leaf_values = args.sonic_db_instance, args.leaf_values
        self.sonic_codes, self.json_ietf_only = args.error_codes == "sonic-gnmi", args.json_ietf_only
        self.min_interval = args.min_sample_interval_ms * 10**6
        self.credentials = (args.username, args.password) if args.username is not None else None
        self.epoch = 0  # bumped by a restart; streams of an older epoch end

    def auth(self, context):
        if self.credentials is None:
            return
        md = dict(context.invocation_metadata())
        if (md.get("username"), md.get("password")) != self.credentials:
            raise GnmiError(C.UNAUTHENTICATED, "Unauthenticated")

    def route(self, prefix, paths, rpc):
        """Which database a request addresses and each path's elements after
        it. See the module doc for the rules."""
        origins = {p.origin for p in paths if p.origin}
        if len(origins) > 1:
            raise GnmiError(C.UNIMPLEMENTED, "Origin conflict in path")
        origin = prefix.origin
        if origin and origins and origins != {origin}:
            raise GnmiError(C.INVALID_ARGUMENT, "Origin conflict between prefix and paths")
        origin = origin or (origins.pop() if origins else "")
        target = prefix.target
        db, _, namespace = target.partition("/")
        if target and db in SONIC_DBS:
            if origin == "sonic-db":
                raise GnmiError(C.INVALID_ARGUMENT, f"the prefix target {target!r} and origin sonic-db both select a "
                                                    "database: use one or the other")
            if origin:
                raise GnmiError(C.UNIMPLEMENTED, f"Unsupported origin: {origin}")
            if PREFIX_TARGET not in self.styles:
                raise GnmiError(C.UNIMPLEMENTED, f"the database is not selected by prefix target ({target}) on this "
                                                 "target (--styles sonic-db-origin): use origin sonic-db with the "
                                                 "database as the first path element")
            if namespace and namespace != "localhost":
                raise GnmiError(C.NOT_FOUND, f"Invalid target dbNameSpace {namespace}: a single-ASIC switch")
            if db not in SERVED_DBS:
                raise GnmiError(C.NOT_FOUND, f"database {db} is not served by this target "
                                             f"(served: {', '.join(SERVED_DBS)})")
            base = names(prefix)
            return Route(PREFIX_TARGET, db, [base + names(p) for p in paths])
        if origin == "sonic-db":
            if SONIC_DB not in self.styles:
                raise GnmiError(C.UNIMPLEMENTED, "Unsupported origin: sonic-db (this target selects the database "
                                                 "by prefix target only: --styles prefix-target)")
            return self.route_sonic_db(prefix, paths)
        if origin:
            raise GnmiError(C.UNIMPLEMENTED, f"Unsupported origin: {origin}")
        if target:
            raise GnmiError(C.NOT_FOUND, f"Invalid target dbName {db}: a SONiC target names a database in the "
                                         f"prefix target ({', '.join(SERVED_DBS)} here)")
        hint = (" A target set in a path rather than the prefix is ignored (gNMI 2.2.2.1)."
                if any(p.target for p in paths) else "")
        styles = " or ".join(["the database as the prefix target (COUNTERS_DB, CONFIG_DB, APPL_DB)"] * (
            PREFIX_TARGET in self.styles) + ["origin sonic-db with the database as the first element"] * (
            SONIC_DB in self.styles))
        first = "Empty target data not supported" if rpc == "Subscribe" else "no database selected"
        code = C.UNIMPLEMENTED if rpc == "Subscribe" else C.NOT_FOUND
        raise GnmiError(code, f"{first}: give {styles}.{hint}")

    def route_sonic_db(self, prefix, paths):
        base, db, out = names(prefix), None, []
        for p in paths:
            full = base + names(p)
            if not full:
                raise GnmiError(C.UNIMPLEMENTED, "No target specified in path")
            if db is not None and full[0] != db:
                raise GnmiError(C.UNIMPLEMENTED, "Target conflict in path")
            db, rest = full[0], full[1:]
            first = rest[0] if rest else ""
            is_instance = first == "localhost" or re.fullmatch(r"(asic|dpu)[0-9]+", first)
            if self.instance != "absent" and is_instance:
                if first != "localhost":
                    raise GnmiError(C.NOT_FOUND, f"Unsupported namespace/container {first}: this single-ASIC "
                                                 "switch has only localhost")
                rest = rest[1:]
            elif self.instance == "required":
                raise GnmiError(C.NOT_FOUND, f"sonic-db path /{'/'.join(full)}: the second element must be the "
                                             "database instance, as in /CONFIG_DB/localhost/TABLE/KEY/FIELD "
                                             "(sonic-gnmi's path schema since 2024)")
            out.append(rest)
        if db not in SONIC_DBS:
            raise GnmiError(C.NOT_FOUND, f"Invalid target: {db} is not a SONiC database")
        if db not in SERVED_DBS:
            raise GnmiError(C.NOT_FOUND, f"database {db} is not served by this target "
                                         f"(served: {', '.join(SERVED_DBS)})")
        return Route(SONIC_DB, db, out)

    def typed(self, route, leaf, value):
        if leaf and route.style == PREFIX_TARGET and self.leaf_values == "sonic":
            return pb.TypedValue(string_val=value)
        body = json.dumps(value, sort_keys=True, separators=(",", ":"))
        return pb.TypedValue(json_ietf_val=body.encode())

    @staticmethod
    def check_encoding(encoding):
        if encoding not in (pb.JSON, pb.JSON_IETF):
            raise GnmiError(C.UNIMPLEMENTED, f"unsupported encoding: {pb.Encoding.Name(encoding)}")

    # -- RPCs

    def Capabilities(self, request, context):
        try:
            self.auth(context)
        except GnmiError as e:
            context.abort(e.code, e.message)
        models = [pb.ModelData(name=n, organization="SONiC", version="0.1.0")
                  for n in ("sonic-port", "sonic-pfcwd", "sonic-wred-profile", "sonic-queue")]
        if SONIC_DB in self.styles:
            models.insert(0, pb.ModelData(name="sonic-db", organization="SONiC", version="0.1.0"))
        return pb.CapabilityResponse(supported_models=models, supported_encodings=[pb.JSON, pb.JSON_IETF],
                                     gNMI_version="0.7.0")

    def Get(self, request, context):
        try:
            self.auth(context)
            if request.type != pb.GetRequest.ALL:
                raise GnmiError(C.UNIMPLEMENTED,
                                f"unsupported request type: {pb.GetRequest.DataType.Name(request.type)}")
            self.check_encoding(request.encoding)
            paths = list(request.path) or [pb.Path()]
            route = self.route(request.prefix, paths, "Get")
            if route.style == SONIC_DB and request.encoding != pb.JSON_IETF:
                raise GnmiError(C.UNIMPLEMENTED, f"Unknown encoding {pb.Encoding.Name(request.encoding)}: origin "
                                                 "sonic-db answers JSON_IETF only")
            now, prefix = time.time_ns(), request.prefix if request.HasField("prefix") else None
            notifications = []
            for path, elems in zip(paths, route.elems):
                try:
                    leaf, value = self.switch.read(route.db, route.style, elems)
                except GnmiError as e:
                    # sonic-gnmi's mixed-db client names a missing entry by the request's path
                    # (Go's %v of it), not by the table and key as its DbClient does.
                    if route.style == SONIC_DB and e.missing and " with key " in e.message:
                        raise GnmiError(C.NOT_FOUND, f"No valid entry found for path {go_path(path)}", True)
                    raise
                update = pb.Update(path=echo(path), val=self.typed(route, leaf, value))
                notifications.append(pb.Notification(timestamp=now, prefix=prefix, update=[update]))
            return pb.GetResponse(notification=notifications)
        except GnmiError as e:
            context.abort(e.code, e.message)

    def Set(self, request, context):
        ops_log = []
        try:
            self.auth(context)
            if request.union_replace:
                raise GnmiError(C.UNIMPLEMENTED, "union_replace is not supported by this target")
            work = ([("delete", p, None) for p in request.delete] +
                    [("replace", u.path, u.val) for u in request.replace] +
                    [("update", u.path, u.val) for u in request.update])
            prefix = request.prefix if request.HasField("prefix") else None
            if not work:
                return pb.SetResponse(prefix=prefix, timestamp=time.time_ns())
            route = self.route(request.prefix, [p for _, p, _ in work], "Set")
            if route.db != "CONFIG_DB":
                raise self.set_error(f"Set RPC does not support {route.db}: only CONFIG_DB is writable")
            ops = []
            for (op, path, val), elems in zip(work, route.elems):
                if not elems:
                    raise GnmiError(C.UNIMPLEMENTED, "a Set of the whole CONFIG_DB is not supported by this target")
                if elems[0] not in CONFIG_SCHEMA:
                    raise not_served("CONFIG_DB", elems[0], tuple(CONFIG_SCHEMA))
                key, field = split_key("CONFIG_DB", elems[0], elems, route.style) if len(elems) > 1 else (None, None)
                where = "/" + "/".join(["CONFIG_DB"] + elems)
                value = None if op == "delete" else self.decode(val, where)
                ops.append((op, elems[0], key, field, value))
                ops_log.append({"op": op, "path": where, "value": value})
            log = {"time_ns": time.time_ns(), "style": route.style, "ops": ops_log}
            try:
                self.switch.apply(ops, log)
            except GnmiError as e:
                raise self.set_error(e.message)
            print(f"sonic_target: Set applied: {json.dumps(ops_log)}", file=sys.stderr, flush=True)
            results = [pb.UpdateResult(path=echo(p), op=pb.UpdateResult.Operation.Value(op.upper()))
                       for op, p, _ in work]
            return pb.SetResponse(prefix=prefix, response=results, timestamp=time.time_ns())
        except GnmiError as e:
            with self.switch.lock:
                self.switch.refused.append({"time_ns": time.time_ns(), "code": e.code.name, "message": e.message,
                                            "ops": ops_log})
            print(f"sonic_target: Set refused: {e.code.name} {e.message}", file=sys.stderr, flush=True)
            context.abort(e.code, e.message)

    def set_error(self, message):
        """sonic-gnmi hands back its write backend's errors as plain Go errors,
        which gRPC sends as UNKNOWN; the spec wants INVALID_ARGUMENT."""
        return GnmiError(C.UNKNOWN if self.sonic_codes else C.INVALID_ARGUMENT, message)

    def decode(self, val, where):
        kind = val.WhichOneof("value")
        if kind in ("json_ietf_val", "json_val") and not (kind == "json_val" and self.json_ietf_only):
            try:
                return json.loads(getattr(val, kind))
            except ValueError as e:
                raise self.set_error(f"{where}: {kind} is not valid JSON ({e}): {getattr(val, kind)[:80]!r}")
        if kind in ("string_val", "ascii_val") and not self.json_ietf_only:
            return getattr(val, kind)
        wanted = "json_ietf_val" if self.json_ietf_only else "json_ietf_val, json_val or string_val"
        raise self.set_error(f"{where}: Unsupported TypedValue {kind}: send {wanted}")

    def Subscribe(self, request_iterator, context):
        try:
            yield from self.subscribe(request_iterator, context)
        except GnmiError as e:
            context.abort(e.code, e.message)

    def subscribe(self, requests, context):
        self.auth(context)
        epoch = self.epoch
        first = next(requests, None)
        if first is None:
            raise GnmiError(C.ABORTED, "stream EOF received before init")
        if not first.HasField("subscribe"):
            raise GnmiError(C.INVALID_ARGUMENT, "first message must be SubscriptionList")
        sl = first.subscribe
        if not sl.subscription:
            raise GnmiError(C.NOT_FOUND, "Invalid subscription path: No Subscription")
        self.check_encoding(sl.encoding)
        route = self.route(sl.prefix, [s.path for s in sl.subscription], "Subscribe")
        subs = []
        for s, elems in zip(sl.subscription, route.elems):
            try:  # a table or port that does not exist refuses the stream; a key may appear later
                self.switch.read(route.db, route.style, elems)
            except GnmiError as e:
                if not e.missing:
                    raise
            interval = 0
            if sl.mode == pb.SubscriptionList.STREAM:
                if s.mode == pb.SAMPLE:
                    interval = s.sample_interval or self.min_interval
                    if interval < self.min_interval:
                        raise GnmiError(C.INVALID_ARGUMENT, f"invalid interval: {go_duration(interval)}. It cannot "
                                                            f"be less than {go_duration(self.min_interval)}")
                elif s.mode != pb.ON_CHANGE:
                    raise GnmiError(C.INVALID_ARGUMENT, f"unsupported subscription mode, "
                                                        f"{pb.SubscriptionMode.Name(s.mode)}: this target, like "
                                                        "sonic-gnmi, takes SAMPLE or ON_CHANGE")
            subs.append(Sub(echo(s.path), elems, s.mode, interval / 1e9, s.heartbeat_interval / 1e9,
                            s.suppress_redundant))
        prefix = sl.prefix if sl.HasField("prefix") else None
        polls, state = queue.Queue(), {"closed": False, "error": None}

        def reader():  # Poll messages and the client's half-close
            try:
                for req in requests:
                    if req.HasField("poll") and sl.mode == pb.SubscriptionList.POLL:
                        polls.put(True)
                    else:
                        state["error"] = "after the SubscriptionList only Poll messages are valid, in POLL mode"
                        break
            except Exception:  # the RPC ended under us
                pass
            finally:
                state["closed"] = True
                polls.put(None)

        threading.Thread(target=reader, daemon=True).start()

        def sample(sub):
            try:
                leaf, value = self.switch.read(route.db, route.style, sub.elems)
            except GnmiError as e:
                if e.missing:
                    return None
                raise
            return self.typed(route, leaf, value)

        def update(sub, tv):
            n = pb.Notification(timestamp=time.time_ns(), prefix=prefix, update=[pb.Update(path=sub.path, val=tv)])
            return pb.SubscribeResponse(update=n)

        def check_alive():
            if state["error"]:
                raise GnmiError(C.INVALID_ARGUMENT, state["error"])
            if self.epoch != epoch:
                raise GnmiError(C.UNAVAILABLE, "the switch restarted: subscribe again")
            return context.is_active() and not state["closed"]

        sync = pb.SubscribeResponse(sync_response=True)
        now = time.monotonic()
        for sub in subs:
            tv = sample(sub)
            sub.last, sub.last_sent, sub.due = tv, now, now + sub.interval
            if tv is not None and not (sl.updates_only and sl.mode == pb.SubscriptionList.STREAM):
                yield update(sub, tv)
        yield sync
        if sl.mode == pb.SubscriptionList.ONCE:
            return
        while check_alive():
            if sl.mode == pb.SubscriptionList.POLL:
                try:
                    if polls.get(timeout=TICK) is None:
                        continue
                except queue.Empty:
                    continue
                for sub in subs:
                    tv = sample(sub)
                    if tv is not None:
                        yield update(sub, tv)
                yield sync
                continue
            now = time.monotonic()
            for sub in subs:
                heartbeat = sub.heartbeat and now - sub.last_sent >= sub.heartbeat
                if sub.mode == pb.SAMPLE:
                    if now < sub.due:
                        continue
                    sub.due = sub.due + sub.interval if sub.due + sub.interval > now else now + sub.interval
                    tv = sample(sub)
                    if tv is None or (sub.suppress and tv == sub.last and not heartbeat):
                        continue
                else:
                    tv = sample(sub)
                    if tv is None and sub.last is not None:  # the key went away: say so (gNMI 3.5.2.3)
                        sub.last, sub.last_sent = None, now
                        n = pb.Notification(timestamp=time.time_ns(), prefix=prefix, delete=[sub.path])
                        yield pb.SubscribeResponse(update=n)
                        continue
                    if tv is None or (tv == sub.last and not heartbeat):
                        continue
                sub.last, sub.last_sent = tv, now
                yield update(sub, tv)
            due = min([s.due for s in subs if s.mode == pb.SAMPLE] + [now + TICK])
            time.sleep(min(TICK, max(0.005, due - time.monotonic())))


# ---------------------------------------------------------------- servers

class Frontend:
    """The gRPC server, which a simulated reboot closes and reopens on the
    same port."""

    def __init__(self, servicer, host, port):
        self.servicer, self.host, self.server = servicer, host, None
        self.port = self.start(port)

    def start(self, port):
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=MAX_RPCS), maximum_concurrent_rpcs=MAX_RPCS)
        pb_grpc.add_gNMIServicer_to_server(self.servicer, server)
        bound = server.add_insecure_port(f"{self.host}:{port}")
        if not bound:
            raise RuntimeError(f"cannot listen on {self.host}:{port}")
        server.start()
        self.server = server
        return bound

    def restart(self, down_s):
        self.servicer.epoch += 1
        self.server.stop(grace=None).wait()
        time.sleep(down_s)
        self.start(self.port)


def control_handler(switch, frontend):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, fmt, *args):
            print("sonic_target: control: " + fmt % args, file=sys.stderr, flush=True)

        def reply(self, status, body):
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/state":
                self.reply(200, switch.state())
            else:
                self.reply(404, {"error": f"no GET {self.path}: try /state"})

        def do_POST(self):
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not isinstance(body, dict):
                    raise ValueError("the body must be a JSON object")
                self.reply(200, self.post(body))
            except KeyError as e:
                self.reply(400, {"error": f"the body lacks {e}"})
            except (ValueError, TypeError) as e:
                self.reply(400, {"error": str(e)})

        def port_of(self, body):
            port = body["port"]
            if port not in switch.link_up:
                raise ValueError(f"unknown port {port!r} ({switch.ports[0]}..{switch.ports[-1]})")
            return port

        def post(self, body):
            if self.path == "/storm":
                port, prio, on = self.port_of(body), body["prio"], body.get("on", True)
                if not isinstance(prio, int) or prio not in QUEUES or not isinstance(on, bool):
                    raise ValueError("prio must be 0..7 and on true or false")
                with switch.lock:
                    switch.tick()
                    if on:
                        switch.storms.setdefault((port, prio), time.monotonic())
                    else:
                        switch.storms.pop((port, prio), None)
                return {"ok": True}
            if self.path == "/link":
                port, up = self.port_of(body), body["up"]
                if not isinstance(up, bool):
                    raise ValueError("up must be true or false")
                with switch.lock:
                    switch.tick()
                    switch.link_up[port] = up
                return {"ok": True}
            if self.path == "/restart":
                down_ms = body.get("down_ms", 0)
                if not isinstance(down_ms, int) or not 0 <= down_ms <= 60_000:
                    raise ValueError("down_ms must be 0..60000")
                switch.restart(bool(body.get("keep_counters", False)))
                frontend.restart(down_ms / 1000)
                print("sonic_target: restarted (CONFIG_DB back to the startup config)", file=sys.stderr, flush=True)
                return {"ok": True, "restarts": switch.restarts}
            if self.path == "/save":
                with switch.lock:
                    switch.startup = copy.deepcopy(switch.config)
                return {"ok": True}
            raise ValueError(f"no POST {self.path}: try /storm, /link, /restart, /save")

    return Handler


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="gNMI port; 0 picks a free one (printed)")
    parser.add_argument("--control-port", type=int, default=0, help="HTTP control port; 0 picks one (printed)")
    parser.add_argument("--ports", type=int, default=8, help="switch ports Ethernet0, Ethernet4, ...")
    parser.add_argument("--styles", default=f"{PREFIX_TARGET},{SONIC_DB}",
                        type=lambda s: [x for x in s.split(",") if x],
                        help="how a request may select its database: prefix-target, sonic-db-origin")
    parser.add_argument("--sonic-db-instance", choices=("optional", "required", "absent"), default="required",
                        help="the localhost element after the database in sonic-db paths: optional; required "
                             "(sonic-gnmi since 2024); absent (before)")
    parser.add_argument("--leaf-values", choices=("sonic", "json_ietf"), default="sonic",
                        help="sonic: leaves read by prefix target are string_val, as sonic-gnmi sends them")
    parser.add_argument("--error-codes", choices=("spec", "sonic-gnmi"), default="sonic-gnmi",
                        help="sonic-gnmi: a refused Set is UNKNOWN, as sonic-gnmi sends it; spec: INVALID_ARGUMENT")
    parser.add_argument("--json-ietf-only", action=argparse.BooleanOptionalAction, default=True,
                        help="Set takes json_ietf_val only, as sonic-gnmi's sonic-db writes do")
    parser.add_argument("--min-sample-interval-ms", type=int, default=1000, help="sonic-gnmi's is 1000")
    parser.add_argument("--asic", choices=tuple(ASIC_PFC_COUNTERS), default="mellanox",
                        help="whose PFC counters syncd writes: mellanox (pause duration in us), marvell "
                             "(pause duration in quanta), broadcom (none; ON2OFF and the queue's pause status)")
    parser.add_argument("--save-on-set", action="store_true",
                        help="every Set also saves the startup config (sonic-gnmi's sonic-db writes do)")
    parser.add_argument("--pfcwd-action", choices=("drop", "forward", "alert"), default="alert")
    parser.add_argument("--username")
    parser.add_argument("--password")
    parser.add_argument("--seed", type=int, default=1, help="of the watermark noise")
    args = parser.parse_args()
    bad = set(args.styles) - {PREFIX_TARGET, SONIC_DB}
    if bad or not args.styles or args.ports < 1 or (args.username is None) != (args.password is None):
        parser.error(f"--styles takes {PREFIX_TARGET},{SONIC_DB}; --ports >= 1; --username with --password")

    switch = Switch(args.ports, args.pfcwd_action, args.seed, args.save_on_set, args.asic)
    frontend = Frontend(Gnmi(switch, args), args.host, args.port)
    control = http.server.ThreadingHTTPServer((args.host, args.control_port), control_handler(switch, frontend))
    control.daemon_threads = True
    threading.Thread(target=control.serve_forever, daemon=True).start()
    print(f"gnmi {args.host}:{frontend.port}", flush=True)
    print(f"control {args.host}:{control.server_address[1]}", flush=True)

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(TICK):
        switch.tick()
    frontend.server.stop(grace=None)
    control.shutdown()


if __name__ == "__main__":
    main()
