#!/usr/bin/env python3
"""Self-check of sonic_target.py, with pygnmi as the client (not rocemend).

Starts the target (four times, with different flags), then checks
Capabilities, Get by prefix target (virtual paths keyed by alias) and by
origin sonic-db (with the instance element), Set and its refusals (UNKNOWN,
as sonic-gnmi sends them), the PFC storm physics and the watchdog as
orchagent runs it, Subscribe in every mode (never faster than 1 s), the
simulated restart, and the Broadcom counter set. Prints PASS or FAIL per
check; exits 1 when any fails.

    /tmp/rocemend-ci-venv/bin/python tests/interop/test_target.py

The raw requests pygnmi's API cannot express (a target inside a path, a
TARGET_DEFINED subscription) are built with pygnmi's own generated stubs.
"""

import json
import logging
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

os.environ.setdefault("GRPC_VERBOSITY", "ERROR")  # not grpc's INFO lines about the restart's GOAWAY

import grpc  # noqa: E402 (after the environment it reads)
from pygnmi.client import gNMIclient  # noqa: E402
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PFCWD_E0 = "sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet0"
# What sonic-gnmi answers a refused Set with: its write backend's error as a plain Go error.
REFUSED = grpc.StatusCode.UNKNOWN


def alias(port):
    """The alias sonic_target.py gives `port` (Ethernet0 → etp1, Ethernet4 → etp2, …)."""
    return f"etp{int(port[len('Ethernet'):]) // 4 + 1}"


class Target:
    """sonic_target.py as a child process on free ports."""

    def __init__(self, *flags):
        self.log = tempfile.TemporaryFile(mode="w+")
        cmd = [sys.executable, os.path.join(HERE, "sonic_target.py"), "--port", "0", "--control-port", "0", *flags]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self.log, text=True)
        lines = queue.Queue()
        threading.Thread(target=lambda: [lines.put(line) for line in self.proc.stdout], daemon=True).start()
        found = {}
        while len(found) < 2:
            try:
                what, address = lines.get(timeout=20).split()
            except queue.Empty:
                self.close()
                raise RuntimeError(f"sonic_target.py did not print its ports: {self.stderr()}")
            found[what] = address
        self.address, self.control = found["gnmi"], found["control"]
        self.host, self.port = self.address.rsplit(":", 1)

    def client(self, **kw):
        return gNMIclient(target=(self.host, int(self.port)), insecure=True, gnmi_timeout=10, **kw)

    def stub(self):
        return gnmi_pb2_grpc.gNMIStub(grpc.insecure_channel(self.address))

    def http(self, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://{self.control}{path}", data=data, method="GET" if data is None
                                         else "POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as reply:
            return json.load(reply)

    def stderr(self):
        self.log.seek(0)
        return self.log.read()[-3000:]

    def close(self):
        self.proc.kill()
        self.proc.wait()


def value(response):
    return response["notification"][0]["update"][0]["val"]


def grpc_error(action):
    """The (code, details) an action fails with; AssertionError if it succeeds."""
    try:
        got = action()
    except Exception as error:  # pygnmi wraps the gRPC error; raw stubs raise it
        cause = getattr(error, "orig_exc", error)
        if isinstance(cause, grpc.RpcError):
            return cause.code(), cause.details()
        raise
    raise AssertionError(f"expected a gRPC error, got {got!r}")


def expect_error(action, code, *words):
    got_code, details = grpc_error(action)
    assert got_code == code, f"expected {code}, got {got_code}: {details}"
    for word in words:
        assert word in details, f"expected {word!r} in the message: {details}"
    return details


def wait_for(what, predicate, timeout=5.0):
    deadline = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class Checks:
    def __init__(self, main, strict, prefix_only, broadcom):
        self.t, self.strict, self.prefix_only, self.broadcom = main, strict, prefix_only, broadcom
        self.gc = main.client().__enter__()

    def get(self, path, target=None, encoding="json_ietf"):
        return value(self.gc.get(path=[path], target=target, encoding=encoding))

    def counter(self, port, field):
        # A virtual path names one port by its alias, and `etpN` is not a port sonic-gnmi's
        # `Ethernet*` patterns take: one port's counter is read through the wildcard.
        return int(self.get(f"COUNTERS/Ethernet*/{field}", "COUNTERS_DB")[alias(port)][field])

    def pfcwd(self, port, queue):
        # A queue is listed from the watchdog's start on (the next poll after its entry is written).
        return self.get("COUNTERS/Ethernet*/Pfcwd", "COUNTERS_DB").get(f"{alias(port)}:{queue}", {})

    # -- Capabilities and Get

    def capabilities(self):
        caps = self.gc.capabilities()
        assert caps["gnmi_version"] == "0.7.0", caps
        assert {"json", "json_ietf"} <= set(caps["supported_encodings"]), caps
        names = [m["name"] for m in caps["supported_models"]]
        assert "sonic-db" in names and "sonic-pfcwd" in names, names

    def get_counters_by_prefix_target(self):
        entry = self.get("COUNTERS/Ethernet*", "COUNTERS_DB")["etp1"]
        for field in ("SAI_PORT_STAT_IF_IN_OCTETS", "SAI_PORT_STAT_IF_OUT_DISCARDS", "SAI_PORT_STAT_PFC_3_RX_PKTS",
                      "SAI_PORT_STAT_PFC_7_TX_PAUSE_DURATION_US"):
            assert isinstance(entry.get(field), str) and entry[field].isdigit(), (field, entry.get(field))
        raw = self.t.stub().Get(gnmi_pb2.GetRequest(
            prefix=gnmi_pb2.Path(target="COUNTERS_DB"), encoding=gnmi_pb2.JSON_IETF,
            path=[gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name=n) for n in
                                      ("COUNTERS_PORT_NAME_MAP", "Ethernet4")])]), timeout=10)
        note = raw.notification[0]
        assert note.prefix.target == "COUNTERS_DB" and note.timestamp > 1.6e18, note
        assert note.update[0].val.WhichOneof("value") == "string_val", note.update[0].val
        ports = self.get("COUNTERS/Ethernet*", "COUNTERS_DB")
        assert sorted(ports) == sorted(f"etp{i + 1}" for i in range(8)), sorted(ports)
        expect_error(lambda: self.get("COUNTERS/Ethernet4", "COUNTERS_DB"), grpc.StatusCode.NOT_FOUND,
                     "Ethernet4 not a valid sonic interface")
        queues = self.get("COUNTERS/Ethernet*/Queues", "COUNTERS_DB")
        q3 = queues["etp8:3"]
        for field in ("SAI_QUEUE_STAT_PACKETS", "SAI_QUEUE_STAT_BYTES", "SAI_QUEUE_STAT_DROPPED_PACKETS",
                      "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES", "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"):
            assert field in q3, (field, q3)
        assert "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES" in queues["etp8:3:periodic"]
        pfcwd = self.get("COUNTERS/Ethernet*/Pfcwd", "COUNTERS_DB")
        assert sorted(pfcwd) == sorted(f"etp{i + 1}:{q}" for i in range(8) for q in (3, 4)), sorted(pfcwd)
        assert pfcwd["etp1:3"]["PFC_WD_STATUS"] == "operational", pfcwd["etp1:3"]

    def counters_move(self):
        first = self.counter("Ethernet0", "SAI_PORT_STAT_IF_IN_OCTETS")
        time.sleep(0.35)
        second = self.counter("Ethernet0", "SAI_PORT_STAT_IF_IN_OCTETS")
        assert second > first, (first, second)
        assert self.counter("Ethernet0", "SAI_PORT_STAT_IF_IN_ERRORS") == 0

    def target_in_a_path_is_ignored(self):
        path = gnmi_pb2.Path(target="COUNTERS_DB", elem=[gnmi_pb2.PathElem(name="COUNTERS"),
                                                         gnmi_pb2.PathElem(name="Ethernet0")])
        stub = self.t.stub()
        expect_error(lambda: stub.Get(gnmi_pb2.GetRequest(path=[path], encoding=gnmi_pb2.JSON_IETF), timeout=10),
                     grpc.StatusCode.NOT_FOUND, "no database selected", "2.2.2.1")
        sub = gnmi_pb2.SubscribeRequest(subscribe=gnmi_pb2.SubscriptionList(
            mode=gnmi_pb2.SubscriptionList.ONCE, subscription=[gnmi_pb2.Subscription(path=path)]))
        expect_error(lambda: list(stub.Subscribe(iter([sub]), timeout=10)), grpc.StatusCode.UNIMPLEMENTED,
                     "Empty target data not supported", "2.2.2.1")

    def get_refusals_tell_missing_from_not_served(self):
        expect_error(lambda: self.get("PFC_WD/Ethernet99", "CONFIG_DB"), grpc.StatusCode.NOT_FOUND,
                     "No valid entry found on CONFIG_DB with key PFC_WD|Ethernet99")
        expect_error(lambda: self.get(f"{PFCWD_E0}/no_such_field"), grpc.StatusCode.NOT_FOUND, "has no field")
        expect_error(lambda: self.get("BUFFER_PROFILE/x", "CONFIG_DB"), grpc.StatusCode.NOT_FOUND,
                     "table BUFFER_PROFILE is not served")
        expect_error(lambda: self.get("X/y", "STATE_DB"), grpc.StatusCode.NOT_FOUND, "database STATE_DB is not served")
        expect_error(lambda: self.get("COUNTERS/Ethernet99", "COUNTERS_DB"), grpc.StatusCode.NOT_FOUND,
                     "Ethernet99 not a valid sonic interface")
        expect_error(lambda: self.get("sonic-db:/COUNTERS_DB/localhost/COUNTERS/Ethernet0"),
                     grpc.StatusCode.NOT_FOUND, "virtual paths of the prefix-target style")
        expect_error(lambda: self.get(PFCWD_E0, encoding="json"), grpc.StatusCode.UNIMPLEMENTED, "JSON_IETF only")

    # -- Set

    def set_pfcwd_and_read_back(self):
        reply = self.gc.set(update=[(f"{PFCWD_E0}/action", json.dumps("drop"))], encoding="json_ietf")
        assert [r["op"] for r in reply["response"]] == ["UPDATE"], reply
        assert self.get("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet0/action") == "drop"
        assert self.get("PFC_WD/Ethernet0/action", "CONFIG_DB") == "drop"
        assert self.get("PFC_WD/Ethernet0", "CONFIG_DB")["detection_time"] == "400"
        last = self.t.http("/state")["sets"][-1]
        assert last["ops"] == [{"op": "update", "path": "/CONFIG_DB/PFC_WD/Ethernet0/action", "value": "drop"}], last
        # An entry-level replace drops the fields it does not name.
        self.gc.set(replace=[(PFCWD_E0, {"action": "forward", "detection_time": "300"})], encoding="json_ietf")
        assert self.get(PFCWD_E0) == {"action": "forward", "detection_time": "300"}
        self.gc.set(replace=[(PFCWD_E0, {"action": "alert", "detection_time": "400", "restoration_time": "400"})],
                    encoding="json_ietf")

    def set_is_atomic(self):
        before = self.t.http("/state")["config_db"]
        expect_error(lambda: self.gc.set(update=[(f"{PFCWD_E0}/action", json.dumps("forward")),
                                                 (f"{PFCWD_E0}/detection_time", "50")], encoding="json_ietf"),
                     REFUSED, "detection_time '50' is out of range 100..5000",
                     "nothing applied")
        state = self.t.http("/state")
        assert state["config_db"] == before, "a refused Set changed CONFIG_DB"
        assert "out of range" in state["refused"][-1]["message"], state["refused"][-1]

    def set_validates_like_yang(self):
        wred = "sonic-db:/CONFIG_DB/localhost/WRED_PROFILE/AZURE_LOSSLESS"
        expect_error(lambda: self.gc.set(update=[(f"{wred}/green_max_threshold", "1000")], encoding="json_ietf"),
                     REFUSED, "green_max_threshold 1000 is below green_min_threshold")
        expect_error(lambda: self.gc.set(update=[(f"{wred}/ecn", json.dumps("ecn_blue"))], encoding="json_ietf"),
                     REFUSED, "is not one of ecn_none")
        expect_error(lambda: self.gc.set(update=[(f"{wred}/green_drop_probability", "101")], encoding="json_ietf"),
                     REFUSED, "out of range 0..100")
        expect_error(lambda: self.gc.set(delete=[wred], encoding="json_ietf"), REFUSED,
                     "leafref to WRED_PROFILE")
        expect_error(lambda: self.gc.set(update=[("sonic-db:/CONFIG_DB/localhost/QUEUE/Ethernet0/wred_profile", '"X"')],
                                         encoding="json_ietf"),
                     grpc.StatusCode.NOT_FOUND, "QUEUE keys have 2 parts")
        self.gc.set(update=[(f"{wred}/green_min_threshold", "524288"), (f"{wred}/ecn", json.dumps("ecn_none"))],
                    encoding="json_ietf")
        profile = self.get(wred)
        assert (profile["green_min_threshold"], profile["ecn"]) == ("524288", "ecn_none"), profile
        self.gc.set(update=[(f"{wred}/green_min_threshold", "1048576"), (f"{wred}/ecn", json.dumps("ecn_all"))],
                    encoding="json_ietf")
        # With a prefix target a Set works too, and deleting what is not there is accepted (gNMI 3.4.6).
        self.gc.set(delete=["PFC_WD/Ethernet0/pfc_stat_history"], target="CONFIG_DB", encoding="json_ietf")

    def set_outside_config_db_refused(self):
        expect_error(lambda: self.gc.set(update=[("sonic-db:/COUNTERS_DB/localhost/COUNTERS_PORT_NAME_MAP/Ethernet0", '"x"')],
                                         encoding="json_ietf"),
                     REFUSED, "Set RPC does not support COUNTERS_DB")
        expect_error(lambda: self.gc.set(update=[("PORT_TABLE/Ethernet0/oper_status", '"down"')], target="APPL_DB",
                                         encoding="json_ietf"),
                     REFUSED, "Set RPC does not support APPL_DB")

    # -- storm physics

    def storm_raises_pause_until_the_restarted_watchdog_drops(self):
        pause = "SAI_PORT_STAT_PFC_3_RX_PAUSE_DURATION_US"
        start = self.counter("Ethernet4", pause)
        self.t.http("/storm", {"port": "Ethernet4", "prio": 3, "on": True})
        time.sleep(0.5)
        grown = self.counter("Ethernet4", pause) - start
        assert grown > 250_000, f"the pause grew by {grown} us in 0.5 s of storm"
        wait_for("stormed", lambda: self.pfcwd("Ethernet4", 3).get("PFC_WD_STATUS") == "stormed")
        assert self.pfcwd("Ethernet4", 3)["PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED"] == "1"
        assert self.pfcwd("Ethernet4", 4)["PFC_WD_STATUS"] == "operational"
        entry = "sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet4"
        # In place: orchagent keeps the started watchdog's alert; the pause goes on.
        self.gc.set(update=[(f"{entry}/action", '"drop"')], encoding="json_ietf")
        time.sleep(0.15)
        held = self.counter("Ethernet4", pause)
        time.sleep(0.5)
        assert self.counter("Ethernet4", pause) - held > 250_000, "an in-place change took effect"
        # As `pfcwd start` does: deleted, then written; the storm is detected again and dropped.
        written = self.get(entry)
        self.gc.set(delete=[entry], encoding="json_ietf")
        self.gc.set(update=[(entry, written)], encoding="json_ietf")
        wait_for("stormed again", lambda: self.pfcwd("Ethernet4", 3).get("PFC_WD_STATUS") == "stormed")
        time.sleep(0.15)
        held = self.counter("Ethernet4", pause)
        time.sleep(0.5)
        assert self.counter("Ethernet4", pause) - held < 10_000, "the pause still grows with action drop"
        assert self.pfcwd("Ethernet4", 3)["PFC_WD_STATUS"] == "stormed"
        dropped = self.get("COUNTERS/Ethernet*/Queues", "COUNTERS_DB")["etp2:3"]
        assert int(dropped["SAI_QUEUE_STAT_DROPPED_PACKETS"]) > 0, dropped
        self.t.http("/storm", {"port": "Ethernet4", "prio": 3, "on": False})
        wait_for("restored", lambda: self.pfcwd("Ethernet4", 3)["PFC_WD_STATUS"] == "operational")
        self.gc.set(delete=[entry], encoding="json_ietf")
        self.gc.set(update=[(entry, {**written, "action": "alert"})], encoding="json_ietf")

    # -- Subscribe

    def subscribe_stream_samples(self):
        field = "SAI_PORT_STAT_IF_OUT_OCTETS"
        request = {"subscription": [{"path": f"COUNTERS/Ethernet*/{field}", "mode": "sample",
                                     "sample_interval": 1_000_000_000}], "mode": "stream", "encoding": "json_ietf"}
        stream = self.gc.subscribe_stream(subscribe=request, target="COUNTERS_DB")
        try:
            first = stream.get_update(timeout=5)
            assert first.get("sync_response") and first["update"]["update"], first
            values = [int(first["update"]["update"][0]["val"]["etp1"][field])]
            started = time.monotonic()
            while len(values) < 3:
                values.append(int(stream.get_update(timeout=5)["update"]["update"][0]["val"]["etp1"][field]))
            took = time.monotonic() - started
            assert values == sorted(values) and values[-1] > values[0], values
            assert 1.5 < took < 3.5, f"2 samples at 1 s took {took:.2f} s"
        finally:
            stream.close()

    def subscribe_on_change_sees_a_link_drop(self):
        request = {"subscription": [{"path": "PORT_TABLE/Ethernet8/oper_status", "mode": "on_change"}],
                   "mode": "stream", "encoding": "json_ietf"}
        stream = self.gc.subscribe_stream(subscribe=request, target="APPL_DB")
        try:
            first = stream.get_update(timeout=5)
            assert first["update"]["update"][0]["val"] == "up", first
            time.sleep(0.3)
            assert not stream.peek(), "ON_CHANGE sent an update with nothing changed"
            self.t.http("/link", {"port": "Ethernet8", "up": False})
            assert stream.get_update(timeout=5)["update"]["update"][0]["val"] == "down"
            self.t.http("/link", {"port": "Ethernet8", "up": True})
            assert stream.get_update(timeout=5)["update"]["update"][0]["val"] == "up"
        finally:
            stream.close()

    def subscribe_on_change_reports_a_delete(self):
        entry = "sonic-db:/CONFIG_DB/localhost/QUEUE/Ethernet0|3"
        stream = self.gc.subscribe_stream(subscribe={"subscription": [{"path": entry, "mode": "on_change"}],
                                                     "mode": "stream", "encoding": "json_ietf"})
        try:
            first = stream.get_update(timeout=5)
            assert first["update"]["update"][0]["val"] == {"wred_profile": "AZURE_LOSSLESS"}, first
            self.gc.set(delete=[entry], encoding="json_ietf")
            gone = stream.get_update(timeout=5)["update"]
            assert [d["path"] for d in gone.get("delete", [])] == ["CONFIG_DB/localhost/QUEUE/Ethernet0|3"], gone
            self.gc.set(update=[(f"{entry}/wred_profile", '"AZURE_LOSSLESS"')], encoding="json_ietf")
            back = stream.get_update(timeout=5)["update"]
            assert back["update"][0]["val"] == {"wred_profile": "AZURE_LOSSLESS"}, back
        finally:
            stream.close()

    def subscribe_once_and_poll(self):
        request = {"subscription": [{"path": "CONFIG_DB/localhost/PFC_WD/GLOBAL"}], "mode": "once",
                   "encoding": "json_ietf", "prefix": "sonic-db:"}
        once = list(self.gc.subscribe2(subscribe=request))
        assert once[-1].get("sync_response"), once
        assert once[0]["update"]["update"][0]["val"] == {"POLL_INTERVAL": "200"}, once
        request = {"subscription": [{"path": "COUNTERS/Ethernet*/SAI_PORT_STAT_IF_IN_OCTETS"}], "mode": "poll",
                   "encoding": "json_ietf"}
        poll = self.gc.subscribe2(subscribe=request, target="COUNTERS_DB")
        try:
            values = []
            for _ in range(3):
                reply = poll.get_update(timeout=5)
                assert reply.get("sync_response"), reply
                values.append(int(reply["update"]["update"][0]["val"]["etp1"]["SAI_PORT_STAT_IF_IN_OCTETS"]))
                time.sleep(0.15)
            assert values[-1] > values[0], values
        finally:
            poll.close()

    def subscribe_refusals(self):
        stub = self.t.stub()

        def once(mode, interval=0, list_mode=gnmi_pb2.SubscriptionList.STREAM):
            path = gnmi_pb2.Path(elem=[gnmi_pb2.PathElem(name="COUNTERS"), gnmi_pb2.PathElem(name="Ethernet*")])
            sub = gnmi_pb2.SubscribeRequest(subscribe=gnmi_pb2.SubscriptionList(
                prefix=gnmi_pb2.Path(target="COUNTERS_DB"), mode=list_mode, encoding=gnmi_pb2.JSON_IETF,
                subscription=[gnmi_pb2.Subscription(path=path, mode=mode, sample_interval=interval)]))
            return lambda: next(iter(stub.Subscribe(iter([sub]), timeout=10)))

        expect_error(once(gnmi_pb2.TARGET_DEFINED), grpc.StatusCode.INVALID_ARGUMENT,
                     "unsupported subscription mode, TARGET_DEFINED")
        expect_error(once(gnmi_pb2.SAMPLE, 200_000_000), grpc.StatusCode.INVALID_ARGUMENT,
                     "invalid interval: 200ms. It cannot be less than 1s")
        first = once(0, list_mode=gnmi_pb2.SubscriptionList.ONCE)()
        assert first.update.prefix.target == "COUNTERS_DB", first
        assert first.update.update[0].path.elem[1].name == "Ethernet*", first

    # -- restart

    def restart_resets_config_db_and_ends_streams(self):
        self.gc.set(update=[(f"{PFCWD_E0}/action", '"drop"')], encoding="json_ietf")
        request = {"subscription": [{"path": "COUNTERS_PORT_NAME_MAP", "mode": "sample",
                                     "sample_interval": 1_000_000_000}], "mode": "stream", "encoding": "json_ietf"}
        stream = self.gc.subscribe_stream(subscribe=request, target="COUNTERS_DB")
        stream.get_update(timeout=5)
        before = self.counter("Ethernet0", "SAI_PORT_STAT_IF_IN_OCTETS")
        assert self.t.http("/restart", {"down_ms": 200})["restarts"] == 1
        wait_for("the stream to end", lambda: not stream._subscribe_thread.is_alive())
        assert stream.error is not None and stream.error.code() in (
            grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED), stream.error
        with self.t.client() as gc:  # reconnect, as a client must
            action = value(gc.get(path=[f"{PFCWD_E0}/action"], encoding="json_ietf"))
            assert action == "alert", f"the action set before the restart survived it: {action}"
            octets = int(value(gc.get(path=["COUNTERS/Ethernet*/SAI_PORT_STAT_IF_IN_OCTETS"], target="COUNTERS_DB",
                                      encoding="json_ietf"))["etp1"]["SAI_PORT_STAT_IF_IN_OCTETS"])
            assert octets < before, f"counters did not restart from zero: {before} then {octets}"
        state = self.t.http("/state")
        assert state["config_db"]["PFC_WD"]["Ethernet0"]["action"] == "alert", state["config_db"]["PFC_WD"]

    # -- the other flags

    def strict_sonic_gnmi_flavour(self):
        """--styles sonic-db-origin --sonic-db-instance required --error-codes sonic-gnmi --json-ietf-only"""
        with self.strict.client() as gc:
            expect_error(lambda: gc.get(path=["COUNTERS/Ethernet0"], target="COUNTERS_DB", encoding="json_ietf"),
                         grpc.StatusCode.UNIMPLEMENTED, "not selected by prefix target")
            expect_error(lambda: gc.get(path=["sonic-db:/CONFIG_DB/PFC_WD/Ethernet0"], encoding="json_ietf"),
                         grpc.StatusCode.NOT_FOUND, "must be the database instance")
            assert value(gc.get(path=["sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet0/action"],
                                encoding="json_ietf")) == "alert"
            expect_error(lambda: gc.set(update=[("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet0/action",
                                                 '"explode"')], encoding="json_ietf"),
                         grpc.StatusCode.UNKNOWN, "is not one of drop|forward|alert")
            expect_error(lambda: gc.set(update=[("sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet0/action", "drop")],
                                        encoding="ascii"), grpc.StatusCode.UNKNOWN, "Unsupported TypedValue")

    def broadcom_counter_set(self):
        """--asic broadcom: no pause duration; ON2OFF and the queue's pause status instead."""
        with self.broadcom.client() as gc:
            ports = value(gc.get(path=["COUNTERS/Ethernet*"], target="COUNTERS_DB", encoding="json_ietf"))
            assert not any("PAUSE_DURATION" in f for f in ports["etp1"]), sorted(ports["etp1"])
            assert "SAI_PORT_STAT_PFC_3_ON2OFF_RX_PKTS" in ports["etp1"], sorted(ports["etp1"])
            self.broadcom.http("/storm", {"port": "Ethernet4", "prio": 3, "on": True})

            def queues():
                return value(gc.get(path=["COUNTERS/Ethernet*/Queues"], target="COUNTERS_DB", encoding="json_ietf"))
            wait_for("paused", lambda: queues()["etp2:3"]["SAI_QUEUE_ATTR_PAUSE_STATUS"] == "true")
            assert queues()["etp2:4"]["SAI_QUEUE_ATTR_PAUSE_STATUS"] == "false"

    def prefix_only_flavour_with_credentials(self):
        """--styles prefix-target --username admin --password interop"""
        expect_error(lambda: self.prefix_only.client(username="admin", password="wrong").__enter__()
                     .get(path=["COUNTERS/Ethernet0"], target="COUNTERS_DB", encoding="json_ietf"),
                     grpc.StatusCode.UNAUTHENTICATED)
        with self.prefix_only.client(username="admin", password="interop") as gc:
            names = [m["name"] for m in gc.capabilities()["supported_models"]]
            assert "sonic-db" not in names, names
            expect_error(lambda: gc.get(path=[PFCWD_E0], encoding="json_ietf"), grpc.StatusCode.UNIMPLEMENTED,
                         "Unsupported origin: sonic-db")
            assert value(gc.get(path=["PFC_WD/GLOBAL/POLL_INTERVAL"], target="CONFIG_DB",
                                encoding="json_ietf")) == "200"


def main():
    signal.signal(signal.SIGALRM, lambda *_: (print("FAIL timed out", flush=True), os._exit(1)))
    signal.alarm(180)
    logging.disable(logging.CRITICAL)  # pygnmi logs every refused call at CRITICAL
    default_hook = threading.excepthook  # a pygnmi stream thread raises when its stream ends under it
    threading.excepthook = lambda a: None if isinstance(a.exc_value, grpc.RpcError) else default_hook(a)
    targets = []
    try:
        main_target = Target()
        targets.append(main_target)
        targets.append(Target("--styles", "sonic-db-origin", "--sonic-db-instance", "required",
                              "--error-codes", "sonic-gnmi", "--json-ietf-only"))
        targets.append(Target("--styles", "prefix-target", "--username", "admin", "--password", "interop"))
        targets.append(Target("--asic", "broadcom"))
        checks = Checks(*targets)
        order = ["capabilities", "get_counters_by_prefix_target", "counters_move", "target_in_a_path_is_ignored",
                 "get_refusals_tell_missing_from_not_served", "set_pfcwd_and_read_back", "set_is_atomic",
                 "set_validates_like_yang", "set_outside_config_db_refused",
                 "storm_raises_pause_until_the_restarted_watchdog_drops", "subscribe_stream_samples",
                 "subscribe_on_change_sees_a_link_drop", "subscribe_on_change_reports_a_delete",
                 "subscribe_once_and_poll", "subscribe_refusals",
                 "strict_sonic_gnmi_flavour", "broadcom_counter_set", "prefix_only_flavour_with_credentials",
                 "restart_resets_config_db_and_ends_streams"]
        failed = []
        for name in order:
            try:
                getattr(checks, name)()
                print(f"PASS {name}", flush=True)
            except Exception as error:
                failed.append(name)
                print(f"FAIL {name}: {type(error).__name__}: {error}", flush=True)
        if failed:
            print(f"target log (last lines):\n{main_target.stderr()}")
            print(f"{len(failed)} of {len(order)} checks failed: {', '.join(failed)}")
            return 1
        print(f"all {len(order)} checks passed")
        return 0
    finally:
        for target in targets:
            target.close()


if __name__ == "__main__":
    sys.exit(main())
