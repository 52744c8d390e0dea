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

``--side-by-side`` keeps the gateway's hand-written parts a measured choice (issue 22): the
same gateway app also runs under uvicorn (with its own upstream pool), and with aiohttp as its
upstream client (on its own server), each a process of its own beside the real one, and for
each the run prints latency (raw client), throughput and its ratio to direct (wrk), and the
gateway process's CPU time per proxied call, under wrk and in the sequential calls. Target
(issue 22): own server + own pool <= 35 µs of CPU a proxied call under wrk, on a quiet machine.

    python bench/bench_gateway.py [--calls 2000] [--connections 32] [--duration 5]
    python bench/bench_gateway.py --side-by-side   (pip install -e '.[bench]': aiohttp)
"""

from __future__ import annotations

import argparse
import http.client
import importlib.util
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httptools

from sopgym.client import GatewayClient
from sopgym.core.access import ADMIN_TOKEN_ENV, SECRET_HEADER, SERVICE_SECRET_ENV
from sopgym.gateway.upstream import UpstreamError
from sopgym.orchestration.processes import free_port
from sopgym.orchestration.stack import Stack, embedded_stack

TOOL = "score_lifestyle"
ARGS = {
    "patient_id": "P100000000",
    "smoking_status": "Former",
    "alcohol_consumption": "Moderate",
    "exercise_frequency": "1-2 times",
}


class RawKeepAlive:
    """One keep-alive socket sending ready-made request bytes; httptools reads the reply."""

    def __init__(self, url: str, path: str, headers: dict[str, str]) -> None:
        host, port = url.removeprefix("http://").split(":")
        self.socket = socket.create_connection((host, int(port)))
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        body = json.dumps(ARGS).encode()
        lines = [
            f"POST {path} HTTP/1.1",
            f"Host: {host}:{port}",
            "Content-Type: application/json",
            f"Content-Length: {len(body)}",
        ]
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


def wrk(
    url: str, path: str, headers: dict[str, str], connections: int, duration: int
) -> tuple[float, int]:
    """Requests/s and the number of requests wrk made."""
    lines = [
        'wrk.method = "POST"',
        f"wrk.body = '{json.dumps(ARGS)}'",
        'wrk.headers["Content-Type"] = "application/json"',
    ]
    lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write("\n".join(lines) + "\n")
    out = subprocess.run(
        ["wrk", "-t2", f"-c{connections}", f"-d{duration}s", "-s", script.name, url + path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    Path(script.name).unlink()
    if "Non-2xx" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out)
    made = re.search(r"(\d+) requests in", out)
    assert rate is not None and made is not None, f"no Requests/sec in wrk's output:\n{out}"
    return float(rate.group(1)), int(made.group(1))


def describe(name: str, timings: list[float]) -> str:
    ordered = sorted(timings)
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    return f"{name:<10} median {statistics.median(ordered):.3f} ms   p99 {p99:.3f} ms"


class AiohttpPool:
    """:class:`sopgym.gateway.upstream.UpstreamPool`'s interface over an aiohttp session: the
    library client the gateway's own pool is measured against."""

    def __init__(
        self,
        host: str,
        port: int,
        limit: int = 128,
        timeout: float = 30.0,
        headers: bytes = b"",
        base_path: str = "",
    ) -> None:
        self.base = f"http://{host}:{port}{base_path.rstrip('/')}"
        self.limit, self.timeout = limit, timeout
        self.headers = {"Content-Type": "application/json", **_header_lines(headers)}
        self.session: Any = None

    async def _send(self, method: str, path: str, body: bytes | None, headers: bytes) -> Any:
        import aiohttp

        if self.session is None:
            self.session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=self.limit),
                timeout=aiohttp.ClientTimeout(total=self.timeout),
            )
        try:
            async with self.session.request(
                method,
                self.base + path,
                data=body,
                headers={**self.headers, **_header_lines(headers)},
            ) as response:
                return response.status, await response.read()
        except aiohttp.ClientError as error:
            raise UpstreamError(str(error)) from error

    async def post(self, path: str, body: bytes, headers: bytes = b"") -> tuple[int, bytes]:
        return await self._send("POST", path, body, headers)

    async def get(self, path: str) -> tuple[int, bytes]:
        return await self._send("GET", path, None, b"")

    async def delete(self, path: str, headers: bytes = b"") -> tuple[int, bytes]:
        return await self._send("DELETE", path, None, headers)

    def close(self) -> None:
        """Nothing to do: the benchmark's gateway process ends with its session."""


def _header_lines(lines: bytes) -> dict[str, str]:
    pairs = (line.split(":", 1) for line in lines.decode().split("\r\n") if line)
    return {name.strip(): value.strip() for name, value in pairs}


# the gateway variants side by side: (HTTP server, upstream client)
VARIANTS = {"uvicorn + own pool": ("uvicorn", "own"), "own server + aiohttp": ("own", "aiohttp")}


def serve_variant(server: str, pool: str, gateway_args: list[str]) -> None:
    """Run ``sopgym gateway`` (this process) with ``server`` and ``pool`` swapped in."""
    if server == "uvicorn":
        import sopgym.gateway.server
        from sopgym.serving import serve

        sopgym.gateway.server.serve = serve  # the CLI reads it when it serves
    if pool == "aiohttp":
        import sopgym.gateway.core

        sopgym.gateway.core.UpstreamPool = AiohttpPool  # type: ignore[misc, assignment]
    from sopgym.cli import main

    main(["gateway", *gateway_args])


def start_variant(stack: Stack, name: str, tmp: Path) -> tuple[str, int]:
    """A variant's gateway process in front of the stack's tool service: its URL and pid."""
    server, pool = VARIANTS[name]
    url = f"http://127.0.0.1:{free_port()}"
    services = [a for d, u in stack.services.items() for a in ("--service", f"{d}={u}")]
    child = stack.group.start(
        name,
        [
            sys.executable,
            __file__,
            "--serve",
            server,
            pool,
            "--port",
            url.rsplit(":", 1)[1],
            *services,
        ],
        tmp / f"{server}-{pool}.log",
        env={ADMIN_TOKEN_ENV: stack.admin_token, SERVICE_SECRET_ENV: stack.service_secret},
        ready_url=f"{url}/readyz",
    )
    child.wait_ready()
    return url, child.popen.pid


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def gateway_pid(stack: Stack) -> int:
    return next(c.popen.pid for c in stack.group.children if c.name == "gateway")


def side_by_side(stack: Stack, tmp: Path, options: argparse.Namespace) -> None:
    service = stack.services["patient_intake"]
    gateways = {"own server + own pool": (stack.gateway_url, gateway_pid(stack))}
    gateways.update({name: start_variant(stack, name, tmp) for name in VARIANTS})
    secret = {SECRET_HEADER.decode(): stack.service_secret}
    paths = {}
    for name, (url, _) in gateways.items():
        opener = GatewayClient(url)
        episode = opener.open(opener.tasks("patient_intake")[0]["id"], "patient_intake")
        opener.close()
        paths[name] = (
            url,
            f"/v1/episodes/{episode.id}/tools/{TOOL}",
            {"Authorization": f"Bearer {episode.token}"},
        )
    targets: dict[str, RawKeepAlive | StdlibKeepAlive] = {
        "direct": RawKeepAlive(service, f"/v1/tools/{TOOL}", secret)
    }
    targets.update({name: RawKeepAlive(*where) for name, where in paths.items()})
    cpu_before = {name: cpu_seconds(pid) for name, (_, pid) in gateways.items()}
    timings = sequential(targets, options.calls)  # every target: 200 warm-up + calls
    sequential_cpu = {
        name: (cpu_seconds(pid) - cpu_before[name]) / (options.calls + 200) * 1e6
        for name, (_, pid) in gateways.items()
    }
    direct_rps, _ = wrk(service, f"/v1/tools/{TOOL}", secret, options.connections, options.duration)
    load = os.getloadavg()[0]
    print(
        f"{options.calls} sequential keep-alive calls each (raw client); wrk at "
        f"{options.connections} connections, {options.duration} s each; load {load:.1f}"
    )
    print(
        f"{'':<22} {'median ms':>9} {'p99 ms':>7} {'adds ms':>7} {'req/s':>8} {'of direct':>9} "
        f"{'CPU µs/call':>11} {'(sequential)':>12}"
    )
    direct_median = statistics.median(timings["direct"])
    ordered = sorted(timings["direct"])
    print(
        f"{'direct':<22} {direct_median:9.3f} {ordered[int(len(ordered) * 0.99) - 1]:7.3f} "
        f"{'':>7} {direct_rps:8,.0f}"
    )
    for name, (url, pid) in gateways.items():
        before = cpu_seconds(pid)
        rps, made = wrk(url, paths[name][1], paths[name][2], options.connections, options.duration)
        per_call = (cpu_seconds(pid) - before) / made * 1e6
        ordered = sorted(timings[name])
        median = statistics.median(ordered)
        print(
            f"{name:<22} {median:9.3f} {ordered[int(len(ordered) * 0.99) - 1]:7.3f} "
            f"{median - direct_median:7.3f} {rps:8,.0f} {rps / direct_rps:9.0%} "
            f"{per_call:11.0f} {sequential_cpu[name]:12.0f}"
        )


def main() -> None:
    if sys.argv[1:2] == ["--serve"]:  # a side-by-side variant's own gateway process
        serve_variant(sys.argv[2], sys.argv[3], sys.argv[4:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--duration", type=int, default=5)
    parser.add_argument(
        "--side-by-side", action="store_true", help="also under uvicorn, and with aiohttp"
    )
    options = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        embedded_stack(["patient_intake"], Path(tmp) / "logs", Path(tmp) / "data") as stack,
    ):
        if options.side_by_side:
            if shutil.which("wrk") is None:
                raise SystemExit("--side-by-side needs wrk (apt-get install wrk)")
            if importlib.util.find_spec("aiohttp") is None:
                raise SystemExit("--side-by-side needs aiohttp: pip install -e '.[bench]'")
            side_by_side(stack, Path(tmp), options)
            return
        opener = GatewayClient(stack.gateway_url)
        episode = opener.open(opener.tasks("patient_intake")[0]["id"], "patient_intake")
        opener.close()
        service = stack.services["patient_intake"]
        secret = {SECRET_HEADER.decode(): stack.service_secret}
        via = f"/v1/episodes/{episode.id}/tools/{TOOL}"
        auth = {"Authorization": f"Bearer {episode.token}"}
        for client in (RawKeepAlive, StdlibKeepAlive):
            timings = sequential(
                {
                    "direct": client(service, f"/v1/tools/{TOOL}", secret),
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
        direct_rps, _ = wrk(
            service, f"/v1/tools/{TOOL}", secret, options.connections, options.duration
        )
        gateway_rps, _ = wrk(stack.gateway_url, via, auth, options.connections, options.duration)
        print(f"throughput at {options.connections} connections, {options.duration}s each (wrk):")
        print(f"direct     {direct_rps:,.0f} req/s")
        print(f"gateway    {gateway_rps:,.0f} req/s  ({gateway_rps / direct_rps:.0%} of direct)")


if __name__ == "__main__":
    main()
