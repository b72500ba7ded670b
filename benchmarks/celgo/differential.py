"""cel-go against the project's evaluator over the differential tests' expression table.

Every expression of `tests/engine/cluster/matching/test_cel_closures.py` on its three clusters (labels, claims
and scores; labels only; nothing), at upstream's per-expression limit and at the table's low ceilings: the
outcome (true, false, a non-boolean value, an error, stopped at the cost limit), the cost each charged, and the
error texts. Printed, never asserted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from benchmarks.celgo import CelGo, CelGoError, Evaluation
from engine.cluster.matching.cel_closures import compile_closure
from engine.cluster.matching.cel_cost import Budget, CostLimitExceededError
from engine.cluster.matching.cel_env import EXPRESSION_LIMIT, PER_CLUSTER_LIMIT, compile_expression

__all__ = ["Row", "differential", "print_differential"]

from tests.engine.cluster.matching.test_cel_closures import CEILINGS, EXPRESSIONS, VIEW

CLUSTERS = ("c1", "c2", "c3")


@dataclass(frozen=True, slots=True)
class Row:
    """One expression on one cluster at upstream's limit, and the low ceilings where the two disagree on
    stopping."""

    expression: str
    cluster: str
    ours: tuple[str, int, str]
    """(outcome, cost, message)"""
    theirs: tuple[str, int, str]
    stop_disagreements: tuple[int, ...]

    @property
    def outcome_agrees(self) -> bool:
        return self.ours[0] == self.theirs[0]

    @property
    def cost_agrees(self) -> bool:
        return self.ours[1] == self.theirs[1]


def _ours(evaluate: Any, document: Any, budget: Budget, ceiling: int) -> tuple[str, int, str]:
    """What the engine makes of one evaluation (as `CelProgram` reads it), with the cost charged."""
    budget.used = 0
    budget.start(ceiling, PER_CLUSTER_LIMIT)
    try:
        value = evaluate(document)
    except CostLimitExceededError:
        return ("stopped", budget.used, "")
    except CELEvalError as error:
        return ("error", budget.used, str(error.args[0]) if error.args else "")
    except Exception as exc:  # a function failing in any way: a runtime error
        return ("error", budget.used, f"{type(exc).__name__}: {exc}")
    if budget.exceeded:
        return ("stopped", budget.used, "")
    if isinstance(value, CELEvalError):
        return ("error", budget.used, str(value.args[0]) if value.args else "")
    if isinstance(value, celtypes.BoolType):
        return ("true" if value else "false", budget.used, "")
    return ("non-bool", budget.used, type(value).__name__)


def _theirs(evaluation: Evaluation) -> tuple[str, int, str]:
    return (evaluation.kind, evaluation.cost, evaluation.message)


def differential(go: CelGo) -> tuple[list[Row], list[tuple[str, str]]]:
    """Rows for every expression cel-go compiles, and (expression, cel-go's issue) for those it refuses."""
    go.set_scores(
        [
            score.model_dump(mode="json", by_alias=True, exclude_none=True)
            for name in CLUSTERS
            if (score := VIEW.inventory.score(name, "usage")) is not None
        ]
    )
    kept = {name: go.cluster(VIEW.document(name)) for name in CLUSTERS}
    rows, refused = [], []
    for text in EXPRESSIONS:
        try:
            programs = {ceiling: go.compile(text, -1 if ceiling is None else ceiling) for ceiling in CEILINGS}
        except CelGoError as error:
            refused.append((text, str(error)))
            continue
        expression = compile_expression(text)
        for name in CLUSTERS:
            budget = Budget()
            evaluate = compile_closure(expression.ast, VIEW.cel_activation(), budget)
            document = VIEW.cel_document(name)
            ours = _ours(evaluate, document, budget, EXPRESSION_LIMIT)
            theirs = _theirs(go.evaluate(programs[None], kept[name]))
            stops = tuple(
                ceiling
                for ceiling in CEILINGS
                if ceiling is not None
                and (_ours(evaluate, document, budget, ceiling)[0] == "stopped")
                != (go.evaluate(programs[ceiling], kept[name]).kind == "stopped")
            )
            rows.append(Row(text, name, ours, theirs, stops))
    return rows, refused


def print_differential(go: CelGo, details: bool) -> None:
    rows, refused = differential(go)
    outcome = sum(row.outcome_agrees for row in rows)
    cost = sum(row.cost_agrees for row in rows if row.outcome_agrees)
    stops = sum(not row.stop_disagreements for row in rows)
    errors = [row for row in rows if row.ours[0] == row.theirs[0] == "error"]
    same_text = sum(row.ours[2] == row.theirs[2] for row in errors)
    print(f"differential: {len(EXPRESSIONS)} expressions x {len(CLUSTERS)} clusters; cel-go refuses {len(refused)}")
    print(f"  outcome (true/false/non-bool/error/stopped) at upstream's limit: {outcome} of {len(rows)} agree")
    lower = sum(row.ours[1] < row.theirs[1] for row in rows if row.outcome_agrees)
    print(f"  cost charged, where the outcome agrees: {cost} of {outcome} equal, ours lower in {lower}")
    print(f"  stopped or not at all {len(CEILINGS) - 1} low ceilings: {stops} of {len(rows)} agree")
    print(f"  error texts, where both give an error: {same_text} of {len(errors)} equal")
    for text, issue in refused:
        print(f"  refused by cel-go: {text!r}: {issue.splitlines()[0]}")
    for row in rows:
        if not row.outcome_agrees:
            print(f"  outcome: {row.expression!r} on {row.cluster}: ours {row.ours}, cel-go {row.theirs}")
    if not details:
        return
    for row in rows:
        if row.outcome_agrees and not row.cost_agrees:
            print(f"  cost: {row.expression!r} on {row.cluster}: ours {row.ours[1]}, cel-go {row.theirs[1]}")
        if row.stop_disagreements:
            print(f"  stops: {row.expression!r} on {row.cluster}: ceilings {row.stop_disagreements}")
    for row in errors:
        if row.ours[2] != row.theirs[2]:
            print(f"  text: {row.expression!r} on {row.cluster}: ours {row.ours[2]!r} | cel-go {row.theirs[2]!r}")
