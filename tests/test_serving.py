"""The uvicorn set-up shared by sopgym's servers: a response head leaves with its body."""

from __future__ import annotations

import asyncio

from sopgym.serving import _CoalescingTransport


class RecordingTransport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes) -> None:  # type: ignore[override]
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 1) if name == "peername" else default


HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


def test_head_and_body_leave_in_one_write_and_other_writes_pass_through() -> None:
    async def scenario() -> list[bytes]:
        inner = RecordingTransport()
        transport = _CoalescingTransport(inner, asyncio.get_running_loop())
        transport.write(HEAD)
        assert inner.writes == []  # held back
        transport.write(b"{}")
        transport.write(b"5\r\nchunk\r\n")  # a later write (e.g. a streamed chunk) goes at once
        await asyncio.sleep(0)
        assert transport.get_extra_info("peername") == ("127.0.0.1", 1)  # the rest delegates
        return inner.writes

    assert asyncio.run(scenario()) == [HEAD + b"{}", b"5\r\nchunk\r\n"]


def test_a_head_alone_leaves_at_the_end_of_the_step_and_close_flushes() -> None:
    async def scenario() -> tuple[list[bytes], list[bytes], bool]:
        loop = asyncio.get_running_loop()
        alone, closing = RecordingTransport(), RecordingTransport()
        _CoalescingTransport(alone, loop).write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await asyncio.sleep(0)
        held = _CoalescingTransport(closing, loop)
        held.write(HEAD)
        held.close()
        return alone.writes, closing.writes, closing.closed

    alone, closing, closed = asyncio.run(scenario())
    assert alone == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    assert closing == [HEAD] and closed
