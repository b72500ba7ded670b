"""Suite-wide fixtures. ``kafka_bootstrap`` is lazy: only tests that ask for it start a broker."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
