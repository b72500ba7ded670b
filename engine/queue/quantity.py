"""Resource quantities of the queue configuration, parsed and compared as YuniKorn's validator does.

A quantity is digits, optional spaces and an optional SI suffix (`k M G T P E`, or the binary `Ki ... Ei`);
`vcore` also takes `m` (millicores) and is counted in millicores, so `vcore: 2` is 2000. Values must fit a
signed 64-bit integer after scaling. A resource is a map from type name to quantity; comparisons skip the
types the larger side does not define ("undefined is unlimited"), as the validator's checks do.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from engine.errors import QueueConfigError

__all__ = [
    "Resource",
    "fits_in",
    "format_resource",
    "is_zero",
    "parse_resource",
    "pointwise_min",
    "strictly_positive",
    "total",
]

Resource = dict[str, int]
"""A parsed resource: type name to integer quantity (vcore in millicores)."""

_VCORE = "vcore"
_QUANTITY = re.compile(r"([0-9]+)[\t\n\f\r ]*((?:[mkKMGTPE]i?)?)")
_SCALE = {
    "": 1,
    "m": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 1 << 10,
    "Mi": 1 << 20,
    "Gi": 1 << 30,
    "Ti": 1 << 40,
    "Pi": 1 << 50,
    "Ei": 1 << 60,
}
_INT64_MAX = (1 << 63) - 1
_GO_SPACE = " \t\n\v\f\r\x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
"""What Go's `strings.TrimSpace` trims: Unicode white space."""


def _parse_quantity(text: str, millis: bool) -> int:
    """One quantity, with the validator's error texts."""
    match = _QUANTITY.fullmatch(text.strip(_GO_SPACE))
    if match is None:
        raise QueueConfigError("invalid quantity")
    number, suffix = int(match.group(1)), match.group(2)
    if number > _INT64_MAX:
        raise QueueConfigError("invalid quantity: overflow")
    scale = _SCALE.get(suffix)
    if scale is None or (suffix == "m" and not millis):
        raise QueueConfigError("invalid suffix")
    value = number * scale
    if millis and suffix != "m":
        value *= 1000
    if value > _INT64_MAX:
        raise QueueConfigError("invalid quantity: overflow")
    return value


def parse_resource(raw: Mapping[str, str] | None) -> Resource:
    """A resource map from the file (absent is empty).

    Raises:
        QueueConfigError: a value is not a quantity (`invalid quantity`, `invalid suffix`, or an overflow).
    """
    return {name: _parse_quantity(value, name == _VCORE) for name, value in (raw or {}).items()}


def fits_in(larger: Resource | None, smaller: Resource | None) -> bool:
    """Whether every type of `smaller` is at most `larger`'s; types `larger` does not define always fit."""
    if smaller is None or larger is None:
        return True
    return all(value <= max(0, larger[name]) for name, value in smaller.items() if name in larger)


def pointwise_min(left: Resource | None, right: Resource | None) -> Resource | None:
    """The smaller value of each type; a type only one side defines keeps that side's value."""
    if left is None:
        return None if right is None else dict(right)
    if right is None:
        return dict(left)
    merged = dict(left)
    for name, value in right.items():
        merged[name] = min(value, merged[name]) if name in merged else value
    return merged


def total(resources: list[Resource]) -> Resource:
    """The sum of the resources per type."""
    summed: Resource = {}
    for resource in resources:
        for name, value in resource.items():
            summed[name] = summed.get(name, 0) + value
    return summed


def is_zero(resource: Resource | None) -> bool:
    """No resource, or every quantity zero."""
    return resource is None or all(value == 0 for value in resource.values())


def strictly_positive(resource: Resource) -> bool:
    """At least one quantity above zero (quantities are never negative here)."""
    return any(value > 0 for value in resource.values())


def format_resource(resource: Resource | None) -> str:
    """The text the validator's messages show: `map[memory:1000 vcore:2000]`, types sorted."""
    if resource is None:
        return "nil resource"
    return "map[" + " ".join(f"{name}:{value}" for name, value in sorted(resource.items())) + "]"
