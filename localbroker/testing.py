"""A broker for one run (tests, benchmarks, the demo): the user's own if named, else a local one started here.

Starting and stopping block for a few seconds; asyncio programs call it before and after their work.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from localbroker.broker import BrokerError, LocalBroker
from localbroker.errors import LocalBrokerError
from localbroker.fetch import KafkaLibsError, ensure_kafka_libs
from localbroker.secure import TlsError

__all__ = ["BrokerUnavailable", "external_bootstrap", "secure_broker", "session_broker"]


class BrokerUnavailable(LocalBrokerError):
    """No broker could be provided; tests must fail (not skip) so CI never silently drops Kafka coverage."""


def external_bootstrap() -> str | None:
    """``$KAFKA_BOOTSTRAP_SERVERS``: the user's existing broker, which every command uses instead of a local one."""
    return os.environ.get("KAFKA_BOOTSTRAP_SERVERS") or None


@contextmanager
def _unavailable_on_error() -> Iterator[None]:
    try:
        yield
    except (BrokerError, KafkaLibsError, TlsError) as exc:
        raise BrokerUnavailable(
            f"could not fetch or start a local Kafka broker (set KAFKA_BOOTSTRAP_SERVERS to use one): {exc}"
        ) from exc


@contextmanager
def session_broker(data_dir: Path) -> Iterator[str]:
    """Yield a bootstrap address: the external broker if named, else a fresh local broker in ``data_dir``."""
    external = external_bootstrap()
    if external:
        yield external
        return
    with _unavailable_on_error():
        broker = LocalBroker(data_dir, ensure_kafka_libs())
        bootstrap = broker.start()
    try:
        yield bootstrap
    finally:
        broker.stop()


@contextmanager
def secure_broker(data_dir: Path, users: dict[str, str | None]) -> Iterator[LocalBroker]:
    """Yield a started secured local broker (SASL_SSL, mutual TLS, ACLs) with ``users`` besides ``admin``; always
    local, as the tests grant and revoke ACLs as its super user."""
    with _unavailable_on_error():
        broker = LocalBroker(data_dir, ensure_kafka_libs(), secure=True, users=users)
        broker.start()
    try:
        yield broker
    finally:
        broker.stop()
