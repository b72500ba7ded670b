"""Listing and watching each kind, publishing what differs, resuming after an expired watch.

Per kind: list (the published state is compared with every object, deletions included), then watch from the
list's resourceVersion, so no change between the two is missed. A `410 Gone` (the server no longer has that
version) or a broken connection means a new list, which again publishes only what differs. One change is sent
at a time, recorded as in doubt before and as published once the broker acknowledged it, so a key's records
keep the order of the API server's changes and a kill loses none (`published.py`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx2
from lightkube import ApiError, AsyncClient
from lightkube.generic_resource import create_global_resource, create_namespaced_resource

from cli.watch.changes import Change, change_of_deletion, change_of_object, changes_of_list
from cli.watch.kinds import WatchedKind
from cli.watch.published import Published, in_doubt
from topics.objects.convert import Outgoing

__all__ = ["Follower", "Send"]

Send = Callable[[list[Outgoing]], Awaitable[None]]
"""Publish records and return once the broker acknowledged every one."""

_GONE = 410
_NOT_SERVED = 404
_log = logging.getLogger(__name__)


def _resource(kind: WatchedKind) -> Any:
    if kind.namespaced:
        return create_namespaced_resource(kind.group, kind.version, kind.kind, kind.plural)
    return create_global_resource(kind.group, kind.version, kind.kind, kind.plural)


def _status_code(exc: Exception) -> int | None:
    """The HTTP status of a failed request: an error event of a watch carries it in its Status object."""
    if isinstance(exc, ApiError) and exc.status is not None:
        return exc.status.code
    if isinstance(exc, httpx2.HTTPStatusError):
        return exc.response.status_code
    return None


class Follower:
    """Follows the kinds it is given until cancelled; `published` is shared by all and saved around each change."""

    def __init__(
        self,
        client: AsyncClient,
        send: Send,
        published: Published,
        *,
        take_all: bool = False,
        retry_seconds: float = 1.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._client = client
        self._send = send
        self._published = published
        self._take_all = take_all
        self._retry_seconds = retry_seconds
        self._clock = clock
        self.synced: dict[str, asyncio.Event] = {}
        """Set per kind once its first list is published (or it turned out not to be served)."""
        self.publishing = asyncio.Lock()
        """Held while a change is sent and recorded; a stop takes it first, so it never cuts one in two."""

    async def follow(self, kinds: tuple[WatchedKind, ...]) -> None:
        """Follow every kind concurrently until cancelled."""
        for kind in kinds:
            self.synced.setdefault(kind.kind, asyncio.Event())
        async with asyncio.TaskGroup() as group:
            for kind in kinds:
                group.create_task(self._follow(kind), name=f"watch-{kind.kind}")

    async def _publish(self, change: Change) -> None:
        async with self.publishing:
            if change.records:
                # in doubt until acknowledged: a kill now makes the next list publish it again, whichever it was
                doubt = in_doubt(change.object_id, change.entry, self._published.get(change.object_id))
                self._published.put(change.object_id, doubt)
                self._published.save()
                await self._send(change.records)
            self._published.put(change.object_id, change.entry)
            self._published.save()

    async def _relist(self, kind: WatchedKind, resource: Any) -> str:
        listed = self._client.list(resource, namespace="*") if kind.namespaced else self._client.list(resource)
        items = [item.to_dict() async for item in listed]
        version = listed.resourceVersion  # set by the first page, empty or not
        for change in changes_of_list(kind, items, self._published, self._clock(), take_all=self._take_all):
            await self._publish(change)
        self.synced[kind.kind].set()
        return version

    async def _follow(self, kind: WatchedKind) -> None:
        resource = _resource(kind)
        while True:
            try:
                version = await self._relist(kind, resource)
                await self._watch(kind, resource, version)
            except (httpx2.HTTPError, OSError) as exc:
                code = _status_code(exc)
                if code == _NOT_SERVED and not self.synced[kind.kind].is_set():
                    _log.info("%s is not served by this API server; not followed", kind.kind)
                    self.synced[kind.kind].set()
                    return
                if code != _GONE:  # an expired watch is routine; anything else is worth a line and a pause
                    _log.warning("watching %s failed (%s); listing again", kind.kind, exc)
                    await asyncio.sleep(self._retry_seconds)

    async def _watch(self, kind: WatchedKind, resource: Any, version: str) -> None:
        """Until the server ends the watch with an error; a clean end of the stream is resumed by lightkube."""
        if kind.namespaced:
            events = self._client.watch(resource, namespace="*", resource_version=version)
        else:
            events = self._client.watch(resource, resource_version=version)
        async for event, item in events:
            body = item.to_dict()
            now = self._clock()
            if event == "DELETED":
                change = change_of_deletion(kind, body, self._published, now)
            else:
                change = change_of_object(kind, body, self._published, now, take_all=self._take_all)
            if change is not None:
                await self._publish(change)
