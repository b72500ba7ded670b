"""Suite-wide fixtures. ``kafka_bootstrap`` and ``kubeconfig`` are lazy: only tests that ask for them start a broker
or a Kubernetes API server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TypeVar

import pytest

from localbroker.broker import LocalBroker
from localbroker.fetch import ensure_kafka_libs
from localbroker.testing import BrokerUnavailable, session_broker
from localkube.testing import KubeUnavailable, session_kube

T = TypeVar("T")


def _served(server: AbstractContextManager[T], unavailable: type[Exception]) -> Iterator[T]:
    """Yield what `server` serves; when it cannot be had, fail (never skip) with its one clear message."""
    failure = ""
    try:
        with server as served:
            yield served
    except unavailable as exc:
        failure = str(exc)
    if failure:  # outside the except block: one clear message instead of a chained traceback
        pytest.fail(failure, pytrace=False)


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real Kafka broker per test run (``$KAFKA_BOOTSTRAP_SERVERS`` or a local one)."""
    yield from _served(session_broker(tmp_path_factory.mktemp("kafka")), BrokerUnavailable)


@pytest.fixture(scope="session")
def kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One real Kubernetes API server (kine + apiextensions-apiserver, OCM's CRDs installed) per test run, built
    from the Go module proxy on first use and cached; its admin kubeconfig."""
    yield from _served(session_kube(tmp_path_factory.mktemp("kube")), KubeUnavailable)


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
