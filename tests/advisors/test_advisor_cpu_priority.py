"""The CPU priority advisor's pure parts: the CPU table fed by cluster-status records, and the scoring."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from advisors import cpu_priority
from advisors.cpu_priority import CpuTable, score_by_cpu
from topics.codec import encode_event
from topics.events import ObjectDeleted
from topics.inventory import Deployer, ManagedCluster
from topics.k8s import ObjectMeta, ObjectReference

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def cluster_record(name: str, cpu: Any = None) -> tuple[bytes, bytes]:
    status = {"allocatable": {"cpu": cpu, "memory": "8Gi"}} if cpu is not None else {}
    data = ManagedCluster.model_validate({"metadata": {"name": name}, "status": status})
    key = f"ManagedCluster/{name}"
    return key.encode(), encode_event(
        kind_name="managedcluster.applied", data=data, subject=key, event_id="1", time=NOW
    )


def test_advisor_cpu_table_follows_cluster_status() -> None:
    table = CpuTable()
    for key, value in (cluster_record("a", "4"), cluster_record("b", "3500m"), cluster_record("c", 2)):
        table.apply(key, value)
    assert table.cpu == {"a": 4.0, "b": 3.5, "c": 2.0}
    table.apply(*cluster_record("a", "8"))
    table.apply(*cluster_record("c"))  # no allocatable cpu any more
    table.apply(b"ManagedCluster/b", None)  # tombstone
    assert table.cpu == {"a": 8.0}
    gone = ObjectDeleted(metadata=ObjectMeta(name="a"))
    table.apply(
        b"ManagedCluster/a",
        encode_event(kind_name="managedcluster.deleted", data=gone, subject="ManagedCluster/a", event_id="2", time=NOW),
    )
    assert table.cpu == {}


def test_advisor_cpu_table_ignores_other_records() -> None:
    table = CpuTable()
    table.apply(*cluster_record("a", "4"))
    deployer = Deployer.model_validate({"metadata": {"name": "d", "namespace": "n"}, "spec": {"type": "x"}})
    table.apply(
        b"Deployer/n/d",
        encode_event(kind_name="deployer.applied", data=deployer, subject="Deployer/n/d", event_id="3", time=NOW),
    )
    table.apply(b"Deployer/n/d", None)
    table.apply(b"ManagedCluster/x", b"{broken")
    table.apply(*cluster_record("weird", "lots"))
    assert table.cpu == {"a": 4.0}


def refs(*specs: str) -> list[ObjectReference]:
    out = []
    for spec in specs:
        namespace, _, name = spec.rpartition("/")
        kind = "VirtualMachine" if namespace else "ManagedCluster"
        out.append(ObjectReference(kind=kind, namespace=namespace or None, name=name))
    return out


@pytest.mark.parametrize(
    ("candidates", "cpu", "expected"),
    [
        (["a", "b", "c"], {"a": 8, "b": 4, "c": 2}, [100, 50, 25]),
        (["a", "b"], {"a": 3, "b": 2}, [100, 67]),
        (["a", "b"], {"a": 3, "b": 1}, [100, 33]),
        (["a", "unknown"], {"a": 0.5}, [100, 0]),
        (["a", "b"], {}, [0, 0]),
        (["a", "b"], {"a": 0, "b": 0}, [0, 0]),
        (["a", "b"], {"a": -1, "b": 2}, [0, 100]),
        (["a", "vm/a"], {"a": 4}, [100, 0]),
        ([], {"a": 1}, []),
    ],
    ids=["proportional", "rounds-up", "rounds-down", "unknown-0", "none-known", "all-zero", "negative", "vm", "empty"],
)
def test_advisor_cpu_scores(candidates: list[str], cpu: dict[str, float], expected: list[int]) -> None:
    entries = score_by_cpu(refs(*candidates), cpu)
    assert [e.score for e in entries] == expected
    assert [e.name for e in entries] == [c.rpartition("/")[2] for c in candidates], "every candidate, in order"
    assert all(0 <= (e.score or 0) <= 100 for e in entries)


def test_advisor_cpu_module_has_a_main() -> None:
    assert callable(cpu_priority.main)
