"""The closures `cel_closures` assembles a compiled CEL expression from, one factory per kind of step.

Each step charges the budget what `cel_cost` charges for it, in the same order, and makes the values and error
values cel-python's interpreter makes (field selection and indexing of maps, map literals, the comprehension
loops); the plain dict lookup stands in for a map's own where the key is a string, which is all the map does.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import lark
from celpy import celtypes
from celpy.evaluation import CELEvalError, NameContainer, celbytes, celstr

from engine.cluster.matching.cel_cost import AND, ITERATION, KEPT, OR, Budget, CostLimitExceededError
from engine.cluster.matching.cel_functions import cel_index

__all__ = [
    "Env",
    "Node",
    "cel_string",
    "collecting",
    "first_error",
    "indexing",
    "literal_value",
    "map_literal",
    "not_boolean",
    "not_iterable",
    "presence",
    "selection",
    "short_circuit",
]

Env = list[Any]
"""Slot 0 the cluster, then one slot per comprehension variable."""
Node = Callable[[Env], Any]

_BOOL, _STRING, _MAP = celtypes.BoolType, celtypes.StringType, celtypes.MapType
_dict_get: Callable[[Any, Any, Any], Any] = dict.get
_MISSING = object()


def selection(base: Node, field: str, budget: Budget, tree: lark.Tree[Any]) -> Node:
    """`base.field`: 1, then the field of a map, or celpy's error for anything else."""

    def select(env: Env) -> Any:
        budget.used += 1
        if budget.used > budget.ceiling:
            raise CostLimitExceededError
        member = base(env)
        if type(member) is _MAP:
            found = _dict_get(member, field, _MISSING)
            if found is not _MISSING:
                return found
            return CELEvalError(f"no such member in mapping: {field!r}", KeyError, None, tree=tree)
        return _select_other(member, field, tree)

    return select


def presence(target: Node, field: str, budget: Budget) -> Node:
    """`has(target.field)`: target evaluated first, and an error in it is the result (cel-go: `has(a.b.c)` with no
    `b` is an error, not false, so `!has(...)` does not match such a cluster, spec C15); then 1 for the test,
    true when target is a map holding `field`, false for any other value."""
    spend = budget.spend

    def has(env: Env) -> Any:
        member = target(env)
        if isinstance(member, CELEvalError):
            return member
        spend(1)
        return _BOOL(isinstance(member, _MAP) and field in member)

    return has


def indexing(target: Node, index: Node, function: Callable[..., Any], budget: Budget, tree: lark.Tree[Any]) -> Node:
    """`target[index]`: 1, then `_[_]` with celpy's error values for its failures."""
    plain = function is operator.getitem or function is cel_index
    spend = budget.spend

    def item(env: Env) -> Any:
        spend(1)
        member, key = target(env), index(env)
        if plain and type(member) is _MAP and type(key) is _STRING:
            found = _dict_get(member, key, _MISSING)
            if found is not _MISSING:
                return found
            return CELEvalError("no such key", KeyError, (key,), tree=tree)
        try:
            return function(member, key)
        except TypeError as ex:
            message = f"found no matching overload for _[_] applied to '({type(member)}, {type(key)})'"
            return CELEvalError(message, ex.__class__, ex.args, tree=tree)
        except KeyError as ex:
            return CELEvalError("no such key", ex.__class__, ex.args, tree=tree)
        except IndexError as ex:
            return CELEvalError("invalid_argument", ex.__class__, ex.args, tree=tree)

    return item


def first_error(values: list[Any]) -> CELEvalError | None:
    """The first error value among `values`, None when there is none."""
    return next((value for value in values if isinstance(value, CELEvalError)), None)


def map_literal(parts: list[Node], budget: Budget, where: lark.Tree[Any]) -> Node:
    """`{k: v, ...}`: 30, then every key and value in order; the first error value among them is the result, as
    in cel-go (celpy kept it as an entry); a duplicate or invalid key is an error value (at the primary, as celpy
    words it)."""
    spend = budget.spend

    def mapped(env: Env) -> Any:
        spend(30)
        if not parts:
            return celtypes.MapType()
        try:
            values = [part(env) for part in parts]
            failed = first_error(values)
            if failed is not None:
                return failed
            result = celtypes.MapType()
            for key, value in zip(values[0::2], values[1::2], strict=True):
                if key in result:
                    raise ValueError(f"Duplicate key {key!r}")
                result[key] = value
            return result
        except (ValueError, TypeError) as ex:
            return CELEvalError(ex.args[0], ex.__class__, ex.args, tree=where)

    return mapped


def not_iterable(listed: Any) -> CELEvalError | None:
    """The error of a macro over `listed` when it is neither a list nor a map (a string, a number...), as cel-go's;
    None when it can be iterated."""
    if isinstance(listed, CELEvalError):
        return listed
    if isinstance(listed, list | dict):
        return None
    return CELEvalError("expected iterable type", TypeError, (type(listed).__name__,))


def not_boolean(value: Any) -> CELEvalError:
    """The error of a `filter` or `exists_one` predicate that gave a non-boolean value, as cel-go's."""
    return CELEvalError("no such overload", TypeError, (type(value).__name__,))


def short_circuit(items: Node, body: Node, slot: int, decides: bool, budget: Budget) -> Node:
    """`all` (decides on false) or `exists` (on true): the body's error values are combined, not raised."""
    combine, per = (OR, ITERATION["exists"]) if decides else (AND, ITERATION["all"])

    def loop(env: Env) -> Any:
        listed = items(env)
        failed = not_iterable(listed)
        if failed is not None:
            return failed
        result: Any = _BOOL(not decides)
        for item in listed:
            budget.used += per
            if budget.used > budget.ceiling:
                raise CostLimitExceededError
            env[slot] = item
            value = body(env)
            if type(value) is _BOOL and type(result) is _BOOL:  # both plain: what `combine` returns
                result = value
                if bool(value) is decides:
                    break
                continue
            result = combine(result, value)
            if isinstance(result, _BOOL) and bool(result) is decides:
                break
        return result

    return loop


def collecting(items: Node, body: Node, slot: int, name: str, budget: Budget, *, transform: Node | None = None) -> Node:
    """`map`, `filter` and `exists_one`: an error value of the body, or a predicate that is not a boolean, is the
    result (a value, as cel-go's, so a `||` or `&&` around the macro can absorb it). `transform`: `map(x, p, f)`,
    given as `filter` with `body` p, keeps f of the elements p keeps (charged as `filter`, as cel-go charges it)."""
    per, kept = ITERATION[name], KEPT.get(name, 0)
    mapping = name == "map"

    def loop(env: Env) -> Any:
        listed = items(env)
        failed = not_iterable(listed)
        if failed is not None:
            return failed
        built = []
        spend = budget.spend
        for item in listed:
            spend(per)
            env[slot] = item
            value = body(env)
            if isinstance(value, CELEvalError):
                return value
            if mapping:
                built.append(value)
            elif type(value) is not _BOOL:
                return not_boolean(value)
            elif value:
                spend(kept)
                made = item if transform is None else transform(env)
                if isinstance(made, CELEvalError):
                    return made
                built.append(made)
        return _BOOL(len(built) == 1) if name == "exists_one" else celtypes.ListType(built)

    return loop


def _select_other(member: Any, field: str, tree: lark.Tree[Any]) -> Any:
    """A field selection on anything but a map, as celpy words each case."""
    if isinstance(member, CELEvalError):
        return member
    if isinstance(member, NameContainer):
        if field in member:
            return member[field].value
        return CELEvalError(f"No {field!r} in bindings {sorted(member.keys())}", KeyError, None, tree=tree)
    if isinstance(member, celtypes.MessageType):
        return member.get(field)
    if isinstance(member, celtypes.MapType):
        try:
            return member[field]
        except KeyError:
            return CELEvalError(f"no such member in mapping: {field!r}", KeyError, None, tree=tree)
    message = f"{member!r} with type: '{type(member)}' does not support field selection"
    return CELEvalError(message, TypeError, None, tree=tree)


def cel_string(token: Any) -> celtypes.StringType:
    """celpy's value of a string literal token, with the line breaks of a multi-line one kept, as cel-go keeps them
    (celpy's escape pattern skips them: `'''a` + newline + `b'''` was "ab")."""
    text = token.value
    if "\n" in text and text[:1] not in ("r", "R"):
        token = lark.Token(token.type, text.replace("\n", "\\n"))
    return celstr(token)


def literal_value(token: Any) -> Any:
    """celpy's value of a literal token (a ValueError for one it cannot make)."""
    kind, text = token.type, token.value
    if kind == "FLOAT_LIT":
        return celtypes.DoubleType(text)
    if kind == "INT_LIT":
        return celtypes.IntType(text)
    if kind == "UINT_LIT":
        return celtypes.UintType(text[:-1])
    if kind in ("MLSTRING_LIT", "STRING_LIT"):
        return cel_string(token)
    if kind == "BYTES_LIT":
        return celbytes(token)
    if kind == "BOOL_LIT":
        return _BOOL(text.lower() == "true")
    return None  # NULL_LIT
