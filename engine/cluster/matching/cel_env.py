"""The CEL environment of cluster predicates (spec C11–C16), on top of cel-python.

cel-python resolves names and functions only at run time, so compilation here also checks the syntax tree as
cel-go's parser and type checker do (`cel_check`): an expression cel-go refuses is a compile error here too.
Evaluation is charged as cel-go's cost tracker charges (`cel_cost`) and a runaway expression is stopped at
upstream's limits; a stopped evaluation, like any runtime error, means "no match".
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import celpy
import lark
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import Activation

from engine.cluster.matching.cel_check import MAX_CODE_POINTS, check, limits, normalize
from engine.cluster.matching.cel_closures import Evaluate, compile_closure
from engine.cluster.matching.cel_cost import Budget, CostLimitExceededError
from engine.cluster.matching.cel_decls import OVERLOADS
from engine.cluster.matching.cel_functions import EXTENSION_FUNCTIONS
from engine.cluster.matching.cel_parser_table import install_parser
from engine.cluster.matching.cel_steps import cel_string
from engine.errors import EngineError
from engine.inventory import Inventory

__all__ = [
    "EXPRESSION_LIMIT",
    "PER_CLUSTER_LIMIT",
    "CelCompileError",
    "CelOutcome",
    "CelProgram",
    "CompiledExpression",
    "compile_expression",
    "make_functions",
]

EXPRESSION_LIMIT = 1_000_000
"""Cost units per expression: upstream's per-call limit (see `cel_cost` for what a unit is)."""
PER_CLUSTER_LIMIT = 10_000_000
"""Cost units over all expressions of one selector on one cluster: upstream's runtime budget."""

ALLOWED_FUNCTIONS = frozenset({"has", "all", "exists", "exists_one", "map", "filter"}) | frozenset(
    name for name in OVERLOADS if name[0].isalpha()
)
"""Every function name an expression may call (spec C12): the macros and the declared functions."""

_CLUSTER_VARIABLE = "managedCluster"


@functools.cache
def _environment() -> celpy.Environment:
    """cel-python's environment, made when the first expression is compiled, with the parser of the shipped parse
    table (`cel_parser_table`): building the parser takes about 0.1 s, loading the table a few milliseconds."""
    install_parser()
    return celpy.Environment()


class CelCompileError(EngineError, ValueError):
    """The expression does not compile; the text is the issue list."""


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
        return str(cel_string(node))
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
    variable otherwise (bare, as a function argument, or through a computed index of the whole cluster). A path
    that extends another is left out: what it reads is part of the shorter path's value."""
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
    if uses != len(paths):
        return None
    found = sorted(set(paths))  # a path sorts right after its prefixes
    return tuple(p for i, p in enumerate(found) if not any(p[: len(q)] == q for q in found[:i]))


@functools.lru_cache(maxsize=4096)
def compile_expression(text: str) -> CompiledExpression:
    """Parse and check one expression; raises CelCompileError with cel-go style issues. A fleet's placements
    share a few expressions, and parsing one costs about a millisecond, so results are kept by text."""
    if len(text) > MAX_CODE_POINTS:  # before parsing: the parser's time grows with the text
        raise CelCompileError(limits(text, lark.Tree("expr", [])) or "")
    try:
        ast = _environment().compile(text)
    except CELParseError as exc:
        line, column = exc.line or 1, exc.column or 1
        detail = str(exc.args[0]).splitlines()[0] if exc.args else "syntax error"
        raise CelCompileError(f"ERROR: <input>:{line}:{column}: Syntax error: {detail}") from exc
    except RecursionError as exc:  # the parser's own tree building, past any depth cel-go accepts
        raise CelCompileError("ERROR: <input>:-1:0: max recursion depth exceeded") from exc
    exceeded = limits(text, normalize(ast))
    if exceeded is not None:
        raise CelCompileError(exceeded)
    try:
        return _checked(text, ast)
    except RecursionError as exc:  # nesting within the limits on a thread with a small stack
        raise CelCompileError("ERROR: <input>:-1:0: max recursion depth exceeded") from exc


def _checked(text: str, ast: lark.Tree[lark.Token]) -> CompiledExpression:
    issues = check(text, ast)
    if issues:
        raise CelCompileError("\n".join(issues))
    names: set[str] = set()
    any_name = False
    for name, _token, node in _called(ast):
        if name == "scores":
            literal = _string_literal(node)
            if literal is None:
                any_name = True
            else:
                names.add(literal)
    reads = _reads(ast)
    return CompiledExpression(text, _condensed(ast), None if any_name else frozenset(names), reads)


_PASS_THROUGH = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member"}
)


def _condensed(ast: lark.Tree[lark.Token]) -> lark.Tree[lark.Token]:
    """The tree evaluation walks: the grammar wraps every operand in a chain of one-child nodes (ten nodes for a
    literal), which evaluate to their child's value and are dropped here; rule names become plain strings, as
    the interpreter dispatches on them and a lark Token compares in Python. Checks above read the full tree."""
    for node in ast.iter_subtrees():
        node.data = sys.intern(str(node.data))
        node.children = [_skip(child) for child in node.children]
    condensed: lark.Tree[lark.Token] = _skip(ast)
    return condensed


def _skip(node: Any) -> Any:
    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data in _PASS_THROUGH:
        node = node.children[0]
    return node


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


class CelOutcome(NamedTuple):
    """One evaluation of a selector's expressions on one cluster: a pure function of the values it read."""

    matched: bool
    cost: int
    """Cost units charged, over all expressions run (past a limit: what was charged up to the stop)."""
    stopped: int | None
    """The index of the expression stopped at a cost limit, None when none was."""


class CelProgram:
    """The expressions of one cluster selector, bound to one evaluation's functions.

    Evaluations run against a cost budget (`cel_cost`): EXPRESSION_LIMIT per expression and PER_CLUSTER_LIMIT
    over the selector's expressions on one cluster. A stopped evaluation is a runtime error, hence no match;
    which expression was stopped is kept for the caller to report. Not reentrant: one evaluation at a time.
    """

    def __init__(self, expressions: tuple[CompiledExpression, ...], activation: Activation) -> None:
        self.expressions = expressions
        self._budget = Budget()
        self._base = activation
        self._compiled: list[Evaluate] = []
        """The expressions' evaluations, compiled at their first use: most programs only meet cached outcomes."""
        self._last: tuple[Any, CelOutcome] | None = None
        self.stopped = 0
        """How many of this program's `matches` calls were stopped at a limit."""

    def matches(self, cluster: Any) -> bool:
        """True when every expression returns true; any error or a stopped evaluation is False."""
        matched, stopped = self._run(cluster)
        self._last = (cluster, CelOutcome(matched, self._budget.used, stopped))
        self.stopped += stopped is not None
        return matched

    @property
    def last(self) -> CelOutcome:
        """The outcome of the last `matches` call."""
        assert self._last is not None
        return self._last[1]

    @property
    def spent(self) -> int:
        """Cost units of the last evaluation, over all expressions run."""
        return self._budget.used

    def stopped_at(self, cluster: Any) -> int | None:
        """The index of the expression stopped on `cluster`, None when none was: the last `matches` call's
        answer when it was for this very value, else found by evaluating again (not counted in `stopped`)."""
        last = self._last
        if last is not None and last[0] is cluster:
            return last[1].stopped
        return self._run(cluster)[1]

    def _run(self, cluster: Any) -> tuple[bool, int | None]:
        budget, compiled = self._budget, self._compiled
        budget.used = 0
        for index, expression in enumerate(self.expressions):
            budget.start(EXPRESSION_LIMIT, PER_CLUSTER_LIMIT)
            try:
                if index == len(compiled):  # compiled where a failure (a RecursionError) is a runtime error
                    compiled.append(compile_closure(expression.ast, self._base, budget))
                value = compiled[index](cluster)
            except CostLimitExceededError:
                return False, index
            except Exception:  # CELEvalError, or a function failing in any way: a runtime error
                return False, index if budget.exceeded else None
            if budget.exceeded:  # the limit was passed where celpy made the failure a value
                return False, index
            if not isinstance(value, celtypes.BoolType) or not bool(value):
                return False, None
        return True, None
