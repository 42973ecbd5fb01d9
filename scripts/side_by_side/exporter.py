#!/usr/bin/env python3
"""A Prometheus exporter for the side-by-side measurement (scripts/side-by-side.sh).

Serves N series of the text format at /metrics, their values static or changing on every scrape,
plus one series `side_by_side_fault` that is 0 until /fault?on=1 sets it to 1 (and records the
wall-clock instant, in nanoseconds, it answers with) and /fault?on=0 sets it back. Standard library
only. Prints the port it listens on, then serves until killed.
"""

import argparse
import http.server
import threading
import time


class State:
    def __init__(self, series, changing):
        self.series = series
        self.changing = changing
        self.round = 0
        self.fault = 0
        self.lock = threading.Lock()
        self.static_page = self.render(0) if not changing else None

    def render(self, round_):
        lines = ["# HELP side_by_side_value A synthetic gauge.", "# TYPE side_by_side_value gauge"]
        for i in range(self.series):
            lines.append(f'side_by_side_value{{port="p{i % 64}",queue="q{i // 64}"}} {round_ + i}')
        return "\n".join(lines) + "\n"

    def page(self):
        with self.lock:
            self.round += 1
            fault = self.fault
            body = self.static_page if self.static_page is not None else self.render(self.round)
        return body + f"# TYPE side_by_side_fault gauge\nside_by_side_fault {fault}\n"


def handler(state):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path.startswith("/metrics"):
                body = state.page().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
            elif self.path.startswith("/fault?on="):
                with state.lock:
                    state.fault = 1 if self.path.endswith("=1") else 0
                    at = time.time_ns()
                body = f"{at}\n".encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain")
            else:
                body = b"not found\n"
                self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                self.wfile.write(body)
            except BrokenPipeError:
                # A scraper stopped mid-page (the measurement ending); nothing to answer.
                pass

    return Handler


class Server(http.server.ThreadingHTTPServer):
    # The default backlog of 5 can drop a connection when both scrapers and the fault requests
    # arrive together; a dropped SYN is retried after a second, which would show up as latency.
    request_queue_size = 128


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--series", type=int, default=10000, help="series of side_by_side_value")
    parser.add_argument("--changing", action="store_true", help="values change on every scrape")
    args = parser.parse_args()
    state = State(args.series, args.changing)
    server = Server(("127.0.0.1", 0), handler(state))
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
