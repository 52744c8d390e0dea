"""Tool-call latency and throughput, direct to a tool service vs. through the gateway.

Starts the patient-intake tool service and the gateway as real processes on 127.0.0.1 and
measures, in one run:
  * median / p99 latency over N sequential keep-alive calls (direct and via the gateway),
    with two clients: a raw-socket one that costs ~20 µs a call, so the figure is the
    servers' and the kernel's; and Python's http.client, which on our 2-core machines spends
    ~0.2 ms of its own per call parsing the reply (what a simple Python agent would see);
  * requests/s at C concurrent connections with wrk (if installed) for D seconds each.
Direct and gateway calls alternate in blocks so that a noisy spell on a shared machine weighs
on both alike. Targets (issue 2): gateway median <= 0.7 ms; gateway throughput >= 40% of
direct.

    python bench/bench_gateway.py [--calls 2000] [--connections 32] [--duration 5]
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import httptools

from sopgym.client import GatewayClient
from sopgym.orchestration.stack import embedded_stack

TOOL = "score_lifestyle"
ARGS = {"patient_id": "P100000000", "smoking_status": "Former",
        "alcohol_consumption": "Moderate", "exercise_frequency": "1-2 times"}


class RawKeepAlive:
    """One keep-alive socket sending ready-made request bytes; httptools reads the reply."""

    def __init__(self, url: str, path: str, headers: dict[str, str]) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.socket = socket.create_connection((host, int(port)))
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        body = json.dumps(ARGS).encode()
        lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}",
                 "Content-Type: application/json", f"Content-Length: {len(body)}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        self.request = ("\r\n".join(lines) + "\r\n\r\n").encode() + body
        self.path, self.done = path, False
        self.parser = httptools.HttpResponseParser(self)

    def on_message_complete(self) -> None:  # httptools callback
        self.done = True

    def call(self) -> float:
        started = time.perf_counter()
        self.socket.sendall(self.request)
        self.done = False
        while not self.done:
            chunk = self.socket.recv(65536)
            if not chunk:
                raise RuntimeError(f"{self.path}: connection closed")
            self.parser.feed_data(chunk)
        elapsed = (time.perf_counter() - started) * 1000
        if self.parser.get_status_code() != 200:
            raise RuntimeError(f"{self.path}: HTTP {self.parser.get_status_code()}")
        return elapsed


class StdlibKeepAlive:
    """One ``http.client`` keep-alive connection posting the benchmark call to one path."""

    def __init__(self, url: str, path: str, headers: dict[str, str]) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.connection = http.client.HTTPConnection(host, int(port))
        self.path, self.headers = path, {"content-type": "application/json", **headers}
        self.body = json.dumps(ARGS)

    def call(self) -> float:
        started = time.perf_counter()
        self.connection.request("POST", self.path, self.body, self.headers)
        response = self.connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"{self.path}: HTTP {response.status}")
        return (time.perf_counter() - started) * 1000


def sequential(
    targets: dict[str, RawKeepAlive | StdlibKeepAlive], calls: int, block: int = 100
) -> dict[str, list[float]]:
    """``calls`` timed calls per target, in alternating blocks, so that a noisy spell on a
    shared machine weighs on every target alike; 200 untimed warm-up calls each first."""
    for target in targets.values():
        for _ in range(200):
            target.call()
    timings: dict[str, list[float]] = {name: [] for name in targets}
    for start in range(0, calls, block):
        for name, target in targets.items():
            timings[name] += [target.call() for _ in range(min(block, calls - start))]
    return timings


def wrk(url: str, path: str, headers: dict[str, str], connections: int, duration: int) -> float:
    lines = ['wrk.method = "POST"', f"wrk.body = '{json.dumps(ARGS)}'",
             'wrk.headers["Content-Type"] = "application/json"']
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write("\n".join(lines) + "\n")
    out = subprocess.run(["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "-s", script.name,
                          url + path], capture_output=True, text=True, check=True).stdout
    Path(script.name).unlink()
    if "Non-2xx" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    assert rate is not None, f"no Requests/sec in wrk's output:\n{out}"
    return float(rate.group(1))


def describe(name: str, timings: list[float]) -> str:
    ordered = sorted(timings)
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    return f"{name:<10} median {statistics.median(ordered):.3f} ms   p99 {p99:.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--duration", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, \
            embedded_stack(["patient_intake"], Path(tmp) / "logs", Path(tmp) / "data") as stack:
        opener = GatewayClient(stack.gateway_url)
        episode = opener.open(opener.tasks("patient_intake")[0]["id"], "patient_intake")
        opener.close()
        service = stack.services["patient_intake"]
        via = f"/v1/episodes/{episode.id}/tools/{TOOL}"
        auth = {"Authorization": f"Bearer {episode.token}"}
        for client in (RawKeepAlive, StdlibKeepAlive):
            timings = sequential(
                {
                    "direct": client(service, f"/v1/tools/{TOOL}", {}),
                    "gateway": client(stack.gateway_url, via, auth),
                },
                options.calls,
            )
            direct_t, gateway_t = timings["direct"], timings["gateway"]
            print(f"{options.calls} sequential keep-alive calls each, {client.__name__}:")
            print(describe("direct", direct_t))
            print(describe("gateway", gateway_t))
            added = statistics.median(gateway_t) - statistics.median(direct_t)
            print(f"gateway adds {added:.3f} ms at the median")
        if shutil.which("wrk") is None:
            print("wrk not installed: throughput skipped (apt-get install wrk)")
            return
        direct_rps = wrk(service, f"/v1/tools/{TOOL}", {}, options.connections, options.duration)
        gateway_rps = wrk(stack.gateway_url, via, auth, options.connections, options.duration)
        print(f"throughput at {options.connections} connections, {options.duration}s each (wrk):")
        print(f"direct     {direct_rps:,.0f} req/s")
        print(f"gateway    {gateway_rps:,.0f} req/s  ({gateway_rps / direct_rps:.0%} of direct)")


if __name__ == "__main__":
    main()
