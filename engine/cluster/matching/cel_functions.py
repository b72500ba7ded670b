"""CEL functions cel-python lacks, written as celpy custom functions (spec C12).

cel-python provides standard CEL and its macros. The cel-go strings extension, the Kubernetes regex
(`find`, `findAll`) and semver libraries, and OCM's `parseJSON()` are implemented here, and `matches` is
replaced. A function raising ValueError or TypeError becomes a CEL runtime error, which the Predicate filter
reads as "no match".

Every regular expression runs on RE2 (the google-re2 binding), as Go's `regexp` does upstream: matching takes
time linear in the text, so a pattern such as `(a+)+$` cannot hold the processor, and the syntax is RE2's
(no look-around or back-references; such a pattern is a runtime error). Python's `re` backtracks.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from functools import lru_cache, total_ordering
from typing import Any, Protocol, cast

import re2  # type: ignore[import-untyped, unused-ignore]
from celpy import celtypes
from celpy.adapter import json_to_cel

from engine.cluster.matching.cel_compare import COMPARISONS

__all__ = ["EXTENSION_FUNCTIONS", "Semver", "cel_index"]


class _Match(Protocol):
    """The part of the binding's match object used here (the binding ships no type information)."""

    def __getitem__(self, group: int) -> str | None: ...

    def group(self) -> str: ...

    def start(self) -> int: ...

    def end(self) -> int: ...


class _Regexp(Protocol):
    """The part of the binding's compiled pattern used here."""

    def search(self, text: str) -> _Match | None: ...

    def match(self, text: str) -> _Match | None: ...

    def finditer(self, text: str) -> Iterator[_Match]: ...


def _compile(pattern: str) -> _Regexp:
    options = re2.Options()
    options.log_errors = False  # a hostile pattern must not write to stderr
    return cast(_Regexp, re2.compile(pattern, options))


@lru_cache(maxsize=256)
def _regexp(pattern: str) -> _Regexp:
    """A user pattern, compiled once: placements repeat a few patterns over thousands of clusters."""
    try:
        return _compile(pattern)
    except (re2.error, UnicodeEncodeError) as exc:
        raise ValueError(f"invalid regular expression: {exc}") from None


_SEMVER = _compile(
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)


@total_ordering
class Semver:
    """A parsed semantic version; ordering follows semver 2.0 (build metadata ignored)."""

    __slots__ = ("major", "minor", "patch", "pre")

    def __init__(self, text: str) -> None:
        match = _SEMVER.match(text)
        if match is None:
            raise ValueError(f"invalid semver: {text}")
        self.major, self.minor, self.patch = (int(match[group] or 0) for group in (1, 2, 3))
        pre = match[4]
        self.pre: tuple[str, ...] = tuple(pre.split(".")) if pre else ()

    def _key(self) -> tuple[Any, ...]:
        pre: tuple[Any, ...] = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if pre else 1, pre)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self._key() == other._key()

    def __lt__(self, other: Semver) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@lru_cache(maxsize=4096)
def _parsed(text: str) -> Semver:
    """A version parsed once: a fleet reports few distinct versions, and parsing is most of a semver test (a
    Semver is never changed once made; a bad string raises, which is not kept)."""
    return Semver(text)


def cel_semver(text: celtypes.StringType) -> Semver:
    """`semver(s)`; a bad string is a runtime error. OCM's environment takes the Kubernetes semver library without
    its normalizing `semver(s, true)` (a compile error upstream, so here too)."""
    return _parsed(str(text))


def cel_is_semver(text: celtypes.StringType) -> celtypes.BoolType:
    """`isSemver(s)`."""
    try:
        cel_semver(text)
    except ValueError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _semver(value: Any) -> Semver:
    if not isinstance(value, Semver):
        raise TypeError("not a semver")
    return value


def cel_is_greater_than(a: Semver, b: Semver) -> celtypes.BoolType:
    """`a.isGreaterThan(b)`."""
    return celtypes.BoolType(_semver(a) > _semver(b))


def cel_is_less_than(a: Semver, b: Semver) -> celtypes.BoolType:
    """`a.isLessThan(b)`."""
    return celtypes.BoolType(_semver(a) < _semver(b))


def cel_compare_to(a: Semver, b: Semver) -> celtypes.IntType:
    """`a.compareTo(b)`: -1, 0 or 1."""
    left, right = _semver(a), _semver(b)
    return celtypes.IntType((left > right) - (left < right))


def cel_major(a: Semver) -> celtypes.IntType:
    """`v.major()`."""
    return celtypes.IntType(_semver(a).major)


def cel_minor(a: Semver) -> celtypes.IntType:
    """`v.minor()`."""
    return celtypes.IntType(_semver(a).minor)


def cel_patch(a: Semver) -> celtypes.IntType:
    """`v.patch()`."""
    return celtypes.IntType(_semver(a).patch)


def _floats(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, list):
        return [_floats(v) for v in value]
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    return value


def cel_parse_json(text: celtypes.StringType) -> Any:
    """OCM `s.parseJSON()`: JSON numbers become doubles, as with protobuf Struct."""
    if not isinstance(text, str):
        raise TypeError("parseJSON applies to strings")
    try:
        return json_to_cel(_floats(json.loads(str(text))))
    except json.JSONDecodeError as exc:
        raise ValueError(str(exc)) from exc


def _string(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return str(value)


def cel_matches(text: Any, pattern: Any) -> celtypes.BoolType:
    """`s.matches(re)`: whether the pattern matches anywhere in the text."""
    return celtypes.BoolType(_regexp(_string(pattern)).search(_string(text)) is not None)


def cel_find(text: Any, pattern: Any) -> celtypes.StringType:
    """Kubernetes regex `s.find(re)`: the first match, or ""."""
    match = _regexp(_string(pattern)).search(_string(text))
    return celtypes.StringType(match.group() if match else "")


def cel_find_all(text: Any, pattern: Any, limit: Any = None) -> celtypes.ListType:
    """Kubernetes regex `s.findAll(re[, n])`, as Go's FindAllString: a negative n means all, and an empty match
    right after the previous match is skipped (Python's finditer keeps it)."""
    wanted = -1 if limit is None else int(limit)
    found: list[celtypes.StringType] = []
    previous_end = -1
    for match in _regexp(_string(pattern)).finditer(_string(text)):
        if len(found) == wanted:
            break
        start, end = match.start(), match.end()
        if not (start == end == previous_end):
            found.append(celtypes.StringType(match.group()))
        previous_end = end
    return celtypes.ListType(found)


def cel_char_at(text: Any, index: Any) -> celtypes.StringType:
    """`s.charAt(i)`: "" at the end, an error beyond it."""
    s, i = _string(text), int(index)
    if i < 0 or i > len(s):
        raise ValueError("index out of range")
    return celtypes.StringType(s[i : i + 1])


def cel_index_of(text: Any, sub: Any, offset: Any = 0) -> celtypes.IntType:
    """`s.indexOf(sub[, offset])`, in code points."""
    s, start = _string(text), int(offset)
    if start < 0 or start > len(s):
        raise ValueError("index out of range")
    return celtypes.IntType(s.find(_string(sub), start))


def cel_last_index_of(text: Any, sub: Any, offset: Any = None) -> celtypes.IntType:
    """`s.lastIndexOf(sub[, offset])`: the last match starting at or before offset."""
    s, needle = _string(text), _string(sub)
    end = len(s) if offset is None else int(offset)
    if end < 0 or end > len(s):
        raise ValueError("index out of range")
    return celtypes.IntType(s.rfind(needle, 0, end + len(needle)))


def cel_lower_ascii(text: Any) -> celtypes.StringType:
    """`s.lowerAscii()`: only ASCII letters change."""
    return celtypes.StringType("".join(c.lower() if c.isascii() else c for c in _string(text)))


def cel_upper_ascii(text: Any) -> celtypes.StringType:
    """`s.upperAscii()`."""
    return celtypes.StringType("".join(c.upper() if c.isascii() else c for c in _string(text)))


def cel_replace(text: Any, old: Any, new: Any, count: Any = -1) -> celtypes.StringType:
    """`s.replace(old, new[, n])`; n < 0 replaces all."""
    return celtypes.StringType(_string(text).replace(_string(old), _string(new), int(count)))


def cel_split(text: Any, sep: Any, count: Any = -1) -> celtypes.ListType:
    """`s.split(sep[, n])` with Go's SplitN semantics (n == 0: empty list)."""
    s, separator, n = _string(text), _string(sep), int(count)
    if n == 0:
        return celtypes.ListType([])
    if separator == "":
        pieces = list(s)
        if n > 0 and len(pieces) > n:
            pieces = [*pieces[: n - 1], "".join(pieces[n - 1 :])]
    else:
        pieces = s.split(separator, n - 1 if n > 0 else -1)
    return celtypes.ListType([celtypes.StringType(p) for p in pieces])


def cel_substring(text: Any, start: Any, end: Any = None) -> celtypes.StringType:
    """`s.substring(start[, end])`, in code points; out of range is an error."""
    s, lo = _string(text), int(start)
    hi = len(s) if end is None else int(end)
    if lo < 0 or hi > len(s) or lo > hi:
        raise ValueError("substring index out of range")
    return celtypes.StringType(s[lo:hi])


def cel_trim(text: Any) -> celtypes.StringType:
    """`s.trim()`: leading and trailing Unicode white space."""
    return celtypes.StringType(_string(text).strip())


def cel_join(items: Any, sep: Any = "") -> celtypes.StringType:
    """`list.join([sep])` over a list of strings."""
    if not isinstance(items, list):
        raise TypeError("join applies to lists")
    return celtypes.StringType(_string(sep).join(_string(i) for i in items))


def cel_reverse(text: Any) -> celtypes.StringType:
    """`s.reverse()`."""
    return celtypes.StringType(_string(text)[::-1])


def _format_one(verb: str, precision: str, arg: Any) -> str:
    if verb == "s":
        if isinstance(arg, bool):
            return "true" if arg else "false"
        return str(arg)
    if verb == "d":
        return str(int(arg))
    if verb in "fe":
        digits = int(precision) if precision else 6
        return f"{float(arg):.{digits}{verb}}"
    if verb in "xXob":
        value = arg.encode() if isinstance(arg, str) and verb in "xX" else arg
        if isinstance(value, bytes):
            text = value.hex()
            return text.upper() if verb == "X" else text
        return format(int(value), verb)
    raise ValueError(f"unrecognized formatting clause: %{verb}")


_FORMAT_CLAUSE = _compile(r"%(?:\.([0-9]+))?([a-zA-Z%])")


def cel_format(text: Any, args: Any) -> celtypes.StringType:
    """`s.format([args])` with the %s %d %f %e %x %X %o %b clauses and `%%`."""
    template, values = _string(text), list(args)
    out: list[str] = []
    pos = 0
    for match in _FORMAT_CLAUSE.finditer(template):
        out.append(template[pos : match.start()])
        pos = match.end()
        verb = match[2] or ""
        if verb == "%":
            out.append("%")
            continue
        if not values:
            raise ValueError("not enough arguments for format")
        out.append(_format_one(verb, match[1] or "", values.pop(0)))
    out.append(template[pos:])
    return celtypes.StringType("".join(out))


def cel_index(container: Any, key: Any) -> Any:
    """`container[key]`; a negative list index is out of range, as in cel-go (Python's would count from the
    end, so `[1, 2, 3][-1] == 3` would hold where upstream reads a runtime error, spec C15)."""
    if isinstance(container, list) and isinstance(key, int) and key < 0:
        raise IndexError(f"index out of bounds: {key}")
    return container[key]


EXTENSION_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "_[_]": cel_index,
    **COMPARISONS,
    "semver": cel_semver,
    "isSemver": cel_is_semver,
    "isGreaterThan": cel_is_greater_than,
    "isLessThan": cel_is_less_than,
    "compareTo": cel_compare_to,
    "major": cel_major,
    "minor": cel_minor,
    "patch": cel_patch,
    "parseJSON": cel_parse_json,
    "matches": cel_matches,
    "find": cel_find,
    "findAll": cel_find_all,
    "charAt": cel_char_at,
    "indexOf": cel_index_of,
    "lastIndexOf": cel_last_index_of,
    "lowerAscii": cel_lower_ascii,
    "upperAscii": cel_upper_ascii,
    "replace": cel_replace,
    "split": cel_split,
    "substring": cel_substring,
    "trim": cel_trim,
    "join": cel_join,
    "reverse": cel_reverse,
    "format": cel_format,
}
"""Every function this module adds, by the name CEL calls it."""
