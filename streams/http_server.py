"""The HTTP/1.1 server under the probes, metrics and explain: its own thread and event loop, h11 for parsing, and
limits on what a client can make it hold.

It runs beside the processor rather than in its event loop, so connections, parsing and answers never queue ahead
of a batch's Kafka round trips: the processor's loop sees no HTTP socket at all. What a client can make the
server hold is bounded: connections (past `max_connections` nothing more is accepted until one ends, the kernel's
listen backlog holding the rest, and one idle for a second is closed to make room), the request line and headers
(`max_header_bytes`, past it 431; a malformed request 400), the rate of answers (`max_requests_per_second`), and
time (the request must arrive within `timeout_seconds`, the answer be taken within as long). A refused or failed
request is counted by reason in `placement_http_rejected_total` and logged at most once per reason per
`log_interval_seconds`, with how many were left out; never with a traceback. Accept errors at the file descriptor
limit are counted the same way and retried after a pause, without spinning.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus

import h11
from prometheus_client import Counter, Gauge

__all__ = ["HttpLimits", "Rejections", "Request", "Response", "ThreadedHttpServer"]

_log = logging.getLogger("placement.http")

_RESOURCE_ERRORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
"""accept() failing for want of descriptors or memory: the connection waits in the backlog, retried later."""
_ACCEPT_PAUSE_SECONDS = 0.25
_LINGER_BYTES = 256 * 1024
"""After an error answer, this much of what the client still sends is read and dropped before closing, so the
close does not reset the connection before the client has read the answer."""
_RECEIVE_BYTES = 16 * 1024
_EVICT_AFTER_SECONDS = 1.0


@dataclass
class _Open:
    """An accepted connection: since when, and whether its request is still awaited."""

    since: float
    receiving: bool = True


@dataclass(frozen=True)
class HttpLimits:
    """What one client, or many, can make the server hold."""

    max_connections: int = 64
    max_header_bytes: int = 16 * 1024
    timeout_seconds: float = 5.0
    log_interval_seconds: float = 60.0
    max_requests_per_second: float = 100.0
    """Requests are answered at most this often, evenly spaced: what clients in a loop cost the process (its
    interpreter lock included) stays bounded, however many they are."""
    max_body_bytes: int = 1024 * 1024
    """Bound on a request's body (a what-if document); past it the answer is 413."""


@dataclass(frozen=True)
class Request:
    """What the routes read of a request."""

    method: str
    target: str
    authorization: bytes = b""
    body: bytes = b""
    headers: tuple[tuple[bytes, bytes], ...] = ()
    """Every header, names lower-case (as h11 gives them)."""

    def header(self, name: bytes) -> bytes | None:
        """The first value of header `name` (lower-case), None when absent."""
        return next((value for key, value in self.headers if key == name), None)


class _BodyTooLarge(Exception):
    """The request's body is over `max_body_bytes`."""


@dataclass(frozen=True)
class Response:
    """An answer; always sent with Content-Length and `Connection: close`."""

    status: int
    body: bytes
    content_type: str = "text/plain"
    headers: tuple[tuple[str, str], ...] = ()

    def encode(self) -> bytes:
        """Status line, headers and body."""
        extra = "".join(f"{name}: {value}\r\n" for name, value in self.headers)
        head = (
            f"HTTP/1.1 {self.status} {HTTPStatus(self.status).phrase}\r\n{extra}Content-Type: {self.content_type}\r\n"
            f"Content-Length: {len(self.body)}\r\nConnection: close\r\n\r\n"
        )
        return head.encode() + self.body


@dataclass
class Rejections:
    """Refused and failed requests: a counter per reason, and a log line per reason at most once per interval."""

    counter: Counter
    interval: float
    _last: dict[str, tuple[float, int]] = field(default_factory=dict)
    """reason -> (when last logged, how many since)."""

    def note(self, reason: str, detail: str) -> None:
        """Count one; log it unless this reason was logged less than `interval` ago."""
        self.counter.labels(reason).inc()
        now = time.monotonic()
        last = self._last.get(reason)
        if last is not None and now - last[0] < self.interval:
            self._last[reason] = (last[0], last[1] + 1)
            return
        self._last[reason] = (now, 0)
        left_out = last[1] if last is not None else 0
        _log.warning(
            "HTTP request refused: %s (%s); more are counted in placement_http_rejected_total, logged at most"
            " once every %g s",
            reason,
            detail,
            self.interval,
            extra={"reason": reason, "left_out": left_out},
        )


Handler = Callable[[Request], Awaitable[Response]]


class ThreadedHttpServer:
    """Serves `handler` on a listening socket from a thread of its own; one request per connection."""

    def __init__(self, handler: Handler, limits: HttpLimits, rejected: Counter, connections: Gauge) -> None:
        self._handler = handler
        self._limits = limits
        self._rejections = Rejections(rejected, limits.log_interval_seconds)
        self._connections_gauge = connections
        self._open: dict[asyncio.Task[None], _Open] = {}
        """Accepted connections, by the task serving each."""
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped: asyncio.Event | None = None
        self._wake: asyncio.Event | None = None
        """Set when a connection ends or one waits to be accepted."""
        self._next_answer = 0.0
        """Loop time at which the next request may be answered."""
        self._started = threading.Event()

    def start(self, host: str, port: int) -> int:
        """Bind and listen here (a port in use fails the caller), then serve from the thread; returns the port."""
        listener = socket.create_server((host, port), backlog=128, reuse_port=False)
        listener.setblocking(False)
        self._thread = threading.Thread(target=self._run, args=(listener,), name="placement-http", daemon=True)
        self._thread.start()
        self._started.wait()
        return int(listener.getsockname()[1])

    def stop(self, timeout: float) -> None:
        """Close the listener and every connection; blocks up to `timeout` for the thread to end."""
        loop, stopped, thread = self._loop, self._stopped, self._thread
        if loop is not None and stopped is not None:
            with contextlib.suppress(RuntimeError):  # the loop already ended
                loop.call_soon_threadsafe(stopped.set)
        if thread is not None:
            thread.join(timeout)
        self._thread = None

    def _run(self, listener: socket.socket) -> None:
        try:
            asyncio.run(self._serve(listener))
        finally:
            listener.close()
            self._started.set()  # start() returns even if the loop failed to start

    async def _serve(self, listener: socket.socket) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped, self._wake = asyncio.Event(), asyncio.Event()
        self._started.set()
        accepting = asyncio.create_task(self._accept(listener))
        try:
            await self._stopped.wait()
        finally:
            accepting.cancel()
            connections = list(self._open)
            for task in connections:
                task.cancel()
            await asyncio.gather(accepting, *connections, return_exceptions=True)
            self._loop = None

    async def _accept(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            if len(self._open) >= self._limits.max_connections:
                await self._slot(listener)
            try:
                client, _ = await loop.sock_accept(listener)
            except OSError as exc:
                if exc.errno in _RESOURCE_ERRORS:
                    self._rejections.note("accept_failed", f"accept: {exc.strerror}; retried shortly")
                    await asyncio.sleep(_ACCEPT_PAUSE_SECONDS)
                continue  # a connection aborted before it was accepted
            client.setblocking(False)
            state = _Open(time.monotonic())
            task = asyncio.create_task(self._connection(client, state))
            self._open[task] = state
            self._connections_gauge.set(len(self._open))

    async def _slot(self, listener: socket.socket) -> None:
        """At the connection limit, accept nothing until a connection ends: clients past the limit wait in the
        listen backlog (beyond it the kernel drops their connection attempts, and they retry), costing the
        process nothing however fast they come. Once one waits (counted once per such wait), the connection
        that has waited longest for its request, at least `_EVICT_AFTER_SECONDS`, is closed for it: idle clients
        holding every connection cannot keep a probe out for longer than that."""
        loop, wake = asyncio.get_running_loop(), self._wake
        assert wake is not None
        fd, waiting = listener.fileno(), [False]

        def held_back() -> None:
            loop.remove_reader(fd)
            waiting[0] = True
            wake.set()
            self._rejections.note("too_many_connections", f"{self._limits.max_connections} connections open")

        wake.clear()
        loop.add_reader(fd, held_back)
        try:
            while len(self._open) >= self._limits.max_connections:
                delay = self._evict_idlest() if waiting[0] else None
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(delay):
                        await wake.wait()
                wake.clear()
        finally:
            loop.remove_reader(fd)

    def _evict_idlest(self) -> float | None:
        """Close the connection waiting longest for its request if it waited `_EVICT_AFTER_SECONDS`; else the
        seconds until one will have (None: every connection is being answered, or one was just closed)."""
        receiving = [(state.since, task) for task, state in self._open.items() if state.receiving]
        if not receiving:
            return None
        since, task = min(receiving, key=lambda pair: pair[0])
        wait = since + _EVICT_AFTER_SECONDS - time.monotonic()
        if wait > 0:
            return wait
        self._open[task].receiving = False  # cancelled once
        task.cancel()
        self._rejections.note("idle_evicted", "closed to accept a waiting connection")
        return None

    async def _connection(self, client: socket.socket, state: _Open) -> None:
        """Serve one accepted connection (counted in `_open` by the accept loop) and close it."""
        try:
            answer = await self._answer(client, state)
            if answer is not None:
                await self._send(client, answer)
        except (ConnectionError, TimeoutError) as exc:
            self._rejections.note("timeout" if isinstance(exc, TimeoutError) else "reset", type(exc).__name__)
        except OSError as exc:
            self._rejections.note("socket_error", exc.strerror or type(exc).__name__)
        finally:
            client.close()
            this = asyncio.current_task()
            if this is not None:
                self._open.pop(this, None)
            self._connections_gauge.set(len(self._open))
            if self._wake is not None:
                self._wake.set()

    async def _answer(self, client: socket.socket, state: _Open) -> bytes | None:
        """The encoded answer to the request, or None when the client left without one."""
        try:
            async with asyncio.timeout(self._limits.timeout_seconds):
                request = await self._receive(client)
            state.receiving = False
        except (h11.RemoteProtocolError, _BodyTooLarge) as exc:
            if isinstance(exc, _BodyTooLarge):
                status, reason = 413, "body_too_large"
            else:
                status = exc.error_status_hint if exc.error_status_hint in (400, 431) else 400
                reason = "header_too_large" if status == 431 else "bad_request"
            self._rejections.note(reason, str(exc))
            message = f"{HTTPStatus(status).phrase}: {exc}\n".encode()
            await self._send(client, Response(status, message).encode())
            await self._linger(client)
            return None
        if request is None:
            return None
        await self._pace()
        return (await self._respond(request)).encode()

    async def _pace(self) -> None:
        """Wait for this request's turn: answers are spaced `1 / max_requests_per_second` apart. A waiting request
        holds its connection, so past the connection limit clients wait in the backlog at no cost."""
        now = asyncio.get_running_loop().time()
        turn = max(now, self._next_answer)
        self._next_answer = turn + 1 / self._limits.max_requests_per_second
        if turn > now:
            await asyncio.sleep(turn - now)

    async def _respond(self, request: Request) -> Response:
        try:
            return await self._handler(request)
        except Exception:  # a failing handler answers 500: the client never sees a dropped connection
            _log.exception("HTTP %s failed", request.target)
            return Response(500, b'{"error":"internal error, see the service log"}\n', "application/json")

    async def _receive(self, client: socket.socket) -> Request | None:
        loop = asyncio.get_running_loop()
        parser = h11.Connection(h11.SERVER, max_incomplete_event_size=self._limits.max_header_bytes)
        while True:
            event = parser.next_event()
            if event is h11.NEED_DATA:
                parser.receive_data(await loop.sock_recv(client, _RECEIVE_BYTES))
            elif isinstance(event, h11.Request):
                headers = tuple((bytes(k), bytes(v)) for k, v in event.headers)
                authorization = next((v for k, v in headers if k == b"authorization"), b"")
                body = await self._body(client, parser, headers)
                if body is None:
                    return None
                method, target = event.method.decode("ascii", "replace"), event.target.decode("latin-1")
                return Request(method, target, authorization, body, headers)
            else:  # the client closed before a whole request
                return None

    async def _body(
        self, client: socket.socket, parser: h11.Connection, headers: tuple[tuple[bytes, bytes], ...]
    ) -> bytes | None:
        """The request's body, within `max_body_bytes` (a declared length over it is refused before reading);
        None when the client closed first."""
        limit = self._limits.max_body_bytes
        declared = next((v for k, v in headers if k == b"content-length"), b"0")
        if declared.isdigit() and int(declared) > limit:
            raise _BodyTooLarge(f"the body is over {limit} bytes")
        loop, size = asyncio.get_running_loop(), 0
        chunks: list[bytes] = []
        if parser.they_are_waiting_for_100_continue:  # curl asks before sending a body over 1 KiB
            await loop.sock_sendall(client, b"HTTP/1.1 100 Continue\r\n\r\n")
        while True:
            event = parser.next_event()
            if event is h11.NEED_DATA:
                parser.receive_data(await loop.sock_recv(client, _RECEIVE_BYTES))
            elif isinstance(event, h11.Data):
                size += len(event.data)
                if size > limit:
                    raise _BodyTooLarge(f"the body is over {limit} bytes")
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(chunks)
            else:
                return None

    async def _send(self, client: socket.socket, data: bytes) -> None:
        async with asyncio.timeout(self._limits.timeout_seconds):
            await asyncio.get_running_loop().sock_sendall(client, data)

    async def _linger(self, client: socket.socket) -> None:
        """Read and drop what the client still sends, within bounds, so closing does not reset the connection
        before it has read the error answer."""
        loop = asyncio.get_running_loop()
        with contextlib.suppress(OSError, TimeoutError):
            client.shutdown(socket.SHUT_WR)
            async with asyncio.timeout(min(1.0, self._limits.timeout_seconds)):
                dropped = 0
                while dropped < _LINGER_BYTES:
                    data = await loop.sock_recv(client, _RECEIVE_BYTES)
                    if not data:
                        return
                    dropped += len(data)
