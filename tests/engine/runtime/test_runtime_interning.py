"""The interning pools belong to one runtime: two runtimes in one process (replay beside the service, or tests)
share no pool and no pooled object, while each still shares equal values among its own subjects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import orjson

from engine.cluster import ClusterPlacementEngine
from engine.cluster.tracking.state import PlacementState
from engine.registry import build_engines
from engine.runtime import InputRecord, OutputRecord, Runtime
from topics.names import TopicRole

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SPEC = {"numberOfClusters": 3, "predicates": [{"requiredClusterSelector": {"labelSelector": {}}}]}


def _record(topic: TopicRole, offset: int, key: str, kind: str, data: Any) -> InputRecord:
    value = {"specversion": "1.0", "id": f"id-{offset}", "source": "/test", "type": f"{kind}.v1", "data": data}
    return InputRecord(topic, 0, offset, key.encode(), orjson.dumps(value), T0, topic.value)


def _inputs() -> list[InputRecord]:
    status, submissions = TopicRole.CLUSTER_STATUS, TopicRole.SUBMISSIONS
    label = {"cluster.open-cluster-management.io/clusterset": "prod"}
    binding = {"metadata": {"name": "prod", "namespace": "apps"}, "spec": {"clusterSet": "prod"}}
    records = [
        _record(status, 0, "ManagedClusterSet/prod", "managedclusterset.applied", {"metadata": {"name": "prod"}}),
        _record(status, 1, "ManagedClusterSetBinding/apps/prod", "managedclustersetbinding.applied", binding),
    ]
    for offset, name in enumerate(("c1", "c2", "c3"), start=2):
        data = {"metadata": {"name": name, "labels": label}}
        records.append(_record(status, offset, f"ManagedCluster/{name}", "managedcluster.applied", data))
    for offset, name in enumerate(("web", "api")):
        data = {"metadata": {"name": name, "namespace": "apps"}, "spec": SPEC}
        records.append(_record(submissions, offset, f"Placement/apps/{name}", "placement.applied", data))
    return records


def _ran() -> tuple[Runtime, list[OutputRecord]]:
    runtime = Runtime(build_engines())
    return runtime, runtime.process(_inputs(), T0)


def _states(runtime: Runtime) -> list[PlacementState]:
    states = [runtime.states[f"Placement/apps/{name}"] for name in ("web", "api")]
    assert all(isinstance(state, PlacementState) and state.published is not None for state in states)
    return states


def _shared_parts(state: PlacementState) -> list[object]:
    """What the pools hand out: the spec and its parts, the pages' clusters, the decided set, the conditions."""
    assert state.published is not None
    spec = state.placement.spec
    published = state.published
    return [spec, spec.predicates, published.decided, *(p.clusters for p in published.pages), *published.conditions]


def test_equal_values_are_shared_within_one_runtime() -> None:
    runtime, _ = _ran()
    web, api = _states(runtime)
    assert all(a is b for a, b in zip(_shared_parts(web), _shared_parts(api), strict=True))


def test_two_runtimes_share_no_pool_and_no_pooled_object() -> None:
    (first, first_out), (second, second_out) = _ran(), _ran()
    assert first_out == second_out, "the same inputs give the same records whichever runtime runs them"
    assert first.interning is not second.interning
    kinds = first.interning.kinds()
    assert kinds and kinds == second.interning.kinds()
    for kind in kinds:
        assert first.interning.pools(kind) is not second.interning.pools(kind), kind.__name__
    for mine, theirs in zip(_states(first), _states(second), strict=True):
        assert mine == theirs
        for part, other in zip(_shared_parts(mine), _shared_parts(theirs), strict=True):
            assert part == other and part is not other, type(part).__name__


def test_a_restore_shares_with_its_own_runtime_only() -> None:
    live, outputs = _ran()
    changelog = [o for o in outputs if o.topic is TopicRole.CHANGELOG]
    restored = Runtime(build_engines())
    for entry in changelog:
        assert entry.key is not None
        restored.restore(entry.key.decode(), entry.value)
    web, api = _states(restored)
    assert all(a is b for a, b in zip(_shared_parts(web), _shared_parts(api), strict=True))
    for mine, theirs in zip((web, api), _states(live), strict=True):
        assert mine == theirs
        assert not any(a is b for a, b in zip(_shared_parts(mine), _shared_parts(theirs), strict=True))


def test_an_engine_outside_a_runtime_uses_pools_of_its_own() -> None:
    alone, running = ClusterPlacementEngine(), Runtime(build_engines())
    engine = next(e for e in running.subjects.engines.values() if isinstance(e, ClusterPlacementEngine))
    assert alone._interning is not engine._interning is running.interning
