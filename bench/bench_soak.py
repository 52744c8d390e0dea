"""Gateway soak: many concurrent keep-alive connections for a while, on loopback; errors,
latency percentiles and the gateway's memory over time.

Starts the ``patient_intake`` tool service and the gateway as real processes on 127.0.0.1 (the
gateway holding at most ``--keep-episodes`` episode records, so that the records it keeps by
design reach their bound within the warm-up and what grows after it is a leak). Each of C clients
owns one connection and plays whole episodes on it for D seconds: open, the task's gold tool
calls, finish. Every answer must be the expected status (201, 200 ..., 200); anything else, a
connection error or a request over 30 s counts as an error. The gateway's RSS is sampled every
second: growth is the end against the end of the warm-up.

    python bench/bench_soak.py [--connections 500] [--duration 60] [--warmup 10]

Issue 17's bar: 500 connections for 60 s, zero errors, RSS growth <= 10 %, p99 reported.

Issue 36's: the gateway at the default ``--keep-episodes`` (100,000) on the banking domain with
its distractors stays under the manifests' memory limit (``--limit-mib``, 1 GiB as in
k8s/base/gateway.yaml)::

    python bench/bench_soak.py --domain banking --distractors 264 --keep-episodes 100000 \
        --connections 50 --duration 120

Besides the peak, it prints the memory each finished episode retains (RSS growth over the
episodes played after the warm-up) and that figure at the count bound.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import secrets
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from sopgym.agents.oracle import load_replays
from sopgym.core.access import SERVICE_SECRET_ENV
from sopgym.core.registry import load_domain
from sopgym.orchestration.processes import ProcessGroup, free_port, sopgym_command

REQUEST_TIMEOUT_S = 30.0


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)  # seconds, every request
    errors: list[str] = field(default_factory=list)
    episodes: int = 0


class Connection:
    """One keep-alive HTTP/1.1 connection to the gateway; requests one at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def request(self, path: str, body: object, token: str | None = None) -> tuple[int, bytes]:
        payload = orjson.dumps(body)
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        head = (f"POST {path} HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\n{auth}\r\n")  # fmt: skip
        self.writer.write(head.encode() + payload)
        status_line = await self.reader.readline()
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if not status_line:
            raise ConnectionError("the gateway closed the connection")
        return int(status_line.split()[1]), await self.reader.readexactly(length)


async def client(
    port: int,
    replays: list[tuple[str, dict]],
    until: float,
    tally: Tally,
    index: int,
    opener: dict,
) -> None:
    """Play whole episodes on one connection until ``until``; every request timed."""

    async def ask(path: str, body: object, expected: int, token: str | None = None) -> bytes:
        started = time.perf_counter()
        status, answer = await asyncio.wait_for(
            connection.request(path, body, token), REQUEST_TIMEOUT_S
        )
        tally.latencies.append(time.perf_counter() - started)
        if status != expected:
            tally.errors.append(f"{path.rsplit('/', 1)[-1]}: {status} {answer[:120]!r}")
        return answer

    try:
        connection = Connection(*await asyncio.open_connection("127.0.0.1", port))
    except OSError as error:
        tally.errors.append(f"connect: {error}")
        return
    turn = index
    while time.monotonic() < until:
        task_id, replay = replays[turn % len(replays)]
        turn += 1
        try:
            opened = orjson.loads(
                await ask("/v1/episodes", {"task_id": task_id, **opener}, 201)
            )
            episode, token = f"/v1/episodes/{opened['episode_id']}", opened["token"]
            for call in replay["calls"]:
                await ask(f"{episode}/tools/{call['name']}", call["arguments"], 200, token)
            await ask(f"{episode}/finish", {"outputs": replay["outputs"]}, 200, token)
            tally.episodes += 1
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError, KeyError) as error:
            tally.errors.append(f"{type(error).__name__}: {error}")
            connection.writer.close()
            try:
                connection = Connection(*await asyncio.open_connection("127.0.0.1", port))
            except OSError:
                return
    connection.writer.close()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


async def soak(port: int, gateway_pid: int, options: argparse.Namespace) -> None:
    replays = sorted(load_replays([options.domain], None).items())
    tasks = [(task_id, replay) for (_, task_id), replay in replays]
    opener = {"domain": options.domain, "distractors": options.distractors}
    tally = Tally()
    rss = [(0.0, rss_mb(gateway_pid))]
    played = [0]  # episodes played by each sample
    started = time.monotonic()
    until = started + options.duration
    clients = [
        asyncio.create_task(client(port, tasks, until, tally, i, opener))
        for i in range(options.connections)
    ]
    while time.monotonic() < until:
        await asyncio.sleep(1.0)
        rss.append((time.monotonic() - started, rss_mb(gateway_pid)))
        played.append(tally.episodes)
    await asyncio.gather(*clients)
    elapsed = time.monotonic() - started
    warm_at = min(range(len(rss)), key=lambda i: abs(rss[i][0] - options.warmup))
    warm = rss[warm_at][1]
    end = rss[-1][1]
    latencies = sorted(tally.latencies)
    quantiles = statistics.quantiles(latencies, n=1000) if len(latencies) > 1 else [0.0] * 999
    print(f"{options.connections} connections, {elapsed:.1f} s, {tally.episodes} episodes, "
          f"{len(latencies)} requests ({len(latencies) / elapsed:,.0f}/s)")  # fmt: skip
    first = f" (first: {tally.errors[:3]})" if tally.errors else ""
    print(f"errors: {len(tally.errors)}{first}")
    print(f"latency ms: p50 {quantiles[499] * 1e3:.1f}  p99 {quantiles[989] * 1e3:.1f}  "
          f"p99.9 {quantiles[998] * 1e3:.1f}  max {latencies[-1] * 1e3:.1f}")  # fmt: skip
    print(f"gateway RSS MB: before load {rss[0][1]:.1f}, after {options.warmup:g} s warm-up "
          f"{warm:.1f}, end {end:.1f}, peak {max(r for _, r in rss):.1f}; growth after "
          f"warm-up {100 * (end - warm) / warm:+.1f} %")  # fmt: skip
    peak = max(r for _, r in rss)
    after = played[-1] - played[warm_at]
    if after > 0:
        per_episode_kb = (end - warm) * 1024 / after
        kept = min(options.keep_episodes, played[-1])
        print(f"retained per finished episode: {per_episode_kb:.2f} KB over {after} episodes "
              f"after warm-up; at {options.keep_episodes:,} kept episodes: "
              f"{warm + per_episode_kb * (options.keep_episodes - kept) / 1024:,.0f} MB "
              f"projected, limit {options.limit_mib} MB")  # fmt: skip
    if tally.errors or peak > options.limit_mib:
        sys.exit(1)
    if options.keep_episodes <= played[warm_at] and (end - warm) / warm > 0.10:
        sys.exit(1)  # past the count bound nothing more may be kept: growth is a leak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=500)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--warmup", type=float, default=10.0)
    parser.add_argument("--keep-episodes", type=int, default=2000)
    parser.add_argument("--domain", default="patient_intake")
    parser.add_argument("--distractors", type=int, default=0)
    parser.add_argument("--limit-mib", type=int, default=1024, help="the manifests' limit")
    options = parser.parse_args()
    # one descriptor per connection on each side, plus the gateway's to the service
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, 4 * options.connections + 256))
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    if wanted < 2 * options.connections + 64:
        sys.exit(f"the open-file limit ({hard}) is too low for {options.connections} connections")
    load_domain(options.domain)  # a clear error before any process starts
    secret = secrets.token_urlsafe(16)
    with tempfile.TemporaryDirectory() as logs, ProcessGroup() as group:
        tools_port, gateway_port = free_port(), free_port()
        env = {SERVICE_SECRET_ENV: secret}
        group.start("tools", sopgym_command("serve-tools", options.domain,
                                            "--port", str(tools_port)),
                    Path(logs) / "tools.log", env=env,
                    ready_url=f"http://127.0.0.1:{tools_port}/readyz").wait_ready()  # fmt: skip
        service = f"{options.domain}=http://127.0.0.1:{tools_port}"
        keep = str(options.keep_episodes)
        argv = sopgym_command("gateway", "--port", str(gateway_port), "--service", service,
                              "--keep-episodes", keep)  # fmt: skip
        gateway = group.start(
            "gateway",
            argv,
            Path(logs) / "gateway.log",
            env=env,
            ready_url=f"http://127.0.0.1:{gateway_port}/healthz",
        )
        gateway.wait_ready()
        print(f"gateway pid {gateway.popen.pid}, keeps {options.keep_episodes} episode records; "
              f"open-file limit {wanted}; {os.cpu_count()} CPUs")  # fmt: skip
        asyncio.run(soak(gateway_port, gateway.popen.pid, options))


if __name__ == "__main__":
    main()
