"""CEL evaluation cost: CPU microseconds per evaluation, the compiled evaluator against the tree walker it replaced.

Each expression is compiled once and evaluated on the documents of many clusters, as the cluster engine does
(with its cost budget), without its caches: what one evaluation costs when an outcome is not known yet. The old
evaluator is the differential tests' oracle (`tests/engine/cluster/matching/cel_oracle.py`, from a checkout). Rounds
alternate old and new; each figure is the median of the rounds. `--replay N,...` also times `placement-stream
replay` of the hostile placement (and a canary after it) over N clusters, with the service's default settings.

Usage: `python -m benchmarks.cel [--clusters 1000] [--rounds 3] [--hostile-clusters 2] [--replay 300,1000]`.
Figures are printed, never asserted.
"""

from __future__ import annotations

import argparse
import io
import random
import statistics
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, NamedTuple

import orjson
from celpy.adapter import json_to_cel
from celpy.evaluation import Activation

from benchmarks.cluster_workload import CEL_POOL, Workload
from benchmarks.support import print_table
from engine.cluster.matching import cel_env
from engine.cluster.matching.cel_cost import Budget, costed_activation
from engine.cluster.matching.cel_env import CelProgram, compile_expression, make_functions
from engine.inventory.store import Inventory
from streams.replay import Replayer
from streams.settings import Settings
from tests.engine.cluster.matching.cel_oracle import CostEvaluator
from topics.inventory import AddOnPlacementScore

__all__ = ["EXPRESSIONS", "HOSTILE", "Fleet", "fleet", "hostile_lines", "main", "measure", "new_runner"]

LIST_1000 = "[" + ",".join(map(str, range(1000))) + "]"
HOSTILE = f"managedCluster.metadata.name != '' && {LIST_1000}.all(x, {LIST_1000}.all(y, x >= 0))"
"""Reads the cluster, then loops until the per-expression cost limit stops it."""
EXPRESSIONS = {
    "label test": CEL_POOL[0],
    "claims comprehension": CEL_POOL[1],
    "scores() call": 'managedCluster.scores("usage").exists(s, s.name == "cpu" && s.value > 80)',
}
"""Figure name -> expression: a label comparison, a comprehension over the cluster claims with semver, and an
AddOnPlacementScore test."""

Runner = Callable[[Any], bool]


class Fleet(NamedTuple):
    """The benchmark's fleet: each cluster's API JSON, its `usage` AddOnPlacementScore's API JSON, and an
    inventory holding those scores."""

    clusters: list[dict[str, Any]]
    scores: list[dict[str, Any]]
    inventory: Inventory


def fleet(clusters: int) -> Fleet:
    """`clusters` clusters of the benchmark's fleet (labels, claims, resources), each with a `usage` score."""
    workload = Workload(0, clusters, 1, datetime.now(UTC))
    rng = random.Random(workload.seed)
    found = Fleet([], [], Inventory())
    for i in range(clusters):
        name = workload.cluster_name(i)
        labels = {"tier": rng.choice(("gold", "silver", "bronze")), "env": rng.choice(("prod", "dev"))}
        status = workload.clusterevent(name, labels, rng)["data"]["status"]
        found.clusters.append({"metadata": {"name": name, "labels": labels}, "status": status})
        scores = [{"name": "cpu", "value": rng.randint(0, 100)}, {"name": "memory", "value": rng.randint(0, 100)}]
        obj = {"metadata": {"name": "usage", "namespace": name}, "status": {"scores": scores}}
        found.scores.append(obj)
        found.inventory.apply(AddOnPlacementScore.model_validate(obj), workload.now)
    return found


def new_runner(text: str, activation: Activation) -> Runner:
    return CelProgram((compile_expression(text),), activation).matches


def _old(text: str, activation: Activation) -> Runner:
    """The tree walker with the same budget rules as `CelProgram` (one expression)."""
    ast, budget = compile_expression(text).ast, Budget()
    costed = costed_activation(activation, budget)

    def run(document: Any) -> bool:
        budget.used = 0
        budget.start(cel_env.EXPRESSION_LIMIT, cel_env.PER_CLUSTER_LIMIT)
        try:
            value = CostEvaluator(ast, costed, budget).evaluate({"managedCluster": document})
        except Exception:  # an error or a stop: no match, as the engine reads it
            return False
        return not budget.exceeded and bool(value)

    return run


def _seconds_per_evaluation(run: Runner, documents: list[Any]) -> tuple[float, int]:
    """CPU seconds of this process per evaluation: steadier than wall time on a shared machine."""
    started = time.process_time()
    matched = sum(run(document) for document in documents)
    return (time.process_time() - started) / len(documents), matched


def measure(clusters: int = 1000, rounds: int = 3, hostile_clusters: int = 2) -> dict[str, tuple[float, float]]:
    """Microseconds per evaluation of each expression and of the hostile one: (old, new), medians of `rounds`."""
    found = fleet(clusters)
    documents = [json_to_cel(cluster) for cluster in found.clusters]
    activation = Activation(functions=make_functions(found.inventory))
    cases = [(name, text, documents) for name, text in EXPRESSIONS.items()]
    cases.append(("hostile, per cluster", HOSTILE, documents[:hostile_clusters]))
    figures: dict[str, tuple[float, float]] = {}
    for name, text, docs in cases:
        runners = {"old": _old(text, activation), "new": new_runner(text, activation)}
        samples: dict[str, list[float]] = {"old": [], "new": []}
        outcomes = set()
        for _ in range(rounds):
            for which, run in runners.items():
                seconds, matched = _seconds_per_evaluation(run, docs)
                samples[which].append(seconds * 1e6)
                outcomes.add(matched)
        if len(outcomes) != 1:
            raise RuntimeError(f"{name}: the evaluators disagree on how many clusters match ({sorted(outcomes)})")
        figures[name] = (statistics.median(samples["old"]), statistics.median(samples["new"]))
    return figures


# --- replay of the hostile placement --------------------------------------------------------------------------
def _line(topic: str, key: str, kind: str, data: dict[str, Any], serial: int) -> bytes:
    value = {
        "specversion": "1.0",
        "id": f"cel-benchmark-{serial}",
        "source": "/benchmarks/cel",
        "type": f"{kind}.v1",
        "time": "2026-11-23T10:00:00Z",
        "datacontenttype": "application/json",
        "data": data,
    }
    return orjson.dumps({"topic": f"placement.{topic}", "key": key, "value": value})


def hostile_lines(clusters: int) -> list[bytes]:
    """A set of `clusters` clusters bound in namespace `apps`, the hostile placement, then a canary placement."""
    lines = [
        _line(
            "cluster-status",
            "ManagedClusterSet/fleet",
            "managedclusterset.applied",
            {"metadata": {"name": "fleet"}, "spec": {"clusterSelector": {"selectorType": "ExclusiveClusterSetLabel"}}},
            0,
        ),
        _line(
            "cluster-status",
            "ManagedClusterSetBinding/apps/fleet",
            "managedclustersetbinding.applied",
            {"metadata": {"name": "fleet", "namespace": "apps"}, "spec": {"clusterSet": "fleet"}},
            1,
        ),
    ]
    for i in range(clusters):
        name = f"cluster-{i:05d}"
        labels = {"cluster.open-cluster-management.io/clusterset": "fleet", "env": "prod" if i % 2 else "dev"}
        data = {"metadata": {"name": name, "labels": labels}, "status": {"allocatable": {"cpu": "4"}}}
        lines.append(_line("cluster-status", f"ManagedCluster/{name}", "managedcluster.applied", data, 2 + i))
    for name, expression in (("hostile", HOSTILE), ("canary", "managedCluster.metadata.labels.env == 'prod'")):
        spec = {"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": [expression]}}}]}
        data = {"metadata": {"name": name, "namespace": "apps", "generation": 1}, "spec": spec}
        lines.append(_line("submissions", f"Placement/apps/{name}", "placement.applied", data, clusters + 2))
    return lines


def replay_seconds(clusters: int) -> tuple[float, float]:
    """Wall and CPU seconds `placement-stream replay` takes over `hostile_lines(clusters)` (default settings)."""
    lines = hostile_lines(clusters)
    wall, cpu = time.perf_counter(), time.process_time()
    Replayer(Settings(), io.BytesIO()).run(iter(lines))
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hostile-clusters", type=int, default=2, help="clusters the hostile expression runs on")
    parser.add_argument("--replay", default="", help="comma-separated cluster counts to replay the hostile input on")
    args = parser.parse_args()
    figures = measure(args.clusters, args.rounds, args.hostile_clusters)
    rows = [(name, f"{old:,.1f}", f"{new:,.1f}", f"{old / new:.1f}x") for name, (old, new) in figures.items()]
    print_table("CEL: CPU microseconds per evaluation (medians)", ("expression", "old µs", "new µs", "speed-up"), rows)
    for count in (int(n) for n in args.replay.split(",") if n):
        wall, cpu = replay_seconds(count)
        print(f"replay of the hostile placement on {count} clusters: {wall:.1f} s ({cpu:.1f} s of CPU)")


if __name__ == "__main__":
    main()
