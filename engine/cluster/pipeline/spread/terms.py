"""Spread terms: the fields of `spec.spreadPolicy.spreadConstraints`, their defaults and validation.

The engine checks the CRD's rules for these terms itself (unlike the rest of the Placement): a malformed
term would otherwise change decisions silently. Upstream OCM only has the API; the behaviour follows the
enhancement `70-spread-policy` (see docs/cluster-placement.md, section S).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = ["NO_SPREAD", "SpreadPolicy", "SpreadTerm", "has_terms", "parse_spread"]

_MAX_TERMS = 8
_MAX_KEY_LENGTH = 316
_MAX_SKEW = 2**31 - 1
"""maxSkew is an int32 upstream."""
_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
_KEY_TYPES = ("Label", "Claim")
_WHEN = ("DoNotSchedule", "ScheduleAnyway")


@dataclass(frozen=True, slots=True)
class SpreadTerm:
    """One valid term; its index in the policy is its importance (0 matters most)."""

    key: str
    claim: bool
    """The value comes from a cluster claim (`Claim`), not a label (`Label`)."""
    max_skew: int
    hard: bool
    """`DoNotSchedule`: the term filters and limits the skew; `ScheduleAnyway` acts through the score only."""

    def value(self, labels: Mapping[str, str], claims: Mapping[str, str]) -> str | None:
        """The cluster's value for this term; None when it has none (an empty string is a value)."""
        return (claims if self.claim else labels).get(self.key)


@dataclass(frozen=True, slots=True)
class SpreadPolicy:
    """The valid terms of a placement, or the first validation error (`error`, then `terms` is empty)."""

    terms: tuple[SpreadTerm, ...] = ()
    error: str | None = None
    declared: bool = False
    """At least one term is declared (valid or not): the Spread default weight applies."""

    @property
    def hard_depth(self) -> int:
        """Index of the last `DoNotSchedule` term, -1 without one: a candidate needs values up to it."""
        return max((i for i, term in enumerate(self.terms) if term.hard), default=-1)

    def read(self, weight: int) -> tuple[SpreadTerm, ...]:
        """The terms that can move the answer at Spread weight `weight`: every term when it scores, else only
        the terms up to the last `DoNotSchedule` one (soft terms then have no effect at all)."""
        return self.terms if weight else self.terms[: self.hard_depth + 1]

    def path(
        self, labels: Mapping[str, str], claims: Mapping[str, str], terms: tuple[SpreadTerm, ...] | None = None
    ) -> tuple[str, ...]:
        """The cluster's values for the terms, up to the first it has none for (its topology path)."""
        out: list[str] = []
        for term in self.terms if terms is None else terms:
            value = term.value(labels, claims)
            if value is None:
                break
            out.append(value)
        return tuple(out)


NO_SPREAD = SpreadPolicy()


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # not JSON (cannot come from a decoded event); still name it
        return repr(value)


def has_terms(raw: Mapping[str, Any] | None) -> bool:
    """Whether `spreadPolicy` declares any term: absent, null, `{}` and `[]` declare none."""
    return raw is not None and bool(raw.get("spreadConstraints"))


def _term(index: int, raw: Any) -> SpreadTerm | str:
    fields: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    where = f"spreadConstraints[{index}]"
    key = fields.get("topologyKey")
    if not isinstance(key, str) or len(key) > _MAX_KEY_LENGTH or not _KEY.match(key):
        return f"{where}.topologyKey is invalid: {_json('' if key is None else key)}"
    key_type = fields.get("topologyKeyType")
    if key_type not in _KEY_TYPES:
        return f"{where}.topologyKeyType must be Label or Claim: {_json('' if key_type is None else key_type)}"
    skew = fields.get("maxSkew")
    skew = 1 if skew is None else skew
    integral = not isinstance(skew, bool) and (isinstance(skew, int) or (isinstance(skew, float) and skew.is_integer()))
    if not integral or skew < 1:
        return f"{where}.maxSkew must be at least 1: {_json(skew)}"
    if skew > _MAX_SKEW:
        return f"{where}.maxSkew must be at most {_MAX_SKEW}: {_json(skew)}"
    when = fields.get("whenUnsatisfiable")
    when = "ScheduleAnyway" if when is None else when
    if when not in _WHEN:
        return f"{where}.whenUnsatisfiable must be DoNotSchedule or ScheduleAnyway: {_json(when)}"
    return SpreadTerm(key, key_type == "Claim", int(skew), when == "DoNotSchedule")


def parse_spread(raw: Mapping[str, Any] | None) -> SpreadPolicy:
    """Defaults and validation in order: the term count, then term by term, field by field; other term
    fields (an early draft's `weight`) are ignored."""
    if not has_terms(raw):
        return NO_SPREAD
    assert raw is not None
    items = raw["spreadConstraints"]
    if not isinstance(items, list):
        return SpreadPolicy(error=f"spreadConstraints must be a list: {_json(items)}", declared=True)
    if len(items) > _MAX_TERMS:
        return SpreadPolicy(error=f"spreadConstraints cannot have more than 8 items: {len(items)}", declared=True)
    terms: list[SpreadTerm] = []
    for index, item in enumerate(items):
        term = _term(index, item)
        if isinstance(term, str):
            return SpreadPolicy(error=term, declared=True)
        terms.append(term)
    return SpreadPolicy(tuple(terms), declared=True)
