"""Waiting for the local broker to serve metadata: a bare TCP accept comes well before that."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from aiokafka.admin import AIOKafkaAdminClient

from localbroker.errors import BrokerError
from localbroker.procs import port_open

__all__ = ["wait_until_ready"]


async def _probe(bootstrap: str, options: dict[str, Any]) -> bool:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=5000, **options)
    try:
        await admin.start()
        cluster = await admin.describe_cluster()
        return bool(cluster.get("brokers"))
    except Exception:
        return False
    finally:
        await admin.close()


async def wait_until_ready(
    bootstrap: str,
    timeout: float = 60.0,
    alive: Callable[[], bool] | None = None,
    describe: Callable[[], str] | None = None,
    options: dict[str, Any] | None = None,
) -> None:
    """Retry an admin request until the broker serves metadata; a bare TCP accept comes earlier than that.

    ``alive()`` (optional) returning False aborts early; ``describe()`` supplies the failure detail; ``options`` are
    the admin client's security arguments (a secured broker's).
    """
    host, port = bootstrap.rsplit(":", 1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise BrokerError(f"broker process exited before becoming ready\n{describe() if describe else ''}")
        # Cheap TCP check first, so aiokafka does not log a connection error per attempt while the JVM boots.
        if await port_open(host, int(port)) and await _probe(bootstrap, options or {}):
            return
        await asyncio.sleep(0.2)
    raise BrokerError(f"broker at {bootstrap} not ready after {timeout:g} s\n{describe() if describe else ''}")
