"""The veto advisor's pure parts: target parsing and B5-style matching."""

from __future__ import annotations

import pytest

from advisors.veto import accept, main, parse_target, vetoed
from topics.k8s import ObjectReference


@pytest.mark.parametrize(
    ("text", "namespace", "name"),
    [("c1", None, "c1"), ("ns/vm", "ns", "vm"), ("ns/", "ns", ""), ("/c1", None, "c1"), (" c1 ", None, "c1")],
)
def test_advisor_veto_parse_target(text: str, namespace: str | None, name: str) -> None:
    target = parse_target(text)
    assert (target.namespace, target.name) == (namespace, name)


@pytest.mark.parametrize("text", ["", "/"])
def test_advisor_veto_rejects_empty_target(text: str) -> None:
    with pytest.raises(ValueError, match="names nothing"):
        parse_target(text)


CLUSTER = ObjectReference(kind="ManagedCluster", name="raleigh")
VM = ObjectReference(kind="VirtualMachine", namespace="raleigh", name="dev")


@pytest.mark.parametrize(
    ("targets", "candidate", "expected"),
    [
        ([], CLUSTER, False),
        (["raleigh"], CLUSTER, True),
        (["toronto"], CLUSTER, False),
        (["toronto", "raleigh"], CLUSTER, True),
        (["raleigh/raleigh"], CLUSTER, False),
        (["dev"], VM, True),
        (["raleigh/dev"], VM, True),
        (["raleigh/"], VM, True),
        (["toronto/dev"], VM, False),
        (["raleigh"], VM, False),
        (["Dev"], VM, False),
    ],
    ids=[
        "nothing-listed",
        "by-name",
        "other-name",
        "any-entry",
        "namespaced-target-never-matches-cluster",
        "name-any-namespace",
        "namespace-and-name",
        "namespace-only",
        "other-namespace",
        "namespace-is-not-a-name",
        "case-sensitive",
    ],
)
def test_advisor_veto_matching(targets: list[str], candidate: ObjectReference, expected: bool) -> None:
    assert vetoed(candidate, [parse_target(t) for t in targets]) is expected


def test_advisor_veto_answer_echoes_accepted_candidates() -> None:
    candidates = [
        ObjectReference(api_version="cluster.open-cluster-management.io/v1", kind="ManagedCluster", name="a"),
        ObjectReference(kind="ManagedCluster", name="b"),
        ObjectReference(kind="ManagedCluster", name="c"),
    ]
    entries = accept(candidates, [parse_target("b")])
    assert [e.model_dump(by_alias=True, exclude_none=True) for e in entries] == [
        {"apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster", "name": "a"},
        {"kind": "ManagedCluster", "name": "c"},
    ]
    assert accept(candidates, [parse_target("a"), parse_target("b"), parse_target("c")]) == []


def test_advisor_veto_cli_rejects_bad_target() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--name", "veto", "/"])
    assert exc.value.code == 2
