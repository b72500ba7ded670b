"""The service's HTTP endpoint: /metrics, /healthz (= /livez), /readyz and /explain/<subject key> (with a replica,
also /what-if and /status: replica.py); and the GET and POST its clients (`explain --url`, benchmarks, tests)
read it with.

The server (`streams/http_server.py`) runs in a thread of its own, with bounded connections, header sizes and
times. The probes read the processor's health where they run; /metrics serves a page rendered at most once per
`metrics_max_age` seconds, in a worker thread, so a crowd of scrapers costs one rendering; a bare explain
callable runs on the processor's event loop, a replica's explain in the engine's thread under the batch lock.

The probes and metrics are safe to expose; /explain shows placement internals (scores, candidates, reasons), so it
can require a bearer token, compared in constant time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hmac
import math
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from engine.errors import RoutingError
from engine.runtime.routing import explain_key
from streams.http_server import HttpLimits, Request, Response, ThreadedHttpServer
from streams.metrics import Metrics

if TYPE_CHECKING:
    from streams.replica import Replica

__all__ = ["HealthServer", "HttpLimits", "MetricsPage", "http_call", "http_get"]

_JSON = "application/json"
_STOP_SECONDS = 5.0
_T = TypeVar("_T")


class MetricsPage:
    """The /metrics page, rendered at most once per `max_age` seconds in a worker thread; scrapes meanwhile get
    the same bytes, and scrapes during a rendering wait for that one."""

    def __init__(self, registry: CollectorRegistry, max_age: float) -> None:
        self._registry = registry
        self._max_age = max_age
        self._page = b""
        self._rendered_at = -math.inf
        self._rendering: asyncio.Future[bytes] | None = None
        self.renders = 0

    async def get(self) -> bytes:
        """The page, rendered anew if the last one is older than `max_age`."""
        if time.monotonic() - self._rendered_at < self._max_age:
            return self._page
        if self._rendering is None:
            self._rendering = asyncio.ensure_future(self._render())
        return await asyncio.shield(self._rendering)

    async def _render(self) -> bytes:
        try:
            started = time.monotonic()
            page = await asyncio.to_thread(generate_latest, self._registry)
            self.renders += 1
            self._page, self._rendered_at = page, started
            return page
        finally:
            self._rendering = None


class HealthServer:
    """Serves probes, metrics and explain; `alive` and `ready` are read at request time."""

    def __init__(
        self,
        metrics: Metrics,
        alive: Callable[[], bool],
        ready: Callable[[], bool],
        explain: Callable[[str], dict[str, Any] | None] | None = None,
        explain_token: str | None = None,
        *,
        limits: HttpLimits | None = None,
        metrics_max_age: float = 1.0,
        replica: Replica | None = None,
    ) -> None:
        """With `replica`, /explain, /what-if and /status are the replica's (any replica answers, replica.py)."""
        self._replica = replica
        self._metrics = metrics
        self._explain = explain
        self._explain_token = explain_token.encode() if explain_token else None
        self._alive = alive
        self._ready = ready
        self._limits = limits or HttpLimits()
        self._page = MetricsPage(metrics.registry, metrics_max_age)
        self._server: ThreadedHttpServer | None = None
        self._owner: asyncio.AbstractEventLoop | None = None

    @property
    def metrics_renders(self) -> int:
        """How many times the /metrics page was rendered."""
        return self._page.renders

    async def start(self, host: str, port: int) -> int:
        """Listen; returns the bound port (useful with port 0 in tests). /explain runs on the caller's loop."""
        self._owner = asyncio.get_running_loop()
        if self._replica is not None:
            self._replica.start(self._owner)
        metrics = self._metrics
        self._server = ThreadedHttpServer(self._route, self._limits, metrics.http_rejected, metrics.http_connections)
        return await asyncio.to_thread(self._server.start, host, port)

    async def stop(self) -> None:
        """Stop listening and close every connection."""
        if self._server is not None:
            await asyncio.to_thread(self._server.stop, _STOP_SECONDS)
            self._server = None

    async def _route(self, request: Request) -> Response:
        path = request.target.split("?", 1)[0]
        if path == "/metrics":
            return Response(200, await self._page.get(), CONTENT_TYPE_LATEST)
        replica = self._replica
        if replica is not None and (path.startswith("/explain/") or path in ("/what-if", "/status")):
            if path != "/status" and not self._authorized(request.authorization):
                return _unauthorized(path)
            return await replica.handle(request, path)
        if path.startswith("/explain/") and self._explain is not None:
            if not self._authorized(request.authorization):
                return _unauthorized("/explain")
            return await self._explained(self._explain, unquote(path.removeprefix("/explain/")))
        if path in ("/healthz", "/livez"):
            ok = self._alive()
        elif path == "/readyz":
            ok = self._ready()
        else:
            return Response(404, b"not found\n")
        return Response(200, b"ok\n") if ok else Response(503, b"not ok\n")

    async def _explained(self, explain: Callable[[str], dict[str, Any] | None], text: str) -> Response:
        """The explain answer, computed on the processor's loop (the runtime is not read from other threads)."""
        if self._owner is None:
            return Response(503, _error("not started"), _JSON)
        try:
            async with asyncio.timeout(self._limits.timeout_seconds):
                return await asyncio.wrap_future(_call_on(self._owner, lambda: _explain_answer(explain, text)))
        except TimeoutError:
            return Response(503, _error("the processor did not answer in time; try again"), _JSON)

    def _authorized(self, authorization: bytes) -> bool:
        if self._explain_token is None:
            return True
        scheme, _, token = authorization.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self._explain_token)


def _call_on(loop: asyncio.AbstractEventLoop, call: Callable[[], _T]) -> concurrent.futures.Future[_T]:
    """Run `call` on `loop` (from another thread); its result or exception in the returned future."""
    future: concurrent.futures.Future[_T] = concurrent.futures.Future()

    def run() -> None:
        if future.set_running_or_notify_cancel():
            try:
                future.set_result(call())
            except Exception as exc:
                future.set_exception(exc)

    loop.call_soon_threadsafe(run)
    return future


def _explain_answer(explain: Callable[[str], dict[str, Any] | None], text: str) -> Response:
    """`NS/NAME` or a full subject key; 400 for a malformed key, 404 for a subject this instance does not hold
    (another instance may own it)."""
    try:
        key = explain_key(text)
    except RoutingError as exc:
        return Response(400, _error(str(exc)), _JSON)
    report = explain(key)
    if report is None:
        return Response(404, _error(f"no subject {key} on this instance"), _JSON)
    return Response(200, orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n", _JSON)


def _unauthorized(path: str) -> Response:
    """401 for /explain (or /what-if) without the bearer token."""
    error = _error(f"/{path.lstrip('/').split('/', 1)[0]} needs an Authorization: Bearer token")
    return Response(401, error, _JSON, (("WWW-Authenticate", "Bearer"),))


def _error(message: str) -> bytes:
    return orjson.dumps({"error": message}) + b"\n"


def http_get(url: str, timeout: float, bearer: str | None = None) -> tuple[int, bytes]:
    """Status and body of a GET, an error status included (blocking: from async code, run it in a thread);
    `bearer` is sent as the Authorization token.

    Raises:
        OSError: nothing answered (urllib's URLError is one).
    """
    return http_call(url, timeout, bearer)


def http_call(
    url: str, timeout: float, bearer: str | None = None, body: bytes | None = None, content_type: str = _JSON
) -> tuple[int, bytes]:
    """`http_get`, or a POST of `body` when one is given."""
    try:
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        if body is not None:
            headers["Content-Type"] = content_type
        request = urllib.request.Request(url, data=body, headers=headers, method="GET" if body is None else "POST")
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
