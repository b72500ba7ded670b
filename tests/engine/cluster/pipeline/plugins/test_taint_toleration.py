"""TaintToleration filter and its timers (spec D1–D9, L6)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from engine.cluster.pipeline.conditions import MISCONFIGURED
from tests.engine.cluster.cluster_builders import NOW, a_cluster, a_placement, condition, decided, one_set_world, run

EARLIER = "2021-12-31T23:59:00Z"  # 60 s before NOW


def _tol(
    key: str = "", operator: str | None = None, value: str = "", effect: str = "", seconds: int | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "value": value, "effect": effect}
    if operator is not None:
        out["operator"] = operator
    if seconds is not None:
        out["tolerationSeconds"] = seconds
    return out


@pytest.mark.parametrize(
    ("taint", "tolerations", "current", "selected"),
    [
        (("k", "v", "NoSelect"), [], [], False),
        (("k", "v", "PreferNoSelect"), [], [], True),
        (("k", "v", "NoSelectIfNew"), [], [], False),
        (("k", "v", "NoSelectIfNew"), [], ["c1"], True),
        (("k", "v", "NoSelect"), [_tol("k", value="v")], [], True),
        (("k", "v", "NoSelect"), [_tol("k", "Equal", "v")], [], True),
        (("k", "v", "NoSelect"), [_tol("k", "", "v")], [], True),
        (("k", "v", "NoSelect"), [_tol("k", "Equal", "")], [], False),
        (("k", "v", "NoSelect"), [_tol("k", "Exists")], [], True),
        (("k", "v", "NoSelect"), [_tol("", "Exists")], [], True),
        (("k", "v", "NoSelect"), [_tol("other", "Exists")], [], False),
        (("k", "v", "NoSelect"), [_tol("k", "Exists", effect="NoSelect")], [], True),
        (("k", "v", "NoSelect"), [_tol("k", "Exists", effect="NoSelectIfNew")], [], False),
        (("k", "v", "NoSelectIfNew"), [_tol("k", "Exists", effect="NoSelectIfNew")], [], True),
        (("k", "v", "NoSelect"), [_tol("k", "Gt", "v")], [], False),
        (("k", "", "NoSelect"), [_tol("k", "Equal")], [], True),
    ],
    ids=[
        "NoSelect-untolerated",
        "PreferNoSelect-always",
        "NoSelectIfNew-new",
        "NoSelectIfNew-decided",
        "default-operator-Equal",
        "Equal",
        "empty-operator-is-Equal",
        "Equal-empty-value",
        "Exists",
        "empty-key-Exists",
        "other-key",
        "effect-match",
        "effect-mismatch",
        "NoSelectIfNew-tolerated",
        "unknown-operator",
        "empty-values",
    ],
)
def test_cluster_toleration_matching(
    taint: tuple[str, str, str], tolerations: list[dict[str, Any]], current: list[str], selected: bool
) -> None:
    key, value, effect = taint
    world = one_set_world(a_cluster("c1").with_taint(key, value, effect, time_added=EARLIER), a_cluster("c2"))
    result = run(world, a_placement({"tolerations": tolerations}), current=current)
    assert decided(result) == (["c1", "c2"] if selected else ["c2"])
    if not selected:
        assert result.filtered_by == {"c1": "TaintToleration"}


def test_cluster_every_taint_must_be_tolerated() -> None:
    cluster = a_cluster("c1").with_taint("a", effect="NoSelect").with_taint("b", effect="NoSelect")
    world = one_set_world(cluster)
    assert decided(run(world, a_placement({"tolerations": [_tol("a", "Exists")]}))) == []
    both = {"tolerations": [_tol("a", "Exists"), _tol("b", "Exists")]}
    assert decided(run(world, a_placement(both))) == ["c1"]


@pytest.mark.parametrize(
    ("toleration", "message"),
    [
        (_tol("", "Equal", "v"), "TaintToleration:If the key is empty, operator must be Exists."),
        (_tol("", ""), "TaintToleration:If the key is empty, operator must be Exists."),
        (_tol("k", "Exists", "v"), "TaintToleration:If the operator is Exists, the value should be empty."),
    ],
)
def test_cluster_toleration_validation(toleration: dict[str, Any], message: str) -> None:
    result = run(one_set_world(a_cluster("c1")), a_placement({"tolerations": [toleration]}))
    assert condition(result, MISCONFIGURED) == ("True", "Misconfigured", message)
    assert decided(result) == []


def test_cluster_toleration_validation_skipped_without_candidates() -> None:
    spec = {"predicates": [{"requiredClusterSelector": {"labelSelector": {"matchLabels": {"x": "y"}}}}]}
    spec["tolerations"] = [_tol("", "Equal", "v")]
    assert condition(run(one_set_world(a_cluster("c1")), a_placement(spec)), MISCONFIGURED)[0] == "False"


@pytest.mark.parametrize(
    ("seconds", "tolerated", "timer"),
    [(120, True, 60.0), (61, True, 1.0), (60, False, None), (10, False, None)],
    ids=["inside", "one-second-left", "boundary-is-expired", "long-expired"],
)
def test_cluster_toleration_seconds(seconds: int, tolerated: bool, timer: float | None) -> None:
    world = one_set_world(a_cluster("c1").with_taint("k", effect="NoSelect", time_added=EARLIER))
    result = run(world, a_placement({"tolerations": [_tol("k", "Exists", seconds=seconds)]}))
    assert decided(result) == (["c1"] if tolerated else [])
    assert (None if result.due is None else (result.due - NOW).total_seconds()) == timer


def test_cluster_expired_toleration_falls_through() -> None:
    world = one_set_world(a_cluster("c1").with_taint("k", effect="NoSelect", time_added=EARLIER))
    spec = {"tolerations": [_tol("k", "Exists", seconds=5), _tol("k", "Exists", seconds=600)]}
    result = run(world, a_placement(spec))
    assert decided(result) == ["c1"]
    assert result.due == NOW + timedelta(seconds=540)


def test_cluster_toleration_seconds_applies_to_undecided_no_select_if_new() -> None:
    world = one_set_world(a_cluster("c1").with_taint("k", effect="NoSelectIfNew", time_added=EARLIER))
    spec = {"tolerations": [_tol("k", "Exists", seconds=30)]}
    assert decided(run(world, a_placement(spec))) == []
    assert decided(run(world, a_placement(spec), current=["c1"])) == ["c1"]


def test_cluster_taint_without_time_added_is_dated_by_first_sighting() -> None:
    recent = a_cluster("c1").with_taint("k", effect="NoSelect", first_seen="2021-12-31T23:59:30Z")
    result = run(one_set_world(recent), a_placement({"tolerations": [_tol("k", "Exists", seconds=60)]}))
    assert decided(result) == ["c1"]
    assert result.due == NOW + timedelta(seconds=30)


def test_cluster_timer_only_counts_clusters_that_passed() -> None:
    world = one_set_world(
        a_cluster("c1").with_taint("k", effect="NoSelect", time_added=EARLIER).with_labels(keep="no"),
        a_cluster("c2").with_taint("k", effect="NoSelect", time_added="2021-12-31T23:59:50Z"),
    )
    spec = {
        "predicates": [
            {
                "requiredClusterSelector": {
                    "labelSelector": {"matchExpressions": [{"key": "keep", "operator": "DoesNotExist"}]}
                }
            }
        ],
        "tolerations": [_tol("k", "Exists", seconds=100)],
    }
    result = run(world, a_placement(spec))
    assert decided(result) == ["c2"]
    assert result.due == NOW + timedelta(seconds=90)
