"""The public documentation's worked example, resolved as the spec does: cluster3 stays decided and wins.

Round 1 removes cluster2 by predicate veto (grc did not list it), round 2 rates cluster1 = 50 (cost) against
cluster3 = 60 (rhacm) + 100 (decisionWeight, existing decision) and removes cluster1, round 3 decides cluster3.
"""

from __future__ import annotations

from decimal import Decimal

from hybrid_tables import build_all, clusters, labels, ratings_by_round

from tests.engine.drivers.hybrid import RuleDriver

# the documentation's rule, with its empty keys left as nulls
DOC_RULE = {
    "deployerType": None,
    "replicas": 1,
    "targets": None,
    "targetLabels": None,
    "decisionWeight": None,
    "advisors": [
        {"name": "grc", "type": "predicate", "rules": {"policies": [{"name": None}]}},
        {"name": "rhacm", "type": "priority", "weight": 60, "rules": {"resourceHint": {"type": "cpu"}}},
        {"name": "cost", "type": "priority", "weight": 50},
    ],
}


def _answer(driver: RuleDriver, rhacm: list[str], grc: list[str], cost: list[str]) -> None:
    for advisor, names in (("rhacm", rhacm), ("grc", grc), ("cost", cost)):
        driver.post(advisor, [{"name": n} for n in names])


def test_hybrid_seed_worked_example_ends_on_cluster3() -> None:
    driver = RuleDriver(build_all(clusters("cluster1", "cluster2", "cluster3")), name="doc")
    driver.apply_rule(DOC_RULE, decisions=[{"name": "cluster3"}])
    assert driver.state is not None
    assert labels(driver.state.candidates) == ["cluster1", "cluster2", "cluster3"]
    assert labels(driver.state.decisions) == ["cluster3"]

    _answer(driver, ["cluster3"], ["cluster1", "cluster3"], ["cluster2"])
    assert driver.round == 2
    assert labels(driver.state.candidates) == ["cluster1", "cluster3"]
    assert labels(driver.state.decisions) == ["cluster3"], "no changes to the decisions during the reduction"
    first = driver.state.last_reduction
    assert first is not None
    assert first.reason == "predicate" and labels(first.removed) == ["cluster2"] and first.ratings == ()

    _answer(driver, ["cluster3"], ["cluster1", "cluster3"], ["cluster1"])
    assert driver.round == 3
    assert ratings_by_round(driver) == {"2": {"cluster1": Decimal(50), "cluster3": Decimal(160)}}
    assert labels(driver.state.candidates) == ["cluster3"]
    assert labels(driver.state.eliminators) == ["cluster2", "cluster1"]
    assert labels(driver.state.decisions) == ["cluster3"]

    _answer(driver, ["cluster3"], ["cluster3"], ["cluster3"])
    assert driver.round == 3
    assert labels(driver.state.decisions) == ["cluster3"]
    assert [p.round for p in driver.proposals] == [1, 2, 3]
    assert [labels(e.decisions) for e in driver.decided_events] == [["cluster3"]], "the decision never changed"
