"""CEL evaluation cost: microseconds per evaluation of the cluster benchmark's kinds of expression.

Each expression is compiled once and evaluated on the documents of many clusters, as the cluster engine does
(with its cost budget), without its caches: what one evaluation costs when an outcome is not known yet.

Usage: `python -m benchmarks.cel [--clusters 1000] [--rounds 3]`. Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import UTC, datetime
from typing import Any

from celpy.adapter import json_to_cel
from celpy.evaluation import Activation

from benchmarks.cluster_workload import CEL_POOL, Workload
from benchmarks.support import print_figures
from engine.cluster.matching.cel_env import CelProgram, compile_expression, make_functions
from engine.inventory.store import Inventory

__all__ = ["EXPRESSIONS", "main", "measure"]

EXPRESSIONS = {
    "label test": CEL_POOL[0],
    "claims comprehension": CEL_POOL[1],
}
"""Figure name -> expression: a label comparison, and a comprehension over the cluster claims with semver."""


def _documents(clusters: int) -> list[Any]:
    """The CEL values of `clusters` clusters of the benchmark's fleet (labels, claims, resources)."""
    workload = Workload(0, clusters, 1, datetime.now(UTC))
    rng = random.Random(workload.seed)
    documents = []
    for i in range(clusters):
        name = workload.cluster_name(i)
        labels = {"tier": rng.choice(("gold", "silver", "bronze")), "env": rng.choice(("prod", "dev"))}
        status = workload.clusterevent(name, labels, rng)["data"]["status"]
        documents.append(json_to_cel({"metadata": {"name": name, "labels": labels}, "status": status}))
    return documents


def measure(clusters: int = 1000, rounds: int = 3) -> dict[str, float]:
    """Microseconds per evaluation of each expression (the fastest of `rounds` passes over the documents)."""
    documents = _documents(clusters)
    activation = Activation(functions=make_functions(Inventory()))
    figures: dict[str, float] = {}
    for name, text in EXPRESSIONS.items():
        program = CelProgram((compile_expression(text),), activation)
        matched, best = 0, float("inf")
        for _ in range(rounds):
            started = time.perf_counter()
            matched = sum(program.matches(document) for document in documents)
            best = min(best, time.perf_counter() - started)
        if matched == 0:  # the documents are built to match some: none would mean an error on every one
            raise RuntimeError(f"{name}: no cluster matched {text!r}")
        figures[name] = best / len(documents) * 1e6
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    figures = measure(args.clusters, args.rounds)
    print_figures("CEL: microseconds per evaluation", {f"{k} µs": round(v, 1) for k, v in figures.items()})


if __name__ == "__main__":
    main()
