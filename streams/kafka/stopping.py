"""Stopping Kafka clients within a bound: with the broker gone, a client's stop can wait for ever, and a
service's whole stop must stay within about two seconds."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

__all__ = ["CLIENT_STOP_SECONDS", "bounded_stop"]

log = logging.getLogger("placement.service")

CLIENT_STOP_SECONDS = 0.8
"""Per client at shutdown (they stop concurrently): a stop within about two seconds in all, broker or not."""


async def bounded_stop(stop: Callable[[], Awaitable[None]]) -> None:
    """Wait for a client's stop at most `CLIENT_STOP_SECONDS`, without cancelling it: a stop cut short leaves
    the client half closed, while one left running finishes if the event loop goes on (and is moot if the
    process exits)."""
    task = asyncio.ensure_future(stop())
    _STOPPING.add(task)
    task.add_done_callback(_stopped)
    done, _ = await asyncio.wait({task}, timeout=CLIENT_STOP_SECONDS)
    if not done:
        log.warning("a Kafka client did not stop in time; not waiting for it", extra={"client": str(stop)})


_STOPPING: set[asyncio.Future[None]] = set()
"""Stops still running after their wait ended (a reference keeps them from being collected mid-way)."""


def _stopped(task: asyncio.Future[None]) -> None:
    _STOPPING.discard(task)
    if not task.cancelled() and task.exception() is not None:
        log.error("error during shutdown", exc_info=task.exception())
