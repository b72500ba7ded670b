"""Suite-wide fixtures. ``kafka_bootstrap`` is lazy: only tests that ask for it start a broker."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from localbroker.broker import LocalBroker
from localbroker.fetch import ensure_kafka_libs
from localbroker.testing import BrokerUnavailable, session_broker


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real Kafka broker per test run (``$KAFKA_BOOTSTRAP_SERVERS`` or a local one); fails, never skips."""
    failure = ""
    try:
        with session_broker(tmp_path_factory.mktemp("kafka")) as bootstrap:
            yield bootstrap
    except BrokerUnavailable as exc:
        failure = str(exc)
    if failure:  # outside the except block: one clear message instead of a chained traceback
        pytest.fail(failure, pytrace=False)


@pytest.fixture
async def own_broker(tmp_path: Path) -> AsyncIterator[LocalBroker]:
    """A broker of the test's own, for tests that stop it (stopping the session's broker would pull it from under
    every other test); stopped at the end whatever the test did to it."""
    broker = LocalBroker(tmp_path / "broker", ensure_kafka_libs())
    await broker.astart()
    try:
        yield broker
    finally:
        await broker.astop()
