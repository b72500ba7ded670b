"""A broker for one run (tests, benchmarks, the demo): the user's own if named, else a local one started here."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from localbroker.broker import BrokerError, LocalBroker
from localbroker.fetch import KafkaLibsError, ensure_kafka_libs

__all__ = ["BrokerUnavailable", "external_bootstrap", "running_broker", "session_broker"]


class BrokerUnavailable(RuntimeError):
    """No broker could be provided; tests must fail (not skip) so CI never silently drops Kafka coverage."""


def external_bootstrap() -> str | None:
    """``$KAFKA_BOOTSTRAP_SERVERS``: the user's existing broker, which every command uses instead of a local one."""
    return os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or None


def _new_broker(data_dir: Path) -> LocalBroker:
    try:
        return LocalBroker(data_dir, ensure_kafka_libs())
    except KafkaLibsError as exc:
        raise BrokerUnavailable(
            f"could not fetch Apache Kafka (set KAFKA_BOOTSTRAP_SERVERS to use a broker): {exc}"
        ) from exc


@contextmanager
def session_broker(data_dir: Path) -> Iterator[str]:
    """Yield a bootstrap address: the external broker if named, else a fresh local broker in ``data_dir``."""
    external = external_bootstrap()
    if external:
        yield external
        return
    broker = _new_broker(data_dir)
    try:
        bootstrap = broker.start()
    except BrokerError as exc:
        raise BrokerUnavailable(f"could not start a local Kafka broker: {exc}") from exc
    try:
        yield bootstrap
    finally:
        broker.stop()


@asynccontextmanager
async def running_broker(data_dir: Path) -> AsyncIterator[str]:
    """The async twin of :func:`session_broker`, for asyncio programs (benchmarks, the demo)."""
    external = external_bootstrap()
    if external:
        yield external
        return
    broker = _new_broker(data_dir)
    try:
        bootstrap = await broker.astart()
    except BrokerError as exc:
        raise BrokerUnavailable(f"could not start a local Kafka broker: {exc}") from exc
    try:
        yield bootstrap
    finally:
        await broker.astop()
