"""Shared benchmark plumbing: a broker to measure against, percentiles, peak memory, printing."""

from __future__ import annotations

import asyncio
import inspect
import resource
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from aiokafka import AIOKafkaConsumer

from connection.security import connection_options
from localbroker.testing import session_broker
from streams.settings import load_settings

__all__ = [
    "client_options",
    "copying_consumer",
    "kafka_broker",
    "peak_rss_mib",
    "percentiles",
    "print_figures",
    "print_table",
    "wait_until",
]


@contextmanager
def kafka_broker() -> Iterator[str]:
    """KAFKA_BOOTSTRAP_SERVERS when set, else a throwaway local broker (started and stopped here)."""
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as data_dir, session_broker(Path(data_dir)) as bootstrap:
        yield bootstrap


def client_options(bootstrap: str) -> dict[str, Any]:
    """aiokafka connection arguments for the benchmark's own clients: `bootstrap`, with the TLS and SASL settings
    the processor reads (PLACEMENT_KAFKA__SECURITY_PROTOCOL, ...), so a benchmark runs against a secured cluster
    as the processor does."""
    kafka = load_settings(kafka={"bootstrap_servers": bootstrap}).kafka
    return connection_options(kafka)


def copying_consumer(bootstrap: str, source: str, group: str, **options: Any) -> AIOKafkaConsumer:
    """A group member reading `source` for a benchmark's copier: from the earliest record, committed records only,
    offsets committed by the copier (inside its transactions, or after its copies are acknowledged)."""
    return AIOKafkaConsumer(
        source,
        bootstrap_servers=bootstrap,
        group_id=group,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        isolation_level="read_committed",
        **options,
    )


def percentiles(samples: Sequence[float]) -> dict[str, str]:
    """p50/p90/p99/max of durations in seconds, formatted in milliseconds."""
    if not samples:
        return {}
    ordered = sorted(samples)

    def at(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {name: f"{at(q) * 1000:.2f} ms" for name, q in (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("max", 1.0))}


def peak_rss_mib() -> float:
    """Peak resident memory of this process so far."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def print_figures(title: str, figures: dict[str, float | str]) -> None:
    """One figure per line, aligned, so a note can quote them."""
    print(f"# {title}")
    width = max(len(k) for k in figures)
    for key, value in figures.items():
        print(f"{key.ljust(width)}  {value}")


def print_table(title: str, header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Rows under a header, each column padded to its widest cell, so a note can quote the table as it is."""
    cells = [[str(cell) for cell in row] for row in (header, *rows)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    print(f"# {title}")
    for number, row in enumerate(cells):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
        if number == 0:
            print("  ".join("-" * width for width in widths))


async def wait_until(predicate: Any, timeout: float, what: str, interval: float = 0.002) -> None:
    """Poll `predicate` (plain or async) every `interval` seconds until it holds."""
    deadline = time.monotonic() + timeout
    while not ((await answer) if inspect.isawaitable(answer := predicate()) else answer):
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        await asyncio.sleep(interval)
