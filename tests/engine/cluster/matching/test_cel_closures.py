"""The compiled CEL evaluator against the tree walker it replaced (`cel_oracle`): for every expression of the table,
on clusters with labels, claims, scores and none of them, the same value or error value (message, arguments and
position), the same raised failure and the same cost charged; and with ceilings low enough to stop it anywhere, the
same stopping point."""

from __future__ import annotations

from typing import Any

import pytest
from celpy.evaluation import CELEvalError

from engine.cluster.fleet.views import InventoryView
from engine.cluster.matching.cel_closures import compile_closure
from engine.cluster.matching.cel_cost import Budget, CostLimitExceededError, costed_activation
from engine.cluster.matching.cel_env import CelCompileError, compile_expression
from tests.engine.cluster.cluster_builders import a_cluster, one_set_world
from tests.engine.cluster.matching.cel_oracle import CostEvaluator

LIST_30 = "[" + ",".join(map(str, range(30))) + "]"
CLAIM = "kubeversion.open-cluster-management.io"

EXPRESSIONS = [
    # reads of the cluster: present, missing, through maps and lists, on a non-map
    'managedCluster.metadata.labels["env"] == "prod"',
    "managedCluster.metadata.labels.env == 'prod'",
    "managedCluster.metadata.labels.missing == 'x'",
    "managedCluster.metadata.name.size() > 1",
    "managedCluster.metadata.name.nope == 1",
    "managedCluster.status.clusterClaims[0].name == 'platform'",
    "managedCluster.status.clusterClaims[5].name == 'platform'",
    'managedCluster.metadata.labels[1] == "x"',
    'managedCluster.metadata.labels["nope"] == "x"',
    "managedCluster.metadata.labels[managedCluster.metadata.name] == 'x'",
    '{1: "a"}[1] == "a" && {true: 1}[true] == 1',
    "managedCluster.spec.hubAcceptsClient",
    "managedCluster != {}",
    "size(managedCluster.metadata.labels) >= 0",
    '"env" in managedCluster.metadata.labels',
    '"prod" in ["dev", managedCluster.metadata.labels.env]',
    "has(managedCluster.metadata.labels.env)",
    "has(managedCluster.metadata.nope.deeper)",
    "dyn(managedCluster.metadata.name) == 'c1'",
    ".managedCluster.metadata.name == 'c1'",
    # && and || absorb errors as CEL defines them; ?: picks one side
    "managedCluster.metadata.labels.missing == 'x' || true",
    "true || managedCluster.metadata.labels.missing == 'x'",
    "managedCluster.metadata.labels.missing == 'x' && false",
    "false && managedCluster.metadata.labels.missing == 'x'",
    "managedCluster.metadata.labels.missing == 'x' || false",
    "managedCluster.metadata.labels.missing == 'x' && true",
    "(1 / 0 == 1) || (2 / 0 == 1)",
    "(1 / 0 == 1) && (2 / 0 == 1)",
    "dyn(1) || true",
    "dyn(1) && false",
    "dyn(1) || dyn(2)",
    "has(managedCluster.metadata.labels.env) ? managedCluster.metadata.labels.env == 'prod' : false",
    "managedCluster.metadata.labels.missing == 'x' ? true : false",
    "true ? 1 == 1 : 1 / 0 == 1",
    "false ? 1 / 0 == 1 : [1].all(x, x > 0)",
    "dyn(1) ? true : false",
    # macros: short-circuit, errors absorbed or raised, nesting, shadowing, maps as ranges
    "[1, 2, 3].all(x, x > 0)",
    "[1, 2, 3].exists(x, x == 2)",
    "[1, 2, 3].exists_one(x, x > 1)",
    "[1, 2, 3].map(x, x * 2) == [2, 4, 6]",
    "[1, 2, 3].filter(x, x > 1).size() == 2",
    '[1, "a"].all(x, x > 0)',
    '["a", 1].exists(x, x > 0)',
    '[1, "a", 0].all(x, x > 0)',
    '[1, "a", 2].exists(x, x < 0)',
    '[1, "a"].map(x, x + 1).size() == 2',
    '[1, "a"].filter(x, x > 0).size() == 1',
    '[1, "a"].exists_one(x, x > 0)',
    '[1, "a"].map(x, x + 1).size() == 2 || true',
    "[1, 2].filter(x, dyn(1)).size() == 2",
    "[1, 2].exists(managedCluster, managedCluster == 2)",
    "[1, 2].map(x, [x].map(y, x + y)) == [[2], [4]]",
    '{"a": 1, "b": 2}.all(k, k.size() == 1)',
    '{"a": 1, "b": 2}.map(k, k + "!") == ["a!", "b!"]',
    "managedCluster.metadata.labels.all(k, managedCluster.metadata.labels[k].size() < 10)",
    "managedCluster.metadata.labels.exists(k, k.startsWith('e') && managedCluster.metadata.labels[k] == 'prod')",
    f"managedCluster.status.clusterClaims.exists(c, c.name == '{CLAIM}'"
    " && semver(c.value).isGreaterThan(semver('1.28.0')))",
    "managedCluster.status.clusterClaims.map(c, c.value).filter(v, v.size() == 3).size() >= 0",
    "managedCluster.metadata.name.all(c, c.size() == 1)",
    f"{LIST_30}.all(x, {LIST_30}.all(y, x + y >= 0))",
    f"{LIST_30}.exists(x, {LIST_30}.exists(y, x * y == 841))",
    f"{LIST_30}.map(x, {LIST_30}.filter(y, y > x).size()).size() == 30",
    f"{LIST_30}.exists_one(x, {LIST_30}.exists_one(y, y == x && x == 7))",
    "[1, 2].map(x, x > 1, x) == [2]",
    # scores()
    'managedCluster.scores("usage").exists(s, s.name == "cpu" && s.value > 80)',
    'managedCluster.scores("usage").filter(s, s.name == "cpu").all(e, e.value > 80)',
    'managedCluster.scores("missing").size() == 0',
    'managedCluster.scores("usage").size() == 0 || true',
    # lists, maps, strings, bytes
    "[1, 2] + [3] == [1, 2, 3]",
    "[] == []",
    "{} == {}",
    '{"a": 1}["a"] == 1',
    '{"a": 1}["b"] == 1',
    '{"a": 1, "a": 2}.size() == 1',
    "{[1]: 2}.size() == 1",
    '{"a": 1 / 0}.size() == 1',
    "[1, 1 / 0].size() == 2",
    "[1, 2, 3][5] == 2",
    "[1, 2, 3][-1] == 2",
    "'abc' < 'abd'",
    "'abc' == 'abc' && 'a' != 'b' && 'b' >= 'a' && 'a' <= 'a' && 'b' > 'a'",
    "dyn('a') == 1",
    "dyn('a') < 1",
    "'abc'.contains('b') && 'abc'.startsWith('a') && 'abc'.endsWith('c')",
    "'abc'.matches('^a.c$')",
    "'abc'.matches('(')",
    "'a-b-c'.split('-').join('+') == 'a+b+c'",
    "'%s and %d'.format(['x', 3]) == 'x and 3'",
    "'%s'.format([]) == ''",
    "'abc'.substring(5) == ''",
    "'abc'.charAt(1) == 'b' && 'abc'.indexOf('c') == 2 && 'abcb'.lastIndexOf('b') == 3",
    "'  x '.trim().upperAscii().lowerAscii().reverse() == 'x'",
    "b'abc' == bytes('abc') && string(b'abc') == 'abc'",
    "'''multi\nline'''.size() == 10",
    "'\\u00e9'.size() == 1",
    '\'{"n": 2, "l": [1, {"k": true}]}\'.parseJSON().l[1].k',
    "'{bad'.parseJSON() == 1",
    # ints, uints, doubles and their overflow
    "9223372036854775807 + 1 > 0",
    "(9223372036854775807 + 1 > 0) || true",
    "-(-9223372036854775807 - 1) > 0",
    "-9223372036854775808 < 0",
    "99999999999999999999 > 0",
    "18446744073709551615u > 0u",
    "18446744073709551615u + 1u > 0u",
    "0u - 1u > 0u",
    "3 * 4 - 2 == 10",
    "7 / 2 == 3 && -7 / 2 == -3 && -7 % 3 == -1",
    "5 % 0 == 0",
    "5 / 0 == 0",
    "1.5 * 2.0 == 3.0 && 1.0 / 0.0 > 0.0",
    "dyn(1) + 2.0 == 3.0",
    "dyn(1) == 1u",
    "dyn(1) < 2u",
    "int('12') + int(3.9) == 15 && uint(4) == 4u && double(1) == 1.0",
    "int('x') == 1",
    "int(1e30) == 1",
    "!true == false && !(1 > 2)",
    "-(1) == -1 && -1.5 < 0.0",
    "!dyn(1)",
    "type(1) == int && type('a') == string && type([]) == list",
    "null == null",
    "[1, 2, 3].size() == 3 && size('ab') == 2",
    "bool('true') && !bool('false')",
    "bool('maybe')",
    # timestamps and durations
    "timestamp('2024-01-02T03:04:05Z').getFullYear() == 2024",
    "timestamp('2024-01-02T03:04:05Z') + duration('1h') > timestamp('2024-01-02T03:04:05Z')",
    "timestamp('2024-01-02T03:04:05Z') - timestamp('2024-01-01T03:04:05Z') == duration('24h')",
    "duration('90s').getMinutes() == 1",
    "timestamp('not a time') == timestamp('2024-01-01T00:00:00Z')",
    "timestamp('2024-01-02T03:04:05Z').getHours('America/New_York') == 22",
    "int(timestamp('1970-01-01T00:01:00Z')) == 60",
    # semver
    "semver('1.2.3').isLessThan(semver('1.10.0')) && semver('1.2.3').compareTo(semver('1.2.3')) == 0",
    "semver('1.2.0').minor() == 2",
    "semver('bad') == semver('1.0.0')",
    "isSemver('1.0.0') && !isSemver('x')",
    # cost-heavy ones (stopped with the low ceilings)
    "'a'.replace('a', 'aaaaaaaaaa').replace('a', 'aaaaaaaaaa').size() == 100",
    "'ab'.replace('a', 'aaaaaaaaaa').findAll('a+').size() == 1",
    "managedCluster.metadata.name",
    "1",
]

CEILINGS = (None, 0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987, 1597, 2584, 4181)
"""None: upstream's limit. The others stop an expression at many points of its evaluation."""


def _view() -> InventoryView:
    world = one_set_world(
        a_cluster("c1").with_labels(env="prod", version="1.20.3").with_claims({CLAIM: "1.29.1", "platform": "AWS"}),
        a_cluster("c2").with_labels(env="dev"),
        a_cluster("c3"),
    )
    world.with_score("c1", "usage", {"cpu": 90, "mem": 10})
    world.with_score("c2", "usage", {"cpu": 50})
    return InventoryView(world.inventory())


VIEW = _view()


def _outcome(run: Any, budget: Budget, ceiling: int | None) -> tuple[Any, ...]:
    """What one evaluation gives, in comparable form, with the cost charged."""
    budget.used = 0
    budget.start(1_000_000 if ceiling is None else ceiling, 10_000_000)
    try:
        value = run()
    except CostLimitExceededError:
        return ("stopped", budget.used)
    except CELEvalError as error:
        return ("error", *_error(error), budget.used)
    except Exception as exc:  # a Python failure inside: the filter reads it as no match, explain shows its text
        return ("raised", type(exc).__name__, str(exc), budget.used)
    return ("value", type(value).__name__, repr(value), budget.used)


def _error(error: CELEvalError) -> tuple[Any, ...]:
    return (repr(error.args), error.line, error.column)


def _compiled(text: str) -> Any:
    try:
        return compile_expression(text)
    except CelCompileError:
        return None


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_cluster_cel_compiled_evaluator_matches_the_tree_walker(text: str) -> None:
    expression = _compiled(text)
    assert expression is not None, f"{text!r} does not compile"
    for name in ("c1", "c2", "c3"):
        document = VIEW.cel_document(name)
        old_budget, new_budget = Budget(), Budget()
        old_activation = costed_activation(VIEW.cel_activation(), old_budget)
        evaluate = compile_closure(expression.ast, VIEW.cel_activation(), new_budget)
        for ceiling in CEILINGS:
            old = _outcome(
                lambda: CostEvaluator(expression.ast, old_activation, old_budget).evaluate(  # noqa: B023
                    {"managedCluster": document}  # noqa: B023
                ),
                old_budget,
                ceiling,
            )
            new = _outcome(lambda: evaluate(document), new_budget, ceiling)  # noqa: B023
            assert new == old, (name, ceiling)


def test_cluster_cel_differential_table_covers_every_outcome() -> None:
    """The table is worth running: it has values, error values and stops."""
    kinds = set()
    for text in EXPRESSIONS:
        expression = compile_expression(text)
        for name in ("c1", "c2", "c3"):
            budget = Budget()
            evaluate = compile_closure(expression.ast, VIEW.cel_activation(), budget)
            document = VIEW.cel_document(name)
            kinds.add(_outcome(lambda: evaluate(document), budget, None)[0])  # noqa: B023
            kinds.add(_outcome(lambda: evaluate(document), budget, 5)[0])  # noqa: B023
    # no expression of the table fails in Python any more (three-argument `map` was the last); such a failure
    # would still be compared, as "raised"
    assert kinds == {"value", "error", "stopped"}
