"""Cost accounting for CEL evaluation, in the manner of cel-go's runtime cost tracker.

cel-python has no cost limit: without one, a hostile Placement holds the processor for hours or fills memory.
Each step is charged what cel-go charges: 1 per identifier, selection and index, 10 per list and 30 per map
literal, nothing for constants, `&&`, `||` and `?:`, the standard library's size-dependent call costs, OCM's for
`scores()` and `parseJSON()`, and per comprehension element what cel-go's expanded loop costs (3 for `all` and
`exists`, 12 for `map`, 1 for `exists_one` and `filter` plus 1 and 12 per kept element; `map(x, p, f)` as
`filter`). `all`/`exists` stop at the deciding element and `&&`/`||` skip a decided right operand, as cel-go
does. Costs round down where cel-go's round up, so the count is mostly below cel-go's (`benchmarks.celgo`
compares them: a few error paths, computed indexes and `type()` cost a unit or two more here). Upstream
charges the strings and regex extensions 1 per call; here what builds a string or list is charged for it before
building it, so memory is bounded by the limit: `replace`, `split`, `join`, `lowerAscii`, `upperAscii`, `trim`,
`substring`, `reverse` cost 1 per 10 characters (or elements) read and built, list concatenation 1 per 10
elements built, `find`/`findAll` what `matches` costs (ceil((1 + text length) / 10) * ceil(pattern length / 4),
at least the scan), `format` its template scan, then 1 per 10 characters built. So an expression upstream
accepts is stopped here only when it builds or scans over ten million characters. No clock is read: an
evaluation always costs the same.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from celpy import celtypes, evaluation
from celpy.evaluation import Activation

__all__ = [
    "AND",
    "ITERATION",
    "KEPT",
    "OPERATORS",
    "OPERATOR_ERRORS",
    "OR",
    "Budget",
    "CostLimitExceededError",
    "costed_activation",
    "tenth",
]

_Args = tuple[Any, ...]
_Cost = Callable[[_Args], int]

ITERATION = {"all": 3, "exists": 3, "exists_one": 1, "map": 12, "filter": 1}
"""Per element: cel-go's loop condition and step (e.g. `@not_strictly_false(@result)` and `@result && p`)."""
KEPT = {"exists_one": 1, "filter": 12}
"""Extra per element the predicate keeps: `@result + 1`, `@result + [x]`."""
_RELATIONS = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=", "in": "in"}
OPERATORS = {
    **{f"relation_{op}": f"_{sign}_" for op, sign in _RELATIONS.items()},
    "addition_add": "_+_", "addition_sub": "_-_", "unary_not": "!_", "unary_neg": "-_",
    "multiplication_mul": "_*_", "multiplication_div": "_/_", "multiplication_mod": "_%_",
}  # fmt: skip
OPERATOR_ERRORS = (TypeError, ValueError, OverflowError, ZeroDivisionError)
"""What celpy turns into an error value when an operator raises it."""
_INT64 = 2**63


def _integer(operation: Callable[[int, int], int]) -> Callable[[Any, Any], Any]:
    """celpy's int64 arithmetic (the operator itself), without the decorator it builds for every int result."""

    def apply(left: Any, right: Any) -> Any:
        if type(left) is celtypes.IntType and type(right) is celtypes.IntType:
            result = operation(int(left), int(right))
            if -_INT64 <= result < _INT64:
                return int.__new__(celtypes.IntType, result)
            raise ValueError("overflow")
        return operation(left, right)

    return apply


_SIGNS = {operator.add: "+", operator.sub: "-", operator.mul: "*"}
# celpy builds a decorator on every comparison and every int result; these are the same functions, built once
_FASTER: dict[str, Callable[[Any, Any], Any]] = {
    **{f"_{sign}_": evaluation.boolean(getattr(operator, op)) for op, sign in _RELATIONS.items() if op != "in"},
    **{f"_{sign}_": _integer(operation) for operation, sign in _SIGNS.items()},
}
AND = evaluation.eval_error("no such overload", TypeError)(celtypes.logical_and)
OR = evaluation.eval_error("no such overload", TypeError)(celtypes.logical_or)


class CostLimitExceededError(Exception):
    """The evaluation passed its limit (not a ValueError or TypeError, which celpy would turn into a value)."""


class Budget:
    """Units spent on one cluster; `ceiling` is where the current expression stops (its own limit or the
    cluster's, whichever comes first). Once passed, every further charge fails too."""

    __slots__ = ("ceiling", "used")

    def __init__(self) -> None:
        self.used = 0
        self.ceiling = 0

    def start(self, expression_limit: int, cluster_limit: int) -> None:
        """Begin the next expression of the same cluster."""
        self.ceiling = min(self.used + expression_limit, cluster_limit)

    @property
    def exceeded(self) -> bool:
        """Whether a charge has passed the ceiling."""
        return self.used > self.ceiling

    def spend(self, units: int) -> None:
        """Charge `units`; raises CostLimitExceededError past the ceiling."""
        self.used += units
        if self.used > self.ceiling:
            raise CostLimitExceededError


def _size(value: Any) -> int:
    """cel-go's actual size: the length of strings, bytes, lists and maps, 1 for anything else."""
    return len(value) if isinstance(value, str | bytes | list | dict) else 1


def tenth(count: int) -> int:
    """count * 0.1 rounded up (cel-go's string traversal factor), in integers."""
    return (count + 9) // 10


def _regex(args: _Args) -> int:
    return tenth(1 + _size(args[0])) * ((_size(args[1]) + 3) // 4)


def _add(args: _Args) -> int:
    left, right = args[0], args[1]
    if isinstance(left, str | bytes) and isinstance(right, str | bytes):
        return tenth(len(left) + len(right))
    if isinstance(left, list) and isinstance(right, list):
        return max(1, tenth(len(left) + len(right)))
    return 1


def _replace(args: _Args) -> int:
    """Reading the text and building the result, whose length is known before it is built."""
    text, old, new = args[0], args[1], args[2]
    if not (isinstance(text, str) and isinstance(old, str) and isinstance(new, str)):
        return 1
    limit, count = int(args[3]) if len(args) > 3 else -1, len(text) + 1 if old == "" else text.count(old)
    count = min(count, limit) if limit >= 0 else count
    return max(1, tenth(2 * len(text) + count * (len(new) - len(old))))


def _split(args: _Args) -> int:
    text, separator = args[0], args[1]
    if not (isinstance(text, str) and isinstance(separator, str)):
        return 1
    pieces = len(text) if separator == "" else text.count(separator) + 1
    return max(1, tenth(2 * len(text) + pieces))


def _join(args: _Args) -> int:
    items = args[0]
    separator = args[1] if len(args) > 1 else ""
    if not isinstance(items, list) or not isinstance(separator, str):
        return 1
    built = sum(len(item) for item in items if isinstance(item, str)) + len(separator) * max(len(items) - 1, 0)
    return max(1, tenth(2 * built))


def _struct(value: Any) -> int:
    """OCM's cost of a parsed JSON value: 30 per map, 10 per list, nothing for scalars."""
    if isinstance(value, dict):
        return 30 + sum(_struct(item) for item in value.values())
    if isinstance(value, list):
        return 10 + sum(_struct(item) for item in value)
    return 0


_UNIT = (
    "_-_", "_*_", "_/_", "_%_", "-_", "!_", "size", "charAt", "indexOf", "lastIndexOf", "int", "uint", "double",
    "bool", "type", "duration", "timestamp", "semver", "isSemver", "isGreaterThan", "isLessThan", "compareTo",
    "major", "minor", "patch", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getMonth",
    "getHours", "getMilliseconds", "getMinutes", "getSeconds",
)  # fmt: skip
_COPIES = ("lowerAscii", "upperAscii", "trim", "substring", "reverse")
"""Results at most as long as the receiver: reading it and building as much."""
_BEFORE: dict[str, _Cost] = {
    **dict.fromkeys(_UNIT, lambda args: 1),
    **dict.fromkeys(("_<_", "_<=_", "_>_", "_>=_", "_==_", "_!=_"), lambda a: tenth(min(_size(a[0]), _size(a[1])))),
    **dict.fromkeys(("startsWith", "endsWith", "format", "parseJSON"), lambda args: tenth(_size(args[0]))),
    **dict.fromkeys(_COPIES, lambda args: tenth(2 * _size(args[0])) or 1),
    **dict.fromkeys(("find", "findAll"), lambda args: max(_regex(args), tenth(1 + _size(args[0])))),
    "bytes": lambda args: tenth(len(args[0])) if isinstance(args[0], str) else 1,
    "string": lambda args: tenth(len(args[0])) if isinstance(args[0], bytes) else 1,
    "_in_": lambda args: len(args[1]) if isinstance(args[1], list) else 1,
    "contains": lambda args: tenth(_size(args[0])) * tenth(_size(args[1])) if isinstance(args[0], str) else 1,
    "_+_": _add, "matches": _regex, "replace": _replace, "split": _split, "join": _join,
    "scores": lambda args: 10,
}  # fmt: skip
"""What a call costs, from its arguments, charged before it runs."""

_AFTER: dict[str, Callable[[Any], int]] = {
    "format": lambda result: tenth(_size(result)),
    "parseJSON": _struct,
    "scores": lambda result: 31 * _size(result),
}
"""What a call costs from its result, charged after it ran (results bounded by what was already charged)."""


def _charged(function: Callable[..., Any], before: _Cost, after: Callable[[Any], int] | None, budget: Budget) -> Any:
    spend = budget.spend

    def call(*args: Any) -> Any:
        spend(before(args))
        result = function(*args)
        if after is not None:
            spend(after(result))
        return result

    return call


def costed_activation(activation: Activation, budget: Budget) -> Activation:
    """An activation whose functions (celpy's and the activation's own) first charge `budget`."""
    functions: Mapping[str, Callable[..., Any]] = activation.functions
    costed = {}
    for name, before in _BEFORE.items():
        function = functions.get(name)
        if function is not None:
            if function is evaluation.base_functions.get(name) and name in _FASTER:
                function = _FASTER[name]
            costed[name] = _charged(function, before, _AFTER.get(name), budget)
    return Activation(functions={**functions, **costed})
