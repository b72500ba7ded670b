"""Why the Predicate filter removed a cluster: per predicate, the label or claim requirement that failed and each CEL
expression's outcome (true, false, an error with its message, or stopped at the cost limit).

The filter itself keeps only a yes/no per cluster (shared by every placement with the same predicates); explain
evaluates the removed clusters again, one expression at a time, with the filter's budget rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from celpy import celtypes
from celpy.evaluation import CELEvalError

from engine.cluster.fleet.views import InventoryView
from engine.cluster.matching.cel_closures import compile_closure
from engine.cluster.matching.cel_cost import Budget, CostLimitExceededError
from engine.cluster.matching.cel_env import EXPRESSION_LIMIT, PER_CLUSTER_LIMIT, CompiledExpression
from engine.cluster.matching.selectors import Requirement, Selector
from engine.cluster.pipeline.compiled import CompiledPlacement, CompiledSelector
from engine.core import CEL_PLACEMENT_BUDGET

__all__ = ["Allowance", "cel_outcomes", "failed_requirement", "predicate_details"]

_OPERATORS = {"in": "in", "notin": "notin"}
_BUDGET_STOP = {"outcome": "stopped", "message": "placement budget exceeded"}


def _requirement_text(requirement: Requirement) -> str:
    """The selector library's spelling: `env in (a,b)`, `env notin (a)`, `env`, `!env`."""
    if requirement.op == "exists":
        return requirement.key
    if requirement.op == "!":
        return f"!{requirement.key}"
    return f"{requirement.key} {_OPERATORS[requirement.op]} ({','.join(sorted(requirement.values))})"


def failed_requirement(selector: Selector, values: Mapping[str, str]) -> dict[str, Any] | None:
    """The first requirement of `selector` that `values` (labels or claims) fail, with the value found (None when
    the key is absent); None when every requirement holds."""
    for requirement in selector:
        present = requirement.key in values
        value = values.get(requirement.key)
        holds = {
            "in": present and value in requirement.values,
            "notin": not present or value not in requirement.values,
            "exists": present,
            "!": not present,
        }[requirement.op]
        if not holds:
            return {"requirement": _requirement_text(requirement), "value": value}
    return None


def _error_text(error: CELEvalError) -> str:
    """celpy's message (`args` nest the message, the Python exception class and its arguments), with those
    arguments when they add anything."""
    args: Any = error.args
    while isinstance(args, tuple) and args and isinstance(args[0], tuple):
        args = args[0]
    if not isinstance(args, tuple) or not args:
        return "evaluation error"
    message = str(args[0])
    cause = args[2] if len(args) > 2 else None
    detail = ", ".join(str(item) for item in cause) if isinstance(cause, tuple) else ""
    if detail and message == "return error for overflow":  # celpy's wording for any ValueError of a function
        return detail
    return f"{message}: {detail}" if detail and detail not in message else message


@dataclass(slots=True)
class Allowance:
    """What is left of one explanation's CEL budget (C17), over the clusters it explains."""

    left: int


def cel_outcomes(
    expressions: Iterable[CompiledExpression], view: InventoryView, cluster: str, allowance: Allowance | None = None
) -> list[dict[str, Any]]:
    """Each expression's outcome on one cluster, in order, charged against one per-cluster budget as the filter
    charges them (each expression also within its own limit). The cluster that takes `allowance` below zero, and
    every later one (not evaluated), reads "stopped" by the placement budget, as in the filter."""
    budget = Budget()
    activation = view.cel_activation()
    document = view.cel_document(cluster)
    out: list[dict[str, Any]] = []
    for expression in expressions:
        entry: dict[str, Any] = {"expression": expression.text}
        if allowance is not None and allowance.left < 0:
            out.append(_BUDGET_STOP | entry)
            continue
        budget.start(EXPRESSION_LIMIT, PER_CLUSTER_LIMIT)
        value: Any
        try:
            value = compile_closure(expression.ast, activation, budget)(document)
        except CostLimitExceededError:
            value = None
        except CELEvalError as exc:  # an error result is raised by `evaluate`
            value = exc
        except Exception as exc:  # a function failing in any way is a runtime error, as in the filter
            value = CELEvalError(str(exc) or type(exc).__name__)
        if value is None or budget.exceeded:
            entry.update(outcome="stopped", message="cost limit exceeded")
        elif isinstance(value, CELEvalError):
            entry.update(outcome="error", message=_error_text(value))
        elif isinstance(value, celtypes.BoolType):
            entry["outcome"] = "true" if bool(value) else "false"
        else:
            kind = type(value).__name__.removesuffix("Type").lower()
            entry.update(outcome="error", message=f"the result is a {kind}, not a bool")
        out.append(entry)
    if allowance is not None:
        allowance.left -= budget.used
        if allowance.left < 0:  # this cluster took the total past the budget: stopped, as the filter has it
            return [_BUDGET_STOP | {"expression": entry["expression"]} for entry in out]
    return out


def _selector_details(
    selector: CompiledSelector, view: InventoryView, cluster: str, allowance: Allowance
) -> dict[str, Any]:
    found = view.inventory.cluster(cluster)
    labels = found.metadata.labels if found is not None else {}
    details: dict[str, Any] = {}
    label_failure = failed_requirement(selector.labels, labels)
    if label_failure is not None:
        details["labelSelector"] = label_failure
    claim_failure = failed_requirement(selector.claims, view.claims(cluster))
    if claim_failure is not None:
        details["claimSelector"] = claim_failure
    if selector.cel:
        details["celExpressions"] = cel_outcomes(selector.cel, view, cluster, allowance)
    return details


def predicate_details(
    compiled: CompiledPlacement, view: InventoryView, clusters: Iterable[str], budget: int = CEL_PLACEMENT_BUDGET
) -> dict[str, Any]:
    """For each cluster (those the Predicate filter removed): one entry per predicate, in spec order, with what
    failed in it. Empty when the predicates do not compile (the status says why). The CEL evaluated again spends
    at most one placement budget (C17), clusters in name order: an explanation is bounded as a decision is."""
    if compiled.predicate_error is not None:
        return {}
    allowance = Allowance(budget)
    return {
        cluster: [_selector_details(selector, view, cluster, allowance) for selector in compiled.predicates]
        for cluster in sorted(clusters)
    }
