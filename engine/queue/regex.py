"""Rule-filter regular expressions, compiled and matched by RE2 itself.

Upstream compiles a filter entry with Go's `regexp`, an RE2 engine: matching takes time linear in the name, so a
pattern such as `(a+)+$` cannot make a placement spin. Python's `re` backtracks and accepts more syntax
(look-around, back-references, possessive quantifiers), so it is not used here: the google-re2 binding (C++ RE2)
compiles and matches every filter regexp. Its options are the ones Go's `regexp.Compile` implies: Perl-like
syntax, leftmost-first matching, case-sensitive, `.` not matching a newline, `^`/`$` at the ends of the text,
UTF-8 text.

Where C++ RE2 accepts what Go refuses, the pattern is refused here as Go would:
- `\\C` (any single byte) outside a `\\Q...\\E` quote;
- capture-group names with non-ASCII characters (Go allows only ASCII letters, digits and `_`).

Known remaining differences, all on patterns no filter needs: Go refuses expressions nested more than 1000
levels deep, C++ RE2 does not; Go bounds a pattern by instruction count and C++ RE2 by memory (a 64 MiB
budget here, enough for `\\pL{1000}`), so a pattern near either bound may be accepted by one and refused by the
other; the Unicode tables follow each library's Unicode version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, cast

import re2  # type: ignore[import-untyped, unused-ignore]

__all__ = ["REGEXP_CHARACTERS", "RE2Regexp", "compile_re2", "has_regexp_character"]

REGEXP_CHARACTERS = frozenset("^$*+?()[{}|")
_MAX_MEMORY = 64 << 20
"""RE2's per-pattern memory budget; C++ RE2's 8 MiB default refuses `\\pL{1000}`, which Go accepts."""
_SURROGATES = range(0xD800, 0xE000)


class _Program(Protocol):
    """The part of the binding's compiled pattern used here (the binding ships no type information)."""

    @property
    def groupindex(self) -> dict[str, int]: ...

    def search(self, text: bytes) -> object | None: ...


@dataclass(frozen=True, slots=True)
class RE2Regexp:
    """A compiled filter regexp; two are equal when their pattern texts are."""

    pattern: str
    _program: _Program = field(compare=False, repr=False)

    def contains_match(self, text: str) -> bool:
        """Whether the regexp matches anywhere in the text: an unanchored search, anchor with `^...$`."""
        return self._program.search(_utf8(text)) is not None


def has_regexp_character(text: str) -> bool:
    """Whether an entry contains one of the characters that mark it as a regexp; `.` alone does not."""
    return any(char in REGEXP_CHARACTERS for char in text)


def compile_re2(pattern: str) -> RE2Regexp | None:
    """Compile a pattern as Go's `regexp` would accept it, or None when it is not a valid RE2 regexp."""
    if _uses_any_byte(pattern):
        return None
    options = re2.Options()
    options.max_mem = _MAX_MEMORY
    options.log_errors = False
    try:
        program = cast(_Program, re2.compile(pattern, options))
    except (re2.error, UnicodeEncodeError):  # a lone surrogate is not UTF-8, as Go refuses invalid UTF-8
        return None
    if not all(name.isascii() for name in program.groupindex):
        return None
    return RE2Regexp(pattern, program)


def _uses_any_byte(pattern: str) -> bool:
    """Whether the pattern has a `\\C` escape outside `\\Q...\\E`; a quote ends at the first `\\E`, or never."""
    index = pattern.find("\\")
    while index != -1:
        escaped = pattern[index + 1 : index + 2]
        if escaped == "C":
            return True
        if escaped == "Q":
            end = pattern.find("\\E", index + 2)
            if end == -1:
                return False
            index = end
        index = pattern.find("\\", index + 2)
    return False


def _utf8(text: str) -> bytes:
    """The UTF-8 bytes RE2 matches; a lone surrogate (not encodable) becomes U+FFFD, as Go's JSON decoding does."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if ord(char) in _SURROGATES else char for char in text).encode("utf-8")
