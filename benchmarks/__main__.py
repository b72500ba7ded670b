"""Every headline figure in one table: `python -m benchmarks [--repeat 3] [--quick] [--only latency,queue,...]`.

Runs the measures below (each figure the median of `--repeat` runs) and prints one table: the measure, its
figure, the goal and whether it holds, under the machine's core count and a calibration figure (a fixed
pure-Python workload's time, taken before and after the measures) so that runs on different machines can be
compared. `--quick` shrinks every size for a smoke run (one run). Uses $KAFKA_BOOTSTRAP_SERVERS when set, else
starts a local broker. Figures are printed, never asserted.

Absolute times move with the machine and the hour, so each goal is judged as a ratio of two figures the same run
measures (the ratio of each run, then their median), printed next to the absolute figure. The absolute goals
are judged only at full sizes on a machine whose calibration (the larger of the two) is at most
`CALIBRATED_MS`; otherwise the table says why they were not.

Before the first measure the broker is warmed up (`--warm-up`, seconds of 1,000 submissions/s, not counted): a
freshly started broker's JVM is still compiling its hot paths, and the figures are of a broker in steady state,
as a deployment has. On the benchmark machine five consecutive 10-s latency runs at 1,000/s against a fresh
broker gave p50 207, 145, 90, 84 and 90 ms, its commit stage 52, 27, 18, 17 and 16 ms.

- latency: submission -> decision visible to a read_committed deployer, p99 at 100, 1,000 and 5,000/s; and at
  1,000/s through a minimal exactly-once and at-least-once copier in the processor's place, baselines for it
  (`benchmarks/latency.py --baseline`); goal: the processor's p99 at 1,000/s is no more than the at-least-once
  copier's, i.e. exactly-once costs the deployer no latency;
- queue: YuniKorn placements/s through Kafka against the pass-through ceiling (consume -> transactional produce,
  no work) with the same records, run alternately (`benchmarks/queue_placement.py`); goal: 0.85 of the ceiling;
- cluster10k: 10,000 Placements over 1,000 clusters decided from cold through Kafka by one instance, and a
  NoSelect taint on the cluster the most decisions hold: the bytes it publishes against what its changed
  decisions need at the least (their keys and clusters' names), and its time against publishing its records
  again with the processor's producer without the engine;
- cluster100k: 100,000 Placements over 1,000 clusters from cold by one instance, its peak RSS, and a restart
  (a new instance on the same group) until ready, the part of it that restored the tasks (reading their
  changelogs and rebuilding the state, from the instance's `placement_restore_seconds`), and until a Placement
  submitted then is decided;
- cel: microseconds per CEL evaluation of each benchmark expression and of the looping one, per cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from benchmarks import cel, cluster_placement, latency, queue_placement
from benchmarks.cluster_workload import Workload
from benchmarks.support import kafka_broker, print_table
from engine.runtime import OutputRecord
from streams.settings import KafkaSettings

MEASURES = ("latency", "queue", "cluster10k", "cluster100k", "cel")
CALIBRATED_MS = 35.0
"""The absolute goals are judged only on a machine whose calibration is at most this."""


@dataclass(frozen=True)
class Row:
    """One line of the table: what is measured, its unit, and the goal (None: reported only)."""

    measure: str
    unit: str
    goal: float | None = None
    at_least: bool = False
    """The goal is a floor (a throughput ratio), else a ceiling."""
    absolute: bool = False
    """An absolute goal: for the full sizes on a calibrated machine, so judged only there."""


def ratio(measure: str, goal: float, *, at_least: bool = False) -> Row:
    """A goal judged as the ratio of two figures of the same run."""
    return Row(measure, "", goal, at_least=at_least)


@dataclass
class Sizes:
    latency_seconds: float
    queue_records: int
    small: tuple[int, int]
    large: tuple[int, int]
    cel_clusters: int


FULL = Sizes(5.0, 20_000, small=(10_000, 1_000), large=(100_000, 1_000), cel_clusters=1_000)
QUICK = Sizes(1.0, 2_000, small=(1_000, 100), large=(5_000, 200), cel_clusters=200)
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
    rows = {rate: Row(f"latency p99 at {rate:,.0f} submissions/s", "ms") for rate in RATES}
    p50 = Row("latency p50 at 1,000 submissions/s", "ms")
    baselines = {
        mode: (
            Row(f"latency p99 at 1,000/s, minimal {mode} copier (a baseline)", "ms"),
            asyncio.run(latency.measure(bootstrap, [1_000.0], sizes.latency_seconds, repeat, baseline=mode))[1_000.0],
        )
        for mode in latency.BASELINES
    }
    against = ratio("latency p99 at 1,000/s / the at-least-once copier's p99", 1.0)
    runs: Runs = []
    for index in range(repeat):
        figures = {rows[rate]: results[rate][index]["p99"] * 1000 for rate in RATES}
        figures[p50] = results[1_000.0][index]["p50"] * 1000
        figures.update({row: copied[index]["p99"] * 1000 for row, copied in baselines.values()})
        figures[against] = results[1_000.0][index]["p99"] / baselines["at-least-once"][1][index]["p99"]
        runs.append(figures)
    return runs


def run_queue(bootstrap: str, sizes: Sizes, repeat: int) -> Runs:
    workload = queue_placement.Workload(sizes.queue_records, task_partitions=3, keys_per_partition=2, users=200)
    placed = Row(f"queue placements/s through Kafka ({_count(workload.records)} submissions)", "/s")
    ceiling = Row("pass-through records/s, same records (consume -> transactional produce)", "/s")
    against = ratio("queue placements/s / pass-through records/s", 0.85, at_least=True)
    with tempfile.TemporaryDirectory(prefix="bench-queues-") as scratch:
        config = Path(scratch) / "queues.yaml"
        config.write_text(workload.queue_config())
        placements, ceilings, _ = asyncio.run(
            queue_placement.against_ceiling(bootstrap, workload, config, repeat, latency=False)
        )
    return [{placed: rate, ceiling: top, against: rate / top} for rate, top in zip(placements, ceilings, strict=True)]


def _workload(size: tuple[int, int]) -> Workload:
    return Workload(size[0], size[1], 40, datetime.now(UTC))


def _kafka_run(
    bootstrap: str,
    size: tuple[int, int],
    targets: dict[str, str] | None,
    *,
    restart: bool,
    heaviest: list[OutputRecord] | None = None,
) -> dict[str, float | str]:
    return asyncio.run(
        cluster_placement.through_kafka(
            bootstrap,
            _workload(size),
            targets,
            heaviest,
            compression=KafkaSettings().compression_type,
            instances=1,
            task_partitions=6,
            restart=restart,
        )
    )


def _figure(figures: dict[str, float | str], ending: str) -> float:
    return float(next(value for key, value in figures.items() if key.endswith(ending)))


def run_cluster_small(bootstrap: str, sizes: Sizes, repeat: int) -> Runs:
    placements, clusters = sizes.small
    # which cluster the most decisions hold, and what tainting it publishes (the same in every run)
    engine, targets, heaviest = cluster_placement.engine_only(_workload(sizes.small))
    most_held = {"most-held": targets["most-held"]}
    taint_label = f"most-held {targets['most-held']}: NoSelect taint"
    published = float(engine[f"{taint_label}: published bytes (keys and values)"])
    needed = float(engine[f"{taint_label}: decided-cluster bytes (keys and names)"])
    changed = int(engine[f"{taint_label}: decisions changed"])
    if published != cluster_placement.published_bytes(heaviest):
        raise RuntimeError("the largest change is not the most-held cluster's taint")
    what = f"{_count(placements)} Placements x {_count(clusters)} clusters"
    cold = Row(f"{what}, cold through Kafka", "s", 5.0, absolute=True)
    taint = Row("most-held cluster NoSelect taint -> last decision, one instance", "ms", 500.0, absolute=True)
    sent = Row(f"the taint's records, published again without the engine ({_count(changed)} decisions)", "ms")
    size = Row("the taint's published bytes (decisions and changelog)", "MB")
    against_bytes = ratio(f"the taint's bytes / what its {_count(changed)} decisions' clusters need", 1.5)
    against_time = ratio("the taint's time / publishing its records without the engine", 3.0)
    runs: Runs = []
    for _ in range(repeat):
        figures = _kafka_run(bootstrap, sizes.small, most_held, restart=False, heaviest=heaviest)
        last = _figure(figures, "NoSelect taint: produce -> last decision ms")
        floor = _figure(figures, "re-published without the engine: last decision ms")
        runs.append(
            {
                cold: float(figures["start -> all placements committed s"]),
                taint: last,
                sent: floor,
                against_time: last / floor,
                size: published / 1e6,
                against_bytes: published / needed,
            }
        )
    return runs


def run_cluster_large(bootstrap: str, sizes: Sizes, repeat: int) -> Runs:
    placements, clusters = sizes.large
    what = f"{_count(placements)} Placements x {_count(clusters)} clusters"
    cold = Row(f"{what}, cold by one instance", "s", 60.0, absolute=True)
    rss = Row(f"{what}, peak RSS of the instance", "MiB", 1024.0, absolute=True)
    restart = Row(f"{what}, restart -> ready", "s", 10.0, absolute=True)
    restored = Row(f"{what}, restart: tasks restored (changelog read, state rebuilt)", "s", 10.0, absolute=True)
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
    names = [*cel.EXPRESSIONS, "hostile, per cluster"]
    rows = {name: Row(f"CEL {name}, per evaluation", "µs") for name in names}
    runs = (cel.measure(sizes.cel_clusters, rounds=1) for _ in range(repeat))
    return [{rows[name]: new for name, (_old, new) in run.items()} for run in runs]  # the evaluator in use


RUNNERS: dict[str, tuple[Callable[[str, Sizes, int], Runs], bool]] = {
    "latency": (run_latency, True),
    "queue": (run_queue, True),
    "cluster10k": (run_cluster_small, True),
    "cluster100k": (run_cluster_large, True),
    "cel": (run_cel, False),
}
"""Name -> (runner, needs a broker)."""


# --- the table -----------------------------------------------------------------------------------------------
def _format(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _holds(row: Row, median: float, quick: bool, calibration: float) -> str:
    if row.goal is None:
        return "-"
    if row.absolute and quick:
        return "not judged: quick sizes"
    if row.absolute and calibration > CALIBRATED_MS:
        return f"not judged: calibration {calibration:.1f} ms > {CALIBRATED_MS:.0f} ms"
    return "yes" if (median >= row.goal if row.at_least else median <= row.goal) else "no"


def _goal(row: Row) -> str:
    if row.goal is None:
        return "-"
    text = f"{'>=' if row.at_least else '<='} {_format(row.goal)}{f' {row.unit}' if row.unit else ''}"
    return f"{text} at calibration <= {CALIBRATED_MS:.0f} ms" if row.absolute else text


def _lines(name: str, runs: Runs, quick: bool, calibration: float) -> Iterator[list[str]]:
    for row in runs[0]:
        values = [run[row] for run in runs]
        median = statistics.median(values)
        figure = f"{_format(median)}{f' {row.unit}' if row.unit else ''}"
        spread = " / ".join(_format(v) for v in values)
        yield [name, row.measure, figure, _goal(row), _holds(row, median, quick, calibration), spread]


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
    warm_up = args.warm_up if args.warm_up is not None else (0.0 if args.quick else 30.0)
    results = _measure(chosen, sizes, repeat, warm_up)
    after = calibrate()  # the machine may have got busier meanwhile: the worse of the two judges
    lines: list[list[str]] = []
    for name, runs in results:
        if isinstance(runs, str):
            lines.append([name, runs, "", "", "", ""])
        else:
            lines.extend(_lines(name, runs, args.quick, max(calibration, after)))
    print()
    print_table(
        f"placement-stream benchmarks ({'quick sizes, ' if args.quick else ''}median of {repeat} run(s)); "
        f"{os.cpu_count()} cores, calibration {calibration:.1f} ms at the start and {after:.1f} ms at the end, "
        f"Python {platform.python_version()}, load average {load[0]:.2f} at the start and "
        f"{os.getloadavg()[0]:.2f} at the end",
        ("name", "measure", "figure", "goal", "holds", "runs"),
        lines,
    )


def _measure(chosen: list[str], sizes: Sizes, repeat: int, warm_up: float) -> list[tuple[str, Runs | str]]:
    """Each chosen measure's runs, or why it failed (one failed measure still leaves the others' figures)."""
    results: list[tuple[str, Runs | str]] = []
    needs_broker = any(RUNNERS[name][1] for name in chosen)
    broker: AbstractContextManager[str] = kafka_broker() if needs_broker else nullcontext("")
    started = time.monotonic()
    with broker as bootstrap:
        if needs_broker and warm_up > 0:
            asyncio.run(latency.measure(bootstrap, [1_000.0], warm_up, 1))
            print(f"... broker warmed up after {time.monotonic() - started:.0f} s", flush=True)
        for name in chosen:
            runner, _ = RUNNERS[name]
            try:
                results.append((name, runner(bootstrap, sizes, repeat)))
            except Exception as error:
                results.append((name, f"failed: {type(error).__name__}: {error}"))
            print(f"... {name} done after {time.monotonic() - started:.0f} s", flush=True)
    return results


if __name__ == "__main__":
    main()
