"""Bounded CEL evaluation: RE2 regexps, cel-go style cost accounting, stopped evaluations.

A stopped evaluation is "no match" for that cluster only; the Predicate filter names the stopped expression in a
Warning and the engine counts stopped evaluations.
"""

from __future__ import annotations

import time
import tracemalloc
from typing import Any

import pytest

from engine.cluster import ClusterPlacementEngine, PlacementState
from engine.cluster.fleet.views import InventoryView
from engine.cluster.matching import cel_env
from engine.cluster.matching.cel_env import CelProgram, compile_expression
from engine.cluster.pipeline.status import Code
from engine.core import EngineContext, EngineSettings
from tests.engine.cluster.cluster_builders import (
    NOW,
    World,
    a_cluster,
    a_placement,
    decided,
    one_set_world,
    predicate_filtered,
    run,
)
from topics.placement import Placement

LIST_1000 = "[" + ",".join(map(str, range(1000))) + "]"
LIST_200 = "[" + ",".join(map(str, range(200))) + "]"
LIST_100 = "[" + ",".join(map(str, range(100))) + "]"
TENFOLD = ".replace('a', 'aaaaaaaaaa')"


def _evaluate(*texts: str) -> tuple[CelProgram, bool, Any]:
    """(the program, its outcome, the cluster document) of one evaluation on cluster c1."""
    view = InventoryView(one_set_world(a_cluster("c1").with_labels(env="prod")).inventory())
    program = CelProgram(tuple(compile_expression(text) for text in texts), view.cel_activation())
    document = view.cel_document("c1")
    return program, program.matches(document), document


@pytest.fixture
def small_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Limits a hundred times lower, so that runaway comprehensions stop in milliseconds."""
    monkeypatch.setattr(cel_env, "EXPRESSION_LIMIT", 10_000)
    monkeypatch.setattr(cel_env, "PER_CLUSTER_LIMIT", 100_000)


@pytest.mark.parametrize(
    "expression",
    [
        f"{LIST_200}.all(x, {LIST_200}.all(y, x >= 0))",
        f"{LIST_200}.exists(x, {LIST_200}.exists(y, x < 0))",
        f"{LIST_200}.map(x, {LIST_200}.map(y, x + y)).size() > 0",
        f"{LIST_200}.filter(x, {LIST_200}.filter(y, y > x).size() > 0).size() > 0",
        f"{LIST_200}.exists_one(x, {LIST_200}.exists_one(y, y == x))",
        "'a'" + TENFOLD * 9 + ".size() > 0",
        "'a'" + TENFOLD * 4 + ".split('').join('----').size() > 0",
        "'ab'" + TENFOLD * 4 + ".findAll('" + "[ab]" * 10 + "').size() > 0",
        "'ab'" + TENFOLD * 4 + ".matches('" + "(a|b)" * 8 + "')",
    ],
    ids=["all-in-all", "exists-in-exists", "map-in-map", "filter-in-filter", "exists_one", "replace-chain",
         "split-join", "findAll", "regex-cost"],
)  # fmt: skip
def test_cluster_cel_runaway_expressions_are_stopped(small_limits: None, expression: str) -> None:
    program, matched, document = _evaluate(expression)
    assert (matched, program.stopped, program.stopped_at(document)) == (False, 1, 0)
    assert program.spent > cel_env.EXPRESSION_LIMIT


def test_cluster_cel_nested_comprehension_is_stopped_at_the_real_limit() -> None:
    thousand = "'a'" + TENFOLD * 3 + ".split('')"  # a list of 1000 strings, quicker to parse than a literal
    program, matched, _ = _evaluate(f"{thousand}.all(x, {thousand}.all(y, x >= y))")
    assert (matched, program.stopped) == (False, 1)
    assert cel_env.EXPRESSION_LIMIT < program.spent <= cel_env.EXPRESSION_LIMIT + 10


def test_cluster_cel_replace_chain_stops_before_building_the_string() -> None:
    """Nine tenfold replaces would build a billion characters; the tenth of those is refused before it exists."""
    tracemalloc.start()
    try:
        program = _evaluate("'a'" + TENFOLD * 9 + ".size() > 0")[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert program.stopped == 1
    assert peak < 16 << 20


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        (f"{LIST_100}.all(x, {LIST_100}.all(y, x >= 0))", True),
        (f"{LIST_100}.map(x, {LIST_100}.map(y, x * y)).size() == 100", True),
        ("'a'" + TENFOLD * 4 + ".size() == 10000", True),
        ("'a'" + TENFOLD * 6 + ".size() == 1000000", True),
        ("'a'" + TENFOLD * 3 + ".split('').join(',').size() == 1999", True),
        ("'b'" + ".replace('b', 'bbbbbbbbbb')" * 3 + ".findAll('b').size() == 1000", True),
        (f"{LIST_1000}.filter(x, x % 2 == 0).size() == 500", True),
        (f"{LIST_1000}.exists(x, x == 999)", True),
    ],
)
def test_cluster_cel_expressions_within_upstream_limits_still_evaluate(expression: str, expected: bool) -> None:
    program, matched, _ = _evaluate(expression)
    assert (matched, program.stopped) == (expected, 0)
    assert program.spent <= cel_env.EXPRESSION_LIMIT


@pytest.mark.parametrize(
    ("expression", "cost"),
    [
        ('managedCluster.metadata.name == "c1"', 4),  # 1 per identifier and selection, == on 2 characters
        ("[1, 2, 3].all(x, x > 0)", 25),  # list 10, per element: loop 3, x 1, > 1
        ("[1, 2, 3].exists(x, x == 2)", 20),  # stops at the deciding element
        ("[1, 2, 3].map(x, x * 2).size() == 3", 54),  # map 12 per element
        ("[1, 2, 3].filter(x, x > 1).size() == 2", 45),  # filter 1 per element, 12 more per kept element
        ("[1, 2, 3].map(x, x > 1, x).size() == 2", 47),  # as filter, and f (here 1) for each kept element
        ("false && [1].all(x, true)", 0),  # constants are free and the right operand is not evaluated
        ("'abc'.replace('b', 'xyz') == 'axyzc'", 2),
        ("'a'" + TENFOLD * 2 + " == ''", 13),  # reads 1 and builds 10, then reads 10 and builds 100; == on ''
        ('"%s-%s".format(["a", "b"]) == "a-b"', 13),
        ('managedCluster.metadata.name.matches("^c[0-9]+$")', 6),  # text (1 + 2) / 10, pattern 9 / 4
        ('{"a": 1}["a"] == 1', 32),
        ("has(managedCluster.metadata.labels.env)", 4),  # 1 per step and 1 for the test
        ("has(managedCluster.metadata.nope.env)", 3),  # no test once `nope` is missing, as cel-go
    ],
)
def test_cluster_cel_cost_units(expression: str, cost: int) -> None:
    assert _evaluate(expression)[0].spent == cost


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("type(1) == int", True),
        ("9223372036854775807 + 1 > 0", False),  # int64 overflow is an error
        ("(9223372036854775807 + 1 > 0) || true", True),  # which || absorbs
        ("-(-9223372036854775807 - 1) > 0", False),
        ("3 * 4 - 2 == 10", True),
        ("5 % 0 == 0", False),
        ("dyn(1) + 2.0 == 3.0", False),  # no int + double overload at run time (a compile error without dyn)
        ("false && (1 / 0 == 1)", False),
        ("1 / 0 == 1 || true", True),
        ('[1, "a"].all(x, x > 0)', False),
        ('["a", 1].exists(x, x > 0)', True),
        ('[1, "a"].map(x, x + 1).size() == 2', False),  # an error in a map body fails the expression
        ('[1, "a"].map(x, x + 1).size() == 2 || true', True),  # as a value, which || absorbs (cel-go)
        ("[1, 2].filter(x, dyn(1)).size() == 2", False),  # a predicate that is not a boolean is an error
        ("[1, 2].exists_one(x, dyn(x)) || true", True),
        ("managedCluster.metadata.name.all(c, c.size() == 1)", False),  # only lists and maps iterate
        ("!managedCluster.metadata.name.exists(c, c == 'x')", False),
        ("[1, 2].exists(managedCluster, managedCluster == 2)", True),  # the variable shadows the cluster
        ("[1, 2].map(x, [x].map(y, x + y)) == [[2], [4]]", True),
        ('{"a": 1, "b": 2}.all(k, k.size() == 1)', True),
        ("[1, 2, 3].exists_one(x, x > 1)", False),
        ("[1, 2, 3][5] == 2", False),
        ("dyn('a') == 1", False),  # equality across types is an answer in cel-go, never an error
        ("dyn('a') != 1 && dyn(null) != 0 && dyn([1]) != {}", True),
        ("dyn(1) == 1u && dyn(1) == 1.0 && dyn(2u) != 2.5", True),  # numbers compare by value
        ("dyn(1) < 2.0 && dyn(2) > 1u && dyn(1.5) <= 2u", True),
        ("dyn('a') < 1 || true", True),  # ordering across non-numbers stays an error, which || absorbs
        ("!(dyn('a') < 1)", False),
        ('{"a": 1 / 0}.size() == 1', False),  # an error among a map literal's entries is the map's value
        ('{"a": 1 / 0}.size() == 1 || true', True),
        ("'''two\nlines''' == 'two\\nlines'", True),  # a multi-line string keeps its line break
        ("[1, 2, 3].map(x, x > 1, x * 10) == [20, 30]", True),  # map(x, p, f): f of the elements p keeps
        ("[1, 2].map(x, dyn(x), x) == [] || true", True),  # p must be a boolean, the error absorbed by ||
        ("[1, 2, 3][-1] == 3", False),  # out of range, as in cel-go: Python's index would count from the end
        ("[1, 2, 3][-1] == 3 || true", True),
        ("true ? 1 == 1 : 1 / 0 == 1", True),
    ],
)
def test_cluster_cel_evaluation_results(expression: str, expected: bool) -> None:
    """The evaluator does operators, calls and comprehensions itself (for speed and to charge them): celpy's
    results, or cel-go's where the two differ (spec C12, C15)."""
    assert _evaluate(expression)[1] is expected


COSTS_950 = "[" + ",".join(map(str, range(188))) + "].all(x, x >= 0)"  # 10 + 188 * 5


@pytest.mark.parametrize(("count", "stopped_at"), [(1, None), (10, None), (11, 10)])
def test_cluster_cel_per_cluster_limit_spans_the_expressions(
    monkeypatch: pytest.MonkeyPatch, count: int, stopped_at: int | None
) -> None:
    """Ten expressions just under the expression limit fit the cluster limit (ten times as much), as upstream."""
    monkeypatch.setattr(cel_env, "EXPRESSION_LIMIT", 1_000)
    monkeypatch.setattr(cel_env, "PER_CLUSTER_LIMIT", 10_000)
    program, matched, document = _evaluate(*([COSTS_950] * count))
    assert (matched, program.stopped_at(document)) == (stopped_at is None, stopped_at)
    if stopped_at is None:
        assert program.spent == 950 * count
    else:
        assert 10_000 < program.spent <= 10_010


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("'" + "a" * 40 + "!'.find('(a+)+$') == ''", True),  # backtracks for hours under Python's re
        ("('" + "a" * 40 + "!').matches('^(a|aa)+$')", False),
        ("'baaab'.findAll('a*') == ['', 'aaa', '']", True),  # Go skips an empty match right after a match
        ("'baaab'.findAll('a*', 2) == ['', 'aaa']", True),
        ("'xéy'.findAll('x*') == ['x', '', '']", True),
        ("'abc'.find('(?=b)') == ''", False),  # look-ahead is not RE2: a runtime error
        ("'abc'.matches('(a)\\\\1')", False),  # neither are back-references
        ("'abc'.find('\\\\pL+') == 'abc'", True),
        ("'1.2.3-rc.1'.find('[0-9]+$') == '1'", True),
    ],
)
def test_cluster_cel_regexps_run_on_re2(expression: str, expected: bool) -> None:
    started = time.process_time()
    program, matched, _ = _evaluate(expression)
    assert (matched, program.stopped) == (expected, 0)
    assert time.process_time() - started < 5


HOSTILE = f'managedCluster.metadata.name != "c2" || {LIST_200}.all(x, {LIST_200}.all(y, x >= 0))'
NORMAL = 'managedCluster.metadata.labels.env == "prod"'
FLEET = (
    a_cluster("c1").with_labels(env="prod"),
    a_cluster("c2").with_labels(env="prod"),
    a_cluster("c3").with_labels(env="dev"),
)


def _cel(*expressions: str) -> dict[str, Any]:
    return {"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": list(expressions)}}}]}


def _label(**labels: str) -> dict[str, Any]:
    return {"requiredClusterSelector": {"labelSelector": {"matchLabels": labels}}}


def _filtered(world: World, placement: Placement, sets: tuple[str, ...] = ("set1",)) -> tuple[list[str], Code, str]:
    """The Predicate filter's passed clusters and status for a placement whose candidates are the sets' clusters."""
    return predicate_filtered(InventoryView(world.inventory()), placement, sets)


@pytest.mark.parametrize(
    ("spec", "passed", "warned"),
    [
        (_cel(HOSTILE), ["c1", "c3"], HOSTILE),
        (_cel(NORMAL, HOSTILE), ["c1"], HOSTILE),
        (_cel(HOSTILE, NORMAL), ["c1"], HOSTILE),
        ({"predicates": [*_cel(HOSTILE)["predicates"], _label(env="prod")]}, ["c1", "c2", "c3"], HOSTILE),
        ({"predicates": [_label(env="prod"), *_cel(HOSTILE)["predicates"]]}, ["c1", "c2", "c3"], None),
        (_cel(NORMAL), ["c1", "c2"], None),
    ],
    ids=["stopped-cluster-only", "second-expression", "first-expression", "other-predicate-still-matches",
         "matched-before-evaluated", "no-runaway"],
)  # fmt: skip
def test_cluster_cel_stopped_evaluation_is_no_match_with_a_warning(
    small_limits: None, spec: dict[str, Any], passed: list[str], warned: str | None
) -> None:
    names, code, message = _filtered(one_set_world(*FLEET), a_placement(spec))
    assert names == passed
    if warned is None:
        assert (code, message) == (Code.SUCCESS, "")
    else:
        assert code is Code.WARNING
        assert message == f'CEL expression "{warned[:200]}..." stopped: cost limit exceeded'


@pytest.mark.parametrize(("sets", "code"), [(("set1",), Code.SUCCESS), (("other",), Code.WARNING)])
def test_cluster_cel_warning_only_for_the_placements_own_candidates(
    small_limits: None, sets: tuple[str, ...], code: Code
) -> None:
    world = one_set_world(*FLEET).with_set("other").with_binding("ns1", "other")
    world.with_clusters(a_cluster("c9").in_set("other"))
    hostile = HOSTILE.replace('"c2"', '"c9"')
    assert _filtered(world, a_placement(_cel(hostile)), sets)[1] is code


def test_cluster_cel_stopped_cluster_is_left_out_of_the_decision(small_limits: None) -> None:
    assert decided(run(one_set_world(*FLEET), a_placement(_cel(HOSTILE)))) == ["c1", "c3"]


def _decide(engine: ClusterPlacementEngine, inventory: Any, placement: Placement) -> list[str]:
    key = f"Placement/{placement.metadata.namespace}/{placement.metadata.name}"
    ctx = EngineContext(now=NOW, inventory=inventory, settings=EngineSettings())
    step = engine.decide(key, PlacementState(placement, None, None), ctx)
    assert step.state is not None and step.state.published is not None
    return sorted(step.state.published.decided)


def test_cluster_engine_counts_stopped_evaluations(small_limits: None) -> None:
    inventory = one_set_world(*FLEET).inventory()
    counts = []
    for _ in range(2):  # two engines fed the same inputs count the same
        engine = ClusterPlacementEngine()
        assert engine.cel_evaluations_stopped == 0
        assert _decide(engine, inventory, a_placement(_cel(HOSTILE), name="hostile")) == ["c1", "c3"]
        assert engine.cel_evaluations_stopped == 1  # c2 only: the others never reach the comprehension
        assert _decide(engine, inventory, a_placement(_cel(NORMAL), name="normal")) == ["c1", "c2"]
        assert _decide(engine, inventory, a_placement(_cel(HOSTILE, NORMAL), name="both")) == ["c1"]
        counts.append(engine.cel_evaluations_stopped)
        assert _decide(engine, inventory, a_placement(_cel(HOSTILE), name="again")) == ["c1", "c3"]
        assert engine.cel_evaluations_stopped == counts[-1]  # the stopped outcome is reused, not re-run
    assert counts == [2, 2]


def test_cluster_cel_stopped_expression_is_the_placements_warning(small_limits: None) -> None:
    result = run(one_set_world(*FLEET), a_placement(_cel(HOSTILE)))
    assert result.status.code is Code.WARNING
    assert result.status.plugin == "Predicate"
    assert "stopped: cost limit exceeded" in result.status.message
    assert decided(result) == ["c1", "c3"]
    assert run(one_set_world(*FLEET), a_placement(_cel(NORMAL))).status.code is Code.SUCCESS
