"""The operator steps `cel_closures` assembles a compiled CEL expression from: the conditional, `&&` and `||`,
unary and binary operators, and the comparison of two ints or two strings without the generic call.

As in `cel_steps`, each step charges the budget what `cel_cost` charges for it, in the same order, and makes the
values and error values cel-python's interpreter makes: an operator's failure is an error value, never raised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError

from engine.cluster.matching.cel_cost import OPERATOR_ERRORS, Budget, CostLimitExceededError, tenth
from engine.cluster.matching.cel_steps import Env, Node

__all__ = ["TESTS", "binary", "comparison", "logical", "ternary", "unary"]

_BOOL, _INT, _STRING = celtypes.BoolType, celtypes.IntType, celtypes.StringType
_TRUE, _FALSE = _BOOL(True), _BOOL(False)
TESTS = {"_<_": "__lt__", "_<=_": "__le__", "_>_": "__gt__", "_>=_": "__ge__", "_==_": "__eq__", "_!=_": "__ne__"}
"""The comparisons with a fast path for two ints or two strings: the plain int or str method (celpy's checks that
both sides have one type, then calls it)."""


def ternary(condition: Node, left: Node, right: Node, choose: Callable[..., Any], tree: lark.Tree[Any]) -> Node:
    """`c ? a : b`, as celpy: a TypeError (also one raised evaluating the branch) becomes an error value."""

    def step(env: Env) -> Any:
        value = condition(env)
        chosen, other = _FALSE, _FALSE
        try:
            if value:
                chosen = left(env)
                return choose(value, chosen, other)
            other = right(env)
            return choose(value, chosen, other)
        except TypeError as ex:
            types = f"({type(value)}, {type(chosen)}, {type(other)})"
            message = f"found no matching overload for _?_:_ applied to '{types}'"
            return CELEvalError(message, ex.__class__, ex.args, tree=tree)

    return step


def logical(left: Node, right: Node, combine: Callable[[Any, Any], Any], decides: bool) -> Node:
    """`&&` (`decides` False) or `||` (True): the right side only when the left one does not decide."""

    def step(env: Env) -> Any:
        value = left(env)
        if isinstance(value, _BOOL) and bool(value) is decides:
            return value
        return combine(value, right(env))

    return step


def unary(function: Callable[[Any], Any], only: Node, data: str, tree: lark.Tree[Any]) -> Node:
    """A unary operator (`-`, `!`)."""

    def step(env: Env) -> Any:
        try:
            return function(only(env))
        except OPERATOR_ERRORS as ex:
            return CELEvalError(f"{data} failed", ex.__class__, ex.args, tree=tree)

    return step


def binary(function: Callable[[Any, Any], Any], left: Node, right: Node, data: str, tree: lark.Tree[Any]) -> Node:
    """A binary operator through the costed function table."""

    def step(env: Env) -> Any:
        try:
            return function(left(env), right(env))
        except OPERATOR_ERRORS as ex:
            return CELEvalError(f"{data} failed", ex.__class__, ex.args, tree=tree)

    return step


def comparison(
    function: Callable[[Any, Any], Any],
    method: str,
    left: Node,
    right: Node,
    *,
    slot: int | None,
    constant: tuple[Any] | None,
    budget: Budget,
    data: str,
    tree: lark.Tree[Any],
) -> Node:
    """A comparison (`method` of TESTS) of two ints or two strings without the generic call: what it charges
    (ceil(min(size) / 10)) and returns; any other pair of values through it. A variable on the left (`slot`) is
    read here (charged 1), a constant on the right (`constant`, its value) not evaluated."""
    int_test, str_test = getattr(int, method), getattr(str, method)
    is_constant = constant is not None
    fixed: Any = constant[0] if constant is not None else None

    def step(env: Env) -> Any:
        if slot is not None:
            budget.used += 1
            if budget.used > budget.ceiling:
                raise CostLimitExceededError
            a = env[slot]
        else:
            a = left(env)
        b = fixed if is_constant else right(env)
        kind = type(a)
        if kind is type(b):
            if kind is _INT:
                budget.used += 1
                if budget.used > budget.ceiling:
                    raise CostLimitExceededError
                return _TRUE if int_test(a, b) else _FALSE
            if kind is _STRING:
                budget.spend(tenth(min(len(a), len(b))))
                return _TRUE if str_test(a, b) else _FALSE
        try:
            return function(a, b)
        except OPERATOR_ERRORS as ex:
            return CELEvalError(f"{data} failed", ex.__class__, ex.args, tree=tree)

    return step
