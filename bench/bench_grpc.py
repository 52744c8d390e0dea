"""Tool-call latency through the gateway over gRPC beside HTTP.

Starts the patient-intake tool service and the gateway (serving both transports from one
core) as real processes on 127.0.0.1 and measures, in one run and on one episode:
  * raw transport: median / p99 over N sequential calls with a raw keep-alive socket (HTTP)
    and a reused gRPC channel with a prebuilt request (gRPC);
  * the agents' clients: Episode.call over GatewayClient (sopgym/core/keepalive.py) and
    GrpcGatewayClient, and the CPU each spends per call beside the raw socket's;
  * calls/s with T threads, each with its own agent client, for D seconds per transport.

    python bench/bench_grpc.py [--calls 2000] [--threads 8] [--duration 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson
from bench_gateway import ARGS, TOOL, RawKeepAlive, describe, sequential

from sopgym.client import connect
from sopgym.orchestration.stack import embedded_stack
from sopgym.proto import gateway_v1


def timed(call: Callable[[], object], calls: int, warmup: int = 200) -> list[float]:
    timings = []
    for i in range(calls + warmup):
        started = time.perf_counter()
        call()
        if i >= warmup:
            timings.append((time.perf_counter() - started) * 1000)
    return timings


def cpu_us_per_call(call: Callable[[], object], calls: int) -> float:
    """This process's CPU µs per call: the client's own cost, whatever the servers spend."""
    started = time.process_time()
    for _ in range(calls):
        call()
    return (time.process_time() - started) * 1e6 / calls


def throughput(make: Callable[[], Callable[[], object]], threads: int, seconds: float) -> float:
    counts = [0] * threads
    stop = time.monotonic() + seconds

    def work(i: int) -> None:
        call = make()
        while time.monotonic() < stop:
            call()
            counts[i] += 1

    workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return sum(counts) / seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--duration", type=float, default=5.0)
    options = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        embedded_stack(
            ["patient_intake"], Path(tmp) / "logs", Path(tmp) / "data", grpc=True
        ) as stack,
    ):
        target = stack.grpc_target
        assert target is not None  # started with grpc=True
        http, grpc = connect(stack.gateway_url), connect(target, "grpc")
        task = http.tasks("patient_intake")[0]["id"]  # episodes open on listed tasks only
        episode = http.open(task, "patient_intake")
        grpc_episode = grpc.open(task, "patient_intake")
        pb2, stubs = gateway_v1()
        import grpc as grpc_lib

        channel = grpc_lib.insecure_channel(target)
        stub = stubs.GatewayStub(channel)
        request = pb2.CallToolRequest(
            episode_id=episode.id, tool=TOOL, arguments_json=orjson.dumps(ARGS)
        )
        metadata = (("authorization", f"Bearer {episode.token}"),)

        path = f"/v1/episodes/{episode.id}/tools/{TOOL}"
        auth = {"Authorization": f"Bearer {episode.token}"}
        raw_http = sequential({"http": RawKeepAlive(stack.gateway_url, path, auth)}, options.calls)[
            "http"
        ]
        raw_grpc = timed(lambda: stub.CallTool(request, metadata=metadata), options.calls)
        client_http = timed(lambda: episode.call(TOOL, ARGS), options.calls)
        client_grpc = timed(lambda: grpc_episode.call(TOOL, ARGS), options.calls)
        print(f"sequential tool calls through the gateway: {options.calls} each")
        print(describe("raw HTTP", raw_http))
        print(describe("raw gRPC", raw_grpc))
        print(describe("client HTTP", client_http).replace("client HTTP", "client HTTP "))
        print(describe("client gRPC", client_grpc).replace("client gRPC", "client gRPC "))
        raw = RawKeepAlive(stack.gateway_url, path, auth)
        cpu = {
            "raw HTTP": cpu_us_per_call(raw.call, options.calls),
            "client HTTP": cpu_us_per_call(lambda: episode.call(TOOL, ARGS), options.calls),
            "client gRPC": cpu_us_per_call(lambda: grpc_episode.call(TOOL, ARGS), options.calls),
        }
        print("client CPU per call: " + ", ".join(f"{k} {v:.0f} µs" for k, v in cpu.items()))
        delta = statistics.median(raw_grpc) - statistics.median(raw_http)
        print(
            f"gRPC - HTTP at the median: raw {delta:+.3f} ms, clients "
            f"{statistics.median(client_grpc) - statistics.median(client_http):+.3f} ms"
        )

        def client_call(transport: str, address: str) -> Callable[[], object]:
            client = connect(address, transport)
            opened = client.open(task, "patient_intake")
            return lambda: opened.call(TOOL, ARGS)

        http_rps = throughput(
            lambda: client_call("http", stack.gateway_url), options.threads, options.duration
        )
        grpc_rps = throughput(
            lambda: client_call("grpc", target), options.threads, options.duration
        )
        print(f"agent-client throughput, {options.threads} threads, {options.duration:.0f}s:")
        print(f"HTTP       {http_rps:,.0f} calls/s")
        print(f"gRPC       {grpc_rps:,.0f} calls/s  ({grpc_rps / http_rps:.0%} of HTTP)")
        channel.close()
        http.close()
        grpc.close()


if __name__ == "__main__":
    main()
