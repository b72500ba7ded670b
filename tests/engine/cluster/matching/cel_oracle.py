"""The tree-walking CEL evaluator the engine used before `cel_closures`, kept as the differential tests' oracle.

It is celpy's interpreter with operators, variables, literals, calls and comprehensions evaluated here to charge
cost (`cel_cost`); the compiled evaluator must give the same values, error values and charged cost.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import lark
from celpy import celtypes, evaluation
from celpy.evaluation import Activation, CELEvalError, Evaluator, NameContainer, Referent

from engine.cluster.matching.cel_cost import AND, ITERATION, KEPT, OPERATOR_ERRORS, OPERATORS, OR, Budget
from engine.cluster.matching.cel_steps import cel_string, first_error, not_boolean, not_iterable

__all__ = ["CostEvaluator"]

_PRIMARY = {"dot_ident": 1, "list_lit": 10, "map_lit": 30}
_LITERALS: dict[tuple[str, str], Any] = {}
"""Literal values by token (at most 4096): celpy parses a string literal's escapes on every evaluation."""


class CostEvaluator(Evaluator):
    """celpy's tree interpreter, charging `budget` as cel-go's cost tracker would.

    Operators, variables, literals and calls are evaluated here rather than by celpy, with the same results and
    error values: celpy spells out a typing cast such as `Tuple[List[Result], Result]` on each of them, which
    costs more than the operation itself (about 25 microseconds per comparison). The tree is the condensed one
    `cel_env` compiles (no chains of one-child nodes); a ternary and the rest are left to celpy.
    """

    def __init__(self, ast: lark.Tree[lark.Token], activation: Activation, budget: Budget) -> None:
        super().__init__(ast, activation=activation)
        self.budget = budget

    def visit(self, tree: lark.Tree[lark.Token]) -> Any:
        """Dispatch on the rule name; lark's also probes each method for a wrapper, which celpy never sets."""
        return getattr(self, tree.data)(tree)

    _visit_tree = visit

    def _operator(self, tree: lark.Tree[lark.Token]) -> Any:
        """A one-child node passes its child's value through; otherwise a unary or binary operator."""
        children = tree.children
        if len(children) == 1:
            return self.visit(children[0])  # type: ignore[arg-type]
        operator_tree, operand = children
        assert isinstance(operator_tree, lark.Tree) and isinstance(operand, lark.Tree)
        function = self.activation.resolve_function(OPERATORS[operator_tree.data])
        args = [self.visit(child) for child in (*operator_tree.children, operand)]  # type: ignore[arg-type]
        try:
            return function(*args)
        except OPERATOR_ERRORS as ex:
            return CELEvalError(f"{operator_tree.data} failed", ex.__class__, ex.args, tree=tree)

    relation = addition = multiplication = unary = _operator

    def literal(self, tree: lark.Tree[lark.Token]) -> Any:
        """A constant (cost 0), parsed once per token."""
        token = tree.children[0]
        assert isinstance(token, lark.Token)
        key = (token.type, token.value)
        if key in _LITERALS:
            return _LITERALS[key]
        value = cel_string(token) if token.type in ("STRING_LIT", "MLSTRING_LIT") else super().literal(tree)
        if not isinstance(value, CELEvalError):
            if len(_LITERALS) >= 4096:
                _LITERALS.clear()
            _LITERALS[key] = value
        return value

    def primary(self, tree: lark.Tree[lark.Token]) -> Any:
        """Literals, variables (charged 1) and calls without celpy's per-lookup typing casts; literal lists and
        maps are charged here and built by celpy; a call is charged by its function."""
        child = tree.children[0]
        assert isinstance(child, lark.Tree)
        kind = child.data
        if kind == "literal":
            return self.literal(child)
        if kind == "ident":
            self.budget.spend(1)
            name = child.children[0].value  # type: ignore[union-attr]
            container: NameContainer | None = self.activation.identifiers
            while container is not None:  # the innermost binding, as celpy's resolution without a package
                if name in container:
                    return container[name].value
                container = container.parent
            if name in evaluation.base_functions:  # a type such as `int` (`type(x) == int`): not the costed call
                return evaluation.base_functions[name]
            return super().primary(tree)  # a function's name, or the undeclared-reference error value
        if kind == "ident_arg" and child.children[0] == "has":
            return self._has(child.children[1])  # type: ignore[arg-type]
        if kind == "ident_arg" and child.children[0] not in ("has", "dyn"):
            args = self.visit(child.children[1]) if len(child.children) == 2 else ()  # type: ignore[arg-type]
            return self._invoke(child.children[0], (), args)
        cost = _PRIMARY.get(kind)
        if cost:
            self.budget.spend(cost)
        value = super().primary(tree)
        if kind == "map_lit" and isinstance(value, celtypes.MapType):  # an error among the entries is the result
            return first_error([part for entry in value.items() for part in entry]) or value
        return value

    def _has(self, exprlist: lark.Tree[lark.Token]) -> Any:
        """`has(e.f)` as cel-go: an error evaluating e is the result; then 1 for the test of f in the map e."""
        target, field = exprlist.children[0].children  # type: ignore[union-attr]
        member = self.visit(target)  # type: ignore[arg-type]
        if isinstance(member, CELEvalError):
            return member
        self.budget.spend(1)
        return celtypes.BoolType(isinstance(member, celtypes.MapType) and str(field) in member)

    def exprlist(self, tree: lark.Tree[lark.Token]) -> Any:
        """Arguments and list items: the first error among them, or the list."""
        values = [self.visit(child) for child in tree.children]  # type: ignore[arg-type]
        for value in values:
            if isinstance(value, CELEvalError):
                return value
        return celtypes.ListType(values)

    def _invoke(self, token: Any, target: tuple[Any, ...], args: Any) -> Any:
        """A call as celpy makes it: an error among the receiver and arguments is the result, and the function's
        ValueError, TypeError and AttributeError become error values."""
        try:
            function = self.activation.resolve_function(token.value)
        except KeyError as ex:
            return CELEvalError(f"undeclared reference to '{token}'", ex.__class__, ex.args, token=token)
        if isinstance(args, CELEvalError):
            return args
        values = (*target, *args)
        for value in values:
            if isinstance(value, CELEvalError):
                return value
        try:
            return function(*values)
        except ValueError as ex:
            return CELEvalError("return error for overflow", ex.__class__, ex.args, token=token)
        except (TypeError, AttributeError) as ex:
            return CELEvalError("no such overload", ex.__class__, ex.args, token=token)

    def _select(self, tree: lark.Tree[lark.Token]) -> Any:
        """A field selection or an index: 1, then as celpy."""
        self.budget.spend(1)
        return getattr(super(), tree.data)(tree)

    member_dot = member_index = _select

    def _logical(self, tree: lark.Tree[lark.Token], combine: Callable[[Any, Any], Any], decides: bool) -> Any:
        """`a || b` (`a && b`) without evaluating b when a is true (false), as cel-go; the result is the same."""
        children = tree.children
        if len(children) == 1:
            return self.visit(children[0])  # type: ignore[arg-type]
        left = self.visit(children[0])  # type: ignore[arg-type]
        if isinstance(left, celtypes.BoolType) and bool(left) is decides:
            return left
        return combine(left, self.visit(children[1]))  # type: ignore[arg-type]

    conditionalor = functools.partialmethod(_logical, combine=OR, decides=True)
    conditionaland = functools.partialmethod(_logical, combine=AND, decides=False)

    def _body(self, tree: lark.Tree[lark.Token], at: int = 1) -> Callable[[Any], Any]:
        """A macro's body (its argument `at`, after the variable) as a function of its variable. One nested
        activation serves every element, the variable rebound each time (celpy clones the whole activation per
        element, half an iteration's time)."""
        variable, body = tree.children[2].children[0], tree.children[2].children[at]  # type: ignore[union-attr]
        assert isinstance(variable, lark.Tree) and isinstance(body, lark.Tree)
        (ident,) = variable.find_data("ident")
        binding = Referent()
        activation = Activation(functions=self.activation.functions.maps[0], based_on=self.activation)
        activation.identifiers[str(ident.children[0])] = binding
        evaluator = CostEvaluator(body, activation, self.budget)

        def run(item: Any) -> Any:
            binding.value = item
            return evaluator.visit(body)

        return run

    def member_dot_arg(self, tree: lark.Tree[lark.Token]) -> Any:
        """A method call, or a comprehension macro iterated here so that each element is charged."""
        children = tree.children
        name = str(children[1])
        per = ITERATION.get(name)
        if per is None:
            target = self.visit(children[0])  # type: ignore[arg-type]
            args = self.visit(children[2]) if len(children) == 3 else ()  # type: ignore[arg-type]
            return self._invoke(children[1], (target,), args)
        items = self.visit(children[0])  # type: ignore[arg-type]
        failed = not_iterable(items)
        if failed is not None:
            return failed
        spend, kept = self.budget.spend, KEPT.get(name, 0)
        if name in ("all", "exists"):
            body = self._body(tree)
            combine, decides = (AND, False) if name == "all" else (OR, True)
            result: Any = celtypes.BoolType(not decides)
            for item in items:
                spend(per)
                result = combine(result, body(item))
                if isinstance(result, celtypes.BoolType) and bool(result) is decides:
                    break
            return result
        body, built = self._body(tree), []
        transform = None
        if len(tree.children[2].children) == 3:  # type: ignore[union-attr]  # `map(x, p, f)`: a filter keeping f
            name, transform = "filter", self._body(tree, at=2)
            per, kept = ITERATION[name], KEPT[name]
        for item in items:
            spend(per)
            value = body(item)
            if isinstance(value, CELEvalError):
                return value
            if name == "map":
                built.append(value)
            elif not isinstance(value, celtypes.BoolType):
                return not_boolean(value)
            elif value:
                spend(kept)
                made = item if transform is None else transform(item)
                if isinstance(made, CELEvalError):
                    return made
                built.append(made)
        return celtypes.BoolType(len(built) == 1) if name == "exists_one" else celtypes.ListType(built)
