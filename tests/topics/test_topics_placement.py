"""Placements repeat spec parts: equal parts are validated once and shared, different ones never are."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from topics.interning import Interning
from topics.placement import Placement

LABELS = [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"env": "prod"}}}}]
TOLERATE = [{"key": "maintenance", "operator": "Exists", "effect": "NoSelect"}]


INTERNING = Interning()


def _placement(name: str, spec: dict[str, Any], interning: Interning = INTERNING) -> Placement:
    return Placement.model_validate({"metadata": {"name": name, "namespace": "apps"}, "spec": spec}, context=interning)


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ({"predicates": LABELS, "numberOfClusters": 2}, {"numberOfClusters": 2, "predicates": LABELS}, {"spec"}),
        ({"predicates": LABELS, "numberOfClusters": 2}, {"predicates": LABELS, "numberOfClusters": 3}, {"predicates"}),
        ({"tolerations": TOLERATE}, {"tolerations": TOLERATE, "clusterSets": ["a"]}, {"tolerations"}),
        ({"predicates": LABELS}, {"predicates": [{"requiredClusterSelector": {}}]}, set()),
    ],
    ids=["equal-specs", "equal-predicates", "equal-tolerations", "different"],
)
def test_equal_parts_are_one_object(first: dict[str, Any], second: dict[str, Any], same: set[str]) -> None:
    a, b = _placement("a", first), _placement("b", second)
    assert (a.spec is b.spec) == ("spec" in same)
    for part in ("predicates", "tolerations"):
        if part in same:
            assert getattr(a.spec, part) is getattr(b.spec, part)
    assert a.metadata is not b.metadata
    assert a.spec.model_dump() == _placement("c", first).spec.model_dump()


def test_an_invalid_part_fails_every_time_and_caches_nothing() -> None:
    bad = {"predicates": [{"requiredClusterSelector": 5}]}
    for _ in range(2):
        with pytest.raises(ValidationError) as raised:
            _placement("a", bad)
        assert raised.value.errors()[0]["loc"] == ("spec", "predicates", 0, "requiredClusterSelector")
    assert _placement("b", {"predicates": LABELS}).spec.predicates[0].required_cluster_selector.label_selector
