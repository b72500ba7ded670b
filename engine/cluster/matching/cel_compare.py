"""CEL's comparisons across types, as cel-go evaluates them (spec C12).

celpy refuses to compare values of different types: `1 == 1.0`, `dyn('a') == 1` or a score's int value against
`80.5` are runtime errors there. In cel-go (and so upstream OCM) equality across types is an answer, never an
error (false, or true for numbers of equal value: `1 == 1u`, `1 == 1.0`), and ints, uints and doubles order
against each other by value. So `managedCluster.scores("usage").exists(s, s.value > 80.5)` matches a cluster
with a score of 90 as upstream does. Comparisons celpy answers are left to it; only what it refuses is answered
here.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from celpy import celtypes, evaluation

__all__ = ["COMPARISONS"]

_NUMBERS = (celtypes.IntType, celtypes.UintType, celtypes.DoubleType)
Compare = Callable[[Any, Any], Any]


def _plain(number: Any) -> int | float:
    """The number's value as Python's own type, which compares ints and floats exactly."""
    return float(number) if isinstance(number, float) else int(number)


def _across_types(test: Callable[[Any, Any], Any], otherwise: bool | None) -> Compare:
    """celpy's comparison, and for values it cannot compare: numbers by value, anything else `otherwise` (None:
    celpy's error stands, as for an ordering of a string and an int)."""
    same = evaluation.boolean(test)

    def compare(left: Any, right: Any) -> Any:
        try:
            return same(left, right)
        except TypeError:
            if isinstance(left, _NUMBERS) and isinstance(right, _NUMBERS):
                return celtypes.BoolType(test(_plain(left), _plain(right)))
            if otherwise is None:
                raise
            return celtypes.BoolType(otherwise)

    return compare


COMPARISONS: dict[str, Compare] = {
    "_<_": _across_types(operator.lt, None),
    "_<=_": _across_types(operator.le, None),
    "_>_": _across_types(operator.gt, None),
    "_>=_": _across_types(operator.ge, None),
    "_==_": _across_types(operator.eq, otherwise=False),
    "_!=_": _across_types(operator.ne, otherwise=True),
}
"""The comparison operators by celpy's function name."""
