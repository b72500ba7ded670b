"""Integer fields of the upstream types are refused past their Go width (int32 or int64) as a schema violation,
which the runtime dead-letters at VALIDATE: Python's integers have no width, so nothing else would stop a
`numberOfClusters` of 2**63 - 1 or a generation too wide to be written back out."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from topics.codec import decode_event
from topics.errors import SchemaError, Stage, stage_of
from topics.names import TopicRole

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
Build = Callable[[int], dict[str, Any]]


def _placement(spec: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns", "generation": generation}, "spec": spec}


def _rule(spec: dict[str, Any]) -> dict[str, Any]:
    return {"metadata": {"name": "r", "namespace": "ns"}, "spec": spec}


def _cluster_condition(value: int) -> dict[str, Any]:
    condition = {"type": "ManagedClusterConditionAvailable", "status": "True", "observedGeneration": value}
    return {"metadata": {"name": "c1"}, "status": {"conditions": [condition]}}


def _prioritizer_weight(value: int) -> dict[str, Any]:
    config = {"scoreCoordinate": {"builtIn": "Balance"}, "weight": value}
    return _placement({"prioritizerPolicy": {"configurations": [config]}})


FIELDS: list[tuple[str, str, TopicRole, Build, tuple[int, int]]] = [  # (field, type, topic, data, Go range)
    (
        "numberOfClusters",
        "placement.applied.v1",
        TopicRole.SUBMISSIONS,
        lambda v: _placement({"numberOfClusters": v}),
        INT32,
    ),
    ("weight", "placement.applied.v1", TopicRole.SUBMISSIONS, _prioritizer_weight, INT32),
    (
        "tolerationSeconds",
        "placement.applied.v1",
        TopicRole.SUBMISSIONS,
        lambda v: _placement({"tolerations": [{"key": "k", "operator": "Exists", "tolerationSeconds": v}]}),
        INT64,
    ),
    (
        "clustersPerDecisionGroup",
        "placement.applied.v1",
        TopicRole.SUBMISSIONS,
        lambda v: _placement({"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": v}}}),
        INT32,
    ),
    ("generation", "placement.applied.v1", TopicRole.SUBMISSIONS, lambda v: _placement({}, generation=v), INT64),
    (
        "value",
        "addonplacementscore.applied.v1",
        TopicRole.CLUSTER_STATUS,
        lambda v: {"metadata": {"name": "res", "namespace": "c1"}, "status": {"scores": [{"name": "s", "value": v}]}},
        INT32,
    ),
    ("observedGeneration", "managedcluster.applied.v1", TopicRole.CLUSTER_STATUS, _cluster_condition, INT64),
    (
        "decisionWeight",
        "placementrule.applied.v1",
        TopicRole.SUBMISSIONS,
        lambda v: _rule({"decisionWeight": v}),
        INT32,
    ),
    ("replicas", "placementrule.applied.v1", TopicRole.SUBMISSIONS, lambda v: _rule({"replicas": v}), INT32),
    (
        "weight",
        "placementrule.applied.v1",
        TopicRole.SUBMISSIONS,
        lambda v: _rule({"advisors": [{"name": "a", "weight": v}]}),
        INT32,
    ),
]


IDS = [f"{name}-{wire.split('.')[0]}" for name, wire, *_ in FIELDS]


def _decode(wire: str, topic: TopicRole, data: dict[str, Any]) -> Any:
    # the standard library writes integers of any width, as a producer in another language may
    raw = json.dumps({"specversion": "1.0", "id": "1", "source": "/s", "type": wire, "data": data}).encode()
    return decode_event(raw, topic)


@pytest.mark.parametrize(("wire", "topic", "build", "bounds"), [f[1:] for f in FIELDS], ids=IDS)
@pytest.mark.parametrize("edge", ["lowest", "highest"])
def test_the_widest_values_of_the_go_type_are_accepted(
    wire: str, topic: TopicRole, build: Build, bounds: tuple[int, int], edge: str
) -> None:
    value = bounds[0] if edge == "lowest" else bounds[1]
    assert _decode(wire, topic, build(value)).data is not None


@pytest.mark.parametrize(("name", "wire", "topic", "build", "bounds"), FIELDS, ids=IDS)
@pytest.mark.parametrize("past", ["below", "above", "far-above"])
def test_values_past_the_go_type_are_a_schema_violation(
    name: str, wire: str, topic: TopicRole, build: Build, bounds: tuple[int, int], past: str
) -> None:
    value = {"below": bounds[0] - 1, "above": bounds[1] + 1, "far-above": 2**100}[past]
    with pytest.raises(SchemaError) as raised:
        _decode(wire, topic, build(value))
    assert stage_of(raised.value, Stage.PROCESS) == Stage.VALIDATE
    assert f".{name}" in str(raised.value), "the message names the field"
