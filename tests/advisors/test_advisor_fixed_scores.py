"""The scripted advisor's pure parts: entry parsing and the per-round answer."""

from __future__ import annotations

import pytest

from advisors.fixed_scores import FixedEntry, answer, main, parse_entry
from topics.k8s import ObjectReference


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cluster1", FixedEntry("", "cluster1")),
        ("cluster1=60", FixedEntry("", "cluster1", score=60)),
        ("2:cluster1", FixedEntry("", "cluster1", round=2)),
        ("3:ns/vm=0", FixedEntry("ns", "vm", score=0, round=3)),
        (" 1:c=100 ", FixedEntry("", "c", score=100, round=1)),
    ],
)
def test_advisor_fixed_scores_parse_entry(text: str, expected: FixedEntry) -> None:
    assert parse_entry(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "names nothing"),
        ("ns/", "names nothing"),
        ("0:c1", "positive integer"),
        ("x:c1", "positive integer"),
        ("c1=101", "0..100"),
        ("c1=-1", "0..100"),
        ("c1=high", "0..100"),
    ],
)
def test_advisor_fixed_scores_rejects_bad_entries(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_entry(text)


C1 = ObjectReference(api_version="cluster.open-cluster-management.io/v1", kind="ManagedCluster", name="cluster1")
C3 = ObjectReference(api_version="cluster.open-cluster-management.io/v1", kind="ManagedCluster", name="cluster3")
VM = ObjectReference(kind="VirtualMachine", namespace="ns", name="cluster1")


def test_advisor_fixed_scores_answers_the_entries_of_the_round_in_order() -> None:
    entries = [parse_entry(e) for e in ("cluster3=70", "1:cluster2", "2:cluster1=20", "ns/cluster1")]
    dumped = [
        [e.model_dump(by_alias=True, exclude_none=True) for e in answer([C1, C3, VM], r, entries)] for r in (1, 2, 3)
    ]
    c3 = {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "name": "cluster3"}
    vm = {"kind": "VirtualMachine", "namespace": "ns", "name": "cluster1"}
    assert dumped[0] == [{**c3, "score": 70}, {"name": "cluster2"}, vm], "cluster2 is no candidate: posted as written"
    assert dumped[1] == [
        {**c3, "score": 70},
        {
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "name": "cluster1",
            "score": 20,
        },
        vm,
    ], "a cluster-scoped entry never names the namespaced candidate"
    assert dumped[2] == [{**c3, "score": 70}, vm]
    assert answer([C1], 1, []) == [], "no entries: an empty answer"


def test_advisor_fixed_scores_cli_rejects_bad_entry() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--name", "cost", "1:"])
    assert exc.value.code == 2
