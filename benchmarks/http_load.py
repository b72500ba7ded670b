"""Decision latency while local clients lean on the HTTP endpoint: quiet, with scrapers fetching /metrics in a
loop, and with idle connections held open (reopened when the server closes them).

The latency is `benchmarks/latency.py`'s (submission -> decision seen by a read_committed reader, every party a
process of its own), measured with the load running in another process beside the processor. `--source DIR`
adds the same measurement of the processor run from another checkout (e.g. main), alternated run by run with
this one, so both see the same machine and broker.

Usage: `python -m benchmarks.http_load [--source /work/main] [--rate 100] [--seconds 5] [--repeat 3]
[--scrapers 50] [--idle 2000] [--loads quiet,scrape,idle]`. Loopback only; every loop is bounded by a deadline.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

from benchmarks.latency import Load, measure
from benchmarks.support import kafka_broker, print_table

__all__ = ["main"]

READY = "ready"
_MAX_SECONDS = 600.0
"""A load child stops by itself after this long, whatever happens to its parent."""
_REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


# --- load children ------------------------------------------------------------------------------------------
async def _scraper(port: int, deadline: float, done: list[int]) -> None:
    """Fetch /metrics in a loop until `deadline`; counts whole answers in `done[0]`, failures in `done[1]`."""
    while time.monotonic() < deadline:
        try:
            async with asyncio.timeout(10):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                writer.write(_REQUEST)
                await reader.read()
                writer.close()
            done[0] += 1
        except (OSError, TimeoutError):
            done[1] += 1
            await asyncio.sleep(0.1)


async def _idler(port: int, deadline: float, done: list[int]) -> None:
    """Hold a connection open sending nothing; open another when the server closes it (`done[0]` counts opens)."""
    while time.monotonic() < deadline:
        try:
            async with asyncio.timeout(max(0.1, deadline - time.monotonic())):
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
                done[0] += 1
                await reader.read()
                writer.close()
        except (OSError, TimeoutError):
            done[1] += 1
        await asyncio.sleep(0.1)


async def _run_load(kind: str, port: int, clients: int) -> None:
    deadline = time.monotonic() + _MAX_SECONDS
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    done = [0, 0]
    work = _scraper if kind == "scrape" else _idler
    tasks = [asyncio.create_task(work(port, deadline, done)) for _ in range(clients)]
    print(READY, flush=True)
    started = time.monotonic()
    waiting = [asyncio.create_task(stop.wait()), *tasks]
    await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED, timeout=_MAX_SECONDS)
    for task in waiting:
        task.cancel()
    await asyncio.gather(*waiting, return_exceptions=True)
    elapsed = max(time.monotonic() - started, 1e-9)
    print(f"{done[0] / elapsed:.1f} {done[1] / elapsed:.1f}", flush=True)


def loading(kind: str, clients: int, figures: list[tuple[float, float]]) -> Load:
    """A load child of `kind` with `clients` connections against the processor's port; on exit its rates (answers
    or opens per second, failures per second) are appended to `figures`."""

    @contextlib.asynccontextmanager
    async def run(port: int) -> AsyncIterator[None]:
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "benchmarks.http_load", kind, str(port), str(clients), stdout=asyncio.subprocess.PIPE
        )
        assert child.stdout is not None
        try:
            if (await asyncio.wait_for(child.stdout.readline(), 60)).strip().decode() != READY:
                raise RuntimeError(f"the {kind} load did not start")
            await asyncio.sleep(2)  # the load under way before the measured runs
            yield
        finally:
            if child.returncode is None:
                child.send_signal(signal.SIGTERM)
            out, _ = await asyncio.wait_for(child.communicate(), 60)
            rates = out.decode().split()
            if len(rates) == 2:
                figures.append((float(rates[0]), float(rates[1])))

    return run


# --- the measurement ----------------------------------------------------------------------------------------
async def _measure(
    bootstrap: str, sources: dict[str, Path | None], args: argparse.Namespace
) -> dict[tuple[str, str], list[dict[str, float]]]:
    """Per (checkout, load), the figures of each run; checkouts alternate within each repetition."""
    every = {
        "quiet": ("", 0),
        f"{args.scrapers} scrapers": ("scrape", args.scrapers),
        f"{args.idle} idle": ("idle", args.idle),
    }
    loads = {label: load for label, load in every.items() if (load[0] or "quiet") in args.loads.split(",")}
    runs: dict[tuple[str, str], list[dict[str, float]]] = {}
    for _ in range(args.repeat):
        for load, (kind, clients) in loads.items():
            for label, source in sources.items():
                client_rates: list[tuple[float, float]] = []
                beside = loading(kind, clients, client_rates) if kind else None
                figures = await measure(
                    bootstrap, [args.rate], args.seconds, 1, source=source, load=beside, stages=False
                )  # /metrics may be what the load keeps busy
                run = figures[args.rate][0]
                if client_rates:
                    run["answered/s"], run["failed/s"] = client_rates[0]
                runs.setdefault((label, load), []).append(run)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, help="another checkout to measure as well (e.g. main)")
    parser.add_argument("--rate", type=float, default=100.0, help="submissions per second")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds of submissions per run")
    parser.add_argument("--repeat", type=int, default=3, help="runs per checkout and load (medians are printed)")
    parser.add_argument("--scrapers", type=int, default=50, help="clients fetching /metrics in a loop")
    parser.add_argument("--idle", type=int, default=2000, help="idle connections held open")
    parser.add_argument("--loads", default="quiet,scrape,idle", help="which loads to run, comma-separated")
    args = parser.parse_args()
    sources: dict[str, Path | None] = {"this": None}
    if args.source is not None:
        sources = {str(args.source): args.source.resolve(), **sources}
    with kafka_broker() as bootstrap:
        runs = asyncio.run(_measure(bootstrap, sources, args))
    columns = ("p50", "p99", "max")
    rows = []
    for (label, load), figures in runs.items():
        median = {name: statistics.median(run.get(name, 0.0) for run in figures) for name in (*columns, "answered/s")}
        failed = statistics.median(run.get("failed/s", 0.0) for run in figures)
        cells = [f"{median[name] * 1000:.1f}" for name in columns]
        rows.append([label, load, *cells, f"{median['answered/s']:.0f}", f"{failed:.0f}"])
    print_table(
        f"submission -> decision at {args.rate:g}/s under HTTP load (ms, medians of {args.repeat} runs of"
        f" {args.seconds:g} s; the load's answers or opens, and failures, per second)",
        ("checkout", "load", *columns, "load ok/s", "load failed/s"),
        rows,
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("scrape", "idle"):
        asyncio.run(_run_load(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
    else:
        main()
