"""cel-go (OCM's environment, through ctypes) against the project's compiled CEL evaluator.

Speed: CPU microseconds per evaluation of the expressions of `benchmarks.cel` on the same fleet, rounds
interleaved (ours, cel-go on clusters converted once and kept in Go, cel-go on each cluster's API JSON encoded in
Python and decoded and converted in Go on every call, as OCM converts a cluster before each evaluation); each
figure the median of the rounds, the Python<->Go call included. Faithfulness: `benchmarks.celgo.differential`
over the differential tests' expression table.

Usage: `python -m benchmarks.celgo [--clusters 1000] [--rounds 3] [--hostile-clusters 2] [--no-speed]
[--no-differential] [--details]`. Builds the library on first use (`benchmarks.celgo.library_path`). Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import orjson
from celpy.adapter import json_to_cel
from celpy.evaluation import Activation

from benchmarks.cel import EXPRESSIONS, HOSTILE, fleet, new_runner
from benchmarks.celgo import CelGo
from benchmarks.celgo.differential import print_differential
from benchmarks.support import print_table
from engine.cluster.matching.cel_env import make_functions

Timed = Callable[[], int]
"""Runs one expression over its clusters; returns how many matched."""


def _cpu_us(run: Timed, count: int) -> tuple[float, int]:
    started = time.process_time()
    matched = run()
    return (time.process_time() - started) / count * 1e6, matched


def measure(go: CelGo, clusters: int, rounds: int, hostile_clusters: int) -> list[tuple[str, list[float]]]:
    """(expression name, [ours, cel-go kept, cel-go from JSON] µs medians) for each expression."""
    found = fleet(clusters)
    go.set_scores(found.scores)
    documents = [json_to_cel(cluster) for cluster in found.clusters]
    handles = [go.cluster(cluster) for cluster in found.clusters]
    activation = Activation(functions=make_functions(found.inventory))
    cases = [(name, text, clusters) for name, text in EXPRESSIONS.items()]
    cases.append(("hostile, per cluster", HOSTILE, hostile_clusters))
    figures = []
    for name, text, count in cases:
        ours, program = new_runner(text, activation), go.compile(text)
        docs, kept, raw = documents[:count], handles[:count], found.clusters[:count]
        runners: list[Timed] = [
            lambda: sum(ours(document) for document in docs),  # noqa: B023
            lambda: sum(go.matches(program, handle) for handle in kept),  # noqa: B023
            lambda: sum(go.matches_json(program, orjson.dumps(cluster)) for cluster in raw),  # noqa: B023
        ]
        samples: list[list[float]] = [[] for _ in runners]
        matched = set()
        for _ in range(rounds):
            for which, run in enumerate(runners):
                micros, hits = _cpu_us(run, count)
                samples[which].append(micros)
                matched.add(hits)
        if len(matched) != 1:
            raise RuntimeError(f"{name}: ours and cel-go disagree on how many clusters match ({sorted(matched)})")
        figures.append((name, [statistics.median(sample) for sample in samples]))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hostile-clusters", type=int, default=2)
    parser.add_argument("--no-speed", action="store_true")
    parser.add_argument("--no-differential", action="store_true")
    parser.add_argument("--details", action="store_true", help="list every disagreement of the differential")
    args = parser.parse_args()
    go = CelGo()
    if not args.no_speed:
        figures = measure(go, args.clusters, args.rounds, args.hostile_clusters)
        rows = [
            (name, f"{ours:,.1f}", f"{kept:,.1f}", f"{raw:,.1f}", f"{ours / kept:.1f}x", f"{ours / raw:.1f}x")
            for name, (ours, kept, raw) in figures
        ]
        header = ("expression", "ours µs", "cel-go kept µs", "cel-go JSON µs", "vs kept", "vs JSON")
        print_table("CEL: CPU microseconds per evaluation (medians)", header, rows)
    if not args.no_differential:
        print_differential(go, args.details)


if __name__ == "__main__":
    main()
