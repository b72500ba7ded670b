"""Filter regular expressions with RE2 semantics on top of Python `re` (spec D7, J5).

Upstream compiles filter regexps with Go's RE2. Python accepts a superset (look-around, back-references,
atomic groups, possessive quantifiers), so those constructs are refused here to keep the same configurations
valid. `\\z` (RE2's end of text) is translated to Python's `\\Z`; Python's `\\Z` itself is refused like RE2 does.
"""

from __future__ import annotations

import re

__all__ = ["REGEXP_CHARACTERS", "compile_re2", "has_regexp_character"]

REGEXP_CHARACTERS = frozenset("^$*+?()[{}|")
_GROUP_EXTENSIONS_REFUSED = ("(?=", "(?!", "(?<=", "(?<!", "(?>", "(?P=", "(?(", "(?#")


def has_regexp_character(text: str) -> bool:
    """Whether an entry contains one of the characters that mark it as a regexp (spec D7)."""
    return any(char in REGEXP_CHARACTERS for char in text)


def _translate(pattern: str) -> str | None:
    """The Python spelling of an RE2 pattern, or None when RE2 would refuse it."""
    if any(marker in pattern for marker in _GROUP_EXTENSIONS_REFUSED):
        return None
    out: list[str] = []
    index = 0
    in_class = False
    previous_quantifier = False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            escaped = pattern[index + 1]
            if escaped.isdigit() and escaped != "0" and not in_class:
                return None  # back-reference
            if escaped == "Z":
                return None
            out.append("\\Z" if escaped == "z" else char + escaped)
            index += 2
            previous_quantifier = False
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            # a leading `]` (after an optional `^`) is a literal member of the class
            skip = 2 if pattern.startswith("^]", index + 1) else 1 if pattern.startswith("]", index + 1) else 0
            out.append(pattern[index : index + 1 + skip])
            index += 1 + skip
            previous_quantifier = False
            continue
        elif char in "*+?}":
            if previous_quantifier and char != "?":
                return None  # possessive or doubled quantifier
            previous_quantifier = char != "?" or not previous_quantifier
            out.append(char)
            index += 1
            continue
        previous_quantifier = False
        out.append(char)
        index += 1
    return "".join(out)


def compile_re2(pattern: str) -> re.Pattern[str] | None:
    """Compile a pattern as RE2 would accept it (ASCII classes), or None when it is not a valid RE2 regexp."""
    translated = _translate(pattern)
    if translated is None:
        return None
    try:
        return re.compile(translated, re.ASCII)
    except re.error:
        return None
