"""deploy/prometheus/alerts.yaml and deploy/grafana/dashboard.json: well-formed, and every series they name is one
the processor exports. Expressions are parsed with Prometheus' own PromQL grammar (@prometheus-io/lezer-promql,
run by tests/deploy/node/validate.mjs); the exported names come from the metrics registry itself."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest
import yaml
from deploy_support import ROOT, NodeCheck

from streams.metrics import Metrics

ALERTS = yaml.safe_load((ROOT / "deploy" / "prometheus" / "alerts.yaml").read_text())
DASHBOARD = json.loads((ROOT / "deploy" / "grafana" / "dashboard.json").read_text())

_SAMPLE_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
}
_RULE_KEYS = {"alert", "record", "expr", "for", "keep_firing_for", "labels", "annotations"}
_DURATION = re.compile(r"(\d+(ms|s|m|h|d|w|y))+")
_GRAFANA_RANGES = re.compile(r"\$__(rate_)?interval|\$\{__(rate_)?interval\}")


def exported_series() -> set[str]:
    """The sample names /metrics can show: each registered family with its type's suffixes."""
    names = set()
    for family in Metrics().registry.collect():
        names |= {family.name + suffix for suffix in _SAMPLE_SUFFIXES[family.type]}
    return names


def _rules() -> list[dict[str, Any]]:
    return [rule for group in ALERTS["groups"] for rule in group["rules"]]


def _panels() -> list[dict[str, Any]]:
    found = []
    for panel in DASHBOARD["panels"]:
        found += [panel, *panel.get("panels", [])]
    return [p for p in found if p["type"] != "row"]


def _dashboard_queries() -> list[str]:
    """Every panel target's expression, Grafana's range variables replaced by a duration PromQL accepts."""
    return [_GRAFANA_RANGES.sub("5m", target["expr"]) for panel in _panels() for target in panel["targets"]]


def _check(node_check: NodeCheck, expressions: list[str]) -> list[tuple[str, list[str], set[str]]]:
    answers = node_check(promql=expressions)["promql"]
    return [(e, a["errors"], set(a["metrics"])) for e, a in zip(expressions, answers, strict=True)]


def test_exported_series_come_from_the_registry() -> None:
    """The reference list is not empty or made up: counters carry _total, histograms their buckets."""
    names = exported_series()
    assert {"placement_ready", "placement_dead_letters_total", "placement_event_age_seconds_bucket"} <= names
    assert "placement_dead_letters" not in names


def test_rule_file_is_well_formed() -> None:
    """The structure Prometheus' rule-file loader checks: groups with unique names, each rule an alert or a
    recording rule with an expression, durations in PromQL's format, string labels and annotations."""
    assert set(ALERTS) == {"groups"}
    names = [group["name"] for group in ALERTS["groups"]]
    assert len(names) == len(set(names)) and all(names)
    alerts = [rule.get("alert") for rule in _rules()]
    assert len(alerts) == len(set(alerts))
    for rule in _rules():
        assert set(rule) <= _RULE_KEYS, rule
        assert ("alert" in rule) != ("record" in rule)
        assert isinstance(rule["expr"], str) and rule["expr"].strip()
        for key in ("for", "keep_firing_for"):
            assert key not in rule or _DURATION.fullmatch(rule[key]), (rule["alert"], rule[key])
        for key in ("labels", "annotations"):
            assert all(isinstance(v, str) for v in rule.get(key, {}).values()), rule["alert"]
        assert rule["labels"]["severity"] in ("critical", "warning", "info")
        assert {"summary", "description"} <= set(rule["annotations"])


def _as_prometheus_rule(groups: Any) -> dict[str, Any]:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {"name": "a"},
        "spec": groups,
    }


def test_rule_file_follows_the_prometheus_operator_schema(node_check: NodeCheck) -> None:
    """The operator's CRD schema of a PrometheusRule's spec (the rule file's format) accepts the file, and refuses
    it with a duration Prometheus cannot read or a rule without an expression."""
    (answer,) = node_check(resources=[_as_prometheus_rule(ALERTS)])["resources"]
    assert answer["errors"] == []
    broken = copy.deepcopy(ALERTS)
    broken["groups"][0]["rules"][0]["for"] = "10 minutes"
    del broken["groups"][0]["rules"][1]["expr"]
    (answer,) = node_check(resources=[_as_prometheus_rule(broken)])["resources"]
    assert len(answer["errors"]) == 2


def test_alert_annotations_name_only_labels_the_expression_keeps() -> None:
    """`{{ $labels.pod }}` on a result aggregated `by (namespace, topic)` would print nothing."""
    for rule in _rules():
        used = set(re.findall(r"\$labels\.(\w+)", " ".join(rule["annotations"].values())))
        for kept in re.findall(r"\bby \(([^)]*)\)", rule["expr"]):
            assert used <= {label.strip() for label in kept.split(",")}, rule["alert"]


def test_alert_expressions_parse_and_name_exported_series(node_check: NodeCheck) -> None:
    allowed = exported_series()
    for expression, errors, metrics in _check(node_check, [rule["expr"] for rule in _rules()]):
        assert errors == [], expression
        assert metrics, expression
        assert metrics <= allowed, (expression, metrics - allowed)


def test_alerts_cover_what_an_operator_must_hear_of() -> None:
    """Not ready, lag growing, dead letters, transactions aborting, CEL evaluations stopped."""
    by_series = {
        "not ready": "placement_ready",
        "lag growing": "placement_consumer_lag",
        "dead letters": "placement_dead_letters_total",
        "transactions aborting": 'placement_transactions_total{outcome="aborted"}',
        "CEL evaluations stopped": "placement_cel_evaluations_stopped_total",
    }
    expressions = " ".join(rule["expr"] for rule in _rules())
    assert [what for what, series in by_series.items() if series not in expressions] == []


def test_dashboard_panels_each_query_exported_series(node_check: NodeCheck) -> None:
    panels = _panels()
    assert len({p["id"] for p in DASHBOARD["panels"]}) == len(DASHBOARD["panels"])
    for panel in panels:
        assert panel["targets"] and all(t["expr"].strip() for t in panel["targets"]), panel["title"]
        assert panel["datasource"]["uid"] == "${datasource}"
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"])
    allowed = exported_series()
    for expression, errors, metrics in _check(node_check, _dashboard_queries()):
        assert errors == [], expression
        assert metrics and metrics <= allowed, (expression, metrics - allowed)


def test_dashboard_variables_name_exported_series() -> None:
    variables = {v["name"]: v for v in DASHBOARD["templating"]["list"]}
    assert variables["datasource"]["query"] == "prometheus"
    for name in ("namespace", "pod"):
        (series,) = re.findall(r"label_values\((\w+)", variables[name]["query"]["query"])
        assert series in exported_series()
    used = set(re.findall(r"\$(\w+)", " ".join(_dashboard_queries())))
    assert used <= set(variables), used - set(variables)


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("sum(rate(placement_dead_letter_total[5m]))", "unknown"),
        ("sum by (topic) (rate(placement_dead_letters_total[5m])", "syntax"),
        ("placement_ready{pod=}", "syntax"),
    ],
    ids=["misspelt-series", "unclosed-parenthesis", "empty-matcher"],
)
def test_the_checks_catch_bad_expressions(node_check: NodeCheck, expression: str, problem: str) -> None:
    """Not vacuous: a misspelt series and broken syntax are both found."""
    ((_, errors, metrics),) = _check(node_check, [expression])
    if problem == "syntax":
        assert errors
    else:
        assert errors == [] and metrics - exported_series() == {"placement_dead_letter_total"}
