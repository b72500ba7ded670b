"""The CEL environment of cluster predicates (spec C11–C16), on top of cel-python.

cel-python resolves functions only at run time, so compilation here also walks the syntax tree and rejects
any function outside the documented set: the result matches a type-checking environment that declares
exactly those functions. Evaluation counts the operations cel-go charges for and stops a runaway
expression; a stopped evaluation, like any runtime error, means "no match".
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import Activation, CELEvalError, Evaluator, celstr

from engine.cluster.cel_functions import EXTENSION_FUNCTIONS
from engine.inventory import Inventory

__all__ = [
    "EXPRESSION_LIMIT",
    "PER_CLUSTER_LIMIT",
    "CelCompileError",
    "CelProgram",
    "CompiledExpression",
    "compile_expression",
    "make_functions",
]

EXPRESSION_LIMIT = 1_000_000
"""Counted operations per expression (upstream's cost limit; our count never exceeds cel-go's cost)."""
PER_CLUSTER_LIMIT = 10_000_000
"""Counted operations over all expressions of one cluster."""

_MACROS = frozenset({"has", "all", "exists", "exists_one", "map", "filter", "dyn"})
_STANDARD = frozenset(
    {
        "size", "contains", "startsWith", "endsWith", "matches",
        "int", "uint", "double", "string", "bytes", "bool", "type", "duration", "timestamp",
        "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getMonth",
        "getHours", "getMilliseconds", "getMinutes", "getSeconds",
    }
)  # fmt: skip
_OCM = frozenset({"scores", "parseJSON"})
ALLOWED_FUNCTIONS = _MACROS | _STANDARD | _OCM | frozenset(EXTENSION_FUNCTIONS)
"""Every function name an expression may call (spec C12)."""

# Syntax nodes cel-go charges at least one cost unit for; pass-through grammar nodes are free.
_COSTLY = frozenset(
    {
        "relation_lt", "relation_le", "relation_gt", "relation_ge", "relation_eq", "relation_ne", "relation_in",
        "addition_add", "addition_sub", "multiplication_mul", "multiplication_div", "multiplication_mod",
        "unary_not", "unary_neg", "member_dot", "member_dot_arg", "member_index", "ident_arg", "ident",
        "dot_ident", "dot_ident_arg", "list_lit", "map_lit", "conditionalor", "conditionaland",
    }
)  # fmt: skip

_ENV = celpy.Environment()
_CLUSTER_VARIABLE = "managedCluster"


class CelCompileError(ValueError):
    """The expression does not compile; the text is the issue list."""


class _BudgetExceededError(Exception):
    """Raised inside the evaluator when the operation count passes a limit."""


@dataclass(frozen=True, slots=True)
class CompiledExpression:
    """A parsed, checked expression; `score_names` is None when some `scores()` argument is not a literal."""

    text: str
    ast: lark.Tree[lark.Token]
    score_names: frozenset[str] | None
    reads: tuple[tuple[str, ...], ...] | None = None
    """The fixed `managedCluster` paths the expression reads, when it reads the cluster through nothing else:
    its outcome is then a function of the values at those paths (None: of the whole cluster)."""


def _called(tree: lark.Tree[lark.Token]) -> Iterator[tuple[str, lark.Token, lark.Tree[lark.Token]]]:
    for node in tree.iter_subtrees_topdown():  # type: ignore[no-untyped-call]
        if node.data == "member_dot_arg":
            token = node.children[1]
        elif node.data in ("ident_arg", "dot_ident_arg"):
            token = node.children[0]
        else:
            continue
        assert isinstance(token, lark.Token)
        yield str(token.value), token, node


def _string_literal(node: lark.Tree[lark.Token]) -> str | None:
    """The value of an argument that is a plain string literal, else None."""
    args = [c for c in node.children if isinstance(c, lark.Tree) and c.data == "exprlist"]
    if len(args) != 1 or len(args[0].children) != 1:
        return None
    return _literal(args[0].children[0])


def _literal(node: Any) -> str | None:
    """The value of an expression that is a plain string literal, else None."""
    while isinstance(node, lark.Tree) and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, lark.Token) and node.type in ("STRING_LIT", "MLSTRING_LIT"):
        return str(celstr(node))
    return None


def _path(member: lark.Tree[lark.Token]) -> tuple[str, ...] | None:
    """The fixed path a `member` node reads from `managedCluster` (() for the bare variable), else None."""
    node = member.children[0]
    if not isinstance(node, lark.Tree):
        return None
    if node.data == "primary":
        ident = node.children[0]
        is_cluster = isinstance(ident, lark.Tree) and ident.data == "ident" and ident.children[0] == _CLUSTER_VARIABLE
        return () if is_cluster else None
    if node.data not in ("member_dot", "member_index"):
        return None
    base, step = node.children
    assert isinstance(base, lark.Tree)
    field = str(step) if node.data == "member_dot" else _literal(step)
    path = _path(base)
    return None if path is None or field is None else (*path, field)


def _reads(ast: lark.Tree[lark.Token]) -> tuple[tuple[str, ...], ...] | None:
    """The maximal fixed paths through which `ast` reads `managedCluster`, or None when it also uses the
    variable otherwise (bare, as a function argument, or through a computed index of the whole cluster)."""
    paths: list[tuple[str, ...]] = []
    pending = [ast]
    while pending:
        node = pending.pop()
        path = _path(node) if node.data == "member" else None
        if path:
            paths.append(path)
            continue
        pending.extend(child for child in node.children if isinstance(child, lark.Tree))
    uses = sum(1 for node in ast.iter_subtrees() if node.data == "ident" and node.children[0] == _CLUSTER_VARIABLE)
    return tuple(sorted(set(paths))) if uses == len(paths) else None


@functools.lru_cache(maxsize=4096)
def compile_expression(text: str) -> CompiledExpression:
    """Parse and check one expression; raises CelCompileError with cel-go style issues. A fleet's placements
    share a few expressions, and parsing one costs about a millisecond, so results are kept by text."""
    try:
        ast = _ENV.compile(text)
    except CELParseError as exc:
        line, column = exc.line or 1, exc.column or 1
        detail = str(exc.args[0]).splitlines()[0] if exc.args else "syntax error"
        raise CelCompileError(f"ERROR: <input>:{line}:{column}: Syntax error: {detail}") from exc
    issues: list[str] = []
    names: set[str] = set()
    any_name = False
    for name, token, node in _called(ast):
        if name not in ALLOWED_FUNCTIONS:
            issues.append(
                f"ERROR: <input>:{token.line}:{token.column}: undeclared reference to '{name}' (in container '')"
            )
        elif name == "scores":
            literal = _string_literal(node)
            if literal is None:
                any_name = True
            else:
                names.add(literal)
    if issues:
        raise CelCompileError("\n".join(issues))
    return CompiledExpression(text, ast, None if any_name else frozenset(names), _reads(ast))


class _Budget:
    __slots__ = ("expression", "total")

    def __init__(self) -> None:
        self.total = 0
        self.expression = 0

    def spend(self) -> None:
        self.total += 1
        self.expression += 1
        if self.expression > EXPRESSION_LIMIT or self.total > PER_CLUSTER_LIMIT:
            raise _BudgetExceededError


class _CountingEvaluator(Evaluator):
    """celpy's tree interpreter, charging the shared budget for every costly node it visits."""

    def __init__(self, ast: lark.Tree[lark.Token], activation: Any, budget: _Budget) -> None:
        super().__init__(ast, activation=activation)
        self.budget = budget

    def _visit_tree(self, tree: lark.Tree[lark.Token]) -> Any:
        if tree.data in _COSTLY:
            self.budget.spend()
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: lark.Tree[lark.Token]) -> _CountingEvaluator:
        return _CountingEvaluator(ast, self.activation, self.budget)


def make_functions(inventory: Inventory) -> dict[str, Callable[..., Any]]:
    """The custom functions of one evaluation: the extensions plus `scores()` bound to the inventory."""

    def scores(cluster: Any, name: Any) -> celtypes.ListType:
        metadata = cluster[celtypes.StringType("metadata")]
        obj = inventory.score(str(metadata[celtypes.StringType("name")]), str(name))
        if obj is None:
            raise ValueError(f"AddOnPlacementScore {name} not found")
        return celtypes.ListType(
            [
                celtypes.MapType(
                    {
                        celtypes.StringType("name"): celtypes.StringType(item.name),
                        celtypes.StringType("value"): celtypes.IntType(item.value),
                    }
                )
                for item in obj.status.scores
            ]
        )

    return {**EXTENSION_FUNCTIONS, "scores": scores}


class CelProgram:
    """The expressions of one cluster selector, bound to one evaluation's functions."""

    def __init__(self, expressions: tuple[CompiledExpression, ...], activation: Activation) -> None:
        self._expressions = expressions
        self._activation = activation

    def matches(self, cluster: Any) -> bool:
        """True when every expression returns true; any error or a stopped evaluation is False."""
        budget = _Budget()
        context = {_CLUSTER_VARIABLE: cluster}
        for expression in self._expressions:
            budget.expression = 0
            try:
                value = _CountingEvaluator(expression.ast, self._activation, budget).evaluate(context)
            except (_BudgetExceededError, CELEvalError, ValueError, TypeError, LookupError, ArithmeticError):
                return False
            except Exception:  # a custom function failing in an unforeseen way is still a runtime error
                return False
            if not isinstance(value, celtypes.BoolType) or not bool(value):
                return False
        return True
