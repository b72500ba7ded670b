"""Predicate filter: label and claim selectors, validation texts, CEL (spec C6–C16)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from celpy.adapter import json_to_cel

from engine.cluster.fleet.views import InventoryView, _seen_at, _visible_part, cluster_document
from engine.cluster.matching import cel_env
from engine.cluster.matching.cel_env import CelCompileError, CelProgram, compile_expression
from engine.cluster.matching.selectors import SelectorError, compile_selector, matches
from engine.cluster.pipeline.conditions import MISCONFIGURED, SATISFIED
from tests.engine.cluster.cluster_builders import a_cluster, a_placement, condition, decided, one_set_world, run
from topics.k8s import LabelSelectorRequirement

LABELLED = (
    a_cluster("c1").with_labels(env="prod", cloud="Amazon"),
    a_cluster("c2").with_labels(env="dev", cloud=""),
    a_cluster("c3").with_labels(env="prod"),
)


def _label_predicate(selector: dict[str, Any]) -> dict[str, Any]:
    return {"predicates": [{"requiredClusterSelector": {"labelSelector": selector}}]}


def _expr(key: str, operator: str, values: list[str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": operator}
    if values is not None:
        out["values"] = values
    return out


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ({}, ["c1", "c2", "c3"]),
        ({"matchLabels": {"env": "prod"}}, ["c1", "c3"]),
        ({"matchExpressions": [_expr("env", "In", ["dev", "test"])]}, ["c2"]),
        ({"matchExpressions": [_expr("cloud", "NotIn", ["Amazon"])]}, ["c2", "c3"]),
        ({"matchExpressions": [_expr("cloud", "Exists")]}, ["c1", "c2"]),
        ({"matchExpressions": [_expr("cloud", "DoesNotExist")]}, ["c3"]),
        ({"matchLabels": {"env": "prod"}, "matchExpressions": [_expr("cloud", "Exists")]}, ["c1"]),
    ],
    ids=["empty", "matchLabels", "In", "NotIn-absent-key-passes", "Exists-empty-value", "DoesNotExist", "AND"],
)
def test_cluster_label_selector_semantics(selector: dict[str, Any], expected: list[str]) -> None:
    result = run(one_set_world(*LABELLED), a_placement(_label_predicate(selector)))
    assert decided(result) == expected


@pytest.mark.parametrize(
    ("expressions", "expected"),
    [
        ([_expr("region", "In", ["us-east-1"])], ["c1"]),
        ([_expr("region", "NotIn", ["us-east-1"])], ["c2", "c3"]),
        ([_expr("region", "Exists")], ["c1", "c2"]),
        ([_expr("region", "DoesNotExist")], ["c3"]),
    ],
)
def test_cluster_claim_selector_semantics(expressions: list[dict[str, Any]], expected: list[str]) -> None:
    world = one_set_world(
        a_cluster("c1").with_claims(region="us-east-1"), a_cluster("c2").with_claims(region="eu"), a_cluster("c3")
    )
    spec = {"predicates": [{"requiredClusterSelector": {"claimSelector": {"matchExpressions": expressions}}}]}
    assert decided(run(world, a_placement(spec))) == expected


def test_cluster_claims_last_duplicate_wins() -> None:
    world = one_set_world(a_cluster("c1"))
    inventory = world.inventory()
    raw = {"metadata": {"name": "c1", "labels": {"cluster.open-cluster-management.io/clusterset": "set1"}}}
    raw["status"] = {"clusterClaims": [{"name": "r", "value": "a"}, {"name": "r", "value": "b"}]}
    from tests.engine.cluster.cluster_builders import NOW
    from topics.inventory import ManagedCluster

    inventory.apply(ManagedCluster.model_validate(raw), NOW)
    assert InventoryView(inventory).claims("c1") == {"r": "b"}


def test_cluster_predicates_are_ored_and_selectors_anded() -> None:
    world = one_set_world(
        a_cluster("c1").with_labels(env="prod").with_claims(region="eu"),
        a_cluster("c2").with_labels(env="prod"),
        a_cluster("c3").with_labels(env="dev").with_claims(region="us"),
    )
    spec = {
        "predicates": [
            {
                "requiredClusterSelector": {
                    "labelSelector": {"matchLabels": {"env": "prod"}},
                    "claimSelector": {"matchExpressions": [_expr("region", "In", ["eu"])]},
                }
            },
            {"requiredClusterSelector": {"claimSelector": {"matchExpressions": [_expr("region", "In", ["us"])]}}},
        ]
    }
    assert decided(run(world, a_placement(spec))) == ["c1", "c3"]


@pytest.mark.parametrize(
    ("requirement", "message"),
    [
        (_expr("env", "Foo", ["a"]), '"Foo" is not a valid label selector operator'),
        (
            _expr("env", "In", []),
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            _expr("env", "NotIn"),
            "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            _expr("env", "Exists", ["x"]),
            'values: Invalid value: []string{"x"}: values set must be empty for exists and does not exist',
        ),
        (_expr("-bad", "Exists"), 'key: Invalid value: "-bad": name part must consist of alphanumeric characters'),
        (_expr("a/b/c", "Exists"), 'key: Invalid value: "a/b/c": a qualified name must consist of'),
        (
            _expr("Bad.Prefix/x", "Exists"),
            'key: Invalid value: "Bad.Prefix/x": prefix part a lowercase RFC 1123 subdomain',
        ),
        (_expr("/x", "Exists"), 'key: Invalid value: "/x": prefix part must be non-empty'),
        (_expr("x" * 64, "Exists"), "name part must be no more than 63 characters"),
        (
            _expr("env", "In", ["bad value"]),
            'values[0][env]: Invalid value: "bad value": a valid label must be an empty string',
        ),
        (_expr("env", "In", ["v" * 64]), "must be no more than 63 characters"),
    ],
    ids=[
        "operator",
        "In-empty",
        "NotIn-nil",
        "Exists-values",
        "key-start",
        "key-slashes",
        "prefix-case",
        "prefix-empty",
        "key-long",
        "value-chars",
        "value-long",
    ],
)
def test_cluster_selector_validation_texts(requirement: dict[str, Any], message: str) -> None:
    with pytest.raises(SelectorError) as error:
        compile_selector(None, [LabelSelectorRequirement.model_validate(requirement)])
    assert message in str(error.value)


def test_cluster_selector_accepts_valid_keys_and_empty_values() -> None:
    selector = compile_selector({"example.com/name": ""}, [LabelSelectorRequirement(key="a.b_c-d", operator="Exists")])
    assert matches(selector, {"example.com/name": "", "a.b_c-d": "x"})
    assert not matches(selector, {"example.com/name": "x", "a.b_c-d": "x"})


def test_cluster_invalid_predicate_is_misconfigured_with_plugin_name() -> None:
    spec = _label_predicate({"matchExpressions": [_expr("env", "Foo", ["a"])]})
    result = run(one_set_world(*LABELLED), a_placement(spec))
    assert condition(result, MISCONFIGURED) == (
        "True",
        "Misconfigured",
        'Predicate:"Foo" is not a valid label selector operator',
    )
    assert decided(result) == []
    assert condition(result, SATISFIED)[1] == "NoManagedClusterMatched"


def test_cluster_invalid_predicate_not_reported_without_candidates() -> None:
    world = one_set_world()
    spec = _label_predicate({"matchExpressions": [_expr("env", "Foo", ["a"])]})
    result = run(world.with_set("set1"), a_placement(spec))
    assert condition(result, MISCONFIGURED)[0] == "False"
    assert condition(result, SATISFIED)[1] == "AllManagedClusterSetsEmpty"


def _cel(*expressions: str) -> dict[str, Any]:
    return {"predicates": [{"requiredClusterSelector": {"celSelector": {"celExpressions": list(expressions)}}}]}


CEL_WORLD = (
    a_cluster("c1").with_labels(env="prod", version="1.20.3").with_claims(platform="AWS"),
    a_cluster("c2").with_labels(env="dev", version="1.18.0").with_claims(platform="GCP"),
    a_cluster("c3").with_labels(version="not-semver"),
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('managedCluster.metadata.labels["env"] == "prod"', ["c1"]),
        ('managedCluster.metadata.labels.env.startsWith("d")', ["c2"]),
        ("has(managedCluster.metadata.labels.env)", ["c1", "c2"]),
        ('managedCluster.status.clusterClaims.exists(c, c.name == "platform" && c.value == "AWS")', ["c1"]),
        ('managedCluster.status.clusterClaims.all(c, c.value.lowerAscii() == "gcp")', ["c2"]),
        ('managedCluster.status.clusterClaims.exists_one(c, c.value.matches("^A"))', ["c1"]),
        ("managedCluster.status.clusterClaims.map(c, c.value).filter(v, v.size() == 3).size() == 1", ["c1", "c2"]),
        ('semver(managedCluster.metadata.labels.version).isGreaterThan(semver("1.19.0"))', ["c1"]),
        ('semver(managedCluster.metadata.labels.version).isLessThan(semver("1.19.0"))', ["c2"]),
        ('semver(managedCluster.metadata.labels.version).compareTo(semver("1.20.3")) == 0', ["c1"]),
        ("semver(managedCluster.metadata.labels.version).minor() >= 18", ["c1", "c2"]),
        ("semver(managedCluster.metadata.labels.version).major() == 1", ["c1", "c2"]),
        ("semver(managedCluster.metadata.labels.version).patch() == 3", ["c1"]),
        ("!isSemver(managedCluster.metadata.labels.version)", ["c3"]),
        ('managedCluster.metadata.labels.version.split(".").size() == 3', ["c1", "c2"]),
        ('managedCluster.metadata.labels.version.find("[0-9]+") == "1"', ["c1", "c2"]),
        ('managedCluster.metadata.labels.version.findAll("[0-9]+").size() == 3', ["c1", "c2"]),
        ('managedCluster.metadata.name.replace("c", "x") == "x1"', ["c1"]),
        ('managedCluster.metadata.name.substring(1) == "3"', ["c3"]),
        ('managedCluster.metadata.name.indexOf("2") == 1', ["c2"]),
        ('managedCluster.metadata.name.upperAscii().charAt(0) == "C"', ["c1", "c2", "c3"]),
        ('["a", managedCluster.metadata.name].join("-") == "a-c2"', ["c2"]),
        ('"%s!".format([managedCluster.metadata.name]) == "c1!"', ["c1"]),
        ("'{\"n\": 2}'.parseJSON().n == 2.0", ["c1", "c2", "c3"]),
        ('managedCluster.metadata.labels["missing"] == "x" || managedCluster.metadata.name == "c3"', ["c3"]),
        ("managedCluster.metadata.name", []),
    ],
)
def test_cluster_cel_expressions(expression: str, expected: list[str]) -> None:
    assert decided(run(one_set_world(*CEL_WORLD), a_placement(_cel(expression)))) == expected


def test_cluster_cel_expressions_are_anded() -> None:
    spec = _cel('managedCluster.metadata.labels.env == "prod"', 'managedCluster.metadata.name == "c2"')
    assert decided(run(one_set_world(*CEL_WORLD), a_placement(spec))) == []


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("has(managedCluster.metadata.labels.env)", ["c1"]),
        ("!has(managedCluster.metadata.labels.env)", ["c2"]),
        # no cluster has annotations: `has` of a field of a missing map is an error, as in cel-go, never false
        ("!has(managedCluster.metadata.annotations.gpu)", []),
        ("has(managedCluster.metadata.annotations.gpu) || true", ["c1", "c2"]),  # which || absorbs
        ("has(managedCluster.metadata.name.nope)", []),  # a field of a string is absent, not an error
        ("!has(managedCluster.metadata.name.nope)", ["c1", "c2"]),
    ],
)
def test_cluster_cel_has_of_a_missing_map_is_an_error(expression: str, expected: list[str]) -> None:
    world = one_set_world(a_cluster("c1").with_labels(env="prod"), a_cluster("c2"))
    assert decided(run(world, a_placement(_cel(expression)))) == expected


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("managedCluster.metadata.name ==", "Syntax error"),
        ('managedCluster.metadata.name.base64() == "x"', "undeclared reference to 'base64'"),
        ("ip(managedCluster.metadata.name)", "undeclared reference to 'ip'"),
        ("[1].reduce(a, b, 0, a + b) == 1", "undeclared reference to 'reduce'"),
    ],
)
def test_cluster_cel_compile_failure_is_misconfigured(expression: str, fragment: str) -> None:
    result = run(one_set_world(*CEL_WORLD), a_placement(_cel(expression)))
    status, _, message = condition(result, MISCONFIGURED)
    assert status == "True"
    assert message.startswith("Predicate:compilation failed: ")
    assert fragment in message


SCORED = (a_cluster("c1"), a_cluster("c2"), a_cluster("c3"))


def _scored_world() -> Any:
    world = one_set_world(*SCORED)
    world.with_score("c1", "usage", {"cpu": 90, "mem": 10}, valid_until="2021-01-01T00:00:00Z")
    world.with_score("c2", "usage", {"cpu": 50})
    world.with_score("c3", "usage", {"mem": 1})
    return world


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('managedCluster.scores("usage").exists(s, s.name == "cpu" && s.value > 80)', ["c1"]),
        ('managedCluster.scores("usage").filter(s, s.name == "cpu").all(e, e.value > 80)', ["c1", "c3"]),
        ('managedCluster.scores("missing").size() == 0', []),
        ('managedCluster.scores("usage").exists(s, s.name == "cpu" && s.value > 80.5)', ["c1"]),
        ('managedCluster.scores("usage").exists(s, s.value == 50.0 || s.value == 1u)', ["c2", "c3"]),
    ],
    ids=[
        "expired-values-still-returned",
        "C16-quirk-no-entry-is-true",
        "missing-object-is-no-match",
        "int-score-against-a-double",
        "equal-across-number-types",
    ],
)
def test_cluster_cel_scores(expression: str, expected: list[str]) -> None:
    assert decided(run(_scored_world(), a_placement(_cel(expression)))) == expected


def test_cluster_cel_runaway_expression_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cel_env, "EXPRESSION_LIMIT", 500)
    big = "[" + ",".join(["1"] * 30) + "]"
    runaway = compile_expression(f"{big}.all(a, {big}.all(b, a == b || true))")
    world = one_set_world(a_cluster("c1"))
    view = InventoryView(world.inventory())
    assert CelProgram((runaway,), view.cel_activation()).matches(view.cel_document("c1")) is False
    small = compile_expression("[1, 2].all(a, a > 0)")
    assert CelProgram((small,), view.cel_activation()).matches(view.cel_document("c1")) is True


def test_cluster_cel_stopped_expression_costs_no_more_runs_on_what_it_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stop is asked about again at once (the probe's key): on the part an expression reads, as on the whole
    cluster, the program answers that from its last run instead of running up to the limit again."""
    monkeypatch.setattr(cel_env, "EXPRESSION_LIMIT", 500)
    runs: list[Any] = []
    run_once = CelProgram._run

    def counted(program: CelProgram, cluster: Any) -> tuple[bool, int | None]:
        runs.append(cluster)
        return run_once(program, cluster)

    monkeypatch.setattr(CelProgram, "_run", counted)
    big = "[" + ",".join(["1"] * 30) + "]"
    runaway = f"{big}.all(a, {big}.all(b, a == b || true))"
    world = one_set_world(a_cluster("c1"), a_cluster("c2"), a_cluster("c3"))
    counts = []
    for expression, reads in (
        (f"managedCluster.metadata.name != '' && {runaway}", (("metadata", "name"),)),
        (f"managedCluster != {{}} && {runaway}", None),
    ):
        assert compile_expression(expression).reads == reads
        runs.clear()
        assert decided(run(world, a_placement(_cel(expression)))) == []
        counts.append(len(runs))
    assert counts[0] == counts[1]


def test_cluster_cel_compile_reports_score_names() -> None:
    assert compile_expression('managedCluster.scores("a").size() > 0').score_names == frozenset({"a"})
    assert compile_expression("managedCluster.scores(managedCluster.metadata.name).size() > 0").score_names is None
    with pytest.raises(CelCompileError):
        compile_expression("unknownFn()")


def test_cluster_cel_document_omits_empty_fields() -> None:
    doc = cluster_document(a_cluster("c1").build())
    assert doc["metadata"] == {"name": "c1"}
    assert "spec" not in doc
    with_values = cluster_document(a_cluster("c2").with_labels(a="b").with_resources({"cpu": "2"}).build())
    assert with_values["metadata"]["labels"] == {"a": "b"}
    assert with_values["status"]["allocatable"] == {"cpu": "2"}


@pytest.mark.parametrize(
    ("expression", "reads"),
    [
        ('managedCluster.metadata.labels["tier"] == "gold"', (("metadata", "labels", "tier"),)),
        ("managedCluster.status.clusterClaims.exists(c, c.value == 'x')", (("status", "clusterClaims"),)),
        (
            'managedCluster.metadata.name.startsWith("a") || managedCluster.metadata.labels.env == "b"',
            (("metadata", "labels", "env"), ("metadata", "name")),
        ),
        (
            "managedCluster.metadata.labels[managedCluster.metadata.name] == 'x'",
            (("metadata", "labels"), ("metadata", "name")),
        ),
        ("has(managedCluster.metadata.labels.env)", (("metadata", "labels", "env"),)),
        # a path that extends another reads part of the shorter one's value
        (
            'managedCluster.metadata.labels.size() == 2 && managedCluster.metadata.labels.env == "x"',
            (("metadata", "labels"),),
        ),
        ("'{\"n\": 2}'.parseJSON().n == 2.0", ()),
        ('managedCluster.scores("a").size() > 0', None),  # the whole cluster is an argument
        ("managedCluster == {}", None),
        ("[1].exists(managedCluster, managedCluster == 1)", None),
    ],
)
def test_cluster_cel_fixed_paths_an_expression_reads(expression: str, reads: Any) -> None:
    assert compile_expression(expression).reads == reads


class _CountingProgram(CelProgram):
    runs = 0

    def matches(self, cluster: Any) -> bool:
        type(self).runs += 1
        return super().matches(cluster)


@pytest.mark.parametrize(
    ("expression", "expected", "runs"),
    [
        # one run per distinct env value (prod, dev, staging, absent), not one per cluster
        ('managedCluster.metadata.labels.env == "prod"', ["a1", "a2", "a3"], 4),
        ("!has(managedCluster.metadata.labels.env)", ["b", "d1", "d2"], 4),
        # two paths: the name tells every cluster apart
        ('managedCluster.metadata.labels.env == "prod" && managedCluster.metadata.name != "a2"', ["a1", "a3"], 8),
        # reads the whole cluster: one run per cluster
        ("managedCluster != {}", ["a1", "a2", "a3", "b", "c", "d1", "d2", "e"], 8),
    ],
)
def test_cluster_cel_outcomes_are_shared_by_clusters_with_the_same_values(
    expression: str, expected: list[str], runs: int
) -> None:
    world = one_set_world(
        *(a_cluster(f"a{i}").with_labels(env="prod", n=str(i)) for i in (1, 2, 3)),
        a_cluster("b"),
        a_cluster("c").with_labels(env="dev"),
        *(a_cluster(f"d{i}").with_labels(other=str(i)) for i in (1, 2)),
        a_cluster("e").with_labels(env="staging"),
    )
    view = InventoryView(world.inventory())
    compiled = compile_expression(expression)
    program = _CountingProgram((compiled,), view.cel_activation())
    _CountingProgram.runs = 0
    found = [n for n in sorted(view.names()) if view.cel_matches((expression, n), True, program, compiled.reads)]
    assert found == expected
    assert _CountingProgram.runs == runs
    assert decided(run(world, a_placement(_cel(expression)))) == expected


ENV = (("metadata", "labels", "env"),)


@pytest.mark.parametrize(
    ("first", "second", "same"),
    [
        ({"metadata": {"labels": {"env": "a", "x": "1"}}}, {"metadata": {"labels": {"env": "a"}}}, True),
        ({"metadata": {"labels": {"env": "a"}}}, {"metadata": {"labels": {"env": "b"}}}, False),
        ({"metadata": {"labels": {"x": "1"}}}, {"metadata": {"labels": {"y": "2"}}}, True),  # both lack env
        ({"metadata": {"labels": {}}}, {"metadata": {}}, False),  # missing key versus missing map
        ({"metadata": {"labels": "text"}}, {"metadata": {"labels": "other"}}, False),  # not a map: kept in full
        ({"metadata": {"labels": {"env": True}}}, {"metadata": {"labels": {"env": 1}}}, False),
        ({"metadata": {"labels": {"env": ["missing", 2]}}}, {"metadata": {"labels": {"x": "1"}}}, False),
    ],
)
def test_cluster_cel_values_at_paths_tell_apart_what_an_expression_can(first: Any, second: Any, same: bool) -> None:
    assert (orjson.dumps(_seen_at(first, ENV)) == orjson.dumps(_seen_at(second, ENV))) is same


SEEN_DOCUMENTS = (
    {
        "metadata": {"name": "c1", "labels": {"env": "prod", "c1": "x"}},
        "status": {"clusterClaims": [{"name": "p", "value": "AWS"}], "allocatable": {"cpu": "4"}},
    },
    {"metadata": {"name": "c2", "labels": {}}},
    {"metadata": {"name": "c3"}},
    {"metadata": {"name": "c4", "labels": "text"}, "status": "odd"},
    {"metadata": {"name": "c5", "labels": {"env": True}, "annotations": {"a": "b"}}, "status": {"allocatable": {}}},
    {},
)


@pytest.mark.parametrize(
    "expression",
    [
        'managedCluster.metadata.labels["env"] == "prod"',
        "has(managedCluster.metadata.labels.env)",
        "!has(managedCluster.metadata.labels.env)",
        # a path and its extension: the shorter one is shown in full
        'managedCluster.metadata.labels.size() == 2 && managedCluster.metadata.labels.env == "prod"',
        'managedCluster.metadata.labels[managedCluster.metadata.name] == "x"',
        'managedCluster.status.clusterClaims.exists(c, c.value == "AWS")',
        'managedCluster.metadata.name.startsWith("c") || managedCluster.status.allocatable.cpu == "4"',
        "has(managedCluster.status.allocatable) && !has(managedCluster.metadata.annotations)",
        'managedCluster.metadata.name != "c3"',
    ],
)
def test_cluster_cel_outcome_on_what_an_expression_reads_is_its_outcome_on_the_cluster(expression: str) -> None:
    compiled = compile_expression(expression)
    assert compiled.reads is not None
    program = CelProgram((compiled,), InventoryView(one_set_world().inventory()).cel_activation())
    whole = [program.matches(json_to_cel(document)) for document in SEEN_DOCUMENTS]
    seen = [_visible_part(compiled.reads, _seen_at(document, compiled.reads)) for document in SEEN_DOCUMENTS]
    assert [program.matches(json_to_cel(part)) for part in seen] == whole
    assert any(whole) and not all(whole)  # the documents tell the outcomes apart
    assert all(
        len(orjson.dumps(part)) <= len(orjson.dumps(doc)) for part, doc in zip(seen, SEEN_DOCUMENTS, strict=True)
    )


NAME, LABELS, ENV_PATH = ("metadata", "name"), ("metadata", "labels"), ("metadata", "labels", "env")


@pytest.mark.parametrize(
    ("paths", "document", "visible"),
    [
        (
            (ENV_PATH, NAME),
            {"metadata": {"name": "a", "labels": {"env": "x", "y": "1"}}, "status": {}},
            {"metadata": {"name": "a", "labels": {"env": "x"}}},
        ),
        ((ENV_PATH,), {"metadata": {"labels": {"y": "1"}}}, {"metadata": {"labels": {}}}),  # the map lacking the key
        ((ENV_PATH,), {"metadata": {}}, {"metadata": {}}),  # the map lacking the next map
        ((ENV_PATH,), {"metadata": {"labels": "text"}}, {"metadata": {"labels": "text"}}),  # not a map: in full
        (
            (LABELS, NAME),
            {"metadata": {"name": "a", "labels": {"env": "x", "y": "1"}}},
            {"metadata": {"name": "a", "labels": {"env": "x", "y": "1"}}},
        ),
        (
            (ENV_PATH, NAME),
            {"metadata": {"name": "a", "labels": "text"}},
            {"metadata": {"name": "a", "labels": "text"}},
        ),
        ((ENV_PATH,), {}, {}),
    ],
)
def test_cluster_cel_visible_part_of_a_cluster(
    paths: tuple[tuple[str, ...], ...], document: dict[str, Any], visible: dict[str, Any]
) -> None:
    before = orjson.dumps(document)
    assert _visible_part(paths, _seen_at(document, paths)) == visible
    assert orjson.dumps(document) == before  # the cluster's own document is left as it was
