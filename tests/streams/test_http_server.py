"""The HTTP endpoint's bounds, against the real server on loopback: oversized and malformed requests get a 4xx and
one counted log line without a traceback, connections past the limit get 503, idle and slow clients are closed,
a burst of scrapes is served from one rendering, and accept failures at the descriptor limit do not flood the log.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from streams.http import HealthServer, http_get
from streams.http_server import HttpLimits, Request, Response, ThreadedHttpServer
from streams.metrics import Metrics

ROOT = Path(__file__).resolve().parents[2]


_CHUNKS = b"".join(b"%x\r\n%s\r\n" % (60_000, b"x" * 60_000) for _ in range(20)) + b"0\r\n\r\n"
"""1.2 MB sent in chunks, no length declared: the bound applies to what arrives."""


@dataclass
class Served:
    server: HealthServer
    metrics: Metrics
    port: int

    def rejected(self, reason: str) -> float:
        return self.metrics.http_rejected.labels(reason)._value.get()

    def get(self, path: str) -> tuple[int, bytes]:
        return http_get(f"http://127.0.0.1:{self.port}{path}", 10)


@contextlib.asynccontextmanager
async def serving(limits: HttpLimits, metrics_max_age: float = 1.0) -> AsyncIterator[Served]:
    metrics = Metrics()
    server = HealthServer(metrics, lambda: True, lambda: True, limits=limits, metrics_max_age=metrics_max_age)
    port = await server.start("127.0.0.1", 0)
    try:
        yield Served(server, metrics, port)
    finally:
        await server.stop()


@contextlib.contextmanager
def connected(port: int) -> Iterator[socket.socket]:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        yield sock


def exchange(port: int, request: bytes) -> bytes:
    """Send `request` (from a thread, so a large one cannot block the reading) and read the answer to EOF."""
    with connected(port) as sock:

        def send() -> None:
            with contextlib.suppress(OSError):  # the server may close before taking everything
                sock.sendall(request)

        sender = threading.Thread(target=send)
        sender.start()
        received = b""
        with contextlib.suppress(ConnectionResetError):
            while chunk := sock.recv(65536):
                received += chunk
        sender.join(10)
    return received


async def until(predicate: Callable[[], bool]) -> None:
    """Wait for `predicate`, failing (not hanging) if it does not come true."""
    for _ in range(1000):
        if predicate():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("condition not reached")


def http_errors(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "placement.http"]


@pytest.mark.parametrize(
    ("request_bytes", "status", "reason"),
    [
        (b"GET /livez HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_048_576 + b"\r\n\r\n", b"431", "header_too_large"),
        (b"GET /" + b"a" * 40_000 + b" HTTP/1.1\r\n\r\n", b"431", "header_too_large"),
        (b"GET /livez HTTP/1.1\r\n" + b"X-Many: 1\r\n" * 4000 + b"\r\n", b"431", "header_too_large"),
        (b"NOT HTTP AT ALL\r\n\r\n", b"400", "bad_request"),
        (b"GET /livez HTTP/1.1\r\nno colon here\r\n\r\n", b"400", "bad_request"),
        (b"POST /what-if HTTP/1.1\r\nHost: x\r\nContent-Length: 2000000\r\n\r\n", b"413", "body_too_large"),
        (
            b"POST /what-if HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + _CHUNKS,
            b"413",
            "body_too_large",
        ),
    ],
    ids=["1MB-header", "long-request-line", "many-headers", "garbage", "malformed-header", "declared", "chunked"],
)
async def test_an_oversized_or_malformed_request_gets_a_4xx_and_one_line_without_traceback(
    caplog: pytest.LogCaptureFixture, request_bytes: bytes, status: bytes, reason: str
) -> None:
    caplog.set_level(logging.INFO)
    async with serving(HttpLimits(max_header_bytes=16_384)) as served:
        answers = [await asyncio.to_thread(exchange, served.port, request_bytes) for _ in range(5)]
        assert (await asyncio.to_thread(served.get, "/livez"))[0] == 200  # still serving
        assert served.rejected(reason) == 5
    assert [a.split(b" ", 2)[1] for a in answers] == [status] * 5
    lines = http_errors(caplog)
    assert len(lines) == 1  # once per reason and interval, however many requests
    assert reason in lines[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)


async def test_connections_past_the_limit_wait_unaccepted_while_every_one_is_answered() -> None:
    gate = threading.Event()
    metrics = Metrics()

    async def slow(request: Request) -> Response:
        await asyncio.to_thread(gate.wait, 30)
        return Response(200, b"ok\n")

    server = ThreadedHttpServer(slow, HttpLimits(max_connections=2), metrics.http_rejected, metrics.http_connections)
    port = await asyncio.to_thread(server.start, "127.0.0.1", 0)
    try:
        request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        answered = [asyncio.create_task(asyncio.to_thread(exchange, port, request)) for _ in range(2)]
        await until(lambda: metrics.http_connections._value.get() == 2)
        third = asyncio.create_task(asyncio.to_thread(exchange, port, request))
        await until(lambda: metrics.http_rejected.labels("too_many_connections")._value.get() == 1)
        assert metrics.http_connections._value.get() == 2  # held back in the backlog, not accepted
        assert not third.done()
        gate.set()
        answers = [await task for task in (*answered, third)]
    finally:
        gate.set()
        await asyncio.to_thread(server.stop, 10)
    assert all(answer.startswith(b"HTTP/1.1 200 ") for answer in answers)
    assert metrics.http_rejected.labels("idle_evicted")._value.get() == 0  # answering connections are not closed


async def test_idle_connections_holding_every_slot_make_room_for_a_request() -> None:
    async with serving(HttpLimits(max_connections=2, timeout_seconds=60)) as served:
        with connected(served.port) as first, connected(served.port) as second:
            await until(lambda: served.metrics.http_connections._value.get() == 2)
            answer = await asyncio.to_thread(exchange, served.port, b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
            assert await asyncio.to_thread(first.recv, 1024) == b""  # the longest idle was closed for it
            assert served.rejected("idle_evicted") == 1
            assert served.rejected("too_many_connections") == 1
            second.settimeout(0.2)
            with pytest.raises(TimeoutError):
                second.recv(1024)  # still open
    assert answer.startswith(b"HTTP/1.1 200 ")


@pytest.mark.parametrize("sent", [b"", b"GET /livez HTTP/1.1\r\nHost: x\r\n"], ids=["idle", "slow-headers"])
async def test_an_idle_or_slow_client_is_closed_after_the_timeout(sent: bytes) -> None:
    async with serving(HttpLimits(timeout_seconds=0.2)) as served:
        with connected(served.port) as sock:
            sock.sendall(sent)
            assert await asyncio.to_thread(sock.recv, 1024) == b""  # closed by the server, nothing answered
        assert served.rejected("timeout") == 1
        assert (await asyncio.to_thread(served.get, "/livez"))[0] == 200


async def test_answers_are_spaced_at_the_request_rate() -> None:
    async with serving(HttpLimits(max_requests_per_second=2)) as served:
        first = await asyncio.to_thread(served.get, "/livez")
        later = [asyncio.create_task(asyncio.to_thread(served.get, "/livez")) for _ in range(3)]
        _done, pending = await asyncio.wait(later, return_when=asyncio.FIRST_COMPLETED)
        assert pending  # the others wait their turn, half a second apart
        statuses = [first[0], *[(await task)[0] for task in later]]
    assert statuses == [200] * 4


def _scrapes(served: Served, count: int) -> list[tuple[int, bytes]]:
    with concurrent.futures.ThreadPoolExecutor(count) as pool:
        return list(pool.map(lambda _: served.get("/metrics"), range(count)))


async def test_a_burst_of_scrapes_is_served_from_one_rendering() -> None:
    async with serving(HttpLimits(), metrics_max_age=60) as served:
        served.metrics.decided.inc(7)
        answers = await asyncio.to_thread(_scrapes, served, 30)
        served.metrics.decided.inc(1)  # not seen until the page is older than its maximum age
        later = await asyncio.to_thread(served.get, "/metrics")
        renders = served.server.metrics_renders
    assert {status for status, _ in answers} == {200}
    assert all(b"placement_subjects_decided_total 7.0" in body for _, body in answers)
    assert b"placement_subjects_decided_total 7.0" in later[1]
    assert renders == 1


async def test_without_a_maximum_age_every_scrape_sees_the_latest_values() -> None:
    async with serving(HttpLimits(), metrics_max_age=0) as served:
        for count in (1, 2, 3):
            served.metrics.decided.inc()
            assert f"placement_subjects_decided_total {count}.0".encode() in served.get("/metrics")[1]
        assert served.server.metrics_renders == 3


_AT_THE_LIMIT = """
import asyncio, os, resource, sys
from streams.http import HealthServer
from streams.http_server import HttpLimits, Request, Response, ThreadedHttpServer
from streams.logs import configure_logging
from streams.metrics import Metrics

async def main() -> None:
    configure_logging()
    metrics = Metrics()
    server = HealthServer(metrics, lambda: True, lambda: True, limits=HttpLimits(timeout_seconds=60))
    port = await server.start("127.0.0.1", 0)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 1, hard))
    print(port, flush=True)
    while (command := (await asyncio.to_thread(sys.stdin.readline)).strip()) != "stop":
        if command == "lift":
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        print(metrics.http_rejected.labels("accept_failed")._value.get(), flush=True)
    await server.stop()

asyncio.run(main())
"""


def test_accept_failures_at_the_descriptor_limit_are_counted_not_flooded() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", _AT_THE_LIMIT],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None

    def ask(command: str) -> float:
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(command + "\n")
        child.stdin.flush()
        return float(child.stdout.readline())

    try:
        port = int(child.stdout.readline())
        waiting = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(20)]
        for sock in waiting:
            sock.sendall(b"GET /livez HTTP/1.1\r\nHost: x\r\n\r\n")
        for _ in range(1000):  # accept fails, and is retried after a pause
            if ask("count") >= 3:
                break
            time.sleep(0.01)
        else:
            raise AssertionError("accept did not fail at the descriptor limit")
        ask("lift")
        answers = [sock.recv(1024) for sock in waiting]  # served once descriptors are there again
        for sock in waiting:
            sock.close()
        _, stderr = child.communicate("stop\n", timeout=30)
    finally:
        child.kill()
    assert all(answer.startswith(b"HTTP/1.1 200 ") for answer in answers)
    assert stderr.count('"reason":"accept_failed"') == 1
    assert "Traceback" not in stderr
