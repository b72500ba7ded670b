"""The HTTP routes that read a running processor: `/explain/<key>` and `POST /what-if`, answered here when this
instance owns the subject's task and forwarded to the owner otherwise (forwarding.py), and `/status`.

The routes run in the HTTP server's thread; what they read of the processor is read on the processor's event loop,
and the engines are called in the engine's worker thread under the batch lock, as a batch calls them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import parse_qs, unquote

import orjson

from engine.errors import RoutingError
from engine.runtime import Runtime
from engine.runtime.routing import explain_key
from engine.runtime.whatif import what_if
from streams.consumed import utcnow
from streams.forwarding import FORWARDED_BY, Forward, Here, Locality, Refuse, forward, route
from streams.http_server import Request, Response
from streams.kafka.membership import MemberDirectoryAssignor
from streams.status import status_document
from streams.whatif import WhatIfError, subject_event

if TYPE_CHECKING:
    from streams.service import Processor

__all__ = ["Replica"]

_JSON = "application/json"
_T = TypeVar("_T")


def _error(status: int, message: str) -> Response:
    return Response(status, orjson.dumps({"error": message}) + b"\n", _JSON)


def _json(document: Any) -> Response:
    return Response(200, orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n", _JSON)


class Replica:
    """One processor's view for the routes: which tasks it owns, the group's member map, and its engines."""

    def __init__(self, processor: Processor, assignor: MemberDirectoryAssignor, timeout: float) -> None:
        self._processor = processor
        self._assignor = assignor
        self._timeout = timeout
        self._loop: asyncio.AbstractEventLoop | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """The processor's loop, where its state is read."""
        self._loop = loop

    async def handle(self, request: Request, path: str) -> Response:
        """Answer /status, /explain/<key> or /what-if."""
        if self._loop is None:
            return _error(503, "not started")
        try:
            if path == "/status":
                return _json(await self._on_loop(self._status))
            if path.startswith("/explain/"):
                return await self._explain(request, unquote(path.removeprefix("/explain/")))
            if request.method != "POST":
                return Response(405, b'{"error":"POST a document to /what-if"}\n', _JSON, (("Allow", "POST"),))
            return await self._what_if(request)
        except TimeoutError:
            return _error(503, "the processor did not answer in time (a batch or a restore holds it); try again")

    async def _explain(self, request: Request, text: str) -> Response:
        try:
            key = explain_key(text)
        except RoutingError as exc:
            return _error(400, str(exc))
        missing = _error(404, f"no subject {key}: its owner holds no such subject")
        return await self._owned(request, key, lambda runtime: runtime.explain(key, utcnow()), missing)

    async def _what_if(self, request: Request) -> Response:
        namespace = parse_qs(request.target.partition("?")[2]).get("namespace", ["default"])[0]
        try:
            key, event = await asyncio.to_thread(subject_event, request.body, utcnow(), namespace)
        except WhatIfError as exc:
            return _error(400, str(exc))
        missing = _error(400, f"{key}: its engine cannot evaluate a what-if")
        return await self._owned(request, key, lambda runtime: what_if(runtime, key, event, utcnow()), missing)

    async def _owned(
        self, request: Request, key: str, ask: Callable[[Runtime], dict[str, Any] | None], missing: Response
    ) -> Response:
        """`ask` of the runtime on the subject's owner: here in the engine's thread, else forwarded; `missing`
        when it has no answer."""
        hop = await self._route(request, key)
        if not isinstance(hop, Here):
            return await self._elsewhere(hop, request)
        runtime = self._processor.runtime
        if runtime is None:
            return _error(503, "not started")
        answer = await self._on_loop(lambda: self._engine(lambda: ask(runtime)))
        return missing if answer is None else _json(answer)

    async def _route(self, request: Request, key: str) -> Here | Forward | Refuse:
        assignor = self._assignor
        task = self._processor.task_of(key)
        local = await self._on_loop(lambda: self._locality(task))
        by = request.header(FORWARDED_BY.lower().encode())
        return route(
            task,
            local,
            assignor.directory,
            joining=assignor.joining,
            forwarded_by=None if by is None else by.decode("latin-1"),
            own_url=assignor.url,
        )

    async def _elsewhere(self, hop: Forward | Refuse, request: Request) -> Response:
        if isinstance(hop, Refuse):
            return _error(hop.status, hop.message)
        return await asyncio.to_thread(forward, hop, request, self._assignor.url, self._timeout)

    # what the routes read of the processor, in one place (its attributes are set as it starts)
    def _assigned(self) -> frozenset[int]:
        """The tasks the group assigned to this instance, restored or not."""
        return self._processor.assigned_tasks

    async def _locality(self, task: int) -> Locality:
        if task in self._processor.owned_tasks:
            return Locality.OWNED
        return Locality.RESTORING if task in self._assigned() else Locality.ELSEWHERE

    async def _status(self) -> dict[str, Any]:
        processor = self._processor
        runtime = processor.runtime
        return status_document(
            url=self._assignor.url,
            ready=processor.health.ready(),
            owned=processor.owned_tasks,
            assigned=self._assigned(),
            restores=processor.restores,
            directory=self._assignor.directory,
            metrics=processor.metrics,
            subjects=0 if runtime is None else len(runtime.states),
        )

    async def _engine(self, call: Callable[[], _T]) -> _T:
        """`call` in the engine's worker thread while no batch runs."""
        return await self._processor.in_engine(call)

    async def _on_loop(self, make: Callable[[], Awaitable[_T]]) -> _T:
        """`make()` awaited on the processor's loop, within the timeout."""
        assert self._loop is not None

        async def run() -> _T:
            return await make()

        future = asyncio.run_coroutine_threadsafe(run(), self._loop)
        async with asyncio.timeout(self._timeout):
            return await asyncio.wrap_future(future)
