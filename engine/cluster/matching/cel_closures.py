"""CEL expressions compiled to Python closures that charge cost as cel-go's tracker does (cluster C15).

A checked expression's condensed tree (`cel_env`) is turned once into nested closures over an environment list
(slot 0 the cluster, one slot per comprehension variable, resolved by scope when compiling), so an evaluation
does no name lookups, dispatch on rule names or activation cloning. Every step charges the budget what it is
charged in `cel_cost` and in the same order (so a stopped evaluation has spent exactly the same), calls the same
costed function table, and builds the same values and error values as cel-python's interpreter, except where
cel-go (upstream) answers otherwise (`cel_steps`, `cel_compare`): an error is a value that `&&`, `||`, `all` and
`exists` may absorb, also one from a `map`, `filter` or `exists_one` body. The comprehensions are plain loops,
and comparisons of two ints or two strings skip the generic call (same cost, same result).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import lark
from celpy import celtypes, evaluation
from celpy.evaluation import Activation, CELEvalError

from engine.cluster.matching.cel_compare import COMPARISONS
from engine.cluster.matching.cel_cost import (
    AND,
    ITERATION,
    OPERATORS,
    OR,
    Budget,
    CostLimitExceededError,
    costed_activation,
)
from engine.cluster.matching.cel_operators import TESTS, binary, comparison, logical, ternary, unary
from engine.cluster.matching.cel_steps import (
    Env,
    Node,
    collecting,
    indexing,
    literal_value,
    map_literal,
    presence,
    selection,
    short_circuit,
)

__all__ = ["Evaluate", "compile_closure"]

Evaluate = Callable[[Any], Any]
"""Evaluates on one cluster value: the result, or raises the error value (as celpy's `evaluate`)."""

_BOOL = celtypes.BoolType
_CLUSTER = "managedCluster"


class _Compiler:
    """Turns one condensed tree into closures bound to one costed function table and budget."""

    def __init__(self, base: Activation, budget: Budget) -> None:
        self.activation = activation = costed_activation(base, budget)
        self.functions: Mapping[str, Callable[..., Any]] = activation.functions
        self.standard = frozenset(
            name
            for name in TESTS
            if base.functions.get(name) in (evaluation.base_functions.get(name), COMPARISONS.get(name))
        )
        """The comparisons `base` leaves to celpy or `cel_compare` (which answer two ints or two strings as
        celpy does): those the fast path may stand in for."""
        self.budget = budget
        self.spend = budget.spend
        self.constants: dict[Node, Any] = {}
        """Closures of literals that always give the same value, with it (used to skip calling them)."""
        self.variables: dict[Node, int] = {}
        """Closures that read a comprehension variable or the cluster, with its slot (read inline instead)."""
        self.scopes: list[tuple[str, int]] = [(_CLUSTER, 0)]
        self.slots = 1
        self._last_items: list[Node] = []
        """The item closures of the exprlist compiled last."""

    def node(self, tree: Any) -> Node:
        method: Callable[[Any], Node] = getattr(self, f"_{tree.data}")
        return method(tree)

    # --- operators ------------------------------------------------------------------------------
    def _expr(self, tree: lark.Tree[Any]) -> Node:
        if len(tree.children) == 1:
            return self.node(tree.children[0])
        condition, left, right = (self.node(child) for child in tree.children)
        return ternary(condition, left, right, self.functions["_?_:_"], tree)

    def _logical(self, tree: lark.Tree[Any], combine: Callable[[Any, Any], Any], decides: bool) -> Node:
        if len(tree.children) == 1:
            return self.node(tree.children[0])
        left, right = (self.node(child) for child in tree.children)
        return logical(left, right, combine, decides)

    def _conditionalor(self, tree: lark.Tree[Any]) -> Node:
        return self._logical(tree, OR, True)

    def _conditionaland(self, tree: lark.Tree[Any]) -> Node:
        return self._logical(tree, AND, False)

    def _operator(self, tree: lark.Tree[Any]) -> Node:
        """A unary or binary operator; a comparison celpy would make with its own function takes the fast path."""
        if len(tree.children) == 1:
            return self.node(tree.children[0])
        operator_tree, operand = tree.children
        data = operator_tree.data
        name = OPERATORS[data]
        function = self.functions[name]
        operands = [self.node(child) for child in (*operator_tree.children, operand)]
        if len(operands) == 1:
            return unary(function, operands[0], data, tree)
        left, right = operands
        method = TESTS.get(name)
        if method is None or name not in self.standard:
            return binary(function, left, right, data, tree)
        constant = (self.constants[right],) if right in self.constants else None
        slot = self.variables.get(left)
        return comparison(
            function, method, left, right, slot=slot, constant=constant, budget=self.budget, data=data, tree=tree
        )

    _relation = _addition = _multiplication = _unary = _operator

    # --- members --------------------------------------------------------------------------------
    def _member_dot(self, tree: lark.Tree[Any]) -> Node:
        target, token = tree.children
        return selection(self.node(target), str(token), self.budget, tree)

    def _member_index(self, tree: lark.Tree[Any]) -> Node:
        target, index = (self.node(child) for child in tree.children)
        return indexing(target, index, self.functions["_[_]"], self.budget, tree)

    def _member_dot_arg(self, tree: lark.Tree[Any]) -> Node:
        children = tree.children
        name = str(children[1])
        if name in ITERATION:
            return self._comprehension(tree, name)
        target = self.node(children[0])
        args = self._exprlist(children[2]) if len(children) == 3 else None
        return self._call(children[1], target, args)

    # --- calls ----------------------------------------------------------------------------------
    def _call(self, token: Any, target: Node | None, args: Node | None) -> Node:
        """A call as celpy makes it: receiver and arguments first, then the function; an error among them is the
        result; the function's ValueError, TypeError and AttributeError become error values."""
        function = self.functions.get(str(token.value))

        def call(env: Env) -> Any:
            values: tuple[Any, ...] = (target(env),) if target is not None else ()
            listed = args(env) if args is not None else ()
            if function is None:
                message = f"undeclared reference to '{token}'"
                return CELEvalError(message, KeyError, (str(token.value),), token=token)
            if isinstance(listed, CELEvalError):
                return listed
            values = (*values, *listed)
            for value in values:
                if isinstance(value, CELEvalError):
                    return value
            try:
                return function(*values)
            except ValueError as ex:
                return CELEvalError("return error for overflow", ex.__class__, ex.args, token=token)
            except (TypeError, AttributeError) as ex:
                return CELEvalError("no such overload", ex.__class__, ex.args, token=token)

        return call

    def _exprlist(self, tree: lark.Tree[Any]) -> Node:
        """Arguments and list items: the first error among them, or the list."""
        items = self._last_items = [self.node(child) for child in tree.children]

        def exprlist(env: Env) -> Any:
            values = [item(env) for item in items]
            for value in values:
                if isinstance(value, CELEvalError):
                    return value
            return celtypes.ListType(values)

        return exprlist

    # --- primaries ------------------------------------------------------------------------------
    def _primary(self, tree: lark.Tree[Any]) -> Node:
        """celpy words some errors of a primary at the primary node itself: those get it as `where`."""
        child = tree.children[0]
        if child.data in ("ident", "dot_ident", "dot_ident_arg", "map_lit"):
            method: Callable[[Any, Any], Node] = getattr(self, f"_{child.data}")
            return method(child, tree)
        return self.node(child)

    def _paren_expr(self, tree: lark.Tree[Any]) -> Node:
        return self.node(tree.children[0])

    def _literal(self, tree: lark.Tree[Any]) -> Node:
        """A constant (cost 0), made once; a literal celpy cannot make is an error value on each evaluation."""
        try:
            value = literal_value(tree.children[0])
        except ValueError as ex:
            args = (ex.args[0], ex.__class__, ex.args)
            return lambda env: CELEvalError(*args, tree=tree)

        def constant(env: Env) -> Any:
            return value

        self.constants[constant] = value
        return constant

    def _ident(self, tree: lark.Tree[Any], where: lark.Tree[Any]) -> Node:
        name, spend, budget = str(tree.children[0]), self.spend, self.budget
        slot = self._slot(name)
        if slot is not None:

            def variable(env: Env) -> Any:
                budget.used += 1
                if budget.used > budget.ceiling:
                    raise CostLimitExceededError
                return env[slot]

            self.variables[variable] = slot
            return variable
        if name in evaluation.base_functions:  # a type such as `int` (`type(x) == int`): not the costed call
            function = evaluation.base_functions[name]

            def type_name(env: Env) -> Any:
                spend(1)
                return function

            return type_name
        resolve = self._resolver(name, where)

        def unknown(env: Env) -> Any:
            spend(1)
            return resolve(env)

        return unknown

    def _dot_ident(self, tree: lark.Tree[Any], where: lark.Tree[Any]) -> Node:
        resolve, spend = self._resolver(str(tree.children[0]), where), self.spend

        def dot_ident(env: Env) -> Any:
            spend(1)
            return resolve(env)

        return dot_ident

    def _dot_ident_arg(self, tree: lark.Tree[Any], where: lark.Tree[Any]) -> Node:
        """`.name(args)`: celpy evaluates the arguments and resolves the name as a variable, not a call."""
        args = self._exprlist(tree.children[1]) if len(tree.children) == 2 else None
        resolve = self._resolver(str(tree.children[0]), where)

        def dot_ident_arg(env: Env) -> Any:
            if args is not None:
                args(env)
            return resolve(env)

        return dot_ident_arg

    def _resolver(self, name: str, tree: lark.Tree[Any]) -> Node:
        """A name resolved as celpy resolves what is not a bound variable: through a real activation holding the
        variables in scope (names the checker refuses never get here)."""
        scope = dict(self.scopes)
        activation = self.activation

        def resolve(env: Env) -> Any:
            nested = activation.nested_activation(vars={key: env[slot] for key, slot in scope.items()})
            try:
                return nested.resolve_variable(name)
            except KeyError as ex:
                return CELEvalError(ex.args[0] if ex.args else name, ex.__class__, ex.args, tree=tree)

        return resolve

    def _ident_arg(self, tree: lark.Tree[Any]) -> Node:
        token = tree.children[0]
        args = self._exprlist(tree.children[1]) if len(tree.children) == 2 else None
        if str(token) not in ("has", "dyn"):
            return self._call(token, None, args)
        if str(token) == "has":  # the checker lets only `has(e.f)` through
            target, field = tree.children[1].children[0].children
            return presence(self.node(target), str(field), self.budget)
        items = [self.node(child) for child in tree.children[1].children] if len(tree.children) == 2 else []

        def first(env: Env) -> Any:
            """Every argument evaluated (and charged), the first one used, as celpy."""
            values = [item(env) for item in items]
            return values[0]

        return first

    def _list_lit(self, tree: lark.Tree[Any]) -> Node:
        spend = self.spend
        if not tree.children:

            def empty(env: Env) -> Any:
                spend(10)
                return celtypes.ListType()

            return empty
        items = self._exprlist(tree.children[0])
        if all(item in self.constants for item in self._last_items):  # the same values every time
            values = [self.constants[item] for item in self._last_items]

            def constants(env: Env) -> Any:
                spend(10)
                return celtypes.ListType(values)

            return constants

        def listed(env: Env) -> Any:
            spend(10)
            return items(env)

        return listed

    def _map_lit(self, tree: lark.Tree[Any], where: lark.Tree[Any]) -> Node:
        parts = [self.node(child) for child in tree.children[0].children] if tree.children else []
        return map_literal(parts, self.budget, where)

    # --- comprehensions -------------------------------------------------------------------------
    def _slot(self, name: str) -> int | None:
        for bound, slot in reversed(self.scopes):
            if bound == name:
                return slot
        return None

    def _comprehension(self, tree: lark.Tree[Any], name: str) -> Node:
        items = self.node(tree.children[0])
        args = tree.children[2].children
        (ident,) = args[0].find_data("ident")
        slot = self.slots
        self.slots += 1
        self.scopes.append((str(ident.children[0]), slot))
        try:
            body, *transform = (self.node(arg) for arg in args[1:])
        finally:
            self.scopes.pop()
        if name in ("all", "exists"):
            return short_circuit(items, body, slot, name == "exists", self.budget)
        if transform:  # `map(x, p, f)`, the only macro the checker lets take three arguments
            return collecting(items, body, slot, "filter", self.budget, transform=transform[0])
        return collecting(items, body, slot, name, self.budget)


def compile_closure(ast: lark.Tree[Any], activation: Activation, budget: Budget) -> Evaluate:
    """The evaluation of one condensed, checked tree with `activation`'s functions, each costed, charging
    `budget`."""
    compiler = _Compiler(activation, budget)
    root = compiler.node(ast)
    size = compiler.slots

    def evaluate(cluster: Any) -> Any:
        env: Env = [None] * size
        env[0] = cluster
        value = root(env)
        if isinstance(value, CELEvalError):
            raise value
        return value

    return evaluate
