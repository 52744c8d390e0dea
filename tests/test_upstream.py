"""The gateway's keep-alive pool to tool services (gateway/upstream.py), against a scripted
asyncio server that answers, drops or ignores requests on purpose."""

from __future__ import annotations

import asyncio
from types import EllipsisType

from sopgym.gateway.upstream import UpstreamPool

OK = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"
CLOSING = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}"
Answer = bytes | EllipsisType | None


class Upstream:
    """Plays ``script[n]`` on its n-th connection: per request, the bytes to answer with,
    ``None`` to drop the connection unanswered, or ``...`` to never answer."""

    def __init__(self, script: list[list[Answer]]) -> None:
        self.script = script
        self.seen: list[list[str]] = []
        self.closed_by_peer: list[int] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        index = len(self.seen)
        self.seen.append([])
        for answer in self.script[index]:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:  # the pool closed this connection
                break
            length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length"))  # fmt: skip
            await reader.readexactly(length)
            self.seen[index].append(head.split(b" ")[1].decode())
            if answer is None:
                break
            if answer is ...:
                if await reader.read() == b"":
                    self.closed_by_peer.append(index)
                break
            writer.write(answer)
        writer.close()


async def with_upstream(
    script: list[list[Answer]], calls: list[str], timeout: float = 0.5
) -> tuple[Upstream, list[object], int]:
    upstream = Upstream(script)
    server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0)
    pool = UpstreamPool("127.0.0.1", server.sockets[0].getsockname()[1], timeout=timeout)
    results: list[object] = []
    for path in calls:
        try:
            results.append(await pool.post(path, b"{}"))
        except Exception as error:
            results.append(type(error).__name__)
        await asyncio.sleep(0.05)
    idle = len(pool._idle)
    pool.close()
    server.close()
    return upstream, results, idle


def test_a_kept_connection_dropped_unanswered_is_retried_once_on_a_fresh_one() -> None:
    upstream, results, _ = asyncio.run(with_upstream([[OK, None], [OK]], ["/a", "/b"]))
    assert results == [(200, b"{}"), (200, b"{}")]
    assert upstream.seen == [["/a", "/b"], ["/b"]]


def test_a_retry_that_times_out_closes_its_connection() -> None:
    upstream, results, idle = asyncio.run(with_upstream([[OK, None], [...]], ["/a", "/b"]))
    assert results[1] == "TimeoutError" and idle == 0
    assert upstream.closed_by_peer == [1], "the retry's connection was left open"


def test_a_connection_the_service_says_it_closes_is_not_pooled() -> None:
    # the service would in fact answer /b on that connection: only the header says not to
    upstream, results, _ = asyncio.run(with_upstream([[CLOSING, OK], [OK]], ["/a", "/b"]))
    assert results == [(200, b"{}"), (200, b"{}")]
    assert upstream.seen == [["/a"], ["/b"]]


def test_a_kept_connection_times_out_each_request_on_its_own_deadline() -> None:
    """The connection's one timer, set by the first request, fires before the second one's
    answer is due: it must wait on for that, then time it out."""

    async def calls() -> tuple[Upstream, list[object], float]:
        upstream = Upstream([[OK, ...]])
        server = await asyncio.start_server(upstream.handle, "127.0.0.1", 0)
        pool = UpstreamPool("127.0.0.1", server.sockets[0].getsockname()[1], timeout=0.4)
        results: list[object] = [await pool.post("/a", b"{}")]
        await asyncio.sleep(0.2)  # the first request's deadline is now 0.2 s away
        started = asyncio.get_running_loop().time()
        try:
            results.append(await pool.post("/b", b"{}"))
        except TimeoutError:
            results.append("TimeoutError")
        waited = asyncio.get_running_loop().time() - started
        pool.close()
        server.close()
        return upstream, results, waited

    upstream, results, waited = asyncio.run(calls())
    assert results == [(200, b"{}"), "TimeoutError"]
    assert upstream.seen == [["/a", "/b"]]
    assert waited >= 0.39, f"timed out after {waited:.2f} s, before the 0.4 s deadline"
