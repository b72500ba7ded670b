"""The declarations of the placement CEL environment, as cel-go's checker sees them: the one variable, every
function with its overloads, and the small type algebra overload resolution needs (`dyn` matches anything, type
parameters bind to the first concrete type they meet)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = [
    "BOOL", "BYTES", "DOUBLE", "DURATION", "DYN", "ERROR", "INT", "NULL", "OVERLOADS", "PARAMS", "SEMVER", "STRING",
    "TIMESTAMP", "TYPE", "TYPE_NAMES", "UINT", "VARIABLES", "Overload", "Type",
    "format_type", "join", "list_type", "map_type", "substitute", "unify",
]  # fmt: skip

Type = str | tuple[Any, ...]
"""A CEL type: a name (`int`, `dyn`, a type parameter `A`), ("list", T) or ("map", K, V)."""

DYN, BOOL, INT, UINT, DOUBLE, STRING, BYTES = "dyn", "bool", "int", "uint", "double", "string", "bytes"
NULL, TYPE, ERROR = "null_type", "type", "*error*"
TIMESTAMP, DURATION, SEMVER = "google.protobuf.Timestamp", "google.protobuf.Duration", "kubernetes.Semver"
_A, _B = "A", "B"
PARAMS = frozenset({_A, _B})


def list_type(t: Type) -> Type:
    """`list(t)`."""
    return ("list", t)


def map_type(k: Type, v: Type) -> Type:
    """`map(k, v)`."""
    return ("map", k, v)


Overload = tuple[bool, tuple[Type, ...], Type]
"""(member call, parameter types with the receiver first for a member call, result type)."""


def _g(result: Type, *params: Type) -> Overload:
    return (False, params, result)


def _m(result: Type, *params: Type) -> Overload:
    return (True, params, result)


_NUMBERS = (INT, UINT, DOUBLE)
_ORDERED = (*_NUMBERS, STRING, BYTES, BOOL, TIMESTAMP, DURATION)
_COMPARE = [_g(BOOL, t, t) for t in _ORDERED] + [
    _g(BOOL, a, b) for a in _NUMBERS for b in _NUMBERS if a != b
]  # cross-type numeric comparisons
_TIME_PARTS = ("getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getFullYear", "getMonth")
_CLOCK_PARTS = ("getHours", "getMilliseconds", "getMinutes", "getSeconds")
_SIZED = (STRING, BYTES, list_type(_A), map_type(_A, _B))

OVERLOADS: dict[str, list[Overload]] = {
    "_==_": [_g(BOOL, _A, _A)],
    "_!=_": [_g(BOOL, _A, _A)],
    "_<_": _COMPARE,
    "_<=_": _COMPARE,
    "_>_": _COMPARE,
    "_>=_": _COMPARE,
    "@in": [_g(BOOL, _A, list_type(_A)), _g(BOOL, _A, map_type(_A, _B))],
    "_+_": [_g(t, t, t) for t in (*_NUMBERS, STRING, BYTES, list_type(_A), DURATION)]
    + [_g(TIMESTAMP, TIMESTAMP, DURATION), _g(TIMESTAMP, DURATION, TIMESTAMP)],
    "_-_": [_g(t, t, t) for t in (*_NUMBERS, DURATION)]
    + [_g(DURATION, TIMESTAMP, TIMESTAMP), _g(TIMESTAMP, TIMESTAMP, DURATION)],
    "_*_": [_g(t, t, t) for t in _NUMBERS],
    "_/_": [_g(t, t, t) for t in _NUMBERS],
    "_%_": [_g(t, t, t) for t in (INT, UINT)],
    "-_": [_g(INT, INT), _g(DOUBLE, DOUBLE)],
    "!_": [_g(BOOL, BOOL)],
    "_&&_": [_g(BOOL, BOOL, BOOL)],
    "_||_": [_g(BOOL, BOOL, BOOL)],
    "_?_:_": [_g(_A, BOOL, _A, _A)],
    "_[_]": [_g(_A, list_type(_A), INT), _g(_B, map_type(_A, _B), _A)],
    "size": [_g(INT, t) for t in _SIZED] + [_m(INT, t) for t in _SIZED],
    "contains": [_m(BOOL, STRING, STRING)],
    "startsWith": [_m(BOOL, STRING, STRING)],
    "endsWith": [_m(BOOL, STRING, STRING)],
    "matches": [_m(BOOL, STRING, STRING), _g(BOOL, STRING, STRING)],
    "int": [_g(INT, t) for t in (INT, UINT, DOUBLE, STRING, TIMESTAMP)],
    "uint": [_g(UINT, t) for t in (INT, UINT, DOUBLE, STRING)],
    "double": [_g(DOUBLE, t) for t in (INT, UINT, DOUBLE, STRING)],
    "string": [_g(STRING, t) for t in (INT, UINT, DOUBLE, BOOL, STRING, BYTES, TIMESTAMP, DURATION)],
    "bytes": [_g(BYTES, STRING), _g(BYTES, BYTES)],
    "bool": [_g(BOOL, BOOL), _g(BOOL, STRING)],
    "type": [_g(TYPE, _A)],
    "dyn": [_g(DYN, _A)],
    "duration": [_g(DURATION, STRING), _g(DURATION, DURATION)],
    "timestamp": [_g(TIMESTAMP, STRING), _g(TIMESTAMP, INT), _g(TIMESTAMP, TIMESTAMP)],
    **{name: [_m(INT, TIMESTAMP), _m(INT, TIMESTAMP, STRING)] for name in _TIME_PARTS},
    **{name: [_m(INT, TIMESTAMP), _m(INT, TIMESTAMP, STRING), _m(INT, DURATION)] for name in _CLOCK_PARTS},
    # the strings extension
    "charAt": [_m(STRING, STRING, INT)],
    "indexOf": [_m(INT, STRING, STRING), _m(INT, STRING, STRING, INT)],
    "lastIndexOf": [_m(INT, STRING, STRING), _m(INT, STRING, STRING, INT)],
    "lowerAscii": [_m(STRING, STRING)],
    "upperAscii": [_m(STRING, STRING)],
    "replace": [_m(STRING, STRING, STRING, STRING), _m(STRING, STRING, STRING, STRING, INT)],
    "split": [_m(list_type(STRING), STRING, STRING), _m(list_type(STRING), STRING, STRING, INT)],
    "substring": [_m(STRING, STRING, INT), _m(STRING, STRING, INT, INT)],
    "trim": [_m(STRING, STRING)],
    "join": [_m(STRING, list_type(STRING)), _m(STRING, list_type(STRING), STRING)],
    "reverse": [_m(STRING, STRING)],
    "format": [_m(STRING, STRING, list_type(DYN))],
    # the Kubernetes regex library
    "find": [_m(STRING, STRING, STRING)],
    "findAll": [_m(list_type(STRING), STRING, STRING), _m(list_type(STRING), STRING, STRING, INT)],
    # the Kubernetes semver library
    "semver": [_g(SEMVER, STRING)],
    "isSemver": [_g(BOOL, STRING)],
    "isGreaterThan": [_m(BOOL, SEMVER, SEMVER)],
    "isLessThan": [_m(BOOL, SEMVER, SEMVER)],
    "compareTo": [_m(INT, SEMVER, SEMVER)],
    "major": [_m(INT, SEMVER)],
    "minor": [_m(INT, SEMVER)],
    "patch": [_m(INT, SEMVER)],
    # OCM
    "scores": [_m(list_type(DYN), DYN, STRING)],
    "parseJSON": [_m(DYN, STRING)],
}
"""Every function of the placement environment with its overloads, as the libraries declare them."""

TYPE_NAMES = frozenset({INT, UINT, DOUBLE, STRING, BYTES, BOOL, "list", "map", NULL, TYPE, DYN})
"""Identifiers that name a type (`type(x) == int`)."""
VARIABLES: dict[str, Type] = {"managedCluster": map_type(STRING, DYN)}


def format_type(t: Type) -> str:
    """cel-go's spelling of a type in messages."""
    if isinstance(t, tuple):
        return f"{t[0]}({', '.join(format_type(p) for p in t[1:])})"
    return DYN if t in PARAMS else t


def join(types: Sequence[Type]) -> Type:
    """The element type of a literal list or map: the common type, else dyn."""
    known = [t for t in types if t != ERROR]
    return known[0] if known and all(t == known[0] for t in known) else DYN


def unify(param: Type, arg: Type, bound: dict[str, Type]) -> bool:
    """Whether an argument of type `arg` fits parameter `param`, binding type parameters in `bound`."""
    if arg in (DYN, ERROR) or param == DYN:
        return True
    if isinstance(param, str) and param in PARAMS:
        seen = bound.get(param)
        if seen is None or seen == DYN:
            bound[param] = arg
            return True
        return unify(seen, arg, bound)
    if isinstance(arg, str) and arg in PARAMS:
        return True
    if isinstance(param, tuple) and isinstance(arg, tuple):
        return param[0] == arg[0] and all(unify(p, a, bound) for p, a in zip(param[1:], arg[1:], strict=True))
    return param == arg


def substitute(t: Type, bound: dict[str, Type]) -> Type:
    """`t` with its bound type parameters replaced (an unbound one is dyn)."""
    if isinstance(t, tuple):
        return (t[0], *(substitute(p, bound) for p in t[1:]))
    return bound.get(t, DYN) if t in PARAMS else t
