"""A tiny HTTP endpoint on asyncio streams: /metrics, /healthz (= /livez), /readyz and /explain/<subject key>;
and the GET its clients (`explain --url`, benchmarks, tests) read it with.

The probes and metrics are safe to expose; /explain shows placement internals (scores, candidates, reasons), so it
can require a bearer token, compared in constant time.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

import orjson
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from engine.errors import RoutingError
from engine.runtime.routing import explain_key
from streams.metrics import Metrics

__all__ = ["HealthServer", "http_get"]

_log = logging.getLogger(__name__)
_JSON = "application/json"
_MAX_HEADERS = 100


class HealthServer:
    """Serves probes and metrics; `alive` and `ready` are read at request time."""

    def __init__(
        self,
        metrics: Metrics,
        alive: Callable[[], bool],
        ready: Callable[[], bool],
        explain: Callable[[str], dict[str, Any] | None] | None = None,
        explain_token: str | None = None,
    ) -> None:
        self._metrics = metrics
        self._explain = explain
        self._explain_token = explain_token.encode() if explain_token else None
        self._alive = alive
        self._ready = ready
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        """Listen; returns the bound port (useful with port 0 in tests)."""
        self._server = await asyncio.start_server(self._handle, host, port)
        return int(self._server.sockets[0].getsockname()[1])

    async def stop(self) -> None:
        """Stop listening."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            authorization = b""
            for _ in range(_MAX_HEADERS):
                line = await asyncio.wait_for(reader.readline(), 5)
                if line in (b"\r\n", b"\n", b""):
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"authorization":
                    authorization = value.strip()
            parts = request.decode(errors="replace").split()
            path = parts[1].split("?", 1)[0] if len(parts) > 1 else "/"
            try:
                status, body, ctype = self._route(path, authorization)
            except Exception:  # a failing handler answers 500: the client never sees a dropped connection
                _log.exception("HTTP %s failed", path)
                status, body, ctype = "500 Internal Server Error", _error("internal error, see the service log"), _JSON
            challenge = "WWW-Authenticate: Bearer\r\n" if status.startswith("401") else ""
            head = (
                f"HTTP/1.1 {status}\r\n{challenge}Content-Type: {ctype}\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            writer.write(head.encode() + body)
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    def _route(self, path: str, authorization: bytes = b"") -> tuple[str, bytes, str]:
        if path == "/metrics":
            return "200 OK", generate_latest(self._metrics.registry), CONTENT_TYPE_LATEST
        if path.startswith("/explain/") and self._explain is not None:
            if not self._authorized(authorization):
                return "401 Unauthorized", _error("/explain needs an Authorization: Bearer token"), _JSON
            return _explain_answer(self._explain, unquote(path.removeprefix("/explain/")))
        if path in ("/healthz", "/livez"):
            ok = self._alive()
        elif path == "/readyz":
            ok = self._ready()
        else:
            return "404 Not Found", b"not found\n", "text/plain"
        return ("200 OK", b"ok\n", "text/plain") if ok else ("503 Service Unavailable", b"not ok\n", "text/plain")

    def _authorized(self, authorization: bytes) -> bool:
        if self._explain_token is None:
            return True
        scheme, _, token = authorization.partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self._explain_token)


def _explain_answer(explain: Callable[[str], dict[str, Any] | None], text: str) -> tuple[str, bytes, str]:
    """`NS/NAME` or a full subject key; 400 for a malformed key, 404 for a subject this instance does not hold
    (another instance may own it)."""
    try:
        key = explain_key(text)
    except RoutingError as exc:
        return "400 Bad Request", _error(str(exc)), _JSON
    report = explain(key)
    if report is None:
        return "404 Not Found", _error(f"no subject {key} on this instance"), _JSON
    return "200 OK", orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n", _JSON


def _error(message: str) -> bytes:
    return orjson.dumps({"error": message}) + b"\n"


def http_get(url: str, timeout: float, bearer: str | None = None) -> tuple[int, bytes]:
    """Status and body of a GET, an error status included (blocking: from async code, run it in a thread);
    `bearer` is sent as the Authorization token.

    Raises:
        OSError: nothing answered (urllib's URLError is one).
    """
    try:
        headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
