"""CEL at compile time as cel-go checks it, and the `managedCluster` document as upstream builds it (spec C11–C13)."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.fleet.views import InventoryView, cluster_document
from engine.cluster.matching.cel_check import MAX_CODE_POINTS, MAX_RECURSION
from engine.cluster.matching.cel_env import CelCompileError, CelProgram, compile_expression
from engine.cluster.pipeline.conditions import MISCONFIGURED
from tests.engine.cluster.cluster_builders import a_cluster, a_placement, condition, decided, one_set_world, run


def _cel(*expressions: str) -> dict[str, Any]:
    return {"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": list(expressions)}}}]}


# --- the document: map entries are never dropped -------------------------------------------------------------------

EMPTY_VALUES = (
    a_cluster("c1").with_labels(gpu="", env="prod"),
    a_cluster("c2").with_labels(env="prod"),
    a_cluster("c3"),
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('"gpu" in managedCluster.metadata.labels', ["c1"]),
        ("has(managedCluster.metadata.labels.gpu)", ["c1"]),
        ('managedCluster.metadata.labels.gpu == ""', ["c1"]),
        # c1 and c2 also carry the cluster-set label
        ("size(managedCluster.metadata.labels) == 3", ["c1"]),
        ("managedCluster.metadata.labels.size() == 2", ["c2"]),
        ('managedCluster.metadata.labels.exists(k, managedCluster.metadata.labels[k] == "")', ["c1"]),
        ('!("gpu" in managedCluster.metadata.labels)', ["c2", "c3"]),
    ],
)
def test_cluster_cel_keeps_label_entries_with_empty_values(expression: str, expected: list[str]) -> None:
    assert decided(run(one_set_world(*EMPTY_VALUES), a_placement(_cel(expression)))) == expected


@pytest.mark.parametrize(
    ("raw", "path", "expected"),
    [
        ({"metadata": {"name": "c", "labels": {"gpu": ""}}}, ("metadata", "labels"), {"gpu": ""}),
        ({"metadata": {"name": "c", "annotations": {"a": ""}}}, ("metadata", "annotations"), {"a": ""}),
        ({"metadata": {"name": "c", "labels": {}}}, ("metadata",), {"name": "c"}),  # an empty map is omitted
        ({"metadata": {"name": "c"}, "spec": {"taints": []}}, ("spec",), None),  # an empty list, then the spec
        (
            {"metadata": {"name": "c"}, "status": {"clusterClaims": [{"name": "x", "value": ""}]}},
            ("status", "clusterClaims"),
            [{"name": "x"}],  # a struct field, not a map entry: omitted when empty
        ),
    ],
    ids=["label", "annotation", "empty-map", "empty-list", "claim-value"],
)
def test_cluster_cel_document_drops_empty_fields_but_no_map_entries(
    raw: dict[str, Any], path: tuple[str, ...], expected: Any
) -> None:
    from topics.inventory import ManagedCluster

    current: Any = cluster_document(ManagedCluster.model_validate(raw))
    for step in path:
        current = current.get(step) if isinstance(current, dict) else None
    assert current == expected


# --- type checking -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expression", "issue"),
    [
        (
            "invalid.expression",
            "ERROR: <input>:1:1: undeclared reference to 'invalid' (in container '')\n | invalid.expression\n | ^",
        ),
        ("x == 1", "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')"),
        ("[1, 2].exists(x, y > 1)", "ERROR: <input>:1:18: undeclared reference to 'y' (in container '')"),
        ("managedCluster.metadata.foo()", "ERROR: <input>:1:28: undeclared reference to 'foo' (in container '')"),
        ("quantity('1Gi').isGreaterThan(quantity('1'))", "undeclared reference to 'quantity'"),
        ("size(1, 2) == 1", "ERROR: <input>:1:5: found no matching overload for 'size' applied to '(int, int)'"),
        # OCM's environment takes the Kubernetes semver library without its normalizing second argument
        ("semver('v1.2', true).minor() == 2", "found no matching overload for 'semver' applied to '(string, bool)'"),
        ("isSemver('v1', true)", "found no matching overload for 'isSemver' applied to '(string, bool)'"),
        (
            "managedCluster.metadata.name.startsWith()",
            "found no matching overload for 'startsWith' applied to 'dyn.()'",
        ),
        ("'a'.semver().major() == 1", "found no matching overload for 'semver' applied to 'string.()'"),
        (
            "semver('1.0.0').isGreaterThan('0.9.0')",
            "found no matching overload for 'isGreaterThan' applied to 'kubernetes.Semver.(string)'",
        ),
        (
            "scores(managedCluster, 'a').size() > 0",  # a member function only
            "found no matching overload for 'scores' applied to '(map(string, dyn), string)'",
        ),
        ("'{}'.parseJSON(1) == 1", "found no matching overload for 'parseJSON' applied to 'string.(int)'"),
        ("1 + 'a' == 2", "ERROR: <input>:1:3: found no matching overload for '_+_' applied to '(int, string)'"),
        ("1 in ['a']", "found no matching overload for '@in' applied to '(int, list(string))'"),
        ("true ? 1 : 'a'", "found no matching overload for '_?_:_' applied to '(bool, int, string)'"),
        ("[1].all(x, x + 1)", "found no matching overload for '_&&_' applied to '(bool, int)'"),
        ("[1]['a'] == 1", "found no matching overload for '_[_]' applied to '(list(int), string)'"),
        ("!1", "ERROR: <input>:1:1: found no matching overload for '!_' applied to '(int)'"),
        ("has(managedCluster)", "ERROR: <input>:1:5: invalid argument to has() macro"),
        ("[1].all(1, true)", "argument must be a simple name"),
        ("(1).all(x, true)", "expression of type 'int' cannot be range of a comprehension"),
        ("'a'.b == 1", "type 'string' does not support field selection"),
        ("Foo{a: 1} == 1", "undeclared reference to 'Foo' (in container '')"),
        (
            "managedCluster.metadata.name\n  .nope()",
            "ERROR: <input>:2:8: undeclared reference to 'nope' (in container '')\n |   .nope()\n | .......^",
        ),
    ],
)
def test_cluster_cel_checker_rejects_what_cel_go_rejects(expression: str, issue: str) -> None:
    with pytest.raises(CelCompileError) as error:
        compile_expression(expression)
    assert issue in str(error.value)


def test_cluster_cel_checker_reports_every_issue_in_source_order() -> None:
    with pytest.raises(CelCompileError) as error:
        compile_expression("b.x == 1 && a.y == 2")
    lines = [line for line in str(error.value).splitlines() if line.startswith("ERROR")]
    assert lines == [
        "ERROR: <input>:1:1: undeclared reference to 'b' (in container '')",
        "ERROR: <input>:1:13: undeclared reference to 'a' (in container '')",
    ]


@pytest.mark.parametrize(
    "expression",
    [
        'managedCluster.metadata.labels.env == "prod"',
        "managedCluster.metadata.labels.env == 1",  # dyn: decided at run time, as in cel-go
        ".managedCluster.metadata.name == 'a'",
        "managedCluster.scores('a').exists(s, s.value > 1)",
        "type(1) == int && int('1') == 1 && dyn(1) == 'a' == false",
        "duration('1s') < duration('2s') && timestamp('2020-01-01T00:00:00Z').getFullYear() == 2020",
        "'{\"a\": 1}'.parseJSON().a == 1.0",
        "[1, 'a'].size() == 2 && {'a': 1}['a'] == 1 && [1][0] == 1",
        "managedCluster.status.clusterClaims.map(c, c.name, c.value).size() > 0",
        "'%s'.format(['a']) == 'a' && ['a'].join(',') == 'a' && 'a,b'.split(',').size() == 2",
        "1 < 2.0 && 2u > 1",  # cross-type numeric comparisons
        "[1, 2] + [3] == [1, 2, 3] && 'a' + 'b' == 'ab'",
        "semver('1.2.3').isLessThan(semver('1.3.0')) && isSemver('v1')",
        "managedCluster.metadata.name.findAll('[a-z]', 2).size() > 0 && 'x'.matches('x') && matches('x', 'x')",
        "[[1]].all(x, x.all(y, y > 0)) && {'a': [1]}.exists(k, k == 'a')",
    ],
)
def test_cluster_cel_checker_accepts_what_cel_go_accepts(expression: str) -> None:
    compile_expression(expression)


def test_cluster_cel_undeclared_reference_is_misconfigured_with_upstream_prefix() -> None:
    result = run(one_set_world(a_cluster("c1")), a_placement(_cel("invalid.expression")))
    assert condition(result, MISCONFIGURED) == (
        "True",
        "Misconfigured",
        "Predicate:compilation failed: ERROR: <input>:1:1: undeclared reference to 'invalid' (in container '')\n"
        " | invalid.expression\n"
        " | ^",
    )
    assert decided(result) == []


# --- parser limits ---------------------------------------------------------------------------------------------------

_DEEP = 2 * MAX_RECURSION


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("(" * _DEEP + "true" + ")" * _DEEP, "max recursion depth exceeded"),
        ("[" * _DEEP + "]" * _DEEP + " == []", "max recursion depth exceeded"),
        ("managedCluster" + ".a" * 3000 + " == 1", "max recursion depth exceeded"),
        ("1" + " + 1" * 3000 + " > 0", "max recursion depth exceeded"),
        ("f(" * _DEEP + ")" * _DEEP, "max recursion depth exceeded"),
        (
            "'" + "a" * MAX_CODE_POINTS + "' == 'a'",
            "expression code point size exceeds limit: size: 100009, limit 100000",
        ),
    ],
    ids=["parens", "lists", "selections", "additions", "calls", "size"],
)
def test_cluster_cel_nesting_past_the_parser_limits_is_misconfigured(expression: str, message: str) -> None:
    result = run(one_set_world(a_cluster("c1")), a_placement(_cel(expression)))
    status, reason, text = condition(result, MISCONFIGURED)
    assert (status, reason) == ("True", "Misconfigured")
    assert text.startswith("Predicate:compilation failed: ERROR: <input>:-1:0: ")
    assert message in text


@pytest.mark.parametrize(
    ("expression", "matched"),
    [
        (" || ".join(["false"] * 3000 + ["true"]), True),  # cel-go balances the chain
        (" && ".join(["true"] * 3000 + ["false"]), False),
        ("!" * 2000 + "false", False),  # cel-go keeps only the parity of a run
        ("!" * 2001 + "false", True),
        ("-" * 2000 + "1 == 1", True),
        ("(" * 60 + "true" + ")" * 60, True),
        ("managedCluster" + ".metadata" * 1 + ".name" + " == 'c1' && " + " && ".join(["true"] * 200), True),
    ],
    ids=["or-chain", "and-chain", "even-nots", "odd-nots", "negations", "parens", "mixed"],
)
def test_cluster_cel_long_chains_cel_go_accepts_evaluate(expression: str, matched: bool) -> None:
    compiled = compile_expression(expression)
    view = InventoryView(one_set_world(a_cluster("c1")).inventory())
    assert CelProgram((compiled,), view.cel_activation()).matches(view.cel_document("c1")) is matched
