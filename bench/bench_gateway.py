"""Tool-call latency and throughput, direct to a tool service vs. through the gateway.

Starts the patient-intake tool service and the gateway as real processes on 127.0.0.1 and
measures, in one run:
  * median / p99 latency over N sequential keep-alive calls (direct and via the gateway);
  * requests/s at C concurrent connections with wrk (if installed) for D seconds each.
Targets (issue 2): gateway median <= 0.7 ms; gateway throughput >= 40% of direct.

    python bench/bench_gateway.py [--calls 2000] [--connections 32] [--duration 5]
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from sopgym.agents.client import GatewayClient
from sopgym.stack import embedded_stack

TOOL = "score_lifestyle"
ARGS = {"patient_id": "P100000000", "smoking_status": "Former",
        "alcohol_consumption": "Moderate", "exercise_frequency": "1-2 times"}


def sequential(url: str, path: str, headers: dict[str, str], calls: int) -> list[float]:
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port))
    body = json.dumps(ARGS)
    timings = []
    for i in range(calls + 200):
        started = time.perf_counter()
        connection.request("POST", path, body, {"content-type": "application/json", **headers})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"{path}: HTTP {response.status}")
        if i >= 200:  # warm-up excluded
            timings.append((time.perf_counter() - started) * 1000)
    connection.close()
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
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


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
        client = GatewayClient(stack.gateway_url)
        episode = client.open("bench", "patient_intake")
        service = stack.services["patient_intake"]
        via = f"/v1/episodes/{episode.id}/tools/{TOOL}"
        auth = {"Authorization": f"Bearer {episode.token}"}
        direct_t = sequential(service, f"/v1/tools/{TOOL}", {}, options.calls)
        gateway_t = sequential(stack.gateway_url, via, auth, options.calls)
        print(f"sequential keep-alive calls: {options.calls}")
        print(describe("direct", direct_t))
        print(describe("gateway", gateway_t))
        print(f"gateway adds {statistics.median(gateway_t) - statistics.median(direct_t):.3f} ms"
              " at the median")
        if shutil.which("wrk") is None:
            print("wrk not installed: throughput skipped (apt-get install wrk)")
            return
        direct_rps = wrk(service, f"/v1/tools/{TOOL}", {}, options.connections, options.duration)
        gateway_rps = wrk(stack.gateway_url, via, auth, options.connections, options.duration)
        print(f"throughput at {options.connections} connections, {options.duration}s each (wrk):")
        print(f"direct     {direct_rps:,.0f} req/s")
        print(f"gateway    {gateway_rps:,.0f} req/s  ({gateway_rps / direct_rps:.0%} of direct)")
        client.close()


if __name__ == "__main__":
    main()
