"""The per-placement CEL budget (C17): one evaluation of a placement spends at most its budget of cost units over
all its candidates, charged in predicate order then name order, cached outcomes at the cost they had."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster import ClusterPlacementEngine, PlacementState, explain_placement
from engine.cluster.fleet.views import InventoryView
from engine.cluster.matching.cel_env import CelProgram, compile_expression
from engine.cluster.pipeline.plugins.predicate import stopped_count
from engine.cluster.pipeline.status import Code
from engine.core import CEL_PLACEMENT_BUDGET, EngineContext, EngineSettings
from tests.engine.cluster.cluster_builders import NOW, World, a_cluster, a_placement, one_set_world, predicate_filtered
from topics.placement import Placement

EXPRESSION = 'managedCluster.metadata.labels.env == "prod"'
NAMES = ("c1", "c2", "c3", "c4")
FLEET = tuple(a_cluster(name).with_labels(env="prod" if name != "c3" else "dev") for name in NAMES)


def _cel(*expressions: str) -> dict[str, Any]:
    return {"requiredClusterSelector": {"celSelector": {"celExpressions": list(expressions)}}}


def _label(**labels: str) -> dict[str, Any]:
    return {"requiredClusterSelector": {"labelSelector": {"matchLabels": labels}}}


def _cost(expression: str = EXPRESSION) -> int:
    """What the expression costs on one cluster of FLEET (the same on each: one label read and compared)."""
    view = InventoryView(one_set_world(*FLEET).inventory())
    program = CelProgram((compile_expression(expression),), view.cel_activation())
    costs = set()
    for name in NAMES:
        program.matches(view.cel_document(name))
        costs.add(program.spent)
    (cost,) = costs
    return cost


def _filtered(placement: Placement, budget: int, view: InventoryView | None = None) -> tuple[list[str], Code, str]:
    view = view if view is not None else InventoryView(one_set_world(*FLEET).inventory())
    return predicate_filtered(view, placement, cel_budget=budget)


@pytest.mark.parametrize(
    ("clusters_paid", "extra", "passed", "not_evaluated"),
    [
        (4, 0, ["c1", "c2", "c4"], 0),  # at the budget: every cluster evaluated
        (4, 1, ["c1", "c2", "c4"], 0),
        (4, -1, ["c1", "c2"], 1),  # just under: the fourth evaluation would pass it
        (2, 0, ["c1", "c2"], 2),
        (1, -1, [], 4),
        (0, 0, [], 4),
    ],
    ids=["at", "over", "just-under", "half", "under-one", "zero"],
)
def test_cluster_cel_budget_stops_the_remaining_clusters(
    clusters_paid: int, extra: int, passed: list[str], not_evaluated: int
) -> None:
    budget = clusters_paid * _cost() + extra
    names, code, message = _filtered(a_placement({"predicates": [_cel(EXPRESSION)]}), budget)
    assert names == passed
    if not_evaluated:
        assert code is Code.WARNING
        assert message == (
            f'CEL expression "{EXPRESSION}" stopped: placement budget of {budget} cost units exceeded, '
            f"{not_evaluated} clusters not evaluated"
        )
    else:
        assert (code, message) == (Code.SUCCESS, "")


def test_cluster_cel_budget_spans_the_predicates() -> None:
    """The second predicate's CEL is charged after the first's, and stopped once the budget is spent; a predicate
    without CEL costs nothing and still matches."""
    cost = _cost()
    other = 'managedCluster.metadata.labels.env == "dev"'
    spec = {"predicates": [_cel(EXPRESSION), _cel(other), _label(env="dev")]}
    everything = ["c1", "c2", "c3", "c4"]
    assert _filtered(a_placement(spec), 4 * cost)[0:2] == (everything, Code.WARNING)  # c3's label still matches
    assert _filtered(a_placement(spec), 5 * cost)[0:2] == (everything, Code.SUCCESS)
    names, code, message = _filtered(a_placement({"predicates": [_cel(EXPRESSION), _cel(other)]}), 4 * cost)
    assert (names, code) == (["c1", "c2", "c4"], Code.WARNING)
    assert message.startswith(f'CEL expression "{other}" stopped: placement budget of {4 * cost}')


def test_cluster_cel_budget_charges_cached_outcomes_as_evaluations() -> None:
    """A placement met outcomes another placement already computed: it is charged the same, so its answer does
    not depend on which placement ran first."""
    budget = 2 * _cost()
    view = InventoryView(one_set_world(*FLEET).inventory())
    spec = {"predicates": [_cel(EXPRESSION)]}
    assert _filtered(a_placement(spec, name="first"), CEL_PLACEMENT_BUDGET, view)[0] == ["c1", "c2", "c4"]
    assert _filtered(a_placement(spec, name="second"), budget, view) == _filtered(a_placement(spec), budget)


def test_cluster_cel_budget_default_lets_a_fleet_through() -> None:
    names, code, _ = _filtered(a_placement({"predicates": [_cel(EXPRESSION)]}), CEL_PLACEMENT_BUDGET)
    assert (names, code) == (["c1", "c2", "c4"], Code.SUCCESS)


def _decide(engine: ClusterPlacementEngine, world: World, budget: int) -> Any:
    placement = a_placement({"predicates": [_cel(EXPRESSION)]}, name="heavy")
    ctx = EngineContext(now=NOW, inventory=world.inventory(), settings=EngineSettings(cel_placement_budget=budget))
    return engine.decide("Placement/ns1/heavy", PlacementState(placement, None, None), ctx)


def test_cluster_engine_counts_budget_stops_and_notes_a_placement_stopped_again() -> None:
    world, budget = one_set_world(*FLEET), _cost()
    engine = ClusterPlacementEngine()
    step = _decide(engine, world, budget)
    assert step.state.published.decided == frozenset({"c1"})
    assert (engine.counters()["cel_budget_stops"], engine.take_notices()) == (1, [])
    _decide(engine, world, budget)
    assert engine.counters()["cel_budget_stops"] == 2
    assert engine.take_notices() == [
        ("Placement/ns1/heavy", "placement Placement/ns1/heavy: CEL evaluation stopped by its placement budget again "
         "(2 in a row)")
    ]  # fmt: skip
    assert engine.take_notices() == []
    _decide(engine, world, 100 * budget)  # within budget: the streak ends
    _decide(engine, world, budget)
    assert (engine.counters()["cel_budget_stops"], engine.take_notices()) == (3, [])


def test_cluster_budget_stops_are_not_cost_limit_stops() -> None:
    view = InventoryView(one_set_world(*FLEET).inventory())
    _filtered(a_placement({"predicates": [_cel(EXPRESSION)]}), _cost(), view)
    assert (stopped_count(view).count, stopped_count(view).budget) == (0, 1)


def test_cluster_explain_spends_one_placement_budget() -> None:
    """Explain evaluates the removed clusters again in name order within one budget: the cluster that takes it
    past, and the later ones, read stopped by the placement budget, as in the filter."""
    placement = a_placement({"predicates": [_cel('managedCluster.metadata.labels.env == "qa"')]})
    settings = EngineSettings(cel_placement_budget=2 * _cost())
    ctx = EngineContext(now=NOW, inventory=one_set_world(*FLEET).inventory(), settings=settings)
    details = explain_placement("Placement/ns1/placement1", PlacementState(placement, None, None), ctx)
    outcomes = {name: entry[0]["celExpressions"][0] for name, entry in details["predicateDetails"].items()}
    assert {name: (o["outcome"], o.get("message")) for name, o in outcomes.items()} == {
        "c1": ("false", None),
        "c2": ("false", None),
        "c3": ("stopped", "placement budget exceeded"),
        "c4": ("stopped", "placement budget exceeded"),
    }
