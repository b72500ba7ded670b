"""Every headline figure in one table: `python -m benchmarks [--repeat 3] [--quick] [--only latency,cel,...]`.

Runs the measures below (each figure the median of `--repeat` runs) and prints one table: the measure, its
figure, the goal and whether it holds, under the machine's core count and a calibration figure (a fixed
pure-Python workload's time) so that runs on different machines can be compared. `--quick` shrinks every
size for a smoke run (one run; the size-bound goals are then not judged). Uses $KAFKA_BOOTSTRAP_SERVERS when
set, else starts a local broker. Figures are printed, never asserted.

Before the first measure the broker is warmed up (`--warm-up`, seconds of 1,000 submissions/s, not counted): a
freshly started broker's JVM is still compiling its hot paths, and the figures are of a broker in steady state,
as a deployment has. On the benchmark machine five consecutive 10-s latency runs at 1,000/s against a fresh
broker gave p50 207, 145, 90, 84 and 90 ms, its commit stage 52, 27, 18, 17 and 16 ms.

- latency: submission -> decision visible to a read_committed deployer, p99 at 100, 1,000 and 5,000/s; and at
  1,000/s through a minimal exactly-once and at-least-once copier in the processor's place, baselines for it
  (`benchmarks/latency.py --baseline`);
- cluster10k: 10,000 Placements over 1,000 clusters decided from cold through Kafka by one instance, and a
  NoSelect taint on the cluster the most decisions hold;
- cluster100k: 100,000 Placements over 1,000 clusters from cold by one instance, its peak RSS, and a restart
  (a new instance on the same group) until ready, the part of it that restored the tasks (reading their
  changelogs and rebuilding the state, from the instance's `placement_restore_seconds`), and until a Placement
  submitted then is decided;
- cel: microseconds per CEL evaluation of a label test and of a claims comprehension.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime

from benchmarks import cel, cluster_placement, latency
from benchmarks.cluster_workload import Workload
from benchmarks.support import kafka_broker, print_table
from streams.settings import KafkaSettings

MEASURES = ("latency", "cluster10k", "cluster100k", "cel")


@dataclass(frozen=True)
class Row:
    """One line of the table: what is measured, its unit, and the goal (None: reported only)."""

    measure: str
    unit: str
    goal: float | None = None
    sized: bool = True
    """The goal is for the full sizes, so it is not judged on a --quick run."""


@dataclass
class Sizes:
    latency_seconds: float
    small: tuple[int, int]
    large: tuple[int, int]
    cel_clusters: int


FULL = Sizes(latency_seconds=5.0, small=(10_000, 1_000), large=(100_000, 1_000), cel_clusters=1_000)
QUICK = Sizes(latency_seconds=1.0, small=(1_000, 100), large=(5_000, 200), cel_clusters=200)
RATES = (100.0, 1_000.0, 5_000.0)

Runs = list[dict[Row, float]]
"""The figures of each run."""


def calibrate() -> float:
    """Milliseconds for a fixed pure-Python workload (dict and string churn; the best of 5), the unit against
    which figures from different machines compare."""
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        table: dict[str, int] = {}
        for i in range(200_000):
            key = f"k{i % 5000}"
            table[key] = table.get(key, 0) + len(key)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def _count(n: int) -> str:
    return f"{n:,}"


# --- the measures --------------------------------------------------------------------------------------------
def run_latency(bootstrap: str, sizes: Sizes, repeat: int) -> Runs:
    results = asyncio.run(latency.measure(bootstrap, list(RATES), sizes.latency_seconds, repeat))
    rows = {
        rate: Row(f"latency p99 at {rate:,.0f} submissions/s", "ms", 50.0 if rate == 1_000 else None, sized=False)
        for rate in RATES
    }
    p50 = Row("latency p50 at 1,000 submissions/s", "ms")
    baselines = {
        mode: (
            Row(f"latency p99 at 1,000/s, minimal {mode} copier (a baseline)", "ms"),
            asyncio.run(latency.measure(bootstrap, [1_000.0], sizes.latency_seconds, repeat, baseline=mode))[1_000.0],
        )
        for mode in latency.BASELINES
    }
    runs: Runs = []
    for index in range(repeat):
        figures = {rows[rate]: results[rate][index]["p99"] * 1000 for rate in RATES}
        figures[p50] = results[1_000.0][index]["p50"] * 1000
        figures.update({row: copied[index]["p99"] * 1000 for row, copied in baselines.values()})
        runs.append(figures)
    return runs


def _workload(size: tuple[int, int]) -> Workload:
    return Workload(size[0], size[1], 40, datetime.now(UTC))


def _kafka_run(
    bootstrap: str, size: tuple[int, int], targets: dict[str, str] | None, *, restart: bool
) -> dict[str, float | str]:
    return asyncio.run(
        cluster_placement.through_kafka(
            bootstrap,
            _workload(size),
            targets,
            None,
            compression=KafkaSettings().compression_type,
            instances=1,
            task_partitions=6,
            restart=restart,
        )
    )


def run_cluster_small(bootstrap: str, sizes: Sizes, repeat: int) -> Runs:
    placements, clusters = sizes.small
    _, targets, _ = cluster_placement.engine_only(_workload(sizes.small))  # which cluster the most decisions hold
    most_held = {"most-held": targets["most-held"]}
    cold = Row(f"{_count(placements)} Placements x {_count(clusters)} clusters, cold through Kafka", "s", 5.0)
    taint = Row("most-held cluster NoSelect taint -> last decision, one instance", "ms", 500.0)
    runs: Runs = []
    for _ in range(repeat):
        figures = _kafka_run(bootstrap, sizes.small, most_held, restart=False)
        last = next(v for k, v in figures.items() if k.endswith("NoSelect taint: produce -> last decision ms"))
        runs.append({cold: float(figures["start -> all placements committed s"]), taint: float(last)})
    return runs


def run_cluster_large(bootstrap: str, sizes: Sizes, repeat: int) -> Runs:
    placements, clusters = sizes.large
    what = f"{_count(placements)} Placements x {_count(clusters)} clusters"
    cold = Row(f"{what}, cold by one instance", "s", 60.0)
    rss = Row(f"{what}, peak RSS of the instance", "MiB", 1024.0)
    restart = Row(f"{what}, restart -> ready", "s", 10.0)
    restored = Row(f"{what}, restart: tasks restored (changelog read, state rebuilt)", "s", 10.0)
    decided = Row(f"{what}, restart -> a new Placement decided", "s")
    runs: Runs = []
    for _ in range(repeat):
        figures = _kafka_run(bootstrap, sizes.large, None, restart=True)
        runs.append(
            {
                cold: float(figures["start -> all placements committed s"]),
                rss: float(figures["peak RSS MiB, all instances"]),
                restart: float(figures["restart -> every instance ready s"]),
                restored: float(figures["restart: tasks restored (slowest instance) s"]),
                decided: float(figures["restart -> a new placement's decision s"]),
            }
        )
    return runs


def run_cel(_bootstrap: str, sizes: Sizes, repeat: int) -> Runs:
    rows = {name: Row(f"CEL {name}, per evaluation", "µs") for name in cel.EXPRESSIONS}
    return [{rows[name]: value for name, value in cel.measure(sizes.cel_clusters).items()} for _ in range(repeat)]


RUNNERS: dict[str, tuple[Callable[[str, Sizes, int], Runs], bool]] = {
    "latency": (run_latency, True),
    "cluster10k": (run_cluster_small, True),
    "cluster100k": (run_cluster_large, True),
    "cel": (run_cel, False),
}
"""Name -> (runner, needs a broker)."""


# --- the table -----------------------------------------------------------------------------------------------
def _format(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _lines(name: str, runs: Runs, quick: bool) -> Iterator[list[str]]:
    for row in runs[0]:
        values = [run[row] for run in runs]
        median = statistics.median(values)
        goal = "-" if row.goal is None else f"<= {_format(row.goal)} {row.unit}"
        if row.goal is None:
            holds = "-"
        elif quick and row.sized:
            holds = "(quick sizes)"
        else:
            holds = "yes" if median <= row.goal else "no"
        spread = " / ".join(_format(v) for v in values)
        yield [name, row.measure, f"{_format(median)} {row.unit}", goal, holds, spread]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per measure; the median is the figure")
    parser.add_argument("--quick", action="store_true", help="small sizes and one run: a smoke run")
    parser.add_argument("--only", default=",".join(MEASURES), help=f"comma-separated, of: {', '.join(MEASURES)}")
    parser.add_argument(
        "--warm-up",
        type=float,
        default=None,
        help="seconds of 1,000 submissions/s through the broker before the measures, not counted "
        "(default 30, none with --quick)",
    )
    args = parser.parse_args()
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(MEASURES))
    if unknown:
        parser.error(f"unknown measure(s): {', '.join(unknown)}")
    sizes, repeat = (QUICK, 1) if args.quick else (FULL, args.repeat)
    calibration, load = calibrate(), os.getloadavg()
    lines: list[list[str]] = []
    needs_broker = any(RUNNERS[name][1] for name in chosen)
    broker: AbstractContextManager[str] = kafka_broker() if needs_broker else nullcontext("")
    warm_up = args.warm_up if args.warm_up is not None else (0.0 if args.quick else 30.0)
    started = time.monotonic()
    with broker as bootstrap:
        if needs_broker and warm_up > 0:
            asyncio.run(latency.measure(bootstrap, [1_000.0], warm_up, 1))
            print(f"... broker warmed up after {time.monotonic() - started:.0f} s", flush=True)
        for name in chosen:
            runner, _ = RUNNERS[name]
            try:
                lines.extend(_lines(name, runner(bootstrap, sizes, repeat), args.quick))
            except Exception as error:  # one failed measure still leaves the others' figures
                lines.append([name, f"failed: {type(error).__name__}: {error}", "", "", "", ""])
            print(f"... {name} done after {time.monotonic() - started:.0f} s", flush=True)
    print()
    print_table(
        f"placement-stream benchmarks ({'quick sizes, ' if args.quick else ''}median of {repeat} run(s)); "
        f"{os.cpu_count()} cores, calibration {calibration:.1f} ms, Python {platform.python_version()}, "
        f"load average {load[0]:.2f} at the start and {os.getloadavg()[0]:.2f} at the end",
        ("name", "measure", "figure", "goal", "holds", "runs"),
        lines,
    )


if __name__ == "__main__":
    main()
