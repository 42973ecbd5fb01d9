#!/usr/bin/env python3
"""Interop check of rocemend's simulated SONiC switch with pygnmi.

Calls Capabilities, Get, Set and a STREAM Subscribe on the switch at
--address and checks what comes back, with the paths sonic-gnmi serves:
the prefix target COUNTERS_DB (virtual paths keyed by the ports' aliases)
and origin sonic-db with the instance element (`localhost`), sampled no
faster than once a second. Exits 0 when every check passes,
1 when one fails (the failing check is printed), 2 on bad usage.

    python3 tests/interop/gnmi_interop.py --address 127.0.0.1:9339 \
        --username admin --password secret

Run by chaos/sim/src/tests/switch_interop.rs, which starts the switch.
"""

import argparse
import signal
import sys
import threading

import grpc
from pygnmi.client import gNMIclient
from pygnmi.create_gnmi_path import gnmi_path_generator
from pygnmi.spec.v080 import gnmi_pb2, gnmi_pb2_grpc

GREEN_MIN = "sonic-db:/CONFIG_DB/localhost/WRED_PROFILE/AZURE_LOSSLESS/green_min_threshold"
DETECTION = "sonic-db:/CONFIG_DB/localhost/PFC_WD/Ethernet0/detection_time"
OPER = "sonic-db:/APPL_DB/localhost/PORT_TABLE/Ethernet4/oper_status"
FLAPS = "sonic-db:/APPL_DB/localhost/PORT_TABLE/Ethernet4/flap_count"
PORTS = "COUNTERS/Ethernet*"


def stream(gc, path, interval_ns):
    subscribe = {
        "subscription": [{"path": path, "mode": "sample", "sample_interval": interval_ns}],
        "mode": "stream",
        "encoding": "json_ietf",
    }
    return gc.subscribe_stream(subscribe=subscribe)


def refusal_of_fast_sampling(args):
    """What the switch ends a STREAM of SAMPLE every 100 ms with. pygnmi's stream reader loses
    an error that ends a stream in its thread, so this one is asked on gRPC directly."""
    request = gnmi_pb2.SubscribeRequest(subscribe=gnmi_pb2.SubscriptionList(
        mode=gnmi_pb2.SubscriptionList.STREAM,
        encoding=gnmi_pb2.JSON_IETF,
        subscription=[gnmi_pb2.Subscription(path=gnmi_path_generator(FLAPS), mode=gnmi_pb2.SAMPLE,
                                            sample_interval=100_000_000)],
    ))
    with grpc.insecure_channel(args.address) as channel:
        stub = gnmi_pb2_grpc.gNMIStub(channel)
        metadata = [("username", args.username), ("password", args.password)]
        try:
            for response in stub.Subscribe(iter([request]), metadata=metadata, timeout=10):
                return f"answered {response}"
            return "ended without an error"
        except grpc.RpcError as error:
            return error.details()


def check(what, ok, got):
    if not ok:
        print(f"FAIL {what}: got {got!r}")
        sys.exit(1)
    print(f"ok   {what}")


def first_value(response):
    return response["notification"][0]["update"][0]["val"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True, help="host:port of the switch")
    parser.add_argument("--username", default="admin")
    parser.add_argument("--password", default="admin")
    parser.add_argument("--timeout", type=int, default=30, help="seconds for the whole run")
    args = parser.parse_args()
    host, port = args.address.rsplit(":", 1)
    # A hung stream must not hang the test that runs us.
    signal.signal(signal.SIGALRM, lambda *_: (print("FAIL timed out"), sys.exit(1)))
    signal.alarm(args.timeout)
    # pygnmi's stream reader thread raises CANCELLED when the channel closes
    # at the end; that is the normal end here, not a failure.
    default_hook = threading.excepthook
    threading.excepthook = lambda a: None if "CANCELLED" in str(a.exc_value) else default_hook(a)

    with gNMIclient(target=(host, int(port)), username=args.username, password=args.password,
                    insecure=True, gnmi_timeout=10) as gc:
        caps = gc.capabilities()
        check("Capabilities reports gNMI 0.7.0", caps.get("gnmi_version") == "0.7.0", caps)
        names = [m.get("name") for m in caps.get("supported_models", [])]
        check("Capabilities lists the sonic-db model", "sonic-db" in names, names)
        encodings = [str(e).lower() for e in caps.get("supported_encodings", [])]
        check("Capabilities lists json_ietf", "json_ietf" in encodings, encodings)

        got = first_value(gc.get(path=[GREEN_MIN], encoding="json_ietf"))
        check("Get reads the default WRED threshold", str(got) == "1048576", got)
        got = first_value(gc.get(path=[OPER], encoding="json_ietf"))
        check("Get reads oper_status", got == "up", got)
        ports = first_value(gc.get(path=[PORTS], target="COUNTERS_DB", encoding="json_ietf"))
        check("COUNTERS/Ethernet* is keyed by alias", sorted(ports)[:2] == ["etp1", "etp2"], sorted(ports))

        # pygnmi sends a str as its bytes; sonic-gnmi takes a field's value as a JSON string.
        reply = gc.set(update=[(GREEN_MIN, '"524288"')], encoding="json_ietf")
        results = reply.get("response", [])
        check("Set answers one UPDATE result", len(results) == 1 and results[0].get("op") == "UPDATE", reply)
        got = first_value(gc.get(path=[GREEN_MIN], encoding="json_ietf"))
        check("Get sees the Set", str(got) == "524288", got)

        try:
            gc.set(update=[(DETECTION, '"50"')], encoding="json_ietf")
            check("Set of detection_time 50 is refused", False, "accepted")
        except Exception as error:  # pygnmi wraps the gRPC error
            check("Set of detection_time 50 is refused", "out of range" in str(error) or "INVALID_ARGUMENT" in str(error), str(error))

        refused = refusal_of_fast_sampling(args)
        check("SAMPLE every 100 ms is refused", "It cannot be less than 1s" in refused, refused)

        sampled = stream(gc, FLAPS, 1_000_000_000)
        synced, updates = False, 0
        for message in sampled:
            if message.get("sync_response"):
                synced = True
            elif "update" in message:
                assert "update" in message["update"], message
                updates += 1
            if synced and updates >= 3:
                break
        check("STREAM SAMPLE syncs and keeps sampling", synced and updates >= 3, (synced, updates))
        try:
            sampled.close()
        except Exception:
            pass
    print("interop: all checks passed")


if __name__ == "__main__":
    main()
