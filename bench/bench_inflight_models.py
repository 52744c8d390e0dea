"""Threads or asyncio for many episodes in one worker process: the waiting, side by side.

An episode in flight spends nearly all its time waiting on a slow model. This bench keeps N
"episodes" in flight against a loopback server that answers each request after ``--delay``
seconds (an asyncio server: it costs no CPU while it waits), each making ``--calls``
requests in turn, in two shapes:

* ``threads``: a thread per episode, each request through sopgym's own keep-alive client
  (:class:`sopgym.core.keepalive.HttpTransport`: what the agents' gateway and model calls
  use in a worker's episode threads);
* ``asyncio``: a task per episode on one event loop, each request through
  ``httpx.AsyncClient`` (what an asynchronous rewrite of the agents would use: LangChain's
  async model path runs on httpx's async client);
* ``aiohttp``: the same tasks through aiohttp's client (the ``bench`` extra), the lightest
  asynchronous client at hand.

It prints the client's CPU per request and its peak RSS, and how close the wall time came to
the latency-bound ideal. Whichever wins here, the agents (LangGraph's synchronous graphs, the
provider SDKs, three transports' clients) stay unchanged only with threads; docs/concurrency.md
records the figures and the choice.

    python bench/bench_inflight_models.py [--inflight 500] [--calls 4] [--delay 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import threading
import time

import httpx

from sopgym.core.keepalive import HttpTransport
from sopgym.orchestration.processes import free_port

SERVER = """
import asyncio, sys
from starlette.applications import Starlette
from starlette.responses import Response
from starlette.routing import Route
import uvicorn

async def slow(request):
    await request.body()
    await asyncio.sleep(float(sys.argv[2]))
    return Response(b'{"choices": [{"message": {"content": "ok"}}]}', media_type="application/json")

app = Starlette(routes=[Route("/v1/chat/completions", slow, methods=["POST"])])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", backlog=4096,
            timeout_keep_alive=60,
            loop="uvloop", http="httptools")
"""
BODY = {"model": "m", "messages": [{"role": "user", "content": "x" * 2000}]}


def run_threads(url: str, inflight: int, calls: int) -> int:
    transport = HttpTransport(url, timeout=60.0)
    done = [0]
    lock = threading.Lock()

    def episode() -> None:
        for _ in range(calls):
            reply = transport.request("POST", "/v1/chat/completions", {}, BODY)
            assert reply.status == 200
            with lock:
                done[0] += 1

    threads = [threading.Thread(target=episode) for _ in range(inflight)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done[0]


def run_asyncio(url: str, inflight: int, calls: int) -> int:
    async def main() -> int:
        limits = httpx.Limits(max_connections=inflight, max_keepalive_connections=inflight)
        async with httpx.AsyncClient(base_url=url, timeout=60.0, limits=limits) as client:

            async def episode() -> int:
                for _ in range(calls):
                    reply = await client.post("/v1/chat/completions", json=BODY)
                    assert reply.status_code == 200
                return calls

            return sum(await asyncio.gather(*(episode() for _ in range(inflight))))

    return asyncio.run(main())


def run_aiohttp(url: str, inflight: int, calls: int) -> int:
    import aiohttp  # the bench extra: pip install -e '.[bench]'

    async def main() -> int:
        connector = aiohttp.TCPConnector(limit=inflight)
        async with aiohttp.ClientSession(url, connector=connector) as session:

            async def episode() -> int:
                for _ in range(calls):
                    async with session.post("/v1/chat/completions", json=BODY) as reply:
                        assert reply.status == 200
                        await reply.read()
                return calls

            return sum(await asyncio.gather(*(episode() for _ in range(inflight))))

    return asyncio.run(main())


def measure(shape: str, url: str, args: argparse.Namespace) -> None:
    """One shape in a fresh process (its own peak RSS), printed as one line."""
    code = (
        "import sys, time, resource; sys.argv = sys.argv[:1]; "
        "sys.path.insert(0, 'bench'); import bench_inflight_models as b; "
        f"c0 = time.process_time(); t0 = time.perf_counter(); "
        f"n = b.run_{shape}({url!r}, {args.inflight}, {args.calls}); "
        "wall = time.perf_counter() - t0; cpu = time.process_time() - c0; "
        "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024; "
        f"ideal = {args.calls} * {args.delay}; "
        f"print(f'{shape:>8}: {{n}} requests, {{1000 * cpu / n:.3f}} ms CPU each, peak RSS "
        "{rss:.0f} MB, wall {wall:.2f} s ({100 * ideal / wall:.0f}% of the ideal {ideal:.1f} s)')"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--inflight", type=int, default=500)
    parser.add_argument("--calls", type=int, default=4, help="requests per episode, in turn")
    parser.add_argument("--delay", type=float, default=1.0, help="the server's seconds per answer")
    args = parser.parse_args()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVER, str(port), str(args.delay)])
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                httpx.post(f"{url}/v1/chat/completions", json=BODY, timeout=args.delay + 5)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        print(f"{args.inflight} in flight, {args.calls} calls each, {args.delay:g} s per answer")
        for shape in ("threads", "asyncio", "aiohttp"):
            measure(shape, url, args)
    finally:
        server.terminate()
        server.wait(10)


if __name__ == "__main__":
    main()
